"""The generated Keras layer suite: every built-in Keras layer that Keras 3 and tf_keras both have, with
random arguments, as a one-layer model saved in every form its library writes (Keras 3 `.keras` and
legacy `.h5`, tf_keras `.h5` and SavedModel). tests/parsers/test_parser_keras_suite.py requires every
form to convert to Keras's numbers or to be refused with exit 3, never exit 1 or 2.

`python -m tests.support.keras_layer_suite [--all]` prints the outcome table (form x layer);
tests/support/keras_suite_targets.py takes the same files through every target runtime.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

FORMS = ("keras", "h5_keras3", "h5_tf_keras", "saved_model_tf_keras")
RTOL = 1e-4


@dataclass(frozen=True)
class Case:
    name: str
    inputs: tuple[tuple[int, ...], ...]  # shapes without batch
    make: Callable[[Any, np.random.Generator], Any]  # (Keras module, rng) -> layer
    ints: bool = False  # token ids in [0, 10)


def _pick(rng, *options):
    return options[int(rng.integers(len(options)))]


def _act(rng) -> str:
    return _pick(rng, "relu", "sigmoid", "tanh", "linear", "elu", "softmax", "swish", "gelu", "hard_sigmoid",
                 "relu6", "selu", "softplus", "softsign", "exponential")


def _pad(rng) -> str:
    return _pick(rng, "same", "valid")


IMG = (9, 7, 3)
SEQ = (7, 5)
VOL = (5, 6, 4, 2)
VEC = (6,)

CASES: list[Case] = [
    Case("Dense", (VEC,), lambda K, r: K.layers.Dense(int(r.integers(1, 6)), activation=_act(r),
                                                      use_bias=bool(r.integers(2)))),
    Case("Dense_seq", (SEQ,), lambda K, r: K.layers.Dense(4, activation=_act(r))),
    Case("Conv1D", (SEQ,), lambda K, r: K.layers.Conv1D(3, int(r.integers(1, 4)), strides=int(r.integers(1, 3)),
                                                        padding=_pick(r, "same", "valid", "causal"),
                                                        activation=_act(r))),
    Case("Conv2D", (IMG,), lambda K, r: K.layers.Conv2D(4, int(r.integers(1, 4)), strides=int(r.integers(1, 3)),
                                                        padding=_pad(r), activation=_act(r))),
    Case("Conv2D_dilated", (IMG,), lambda K, r: K.layers.Conv2D(2, 3, dilation_rate=2, padding=_pad(r))),
    Case("Conv3D", (VOL,), lambda K, r: K.layers.Conv3D(2, 2, strides=int(r.integers(1, 3)), padding=_pad(r))),
    Case("Conv2DTranspose", (IMG,), lambda K, r: K.layers.Conv2DTranspose(2, 3, strides=int(r.integers(1, 3)),
                                                                          padding=_pad(r))),
    Case("Conv1DTranspose", (SEQ,), lambda K, r: K.layers.Conv1DTranspose(2, 3, strides=2, padding=_pad(r))),
    Case("DepthwiseConv2D", (IMG,), lambda K, r: K.layers.DepthwiseConv2D(3, strides=int(r.integers(1, 3)),
                                                                          padding=_pad(r),
                                                                          depth_multiplier=int(r.integers(1, 3)))),
    Case("SeparableConv2D", (IMG,), lambda K, r: K.layers.SeparableConv2D(4, 3, padding=_pad(r))),
    Case("SeparableConv1D", (SEQ,), lambda K, r: K.layers.SeparableConv1D(4, 3, padding=_pad(r))),
    Case("MaxPooling1D", (SEQ,), lambda K, r: K.layers.MaxPooling1D(int(r.integers(1, 4)), padding=_pad(r))),
    Case("MaxPooling2D", (IMG,), lambda K, r: K.layers.MaxPooling2D(int(r.integers(2, 4)), padding=_pad(r),
                                                                    strides=int(r.integers(1, 3)))),
    Case("AveragePooling2D", (IMG,), lambda K, r: K.layers.AveragePooling2D(int(r.integers(2, 4)), padding=_pad(r))),
    Case("AveragePooling1D", (SEQ,), lambda K, r: K.layers.AveragePooling1D(2, padding=_pad(r))),
    Case("MaxPooling3D", (VOL,), lambda K, r: K.layers.MaxPooling3D(2, padding=_pad(r))),
    Case("AveragePooling3D", (VOL,), lambda K, r: K.layers.AveragePooling3D(2, padding=_pad(r))),
    Case("GlobalAveragePooling2D", (IMG,), lambda K, r: K.layers.GlobalAveragePooling2D(keepdims=bool(r.integers(2)))),
    Case("GlobalMaxPooling2D", (IMG,), lambda K, r: K.layers.GlobalMaxPooling2D()),
    Case("GlobalAveragePooling1D", (SEQ,), lambda K, r: K.layers.GlobalAveragePooling1D()),
    Case("GlobalMaxPooling1D", (SEQ,), lambda K, r: K.layers.GlobalMaxPooling1D()),
    Case("GlobalAveragePooling3D", (VOL,), lambda K, r: K.layers.GlobalAveragePooling3D()),
    Case("BatchNormalization", (IMG,), lambda K, r: K.layers.BatchNormalization(epsilon=float(r.uniform(1e-3, 1e-1)))),
    Case("LayerNormalization", (SEQ,), lambda K, r: K.layers.LayerNormalization()),
    Case("ReLU", (IMG,), lambda K, r: K.layers.ReLU(max_value=_pick(r, None, 6.0),
                                                    negative_slope=_pick(r, 0.0, 0.1))),
    Case("LeakyReLU", (IMG,), lambda K, r: K.layers.LeakyReLU(0.2)),
    Case("ELU", (IMG,), lambda K, r: K.layers.ELU()),
    Case("PReLU", (IMG,), lambda K, r: K.layers.PReLU(alpha_initializer="random_uniform")),
    Case("Softmax", (SEQ,), lambda K, r: K.layers.Softmax()),
    Case("Activation", (IMG,), lambda K, r: K.layers.Activation(_act(r))),
    Case("Activation_exp", (IMG,), lambda K, r: K.layers.Activation("exponential")),
    Case("Flatten", (IMG,), lambda K, r: K.layers.Flatten()),
    Case("Reshape", (IMG,), lambda K, r: K.layers.Reshape((9, 21))),
    Case("Permute", (IMG,), lambda K, r: K.layers.Permute(_pick(r, (2, 1, 3), (3, 1, 2)))),
    Case("RepeatVector", (VEC,), lambda K, r: K.layers.RepeatVector(3)),
    Case("Cropping2D", (IMG,), lambda K, r: K.layers.Cropping2D(((1, 0), (0, 2)))),
    Case("Cropping1D", (SEQ,), lambda K, r: K.layers.Cropping1D((1, 2))),
    Case("ZeroPadding2D", (IMG,), lambda K, r: K.layers.ZeroPadding2D(((1, 0), (2, 1)))),
    Case("ZeroPadding1D", (SEQ,), lambda K, r: K.layers.ZeroPadding1D((0, int(r.integers(0, 3))))),
    Case("ZeroPadding3D", (VOL,), lambda K, r: K.layers.ZeroPadding3D(1)),
    Case("UpSampling2D", (IMG,), lambda K, r: K.layers.UpSampling2D(2, interpolation=_pick(r, "nearest", "bilinear"))),
    Case("UpSampling1D", (SEQ,), lambda K, r: K.layers.UpSampling1D(2)),
    Case("UpSampling3D", (VOL,), lambda K, r: K.layers.UpSampling3D(2)),
    Case("Dropout", (IMG,), lambda K, r: K.layers.Dropout(0.3)),
    Case("SpatialDropout2D", (IMG,), lambda K, r: K.layers.SpatialDropout2D(0.3)),
    Case("GaussianNoise", (VEC,), lambda K, r: K.layers.GaussianNoise(0.1)),
    Case("ActivityRegularization", (VEC,), lambda K, r: K.layers.ActivityRegularization()),
    Case("Add", (IMG, IMG), lambda K, r: K.layers.Add()),
    Case("Subtract", (IMG, IMG), lambda K, r: K.layers.Subtract()),
    Case("Multiply", (SEQ, SEQ), lambda K, r: K.layers.Multiply()),
    Case("Average", (IMG, IMG), lambda K, r: K.layers.Average()),
    Case("Maximum", (IMG, IMG), lambda K, r: K.layers.Maximum()),
    Case("Minimum", (IMG, IMG), lambda K, r: K.layers.Minimum()),
    Case("Concatenate", (IMG, IMG), lambda K, r: K.layers.Concatenate(axis=_pick(r, -1, 1, 2))),
    Case("Dot", (SEQ, SEQ), lambda K, r: K.layers.Dot(axes=_pick(r, 1, 2, -1, (1, 1), (2, -1)),
                                                      normalize=bool(r.integers(2)))),
    Case("Dot_cross", (SEQ, SEQ[::-1]), lambda K, r: K.layers.Dot(axes=_pick(r, (2, 1), (1, 2)),
                                                                  normalize=bool(r.integers(2)))),
    Case("Dot_vec", (VEC, VEC), lambda K, r: K.layers.Dot(axes=_pick(r, 1, -1), normalize=bool(r.integers(2)))),
    Case("Embedding", ((6,),), lambda K, r: K.layers.Embedding(10, 4), ints=True),
    Case("SimpleRNN", (SEQ,), lambda K, r: K.layers.SimpleRNN(3, return_sequences=bool(r.integers(2)))),
    Case("LSTM", (SEQ,), lambda K, r: K.layers.LSTM(3, return_sequences=bool(r.integers(2)))),
    Case("GRU", (SEQ,), lambda K, r: K.layers.GRU(3, return_sequences=bool(r.integers(2)))),
    Case("Bidirectional", (SEQ,), lambda K, r: K.layers.Bidirectional(K.layers.LSTM(2, return_sequences=True))),
    Case("TimeDistributed", (SEQ,), lambda K, r: K.layers.TimeDistributed(K.layers.Dense(2))),
    Case("Attention", (SEQ, SEQ), lambda K, r: K.layers.Attention()),
    Case("MultiHeadAttention", (SEQ, SEQ), lambda K, r: K.layers.MultiHeadAttention(2, 3)),
    Case("Masking", (SEQ,), lambda K, r: K.layers.Masking(0.0)),
]

DEFAULT = ("Dense", "Conv1D", "Conv2D", "Conv2D_dilated", "Conv2DTranspose", "DepthwiseConv2D", "SeparableConv2D",
           "MaxPooling2D", "AveragePooling2D", "GlobalAveragePooling2D", "BatchNormalization", "LayerNormalization",
           "ReLU", "PReLU", "Activation", "Flatten", "Permute", "Cropping2D", "ZeroPadding1D", "UpSampling2D",
           "Add", "Average", "Concatenate", "Embedding", "LSTM", "MultiHeadAttention", "Conv3D", "Dot", "Dot_cross",
           "Dot_vec", "Activation_exp")


def case(name: str) -> Case:
    return next(c for c in CASES if c.name == name)


def build(K, c: Case, seed: int):
    rng = np.random.default_rng(seed)
    inputs = [K.Input(shape, dtype="int32" if c.ints else "float32", name=f"in{i}") for i, shape in enumerate(c.inputs)]
    layer = c.make(K, rng)
    y = layer(inputs if len(inputs) > 1 else inputs[0]) if c.name not in ("Attention", "MultiHeadAttention") \
        else layer(*inputs) if c.name == "MultiHeadAttention" else layer(inputs)
    model = K.Model(inputs, y)
    wrng = np.random.default_rng(seed + 1)
    for w in model.weights:  # non-trivial weights (BN statistics, biases)
        w.assign(wrng.uniform(0.5, 1.5, tuple(w.shape)).astype("float32") if "variance" in w.name
                 else wrng.normal(0, 0.5, tuple(w.shape)).astype("float32"))
    return model


def feeds(c: Case, seed: int, batch: int = 1) -> list[np.ndarray]:
    rng = np.random.default_rng(seed + 2)
    return [rng.integers(0, 10, (batch, *s)).astype("int32") if c.ints
            else rng.normal(0, 1, (batch, *s)).astype("float32") for s in c.inputs]


def save(c: Case, form: str, work: Path, seed: int, batch: int = 1) -> tuple[Path, list[np.ndarray]]:
    """The model of `c` saved in `form` and Keras's outputs on `feeds(c, seed, batch)`."""
    if form in ("keras", "h5_keras3"):
        import keras as K
    else:
        import tf_keras as K
    model = build(K, c, seed)
    x = feeds(c, seed, batch)
    refs = model(x if len(x) > 1 else x[0], training=False)
    refs = [np.asarray(r) for r in (refs if isinstance(refs, (list, tuple)) else [refs])]
    path = work / {"keras": f"{c.name}.keras", "h5_keras3": f"{c.name}.h5", "h5_tf_keras": f"{c.name}_tfk.h5",
                   "saved_model_tf_keras": f"{c.name}_sm"}[form]
    if form == "saved_model_tf_keras":
        model.save(str(path), save_format="tf")
    else:
        model.save(str(path))
    return path, refs


