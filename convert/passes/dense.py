"""Dense layers and flatten order: a Dense applied per pixel is a 1x1 conv; a transpose before the
flatten that feeds a linear layer goes into the linear's weight instead."""

from __future__ import annotations

from ..ir import lazy
from .index import GraphIndex, graph_pass


@graph_pass
def dense_on_nhwc_as_conv(ix: GraphIndex) -> bool:
    """transpose(0,2,3,1) -> reshape(N*H*W, C) -> linear -> reshape(N, H, W, O): a Dense applied to
    every pixel (Keras Dense on a 4-D tensor, Tensordot in TF) is a 1x1 conv2d on the NCHW
    tensor, followed by one transpose to the NHWC order the rest of that chain expects."""
    graph = ix.graph
    changed = False
    for lin in list(graph.nodes):
        if lin.op != "linear" or not ix.alive(lin):
            continue
        flat = ix.producer(lin.inputs[0])
        tr = ix.producer(flat.inputs[0]) if flat is not None and flat.op == "reshape" else None
        out = ix.single_reader(lin.output)
        if tr is None or tr.op != "transpose" or tuple(tr.attrs["perm"]) != (0, 2, 3, 1) or out is None:
            continue
        n, c, h, w = graph.shape(tr.inputs[0])
        o = graph.shape(lin.output)[1]
        if out.op != "reshape" or tuple(graph.shape(out.output)) != (n, h, w, o):
            continue
        if ix.single_reader(flat.output) is not lin or ix.single_reader(tr.output) is not flat:
            continue
        params = {"weight": lazy.contiguous(lin.params["weight"][:, :, None, None])}
        if "bias" in lin.params:
            params["bias"] = lin.params["bias"]
        # the conv replaces tr/flat/lin (named after the linear); the final reshape becomes the transpose
        for gone in (tr, flat):
            ix.remove_node(gone)
            graph.tensors.pop(gone.output, None)
        ix.set_inputs(lin, [tr.inputs[0]])
        lin.op, lin.params = "conv2d", params
        lin.attrs = {"kernel": (1, 1), "stride": (1, 1), "dilation": (1, 1), "groups": 1, "pads": (0, 0, 0, 0),
                     "padding": "VALID"}
        graph.tensors[lin.output].shape = (n, o, h, w)
        out.op, out.attrs = "transpose", {"perm": (0, 2, 3, 1)}
        changed = True
    return changed


@graph_pass
def fold_flatten_into_linear(ix: GraphIndex) -> bool:
    """transpose(perm, perm[0] == 0) -> reshape to (N, -1) -> linear: reshape the untransposed tensor
    and permute the linear weight's input columns to match, so targets need no Permute layer."""
    graph = ix.graph
    changed = False
    for lin in list(graph.nodes):
        if lin.op != "linear" or not ix.alive(lin):
            continue
        flat = ix.producer(lin.inputs[0])
        if flat is None or flat.op != "reshape" or ix.single_reader(flat.output) is not lin:
            continue
        tr = ix.producer(flat.inputs[0])
        if tr is None or tr.op != "transpose" or ix.single_reader(tr.output) is not flat:
            continue
        perm = tuple(tr.attrs["perm"])
        x_shape = graph.shape(tr.inputs[0])
        if perm[0] != 0 or len(graph.shape(flat.output)) != 2 or graph.shape(flat.output)[0] != x_shape[0]:
            continue
        weight = lin.params["weight"]
        out = weight.shape[0]
        moved = [x_shape[p] for p in perm[1:]]
        # weight column order follows the transposed axes; reorder to the original axes
        order = (0,) + tuple(1 + list(perm[1:]).index(k) for k in range(1, len(perm)))
        lin.params["weight"] = lazy.contiguous(weight.reshape((out, *moved)).transpose(order).reshape(out, -1))
        ix.remove_node(tr)
        ix.set_inputs(flat, [tr.inputs[0]])
        graph.tensors.pop(tr.output, None)
        changed = True
    return changed
