"""The op catalog: the one place an IR op is stated.

Each row (`OpSpec`) declares an op's attributes (names; typed with defaults in `types`), its
parameters (weights), what it computes (`doc`, the contract), its `kind` and `family`, the flags the
passes, the padding and size logic, the border propagation and `inspect` read, its shape rule, and
the targets that refuse it (with the reason). Every module that needs a set of ops derives it here
(`ops_where`, `FOLDABLE`, `WINDOW_OPS`, `PADDED_OPS`...), never keeps its own list.

`convert.ir.reference` implements each op in numpy (one function per op, registered under the op's
name; tests/core/test_catalog.py checks that every catalog op has one, a shape rule, a parser that
produces it and, for each target, a handler or a declared refusal).

A row states `attrs`, `params`, `doc` and `kind`; every other field has a default, and the flags left unset
follow from `kind` (`OpSpec.__post_init__`). A row may name the TF ops (`tf`) and Keras activations
(`keras`) that are the op: the TF parser's handlers, its shape functions and constant folding, and the
Keras activation table derive from them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable

from ..targets import TARGETS  # noqa: F401 - the targets a row's `refused` names
from . import shapes, shapes_control
from .shapes import ShapeRule

REQUIRED = object()  # an Attr default meaning "every node must set it"

# An op's family: the file its reference function and each target's handler live in (`spatial.py`, or a
# part of it, `spatial_3d.py`); parsers group their handlers by the same names.
FAMILIES = ("elementwise", "reduce", "shape", "spatial", "nn", "sequence", "resize", "detection", "control")
KINDS = ("spatial", "parametric", "shape", "reduction", "binary", "unary", "source", "sequence", "control")

# What a row's kind implies for the fields it leaves unset.
_FAMILY_OF_KIND = {"spatial": "spatial", "parametric": "nn", "shape": "shape", "reduction": "reduce",
                   "binary": "elementwise", "unary": "elementwise", "source": "shape", "sequence": "sequence",
                   "control": "control"}
_SHAPE_OF_KIND: dict[str, ShapeRule] = {"binary": shapes.broadcast, "unary": shapes.same,
                                        "source": shapes.source}


@dataclass(frozen=True)
class Attr:
    """One attribute: its type (int, float, bool, str, ints, pads, pairs, shape, any), its default
    (REQUIRED: every node sets it) and, for strings, the values it takes."""

    type: str = "any"
    default: Any = REQUIRED
    choices: tuple[str, ...] = ()

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


def channels_only(attr: str) -> Callable[[Mapping[str, Any]], bool]:
    """A positional condition: the op works along the channel axis (IR axis 1) only -- attrs[attr]
    is 1 or (1,) -- and keeps it (keepdims, where the op has it)."""

    def condition(attrs: Mapping[str, Any]) -> bool:
        value = attrs[attr]
        axes = tuple(value) if isinstance(value, (tuple, list)) else (value,)
        return axes == (1,) and bool(attrs.get("keepdims", True))

    return condition


def _named(names: Mapping[str, Mapping[str, Any]] | tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """name -> attrs, from a mapping or a tuple of names (no attrs)."""
    if isinstance(names, Mapping):
        return {name: dict(attrs) for name, attrs in names.items()}
    return {name: {} for name in names}


@dataclass(frozen=True)
class OpSpec:
    attrs: tuple[str, ...]  # attribute names; '?' marks an optional one
    params: tuple[str, ...]  # parameter (weight) names; '?' marks an optional one
    doc: str  # what the op computes: the contract the reference and every emitter follow
    # spatial | parametric | shape | reduction | binary (broadcasting) | unary (elementwise,
    # shape-preserving) | source (no inputs) | sequence (recurrent layers over axis 1)
    kind: str
    family: str = ""  # one of FAMILIES ("" -> from kind)
    types: Mapping[str, Attr] = field(default_factory=dict)  # typed attributes with defaults
    # Folded when every input is a constant (convert.passes.constants): only cheap ops that do not
    # grow the model -- folding a conv on a constant would bake a possibly large tensor in.
    foldable: bool = False
    # Each output position computed from the same position of the inputs (the border propagation,
    # app/diagnose/border.py): True, False, or a condition on the attrs (None -> from kind).
    positional: bool | Callable[[Mapping[str, Any]], bool] | None = None
    elementwise: bool | None = None  # numpy-broadcasting, value by value (None -> from kind)
    window: bool = False  # a sliding window with explicit per-side pads (conv, pooling)
    padded: bool = False  # its lowering involves padding: every target plans it (convert.padding.plan)
    # What a separate pad layer in front of it fills with so that padded elements never change the result
    # (-inf: a max never picks them; 0 for the rest, an average then divides by the real elements, AVERAGING_OPS)
    pad_fill: float = 0.0
    # How the op follows the input's H/W (convert.padding.sizes): "free" (any size), "broadcast"
    # (free unless an operand has a fixed spatial shape), "channel_axis" (free when `axis` is N or
    # C), "global_reduce" (free when it reduces both H and W), "tf_padding" (free when its size
    # follows a TF padding rule), "constant_pad" (free when mode is constant), "bound" (bakes it).
    # "unit_axes" (free when it only inserts or removes size-1 axes),
    # "permute" (moves the free axes), "matmul" (free along either operand's rows, columns and batch
    # axes; along K only when it is free on both sides),
    # "gather_indices" (free along the indices' free axes), "resample" (free where the size-following
    # targets resize by constant factors: convert.sampling.plans).
    # "last_axis" (free unless its last axis is a free one: linear),
    # "own_axes" (softmax along any axis, layer_norm along those it does not normalise; not where a
    # parameter has a size along a free axis),
    # "recurrent" (free along the time axis, without a step mask); "unit_axes" also frees a reshape
    # that keeps every axis up to the last free one. None -> from kind.
    size: str | None = None
    # Every output value is one of the input values, unchanged (reshape, slice, concat...): a range an
    # integer input must keep (token ids below a table size, 0/1 masks) holds through it (app/verify/token_inputs).
    keeps_values: bool = False
    # What an integer input's magnitude does through it (what --verify feeds an integer input,
    # app/verify/token_inputs): "wrap" (any value of the dtype is valid and carried on, wrapping as TF's)
    # or "end" (the result no longer carries it: a comparison, an index)
    integers: str = ""
    shape: ShapeRule | None = None  # output shape from input shapes (None -> from kind, if it implies one)
    # its output's length along axis 0 depends on the data (its declared shape is the longest it can be)
    data_dependent: bool = False
    refused: Mapping[str, str] = field(default_factory=dict)  # target -> why it has no handler
    # The TF ops that are this op, one to one: TF op -> the attrs the IR node gets (a tuple of names: no
    # attrs). The TF parser's handler, its shape function and its constant folding derive from it.
    tf: Mapping[str, Mapping[str, Any]] | tuple[str, ...] = ()
    # The Keras activation names (`activation="relu"`) that are this op: name -> attrs (or a tuple).
    keras: Mapping[str, Mapping[str, Any]] | tuple[str, ...] = ()
    # The TFLite builtin operators that are this op, one to one (`tflite=("LOGISTIC",)`): name -> attrs (or a
    # tuple). The TFLite parser's elementwise table derives from it.
    tflite: Mapping[str, Mapping[str, Any]] | tuple[str, ...] = ()
    # Its output's sizes follow the values of run-time inputs (a shape, paddings, a depth): the shape rule
    # gives them as RUN_TIME, the model computes them while it runs (convert.ir.runtime_dims).
    run_time_sizes: bool = False
    # Its PyTorch/ONNX handlers never read a size, so a run-time size passes through it (an elementwise op a
    # model applies to such a result).
    passes_run_time_sizes: bool = False
    # It computes in float64, float16 and int16 as TF does (convert.ir.dtypes.COMPUTED_WIDE): the PyTorch and
    # ONNX handlers keep the input's dtype (None -> from kind: the elementwise ops).
    wide: bool | None = None

    def __post_init__(self) -> None:
        derived = {
            "family": self.family or _FAMILY_OF_KIND.get(self.kind, ""),
            "elementwise": self.kind in ("unary", "binary") if self.elementwise is None else self.elementwise,
            "positional": self.kind in ("unary", "binary") if self.positional is None else self.positional,
            "size": ("broadcast" if self.kind in ("unary", "binary") else "bound") if self.size is None else self.size,
            "shape": _SHAPE_OF_KIND.get(self.kind) if self.shape is None else self.shape,
            "wide": self.kind in ("unary", "binary") if self.wide is None else self.wide,
            "tf": _named(self.tf),
            "keras": _named(self.keras),
            "tflite": _named(self.tflite),
        }
        for name, value in derived.items():
            object.__setattr__(self, name, value)

    @property
    def attributes(self) -> dict[str, Attr]:
        """Every attribute, typed: `types` where given, else untyped (required unless marked '?')."""
        found = {}
        for name in self.attrs:
            plain = name.rstrip("?")
            found[plain] = self.types.get(plain) or Attr(default=None if name.endswith("?") else REQUIRED)
        return found

    def is_positional(self, attrs: Mapping[str, Any]) -> bool:
        """Whether a node of this op with `attrs` keeps positions (see `positional`)."""
        return self.positional(attrs) if callable(self.positional) else bool(self.positional)


_SPATIAL_PADDING = Attr("str", None, ("SAME", "VALID", "EXPLICIT"))  # TF's rule the pads came from
# A window op's pads are only half the story: SAME pads follow the input size, the others are fixed. Every
# node says which, set where it is built (convert.padding.sizes reads it).
_WINDOW_PADDING = Attr("str", REQUIRED, ("SAME", "VALID", "EXPLICIT"))
_WINDOW_TYPES = {"kernel": Attr("ints"), "stride": Attr("ints"), "pads": Attr("pads"), "padding": _WINDOW_PADDING}


# BVLC Caffe has N-d Convolution but no N-d Pooling and no Permute of a 5-D blob (the
# NDHWC <-> NCDHW moves every TF volume graph needs).
_NO_PERMUTE_5D = "BVLC Caffe has no Permute of 5-D blobs (the NDHWC <-> NCDHW moves a TF volume model needs)"
_NO_POOLING_3D = "BVLC Caffe's Pooling layer is 2-D only"

# typed attrs shared by lstm / gru / rnn, and Caffe's refusal.
CELL_ACTIVATIONS = ("tanh", "sigmoid", "hard_sigmoid", "relu", "linear")  # a recurrent cell's activations
_RECURRENT_TYPES = {
    "units": Attr("int"),
    "activation": Attr("str", REQUIRED, CELL_ACTIVATIONS),
    "recurrent_activation": Attr("str", REQUIRED, CELL_ACTIVATIONS),
    "go_backwards": Attr("bool"),
    "output": Attr("str", REQUIRED, ("sequence", "last_h")),
    "sequence_order": Attr("str", REQUIRED, ("processed", "input")),
    # what a masked step writes into the 'sequence' output
    "masked_output": Attr("str", "previous", ("previous", "zero")),
    # a TF While loop raised to this node ran a trip count fixed when the graph was traced: TF itself
    # runs that many steps at any input length, so the model is bound to it (convert.padding.sizes)
    "fixed_steps": Attr("bool", False),
}
_NO_CAFFE_CELL = ("BVLC Caffe has no GRU, and its LSTM/RNN layers (time-major, driven by a sequence-continuation "
                  "input) are not Keras's cells; convert recurrent models to torch, ONNX or MXNet")


# ---- what the elementwise and reduction rows below share ----------------------------
_NO_CAFFE_LAYER = "BVLC Caffe has no layer computing {}"
_CAFFE_ROUNDING = _NO_CAFFE_LAYER.format("floor/ceil/round/sign (no rounding layer)")
_CAFFE_TRIG = _NO_CAFFE_LAYER.format("trigonometric or hyperbolic functions")
_CAFFE_INTEGER = _NO_CAFFE_LAYER.format("floor or truncating division, or a modulus")
_CAFFE_TYPED = "Caffe blobs are float32: no bool or integer tensors, which this op makes or reads"
_REDUCE_OVER_AXES: dict[str, Any] = {"types": {"axes": Attr("ints"), "keepdims": Attr("bool")},
                                     "positional": channels_only("axes"), "size": "global_reduce",
                                     "shape": shapes.reduce}
_RUNNING: dict[str, Any] = {"types": {"axis": Attr("int"), "exclusive": Attr("bool", False),
                                      "reverse": Attr("bool", False)},
                            "positional": channels_only("axis"), "size": "channel_axis", "shape": shapes.same}


# what the integer (TFLite full-integer) rows share
_QUANTIZED_TYPES = {"scale": Attr("float"), "zero_point": Attr("int"),
                    "dtype": Attr("str", REQUIRED, ("int8", "uint8"))}
_QUANTIZED_REFUSED = {
    "mxnet": "TFLite's fixed-point integer arithmetic (int64 products, rounding shifts) is not lowered to MXNet yet; "
             "convert a full-integer .tflite model to torch or onnx",
    "caffe": "Caffe blobs are float32: TFLite's integer arithmetic (int8 tensors, int32 accumulators, fixed-point "
             "multipliers) cannot be expressed",
}


# name -> spec. attrs marked with '?' are optional.
# why MXNet and Caffe have no handler for an op whose sizes follow run-time values
_STATIC_ONLY = {target: f"its output's sizes follow a run-time value and the {name} format holds static shapes "
                        "only (make that value a constant, --set NAME=VALUE)"
                for target, name in (("mxnet", "MXNet"), ("caffe", "Caffe"))}

OPS: dict[str, OpSpec] = {
    # ---- spatial ------------------------------------------------------------------------------
    "conv2d": OpSpec(
        ("kernel", "stride", "dilation", "groups", "pads", "padding"),
        ("weight", "bias?"),
        "2-D cross-correlation. weight OIHW. pads=(t,b,l,r) zero padding. "
        "Depthwise is groups == in_channels (channel multiplier = out / in).",
        "spatial",
        types={**_WINDOW_TYPES, "dilation": Attr("ints"), "groups": Attr("int")},
        window=True, padded=True, size="free", shape=shapes.window,
    ),
    "conv_transpose2d": OpSpec(
        ("kernel", "stride", "dilation", "groups", "crop", "output_size", "padding?"),
        ("weight", "bias?"),
        "Transposed conv. weight IOHW. Compute the full output (n-1)*s + e per axis with no padding, "
        "then keep rows [crop_top, crop_top + out_h) and cols [crop_left, crop_left + out_w) where "
        "crop=(top, left) and output_size=(out_h, out_w). Rows past the full output are zeros "
        "(before the bias is added). See padding.transposed_conv_crop.",
        "spatial",
        types={"kernel": Attr("ints"), "stride": Attr("ints"), "dilation": Attr("ints"), "groups": Attr("int"),
               "crop": Attr("ints"), "output_size": Attr("ints"), "padding": _SPATIAL_PADDING},
        padded=True, size="tf_padding", shape=shapes.conv_transpose,
    ),
    "max_pool2d": OpSpec(
        ("kernel", "stride", "pads", "padding"),
        (),
        "Max pooling; padded elements are ignored (as if -inf). Output size floor((n+pt+pb-k)/s)+1.",
        "spatial",
        types=_WINDOW_TYPES, window=True, padded=True, size="free", shape=shapes.window, pad_fill=float("-inf"),
    ),
    "avg_pool2d": OpSpec(
        ("kernel", "stride", "pads", "count_include_pad?", "padding"),
        (),
        "Average pooling. count_include_pad=False (TF): divide by the number of real (unpadded) "
        "elements in each window. Output size floor((n+pt+pb-k)/s)+1.",
        "spatial",
        types={**_WINDOW_TYPES, "count_include_pad": Attr("bool", False)},
        window=True, padded=True, size="free", shape=shapes.window,
    ),
    "pad": OpSpec(
        ("pads", "mode", "value"),
        (),
        "Pad. pads is a list of (before, after) per axis, in IR axis order. "
        "mode in {'constant', 'reflect', 'symmetric'}; value is used by 'constant'.",
        "spatial",
        types={"pads": Attr("pairs"), "mode": Attr("str", "constant", ("constant", "reflect", "symmetric")),
               "value": Attr("float", 0.0)},
        padded=True, size="constant_pad", shape=shapes.pad,
    ),
    "resize": OpSpec(
        ("mode", "coordinate", "size", "fixed_size"),
        (),
        "Resize the H, W axes of NCHW x to size=(out_h, out_w). mode in {'nearest', 'bilinear'}; "
        "coordinate in {'asymmetric', 'half_pixel', 'align_corners'} is TF's sampling grid "
        "(align_corners / half_pixel_centers / neither), computed in float32 exactly as TF "
        "(convert.sampling.rules).",
        "spatial",
        family="resize",
        types={"mode": Attr("str", choices=("nearest", "bilinear")),
               "coordinate": Attr("str", choices=("asymmetric", "half_pixel", "align_corners")),
               "size": Attr("ints"),
               # TF's size was a constant of the graph, not computed from the input's shape: TF resizes to
               # it at any input size, so the model is bound to it (convert.padding.sizes)
               "fixed_size": Attr("bool", False)},
        size="resample", shape=shapes.resize,
    ),
    "depth_to_space": OpSpec(
        ("block_size",),
        (),
        "NCHW (N, C*b*b, H, W) -> (N, C, H*b, W*b) in TF's DCR order: "
        "y[n, c, h*b+i, w*b+j] = x[n, (i*b+j)*C + c, h, w].",
        "shape",
        family="resize", types={"block_size": Attr("int")}, shape=shapes.depth_to_space,
    ),
    "space_to_depth": OpSpec(
        ("block_size",),
        (),
        "The inverse of depth_to_space: NCHW (N, C, H*b, W*b) -> (N, C*b*b, H, W), TF's order.",
        "shape",
        family="resize", types={"block_size": Attr("int")}, shape=shapes.space_to_depth,
    ),
    # ---- per-channel / normalisation ---------------------------------------------------------
    "channel_affine": OpSpec(
        ("axis", "epsilon?"),
        ("scale", "shift", "gamma?", "beta?", "mean?", "variance?"),
        "y = x * scale + shift, scale and shift 1-D over `axis` (1 for NCHW; last for 2-D). "
        "Inference batch norm folds into this; it also keeps its own statistics (gamma?, beta?, mean, "
        "variance, epsilon) so that `--into` loads them into an nn.BatchNorm. Targets use scale and shift only.",
        "parametric",
        types={"axis": Attr("int", 1), "epsilon": Attr("float", None)}, positional=True, size="free", shape=shapes.same,
    ),
    "layer_norm": OpSpec(
        ("axes", "epsilon"),
        ("gamma?", "beta?"),
        "Normalise over `axes` (IR axes): (x-mean)/sqrt(var+eps)*gamma+beta; gamma/beta shaped for "
        "broadcasting against x.",
        "parametric",
        types={"axes": Attr("ints"), "epsilon": Attr("float")}, positional=channels_only("axes"),
        size="own_axes", shape=shapes.same,
    ),
    # ---- dense / shape -----------------------------------------------------------------------
    "linear": OpSpec((), ("weight", "bias?"), "y = x @ weight.T + bias, weight (out, in), over x's last axis; "
                     "x of rank >= 2, its leading axes kept (a Dense on (N, L, C) tokens).", "parametric",
                     size="last_axis", shape=shapes.linear),
    "matmul": OpSpec((), (), "a @ b (numpy.matmul) of two tensors of rank >= 2; leading axes broadcast.",
                     "binary", family="nn", elementwise=False, positional=False, size="matmul", shape=shapes.matmul,
                     refused={"caffe": "BVLC Caffe has no product of two activations"}, integers="wrap"),
    # float32 LU with partial pivoting, as TF's Eigen kernels; other libraries round in another order, so the
    # results agree to about n * eps * cond(A), not bit for bit (tests/parsers/test_op_tail.py says how close)
    "matrix_determinant": OpSpec((), (), "det of each square matrix of the last two axes (..., n, n) -> (...).",
                                 "reduction", family="nn", positional=False, shape=shapes.matrix_determinant,
                                 refused={"caffe": _NO_CAFFE_LAYER.format("a determinant")}),
    "matrix_inverse": OpSpec((), (), "Inverse of each square matrix of the last two axes (..., n, n).", "shape",
                             family="nn", shape=shapes.same,
                             refused={"caffe": _NO_CAFFE_LAYER.format("a matrix inverse"),
                                      "onnx": "ONNX has no matrix inverse operator (onnxruntime's com.microsoft "
                                              "Inverse is no standard ONNX); its Det is there, an inverse is not"}),
    "reshape": OpSpec(("shape",), (), "Row-major reshape to `shape` (IR layout, full static shape).", "shape",
                      types={"shape": Attr("shape")}, foldable=True, size="unit_axes", shape=shapes.reshape,
                      keeps_values=True),
    "transpose": OpSpec(("perm",), (), "numpy.transpose(x, perm).", "shape",
                        types={"perm": Attr("ints")}, foldable=True, size="permute", shape=shapes.transpose,
                        keeps_values=True),
    "concat": OpSpec(("axis",), (), "Concatenate inputs along IR axis.", "shape",
                     types={"axis": Attr("int")}, foldable=True, positional=channels_only("axis"),
                     size="channel_axis", shape=shapes.concat, keeps_values=True),
    "slice": OpSpec(("begin", "end"), (), "x[begin[i]:end[i]] on every axis (static, step 1).", "shape",
                    types={"begin": Attr("ints"), "end": Attr("ints")}, shape=shapes.slice_,
                    keeps_values=True),
    "argmax": OpSpec(("axis", "keepdims"), (), "Index of the max along IR axis (first one on ties); int64.",
                     "reduction", types={"axis": Attr("int"), "keepdims": Attr("bool", False)}, shape=shapes.reduce,
                     refused={"caffe": "OpenCV's Caffe runtime has no ArgMax layer"}, integers="end"),  # measured: 4.x
    "reduce_mean": OpSpec(("axes", "keepdims"), (), "Mean over IR axes.", "reduction",
                          types={"axes": Attr("ints"), "keepdims": Attr("bool")}, positional=channels_only("axes"),
                          size="global_reduce", shape=shapes.reduce, wide=True),
    "reduce_max": OpSpec(("axes", "keepdims"), (), "Max over IR axes.", "reduction",
                         types={"axes": Attr("ints"), "keepdims": Attr("bool")}, positional=channels_only("axes"),
                         size="global_reduce", shape=shapes.reduce, integers="wrap", wide=True),
    "softmax": OpSpec(("axis",), (), "Softmax over IR axis.", "reduction", family="nn",
                      types={"axis": Attr("int")}, positional=channels_only("axis"), size="own_axes",
                      shape=shapes.same, wide=True),
    # ---- elementwise -------------------------------------------------------------------------
    "add": OpSpec((), (), "a + b, numpy broadcasting.", "binary", passes_run_time_sizes=True,
                  foldable=True, tf=("Add", "AddV2"), tflite=("ADD",),
                  integers="wrap"),
    "sub": OpSpec((), (), "a - b, numpy broadcasting.", "binary", passes_run_time_sizes=True,
                  foldable=True, tf=("Sub",), tflite=("SUB",),
                  integers="wrap"),
    "mul": OpSpec((), (), "a * b, numpy broadcasting.", "binary", passes_run_time_sizes=True,
                  foldable=True, tflite=("MUL",), integers="wrap"),
    "div": OpSpec((), (), "a / b, numpy broadcasting.", "binary", passes_run_time_sizes=True,
                  foldable=True, tf=("RealDiv",), tflite=("DIV",)),
    "maximum": OpSpec((), (), "max(a, b), numpy broadcasting.", "binary", passes_run_time_sizes=True,
                      foldable=True, tf=("Maximum",),
                      tflite=("MAXIMUM",), integers="wrap"),
    "minimum": OpSpec((), (), "min(a, b), numpy broadcasting.", "binary", passes_run_time_sizes=True,
                      foldable=True, tf=("Minimum",),
                      tflite=("MINIMUM",), integers="wrap"),
    "relu": OpSpec((), (), "max(x, 0).", "unary", passes_run_time_sizes=True,
                   foldable=True, tf=("Relu",), keras=("relu",), tflite=("RELU",)),
    "clip": OpSpec(("min", "max"), (), "min(max(x, min), max). ReLU6 is clip(0, 6).", "unary",
                   types={"min": Attr("float", None), "max": Attr("float", None)}, foldable=True,
                   tf={"Relu6": {"min": 0.0, "max": 6.0}},
                   keras={"relu6": {"min": 0.0, "max": 6.0}},
                   tflite={"RELU6": {"min": 0.0, "max": 6.0}, "RELU_N1_TO_1": {"min": -1.0, "max": 1.0},
                           "RELU_0_TO_1": {"min": 0.0, "max": 1.0}}),
    "leaky_relu": OpSpec(("alpha",), (), "x if x >= 0 else alpha * x.", "unary",
                         types={"alpha": Attr("float")}, keras={"leaky_relu": {"alpha": 0.2}}),
    "elu": OpSpec(("alpha",), (), "x if x > 0 else alpha * (exp(x) - 1).", "unary",
                  types={"alpha": Attr("float", 1.0)}, tf={"Elu": {"alpha": 1.0}}, keras={"elu": {"alpha": 1.0}},
                  tflite={"ELU": {"alpha": 1.0}}),
    "sigmoid": OpSpec((), (), "1 / (1 + exp(-x)).", "unary", foldable=True, tf=("Sigmoid",), keras=("sigmoid",),
                      tflite=("LOGISTIC",)),
    "hard_sigmoid": OpSpec(
        ("alpha", "beta"), (), "clip(alpha * x + beta, 0, 1) (Keras 3: alpha=1/6, beta=0.5).", "unary",
        types={"alpha": Attr("float"), "beta": Attr("float")},
        keras={"hard_sigmoid": {"alpha": 1.0 / 6.0, "beta": 0.5}},
    ),
    "tanh": OpSpec((), (), "tanh(x).", "unary", foldable=True, tf=("Tanh",), keras=("tanh",), tflite=("TANH",)),
    "swish": OpSpec((), (), "x * sigmoid(x).", "unary", keras=("swish", "silu")),
    "hard_swish": OpSpec((), (), "x * relu6(x + 3) / 6.", "unary", keras=("hard_swish", "hard_silu"),
                         tflite=("HARD_SWISH",)),
    "gelu": OpSpec(("approximate",), (), "GELU; approximate in {'none', 'tanh'}.", "unary",
                   types={"approximate": Attr("str", "none", ("none", "tanh"))},
                   keras={"gelu": {"approximate": "none"}},  # keras.activations.gelu defaults to exact
                   wide=False),  # measured: torch's float64 gelu is 1.6e-9 off TF's; ONNX's float constants
    "exp": OpSpec((), (), "exp(x).", "unary", foldable=True, tf=("Exp",), keras={"exponential": {}}, tflite=("EXP",)),
    "sqrt": OpSpec((), (), "sqrt(x).", "unary", foldable=True, tf=("Sqrt",), tflite=("SQRT",)),
    "rsqrt": OpSpec((), (), "1 / sqrt(x).", "unary", foldable=True, tf=("Rsqrt",), tflite=("RSQRT",)),
    "square": OpSpec((), (), "x * x.", "unary", foldable=True, tf=("Square",), tflite=("SQUARE",), integers="wrap"),
    "neg": OpSpec((), (), "-x.", "unary", passes_run_time_sizes=True,
                  foldable=True, tf=("Neg",), tflite=("NEG",), integers="wrap"),
    "abs": OpSpec((), (), "|x|.", "unary", passes_run_time_sizes=True,
                  foldable=True, tf=("Abs",), tflite=("ABS",), integers="wrap"),
    "identity": OpSpec((), (), "y = x (kept only where a graph output needs its own name).", "unary",
                       passes_run_time_sizes=True, foldable=True, size="free", keeps_values=True),
    "const": OpSpec((), ("value",), "A constant tensor; value already in IR layout.", "source",
                    wide=True),
    # ---- elementwise math, comparisons, logic, casts, reductions ------------------
    # One row per op; the numpy meaning is in reference/elementwise.py's ELEMENTWISE table. Bool results are dtype bool.
    # Caffe: the refusals say which layer BVLC lacks; Caffe blobs are float32, so every op that makes
    # or reads a bool or integer tensor is refused for that (emitters/caffe/elementwise.dtype_problems).
    "softplus": OpSpec((), (), "log(1 + exp(x)), as TF computes it (x past its float32 thresholds: x, exp(x)).",
                       "unary", tf=("Softplus",)),
    "softsign": OpSpec((), (), "x / (1 + |x|).", "unary", tf=("Softsign",)),
    "selu": OpSpec((), (), "scale * (x if x > 0 else alpha * (exp(x) - 1)), TF's constants.", "unary", tf=("Selu",)),
    "erf": OpSpec((), (), "erf(x).", "unary", refused={"caffe": _NO_CAFFE_LAYER.format("erf")}),
    "erfc": OpSpec((), (), "1 - erf(x).", "unary", refused={"caffe": _NO_CAFFE_LAYER.format("erfc")}),
    "floor": OpSpec((), (), "floor(x).", "unary", refused={"caffe": _CAFFE_ROUNDING}, tf=("Floor",), tflite=("FLOOR",)),
    "ceil": OpSpec((), (), "ceil(x).", "unary", refused={"caffe": _CAFFE_ROUNDING}, tf=("Ceil",), tflite=("CEIL",)),
    "round": OpSpec((), (), "Round half to even (TF's Round and Rint).", "unary", refused={"caffe": _CAFFE_ROUNDING},
                    tf=("Round", "Rint"), tflite=("ROUND",)),
    "sign": OpSpec((), (), "-1, 0 or 1 (0 for 0).", "unary", refused={"caffe": _CAFFE_ROUNDING}, tf=("Sign",),
                   tflite=("SIGN",), integers="wrap"),
    "log": OpSpec((), (), "log(x).", "unary", tf=("Log",), tflite=("LOG",)),
    "log1p": OpSpec((), (), "log(1 + x).", "unary", tf=("Log1p",)),
    "expm1": OpSpec((), (), "exp(x) - 1.", "unary", tf=("Expm1",)),
    "reciprocal": OpSpec((), (), "1 / x.", "unary", tf=("Reciprocal", "Inv")),
    "sin": OpSpec((), (), "sin(x).", "unary", refused={"caffe": _CAFFE_TRIG}, tf=("Sin",), tflite=("SIN",)),
    "cos": OpSpec((), (), "cos(x).", "unary", refused={"caffe": _CAFFE_TRIG}, tf=("Cos",), tflite=("COS",)),
    "tan": OpSpec((), (), "tan(x).", "unary", refused={"caffe": _CAFFE_TRIG}, tf=("Tan",)),
    "asin": OpSpec((), (), "asin(x).", "unary", refused={"caffe": _CAFFE_TRIG}, tf=("Asin",)),
    "acos": OpSpec((), (), "acos(x).", "unary", refused={"caffe": _CAFFE_TRIG}, tf=("Acos",)),
    "atan": OpSpec((), (), "atan(x).", "unary", refused={"caffe": _CAFFE_TRIG}, tf=("Atan",)),
    "sinh": OpSpec((), (), "sinh(x).", "unary", refused={"caffe": _CAFFE_TRIG}, tf=("Sinh",)),
    "cosh": OpSpec((), (), "cosh(x).", "unary", refused={"caffe": _CAFFE_TRIG}, tf=("Cosh",)),
    "asinh": OpSpec((), (), "asinh(x).", "unary", refused={"caffe": _CAFFE_TRIG}, tf=("Asinh",)),
    "acosh": OpSpec((), (), "acosh(x).", "unary", refused={"caffe": _CAFFE_TRIG}, tf=("Acosh",)),
    "atanh": OpSpec((), (), "atanh(x).", "unary", refused={"caffe": _CAFFE_TRIG}, tf=("Atanh",)),
    "is_nan": OpSpec((), (), "x != x (bool).", "unary", refused={"caffe": _CAFFE_TYPED}, tf=("IsNan",)),
    "is_inf": OpSpec((), (), "|x| == inf (bool).", "unary", refused={"caffe": _CAFFE_TYPED}, tf=("IsInf",)),
    "is_finite": OpSpec((), (), "not nan and not inf (bool).", "unary", refused={"caffe": _CAFFE_TYPED},
                        tf=("IsFinite",)),
    "logical_not": OpSpec((), (), "not x (bool).", "unary", refused={"caffe": _CAFFE_TYPED}, tf=("LogicalNot",)),
    "cast": OpSpec(("dtype",), (), "x as `dtype` (float -> int truncates toward 0; -> bool is x != 0).", "unary",
                   passes_run_time_sizes=True, types={"dtype": Attr("str")}, refused={"caffe": _CAFFE_TYPED}),
    "pow": OpSpec((), (), "a ** b, numpy broadcasting.", "binary",
                  refused={"caffe": "Caffe's Power layer takes a constant exponent only; this one is a tensor"},
                  tflite=("POW",)),
    "floor_div": OpSpec((), (), "floor(a / b) (floats: TF's floor of the rounded quotient; ints: floor division).",
                        "binary", refused={"caffe": _CAFFE_INTEGER}, tf=("FloorDiv",)),
    "floor_mod": OpSpec((), (), "a - floor(a / b) * b with the sign of b (TF FloorMod: fmod, then + b where signs "
                        "differ).", "binary", refused={"caffe": _CAFFE_INTEGER}, tf=("FloorMod",)),
    "truncate_div": OpSpec((), (), "Integer division rounding toward zero.", "binary",
                           refused={"caffe": _CAFFE_INTEGER}, tf=("TruncateDiv",)),
    "truncate_mod": OpSpec((), (), "fmod(a, b): the remainder with the sign of a (TF Mod, TruncateMod).", "binary",
                           refused={"caffe": _CAFFE_INTEGER}, tf=("TruncateMod", "Mod")),
    "div_no_nan": OpSpec((), (), "0 where b == 0, else a / b.", "binary",
                         refused={"caffe": _NO_CAFFE_LAYER.format("a division with a zero test")}, tf=("DivNoNan",)),
    "atan2": OpSpec((), (), "atan2(a, b).", "binary", refused={"caffe": _CAFFE_TRIG}, tf=("Atan2",)),
    "equal": OpSpec((), (), "a == b (bool), numpy broadcasting.", "binary", refused={"caffe": _CAFFE_TYPED},
                    tf=("Equal",), tflite=("EQUAL",), integers="end"),
    "not_equal": OpSpec((), (), "a != b (bool).", "binary", refused={"caffe": _CAFFE_TYPED}, tf=("NotEqual",),
                        tflite=("NOT_EQUAL",), integers="end"),
    "less": OpSpec((), (), "a < b (bool).", "binary", refused={"caffe": _CAFFE_TYPED}, tf=("Less",),
                   tflite=("LESS",), integers="end"),
    "less_equal": OpSpec((), (), "a <= b (bool).", "binary", refused={"caffe": _CAFFE_TYPED}, tf=("LessEqual",),
                         tflite=("LESS_EQUAL",), integers="end"),
    "greater": OpSpec((), (), "a > b (bool).", "binary", refused={"caffe": _CAFFE_TYPED}, tf=("Greater",),
                      tflite=("GREATER",), integers="end"),
    "greater_equal": OpSpec((), (), "a >= b (bool).", "binary", refused={"caffe": _CAFFE_TYPED}, tf=("GreaterEqual",),
                            tflite=("GREATER_EQUAL",), integers="end"),
    "logical_and": OpSpec((), (), "a and b (bool).", "binary", refused={"caffe": _CAFFE_TYPED}, tf=("LogicalAnd",),
                          tflite=("LOGICAL_AND",)),
    "logical_or": OpSpec((), (), "a or b (bool).", "binary", refused={"caffe": _CAFFE_TYPED}, tf=("LogicalOr",),
                         tflite=("LOGICAL_OR",)),
    "select": OpSpec((), (), "where(cond, a, b): inputs (cond, a, b), numpy broadcasting.", "binary",
                     refused={"caffe": _CAFFE_TYPED}),
    "reduce_sum": OpSpec(("axes", "keepdims"), (), "Sum over IR axes.", "reduction", **_REDUCE_OVER_AXES,
                         integers="wrap", wide=True),
    "reduce_prod": OpSpec(("axes", "keepdims"), (), "Product over IR axes.", "reduction", **_REDUCE_OVER_AXES,
                          refused={"caffe": _NO_CAFFE_LAYER.format("products over axes")}, integers="wrap",
                          wide=True),
    "reduce_min": OpSpec(("axes", "keepdims"), (), "Min over IR axes.", "reduction", **_REDUCE_OVER_AXES,
                         refused={"caffe": _NO_CAFFE_LAYER.format("minima over axes (Pooling MAX of -x is not "
                                                                  "BVLC-exact for all shapes)")}, integers="wrap",
                         wide=True),
    "reduce_all": OpSpec(("axes", "keepdims"), (), "Logical and over IR axes (bool).", "reduction",
                         **_REDUCE_OVER_AXES, refused={"caffe": _CAFFE_TYPED}),
    "reduce_any": OpSpec(("axes", "keepdims"), (), "Logical or over IR axes (bool).", "reduction",
                         **_REDUCE_OVER_AXES, refused={"caffe": _CAFFE_TYPED}),
    "argmin": OpSpec(("axis", "keepdims"), (), "Index of the min along IR axis (first one on ties); int64 or int32.",
                     "reduction", types={"axis": Attr("int"), "keepdims": Attr("bool", False)}, shape=shapes.reduce,
                     refused={"caffe": _CAFFE_TYPED}, integers="end"),
    "cumsum": OpSpec(("axis", "exclusive", "reverse"), (), "Running sum along IR axis (TF's exclusive/reverse).",
                     "reduction", **_RUNNING, refused={"caffe": _NO_CAFFE_LAYER.format("running sums")},
                     integers="wrap"),
    "cumprod": OpSpec(("axis", "exclusive", "reverse"), (), "Running product along IR axis (TF's exclusive/reverse).",
                      "reduction", **_RUNNING, refused={"caffe": _NO_CAFFE_LAYER.format("running products")},
                      integers="wrap"),
    "log_softmax": OpSpec(("axis",), (), "x - max - log(sum(exp(x - max))) over IR axis.", "reduction",
                          types={"axis": Attr("int")}, positional=channels_only("axis"), size="channel_axis",
                          shape=shapes.same,
                          refused={"caffe": "Log(Softmax) underflows to -inf where TF's log-softmax stays finite"},
                          wide=True),
    "top_k_values": OpSpec(("k",), (), "The k largest values along the last axis, largest first.", "reduction",
                           types={"k": Attr("int")}, shape=shapes.top_k,
                           refused={"caffe": _NO_CAFFE_LAYER.format("top-k")}),
    "top_k_indices": OpSpec(("k",), (), "Their indices (int32), the lower index first among equal values.",
                            "reduction", types={"k": Attr("int")}, shape=shapes.top_k,
                            refused={"caffe": _NO_CAFFE_LAYER.format("top-k")}),
    # ---- embeddings, token inputs, transformers ------------------------------
    "gather": OpSpec(
        ("axis",),
        (),
        "numpy.take(data, indices, axis) of inputs (data, indices): integer indices of any rank, "
        "output shape data.shape[:axis] + indices.shape + data.shape[axis+1:]. Indices must lie in "
        "[0, data.shape[axis]) (TF raises otherwise). An embedding lookup is gather(table, ids, 0).",
        "shape",
        family="sequence", types={"axis": Attr("int")}, size="gather_indices", shape=shapes.gather,
        refused={"caffe": "BVLC Caffe has no gather (Embed takes ids on one axis only, as float)"},
    ),
    "one_hot": OpSpec(
        ("depth", "axis", "on", "off"),
        (),
        "One-hot float32 of integer indices, the new axis of size `depth` inserted at IR `axis`: "
        "`on` where index == position, `off` elsewhere (out-of-range and negative indices give an "
        "all-`off` row, as TF).",
        "shape",
        family="sequence", types={"depth": Attr("int"), "axis": Attr("int"), "on": Attr("float", 1.0),
                                  "off": Attr("float", 0.0)}, shape=shapes.one_hot,
        refused={"caffe": "BVLC Caffe has no one-hot layer and no integer blobs"},
    ),

    # ---- 3-D convolution and pooling on NCDHW, pads (d0, d1, h0, h1, w0, w1) --------------------
    # 1-D layers need no ops of their own: they run as the 2-D ops on a unit-height image, as TF does.
    # Not `window`/`padded`: the 2-D padding plan does not read them; their emitters pad with
    # convert.padding.nd. They follow any D/H/W as the 2-D ops do (`padding` "SAME":
    # pads recomputed from the runtime size where they depend on it; SLIDING_OPS).
    "conv3d": OpSpec(
        ("kernel", "stride", "dilation", "groups", "pads", "padding?"),
        ("weight", "bias?"),
        "3-D cross-correlation of NCDHW x. weight OIDHW. pads=(front, back, top, bottom, left, right) "
        "zero padding: (begin, end) per spatial axis.",
        "spatial",
        types={"kernel": Attr("ints"), "stride": Attr("ints"), "dilation": Attr("ints"), "groups": Attr("int"),
               "pads": Attr("ints"), "padding": _SPATIAL_PADDING},
        size="free", shape=shapes.window, refused={"caffe": _NO_PERMUTE_5D},
    ),
    "conv_transpose3d": OpSpec(
        ("kernel", "stride", "dilation", "groups", "crop", "output_size", "padding?"),
        ("weight", "bias?"),
        "3-D transposed conv, weight IODHW; conv_transpose2d's rule on three axes: full output "
        "(n-1)*s + e per axis, keep [crop[i], crop[i] + output_size[i]), zeros past the full output "
        "(before the bias).",
        "spatial",
        types={"kernel": Attr("ints"), "stride": Attr("ints"), "dilation": Attr("ints"), "groups": Attr("int"),
               "crop": Attr("ints"), "output_size": Attr("ints"), "padding": _SPATIAL_PADDING},
        size="tf_padding", shape=shapes.conv_transpose, refused={"caffe": _NO_PERMUTE_5D},
    ),
    "max_pool3d": OpSpec(
        ("kernel", "stride", "pads", "padding?"),
        (),
        "3-D max pooling on NCDHW; padded elements are ignored (as if -inf). pads as conv3d.",
        "spatial",
        types={"kernel": Attr("ints"), "stride": Attr("ints"), "pads": Attr("ints"), "padding": _SPATIAL_PADDING},
        size="free", shape=shapes.window, refused={"caffe": _NO_POOLING_3D}, pad_fill=float("-inf"),
    ),
    "avg_pool3d": OpSpec(
        ("kernel", "stride", "pads", "count_include_pad", "padding?"),
        (),
        "3-D average pooling on NCDHW; count_include_pad=False (TF) divides by the real elements of "
        "each window. pads as conv3d.",
        "spatial",
        types={"kernel": Attr("ints"), "stride": Attr("ints"), "pads": Attr("ints"),
               "count_include_pad": Attr("bool", False), "padding": _SPATIAL_PADDING},
        size="free", shape=shapes.window, refused={"caffe": _NO_POOLING_3D},
    ),
    # ---- local response normalization ------------------------------------------------------------
    "lrn": OpSpec(
        ("radius", "bias", "alpha", "beta"),
        (),
        "TF's local response normalization across the channels (axis 1) of NCHW x: "
        "y = x / (bias + alpha * s)^beta, s[c] = sum of x[c']^2 for c' in [c - radius, c + radius] "
        "(channels past either end count 0).",
        "reduction",
        family="nn",
        types={"radius": Attr("int"), "bias": Attr("float"), "alpha": Attr("float"), "beta": Attr("float")},
        positional=True,  # mixes channels at one position only
        size="free",
        shape=shapes.same,
    ),
    "fake_quant": OpSpec(
        ("min", "max", "scale", "step", "divide", "zero"),
        (),
        "TF's fake quantization, every step in float32 and in this order: c = max(min(x, max), min) - min; "
        "q = c / step if divide else c * step; y = floor(q - zero + 0.5) * scale. The TF parser turns TF's "
        "min/max/num_bits/narrow_range into these (nudged) floats.",
        "unary",
        types={"min": Attr("float"), "max": Attr("float"), "scale": Attr("float"), "step": Attr("float"),
               "divide": Attr("bool"), "zero": Attr("float")},
        refused={"caffe": "BVLC Caffe has no floor (or other rounding) layer, so the quantization step "
                          "cannot be expressed"},
    ),
    # ---- TFLite's integer arithmetic (full-integer .tflite models), bit for bit (convert.fixed_point) ----
    "quantize": OpSpec(
        ("scale", "zero_point", "dtype"),
        (),
        "TFLite's QUANTIZE of float32 x: clamp(round(x / scale) + zero_point) to dtype's range, the division in "
        "float64 (of the float32 value by the float32 scale widened), round half away from zero.",
        "unary",
        family="nn", types=_QUANTIZED_TYPES, refused=_QUANTIZED_REFUSED,
    ),
    "dequantize": OpSpec(
        ("scale", "zero_point"),
        (),
        "TFLite's DEQUANTIZE of integer q: float32(float64(scale) * (q - zero_point)).",
        "unary",
        family="nn", types={"scale": Attr("float"), "zero_point": Attr("int")}, integers="wrap",
        refused=_QUANTIZED_REFUSED,
    ),
    "requantize": OpSpec(
        ("axis", "offset", "pre_shift", "zero_point", "min", "max", "dtype", "rounding"),
        ("multiplier", "shift"),
        "Integer x to integer y = clamp(M((x + offset) * 2**pre_shift, multiplier[c], shift[c]) + zero_point, min, "
        "max) as dtype; M is TFLite's MultiplyByQuantizedMultiplier (x * 2**max(s, 0), SaturatingRoundingDoubling"
        "HighMul by the significand, RoundingDivideByPOT by max(-s, 0): convert.fixed_point.multiply); c the index "
        "along `axis` when the params hold one value per channel, else their one value. Every intermediate fits "
        "int64; (x + offset) * 2**max(s, 0) * 2**pre_shift fits int32 (the parser checks it). rounding='single': M "
        "rounds once, (x * m + 2**(30 - s)) >> (31 - s), an arithmetic shift (convert.fixed_point.multiply_once; "
        "TFLite's int8 FULLY_CONNECTED).",
        "parametric",
        family="nn", shape=shapes.same, integers="wrap", refused=_QUANTIZED_REFUSED,
        types={"axis": Attr("int", 1), "offset": Attr("int", 0), "pre_shift": Attr("int", 0),
               "zero_point": Attr("int", 0), "min": Attr("int"), "max": Attr("int"),
               "dtype": Attr("str", REQUIRED, ("int8", "uint8", "int32")),
               "rounding": Attr("str", "double", ("double", "single"))},
    ),
    "integer_conv2d": OpSpec(
        ("kernel", "stride", "dilation", "groups", "edges", "input_zero_point", "weight_zero_point"),
        ("weight", "bias?"),
        "TFLite's quantized conv accumulator, int32: bias[o] + sum over the window and the group's input channels "
        "of (x - input_zero_point) * (weight - weight_zero_point); weight OIHW integers, bias int32; edges=(t,b,l,r) "
        "padding that adds nothing (a padded x counts as input_zero_point); groups == in_channels is depthwise.",
        "spatial",
        types={"kernel": Attr("ints"), "stride": Attr("ints"), "dilation": Attr("ints"), "groups": Attr("int"),
               "edges": Attr("ints"), "input_zero_point": Attr("int"), "weight_zero_point": Attr("int", 0)},
        family="nn", shape=shapes.integer_window, integers="wrap", refused=_QUANTIZED_REFUSED,
    ),
    "integer_linear": OpSpec(
        ("input_zero_point", "weight_zero_point"),
        ("weight", "bias?"),
        "TFLite's quantized fully-connected accumulator, int32: bias + (x - input_zero_point) @ (weight - "
        "weight_zero_point).T over x's last axis; weight (out, in) integers, bias int32.",
        "parametric",
        types={"input_zero_point": Attr("int"), "weight_zero_point": Attr("int", 0)},
        size="last_axis", shape=shapes.linear, integers="wrap", refused=_QUANTIZED_REFUSED,
    ),
    "lookup": OpSpec(
        ("low",),
        ("table",),
        "An integer x mapped through a table: y = table[x - low] (table of the dtype y takes, one entry per value "
        "x can hold from low up); TFLite's 8-bit LOGISTIC is such a table, computed from the scales.",
        "unary",
        family="nn", types={"low": Attr("int")}, integers="wrap", refused=_QUANTIZED_REFUSED,
    ),
    "integer_softmax": OpSpec(
        ("axis", "min", "max", "dtype"),
        ("exp",),
        "TFLite's 8-bit softmax (its reference kernel, gemmlowp fixed point) of integers x along `axis`: "
        "d = max(x) - x; e = exp[d] (Q0.31; 0 where TFLite skips d); s = sum of RoundingDivideByPOT(e, 12); c = the "
        "leading zeros of s as a uint32; r = one_over_one_plus_x(s * 2**c - 2**31) (Q0.31, convert.fixed_point); "
        "y = clamp(RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(r, e), 35 - c) + min, min, max) as dtype.",
        "reduction", family="nn",
        types={"axis": Attr("int"), "min": Attr("int"), "max": Attr("int"),
               "dtype": Attr("str", REQUIRED, ("int8", "uint8"))},
        positional=channels_only("axis"), size="own_axes", shape=shapes.same, integers="wrap",
        refused=_QUANTIZED_REFUSED,
    ),
    "integer_avg_pool2d": OpSpec(
        ("kernel", "stride", "edges", "min", "max"),
        (),
        "TFLite's quantized average pooling, integers in and out (same dtype): per window the sum s of its real "
        "(unpadded) elements and their count n; y = clamp((s + n // 2) / n if s > 0 else (s - n // 2) / n, min, "
        "max), the division truncating toward zero; edges=(t,b,l,r).",
        "spatial",
        types={"kernel": Attr("ints"), "stride": Attr("ints"), "edges": Attr("ints"), "min": Attr("int"),
               "max": Attr("int")},
        family="nn", shape=shapes.integer_window, integers="wrap", refused=_QUANTIZED_REFUSED,
    ),
    # ---- sequence (recurrent layers) ----------------------------------------
    # x is (N, T, F), batch-major, time on axis 1 (Keras's layout; rank 3 keeps its source layout).
    # Canonical weights: weight_ih (G*U, F), weight_hh (G*U, U), bias_ih (G*U,), bias_hh (G*U,)
    # (zeros where the source has none), gate blocks in Keras order: lstm (i, f, c, o), gru (z, r, h),
    # rnn (one block). Shared attrs: units; activation / recurrent_activation in {'tanh', 'sigmoid',
    # 'hard_sigmoid' (clip(x/6 + 1/2, 0, 1), Keras 3), 'relu', 'linear'}; go_backwards (step from the
    # last time step to the first, state starts at zero); output in {'sequence' (N, T, U), 'last_h'
    # (N, U), 'last_c' (N, U), lstm only}; sequence_order in {'processed', 'input'}: with
    # go_backwards, 'processed' keeps Keras's order (row t is the t-th step taken), 'input' flips it
    # back so row t belongs to input step t (Bidirectional's backward half).
    # Masking: an optional second input, the step mask (N, T) float32 of 0/1 (Keras's
    # Masking / Embedding(mask_zero=True)): at a step whose mask is 0 the states are carried over
    # unchanged (Keras's where(mask, new, old)); the 'sequence' row of that step is the previous row
    # (masked_output 'previous', zeros before the first step) or zeros ('zero': Keras's
    # zero_output_for_mask, which Bidirectional sets from return_sequences). go_backwards reverses the
    # mask with x.
    "lstm": OpSpec(
        ("units", "activation", "recurrent_activation", "go_backwards", "output", "sequence_order",
         "masked_output", "fixed_steps"),
        ("weight_ih", "weight_hh", "bias_ih", "bias_hh"),
        "Keras LSTM. z = x W_ih^T + b_ih + h W_hh^T + b_hh split (i, f, c, o); i, f, o = ra(.); "
        "c = f * c + i * a(z_c); h = o * a(c).",
        "sequence",
        types=_RECURRENT_TYPES | {"output": Attr("str", REQUIRED, ("sequence", "last_h", "last_c"))},
        size="recurrent", shape=shapes.recurrent, refused={"caffe": _NO_CAFFE_CELL},
    ),
    "gru": OpSpec(
        ("units", "activation", "recurrent_activation", "go_backwards", "output", "sequence_order",
         "reset_after", "masked_output", "fixed_steps"),
        ("weight_ih", "weight_hh", "bias_ih", "bias_hh"),
        "Keras GRU. gx = x W_ih^T + b_ih, gh = h W_hh^T + b_hh split (z, r, h); z = ra(gx_z + gh_z), "
        "r = ra(gx_r + gh_r); candidate a(gx_h + r * gh_h) when reset_after (torch's form), else "
        "a(gx_h + (r * h) W_hh_h^T + b_hh_h); h = z * h + (1 - z) * candidate.",
        "sequence",
        types=_RECURRENT_TYPES | {"reset_after": Attr("bool")},
        size="recurrent", shape=shapes.recurrent, refused={"caffe": _NO_CAFFE_CELL},
    ),
    "rnn": OpSpec(
        ("units", "activation", "go_backwards", "output", "sequence_order", "masked_output", "fixed_steps"),
        ("weight_ih", "weight_hh", "bias_ih", "bias_hh"),
        "Keras SimpleRNN: h = a(x W_ih^T + b_ih + h W_hh^T + b_hh).",
        "sequence",
        types={k: v for k, v in _RECURRENT_TYPES.items() if k != "recurrent_activation"},
        size="recurrent", shape=shapes.recurrent, refused={"caffe": _NO_CAFFE_CELL},
    ),
    # ---- bitwise ops on integer tensors ---------------------------------
    # Two's complement at the input's width; a shift amount is clamped to [0, width - 1] first, as TF's
    # kernels do, so every amount has one defined result.
    "bitwise_and": OpSpec((), (), "a & b (integers), numpy broadcasting.", "binary", refused={"caffe": _CAFFE_TYPED},
                          integers="wrap"),
    "bitwise_or": OpSpec((), (), "a | b (integers).", "binary", refused={"caffe": _CAFFE_TYPED}, integers="wrap"),
    "bitwise_xor": OpSpec((), (), "a ^ b (integers).", "binary", refused={"caffe": _CAFFE_TYPED}, integers="wrap"),
    "bitwise_not": OpSpec((), (), "~x (integers: -1 - x signed, max - x unsigned).", "unary",
                          refused={"caffe": _CAFFE_TYPED}, integers="wrap"),
    "left_shift": OpSpec((), (), "a << clip(b, 0, width - 1), the bits past the width dropped (TF LeftShift).",
                         "binary", refused={"caffe": _CAFFE_TYPED}),
    "right_shift": OpSpec((), (), "a >> clip(b, 0, width - 1), arithmetic (sign-filling) for signed a (TF "
                          "RightShift).", "binary", refused={"caffe": _CAFFE_TYPED}),
    # ---- UpSampling3D, exact at every volume size ----------------------------------
    "repeat": OpSpec(
        ("repeats",),
        (),
        "numpy.repeat on every axis in turn: each element repeated repeats[i] times along axis i (one "
        "positive whole number per axis). Keras's UpSampling3D is repeat on (N, D, H, W, C) by (1, fd, fh, fw, 1).",
        "shape",
        family="resize", types={"repeats": Attr("ints")}, size="free", shape=shapes.repeat,
    ),
    # Cropping3D: fixed amounts off both ends of each axis, so the output follows any size (a slice's
    # absolute ends would bake it)
    # ---- sizes that follow run-time values (convert.ir.runtime_dims): the parameter is an input tensor ----
    "reshape_to": OpSpec((), (), "x (input 0) reshaped row-major to the run-time integer vector `shape` (input 1), "
                         "one -1 in it resolved as numpy (TF's Reshape to a computed shape).", "shape",
                         shape=shapes.to_run_time_vector, run_time_sizes=True,
                         refused=_STATIC_ONLY),
    "broadcast_to": OpSpec((), (), "numpy.broadcast_to(x, shape) of inputs (x, shape), `shape` a run-time integer "
                           "vector (TF's BroadcastTo, and Fill: a scalar broadcast).", "shape",
                           shape=shapes.to_run_time_vector, run_time_sizes=True,
                           refused=_STATIC_ONLY),
    "tile_by": OpSpec((), (), "numpy.tile(x, multiples) of inputs (x, multiples), `multiples` a run-time integer "
                      "vector, one per axis of x.", "shape",
                      size="free", shape=shapes.run_time_same_rank, run_time_sizes=True, refused=_STATIC_ONLY),
    "pad_by": OpSpec(("value", "mode"), (), "Pad of inputs (x, paddings): `paddings` a run-time (rank, 2) integer "
                     "matrix, (before, after) per axis of x in order; `mode` constant (filled with `value`), reflect "
                     "(the edge not repeated) or symmetric (repeated), TF's Pad and MirrorPad.", "shape",
                     types={"value": Attr("float", 0.0), "mode": Attr("str", "constant",
                                                                      ("constant", "reflect", "symmetric"))},
                     size="free", shape=shapes.run_time_same_rank,
                     run_time_sizes=True,
                     refused=_STATIC_ONLY),
    "slice_to": OpSpec(("steps?",), (), "x[starts[0]:ends[0]:steps[0], starts[1]:ends[1]:steps[1], ...] of inputs "
                       "(x, starts, ends), run-time integer vectors with one element per axis of x, `steps` constant "
                       "non-zero (all 1 when unset), Python's slice rules (negative counts from the end, bounds "
                       "clamped to the axis, a negative step walks back: TF's StridedSlice).", "shape",
                       types={"steps": Attr("ints", None)}, shape=shapes.run_time_same_rank, run_time_sizes=True,
                       refused=_STATIC_ONLY),
    "resize_to": OpSpec(("mode", "coordinate"), (), "TF's resize (`resize`'s sampling grid and arithmetic, in "
                        "float32) of NCHW x (input 0) to the run-time integer (out_h, out_w) `size` (input 1): TF's "
                        "ResizeBilinear / ResizeNearestNeighbor to a size the graph computes.", "shape",
                        types={"mode": Attr("str", REQUIRED, ("nearest", "bilinear")),
                               "coordinate": Attr("str", REQUIRED, ("asymmetric", "half_pixel", "align_corners"))},
                        shape=shapes.resize_to, run_time_sizes=True, refused=_STATIC_ONLY),
    "one_hot_by": OpSpec(("axis", "on", "off"), (), "one_hot of inputs (indices, depth), `depth` a run-time "
                         "integer scalar: float32, the new axis of size depth inserted at `axis`, `on` where "
                         "index == position, `off` elsewhere (out-of-range and negative indices: all `off`).",
                         "shape", family="shape",
                         types={"axis": Attr("int"), "on": Attr("float", 1.0), "off": Attr("float", 0.0)},
                         shape=shapes.one_hot_by, run_time_sizes=True, refused=_STATIC_ONLY),
    "range": OpSpec((), (), "start + i * delta for i = 0, 1, ... up to limit (excluded) of scalar inputs (start, "
                    "limit, delta) known at run time, TF's Range: integers, ceil(|limit - start| / |delta|) values; "
                    "floats, ceil(|(limit - start) / delta|) values, each start + float(i) * delta, all in the "
                    "inputs' type.", "shape",
                    shape=shapes.run_time_length, run_time_sizes=True, refused=_STATIC_ONLY),
    "expand_dims_by": OpSpec((), (), "numpy.expand_dims(x, axis) of inputs (x, axis), `axis` a run-time integer "
                             "scalar in [-rank - 1, rank] (negative counts from the end of the output).", "shape",
                             shape=shapes.expand_dims_by, run_time_sizes=True,
                             refused=_STATIC_ONLY),
    # ---- lengths the data decides: how many distinct values, the largest value (convert.ir.runtime_dims) ----
    "unique": OpSpec(
        ("axis", "output", "index_dtype"),
        (),
        "TF's Unique along `axis` of input x: the distinct slices of x along `axis` (whole slices compared by ==) "
        "in the order of their first occurrence. output 'values': those slices (x's shape, `axis` run-time long), "
        "'indices': for each slice of x the position of its value among them (x.shape[axis] long), 'counts': how "
        "many slices of x each one is (run-time long); indices and counts of `index_dtype`.",
        "shape",
        types={"axis": Attr("int"), "index_dtype": Attr("str", "int32", ("int32", "int64")),
               "output": Attr("str", REQUIRED, ("values", "indices", "counts"))},
        shape=shapes.unique, run_time_sizes=True,
        refused={target: f"how many distinct values there are is decided by the data, and the {name} format "
                         "holds static shapes only" for target, name in (("mxnet", "MXNet"), ("caffe", "Caffe"))},
    ),
    "ragged_range": OpSpec(
        ("output", "splits_dtype"),
        (),
        "TF's RaggedRange of integer inputs (starts, limits, deltas), each (n,): row i is start, start + delta, ... "
        "up to limit (excluded), 0 values where delta points away from limit, else ceil(|limit - start| / "
        "|delta|). output 'row_splits': (n + 1,) of `splits_dtype`, 0 then the running count of values; 'values': "
        "every row's values in order (run-time long), of the inputs' type.",
        "shape",
        types={"output": Attr("str", REQUIRED, ("values", "row_splits")),
               "splits_dtype": Attr("str", "int64", ("int32", "int64"))},
        shape=shapes.ragged_range, run_time_sizes=True, refused=_STATIC_ONLY,
    ),
    "ctc_greedy_decoder": OpSpec(
        ("blank", "merge_repeated", "output"),
        (),
        "TF's CTCGreedyDecoder of inputs (logits (T, B, C) float32, sequence_length (B,) int32): for each batch b "
        "and step t < sequence_length[b], the class of the largest logit (the first on ties) and that logit; a "
        "step's class is kept unless it is `blank` or, with merge_repeated, the previous step's class. output "
        "'indices': (b, position) of each kept class, batch by batch (int64, run-time long), 'values': the classes "
        "(int64), 'shape': (B, the longest row) int64, 'log_probability': (B, 1), 0 minus each step's largest "
        "logit, in step order.",
        "shape",
        types={"blank": Attr("int"), "merge_repeated": Attr("bool"),
               "output": Attr("str", REQUIRED, ("indices", "values", "shape", "log_probability"))},
        shape=shapes.ctc_greedy_decoder, run_time_sizes=True, refused=_STATIC_ONLY,
    ),
    "bincount_by": OpSpec(
        ("binary_output", "dtype"),
        (),
        "TF's (Dense)Bincount of inputs (values, size[, weights]), `size` a run-time integer scalar: out[..., i] "
        "for i < size is the number of values == i (the sum of their weights, added in the values' order, of "
        "`dtype`; binary_output: 1 where there is one), along the last axis of a rank-2 `values` (a row of bins "
        "per row), over all of a rank-1 one; values outside [0, size) count nowhere.",
        "shape",
        types={"binary_output": Attr("bool", False), "dtype": Attr("str", REQUIRED, ("int32", "int64", "float32"))},
        shape=shapes.bincount_by, run_time_sizes=True, refused=_STATIC_ONLY,
    ),
    "crop": OpSpec(
        ("crops",),
        (),
        "x[b0:n0-e0, b1:n1-e1, ...]: crops[i] = (b, e) elements removed from the start and the end of axis i "
        "(whatever its size n).",
        "shape",
        types={"crops": Attr("pairs")}, size="free", shape=shapes.crop,
        refused={"caffe": "BVLC Caffe's Crop layer crops to a second blob's shape, and has no 5-D Permute to reach "
                          "a volume's axes (Cropping3D)"},
    ),
    # ---- detection heads: non-max suppression and data-dependent lengths --------------------------------
    # TF's CPU kernel (NonMaxSuppressionV2-V5, hard suppression): candidates are the boxes whose score is
    # > score_threshold, taken by score, the lower index first among equal scores; a candidate is selected
    # unless its IoU with a selected box is > iou_threshold; at most max_output_size are selected.
    # soft_nms_sigma > 0 (NonMaxSuppressionV5's soft-NMS): TF's lazy re-queueing pass instead, whose float32
    # products depend on when each candidate is re-checked (convert.ir.reference.detection.soft_nms_selected).
    "non_max_suppression": OpSpec(
        ("max_output_size", "iou_threshold", "score_threshold", "soft_nms_sigma", "output"),
        (),
        "Greedy NMS of inputs (boxes (N, 4) as (y1, x1, y2, x2), any two opposite corners; scores (N,)), TF's "
        "order: candidates score > score_threshold, by score descending, lower index first on ties; "
        "IoU = inter / (area_i + area_j - inter) in float32 (0 where either area <= 0); a candidate is dropped "
        "when its IoU with a selected box is > iou_threshold; the first max_output_size selected are kept. "
        "output 'indices': their indices (int32, (max_output_size,), zeros after the selected), 'scores': "
        "their scores (zeros after), 'count': how many were selected (int32, ()). soft_nms_sigma > 0 is TF's "
        "soft-NMS: no IoU drops (iou_threshold unused); candidates popped by score (lower index first), each "
        "one's score multiplied by w = exp((-0.5 / sigma) * IoU * IoU) (float32) of the boxes selected since it "
        "was last popped, newest first; selected if unchanged, re-queued if still > score_threshold, else "
        "dropped; 'scores' are the decayed scores.",
        "shape",
        family="detection",
        types={"max_output_size": Attr("int"), "iou_threshold": Attr("float"), "score_threshold": Attr("float"),
               "soft_nms_sigma": Attr("float", 0.0),
               "output": Attr("str", REQUIRED, ("indices", "scores", "count"))},
        shape=shapes.non_max_suppression,
        refused={"caffe": "BVLC Caffe has no sort and no integer blobs: non-max suppression (hard or soft-NMS) "
                          "cannot be expressed"},
    ),
    # TF's CPU kernel of CombinedNonMaxSuppression: hard NMS per (batch, class), then every class's selections
    # (its slots, unfilled ones at score -1) sorted by score and the first per_batch taken
    "combined_non_max_suppression": OpSpec(
        ("max_per_class", "per_batch", "iou_threshold", "score_threshold", "clip_boxes", "output"),
        (),
        "TF's CombinedNonMaxSuppression of inputs (boxes (B, N, q, 4) (y1, x1, y2, x2), q 1 or C; scores "
        "(B, N, C)): for each batch and class, non_max_suppression's greedy pass (score > score_threshold, "
        "score descending, lower index first on ties, IoU > iou_threshold drops) selects at most "
        "S = max_per_class boxes into the class's S slots (unfilled slots: score -1, class -1, box 0); the "
        "C * S slots sorted by score descending (stable), the first min(selected, per_batch) kept, zeros after. "
        "output 'boxes' (B, per_batch, 4) (clipped to [0, 1] when clip_boxes), 'scores' and 'classes' "
        "(B, per_batch) float32, 'count' (B,) int32: min(selected, per_batch).",
        "shape",
        family="detection",
        types={"max_per_class": Attr("int"), "per_batch": Attr("int"), "iou_threshold": Attr("float"),
               "score_threshold": Attr("float"), "clip_boxes": Attr("bool"),
               "output": Attr("str", REQUIRED, ("boxes", "scores", "classes", "count"))},
        shape=shapes.combined_non_max_suppression,
        refused={"caffe": "BVLC Caffe has no sort and no integer blobs: non-max suppression cannot be expressed"},
    ),
    # TF's Where of one input (tf.where(cond), what tf.boolean_mask writes): how many rows depends on the data
    "nonzero": OpSpec(
        ("output",),
        (),
        "The coordinates of the nonzero (true) elements of the input, in row-major order, as numpy.argwhere: "
        "output 'indices' (int64 as TF's, (x.size, x.ndim), zeros after the found rows), 'count': how many "
        "(int32, ()).",
        "shape",
        family="detection", types={"output": Attr("str", REQUIRED, ("indices", "count"))},
        shape=shapes.nonzero,
        refused={"mxnet": "MXNet binds fixed shapes and has no op listing the coordinates of true elements: "
                          "Where's row count depends on the data",
                 "caffe": "Caffe blobs have fixed shapes and no integers: Where's row count depends on the data"},
    ),
    # TF's CPU kernel of CropAndResize (ROI pooling of detection heads): per box, the sample positions
    # in float32 in TF's order of operations, outside the image -> extrapolation_value
    "crop_and_resize": OpSpec(
        ("size", "method", "extrapolation_value"),
        (),
        "TF's CropAndResize of inputs (image (B, H, W, C) in TF's order, boxes (n, 4) normalized (y1, x1, y2, "
        "x2), box_index (n,) int32): output (n, ch, cw, C), size=(ch, cw). Row y of box i samples "
        "in_y = y1*(H-1) + y*((y2-y1)*(H-1)/(ch-1)) (ch > 1) or 0.5*(y1+y2)*(H-1) (ch == 1), float32, likewise "
        "x; a position outside [0, H-1] x [0, W-1] gives extrapolation_value. method 'bilinear': "
        "top = tl + (tr-tl)*dx, bottom = bl + (br-bl)*dx, top + (bottom-top)*dy from floor/ceil neighbours; "
        "'nearest': the neighbour at round-half-up.",
        "shape",
        family="detection",
        types={"size": Attr("ints"), "method": Attr("str", REQUIRED, ("bilinear", "nearest")),
               "extrapolation_value": Attr("float")},
        shape=shapes.crop_and_resize,
        refused={"caffe": "BVLC Caffe has no gather by computed positions: crop_and_resize samples the image at "
                          "positions computed from the boxes"},
    ),
    "prefix": OpSpec(
        (),
        (),
        "x[:count] along axis 0 of inputs (x, count), count an int32 scalar known at run time only: the "
        "output's length depends on the data (at most x.shape[0], its declared shape).",
        "shape",
        family="detection", shape=shapes.first, keeps_values=True, data_dependent=True,
        refused={"mxnet": "MXNet's symbolic executor binds every output at a fixed shape: an output whose "
                          "length depends on the data (non-max suppression without pad_to_max_output_size, "
                          "top-k of a runtime k, the coordinates of the true elements) cannot be returned; pad "
                          "it to a fixed size (pad_to_max_output_size=True, a constant k)",
                 "caffe": "Caffe blobs have fixed shapes: an output whose length depends on the data cannot "
                          "be returned"},
    ),
    # ---- control flow: nested graphs (convert.ir.subgraph.Subgraph) run a run-time number of times ----
    "while_loop": OpSpec(
        ("cond", "body", "carried", "output"),
        (),
        "A loop with a run-time trip count. Inputs: the first `carried` are the loop variables' first values "
        "(static shapes, kept by every step), the rest invariants. `cond` and `body` are Subgraphs whose inputs "
        "bind to all the node's inputs in order: while cond's one output (a bool scalar or one-element "
        "tensor) is true, the loop variables become body's outputs (one per loop variable, same shapes and "
        "dtypes). The node returns loop variable `output` after the last step (one node per variable read).",
        "control",
        types={"carried": Attr("int"), "output": Attr("int")},
        shape=shapes_control.loop_output,
        refused={"mxnet": "MXNet's contrib.while_loop runs at most a fixed max_iterations steps and pads its "
                          "outputs: a loop whose trip count the data decides is not expressed exactly",
                 "caffe": "BVLC Caffe has no loops: a layer graph runs every layer once"},
    ),
    "cond": OpSpec(
        ("then_branch", "else_branch", "output"),
        (),
        "A conditional: inputs (pred, *operands), pred a bool scalar (or one-element tensor). then_branch or "
        "else_branch (Subgraphs whose inputs bind to the operands in order, same output shapes and dtypes) "
        "runs, only the one pred picks; the node returns that branch's output `output` (one node per output).",
        "control",
        types={"output": Attr("int")},
        shape=shapes_control.branch_output,
        refused={"caffe": "BVLC Caffe has no conditionals: a layer graph runs every layer once"},
    ),
}


def ops_of_kind(kind: str) -> frozenset[str]:
    """The names of the catalog's ops of one kind (e.g. "unary")."""
    return frozenset(name for name, spec in OPS.items() if spec.kind == kind)


