"""The ONNX handlers of the detection family: non-max suppression as ONNX NonMaxSuppression (opset 10+), whose
onnxruntime kernel is TF's: (y1, x1, y2, x2) boxes of either corner order, candidates score > score_threshold,
by score with the lower index first on ties, dropped when IoU > iou_threshold (tests/emitters/test_detection.py
checks it against TF, ties included); and the cut of a data-dependent length (Slice)."""

from __future__ import annotations

import numpy as np

from tf_convert.emitters.base import NodeContext

from .contract import TABLE, Builder, Ctx, Emitted


def _hard_only(ctx: NodeContext) -> str | None:
    if float(ctx.attrs.get("soft_nms_sigma", 0.0)) > 0:
        return ("soft-NMS (soft_nms_sigma > 0): ONNX's NonMaxSuppression only drops boxes, it has no score "
                "decay; convert to PyTorch (exact) or use soft_nms_sigma=0")
    return None


@TABLE.register("non_max_suppression", limit=_hard_only)
def non_max_suppression(ctx: Ctx) -> Emitted:
    from onnx import TensorProto

    b = Builder(ctx, ctx.node)
    limit = int(ctx.attrs["max_output_size"])
    boxes = b.op("Unsqueeze", [b.x(0), b.ints("batch", [0])])  # (1, N, 4)
    scores = b.op("Unsqueeze", [b.x(1), b.ints("batch_class", [0, 1])])  # (1, 1, N)
    picked = b.op("NonMaxSuppression", [boxes, scores, b.ints("limit", [limit]),
                                        b.const("iou", np.float32([ctx.attrs["iou_threshold"]])),
                                        b.const("score", np.float32([ctx.attrs["score_threshold"]]))],
                  center_point_box=0)  # (K, 3): batch, class, box
    index = b.op("Gather", [picked, b.const("box_column", np.int64(2), np.int64)], axis=1)  # (K,) int64
    count = b.op("Shape", [index])  # (1,)
    output = ctx.attrs["output"]
    if output == "count":
        b.op("Cast", [b.op("Reshape", [count, b.ints("scalar", [])])], b.out, to=TensorProto.INT32)
        return b.done()
    values = index if output == "indices" else b.op("Gather", [b.x(1), index], axis=0)
    pads = b.op("Concat", [b.ints("front", [0]), b.op("Sub", [b.ints("limit_1d", [limit]), count])], axis=0)
    if output == "indices":
        b.op("Cast", [b.op("Pad", [values, pads])], b.out, to=TensorProto.INT32)
    else:
        b.op("Pad", [values, pads], b.out)
    return b.done()


@TABLE.register("prefix")
def prefix(ctx: Ctx) -> Emitted:
    b = Builder(ctx, ctx.node)
    end = b.op("Reshape", [b.op("Cast", [b.x(1)], to=7), b.ints("one", [1])])  # int64 (1,)
    b.op("Slice", [b.x(0), b.ints("start", [0]), end, b.ints("axis", [0])], b.out)
    return b.done()


def _positions(b: Builder, tag: str, lo: str, hi: str, extent: int, steps: int) -> str:
    """TF's CropAndResize sample positions along one axis, (n, steps) float32, its order of operations."""
    last = b.const(f"{tag}_last", np.float32(extent - 1))
    if steps == 1:
        mid = b.op("Mul", [b.op("Add", [lo, hi]), b.const(f"{tag}_half", np.float32(0.5))])
        return b.op("Unsqueeze", [b.op("Mul", [mid, last]), b.ints(f"{tag}_col", [1])])
    scale = b.op("Div", [b.op("Mul", [b.op("Sub", [hi, lo]), last]), b.const(f"{tag}_steps", np.float32(steps - 1))])
    start = b.op("Unsqueeze", [b.op("Mul", [lo, last]), b.ints(f"{tag}_col", [1])])
    grid = b.const(f"{tag}_grid", np.arange(steps, dtype=np.float32)[None])
    return b.op("Add", [start, b.op("Mul", [grid, b.op("Unsqueeze", [scale, b.ints(f"{tag}_col2", [1])])])])


