"""Token models: Embedding as an IR gather from its table; the attention layers
MultiHeadAttention, Attention (Luong) and AdditiveAttention (Bahdanau), lowered to IR
linear/reshape/transpose/matmul/softmax as Keras computes them. Dropout inside them is identity at
inference. use_causal_mask=True is a constant additive mask before the softmax, an integer
attention_mask of MultiHeadAttention a computed one (0 / -1e9). Other masks are
refused by name: a mask changes the numbers, and an ignored one would be silently wrong."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import sequence_masks
from .call import Call, TensorRef
from .table import TABLE


def integer_ids(call: Call, x: str) -> str:
    """`x` as integer ids: Keras casts float ids to int32 (truncating) before a lookup; so does the IR."""
    if call.graph.tensors[x].dtype in ("int32", "int64"):
        return x
    name = call.graph.unique_name(call.name + "/ids")
    return call.graph.add_node("cast", name, [x], call.shape(x), {"dtype": "int32"}, source_op="Cast",
                               out_dtype="int32")


@TABLE.register("Embedding")
def embedding(call: Call) -> list[str]:
    shape = call.shape()
    if len(shape) > 2:
        raise call.unsupported(f"ids of rank {len(shape)}: only (batch, sequence) ids are supported")
    table = np.asarray(call.weights[0], np.float32)
    ids = integer_ids(call, call.x)
    out = call.add("gather", [call.const(table, "/embeddings"), ids], (*shape, table.shape[1]), {"axis": 0})
    if call.cfg("mask_zero", False):  # the step mask ids != 0, for the layers after (keras.masks)
        keep = call.add("cast", [ids], shape, {"dtype": "bool"}, suffix="/nonzero", out_dtype="bool")
        sequence_masks.keep_steps(call, keep)
    return [out]


# ---- attention ------------------------------------------------------------------------------------


def _project(call: Call, x: str, kernel: np.ndarray, bias: np.ndarray | None, suffix: str) -> str:
    """x (B, T, D) @ kernel (D, *out) + bias (*out) -> (B, T, *out): a linear over the last axis (T stays
    free), then the heads split off it."""
    b, t, d = call.shape(x)
    out = tuple(kernel.shape[1:])
    params = {"weight": np.ascontiguousarray(kernel.reshape(d, -1).T, np.float32)}
    if bias is not None:
        params["bias"] = np.asarray(bias, np.float32).reshape(-1)
    y = call.add("linear", [x], (b, t, params["weight"].shape[0]), {}, params, suffix=f"/{suffix}")
    if len(out) == 1:
        return y
    return call.add("reshape", [y], (b, t, *out), {"shape": (b, t, *out)}, suffix=f"/{suffix}/shape")


def _transpose(call: Call, x: str, perm: tuple[int, ...], suffix: str) -> str:
    shape = call.shape(x)
    return call.add("transpose", [x], tuple(shape[p] for p in perm), {"perm": perm}, suffix=suffix)


def _scale(call: Call, x: str, factor: float | np.ndarray, suffix: str) -> str:
    value = np.asarray(factor, np.float32).reshape((1,) * (len(call.shape(x)) - np.ndim(factor)) + np.shape(factor))
    return call.add("mul", [x, call.const(value, f"{suffix}/factor")], call.shape(x), suffix=suffix)


# Keras masks a score by putting -1e9 in its place (MultiHeadAttention) or subtracting 1e9 from it
# (Attention's causal mask). Where a row keeps a score, a masked one's exp underflows to exactly 0 beside
# the row's maximum, so adding a constant 0 / -1e9 tensor gives the same probabilities bit for bit; a row
# masked whole is another matter (_attend_masked).
_MASKED = -1e9


def _attend(call: Call, scores: str, value: str, suffix: str = "") -> str:
    """softmax(scores) over the last axis (after the causal mask, with use_causal_mask), then @ value."""
    shape = call.shape(scores)
    if call.kwargs.get("use_causal_mask"):
        queries, keys = shape[-2:]  # Keras keeps key j for query i where j <= i (cumsum indices)
        mask = np.where(_causal(queries, keys) > 0, np.float32(0), np.float32(_MASKED))
        causal = call.const(mask.reshape((1,) * (len(shape) - 2) + mask.shape), f"{suffix}/causal_mask")
        scores = call.add("add", [scores, causal], shape, suffix=f"{suffix}/causal")
    probs = call.add("softmax", [scores], shape, {"axis": len(shape) - 1}, suffix=f"{suffix}/softmax")
    out_shape = (*shape[:-1], call.shape(value)[-1])
    return call.add("matmul", [probs, value], out_shape, suffix=f"{suffix}/context")


def _tensor(value: Any) -> str | None:
    return value.name if isinstance(value, TensorRef) else None


def _causal(queries: int, keys: int) -> np.ndarray:
    """1 where Keras's causal mask keeps key j for query i (j <= i), else 0."""
    return np.tril(np.ones((queries, keys), np.float32))


