"""Loading a TF source into one frozen GraphDef (every variable replaced by its value).

All three kinds end up the same way: a GraphDef with constants only, plus the chosen input and
output tensor names. The rest of the parser never sees variables or sessions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from convert.errors import InputError
from parsers.base import ParseOptions

from .graphio import choose_io, node_of
from .inline import inline_calls
from .safety import check_graph
from .source import check_checkpoint, check_saved_model, checkpoint_prefix

_VARIABLE_OPS = {"VariableV2", "Variable", "VarHandleOp"}


@dataclass
class Frozen:
    graph_def: Any
    inputs: list[str]
    outputs: list[str]
    notes: list[str] = field(default_factory=list)


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0][:200] if text else type(e).__name__


def _freeze(sess: Any, graph_def: Any, outputs: list[str]) -> Any:
    import tensorflow as tf

    names = sorted({node_of(o) for o in outputs})
    return tf.compat.v1.graph_util.convert_variables_to_constants(sess, graph_def, names)


def load_checkpoint(path: Path, options: ParseOptions) -> Frozen:
    import tensorflow as tf

    prefix = checkpoint_prefix(path)
    check_checkpoint(prefix)
    meta = f"{prefix}.meta"
    graph = tf.Graph()
    notes: list[str] = []
    with graph.as_default():
        try:
            saver = tf.compat.v1.train.import_meta_graph(meta, clear_devices=True)
        except Exception as e:  # noqa: BLE001 - any failure: unreadable graph
            raise InputError(f"{meta}: cannot read the graph ({_first_line(e)}); "
                             "pass the frozen .pb or SavedModel instead") from None
    graph_def = graph.as_graph_def()
    ins, outs = choose_io(graph_def, options.inputs, options.outputs, notes)
    restore_op = [saver.saver_def.restore_op_name] if saver is not None else []
    graph_def = check_graph(graph_def, outs, meta, restore=restore_op)  # before anything runs
    with tf.compat.v1.Session(graph=graph) as sess:
        if saver is not None:
            try:
                saver.restore(sess, str(prefix))
            except Exception as e:  # noqa: BLE001
                raise InputError(f"{prefix}: cannot restore the weights ({_first_line(e)}); "
                                 "the .index/.data-* files may be corrupt or from another graph") from None
        frozen = _freeze(sess, graph_def, outs)
    return Frozen(inline_calls(frozen), ins, outs, notes)


def load_frozen_pb(path: Path, options: ParseOptions) -> Frozen:
    from tensorflow.core.framework import graph_pb2

    graph_def = graph_pb2.GraphDef()
    try:
        graph_def.ParseFromString(Path(path).read_bytes())
    except Exception as e:  # noqa: BLE001
        raise InputError(f"{path}: corrupt GraphDef ({_first_line(e)})") from None
    variables = [n.name for n in graph_def.node if n.op in _VARIABLE_OPS]
    if variables:
        raise InputError(
            f"{path}: the GraphDef holds variables without values (e.g. '{variables[0]}'), so it is "
            "not frozen; pass the checkpoint prefix (model.ckpt) or the SavedModel instead"
        )
    notes: list[str] = []
    ins, outs = choose_io(graph_def, options.inputs, options.outputs, notes)
    graph_def = check_graph(graph_def, outs, path)  # before anything runs
    return Frozen(inline_calls(graph_def), ins, outs, notes)


def _is_tf2_saved_model(directory: Path) -> bool:
    from tensorflow.core.protobuf import saved_model_pb2

    sm = saved_model_pb2.SavedModel()
    try:
        sm.ParseFromString((directory / "saved_model.pb").read_bytes())
    except Exception as e:  # noqa: BLE001
        raise InputError(f"{directory / 'saved_model.pb'}: corrupt SavedModel ({_first_line(e)})") from None
    if not sm.meta_graphs:
        raise InputError(f"{directory / 'saved_model.pb'}: the SavedModel holds no graph")
    check_graph(sm, (), directory)  # before TensorFlow loads it (that runs its restore and init ops)
    return len(sm.meta_graphs[0].object_graph_def.nodes) > 0


def _load_tf2(directory: Path, options: ParseOptions) -> Frozen:
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    try:
        obj = tf.saved_model.load(str(directory))
    except Exception as e:  # noqa: BLE001
        raise InputError(f"{directory}: cannot load the SavedModel ({_first_line(e)})") from None
    signatures = dict(obj.signatures)
    if not signatures:
        raise InputError(f"{directory}: the SavedModel has no signature; export it with a "
                         "'serving_default' signature or pass a frozen .pb")
    key = "serving_default" if "serving_default" in signatures else sorted(signatures)[0]
    frozen_fn = convert_variables_to_constants_v2(signatures[key])
    graph_def = inline_calls(frozen_fn.graph.as_graph_def())
    default_in = [t.name for t in frozen_fn.inputs if t.dtype != tf.resource]
    default_out = [t.name for t in frozen_fn.outputs]
    notes = [f"SavedModel signature '{key}'"]
    ins, outs = choose_io(graph_def, options.inputs, options.outputs, notes, default_in, default_out)
    return Frozen(check_graph(graph_def, outs, directory), ins, outs, notes)


def _load_tf1(directory: Path, options: ParseOptions) -> Frozen:
    import tensorflow as tf

    graph = tf.Graph()
    notes: list[str] = []
    with tf.compat.v1.Session(graph=graph) as sess:
        try:
            meta = tf.compat.v1.saved_model.loader.load(sess, ["serve"], str(directory))
        except Exception as e:  # noqa: BLE001
            raise InputError(f"{directory}: cannot load the SavedModel with tag 'serve' "
                             f"({_first_line(e)})") from None
        sig = meta.signature_def.get("serving_default")
        default_in = [v.name for v in sig.inputs.values()] if sig else None
        default_out = [v.name for v in sig.outputs.values()] if sig else None
        if sig:
            notes.append("SavedModel signature 'serving_default'")
        graph_def = graph.as_graph_def()
        ins, outs = choose_io(graph_def, options.inputs, options.outputs, notes, default_in, default_out)
        frozen = _freeze(sess, graph_def, outs)
    return Frozen(inline_calls(frozen), ins, outs, notes)


def load_saved_model(path: Path, options: ParseOptions) -> Frozen:
    directory = Path(path)
    check_saved_model(directory)
    if _is_tf2_saved_model(directory):
        return _load_tf2(directory, options)
    return _load_tf1(directory, options)


LOADERS = {
    "tf_checkpoint": load_checkpoint,
    "frozen_pb": load_frozen_pb,
    "saved_model": load_saved_model,
}