@dataclass
class Outcome:
    verdict: str  # "exact", "refused" (exit 3), "wrong" (numbers off), "error N" (exit N != 3)
    detail: str = ""


def convert(path: Path, c: Case, refs: list[np.ndarray], seed: int) -> Outcome:
    """Parse `path` (no TF) and compare the IR's outputs with `refs`."""
    from tf_convert import parsers
    from tf_convert.convert import ir
    from tf_convert.convert.errors import ConvertError
    from tf_convert.parsers.base import ParseOptions

    options = ParseOptions(input_shapes={"": (1, *c.inputs[0])} if len(c.inputs) == 1 else {})
    try:
        graph = parsers.parse(path, options)
        x = feeds(c, seed)
        ins = [v.transpose(0, 3, 1, 2) if graph.source_layouts.get(t) == "NHWC" else v for t, v in zip(graph.inputs, x)]
        names = [graph.source_names.get(t, t).split(":")[0] for t in graph.inputs]
        if sorted(names) == [f"in{i}" for i in range(len(x))]:  # a SavedModel may order its inputs otherwise
            ins = [ins[int(n[2:])] for n in names]
        values = ir.evaluate(graph, [v.astype(np.float64) if v.dtype == np.float32 else v for v in ins])
    except ConvertError as err:
        code = err.exit_code
        return Outcome("refused" if code == 3 else f"error {code}", str(err).splitlines()[0][:300])
    except Exception as err:  # noqa: BLE001 - a parser crash: the suite's finding
        return Outcome("error 1", f"{type(err).__name__}: {err}"[:300] + "\n" + traceback.format_exc()[-800:])
    if len(graph.outputs) != len(refs):
        return Outcome("wrong", f"{len(graph.outputs)} outputs, Keras has {len(refs)}")
    worst = 0.0
    for t, ref in zip(graph.outputs, refs):
        out = values[t].transpose(0, 2, 3, 1) if graph.source_layouts.get(t) == "NHWC" else values[t]
        if out.shape != ref.shape:
            return Outcome("wrong", f"shape {out.shape} != Keras's {ref.shape}")
        worst = max(worst, float(np.abs(out - ref).max() / max(np.abs(ref).max(), 1e-6)))
    return Outcome("exact" if worst <= RTOL else "wrong", f"max_rel {worst:.2e}")


def main(argv: list[str]) -> int:
    import tempfile

    names = [c.name for c in CASES] if "--all" in argv else list(DEFAULT)
    forms = [f for f in FORMS if "--no-sm" not in argv or not f.startswith("saved_model")]
    counts: dict[str, dict[str, int]] = {f: {} for f in forms}
    with tempfile.TemporaryDirectory() as tmp:
        for seed, name in enumerate(names):
            row = []
            for form in forms:
                work = Path(tmp) / form
                work.mkdir(exist_ok=True)
                try:
                    path, refs = save(case(name), form, work, seed)
                    out = convert(path, case(name), refs, seed)
                except Exception as err:  # noqa: BLE001 - the library cannot save it: not the converter's
                    out = Outcome("unsaveable", f"{type(err).__name__}: {str(err)[:120]}")
                counts[form][out.verdict] = counts[form].get(out.verdict, 0) + 1
                why = f" ({out.detail.splitlines()[0]})" if out.verdict != "exact" else ""
                row.append(f"{form}={out.verdict}{why}")
            print(f"{name}: " + "; ".join(row), flush=True)
    for form, c in counts.items():
        print(form, dict(sorted(c.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
