"""The Python API: what the `convert` command does, callable from a notebook or a CI script.

    from tf_convert import app as convert
    record = convert.tf2onnx("model.ckpt", "model-onnx", verify=True, opset=17)
    record["verify"]["max_rel"]

One function per target (`tf2torch`, `tf2caffe`, `tf2mxnet`, `tf2onnx`, `tf2ir`) taking the same
options as the command's flags, plus `inspect` and `verify`. A conversion returns its record (what
`OUT/conversion.json` holds, with `out` added). Failures raise `ConvertError` subclasses whose
`exit_code` is the command's: `UsageError`/`InputError` (2), `UnsupportedError` (3), `VerifyError` (4).
The CLI (cli.py) is a thin layer over these functions. Nothing heavy is imported until a function runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any, Union

from tf_convert.convert.errors import UsageError
from tf_convert.emitters.options import option_specs, options_for, validate

from . import inspect as inspect_mod
from . import into_kwargs, memory, pipeline
from . import into_module as into_mod
from .loading import check_target
from .verify import feeds as verify_feeds

Shape = Union[str, Sequence[int]]
InputShape = Union[None, Shape, Mapping[str, Shape]]
Names = Union[None, str, Sequence[str]]


def parse_shape(value: Shape) -> tuple[int, ...]:
    """`"1,224,224,3"`, `"1x224x224x3"` or a sequence of ints -> a tuple of positive ints."""
    if isinstance(value, str):
        try:
            shape = tuple(int(d) for d in value.replace("x", ",").split(",") if d.strip())
        except ValueError:
            raise UsageError(f"input shape {value!r} is not a list of integers: use e.g. 1,224,224,3") from None
    else:
        shape = tuple(int(d) for d in value)
    if not shape or any(d <= 0 for d in shape):
        raise UsageError(f"input shape {value!r} must list positive sizes, e.g. 1,224,224,3")
    return shape


def input_shapes(value: InputShape) -> dict[str, tuple[int, ...]]:
    """One shape for the only input (key ''), or {input name: shape}."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return {str(name): parse_shape(shape) for name, shape in value.items()}
    return {"": parse_shape(value)}


def names(value: Names) -> list[str] | None:
    """`"a,b"` or `["a", "b"]` -> ["a", "b"]; None or empty -> None (auto-detect)."""
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else list(value)
    cleaned = [str(n).strip() for n in items if str(n).strip()]
    return cleaned or None


def settings_of(value: Mapping[str, Any] | Sequence[str] | None) -> dict[str, str]:
    """`{"is_training": False}` or `["is_training=false"]` (--set) -> {"is_training": "false"}."""
    if not value:
        return {}
    if isinstance(value, Mapping):
        return {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in value.items()}
    result = {}
    for item in value:
        name, sep, text = str(item).partition("=")
        if not sep or not name.strip() or not text.strip():
            raise UsageError(f"--set {item!r}: expected NAME=VALUE, e.g. --set is_training=false")
        result[name.strip()] = text.strip()
    return result