def ops_where(test: Callable[[OpSpec], Any]) -> frozenset[str]:
    """The names of the catalog's ops whose spec passes `test`, e.g. ops_where(lambda s: s.window)."""
    return frozenset(name for name, spec in OPS.items() if test(spec))


def ops_of_size(*rules: str) -> frozenset[str]:
    """The ops whose `size` rule is one of `rules` (convert.padding.sizes)."""
    return ops_where(lambda spec: spec.size in rules)


# The sets other modules read (each derived from the rows above, never kept by hand).
FOLDABLE = ops_where(lambda spec: spec.foldable)  # convert.passes.constants
WINDOW_OPS = ops_where(lambda spec: spec.window)  # conv2d and pooling: kernel, stride, per-side pads
# every sliding window with per-side pads, 2-D and 3-D (convert.padding.sizes)
SLIDING_OPS = ops_where(lambda spec: {"kernel", "stride", "pads"} <= {a.rstrip("?") for a in spec.attrs})
# average pooling: divides by each window's real elements (with SAME pads a size-shaped divisor map)
AVERAGING_OPS = ops_where(lambda spec: "count_include_pad" in {a.rstrip("?") for a in spec.attrs})
PADDED_OPS = ops_where(lambda spec: spec.padded)  # every target plans their padding (convert.padding)
VALUE_KEEPING = ops_where(lambda spec: spec.keeps_values)  # app/verify/token_inputs, app/verify/mask_inputs
INTEGER_WRAPPING = ops_where(lambda spec: spec.integers == "wrap")  # app/verify/token_inputs
INTEGER_ENDING = ops_where(lambda spec: spec.integers == "end")  # app/verify/token_inputs
DATA_DEPENDENT = ops_where(lambda spec: spec.data_dependent)  # convert.ir.graph.data_dependent_length
RUN_TIME_SIZED = ops_where(lambda spec: spec.run_time_sizes)  # convert.ir.runtime_dims
WIDE_COMPUTING = ops_where(lambda spec: spec.wide)  # convert.ir.dtypes
PASSES_RUN_TIME_SIZES = ops_where(lambda spec: spec.passes_run_time_sizes)
# TF op -> (IR op, attrs) for the TF ops that are one catalog op (the rows' `tf`)
TF_OPS: dict[str, tuple[str, dict[str, Any]]] = {
    tf_op: (name, attrs) for name, spec in OPS.items() for tf_op, attrs in spec.tf.items()}
# Keras activation name -> (IR op, attrs) (the rows' `keras`)
KERAS_ACTIVATIONS: dict[str, tuple[str, dict[str, Any]]] = {
    act: (name, attrs) for name, spec in OPS.items() for act, attrs in spec.keras.items()}
# TFLite builtin -> (IR op, attrs) for the builtins that are one catalog op (the rows' `tflite`)
TFLITE_BUILTINS: dict[str, tuple[str, dict[str, Any]]] = {
    builtin: (name, attrs) for name, spec in OPS.items() for builtin, attrs in spec.tflite.items()}
