"""The numpy reference evaluator: what every IR op computes, one function per op.

This is the executable form of the op catalog (`ops.OPS`) and follows TensorFlow's semantics:
explicit per-side pads, max pooling that ignores padded elements, average pooling that divides by
the number of real elements unless ``count_include_pad``, transposed convolution computed in full
and then cropped to ``output_size``. Constant folding uses it, the pass tests compare graphs with it,
and its tests check it against TensorFlow op by op.

Arithmetic follows numpy's type rules on the arrays given: float32 feeds compute in float32 (as
the targets do), float64 feeds in float64 (a tighter reference).

    evaluate(graph, feeds)            -> {output name: array}
    evaluate_node(node, [x, ...])     -> array
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from typing import Any, Callable

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from tf_convert.convert.registry import OpTable
from tf_convert.convert.sampling import linear_taps, nearest_indices

from . import libm_expf
from .graph import Graph, Node
from .index import GraphIndex

OpFunction = Callable[..., np.ndarray]  # fn(node, *inputs) -> output

REFERENCE = OpTable("IR reference")  # IR op -> fn(node, *inputs) -> output


class EvaluationError(ValueError):
    """The graph cannot be evaluated as declared (missing feed, op without a function, wrong shape)."""


# @reference_op("add", ...): `fn(node, *inputs) -> ndarray` is the meaning of the op(s)
reference_op = REFERENCE.register


def evaluate_node(node: Node, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """The output of one node given its input values (in `node.inputs` order)."""
    fn = REFERENCE.get(node.op)
    if fn is None:
        raise EvaluationError(f"node {node.name}: IR op {node.op!r} has no reference function")
    with np.errstate(over="ignore", under="ignore"):  # exp overflow in sigmoid etc. is meant
        return np.asarray(fn(node, *inputs))


def evaluate(
    graph: Graph,
    feeds: Mapping[str, np.ndarray] | Sequence[np.ndarray],
    outputs: Sequence[str] | None = None,
    keep_all: bool = False,
) -> dict[str, np.ndarray]:
    """Run `graph` on `feeds` (by input name, or a list in `graph.inputs` order).

    Returns the values of `outputs` (default: the graph outputs), or of every tensor computed when
    `keep_all`. Only the nodes the requested tensors depend on run. Each result's shape is checked
    against the graph's declaration."""
    if not isinstance(feeds, Mapping):
        feeds = dict(zip(graph.inputs, feeds))
    wanted = list(graph.outputs if outputs is None else outputs)
    env: dict[str, np.ndarray] = {name: np.asarray(value) for name, value in feeds.items()}
    needed = _needed_nodes(graph, wanted, env)
    remaining = _reader_counts(needed)
    keep = set(wanted)
    for node in needed:
        try:
            args = [env[i] for i in node.inputs]
        except KeyError as missing:
            raise EvaluationError(f"node {node.name}: input {missing.args[0]!r} is neither fed nor computed") from None
        value = evaluate_node(node, args)
        declared = graph.tensors[node.output].shape if node.output in graph.tensors else None
        if declared is not None and tuple(value.shape) != tuple(declared):
            raise EvaluationError(
                f"node {node.name} ({node.op}): computed shape {tuple(value.shape)}, graph declares {tuple(declared)}"
            )
        env[node.output] = value
        if not keep_all:  # free what no later node reads
            for i in node.inputs:
                remaining[i] -= 1
                if remaining[i] == 0 and i not in keep and i not in feeds:
                    env.pop(i, None)
    missing = [name for name in wanted if name not in env]
    if missing:
        raise EvaluationError(f"tensor(s) {missing} are neither fed nor produced by the graph")
    return dict(env) if keep_all else {name: env[name] for name in wanted}


def _needed_nodes(graph: Graph, wanted: Sequence[str], fed: Mapping[str, np.ndarray]) -> list[Node]:
    index = GraphIndex(graph)
    live: set[int] = set()
    stack = [t for t in wanted if t not in fed]
    seen: set[str] = set()
    while stack:
        tensor = stack.pop()
        if tensor in seen:
            continue
        seen.add(tensor)
        node = index.producer(tensor)
        if node is not None:
            live.add(id(node))
            stack.extend(i for i in node.inputs if i not in fed)
    return [n for n in graph.nodes if id(n) in live]


def _reader_counts(nodes: Sequence[Node]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node in nodes:
        for i in node.inputs:
            counts[i] = counts.get(i, 0) + 1
    return counts


# ---- spatial -------------------------------------------------------------------------------------


def _pad_hw(x: np.ndarray, pads: Sequence[int], value: float = 0.0) -> np.ndarray:
    top, bottom, left, right = (int(p) for p in pads)
    if not (top or bottom or left or right):
        return x
    return np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=value)


def _windows(x: np.ndarray, kernel, stride, dilation=(1, 1)) -> np.ndarray:
    """(N, C, OH, OW, kh, kw) view of every window of the (already padded) NCHW `x`."""
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    eh, ew = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    view = sliding_window_view(x, (eh, ew), axis=(2, 3))
    return view[:, :, ::sh, ::sw, ::dh, ::dw]