def convert(source: str | PathLike, target: str, out: str | PathLike | None = None, *,
            input_shape: InputShape = None, inputs: Names = None, outputs: Names = None,
            verify: bool = False, rtol: float = 1e-4, seed: int = 0, keep_ir: bool = False,
            force: bool = False, max_memory: int | str | None = None, settings: Any = None,
            use_ema: bool = False, progress: Any = False, reference_child: bool = False,
            reference_store: str | PathLike | None = None, safe_mode: bool = True, input_layout: str | None = None,
            feeds: Any = None, **target_options: Any) -> dict[str, Any]:
    """Convert `source` for `target` ('torch', 'caffe', 'mxnet', 'onnx' or 'ir') into `out`
    (default ./<model>-<target>/); `target_options` are that target's options (nhwc, caffe_pad,
    opset, ...); `settings` give scalar placeholders a value (--set), `use_ema` takes moving-average
    weights, `safe_mode=False` is Keras's (Lambda layers load and are traced); `input_layout` ('nchw' or 'nhwc')
    is the TF graph's 4-D inputs' layout (default: NCHW where the graph transposes the input to NHWC first);
    `progress=True` draws the stage and the weights written on stderr when it is a terminal
    (or pass a `convert.progress.Progress` subclass to receive them: stage(), written(), close()).
    `reference_child=True` runs --verify's TensorFlow in a child process started at once, for a process that
    converts once (the CLI): TF's import then overlaps the conversion (a loop of conversions: leave it off).
    `reference_store`: a directory where --verify keeps TF's outputs between runs and reuses them for the same
    source bytes, inputs and TF (app.verify.reference_store; the CLI's is `reference_store.location()`).
    `feeds` ({NAME: value} or ["NAME=VALUE", ...], --feed): what --verify feeds those inputs, TF and the target
    alike (an input that sets sizes while the model runs needs one: app.verify.feeds).
    Returns the conversion record; raises ConvertError (with `exit_code`)."""
    check_target(target)
    options = None
    if target != "ir":
        known = {spec.name for spec in option_specs(target)}
        unknown = sorted(set(target_options) - known)
        if unknown:
            raise UsageError(f"{target} has no option {', '.join(unknown)}; "
                             f"its options: {', '.join(sorted(known)) or 'none'}")
        options = options_for(target, target_options)
        try:
            validate(options)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    elif target_options:
        raise UsageError(f"the IR target takes no target options (got {', '.join(sorted(target_options))})")
    if isinstance(max_memory, str):
        max_memory = memory.parse_size(max_memory)
    req = pipeline.Request(
        source=Path(source), target=target, out=Path(out) if out is not None else None,
        inputs=names(inputs), outputs=names(outputs), input_shapes=input_shapes(input_shape),
        verify=verify, rtol=rtol, seed=seed, keep_ir=keep_ir, force=force, options=options,
        max_memory=max_memory, settings=settings_of(settings), use_ema=use_ema, progress=progress,
        feeds=verify_feeds.parse(feeds or {}),
        reference_child=reference_child, safe_mode=safe_mode, input_layout=_layout(input_layout),
        reference_store=Path(reference_store) if reference_store is not None else None,
    )
    return pipeline.run(req).check()


def _layout(value: str | None) -> str | None:
    """`input_layout`: 'nchw', 'nhwc' (either case) or None."""
    if value is None:
        return None
    if str(value).lower() not in ("nchw", "nhwc"):
        raise UsageError(f"input_layout {value!r}: expected 'nchw' or 'nhwc'")
    return str(value).lower()


def tf2torch(source: str | PathLike, out: str | PathLike | None = None, **kwargs: Any) -> dict[str, Any]:
    """`convert tf2torch`: model.py (nn.Module `Model`) + model.pt. Options as `convert()`, plus `nhwc`."""
    return convert(source, "torch", out, **kwargs)


def tf2caffe(source: str | PathLike, out: str | PathLike | None = None, **kwargs: Any) -> dict[str, Any]:
    """`convert tf2caffe`: deploy.prototxt + model.caffemodel. Options as `convert()`, plus `caffe_pad`."""
    return convert(source, "caffe", out, **kwargs)


def tf2mxnet(source: str | PathLike, out: str | PathLike | None = None, **kwargs: Any) -> dict[str, Any]:
    """`convert tf2mxnet`: model-symbol.json + model-0000.params. Options as `convert()`."""
    return convert(source, "mxnet", out, **kwargs)


def tf2onnx(source: str | PathLike, out: str | PathLike | None = None, **kwargs: Any) -> dict[str, Any]:
    """`convert tf2onnx`: model.onnx. Options as `convert()`, plus `opset`."""
    return convert(source, "onnx", out, **kwargs)


def tf2ir(source: str | PathLike, out: str | PathLike | None = None, **kwargs: Any) -> dict[str, Any]:
    """`convert tf2ir`: the neutral IR (graph.json + weights.npz)."""
    return convert(source, "ir", out, **kwargs)


