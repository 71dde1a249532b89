"""Elementwise TF ops: identities, activations and broadcasting arithmetic (constants laid out for NCHW)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tf_convert.convert.ir.dtypes import IR_DTYPES
from tf_convert.convert.ir.ops import OPS, TF_OPS

from ..context import Context, NotConvertible, Perm, identity, permute_shape
from ..table import tf_op


@tf_op("Identity", "StopGradient", "Snapshot", "PreventGradient", "IdentityN", "CheckNumerics",
       "EnsureShape")
def pass_through(ctx: Context, op: Any) -> None:
    for i, o in enumerate(op.outputs):  # IdentityN forwards each input
        v = ctx.val(op.inputs[i])
        ctx.set(o, v.ir, v.perm)


def tf_dtype(t: Any) -> str:
    return t.dtype.name


def unary(ctx: Context, op: Any, ir_op: str, attrs: dict | None = None) -> None:
    """`ir_op` of the op's first input, with TF's output dtype."""
    v = ctx.val(op.inputs[0])
    out = ctx.emit(ir_op, op.name, [v.ir], ctx.graph.shape(v.ir), attrs, source_op=op.type,
                   out_dtype=tf_dtype(op.outputs[0]))
    ctx.set(op.outputs[0], out, v.perm)


@tf_op("LeakyRelu")
def leaky_relu(ctx: Context, op: Any) -> None:
    unary(ctx, op, "leaky_relu", {"alpha": float(op.get_attr("alpha"))})


def broadcast_inputs(ctx: Context, op: Any, tensors: list[Any]) -> tuple[list[str], Perm]:
    """IR tensors of `tensors` laid out to broadcast against each other like TF's inputs do."""
    out_rank = len(ctx.shape(op.outputs[0]))
    perm: Perm = None
    for t in tensors:  # follow the layout of the first full-rank activation
        if not ctx.is_const(t) and len(ctx.shape(t)) == out_rank:
            perm = ctx.val(t).perm
            break
    names = []
    for t in tensors:
        rank = len(ctx.shape(t))
        if ctx.is_const(t):
            names.append(ctx.ir(t, perm, out_rank))
        elif rank == out_rank:
            names.append(ctx.ir(t, perm))
        else:
            names.append(_expand(ctx, t, out_rank, perm))
    return names, perm


def _expand(ctx: Context, t: Any, rank: int, perm: Perm) -> str:
    """A lower-rank activation reshaped with leading 1s (TF broadcasting) and put in `perm`."""
    shape = ctx.shape(t)
    full = (1,) * (rank - len(shape)) + shape
    x = ctx.emit("reshape", f"{t.op.name}/expand", [ctx.tf_order(t)], full, {"shape": full},
                 source_op="(broadcast)")
    if perm is None:
        return x
    return ctx.emit("transpose", f"{t.op.name}/expand_t", [x], permute_shape(full, perm),
                    {"perm": identity(perm, rank)}, source_op="(layout)")


def binary(ctx: Context, op: Any, ir_op: str, attrs: dict | None = None) -> None:
    """`ir_op` of the op's first two inputs, broadcast as TF broadcasts them, with TF's output dtype."""
    names, perm = broadcast_inputs(ctx, op, list(op.inputs[:2]))
    out_shape = permute_shape(ctx.shape(op.outputs[0]), perm)
    out = ctx.emit(ir_op, op.name, names, out_shape, attrs, source_op=op.type, out_dtype=tf_dtype(op.outputs[0]))
    ctx.set(op.outputs[0], out, perm)


def _register_plain(tf_name: str, ir_op: str, attrs: dict) -> None:
    lower = unary if OPS[ir_op].kind == "unary" else binary

    @tf_op(tf_name)
    def plain(ctx: Context, op: Any) -> None:
        lower(ctx, op, ir_op, dict(attrs) or None)


# every TF op the catalog names as one of its ops (a row's `tf`)
for _name, (_ir_op, _attrs) in TF_OPS.items():
    _register_plain(_name, _ir_op, _attrs)