@reference_op("conv2d")
def conv2d(node: Node, x: np.ndarray) -> np.ndarray:
    a = node.attrs
    weight = np.asarray(node.params["weight"])
    groups = int(a["groups"])
    win = _windows(_pad_hw(x, a["pads"]), a["kernel"], a["stride"], a["dilation"])
    n, c, oh, ow, kh, kw = win.shape
    out_c, cg = weight.shape[0], c // groups
    cols = win.reshape(n, groups, cg, oh, ow, kh, kw).transpose(0, 1, 3, 4, 2, 5, 6)
    cols = cols.reshape(n, groups, oh * ow, cg * kh * kw)
    kernels = weight.reshape(groups, out_c // groups, cg * kh * kw).transpose(0, 2, 1)
    y = np.matmul(cols, kernels)  # (n, groups, oh*ow, out_c / groups)
    y = y.transpose(0, 1, 3, 2).reshape(n, out_c, oh, ow)
    if "bias" in node.params:
        y = y + np.asarray(node.params["bias"]).reshape(1, -1, 1, 1)
    return y


@reference_op("conv_transpose2d")
def conv_transpose2d(node: Node, x: np.ndarray) -> np.ndarray:
    a = node.attrs
    weight = np.asarray(node.params["weight"])  # IOHW: (in, out / groups, kh, kw)
    groups = int(a["groups"])
    (kh, kw), (sh, sw), (dh, dw) = a["kernel"], a["stride"], a["dilation"]
    n, c, h, w = x.shape
    cg, og = c // groups, weight.shape[1]
    full_h, full_w = (h - 1) * sh + (kh - 1) * dh + 1, (w - 1) * sw + (kw - 1) * dw + 1
    full = np.zeros((n, groups * og, full_h, full_w), np.result_type(x, weight))
    xs = x.reshape(n, groups, cg, h * w)
    ws = weight.reshape(groups, cg, og, kh, kw)
    for i in range(kh):
        for j in range(kw):
            part = np.matmul(ws[:, :, :, i, j].transpose(0, 2, 1), xs)  # (n, groups, og, h*w)
            full[:, :, i * dh:i * dh + (h - 1) * sh + 1:sh, j * dw:j * dw + (w - 1) * sw + 1:sw] += (
                part.reshape(n, groups * og, h, w)
            )
    (ct, cl), (oh, ow) = a["crop"], a["output_size"]
    # rows or columns asked for past the full output are zeros (before the bias)
    full = np.pad(full, ((0, 0), (0, 0), (0, max(0, ct + oh - full_h)), (0, max(0, cl + ow - full_w))))
    y = full[:, :, ct:ct + oh, cl:cl + ow]
    if "bias" in node.params:
        y = y + np.asarray(node.params["bias"]).reshape(1, -1, 1, 1)
    return y


@reference_op("max_pool2d")
def max_pool2d(node: Node, x: np.ndarray) -> np.ndarray:
    a = node.attrs  # padded elements never win: pad with -inf
    return _windows(_pad_hw(x, a["pads"], -np.inf), a["kernel"], a["stride"]).max(axis=(-2, -1))


@reference_op("avg_pool2d")
def avg_pool2d(node: Node, x: np.ndarray) -> np.ndarray:
    a = node.attrs
    kernel, stride = a["kernel"], a["stride"]
    total = _windows(_pad_hw(x, a["pads"]), kernel, stride).sum(axis=(-2, -1))
    if a.get("count_include_pad"):
        return total / x.dtype.type(kernel[0] * kernel[1])
    real = np.ones((1, 1) + x.shape[2:], x.dtype)
    counts = _windows(_pad_hw(real, a["pads"]), kernel, stride).sum(axis=(-2, -1))
    return total / counts


@reference_op("pad")
def pad(node: Node, x: np.ndarray) -> np.ndarray:
    a = node.attrs
    widths = [tuple(int(p) for p in pair) for pair in a["pads"]]
    mode = a.get("mode", "constant")
    if mode == "constant":
        return np.pad(x, widths, constant_values=x.dtype.type(a.get("value", 0.0)))
    if mode in ("reflect", "symmetric"):
        return np.pad(x, widths, mode=mode)
    raise EvaluationError(f"node {node.name}: unknown pad mode {mode!r}")


@reference_op("resize")
def resize(node: Node, x: np.ndarray) -> np.ndarray:
    a = node.attrs
    (in_h, in_w), (out_h, out_w) = x.shape[2:], a["size"]
    if a["mode"] == "nearest":
        rows, cols = (nearest_indices(i, o, a["coordinate"]) for i, o in ((in_h, out_h), (in_w, out_w)))
        return x[:, :, rows][:, :, :, cols]
    (ylo, yhi, wy), (xlo, xhi, wx) = (linear_taps(i, o, a["coordinate"]) for i, o in ((in_h, out_h), (in_w, out_w)))
    wx, wy = wx.astype(x.dtype), wy.astype(x.dtype)[:, None]
    left, right = x[:, :, :, xlo], x[:, :, :, xhi]
    across = left + (right - left) * wx  # TF lerps along x first, then along y
    top, bottom = across[:, :, ylo], across[:, :, yhi]
    return top + (bottom - top) * wy


# ---- per-channel, normalisation, dense ---------------------------------------------------------


@reference_op("channel_affine")
def channel_affine(node: Node, x: np.ndarray) -> np.ndarray:
    shape = [1] * x.ndim
    shape[node.attrs["axis"]] = -1
    scale, shift = (np.asarray(node.params[k]).reshape(shape) for k in ("scale", "shift"))
    return x * scale + shift


@reference_op("layer_norm")
def layer_norm(node: Node, x: np.ndarray) -> np.ndarray:
    axes = tuple(node.attrs["axes"])
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + x.dtype.type(node.attrs["epsilon"]))
    if "gamma" in node.params:
        y = y * np.asarray(node.params["gamma"])
    if "beta" in node.params:
        y = y + np.asarray(node.params["beta"])
    return y


