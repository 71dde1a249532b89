"""Loading a TF source into one frozen GraphDef (every variable replaced by its value).

All three kinds end up the same way: a GraphDef with constants only, plus the chosen input and
output tensor names. The rest of the parser never sees variables or sessions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tf_convert.convert.errors import InputError, UsageError
from tf_convert.parsers.base import ParseOptions
from tf_convert.parsers.source import Source

from .bundle import Bundle, checkpoint_entry
from .inline import inline_calls
from .protos import GraphDef, MetaGraphDef, SavedModel
from .safety import check_graph
from .saved_model import NotTF2, signature_graph
from .source import check_checkpoint, check_saved_model, checkpoint_prefix
from .tensors import dtype_name
from .training import prepare


@dataclass
class Frozen:
    graph_def: Any
    inputs: list[str]
    outputs: list[str]
    notes: list[str] = field(default_factory=list)
    records: list[dict] = field(default_factory=list)
    # Const node name -> its value (often a lazy array read from the checkpoint when used); such a
    # Const in graph_def holds dtype and shape only
    weights: dict[str, Any] = field(default_factory=dict)

    def weight_feeds(self, graph: Any) -> dict[Any, Any]:
        """{tensor of `graph` (a tf.Graph importing graph_def): value} for the weights, to feed a
        session run (the reference run): values stay out of the GraphDef (protobuf's 2 GB limit)."""
        import numpy as np

        names = {op.name for op in graph.get_operations()}
        return {graph.get_tensor_by_name(f"{name}:0"): np.asarray(value)
                for name, value in self.weights.items() if name in names}

    def weight_ops(self) -> dict[str, Any]:
        """{"Const:0": a TF op of the current default tf.Graph that reads that weight when the session runs it},
        the input_map of the import (the reference run). TF then holds each weight once, as its own tensor:
        fed numpy values would be a second copy beside TF's (2x the model in RAM). A weight stored
        as it is in a checkpoint is read by TF's own RestoreV2, so the reference never rests on our reader;
        the rest (transposed, sliced or computed values) come from ours."""
        import numpy as np
        import tensorflow as tf


        present = {node.name for node in self.graph_def.node}
        ops = {}
        with tf.name_scope("tf_convert_weights"):
            for name, value in self.weights.items():
                if name in present:
                    dtype = tf.as_dtype(np.dtype(value.dtype))
                    entry = checkpoint_entry(value)
                    if entry is not None:  # TF's own reader of the bundle: a reference independent of ours
                        read = tf.raw_ops.RestoreV2(prefix=entry[0], tensor_names=[entry[1]],
                                                    shape_and_slices=[""], dtypes=[dtype])[0]
                    else:
                        read = tf.compat.v1.py_func(_value_of(value), [], dtype, stateful=False)
                    read.set_shape(value.shape)
                    ops[f"{name}:0"] = read
        return ops


def _value_of(value: Any) -> Any:
    """The weight's value, computed when TF calls it (a lazy weight is read from the checkpoint then)."""
    import numpy as np

    return lambda: np.ascontiguousarray(value)


_MAX_ERROR = 200


def _first_line(e: BaseException) -> str:
    """One line, capped: embedded TF messages can run to kilobytes."""
    text = str(e).strip().splitlines()
    line = text[0] if text else type(e).__name__
    return line if len(line) <= _MAX_ERROR else line[:_MAX_ERROR] + "..."


def _check_dtypes(graph_def: Any, where: Any) -> None:
    """Every type attribute must name a DataType this reader knows: a bit flip in a .pb can leave enum 0
    (DT_INVALID) in a Placeholder's dtype, which would otherwise surface deep in the parser."""
    nodes = list(graph_def.node) + [n for f in graph_def.library.function for n in f.node_def]
    for node in nodes:
        for key, attr in node.attr.items():
            kind = attr.WhichOneof("value")
            enums = [attr.type] if kind == "type" else list(attr.list.type) if kind == "list" else []
            for enum in enums:
                try:
                    dtype_name(enum)
                except ValueError:
                    raise InputError(f"node '{node.name}' ({node.op}) has attribute {key!r} of unknown "
                                     f"TensorFlow DataType {enum}; the file may be corrupt (re-export it)") from None


_FLOAT_INPUTS = ("float32", "float16", "bfloat16", "float64")
# TF ops whose IR lowering is float-only (convolutions, pooling, dense, batch norm): an integer input that
# reaches one (through Identity) is an image or feature map left integer, not a token id or an index.
_FLOAT_ONLY_CONSUMERS = frozenset({
    "Conv2D", "Conv3D", "DepthwiseConv2dNative", "Conv2DBackpropInput", "Conv3DBackpropInputV2", "MaxPool",
    "MaxPoolV2", "AvgPool", "MaxPool3D", "AvgPool3D", "MatMul", "BiasAdd", "FusedBatchNorm", "FusedBatchNormV2",
    "FusedBatchNormV3",
})
# their integer parameters (an output size, a window): an integer input may feed these
_INTEGER_PARAMETERS = {"Conv2DBackpropInput": (0,), "Conv3DBackpropInputV2": (0,), "MaxPoolV2": (1, 2)}


def _check_input_dtypes(graph_def: Any, inputs: list[str]) -> None:
    """Integer and bool inputs (token ids, masks, indices) flow through the IR as such; one that feeds a
    float-only op directly (an int32 image into a Conv) would otherwise reach a target that refuses it deep
    inside, so it is refused up front, naming the input."""
    by_name = {n.name: n for n in graph_def.node}
    readers: dict[str, list[Any]] = {}
    for node in graph_def.node:
        for name in node.input:
            readers.setdefault(name.lstrip("^").split(":")[0], []).append(node)
    for tensor in inputs:
        node = by_name.get(tensor.split(":")[0])
        if node is None or node.op not in ("Placeholder", "PlaceholderWithDefault") or "dtype" not in node.attr:
            continue
        dtype = dtype_name(node.attr["dtype"].type)
        if dtype in _FLOAT_INPUTS:
            continue
        frontier, seen = [node.name], set()
        while frontier:
            source = frontier.pop()
            for reader in readers.get(source, []):
                if reader.name in seen:
                    continue
                seen.add(reader.name)
                positions = [i for i, name in enumerate(reader.input) if name.split(":")[0] == source]
                if reader.op == "Identity":
                    frontier.append(reader.name)
                elif reader.op in _FLOAT_ONLY_CONSUMERS and not set(positions) <= set(
                        _INTEGER_PARAMETERS.get(reader.op, ())):
                    raise InputError(f"input '{node.name}' ({node.op}) is {dtype} and feeds {reader.op} "
                                     f"'{reader.name}', which takes float only: cast it to float32 in the model, "
                                     f"or name float inputs with --inputs")


def _inference(graph_def: Any, options: ParseOptions, where: Any, reader: Any = None, prefix: str = "",
               default_inputs: list[str] | None = None, default_outputs: list[str] | None = None,
               notes: list[str] | None = None) -> Frozen:
    """The training -> inference passes (on the proto, nothing runs), the safety check of what is
    left, then function calls inlined."""
    _check_dtypes(graph_def, where)
    prepared = prepare(graph_def, inputs=options.inputs, outputs=options.outputs,
                       settings=options.settings, use_ema=options.use_ema, reader=reader, prefix=prefix,
                       default_inputs=default_inputs, default_outputs=default_outputs,
                       check=lambda gd, outs: check_graph(gd, outs, where))  # before anything runs
    _check_input_dtypes(prepared.graph_def, prepared.inputs)
    return Frozen(inline_calls(prepared.graph_def, keep=prepared.inputs + prepared.outputs),
                  prepared.inputs, prepared.outputs,
                  (notes or []) + prepared.notes, prepared.records, prepared.weights)


def _read_meta_graph(meta: Path) -> Any:

    proto = MetaGraphDef()
    try:
        proto.ParseFromString(meta.read_bytes())
    except Exception as e:  # noqa: BLE001 - any decode failure: unreadable graph
        raise InputError(f"{meta}: cannot read the graph ({_first_line(e)}); "
                         "pass the frozen .pb or SavedModel instead") from None
    if not proto.graph_def.node:
        raise InputError(f"{meta}: the .meta file holds no graph; pass the frozen .pb or SavedModel instead")
    return proto


def _reader(prefix: str | Path) -> Any:
    """A reader of the checkpoint bundle itself (no graph, no restore op, no TensorFlow)."""
    return Bundle(prefix)


def load_checkpoint(source: Source, options: ParseOptions) -> Frozen:
    prefix = source.prefix or checkpoint_prefix(source.path)
    check_checkpoint(prefix)
    meta = _read_meta_graph(Path(f"{prefix}.meta"))
    return _inference(meta.graph_def, options, f"{prefix}.meta", _reader(prefix), str(prefix))


def load_frozen_pb(source: Source, options: ParseOptions) -> Frozen:

    path = source.path
    graph_def = GraphDef()
    try:
        graph_def.ParseFromString(Path(path).read_bytes())
    except Exception as e:  # noqa: BLE001
        raise InputError(f"{path}: corrupt GraphDef ({_first_line(e)})") from None
    try:
        return _inference(graph_def, options, path)
    except InputError as e:
        raise InputError(f"{path}: {e}") from None


def _read_saved_model(directory: Path) -> Any:

    sm = SavedModel()
    try:
        sm.ParseFromString((directory / "saved_model.pb").read_bytes())
    except Exception as e:  # noqa: BLE001
        raise InputError(f"{directory / 'saved_model.pb'}: corrupt SavedModel ({_first_line(e)})") from None
    if not sm.meta_graphs:
        raise InputError(f"{directory / 'saved_model.pb'}: the SavedModel holds no graph")
    check_graph(sm, (), directory)  # before anything of it is read further
    return sm


def _is_tf2(saved_model: Any) -> bool:
    return len(saved_model.meta_graphs[0].object_graph_def.nodes) > 0


def _variables_reader(directory: Path) -> tuple[Any, Path]:
    prefix = directory / "variables" / "variables"
    return (_reader(prefix) if Path(f"{prefix}.index").exists() else None), prefix


def _load_tf2(directory: Path, saved_model: Any, options: ParseOptions) -> Frozen:
    """The signature's function as a GraphDef (saved_model.py), then the TF1 path: its variables are
    VarHandleOps named by checkpoint key, frozen from variables/ like any checkpoint's."""
    reader, prefix = _variables_reader(directory)
    try:
        signature = signature_graph(saved_model, directory, reader)
    except NotTF2 as e:  # fall back to the TF1 `serve` meta graph
        try:
            return _load_tf1(directory, saved_model, options,
                             f"the TF2 object graph cannot be read ({e}); read the TF1 'serve' meta graph instead")
        except (InputError, UsageError):
            pass
        raise InputError(f"{directory}: cannot load the SavedModel ({e})") from None
    notes = [f"SavedModel signature '{signature.key}'"]
    return _inference(signature.graph_def, options, directory, reader, str(prefix),
                      signature.inputs, signature.outputs, notes)


def _load_tf1(directory: Path, saved_model: Any, options: ParseOptions, why: str = "") -> Frozen:
    """The `serve` meta graph, its variables read from variables/ (no loader ops run)."""
    sm = saved_model
    graphs = [m for m in sm.meta_graphs if "serve" in m.meta_info_def.tags] or list(sm.meta_graphs)
    meta = graphs[0]
    notes = [why] if why else []
    sig = meta.signature_def.get("serving_default")
    default_in = [v.name for v in sig.inputs.values()] if sig else None
    default_out = [v.name for v in sig.outputs.values()] if sig else None
    if sig:
        notes.append("SavedModel signature 'serving_default'")
    reader, prefix = _variables_reader(directory)
    return _inference(meta.graph_def, options, directory, reader, str(prefix), default_in, default_out, notes)


def load_saved_model(source: Source, options: ParseOptions) -> Frozen:
    directory = source.path
    check_saved_model(directory)
    saved_model = _read_saved_model(directory)
    if _is_tf2(saved_model):
        return _load_tf2(directory, saved_model, options)
    return _load_tf1(directory, saved_model, options)


LOADERS = {
    "tf_checkpoint": load_checkpoint,
    "frozen_pb": load_frozen_pb,
    "saved_model": load_saved_model,
}
