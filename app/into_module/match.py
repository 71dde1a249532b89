"""Align the module's layers with the IR's, from the outputs back to the input: kinds, shapes and
connectivity (which layer feeds which, and at which input position), so siblings with equal shapes
pair by where they are used, not by the order they were defined or run in. Only `add`/`mul` may take
their inputs in either order. `--map` pins pairs by hand before the walk."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .layers import COMMUTATIVE, Layer, LayerGraph, named


@dataclass
class Mismatch:
    torch_layer: str
    tf_layer: str
    why: str
    depth: int = 0

    def message(self) -> str:
        return (f"the module does not match the TF graph: {named(self.torch_layer)} has no partner "
                f"(TF node '{self.tf_layer}'): {self.why}")


def pointwise(t: Layer, i: Layer) -> bool:
    """A module Linear over the channels of an image (NHWC after a permute: ConvNeXt's pwconv) where TF has a 1x1
    stride-1 conv (a Dense on (N, H, W, C), as the IR writes it): the same product."""
    if t.kind != "linear" or i.kind != "conv" or len(t.shape) != 4:
        return False
    ia = i.attrs
    return (ia["kernel"] == (1, 1) and ia["stride"] == (1, 1) and ia["groups"] == 1 and ia["dilation"] == (1, 1)
            and tuple(ia["weight"][:2]) == tuple(t.attrs["weight"]))


def _architecture(t: Layer, i: Layer) -> str | None:
    """Why `t` (module) cannot stand for `i` (IR), or None. Spatial sizes are left to the semantics check."""
    if pointwise(t, i):
        return None
    if t.kind != i.kind:
        return f"kind differs: the module has {t.describe()}, TF has {i.describe()}"
    ta, ia = t.attrs, i.attrs
    if t.kind == "conv":
        if ta["groups"] != ia["groups"]:
            what = "depthwise" if ia["weight"][1] == 1 else "grouped"
            return f"groups={ta['groups']} where TF is {what} (groups={ia['groups']})"
        if ta["weight"][0] != ia["weight"][0]:
            return (f"out channels {ta['weight'][0]} where TF has {ia['weight'][0]} "
                    f"(weight {ta['weight']} vs {ia['weight']})")
        if ta["weight"] != ia["weight"]:
            return f"weight shape {ta['weight']} where TF has {ia['weight']}"
        for key in ("stride", "dilation"):
            if ta[key] != ia[key]:
                return f"{key} {ta[key]} where TF has {ia[key]}" + _stride_hint(ta, ia, key)
    elif t.kind == "conv_transpose":
        if ta["groups"] != ia["groups"]:
            return f"groups={ta['groups']} where TF has groups={ia['groups']}"
        if ta["weight"] != ia["weight"]:
            return f"weight shape {ta['weight']} (in, out, k...) where TF has {ia['weight']}"
        for key in ("stride", "dilation"):
            if ta[key] != ia[key]:
                return f"{key} {ta[key]} where TF has {ia[key]}"
    elif t.kind in ("embedding", "layer_norm", "channel_norm", "rms_norm"):
        key = "weight" if t.kind == "embedding" else "features"
        if ta[key] != ia[key]:
            return f"{t.describe()} where TF has {i.describe()}"
    elif t.kind == "const" and "param" in ta:  # a parameter table added in forward (ViT's positions)
        if int(np.prod(ta["shape"])) != int(np.prod(ia["shape"])) or ta["shape"][-1] != ia["shape"][-1]:
            return f"a parameter of shape {ta['shape']} where TF adds a constant {ia['shape']}"
    elif t.kind == "const":  # an embedding of constant ids (positions) against TF's sliced table
        rows, width = ta["weight"]
        shape = ia["shape"]  # its first rows (positions), or one row everywhere (token type 0)
        if shape[-1] != width or (int(np.prod(shape[:-1])) > rows and not ia.get("uniform")):
            return f"a ({rows}, {width}) table where TF adds a constant {shape}"
    elif t.kind == "linear":
        if ta["weight"] != ia["weight"]:
            return f"weight shape {ta['weight']} (out, in) where TF has {ia['weight']}"
    elif t.kind == "bn":
        if ta["features"] != ia["features"]:
            return f"{ta['features']} features where TF has {ia['features']}"
    elif t.kind in ("max_pool", "avg_pool"):
        if ta != ia:
            return f"kernel/stride {ta['kernel']}/{ta['stride']} where TF has {ia['kernel']}/{ia['stride']}"
    elif t.kind == "resize":
        if ta["sampling"] != ia["sampling"] or t.shape[-2:] != i.shape[-2:]:
            return f"a {ta['sampling']} resize to {t.shape} where TF resizes {ia['sampling']} to {i.shape}"
    elif t.kind == "mean_1d":
        if ta["reduced"] != ia["reduced"]:
            return f"a mean over {ta['reduced']} values where TF averages {ia['reduced']}"
    elif t.kind == "pad":  # the same fill, and as many elements after it (sides compared by their shapes' sizes)
        if ta["fill"] != ia["fill"] or int(np.prod(t.shape)) != int(np.prod(i.shape)):
            return f"a pad filling {ta['fill']:g} to {t.shape} where TF pads with {ia['fill']:g} to {i.shape}"
    elif t.kind in ("concat", "softmax"):
        if t.kind == "softmax" and ta["axis"] - len(t.shape) == ia["axis"] - len(i.shape):
            pass  # the same axis from the end: TF's heads folded into the batch, (B*heads, T, T), or not
        elif ta["axis"] != ia["axis"]:
            return f"axis {ta['axis']} where TF uses {ia['axis']}"
        mine = [k for k, *_ in ta.get("const_parts", [])]
        theirs = [k for k, _ in ia.get("const_parts", [])]
        if t.kind == "concat" and mine != theirs:
            return (f"it joins parameters at positions {mine} where TF joins constants at {theirs}"
                    if mine or theirs else "")
    elif t.kind == "roll" and ta["shifts"] != ia["shifts"]:
        return f"it rolls by {ta['shifts']} ((axis size, shift) pairs) where TF rolls by {ia['shifts']}"
    elif t.kind == "other:slice" and "range" in ta and "range" in ia and ta["range"] != ia["range"]:
        return (f"it takes [{ta['range'][1]}:{ta['range'][2]}] of axis {ta['range'][0]} where TF takes "
                f"[{ia['range'][1]}:{ia['range'][2]}]")
    if len(t.inputs) != len(i.inputs):
        return f"{len(t.inputs)} inputs where TF has {len(i.inputs)}"
    return None


def _stride_hint(ta: dict, ia: dict, key: str) -> str:
    """Why a bottleneck's stride sits elsewhere: ResNet v1 strides its first 1x1 conv, v1.5 its 3x3."""
    if key != "stride" or ta["kernel"] != ia["kernel"] or tuple(ia["kernel"]) != (1, 1):
        return ""
    if max(ia["stride"]) > 1 and max(ta["stride"]) == 1:
        return (": TF strides the block's 1x1 conv (ResNet v1), the module another conv of the block (v1.5 strides "
                "the 3x3); build the module with the stride in its 1x1 conv (transformers' ResNetConfig: "
                "downsample_in_bottleneck=true)")
    return ""


class _Walk:
    def __init__(self, module: LayerGraph, ir: LayerGraph, pinned: dict[str, str]):
        self.t, self.i = module, ir
        self.t2i: dict[str, str] = {}
        self.i2t: dict[str, str] = {}
        self.pinned = pinned

    def pair(self, t: str, i: str, depth: int) -> Mismatch | None:
        if t in self.t2i or i in self.i2t:
            if self.t2i.get(t) == i:
                return None
            other = self.t2i.get(t) or self.i2t.get(i)
            return Mismatch(self.t.layers[t].label, i,
                            f"connectivity: it is already paired with '{other}', but the graphs use it "
                                  f"in different places", depth)
        if t in self.pinned and self.pinned[t] != i:
            return Mismatch(self.t.layers[t].label, i, f"--map pins it to '{self.pinned[t]}'", depth)
        tl, il = self.t.layers[t], self.i.layers[i]
        why = _architecture(tl, il)
        if why and tl.kind != il.kind:
            return Mismatch(tl.label, i, why, depth)
        # same kind, other shape: walk on, so the error names the earliest layer that differs (the
        # classifier after a changed channel count only differs because of it)
        soft = Mismatch(tl.label, i, why, depth) if why else None
        self.t2i[t], self.i2t[i] = i, t
        orders = [list(il.inputs)]
        if tl.kind in COMMUTATIVE and len(il.inputs) == len(tl.inputs) > 1:
            orders = self._orders(tl.inputs, il.inputs)
        failure = None
        for order in orders:
            saved = (dict(self.t2i), dict(self.i2t))
            failure_here = self._inputs(tl.inputs, order, depth)
            if failure_here is None:
                return soft
            self.t2i, self.i2t = saved
            if failure is None or failure_here.depth > failure.depth:
                failure = failure_here  # the order that got further explains the difference best
        return failure

    def _orders(self, ts: list[str], irs: list[str]) -> list[list[str]]:
        """The orders of a sum's (or product's) TF terms worth trying against the module's: each term with one of
        the same kind (a sum of several embeddings, however TF and the module associate it), up to 120."""
        import itertools

        kinds = [self.t.layers[t].kind for t in ts]
        found = []
        for order in itertools.permutations(irs):
            if all(self.i.layers[i].kind == k or {self.i.layers[i].kind, k} <= {"linear", "conv"}
                   for i, k in zip(order, kinds)):
                found.append(list(order))
            if len(found) == 120:
                break
        return found or [list(irs)]

    def _inputs(self, ts: list[str], irs: list[str], depth: int) -> Mismatch | None:
        """The deepest failure along the inputs (a kind mismatch stops its branch)."""
        worst = None
        for t, i in zip(ts, irs):
            failure = self.pair(t, i, depth + 1)
            if failure is not None and (worst is None or failure.depth > worst.depth):
                worst = failure
        return worst


def match(module: LayerGraph, ir: LayerGraph, pinned: dict[str, str] | None = None) -> dict[str, str] | Mismatch:
    """{module layer: IR layer} for every layer, or the Mismatch that names the first unpartnered pair."""
    import sys

    if len(module.outputs) != len(ir.outputs) or len(module.inputs) != len(ir.inputs):
        return Mismatch("output", ir.outputs[0] if ir.outputs else "?",
                        f"{len(module.inputs)} input(s) / {len(module.outputs)} output(s) where TF has "
                        f"{len(ir.inputs)} / {len(ir.outputs)}")
    walk = _Walk(module, ir, dict(pinned or {}))
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20 * (len(module.layers) + len(ir.layers)) + 1000))
    try:
        failure = walk._inputs(module.outputs, ir.outputs, 0)
    finally:
        sys.setrecursionlimit(limit)
    if failure is not None:
        return failure
    params = ("conv", "conv_transpose", "linear", "bn", "embedding", "layer_norm", "channel_norm", "const")
    for name, layer in module.layers.items():
        if name not in walk.t2i and layer.kind in params:
            return Mismatch(name, "-", f"{layer.describe()} computes nothing the outputs use (no TF partner)")
    for name, layer in ir.layers.items():
        if name not in walk.i2t and layer.kind in params:
            return Mismatch("-", name, f"TF's {layer.describe()} has no layer in the module")
    return walk.t2i