@reference_op("linear")
def linear(node: Node, x: np.ndarray) -> np.ndarray:
    y = x @ np.asarray(node.params["weight"]).T
    return y + np.asarray(node.params["bias"]) if "bias" in node.params else y


@reference_op("matmul")
def matmul(node: Node, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.matmul(a, b)


# ---- shape ---------------------------------------------------------------------------------------


@reference_op("reshape")
def reshape(node: Node, x: np.ndarray) -> np.ndarray:
    return x.reshape(node.attrs["shape"])


@reference_op("transpose")
def transpose(node: Node, x: np.ndarray) -> np.ndarray:
    return np.transpose(x, node.attrs["perm"])


@reference_op("depth_to_space")
def depth_to_space(node: Node, x: np.ndarray) -> np.ndarray:
    b = int(node.attrs["block_size"])
    n, c, h, w = x.shape
    y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    return y.reshape(n, c // (b * b), h * b, w * b)


@reference_op("space_to_depth")
def space_to_depth(node: Node, x: np.ndarray) -> np.ndarray:
    b = int(node.attrs["block_size"])
    n, c, h, w = x.shape
    y = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    return y.reshape(n, c * b * b, h // b, w // b)


@reference_op("concat")
def concat(node: Node, *xs: np.ndarray) -> np.ndarray:
    return np.concatenate(xs, axis=node.attrs["axis"])


@reference_op("slice")
def slice_(node: Node, x: np.ndarray) -> np.ndarray:
    return x[tuple(slice(b, e) for b, e in zip(node.attrs["begin"], node.attrs["end"]))]


# ---- reductions ----------------------------------------------------------------------------------


@reference_op("argmax")
def argmax(node: Node, x: np.ndarray) -> np.ndarray:
    axis = node.attrs["axis"]
    y = np.argmax(x, axis=axis).astype(np.int64)
    return np.expand_dims(y, axis) if node.attrs.get("keepdims") else y


@reference_op("reduce_mean")
def reduce_mean(node: Node, x: np.ndarray) -> np.ndarray:
    return x.mean(axis=tuple(node.attrs["axes"]), keepdims=bool(node.attrs["keepdims"]))


@reference_op("reduce_max")
def reduce_max(node: Node, x: np.ndarray) -> np.ndarray:
    return x.max(axis=tuple(node.attrs["axes"]), keepdims=bool(node.attrs["keepdims"]))


@reference_op("softmax")
def softmax(node: Node, x: np.ndarray) -> np.ndarray:
    axis = node.attrs["axis"]
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# ---- elementwise ---------------------------------------------------------------------------------


@reference_op("clip")
def clip(node: Node, x: np.ndarray) -> np.ndarray:
    return np.clip(x, node.attrs["min"], node.attrs["max"])


@reference_op("leaky_relu")
def leaky_relu(node: Node, x: np.ndarray) -> np.ndarray:
    return np.where(x >= 0, x, x * node.attrs["alpha"])


@reference_op("elu")
def elu(node: Node, x: np.ndarray) -> np.ndarray:
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0)) * node.attrs["alpha"])


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


@reference_op("hard_sigmoid")
def hard_sigmoid(node: Node, x: np.ndarray) -> np.ndarray:
    return np.clip(x * node.attrs["alpha"] + node.attrs["beta"], 0, 1)


_erf = np.frompyfunc(math.erf, 1, 1)  # numpy has no erf; math.erf is exact to double precision


@reference_op("gelu")
def gelu(node: Node, x: np.ndarray) -> np.ndarray:
    if node.attrs.get("approximate", "none") == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    erf = np.asarray(_erf(x / math.sqrt(2)), np.float64).astype(x.dtype)
    return 0.5 * x * (1 + erf)


@reference_op("const")
def const(node: Node) -> np.ndarray:
    return np.asarray(node.params["value"])


# ---- elementwise math, comparisons, logic, casts, reductions ---------------------------------------
# Table-driven: each op's numpy meaning, in TF's own formula where TF's differs from the textbook one.

_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _softplus(x: np.ndarray) -> np.ndarray:
    """TF's thresholds: x above -(log(eps) + 2) is x, below log(eps) + 2 is exp(x)."""
    threshold = np.log(np.finfo(x.dtype).eps) + 2
    e = np.exp(x)
    return np.where(x > -threshold, x, np.where(x < threshold, e, np.log(e + 1)))


def _floor_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    m = np.fmod(a, b)
    return np.where((m != 0) & ((b < 0) != (m < 0)), m + b, m)


def _floor_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.floor(a / b) if np.result_type(a, b).kind == "f" else a // b


def _truncate_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.result_type(a, b).kind == "f":
        return np.trunc(a / b)
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q).astype(np.result_type(a, b))


