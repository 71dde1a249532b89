"""The ONNX handlers of the detection family: non-max suppression as ONNX NonMaxSuppression (opset 10+), whose
onnxruntime kernel is TF's: (y1, x1, y2, x2) boxes of either corner order, candidates score > score_threshold,
by score with the lower index first on ties, dropped when IoU > iou_threshold (tests/emitters/test_detection.py
checks it against TF, ties included); and the cut of a data-dependent length (Slice)."""

from __future__ import annotations

import numpy as np

from .contract import TABLE, Builder, Ctx, Emitted


@TABLE.register("non_max_suppression")
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
