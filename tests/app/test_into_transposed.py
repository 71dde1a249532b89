"""`--into` with transposed convolutions: Keras Conv2DTranspose / Conv3DTranspose and
TF1 Conv2DBackpropInput into nn.ConvTranspose2d/3d. The kernel goes (k..., out, in) -> (in, out, k...);
TF's SAME transposed conv keeps rows [0, 2n) of the full output where the usual hand port
(padding=1, output_padding=1) keeps [1, 2n + 1): found with per-side crops, fixed exactly by pads.py."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.app.test_into import load_into, run_cli
from tests.support import into_modules
from tests.support.ir_cases import rel_error
from tf_convert import app as convert
from tf_convert.convert.errors import ConvertError

pytest.importorskip("tensorflow")

MODULES = "tests.support.into_modules"
# the measured errors vs TF, printed at the end of the module (the report quotes them)
ERRORS: dict[str, dict[str, float]] = {}


def _keras(build, path: Path) -> Path:
    into_modules.randomize(build(), seed=3).save(path)
    return path


def _frozen(out_hw, path: Path, padding: str = "SAME") -> Path:
    from tests.support.tf_models import save_frozen

    build = partial(into_modules.tf1_deconv, out_hw=out_hw, padding=padding)
    return Path(save_frozen(path, build, [1, 7, 7, 3]))


def _tf_output(source: Path, x_first: np.ndarray) -> np.ndarray:
    """TF's own output for a channels-first input (Keras model or frozen graph), channels first."""
    import tensorflow as tf

    perm = (0, *range(2, x_first.ndim), 1)
    x = x_first.transpose(perm)
    if source.suffix == ".keras":
        import keras

        y = np.asarray(keras.models.load_model(source, compile=False)(x))
    else:
        graph_def = tf.compat.v1.GraphDef.FromString(source.read_bytes())
        with tf.Graph().as_default() as graph:
            tf.import_graph_def(graph_def, name="")
            with tf.compat.v1.Session(graph=graph) as sess:
                y = sess.run("y:0", {"input:0": x})
    return y.transpose(0, y.ndim - 1, *range(1, y.ndim - 1))


# name -> (source builder, module, kwargs, --input-shape, the difference's detail, sizes to check)
CASES = {
    "keras-2d": (partial(_keras, into_modules.keras_upsampler), "Upsampler", {}, "1,9,10,4",
                 "module path 'up': padding differs: the module crops (1,0,1,0) of the full output, TF (0,1,0,1) "
                 "at 9x10 (top,bottom,left,right", [(1, 4, 9, 10), (2, 4, 12, 7)]),
    "keras-3d": (partial(_keras, into_modules.keras_upsampler_3d), "Upsampler3d", {}, None,
                 "module path 'up': padding differs: the module crops (1,0,1,0,1,0) of the full output, TF "
                 "(0,1,0,1,0,1) at 5x6x7 (front,back,top,bottom,left,right", [(1, 3, 5, 6, 7)]),
    "tf1-backprop-input": (partial(_frozen, (14, 14)), "Deconv", {}, None,
                           "module path 'deconv': padding differs: the module crops (1,0,1,0) of the full output, "
                           "TF (0,1,0,1) at 7x7", [(1, 3, 7, 7)]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_transposed_conv_crop_found_then_fixed_exactly(case, tmp_path):
    build, module, kwargs, shape, detail, sizes = CASES[case]
    source = build(tmp_path / ("src.keras" if case.startswith("keras") else "src.pb"))
    options = {"kwargs": kwargs, **({"input_shape": shape} if shape else {})}
    with pytest.raises(ConvertError) as failure:
        convert.into(source, f"{MODULES}:{module}", tmp_path / "as_is", **options)
    message = str(failure.value)
    assert failure.value.exit_code == 4 and detail in message, message
    assert "cannot express it" in message and "alone it costs max_rel" in message
    out = tmp_path / "out"
    doc = convert.into(source, f"{MODULES}:{module}", out, fix_pads=True, verify=True, **options)
    assert doc["verify"]["passed"], doc["verify"]
    records = {r["parameter"]: r for r in doc["parameters"]}
    weight = next(r for key, r in records.items() if key.endswith(".weight") and "-> (in, out," in r["transform"])
    assert weight["transform"].startswith("TF (k") and weight["tf"].endswith("kernel") or case.startswith("tf1")
    assert "tf_convert" not in (out / "pads.py").read_text()
    errors = {"as_is": doc["errors"]["as_is"]["max_rel"]}
    for size in sizes:  # pads.py's model against TF itself, at the conversion's size and another one
        model = load_into(out, getattr(into_modules, module)(**kwargs))
        x = np.random.default_rng(11).standard_normal(size).astype(np.float32)
        with torch.no_grad():
            got = model(torch.from_numpy(x)).numpy()
        errors["x".join(map(str, size[2:]))] = rel_error(got, _tf_output(source, x))
    ERRORS[case] = errors
    print(f"\n{case}: " + ", ".join(f"{k} {v:.2e}" for k, v in errors.items()))
    assert errors["as_is"] > 1e-2 and all(v < 1e-5 for k, v in errors.items() if k != "as_is"), errors


@pytest.mark.parametrize("module_kwargs, out_hw, padding", [
    ({"padding": 1, "output_padding": 0}, (13, 13), "SAME"),  # SAME to an odd size crops (1,1): padding=1
    ({"padding": 0, "output_padding": 0}, (15, 15), "VALID"),  # the full output
], ids=["same-odd-output", "valid"])
def test_transposed_conv_that_torch_expresses_needs_no_fix(module_kwargs, out_hw, padding, tmp_path):
    source = _frozen(out_hw, tmp_path / "src.pb", padding)
    doc = convert.into(source, f"{MODULES}:Deconv", tmp_path / "out", kwargs=module_kwargs, verify=True)
    assert not doc["differences"] and doc["verify"]["passed"] and doc["verify"]["max_rel"] < 1e-5


def test_cli_names_the_crop_and_fix_pads_fixes_it(tmp_path):
    source = _keras(into_modules.keras_upsampler, tmp_path / "up.keras")
    code, _, err = run_cli("tf2torch", source, "--input-shape", "1,8,8,4", "--into", f"{MODULES}:Upsampler",
                           "-o", tmp_path / "a")
    assert code == 4 and "the module crops (1,0,1,0) of the full output, TF (0,1,0,1) at 8x8" in err, err
    out = tmp_path / "b"
    code, _, err = run_cli("tf2torch", source, "--input-shape", "1,8,8,4", "--into", f"{MODULES}:Upsampler",
                           "--fix-pads", "--verify", "-o", out)
    assert code == 0, err
    doc = json.loads((out / "conversion.json").read_text())
    assert [d["module"] for d in doc["differences"]] == ["up"]  # up2 (k=4, padding=1) keeps TF's rows
    assert doc["verify"]["passed"] and [s["input_shape"][2:] for s in doc["verify"]["sizes"]] == [[8, 8], [9, 9]]


def test_kernel_shape_mismatch_is_refused_by_name(tmp_path):
    source = _frozen((14, 14), tmp_path / "src.pb")
    code, _, err = run_cli("tf2torch", source, "--into", f"{MODULES}:Deconv", "--into-kwargs", '{"out_channels": 5}',
                           "-o", tmp_path / "out")
    assert code == 3 and ("module path 'deconv' has no partner (TF node 'y'): weight shape "
                          "(3, 5, 3, 3) (in, out, k...) where TF has (3, 4, 3, 3)") in err, err
