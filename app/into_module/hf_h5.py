"""`--into transformers:NAME` from `tf_model.h5`, what a TF class of transformers 4.x's `save_pretrained` writes by
default: weights only (the architecture is the class's Python code) beside `config.json`. The weights are read
by name and shape with h5py (data only, nothing in the file is imported or run), the PyTorch class is built from
the config, and each TF weight goes to the parameter or buffer its name gives under transformers' TF -> PyTorch
naming (`layer_._0` -> `layer.0`, kernel -> weight transposed, gamma/beta -> weight/bias, and the batch-norm
statistics `moving_mean`/`moving_variance` -> `running_mean`/`running_var`, which transformers' own `from_tf`
leaves at their defaults). Then, where a Python with transformers 4.x's TF classes is at hand (this one, or
`CONVERT_HF4_PYTHON`), the TF class runs on the same file in a subprocess (hf_h5_reference.py) and the module is
measured against it at two sizes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from tf_convert.convert.errors import ConvertError, UsageError, VerifyError
from tf_convert.emitters.torch.state_file import save_state_dict

from .. import outdir, report
from ..version import __version__
from .mismatch import ArchitectureMismatch

PREFIX = "transformers:"
REFERENCE_SCRIPT = Path(__file__).with_name("hf_h5_reference.py")
# TF's weight name (its last part) -> the PyTorch one
_LAST = {"kernel": "weight", "embeddings": "weight", "gamma": "weight", "beta": "bias",
         "moving_mean": "running_mean", "moving_variance": "running_var",
         "weight_g": "parametrizations.weight.original0", "weight_v": "parametrizations.weight.original1"}


def applies(source: Path, target: str) -> bool:
    """A weights-only HDF5 file (no `model_config`) beside config.json, into a transformers class."""
    if not str(target).startswith(PREFIX) or not Path(source).is_file():
        return False
    import h5py  # lazily: only for HDF5 files

    try:
        with open(source, "rb") as f:
            if not f.read(8).startswith(b"\x89HDF"):
                return False
        with h5py.File(source, "r") as f:
            return "model_config" not in f.attrs and (Path(source).parent / "config.json").is_file()
    except OSError:
        return False


def read_weights(path: Path) -> dict[str, np.ndarray]:
    """{TF weight name: value} from Keras' weights-only HDF5 layout (`layer_names`, each layer's `weight_names`)."""
    import h5py

    weights: dict[str, np.ndarray] = {}
    with h5py.File(path, "r") as f:
        for layer in _names(f.attrs.get("layer_names", [])):
            group = f[layer]
            for name in _names(group.attrs.get("weight_names", [])):
                data = group.get(name)
                if not isinstance(data, h5py.Dataset):
                    raise UsageError(f"{path}: weight '{name}' of layer '{layer}' is listed but not stored")
                weights[name] = np.asarray(data[()])
    if not weights:
        raise UsageError(f"{path}: no weights (no layer_names/weight_names): not a save_pretrained tf_model.h5")
    return weights


def _names(values) -> list[str]:
    return [v.decode() if isinstance(v, bytes) else str(v) for v in values]


def pytorch_name(tf_name: str) -> str:
    """transformers' TF -> PyTorch naming: the model's own scope dropped, `_._` a level, `a___b` is b, kernel and
    embeddings -> weight, gamma/beta -> weight/bias, batch-norm statistics -> running_mean/var, weight norm's
    g and v -> the parametrization's original0/1."""
    name = tf_name.replace(":0", "")
    name = re.sub(r"/[^/]*___([^/]*)/", r"/\1/", name).replace("_._", "/")
    parts = [p for p in name.split("/") if p]
    parts = parts[1:] if len(parts) > 1 else parts
    parts[-1] = _LAST.get(parts[-1], parts[-1])
    return ".".join(parts)


def to_pytorch(tf_name: str, value: np.ndarray, shape: tuple[int, ...]) -> tuple[np.ndarray, str]:
    """(TF's value in the PyTorch parameter's layout, the transform): a kernel HWIO -> OIHW, (k, in, out) ->
    (out, in, k), (in, out) -> (out, in); then a reshape only where the sizes agree (a (1, n) bias, weight norm's g
    (k, 1, 1) -> (1, 1, k)). Weight norm's v is kept (out, in, k) already (TF's layer transposes its kernel)."""
    last = tf_name.replace(":0", "").rpartition("/")[2]
    transform = "as is"
    if last == "kernel" and value.ndim in (2, 3, 4):
        axes = {4: (3, 2, 0, 1), 3: (2, 1, 0), 2: (1, 0)}[value.ndim]
        value, transform = value.transpose(axes), f"transpose{axes}"
    if tuple(value.shape) != tuple(shape):
        if value.size != int(np.prod(shape)):
            raise ArchitectureMismatch(f"TF weight '{tf_name}' has shape {tuple(value.shape)} ({transform}); the "
                                       f"module's parameter has {tuple(shape)}: the config does not build TF's model")
        value, transform = value.reshape(shape), f"{transform}, reshape{tuple(shape)}"
    return np.ascontiguousarray(value), transform