def _div_no_nan(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    zero = b == 0
    return np.where(zero, np.zeros((), np.result_type(a, b)), a / np.where(zero, np.ones((), b.dtype), b))


def _erf_of(x: np.ndarray) -> np.ndarray:
    return np.asarray(_erf(x), np.float64).astype(x.dtype)


# IR op -> its numpy meaning, of one input (x) or two (a, b): every elementwise op without attributes
ELEMENTWISE: dict[str, Callable[..., np.ndarray]] = {
    "relu": lambda x: np.maximum(x, 0), "sigmoid": _sigmoid, "tanh": np.tanh, "swish": lambda x: x * _sigmoid(x),
    "hard_swish": lambda x: x * np.clip(x + 3, 0, 6) / 6, "exp": np.exp, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "square": lambda x: x * x, "neg": lambda x: -x, "abs": np.abs,
    "identity": lambda x: x,
    "softplus": _softplus,
    "softsign": lambda x: x / (1 + np.abs(x)),
    "selu": lambda x: np.where(x > 0, x * x.dtype.type(_SELU_SCALE),
                               np.expm1(np.minimum(x, 0)) * x.dtype.type(_SELU_ALPHA * _SELU_SCALE)),
    "erf": _erf_of,
    "erfc": lambda x: np.asarray(np.frompyfunc(math.erfc, 1, 1)(x), np.float64).astype(x.dtype),
    "floor": np.floor, "ceil": np.ceil, "round": np.rint, "sign": np.sign,
    "log": np.log, "log1p": np.log1p, "expm1": np.expm1, "reciprocal": lambda x: 1 / x,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
    "sinh": np.sinh, "cosh": np.cosh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
    "is_nan": np.isnan, "is_inf": np.isinf, "is_finite": np.isfinite, "logical_not": np.logical_not,
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b, "div": lambda a, b: a / b,
    "maximum": np.maximum, "minimum": np.minimum,
    "pow": np.power, "floor_div": _floor_div, "floor_mod": _floor_mod, "truncate_div": _truncate_div,
    "truncate_mod": np.fmod, "div_no_nan": _div_no_nan, "atan2": np.arctan2,
    "equal": np.equal, "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
    "greater": np.greater, "greater_equal": np.greater_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or,
}
REDUCTIONS: dict[str, Callable[..., np.ndarray]] = {
    "reduce_sum": np.sum, "reduce_prod": np.prod, "reduce_min": np.min, "reduce_all": np.all, "reduce_any": np.any,
}

for _name, _fn in ELEMENTWISE.items():
    reference_op(_name)(lambda node, *xs, _fn=_fn: _fn(*xs))
for _name, _fn in REDUCTIONS.items():
    reference_op(_name)(lambda node, x, _fn=_fn: _fn(x, axis=tuple(node.attrs["axes"]),
                                                      keepdims=bool(node.attrs["keepdims"])))


@reference_op("select")
def select(node: Node, cond: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(cond, a, b)


# ---- embeddings, token inputs, transformers -------------------------------------


@reference_op("gather")
def gather(node: Node, data: np.ndarray, indices: np.ndarray) -> np.ndarray:
    return np.take(data, np.asarray(indices).astype(np.int64), axis=int(node.attrs["axis"]))


@reference_op("one_hot")
def one_hot(node: Node, indices: np.ndarray) -> np.ndarray:
    depth, axis = int(node.attrs["depth"]), int(node.attrs["axis"])
    hit = np.expand_dims(np.asarray(indices), axis) == np.arange(depth).reshape(
        (depth,) + (1,) * (np.ndim(indices) - axis))
    return np.where(hit, np.float32(node.attrs["on"]), np.float32(node.attrs["off"]))


@reference_op("cast")
def cast(node: Node, x: np.ndarray) -> np.ndarray:
    dtype = np.dtype(node.attrs["dtype"])
    return (x != 0) if dtype == np.bool_ else x.astype(dtype)


@reference_op("argmin")
def argmin(node: Node, x: np.ndarray) -> np.ndarray:
    axis = node.attrs["axis"]
    y = np.argmin(x, axis=axis).astype(np.int64)
    return np.expand_dims(y, axis) if node.attrs.get("keepdims") else y


def _running(fn: Callable[..., np.ndarray], identity_value: int) -> OpFunction:
    def running(node: Node, x: np.ndarray) -> np.ndarray:
        axis = node.attrs["axis"]
        y = np.flip(x, axis) if node.attrs.get("reverse") else x
        y = fn(y, axis=axis, dtype=x.dtype)
        if node.attrs.get("exclusive"):  # shift by one: the first is the identity
            first = np.full_like(np.take(y, [0], axis=axis), identity_value)
            y = np.concatenate([first, np.delete(y, -1, axis=axis)], axis=axis)
        return np.flip(y, axis) if node.attrs.get("reverse") else y

    return running


reference_op("cumsum")(_running(np.cumsum, 0))
reference_op("cumprod")(_running(np.cumprod, 1))


@reference_op("log_softmax")
def log_softmax(node: Node, x: np.ndarray) -> np.ndarray:
    shifted = x - x.max(axis=node.attrs["axis"], keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=node.attrs["axis"], keepdims=True))


def _top_k_order(node: Node, x: np.ndarray) -> np.ndarray:
    return np.argsort(-x, axis=-1, kind="stable")[..., : int(node.attrs["k"])]


@reference_op("top_k_values")
def top_k_values(node: Node, x: np.ndarray) -> np.ndarray:
    return np.take_along_axis(x, _top_k_order(node, x), axis=-1)


@reference_op("top_k_indices")
def top_k_indices(node: Node, x: np.ndarray) -> np.ndarray:
    return _top_k_order(node, x).astype(np.int32)


# ---- 3-D convolution and pooling, N-d windows ---------------------------------


def _pad_nd(x: np.ndarray, pads: Sequence[int], value: float = 0.0) -> np.ndarray:
    """Pad the spatial axes of (N, C, *spatial) `x` by flat (begin, end) pairs."""
    widths = [(0, 0), (0, 0)] + [(int(pads[2 * i]), int(pads[2 * i + 1])) for i in range(x.ndim - 2)]
    return np.pad(x, widths, constant_values=value) if any(map(any, widths)) else x


def _windows_nd(x: np.ndarray, kernel, stride, dilation=None) -> np.ndarray:
    """(N, C, *out, *kernel) view of every window of the (already padded) `x`."""
    rank = x.ndim - 2
    dilation = dilation or (1,) * rank
    span = [(k - 1) * d + 1 for k, d in zip(kernel, dilation)]
    view = sliding_window_view(x, span, axis=tuple(range(2, 2 + rank)))
    steps = tuple(slice(None, None, s) for s in stride) + tuple(slice(None, None, d) for d in dilation)
    return view[(slice(None), slice(None)) + steps]


@reference_op("conv3d")
def conv3d(node: Node, x: np.ndarray) -> np.ndarray:
    a = node.attrs
    weight = np.asarray(node.params["weight"])  # (O, I / groups, kd, kh, kw)
    groups = int(a["groups"])
    win = _windows_nd(_pad_nd(x, a["pads"]), a["kernel"], a["stride"], a["dilation"])
    n, c = win.shape[:2]
    out_sp, cg, og = win.shape[2:5], c // groups, weight.shape[0] // groups
    parts = [
        np.einsum("ncdhwijk,ocijk->nodhw", win[:, g * cg:(g + 1) * cg], weight[g * og:(g + 1) * og])
        for g in range(groups)
    ]
    y = np.concatenate(parts, axis=1).reshape(n, weight.shape[0], *out_sp)
    if "bias" in node.params:
        y = y + np.asarray(node.params["bias"]).reshape(1, -1, 1, 1, 1)
    return y


@reference_op("conv_transpose3d")
def conv_transpose3d(node: Node, x: np.ndarray) -> np.ndarray:
    a = node.attrs
    weight = np.asarray(node.params["weight"])  # (I, O / groups, kd, kh, kw)
    if int(a["groups"]) != 1:
        raise EvaluationError(f"node {node.name}: grouped conv_transpose3d has no reference")
    kernel, stride, dilation = a["kernel"], a["stride"], a["dilation"]
    size = x.shape[2:]
    full_size = [(n - 1) * s + (k - 1) * d + 1 for n, k, s, d in zip(size, kernel, stride, dilation)]
    full = np.zeros((x.shape[0], weight.shape[1], *full_size), np.result_type(x, weight))
    for tap in np.ndindex(*kernel):
        at = tuple(slice(t * d, t * d + (n - 1) * s + 1, s) for t, n, s, d in zip(tap, size, stride, dilation))
        tap_weight = weight[(slice(None), slice(None)) + tap]
        full[(slice(None), slice(None)) + at] += np.einsum("ncdhw,co->nodhw", x, tap_weight)
    crop, out = a["crop"], a["output_size"]
    # positions asked for past the full output are zeros (before the bias)
    tail = [(0, max(0, c + o - f)) for c, o, f in zip(crop, out, full_size)]
    full = np.pad(full, [(0, 0), (0, 0)] + tail)
    y = full[(slice(None), slice(None)) + tuple(slice(c, c + o) for c, o in zip(crop, out))]
    if "bias" in node.params:
        y = y + np.asarray(node.params["bias"]).reshape(1, -1, 1, 1, 1)
    return y


@reference_op("max_pool3d")
def max_pool3d(node: Node, x: np.ndarray) -> np.ndarray:
    a = node.attrs  # padded elements never win: pad with -inf
    return _windows_nd(_pad_nd(x, a["pads"], -np.inf), a["kernel"], a["stride"]).max(axis=(-3, -2, -1))


@reference_op("avg_pool3d")
def avg_pool3d(node: Node, x: np.ndarray) -> np.ndarray:
    a = node.attrs
    kernel, stride = a["kernel"], a["stride"]
    total = _windows_nd(_pad_nd(x, a["pads"]), kernel, stride).sum(axis=(-3, -2, -1))
    if a.get("count_include_pad"):
        return total / x.dtype.type(math.prod(kernel))
    real = np.ones((1, 1) + x.shape[2:], x.dtype)
    return total / _windows_nd(_pad_nd(real, a["pads"]), kernel, stride).sum(axis=(-3, -2, -1))


# ---- local response normalization --------------------------------------------------------------
@reference_op("lrn")
def lrn(node: Node, x: np.ndarray) -> np.ndarray:
    r, channels = int(node.attrs["radius"]), x.shape[1]
    padded = np.pad(np.square(x), ((0, 0), (r, r)) + ((0, 0),) * (x.ndim - 2))
    window = sum(padded[:, k:k + channels] for k in range(2 * r + 1))
    scale = x.dtype.type(node.attrs["bias"]) + x.dtype.type(node.attrs["alpha"]) * window
    return x / scale ** x.dtype.type(node.attrs["beta"])


@reference_op("fake_quant")
def fake_quant(node: Node, x: np.ndarray) -> np.ndarray:
    a, f32 = node.attrs, np.float32
    c = np.maximum(np.minimum(x.astype(f32), f32(a["max"])), f32(a["min"])) - f32(a["min"])
    q = c / f32(a["step"]) if a["divide"] else c * f32(a["step"])
    return np.floor(q - f32(a["zero"]) + f32(0.5)) * f32(a["scale"])


# ---- sequence (recurrent layers) ---------------------------------------------

RECURRENT_ACTIVATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "tanh": np.tanh,
    "sigmoid": _sigmoid,
    "hard_sigmoid": lambda x: np.clip(x / 6 + 0.5, 0, 1),
    "relu": lambda x: np.maximum(x, 0),
    "linear": lambda x: x,
}


