"""The Caffe handlers of the elementwise family: unary and binary arithmetic, activations, clip, identity."""

from __future__ import annotations

import math

import numpy as np

from tf_convert.convert.errors import Unsupported
from tf_convert.convert.ir import Graph
from tf_convert.emitters.base import NodeContext

from .builder import NetBuilder, broadcast_span
from .contract import BINARY, TABLE, Ctx


def _layer(type_: str, suffix: str, **params: dict) -> callable:
    def handler(ctx: Ctx) -> str:
        b, node = ctx.builder, ctx.node
        x = node.inputs[0]
        top = b.unique(f"{node.name}/{suffix}")
        b.add(type_, top, [x], [top], [b.shape(x)], **params)
        return top

    return handler


# IR op -> (the one Caffe layer computing it, the suffix of its top's name)
LAYERS = {"sigmoid": ("Sigmoid", "sigmoid"), "tanh": ("TanH", "tanh"), "exp": ("Exp", "exp"),
          "abs": ("AbsVal", "absval"), "softplus": ("BNLL", "bnll"), "log": ("Log", "log")}
for _op, (_type, _suffix) in LAYERS.items():
    TABLE.register(_op)(_layer(_type, _suffix))


@TABLE.register("relu")
def _relu(ctx: Ctx) -> str:
    b, node = ctx.builder, ctx.node
    return b.relu(f"{node.name}/relu", node.inputs[0])


@TABLE.register("leaky_relu")
def _leaky_relu(ctx: Ctx) -> str:
    b, node = ctx.builder, ctx.node
    return b.relu(f"{node.name}/relu", node.inputs[0], float(node.attrs["alpha"]))


@TABLE.register("elu")
def _elu(ctx: Ctx) -> str:
    b, node = ctx.builder, ctx.node
    x = node.inputs[0]
    top = b.unique(f"{node.name}/elu")
    b.add("ELU", top, [x], [top], [b.shape(x)], elu_param={"alpha": float(node.attrs.get("alpha", 1.0))})
    return top


def clip(b: NetBuilder, name: str, x: str, lo: float, hi: float) -> str:
    """Exact clamp from standard layers: max with a constant blob; min as -max(-x, -hi)."""
    if lo == 0.0:
        x = b.relu(f"{name}/relu", x)
    elif math.isfinite(lo):
        x = b.eltwise(f"{name}/max", [x, b.const_like(f"{name}/lo", x, lo)], "MAX")
    if math.isfinite(hi):
        neg = b.power(f"{name}/neg", x, scale=-1.0)
        top = b.eltwise(f"{name}/min", [neg, b.const_like(f"{name}/hi", x, -hi)], "MAX")
        x = b.power(f"{name}/negback", top, scale=-1.0)
    return x


@TABLE.register("clip")
def _clip(ctx: Ctx) -> str:
    b, node = ctx.builder, ctx.node
    return clip(b, node.name, node.inputs[0], float(node.attrs["min"]), float(node.attrs["max"]))


@TABLE.register("hard_sigmoid")
def _hard_sigmoid(ctx: Ctx) -> str:
    b, node = ctx.builder, ctx.node
    a = node.attrs
    x = b.power(f"{node.name}/affine", node.inputs[0], scale=float(a["alpha"]), shift=float(a["beta"]))
    return clip(b, node.name, x, 0.0, 1.0)


@TABLE.register("swish")
def _swish(ctx: Ctx) -> str:
    b, node = ctx.builder, ctx.node
    x = node.inputs[0]
    sig = b.unique(f"{node.name}/sigmoid")
    b.add("Sigmoid", sig, [x], [sig], [b.shape(x)])
    return b.eltwise(f"{node.name}/mul", [x, sig], "PROD")


@TABLE.register("hard_swish")
def _hard_swish(ctx: Ctx) -> str:
    b, node = ctx.builder, ctx.node
    x = node.inputs[0]
    r = clip(b, f"{node.name}/relu6", b.power(f"{node.name}/add3", x, shift=3.0), 0.0, 6.0)
    prod = b.eltwise(f"{node.name}/mul", [x, r], "PROD")
    return b.power(f"{node.name}/div6", prod, scale=1.0 / 6.0)


