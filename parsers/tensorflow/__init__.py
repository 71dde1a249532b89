"""TensorFlow sources (TF1 checkpoint + .meta, frozen GraphDef .pb, SavedModel) -> IR graph.

parse(path, options) -> ir.Graph (NCHW, explicit pads); run_reference(path, graph, inputs) runs the
same frozen graph in TensorFlow on IR-layout inputs and returns IR-layout outputs.
TensorFlow is imported only by the reference run (verification), inside its functions.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from tf_convert.convert.errors import InputError
from tf_convert.parsers.base import ParseOptions
from tf_convert.parsers.source import Source, kinds_of, open_source

from .build import build_graph, read_inputs
from .loader import LOADERS
from .protos import to_tensorflow
from .weight_stream import stream_weights

if TYPE_CHECKING:
    from tf_convert.convert.ir import Graph

KINDS = kinds_of("tensorflow")


def _quiet() -> None:
    """No C++ logging and no Python deprecation chatter from TF's v1 APIs (the reference run only:
    parsing never imports TensorFlow)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")


# The last frozen graphs, so run_reference after parse (same process: --verify) does not load the
# source twice; keyed by path, its modification time and the chosen inputs/outputs.
_FROZEN_CACHE: OrderedDict[tuple, object] = OrderedDict()
_CACHE_SIZE = 2


def _key(source: Source, inputs: list[str], outputs: list[str], settings: dict) -> tuple:
    stamps = tuple((str(f), f.stat().st_mtime_ns) for f in source.files)
    return (str(source.path.resolve()), stamps, tuple(inputs), tuple(outputs), repr(sorted(settings.items())))


def _remember(source: Source, frozen, settings: dict) -> None:
    _FROZEN_CACHE[_key(source, frozen.inputs, frozen.outputs, settings)] = frozen
    while len(_FROZEN_CACHE) > _CACHE_SIZE:
        _FROZEN_CACHE.popitem(last=False)


def _cached(source: Source, inputs: list[str], outputs: list[str], settings: dict):
    return _FROZEN_CACHE.get(_key(source, inputs, outputs, settings))


def _settings(options: ParseOptions) -> dict:
    """What, besides inputs/outputs, decides the inference graph (kept in graph.metadata so the
    reference run rebuilds the same graph)."""
    return {"set": dict(options.settings), "use_ema": bool(options.use_ema)}


def load(path: str | Path | Source, options: ParseOptions, kind: str | None = None):
    """The source as a frozen GraphDef with its chosen inputs/outputs (see loader.Frozen)."""
    source = open_source(path)
    return LOADERS[source.kind](source, options)


def parse(path: str | Path | Source, options: ParseOptions | None = None) -> Graph:
    options = options or ParseOptions()
    source = open_source(path)
    frozen = load(source, options)
    options.notes.extend(frozen.notes)
    options.records.extend(frozen.records)
    frozen = read_inputs(frozen, options)  # a signature's argument the outputs never read is left out
    _remember(source, frozen, _settings(options))
    graph = build_graph(frozen, options, source.model_name, source.kind)
    graph.metadata["source_path"] = str(source.path)
    graph.metadata["tf_settings"] = _settings(options)
    return graph


def _to_source(x: np.ndarray, layout: str) -> np.ndarray:
    return np.transpose(x, (0, 2, 3, 1)) if layout == "NHWC" and x.ndim == 4 else x


def _from_source(y: np.ndarray, layout: str) -> np.ndarray:
    return np.transpose(y, (0, 3, 1, 2)) if layout == "NHWC" and y.ndim == 4 else y


def _frozen_for(source: Source, graph: Graph):
    """The frozen source `graph` was parsed from (same inputs, outputs and --set/--use-ema)."""
    src_in = [graph.source_names[n] for n in graph.inputs]
    src_out = [graph.source_names[n] for n in graph.outputs]
    settings = graph.metadata.get("tf_settings") or {"set": {}, "use_ema": False}
    frozen = _cached(source, src_in, src_out, settings)
    if frozen is None:  # kept: a reference child runs several input sets on one load
        frozen = load(source, ParseOptions(inputs=src_in, outputs=src_out, settings=dict(settings["set"]),
                                           use_ema=bool(settings["use_ema"])))
        _remember(source, frozen, settings)
    return frozen


def session_config():
    """No grappler: its constant folding over big weight tensors costs seconds and changes nothing."""
    import tensorflow as tf
    from tensorflow.core.protobuf import rewriter_config_pb2

    config = tf.compat.v1.ConfigProto()
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    config.graph_options.rewrite_options.constant_folding = rewriter_config_pb2.RewriterConfig.OFF
    config.graph_options.optimizer_options.opt_level = tf.compat.v1.OptimizerOptions.L0
    # idle threads sleep: spinning burns a core the converting process needs meanwhile
    config.experimental.disable_thread_spinning = True
    return config