@TABLE.register("crop_and_resize")
def crop_and_resize(ctx: Ctx) -> Emitted:
    from onnx import TensorProto

    b = Builder(ctx, ctx.node)
    _, h, w, c = (int(n) for n in ctx.shape(ctx.node.inputs[0]))
    ch, cw = (int(n) for n in ctx.attrs["size"])
    boxes = b.x(1)
    corner = [b.op("Gather", [boxes, b.const(f"corner{k}", np.int64(k), np.int64)], axis=1) for k in range(4)]
    ys = _positions(b, "y", corner[0], corner[2], h, ch)
    xs = _positions(b, "x", corner[1], corner[3], w, cw)
    zero = b.const("zero", np.float32(0))

    def inside(p: str, extent: int, tag: str) -> str:
        return b.op("And", [b.op("Not", [b.op("Less", [p, zero])]),
                            b.op("Not", [b.op("Greater", [p, b.const(f"{tag}_max", np.float32(extent - 1))])])])

    mask = b.op("And", [b.op("Unsqueeze", [inside(ys, h, "y"), b.ints("yx_axes", [2, 3])]),
                        b.op("Unsqueeze", [inside(xs, w, "x"), b.ints("xy_axes", [1, 3])])])  # (n, ch, cw, 1)
    flat = b.op("Reshape", [b.x(0), b.ints("flat", [-1, c])])
    base = b.op("Mul", [b.op("Cast", [b.x(2)], to=TensorProto.INT64), b.const("plane", np.int64(h * w), np.int64)])
    base = b.op("Unsqueeze", [base, b.ints("base_axes", [1, 2])])  # (n, 1, 1)

    def index(p: str, extent: int, axes: list[int], tag: str) -> str:
        clipped = b.op("Clip", [p, zero, b.const(f"{tag}_top", np.float32(extent - 1))])
        return b.op("Unsqueeze", [b.op("Cast", [clipped], to=TensorProto.INT64), b.ints(f"{tag}_axes", axes)])

    def at(y: str, x: str, tag: str) -> str:  # (n, ch, cw, C)
        row = b.op("Mul", [index(y, h, [2], f"{tag}_y"), b.const(f"{tag}_w", np.int64(w), np.int64)])
        return b.op("Gather", [flat, b.op("Add", [b.op("Add", [base, row]), index(x, w, [1], f"{tag}_x")])], axis=0)

    if ctx.attrs["method"] == "nearest":
        half = b.const("half", np.float32(0.5))

        def rounded(p: str) -> str:  # roundf (half away from zero) on positions >= 0; p - floor(p) is exact
            low = b.op("Floor", [p])
            up = b.op("Cast", [b.op("Not", [b.op("Less", [b.op("Sub", [p, low]), half])])], to=TensorProto.FLOAT)
            return b.op("Add", [low, up])

        out = at(rounded(ys), rounded(xs), "near")
    else:
        t, l_, bo, r = b.op("Floor", [ys]), b.op("Floor", [xs]), b.op("Ceil", [ys]), b.op("Ceil", [xs])
        dy = b.op("Unsqueeze", [b.op("Sub", [ys, t]), b.ints("dy_axes", [2, 3])])
        dx = b.op("Unsqueeze", [b.op("Sub", [xs, l_]), b.ints("dx_axes", [1, 3])])
        tl, tr, bl, br = at(t, l_, "tl"), at(t, r, "tr"), at(bo, l_, "bl"), at(bo, r, "br")
        top = b.op("Add", [tl, b.op("Mul", [b.op("Sub", [tr, tl]), dx])])
        bottom = b.op("Add", [bl, b.op("Mul", [b.op("Sub", [br, bl]), dx])])
        out = b.op("Add", [top, b.op("Mul", [b.op("Sub", [bottom, top]), dy])])
    fill = b.const("fill", np.float32(ctx.attrs["extrapolation_value"]))
    b.op("Where", [mask, out, fill], b.out)
    return b.done()