# Abramowitz & Stegun 7.1.26: erf(a) = 1 - t (a1 + t (a2 + ... a5 t)) exp(-a^2), t = 1 / (1 + p a),
# a >= 0, |error| <= 1.5e-7 (below float32 noise at the model level).
_AS_P = 0.3275911


_AS_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def _gelu_erf(b: NetBuilder, name: str, x: str) -> str:
    # gelu = 0.5 x (1 + erf(x / sqrt2)) = relu(x) - 0.5 |x| q, q = 1 - erf(|x| / sqrt2)
    neg = b.power(f"{name}/neg", x, scale=-1.0)
    absx = b.eltwise(f"{name}/abs", [x, neg], "MAX")
    t = b.power(f"{name}/t", absx, power=-1.0, scale=_AS_P / math.sqrt(2.0), shift=1.0)
    h = b.power(f"{name}/h4", t, scale=_AS_A[4], shift=_AS_A[3])
    for i in (2, 1, 0):
        h = b.power(f"{name}/h{i}", b.eltwise(f"{name}/ht{i}", [h, t], "PROD"), shift=_AS_A[i])
    poly = b.eltwise(f"{name}/poly", [h, t], "PROD")
    sq = b.power(f"{name}/sq", x, power=2.0, scale=1.0 / math.sqrt(2.0))
    e = b.unique(f"{name}/exp")
    b.add("Exp", e, [sq], [e], [b.shape(x)], exp_param={"scale": -1.0})
    q = b.eltwise(f"{name}/q", [poly, e], "PROD")
    m = b.eltwise(f"{name}/absq", [absx, q], "PROD")
    r = b.relu(f"{name}/relu", x)
    return b.eltwise(f"{name}/out", [r, m], "SUM", [1.0, -0.5])


@TABLE.register("gelu")
def _gelu(ctx: Ctx) -> str:
    b, node = ctx.builder, ctx.node
    x = node.inputs[0]
    if node.attrs.get("approximate", "none") != "tanh":
        b.warnings.append(f"{node.name}: GELU's erf built from standard layers (A&S 7.1.26, |err| <= 1.5e-7)")
        return _gelu_erf(b, node.name, x)
    # 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
    cube = b.power(f"{node.name}/cube", x, power=3.0)
    inner = b.eltwise(f"{node.name}/inner", [x, cube], "SUM", [1.0, 0.044715])
    scaled = b.power(f"{node.name}/scale", inner, scale=math.sqrt(2.0 / math.pi))
    t = b.unique(f"{node.name}/tanh")
    b.add("TanH", t, [scaled], [t], [b.shape(x)])
    one_plus = b.power(f"{node.name}/one_plus", t, shift=1.0)
    prod = b.eltwise(f"{node.name}/mul", [x, one_plus], "PROD")
    return b.power(f"{node.name}/half", prod, scale=0.5)


@TABLE.register("sqrt")
def _sqrt(ctx: Ctx) -> str:
    b, node = ctx.builder, ctx.node
    return b.power(f"{node.name}/pow", node.inputs[0], power=0.5)


@TABLE.register("rsqrt")
def _rsqrt(ctx: Ctx) -> str:
    b, node = ctx.builder, ctx.node
    return b.power(f"{node.name}/pow", node.inputs[0], power=-0.5)


@TABLE.register("square")
def _square(ctx: Ctx) -> str:
    b, node = ctx.builder, ctx.node
    return b.power(f"{node.name}/pow", node.inputs[0], power=2.0)


@TABLE.register("neg")
def _neg(ctx: Ctx) -> str:
    b, node = ctx.builder, ctx.node
    return b.power(f"{node.name}/neg", node.inputs[0], scale=-1.0)


@TABLE.register("identity")
def _identity(ctx: Ctx) -> str:
    node = ctx.node
    return node.inputs[0]  # `finish` writes an identity Power named after the node


def _const_affine(op: str, const_first: bool, c: np.ndarray):
    """(scale, bias, reciprocal) for x (op) c or c (op) x."""
    if op == "add":
        return None, c, False
    if op == "mul":
        return c, None, False
    if op == "sub":
        return (-np.ones_like(c), c, False) if const_first else (None, -c, False)
    if op == "div":
        return (c, None, True) if const_first else (1.0 / c, None, False)
    raise KeyError(op)


