"""Ops of TF 1.x-era graphs that current TF removed (a GraphDef of producer >= 9 cannot hold them)
rewritten to their current equivalent, value for value."""

from __future__ import annotations

from ..protos import AttrValue
from .graph import GraphView


def _batch_norm_global(view: GraphView, node) -> None:
    """BatchNormWithGlobalNormalization(t, m, v, beta, gamma) -> FusedBatchNorm (inference):
    (t - m) * rsqrt(v + eps) * (gamma if scale_after_normalization else 1) + beta."""

    t, mean, var, beta, gamma = list(node.input[:5])
    controls = [r for r in node.input if r.startswith("^")]
    scale = gamma
    if not node.attr["scale_after_normalization"].b:
        scale = view.unique(f"{node.name}/ones")
        view.add(scale, "OnesLike", [gamma], T=node.attr["T"])
    epsilon = node.attr["variance_epsilon"].f
    dtype = node.attr["T"]
    node.op = "FusedBatchNorm"
    del node.input[:]
    node.input.extend([t, scale, beta, mean, var] + controls)
    node.attr.clear()
    node.attr["T"].CopyFrom(dtype)
    node.attr["epsilon"].CopyFrom(AttrValue(f=epsilon))
    node.attr["is_training"].CopyFrom(AttrValue(b=False))
    node.attr["data_format"].CopyFrom(AttrValue(s=b"NHWC"))


_REWRITES = {"BatchNormWithGlobalNormalization": _batch_norm_global}
REWRITTEN = frozenset(_REWRITES)  # TF ops converted as their rewrite (scripts/op_table.py counts them)


def apply(view: GraphView, records: list[dict]) -> None:
    rewritten = [n for n in list(view.graph_def.node) if n.op in _REWRITES]
    for node in rewritten:
        old = node.op
        _REWRITES[old](view, node)
        records.append({"pass": "deprecated", "node": node.name, "op": old, "now": node.op,
                        "note": f"{old} {node.name} (removed from TF) -> {node.op}"})