# Keras 3 runs MultiHeadAttention through ops.dot_product_attention unless the layer has dropout; that
# kernel keeps a score where the mask casts to True and puts TF's large negative in the others' place.
_DOT_PRODUCT_FILL = np.float32(3.38953e38 * -0.7)  # keras.src.backend.tensorflow.nn._get_large_negative


def _attend_masked(call: Call, scores: str, value: str, mask: str) -> str:
    """MultiHeadAttention with an attention_mask (B, T or 1, S), as Keras 3 computes it (and-ed with the
    causal mask under use_causal_mask). A masked score is replaced, not shifted, so a query whose keys are
    all masked is exactly what Keras gives it at any score size:
    - no dropout (dot_product_attention): kept where mask != 0, masked ones get TF's large negative; such
      a query attends uniformly;
    - with dropout (the Softmax layer): kept where mask > 0, masked ones get -1e9 and probability 0 after
      the softmax; such a query attends to nothing.
    Integer masks only (a float mask's fractions would need Keras's own comparison)."""
    shape, dtype = call.shape(mask), call.graph.tensors[mask].dtype
    if len(shape) != 3 or dtype not in ("int32", "int64"):
        raise call.unsupported(f"attention_mask of shape {shape} and type {dtype}: only an integer "
                               "(batch, queries or 1, keys) mask is supported")
    b, t, k = shape
    keep = call.add("cast", [mask], shape, {"dtype": "float32"}, suffix="/mask/float", out_dtype="float32")
    keep = call.add("reshape", [keep], (b, 1, t, k), {"shape": (b, 1, t, k)}, suffix="/mask/heads")
    if call.kwargs.get("use_causal_mask"):  # Keras ands the two masks
        queries, keys = call.shape(scores)[-2:]
        causal = call.const(_causal(queries, keys).reshape(1, 1, queries, keys), "/mask/causal")
        keep = call.add("mul", [keep, causal], (b, 1, queries, keys), suffix="/mask/and_causal")
    softmax_layer = bool(call.cfg("dropout", 0.0))
    compare, against, fill = ("greater", 0.5, _MASKED) if softmax_layer else ("not_equal", 0.0, _DOT_PRODUCT_FILL)
    threshold = call.const(np.full((1, 1, 1, 1), against), "/mask/threshold")
    keep = call.add(compare, [keep, threshold], call.shape(keep), suffix="/mask/keep", out_dtype="bool")
    shape = call.shape(scores)
    masked = call.add("select", [keep, scores, call.const(np.full((1, 1, 1, 1), fill), "/mask/fill")],
                      shape, suffix="/masked", out_dtype="float32")
    probs = call.add("softmax", [masked], shape, {"axis": len(shape) - 1}, suffix="/softmax")
    if softmax_layer:  # the Softmax layer zeroes what it masked (a query masked whole gets zeros)
        probs = call.add("select", [keep, probs, call.const(np.zeros((1, 1, 1, 1)), "/mask/zero")], shape,
                         suffix="/softmax/masked", out_dtype="float32")
    return call.add("matmul", [probs, value], (*shape[:-1], call.shape(value)[-1]), suffix="/context")


