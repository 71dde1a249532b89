"""Every Keras weight checked against its layer's config before anything is built from it.

Keras itself refuses a file whose weights do not fit the layers (count, shape); so do we, naming the
layer and the weight, instead of converting a model that is silently wrong (a bias the config says is
not used, a kernel for another group count) or that the target runtime cannot load.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tf_convert.convert.errors import InputError
from tf_convert.convert.registry import OpTable

Slot = tuple[frozenset[str], tuple[int, ...]]  # accepted names, expected shape
SPECS = OpTable("Keras weight specs")  # layer class -> fn(config, input shape) -> [Slot]
IMPLAUSIBLE = 1e30
UNCHECKED = {"Normalization"}  # weights of their own kind (an int64 count); read only by their handler
# weights whose shapes depend on more than the first input (key/value widths): the handler checks them
CHECKED_BY_HANDLER = {"MultiHeadAttention"}


spec = SPECS.register


def _names(*names: str) -> frozenset[str]:
    return frozenset(names)


def _pair(value: Any) -> tuple[int, int]:
    if isinstance(value, (list, tuple)):
        return int(value[0]), int(value[-1])
    return int(value), int(value)


def _bias(cfg: dict, n: int) -> list[Slot]:
    return [(_names("bias"), (n,))] if cfg.get("use_bias", True) else []


@spec("Conv2D")
def _conv2d(cfg: dict, kin: tuple[int, ...]) -> list[Slot]:
    kh, kw = _pair(cfg["kernel_size"])
    filters, groups, cin = int(cfg["filters"]), int(cfg.get("groups") or 1), kin[-1]
    if groups < 1 or cin % groups or filters % groups:
        raise ValueError(f"groups={groups} does not divide {cin} input and {filters} output channels")
    return [(_names("kernel"), (kh, kw, cin // groups, filters))] + _bias(cfg, filters)


@spec("DepthwiseConv2D")
def _depthwise(cfg: dict, kin: tuple[int, ...]) -> list[Slot]:
    kh, kw = _pair(cfg["kernel_size"])
    mult, cin = int(cfg.get("depth_multiplier") or 1), kin[-1]
    return [(_names("kernel", "depthwise_kernel"), (kh, kw, cin, mult))] + _bias(cfg, cin * mult)


@spec("SeparableConv2D")
def _separable(cfg: dict, kin: tuple[int, ...]) -> list[Slot]:
    kh, kw = _pair(cfg["kernel_size"])
    mult, cin, filters = int(cfg.get("depth_multiplier") or 1), kin[-1], int(cfg["filters"])
    return [
        (_names("depthwise_kernel"), (kh, kw, cin, mult)),
        (_names("pointwise_kernel"), (1, 1, cin * mult, filters)),
    ] + _bias(cfg, filters)


@spec("Conv2DTranspose")
def _transposed(cfg: dict, kin: tuple[int, ...]) -> list[Slot]:
    kh, kw = _pair(cfg["kernel_size"])
    filters = int(cfg["filters"])
    return [(_names("kernel"), (kh, kw, filters, kin[-1]))] + _bias(cfg, filters)


@spec("Dense")
def _dense(cfg: dict, kin: tuple[int, ...]) -> list[Slot]:
    units = int(cfg["units"])
    return [(_names("kernel"), (kin[-1], units))] + _bias(cfg, units)


def _axes(cfg: dict, rank: int) -> list[int]:
    axis = cfg.get("axis", -1)
    axes = [axis] if isinstance(axis, int) else list(axis)
    return [int(a) % rank for a in axes]


@spec("BatchNormalization")
def _batch_norm(cfg: dict, kin: tuple[int, ...]) -> list[Slot]:
    c = tuple(kin[a] for a in _axes(cfg, len(kin)))
    slots = []
    if cfg.get("scale", True):
        slots.append((_names("gamma"), c))
    if cfg.get("center", True):
        slots.append((_names("beta"), c))
    return slots + [(_names("moving_mean"), c), (_names("moving_variance"), c)]


@spec("LayerNormalization")
def _layer_norm(cfg: dict, kin: tuple[int, ...]) -> list[Slot]:
    c = tuple(kin[a] for a in sorted(_axes(cfg, len(kin))))
    slots = []
    if cfg.get("scale", True):
        slots.append((_names("gamma"), c))
    if cfg.get("center", True):
        slots.append((_names("beta"), c))
    return slots


@spec("PReLU")
def _prelu(cfg: dict, kin: tuple[int, ...]) -> list[Slot]:
    shared = {int(a) for a in (cfg.get("shared_axes") or [])}
    return [(_names("alpha"), tuple(1 if i in shared else d for i, d in enumerate(kin) if i > 0))]


@spec("LayerScale")
def _layer_scale(cfg: dict, kin: tuple[int, ...]) -> list[Slot]:
    return [(_names(), (kin[-1],))]  # keras.applications names this variable differently per version


def _policy_name(dtype: Any) -> str | None:
    """'float32', or a DTypePolicy's name ({'class_name': 'DTypePolicy', 'config': {'name': ...}})."""
    if dtype is None:
        return None
    if isinstance(dtype, dict):
        return str(dtype.get("config", {}).get("name", "float32"))
    return str(dtype)


def _basename(name: str | None) -> str | None:
    """'block/conv/kernel:0' -> 'kernel'."""
    return None if name is None else name.rsplit("/", 1)[-1].split(":", 1)[0]


