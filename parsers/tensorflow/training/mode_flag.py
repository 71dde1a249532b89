"""A plain bool scalar Placeholder that only switches training mode is taken as false.

TF 1.x scripts often write `is_training = tf.placeholder(tf.bool, [])` and pass it to batch norm and
dropout (`tf.compat.v1.layers`, tf-slim): each builds a cond whose true branch is the training form
(batch statistics, a random mask) and whose false branch is inference. When every use of the
placeholder on the outputs' path is the predicate of such a cond, inference is `false` and nothing
needs to be asked. Any other use (a cond choosing between activations, arithmetic on the flag)
keeps the value a user decision: `why_not` says which node needs it, for the --set error.
"""

from __future__ import annotations

from typing import Any

from .batchnorm import ASSIGNS, FUSED
from .dropout import RANDOM
from .graph import GraphView, split_ref

_FORWARD = ("Identity", "Snapshot", "StopGradient", "Squeeze")  # the predicate passes through unchanged
# (TF squeezes a cond predicate of unknown rank)
_SWITCH = ("Switch", "RefSwitch")
_IF = ("If", "StatelessIf")
_MERGE = ("Merge", "RefMerge")


def _is_training_op(node: Any) -> bool:
    """Batch norm on batch statistics, an update of its moving statistics, or a random op (a
    dropout mask)."""
    if node.op in FUSED:
        return "is_training" not in node.attr or bool(node.attr["is_training"].b)  # TF's default: True
    return node.op in RANDOM or node.op in ASSIGNS or (node.op == "Mean" and "moments" in node.name)


def _downward(switches: list[str], port: int, consumers: dict[str, list[Any]], live: set[str]) -> set[str]:
    """The live nodes computed from output `port` of the Switches (data, or control through the
    `switch_t` pivot), up to the Merges that close the cond."""
    seen: set[str] = set()
    stack = [c for s in switches for c in consumers.get(s, [])
             if any(split_ref(r)[0] == s and split_ref(r)[1] == port for r in c.input)]
    while stack:
        node = stack.pop()
        if node.name in seen or node.op in _MERGE:
            continue
        seen.add(node.name)
        stack.extend(consumers.get(node.name, []))
    return seen & live


def _true_branch_v1(view: GraphView, cond: str, switches: list[str], consumers: dict[str, list[Any]],
                    live: set[str]) -> list[Any]:
    """What a v1 cond computes when its predicate is true: downward from the Switches' output 1,
    plus what those nodes read inside the cond's name scope that the false side does not (a random
    mask's RandomUniform reads only a constant shape)."""
    taken = _downward(switches, 1, consumers, live)
    other = _downward(switches, 0, consumers, live)
    stack = list(taken)
    while stack:
        for ref in view.nodes[stack.pop()].input:
            name = split_ref(ref)[0]
            if name in view.nodes and name.startswith(cond + "/") and name not in taken | other:
                taken.add(name)
                stack.append(name)
    return [view.nodes[n] for n in taken]


def _then_branch_v2(view: GraphView, node: Any) -> list[Any]:
    name = node.attr["then_branch"].func.name
    for function in view.graph_def.library.function:
        if function.signature.name == name:
            return list(function.node_def)
    return []


def why_not(view: GraphView, flag: str, live: set[str]) -> str | None:
    """None when every use of placeholder `flag` on the live path is the predicate of a cond whose
    true branch trains (batch norm on batch statistics, dropout); else the use that is not."""
    consumers = view.consumers()
    stack = [flag]
    seen: set[str] = set()
    conds = 0
    switches: dict[str, list[str]] = {}  # v1 cond -> its Switches
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        for node in consumers.get(name, []):
            if node.name not in live:
                continue
            slots = [k for k, ref in enumerate(node.input) if split_ref(ref)[0] == name and not split_ref(ref)[2]]
            if not slots:
                continue  # a control edge decides nothing
            if node.op in _FORWARD:
                stack.append(node.name)
            elif node.op in _SWITCH and 1 in slots:
                switches.setdefault(_cond_of(node, name), []).append(node.name)
            elif node.op in _IF and slots == [0]:
                if not any(_is_training_op(n) for n in _then_branch_v2(view, node)) and \
                        not any(_is_statistic(view, ref) for ref in node.input[1:]):
                    return f"it chooses between two branches of cond '{node.name}' that are not batch " \
                           "norm or dropout"
                conds += 1
            else:
                return f"node '{node.name}' ({node.op}) computes with it"
    for cond, members in sorted(switches.items()):
        if not any(_is_training_op(n) for n in _true_branch_v1(view, cond, members, consumers, live)) and \
                not _passes_statistic(view, cond, consumers, live):
            return f"it chooses between two branches of cond '{cond}' that are not batch norm or dropout"
    return None if conds or switches else "it steers no cond"


def _passes_statistic(view: GraphView, cond: str, consumers: dict[str, list[Any]], live: set[str]) -> bool:
    """Whether the cond's true side hands on a batch statistic computed outside it (TF 1.x's
    non-fused batch_normalization: `cond(training, lambda: moments mean, lambda: moving mean)` passes
    tf.nn.moments' Squeeze through a Switch of its own scope)."""
    return any(node.op in _SWITCH and name.startswith(cond + "/") and node.input and _is_statistic(view, node.input[0])
               for name, node in view.nodes.items())


def _is_statistic(view: GraphView, ref: str) -> bool:
    """A batch statistic: output 1/2 of a fused batch norm, or tf.nn.moments' mean/variance."""
    src, index, control = split_ref(ref)
    feeder = view.nodes.get(src)
    return not control and feeder is not None and (
        (feeder.op in FUSED and index in (1, 2)) or ("moments" in src and feeder.op in ("Squeeze", "Mean", "Identity")))


def _cond_of(switch: Any, pred: str) -> str:
    """The v1 cond a Switch belongs to: its Switches read `<cond>/pred_id` (the cond's own
    `<cond>/Switch` reads the predicate itself)."""
    return pred.rsplit("/", 1)[0] if pred.endswith("/pred_id") else switch.name.rsplit("/", 1)[0]


def is_candidate(node: Any) -> bool:
    """A bool scalar Placeholder with no default (flags.is_flag's bool case)."""
    return node.op == "Placeholder" and node.attr["dtype"].type == 10
