"""Detection heads: non-max suppression (hard and soft, single and combined), nonzero, prefix and
crop-and-resize, each in TF's float32 order of operations."""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import libm_expf
from ..graph import Node
from .table import reference_op


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
    found = np.argwhere(np.asarray(x) != 0).astype(np.int32)
    if node.attrs["output"] == "count":
        return np.asarray(len(found), np.int32)
    return np.concatenate([found, np.zeros((np.asarray(x).size - len(found), found.shape[1]), np.int32)])


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
