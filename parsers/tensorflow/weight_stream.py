"""The reference run reads its weights a few at a time, in the order the graph uses them.

TF's executor runs every op whose inputs are ready: the weight reads (RestoreV2, py_func) have none, so
all of them run first and the whole model sits in memory while the first layers compute. Here each read
waits, by a control dependency, until the weight WINDOW places before it has been used by every copy of
the graph (one copy per input set): the run holds about WINDOW + 1 weights at once, and reading the next
weight still overlaps the compute of the previous ones. The same kernels run on the same values, so the
outputs are bit for bit those of the unordered run; only the schedule changes.

A read is made to wait only for ops that do not depend, even through earlier waits, on that read or on
any read ranked after it: no wait can close a cycle (each read's dependencies are reads of lower rank).
"""

from __future__ import annotations

from typing import Any

WINDOW = 2  # weights read ahead of the one in use: the next read overlaps compute, memory stays ~3 weights
# ops that pass a weight on without copying it: the weight is in use until their consumers have run
_PASS_THROUGH = frozenset({"Identity", "Snapshot", "StopGradient"})


def stream_weights(graph: Any, reads: list[Any]) -> int:
    """Order the weight reads `reads` (tensors of the tf.Graph `graph`, each the output of its own read op)
    by first use and make each wait for the uses of the one WINDOW before it. Returns the number of
    control dependencies added (0 when the graph gives no order to follow)."""
    ops = _topological(graph)
    if len(ops) != len(graph.get_operations()):  # a TF1 while loop (NextIteration cycles): left as it is
        return 0
    position = {op.name: k for k, op in enumerate(ops)}
    read_ops = [t.op for t in reads]
    index = {op.name: i for i, op in enumerate(read_ops)}
    needs: dict[str, int] = {}  # per op: a bit per weight read it depends on
    for op in ops:
        mask = 1 << index[op.name] if op.name in index else 0
        for source in [t.op for t in op.inputs] + list(op.control_inputs):
            mask |= needs[source.name]
        needs[op.name] = mask
    users = [_users(op) for op in read_ops]
    ranked = sorted(range(len(read_ops)), key=lambda i: min((position[u.name] for u in users[i]), default=len(ops)))
    added, below = 0, 0  # below: bits of the reads ranked before the current one
    for r, i in enumerate(ranked):
        if r >= WINDOW:
            gate = [u for u in users[ranked[r - WINDOW]] if needs[u.name] & ~below == 0]
            if gate:
                read_ops[i]._add_control_inputs(gate)  # TF's own way to add a wait to a built op
                added += len(gate)
        below |= 1 << i
    return added


def _users(read: Any) -> list[Any]:
    """The ops that use the weight `read` reads (through pass-through ops), without duplicates."""
    found: dict[str, Any] = {}
    stack = [read]
    while stack:
        op = stack.pop()
        for tensor in op.outputs:
            for consumer in tensor.consumers():
                if consumer.type in _PASS_THROUGH:
                    stack.append(consumer)
                else:
                    found.setdefault(consumer.name, consumer)
    return list(found.values())


def _topological(graph: Any) -> list[Any]:
    """Every op of `graph`, each after all its inputs and control inputs (Kahn's order)."""
    ops = graph.get_operations()
    waiting = {op.name: len(op.inputs) + len(op.control_inputs) for op in ops}
    after: dict[str, list[Any]] = {}
    for op in ops:
        for source in [t.op for t in op.inputs] + list(op.control_inputs):
            after.setdefault(source.name, []).append(op)
    ready = [op for op in ops if waiting[op.name] == 0]
    order = []
    while ready:
        op = ready.pop()
        order.append(op)
        for nxt in after.get(op.name, []):
            waiting[nxt.name] -= 1
            if waiting[nxt.name] == 0:
                ready.append(nxt)
    return order
