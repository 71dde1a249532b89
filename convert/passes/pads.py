"""Pad folding: a constant-zero spatial pad read only by a conv2d (directly, or through the transpose that turns an
NHWC tensor to NCHW) becomes the conv's own pads (TF ResNet's conv2d_fixed_padding: tf.pad then a VALID conv)."""

from __future__ import annotations

from .index import GraphIndex, graph_pass


@graph_pass
def fold_pad_into_conv(ix: GraphIndex) -> bool:
    graph = ix.graph
    changed = False
    for pad in list(graph.nodes):
        if pad.op != "pad" or pad.attrs.get("mode") != "constant" or float(pad.attrs.get("value", 0)) != 0:
            continue
        pads = [tuple(p) for p in pad.attrs["pads"]]
        conv = ix.single_reader(pad.output)
        turn = None
        if conv is not None and conv.op == "transpose" and tuple(conv.attrs["perm"]) == (0, 3, 1, 2) and \
                len(pads) == 4:  # a pad of an NHWC tensor the layout turns to NCHW (SegFormer's patch embeddings)
            pads, turn = [pads[0], pads[3], pads[1], pads[2]], conv
            conv = ix.single_reader(conv.output)
        if len(pads) != 4 or pads[0] != (0, 0) or pads[1] != (0, 0) or min(min(p) for p in pads) < 0:
            continue  # spatial axes (IR 2, 3) only
        if conv is None or conv.op != "conv2d":
            continue
        t, b, l, r = conv.attrs["pads"]  # noqa: E741 - pad sides t, b, l, r
        conv.attrs["pads"] = (t + pads[2][0], b + pads[2][1], l + pads[3][0], r + pads[3][1])
        conv.attrs["padding"] = "EXPLICIT"  # the pad's amounts are fixed: no longer TF's rule of the input size
        conv.source_op = f"{pad.source_op}+{conv.source_op}".strip("+")
        if turn is not None:  # the transpose now turns the unpadded tensor
            n, h, w, c = graph.shape(pad.inputs[0])
            graph.tensors[turn.output].shape = (n, c, h, w)
        ix.bypass(pad, pad.inputs[0])
        changed = True
    return changed