def check(path, layer: str, class_name: str, cfg: dict, kin: Sequence[int] | None,
          weights: list[tuple[str | None, np.ndarray]]) -> None:
    """Raise InputError naming the layer and the weight unless `weights` are what the config asks for."""
    where = f"{path}: layer '{layer}' ({class_name})"
    if class_name in UNCHECKED:
        return
    policy = _policy_name(cfg.get("dtype"))
    if policy is not None and "float" not in policy:
        raise InputError(f"{where}: dtype {policy!r} is not a floating-point policy; the file is corrupt")
    for i, (name, array) in enumerate(weights):
        if array.dtype.kind != "f":
            raise InputError(f"{where}: weight '{name or i}' has dtype {array.dtype}, not floating point; "
                             "the file is corrupt")
        # no trained weight is NaN, infinite or near float32's limit: that is a flipped exponent bit
        if array.size and not (np.isfinite(array).all() and np.abs(array).max() < IMPLAUSIBLE):
            raise InputError(f"{where}: weight '{name or i}' holds NaN, infinite or implausibly large "
                             f"(>= {IMPLAUSIBLE:g}) values; the file is corrupt")
    if class_name in CHECKED_BY_HANDLER:
        return
    build = SPECS.get(class_name)
    try:
        slots = [] if build is None else build(cfg, tuple(int(d) for d in kin or ()))
    except (KeyError, TypeError, ValueError, ZeroDivisionError, IndexError) as err:
        raise InputError(f"{where}: the layer config does not fit its input {tuple(kin)} ({err})") from None
    if len(weights) != len(slots):
        wanted = ", ".join(sorted(n)[0] if n else "weight" for n, _ in slots) or "none"
        raise InputError(f"{where}: the file holds {len(weights)} weight(s), the config expects "
                         f"{len(slots)} ({wanted}); the file does not match its config")
    for i, ((name, array), (accepted, shape)) in enumerate(zip(weights, slots)):
        base = _basename(name)
        label = name or (f"#{i} ({sorted(accepted)[0]})" if accepted else f"#{i}")
        if base is not None and accepted and base not in accepted:
            raise InputError(f"{where}: weight '{label}' is where the config expects "
                             f"'{sorted(accepted)[0]}'; the file does not match its config")
        if tuple(array.shape) != shape:
            raise InputError(f"{where}: weight '{label}' has shape {tuple(array.shape)}, the config expects "
                             f"{shape}; the file does not match its config")


# ---- embeddings and attention ---------------------------------------------------


@spec("Embedding")
def _embedding(cfg: dict, kin: tuple[int, ...]) -> list[Slot]:
    return [(_names("embeddings"), (int(cfg["input_dim"]), int(cfg["output_dim"])))]


@spec("Attention")
def _attention(cfg: dict, kin: tuple[int, ...]) -> list[Slot]:
    slots = [(_names("scale"), ())] if cfg.get("use_scale") else []
    return slots + ([(_names("concat_score_weight"), ())] if cfg.get("score_mode") == "concat" else [])


@spec("AdditiveAttention")
def _additive_attention(cfg: dict, kin: tuple[int, ...]) -> list[Slot]:
    return [(_names("scale"), (kin[-1],))] if cfg.get("use_scale", True) else []


# ---- 1-D and 3-D convolutions (kernels with 1 or 3 spatial axes) ---------------------


def _kernel_nd(cfg: dict, rank: int) -> tuple[int, ...]:
    value = cfg["kernel_size"]
    if isinstance(value, (list, tuple)):
        if len(value) != rank:
            raise ValueError(f"kernel_size {value} is not {rank}-D")
        return tuple(int(k) for k in value)
    return (int(value),) * rank


@spec("Conv1D", "Convolution1D", "Conv3D", "Convolution3D")
def _conv_nd(cfg: dict, kin: tuple[int, ...]) -> list[Slot]:
    k = _kernel_nd(cfg, len(kin) - 2)
    filters, groups, cin = int(cfg["filters"]), int(cfg.get("groups") or 1), kin[-1]
    if groups < 1 or cin % groups or filters % groups:
        raise ValueError(f"groups={groups} does not divide {cin} input and {filters} output channels")
    return [(_names("kernel"), (*k, cin // groups, filters))] + _bias(cfg, filters)


@spec("DepthwiseConv1D")
def _depthwise_1d(cfg: dict, kin: tuple[int, ...]) -> list[Slot]:
    (k,) = _kernel_nd(cfg, 1)
    mult, cin = int(cfg.get("depth_multiplier") or 1), kin[-1]
    return [(_names("kernel", "depthwise_kernel"), (k, cin, mult))] + _bias(cfg, cin * mult)


@spec("SeparableConv1D", "SeparableConvolution1D")
def _separable_1d(cfg: dict, kin: tuple[int, ...]) -> list[Slot]:
    (k,) = _kernel_nd(cfg, 1)
    mult, cin, filters = int(cfg.get("depth_multiplier") or 1), kin[-1], int(cfg["filters"])
    return [
        (_names("depthwise_kernel"), (k, cin, mult)),
        (_names("pointwise_kernel"), (1, cin * mult, filters)),
    ] + _bias(cfg, filters)


@spec("Conv1DTranspose", "Convolution1DTranspose", "Conv3DTranspose", "Convolution3DTranspose")
def _transposed_nd(cfg: dict, kin: tuple[int, ...]) -> list[Slot]:
    k = _kernel_nd(cfg, len(kin) - 2)
    filters = int(cfg["filters"])
    return [(_names("kernel"), (*k, filters, kin[-1]))] + _bias(cfg, filters)
