"""Assemble the handlers' output into a ModelProto, check it, and write it (external data > 2 GB)."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from tf_convert.convert import ir
from tf_convert.convert.direct_file import open_direct
from tf_convert.convert.ir.lazy import read_ahead
from tf_convert.convert.ir.runtime_dims import RUN_TIME, parameter_inputs, run_time_axes
from tf_convert.convert.padding.sizes import size_bound, size_flow
from tf_convert.convert.progress import SILENT, Progress

from ..options import OnnxOptions
from .contract import TABLE, Ctx, Emitted, tensor_names

MODEL_FILE = "model.onnx"
DATA_FILE = "model.onnx.data"
# protobuf refuses to serialise a message over 2 GiB; stay well clear of it (graph structure too).
EXTERNAL_DATA_THRESHOLD = 2**31 - 64 * 2**20
_ALIGN = 4096  # external tensors start at page boundaries (onnxruntime may map them)


@dataclass
class Built:
    model: Any  # onnx.ModelProto
    pad_layers: list[dict[str, Any]] = field(default_factory=list)
    deferred: dict[str, Any] = field(default_factory=dict)  # initializer name -> lazy value, not in `model` yet
    names: dict[str, str] = field(default_factory=dict)
    weight_bytes: int = 0
    size_bound: str | None = None  # why the model only runs at the conversion's H/W (None: any)


def _value_info(name: str, tensor: ir.Tensor, free_batch: bool = False, free: frozenset[int] = frozenset(),
                counted: bool = False) -> Any:
    """The tensor's type; `free_batch` names axis 0 "N", `free` names the axes that follow the input
    size (an image's H/W, a sequence's length L), `counted` names axis 0 "<name>_count" (its length
    depends on the data): symbolic dims, onnxruntime computes an output's."""
    from onnx import helper

    elem = helper.np_dtype_to_tensor_dtype(np.dtype(tensor.dtype))
    dims: list[Any] = list(tensor.shape)
    if counted:
        dims[0] = f"{name}_count"
    for axis in run_time_axes(tensor.shape):  # a size that follows a run-time value (convert.ir.runtime_dims)
        dims[axis] = f"{name}_{axis}"
    if free_batch and dims:
        dims[0] = "N"
    volume = dict(zip(sorted(free), "DHW")) if len(dims) == 5 else {}  # NDHWC or NCDHW: D, H, W in order
    for axis in free:
        dims[axis] = f"{name}_{volume.get(axis) or _AXIS_LABELS.get((len(dims), axis), 'L')}"
    return helper.make_tensor_value_info(name, elem, dims)


_AXIS_LABELS = {(4, 2): "H", (4, 3): "W"}  # (rank, axis) -> the symbolic dim's suffix; others "L"


def build(graph: ir.Graph, options: OnnxOptions) -> Built:
    """Run every node's handler and collect the results into one model."""
    from onnx import helper


    flow, bound = size_flow(graph)
    size_free = not options.static_shapes and bound is None
    free = flow if size_free else {}
    free_batch = _free_batch(graph)
    names = tensor_names(graph)
    index = ir.GraphIndex(graph)
    collected = Emitted()
    for node in graph.nodes:
        part = TABLE.get(node.op)(Ctx(node, graph, options, index, names, free))
        collected.nodes.extend(part.nodes)
        collected.initializers.extend(part.initializers)
        collected.deferred.update(part.deferred)
        collected.pad_layers.extend(part.pad_layers)

    # A graph output that is also a graph input (or listed twice) needs its own tensor.
    outputs, seen = [], set(names[i] for i in graph.inputs)
    for t in graph.outputs:
        name = names[t]
        if name in seen:
            alias = f"{name}::output{len(outputs)}"
            collected.nodes.append(helper.make_node("Identity", [name], [alias], name=alias))
            name = alias
        seen.add(name)
        outputs.append(_value_info(name, graph.tensors[t], free_batch(t), free.get(t, frozenset()),
                                   graph.data_dependent_length(t) is not None))

    onnx_graph = helper.make_graph(
        collected.nodes,
        graph.name or "graph",
        [_value_info(names[t], graph.tensors[t], free_batch(t), free.get(t, frozenset())) for t in graph.inputs],
        outputs,
        initializer=collected.initializers,
    )
    opsets = [helper.make_opsetid("", int(options.opset))]
    model = helper.make_model(
        onnx_graph,
        opset_imports=opsets,
        producer_name="convert",
        ir_version=helper.find_min_ir_version_for(opsets),
    )
    weight_bytes = sum(len(t.raw_data) for t in collected.initializers) + sum(
        int(v.nbytes) for v in collected.deferred.values())
    return Built(model, collected.pad_layers, collected.deferred, names, weight_bytes,
                 None if size_free else _bound_reason(graph, options))


def _free_batch(graph: ir.Graph) -> Callable[[str], bool]:
    """Whether a graph input / output gets the symbolic batch "N": the inputs must agree on their axis 0
    (onnxruntime takes every "N" for one size and plans its buffers so), and the tensor must have it."""
    parameters = parameter_inputs(graph)  # a fed shape or paddings has no batch
    batches = {graph.shape(t)[0] for t in graph.inputs if graph.shape(t) and t not in parameters}
    batch = batches.pop() if len(batches) == 1 else None
    return lambda t: (batch is not None and t not in parameters and bool(graph.shape(t))
                      and graph.shape(t)[0] == batch)


def _bound_reason(graph: ir.Graph, options: OnnxOptions) -> str:
    return size_bound(graph) or "--static-shapes"


