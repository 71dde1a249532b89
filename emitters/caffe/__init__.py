"""Caffe target: deploy.prototxt (text NetParameter) + model.caffemodel (binary, with blobs).

By default only BVLC layers are written (the subset in caffe_subset.proto); asymmetric TF padding is
reproduced with pad layer groups, Slice and a divisor Scale map (see convert/padding/caffe.py).
`--caffe-dialect opencv` also writes OpenCV DNN's own layers where they are exact (opencv_subset.proto:
Permute, Resize, four-sided conv pads); deploy.prototxt then says in a comment which reader it needs.
`run` executes the files in OpenCV DNN 4.x (its Caffe importer; 5.x removed it), in either dialect.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tf_convert.convert import ir
from tf_convert.convert.errors import Unsupported, UnsupportedError
from tf_convert.convert.ir import runtime_dims
from tf_convert.convert.ir.graph import LOWERINGS
from tf_convert.convert.ir.ops import FAMILIES
from tf_convert.convert.progress import SILENT, Progress
from tf_convert.convert.registry import import_family_modules
from tf_convert.emitters.base import EmitResult
from tf_convert.emitters.options import options_for

from .builder import NetBuilder
from .contract import TABLE, Ctx
from .elementwise import dtype_problems
from .proto import OPENCV_ONLY_PARAMS, messages

import_family_modules(__name__, FAMILIES)  # the handlers, a module per catalog family: they fill TABLE

TARGET = "caffe"
PROTOTXT = "deploy.prototxt"
CAFFEMODEL = "model.caffemodel"
_IO_TAG = "# convert-io: "


# BVLC Caffe reads a .caffemodel as one protobuf message, limited to 2 GB (SetTotalBytesLimit(INT_MAX));
# the margin covers the layer structure and pad-group blobs written beside the weights.
CAFFEMODEL_LIMIT = 2**31 - 64 * 2**20


def _too_big(graph: ir.Graph, options) -> list[Unsupported]:
    """A model whose weights (stored as float32 blobs) exceed what BVLC Caffe can read."""
    limit = int(options_for(TARGET, options).extra.get("caffemodel_limit", CAFFEMODEL_LIMIT))
    weights = sum(4 * int(np.prod(np.shape(v))) for n in graph.nodes for v in n.params.values())
    if weights <= limit:
        return []
    return [Unsupported("model size", graph.name or "graph",
                        f"{weights / 2**30:.2f} GiB of weights; BVLC Caffe reads a .caffemodel of at most 2 GB "
                        "(one protobuf message): convert to onnx, torch or mxnet instead")]


def unsupported(graph: ir.Graph, options=None) -> list[Unsupported]:
    # a size that follows a run-time value is the first reason (TABLE.unsupported gives it), before a dtype
    sized = {n.name for n in graph.nodes if runtime_dims.follows(graph, n)} if runtime_dims.has_run_time(graph) else ()
    typed = [p for p in dtype_problems(graph) if p.node not in sized]
    refused = {p.node for p in typed}
    found = [p for p in TABLE.unsupported(graph, options) if p.node not in refused]  # the catalog says why
    return _too_big(graph, options) + _in_lowerings(graph, typed + found)


def _in_lowerings(graph: ir.Graph, problems: list[Unsupported]) -> list[Unsupported]:
    """A refused node that is part of a source op's lowering (a DFT's cos/sin products) is reported under
    that source op, with what the lowering needs and what Caffe lacks."""
    notes = graph.metadata.get(LOWERINGS) or {}
    nodes = {n.name: n for n in graph.nodes}
    out = []
    for p in problems:
        source = nodes[p.node].source_op if p.node in nodes else ""
        if source in notes:
            p = Unsupported(source, p.node, f"{notes[source]}; Caffe cannot express its {p.op}: {p.hint}")
        out.append(p)
    return out


def build(graph: ir.Graph, options=None) -> NetBuilder:
    """The Caffe net for `graph` (in memory); `options`: CaffeOptions (or what options_for accepts)."""
    options = options_for(TARGET, options)
    b = NetBuilder(graph.name, options.caffe_dialect)
    b.reserve(list(graph.tensors), [n.name for n in graph.nodes] + list(graph.inputs))
    for name in graph.inputs:
        b.input(name, graph.shape(name))
    index = ir.GraphIndex(graph)
    for node in graph.nodes:
        blob = TABLE.get(node.op)(Ctx(node, graph, options, index, b))
        if blob is None:
            continue
        b.finish(node.name, node.output, blob)
        b.mark_external(node.output)
    b.guard_input_sizes(list(graph.inputs))
    return b


def emit(graph: ir.Graph, out_dir: Path, options=None, progress: Progress = SILENT) -> EmitResult:
    from google.protobuf import text_format

    too_big = _too_big(graph, options)
    if too_big:  # before anything is built or written
        raise UnsupportedError(too_big, TARGET)
    out_dir = Path(out_dir)
    b = build(graph, options)
    io = {"inputs": list(graph.inputs), "outputs": list(graph.outputs),
          "output_ranks": [len(graph.shape(t)) for t in graph.outputs]}
    # deploy.prototxt: structure only (no blobs); the header records graph input/output order
    structure = type(b.net)()
    structure.CopyFrom(b.net)
    for layer in structure.layer:
        del layer.blobs[:]
    sizes = ", ".join(f"{t} {list(graph.shape(t))}" for t in graph.inputs)
    size_note = f"# converted for input size {sizes} (NCHW; any batch): Caffe bakes TF's SAME pads for it\n"
    text = f"{_IO_TAG}{json.dumps(io)}\n{size_note}{_dialect_note(b)}" + text_format.MessageToString(structure)
    (out_dir / PROTOTXT).write_text(text)
    (out_dir / CAFFEMODEL).write_bytes(_binary(b.net))
    for layer in b.net.layer:  # one message: written at once, reported per layer
        progress.written(layer.name, sum(4 * len(blob.data) for blob in layer.blobs))
    result = EmitResult(files=[PROTOTXT, CAFFEMODEL], pad_layers=b.pad_layers, warnings=b.warnings)
    result.inputs = [{"name": t, "shape": list(graph.shape(t)), "layout": "NCHW"} for t in graph.inputs]
    result.outputs = [{"name": t, "shape": list(b.shape(t)), "layout": "NCHW"} for t in graph.outputs]
    result.tensor_names = {n.output: n.output for n in graph.nodes if n.op != "const" and n.output in b.shapes}
    return result


def _dialect_note(b: NetBuilder) -> str:
    """deploy.prototxt's line on which Caffe reads it (the BVLC dialect writes none: its files stay as they were)."""
    if b.dialect == "bvlc":
        return ""
    if not b.opencv_only:
        return "# caffe-dialect: bvlc (written with --caffe-dialect opencv; no OpenCV-only layer was needed)\n"
    return (f"# caffe-dialect: opencv -- needs OpenCV DNN 4.x's Caffe importer ({', '.join(b.opencv_only)}); "
            "BVLC Caffe cannot read this file\n")