@TABLE.register("combined_non_max_suppression")
def combined_non_max_suppression(ctx: Ctx) -> Emitted:
    """NonMaxSuppression per (batch, class) (classes folded into the batch where each class has its own boxes),
    each selection written to its class's slot (ScatterND: slot = g * S + its rank within (batch, class) g), the
    slots sorted by score with TopK (equal scores: the lower slot first, i.e. the lower class, then the
    earlier selection), cut or padded to per_batch, zeros past the count."""
    from onnx import TensorProto

    b = Builder(ctx, ctx.node)
    batch, n, q, _ = (int(d) for d in ctx.shape(ctx.node.inputs[0]))
    classes = int(ctx.shape(ctx.node.inputs[1])[2])
    per_class, length = int(ctx.attrs["max_per_class"]), int(ctx.attrs["per_batch"])
    slots = classes * per_class
    scores_t = b.op("Transpose", [b.x(1)], perm=[0, 2, 1])  # (B, C, N)
    if q == 1:
        nms_boxes, nms_scores, groups = b.op("Reshape", [b.x(0), b.ints("boxes3", [batch, n, 4])]), scores_t, classes
        table = b.op("Reshape", [b.x(0), b.ints("table", [batch * n, 4])])
    else:  # each class its own boxes: (batch, class) pairs as NMS's batch
        boxes_t = b.op("Transpose", [b.x(0)], perm=[0, 2, 1, 3])  # (B, C, N, 4)
        nms_boxes = b.op("Reshape", [boxes_t, b.ints("boxes3", [batch * classes, n, 4])])
        nms_scores = b.op("Reshape", [scores_t, b.ints("scores3", [batch * classes, 1, n])])
        groups, table = 1, b.op("Reshape", [boxes_t, b.ints("table", [batch * classes * n, 4])])
    picked = b.op("NonMaxSuppression", [nms_boxes, nms_scores, b.ints("limit", [per_class]),
                                        b.const("iou", np.float32([ctx.attrs["iou_threshold"]])),
                                        b.const("score", np.float32([ctx.attrs["score_threshold"]]))],
                  center_point_box=0)  # (K, 3), grouped by (batch, class), each group in selection order

    def column(k: int) -> str:
        return b.op("Gather", [picked, b.const(f"col{k}", np.int64(k), np.int64)], axis=1)

    group = b.op("Add", [b.op("Mul", [column(0), b.const("groups", np.int64(groups), np.int64)]), column(1)])
    box = column(2)
    size = b.op("Reshape", [b.op("Shape", [group]), b.ints("scalar", [])])
    row = b.op("Range", [b.const("zero_i", np.int64(0), np.int64), size, b.const("one_i", np.int64(1), np.int64)])
    earlier = b.op("Less", [b.op("Unsqueeze", [group, b.ints("row_axis", [0])]),
                            b.op("Unsqueeze", [group, b.ints("col_axis", [1])])])  # [k, j]: group j < group k
    first = b.op("ReduceSum", [b.op("Cast", [earlier], to=TensorProto.INT64), b.ints("sum_axis", [1])], keepdims=0)
    slot = b.op("Add", [b.op("Mul", [group, b.const("per_class", np.int64(per_class), np.int64)]),
                        b.op("Sub", [row, first])])
    where = b.op("Unsqueeze", [slot, b.ints("slot_axis", [1])])  # (K, 1)
    n_const = b.const("n", np.int64(n), np.int64)
    at_score = b.op("Add", [b.op("Mul", [group, n_const]), box])  # (batch, class, box) in (B, C, N)
    flat_scores = b.op("Reshape", [scores_t, b.ints("flat_scores", [-1])])

    def scattered(tag: str, fill: float, values: str, tail: list[int]) -> str:
        base = b.const(f"{tag}_fill", np.full([batch * slots, *tail], fill, np.float32))
        filled = b.op("ScatterND", [base, where, values])
        return b.op("Reshape", [filled, b.ints(f"{tag}_shape", [batch, slots, *tail])])

    key = scattered("score", -1.0, b.op("Gather", [flat_scores, at_score], axis=0), [])
    found = scattered("class", -1.0, b.op("Cast", [b.op("Mod", [group, b.const("classes", np.int64(classes),
                                                                                np.int64)])],
                                            to=TensorProto.FLOAT), [])
    count = b.op("ReduceSum", [b.op("Cast", [b.op("Greater", [found, b.const("none", np.float32(-0.5))])],
                                    to=TensorProto.INT64), b.ints("count_axis", [1])], keepdims=0)
    count = b.op("Min", [count, b.const("length", np.int64(length), np.int64)])  # (B,)
    output = ctx.attrs["output"]
    if output == "count":
        b.op("Cast", [count], b.out, to=TensorProto.INT32)
        return b.done()
    tail: list[int] = []
    if output == "scores":
        value = key
    elif output == "classes":
        value = found
    else:
        tail = [4]
        at_box = b.op("Add", [b.op("Mul", [b.op("Div", [group, b.const("c", np.int64(classes), np.int64)]), n_const]),
                              box]) if q == 1 else at_score
        value = scattered("box", 0.0, b.op("Gather", [table, at_box], axis=0), tail)
        if ctx.attrs["clip_boxes"]:
            value = b.op("Clip", [value, b.const("lo", np.float32(0)), b.const("hi", np.float32(1))])
    by = b.fresh("order")  # the slots in score order
    b.op_outputs("TopK", [key, b.ints("k", [slots])], [b.fresh("sorted"), by], axis=1, largest=1, sorted=1)
    if tail:
        by = b.op("Expand", [b.op("Unsqueeze", [by, b.ints("by_axis", [2])]), b.ints("by_shape", [batch, slots, 4])])
    value = b.op("GatherElements", [value, by], axis=1)
    if length > slots:
        value = b.op("Concat", [value, b.const("pad", np.zeros([batch, length - slots, *tail], np.float32))], axis=1)
    elif length < slots:
        value = b.op("Slice", [value, b.ints("start", [0]), b.ints("end", [length]), b.ints("axis", [1])])
    keep = b.op("Less", [b.const("positions", np.arange(length, dtype=np.int64)[None], np.int64),
                         b.op("Unsqueeze", [count, b.ints("count_col", [1])])])  # (B, L)
    if tail:
        keep = b.op("Unsqueeze", [keep, b.ints("keep_axis", [2])])
    b.op("Where", [keep, value, b.const("zero", np.float32(0))], b.out)
    return b.done()