def _check_shapes(inferred: Any, graph: ir.Graph) -> None:
    """Shape inference must reproduce the IR's output shapes exactly."""
    for out, t in zip(inferred.graph.output, graph.outputs):
        dims = tuple(d.dim_value if d.HasField("dim_value") else -1 for d in out.type.tensor_type.shape.dim)
        # free axes (batch, a size-free model's H/W) are symbolic: only the static ones must agree
        if len(dims) != len(graph.shape(t)) or any(d not in (-1, n) and n != RUN_TIME
                                                   for d, n in zip(dims, graph.shape(t))):
            raise AssertionError(f"ONNX shape inference gives {dims} for output {out.name}, IR says {graph.shape(t)}")


def _checkable(built: Built) -> Any:
    """A copy of the model for the checker and shape inference, without reading a weight: the deferred
    initializers (no data yet) are declared as graph inputs of the same type and shape instead."""
    from onnx import ModelProto, helper

    model = ModelProto()
    model.CopyFrom(built.model)
    inits = list(model.graph.initializer)
    del model.graph.initializer[:]
    model.graph.initializer.extend(t for t in inits if t.name not in built.deferred)
    model.graph.input.extend(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                             for t in inits if t.name in built.deferred)
    return model


def _key(number: int, length: int) -> bytes:
    """A length-delimited protobuf field's tag and length."""
    out = bytearray()
    for value in ((number << 3) | 2, length):
        while value > 0x7F:
            out.append(value & 0x7F | 0x80)
            value >>= 7
        out.append(value)
    return bytes(out)


_MODEL_GRAPH, _GRAPH_INITIALIZER, _TENSOR_RAW_DATA = 7, 5, 9  # field numbers in onnx.proto


def _write_inline(built: Built, path: Path, progress: Progress) -> None:
    """model.onnx with every initializer inside, written one deferred tensor at a time: the model without
    them, then per tensor one more `graph` field holding just that initializer (protobuf merges a
    repeated message field into the first, so readers see one graph with all initializers)."""
    graph = built.model.graph
    inits = list(graph.initializer)
    del graph.initializer[:]
    graph.initializer.extend(t for t in inits if t.name not in built.deferred)
    try:
        with open_direct(path) as f:  # around the page cache, fsynced
            f.write(built.model.SerializeToString())
            by_name = {t.name: t for t in inits}
            deferred = ((t.name, built.deferred[t.name]) for t in inits if t.name in built.deferred)
            for name, value in read_ahead(deferred):  # the next weights are read while this one is written
                tensor = by_name[name]
                head = tensor.SerializeToString() + _key(_TENSOR_RAW_DATA, value.nbytes)
                init = _key(_GRAPH_INITIALIZER, len(head) + value.nbytes)
                f.write(_key(_MODEL_GRAPH, len(init) + len(head) + value.nbytes) + init + head)
                f.write(value.reshape(-1).view(np.uint8))
                progress.written(tensor.name, value.nbytes)
                del value
    finally:
        del graph.initializer[:]
        graph.initializer.extend(inits)


def _write_external(built: Built, data_path: Path, progress: Progress) -> None:
    """Every initializer of 1 KB or more (and every deferred one) streamed into `data_path`, one at a time,
    each at a 4 KB-aligned offset; the model keeps name, type, dims and where its bytes are."""
    from onnx import TensorProto

    offset = 0
    with open_direct(data_path) as f:  # around the page cache, fsynced
        by_name = {t.name: t for t in built.model.graph.initializer}
        # small ones stay inline, as onnx.save_model's size_threshold=1024 leaves them
        external = ((t.name, built.deferred[t.name] if t.name in built.deferred
                     else np.frombuffer(t.raw_data, np.uint8)) for t in built.model.graph.initializer
                    if t.name in built.deferred or len(t.raw_data) >= 1024)
        for name, value in read_ahead(external):  # the next weights are read while this one is written
            tensor = by_name[name]
            data = value.reshape(-1).view(np.uint8)
            offset += -offset % _ALIGN
            f.seek(offset)
            f.write(data)
            tensor.ClearField("raw_data")
            tensor.data_location = TensorProto.EXTERNAL
            del tensor.external_data[:]
            for key, entry in (("location", DATA_FILE), ("offset", str(offset)), ("length", str(len(data)))):
                tensor.external_data.add(key=key, value=entry)
            offset += len(data)
            progress.written(tensor.name, len(data))
            del data


def save_checked(built: Built, graph: ir.Graph, out_dir: Path, threshold: int = EXTERNAL_DATA_THRESHOLD,
                 progress: Progress = SILENT) -> list[str]:
    """Check (full checker + strict shape inference) and write; returns the files written."""
    import onnx
    from onnx import shape_inference

    path = out_dir / MODEL_FILE
    if built.weight_bytes <= threshold:
        checkable = _checkable(built)
        onnx.checker.check_model(checkable, full_check=True)
        _check_shapes(shape_inference.infer_shapes(checkable, check_type=True, strict_mode=True), graph)
        _write_inline(built, path, progress)
        return [MODEL_FILE]
    # Over the protobuf limit: weights go to one side file as they are read (no ModelProto ever holds
    # them all); checker and inference work on paths.
    _write_external(built, out_dir / DATA_FILE, progress)
    onnx.save_model(built.model, str(path))
    onnx.checker.check_model(str(path), full_check=True)
    with tempfile.TemporaryDirectory(dir=out_dir.parent) as tmp:
        inferred_path = Path(tmp) / MODEL_FILE
        shape_inference.infer_shapes_path(str(path), str(inferred_path), check_type=True, strict_mode=True)
        _check_shapes(onnx.load(str(inferred_path), load_external_data=False), graph)
    # tensors under 1 KB stay inline; the side file exists only if something went out
    return [MODEL_FILE, DATA_FILE] if (out_dir / DATA_FILE).exists() else [MODEL_FILE]
