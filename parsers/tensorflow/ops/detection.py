"""Detection heads: non-max suppression (NonMaxSuppression, V2-V5) as the IR's non_max_suppression, TF's
greedy hard suppression with its thresholds and order, or V5's soft-NMS (soft_nms_sigma > 0). A selection
TF pads to max_output_size has a fixed shape; one it does not pad has the data's length
(parsers/tensorflow/lengths.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..context import Context, NotConvertible
from ..lengths import mark
from ..table import tf_op

# V2 has no score threshold: TF's kernel uses the lowest float32, so every finite score is a candidate
_LOWEST = float(np.finfo(np.float32).min)


def _scalar(ctx: Context, op: Any, i: int, what: str) -> float:
    t = op.inputs[i]
    if not ctx.is_const(t):
        raise NotConvertible(f"{what} ({t.name}) depends on the model input: it must be a constant")
    return np.asarray(ctx.const(t)).reshape(-1)[0].item()


def _float32(value: float) -> float:
    return float(np.float32(value))


def _float32_boxes_and_scores(op: Any) -> tuple[Any, Any]:
    boxes, scores = op.inputs[0], op.inputs[1]
    for t in (boxes, scores):
        if t.dtype is None or t.dtype.name != "float32":
            raise NotConvertible(f"{op.type} of {t.dtype.name if t.dtype else 'unknown'} boxes or scores: "
                                 "float32 only")
    return boxes, scores


@tf_op("NonMaxSuppression", "NonMaxSuppressionV2", "NonMaxSuppressionV3", "NonMaxSuppressionV4",
       "NonMaxSuppressionV5")
def non_max_suppression(ctx: Context, op: Any) -> None:
    boxes, scores = _float32_boxes_and_scores(op)
    n = ctx.shape(boxes)[0]
    limit = int(_scalar(ctx, op, 2, "max_output_size"))
    if limit < 0:
        raise NotConvertible(f"max_output_size {limit} < 0 (TF refuses it at run time)")
    iou = _float32(op.get_attr("iou_threshold") if op.type == "NonMaxSuppression"
                   else _scalar(ctx, op, 3, "iou_threshold"))
    if not 0.0 <= iou <= 1.0:
        raise NotConvertible(f"iou_threshold {iou} outside [0, 1] (TF refuses it at run time)")
    score = _float32(_scalar(ctx, op, 4, "score_threshold")) if op.type in (
        "NonMaxSuppressionV3", "NonMaxSuppressionV4", "NonMaxSuppressionV5") else _LOWEST
    sigma = _float32(_scalar(ctx, op, 5, "soft_nms_sigma")) if op.type == "NonMaxSuppressionV5" else 0.0
    if sigma < 0:
        raise NotConvertible(f"soft_nms_sigma {sigma} < 0 (TF refuses it at run time)")
    padded = op.type in ("NonMaxSuppressionV4", "NonMaxSuppressionV5") and bool(
        op.get_attr("pad_to_max_output_size"))
    longest = limit if padded else min(limit, n)
    inputs = [ctx.tf_order(boxes), ctx.tf_order(scores)]
    attrs = {"max_output_size": longest, "iou_threshold": iou, "score_threshold": score}
    if sigma > 0:  # soft-NMS (only the PyTorch target and the reference express it)
        attrs["soft_nms_sigma"] = sigma

    def emit(output: str, base: str, dtype: str) -> str:
        shape = () if output == "count" else (longest,)
        return ctx.emit("non_max_suppression", base, inputs, shape, {**attrs, "output": output},
                        source_op=op.type, out_dtype=dtype)

    indices = emit("indices", op.name, "int32")
    ctx.set(op.outputs[0], indices)
    needs_count = not padded or op.type in ("NonMaxSuppressionV4", "NonMaxSuppressionV5")
    count = emit("count", f"{op.name}/count", "int32") if needs_count else ""
    if op.type == "NonMaxSuppressionV5":
        ctx.set(op.outputs[1], emit("scores", f"{op.name}/scores", "float32"))
    if op.type in ("NonMaxSuppressionV4", "NonMaxSuppressionV5"):
        ctx.set(op.outputs[-1], count)
    if not padded:
        for t in op.outputs[:2 if op.type == "NonMaxSuppressionV5" else 1]:
            mark(ctx, t, count, longest, f"{op.type} '{op.name}'")


@tf_op("CropAndResize")
def crop_and_resize(ctx: Context, op: Any) -> None:
    image, boxes, box_index, size = op.inputs
    if image.dtype.name != "float32" or boxes.dtype.name != "float32":
        raise NotConvertible(f"CropAndResize of a {image.dtype.name} image or {boxes.dtype.name} boxes: float32 "
                             "only (cast the image to float32 first)")
    if not ctx.is_const(size):
        raise NotConvertible(f"crop_size ({size.name}) is a run-time value: the crops' sizes would follow it, and "
                             "the crop grid is built while converting; make it a constant (--set NAME=VALUE)")
    ch, cw = (int(v) for v in np.asarray(ctx.const(size)).reshape(-1))
    shape = ctx.shape(image)
    if len(shape) != 4 or any(n is None or n < 0 for n in shape[1:]):
        raise NotConvertible(f"CropAndResize of an image of shape {shape}: H, W and C must be known "
                             "(--input-shape)")
    n = ctx.shape(boxes)[0]
    attrs = {"size": (ch, cw), "method": op.get_attr("method").decode(),
             "extrapolation_value": _float32(op.get_attr("extrapolation_value"))}
    out = ctx.emit("crop_and_resize", op.name, [ctx.tf_order(image), ctx.tf_order(boxes), ctx.tf_order(box_index)],
                   (n, ch, cw, shape[3]), attrs, source_op=op.type)
    ctx.set(op.outputs[0], out)


@tf_op("CombinedNonMaxSuppression")
def combined_non_max_suppression(ctx: Context, op: Any) -> None:
    boxes, scores = _float32_boxes_and_scores(op)
    b_shape, s_shape = ctx.shape(boxes), ctx.shape(scores)
    if len(b_shape) != 4 or len(s_shape) != 3 or any(d is None or d < 0 for d in (*b_shape, *s_shape)):
        raise NotConvertible(f"{op.type} of boxes {b_shape} and scores {s_shape}: every size must be known "
                             "(--input-shape)")
    n, classes, q = s_shape[1], s_shape[2], b_shape[2]
    if q not in (1, classes):
        raise NotConvertible(f"{op.type} with q = {q} box sets for {classes} classes (TF refuses it at run time)")
    per_class = int(_scalar(ctx, op, 2, "max_output_size_per_class"))
    total = int(_scalar(ctx, op, 3, "max_total_size"))
    if total <= 0 or per_class < 0:
        raise NotConvertible(f"{op.type} with max_total_size {total}, max_output_size_per_class {per_class} "
                             "(TF refuses it at run time)")
    iou = _float32(_scalar(ctx, op, 4, "iou_threshold"))
    if not 0.0 <= iou <= 1.0:
        raise NotConvertible(f"iou_threshold {iou} outside [0, 1] (TF refuses it at run time)")
    # TF's output length: max_total_size, or when pad_per_class at most max_output_size_per_class per class
    per_batch = min(total, per_class * classes) if op.get_attr("pad_per_class") else total
    attrs = {"max_per_class": min(per_class, n), "per_batch": per_batch, "iou_threshold": iou,
             "score_threshold": _float32(_scalar(ctx, op, 5, "score_threshold")),
             "clip_boxes": bool(op.get_attr("clip_boxes"))}
    inputs = [ctx.tf_order(boxes), ctx.tf_order(scores)]
    for t, output in zip(op.outputs, ("boxes", "scores", "classes", "count")):
        shape = {"boxes": (s_shape[0], per_batch, 4), "count": (s_shape[0],)}.get(output, (s_shape[0], per_batch))
        ctx.set(t, ctx.emit("combined_non_max_suppression", op.name if output == "boxes" else f"{op.name}/{output}",
                            inputs, shape, {**attrs, "output": output}, source_op=op.type,
                            out_dtype="int32" if output == "count" else "float32"))
