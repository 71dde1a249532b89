"""tfgraph (parsers/tensorflow/tfgraph): every shape function and every constant evaluator against
TensorFlow on small real graphs, the errors of the parser's graph model, and that building the IR
from a GraphDef never imports TF's importer or session."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from tests.support.op_samples import _attr, legacy_op
from tf_convert.convert.errors import UnsupportedError, UsageError
from tf_convert.convert.ir.ops import TF_OPS
from tf_convert.parsers.base import ParseOptions
from tf_convert.parsers.tensorflow.build import build_graph
from tf_convert.parsers.tensorflow.loader import Frozen
from tf_convert.parsers.tensorflow.table import TABLE
from tf_convert.parsers.tensorflow.tfgraph import FOLDS, SHAPE_FNS, Graph, NodeAttrs
from tf_convert.parsers.tensorflow.tfgraph.shapes.nn_recurrent import RECURRENT_OP

tf = pytest.importorskip("tensorflow")
v1 = tf.compat.v1
RNG = np.random.default_rng(0)


def _f(*shape):
    return tf.constant(RNG.standard_normal(shape).astype(np.float32))


def _i(values, dtype=np.int32):
    return tf.constant(np.asarray(values, dtype))


def _ph(shape, dtype=tf.float32):
    return v1.placeholder(dtype, shape)


# ---- shape cases: each builds ops into the default graph; every tensor's shape and dtype is compared

SHAPE_CASES = {
    "conv_same_s2": lambda: tf.nn.conv2d(_ph([1, 9, 10, 3]), _f(3, 3, 3, 4), 2, "SAME"),
    "conv_valid_dilated": lambda: tf.nn.conv2d(_ph([2, 11, 12, 3]), _f(3, 2, 3, 4), 1, "VALID", dilations=2),
    "conv_explicit": lambda: tf.nn.conv2d(_ph([1, 7, 8, 3]), _f(3, 3, 3, 5), 2,
                                          [[0, 0], [1, 2], [0, 1], [0, 0]]),
    "conv_grouped": lambda: tf.nn.conv2d(_ph([1, 8, 8, 4]), _f(3, 3, 2, 6), 1, "SAME"),
    "conv_unknown_hw": lambda: tf.nn.conv2d(_ph([None, None, None, 3]), _f(3, 3, 3, 4), 2, "SAME"),
    "depthwise": lambda: tf.nn.depthwise_conv2d(_ph([1, 9, 9, 3]), _f(3, 3, 3, 2), [1, 2, 2, 1], "SAME"),
    "pools": lambda: (tf.nn.max_pool2d(_ph([1, 9, 8, 3]), 3, 2, "SAME"),
                      tf.nn.avg_pool2d(_ph([1, 9, 8, 3]), 2, 3, "VALID")),
    "conv_transpose": lambda: tf.nn.conv2d_transpose(_ph([1, 5, 5, 4]), _f(3, 3, 2, 4), [1, 10, 9, 2], 2, "SAME"),
    "volume": lambda: (tf.nn.conv3d(_ph([1, 7, 9, 5, 2]), _f(3, 3, 3, 2, 4), [1, 2, 2, 1, 1], "SAME"),
                       tf.nn.conv3d(_ph([None, None, 6, 5, 2]), _f(2, 3, 1, 2, 3), [1, 1, 2, 1, 1], "VALID",
                                    dilations=[1, 2, 1, 1, 1]),
                       tf.nn.max_pool3d(_ph([1, 7, 6, 5, 3]), [1, 2, 3, 2, 1], [1, 2, 2, 1, 1], "SAME"),
                       tf.nn.avg_pool3d(_ph([1, 7, 6, 5, 3]), [1, 3, 3, 3, 1], [1, 2, 1, 2, 1], "VALID"),
                       tf.nn.conv3d_transpose(_ph([1, 4, 5, 3, 6]), _f(3, 3, 3, 4, 6), [1, 7, 9, 5, 4],
                                              [1, 2, 2, 2, 1], "SAME")),
    "batch_norm": lambda: v1.nn.fused_batch_norm(_ph([1, 4, 4, 3]), _f(3), _f(3), _f(3), _f(3) ** 2,
                                                 is_training=False),
    "bias_relu": lambda: tf.nn.relu6(tf.nn.bias_add(_ph([2, 5, 3]), _f(3))),
    "unary": lambda: [fn(_ph([2, 3])) for fn in (tf.nn.relu, tf.nn.elu, tf.sigmoid, tf.tanh, tf.exp, tf.sqrt,
                                                 tf.math.rsqrt, tf.square, tf.negative, tf.math.erfc,
                                                 tf.nn.softmax, tf.abs, tf.floor, tf.math.log)]
    + [tf.nn.leaky_relu(_ph([2, 3]), 0.1), tf.cast(_ph([4]), tf.int32)],
    "binary_broadcast": lambda: [fn(_ph([2, 1, 3]), _ph([5, 1])) for fn in (
        tf.add, tf.subtract, tf.multiply, tf.math.truediv, tf.maximum, tf.minimum, tf.pow,
        tf.math.squared_difference, tf.equal, tf.less, tf.greater_equal)]
    + [tf.raw_ops.AddV2(x=_ph([None, 3]), y=_ph([4, 1])), tf.add_n([_ph([2, 3]), _ph([2, None])])],
    "logical_select": lambda: (tf.logical_and(_ph([3], tf.bool), _ph([2, 1], tf.bool)),
                               tf.where(_ph([2, 3], tf.bool), _ph([2, 3]), _ph([1, 3]))),
    "matmul": lambda: (tf.matmul(_ph([4, 3]), _ph([5, 3]), transpose_b=True),
                       tf.matmul(_ph([2, 1, 4, 3]), _ph([5, 3, 6])),
                       tf.matmul(_ph([3, 4, 3]), _ph([3, 2, 4]), adjoint_a=True, adjoint_b=True)),
    "reshape": lambda: (tf.reshape(_ph([2, 3, 4]), [6, -1]), tf.reshape(_ph([2, 3, 4]), [-1]),
                        tf.reshape(_ph([2, 6]), tf.stack([tf.shape(_ph([2, 6]))[0], 3, -1]))),
    "expand_squeeze": lambda: (tf.expand_dims(_ph([2, 3]), -1), tf.expand_dims(_ph([2, 3]), 0),
                               tf.squeeze(_ph([1, 3, 1])), tf.squeeze(_ph([1, 3, 1]), [2])),
    "transpose": lambda: tf.transpose(_ph([2, 3, 4, 5]), [0, 3, 1, 2]),
    "concat_pack": lambda: (tf.concat([_ph([2, 3]), _ph([2, 5])], axis=-1), tf.stack([_ph([2, 3])] * 4, axis=1),
                            tf.unstack(_ph([2, 3, 4]), axis=1)),
    "split": lambda: (tf.split(_ph([2, 6, 4]), 3, axis=1), tf.split(_ph([2, 6, 4]), [1, -1, 2], axis=-1)),
    "slices": lambda: (tf.slice(_ph([4, 5, 6]), [1, 0, 2], [2, -1, 3]), _ph([4, 5, 6, 7])[:, 1:-1, ::2, 3],
                       _ph([4, 5, 6])[..., None, 2:], _ph([4, 5, 6])[::-1, tf.newaxis, :4:3],
                       _ph([4, 5, 6])[-1, ..., -3]),
    "pads": lambda: (tf.pad(_ph([1, 4, 4, 3]), [[0, 0], [1, 2], [0, 1], [0, 0]]),
                     tf.pad(_ph([1, 4, 4, 3]), [[0, 0], [1, 1], [2, 2], [0, 0]], "REFLECT"),
                     tf.pad(_ph([2, 3]), [[1, 0], [0, 2]], constant_values=1.0)),
    "reductions": lambda: [fn(_ph([2, 3, 4, 5]), axis, keepdims=k) for fn in (
        tf.reduce_mean, tf.reduce_max, tf.reduce_sum, tf.reduce_min, tf.reduce_prod)
        for axis, k in (([1, 2], True), ([-1], False))]
    + [tf.argmax(_ph([2, 3, 4]), axis=1)],
    "resize": lambda: (v1.image.resize_bilinear(_ph([1, 5, 6, 3]), [10, 12]),
                       v1.image.resize_nearest_neighbor(_ph([1, 5, 6, 3]), [3, 7]),
                       v1.image.resize_bicubic(_ph([1, 5, 6, 3]), [8, 8]),
                       v1.image.resize_area(_ph([1, 5, 6, 3]), [2, 3])),
    "depth_space": lambda: (tf.nn.depth_to_space(_ph([1, 3, 4, 8]), 2), tf.nn.space_to_depth(_ph([1, 4, 6, 3]), 2)),
    "space_batch": lambda: tf.batch_to_space(
        tf.nn.conv2d(tf.space_to_batch_nd(_ph([1, 9, 10, 3]), [2, 2], [[2, 3], [2, 2]]), _f(3, 3, 3, 4), 1, "VALID"),
        [2, 2], [[0, 1], [0, 0]]),
    "shape_ops": lambda: (tf.shape(_ph([2, None, 3])), tf.size(_ph([2, 3])), tf.rank(_ph([2, 3])),
                          tf.raw_ops.ShapeN(input=[_ph([2, 3]), _ph([4])]),
                          tf.shape(_ph([2, 3]), out_type=tf.int64)),
    "fill_range_tile": lambda: (tf.fill([2, 3], 1.5), tf.range(1, 10, 3), tf.tile(_ph([2, 3]), [2, 1]),
                                tf.raw_ops.ZerosLike(x=_ph([2, 3])), tf.raw_ops.OnesLike(x=_ph([2, None])),
                                tf.raw_ops.Add(x=_ph([2, 1]), y=_ph([3])), tf.raw_ops.Size(input=_ph([2, 3])),
                                tf.raw_ops.Rank(input=_ph([2, 3])),
                                tf.broadcast_to(_ph([3, 1]), [2, 3, 4])),
    "gather": lambda: (tf.gather(_ph([5, 4, 3]), _i([[0, 1], [2, 2]]), axis=1), tf.gather(_ph([5, 4]), _i([3]))),
    "identities": lambda: (tf.identity(_ph([2, 3])), tf.stop_gradient(_ph([2])),
                           tf.identity_n([_ph([2]), _ph([3, 1])]), tf.ensure_shape(_ph([None, 3]), [2, 3]),
                           tf.debugging.check_numerics(_ph([2]), "x"),
                           v1.placeholder_with_default(_f(2, 3), [None, 3])),
    "floor_ops": lambda: (tf.math.floordiv(_ph([2, 3], tf.int32), _ph([3], tf.int32)),
                          tf.math.floormod(_ph([2, 3]), _ph([1]))),
    "more_elementwise": lambda: [getattr(tf.raw_ops, n)(x=_ph([2, None])) for n in (
        "Ceil", "Erf", "IsFinite", "IsInf", "IsNan", "Reciprocal", "Inv", "Rint", "Round", "Sign")]
    + [getattr(tf.raw_ops, n)(features=_ph([None, 3])) for n in ("Selu", "Softplus", "Softsign")]
    + [tf.raw_ops.LogSoftmax(logits=_ph([2, 3])), tf.raw_ops.LogicalNot(x=_ph([2], tf.bool)),
       tf.raw_ops.Cumsum(x=_ph([2, 3]), axis=1), tf.raw_ops.Snapshot(input=_ph([3])),
       tf.raw_ops.PreventGradient(input=_ph([3]))]
    + [getattr(tf.raw_ops, n)(x=_ph([2, 1]), y=_ph([3])) for n in (
        "Div", "DivNoNan", "TruncateDiv", "Greater", "LessEqual", "NotEqual", "RealDiv")]
    + [tf.raw_ops.LogicalOr(x=_ph([2, 1], tf.bool), y=_ph([3], tf.bool)),
       tf.raw_ops.Select(condition=_ph([2], tf.bool), x=_ph([2, 3]), y=_ph([None, 3]))],
    "more_shapes": lambda: (tf.raw_ops.Concat(concat_dim=_i(1), values=[_ph([2, 3]), _ph([2, None])]),
                            tf.raw_ops.Gather(params=_ph([5, 4]), indices=_i([[1, 2]])),
                            tf.raw_ops.BroadcastArgs(s0=_ph([3], tf.int32), s1=_ph([2], tf.int32)),
                            tf.reduce_all(_ph([2, 3], tf.bool), 1), tf.reduce_any(_ph([2, 3], tf.bool), 0, True),
                            tf.argmin(_ph([2, 3, 4]), -1),
                            tf.raw_ops.BatchMatMul(x=_ph([2, 4, 3]), y=_ph([2, 3, 5])),
                            tf.raw_ops.BatchMatMulV3(x=_ph([2, 4, 3]), y=_ph([1, 3, 5]), Tout=tf.float32),
                            tf.raw_ops.BiasAddV1(value=_ph([2, 3]), bias=_f(3)),
                            tf.raw_ops.FusedBatchNorm(x=_ph([1, 4, 4, 3]), scale=_f(3), offset=_f(3), mean=_f(3),
                                                      variance=_f(3), is_training=False),
                            tf.raw_ops.FusedBatchNormV2(x=_ph([1, 3, 4, 4]), scale=_f(3), offset=_f(3),
                                                        mean=_f(3), variance=_f(3), is_training=False,
                                                        data_format="NCHW"),
                            tf.raw_ops.ScaleAndTranslate(images=_ph([1, 5, 6, 3]), size=_i([7, 8]),
                                                         scale=tf.constant([1.4, 1.3]),
                                                         translation=tf.constant([0.0, 0.0])),
                            tf.raw_ops.ResizeBicubicGrad(grads=_ph([1, 8, 8, 3]), original_image=_ph([1, 4, 5, 3]))),
    "issue22_math": lambda: [getattr(tf.raw_ops, n)(x=_ph([2, None])) for n in (
        "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Log1p", "Expm1")]
    + [getattr(tf.raw_ops, n)(x=_ph([2, 1]), y=_ph([3])) for n in ("TruncateMod", "Mod", "Xlogy", "Xlog1py",
                                                                    "Xdivy", "MulNoNan")]
    + [tf.raw_ops.Atan2(y=_ph([2, 1]), x=_ph([3]))]
    + [tf.raw_ops.Cumprod(x=_ph([2, 3]), axis=1), tf.raw_ops.ClipByValue(t=_ph([2, 3]), clip_value_min=_f(),
                                                                         clip_value_max=_f()),
       tf.raw_ops.EuclideanNorm(input=_ph([2, 3, 4]), axis=_i([0, 2]), keep_dims=True),
       *tf.raw_ops.TopKV2(input=_ph([2, 5]), k=_i(3)),
       tf.raw_ops.AccumulateNV2(inputs=[_ph([2, None]), _ph([None, 3])], shape=[2, 3]),
       tf.raw_ops.ApproximateEqual(x=_ph([None, 3]), y=_ph([2, None])),
       tf.raw_ops.Bucketize(input=_ph([2, None]), boundaries=[0.0, 1.0]), tf.raw_ops.L2Loss(t=_ph([2, None]))],
    "training_ops": lambda: (v1.assign(v1.Variable(np.zeros((2, 3), np.float32), use_resource=False), _f(2, 3)),
                             tf.raw_ops.ReadVariableOp(resource=tf.raw_ops.VarHandleOp(
                                 dtype=tf.float32, shape=[4, 2]), dtype=tf.float32),
                             tf.raw_ops.Switch(data=_ph([2, 3]), pred=_ph([], tf.bool)),
                             tf.raw_ops.Merge(inputs=[_ph([2, 3]), _ph([2, 4])]),
                             tf.raw_ops.Exit(data=tf.raw_ops.NextIteration(data=tf.raw_ops.Enter(
                                 data=_ph([2, 3]), frame_name="loop"))),
                             v1.data.make_one_shot_iterator(tf.data.Dataset.from_tensors(
                                 (np.zeros((2, 3), np.float32), np.zeros(4, np.int64)))).get_next(),
                             tf.no_op()),
    # token ids
    "one_hot": lambda: (tf.one_hot(_ph([2, 5], tf.int32), 7), tf.one_hot(_ph([3], tf.int64), 4, axis=0),
                        tf.one_hot(_ph([2, None], tf.int32), 3, axis=1)),

    "patches_einsum": lambda: (tf.image.extract_patches(_ph([2, 9, 8, 3]), [1, 3, 2, 1], [1, 2, 3, 1], [1, 2, 1, 1],
                                                        "SAME"),
                               tf.image.extract_patches(_ph([1, 7, 6, 2]), [1, 2, 2, 1], [1, 1, 2, 1],
                                                        [1, 1, 1, 1], "VALID"),
                               tf.einsum("bij,bjk->bki", _ph([2, 3, 4]), _ph([2, 4, None])),
                               tf.einsum("ij->ji", _ph([3, 5])), tf.reverse(_ph([2, None, 3]), [1]),
                               tf.gather_nd(_ph([3, 4, None]), _i([[[0, 1]], [[2, 3]]])),
                               tf.nn.lrn(_ph([1, 3, None, 6]), 2),
                               tf.scatter_nd(_i([[1], [0]]), _ph([2, None]), _i([4, 3])),
                               tf.quantization.fake_quant_with_min_max_args(_ph([2, None])),
                               tf.quantization.fake_quant_with_min_max_vars(_ph([None, 3]), _ph([]), _ph([])),
                               tf.quantization.fake_quant_with_min_max_vars_per_channel(_ph([2, 3]), _ph([3]),
                                                                                        _ph([3]))),
    # ids that are placeholders where TF leaves a size unknown (constants give it here)
    "opsb_scatter_segment": lambda: [getattr(tf.raw_ops, n)(tensor=_ph([4, None, 3]), indices=_i([[1], [0]]),
                                                            updates=_ph([2, 5, 3])) for n in (
        "TensorScatterUpdate", "TensorScatterAdd", "TensorScatterSub", "TensorScatterMax", "TensorScatterMin")]
    + [tf.raw_ops.ScatterNdNonAliasingAdd(input=_ph([4, 3]), indices=_i([[1, 2]]), updates=_ph([1])),
       tf.raw_ops.SparseToDense(sparse_indices=_i([[0, 1]]), output_shape=_i([3, 4]), sparse_values=_ph([1]),
                                default_value=_ph([]))]
    + [getattr(tf.raw_ops, f"Segment{k}")(data=_ph([6, None, 2]), segment_ids=_ph([6], tf.int32))
       for k in ("Sum", "Mean", "Max", "Min", "Prod")]
    + [getattr(tf.raw_ops, f"UnsortedSegment{k}")(data=_ph([2, 3, 4]), segment_ids=_ph([2, 3], tf.int32),
                                                   num_segments=_i(5)) for k in ("Sum", "Max", "Min", "Prod")]
    + [tf.raw_ops.Bincount(arr=_ph([2, 3], tf.int32), size=_i(7), weights=tf.constant([], tf.float32)),
       tf.raw_ops.DenseBincount(input=_ph([2, 3], tf.int32), size=_i(5), weights=tf.constant([], tf.float32)),
       tf.raw_ops.InTopK(predictions=_ph([3, 5]), targets=_ph([3], tf.int32), k=2),
       tf.raw_ops.InTopKV2(predictions=_ph([None, 5]), targets=_ph([None], tf.int64), k=_i(2, np.int64))]
    + [tf.raw_ops.SparseTensorDenseAdd(a_indices=_i([[0, 1]], np.int64), a_values=_ph([1]),
                                       a_shape=_i([3, 4], np.int64), b=_ph([3, 4])),
       tf.raw_ops.SparseReduceSum(input_indices=_i([[0, 1]], np.int64), input_values=_ph([1]),
                                  input_shape=_i([3, 4], np.int64), reduction_axes=_i([1]), keep_dims=True)]
    + [getattr(tf.raw_ops, n)(sp_indices=_i([[0, 1]], np.int64), sp_values=_ph([1]), sp_shape=_i([3, 4], np.int64),
                              dense=_ph([4])) for n in ("SparseDenseCwiseAdd", "SparseDenseCwiseMul",
                                                        "SparseDenseCwiseDiv")]
    + [tf.raw_ops.DynamicStitch(indices=[_i([[0, 2]]), _i([1])], data=[_ph([1, 2, 3]), _ph([1, 3])]),
       tf.raw_ops.ParallelDynamicStitch(indices=[_ph([2], tf.int32)], data=[_ph([2, 4])]),
       *tf.raw_ops.DynamicPartition(data=_ph([2, 3, 4]), partitions=_ph([2, 3], tf.int32), num_partitions=2)]
    + [getattr(tf.raw_ops, n)(data=_ph([5, 3]), indices=_ph([4], tf.int32), segment_ids=_ph([4], tf.int32))
       for n in ("SparseSegmentSum", "SparseSegmentMean", "SparseSegmentSqrtN")]
    + [getattr(tf.raw_ops, f"{n}WithNumSegments")(data=_ph([5, 3]), indices=_ph([4], tf.int32),
                                                  segment_ids=_ph([4], tf.int32), num_segments=_i(6))
       for n in ("SparseSegmentSum", "SparseSegmentMean", "SparseSegmentSqrtN")],
    "opsb_index": lambda: (tf.raw_ops.Reverse(tensor=_ph([2, None, 3]), dims=[False, True, False]),
                           tf.raw_ops.ReverseSequence(input=_ph([2, 5, 3]), seq_lengths=_ph([2], tf.int64), seq_dim=1),
                           tf.roll(_ph([3, None]), 2, 1), tf.raw_ops.InvertPermutation(x=_ph([5], tf.int32)),
                           tf.raw_ops.DataFormatDimMap(x=_ph([3], tf.int32)),
                           tf.raw_ops.DataFormatVecPermute(x=_ph([4], tf.int32)),
                           tf.raw_ops.Cross(a=_ph([2, 3]), b=_ph([2, 3])),
                           tf.raw_ops.ConjugateTranspose(x=_ph([2, 3, 4]), perm=_i([2, 0, 1])),
                           tf.raw_ops.LinSpace(start=_ph([]), stop=_ph([]), num=_i(7)),
                           *tf.raw_ops.ConcatOffset(concat_dim=_i(1), shape=[_ph([3], tf.int32)] * 3),
                           tf.raw_ops.UnravelIndex(indices=_ph([5], tf.int32), dims=_i([3, 4])),
                           tf.raw_ops.LowerBound(sorted_inputs=_ph([2, 5]), values=_ph([2, 3])),
                           tf.raw_ops.UpperBound(sorted_inputs=_ph([2, 5]), values=_ph([2, 3]), out_type=tf.int64),
                           tf.raw_ops.Where(condition=_ph([2, 3], tf.bool)),
                           tf.raw_ops.CumulativeLogsumexp(x=_ph([2, None]), axis=_i(1)),
                           tf.raw_ops.HistogramFixedWidth(values=_ph([7]), value_range=_f(2), nbins=_i(4)),
                           tf.raw_ops.SparseTensorDenseMatMul(a_indices=_i([[0, 1]], np.int64), a_values=_ph([1]),
                                                              a_shape=_i([3, 4], np.int64), b=_ph([5, 4]),
                                                              adjoint_b=True),
                           tf.raw_ops.SparseSoftmax(sp_indices=_i([[0, 1]], np.int64), sp_values=_ph([1]),
                                                    sp_shape=_i([3, 4], np.int64))),
    # sparse ops: placeholder indices (TF leaves the value counts unknown; constant indices give them here)
    "opsb_sparse": lambda: (
        *tf.raw_ops.SparseReorder(input_indices=_ph([3, 2], tf.int64), input_values=_ph([3]),
                                  input_shape=_i([3, 4], np.int64)),
        *tf.raw_ops.SparseSlice(indices=_ph([3, 2], tf.int64), values=_ph([3]), shape=_i([3, 4], np.int64),
                                start=_i([0, 1], np.int64), size=_i([2, 2], np.int64)),
        *tf.raw_ops.SparseConcat(indices=[_ph([3, 2], tf.int64), _ph([2, 2], tf.int64)], values=[_ph([3]), _ph([2])],
                                 shapes=[_i([3, 4], np.int64)] * 2, concat_dim=1),
        *(t for ts in tf.raw_ops.SparseSplit(split_dim=_i(1, np.int64), indices=_ph([3, 2], tf.int64),
                                             values=_ph([3]), shape=_i([3, 4], np.int64), num_split=2) for t in ts),
        *tf.raw_ops.SparseFillEmptyRows(indices=_ph([3, 2], tf.int64), values=_ph([3]),
                                        dense_shape=_i([5, 4], np.int64), default_value=_ph([])),
        tf.raw_ops.SparseReduceMax(input_indices=_ph([3, 2], tf.int64), input_values=_ph([3]),
                                   input_shape=_i([3, 4], np.int64), reduction_axes=_i([1])),
        *tf.raw_ops.SparseReduceMaxSparse(input_indices=_ph([3, 2], tf.int64), input_values=_ph([3]),
                                          input_shape=_i([3, 4], np.int64), reduction_axes=_i([1])),
        *tf.raw_ops.SparseReduceSumSparse(input_indices=_ph([3, 2], tf.int64), input_values=_ph([3]),
                                          input_shape=_i([3, 4], np.int64), reduction_axes=_i([0])),
        *(getattr(tf.raw_ops, n)(a_indices=_ph([3, 2], tf.int64), a_values=_ph([3]), a_shape=_i([3, 4], np.int64),
                                 b_indices=_ph([2, 2], tf.int64), b_values=_ph([2]), b_shape=_i([3, 4], np.int64))[k]
          for n in ("SparseSparseMaximum", "SparseSparseMinimum") for k in (0, 1)),
        tf.raw_ops.SparseBincount(indices=_ph([3, 2], tf.int64), values=_ph([3], tf.int32),
                                  dense_shape=_i([4, 6], np.int64), size=_i(5), weights=tf.constant([], tf.float32))),
    "opsb_block_rnn": lambda: (
        tf.raw_ops.SparseMatMul(a=_ph([3, 4]), b=_ph([5, 4]), transpose_b=True),
        *tf.raw_ops.LSTMBlockCell(x=_ph([3, 5]), cs_prev=_ph([3, 4]), h_prev=_ph([3, 4]), w=_f(9, 16), wci=_f(4),
                                  wcf=_f(4), wco=_f(4), b=_f(16)),
        *tf.raw_ops.BlockLSTM(seq_len_max=_i(2, np.int64), x=_ph([2, 3, 5]), cs_prev=_ph([3, 4]), h_prev=_ph([3, 4]),
                              w=_f(9, 16), wci=_f(4), wcf=_f(4), wco=_f(4), b=_f(16)),
        *tf.raw_ops.BlockLSTMV2(seq_len_max=_i(2, np.int64), x=_ph([2, 3, 5]), cs_prev=_ph([3, 4]),
                                h_prev=_ph([3, 4]), w=_f(9, 16), wci=_f(4), wcf=_f(4), wco=_f(4), b=_f(16)),
        *tf.raw_ops.GRUBlockCell(x=_ph([3, 5]), h_prev=_ph([3, 4]), w_ru=_f(9, 8), w_c=_f(9, 4), b_ru=_f(8),
                                 b_c=_f(4)),
        tf.raw_ops.TensorStridedSliceUpdate(input=_ph([3, 4]), begin=_i([0]), end=_i([2]), strides=_i([1]),
                                            value=_ph([2, 4])),
        tf.raw_ops.SpaceToBatch(input=_ph([2, 5, None, 3]), paddings=_i([[1, 0], [2, 1]]), block_size=3),
        tf.raw_ops.BatchToSpace(input=_ph([8, 3, 4, 2]), crops=_i([[1, 0], [0, 3]]), block_size=2),
        tf.raw_ops.Conv(input=_ph([1, 6, 7, 3]), filter=_f(3, 2, 3, 4), strides=[1, 2, 1, 1], padding="SAME",
                        data_format="CHANNELS_LAST"),
        tf.raw_ops.TridiagonalMatMul(superdiag=_ph([2, 1, 4]), maindiag=_ph([2, 1, 4]), subdiag=_ph([2, 1, 4]),
                                     rhs=_ph([2, 4, 3]))),
}

# identity-likes, the matrix diagonal / band family, nn extras, bitwise ops
_RAW = tf.raw_ops
SHAPE_CASES.update({
    # a run-time loop and a run-time branch (control flow v2: StatelessWhile / StatelessIf with their functions)
    "control_flow": lambda: [
        tf.while_loop(lambda i, x: i < v1.placeholder(tf.int32, (), name="n"), lambda i, x: (i + 1, x * 2.0),
                      (tf.constant(0), _ph([2, None]))),
        tf.cond(v1.placeholder(tf.bool, (), name="p"), lambda: _ph([3, 4]) + 1.0, lambda: _ph([3, 4]) * 2.0)],
    "linalg": lambda: [_RAW.MatrixDeterminant(input=_ph([2, 3, 3])), _RAW.MatrixInverse(input=_ph([None, 4, 4]))],
})
SHAPE_CASES.update({
    # lengths the data decides: the distinct values' count unknown, one index per input slice
    "unique": lambda: [tf.unique(_ph([5], tf.int32)), tf.unique_with_counts(_ph([4], tf.int64), tf.int64),
                       _RAW.UniqueV2(x=_ph([3, 4]), axis=_i([-1], np.int64)),
                       _RAW.UniqueWithCountsV2(x=_ph([3, 2], tf.int32), axis=_i([0]), out_idx=tf.int64)],
    "ctc_greedy_decoder": lambda: _RAW.CTCGreedyDecoder(inputs=_ph([5, 3, 4]), sequence_length=_ph([3], tf.int32),
                                                        merge_repeated=True),
    "ragged_range": lambda: [_RAW.RaggedRange(starts=_ph([4], tf.int32), limits=_i(9), deltas=_i([1, 2, 3, 4])),
                             _RAW.RaggedRange(starts=_i(0, np.int64), limits=_ph([], tf.int64), deltas=_i(1, np.int64),
                                              Tsplits=tf.int32)],
})
SHAPE_CASES.update({
    "identity_likes": lambda: [_RAW.CheckNumericsV2(tensor=_ph([2, None]), message="x"),
                               _RAW.DeepCopy(x=_ph([None, 3])), _RAW.Copy(input=_ph([2, 3])),
                               _RAW.CopyHost(input=_ph([None]))],
    "matrix_band_diag": lambda: [
        _RAW.MatrixBandPart(input=_ph([2, None, 5]), num_lower=_i(1), num_upper=_i(-1)),
        _RAW.MatrixDiagPart(input=_ph([2, 4, 5])), _RAW.MatrixDiagPartV2(input=_ph([3, 4, 6]), k=_i([-2, 1]),
                                                                         padding_value=_f()),
        _RAW.MatrixDiagPartV3(input=_ph([4, 3]), k=_i(1), padding_value=_f(), align="RIGHT_LEFT"),
        _RAW.MatrixDiagPartV3(input=_ph([None, 4, 3]), k=_i([0, 2]), padding_value=_f()),
        _RAW.MatrixDiag(diagonal=_ph([2, 4])),
        _RAW.MatrixDiagV2(diagonal=_ph([2, 3, 4]), k=_i([-1, 1]), num_rows=_i(-1), num_cols=_i(-1),
                          padding_value=_f()),
        _RAW.MatrixDiagV3(diagonal=_ph([2, 4]), k=_i(1), num_rows=_i(4), num_cols=_i(-1), padding_value=_f()),
        _RAW.MatrixDiagV3(diagonal=_ph([4]), k=_i(-2), num_rows=_i(-1), num_cols=_i(5), padding_value=_f()),
        _RAW.MatrixSetDiag(input=_ph([2, 3, 4]), diagonal=_ph([2, 3])),
        _RAW.MatrixSetDiagV2(input=_ph([None, 3, 4]), diagonal=_ph([None, 3]), k=_i(0)),
        _RAW.MatrixSetDiagV3(input=_ph([3, 4]), diagonal=_ph([2, 3]), k=_i([-1, 0])),
        _RAW.Diag(diagonal=_ph([2, 3])), _RAW.DiagPart(input=_ph([2, 3, 2, 3]))],
    "nn_extras": lambda: [
        _RAW.MaxPoolV2(input=_ph([1, 7, None, 3]), ksize=_i([1, 3, 2, 1]), strides=_i([1, 2, 2, 1]), padding="SAME"),
        *_RAW.MaxPoolWithArgmax(input=_ph([2, 6, 5, 3]), ksize=[1, 2, 3, 1], strides=[1, 2, 1, 1], padding="VALID"),
        _RAW.DepthwiseConv2dNativeBackpropInput(input_sizes=_i([1, 9, 8, 3]), filter=_f(3, 3, 3, 2),
                                                out_backprop=_ph([1, 5, 4, 6]), strides=[1, 2, 2, 1],
                                                padding="SAME"),
        _RAW.FusedPadConv2D(input=_ph([1, 6, 7, 3]), paddings=_i([[0, 0], [1, 2], [0, 1], [0, 0]]),
                            filter=_f(3, 2, 3, 4), mode="REFLECT", strides=[1, 2, 1, 1], padding="SAME"),
        _RAW.FusedResizeAndPadConv2D(input=_ph([1, 6, 7, 3]), size=_i([9, 11]),
                                     paddings=_i([[0, 0], [1, 1], [2, 0], [0, 0]]), filter=_f(2, 3, 3, 5),
                                     mode="SYMMETRIC", strides=[1, 1, 2, 1], padding="VALID"),
        *_RAW.SoftmaxCrossEntropyWithLogits(features=_ph([None, 7]), labels=_ph([3, 7])),
        *_RAW.SparseSoftmaxCrossEntropyWithLogits(features=_ph([4, None]), labels=_ph([4], tf.int32)),
        _RAW.QuantizeAndDequantizeV2(input=_ph([2, None]), input_min=_f(), input_max=_f(), range_given=True),
        _RAW.QuantizeAndDequantizeV3(input=_ph([None, 3]), input_min=_f(), input_max=_f(), num_bits=_i(4)),
        _RAW.QuantizeAndDequantizeV4(input=_ph([3]), input_min=_f(), input_max=_f(), range_given=True),
        _RAW.Dilation2D(input=_ph([1, 7, 6, 3]), filter=_f(2, 3, 3), strides=[1, 2, 1, 1], rates=[1, 1, 2, 1],
                        padding="SAME")],
    "image_colour": lambda: [_RAW.RGBToHSV(images=_ph([2, None, 3])), _RAW.HSVToRGB(images=_ph([None, 3])),
                             _RAW.AdjustContrastv2(images=_ph([1, None, 4, 3]), contrast_factor=_f()),
                             _RAW.AdjustSaturation(images=_ph([None, 5, 3]), scale=_f()),
                             _RAW.AdjustHue(images=_ph([2, 4, 3]), delta=_f())],
    "rows_order": lambda: [_RAW.GuaranteeConst(input=_ph([2, None])),
                           _RAW.ParallelConcat(values=[_ph([1, 3]), _ph([1, 3])], shape=[2, 3]),
                           _RAW.NthElement(input=_ph([2, None, 5]), n=_i(2)), _RAW.ToBool(input=_ph([None, 3])),
                           _RAW.InplaceUpdate(x=_ph([4, None]), i=_i([1]), v=_ph([1, 3])),
                           _RAW.InplaceAdd(x=_ph([4, 3]), i=_i([0, 2]), v=_ph([2, 3])),
                           _RAW.InplaceSub(x=_ph([None, 3]), i=_i([0]), v=_ph([1, 3]))],
    # known sizes: TF's own ExtractVolumePatches shape function gives rank 4 for an unknown one
    "volume_patches": lambda: [tf.extract_volume_patches(_ph([1, 5, 7, 6, 2]), [1, 2, 3, 2, 1], [1, 2, 1, 3, 1],
                                                         "SAME"),
                               tf.extract_volume_patches(_ph([2, 7, 6, 5, 1]), [1, 3, 2, 2, 1], [1, 1, 2, 2, 1],
                                                         "VALID")],
    "bitwise": lambda: [_RAW.BitwiseAnd(x=_ph([2, None], tf.int32), y=_ph([3], tf.int32)),
                        _RAW.BitwiseOr(x=_ph([4], tf.int64), y=_ph([2, 1], tf.int64)),
                        _RAW.BitwiseXor(x=_ph([2, 3], tf.int32), y=_ph([], tf.int32)),
                        _RAW.LeftShift(x=_ph([2, 3], tf.int32), y=_ph([3], tf.int32)),
                        _RAW.RightShift(x=_ph([None, 3], tf.int64), y=_ph([1, 1], tf.int64)),
                        _RAW.Invert(x=_ph([2, None], tf.int32)), _RAW.PopulationCount(x=_ph([None, 3], tf.int64))],
    # non-max suppression: the selection's length is unknown unless padded; the spectral ops and their parts
    "detection": lambda: [
        _RAW.NonMaxSuppression(boxes=_ph([7, 4]), scores=_ph([7]), max_output_size=5, iou_threshold=0.5),
        _RAW.NonMaxSuppressionV2(boxes=_ph([7, 4]), scores=_ph([7]), max_output_size=5, iou_threshold=0.5),
        _RAW.NonMaxSuppressionV3(boxes=_ph([None, 4]), scores=_ph([None]), max_output_size=5, iou_threshold=0.5,
                                 score_threshold=0.1),
        *_RAW.NonMaxSuppressionV4(boxes=_ph([7, 4]), scores=_ph([7]), max_output_size=9, iou_threshold=0.5,
                                  score_threshold=0.1, pad_to_max_output_size=True),
        *_RAW.NonMaxSuppressionV5(boxes=_ph([7, 4]), scores=_ph([7]), max_output_size=3, iou_threshold=0.5,
                                  score_threshold=0.1, soft_nms_sigma=0.0, pad_to_max_output_size=False),
        tf.image.crop_and_resize(_ph([2, 6, 7, 3]), _ph([5, 4]), _ph([5], tf.int32), [4, 3]),
        tf.image.crop_and_resize(_ph([None, 6, None, 2]), _ph([None, 4]), _ph([None], tf.int32), [1, 5]),
        *tf.image.combined_non_max_suppression(_ph([2, 7, 1, 4]), _ph([2, 7, 3]), 2, 9, pad_per_class=True),
        *tf.image.combined_non_max_suppression(_ph([None, 7, 3, 4]), _ph([None, 7, 3]), 4, 5)],
    "spectral": lambda: [
        tf.signal.rfft(_ph([2, 9]), [12]), tf.signal.irfft(tf.signal.rfft(_ph([3, None])), [7]),
        tf.signal.rfft2d(_ph([2, 5, 6])), tf.signal.irfft2d(tf.signal.rfft2d(_ph([5, 6])), [4, 9]),
        tf.abs(tf.signal.ifft(tf.signal.fft(tf.complex(_ph([2, 4]), _ph([2, 4]))))),
        tf.math.real(tf.complex(_ph([3]), _ph([3]))), tf.math.imag(tf.signal.rfft(_ph([8]))),
        tf.math.angle(tf.signal.rfft(_ph([None, 8]))),
        tf.signal.ifft2d(tf.signal.fft2d(tf.complex(_ph([2, 3, 4]), _ph([2, 3, 4])))),
        tf.signal.ifft3d(tf.signal.fft3d(tf.complex(_ph([2, 3, 4]), _ph([2, 3, 4])))),
        tf.signal.irfft3d(tf.signal.rfft3d(_ph([2, 3, 4, 5]), [3, 2, 6]), [3, 4, 5])],
})


def _tf_dims(t):
    return None if t.shape.rank is None else t.shape.as_list()


def _build(case):
    graph = tf.Graph()
    with graph.as_default():
        case()
    return graph


@pytest.mark.parametrize("case", sorted(SHAPE_CASES))
def test_shapes_equal_tf(case):
    graph = _build(SHAPE_CASES[case])
    ours = Graph(graph.as_graph_def())
    for op in graph.get_operations():
        if op.type not in SHAPE_FNS:  # no shape function: unknown shapes by design (a dataset's ops)
            continue
        for t in op.outputs:
            mine = ours.get_tensor_by_name(t.name)
            assert mine.shape.dims == _tf_dims(t), (t.name, op.type)
            assert mine.dtype is None or int(mine.dtype) == t.dtype.as_datatype_enum, (t.name, op.type)


# ref-typed spellings (TF1 reference variables) of checked ops, and the deprecated Variable op
_SAME_AS_CHECKED = {"Variable", "RefEnter", "RefExit", "RefMerge", "RefSwitch", "IteratorGetNextSync",
                    "TopK"}  # TopK: TF 2 cannot build it any more (TopKV2 checks the function)
# the converter's own node standing for a recognized recurrent While loop: TF has no such op; its shapes
# are those of the loop it replaces, checked against TF's run in tests/parsers/test_tf_unrolled_loops.py
_OWN_OPS = {RECURRENT_OP}
# ops TF removed or whose stateful twin shares the checked op's functions (a shape and a fold each)
_TWINS = {"BatchMatrixDeterminant": "MatrixDeterminant", "BatchMatrixInverse": "MatrixInverse",
          "If": "StatelessIf", "While": "StatelessWhile"}


def test_twins_share_the_checked_functions():
    for twin, checked in _TWINS.items():
        assert SHAPE_FNS.get(twin) is SHAPE_FNS.get(checked) is not None, twin
        assert FOLDS.get(twin) is FOLDS.get(checked), twin


def test_every_shape_function_is_checked():
    seen = {op.type for case in SHAPE_CASES.values() for op in _build(case).get_operations()}
    seen |= {op.type for op in _build(_legacy_ops).get_operations()}  # test_legacy_shapes_equal_tf_run
    unchecked = set(SHAPE_FNS) - seen - _SAME_AS_CHECKED - _OWN_OPS - set(_TWINS)
    assert not unchecked, sorted(unchecked)


def _legacy_ops() -> list:
    """Ops TF removed from current GraphDefs (imported as GraphDefs of their era), on constants."""
    return [
        legacy_op(tf, "BatchMatrixBandPart", [_f(2, 3, 4), _i(1, np.int64), _i(-1, np.int64)], T=_attr(type=1)),
        legacy_op(tf, "BatchMatrixDiag", [_f(2, 3)], T=_attr(type=1)),
        legacy_op(tf, "BatchMatrixDiagPart", [_f(4, 3, 5)], T=_attr(type=1)),
        legacy_op(tf, "BatchMatrixSetDiag", [_f(2, 3, 4), _f(2, 3)], T=_attr(type=1)),
        legacy_op(tf, "Conv3DBackpropInput", [_f(1, 9, 8, 7, 3), _f(2, 2, 2, 3, 4), _f(1, 5, 4, 4, 4)],
                  T=_attr(type=1), strides=_attr(ints=[1, 2, 2, 2, 1]), padding=_attr(s=b"SAME")),
        legacy_op(tf, "QuantizeAndDequantize", [_f(2, 5)], T=_attr(type=1), range_given=_attr(b=True),
                  input_min=_attr(f=-1.0), input_max=_attr(f=1.0)),
        legacy_op(tf, "AdjustContrast", [_f(1, 4, 6, 3), _f(), _f(), _f()], producer=1, T=_attr(type=1))]


def test_legacy_shapes_equal_tf_run():
    """TF declares no shape for the ops it removed (unknown): ours against the shapes a TF run gives."""
    graph = _build(_legacy_ops)
    ours = Graph(graph.as_graph_def())
    outs = [op.outputs[0] for op in graph.get_operations() if op.name.endswith("/op")]
    with v1.Session(graph=graph) as session:
        values = session.run(outs)
    assert len(outs) == 7
    for t, value in zip(outs, values):
        assert ours.get_tensor_by_name(t.name).shape.dims == list(value.shape), t.name


def test_every_handler_op_has_a_shape_function():
    assert not set(TABLE.ops()) - set(SHAPE_FNS)


# ---- constant folding: each case is built of constants only; every tensor's value is compared -------

def _catalog_ops():
    """Every TF op the op catalog names (its rows' `tf`), on small constants: they fold through the IR
    reference, so this checks the catalog's TF -> IR mapping against TF."""
    from tensorflow.python.framework import op_def_registry

    out = []
    for name, (ir_op, _) in sorted(TF_OPS.items()):
        if ir_op.startswith("logical_"):
            values = [_i([True, False, True], np.bool_), _i([True, True, False], np.bool_)]
        elif ir_op == "truncate_div":
            values = [_i([7, -7, 5]), _i([2, 3, -2])]
        else:
            values = [tf.constant([0.25, 0.5, 0.75], tf.float32), tf.constant([0.5, 1.0, 1.5], tf.float32)]
        args = op_def_registry.get(name).input_arg
        out.append(getattr(tf.raw_ops, name)(**{a.name: v for a, v in zip(args, values)}))
    return out


FOLD_CASES = {
    "catalog": _catalog_ops,
    "ragged_range": lambda: _RAW.RaggedRange(starts=_i([0, 5, 3]), limits=_i(4), deltas=_i([2, -2, 1])),
    "unique": lambda: [tf.unique(_i([4, 1, 4, 0, 1])), tf.unique_with_counts(_f(6) * 0.0 + _i([1.5, 0, -0.0, 1.5, 2, 0],
                                                                                            np.float32), tf.int64),
                       _RAW.UniqueV2(x=_i([[1, 2, 1], [3, 0, 3]]), axis=_i([1], np.int64)),
                       _RAW.UniqueWithCountsV2(x=_i([[1, 2], [1, 2], [0, 0]]), axis=_i([-2]), out_idx=tf.int64)],
    "linalg": lambda: [_RAW.MatrixDeterminant(input=_f(2, 3, 3)),
                       _RAW.MatrixInverse(input=_f(3, 3) + np.eye(3, dtype=np.float32) * 4, adjoint=True)],
    "band": lambda: [_RAW.MatrixBandPart(input=_f(2, 4, 5), num_lower=lower, num_upper=upper)
                     for lower, upper in ((0, -1), (-1, 0), (1, 2), (-1, -1))]
    + [_RAW.MatrixSetDiag(input=_f(2, 3, 3), diagonal=_f(2, 3)),
       _RAW.MatrixSetDiagV2(input=_f(3, 4), diagonal=_f(3), k=0),
       _RAW.MatrixSetDiagV3(input=_f(2, 4, 3), diagonal=_f(2, 3), k=0),
       tf.einsum("i,j->ij", _f(5), _f(3)), tf.einsum("bij,bjk->bik", _f(2, 3, 4), _f(2, 4, 5))],
    "shape_slicing": lambda: tf.stack([tf.shape(_f(2, 3, 4))[1], tf.shape(_f(2, 3, 4))[-1] * 2, -1]),
    "strided": lambda: (_i(np.arange(60).reshape(3, 4, 5))[::-1, 1:, ::2],
                        _i(np.arange(24).reshape(2, 3, 4))[..., None, 1],
                        _i(np.arange(24).reshape(2, 3, 4))[1, :-1, tf.newaxis]),
    "arith": lambda: [fn(_i([[7, -7, 5]]), _i([2, 3, -2])) for fn in (
        tf.add, tf.subtract, tf.multiply, tf.math.floordiv, tf.math.floormod, tf.maximum, tf.minimum,
        tf.equal, tf.not_equal, tf.less, tf.less_equal, tf.greater, tf.greater_equal,
        lambda x, y: tf.raw_ops.Div(x=x, y=y), lambda x, y: tf.raw_ops.TruncateDiv(x=x, y=y),
        lambda x, y: tf.raw_ops.Add(x=x, y=y), lambda x, y: tf.raw_ops.Sub(x=x, y=y))]
    + [tf.math.truediv(_f(3), _f(3)), tf.pow(_f(3) ** 2, _f(3)), tf.math.squared_difference(_f(3), _f(1))],
    "unary": lambda: [fn(_f(2, 3)) for fn in (tf.negative, tf.abs, tf.square, tf.exp, tf.floor, tf.math.ceil,
                                              tf.round, tf.math.reciprocal, tf.sign, tf.sigmoid, tf.tanh,
                                              tf.nn.relu, tf.nn.relu6, tf.zeros_like, tf.ones_like, tf.math.erf,
                                              tf.math.erfc)]
    + [tf.sqrt(_f(3) ** 2), tf.math.rsqrt(_f(3) ** 2 + 1), tf.math.log(_f(3) ** 2 + 1),
       tf.math.logical_not(_i([True, False], np.bool_))],
    "logic_select": lambda: (tf.logical_and(_i([True, False], np.bool_), _i([True, True], np.bool_)),
                             tf.logical_or(_i([True, False], np.bool_), _i([False, False], np.bool_)),
                             tf.where(_i([True, False, True], np.bool_), _f(3), _f(3)),
                             tf.raw_ops.Select(condition=_i([True, False], np.bool_), x=_f(2, 3), y=_f(2, 3))),
    "reduce": lambda: [fn(_i(np.arange(24).reshape(2, 3, 4)), axis, keepdims=k) for fn in (
        tf.reduce_sum, tf.reduce_prod, tf.reduce_mean, tf.reduce_max, tf.reduce_min)
        for axis, k in (([0, 2], False), (-1, True))]
    + [tf.reduce_all(_i([[True, False]], np.bool_), 1), tf.reduce_any(_i([[True, False]], np.bool_), 0),
       tf.argmax(_f(3, 4), 1), tf.argmin(_f(3, 4), 0, output_type=tf.int32)],
    "build": lambda: (tf.fill(_i([2, 3]), 2.5), tf.range(2, 11, 3), tf.range(5, 0, -2, dtype=tf.int64),
                      tf.tile(_i([[1, 2]]), [2, 2]), tf.broadcast_to(_i([1, 2, 3]), [2, 3]),
                      tf.raw_ops.BroadcastArgs(s0=_i([2, 1]), s1=_i([3]))),
    "layout": lambda: (tf.reshape(_f(2, 6), [3, -1]), tf.expand_dims(_f(2, 3), 1), tf.squeeze(_f(1, 3, 1), [0]),
                       tf.transpose(_f(2, 3, 4), [2, 0, 1]), tf.concat([_f(2, 1), _f(2, 3)], 1),
                       tf.stack([_f(2), _f(2)], 1), tf.unstack(_f(3, 2)), tf.split(_f(6, 2), 3),
                       tf.split(_f(2, 7), [2, -1, 1], 1), tf.slice(_f(4, 5), [1, 2], [-1, 2]),
                       tf.raw_ops.Concat(concat_dim=_i(0), values=[_f(1, 2), _f(3, 2)])),
    "gather_cast": lambda: (tf.gather(_f(5, 3), _i([4, 0]), axis=0), tf.gather(_f(2, 5), _i([[1], [3]]), axis=1),
                            tf.raw_ops.Gather(params=_f(4, 2), indices=_i([3, 1])),
                            tf.cast(_f(2, 3) * 10, tf.int32), tf.cast(_i([0, 2]), tf.bool)),
    "nn": lambda: (tf.nn.bias_add(_f(2, 3, 4, 5), _f(3), data_format="NCHW"), tf.nn.bias_add(_f(2, 3), _f(3)),
                   tf.matmul(_f(2, 3), _f(4, 3), transpose_b=True),
                   tf.pad(_f(2, 3), [[1, 0], [0, 2]], constant_values=3.0),
                   tf.pad(_f(3, 4), [[1, 2], [2, 1]], "REFLECT"), tf.pad(_f(3, 4), [[1, 2], [2, 1]], "SYMMETRIC"),
                   tf.add_n([_f(3), _f(3), _f(3)])),
    "passthrough": lambda: (tf.identity(_f(2)), tf.stop_gradient(_f(2)), tf.identity_n([_f(2), _i([1])]),
                            v1.placeholder_with_default(_f(2), [2]), tf.ensure_shape(_f(2, 3), [2, 3]),
                            tf.debugging.check_numerics(_f(2), "x"), tf.raw_ops.Snapshot(input=_f(2)),
                            tf.raw_ops.PreventGradient(input=_f(2)),
                            tf.size(_f(2, 3)), tf.rank(_f(2, 3)), tf.raw_ops.ShapeN(input=[_f(2), _f(1, 4)])),
    "raw": lambda: (tf.raw_ops.Shape(input=_f(2, 3)), tf.raw_ops.Shape(input=_f(4), out_type=tf.int64),
                    tf.raw_ops.Size(input=_f(2, 3)), tf.raw_ops.Rank(input=_f(2, 3)),
                    tf.raw_ops.ZerosLike(x=_i([1, 2])), tf.raw_ops.OnesLike(x=_f(2)),
                    tf.raw_ops.Pad(input=_f(2, 3), paddings=_i([[0, 1], [2, 0]])), tf.raw_ops.Inv(x=_f(3)),
                    tf.raw_ops.Rint(x=_f(3) * 3), tf.raw_ops.BiasAddV1(value=_f(2, 3), bias=_f(3))),
    # indexing ops with constant inputs fold to static values
    "indexing": lambda: (tf.reverse(_f(2, 3, 4), [0, -1]), tf.where(_f(3, 4) > 0.5),
                         tf.gather_nd(_f(3, 4, 2), _i([[0, 1], [2, 3]])), tf.gather_nd(_f(3, 4), _i([[[2], [0]]])),
                         tf.scatter_nd(_i([[1], [3], [1]]), _f(3, 2), _i([5, 2])),
                         # Swin's shift mask: regions written into zeros, one update after another
                         tf.tensor_scatter_nd_update(tf.zeros((4, 4)), _i([[0, 1], [3, 2]]), _f(2)),
                         tf.tensor_scatter_nd_add(_f(4, 3), _i([[1], [1]]), _f(2, 3)),
                         tf.tensor_scatter_nd_sub(_f(4, 3), _i([[2], [0]]), _f(2, 3)),
                         tf.tensor_scatter_nd_max(_f(4, 3), _i([[1, 1], [1, 1]]), _f(2)),
                         tf.tensor_scatter_nd_min(_f(4, 3), _i([[3, 0]]), _f(1))),
    # fake-quantized weights (quantization-aware graphs) fold, per channel too; min == max == 0 gives zeros
    "complex": lambda: (tf.math.real(tf.complex(_f(2, 3), _f(2, 3) * 2) * tf.complex(_f(3), -_f(3))),
                        tf.math.imag(tf.complex(_f(4), _f(4)))),
    "fake_quant": lambda: (tf.quantization.fake_quant_with_min_max_args(_f(4, 5) * 4, -1.5, 2.5, 6, True),
                           tf.quantization.fake_quant_with_min_max_vars(_f(4, 5) * 4, _f() - 2.0, _f() + 2.5, 8),
                           tf.quantization.fake_quant_with_min_max_vars_per_channel(
                               _f(6, 3) * 4, [-1.0, 0.0, -2.0], [1.0, 0.0, 0.7], 5, False)),
}


@pytest.mark.parametrize("case", sorted(FOLD_CASES))
def test_folded_values_equal_tf(case):
    graph = _build(FOLD_CASES[case])
    tensors = [t for op in graph.get_operations() for t in op.outputs]
    with v1.Session(graph=graph) as sess:
        expected = sess.run(tensors)
    ours = Graph(graph.as_graph_def())
    for t, want in zip(tensors, expected):
        got = ours.evaluator.value(ours.get_tensor_by_name(t.name))
        assert got is not None, (t.name, t.op.type)
        got = np.asarray(got)
        assert got.dtype == np.asarray(want).dtype, (t.name, got.dtype, np.asarray(want).dtype)
        # float32 rounding of a difference (a complex product's real part) is relative to its operands' size
        scale = float(np.max(np.abs(want), initial=0.0)) if np.asarray(want).dtype.kind in "fc" else 0.0
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6 * scale, err_msg=t.name)
        assert list(ours.get_tensor_by_name(t.name).shape.dims) == list(np.shape(want)), t.name