def _session_run(path: str | Path | Source, graph: Graph, inputs: list[np.ndarray],
                 fetch: list[str]) -> list[np.ndarray]:
    """One TF session run of the frozen source: feed IR-layout inputs, fetch tensors by TF name."""
    _quiet()
    import tensorflow as tf


    src_in = [graph.source_names[n] for n in graph.inputs]
    frozen = _frozen_for(open_source(path), graph)
    tfg = tf.Graph()
    with tfg.as_default():
        # inputs of another size than the graph's (verify's extra sizes): feed placeholders of free shape
        free = {t: tf.compat.v1.placeholder(tf.as_dtype(np.asarray(x).dtype), None)
                for n, t, x in zip(graph.inputs, src_in, inputs) if np.shape(x) != tuple(graph.shape(n))}
        weights = frozen.weight_ops()  # read by TF when it runs: no fed copy beside TF's own
        try:
            tf.import_graph_def(to_tensorflow(frozen.graph_def), name="", input_map={**free, **weights} or None)
        except ValueError as e:  # a NodeDef TF's own validation refuses (what the parser accepted)
            line = (str(e).strip().splitlines() or [type(e).__name__])[0][:160]
            raise InputError(f"{open_source(path).path}: TensorFlow cannot load the graph for the reference run "
                             f"({line}); the file may be corrupt") from None
        stream_weights(tfg, list(weights.values()))  # a few weights in memory at a time, not the model
    feed = {
        free.get(t) if t in free else tfg.get_tensor_by_name(t):
            _to_source(np.asarray(x), graph.source_layouts.get(n, ""))
        for n, t, x in zip(graph.inputs, src_in, inputs)
    }
    with tf.compat.v1.Session(graph=tfg, config=session_config()) as sess:
        return sess.run([tfg.get_tensor_by_name(t) for t in fetch], feed_dict=feed)


def run_tensors(path: str | Path | Source, graph: Graph, inputs: list[np.ndarray],
                names: list[str]) -> dict[str, np.ndarray]:
    """The TF tensors `names` (TF's own layout) in the same run as run_reference; names the frozen
    graph does not hold are left out."""
    src_in = [graph.source_names[n] for n in graph.inputs]
    frozen = _frozen_for(open_source(path), graph)
    nodes = {n.name for n in frozen.graph_def.node}
    fed = set(src_in)
    wanted = [t for t in dict.fromkeys(names) if t.rsplit(":", 1)[0] in nodes and t not in fed]
    return {t: np.asarray(v) for t, v in zip(wanted, _session_run(path, graph, inputs, wanted))}


def run_reference(path: str | Path | Source, graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Run the source in TensorFlow: feed `inputs` (IR layout) by their TF names, return outputs
    in IR layout and in graph.outputs order."""
    values = _session_run(path, graph, inputs, [graph.source_names[n] for n in graph.outputs])
    return [
        np.asarray(_from_source(v, graph.source_layouts.get(n, "")))
        for n, v in zip(graph.outputs, values)
    ]


def run_reference_sets(path: str | Path | Source, graph: Graph,
                       input_sets: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
    """run_reference for every one of `input_sets` in ONE session run: the graph is imported
    once per set into one tf.Graph, every copy reading the same weight ops, so each weight is read from
    the source once for all sets and freed after its last use. The same kernels on the same inputs as
    one run per set: identical outputs. Raises what TF raises for any set (the caller then runs the sets
    one by one to tell which)."""
    _quiet()
    import tensorflow as tf


    src_in = [graph.source_names[n] for n in graph.inputs]
    src_out = [graph.source_names[n] for n in graph.outputs]
    frozen = _frozen_for(open_source(path), graph)
    graph_def = to_tensorflow(frozen.graph_def)
    tfg = tf.Graph()
    feed, fetch = {}, []
    with tfg.as_default():
        weights = frozen.weight_ops()
        for k, inputs in enumerate(input_sets):
            free = {t: tf.compat.v1.placeholder(tf.as_dtype(np.asarray(x).dtype), None)
                    for n, t, x in zip(graph.inputs, src_in, inputs) if np.shape(x) != tuple(graph.shape(n))}
            scope = f"tf_convert_set{k}"
            try:
                tf.import_graph_def(graph_def, name=scope, input_map={**free, **weights} or None)
            except ValueError as e:  # a NodeDef TF's own validation refuses (what the parser accepted)
                line = (str(e).strip().splitlines() or [type(e).__name__])[0][:160]
                raise InputError(f"{open_source(path).path}: TensorFlow cannot load the graph for the reference "
                                 f"run ({line}); the file may be corrupt") from None
            for n, t, x in zip(graph.inputs, src_in, inputs):
                fed = free[t] if t in free else tfg.get_tensor_by_name(f"{scope}/{t}")
                feed[fed] = _to_source(np.asarray(x), graph.source_layouts.get(n, ""))
            fetch.append([tfg.get_tensor_by_name(f"{scope}/{t}") for t in src_out])
        stream_weights(tfg, list(weights.values()))  # a few weights in memory at a time, not the model
    with tf.compat.v1.Session(graph=tfg, config=session_config()) as sess:
        values = sess.run(fetch, feed_dict=feed)
    return [[np.asarray(_from_source(v, graph.source_layouts.get(n, ""))) for n, v in zip(graph.outputs, outputs)]
            for outputs in values]
