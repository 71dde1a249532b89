"""Synthetic TF1 training-style checkpoints of a chosen size, built in bounded memory (the bench).

    python -m bench.checkpoints PREFIX --convs N [--channels 1024] [--check]
    python -m bench.checkpoints sign PREFIX DEST_DIR   # DEST_DIR/model.ckpt: same data, .meta with a signature

A stack of N 3x3xCxC convolutions (SAME, bias, ReLU; two of them at stride 2) as a tf.compat.v1 graph of
VariableV2 nodes with a Saver. The .meta is exported from the graph without a session; the values are
written with TF's own ops a group of variables at a time (tf.raw_ops.SaveV2 into temporary prefixes, then
tf.raw_ops.MergeV2Checkpoints into PREFIX), so building a 6 GB checkpoint holds at most one group
(~SHARD_BYTES) in memory. The result has one .data shard per group, as `Saver(sharded=True)` would write.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

INPUT = "input"
OUTPUT = "output"
DONE = ".done.json"
SHARD_BYTES = 512 << 20  # one SaveV2 call (and one .data shard) holds at most this much
VERSION = 2  # bump when the graph or the values a build produces change


def conv_count(gigabytes: float, channels: int = 1024) -> int:
    """The most 3x3xCxC float32 convolutions whose checkpoint still reads `gigabytes` (10^9 bytes) to one
    decimal: 2.6 -> 70 convs (2.64 GB), as in the table."""
    return max(3, int((gigabytes + 0.05) * 1e9 // (9 * channels * channels * 4)))


def strided(convs: int) -> set[int]:
    """The two convolutions at stride 2: a third and two thirds of the way down."""
    return {convs // 3, (2 * convs) // 3}


def kernel_value(index: int, channels: int, seed: int = 0) -> np.ndarray:
    """He-scaled random HWIO kernel: activations stay O(1) through any depth of conv+ReLU."""
    rng = np.random.default_rng(seed * 100_003 + index)
    value = rng.standard_normal((3, 3, channels, channels), dtype=np.float32)
    value *= np.float32(np.sqrt(2.0 / (9 * channels)))
    return value


def bias_value(index: int, channels: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed * 100_003 + index + 7_919)
    return rng.uniform(-0.1, 0.1, channels).astype(np.float32)


def variables(convs: int, channels: int, seed: int = 0):
    """(name, shape, value maker) of every variable, in graph order; values are made only when asked."""
    for i in range(convs):
        yield f"conv{i}/kernel", (3, 3, channels, channels), lambda i=i: kernel_value(i, channels, seed)
        yield f"conv{i}/bias", (channels,), lambda i=i: bias_value(i, channels, seed)


def is_built(prefix: Path, convs: int, channels: int) -> bool:
    try:
        doc = json.loads(Path(f"{prefix}{DONE}").read_text())
    except (OSError, ValueError):
        return False
    return doc == {"convs": convs, "channels": channels, "version": VERSION}


def build(prefix: str | Path, convs: int, channels: int = 1024, seed: int = 0,
          shard_bytes: int = SHARD_BYTES) -> Path:
    """Write PREFIX.meta, PREFIX.index and PREFIX.data-*; reuses a complete previous build."""
    prefix = Path(prefix)
    if is_built(prefix, convs, channels):
        return prefix
    remove(prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    _export_meta(prefix, convs, channels)
    _write_values(prefix, convs, channels, seed, shard_bytes)
    Path(f"{prefix}{DONE}").write_text(json.dumps({"convs": convs, "channels": channels, "version": VERSION}))
    return prefix


def remove(prefix: str | Path) -> None:
    prefix = Path(prefix)
    for path in prefix.parent.glob(prefix.name + ".*"):
        shutil.rmtree(path) if path.is_dir() else path.unlink()


def files_bytes(prefix: str | Path) -> int:
    prefix = Path(prefix)
    return sum(p.stat().st_size for p in prefix.parent.glob(prefix.name + ".*") if p.is_file())


def _export_meta(prefix: Path, convs: int, channels: int) -> None:
    """The training-style graph: placeholder -> N x (conv, bias, relu) -> output, VariableV2 + Saver."""
    import tensorflow as tf

    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, (None, None, None, channels), name=INPUT)
        var_list = []
        for name, shape, _ in variables(convs, channels):
            # the initializer is a cheap op in the graph; its value never runs (the checkpoint has the weights)
            var_list.append(v1.get_variable(name, shape=shape, dtype=tf.float32,
                                            initializer=v1.zeros_initializer(), use_resource=False))
        stride2 = strided(convs)
        for i in range(convs):
            kernel, bias = var_list[2 * i], var_list[2 * i + 1]
            s = 2 if i in stride2 else 1
            x = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, kernel, strides=s, padding="SAME"), bias))
        y = tf.identity(x, name=OUTPUT)
        saver = v1.train.Saver(var_list)
        meta = v1.train.export_meta_graph(saver_def=saver.as_saver_def(), graph=graph)
    _signature(meta, {INPUT: f"{INPUT}:0"}, {OUTPUT: f"{y.op.name}:0"})
    Path(f"{prefix}.meta").write_bytes(meta.SerializeToString())


def _signature(meta, graph_inputs: dict[str, str], graph_outputs: dict[str, str]) -> None:
    """Add a serving signature (key -> tensor name) to a MetaGraphDef, as tf.estimator exports leave:
    OpenVINO's MetaGraph reader finds a model's inputs and outputs only there."""
    sig = meta.signature_def["serving_default"]
    sig.method_name = "tensorflow/serving/predict"
    for side, names in ((sig.inputs, graph_inputs), (sig.outputs, graph_outputs)):
        for key, tensor in names.items():
            side[key].name = tensor


def signed_copy(prefix: str | Path, dest_dir: str | Path, graph_inputs: dict[str, str],
                graph_outputs: dict[str, str]) -> Path:
    """DEST/model.ckpt: the checkpoint's data files linked, its .meta copied with a serving signature."""
    from tf_convert.parsers.tensorflow import protos

    prefix, dest = Path(prefix), Path(dest_dir) / "model.ckpt"
    dest.parent.mkdir(parents=True, exist_ok=True)
    for path in prefix.parent.glob(prefix.name + ".*"):
        if path.name.endswith((".index",)) or ".data-" in path.name:
            target = dest.parent / ("model.ckpt" + path.name[len(prefix.name):])
            target.unlink(missing_ok=True)
            target.symlink_to(path.resolve())
    meta = protos.MetaGraphDef()
    meta.ParseFromString(Path(f"{prefix}.meta").read_bytes())
    _signature(meta, graph_inputs, graph_outputs)
    Path(f"{dest}.meta").write_bytes(meta.SerializeToString())
    return dest