def test_every_evaluator_is_checked():
    seen = {op.type for case in FOLD_CASES.values() for op in _build(case).get_operations()}
    assert not set(FOLDS) - seen - set(_TWINS), sorted(set(FOLDS) - seen - set(_TWINS))


def test_const_value_uses_the_same_evaluators():
    from tf_convert.parsers.tensorflow.training.graph import GraphView, const_value

    graph = _build(FOLD_CASES["shape_slicing"])
    view = GraphView(graph.as_graph_def())
    out = graph.get_operations()[-1].outputs[0]
    with v1.Session(graph=graph) as sess:
        np.testing.assert_array_equal(const_value(view, out.name), sess.run(out))
    assert NodeAttrs(view.nodes[out.op.name]).get_attr("axis") == 0


# ---- the parser's errors -----------------------------------------------------------------------

def _frozen(body, shape, outputs=("out:0",)):
    graph = tf.Graph()
    with graph.as_default():
        body(v1.placeholder(tf.float32, shape, name="input"))
    return Frozen(graph.as_graph_def(), ["input:0"], list(outputs))


def test_input_shape_that_does_not_fit():
    frozen = _frozen(lambda x: tf.reshape(x, [-1, 12], name="out"), [None, 5])
    with pytest.raises(UsageError, match=r"does not fit the graph: .*Reshape"):
        build_graph(frozen, ParseOptions(input_shapes={"": (1, 5)}), "m", "frozen_pb")
    frozen = _frozen(lambda x: tf.nn.conv2d(x, _f(3, 3, 4, 2), 1, "SAME", name="out"), [None, 8, 8, None])
    with pytest.raises(UsageError, match=r"does not fit the graph: .*Conv2D.*depth 3"):
        build_graph(frozen, ParseOptions(input_shapes={"": (1, 8, 8, 3)}), "m", "frozen_pb")


