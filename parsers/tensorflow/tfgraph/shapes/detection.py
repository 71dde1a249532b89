"""Shapes of the detection heads' ops: CropAndResize, and non-max suppression (its selection's length is
the data's unless it is padded to max_output_size)."""

from __future__ import annotations

from .base import Node, shape_fn

NMS_OPS = ("NonMaxSuppression", "NonMaxSuppressionV2", "NonMaxSuppressionV3", "NonMaxSuppressionV4",
           "NonMaxSuppressionV5")


def _padded(node: Node) -> bool:
    return node.op.type in ("NonMaxSuppressionV4", "NonMaxSuppressionV5") and bool(
        node.attr("pad_to_max_output_size", False))


@shape_fn(*NMS_OPS)
def _nms(node: Node) -> list:
    """(selected indices[, selected scores][, valid count]): the indices' length is max_output_size when
    padded, else unknown (it depends on the boxes and scores)."""
    limit = node.ints(2)
    length = limit[0] if _padded(node) and limit is not None else None
    if node.op.type == "NonMaxSuppressionV5":
        return [[length], [length], []]
    if node.op.type == "NonMaxSuppressionV4":
        return [[length], []]
    return [[length]]


@shape_fn("CropAndResize")
def _crop_and_resize(node: Node) -> list:
    """(boxes, crop height, crop width, channels)."""
    image, boxes, size = node.dims(0), node.dims(1), node.ints(3)
    hw = size if size is not None else [None, None]
    return [[boxes[0] if boxes is not None else None, hw[0], hw[1], image[3] if image is not None else None]]


@shape_fn("CombinedNonMaxSuppression")
def _combined_nms(node: Node) -> list:
    """(boxes (B, L, 4), scores (B, L), classes (B, L), valid (B,)): L is max_total_size, or with pad_per_class
    at most max_output_size_per_class per class."""
    scores, per_class, total = node.dims(1), node.ints(2), node.ints(3)
    batch = scores[0] if scores is not None else None
    length = total[0] if total is not None else None
    if node.attr("pad_per_class", False):
        classes = scores[2] if scores is not None else None
        length = None if None in (length, per_class, classes) else min(length, per_class[0] * classes)
    return [[batch, length, 4], [batch, length], [batch, length], [batch]]