@tf_op("SquaredDifference")
def squared_difference(ctx: Context, op: Any) -> None:
    names, perm = broadcast_inputs(ctx, op, list(op.inputs[:2]))
    out_shape = permute_shape(ctx.shape(op.outputs[0]), perm)
    diff = ctx.emit("sub", f"{op.name}/diff", names, out_shape, source_op=op.type)
    out = ctx.emit("square", op.name, [diff], out_shape, source_op=op.type)
    ctx.set(op.outputs[0], out, perm)


@tf_op("AddN")
def add_n(ctx: Context, op: Any) -> None:
    names, perm = broadcast_inputs(ctx, op, list(op.inputs))
    if len(names) < 1:
        raise NotConvertible("AddN without inputs")
    out_shape = permute_shape(ctx.shape(op.outputs[0]), perm)
    acc = names[0]
    for i, n in enumerate(names[1:], 1):
        last = i == len(names) - 1
        acc = ctx.emit("add", op.name if last else f"{op.name}/add{i}", [acc, n], out_shape,
                       source_op=op.type)
    ctx.set(op.outputs[0], acc, perm)


_INV_SQRT2 = 0.7071067811865476


def _scalar(ctx: Context, t: Any) -> float | None:
    if not ctx.is_const(t):
        return None
    value = ctx.const(t)
    return float(np.asarray(value).reshape(-1)[0]) if value.size == 1 else None


def _times_const(ctx: Context, t: Any) -> tuple[Any, float] | None:
    """(x, c) when tensor t = x * c with a scalar constant c."""
    if t.op.type != "Mul":
        return None
    a, b = t.op.inputs
    if _scalar(ctx, b) is not None and not ctx.is_const(a):
        return a, _scalar(ctx, b)
    if _scalar(ctx, a) is not None and not ctx.is_const(b):
        return b, _scalar(ctx, a)
    return None


def gelu_input(ctx: Context, op: Any) -> Any | None:
    """x if `op` (a Mul) is 0.5 * x * erfc(-x / sqrt(2)) as tf.nn.gelu writes it, or
    x * 0.5 * (1 + erf(x / sqrt(2))) as BERT writes it, else None."""
    if op.type != "Mul":
        return None
    if (x := erf_gelu_input(ctx, op)) is not None:
        return x
    for half, erfc in (op.inputs, op.inputs[::-1]):
        if erfc.op.type != "Erfc":
            continue
        scaled = _times_const(ctx, half)
        inner = _times_const(ctx, erfc.op.inputs[0])
        if scaled is None or inner is None or abs(scaled[1] - 0.5) > 1e-7:
            continue
        z, c = inner
        if abs(c + _INV_SQRT2) < 1e-7 and z.name == scaled[0].name:
            return z
        if abs(c - _INV_SQRT2) < 1e-7 and z.op.type == "Neg" and z.op.inputs[0].name == scaled[0].name:
            return scaled[0]
    return None


@tf_op("Mul")
def mul(ctx: Context, op: Any) -> None:
    x = gelu_input(ctx, op)
    if x is None:
        binary(ctx, op, "mul")
        return
    v = ctx.val(x)
    out = ctx.emit("gelu", op.name, [v.ir], ctx.graph.shape(v.ir), {"approximate": "none"},
                   source_op="Gelu(Mul+Erfc)")
    ctx.set(op.outputs[0], out, v.perm)


@tf_op("Erfc")
def erfc(ctx: Context, op: Any) -> None:
    """Only as part of a GELU: the Mul that consumes it emits the IR gelu (dead nodes are pruned)."""
    users = op.outputs[0].consumers()
    if not users or not all(gelu_input(ctx, u) is not None for u in users):
        unary(ctx, op, "erfc")  # a plain erfc