def test_constant_without_evaluator_names_op_and_node():
    def body(x):
        size = tf.cast(tf.math.cumsum(_i([2, 3])), tf.int32, name="sizes")
        tf.reshape(x, size, name="out")

    with pytest.raises(UnsupportedError, match=r"Cumsum \(node 'Cumsum'\).*no evaluator"):
        build_graph(_frozen(body, [10]), ParseOptions(), "m", "frozen_pb")


def test_placeholder_on_the_constant_path():
    def body(x):
        scale = v1.placeholder(tf.float32, [], name="scale")
        tf.multiply(x, tf.fill([3], scale), name="out")

    with pytest.raises(UsageError, match=r"placeholder 'scale' has no value.*--set"):
        build_graph(_frozen(body, [3]), ParseOptions(), "m", "frozen_pb")


def test_const_values_come_from_weights_as_they_are():
    class Lazy:  # a streamed weight: shape and dtype, no data until np.asarray
        shape, dtype = (2, 3), np.dtype(np.float32)

        def __array__(self, dtype=None, copy=None):
            raise AssertionError("materialized")

    graph = tf.Graph()
    with graph.as_default():
        tf.identity(tf.constant(np.zeros((2, 3), np.float32), name="w"), name="read")
    lazy = Lazy()
    ours = Graph(graph.as_graph_def(), weights={"w": lazy})
    assert ours.evaluator.value(ours.get_tensor_by_name("read:0")) is lazy
    assert ours.get_tensor_by_name("read:0").shape.dims == [2, 3]