def state_dict(model, weights: dict[str, np.ndarray]) -> tuple[dict[str, Any], list[dict[str, str]], list[str]]:
    """(the module's state dict from TF's weights, a record per entry, warnings). A parameter without a TF weight
    or a TF weight without a parameter is an ArchitectureMismatch; buffers TF has no weight for (index tables
    computed from the config) keep the module's values."""
    import torch

    keys = dict(model.state_dict(keep_vars=True))
    rename = _renamer(model)
    by_name: dict[str, str] = {}
    for tf_name in weights:
        by_name.setdefault(rename(pytorch_name(tf_name)), tf_name)
    prefix = f"{model.base_model_prefix}." if getattr(model, "base_model_prefix", "") else ""
    bare = prefix and not any(k.startswith(prefix) for k in keys)  # a base model: TF's names carry its prefix
    parameters = {id(p): k for k, p in model.named_parameters(remove_duplicate=False)}
    first: dict[int, str] = {}
    result, records, warnings, used, by_key = {}, [], [], set(), {}
    for key, current in keys.items():
        tf_name = by_name.get(key) or by_name.get(prefix + key if bare else key)
        if tf_name is None and id(current) in first and id(current) in parameters:  # tied: one tensor, two names
            tied = first[id(current)]
            result[key] = result[tied]
            records.append({"name": key, "tf": by_key[tied], "transform": f"tied to {tied}"})
            continue
        if tf_name is None:
            if key.endswith("num_batches_tracked"):
                result[key] = torch.zeros_like(current)
            elif id(current) not in parameters:
                result[key] = current.detach().clone()
                warnings.append(f"buffer '{key}' has no TF weight: the module's own value (from the config) is kept")
            else:
                raise ArchitectureMismatch(f"module parameter '{key}' has no TF weight in the file (looked for "
                                           f"'{prefix + key if bare else key}' under transformers' TF naming); is "
                                           f"the class the one save_pretrained saved?")
            continue
        value, transform = to_pytorch(tf_name, weights[tf_name], tuple(current.shape))
        result[key] = torch.from_numpy(value).to(current.dtype)
        records.append({"name": key, "tf": tf_name, "transform": transform})
        by_key[key] = tf_name
        used.add(tf_name)
        first.setdefault(id(current), key)
    buffers = dict(model.named_buffers())  # non-persistent ones too: index tables computed from the config
    for pt_name, tf_name in by_name.items():
        if tf_name in used:
            continue
        key = _buffer_key(pt_name.removeprefix(prefix) if bare else pt_name, buffers)
        if key is None:
            continue
        buffer, pt_name = buffers[key], key
        if buffer.numel() != weights[tf_name].size or \
                not np.array_equal(buffer.numpy().reshape(-1), weights[tf_name].reshape(-1)):  # (N, N) vs (N*N,)
            raise ArchitectureMismatch(f"TF weight '{tf_name}' differs from the module's buffer '{pt_name}' (computed "
                                       f"from the config): the module would not compute what TF does")
        records.append({"name": pt_name, "tf": tf_name, "transform": "equals the module's buffer"})
        used.add(tf_name)
    left = [n for n in weights if n not in used]
    if left:
        raise ArchitectureMismatch(f"TF weight(s) {left[:3]}{' ...' if len(left) > 3 else ''} ({len(left)} in all) "
                                   f"have no parameter in {type(model).__name__}: the module would not compute what "
                                   f"TF does; pass the PyTorch class of the TF class saved (config.json: "
                                   f"architectures)")
    return result, records, warnings


def _buffer_key(name: str, buffers: dict[str, Any]) -> str | None:
    """The module buffer TF's weight `name` stands for: the same key, or (moved by transformers 5: Swin's
    `attention.self.relative_position_index` is `attention.relative_position_bias.relative_position_index`) the
    one of the same last name sharing the longest prefix with it, where only one does."""
    if name in buffers:
        return name
    last = name.rpartition(".")[2]
    candidates = [k for k in buffers if k.rpartition(".")[2] == last]
    shared = {k: len(os.path.commonprefix([k, name])) for k in candidates}
    best = [k for k in candidates if shared[k] == max(shared.values(), default=0)]
    return best[0] if len(best) == 1 else None


