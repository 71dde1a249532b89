"""tf_keras TF-op layers: `TFOpLambda` (a TF function applied to keras tensors: `x + y`, `tf.nn.relu6(x)`,
`tf.reshape(x, ...)`) and `SlicingOpLambda` (`x[:, 1:]`).

Each call becomes a one-op TF graph (the op the function runs, placeholders for the keras tensors, Const
nodes for the Python values) that the TF graph parser's own handler converts into the Keras graph. So
what an op computes is stated once, in the op catalog and the TF handlers; this module only knows
which TF op a function runs and which of its Python parameters are the op's inputs and attributes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tf_convert.convert.errors import UnsupportedError
from tf_convert.parsers.tensorflow import ops as _tf_handlers  # noqa: F401 - registers the TF handlers
from tf_convert.parsers.tensorflow.context import Context, NotConvertible
from tf_convert.parsers.tensorflow.protos import AttrValue, GraphDef
from tf_convert.parsers.tensorflow.table import TABLE as TF_TABLE
from tf_convert.parsers.tensorflow.tensors import dtype_enum, to_proto
from tf_convert.parsers.tensorflow.tfgraph import Graph, ShapeError, TensorShape

from ..common import layout
from .call import Call, TensorRef
from .table import TABLE

INDEX = "index"  # a parameter TF takes as an int32 tensor (shape, perm, axis, size, ...)


@dataclass(frozen=True)
class Fn:
    """TF function -> op. `inputs`: the Python parameters that are the op's inputs, in its input order
    (the first one is the call's first argument; `*name` is a list of tensors, attr N); `index`: those
    of them given as int32; `attrs`: TF attr -> (Python parameter, default, convert) or a fixed value;
    `defaults`: values of optional input parameters."""

    op: str
    inputs: tuple[str, ...]
    index: tuple[str, ...] = ()
    attrs: dict[str, Any] = field(default_factory=dict)
    defaults: dict[str, Any] = field(default_factory=dict)
    first: str = ""  # the Python name of the first argument, where it is not the op's first input


def _axes(axis: Any) -> list[int]:
    return [] if axis is None else [axis] if isinstance(axis, int) else list(axis)


def _binary(op: str) -> Fn:
    return Fn(op, ("x", "y"))


def _unary(op: str, param: str = "x") -> Fn:
    return Fn(op, (param,))


def _reduce(op: str) -> Fn:
    return Fn(op, ("input_tensor", "axis"), index=("axis",), attrs={"keep_dims": ("keepdims", False, bool)},
              defaults={"axis": None})


# tf_keras names a function by its public TF path without `tf.` (tf_keras.layers.core.tf_op_layer)
FUNCTIONS: dict[str, Fn] = {
    **{name: _binary("AddV2") for name in ("__operators__.add", "math.add")},
    "math.subtract": _binary("Sub"),
    "math.multiply": _binary("Mul"),
    **{name: _binary("RealDiv") for name in ("math.truediv", "math.divide")},
    "math.maximum": _binary("Maximum"),
    "math.minimum": _binary("Minimum"),
    "math.pow": _binary("Pow"),
    "math.squared_difference": _binary("SquaredDifference"),
    "math.negative": _unary("Neg"),
    "math.abs": _unary("Abs"),
    "math.exp": _unary("Exp"),
    "math.log": _unary("Log"),
    "math.sqrt": _unary("Sqrt"),
    "math.rsqrt": _unary("Rsqrt"),
    "math.square": _unary("Square"),
    "math.sigmoid": _unary("Sigmoid"),
    "math.tanh": _unary("Tanh"),
    "nn.relu": _unary("Relu", "features"),
    "nn.relu6": _unary("Relu6", "features"),
    "nn.elu": _unary("Elu", "features"),
    "nn.selu": _unary("Selu", "features"),
    "math.softplus": _unary("Softplus", "features"),
    "nn.leaky_relu": Fn("LeakyRelu", ("features",), attrs={"alpha": ("alpha", 0.2, float)}),
    "identity": _unary("Identity", "input"),
    "reshape": Fn("Reshape", ("tensor", "shape"), index=("shape",)),
    **{name: Fn("Transpose", ("a", "perm"), index=("perm",)) for name in ("transpose", "compat.v1.transpose")},
    "concat": Fn("ConcatV2", ("*values", "axis"), index=("axis",)),
    "stack": Fn("Pack", ("*values",), attrs={"axis": ("axis", 0, int)}),
    "expand_dims": Fn("ExpandDims", ("input", "axis"), index=("axis",)),
    **{name: Fn("Squeeze", ("input",), attrs={"squeeze_dims": ("axis", [], _axes)})
       for name in ("squeeze", "compat.v1.squeeze")},
    "math.reduce_mean": _reduce("Mean"),
    "math.reduce_sum": _reduce("Sum"),
    "math.reduce_max": _reduce("Max"),
    "math.reduce_min": _reduce("Min"),
    "nn.bias_add": Fn("BiasAdd", ("value", "bias")),
    **{name: Fn("BatchMatMulV2", ("a", "b"), attrs={"adj_x": ("transpose_a", False, bool),
                                                  "adj_y": ("transpose_b", False, bool)})
       for name in ("linalg.matmul", "matmul")},
    "clip_by_value": Fn("ClipByValue", ("t", "clip_value_min", "clip_value_max")),
    "tile": Fn("Tile", ("input", "multiples"), index=("multiples",)),
}


def _softmax(bound: dict[str, Any]) -> Fn:
    axis = bound.get("axis", -1)
    if axis not in (-1, None):
        raise ValueError(f"softmax over axis {axis} (TF's Softmax is over the last axis)")
    return _unary("Softmax", "logits")


def _resize(bound: dict[str, Any]) -> Fn:
    method = str(bound.get("method", "bilinear")).lower()
    if bound.get("antialias") or bound.get("preserve_aspect_ratio"):
        raise ValueError("image.resize with antialias or preserve_aspect_ratio")
    ops = {"bilinear": "ResizeBilinear", "nearest": "ResizeNearestNeighbor"}
    if method not in ops:
        raise ValueError(f"image.resize method {method!r}")
    return Fn(ops[method], ("images", "size"), index=("size",),
              attrs={"half_pixel_centers": True, "align_corners": False})


def _split(bound: dict[str, Any]) -> Fn:
    splits = bound.get("num_or_size_splits")
    if isinstance(splits, int):
        return Fn("Split", ("axis", "value"), index=("axis",), attrs={"num_split": splits},
                  defaults={"axis": 0}, first="value")
    return Fn("SplitV", ("value", "num_or_size_splits", "axis"), index=("num_or_size_splits", "axis"),
              attrs={"num_split": len(splits or []), "Tlen": np.int32}, defaults={"axis": 0})


def _pad(bound: dict[str, Any]) -> Fn:
    mode = str(bound.get("mode", "CONSTANT")).upper()
    if mode == "CONSTANT":
        return Fn("PadV2", ("tensor", "paddings", "constant_values"), index=("paddings",),
                  defaults={"constant_values": 0.0})
    return Fn("MirrorPad", ("tensor", "paddings"), index=("paddings",), attrs={"mode": mode})


# functions whose op depends on their arguments
CHOSEN: dict[str, Callable[[dict[str, Any]], Fn]] = {
    "nn.softmax": _softmax,
    "image.resize": _resize,
    "split": _split,
    **{name: _pad for name in ("pad", "compat.v1.pad")},
}


@TABLE.register("TFOpLambda")
def tf_op_lambda(call: Call) -> list[str]:
    function = str(call.config.get("function"))
    first = call.args[0] if call.args else None
    kwargs = dict(call.kwargs)
    kwargs.pop("name", None)
    try:
        fn = FUNCTIONS.get(function) or (CHOSEN[function](kwargs) if function in CHOSEN else None)
    except ValueError as err:
        raise call.unsupported(f"tf.{function}: {err} has no exact TF op") from None
    if fn is None:
        raise call.unsupported(f"TF function tf.{function} (a TF-op layer) has no converter; "
                               "export a SavedModel (tf_keras model.save(path, save_format='tf')) to convert its graph")
    bound = {fn.first or fn.inputs[0].lstrip("*"): first, **kwargs}
    return MiniGraph(call).run(fn, bound)


@TABLE.register("SlicingOpLambda")
def slicing_op_lambda(call: Call) -> list[str]:
    """`x[spec]` as TF's StridedSlice (masks as tf.Tensor.__getitem__ sets them)."""
    spec = call.kwargs.get("slice_spec", call.args[1] if len(call.args) > 1 else None)
    spec = spec if isinstance(spec, list) else [spec]
    begin, end, strides = [], [], []
    masks = {"begin_mask": 0, "end_mask": 0, "ellipsis_mask": 0, "new_axis_mask": 0, "shrink_axis_mask": 0}
    for i, s in enumerate(spec):
        if isinstance(s, dict) and s.get("class_name") == "__ellipsis__":
            masks["ellipsis_mask"] |= 1 << i
            begin, end, strides = begin + [0], end + [0], strides + [1]
        elif s is None:
            masks["new_axis_mask"] |= 1 << i
            begin, end, strides = begin + [0], end + [0], strides + [1]
        elif isinstance(s, dict) and set(s) <= {"start", "stop", "step"}:
            if any(isinstance(v, TensorRef) for v in s.values()):
                raise call.unsupported("a slice bound that is a tensor")
            start, stop, step = s.get("start"), s.get("stop"), s.get("step")
            if start is None:
                masks["begin_mask"] |= 1 << i
            if stop is None:
                masks["end_mask"] |= 1 << i
            begin.append(int(start or 0))
            end.append(int(stop or 0))
            strides.append(int(1 if step is None else step))
        elif isinstance(s, int) and not isinstance(s, bool):
            masks["shrink_axis_mask"] |= 1 << i
            begin, end, strides = begin + [s], end + [s + 1], strides + [1]
        else:
            raise call.unsupported(f"slice element {s!r} (only slices, ints, ... and None)")
    fn = Fn("StridedSlice", ("input", "begin", "end", "strides"), index=("begin", "end", "strides"),
            attrs={"Index": np.int32, **masks})
    return MiniGraph(call).run(fn, {"input": call.args[0], "begin": begin, "end": end, "strides": strides})


class MiniGraph:
    """One TF op over the call's tensors, converted by the TF parser's handler into the call's IR graph."""

    def __init__(self, call: Call):
        self.call = call
        self.graph_def = GraphDef()
        self.placeholders: dict[str, str] = {}  # placeholder node -> IR tensor
        self.dtype: Any = None

    def run(self, fn: Fn, bound: dict[str, Any]) -> list[str]:
        call = self.call
        tensors = [t for name in fn.inputs for t in _as_list(bound.get(name.lstrip("*")))
                   if isinstance(t, TensorRef)]
        if not tensors:
            raise call.unsupported("a TF-op layer without a keras tensor input")
        self.dtype = np.dtype(call.graph.tensors[tensors[0].name].dtype)
        node = self.graph_def.node.add()
        node.name, node.op = call.name, fn.op
        for name in fn.inputs:
            key = name.lstrip("*")
            value = bound.get(key, fn.defaults.get(key))
            if key not in bound and key not in fn.defaults:
                raise call.unsupported(f"tf.{call.config.get('function')}: argument '{key}' is missing")
            if value is None and key in fn.defaults:
                if fn.op in ("Mean", "Sum", "Max", "Min") and key == "axis":
                    value = list(range(len(call.shape(tensors[0].name))))
                else:
                    continue
            if name.startswith("*"):
                items = _as_list(value)
                node.input.extend(self._input(v, key in fn.index, f"{key}_{i}") for i, v in enumerate(items))
                node.attr["N"].CopyFrom(AttrValue(i=len(items)))
            else:
                node.input.append(self._input(value, key in fn.index, key))
        node.attr["T"].CopyFrom(AttrValue(type=dtype_enum(self.dtype)))
        for attr, how in fn.attrs.items():
            if isinstance(how, tuple):
                param, default, convert = how
                value = convert(bound.get(param, default))
            else:
                value = how
            node.attr[attr].CopyFrom(_attr(value))
        try:
            tfg = Graph(self.graph_def)
        except (ShapeError, ValueError) as err:
            raise call.unsupported(f"tf.{call.config.get('function')}: {err}") from None
        consts = {}
        for op in tfg.get_operations():
            if op.type == "Const":
                consts[op.outputs[0].name] = tfg.evaluator.value(op.outputs[0])
        ctx = Context(call.graph, consts, "the Keras model's input")
        for op in tfg.get_operations():
            if op.type == "Placeholder":
                t = op.outputs[0]
                ctx.set(t, self.placeholders[op.name], layout.TO_NCHW if t.shape.rank == 4 else None)
        op = tfg.get_operation_by_name(call.name)
        try:
            TF_TABLE.get(op.type)(ctx, op)
            return [ctx.ir(t, layout.TO_NCHW if t.shape.rank == 4 else None) for t in op.outputs]
        except NotConvertible as err:
            raise call.unsupported(f"tf.{call.config.get('function')} ({op.type}): {err}") from None
        except UnsupportedError:
            raise

    def _input(self, value: Any, index: bool, key: str) -> str:
        """The GraphDef input for one argument: a placeholder for a tensor, a Const for a value."""
        node = self.graph_def.node.add()
        node.name = f"{self.call.name}/{key}"
        if isinstance(value, TensorRef):
            tensor = self.call.graph.tensors[value.name]
            node.op = "Placeholder"
            node.attr["dtype"].CopyFrom(AttrValue(type=dtype_enum(np.dtype(tensor.dtype))))
            shape = TensorShape(list(layout.keras_shape(tensor.shape)))
            node.attr["shape"].CopyFrom(AttrValue(shape=shape.as_proto()))
            self.placeholders[node.name] = value.name
            return node.name
        array = np.asarray(value, dtype=np.int32 if index else self.dtype)
        node.op = "Const"
        node.attr["dtype"].CopyFrom(AttrValue(type=dtype_enum(array.dtype)))
        node.attr["value"].CopyFrom(AttrValue(tensor=to_proto(array)))
        return node.name


def _as_list(value: Any) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _attr(value: Any) -> Any:
    if isinstance(value, bool):
        return AttrValue(b=value)
    if isinstance(value, int):
        return AttrValue(i=value)
    if isinstance(value, float):
        return AttrValue(f=value)
    if isinstance(value, str):
        return AttrValue(s=value.encode())
    if isinstance(value, type) and issubclass(value, np.generic):
        return AttrValue(type=dtype_enum(np.dtype(value)))
    return AttrValue(list=AttrValue.ListValue(i=[int(v) for v in value]))
