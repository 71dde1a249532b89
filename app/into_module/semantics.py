"""What the module computes differently from TF, layer by layer, once the layers are paired:
per-side pads (at the conversion's size and, where TF's pads follow the size, at another one),
ceil_mode, count_include_pad, batch-norm epsilon, activation variants and a missing bias.

Each difference is a `Finding`: the module path, what differs, TF's value, and how `pads.apply()`
fixes it (`fix`), or the one-line change the user should make (`fix` None, `change` says what)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tf_convert.convert.padding import Pads, tf_pads
from tf_convert.convert.padding.sizes import runtime_same

from .layers import Layer, has_bias, named

_ACTIVATION_MODULES = {  # TF's activation -> the nn module that computes it (for apply() and the hint)
    ("relu",): ("ReLU", {}), ("clip", 0.0, 6.0): ("ReLU6", {}), ("sigmoid",): ("Sigmoid", {}), ("tanh",): ("Tanh", {}),
    ("swish",): ("SiLU", {}), ("hard_swish",): ("Hardswish", {}), ("gelu", "none"): ("GELU", {}),
    ("gelu", "tanh"): ("GELU", {"approximate": "tanh"}),
}


@dataclass
class Finding:
    path: str
    what: str  # padding | epsilon | ceil_mode | count_include_pad | activation | bias
    detail: str
    fix: dict[str, Any] | None = None  # an entry for pads.py, or None when apply() cannot fix it
    change: str = ""  # the one-line change the user should make instead
    at_other_size: bool = False  # equal at the conversion's size, different at the other one
    warning: bool = False  # TF's graph is fixed where the module follows the size: exact at the conversion size

    def line(self) -> str:
        return f"{named(self.path)}: {self.what} differs: {self.detail}"


def _module_pads(m, in_hw, padding=None) -> Pads:
    """The per-side pads nn.Conv2d/MaxPool2d/AvgPool2d applies at `in_hw` (ceil_mode as extra end pad);
    `padding`: the one a functional conv2d passed in place of the module's."""
    pad = m.padding if padding is None else padding
    if isinstance(pad, (tuple, list)) and len(pad) == 1:  # nn.Conv1d: the width of a conv2d of height 1
        pad = (0, pad[0])
    if isinstance(pad, str):  # nn.Conv2d padding='same' (stride 1) / 'valid'
        if pad == "valid":
            return Pads(0, 0, 0, 0)
        return tf_pads(in_hw, _height_one(m.kernel_size), (1, 1), _height_one(m.dilation), "SAME")
    ph, pw = pad if isinstance(pad, (tuple, list)) else (pad, pad)
    if not getattr(m, "ceil_mode", False):
        return Pads(ph, ph, pw, pw)
    k = m.kernel_size if isinstance(m.kernel_size, (tuple, list)) else (m.kernel_size,) * 2
    s = m.stride if isinstance(m.stride, (tuple, list)) else (m.stride,) * 2
    extra = []
    for n, ki, si, p in zip(in_hw, k, s, (ph, pw)):
        out = -(-(n + 2 * p - ki) // si) + 1
        if (out - 1) * si >= n + p:  # torch drops a last window that starts in the end pad
            out -= 1
        extra.append((out - 1) * si + ki - n - p)
    return Pads(ph, max(extra[0], ph), pw, max(extra[1], pw))


def _height_one(value) -> tuple:
    """An nn.Conv1d's kernel or dilation as a conv2d of height 1 has it."""
    value = tuple(value)
    return (1, *value) if len(value) == 1 else value


def tf_layer_pads(ir_layer: Layer, in_hw) -> Pads:
    """TF's per-side pads for the IR layer at input size `in_hw` (its own pads at the conversion size)."""
    node = ir_layer.node
    a = node.attrs
    if a.get("padding") == "SAME":
        return tf_pads(in_hw, a["kernel"], a["stride"], a.get("dilation", (1, 1)), "SAME")
    if ir_layer.pre_pad is not None:  # TF's zero Pad before a VALID max pool (on a ReLU's output)
        return Pads(*(p + q for p, q in zip(a["pads"], ir_layer.pre_pad)))
    return Pads(*a["pads"])


def _pad_rule(ir_layer: Layer) -> dict[str, Any]:
    a = ir_layer.node.attrs
    if a.get("padding") == "SAME":
        return {"same": True}
    pre = ir_layer.pre_pad or (0, 0, 0, 0)
    return {"pads": [p + q for p, q in zip(a["pads"], pre)]}


def _window(t: Layer, i: Layer, in_hw: dict[str, tuple]) -> list[Finding]:
    """Pads at the layer's input size and, where TF's follow the size (SAME, stride > 1), at one more
    row and column too (the parity flip), which a fixed torch padding cannot follow. A zero pad the
    module applies in forward before the conv (`pre_pad`) counts as the conv's: it is judged at the
    sizes it was recorded at, and pads.apply() cannot move it."""
    m = t.node
    pre, pre_other = t.attrs.get("pre_pad"), t.attrs.get("pre_pad_other")
    hw = tuple(in_hw[t.id][2:])
    if t.attrs.get("conv1d"):
        hw = (1, *hw)
    if pre is not None:  # the conv's input is the padded map: TF's size is the one before the pad
        hw = (hw[0] - pre[0] - pre[1], hw[1] - pre[2] - pre[3])
    fix = {"path": t.id, "op": t.kind, **_pad_rule(i)} if pre is None and not {"padding_arg", "conv1d"} & set(
        t.attrs) else None
    follows = runtime_same(i.node) or (pre_other is not None and tuple(pre_other) != tuple(pre))
    checked = [hw, tuple(d + 1 for d in hw)] if follows and (pre is None or pre_other is not None) else [hw]
    for n, size in enumerate(checked):
        ours = _module_pads(m, size, t.attrs.get("padding_arg"))
        if pre is not None:
            extra = pre if n == 0 else pre_other
            ours = Pads(*(a + b for a, b in zip(ours, extra)))
        theirs = tf_layer_pads(i, size)
        if tuple(ours) != tuple(theirs):
            at = "x".join(map(str, size))
            also = f"; equal at {'x'.join(map(str, hw))}: {'TF' if runtime_same(i.node) else 'the module'}'s " \
                   f"follow the input size" if n else ""
            where = " (its forward zero-pads the conv's input)" if pre is not None else ""
            change = "" if fix is not None else f"pad the input of '{t.id}' by {_sides(theirs)} (top,bottom,left,right)"
            # TF's fixed pads (a ZeroPadding2D sized at the conversion's input) against a module that follows
            # the size: exact at the conversion size, so a warning; the other way round, a difference
            warning = n > 0 and not runtime_same(i.node)
            return [Finding(t.id, "padding", f"the module pads {_sides(ours)}{where}, TF {_sides(theirs)} at {at} "
                                             f"(top,bottom,left,right{also})", fix, change, at_other_size=n > 0,
                            warning=warning)]
    # ceil_mode's overhang is never counted, whatever count_include_pad says
    if t.kind == "avg_pool" and m.count_include_pad and m.padding not in (0, (0, 0)):
        return [Finding(t.id, "count_include_pad", "the module divides by the whole window (count_include_pad=True), "
                                                   "TF by the real elements only", fix)]
    return []


def check(pairs: list[tuple[Layer, Layer]], in_hw: dict[str, tuple]) -> list[Finding]:
    """Every difference, in the module's layer order. `in_hw`: {module path: input shape} at the
    conversion's size."""
    findings: list[Finding] = []
    for t, i in pairs:
        if t.kind in ("conv", "conv_transpose", "linear") and has_bias(i) and not t.attrs["bias"]:
            findings.append(Finding(t.id, "bias", "the module has bias=False, TF adds a bias", None,
                                    f"construct '{t.id}' with bias=True"))
        if t.kind in ("conv", "max_pool", "avg_pool") and t.node is not None:
            if t.kind == "conv" and getattr(t.node, "padding_mode", "zeros") != "zeros":
                findings.append(Finding(t.id, "padding", f"padding_mode={t.node.padding_mode!r}, TF pads with zeros",
                                        {"path": t.id, "op": "conv", **_pad_rule(i)}))
                continue
            findings.extend(_window(t, i, in_hw))
        elif t.kind == "conv_transpose" and t.node is not None:
            findings.extend(_transposed_crop(t, i, in_hw))
        elif t.kind == "other:matmul":
            findings.extend(_attention_scale(t, i, pairs))
        elif t.kind in ("layer_norm", "channel_norm") and "epsilon" in i.node.attrs:  # TF1 BERT's 1e-12 vs 1e-5
            eps, theirs = float(t.node.eps), float(i.node.attrs["epsilon"])
            if abs(eps - theirs) > 1e-6 * theirs:  # TF stores 1e-12 as float32
                findings.append(Finding(t.id, "epsilon", f"eps={eps:g}, TF's epsilon is {theirs:.3g}",
                                        {"path": t.id, "op": "attribute", "name": "eps", "value": theirs},
                                        f"construct '{t.id}' with eps={theirs:.3g}"))
        elif t.kind == "rms_norm":
            findings.extend(_rms_epsilon(t, i))
        elif t.kind == "bn" and "epsilon" in i.node.attrs:
            eps, theirs = float(t.node.eps), float(i.node.attrs["epsilon"])
            if abs(eps - theirs) > 1e-12 * max(1.0, theirs):
                findings.append(Finding(t.id, "epsilon", f"eps={eps:g}, TF's epsilon is {theirs:g}",
                                        {"path": t.id, "op": "attribute", "name": "eps", "value": theirs}))
        elif t.kind == "act" and t.attrs["variant"] != i.attrs["variant"]:
            want = _ACTIVATION_MODULES.get(i.attrs["variant"])
            detail = f"the module computes {_name(t.attrs['variant'])}, TF computes {_name(i.attrs['variant'])}"
            if want is not None and t.node is not None:
                findings.append(Finding(t.id, "activation", detail,
                                        {"path": t.id, "op": "module", "class": want[0], "kwargs": want[1]}))
            else:
                args = ", ".join(f"{k}={v!r}" for k, v in want[1].items()) if want else ""
                hint = f"nn.{want[0]}({args})" if want else _name(i.attrs["variant"])
                findings.append(Finding(t.label, "activation", detail, None, f"compute {hint} there"))
    return findings


def _rms_epsilon(t: Layer, i: Layer) -> list[Finding]:
    """An RMS norm's epsilon (the module's number added to the mean square) against TF's."""
    eps, theirs = t.attrs["epsilon"], i.attrs["epsilon"]
    if abs(eps - theirs) <= 1e-6 * max(abs(theirs), 1e-30):  # TF stores it as float32
        return []
    return [Finding(t.label, "epsilon", f"the RMS norm adds {eps:g} to the mean square, TF adds {theirs:.3g}", None,
                    f"construct '{t.label}' with epsilon {theirs:.3g}")]


def _sides(pads) -> str:
    return "(" + ",".join(str(int(p)) for p in pads) + ")"


def _name(variant: tuple) -> str:
    if variant[0] == "gelu":
        return {"none": "gelu (erf)", "tanh": "gelu (tanh approximation)"}.get(variant[1], f"gelu({variant[1]})")
    if variant[0] == "clip":
        return "ReLU6" if variant[1:] == (0.0, 6.0) else f"clip{variant[1:]}"
    return variant[0] + (f"({', '.join(map(str, variant[1:]))})" if len(variant) > 1 else "")


# ---- transposed convolutions: which rows of the full output each side keeps ----------------------------
def tf_transposed_crop(ir_layer: Layer, in_size) -> list[tuple[int, int]]:
    """TF's (begin, end) crop of the full transposed-conv output (n-1)*s + d*(k-1) + 1 per spatial axis at
    input size `in_size`; a negative end is rows past the full output (zeros before the bias)."""
    a = ir_layer.node.attrs
    dilation = a.get("dilation", (1,) * len(a["stride"]))
    crops = []
    for n, k, s, d, begin, out in zip(in_size, a["kernel"], a["stride"], dilation, a["crop"], a["output_size"]):
        full = (n - 1) * s + d * (k - 1) + 1
        crops.append((int(begin), int(full - begin - out)))
    return crops


def module_transposed_crop(m) -> list[tuple[int, int]]:
    """nn.ConvTranspose's (begin, end) crop: `padding` at both ends, less `output_padding` at the end."""
    return [(int(p), int(p - op)) for p, op in zip(m.padding, m.output_padding)]


def _torch_can_express(crops: list[tuple[int, int]], m) -> str:
    """The padding/output_padding that give `crops`, or why nn.ConvTranspose cannot."""
    limit = [max(s, d) for s, d in zip(m.stride, m.dilation)]
    if all(b >= 0 and 0 <= b - e < lim for (b, e), lim in zip(crops, limit)):
        pads, extra = tuple(b for b, _ in crops), tuple(b - e for b, e in crops)
        return f"padding={pads}, output_padding={extra} would express it"
    return ("nn.ConvTranspose's padding/output_padding cannot express it (they crop at least as much at the "
            "start as at the end)")


def _transposed_crop(t: Layer, i: Layer, in_hw: dict[str, tuple]) -> list[Finding]:
    """TF's SAME transposed conv keeps [begin, full - end) with the odd row cropped at the END; torch
    crops `padding` at both ends and gives `output_padding` back at the end only."""
    m = t.node
    size = tuple(in_hw[t.id][2:])
    ours, theirs = module_transposed_crop(m), tf_transposed_crop(i, size)
    if ours == theirs:
        return []
    axes = {2: "top,bottom,left,right", 3: "front,back,top,bottom,left,right"}[len(theirs)]
    detail = (f"the module crops {_sides(v for c in ours for v in c)} of the full output, TF "
              f"{_sides(v for c in theirs for v in c)} at "
              f"{'x'.join(map(str, size))} ({axes}; negative: rows past the full output); "
              f"{_torch_can_express(theirs, m)}")
    return [Finding(t.id, "padding", detail, {"path": t.id, "op": "conv_transpose", "crop": [list(c) for c in theirs]})]


# ---- attention: the scale on the scores ----------------------------------------------------------------
def _attention_scale(t: Layer, i: Layer, pairs: list[tuple[Layer, Layer]]) -> list[Finding]:
    """A product of two activations (attention scores) times the constants on it and on its operands
    (Keras scales the query, BERT the scores: the same product), on each side."""
    ours = _product_scale(t, {tl.id: tl for tl, _ in pairs})
    theirs = _product_scale(i, {il.id: il for _, il in pairs})
    if abs(ours - theirs) <= 1e-6 * max(abs(theirs), 1e-12):
        return []
    return [Finding(t.label, "scale", f"the module scales the product by {ours:.6g}, TF by {theirs:.6g}", None,
                    f"scale it by {theirs:.6g} (1/sqrt(head_dim) when TF's is that)")]


def _product_scale(layer: Layer, paired: dict[str, Layer]) -> float:
    factor = layer.scale
    for name in layer.inputs:
        factor *= paired[name].scale if name in paired else 1.0
    return factor