def _renamer(model):
    """transformers 5's own renaming of 4.x checkpoint keys for this class (ViT's `attention.attention.query` is
    `attention.q_proj` now), prefix added or dropped as the module's keys have it; a key that one of its
    converters (a split, a merge) would take is refused: those change values, not names."""
    try:
        from transformers.conversion_mapping import get_model_conversion_mapping
        from transformers.core_model_loading import WeightRenaming, rename_source_key
    except ImportError:  # a transformers without conversion mappings (4.x): its names are 4.x's
        return lambda key: key
    transforms = get_model_conversion_mapping(model)
    renamings = [t for t in transforms if isinstance(t, WeightRenaming)]
    converters = [t for t in transforms if not isinstance(t, WeightRenaming)]
    meta = model.state_dict()

    def rename(key: str) -> str:
        renamed, converted = rename_source_key(key, renamings, converters, model.base_model_prefix, meta)
        if converted is not None:
            raise ArchitectureMismatch(f"TF weight '{key}' is converted (not only renamed) by transformers' mapping "
                                       f"for {type(model).__name__} ({converted}); not supported from tf_model.h5")
        return renamed

    return rename


def run(req) -> dict[str, Any]:
    """The --into conversion of a tf_model.h5 (req: an IntoRequest); the conversion.json document (with `out`)."""
    started = time.perf_counter()
    source, name = Path(req.source), str(req.target)[len(PREFIX):]
    out = Path(req.out) if req.out else Path.cwd() / f"{source.stem}-torch"  # as loading.default_out names it
    outdir.check_out(out, source, force=req.force)
    config_json = _config(source.parent / "config.json")
    weights = read_weights(source)
    import torch  # noqa: F401 - the module is PyTorch's
    import transformers

    cls = getattr(transformers, name, None)
    if not isinstance(cls, type) or getattr(cls, "config_class", None) is None:
        raise UsageError(f"--into {req.target!r}: transformers has no model class {name}")
    settings = {k: v for k, v in config_json.items() if k not in ("architectures", "transformers_version")}
    try:
        config = cls.config_class(**{**settings, **req.kwargs})
    except Exception as exc:  # noqa: BLE001 - whatever the config raises is the config's or the kwargs' error
        raise UsageError(f"{source.parent / 'config.json'}: {cls.config_class.__name__}(...) failed: "
                         f"{type(exc).__name__}: {exc}") from None
    config._attn_implementation = req.kwargs.get("attn_implementation", "eager")
    model = cls(config).eval()
    state, records, warnings = state_dict(model, weights)
    model.load_state_dict(state, strict=True)
    seconds = {"match": round(time.perf_counter() - started, 3)}
    tf_class = _tf_class(config_json, name)
    t0 = time.perf_counter()
    verified = verify(model, source.parent, tf_class, req.rtol, req.seed)
    seconds["verify"] = round(time.perf_counter() - t0, 3)
    if verified is None and not _feeds(model, req.seed):
        warnings.append(f"not measured against TF: the check feeds one input of token ids, images or audio, and "
                        f"{type(model).__name__} takes '{getattr(model, 'main_input_name', '?')}' (and perhaps more); "
                        f"compare it with the TF class yourself")
    elif verified is None:
        warnings.append(f"not measured against TF: no Python with transformers 4.x's {tf_class} here (run with "
                        f"CONVERT_HF4_PYTHON=<a python with transformers 4.x and TensorFlow>)")
    tmp = outdir.temp_dir(out)
    try:
        save_state_dict(tmp / "state_dict.pt", {k: v.detach().numpy() for k, v in state.items()})
        seconds["total"] = round(time.perf_counter() - started, 3)
        doc = {
            "tool_version": __version__,
            "source": {"path": str(source.resolve()), "format": "hf_tf_model_h5"},
            "target": "torch",
            "into": {"module": req.target, "kwargs": req.kwargs, "tf_class": tf_class},
            "files": ["state_dict.pt", "conversion.json"],
            "parameters": records,
            "differences": [],
            "verify": verified,
            "warnings": warnings,
            "seconds": seconds,
        }
        report.write(doc, tmp / "conversion.json")
        if verified is not None and not verified["passed"]:
            raise VerifyError(f"verification failed for --into from {source.name}: max relative error "
                              f"{verified['max_rel']:.3g} > rtol {req.rtol:g} at input {verified['worst_input']}")
        outdir.commit(tmp, out, force=req.force)
    except BaseException:
        outdir.discard_temps(out)
        raise
    doc["out"] = str(out)
    return doc