def _scale_by(b: NetBuilder, name: str, big: str, small: str) -> str:
    """big * small with Scale's two bottoms, `small` broadcasting over a contiguous span of big.
    A one-element `small` spans no axis (and OpenCV cannot Reshape to zero axes): it becomes a
    (1,) blob scaling a size-1 axis of `big`, or, with none (batch > 1), a (1, total) view of it."""
    shape, sshape = tuple(b.shape(big)), tuple(b.shape(small))
    axis, end = broadcast_span(shape, [sshape])
    src, view = big, shape
    if axis == end:
        unit = next((i for i, d in enumerate(shape) if d == 1), None)
        if unit is None:
            view = (1, int(np.prod(shape)))
            src = b.reshape(f"{name}/view", big, view)
        axis, end = (unit, unit + 1) if unit is not None else (0, 1)
    target = tuple(view[axis:end])
    factor = small if sshape == target else b.reshape(f"{name}/flat", small, target)
    top = b.unique(name)
    b.add("Scale", name, [src, factor], [top], [view], scale_param={"axis": axis, "bias_term": False})
    return top if view == shape else b.reshape(f"{name}/back", top, shape)


def _expand(b: NetBuilder, name: str, small: str, like: str) -> str:
    """Broadcast tensor `small` to the shape of `like`: ones_like(like) * small (Scale, two bottoms)."""
    ones = b.power(f"{name}/ones", like, scale=0.0, shift=1.0)
    return _scale_by(b, name, ones, small)


def _binary_limits(ctx: NodeContext) -> str | None:
    g, node = ctx.graph, ctx.node
    a, c = node.inputs
    ca, cc = ctx.index.const_value(a), ctx.index.const_value(c)
    out = tuple(g.shape(node.output))
    if ca is not None and cc is not None:
        return "both operands are constants (fold them before converting)"
    tensors = [t for t, v in ((a, ca), (c, cc)) if v is None]
    if all(tuple(g.shape(t)) != out for t in tensors):
        return "neither operand has the output's shape (two-sided broadcasting)"
    for t in (a, c):
        small = g.shape(t) if ctx.index.const_value(t) is None else np.shape(ctx.index.const_value(t))
        if len(small) > len(out):
            return "operand of higher rank than the output"
        axis, end = broadcast_span(out, [small])
        aligned = (1,) * (len(out) - len(small)) + tuple(small)
        if ctx.index.const_value(t) is None and any(aligned[i] != out[i] for i in range(axis, end)):
            return "broadcast in the middle of a tensor operand (Caffe's Scale needs a contiguous span)"
    return None


@TABLE.register(*BINARY, limit=_binary_limits)
def _binary(ctx: Ctx) -> str:
    b, g, node = ctx.builder, ctx.graph, ctx.node
    a, c = node.inputs
    ca, cc = ctx.index.const_value(a), ctx.index.const_value(c)
    name, op = node.name, node.op
    out = tuple(g.shape(node.output))
    if ca is not None or cc is not None:
        x, const, const_first = (c, ca, True) if ca is not None else (a, cc, False)
        const = np.asarray(const, np.float32)
        if op in ("maximum", "minimum"):
            sign = 1.0 if op == "maximum" else -1.0
            xs = x if sign > 0 else b.power(f"{name}/neg", x, scale=-1.0)
            m = b.eltwise(f"{name}/max", [xs, b.const_like(f"{name}/const", xs, sign * const)], "MAX")
            return m if sign > 0 else b.power(f"{name}/negback", m, scale=-1.0)
        scale, bias, reciprocal = _const_affine(op, const_first, const)
        if reciprocal:
            x = b.power(f"{name}/reciprocal", x, power=-1.0)
        return b.scale_const(f"{name}/scale", x, scale, bias)
    # two tensors: Scale with two bottoms does the SE-block broadcast multiply directly
    if op == "mul" and tuple(b.shape(a)) != tuple(b.shape(c)):
        big, small = (a, c) if tuple(b.shape(a)) == out else (c, a)
        return _scale_by(b, f"{name}/scale", big, small)
    if tuple(b.shape(a)) != out:
        a = _expand(b, f"{name}/expand_a", a, c)
    if tuple(b.shape(c)) != out:
        c = _expand(b, f"{name}/expand_b", c, a)
    if op == "add":
        return b.eltwise(f"{name}/sum", [a, c], "SUM")
    if op == "sub":
        return b.eltwise(f"{name}/sub", [a, c], "SUM", [1.0, -1.0])
    if op == "mul":
        return b.eltwise(f"{name}/prod", [a, c], "PROD")
    if op == "div":
        inv = b.power(f"{name}/reciprocal", c, power=-1.0)
        return b.eltwise(f"{name}/prod", [a, inv], "PROD")
    if op == "maximum":
        return b.eltwise(f"{name}/max", [a, c], "MAX")
    na, nc = b.power(f"{name}/neg_a", a, scale=-1.0), b.power(f"{name}/neg_b", c, scale=-1.0)
    m = b.eltwise(f"{name}/max", [na, nc], "MAX")
    return b.power(f"{name}/negback", m, scale=-1.0)