@tf_op("Pow")
def pow_(ctx: Context, op: Any) -> None:
    """x ** c: the constant exponents graphs use (tanh-GELU's x^3, norms' x^2 and x^0.5) as the ops
    they stand for, any other exponent as the IR pow."""
    c = _scalar(ctx, op.inputs[1])
    simple = {2.0: "square", 0.5: "sqrt", -0.5: "rsqrt"}
    if c is None or (c not in simple and c not in (1.0, 3.0)):
        binary(ctx, op, "pow")  # any other exponent: the IR pow
        return
    v = ctx.val(op.inputs[0])
    shape = ctx.graph.shape(v.ir)
    if c == 1.0:
        ctx.set(op.outputs[0], v.ir, v.perm)
        return
    if c == 3.0:
        sq = ctx.emit("square", f"{op.name}/square", [v.ir], shape, source_op=op.type)
        out = ctx.emit("mul", op.name, [v.ir, sq], shape, source_op=op.type)
    else:
        out = ctx.emit(simple[c], op.name, [v.ir], shape, source_op=op.type)
    ctx.set(op.outputs[0], out, v.perm)




@tf_op("Div")
def div(ctx: Context, op: Any) -> None:
    """TF's Div is C division: a true quotient on floats, rounding toward zero on integers."""
    binary(ctx, op, "div" if tf_dtype(op.outputs[0]).startswith("float") else "truncate_div")


@tf_op("ZerosLike", "OnesLike")
def zeros_ones_like(ctx: Context, op: Any) -> None:
    """A constant: the shape is static."""
    shape = ctx.shape(op.outputs[0])
    dtype = np.dtype(tf_dtype(op.outputs[0]))
    value = (np.zeros if op.type == "ZerosLike" else np.ones)(shape, dtype)
    out = ctx.emit("const", op.name, [], shape, params={"value": value}, source_op=op.type, out_dtype=dtype.name)
    ctx.set(op.outputs[0], out)


@tf_op("Cast")
def cast(ctx: Context, op: Any) -> None:
    src, dst = (str(op.get_attr(a).name) for a in ("SrcT", "DstT"))
    v = ctx.val(op.inputs[0])
    if src == dst:
        ctx.set(op.outputs[0], v.ir, v.perm)
        return
    if dst not in IR_DTYPES or src not in IR_DTYPES:
        raise NotConvertible(f"cast {src} -> {dst}: the converted graph holds only {', '.join(IR_DTYPES)} tensors")
    out = ctx.emit("cast", op.name, [v.ir], ctx.graph.shape(v.ir), {"dtype": dst}, source_op=op.type, out_dtype=dst)
    ctx.set(op.outputs[0], out, v.perm)


@tf_op("ClipByValue")
def clip_by_value(ctx: Context, op: Any) -> None:
    """Scalar constant bounds: the IR clip; others: min(max(...)) the way TF computes it."""
    lo, hi = (_scalar(ctx, t) for t in op.inputs[1:3])
    if lo is not None and hi is not None and tf_dtype(op.outputs[0]) == "float32":
        unary(ctx, op, "clip", {"min": lo, "max": hi})
        return
    names, perm = broadcast_inputs(ctx, op, list(op.inputs[:3]))
    out_shape = permute_shape(ctx.shape(op.outputs[0]), perm)
    upper = ctx.emit("minimum", f"{op.name}/upper", [names[0], names[2]], out_shape, source_op=op.type)
    out = ctx.emit("maximum", op.name, [upper, names[1]], out_shape, source_op=op.type)
    ctx.set(op.outputs[0], out, perm)