def _recurrence(node: Node, x: np.ndarray, step: Callable, mask: np.ndarray | None = None) -> np.ndarray:
    """Run `step(x_t, h, c) -> (h, c)` over axis 1 of x as the node's attrs say; its chosen output.
    With a step mask, a masked step keeps h and c and writes the previous row or zeros (masked_output)."""
    n, length = x.shape[0], x.shape[1]
    units = int(node.attrs["units"])
    h = np.zeros((n, units), x.dtype)
    c = np.zeros((n, units), x.dtype)
    order = range(length - 1, -1, -1) if node.attrs["go_backwards"] else range(length)
    steps = []
    zero_rows = node.attrs.get("masked_output", "previous") == "zero"
    for t in order:
        new_h, new_c = step(x[:, t], h, c)
        if mask is None:
            h, c = new_h, new_c
            steps.append(h)
            continue
        keep = mask[:, t, None] != 0
        h, c = np.where(keep, new_h, h), np.where(keep, new_c, c)
        steps.append(np.where(keep, h, np.zeros_like(h)) if zero_rows else h)
    output = node.attrs["output"]
    if output == "last_h":
        return h
    if output == "last_c":
        return c
    seq = np.stack(steps, axis=1)
    if node.attrs["go_backwards"] and node.attrs["sequence_order"] == "input":
        seq = seq[:, ::-1]
    return np.ascontiguousarray(seq)