def _binary(net) -> bytes:
    """The caffemodel: the net with its blobs, less the parameters only deploy.prototxt may carry."""

    if not any(layer.HasField(p) for layer in net.layer for p in OPENCV_ONLY_PARAMS
               if p in layer.DESCRIPTOR.fields_by_name):
        return net.SerializeToString()
    binary = type(net)()
    binary.CopyFrom(net)
    for layer in binary.layer:
        for p in OPENCV_ONLY_PARAMS:
            if p in layer.DESCRIPTOR.fields_by_name:
                layer.ClearField(p)
    return binary.SerializeToString()


def _io(out_dir: Path) -> dict:
    first = (out_dir / PROTOTXT).read_text().split("\n", 1)[0]
    if first.startswith(_IO_TAG):
        return json.loads(first[len(_IO_TAG):])
    conversion = json.loads((out_dir / "conversion.json").read_text())
    return {"inputs": [i["name"] for i in conversion["inputs"]], "outputs": [o["name"] for o in conversion["outputs"]]}


def load(out_dir: Path):
    """The written model as an OpenCV DNN net (CPU, reference backend, Winograd off)."""
    import cv2

    out_dir = Path(out_dir)
    net = cv2.dnn.readNetFromCaffe(str(out_dir / PROTOTXT), str(out_dir / CAFFEMODEL))
    net.setPreferableBackend(cv2.dnn.DNN_BACKEND_OPENCV)
    net.setPreferableTarget(cv2.dnn.DNN_TARGET_CPU)
    net.enableWinograd(False)  # Winograd 3x3 convs are off by ~1e-3 absolute
    return net


def run(out_dir: Path, inputs: list[np.ndarray]) -> list[np.ndarray]:
    out_dir = Path(out_dir)
    io = _io(out_dir)
    net = load(out_dir)
    for name, value in zip(io["inputs"], inputs):
        net.setInput(np.ascontiguousarray(value, dtype=np.float32), name)
    outs = [np.asarray(o) for o in net.forward(io["outputs"])]
    return [_declared_rank(o, rank) for o, rank in zip(outs, io.get("output_ranks", [None] * len(outs)))]


def _declared_rank(value: np.ndarray, rank: int | None) -> np.ndarray:
    """OpenCV returns a 1-D blob as (n, 1): back to the rank the graph declares."""
    if rank is not None and value.ndim > rank and all(d == 1 for d in value.shape[rank:]):
        return value.reshape(value.shape[:rank])
    return value


def run_internals(out_dir: Path, inputs: list[np.ndarray], names: list[str]) -> dict[str, np.ndarray]:
    """The blobs `names` on `inputs` (OpenCV keeps every blob it is asked for out of its fusions).

    OpenCV addresses outputs by layer: "<layer>" for its first top, "<layer>.<i>" for the others."""
    from google.protobuf import text_format


    out_dir = Path(out_dir)
    structure = text_format.Parse((out_dir / PROTOTXT).read_text(), messages("opencv")["NetParameter"]())
    pins = {top: layer.name if i == 0 else f"{layer.name}.{i}"
            for layer in structure.layer for i, top in enumerate(layer.top)}
    net = load(out_dir)
    for name, value in zip(_io(out_dir)["inputs"], inputs):
        net.setInput(np.ascontiguousarray(value, dtype=np.float32), name)
    wanted = [n for n in dict.fromkeys(names) if n in pins]
    outs = net.forward([pins[n] for n in wanted]) if wanted else []
    return {n: np.asarray(o) for n, o in zip(wanted, outs)}
