"""Shape functions: reshapes, joins and splits, slices, pads, fills, reductions and gathers."""

from __future__ import annotations

import math

import numpy as np

from tf_convert.convert.ir.reference.shape_runtime import ragged_range_rows, unique_along

from ..fold import STRIDED_MASKS
from ..static import ShapeError
from .base import Dims, Node, axis_index, broadcast, known_prod, merge, shape_fn, show

# ---- reshaping ---------------------------------------------------------------------------------

@shape_fn("Reshape")
def _reshape(node: Node) -> list:
    x, shape = node.dims(0), node.ints(1)
    if shape is None:
        s = node.dims(1)
        return [None if s is None or s[0] is None else [None] * s[0]]
    if shape.count(-1) > 1:
        raise ShapeError(f"Reshape: more than one -1 in {shape}")
    total = known_prod(x) if x is not None else None
    known = math.prod(d for d in shape if d != -1)
    if -1 in shape:
        if total is None or known == 0:
            return [[None if d == -1 else d for d in shape]]
        if total % known:
            raise ShapeError(f"Reshape: cannot reshape a tensor of {total} elements to {shape}")
        return [[total // known if d == -1 else d for d in shape]]
    if total is not None and total != known:
        raise ShapeError(f"Reshape: cannot reshape a tensor of {total} elements to {shape}")
    return [shape]


@shape_fn("ExpandDims")
def _expand_dims(node: Node) -> list:
    x, dim = node.dims(0), node.ints(1)
    if x is None or dim is None:
        return [None]
    axis = axis_index(dim[0], len(x) + 1, "ExpandDims axis")
    return [x[:axis] + [1] + x[axis:]]


@shape_fn("Squeeze")
def _squeeze(node: Node) -> list:
    x = node.dims(0)
    if x is None:
        return [None]
    dims = node.attr("squeeze_dims", []) or []
    if not dims:
        if any(d is None for d in x):
            return [None]
        return [[d for d in x if d != 1]]
    axes = {axis_index(int(a), len(x), "Squeeze axis") for a in dims}
    for a in axes:
        if x[a] is not None and x[a] != 1:
            raise ShapeError(f"Squeeze: dimension {a} of {show(x)} is not 1")
    return [[d for i, d in enumerate(x) if i not in axes]]


@shape_fn("Transpose")
def _transpose(node: Node) -> list:
    x, perm = node.dims(0), node.ints(1)
    if perm is None:
        return [None if x is None else [None] * len(x)]
    if x is None:
        return [[None] * len(perm)]
    if sorted(perm) != list(range(len(x))):
        raise ShapeError(f"Transpose: {perm} is not a permutation of rank {len(x)}")
    return [[x[p] for p in perm]]


def _concat(node: Node, axis: list[int] | None, shapes: list) -> list:
    rank = next((len(s) for s in shapes if s is not None), None)
    if rank is None:
        return [None]
    if axis is None:
        return [[None] * rank]
    a = axis_index(axis[0], rank, "ConcatV2 axis")
    out = [None] * rank
    total = 0
    for s in shapes:
        if s is None:
            total = None
            continue
        if len(s) != rank:
            raise ShapeError(f"{node.op.type}: inputs of rank {len(s)} and {rank}")
        rest = merge([d for i, d in enumerate(out) if i != a], [d for i, d in enumerate(s) if i != a],
                     f"{node.op.type}: ")
        out = rest[:a] + [None] + rest[a:]
        total = None if total is None or s[a] is None else total + s[a]
    out[a] = total
    return [out]


@shape_fn("ConcatV2")
def _concat_v2(node: Node) -> list:
    n = len(node.op.inputs) - 1
    return _concat(node, node.ints(n), [node.dims(i) for i in range(n)])


@shape_fn("Concat")
def _concat_v1(node: Node) -> list:
    return _concat(node, node.ints(0), [node.dims(i) for i in range(1, len(node.op.inputs))])


@shape_fn("Pack")
def _pack(node: Node) -> list:
    out = None
    for i in range(len(node.op.inputs)):
        out = merge(out, node.dims(i), "Pack: ")
    if out is None:
        return [None]
    axis = axis_index(int(node.attr("axis", 0)), len(out) + 1, "Pack axis")
    return [out[:axis] + [len(node.op.inputs)] + out[axis:]]


@shape_fn("Unpack")
def _unpack(node: Node) -> list:
    x = node.dims(0)
    if x is None:
        return [None] * node.n_out
    axis = axis_index(int(node.attr("axis", 0)), len(x), "Unpack axis")
    if x[axis] is not None and x[axis] != node.n_out:
        raise ShapeError(f"Unpack: {node.n_out} outputs from a dimension of size {x[axis]}")
    return [x[:axis] + x[axis + 1:]] * node.n_out


@shape_fn("Split")
def _split(node: Node) -> list:
    axis, x = node.ints(0), node.dims(1)
    n = node.n_out
    if x is None or axis is None:
        return [None if x is None else [None] * len(x)] * n
    a = axis_index(axis[0], len(x), "Split axis")
    if x[a] is not None and x[a] % n:
        raise ShapeError(f"Split: dimension {a} of size {x[a]} does not split into {n}")
    piece = list(x)
    piece[a] = None if x[a] is None else x[a] // n
    return [piece] * n


@shape_fn("SplitV")
def _split_v(node: Node) -> list:
    x, sizes, axis = node.dims(0), node.ints(1), node.ints(2)
    n = node.n_out
    if x is None or axis is None or sizes is None:
        return [None if x is None else [None] * len(x)] * n
    a = axis_index(axis[0], len(x), "SplitV axis")
    if -1 in sizes and x[a] is not None:
        sizes = list(sizes)
        sizes[sizes.index(-1)] = x[a] - (sum(sizes) + 1)
    if x[a] is not None and -1 not in sizes and sum(sizes) != x[a]:
        raise ShapeError(f"SplitV: sizes {sizes} do not add up to dimension {a} of size {x[a]}")
    return [x[:a] + [None if s == -1 else s] + x[a + 1:] for s in sizes]


@shape_fn("Slice")
def _slice(node: Node) -> list:
    """A bound the graph computes leaves only the sizes it sets unknown."""
    x, begin, size = node.dims(0), node.partial_ints(1), node.partial_ints(2)
    if begin is None or size is None:
        return [None if x is None else [None] * len(x)]
    if x is None:
        return [[None if s == -1 else s for s in size]]
    out = []
    for n, b, s in zip(x, begin, size):
        if s == -1:
            out.append(None if n is None or b is None else n - b)
        else:
            if n is not None and b is not None and s is not None and (b < 0 or b + s > n):
                raise ShapeError(f"Slice: begin {begin} size {size} out of bounds for {show(x)}")
            out.append(s)
    return [out]


def _strided_axis(n: int | None, b: int | None, e: int | None, s: int | None, begin_all: bool,
                  end_all: bool) -> int | None:
    if n is None or s is None or (b is None and not begin_all) or (e is None and not end_all):
        return None
    if s == 0:
        raise ShapeError("StridedSlice: a stride of 0")
    return len(range(*slice(None if begin_all else b, None if end_all else e, s).indices(n)))


@shape_fn("StridedSlice")
def _strided_slice(node: Node) -> list:
    """Bounds the graph computes (x[i] with i fed at run time) leave only the sizes they set unknown."""
    x, begin, end, strides = node.dims(0), node.partial_ints(1), node.partial_ints(2), node.partial_ints(3)
    if x is None or begin is None or end is None or strides is None:
        return [None]
    masks = {m: int(node.attr(m, 0)) for m in STRIDED_MASKS}
    ellipsis = next((i for i in range(len(begin)) if masks["ellipsis_mask"] >> i & 1), None)
    spec = list(range(len(begin))) + ([] if ellipsis is not None else [-1])
    used = sum(1 for i in range(len(begin)) if i != ellipsis and not masks["new_axis_mask"] >> i & 1)
    out: list = []
    axis = 0
    for i in spec:
        if i == -1 or i == ellipsis:
            for _ in range(len(x) - used):
                out.append(x[axis])
                axis += 1
        elif masks["new_axis_mask"] >> i & 1:
            out.append(1)
        elif axis >= len(x):
            raise ShapeError(f"StridedSlice: the slice spec indexes more than the {len(x)} axes of {show(x)}")
        elif masks["shrink_axis_mask"] >> i & 1:
            n = x[axis]
            if n is not None and begin[i] is not None and not -n <= begin[i] < n:
                raise ShapeError(f"StridedSlice: index {begin[i]} out of range for an axis of size {n}")
            axis += 1
        else:
            out.append(_strided_axis(x[axis], begin[i], end[i], strides[i], bool(masks["begin_mask"] >> i & 1),
                                     bool(masks["end_mask"] >> i & 1)))
            axis += 1
    return [out]


@shape_fn("Pad", "PadV2", "MirrorPad")
def _pad(node: Node) -> list:
    x, pads = node.dims(0), node.value(1)
    if pads is None:
        return [None if x is None else [None] * len(x)]
    pads = pads.reshape(-1, 2)
    if x is not None and len(x) != len(pads):
        raise ShapeError(f"{node.op.type}: paddings for rank {len(pads)} on a tensor of rank {len(x)}")
    x = x if x is not None else [None] * len(pads)
    return [[None if n is None else n + int(p[0]) + int(p[1]) for n, p in zip(x, pads)]]


@shape_fn("Tile")
def _tile(node: Node) -> list:
    x, mult = node.dims(0), node.ints(1)
    if mult is None:
        return [None if x is None else [None] * len(x)]
    x = x if x is not None else [None] * len(mult)
    return [[None if n is None else n * m for n, m in zip(x, mult)]]


@shape_fn("Fill", "BroadcastTo")
def _fill(node: Node) -> list:
    dims = node.ints(0 if node.op.type == "Fill" else 1)
    if dims is None:
        s = node.dims(0 if node.op.type == "Fill" else 1)
        return [None if s is None or s[0] is None else [None] * s[0]]
    if node.op.type == "BroadcastTo":
        broadcast(node.dims(0), dims)
    return [dims]


@shape_fn("BroadcastArgs")
def _broadcast_args(node: Node) -> list:
    a, b = node.dims(0), node.dims(1)
    return [[None if a is None or b is None or None in a + b else max(a[0], b[0])]]


@shape_fn("Range")
def _range(node: Node) -> list:
    values = [node.value(i) for i in range(3)]
    if any(v is None for v in values):
        return [[None]]
    start, limit, delta = (v.item() for v in values)
    if delta == 0:
        raise ShapeError("Range: delta is 0")
    return [[max(0, math.ceil((limit - start) / delta))]]


def _reduced(node: Node, x: Dims, axes: list[int] | None, keep: bool) -> Dims:
    if x is None:
        return None
    if axes is None:
        return [None] * len(x) if keep else None
    axes_set = {axis_index(a, len(x), f"{node.op.type} axis") for a in axes} if x else set()
    if keep:
        return [1 if i in axes_set else d for i, d in enumerate(x)]
    return [d for i, d in enumerate(x) if i not in axes_set]


@shape_fn("Sum", "Prod", "Mean", "Max", "Min", "All", "Any", "EuclideanNorm")
def _reduce(node: Node) -> list:
    return [_reduced(node, node.dims(0), node.ints(1), bool(node.attr("keep_dims", False)))]


@shape_fn("ArgMax", "ArgMin")
def _arg(node: Node) -> list:
    axis = node.ints(1)
    return [_reduced(node, node.dims(0), axis[:1] if axis is not None else None, False)]


@shape_fn("GatherV2", "Gather")
def _gather(node: Node) -> list:
    params, indices = node.dims(0), node.dims(1)
    axis = node.ints(2) if node.op.type == "GatherV2" else [0]
    if params is None or indices is None or axis is None:
        return [None]
    a = axis_index(axis[0], len(params), "GatherV2 axis")
    return [params[:a] + indices + params[a + 1:]]


# ---- one-hot token ids ------------------------------------------------------------

@shape_fn("OneHot")
def _one_hot(node: Node) -> list:
    indices, depth = node.dims(0), node.ints(1)
    if indices is None:
        return [None]
    axis = int(node.attr("axis", -1))
    axis = axis_index(axis, len(indices) + 1, "OneHot axis")
    return [indices[:axis] + [depth[0] if depth is not None else None] + indices[axis:]]


# ---- reverse, LRN, fake quantization -----------------------------------------------------------
@shape_fn("ReverseV2", "LRN", "FakeQuantWithMinMaxArgs", "FakeQuantWithMinMaxVars",
          "FakeQuantWithMinMaxVarsPerChannel")
def _same_as_input(node: Node) -> list:
    return [node.dims(0)]


@shape_fn("GatherNd")
def _gather_nd(node: Node) -> list:
    """indices.shape[:-1] + params.shape[depth:]."""
    params, indices = node.dims(0), node.dims(1)
    if params is None or indices is None or indices[-1] is None:
        return [None]
    return [list(indices[:-1]) + list(params[indices[-1]:])]


@shape_fn("ScatterNd")
def _scatter_nd(node: Node) -> list:
    """The shape input's value; only its length when that is not a constant."""
    shape = node.ints(2)
    if shape is None:
        s = node.dims(2)
        return [None if s is None or s[0] is None else [None] * s[0]]
    return [shape]


# ---- scatter, segment, index and search ops ------------------------------
@shape_fn("TensorScatterUpdate", "TensorScatterAdd", "TensorScatterSub", "TensorScatterMax", "TensorScatterMin",
          "ScatterNdNonAliasingAdd", "Reverse", "ReverseSequence", "Roll", "InvertPermutation", "DataFormatDimMap",
          "DataFormatVecPermute", "Cross", "CumulativeLogsumexp")
def _like_first_input(node: Node) -> list:
    return [node.dims(0)]


@shape_fn("ConjugateTranspose")
def _conjugate_transpose(node: Node) -> list:
    return _transpose(node)


@shape_fn("SparseToDense")
def _sparse_to_dense(node: Node) -> list:
    shape = node.ints(1)
    if shape is None:
        s = node.dims(1)
        return [None if s is None or s[0] is None else [None] * s[0]]
    return [shape]


def _segmented(node: Node, rows: int | None) -> Dims:
    """`rows` segments of data's trailing shape: data.shape[ids.rank:]."""
    data, ids = node.dims(0), node.dims(1)
    if data is None or ids is None:
        return None
    return [rows] + list(data[len(ids):])


@shape_fn("SegmentSum", "SegmentMean", "SegmentMax", "SegmentMin", "SegmentProd")
def _segment(node: Node) -> list:
    """max(id) + 1 rows when the ids are constants (TF itself leaves the count unknown)."""
    ids = node.ints(1)
    return [_segmented(node, max(ids) + 1 if ids else None)]


@shape_fn("UnsortedSegmentSum", "UnsortedSegmentMax", "UnsortedSegmentMin", "UnsortedSegmentProd")
def _unsorted_segment(node: Node) -> list:
    n = node.ints(2)
    return [_segmented(node, n[0] if n is not None else None)]


@shape_fn("Bincount", "DenseBincount")
def _bincount(node: Node) -> list:
    size = node.ints(1)
    n = size[0] if size is not None else None
    x = node.dims(0)
    if node.op.type == "DenseBincount" and x is not None and len(x) == 2:
        return [[x[0], n]]
    return [[n]]


@shape_fn("Unique", "UniqueV2", "UniqueWithCounts", "UniqueWithCountsV2")
def _unique(node: Node) -> list:
    """(values, indices, counts): how many values there are follows the data (TF leaves every size of a
    UniqueV2's values unknown), but for a constant input."""
    x, value = node.dims(0), node.value(0)
    axes = node.ints(1) if node.op.type.endswith("V2") else []
    if x is None or axes is None:
        return [None, None, [None]]
    axis = axes[0] % len(x) if axes and x else 0
    if value is not None:
        found = unique_along(value, axis)
        return [list(found[0].shape), list(found[1].shape), list(found[2].shape)]
    values = [None] * len(x) if node.op.type.endswith("V2") else [None]
    return [values, [x[axis] if x else None], [None]]


@shape_fn("CTCGreedyDecoder")
def _ctc_greedy_decoder(node: Node) -> list:
    """(indices, values, shape, log_probability): how many classes are kept follows the data."""
    x = node.dims(0)
    return [[None, 2], [None], [2], [x[1] if x else None, 1]]


@shape_fn("RaggedRange")
def _ragged_range(node: Node) -> list:
    """(row_splits, values): one row per element of the broadcast inputs; how many values follows the data."""
    dims = [node.dims(i) for i in range(3)]
    if any(d is None or len(d) > 1 for d in dims):
        return [[None], [None]]
    rows = [d[0] for d in dims if d]
    n = max(rows) if rows and None not in rows else (1 if not rows else None)
    values = [node.value(i) for i in range(3)]
    if all(v is not None for v in values):
        broadcast = np.broadcast_arrays(*[np.asarray(v).reshape(-1) for v in values])
        return [[n + 1 if n is not None else None], [int(ragged_range_rows(*broadcast)[0][-1])]]
    return [[n + 1 if n is not None else None], [None]]


@shape_fn("InTopK", "InTopKV2")
def _in_top_k(node: Node) -> list:
    predictions = node.dims(0)
    return [None if predictions is None else [predictions[0]]]


@shape_fn("LinSpace")
def _lin_space(node: Node) -> list:
    num = node.ints(2)
    return [[num[0] if num is not None else None]]


@shape_fn("ConcatOffset")
def _concat_offset(node: Node) -> list:
    return [node.dims(1)] * node.n_out


@shape_fn("UnravelIndex")
def _unravel_index(node: Node) -> list:
    indices, dims = node.dims(0), node.dims(1)
    if indices is None or dims is None:
        return [None]
    return [list(dims) + ([] if not indices else [known_prod(indices)])]


@shape_fn("LowerBound", "UpperBound")
def _search_sorted(node: Node) -> list:
    return [node.dims(1)]


@shape_fn("TensorStridedSliceUpdate")
def _strided_slice_update(node: Node) -> list:
    return [node.dims(0)]


@shape_fn("SparseTensorDenseAdd")
def _sparse_dense_add(node: Node) -> list:
    return [node.dims(3)]


@shape_fn("SparseDenseCwiseAdd", "SparseDenseCwiseMul", "SparseDenseCwiseDiv")
def _sparse_dense_cwise(node: Node) -> list:
    return [node.dims(1)]


@shape_fn("SparseReduceSum")
def _sparse_reduce_sum(node: Node) -> list:
    shape, axes = node.ints(2), node.ints(3)
    if shape is None:
        return [None]
    return [_reduced(node, shape, axes, bool(node.attr("keep_dims", False)))]


@shape_fn("DynamicStitch", "ParallelDynamicStitch")
def _dynamic_stitch(node: Node) -> list:
    """max(index) + 1 rows when every index is a constant."""
    n = len(node.op.inputs) // 2
    indices = [node.value(i) for i in range(n)]
    data, index_dims = node.dims(n), node.dims(0)
    if data is None or index_dims is None:
        return [None]
    rows = None if any(v is None for v in indices) else max((int(v.max()) + 1 for v in indices if v.size),
                                                             default=0)
    return [[rows] + list(data[len(index_dims):])]


@shape_fn("DynamicPartition")
def _dynamic_partition(node: Node) -> list:
    """Each partition's row count when the partitions are constants (TF leaves it unknown)."""
    data, partition_dims, partitions = node.dims(0), node.dims(1), node.value(1)
    if data is None or partition_dims is None:
        return [None] * node.n_out
    rest = list(data[len(partition_dims):])
    return [[None if partitions is None else int((partitions == p).sum())] + rest for p in range(node.n_out)]


@shape_fn("SparseSegmentSum", "SparseSegmentMean", "SparseSegmentSqrtN", "SparseSegmentSumWithNumSegments",
          "SparseSegmentMeanWithNumSegments", "SparseSegmentSqrtNWithNumSegments")
def _sparse_segment(node: Node) -> list:
    data = node.dims(0)
    if node.op.type.endswith("WithNumSegments"):
        n = node.ints(3)
        rows = n[0] if n is not None else None
    else:
        ids = node.ints(2)
        rows = max(ids) + 1 if ids else None
    return [None if data is None else [rows] + list(data[1:])]


@shape_fn("Where")
def _where(node: Node) -> list:
    """(true elements, rank): the count only when the condition is a constant."""
    x, value = node.dims(0), node.value(0)
    if x is None:
        return [None]
    return [[None if value is None else int(np.count_nonzero(value)), len(x)]]


@shape_fn("HistogramFixedWidth")
def _histogram(node: Node) -> list:
    n = node.ints(2)
    return [[n[0] if n is not None else None]]


@shape_fn("SparseTensorDenseMatMul")
def _sparse_dense_matmul(node: Node) -> list:
    shape, b = node.ints(2), node.dims(3)
    rows = None if shape is None else shape[1 if node.attr("adjoint_a", False) else 0]
    cols = None if b is None else b[0 if node.attr("adjoint_b", False) else 1]
    return [[rows, cols]]


@shape_fn("SparseSoftmax")
def _sparse_softmax(node: Node) -> list:
    return [node.dims(1)]


def _sparse_at(node: Node, indices: int, shape: int) -> tuple[np.ndarray | None, list[int] | None]:
    """A SparseTensor's constant indices (nnz, rank) and dense shape, each None where not constant."""
    dense, at = node.ints(shape), node.value(indices)
    if at is not None and dense is not None:
        at = at.reshape(-1, len(dense))
    return at, dense


def _sparse_out(count: int | None, rank: int | None) -> list:
    """(indices, values, shape) dims of a SparseTensor output of `count` values."""
    return [[count, rank], [count], [rank]]


@shape_fn("SparseReorder")
def _sparse_reorder(node: Node) -> list:
    return [node.dims(0), node.dims(1)]


@shape_fn("SparseSlice")
def _sparse_slice_shape(node: Node) -> list:
    at, dense = _sparse_at(node, 0, 2)
    start, size = node.ints(3), node.ints(4)
    rank = node.dims(2)[0] if node.dims(2) else None
    if at is None or dense is None or start is None or size is None:
        return _sparse_out(None, rank)
    end = np.minimum(np.asarray(start) + size, dense)
    return _sparse_out(int(np.all((at >= start) & (at < end), axis=1).sum()), rank)


@shape_fn("SparseConcat")
def _sparse_concat_shape(node: Node) -> list:
    n = int(node.attr("N"))
    counts = [(node.dims(i) or [None])[0] for i in range(n)]
    rank = next((d[1] for d in (node.dims(i) for i in range(n)) if d is not None), None)
    return _sparse_out(None if None in counts else sum(counts), rank)


@shape_fn("SparseSplit")
def _sparse_split_shape(node: Node) -> list:
    k = int(node.attr("num_split"))
    at, dense = _sparse_at(node, 1, 3)
    axis = node.ints(0)
    rank = node.dims(3)[0] if node.dims(3) else None
    if at is None or dense is None or axis is None:
        counts = [None] * k
    else:
        a = axis[0] % len(dense)
        base, extra = divmod(dense[a], k)
        starts = np.cumsum([0] + [base + (p < extra) for p in range(k)])
        counts = [int(((at[:, a] >= starts[p]) & (at[:, a] < starts[p + 1])).sum()) for p in range(k)]
    return [[c, rank] for c in counts] + [[c] for c in counts] + [[rank]] * k


@shape_fn("SparseFillEmptyRows")
def _sparse_fill_empty_rows_shape(node: Node) -> list:
    at, dense = _sparse_at(node, 0, 2)
    rank = node.dims(2)[0] if node.dims(2) else None
    nnz = (node.dims(1) or [None])[0]
    rows = dense[0] if dense is not None else None
    count = None if at is None or dense is None else len(at) + len(set(range(dense[0])) - set(at[:, 0].tolist()))
    return [[count, rank], [count], [rows], [nnz]]


@shape_fn("SparseReduceMax")
def _sparse_reduce_max(node: Node) -> list:
    return _sparse_reduce_sum(node)


@shape_fn("SparseReduceMaxSparse", "SparseReduceSumSparse")
def _sparse_reduce_sparse(node: Node) -> list:
    at, dense = _sparse_at(node, 0, 2)
    axes, keep = node.ints(3), bool(node.attr("keep_dims", False))
    if at is None or dense is None or axes is None:
        return [None] * 3
    reduced = {a % len(dense) for a in axes} or set(range(len(dense)))
    groups = {tuple(r) for r in np.delete(at, sorted(reduced), 1).tolist()}
    return _sparse_out(len(groups), len(dense) if keep else len(dense) - len(reduced))


@shape_fn("SparseSparseMaximum", "SparseSparseMinimum")
def _sparse_sparse(node: Node) -> list:
    a, dense = _sparse_at(node, 0, 2)
    b, _ = _sparse_at(node, 3, 5)
    rank = node.dims(2)[0] if node.dims(2) else None
    if a is None or b is None:
        return [[None, None], [None]]
    count = len({tuple(r) for r in a.tolist()} | {tuple(r) for r in b.tolist()})
    return [[count, rank], [count]]


@shape_fn("SparseBincount")
def _sparse_bincount(node: Node) -> list:
    size, dense = node.ints(3), node.ints(2)
    n = size[0] if size is not None else None
    if dense is None:
        return [None]
    return [[n] if len(dense) == 1 else [dense[0], n]]