def _gates(node: Node, x: np.ndarray, count: int):
    """The node's weights cast to x's dtype, split per gate: (w_ih, w_hh, b_ih, b_hh) lists."""
    parts = []
    for key in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        parts.append(np.split(np.asarray(node.params[key], x.dtype), count, axis=0))
    return parts


@reference_op("lstm")
def lstm(node: Node, x: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    act = RECURRENT_ACTIVATIONS[node.attrs["activation"]]
    rec = RECURRENT_ACTIVATIONS[node.attrs["recurrent_activation"]]
    w_ih, w_hh, b_ih, b_hh = _gates(node, x, 4)

    def step(xt, h, c):
        z = [xt @ w_ih[g].T + b_ih[g] + h @ w_hh[g].T + b_hh[g] for g in range(4)]
        c = rec(z[1]) * c + rec(z[0]) * act(z[2])
        return rec(z[3]) * act(c), c

    return _recurrence(node, x, step, mask)


@reference_op("gru")
def gru(node: Node, x: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    act = RECURRENT_ACTIVATIONS[node.attrs["activation"]]
    rec = RECURRENT_ACTIVATIONS[node.attrs["recurrent_activation"]]
    w_ih, w_hh, b_ih, b_hh = _gates(node, x, 3)
    reset_after = bool(node.attrs["reset_after"])

    def step(xt, h, c):
        gx = [xt @ w_ih[g].T + b_ih[g] for g in range(3)]
        gh = [h @ w_hh[g].T + b_hh[g] for g in range(2)]
        z, r = rec(gx[0] + gh[0]), rec(gx[1] + gh[1])
        if reset_after:
            candidate = act(gx[2] + r * (h @ w_hh[2].T + b_hh[2]))
        else:
            candidate = act(gx[2] + (r * h) @ w_hh[2].T + b_hh[2])
        return z * h + (1 - z) * candidate, c

    return _recurrence(node, x, step, mask)


@reference_op("rnn")
def rnn(node: Node, x: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    act = RECURRENT_ACTIVATIONS[node.attrs["activation"]]
    w_ih, w_hh = (np.asarray(node.params[k], x.dtype) for k in ("weight_ih", "weight_hh"))
    bias = np.asarray(node.params["bias_ih"], x.dtype) + np.asarray(node.params["bias_hh"], x.dtype)

    def step(xt, h, c):
        return act(xt @ w_ih.T + h @ w_hh.T + bias), c

    return _recurrence(node, x, step, mask)


# ---- bitwise ops --------------------------------------------------------------

def _shift_amount(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """b clamped to [0, width of a - 1] (TF's shift kernels)."""
    return np.clip(b, 0, a.dtype.itemsize * 8 - 1).astype(a.dtype)


def _left_shift(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """In the unsigned type of a's width: the bits shifted past the width are dropped."""
    unsigned = np.dtype(f"uint{a.dtype.itemsize * 8}")
    shifted = np.left_shift(a.astype(unsigned), _shift_amount(a, b).astype(unsigned))
    return shifted.astype(a.dtype)


reference_op("bitwise_and")(lambda node, a, b: np.bitwise_and(a, b))
reference_op("bitwise_or")(lambda node, a, b: np.bitwise_or(a, b))
reference_op("bitwise_xor")(lambda node, a, b: np.bitwise_xor(a, b))
reference_op("bitwise_not")(lambda node, x: np.invert(x))
reference_op("left_shift")(lambda node, a, b: _left_shift(a, b))
reference_op("right_shift")(lambda node, a, b: np.right_shift(a, _shift_amount(a, b)))


# ---- UpSampling3D ----------------------------------------------------------------------

@reference_op("repeat")
def repeat(node: Node, x: np.ndarray) -> np.ndarray:
    for axis, times in enumerate(node.attrs["repeats"]):
        if int(times) != 1:
            x = np.repeat(x, int(times), axis=axis)
    return x


@reference_op("crop")
def crop(node: Node, x: np.ndarray) -> np.ndarray:
    return x[tuple(slice(int(b), n - int(e)) for n, (b, e) in zip(x.shape, node.attrs["crops"]))]


# ---- detection heads ----------------------------------------------------------------------------------


def iou_matrix(boxes: np.ndarray) -> np.ndarray:
    """TF's IoU of every pair of (y1, x1, y2, x2) boxes in float32, its operations in its order: corners
    sorted per box, inter = max(dy, 0) * max(dx, 0), inter / (area_i + area_j - inter), 0 where either
    area is <= 0."""
    b = np.asarray(boxes, np.float32)
    ymin, ymax = np.minimum(b[:, 0], b[:, 2]), np.maximum(b[:, 0], b[:, 2])
    xmin, xmax = np.minimum(b[:, 1], b[:, 3]), np.maximum(b[:, 1], b[:, 3])
    area = (ymax - ymin) * (xmax - xmin)
    dy = np.minimum(ymax[:, None], ymax[None, :]) - np.maximum(ymin[:, None], ymin[None, :])
    dx = np.minimum(xmax[:, None], xmax[None, :]) - np.maximum(xmin[:, None], xmin[None, :])
    inter = np.maximum(dy, np.float32(0)) * np.maximum(dx, np.float32(0))
    with np.errstate(invalid="ignore", divide="ignore"):
        iou = inter / (area[:, None] + area[None, :] - inter)
    return np.where((area[:, None] <= 0) | (area[None, :] <= 0), np.float32(0), iou).astype(np.float32)


def nms_selected(boxes: np.ndarray, scores: np.ndarray, limit: int, iou_threshold: float,
                 score_threshold: float) -> list[int]:
    """The indices TF's greedy (hard) non-max suppression selects, in its order."""
    scores = np.asarray(scores, np.float32)
    over = np.asarray(iou_matrix(boxes) > np.float32(iou_threshold))
    selected: list[int] = []
    for i in np.argsort(-scores, kind="stable"):
        if len(selected) >= limit:
            break
        if scores[i] > np.float32(score_threshold) and not over[i, selected].any():
            selected.append(int(i))
    return selected


def soft_nms_weights(boxes: np.ndarray, sigma: float) -> np.ndarray:
    """TF's soft-NMS weight of each pair, expf((scale * IoU) * IoU) in float32 with scale = -0.5 / sigma in
    float32 and glibc's expf (what TF's kernel calls)."""
    scale = np.float32(-0.5) / np.float32(sigma)
    iou = iou_matrix(boxes)
    return libm_expf.expf((scale * iou) * iou)


def soft_nms_selected(boxes: np.ndarray, scores: np.ndarray, limit: int, score_threshold: float,
                      sigma: float) -> tuple[list[int], list[np.float32]]:
    """TF's soft-NMS (its CPU kernel's lazy pass): the top candidate (score, then lower index) takes the
    weights of the boxes selected since it was last popped, newest first, in float32; it is selected if its
    score is unchanged, re-queued if still > score_threshold, else dropped. Returns indices and scores."""
    weight = soft_nms_weights(boxes, sigma)
    threshold = np.float32(score_threshold)
    heap = [(-float(s), i, 0) for i, s in enumerate(np.asarray(scores, np.float32)) if s > threshold]
    heapq.heapify(heap)
    picked: list[int] = []
    kept: list[np.float32] = []
    while len(picked) < limit and heap:
        negative, i, begin = heapq.heappop(heap)
        original = score = np.float32(-negative)
        for j in range(len(picked) - 1, begin - 1, -1):
            score = np.float32(score * weight[i, picked[j]])
            if score <= threshold:
                break
        if score == original:
            picked.append(i)
            kept.append(score)
        elif score > threshold:
            heapq.heappush(heap, (-float(score), i, len(picked)))
    return picked, kept


@reference_op("non_max_suppression")
def non_max_suppression(node: Node, boxes: np.ndarray, scores: np.ndarray) -> np.ndarray:
    limit = int(node.attrs["max_output_size"])
    sigma = float(node.attrs.get("soft_nms_sigma", 0.0))
    if sigma > 0:
        picked, kept = soft_nms_selected(boxes, scores, limit, node.attrs["score_threshold"], sigma)
    else:
        picked = nms_selected(boxes, scores, limit, node.attrs["iou_threshold"], node.attrs["score_threshold"])
        kept = list(np.asarray(scores, np.float32)[picked])
    if node.attrs["output"] == "count":
        return np.asarray(len(picked), np.int32)
    if node.attrs["output"] == "scores":
        return np.pad(np.asarray(kept, np.float32).reshape(-1), (0, limit - len(picked)))
    return np.pad(np.asarray(picked, np.int32), (0, limit - len(picked)))


def combined_slots(boxes: np.ndarray, scores: np.ndarray, attrs: Mapping[str, Any]) -> tuple[np.ndarray, ...]:
    """TF's CombinedNonMaxSuppression before the cut to per_batch: per batch, the C * S slots (class-major,
    each class's selections in order; unfilled: score -1, class -1, box 0) sorted by score (stable), and
    how many were selected. Returns (boxes (B, C*S, 4), scores, classes (B, C*S), selected (B,))."""
    boxes, scores = np.asarray(boxes, np.float32), np.asarray(scores, np.float32)
    b, n, c = scores.shape
    s = int(attrs["max_per_class"])
    out_boxes, out_scores = np.zeros((b, c * s, 4), np.float32), np.full((b, c * s), -1, np.float32)
    out_classes, selected = np.full((b, c * s), -1, np.float32), np.zeros(b, np.int32)
    for i in range(b):
        for k in range(c):
            own = boxes[i, :, k if boxes.shape[2] > 1 else 0]
            picked = nms_selected(own, scores[i, :, k], s, attrs["iou_threshold"], attrs["score_threshold"])
            at = slice(k * s, k * s + len(picked))
            out_boxes[i, at], out_scores[i, at], out_classes[i, at] = own[picked], scores[i, picked, k], k
            selected[i] += len(picked)
        order = np.argsort(-out_scores[i], kind="stable")
        out_boxes[i], out_scores[i], out_classes[i] = out_boxes[i, order], out_scores[i, order], out_classes[i, order]
    return out_boxes, out_scores, out_classes, selected


@reference_op("combined_non_max_suppression")
def combined_non_max_suppression(node: Node, boxes: np.ndarray, scores: np.ndarray) -> np.ndarray:
    slot_boxes, slot_scores, slot_classes, selected = combined_slots(boxes, scores, node.attrs)
    length = int(node.attrs["per_batch"])
    count = np.minimum(selected, length).astype(np.int32)
    if node.attrs["output"] == "count":
        return count
    if node.attrs["clip_boxes"]:
        slot_boxes = np.clip(slot_boxes, np.float32(0), np.float32(1))
    value = {"boxes": slot_boxes, "scores": slot_scores, "classes": slot_classes}[node.attrs["output"]]
    value = np.concatenate([value, np.zeros((value.shape[0], max(length - value.shape[1], 0), *value.shape[2:]),
                                            np.float32)], 1)[:, :length]
    keep = np.arange(length)[None] < count[:, None]
    return np.where(keep.reshape(*keep.shape, *([1] * (value.ndim - 2))), value, np.float32(0)).astype(np.float32)


@reference_op("nonzero")
def nonzero(node: Node, x: np.ndarray) -> np.ndarray:
    found = np.argwhere(np.asarray(x) != 0).astype(np.int64)
    if node.attrs["output"] == "count":
        return np.asarray(len(found), np.int32)
    return np.concatenate([found, np.zeros((np.asarray(x).size - len(found), found.shape[1]), np.int64)])


@reference_op("prefix")
def prefix(node: Node, x: np.ndarray, count: np.ndarray) -> np.ndarray:
    return x[: int(np.asarray(count).reshape(()))]


def crop_positions(lo: np.ndarray, hi: np.ndarray, extent: int, steps: int) -> np.ndarray:
    """(n, steps) float32: TF's CropAndResize sample positions along one axis (its order of operations)."""
    lo, hi = np.asarray(lo, np.float32), np.asarray(hi, np.float32)
    last = np.float32(extent - 1)
    if steps == 1:
        return ((np.float32(0.5) * (lo + hi)) * last)[:, None]
    scale = (hi - lo) * last / np.float32(steps - 1)
    return lo[:, None] * last + np.arange(steps, dtype=np.float32)[None] * scale[:, None]


@reference_op("crop_and_resize")
def crop_and_resize(node: Node, image: np.ndarray, boxes: np.ndarray, box_index: np.ndarray) -> np.ndarray:
    image, boxes = np.asarray(image, np.float32), np.asarray(boxes, np.float32)
    _, h, w, _ = image.shape
    ch, cw = (int(v) for v in node.attrs["size"])
    ys, xs = crop_positions(boxes[:, 0], boxes[:, 2], h, ch), crop_positions(boxes[:, 1], boxes[:, 3], w, cw)
    inside = ((ys >= 0) & (ys <= h - 1))[:, :, None] & ((xs >= 0) & (xs <= w - 1))[:, None, :]
    b = np.asarray(box_index, np.int64)[:, None, None]
    if node.attrs["method"] == "nearest":
        ry, rx = np.floor(ys), np.floor(xs)
        ry, rx = ry + (ys - ry >= 0.5), rx + (xs - rx >= 0.5)  # roundf: half away from zero (positions >= 0)
        iy, ix = (np.clip(v, 0, n - 1).astype(np.int64) for v, n in ((ry, h), (rx, w)))
        out = image[b, iy[:, :, None], ix[:, None, :]]
    else:
        def at(yv: np.ndarray, xv: np.ndarray) -> np.ndarray:
            iy, ix = np.clip(yv, 0, h - 1).astype(np.int64), np.clip(xv, 0, w - 1).astype(np.int64)
            return image[b, iy[:, :, None], ix[:, None, :]]
        top_y, left_x = np.floor(ys), np.floor(xs)
        dy, dx = (ys - top_y)[:, :, None, None], (xs - left_x)[:, None, :, None]
        tl, tr = at(top_y, left_x), at(top_y, np.ceil(xs))
        bl, br = at(np.ceil(ys), left_x), at(np.ceil(ys), np.ceil(xs))
        top, bottom = tl + (tr - tl) * dx, bl + (br - bl) * dx
        out = top + (bottom - top) * dy
    return np.where(inside[..., None], out, np.float32(node.attrs["extrapolation_value"])).astype(np.float32)