# ---- no TensorFlow importer or session on the way from GraphDef to IR --------------------------

_NO_TF_IMPORT = textwrap.dedent("""
    import sys, importlib.abc
    BLOCKED = ("tensorflow.python.framework.importer", "tensorflow.python.client")

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if any(name == b or name.startswith(b + ".") for b in BLOCKED):
                raise ImportError(f"blocked: {name}")
            return None

    # TF's generated protos (still behind parsers.tensorflow.protos) import the tensorflow package,
    # which imports the importer and the session; that is allowed until the protos are vendored, so
    # those modules are then made to fail on use instead.
    from tf_convert.parsers.tensorflow.protos import GraphDef
    if "tensorflow" in sys.modules:
        import tensorflow as tf
        from tensorflow.python.framework import importer, ops
        from tensorflow.python.client import session

        def refuse(*a, **k):
            raise RuntimeError("TensorFlow was called while building the IR")

        importer.import_graph_def = tf.import_graph_def = refuse
        session.BaseSession.__init__ = refuse
        ops.Graph.__init__ = refuse
    else:
        sys.meta_path.insert(0, Block())

    from tf_convert.convert.errors import ConvertError
    from tf_convert.parsers.base import ParseOptions
    from tf_convert.parsers.tensorflow.build import build_graph
    from tf_convert.parsers.tensorflow.loader import Frozen

    gd = GraphDef()
    gd.ParseFromString(open(sys.argv[1], "rb").read())
    graph = build_graph(Frozen(gd, ["input:0"], ["out:0"]), ParseOptions(), "m", "frozen_pb")
    print("nodes", len(graph.nodes))
""")


