"""Which op names TensorFlow itself defines (a node of any other op cannot run in TF), and their
output arguments, from tf_ops.txt: TF's op registry written out by scripts/vendor_tf_ops.py."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

TABLE_PATH = Path(__file__).with_name("tf_ops.txt")


@lru_cache(maxsize=1)
def _table() -> dict[str, tuple[tuple[str, str, str], ...]]:
    """Op name -> its output arguments as (name, number_attr, type_list_attr)."""
    table = {}
    for line in TABLE_PATH.read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        name, *args = line.split()
        table[name] = tuple(_arg(a) for a in args)
    return table


def _arg(text: str) -> tuple[str, str, str]:
    if "*" in text:
        name, number_attr = text.split("*")
        return name, number_attr, ""
    if "+" in text:
        name, type_list_attr = text.split("+")
        return name, "", type_list_attr
    return text, "", ""


def is_known_op(name: str) -> bool:
    return name in _table()


def output_args(name: str) -> list[tuple[str, str, str]] | None:
    """The output arguments of op `name` as (arg name, number_attr, type_list_attr) — "" where the
    argument is a single tensor — in OpDef order; None for an op TF does not define. A FunctionDef's
    node refers to output `i` of argument `arg` as "node:arg:i"; this is what flattens it."""
    args = _table().get(name)
    return None if args is None else list(args)


# Defaults of the attrs the parser reads that a FunctionDef's nodes may leave out (TF's import fills
# them in from the op registry), as tf.Operation.get_attr returns them. A subset of TF's OpDefs.
_FMT = {"data_format": b"NHWC"}
_WINDOW = {**_FMT, "dilations": [1, 1, 1, 1], "explicit_paddings": []}
_REDUCE = {"keep_dims": False}
_RESIZE = {"align_corners": False, "half_pixel_centers": False}
_BATCH_NORM = {**_FMT, "epsilon": 0.0001, "is_training": True, "exponential_avg_factor": 1.0}
_ATTR_DEFAULTS: dict[str, dict] = {
    "MatMul": {"transpose_a": False, "transpose_b": False},
    **{op: {"adj_x": False, "adj_y": False} for op in ("BatchMatMul", "BatchMatMulV2", "BatchMatMulV3")},
    **{op: _REDUCE for op in ("Mean", "Sum", "Max", "Min", "Prod", "All", "Any")},
    "StridedSlice": {m: 0 for m in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                                    "shrink_axis_mask")},
    "Pack": {"axis": 0}, "Unpack": {"axis": 0}, "Squeeze": {"squeeze_dims": []},
    **{op: _WINDOW for op in ("Conv2D", "DepthwiseConv2dNative", "Conv2DBackpropInput")},
    **{op: _FMT for op in ("MaxPool", "AvgPool", "BiasAdd", "DepthToSpace", "SpaceToDepth")},
    **{op: _BATCH_NORM for op in ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")},
    **{op: _RESIZE for op in ("ResizeBilinear", "ResizeNearestNeighbor", "ResizeBicubic")},
    "LeakyRelu": {"alpha": 0.2}, "Cast": {"Truncate": False},
}


def attr_defaults(name: str) -> dict:
    """Op `name`'s defaults for attrs a NodeDef may leave out, as tf.Operation.get_attr returns them
    ({} for other ops)."""
    return _ATTR_DEFAULTS.get(name, {})
