"""The state a TF op handler works with: TF tensor -> IR tensor (with its layout), constants,
static shapes, and helpers that insert the layout changes an op needs.

Layout bookkeeping: every converted TF tensor has an IR tensor and a `perm` such that
``ir == numpy.transpose(tf, perm)`` (perm None = same order). A rank-4 NHWC tensor is kept in the
IR as NCHW, i.e. perm (0, 3, 1, 2). Handlers ask for the order they need (`ctx.ir(t, perm)`)
and a transpose is inserted only when the tensor is not already in it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tf_convert.convert import ir
from tf_convert.convert.errors import UsageError
from tf_convert.convert.ir.dtypes import wide_dtype_problem
from tf_convert.convert.ir.lazy import contiguous, is_lazy
from tf_convert.convert.ir.shapes import RUN_TIME
from tf_convert.parsers.common.layout import TO_NCHW as NHWC_TO_NCHW

NDHWC_TO_NCDHW = (0, 4, 1, 2, 3)
_CHANNELS_FIRST = {4: NHWC_TO_NCHW, 5: NDHWC_TO_NCDHW}  # rank -> the IR perm of a channels-last tensor
Perm = tuple[int, ...] | None


class NotConvertible(Exception):
    """Raised by a handler for a node it cannot express in the IR; the message is the hint."""


@dataclass(frozen=True)
class Val:
    ir: str
    perm: Perm = None


def attr(op: Any, name: str, default: Any = None) -> Any:
    """A TF node attribute (strings decoded), or `default` where the node does not set it."""
    if name not in op.node_def.attr:
        return default
    value = op.get_attr(name)
    return value.decode() if isinstance(value, bytes) else value


def show_shape(dims) -> str:
    """(1, ?, ?, 3) for a partly known shape."""
    if dims is None:
        return "(unknown rank)"
    return "(" + ", ".join("?" if d is None else str(d) for d in dims) + ")"


def identity(perm: Perm, rank: int) -> tuple[int, ...]:
    return tuple(perm) if perm is not None else tuple(range(rank))


def is_identity(perm: Perm) -> bool:
    return perm is None or tuple(perm) == tuple(range(len(perm)))


def fmt_perm(data_format: str, rank: int = 4) -> Perm:
    """The IR perm for a rank-4 (NHWC) or rank-5 (NDHWC) tensor an op reads in `data_format`: a
    channels-last tensor is kept channels-first in the IR."""
    fmt = data_format.upper()
    return _CHANNELS_FIRST.get(rank) if fmt.startswith("N") and fmt.endswith("C") else None


def ir_axis(axis: int, rank: int, perm: Perm) -> int:
    """Where TF axis `axis` sits in the IR tensor."""
    axis = axis % rank if rank else 0
    return identity(perm, rank).index(axis)


def permute_shape(shape: Sequence[int], perm: Perm) -> tuple[int, ...]:
    return tuple(int(shape[p]) for p in identity(perm, len(shape)))


class Context:
    def __init__(self, graph: ir.Graph, consts: dict[str, np.ndarray], input_desc: str):
        self.graph = graph
        self.consts = consts
        self.vals: dict[str, Val] = {}
        self._const_cache: dict[tuple, str] = {}
        self._input_desc = input_desc  # for "pass --input-shape" messages
        # TF tensor name -> its data-dependent length (parsers/tensorflow/lengths.py): the IR holds it padded
        self.lengths: dict[str, Any] = {}
        # TF complex tensor name -> its real and imaginary IR tensors (parsers/tensorflow/complex_values.py)
        self.complex: dict[str, Any] = {}
        # set by the parser: placeholder tensor -> the input's name, whether every input's shape is known (an
        # unknown size is then one that follows a run-time value), and the op being converted
        self.input_names: dict[str, str] = {}
        self.sizes_given = False
        self.current: Any = None
        # set by the parser: the graph's function library, and fn(fdef, bindings, name) -> the function as a
        # nested IR graph (subgraphs.function_graph; a run-time loop's or branch's functions, ops/control.py)
        self.library: Any = None
        self.build_function: Any = None

    # ---- lookups ---------------------------------------------------------------------------
    def is_const(self, t: Any) -> bool:
        return t.name in self.consts

    def const(self, t: Any) -> np.ndarray:
        if t.name not in self.consts:
            op = self.current
            if op is not None and not all(o.shape.is_fully_defined() for o in op.outputs):
                raise self.shape_follows(op, t, "input")
            raise NotConvertible(f"its input '{self.shown(t)}' is computed at run time (from the model inputs) and "
                                 "this op takes it only as a constant: make it one (e.g. --set NAME=VALUE for a "
                                 "placeholder)")
        return self.consts[t.name]

    def shown(self, t: Any) -> str:
        """The tensor's name as the user knows it (a model input by its own name)."""
        return self.input_names.get(t.name, t.name)

    def shape_follows(self, op: Any, t: Any, what: str) -> NotConvertible:
        """The refusal for an op whose output shape would follow the run-time value of `t` (its `what`)."""
        return NotConvertible(
            f"the output shape of {op.type} '{op.name}' follows the run-time value of its {what} '{self.shown(t)}'; "
            "the converted graph holds static shapes only, which no target can follow: make that value a constant "
            "(e.g. --set NAME=VALUE for a placeholder)")

    def shape(self, t: Any) -> tuple[int, ...]:
        """Static TF shape; unknown dims mean the user must give --input-shape."""
        dims = t.shape.as_list() if t.shape.rank is not None else None
        if dims and dims[0] is None and t.name in self.lengths:  # held padded to its longest
            dims[0] = self.lengths[t.name].longest
        if dims is not None and None in dims and self.follows_run_time(t):
            return tuple(RUN_TIME if d is None else int(d) for d in dims)
        if dims is None or any(d is None for d in dims):
            op = t.op
            if self.sizes_given:  # no input size is missing: the size follows a value the graph computes
                late = [i for i in op.inputs if not self.is_const(i)]
                # the size-setting parameters come after the data (Reshape's shape, OneHot's depth)
                named = [i for i in late if i.dtype.name.startswith(("int", "uint"))] or late
                if named:
                    raise self.shape_follows(op, named[-1], "input")
            pad = op.get_attr("padding").decode() if "padding" in op.node_def.attr else ""
            why = f", {pad} padding" if pad else ""
            shown = "of unknown rank" if dims is None else show_shape(dims)
            raise self.needs_input_shape(f"node '{op.name}' ({op.type}{why}) has an unknown static shape "
                                         f"{shown}: the spatial input size is needed")
        return tuple(int(d) for d in dims)

    def run_time_sizes(self, t: Any) -> tuple[int, ...]:
        """The IR shape of converted TF tensor `t` when a size of it follows a run-time value, else ()."""
        v = self.vals.get(t.name)
        if v is None or v.ir in self.graph.inputs:  # an input's unknown size is one to give (--input-shape)
            return ()
        shape = self.graph.shape(v.ir)
        return shape if RUN_TIME in shape else ()

    def reads_run_time(self, op: Any) -> bool:
        """Whether a size of one of `op`'s inputs follows a run-time value."""
        return any(self.run_time_sizes(i) for i in op.inputs)

    def follows_run_time(self, t: Any) -> bool:
        """Whether TF's unknown sizes of `t` follow run-time values: `t` holds such a size, or it is an output
        of the op being converted, which reads one (the parser lets only ops that can follow them that far)."""
        if self.run_time_sizes(t):
            return True
        return self.current is not None and t.op.name == self.current.name and self.reads_run_time(self.current)

    def needs_input_shape(self, why: str) -> UsageError:
        """The error asking for --input-shape, after `why` (which names the node)."""
        return UsageError(f"{why} ({self._input_desc}); pass --input-shape, e.g. --input-shape 1,224,224,3")

    def val(self, t: Any) -> Val:
        if t.name in self.vals:
            return self.vals[t.name]
        if t.name in self.consts:
            return Val(self.const_node(t, None, len(self.consts[t.name].shape)))
        raise NotConvertible(f"tensor {t.name} has no converted value (output {t.value_index} of {t.op.type})")

    # ---- naming / emitting -----------------------------------------------------------------
    def name(self, base: str) -> str:
        return self.graph.unique_name(base.replace(":", "_"))

    def emit(
        self,
        op: str,
        base: str,
        inputs: list[str],
        out_shape: Sequence[int],
        attrs: dict | None = None,
        params: dict | None = None,
        source_op: str = "",
        out_dtype: str | None = None,
    ) -> str:
        """Append an IR node; its output has `out_dtype`, by default its first input's (float32 for none). A
        wide dtype (float64, int16...) goes only through casts and copies (convert.ir.dtypes)."""
        dtypes = [(t, self.graph.tensors[t].dtype) for t in inputs if t in self.graph.tensors]
        first = dtypes[0][1] if dtypes else "float32"
        problem = wide_dtype_problem(op, dtypes, out_dtype or first)
        if problem is not None:
            raise NotConvertible(problem)
        return self.graph.add_node(op, self.name(base), inputs, out_shape, attrs, params, source_op, out_dtype)

    def set(self, t: Any, ir_name: str, perm: Perm = None) -> None:
        self.vals[t.name] = Val(ir_name, None if is_identity(perm) else tuple(perm))

    def const_node(self, t: Any, perm: Perm, rank: int) -> str:
        """An IR const for TF constant `t`, expanded to `rank` (leading 1s) and transposed by perm."""
        key = (t.name, identity(perm, rank) if rank else (), rank)
        if key not in self._const_cache:
            value = self.consts[t.name]  # a checkpoint weight stays lazy: read when it is written
            value = value if is_lazy(value) else np.asarray(value)
            value = value.reshape((1,) * (rank - value.ndim) + value.shape) if value.ndim < rank else value
            if rank and not is_identity(perm):
                value = value.transpose(perm)
            value = contiguous(value)
            # integer and bool constants keep their type, float64 and float16 ones too (the ops computing in
            # them read them, convert.ir.dtypes); other float weights are the IR's float32
            wide_float = value.dtype.name in ("float64", "float16")
            dtype = value.dtype.name if value.dtype.kind in "iub" or wide_float else "float32"
            name = self.emit("const", t.op.name, [], value.shape, params={"value": value}, source_op="Const",
                             out_dtype=dtype)
            self._const_cache[key] = name
        return self._const_cache[key]

    # ---- layout ----------------------------------------------------------------------------
    def ir(self, t: Any, perm: Perm, rank: int | None = None) -> str:
        """The IR tensor of `t` in order `perm` (relative to TF's axis order)."""
        if t.name in self.consts and t.name not in self.vals:
            return self.const_node(t, perm, rank if rank is not None else np.ndim(self.consts[t.name]))
        v = self.val(t)
        tf_rank = len(self.graph.shape(v.ir))
        want = identity(perm, tf_rank)
        have = identity(v.perm, tf_rank)
        if want == have:
            return v.ir
        # ir_have = tf.T(have) -> tf = ir_have.T(inv(have)) -> ir_want = ir_have.T(inv(have)[want])
        inv = tuple(int(i) for i in np.argsort(have))
        step = tuple(inv[w] for w in want)
        shape = permute_shape(self.graph.shape(v.ir), step)
        return self.emit("transpose", f"{t.op.name}/to_{'_'.join(map(str, want))}", [v.ir], shape,
                         {"perm": step}, source_op="(layout)")

    def tf_order(self, t: Any) -> str:
        """The IR tensor of `t` with TF's own axis order (before a reshape, say)."""
        return self.ir(t, None)

    def nchw(self, t: Any, data_format: str) -> str:
        return self.ir(t, fmt_perm(data_format, len(self.shape(t))))