def _config(path: Path) -> dict[str, Any]:
    try:
        config = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: not a readable JSON config ({exc}); pass the directory save_pretrained wrote"
                         ) from None
    if not isinstance(config, dict):
        raise UsageError(f"{path}: a JSON object expected (save_pretrained's config.json)")
    return config


def _tf_class(config: dict[str, Any], name: str) -> str:
    """The TF class save_pretrained saved: config.json's architectures (PyTorch's names there), else TF + NAME."""
    architectures = config.get("architectures") or [name]
    chosen = str(architectures[0]).removeprefix("TF")
    # a name from the file only picks among transformers' own model classes: a plain class name, else the user's
    if not re.fullmatch(r"[A-Z][A-Za-z0-9]*(Model|For[A-Za-z0-9]+|LMHeadModel)", chosen):
        chosen = name
    return f"TF{chosen}"


def _feeds(model, seed: int) -> list[dict[str, np.ndarray]]:
    """Inputs at two sizes for the class's main input; a third to fall back on where TF is bound to one size
    (ViT's image size: the batch changes instead). Empty for an input this does not know how to make."""
    rng = np.random.default_rng(seed)
    config, main = model.config, getattr(model, "main_input_name", "input_ids")
    if main == "input_ids":
        top = min(getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None) or 16, 12)
        vocab = config.vocab_size
        return [{main: rng.integers(0, vocab, (2, n)).astype(np.int32)} for n in (top - 5, top - 1)]
    if main == "pixel_values":
        side, channels = getattr(config, "image_size", 32), getattr(config, "num_channels", 3)
        side = side if isinstance(side, int) else side[0]
        shapes = [(2, channels, side, side), (2, channels, side + 8, side + 8), (3, channels, side, side)]
        return [{main: rng.standard_normal(s).astype(np.float32)} for s in shapes]
    if main == "input_values":
        return [{main: rng.standard_normal((2, n)).astype(np.float32)} for n in (400, 560)]
    return []


def _reference_pythons() -> list[str]:
    found = [os.environ.get("CONVERT_HF4_PYTHON", ""), sys.executable]
    return [p for p in dict.fromkeys(found) if p]


def verify(model, directory: Path, tf_class: str, rtol: float, seed: int) -> dict[str, Any] | None:
    """The module against the TF class on the same file (a subprocess: hf_h5_reference.py) at two sizes; None
    where no Python here has the TF class."""
    import torch

    feeds = _feeds(model, seed)
    if not feeds:
        return None
    with tempfile.TemporaryDirectory(prefix="convert-hf-h5-") as tmp:
        inputs = Path(tmp) / "inputs.npz"
        np.savez(inputs, **{f"{k}/{n}": v for k, feed in enumerate(feeds) for n, v in feed.items()})
        expected = None
        for python in _reference_pythons():
            result = Path(tmp) / "outputs.npz"
            done = subprocess.run([python, "-I", str(REFERENCE_SCRIPT), str(directory), tf_class, str(inputs),
                                   str(result), str(len(feeds))], capture_output=True, text=True,
                                  env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
            if done.returncode == 0:
                expected = dict(np.load(result))
                break
            if done.returncode != 3:  # 3: the TF class is not importable there
                line = (done.stderr.strip().splitlines() or ["no output"])[-1][:300]
                raise ConvertError(f"running {tf_class} on {directory} in TF failed: {line}")
        if expected is None:
            return None
    results = []
    for k, feed in enumerate(feeds):
        fields = sorted({key.split("/", 1)[1] for key in expected if key.startswith(f"{k}/")})
        if not fields:  # TF refused this size
            continue
        if len(results) == 2:
            break
        with torch.no_grad():
            got = model(**{n: torch.from_numpy(v).long() if v.dtype == np.int32 else torch.from_numpy(v)
                           for n, v in feed.items()})
        worst = 0.0
        for field in fields:
            want = expected[f"{k}/{field}"]
            value = getattr(got, field, None)
            if value is None:
                continue
            value = value.numpy()
            if value.shape != want.shape:
                raise ArchitectureMismatch(f"output '{field}' has shape {value.shape} in PyTorch, {want.shape} in TF")
            worst = max(worst, float(np.abs(value - want).max() / max(np.abs(want).max(), 1e-30)))
        shape = list(next(iter(feed.values())).shape)
        results.append({"input_shape": shape, "max_rel": worst, "fields": fields})
    if not results:
        raise ConvertError(f"{tf_class} ran at none of the input sizes tried")
    worst = max(results, key=lambda r: r["max_rel"])
    return {"max_rel": worst["max_rel"], "passed": worst["max_rel"] <= rtol, "rtol": rtol, "seed": seed,
            "worst_input": worst["input_shape"], "sizes": results}