def _write_values(prefix: Path, convs: int, channels: int, seed: int, shard_bytes: int) -> None:
    import tensorflow as tf

    work = prefix.parent / f".{prefix.name}.parts"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    parts: list[str] = []
    group: list[tuple[str, np.ndarray]] = []
    held = 0

    def flush() -> None:
        part = str(work / f"part{len(parts)}")
        tf.raw_ops.SaveV2(prefix=part, tensor_names=[n for n, _ in group], shape_and_slices=[""] * len(group),
                          tensors=[v for _, v in group])
        parts.append(part)
        group.clear()

    for name, _, make in variables(convs, channels, seed):
        value = make()
        if group and held + value.nbytes > shard_bytes:
            flush()
            held = 0
        group.append((name, value))
        held += value.nbytes
    if group:
        flush()
    # renames each part's .data into a shard of PREFIX and merges the .index files (no values copied)
    tf.raw_ops.MergeV2Checkpoints(checkpoint_prefixes=parts, destination_prefix=str(prefix), delete_old_dirs=True)
    shutil.rmtree(work, ignore_errors=True)


def check(prefix: str | Path, convs: int, channels: int, seed: int = 0, restore: bool = True) -> None:
    """TF's CheckpointReader sees every variable with its value; the .meta's Saver restores it and runs."""
    import tensorflow as tf

    reader = tf.train.load_checkpoint(str(prefix))
    shapes = reader.get_variable_to_shape_map()
    expected = list(variables(convs, channels, seed))
    assert set(shapes) == {n for n, _, _ in expected}, sorted(shapes)
    for name, shape, make in expected:
        assert tuple(shapes[name]) == shape, (name, shapes[name])
        np.testing.assert_array_equal(reader.get_tensor(name), make(), err_msg=name)
    if not restore:
        return
    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default(), v1.Session(graph=graph) as sess:
        saver = v1.train.import_meta_graph(f"{prefix}.meta")
        saver.restore(sess, str(prefix))
        first = sess.run(graph.get_tensor_by_name(f"{expected[0][0]}:0"))
        np.testing.assert_array_equal(first, expected[0][2]())
        x = np.random.default_rng(0).standard_normal((1, 8, 8, channels)).astype(np.float32)
        y = sess.run(f"{OUTPUT}:0", {f"{INPUT}:0": x})
        assert y.shape == (1, 2, 2, channels) and np.isfinite(y).all() and np.abs(y).max() > 0, y.shape


def sign_main(prefix: str, dest_dir: str) -> int:
    """`sign PREFIX DEST`: signed_copy with the graph's placeholder as input and the sink it computes as output."""
    from tf_convert.parsers.tensorflow import protos

    meta = protos.MetaGraphDef()
    meta.ParseFromString(Path(f"{prefix}.meta").read_bytes())
    nodes = meta.graph_def.node
    used = {i.split(":")[0].lstrip("^") for n in nodes for i in n.input}
    inputs = [n.name for n in nodes if n.op == "Placeholder"]
    outputs = [n.name for n in nodes if n.name not in used and n.op not in ("Assign", "NoOp")
               and not n.name.startswith("save/")]
    signed_copy(prefix, dest_dir, {i: f"{i}:0" for i in inputs}, {o: f"{o}:0" for o in outputs})
    return 0


def main() -> int:
    if sys.argv[1:2] == ["sign"]:
        return sign_main(*sys.argv[2:4])
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("prefix", type=Path)
    parser.add_argument("--convs", type=int, required=True)
    parser.add_argument("--channels", type=int, default=1024)
    parser.add_argument("--check", action="store_true", help="read it back with TF (small sizes only)")
    args = parser.parse_args()
    build(args.prefix, args.convs, args.channels)
    if args.check:
        check(args.prefix, args.convs, args.channels)
    print(json.dumps({"prefix": str(args.prefix), "bytes": files_bytes(args.prefix)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
