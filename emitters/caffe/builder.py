"""NetBuilder: appends Caffe layers (protobuf messages) and knows each blob's shape.

Also holds the small recipes several op handlers share: Power, Eltwise, Scale with constant
blobs, Slice/trim, the constant pad layer group (Slice -> Power(scale 0, shift v) -> Concat),
and constant materialisation. Handlers name intermediate layers `<node>/<step>`; `finish`
renames the last one to the node's own name and output tensor.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tf_convert.convert.padding import Pads

from .proto import messages

ELTWISE = {"PROD": 0, "SUM": 1, "MAX": 2}
POOL = {"MAX": 0, "AVE": 1}


def _fill(msg: Any, values: dict[str, Any]) -> None:
    for key, value in values.items():
        if isinstance(value, dict):
            _fill(getattr(msg, key), value)
        elif isinstance(value, (list, tuple)):
            field = getattr(msg, key)
            for item in value:  # repeated scalars or repeated messages (given as dicts)
                _fill(field.add(), item) if isinstance(item, dict) else field.append(item)
        else:
            setattr(msg, key, value)


class NetBuilder:
    def __init__(self, name: str, dialect: str = "bvlc"):
        self.dialect = dialect
        self.P = messages(dialect)
        self.net = self.P["NetParameter"](name=name)
        self.opencv_only: list[str] = []  # the OpenCV-only things written (deploy.prototxt's dialect line)
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.pad_layers: list[dict[str, Any]] = []
        self.warnings: list[str] = []
        self._producer: dict[str, Any] = {}  # blob -> layer message that writes it
        self._taken: set[str] = set()
        self._layer_names: set[str] = set()
        self._external: set[str] = set()  # IR tensors (inputs, node outputs): never renamed

    # ---- core ------------------------------------------------------------------------------
    def add(
        self,
        type_: str,
        name: str,
        bottoms: Sequence[str],
        tops: Sequence[str],
        shapes: Sequence[Sequence[int]],
        blobs: Sequence[np.ndarray] = (),
        **params: dict[str, Any],
    ) -> Any:
        layer = self.net.layer.add(name=self._layer_name(name), type=type_)
        layer.bottom.extend(bottoms)
        layer.top.extend(tops)
        for key, value in params.items():
            _fill(getattr(layer, key), value)
        for arr in blobs:
            arr = np.ascontiguousarray(arr, dtype=np.float32)
            blob = layer.blobs.add()
            blob.shape.dim.extend(arr.shape)
            blob.data.extend(arr.ravel().tolist())
        for top, shape in zip(tops, shapes):
            self.shapes[top] = tuple(int(d) for d in shape)
            self._producer[top] = layer
        return layer

    def unique(self, name: str) -> str:
        """A blob name not used yet."""
        return _fresh(name, self._taken)

    def _layer_name(self, name: str) -> str:
        return _fresh(name, self._layer_names)

    def reserve(self, blobs: Sequence[str], layers: Sequence[str]) -> None:
        """Keep the IR's tensor and node names for the IR: intermediate names never take them
        (a TF scope may well hold both `conv` and `conv/pad_h`)."""
        self._taken.update(blobs)
        self._layer_names.update(layers)

    def shape(self, blob: str) -> tuple[int, ...]:
        return self.shapes[blob]

    def finish(self, node_name: str, output: str, blob: str) -> None:
        """Make the node's result `blob` appear as the IR tensor `output`, produced by a layer
        named after the node (the last layer of the node's lowering is renamed)."""
        layer = self._producer.get(blob)
        if blob == output:
            return
        tops = list(layer.top) if layer is not None else []
        # OpenCV's forward(name) resolves a layer name to its first output: a result that is not
        # a layer's first top (or is someone else's blob) gets its own identity Power(1, 1, 0).
        if layer is None or blob in self._external or tops.index(blob) != 0:
            self.power(f"{node_name}/identity", blob, top=output, layer=node_name)
            return
        tops[tops.index(blob)] = output
        del layer.top[:]
        layer.top.extend(tops)
        self._layer_names.discard(layer.name)
        layer.name = node_name  # reserved for this node
        self.shapes[output] = self.shapes[blob]
        self._producer[output] = layer

    def warn_once(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    def mark_external(self, blob: str) -> None:
        self._external.add(blob)

    def uses_opencv(self, what: str) -> None:
        """Record an OpenCV-only layer or field (only the OpenCV dialect writes one)."""
        assert self.dialect == "opencv", f"{what} is OpenCV DNN's, not BVLC Caffe's"
        if what not in self.opencv_only:
            self.opencv_only.append(what)

    # ---- small recipes ---------------------------------------------------------------------
    def input(self, name: str, shape: Sequence[int]) -> None:
        layer = self.add("Input", f"{name}/input", [], [name], [shape], input_param={"shape": [{"dim": list(shape)}]})
        self._layer_names.discard(layer.name)
        layer.name = name  # reserved (graph inputs are IR tensors)
        self.mark_external(name)

    def guard_input_sizes(self, inputs: Sequence[str]) -> None:
        """Make each input refuse another size than the conversion's, at any batch: Caffe layers bake TF's
        SAME pads for that size, and OpenCV runs a net at whatever size it is fed, so without this another
        size would run, silently wrong. A Reshape to the conversion's shape (batch copied) fails unless the
        element count agrees; cropping the input to that shape fails unless no axis is smaller; both hold
        only at the conversion's size (a 16x17 input fed 17x16 fails too). Consumers read the cropped blob."""
        checks = []
        for name in inputs:
            if len(self.shapes[name]) < 2:  # the batch alone: nothing baked to check
                continue
            size, checked = self.unique(f"{name}/converted_size"), self.unique(f"{name}/size_checked")
            shape = self.shapes[name]
            checks.append(self.add("Reshape", f"{name}/converted_size", [name], [size], [shape],
                                   reshape_param={"shape": {"dim": [0, *shape[1:]]}}))
            checks.append(self.add("Crop", f"{name}/size_check", [name, size], [checked], [shape],
                                   crop_param={"axis": 1}))
            for layer in self.net.layer:  # every later reference (an in-place layer's top too)
                if layer.type != "Input" and all(layer is not c for c in checks):
                    layer.bottom[:] = [checked if b == name else b for b in layer.bottom]
                    layer.top[:] = [checked if t == name else t for t in layer.top]
        # the checks run right after the inputs: every consumer comes later in the file
        layers = list(self.net.layer)
        first = [lay for lay in layers if lay.type == "Input"] + checks
        del self.net.layer[:]
        self.net.layer.extend(first + [lay for lay in layers if all(lay is not c for c in first)])

    def power(self, name: str, x: str, power: float = 1.0, scale: float = 1.0, shift: float = 0.0,
              top: str | None = None, layer: str | None = None) -> str:
        top = top or self.unique(name)
        params = {}
        if power != 1.0:
            params["power"] = float(power)
        if scale != 1.0:
            params["scale"] = float(scale)
        if shift != 0.0:
            params["shift"] = float(shift)
        added = self.add("Power", name, [x], [top], [self.shape(x)], power_param=params)
        if layer is not None:
            self._layer_names.discard(added.name)
            added.name = layer
        return top

    def permute(self, name: str, x: str, order: Sequence[int]) -> str:
        """OpenCV DNN's Permute layer (any axes, any rank)."""
        self.uses_opencv("Permute")
        top = self.unique(name)
        shape = [self.shape(x)[a] for a in order]
        self.add("Permute", name, [x], [top], [shape], permute_param={"order": [int(a) for a in order]})
        return top

    def eltwise(self, name: str, bottoms: Sequence[str], op: str, coeff: Sequence[float] | None = None) -> str:
        top = self.unique(name)
        params: dict[str, Any] = {"operation": ELTWISE[op]}
        if coeff is not None:
            params["coeff"] = [float(c) for c in coeff]
        self.add("Eltwise", name, list(bottoms), [top], [self.shape(bottoms[0])], eltwise_param=params)
        return top

    def relu(self, name: str, x: str, slope: float = 0.0) -> str:
        top = self.unique(name)
        params = {"negative_slope": float(slope)} if slope else {}
        self.add("ReLU", name, [x], [top], [self.shape(x)], relu_param=params)
        return top

    def reshape(self, name: str, x: str, shape: Sequence[int]) -> str:
        top = self.unique(name)
        dims = list(shape)
        if dims and self.shape(x) and dims[0] == self.shape(x)[0]:
            dims[0] = 0  # Caffe: copy the input's batch, so other batch sizes run
        self.add("Reshape", name, [x], [top], [shape], reshape_param={"shape": {"dim": dims}})
        return top

    def scale_const(self, name: str, x: str, scale: np.ndarray | float | None, bias: np.ndarray | float | None) -> str:
        """y = x * scale + bias with constants broadcastable to x (result keeps x's shape)."""
        shape = self.shape(x)
        s = np.asarray(1.0 if scale is None else scale, dtype=np.float32)
        b = np.asarray(0.0 if bias is None else bias, dtype=np.float32)
        if s.size == 1 and b.size == 1:
            return self.power(name, x, scale=float(s.ravel()[0]), shift=float(b.ravel()[0]))
        axis, end = broadcast_span(shape, [s.shape, b.shape])
        blob_shape = shape[axis:end]
        blobs = [_span(s, shape, axis, end, blob_shape)]
        if bias is not None:
            blobs.append(_span(b, shape, axis, end, blob_shape))
        top = self.unique(name)
        params = {"axis": axis, "num_axes": end - axis, "bias_term": bias is not None}
        self.add("Scale", name, [x], [top], [shape], blobs, scale_param=params)
        return top

    def const_like(self, name: str, like: str, value: np.ndarray | float) -> str:
        """A blob shaped like `like` holding `value` (broadcast): like*0 + value, one layer."""
        value = np.asarray(value, dtype=np.float32)
        if value.size == 1:
            return self.power(name, like, scale=0.0, shift=float(value.ravel()[0]))
        return self.scale_const(name, like, np.zeros(value.shape, np.float32), value)

    def slice(self, name: str, x: str, axis: int, points: Sequence[int]) -> list[str]:
        """Slice `x` on `axis` at `points` (strictly inside); returns the tops in order."""
        shape = self.shape(x)
        bounds = [0, *points, shape[axis]]
        tops, shapes = [], []
        for i in range(len(bounds) - 1):
            tops.append(self.unique(f"{name}/{i}"))
            s = list(shape)
            s[axis] = bounds[i + 1] - bounds[i]
            shapes.append(s)
        self.add("Slice", name, [x], tops, shapes, slice_param={"axis": axis, "slice_point": list(points)})
        return tops

    def take(self, name: str, x: str, axis: int, begin: int, end: int) -> str:
        """x[begin:end] on one axis with a Slice layer (the other parts stay unused tops)."""
        size = self.shape(x)[axis]
        if begin == 0 and end == size:
            return x
        points = [p for p in (begin, end) if 0 < p < size]
        tops = self.slice(name, x, axis, points)
        return tops[1 if begin > 0 else 0]

    def trim(self, name: str, x: str, trim: Pads) -> str:
        """Slice away (top, bottom, left, right) rows/cols."""
        h, w = self.shape(x)[2:]
        x = self.take(f"{name}_h", x, 2, trim.top, h - trim.bottom)
        return self.take(f"{name}_w", x, 3, trim.left, w - trim.right)

    def concat(self, name: str, bottoms: Sequence[str], axis: int) -> str:
        if len(bottoms) == 1:
            return bottoms[0]
        shape = list(self.shape(bottoms[0]))
        shape[axis] = sum(self.shape(b)[axis] for b in bottoms)
        top = self.unique(name)
        self.add("Concat", name, list(bottoms), [top], [shape], concat_param={"axis": axis})
        return top

    def rows(self, name: str, x: str, axis: int, count: int, value: float) -> str:
        """`count` slices of constant `value` shaped like x on every axis but `axis`."""
        shape = self.shape(x)
        size = shape[axis]
        if len(shape) == 4 and axis in (2, 3):
            const, have = self.spatial_row(f"{name}_const", x, axis, value), 1
        else:
            src = x if count >= size else self.slice(f"{name}_slice", x, axis, [count])[0]
            const, have = self.power(f"{name}_const", src, scale=0.0, shift=value), min(count, size)
        if have == count:
            return const
        block = self.concat(f"{name}_tile", [const] * -(-count // have), axis)
        return self.take(f"{name}_cut", block, axis, 0, count)

    def spatial_row(self, name: str, x: str, axis: int, value: float) -> str:
        """One row (axis 2) or column (axis 3) of `value`, shaped like NCHW `x` otherwise: a
        depthwise 1x1 Convolution with zero weights, bias `value` and a stride of the axis' size
        reads one row/column of x -- not the whole of it, as a Slice would (OpenCV copies every part
        of a Slice, used or not)."""
        n, c, h, w = self.shape(x)
        stride = {"stride_h": h if axis == 2 else 1, "stride_w": w if axis == 3 else 1}
        conv = {"num_output": c, "bias_term": True, "kernel_h": 1, "kernel_w": 1, "group": c, **stride}
        blobs = [np.zeros((c, 1, 1, 1), np.float32), np.full(c, value, np.float32)]
        top = self.unique(name)
        shape = (n, c, 1, w) if axis == 2 else (n, c, h, 1)
        self.add("Convolution", name, [x], [top], [shape], blobs, convolution_param=conv)
        return top

    def pad_axis(self, name: str, x: str, axis: int, before: int, after: int, mode: str, value: float) -> str:
        """Pad one axis: constant (pad layer group) or reflect/symmetric (Slice + Concat)."""
        if not before and not after:
            return x
        parts: list[str] = []
        if mode == "constant":
            if before:
                parts.append(self.rows(f"{name}_before", x, axis, before, value))
            parts.append(x)
            if after:
                parts.append(self.rows(f"{name}_after", x, axis, after, value))
        else:
            size = self.shape(x)[axis]
            single = self.slice(f"{name}_rows", x, axis, list(range(1, size))) if size > 1 else [x]
            off = 1 if mode == "reflect" else 0
            lead = [single[i] for i in range(before - 1 + off, off - 1, -1)]
            tail = [single[size - 1 - off - i] for i in range(after)]
            parts = lead + [x] + tail
        return self.concat(name, parts, axis)

    def pad_group(self, name: str, x: str, pads: Pads, value: float, mode: str = "constant") -> str:
        """Pad H then W (so the corners get the value too)."""
        x = self.pad_axis(f"{name}_h", x, 2, pads.top, pads.bottom, mode, value)
        return self.pad_axis(f"{name}_w", x, 3, pads.left, pads.right, mode, value)


def _fresh(name: str, taken: set[str]) -> str:
    base, i = name, 1
    while name in taken:
        name = f"{base}_{i}"
        i += 1
    taken.add(name)
    return name


def broadcast_span(shape: Sequence[int], operands: Sequence[Sequence[int]]) -> tuple[int, int]:
    """[axis, end) of `shape` covered by the non-1 dims of the (right-aligned) operands."""
    rank = len(shape)
    dims = [i for op in operands for i, d in enumerate(_align(op, rank)) if d != 1]
    if not dims:
        return 1 if rank > 1 else 0, 1 if rank > 1 else 0
    return min(dims), max(dims) + 1


def _align(shape: Sequence[int], rank: int) -> tuple[int, ...]:
    return (1,) * (rank - len(shape)) + tuple(shape)


def _span(value: np.ndarray, shape: Sequence[int], axis: int, end: int, blob_shape: Sequence[int]) -> np.ndarray:
    full = value.reshape(_align(value.shape, len(shape)))
    index = tuple(slice(None) if axis <= i < end else 0 for i in range(len(shape)))
    return np.ascontiguousarray(np.broadcast_to(full[index], tuple(blob_shape)), dtype=np.float32)
