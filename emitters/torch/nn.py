"""The PyTorch handlers of the nn family: per-channel affine, layer norm, linear and matmul."""

from __future__ import annotations

import numpy as np

from .contract import TABLE, Ctx, Lowered, call, ints, lit


def _channel_shape(values: np.ndarray, axis: int, rank: int) -> np.ndarray:
    """1-D per-channel values shaped to broadcast against a rank-`rank` tensor along `axis`."""
    axis = axis % rank
    return values.reshape((-1,) + (1,) * (rank - 1 - axis))


@TABLE.register("channel_affine")
def channel_affine(ctx: Ctx) -> Lowered:
    rank, axis = len(ctx.in_shapes[0]), int(ctx.attrs.get("axis", 1))
    scale, shift = ctx.aux("scale"), ctx.aux("shift")
    return Lowered(
        buffers=[
            (scale, _channel_shape(ctx.params["scale"], axis, rank)),
            (shift, _channel_shape(ctx.params["shift"], axis, rank)),
        ],
        lines=[f"{ctx.var} = {ctx.args[0]} * self.{scale} + self.{shift}"],
    )


def _norm_layout(ctx: Ctx) -> tuple[list[int], tuple[int, ...]] | None:
    """(permutation moving the normalised axes last, normalized_shape) when nn.LayerNorm fits.

    It fits when gamma/beta (if present) hold exactly one value per normalised position.
    """
    shape = ctx.in_shapes[0]
    rank = len(shape)
    axes = sorted({int(a) % rank for a in ctx.attrs["axes"]})
    norm = tuple(shape[a] for a in axes)
    for key in ("gamma", "beta"):
        p = ctx.params.get(key)
        if p is None:
            continue
        if p.ndim > rank:
            return None
        padded = (1,) * (rank - p.ndim) + tuple(p.shape)
        if any(padded[a] != (shape[a] if a in axes else 1) for a in range(rank)):
            return None
    if ctx.params.get("gamma") is None and ctx.params.get("beta") is not None:
        return None
    return [a for a in range(rank) if a not in axes] + axes, norm


@TABLE.register("layer_norm")
def layer_norm(ctx: Ctx) -> Lowered:
    eps, gamma, beta = float(ctx.attrs["epsilon"]), ctx.params.get("gamma"), ctx.params.get("beta")
    x, out = ctx.args[0], Lowered()
    layout = _norm_layout(ctx)
    if layout is not None:
        perm, norm = layout
        layer = call(
            "nn.LayerNorm",
            ints(norm) if len(norm) > 1 else str(norm[0]),
            eps=lit(eps),
            elementwise_affine=None if gamma is not None else "False",
            bias=None if gamma is None or beta is not None else "False",
        )
        out.modules.append((ctx.var, layer))
        if gamma is not None:
            out.state[f"{ctx.var}.weight"] = gamma.reshape(norm)
        if beta is not None:
            out.state[f"{ctx.var}.bias"] = beta.reshape(norm)
        if perm == sorted(perm):
            out.lines.append(f"{ctx.var} = self.{ctx.var}({x})")
        else:  # channels-first: normalise with the axes moved last, as torchvision's LayerNorm2d
            inverse = [perm.index(a) for a in range(len(perm))]
            fwd, back = ", ".join(map(str, perm)), ", ".join(map(str, inverse))
            out.lines.append(f"{ctx.var} = self.{ctx.var}({x}.permute({fwd})).permute({back})")
        return out
    # gamma/beta that broadcast some other way: spelled out (biased variance, as TF's moments)
    axes = ints(sorted(int(a) % len(ctx.in_shapes[0]) for a in ctx.attrs["axes"]))
    v = ctx.var
    out.lines += [
        f"{v} = {x} - {x}.mean({axes}, keepdim=True)",
        f"{v} = {v} * torch.rsqrt({v}.square().mean({axes}, keepdim=True) + {lit(eps)})",
    ]
    if gamma is not None:
        out.buffers.append((ctx.aux("gamma"), gamma))
        out.lines.append(f"{v} = {v} * self.{ctx.aux('gamma')}")
    if beta is not None:
        out.buffers.append((ctx.aux("beta"), beta))
        out.lines.append(f"{v} = {v} + self.{ctx.aux('beta')}")
    return out


@TABLE.register("linear")
def linear(ctx: Ctx) -> Lowered:
    weight, bias = ctx.params["weight"], ctx.params.get("bias")
    layer = call("nn.Linear", str(weight.shape[1]), str(weight.shape[0]), bias=None if bias is not None else "False")
    out = Lowered(modules=[(ctx.var, layer)], lines=[f"{ctx.var} = self.{ctx.var}({ctx.args[0]})"])
    out.state[f"{ctx.var}.weight"] = weight
    if bias is not None:
        out.state[f"{ctx.var}.bias"] = bias
    return out


@TABLE.register("matmul")
def matmul(ctx: Ctx) -> Lowered:
    return Lowered(lines=[f"{ctx.var} = torch.matmul({ctx.args[0]}, {ctx.args[1]})"])


# ---- local response normalization --------------------------------------------------------------
@TABLE.register("lrn")
def lrn(ctx: Ctx) -> Lowered:
    """torch averages the window (alpha / size), TF sums it: alpha * size gives TF's scale."""
    size = 2 * int(ctx.attrs["radius"]) + 1
    alpha = float(np.float32(ctx.attrs["alpha"]) * size)
    expr = call("torch.nn.functional.local_response_norm", ctx.args[0], str(size), alpha=lit(alpha),
                beta=lit(ctx.attrs["beta"]), k=lit(ctx.attrs["bias"]))
    return Lowered(lines=[f"{ctx.var} = {expr}"])