@tf_op("Select", "SelectV2")
def select(ctx: Context, op: Any) -> None:
    """SelectV2 broadcasts like numpy; Select's vector condition picks rows (first axis) of x."""
    cond, a, b = op.inputs[:3]
    rank = len(ctx.shape(op.outputs[0]))
    if op.type == "Select" and len(ctx.shape(cond)) == 1 and rank > 1:
        rows = (ctx.shape(cond)[0],) + (1,) * (rank - 1)
        column = ctx.emit("reshape", f"{op.name}/rows", [ctx.tf_order(cond)], rows, {"shape": rows},
                          source_op=op.type)
        names, perm = broadcast_inputs(ctx, op, [a, b])
        if perm is not None:
            column = ctx.emit("transpose", f"{op.name}/rows_t", [column], permute_shape(rows, perm),
                              {"perm": tuple(perm)}, source_op="(layout)")
        names = [column, *names]
    else:
        names, perm = broadcast_inputs(ctx, op, [cond, a, b])
    out_shape = permute_shape(ctx.shape(op.outputs[0]), perm)
    out = ctx.emit("select", op.name, names, out_shape, source_op=op.type, out_dtype=tf_dtype(op.outputs[0]))
    ctx.set(op.outputs[0], out, perm)


# TF op -> (IR op applied to y first or None, IR op of x and y, which input's zero makes the result 0):
# TF's Xlogy, Xlog1py, Xdivy and MulNoNan, exactly where(that input == 0, 0, x op y)
ZERO_GUARDED = {"Xlogy": ("log", "mul", 0), "Xlog1py": ("log1p", "mul", 0), "Xdivy": (None, "div", 0),
                "MulNoNan": (None, "mul", 1)}


@tf_op(*ZERO_GUARDED)
def zero_guarded(ctx: Context, op: Any) -> None:
    inner, combine, guard = ZERO_GUARDED[op.type]
    names, perm = broadcast_inputs(ctx, op, list(op.inputs[:2]))
    out_shape = permute_shape(ctx.shape(op.outputs[0]), perm)
    dtype = tf_dtype(op.outputs[0])
    x, y = names
    if inner is not None:
        y = ctx.emit(inner, f"{op.name}/{inner}", [y], ctx.graph.shape(y), source_op=op.type)
    value = ctx.emit(combine, f"{op.name}/{combine}", [x, y], out_shape, source_op=op.type)
    zero = ctx.emit("const", f"{op.name}/zero", [], (), params={"value": np.zeros((), dtype)}, source_op=op.type,
                    out_dtype=dtype)
    is_zero = ctx.emit("equal", f"{op.name}/is_zero", [names[guard], zero], ctx.graph.shape(names[guard]),
                       source_op=op.type, out_dtype="bool")
    out = ctx.emit("select", op.name, [is_zero, zero, value], out_shape, source_op=op.type, out_dtype=dtype)
    ctx.set(op.outputs[0], out, perm)


@tf_op("AccumulateNV2")
def accumulate_n(ctx: Context, op: Any) -> None:
    """tf.math.accumulate_n: AddN's sum (its `shape` attr only checks the inputs)."""
    add_n(ctx, op)


@tf_op("ApproximateEqual")
def approximate_equal(ctx: Context, op: Any) -> None:
    """|x - y| <= tolerance: TF's kernel (its doc says <, its kernel and results say <=); |d| as
    maximum(d, -d), which every target has."""
    names, perm = broadcast_inputs(ctx, op, list(op.inputs[:2]))
    shape = permute_shape(ctx.shape(op.outputs[0]), perm)
    dtype = tf_dtype(op.inputs[0])
    diff = ctx.emit("sub", f"{op.name}/diff", names, shape, source_op=op.type)
    neg = ctx.emit("neg", f"{op.name}/neg", [diff], shape, source_op=op.type)
    size = ctx.emit("maximum", f"{op.name}/abs", [diff, neg], shape, source_op=op.type)
    tolerance = ctx.emit("const", f"{op.name}/tolerance", [], (), source_op=op.type, out_dtype=dtype,
                         params={"value": np.asarray(op.get_attr("tolerance"), dtype)})
    out = ctx.emit("less_equal", op.name, [size, tolerance], shape, source_op=op.type, out_dtype="bool")
    ctx.set(op.outputs[0], out, perm)


