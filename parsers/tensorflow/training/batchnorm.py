"""Batch norm built in training mode becomes inference batch norm over the moving statistics that
the graph's own update ops keep.

An update op (AssignSub / AssignSubVariableOp / Assign* of `AssignMovingAvg`, tf-slim, tf.compat.v1
layers, tf.keras v1, Keras 3) writes a variable from a batch statistic: output 1 (mean) or 2
(variance) of a FusedBatchNorm* with is_training=True, or the mean/variance of tf.nn.moments. The
statistic is replaced by a read of that variable.
"""

from __future__ import annotations

from tf_convert.convert.errors import Unsupported, UnsupportedError

from .graph import GraphView, split_ref, tensor_ref

FUSED = ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")
ASSIGNS = ("Assign", "AssignSub", "AssignAdd", "AssignVariableOp", "AssignSubVariableOp",
            "AssignAddVariableOp")
_VARIABLES = ("VariableV2", "Variable", "VarHandleOp")
_PASS_THROUGH = ("Identity", "Switch", "RefSwitch", "Enter", "RefIdentity")
_SEARCH_DEPTH = 6


def variable_of(view: GraphView, ref: str) -> str | None:
    """The variable node a reference/handle tensor comes from (through Identity/Switch)."""
    name = split_ref(ref)[0]
    for _ in range(8):
        node = view.nodes.get(name)
        if node is None:
            return None
        if node.op in _VARIABLES:
            return name
        if node.op not in _PASS_THROUGH or not node.input:
            return None
        name = split_ref(node.input[0])[0]
    return None


def _is_moments(name: str) -> bool:
    return "moments/" in name or name.startswith("moments")


def _statistic(view: GraphView, value_ref: str, variable: str) -> str | None:
    """The batch statistic feeding an update of `variable`: breadth-first up the value input."""
    frontier = [value_ref]
    seen: set[str] = set()
    for _ in range(_SEARCH_DEPTH):
        following = []
        for ref in frontier:
            node_name, index, _ = split_ref(ref)
            node = view.nodes.get(node_name)
            if node is None or node_name in seen:
                continue
            seen.add(node_name)
            if node.op in FUSED and index in (1, 2):
                return tensor_ref(node_name, index)
            if _is_moments(node_name) and node.op in ("Squeeze", "Mean", "Identity", "Reshape"):
                return tensor_ref(node_name, index)
            if node.op in _VARIABLES or node.op in ("ReadVariableOp", "Const") or variable_of(view, ref):
                continue
            following.extend(r for r in node.input if not r.startswith("^"))
        frontier = following
    return None


def moving_statistics(view: GraphView) -> dict[str, str]:
    """batch statistic tensor ('n:k') -> the variable its update op writes."""
    found: dict[str, str] = {}
    for node in view.graph_def.node:
        if node.op not in ASSIGNS or len(node.input) < 2:
            continue
        variable = variable_of(view, node.input[0])
        if variable is None:
            continue
        stat = _statistic(view, node.input[1], variable)
        if stat is not None:
            name, index, _ = split_ref(stat)
            found.setdefault(f"{name}:{index}", variable)
    return found


def _read(view: GraphView, variable: str, at: str) -> str:
    """A tensor reading `variable`'s value (a ReadVariableOp for resource variables)."""
    var = view.nodes[variable]
    if var.op != "VarHandleOp":
        return variable
    name = view.unique(f"{at}/moving_read")
    view.add(name, "ReadVariableOp", [variable], dtype=var.attr["dtype"])
    return name


def _batch_statistics_by_design(view: GraphView, node) -> bool:
    """A fused batch norm fed empty mean/variance constants and a scale and offset that are no
    variables (tf_keras's LayerNormalization: ones and zeros): it normalises by batch statistics by
    design. A batch norm layer's (variables gamma, beta) in training mode is not."""
    for ref in node.input[1:3]:
        src = view.nodes.get(split_ref(ref)[0])
        if src is not None and src.op == "ReadVariableOp" and src.input:
            ref = src.input[0]
        if variable_of(view, ref) is not None:
            return False
    for ref in node.input[3:5]:
        src = view.nodes.get(split_ref(ref)[0])
        if src is None or src.op != "Const":
            return False
        if any(d.size != 0 for d in src.attr["value"].tensor.tensor_shape.dim[:1]) or \
                not src.attr["value"].tensor.tensor_shape.dim:
            return False
    return True


def apply(view: GraphView, live: set[str], records: list[dict]) -> None:
    """Rewrite the training-mode batch norms among `live` (the nodes the outputs need)."""
    stats = moving_statistics(view)
    problems: list[Unsupported] = []
    for name in sorted(live):
        node = view.nodes.get(name)
        # a missing is_training is TF's default, True (a SavedModel strips default attrs)
        if node is None or node.op not in FUSED or ("is_training" in node.attr and not node.attr["is_training"].b):
            continue
        mean, var = stats.get(f"{name}:1"), stats.get(f"{name}:2")
        if (mean is None or var is None) and _batch_statistics_by_design(view, node):
            continue  # no moving statistics, no mean/variance given: it normalises by its input's own
        if mean is None or var is None:
            problems.append(Unsupported(node.op, name, "batch norm in training mode and no update op "
                                        "names its moving mean/variance; export the inference graph "
                                        "(is_training=False) or pass --set for the training flag"))
            continue
        node.attr["is_training"].b = False
        node.input[3] = _read(view, mean, name)
        node.input[4] = _read(view, var, name)
        records.append({"pass": "batchnorm", "node": name, "moving_mean": mean, "moving_variance": var,
                        "note": f"batch norm {name} in training mode -> inference with {mean}, {var}"})
    for stat, variable in stats.items():
        node_name = split_ref(stat)[0]
        if view.nodes[node_name].op in FUSED or node_name not in live:
            continue
        read = _read(view, variable, node_name)
        view.rewire(stat, read)
        records.append({"pass": "batchnorm", "node": node_name, "statistic": stat, "moving": variable,
                        "note": f"batch statistic {stat} (tf.nn.moments) -> moving value {variable}"})
    if problems:
        raise UnsupportedError(problems)
