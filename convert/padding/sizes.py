"""Which input sizes a converted graph can run at, and which pads must follow the runtime size.

A graph is *size-free* when every layer computes its output from whatever H/W it gets (convolutions,
pooling, elementwise ops, global pooling...); it is *size-bound* when a layer bakes a spatial size
(a Reshape/Flatten into a Dense, a slice, a constant with a spatial shape, a TF transposed conv whose
output size is a constant). A size-bound model must refuse other sizes; a size-free one must
recompute TF's SAME pads from the runtime size where they depend on it (stride > 1, or average
pooling whose divisor map has the output's size).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..ir.index import GraphIndex
from ..ir.ops import AVERAGING_OPS, OPS, SLIDING_OPS, ops_of_size
from ..ir.runtime_dims import parameter_inputs
from ..sampling.plans import plan_resize
from .rules import effective_kernel

if TYPE_CHECKING:
    from tf_convert.convert.ir import Graph, GraphIndex, Node

# How each op follows the input's H/W (or a sequence's length) is the catalog's `size` rule
# (convert/ir/ops.py); size_flow follows the free axes tensor by tensor.
_SIZE_FREE = ops_of_size("free")  # any H/W from their input's (spatial inputs in, spatial outputs out)
_BROADCASTING = ops_of_size("broadcast")  # free unless an operand has a fixed spatial shape
_GLOBAL_REDUCTIONS = ops_of_size("global_reduce")  # free when they reduce every free axis (or none)


def runtime_same(node: Node) -> bool:
    """Whether a window node's TF SAME pads change with the input size (stride > 1 along an axis
    whose effective window is wider than one pixel)."""
    if node.attrs.get("padding") != "SAME" or node.op not in SLIDING_OPS:
        return False
    a = node.attrs
    dilation = a.get("dilation", (1,) * len(a["kernel"]))
    return any(s > 1 and effective_kernel(k, d) > 1 for k, s, d in zip(a["kernel"], a["stride"], dilation))


def needs_runtime_pads(node: Node) -> bool:
    """Whether a size-free model must compute this node's pads at run time: they change with the size,
    or (average pooling with asymmetric SAME pads) the divisor map does."""
    if runtime_same(node):
        return True
    a = node.attrs
    return node.op in AVERAGING_OPS and a.get("padding") == "SAME" and not _symmetric(a["pads"])


def _symmetric(pads: tuple[int, ...]) -> bool:
    """Flat (before, after) pairs, one per spatial axis (the IR's window pads, 2-D and 3-D)."""
    return all(pads[i] == pads[i + 1] for i in range(0, len(pads), 2))


def size_bound(graph: Graph) -> str | None:
    """Why `graph` only runs at its conversion size (one phrase naming the node), or None if size-free."""
    return size_flow(graph)[1]


def input_free_axes(shape: tuple[int, ...]) -> frozenset[int]:
    """The axes of a graph input that may take any size: an image's H and W (NCHW), a volume's D, H and W
    (NDHWC: both parsers keep rank-5 inputs as TF has them), a sequence's length (axis 1 of (N, L, C)
    features or (N, L) token ids)."""
    return _INPUT_FREE_AXES.get(len(shape), frozenset())


_INPUT_FREE_AXES = {4: frozenset({2, 3}), 5: frozenset({1, 2, 3}), 3: frozenset({1}), 2: frozenset({1})}


def size_words(graph: Graph) -> str:
    """How a summary names the free sizes: "H x W" (images), "D x H x W" (volumes), "length" (sequences),
    or several of them."""
    parameters = parameter_inputs(graph)
    ranks = {len(graph.shape(name)) for name in graph.inputs if name not in parameters}
    words = [w for w, found in (("H x W", 4 in ranks), ("D x H x W", 5 in ranks), ("length", bool(ranks & {2, 3})))
             if found]
    return " and ".join(words) or "H x W"


# graph.metadata key: why a pass pinned the graph to its converted size (a value it fixed there)
FIXED_SIZE_KEY = "fixed_size"


def size_flow(graph: Graph) -> tuple[dict[str, frozenset[int]], str | None]:
    """(free axes per tensor, why the graph is size-bound or None). A tensor's free axes follow the inputs'
    size (an image's H/W, a sequence's length; tensors without one are left out): they start at the
    inputs' (input_free_axes) and follow each node's catalog `size` rule."""
    index = GraphIndex(graph)
    free: dict[str, frozenset[int]] = {}
    parameters = parameter_inputs(graph)  # a fed shape or paddings: no size of its own to follow
    if parameters and parameters >= set(graph.inputs):
        return free, "its inputs are run-time parameters only (a shape, paddings: no image or sequence)"
    if FIXED_SIZE_KEY in graph.metadata:
        return free, graph.metadata[FIXED_SIZE_KEY]
    for name in graph.inputs:
        if name in parameters:
            continue
        axes = input_free_axes(graph.shape(name))
        if not axes:
            return free, f"input {name} is not an image or a sequence (rank {len(graph.shape(name))})"
        free[name] = axes
    for node in graph.nodes:
        if not any(i in free for i in node.inputs):
            continue
        spec = OPS.get(node.op)
        out = _node_flow(graph, index, node, spec.size if spec else "bound", free)
        if isinstance(out, str):
            return free, f"node '{node.name}' ({node.op}) {out}"
        if out:
            free[node.output] = out
    return free, None


def _node_flow(graph: Graph, index: GraphIndex, node: Node, size: str,
               free: dict[str, frozenset[int]]) -> frozenset[int] | str:
    """The free axes of `node`'s output, or why the node bakes the size."""
    fed = free.get(node.inputs[0], frozenset())
    if size in _AXIS_RULES:
        return _AXIS_RULES[size](graph, node, free)
    why = _node_bound(graph, index, node, size, free)
    if why:
        return why
    if node.op in SLIDING_OPS and not fed <= set(range(2, len(graph.shape(node.inputs[0])))):
        return "slides over a tensor whose channels follow the input size"
    if node.op in _BROADCASTING:
        return frozenset().union(*(_aligned(free.get(i, frozenset()), graph, i, node.output) for i in node.inputs))
    if node.op in _GLOBAL_REDUCTIONS:
        axes = {int(a) % len(graph.shape(node.inputs[0])) for a in node.attrs["axes"]}
        return frozenset() if fed <= axes else _kept_axes(fed, axes, bool(node.attrs.get("keepdims")))
    if size == "channel_axis" and len({free.get(i, frozenset()) for i in node.inputs}) > 1:
        return "joins tensors of which only some follow the input size"
    return fed


def _aligned(axes: frozenset[int], graph: Graph, tensor: str, out: str) -> frozenset[int]:
    """`tensor`'s axes as the output's, numpy broadcasting (aligned at the right)."""
    shift = len(graph.shape(out)) - len(graph.shape(tensor))
    return frozenset(a + shift for a in axes)


def _kept_axes(axes: frozenset[int], reduced: set[int], keepdims: bool) -> frozenset[int]:
    return axes if keepdims else frozenset(a - sum(r < a for r in reduced) for a in axes)


def unit_axis_moves(src: tuple[int, ...], dst: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """A reshape from `src` to `dst` that only removes and inserts size-1 axes, as (the `src` axes it
    removes, the `dst` axes it inserts); None for any other reshape. Ties go to keeping the earlier axis."""
    removed, inserted, i, j = [], [], 0, 0
    while i < len(src) or j < len(dst):
        if i < len(src) and j < len(dst) and src[i] == dst[j]:
            i, j = i + 1, j + 1
        elif i < len(src) and src[i] == 1:
            removed.append(i)
            i += 1
        elif j < len(dst) and dst[j] == 1:
            inserted.append(j)
            j += 1
        else:
            return None
    return tuple(removed), tuple(inserted)


def kept_axis_map(src: tuple[int, ...], moves: tuple[tuple[int, ...], tuple[int, ...]]) -> dict[int, int]:
    """Where each `src` axis a unit-axis reshape keeps (unit_axis_moves) lands in its output."""
    removed, inserted = moves
    kept = [a for a in range(len(src)) if a not in removed]
    places = [j for j in range(len(src) - len(removed) + len(inserted)) if j not in inserted]
    return dict(zip(kept, places))


def kept_prefix(src: tuple[int, ...], dst: tuple[int, ...]) -> int:
    """How many leading axes a reshape from `src` to `dst` keeps as they are (it only splits or merges the
    axes after them: MultiHeadAttention's (N, L, H*K) <-> (N, L, H, K))."""
    kept = 0
    while kept < min(len(src), len(dst)) and src[kept] == dst[kept]:
        kept += 1
    return kept


def _reshape_flow(graph: Graph, node: Node, free: dict[str, frozenset[int]]) -> frozenset[int] | str:
    src, dst = graph.shape(node.inputs[0]), graph.shape(node.output)
    fed = free[node.inputs[0]]
    moves = unit_axis_moves(src, dst)
    if moves is None:
        if fed and max(fed) < kept_prefix(src, dst):  # the free axes stay where they are
            return fed
        return "bakes the spatial size into its attributes"
    if any(src[a] == 1 for a in fed):  # which size-1 axis is the free one is a guess: refuse it
        return "reshapes an axis of size 1 that follows the input size"
    places = kept_axis_map(src, moves)
    return frozenset(places[a] for a in fed)


def _transpose_flow(graph: Graph, node: Node, free: dict[str, frozenset[int]]) -> frozenset[int]:
    fed = free[node.inputs[0]]
    return frozenset(j for j, p in enumerate(node.attrs["perm"]) if int(p) in fed)


def _matmul_flow(graph: Graph, node: Node, free: dict[str, frozenset[int]]) -> frozenset[int] | str:
    """a (..., M, K) @ b (..., K, N): free along a's rows, b's columns and the batch axes of either; the
    contracted K may be free only on both sides (attention's probabilities @ values: both L long)."""
    a, b = node.inputs[:2]
    rank_a, rank_b, rank = len(graph.shape(a)), len(graph.shape(b)), len(graph.shape(node.output))
    free_a, free_b = free.get(a, frozenset()), free.get(b, frozenset())
    if (rank_a - 1 in free_a) != (rank_b - 2 in free_b):
        return "multiplies along an axis that follows the input size"
    rows = _aligned(free_a - {rank_a - 1}, graph, a, node.output)
    columns = _aligned(free_b - {rank_b - 2}, graph, b, node.output)
    out_shape = graph.shape(node.output)
    for axes, other in ((rows, b), (columns, a)):  # a free batch axis against a fixed one of the other side
        shape = (1,) * (rank - len(graph.shape(other))) + tuple(graph.shape(other))
        other_free = _aligned(free.get(other, frozenset()), graph, other, node.output)
        if any(x < rank - 2 and shape[x] != 1 and x not in other_free and out_shape[x] != 1 for x in axes):
            return "broadcasts against a fixed spatial size"
    return rows | columns


def _last_axis_flow(graph: Graph, node: Node, free: dict[str, frozenset[int]]) -> frozenset[int] | str:
    fed = free[node.inputs[0]]
    if len(graph.shape(node.inputs[0])) - 1 in fed:
        return "applies weights along an axis that follows the input size"
    return fed


def _own_axes_flow(graph: Graph, node: Node, free: dict[str, frozenset[int]]) -> frozenset[int] | str:
    """Softmax runs at any size along any axis (attention's scores over L keys); layer norm along the axes it
    does not normalise (torch's nn.LayerNorm holds the normalised sizes). A parameter sized along a free
    axis bakes it."""
    fed = free[node.inputs[0]]
    rank = len(graph.shape(node.inputs[0]))
    if fed & {int(a) % rank for a in node.attrs.get("axes", ())}:
        return "normalises along an axis that follows the input size"
    for value in node.params.values():
        shape = (1,) * (rank - len(getattr(value, "shape", ()))) + tuple(getattr(value, "shape", ()))
        if any(shape[a] != 1 for a in fed):
            return "applies weights along an axis that follows the input size"
    return fed


def _recurrent_flow(graph: Graph, node: Node, free: dict[str, frozenset[int]]) -> frozenset[int] | str:
    """Along the time axis (1) of (N, T, F), as long as the target's layer loops over the runtime length;
    a step mask (a second input) runs over the conversion's length (ONNX unrolls it)."""
    if len(node.inputs) > 1:
        return "runs a step mask over the conversion's length"
    if node.attrs.get("fixed_steps"):
        return "is TF's While loop of a fixed trip count (TF runs that many steps at any length)"
    if free[node.inputs[0]] != {1}:
        return "runs along an axis other than its time axis that follows the input size"
    return frozenset({1}) if node.attrs["output"] == "sequence" else frozenset()


def _gather_flow(graph: Graph, node: Node, free: dict[str, frozenset[int]]) -> frozenset[int] | str:
    data, indices = node.inputs[:2]
    if data in free:
        return "gathers from a tensor that follows the input size"
    axis = int(node.attrs["axis"]) % len(graph.shape(data))
    return frozenset(axis + a for a in free[indices])


def _resample_flow(graph: Graph, node: Node, free: dict[str, frozenset[int]]) -> frozenset[int] | str:
    """Free where torch and ONNX (the targets whose models follow the runtime size) resize by constant
    factors, TF's in/out exactly at every size (power-of-two upscales); other resizes bake their size."""
    a = node.attrs
    if a.get("fixed_size"):
        return "resizes to a size fixed in the source graph (TF's output keeps it at any input size)"
    in_hw = graph.shape(node.inputs[0])[2:]
    if any(plan_resize(t, a["mode"], a["coordinate"], in_hw, a["size"]).size_bound for t in ("torch", "onnx")):
        return "resizes to a fixed size"
    return free[node.inputs[0]]


_AXIS_RULES = {"unit_axes": _reshape_flow, "permute": _transpose_flow, "matmul": _matmul_flow,
               "gather_indices": _gather_flow, "resample": _resample_flow, "last_axis": _last_axis_flow,
               "own_axes": _own_axes_flow, "recurrent": _recurrent_flow}


def _node_bound(graph: Graph, index: GraphIndex, node: Node, size: str,
                free: dict[str, frozenset[int]]) -> str | None:
    dilation = node.attrs.get("dilation", (1,) * len(node.attrs.get("kernel", ())))
    if runtime_same(node) and any(effective_kernel(k, d) < s for k, s, d in
                                  zip(node.attrs["kernel"], node.attrs["stride"], dilation)):
        # TF clamps the pad at 0 there; a runtime rule without that clamp (torch.export-friendly
        # tf_same_pad, ONNX auto_pad) would crop instead
        return "has a SAME window narrower than its stride"
    if node.op in AVERAGING_OPS and any(node.attrs["pads"]) and node.attrs.get("padding") != "SAME":
        return "averages over explicit pads (a divisor map of a fixed size)"
    if size == "free":
        # per-channel weights act on axis 1 (channel_affine: its `axis`, the last of a volume's NDHWC); where
        # that axis is a free one (a token model's (N, L)) they bake it
        rank = len(graph.shape(node.inputs[0]))
        channel = int(node.attrs.get("axis", 1)) % rank if rank else 1
        channel_free = any(channel in free.get(i, frozenset()) for i in node.inputs[:1])
        if channel_free and any(getattr(p, "size", 1) > 1 for p in node.params.values()):
            return "applies per-channel weights along a free axis"
        return None
    if size == "tf_padding":
        return None if node.attrs.get("padding") in ("SAME", "VALID") else "has a constant output size"
    if size == "constant_pad":
        return None if node.attrs.get("mode") == "constant" else "mirrors a fixed number of rows"
    if size == "broadcast":
        out = graph.shape(node.output)
        out_free = frozenset().union(*(_aligned(free.get(i, frozenset()), graph, i, node.output) for i in node.inputs))
        for i in node.inputs:
            shape = (1,) * (len(out) - len(graph.shape(i))) + tuple(graph.shape(i))
            fixed = out_free - _aligned(free.get(i, frozenset()), graph, i, node.output)
            if any(shape[a] != 1 for a in fixed):
                if i not in graph.inputs and index.const_value(i) is not None:
                    return "adds a constant with a spatial shape"
                return "broadcasts against a fixed spatial size"
        return None
    if size == "global_reduce":
        fed = free[node.inputs[0]]
        axes = {int(a) % len(graph.shape(node.inputs[0])) for a in node.attrs["axes"]}
        return None if fed <= axes or not fed & axes else "reduces over part of the spatial axes"
    if size == "channel_axis":
        rank = len(graph.shape(node.output))
        axis = int(node.attrs["axis"]) % rank
        return None if all(axis not in free.get(i, frozenset()) for i in node.inputs) else "works along a spatial axis"
    if OPS[node.op].run_time_sizes:  # no attribute holds a size: the parameter the run computes does
        parameter = node.inputs[-1] if node.op == "range" else node.inputs[1]
        return (f"sets its output's sizes from the run-time value '{graph.source_names.get(parameter, parameter)}', "
                "which the check fed at one value (--feed)")
    return "bakes the spatial size into its attributes"