@tf_op("Bucketize")
def bucketize(ctx: Context, op: Any) -> None:
    """The bucket of x: how many boundaries are <= x (TF's upper_bound), as a sum of int32 comparisons.
    TF compares an integer x with the float boundaries in float32, so integers are cast first."""
    v = ctx.val(op.inputs[0])
    shape = ctx.graph.shape(v.ir)
    x = v.ir
    if tf_dtype(op.inputs[0]) != "float32":
        x = ctx.emit("cast", f"{op.name}/float", [x], shape, {"dtype": "float32"}, source_op=op.type,
                     out_dtype="float32")
    boundaries = [float(b) for b in op.get_attr("boundaries")]
    count = None
    for i, b in enumerate(boundaries):
        last = i == len(boundaries) - 1
        edge = ctx.emit("const", f"{op.name}/boundary{i}", [], (), params={"value": np.float32(b)},
                        source_op=op.type, out_dtype="float32")
        at_or_past = ctx.emit("greater_equal", f"{op.name}/ge{i}", [x, edge], shape, source_op=op.type,
                              out_dtype="bool")
        step = ctx.emit("cast", op.name if last and count is None else f"{op.name}/step{i}", [at_or_past], shape,
                        {"dtype": "int32"}, source_op=op.type, out_dtype="int32")
        count = step if count is None else ctx.emit("add", op.name if last else f"{op.name}/add{i}", [count, step],
                                                    shape, source_op=op.type, out_dtype="int32")
    if count is None:  # no boundaries: every value is in bucket 0
        count = ctx.emit("const", op.name, [], shape, params={"value": np.zeros(shape, np.int32)}, source_op=op.type,
                         out_dtype="int32")
    ctx.set(op.outputs[0], count, v.perm)
# ---- BERT's GELU, x * 0.5 * (1.0 + erf(x / sqrt(2))) ----------------------------


def _erf_argument(ctx: Context, t: Any) -> Any | None:
    """x when t = x / sqrt(2) or x * (1 / sqrt(2))."""
    if t.op.type == "RealDiv" and _scalar(ctx, t.op.inputs[1]) is not None:
        if abs(_scalar(ctx, t.op.inputs[1]) - 2 ** 0.5) < 1e-6:
            return t.op.inputs[0]
        return None
    scaled = _times_const(ctx, t)
    return scaled[0] if scaled is not None and abs(scaled[1] - _INV_SQRT2) < 1e-7 else None


def _one_plus_erf(ctx: Context, t: Any) -> Any | None:
    """x when t = 1 + erf(x / sqrt(2)) (either operand order)."""
    if t.op.type not in ("Add", "AddV2"):
        return None
    for one, erf in (t.op.inputs, t.op.inputs[::-1]):
        if _scalar(ctx, one) == 1.0 and erf.op.type == "Erf":
            return _erf_argument(ctx, erf.op.inputs[0])
    return None


def erf_gelu_input(ctx: Context, op: Any) -> Any | None:
    """x if `op` (a Mul) is (x * 0.5) * (1 + erf(x / sqrt(2))), else None."""
    if op.type != "Mul" or len(op.inputs) != 2:  # an erf read by anything else (an Identity) is no GELU
        return None
    for half, cdf in (op.inputs, op.inputs[::-1]):
        x = _one_plus_erf(ctx, cdf)
        scaled = _times_const(ctx, half)
        if x is not None and scaled is not None and abs(scaled[1] - 0.5) < 1e-7 and scaled[0].name == x.name:
            return x
    return None


@tf_op("Erf")
def erf(ctx: Context, op: Any) -> None:
    """Inside a GELU the Mul that consumes (1 + erf) emits the IR gelu: the erf's argument stands in
    for its value so that the (1 + erf) Add converts; that Add is dead and pruned. Any other Erf is
    the IR erf."""
    adds = op.outputs[0].consumers()
    if adds and all(a.outputs[0].consumers() and all(erf_gelu_input(ctx, m) is not None
                                                     for m in a.outputs[0].consumers()) for a in adds):
        v = ctx.val(op.inputs[0])
        ctx.set(op.outputs[0], v.ir, v.perm)
        return
    unary(ctx, op, "erf")
