"""`--into transformers:<PT class>` from Hugging Face's own TF models: transformers 4.x's TF classes (built in
.venv-hf4 by tests/support/hf_tf_models.py: tiny configs, every variable random, SavedModels with a serving
signature) into transformers 5's PyTorch class built from the same config, the default way (SDPA attention)
and with eager attention. Each is run in PyTorch against TF's signature at two sizes. `make test-into-hf`."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from tf_convert import app as convert

NEEDS_HF4 = pytest.mark.skipif(not os.environ.get("CONVERT_HF4_PYTHON"),
                               reason="needs transformers 4.x's TF classes: make test-into-hf")
tf = pytest.importorskip("tensorflow")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "support" / "hf_tf_models.py"
# name -> conversion shapes; another size: sequence lengths 7 and 11 (Whisper's decoder; its 16 mel frames fixed),
# images 32 and 40 (ViT: its fixed 32, batch 3)
TEXT = {"input_ids": (2, 7), "attention_mask": (2, 7), "token_type_ids": (2, 7)}
CASES = {
    "bert": TEXT,
    "bert_ids": {"input_ids": (2, 7)},
    "albert": TEXT,
    "bart": {"input_ids": (2, 7), "attention_mask": (2, 7), "decoder_input_ids": (2, 7)},
    "opt": {k: v for k, v in TEXT.items() if k != "token_type_ids"},
    "mistral": {k: v for k, v in TEXT.items() if k != "token_type_ids"},
    "distilbert": {k: v for k, v in TEXT.items() if k != "token_type_ids"},
    "roberta": {k: v for k, v in TEXT.items() if k != "token_type_ids"},
    "gpt2_lm": {"input_ids": (2, 7)},
    "whisper": {"input_features": (2, 8, 16), "decoder_input_ids": (2, 7)},
    "vit": {"pixel_values": (2, 3, 32, 32)},
    "deit": {"pixel_values": (2, 3, 32, 32)},
    "convnext": {"pixel_values": (2, 3, 32, 32)},
    "resnet": {"pixel_values": (2, 3, 32, 32)},
    "regnet": {"pixel_values": (2, 3, 32, 32)},
    "swin": {"pixel_values": (2, 3, 32, 32)},
    "swin_shift": {"pixel_values": (2, 3, 32, 32)},
    "segformer": {"pixel_values": (2, 3, 32, 32)},
    "wav2vec2": {"input_values": (2, 400)},
    "mobilevit": {"pixel_values": (2, 3, 64, 64)},
}
# audio: 79 and 111 frames after the feature extractor; MobileViT at 96: its last stage resizes to whole patches
OTHER = {"wav2vec2": {"input_values": (2, 560)}, "mobilevit": {"pixel_values": (2, 3, 96, 96)}}
NO_ATTENTION = {"convnext", "resnet", "regnet", "mobilevit"}  # the others run with SDPA too
FIXED_SIZE = {"vit", "deit"}  # TF's ViT and DeiT are bound to their config's image size
FIXED_INPUTS = {"input_features"}  # Whisper's mel frames: 2 * max_source_positions, always


@pytest.fixture(scope="module")
def saved(request) -> Path:
    """The SavedModels the selected tests need, built once per version of the fixture script (in .cache: a minute
    each on 2 cores)."""
    digest = hashlib.sha256(SCRIPT.read_bytes()).hexdigest()[:12]
    root = ROOT / ".cache" / f"hf-tf-{digest}"
    wanted = {item.callspec.params["name"] for item in request.session.items
              if hasattr(item, "callspec") and item.module is request.module and "name" in item.callspec.params}
    missing = [n for n in CASES if n in wanted and not (root / n / "kwargs.json").is_file()]
    if missing:
        root.mkdir(parents=True, exist_ok=True)
        subprocess.run([os.environ["CONVERT_HF4_PYTHON"], "-m", "tests.support.hf_tf_models", str(root), *missing],
                       cwd=ROOT, check=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    return root


def _other(shapes: dict[str, tuple[int, ...]], fixed_image: bool) -> dict[str, tuple[int, ...]]:
    if fixed_image:
        return {k: (v[0] + 1, *v[1:]) for k, v in shapes.items()}
    return {k: v if k in FIXED_INPUTS else (*v[:-1], v[-1] + 4) if len(v) == 2 else (*v[:2], v[2] + 8, v[3] + 8)
            for k, v in shapes.items()}


def _feeds(shapes: dict[str, tuple[int, ...]], vocab: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds = {}
    for name, shape in shapes.items():
        if name in ("pixel_values", "input_features", "input_values"):
            feeds[name] = rng.standard_normal(shape).astype(np.float32)
        elif name == "attention_mask":  # padding at the end of the second row
            mask = np.ones(shape, np.int32)
            mask[1, shape[1] - 2:] = 0
            feeds[name] = mask
        else:
            feeds[name] = rng.integers(0, 2 if name == "token_type_ids" else vocab, shape).astype(np.int32)
    return feeds


def _errors(path: Path, model, shapes_list, vocab: int) -> list[float]:
    """max |torch - TF| / max |TF| over every output field, per size."""
    signature = tf.saved_model.load(str(path)).signatures["serving_default"]
    errors = []
    for k, shapes in enumerate(shapes_list):
        feeds = _feeds(shapes, vocab, k)
        want = {name: v.numpy() for name, v in signature(**{n: tf.constant(x) for n, x in feeds.items()}).items()}
        with torch.no_grad():
            got = model(**{n: torch.from_numpy(x).long() if x.dtype == np.int32 else torch.from_numpy(x)
                           for n, x in feeds.items()})
        worst = 0.0
        for name, expected in want.items():
            value = getattr(got, name).numpy()
            assert value.shape == expected.shape, (name, value.shape, expected.shape)
            worst = max(worst, float(np.abs(value - expected).max() / np.abs(expected).max()))
        errors.append(worst)
    return errors


@pytest.mark.slow
@NEEDS_HF4
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
@pytest.mark.parametrize("name", list(CASES))
def test_hf_tf_model_into_its_pytorch_class(saved, tmp_path, name, attention):
    if attention == "sdpa" and name in NO_ATTENTION:
        pytest.skip("no attention")
    meta = json.loads((saved / name / "kwargs.json").read_text())
    kwargs = {**meta["kwargs"], "attn_implementation": attention}
    shapes = CASES[name]
    started = time.perf_counter()
    doc = convert.into(saved / name, f"transformers:{meta['pt_class']}", tmp_path / "out", kwargs=kwargs,
                       input_shape={k: v for k, v in shapes.items()})
    seconds = time.perf_counter() - started
    cls = getattr(transformers, meta["pt_class"])
    config = cls.config_class(**meta["kwargs"])
    config._attn_implementation = attention
    model = cls(config).eval()
    model.load_state_dict(torch.load(tmp_path / "out" / "state_dict.pt"), strict=True)
    fixed = name in FIXED_SIZE
    other = OTHER.get(name) or _other(shapes, fixed)
    errors = _errors(saved / name, model, [shapes, other], meta["kwargs"].get("vocab_size", 2))
    print(f"{name} {attention}: max_rel {max(errors):.2g} ({errors}), {seconds:.1f} s")
    assert max(errors) < 1e-5, errors
    if "pixel_values" in shapes:
        assert doc["inputs"][0]["layout"] == "NCHW" and doc["inputs"][0]["shape"] == list(shapes["pixel_values"])


H5_CASES = ["bert", "vit", "gpt2_lm", "resnet", "swin_shift"]


@pytest.fixture(scope="module")
def saved_h5() -> Path:
    """save_pretrained's default output (tf_model.h5 + config.json) of the same random models, in .cache."""
    digest = hashlib.sha256(SCRIPT.read_bytes()).hexdigest()[:12]
    root = ROOT / ".cache" / f"hf-tf-{digest}"
    missing = [n for n in H5_CASES if not (root / f"{n}.h5" / "kwargs.json").is_file()]
    if missing:
        root.mkdir(parents=True, exist_ok=True)
        subprocess.run([os.environ["CONVERT_HF4_PYTHON"], "-m", "tests.support.hf_tf_models", "--h5", str(root),
                        *missing], cwd=ROOT, check=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    return root


@pytest.mark.slow
@NEEDS_HF4
@pytest.mark.parametrize("name", H5_CASES)
def test_save_pretrained_h5_into_its_pytorch_class(saved_h5, tmp_path, name):
    """tf_model.h5 beside config.json: weights by name into the PyTorch class, measured against the TF class (run in
    CONVERT_HF4_PYTHON) at two sizes; ResNet's batch-norm statistics come over too (from_tf leaves them)."""
    meta = json.loads((saved_h5 / f"{name}.h5" / "kwargs.json").read_text())
    started = time.perf_counter()
    doc = convert.into(saved_h5 / f"{name}.h5" / "tf_model.h5", f"transformers:{meta['pt_class']}", tmp_path / "out")
    seconds = time.perf_counter() - started
    sizes = doc["verify"]["sizes"]
    print(f"{name} h5: max_rel {doc['verify']['max_rel']:.2g} ({[s['input_shape'] for s in sizes]}), {seconds:.1f} s")
    assert doc["verify"]["passed"] and doc["verify"]["max_rel"] < 1e-5 and len(sizes) == 2, doc["verify"]
    if name == "resnet":
        assert any(p["name"].endswith("running_var") and p["tf"].endswith("moving_variance:0")
                   for p in doc["parameters"])


class FeaturesThenIds(torch.nn.Module):
    """Whisper's forward order (features, then decoder ids) in a few layers."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv1d(8, 16, 3, padding=1)
        self.embed = torch.nn.Embedding(40, 16)

    def forward(self, input_features, decoder_ids):
        return self.conv(input_features).mean(-1, keepdim=True).transpose(1, 2) + self.embed(decoder_ids)


@pytest.mark.parametrize("names, hint", [
    (["decoder_ids", "features"], "pass --inputs features,decoder_ids"),
    (["ids", "mel"], "name TF's inputs as forward's parameters"),
])
def test_inputs_fed_by_position_in_the_wrong_order_name_the_order_to_pass(names, hint):
    """Two TF inputs whose names are not all forward's go by position, in TF's order: where the module fails,
    the message gives TF's order, forward's and the --inputs order that fits (or how to make one)."""
    from tf_convert.app.into_module import trace
    from tf_convert.convert.errors import ConvertError

    with pytest.raises(ConvertError) as failure:
        trace.build("tests.app.test_into_hf_tf:FeaturesThenIds", {}, [((2, 7), "int32"), ((2, 8, 16), "float32")],
                    [f"{n}:0" for n in names])
    message = str(failure.value)
    assert f"TF's inputs {names} went to forward's ['input_features', 'decoder_ids'] by position" in message, message
    assert hint in message, message