@TABLE.register("nonzero")
def nonzero(ctx: Ctx) -> Emitted:
    """NonZero ((ndim, K), row-major order as TF's Where), transposed to (K, ndim) and padded with zero rows to
    the most there can be."""
    from onnx import TensorProto

    b = Builder(ctx, ctx.node)
    shape = [int(d) for d in ctx.shape(ctx.node.inputs[0])]
    found = b.op("NonZero", [b.x(0)])  # (ndim, K) int64
    count = b.op("Gather", [b.op("Shape", [found]), b.const("k_axis", np.int64(1), np.int64)], axis=0)  # ()
    if ctx.attrs["output"] == "count":
        b.op("Cast", [count], b.out, to=TensorProto.INT32)
        return b.done()
    rows = b.op("Transpose", [found], perm=[1, 0])
    missing = b.op("Sub", [b.const("size", np.int64(int(np.prod(shape))), np.int64), count])
    pads = b.op("Concat", [b.ints("front", [0, 0]), b.op("Reshape", [missing, b.ints("one", [1])]),
                           b.ints("back", [0])], axis=0)
    if ctx.dtype(ctx.node.output) == np.int64:  # TF's index type, NonZero's too
        b.op("Pad", [rows, pads], b.out)
    else:  # graphs written before the IR's indices were TF's int64
        b.op("Cast", [b.op("Pad", [rows, pads])], b.out, to=TensorProto.INT32)
    return b.done()