def test_building_the_ir_calls_no_tensorflow(tmp_path):
    def body(x):
        y = tf.nn.conv2d(x, _f(3, 3, 3, 4), 2, "SAME")
        n = tf.shape(y)[0]
        tf.nn.softmax(tf.reshape(tf.nn.relu(y), tf.stack([n, -1])), name="out")

    path = tmp_path / "m.pb"
    path.write_bytes(_frozen(body, [1, 9, 9, 3]).graph_def.SerializeToString())
    # this checkout, not an installed one
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "PYTHONPATH": root}
    r = subprocess.run([sys.executable, "-c", _NO_TF_IMPORT, str(path)], capture_output=True, text=True, env=env,
                       cwd=root, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "nodes" in r.stdout


def test_a_loop_is_not_a_constant():
    """A while loop's back edge (Merge <- NextIteration) neither hangs the evaluator nor folds."""
    graph = tf.Graph()
    with graph.as_default():
        c = tf.constant(1.0, name="c")
        merge = tf.raw_ops.Merge(inputs=[c, c], name="m")
        add = tf.add(merge.output, c, name="a")
        tf.raw_ops.NextIteration(data=add, name="n")
    gd = graph.as_graph_def()
    next(n for n in gd.node if n.name == "m").input[1] = "n"  # close the loop
    ours = Graph(gd)
    assert ours.evaluator.value(ours.get_tensor_by_name("a:0")) is None
    found = ours.evaluator.failures_of(ours.get_tensor_by_name("a:0"))
    assert [(op.type, why) for op, why in found] == [("Merge", "no evaluator")]


def test_an_attr_left_out_takes_tfs_default():
    """FunctionDef bodies often omit attrs that have defaults; TF's import fills them in, so do we."""
    graph = tf.Graph()
    with graph.as_default():
        tf.matmul(_ph([2, 3]), _f(3, 4), name="mm")
    gd = graph.as_graph_def()
    node = next(n for n in gd.node if n.name == "mm")
    del node.attr["transpose_a"]
    ours = Graph(gd)
    assert ours.get_operation_by_name("mm").get_attr("transpose_a") is False
    assert ours.get_tensor_by_name("mm:0").shape.dims == [2, 4]


def _stripped_defaults_cases():
    """(op built by TF, attrs to strip): nodes as a FunctionDef body writes them, defaults left out."""
    x4 = lambda: _ph([1, 8, 8, 4])  # noqa: E731
    return [
        ("Conv2D", lambda: tf.nn.conv2d(x4(), _f(3, 3, 4, 2), 2, "SAME"),
         ("data_format", "dilations", "explicit_paddings", "use_cudnn_on_gpu")),
        ("FusedBatchNormV3", lambda: tf.compat.v1.nn.fused_batch_norm(x4(), _f(4), _f(4), _f(4), _f(4) + 1,
                                                                      is_training=False),
         ("epsilon", "exponential_avg_factor", "data_format")),
        ("LeakyRelu", lambda: tf.nn.leaky_relu(x4()), ("alpha",)),
        ("Mean", lambda: tf.reduce_mean(x4(), [1, 2]), ("keep_dims",)),
        ("StridedSlice", lambda: x4()[:, 1:], ("begin_mask", "ellipsis_mask", "new_axis_mask")),
        ("ResizeBilinear", lambda: tf.compat.v1.image.resize_bilinear(x4(), [16, 16]),
         ("align_corners", "half_pixel_centers")),
        ("MaxPool", lambda: tf.nn.max_pool2d(x4(), 3, 2, "SAME"), ("data_format",)),
    ]


@pytest.mark.parametrize("op_type, build, attrs", _stripped_defaults_cases(),
                         ids=lambda v: v if isinstance(v, str) else "")
def test_left_out_attrs_take_the_vendored_defaults_as_tf_fills_them(op_type, build, attrs):
    """known_ops.attr_defaults (tf_op_attrs.txt) gives what TF's import fills in, attr by attr."""
    graph = tf.Graph()
    with graph.as_default():
        build()
    gd = graph.as_graph_def()
    node = next(n for n in gd.node if n.op == op_type)
    for attr in attrs:
        assert attr in node.attr, attr
        del node.attr[attr]
    theirs = tf.Graph()
    with theirs.as_default():
        tf.import_graph_def(gd, name="")
    ours = Graph(gd)
    for attr in attrs:
        mine, tfs = ours.get_operation_by_name(node.name), theirs.get_operation_by_name(node.name)
        assert mine.get_attr(attr) == tfs.get_attr(attr), attr


def _stripped_type_cases():
    """(op type, builder): ops whose type attr `T` has a default, which a SavedModel leaves out of the node
    (tf_keras's LeakyReLU in a SavedModel: its output had no dtype, exit 1)."""
    x4 = lambda: _ph([1, 8, 8, 3])  # noqa: E731
    return [
        ("LeakyRelu", lambda: tf.nn.leaky_relu(x4(), 0.2)),
        ("MaxPool", lambda: tf.nn.max_pool2d(x4(), 3, 2, "SAME")),
        ("LRN", lambda: tf.nn.local_response_normalization(x4())),
        ("RGBToHSV", lambda: tf.image.rgb_to_hsv(x4())),
        ("InvertPermutation", lambda: tf.math.invert_permutation(_i([2, 0, 1]))),
    ]


@pytest.mark.parametrize("op_type, build", _stripped_type_cases(), ids=lambda v: v if isinstance(v, str) else "")
def test_a_left_out_type_attr_gives_the_output_tfs_default_dtype(op_type, build):
    graph = tf.Graph()
    with graph.as_default():
        build()
    gd = graph.as_graph_def()
    node = next(n for n in gd.node if n.op == op_type)
    del node.attr["T"]
    mine = Graph(gd).get_tensor_by_name(f"{node.name}:0").dtype  # before TF's import fills the default in gd
    theirs = tf.Graph()
    with theirs.as_default():
        tf.import_graph_def(gd, name="")
    assert mine is not None and mine.name == theirs.get_tensor_by_name(f"{node.name}:0").dtype.name