def _refuse_masks(call: Call, allowed: tuple[str, ...] = ()) -> None:
    for key in ("attention_mask", "mask", "query_mask", "value_mask", "key_mask"):
        if key not in allowed and call.kwargs.get(key) is not None:
            raise call.unsupported(f"{key}: attention masks are not supported for this layer")
    if call.kwargs.get("return_attention_scores"):
        raise call.unsupported("return_attention_scores=True is not supported")


@TABLE.register("MultiHeadAttention")
def multi_head_attention(call: Call) -> list[str]:
    _refuse_masks(call, allowed=("attention_mask",))
    for key, ok in (("use_gate", False), ("sliding_window", None)):
        if call.cfg(key, ok) != ok:
            raise call.unsupported(f"{key}={call.cfg(key)!r} is not supported")
    axes = call.cfg("attention_axes")
    query = call.inputs[0]
    if len(call.shape(query)) != 3 or (axes is not None and list(axes) not in ([1], [-2])):
        raise call.unsupported("only (batch, sequence, features) inputs attending over the sequence are supported")
    value = call.inputs[1] if len(call.inputs) > 1 else _tensor(call.kwargs.get("value"))
    key = call.inputs[2] if len(call.inputs) > 2 else _tensor(call.kwargs.get("key")) or value
    heads, key_dim = int(call.cfg("num_heads")), int(call.cfg("key_dim"))
    value_dim = int(call.cfg("value_dim") or key_dim)
    (qk, qb), (kk, kb), (vk, vb), (ok_, ob) = _projections(call)
    expect = {"query": (qk, (call.shape(query)[-1], heads, key_dim)),
              "key": (kk, (call.shape(key)[-1], heads, key_dim)),
              "value": (vk, (call.shape(value)[-1], heads, value_dim))}
    for what, (w, shape) in expect.items():
        if tuple(w.shape) != shape:
            raise call.unsupported(f"{what} kernel of shape {tuple(w.shape)}, expected {shape}")
    if tuple(ok_.shape[:2]) != (heads, value_dim):
        raise call.unsupported(f"output kernel of shape {tuple(ok_.shape)}, expected ({heads}, {value_dim}, ...)")
    q = _transpose(call, _project(call, query, qk, qb, "query"), (0, 2, 1, 3), "/query/heads")  # B N T H
    q = _scale(call, q, 1.0 / math.sqrt(float(key_dim)), "/query/scaled")  # Keras scales the query first
    k = _transpose(call, _project(call, key, kk, kb, "key"), (0, 2, 3, 1), "/key/heads")  # B N H S
    v = _transpose(call, _project(call, value, vk, vb, "value"), (0, 2, 1, 3), "/value/heads")  # B N S Hv
    b, n, t, _ = call.shape(q)
    scores = call.add("matmul", [q, k], (b, n, t, call.shape(k)[-1]), suffix="/scores")
    mask = _tensor(call.kwargs.get("attention_mask"))
    attended = _attend(call, scores, v) if mask is None else _attend_masked(call, scores, v, mask)
    context = _transpose(call, attended, (0, 2, 1, 3), "/context/tokens")  # B T N Hv
    return [_project_heads(call, context, ok_, ob)]


_PROJECTIONS = ("query", "key", "value", "attention_output")


def _projections(call: Call) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """(kernel, bias or None) of each of MultiHeadAttention's sublayers, found by the sublayer name
    in the weight names ('mha/query/kernel' in .h5, 'query/0' in .keras)."""
    by_layer: dict[str, list[np.ndarray]] = {}
    for name, array in zip(call.weight_names, call.weights):
        parts = name.split(":")[0].split("/")
        by_layer.setdefault(parts[-2] if len(parts) > 1 else "", []).append(array)
    per = 2 if call.cfg("use_bias", True) else 1
    if any(len(by_layer.get(p, [])) != per for p in _PROJECTIONS):
        found = {k: len(v) for k, v in by_layer.items()}
        raise call.unsupported(f"weights {found}: expected {per} for each of {', '.join(_PROJECTIONS)}")
    return [(by_layer[p][0], by_layer[p][1] if per == 2 else None) for p in _PROJECTIONS]


