"""`Plan`: what one target does with one IR node's padding -- the single answer emitters follow and
`convert inspect` shows (both get it from `convert.padding.targets.plan`).

A plan is read in this order: a separate constant pad in front (`pad_layer`; for Caffe a pad
layer group, for a Caffe transposed conv zero input rows appended), the layer itself with
`layer_pads` (symmetric unless the target takes four pads), `kernel_taps` zero taps added to the
kernel and `output_padding` rows added by a transposed layer, then `crop` output rows/cols sliced
away and the output multiplied by `divisor_map` (Ho, Wo). `records` are the entries the emitter
writes to `conversion.json`'s `pad_layers`, so a plan also says exactly what is reported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ir.ops import AVERAGING_OPS
from ..targets import PlanOptions  # noqa: F401 - re-exported beside Plan
from .rules import NO_PADS, Pads


@dataclass(frozen=True)
class PadLayer:
    """A separate constant pad in front of the op."""

    pads: Pads
    value: float  # 0.0, or -inf (-FLT_MAX for Caffe) in front of max pooling


@dataclass(frozen=True)
class PadRecord:
    """One `pad_layers` entry of conversion.json: a separate layer the target writes for a node."""

    pads: tuple[int, ...]
    reason: str
    kind: str = "pad"  # 'pad' (a pad layer in front) or 'crop' (a slice after)

    def entry(self, node: str, note: str = "") -> dict[str, Any]:
        """The JSON entry; `note` (the emitter's own layer names) is appended to the reason."""
        out: dict[str, Any] = {"node": node, "pads": [int(p) for p in self.pads],
                               "reason": f"{self.reason} ({note})" if note else self.reason}
        if self.kind != "pad":
            out["kind"] = self.kind
        return out


@dataclass(frozen=True)
class Plan:
    target: str
    op: str
    pad_layer: PadLayer | None = None
    layer_pads: Pads = NO_PADS
    count_include_pad: bool = False  # average pooling: the layer divides by the padded window
    convention: str = "valid"  # pooling output rounding ('full' = ceil, MXNet)
    kernel_taps: Pads = NO_PADS  # zero taps added to the kernel (kernel extension: convert/padding/costs.py)
    output_padding: tuple[int, int] = (0, 0)  # transposed conv: rows added at the end
    crop: Pads = NO_PADS  # output rows/cols sliced away after the layer (t, b, l, r)
    divisor_map: np.ndarray | None = None  # (Ho, Wo) to multiply the output by
    records: tuple[PadRecord, ...] = ()
    # The plan was computed from the static input size (divisor maps, Caffe's pooling rounding,
    # transposed-conv windows) or from pads TF SAME derives from it (when the node records
    # attrs['padding'] == 'SAME'): a lowering that follows the runtime size must recompute it.
    size_dependent: bool = False
    # `pad_layer` holds TF SAME's pads at the conversion size, and the target computes them from the
    # runtime size instead (a size-free model, convert.padding.sizes); average pooling then divides by
    # a count of real elements computed the same way
    runtime: bool = False
    reason: str = ""

    @property
    def separate_pad_layer(self) -> bool:
        """Whether the emitter writes (and records in `pad_layers`) a separate layer for the node."""
        return bool(self.records)

    def summary(self) -> str:
        """A short phrase for `convert inspect`'s table."""
        parts = []
        if self.runtime and self.pad_layer is None:
            parts.append("auto_pad SAME_UPPER")
        elif self.runtime:
            parts.append("runtime pad" + (" (-inf)" if self.pad_layer.value else ""))
            if self.op in AVERAGING_OPS:
                parts.append("count map")
        elif self.pad_layer is not None:
            name = "pad group" if self.target == "caffe" else "pad layer"
            value = self.pad_layer.value
            if value:
                name += " (-FLT_MAX)" if self.target == "caffe" else " (-inf)"
            parts.append(name)
        if self.target == "caffe" and not self.layer_pads.symmetric:
            parts.append("four-sided pad (OpenCV only)")
        if not self.kernel_taps.zero:
            parts.append("kernel taps")
        if self.convention == "full":
            parts.append("aligned pad")
        if not self.crop.zero:
            parts.append("slice")
        if self.divisor_map is not None:
            parts.append("scale map" if self.target == "caffe" else "divisor map")
        if not parts and self.records:  # e.g. a TF Pad that Caffe writes as a pad layer group
            parts.append("pad group" if self.target == "caffe" else "pad layer")
        if parts:
            return " + ".join(parts)
        if not self.layer_pads.zero or any(self.output_padding):
            return "in layer"
        return "-"

    def as_dict(self) -> dict[str, Any]:
        """JSON view for `convert inspect --json`."""
        return {
            "plan": self.summary(),
            "pad_layer": self.separate_pad_layer,
            "pad_layers": [r.entry("")["pads"] for r in self.records],
            "layer_pads": list(self.layer_pads),
            "size_dependent": self.size_dependent,
            "runtime": self.runtime,
            "reason": self.reason,
        }