def into(source: str | PathLike, module: str, out: str | PathLike | None = None, *,
         kwargs: Mapping[str, Any] | None = None, fix_pads: bool = False,
         map: str | PathLike | Mapping[str, str] | None = None, verify: bool = False,
         rtol: float = 1e-4, seed: int = 0, force: bool = False, input_shape: InputShape = None, inputs: Names = None,
         outputs: Names = None, layers: bool = False, input_layout: str | None = None) -> dict[str, Any]:
    """`convert tf2torch SRC --into MODULE`: TF's weights for the module `MODULE` ("FILE.py:NAME" or
    "package.module:NAME", called with `kwargs`): OUT/state_dict.pt (loads with strict=True), and with
    `fix_pads` OUT/pads.py whose apply(model) makes it pad as TF does. `map` pins module paths to TF nodes
    (a map.toml path or a dict); `layers` (with `verify`) adds the per-layer diff named by module path.
    Raises exit-3 errors for an architecture mismatch, exit-4 for a semantic one."""
    kwargs = into_kwargs.check(kwargs or {})  # a small mapping, as --into-kwargs's JSON must be
    pins = dict(map) if isinstance(map, Mapping) else into_mod.read_map(Path(map)) if map is not None else {}
    req = into_mod.IntoRequest(source=Path(source), target=str(module), out=Path(out) if out is not None else None,
                               kwargs=kwargs, fix_pads=fix_pads, pins=pins, verify=verify, rtol=rtol,
                               seed=seed, force=force, input_shapes=input_shapes(input_shape), inputs=names(inputs),
                               outputs=names(outputs), layers=layers, input_layout=_layout(input_layout))
    return into_mod.run(req)


def load(source: str | PathLike, *, input_shape: InputShape = None, inputs: Names = None,
         outputs: Names = None, settings: Any = None, use_ema: bool = False) -> tuple[Any, list[str]]:
    """The IR graph of `source` after the default passes, and the notes on what was auto-detected."""
    req = pipeline.Request(source=Path(source), target="ir", inputs=names(inputs), outputs=names(outputs),
                           input_shapes=input_shapes(input_shape), settings=settings_of(settings),
                           use_ema=use_ema)
    graph, _, _, notes = pipeline.load_graph(req)
    return graph, notes


def inspect(source: str | PathLike, *, input_shape: InputShape = None, inputs: Names = None,
            outputs: Names = None, **target_options: Any) -> list[dict[str, Any]]:
    """`convert inspect --json`: one row per IR node (op, shapes, per-side pads, and per target the
    plan from that target's own plan function, honouring the given target options)."""
    graph, _ = load(source, input_shape=input_shape, inputs=inputs, outputs=outputs)
    return inspect_mod.rows(graph, target_options)


def verify(out: str | PathLike, rtol: float | None = None,
           reference_store: str | PathLike | None = None, *, source: str | PathLike | None = None,
           safe_mode: bool = True) -> dict[str, Any]:
    """`convert verify OUT`: run the check recorded in OUT/conversion.json again; the metrics
    (max_abs, max_rel, snr_db, psnr_db, passed). Raises VerifyError beyond tolerance. `reference_store`: as
    convert()'s (TF's outputs reused where the source's bytes, the inputs and TF are the same). OUT is data:
    the source read is the one recorded relative to OUT unless `source` is given, and its bytes must hash as
    recorded (else UsageError); Keras loads it in safe mode unless `safe_mode=False` (--no-safe-mode)."""
    return pipeline.reverify(Path(out), rtol, Path(reference_store) if reference_store is not None else None,
                             source=Path(source) if source is not None else None, safe_mode=safe_mode)


__all__ = ["convert", "into", "tf2torch", "tf2caffe", "tf2mxnet", "tf2onnx", "tf2ir", "load", "inspect", "verify",
           "parse_shape", "input_shapes", "names"]