def _project_heads(call: Call, x: str, kernel: np.ndarray, bias: np.ndarray | None) -> str:
    """(B, T, N, Hv) @ kernel (N, Hv, *out) -> (B, T, *out)."""
    b, t, n, h = call.shape(x)
    merged = call.add("reshape", [x], (b, t, n * h), {"shape": (b, t, n * h)}, suffix="/context/merged")
    y = _project(call, merged, kernel.reshape(n * h, *kernel.shape[2:]), bias, "attention_output")
    return y


def _query_value_key(call: Call) -> tuple[str, str, str]:
    _refuse_masks(call)
    if len(call.inputs) not in (2, 3) or any(len(call.shape(t)) != 3 for t in call.inputs):
        raise call.unsupported("inputs must be [query, value] or [query, value, key] of rank 3")
    query, value = call.inputs[:2]
    return query, value, call.inputs[2] if len(call.inputs) == 3 else value


def _sum_last(call: Call, x: str, suffix: str) -> str:
    """sum over the last axis as mean * count (the IR has no reduce_sum)."""
    shape = call.shape(x)
    mean = call.add("reduce_mean", [x], shape[:-1], {"axes": (len(shape) - 1,), "keepdims": False},
                    suffix=f"{suffix}/mean")
    return _scale(call, mean, float(shape[-1]), f"{suffix}/sum")


def _tanh_of_sum(call: Call, query: str, key: str, scale: np.ndarray | float | None) -> str:
    """tanh(query[:, :, None] (+) key[:, None]) (B, Tq, Tv, D), the scale inside the tanh when given."""
    (b, tq, d), tv = call.shape(query), call.shape(key)[1]
    q = call.add("reshape", [query], (b, tq, 1, d), {"shape": (b, tq, 1, d)}, suffix="/query/expanded")
    k = call.add("reshape", [key], (b, 1, tv, d), {"shape": (b, 1, tv, d)}, suffix="/key/expanded")
    pairs = call.add("add", [q, k], (b, tq, tv, d), suffix="/pairs")
    if scale is not None:
        pairs = _scale(call, pairs, scale, "/pairs/scaled")
    return call.add("tanh", [pairs], (b, tq, tv, d), suffix="/pairs/tanh")


@TABLE.register("Attention")
def attention(call: Call) -> list[str]:
    query, value, key = _query_value_key(call)
    weights = list(call.weights)
    scale = float(np.asarray(weights.pop(0))) if call.cfg("use_scale", False) else None
    mode = call.cfg("score_mode", "dot")
    (b, tq, _), tv = call.shape(query), call.shape(key)[1]
    if mode == "dot":
        key_t = _transpose(call, key, (0, 2, 1), "/key/transposed")
        scores = call.add("matmul", [query, key_t], (b, tq, tv), suffix="/scores")
        if scale is not None:
            scores = _scale(call, scores, scale, "/scores/scaled")
    elif mode == "concat":
        weight = float(np.asarray(weights.pop(0)))
        summed = _sum_last(call, _tanh_of_sum(call, query, key, scale), "/scores")
        scores = _scale(call, summed, weight, "/scores/weighted")
    else:
        raise call.unsupported(f"score_mode={mode!r} is not supported")
    return [_attend(call, scores, value)]


@TABLE.register("AdditiveAttention")
def additive_attention(call: Call) -> list[str]:
    query, value, key = _query_value_key(call)
    tanh = _tanh_of_sum(call, query, key, None)
    if call.cfg("use_scale", True):  # scale * tanh(q + k), the scale a (D,) vector outside the tanh
        tanh = _scale(call, tanh, np.asarray(call.weights[0], np.float32), "/pairs/weighted")
    return [_attend(call, _sum_last(call, tanh, "/scores"), value)]


# ---- text CNNs: SpatialDropout1D is an inference-time identity like Dropout --------------------------


@TABLE.register("SpatialDropout1D")
def spatial_dropout_1d(call: Call) -> list[str]:
    return [call.x]