# ---- the elementwise math Caffe's layers compute exactly (BNLL is softplus, Power with power -1 the
# reciprocal, ...); the others' reasons are the catalog's (`refused`). Caffe blobs are float32: integer and
# bool tensors are refused (`dtype_problems`, run by __init__.unsupported).

DTYPE_REASON = "Caffe blobs are float32: no {} tensors (token ids, masks, indices)"


def dtype_problems(graph: Graph) -> list[Unsupported]:
    """Every node that reads or makes a tensor other than float32 (integer, bool, float64...)."""
    found = []
    for node in graph.nodes:
        dtypes = {graph.tensors[t].dtype for t in [*node.inputs, node.output] if t in graph.tensors}
        odd = sorted(d for d in dtypes if d != "float32")
        if odd:
            found.append(Unsupported(node.op, node.name, _dtype_reason(odd)))
    for t in graph.inputs:
        if graph.tensors[t].dtype != "float32":
            found.append(Unsupported("input", t, _dtype_reason([graph.tensors[t].dtype])))
    return found


def _dtype_reason(dtypes: list[str]) -> str:
    if all(d.startswith("float") for d in dtypes):  # float64, float16
        return f"Caffe blobs are float32: no {'/'.join(dtypes)} tensors"
    return DTYPE_REASON.format("/".join(dtypes))


@TABLE.register("log1p")
def _log1p(ctx: Ctx) -> str:
    """log(1 + x): OpenCV DNN's Log layer ignores log_param's shift, so the 1 + x is a Power layer."""
    b, node = ctx.builder, ctx.node
    shifted = b.power(f"{node.name}/plus1", node.inputs[0], shift=1.0)
    top = b.unique(f"{node.name}/log1p")
    b.add("Log", top, [shifted], [top], [b.shape(shifted)])
    return top


@TABLE.register("expm1")
def _expm1(ctx: Ctx) -> str:
    b, node = ctx.builder, ctx.node
    e = _layer("Exp", "exp")(ctx)
    return b.power(f"{node.name}/minus1", e, shift=-1.0)


@TABLE.register("reciprocal")
def _reciprocal(ctx: Ctx) -> str:
    return ctx.builder.power(f"{ctx.node.name}/reciprocal", ctx.node.inputs[0], power=-1.0)


@TABLE.register("softsign")
def _softsign(ctx: Ctx) -> str:
    """x * (1 + |x|)^-1."""
    b, node = ctx.builder, ctx.node
    x = node.inputs[0]
    magnitude = b.unique(f"{node.name}/abs")
    b.add("AbsVal", magnitude, [x], [magnitude], [b.shape(x)])
    inverse = b.power(f"{node.name}/inverse", magnitude, power=-1.0, shift=1.0)
    return b.eltwise(f"{node.name}/softsign", [x, inverse], "PROD")


@TABLE.register("selu")
def _selu(ctx: Ctx) -> str:
    """ELU(alpha) times scale, TF's constants."""
    b, node = ctx.builder, ctx.node
    x = node.inputs[0]
    elu = b.unique(f"{node.name}/elu")
    b.add("ELU", elu, [x], [elu], [b.shape(x)], elu_param={"alpha": 1.6732632423543772})
    return b.power(f"{node.name}/selu", elu, scale=1.0507009873554805)
