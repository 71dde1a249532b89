"""The input preprocessing a TF graph keeps inside the model (Keras EfficientNet's and ConvNeXt's
Rescaling and Normalization) and a PyTorch module leaves to its data pipeline (Hugging Face's image
processors): the per-channel affine x * scale + shift TF applies to its input before its first layer."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tf_convert.convert.ir import lazy

from .layers import LayerGraph


@dataclass
class Feed:
    """How the module is fed and read against TF: `fields`, the module outputs in TF's output order; `scale`
    and `shift`, the affine TF applies to its (only) input inside the graph, which the module is given
    applied (None: the input as is)."""

    fields: list[str] | None = None
    scale: np.ndarray | None = None
    shift: np.ndarray | None = None
    keywords: list[str] | None = None  # the forward parameter each TF input goes to; None: by position

    def module_input(self, x: np.ndarray) -> np.ndarray:
        if self.scale is None:
            return x
        shape = (1, -1) + (1,) * (x.ndim - 2)
        return (x * self.scale.reshape(shape) + self.shift.reshape(shape)).astype(np.float32)


def input_affine(ir: LayerGraph, module: LayerGraph) -> tuple[LayerGraph, np.ndarray, np.ndarray, list[str]] | None:
    """(the IR layers with the leading per-channel affines read through, scale, shift, their TF names) when
    TF's graph starts with per-channel affines on its one image input (Rescaling, Normalization) and the
    module's first layer is not a batch norm (one that would stand for them); otherwise None."""

    if len(ir.inputs) != 1 or len(module.inputs) != 1 or len(ir.layers[ir.inputs[0]].shape) != 4:
        return None
    start = module.inputs[0]
    if any(layer.kind == "bn" and layer.inputs == [start] for layer in module.layers.values()):
        return None
    chain, current = [], ir.inputs[0]
    while True:
        readers = [layer for layer in ir.layers.values() if current in layer.inputs]
        if len(readers) != 1 or readers[0].kind != "bn" or "mean" in readers[0].node.params:
            break
        chain.append(readers[0])
        current = readers[0].id
    if not chain:
        return None
    channels = ir.layers[ir.inputs[0]].shape[1]
    scale, shift = np.ones(channels, np.float64), np.zeros(channels, np.float64)
    for layer in chain:
        a = np.asarray(lazy.materialize(layer.node.params["scale"]), np.float64).reshape(-1)
        b = np.asarray(lazy.materialize(layer.node.params["shift"]), np.float64).reshape(-1)
        scale, shift = scale * a, shift * a + b
    names = {layer.id for layer in chain}
    layers = {}
    for name, layer in ir.layers.items():
        if name in names:
            continue
        if current in layer.inputs:
            layer = _with_inputs(layer, [ir.inputs[0] if i == current else i for i in layer.inputs])
        layers[name] = layer
    outputs = [ir.inputs[0] if o in names else o for o in ir.outputs]
    return LayerGraph(layers, outputs, list(ir.inputs)), scale.astype(np.float32), shift.astype(np.float32), \
        [layer.id for layer in chain]


def _with_inputs(layer, inputs):
    import copy

    layer = copy.copy(layer)
    layer.inputs = inputs
    return layer


def note(names: list[str], scale: np.ndarray, shift: np.ndarray, first: str) -> str:
    """The line that names the difference at the module's input and the transform to apply."""
    def vec(v):
        return "[" + ", ".join(f"{float(x):.6g}" for x in v) + "]"

    return (f"TF's graph preprocesses its input inside the model ({', '.join(names)}): x * {vec(scale)} + "
            f"{vec(shift)} per channel before '{first}'; the module takes its input as is (Hugging Face leaves this "
            f"to its image processor): feed it pixel_values = x * scale + shift (per channel, NCHW). Everything "
            f"after is mapped and compared with that transform applied")
