"""The Caffe handlers of the shape family: reshape, transpose, concat, slice, depth/space moves and constants."""

from __future__ import annotations

import numpy as np

from tf_convert.emitters.base import NodeContext

from .contract import BINARY, TABLE, Ctx, opencv_dialect, opencv_hint, positive_axis


@TABLE.register("reshape")
def _reshape(ctx: Ctx) -> str:
    b, g, node = ctx.builder, ctx.graph, ctx.node
    return b.reshape(f"{node.name}/reshape", node.inputs[0], g.shape(node.output))


def _moves_only_unit_axes(shape, perm) -> bool:
    order = [p for p in perm if shape[p] != 1]
    return order == sorted(order)


def _transpose_limits(ctx: NodeContext) -> str | None:
    g, node = ctx.graph, ctx.node
    if not _moves_only_unit_axes(g.shape(node.inputs[0]), node.attrs["perm"]) and not opencv_dialect(ctx):
        return opencv_hint("BVLC Caffe has no Permute layer; only transposes that move size-1 axes are expressible",
                           "Permute layer")
    return None


@TABLE.register("transpose", limit=_transpose_limits)
def _transpose(ctx: Ctx) -> str:
    b, g, node = ctx.builder, ctx.graph, ctx.node
    perm = [positive_axis(a, len(g.shape(node.output))) for a in node.attrs["perm"]]
    if _moves_only_unit_axes(g.shape(node.inputs[0]), perm):  # the same memory order: a Reshape (BVLC)
        return b.reshape(f"{node.name}/reshape", node.inputs[0], g.shape(node.output))
    return b.permute(f"{node.name}/permute", node.inputs[0], perm)


@TABLE.register("concat")
def _concat(ctx: Ctx) -> str:
    b, g, node = ctx.builder, ctx.graph, ctx.node
    axis = positive_axis(node.attrs["axis"], len(g.shape(node.output)))
    top = b.unique(f"{node.name}/concat")
    b.add("Concat", top, list(node.inputs), [top], [g.shape(node.output)], concat_param={"axis": axis})
    return top


@TABLE.register("slice")
def _slice(ctx: Ctx) -> str:
    b, node = ctx.builder, ctx.node
    x = node.inputs[0]
    for axis, (begin, end) in enumerate(zip(node.attrs["begin"], node.attrs["end"])):
        size = b.shape(x)[axis]
        begin, end = max(0, begin + size if begin < 0 else begin), min(size, end + size if end < 0 else end)
        x = b.take(f"{node.name}/slice{axis}", x, axis, begin, end)
    return x


def _const_limits(ctx: NodeContext) -> str | None:
    g, node = ctx.graph, ctx.node
    users = ctx.index.readers(node.output)
    if node.output in g.outputs or any(u.op not in BINARY for u in users):
        return "Caffe has no constant layer; constants can only feed add/sub/mul/div/maximum/minimum"
    return None


@TABLE.register("const", limit=_const_limits)
def _const(ctx: Ctx) -> str | None:
    return None  # folded into the consumer (Scale / Power blobs)


def _block_selector(c_small: int, b: int) -> np.ndarray:
    """(C*b*b, C, b, b) weights that are 1 where TF's DCR order puts channel (i*b+j)*C + c at
    (c, i, j): a Deconvolution with them is depth_to_space, a Convolution space_to_depth
    (every output is one input times 1.0 plus zeros: exact)."""
    w = np.zeros((c_small * b * b, c_small, b, b), np.float32)
    for i in range(b):
        for j in range(b):
            for c in range(c_small):
                w[(i * b + j) * c_small + c, c, i, j] = 1.0
    return w


@TABLE.register("depth_to_space")
def _depth_to_space(ctx: Ctx) -> str:
    b, node = ctx.builder, ctx.node
    k, x = int(node.attrs["block_size"]), node.inputs[0]
    n, c, h, w = b.shape(x)
    conv = {"num_output": c // (k * k), "bias_term": False, "kernel_h": k, "kernel_w": k, "stride_h": k,
            "stride_w": k, "pad_h": 0, "pad_w": 0, "group": 1}
    top = b.unique(f"{node.name}/depth_to_space")
    b.add("Deconvolution", top, [x], [top], [(n, c // (k * k), h * k, w * k)], [_block_selector(c // (k * k), k)],
          convolution_param=conv)
    return top


@TABLE.register("space_to_depth")
def _space_to_depth(ctx: Ctx) -> str:
    b, node = ctx.builder, ctx.node
    k, x = int(node.attrs["block_size"]), node.inputs[0]
    n, c, h, w = b.shape(x)
    conv = {"num_output": c * k * k, "bias_term": False, "kernel_h": k, "kernel_w": k, "stride_h": k,
            "stride_w": k, "pad_h": 0, "pad_w": 0, "group": 1}
    top = b.unique(f"{node.name}/space_to_depth")
    b.add("Convolution", top, [x], [top], [(n, c * k * k, h // k, w // k)], [_block_selector(c, k)],
          convolution_param=conv)
    return top
