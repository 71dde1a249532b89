"""Fault injection as a test of the verifier: plant one fault in a converted model's own files and
check that `convert verify OUT` fails (exit 4) and `--layers` names the planted node, at every output
scale; the unmutated model must pass at every scale.

The model (build_model) has one instance of everything the faults need: a stride-2 SAME conv with
pads 0/1 (conv1), ReLU6, a dilated conv, a max pool over negative values with pads 0/1, a batch norm
the passes cannot fold (after the pool), a SAME average pool, two same-shaped sibling convs (conv2,
conv3), and a 4x4 stride-4 head whose stride 3 keeps the shape. The head's weights are multiplied by
`scale / HEAD_GAIN`, so the largest output is about `scale`.

Each mutation is (kind, target) -> (edit of OUT, the node --layers must name); `NOT_APPLICABLE` says
why a kind has no form in a target (e.g. torch folds batch norm into a scale and shift: no epsilon).

    python -m tests.support.verify_faults [--scales 1e-6,1e-4,...] [--targets torch,onnx] [--json PATH]

runs the whole matrix (`make verify-faults`) and prints the count per kind and target.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np

TARGETS = ("torch", "onnx", "caffe", "mxnet")
SCALES = (1e-6, 1e-4, 1e-2, 1.0, 1e2, 1e4, 1e6)
MXNET_PYTHON = Path(".venv-mxnet/bin/python")
HEAD_GAIN = 195.5  # max|output| with the head's weights unscaled, on the check's input (seed 0): measured


def build_model(path: Path, scale: float) -> Path:
    """The frozen TF graph (see the module doc), input 1x16x16x3, output 1x2x2x4, max|output| ~ `scale`."""
    from tests.support.tf_models import save_frozen

    def build(x):
        import tensorflow as tf

        rng = np.random.default_rng(3)

        def w(*shape, s=0.4):
            return tf.constant((rng.standard_normal(shape) * s).astype(np.float32))

        y = tf.nn.conv2d(x, w(3, 3, 3, 8, s=1.0), 2, "SAME", name="conv1/Conv2D")  # 16 -> 8, pads 0/1
        y = tf.nn.relu6(tf.nn.bias_add(y, w(8), name="conv1/BiasAdd"), name="conv1/Relu6")  # many above 6
        y = tf.nn.conv2d(y, w(3, 3, 8, 8), 1, "SAME", dilations=2, name="conv2/Conv2D")
        y = tf.nn.relu(y, name="conv2/Relu")
        y = tf.nn.max_pool2d(y - 3.0, 2, 1, "SAME", name="pool/MaxPool")  # pads 0/1 over negative values
        y, _, _ = tf.compat.v1.nn.fused_batch_norm(y, w(8, s=0.3) + 1.0, w(8), w(8), tf.abs(w(8)) + 0.5,
                                                   epsilon=1e-3, is_training=False, name="bn/FusedBatchNormV3")
        y = tf.nn.avg_pool2d(y, 3, 1, "SAME", name="avg/AvgPool")  # pads 1/1, TF divides by the real count
        y = tf.nn.relu(tf.nn.conv2d(y, w(3, 3, 8, 8), 1, "SAME", name="conv3/Conv2D"), name="conv3/Relu")
        y = tf.nn.conv2d(y, w(4, 4, 8, 4) * (scale / HEAD_GAIN), 4, "VALID", name="head/Conv2D")  # 8 -> 2
        tf.identity(y, name="output")

    return save_frozen(path, build, [1, 16, 16, 3])


def convert_args(target: str) -> list[str]:
    # baked pads (the faults edit them); torch and ONNX would otherwise compute them at run time
    return ["--static-shapes"] if target in ("torch", "onnx") else []


# ---- editing each target's files --------------------------------------------------------------------

def _edit_text(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    if old not in text:
        raise AssertionError(f"{old!r} not in {path.name}")
    path.write_text(text.replace(old, new, 1))


def _torch_state(out: Path, edit: Callable[[dict], None]) -> None:
    import torch

    state = torch.load(out / "model.pt", map_location="cpu")
    edit(state)
    torch.save(state, out / "model.pt")


def _onnx(out: Path, edit: Callable) -> None:
    import onnx

    model = onnx.load(str(out / "model.onnx"))
    edit(model.graph)
    onnx.save(model, str(out / "model.onnx"))


def _onnx_node(graph, name: str):
    return next(n for n in graph.node if n.name == name)


def _onnx_attr(name: str, attr: str, value) -> Callable:
    def edit(graph):
        from onnx import helper

        node = _onnx_node(graph, name)
        kept = [a for a in node.attribute if a.name != attr]
        del node.attribute[:]
        node.attribute.extend(kept + [helper.make_attribute(attr, value)])

    return edit


def _onnx_weight(name: str, change: Callable[[np.ndarray, dict[str, np.ndarray]], np.ndarray]) -> Callable:
    def edit(graph):
        from onnx import numpy_helper

        arrays = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
        for t in graph.initializer:
            if t.name == name:
                t.CopyFrom(numpy_helper.from_array(np.ascontiguousarray(change(arrays[name], arrays)), name))

    return edit


def _onnx_pad_value_zero(graph) -> None:
    """MaxPool pads with -inf by itself; the fault is an explicit zero Pad before it and no pool pads."""
    from onnx import helper, numpy_helper

    pool = _onnx_node(graph, "pool/MaxPool")
    pads = next(list(a.ints) for a in pool.attribute if a.name == "pads")  # [t, l, b, r]
    graph.initializer.append(numpy_helper.from_array(
        np.array([0, 0, pads[0], pads[1], 0, 0, pads[2], pads[3]], np.int64), "fault_pads"))
    pad = helper.make_node("Pad", [pool.input[0], "fault_pads"], ["fault_padded"], name="fault_pad", mode="constant")
    index = list(graph.node).index(pool)
    graph.node.insert(index, pad)
    pool.input[0] = "fault_padded"
    _onnx_attr("pool/MaxPool", "pads", [0, 0, 0, 0])(graph)


def _onnx_relu6_to_relu(graph) -> None:
    node = _onnx_node(graph, "conv1/Relu6")
    node.op_type = "Relu"
    del node.input[1:]


def _caffe_net(path: Path):
    from tf_convert.emitters.caffe.proto import messages

    net = messages()["NetParameter"]()
    net.ParseFromString(path.read_bytes())
    return net


def _caffe_prototxt(out: Path, edit: Callable) -> None:
    from google.protobuf import text_format

    from tf_convert.emitters.caffe.proto import messages

    path = out / "deploy.prototxt"
    header, _, body = path.read_text().partition("\n")
    net = text_format.Parse(body, messages()["NetParameter"]())
    edit(net)
    path.write_text(header + "\n" + text_format.MessageToString(net))


def _caffe_layer(net, name: str):
    return next(layer for layer in net.layer if layer.name == name)


def _caffe_blobs(out: Path, change: Callable[[dict[str, list[np.ndarray]]], None]) -> None:
    """Edit the caffemodel's blobs: {layer: [arrays]} in, changed in place, written back."""
    path = out / "model.caffemodel"
    net = _caffe_net(path)
    blobs = {layer.name: [np.array(b.data, np.float32).reshape(tuple(b.shape.dim)) for b in layer.blobs]
             for layer in net.layer}
    change(blobs)
    for layer in net.layer:
        for blob, value in zip(layer.blobs, blobs[layer.name]):
            del blob.data[:]
            blob.data.extend(np.asarray(value, np.float32).ravel().tolist())
    path.write_bytes(net.SerializeToString())


def _caffe_swap_concat(net, name: str) -> None:
    layer = _caffe_layer(net, name)
    bottoms = list(layer.bottom)
    del layer.bottom[:]
    layer.bottom.extend(reversed(bottoms))


def _caffe_relu6_to_relu(net) -> None:
    _caffe_layer(net, "conv1/Relu6/hi").power_param.shift = -1e30  # min(x, 1e30) instead of min(x, 6)


def _caffe_stride(net) -> None:
    conv = _caffe_layer(net, "output").convolution_param
    conv.stride_h, conv.stride_w = 3, 3


def _mxnet_attr(node: str, key: str, new: str) -> Callable[[Path], None]:
    def edit(out: Path) -> None:
        path = out / "model-symbol.json"
        doc = json.loads(path.read_text())
        (entry,) = [n for n in doc["nodes"] if n["name"] == node]
        entry.setdefault("attrs", {})[key] = new
        path.write_text(json.dumps(doc))

    return edit


def _mxnet_relu6_to_relu(out: Path) -> None:
    path = out / "model-symbol.json"
    doc = json.loads(path.read_text())
    (entry,) = [n for n in doc["nodes"] if n["name"] == "conv1_Relu6"]
    entry["op"], entry["attrs"] = "Activation", {"act_type": "relu"}
    path.write_text(json.dumps(doc))


def _mxnet_params(statement: str) -> Callable[[Path], None]:
    """Edit model-0000.params in MXNet's own environment: `statement` sees `d` (name -> NDArray), `mx`."""

    def edit(out: Path) -> None:
        code = ("import sys, mxnet as mx; p = sys.argv[1]; d = mx.nd.load(p)\n"
                f"{statement}\nmx.nd.save(p, d)")
        subprocess.run([str(MXNET_PYTHON), "-c", code, str(out / "model-0000.params")], check=True,
                       capture_output=True)

    return edit


def _torch_param(change: Callable[[dict], None]) -> Callable[[Path], None]:
    return lambda out: _torch_state(out, change)


def _onnx_edit(edit: Callable) -> Callable[[Path], None]:
    return lambda out: _onnx(out, edit)


def _caffe_text(edit: Callable) -> Callable[[Path], None]:
    return lambda out: _caffe_prototxt(out, edit)


def _text(name: str, old: str, new: str) -> Callable[[Path], None]:
    return lambda out: _edit_text(out / name, old, new)


def _caffe_avg_counts_pads(blobs):  # the divisor correction after Caffe's AVE pooling, all ones
    blobs["avg/AvgPool"][0] = np.ones_like(blobs["avg/AvgPool"][0])


def _caffe_pad_value_zero(blobs):  # the pad group's constant (-inf-like) becomes 0
    for name in ("pool/MaxPool/pad_h_after_const", "pool/MaxPool/pad_w_after_const"):
        blobs[name][1] = np.zeros_like(blobs[name][1])


def _transposed(value: np.ndarray, *_) -> np.ndarray:
    return value.transpose(0, 1, 3, 2)


def _rolled(value: np.ndarray, *_) -> np.ndarray:
    return np.roll(value, 1, axis=0)


MUTATIONS: dict[tuple[str, str], tuple[Callable[[Path], None], str]] = {
    # swapped pad sides: conv1's pads 0/1 become 1/0 (MXNet folds conv1's pads into kernel taps: the pool's)
    ("pad_sides", "torch"): (_text("model.py", "nn.ZeroPad2d((0, 1, 0, 1))", "nn.ZeroPad2d((1, 0, 1, 0))"),
                             "conv1/Conv2D"),
    ("pad_sides", "onnx"): (_onnx_edit(_onnx_attr("conv1/Conv2D", "pads", [1, 1, 0, 0])), "conv1/Conv2D"),
    ("pad_sides", "caffe"): (_caffe_text(lambda net: [_caffe_swap_concat(net, f"conv1/Conv2D/pad_{a}")
                                                      for a in "hw"]), "conv1/Conv2D"),
    ("pad_sides", "mxnet"): (_mxnet_attr("pool_MaxPool_pad", "pad_width", "(0, 0, 0, 0, 1, 0, 1, 0)"),
                             "pool/MaxPool"),
    # 0 instead of -inf before max pooling
    ("pad_value", "torch"): (_text("model.py", "nn.ConstantPad2d((0, 1, 0, 1), float('-inf'))",
                                   "nn.ZeroPad2d((0, 1, 0, 1))"), "pool/MaxPool"),
    ("pad_value", "onnx"): (_onnx_edit(_onnx_pad_value_zero), "pool/MaxPool"),
    ("pad_value", "caffe"): (lambda out: _caffe_blobs(out, _caffe_pad_value_zero), "pool/MaxPool"),
    ("pad_value", "mxnet"): (_mxnet_attr("pool_MaxPool_pad", "constant_value", "0.0"), "pool/MaxPool"),
    # count_include_pad flipped
    ("count_include_pad", "torch"): (_text("model.py", "count_include_pad=False", "count_include_pad=True"),
                                     "avg/AvgPool"),
    ("count_include_pad", "onnx"): (_onnx_edit(_onnx_attr("avg/AvgPool", "count_include_pad", 1)), "avg/AvgPool"),
    ("count_include_pad", "caffe"): (lambda out: _caffe_blobs(out, _caffe_avg_counts_pads), "avg/AvgPool"),
    ("count_include_pad", "mxnet"): (_mxnet_attr("avg_AvgPool", "count_include_pad", "True"), "avg/AvgPool"),
    # stride off by one where the shape survives: the 4x4 head at stride 3 still gives 2x2 on 8x8
    ("stride", "torch"): (_text("model.py", "kernel_size=4, stride=4", "kernel_size=4, stride=3"), "output"),
    ("stride", "onnx"): (_onnx_edit(_onnx_attr("output", "strides", [3, 3])), "output"),
    ("stride", "caffe"): (_caffe_text(_caffe_stride), "output"),
    ("stride", "mxnet"): (_mxnet_attr("output", "stride", "(3, 3)"), "output"),
    # a transposed kernel (H <-> W) in conv3
    ("transposed_kernel", "torch"): (_torch_param(lambda s: s.update({"conv3.weight": s["conv3.weight"]
                                                                       .transpose(2, 3).contiguous()})),
                                     "conv3/Conv2D"),
    ("transposed_kernel", "onnx"): (_onnx_edit(_onnx_weight("conv3/Conv2D::weight", _transposed)), "conv3/Conv2D"),
    ("transposed_kernel", "caffe"): (lambda out: _caffe_blobs(out, lambda b: b["conv3/Conv2D"].__setitem__(
        0, _transposed(b["conv3/Conv2D"][0]))), "conv3/Conv2D"),
    ("transposed_kernel", "mxnet"): (_mxnet_params("d['arg:conv3_Conv2D_weight'] = "
                                                   "d['arg:conv3_Conv2D_weight'].transpose((0, 1, 3, 2))"),
                                     "conv3/Conv2D"),
    # BN epsilon 1e-3 -> 1e-5 (only MXNet keeps a BatchNorm with its epsilon)
    ("bn_epsilon", "mxnet"): (_mxnet_attr("bn_FusedBatchNormV3", "eps", "1e-05"), "bn/FusedBatchNormV3"),
    # ReLU6 -> ReLU
    ("relu6", "torch"): (_text("model.py", "torch.clamp(conv1, min=0.0, max=6.0)", "torch.relu(conv1)"),
                         "conv1/Relu6"),
    ("relu6", "onnx"): (_onnx_edit(_onnx_relu6_to_relu), "conv1/Relu6"),
    ("relu6", "caffe"): (_caffe_text(_caffe_relu6_to_relu), "conv1/Relu6"),
    ("relu6", "mxnet"): (_mxnet_relu6_to_relu, "conv1/Relu6"),
    # conv3 gets its sibling conv2's weights (same shape)
    ("sibling_weight", "torch"): (_torch_param(lambda s: s.update({"conv3.weight": s["conv2.weight"].clone()})),
                                  "conv3/Conv2D"),
    ("sibling_weight", "onnx"): (_onnx_edit(_onnx_weight("conv3/Conv2D::weight",
                                                         lambda v, a: a["conv2/Conv2D::weight"])), "conv3/Conv2D"),
    ("sibling_weight", "caffe"): (lambda out: _caffe_blobs(out, lambda b: b["conv3/Conv2D"].__setitem__(
        0, b["conv2/Conv2D"][0].copy())), "conv3/Conv2D"),
    ("sibling_weight", "mxnet"): (_mxnet_params("d['arg:conv3_Conv2D_weight'] = d['arg:conv2_Conv2D_weight'].copy()"),
                                  "conv3/Conv2D"),
    # the head's output channels in another order
    ("channel_order", "torch"): (_torch_param(lambda s: s.update({"output.weight": s["output.weight"]
                                                                   .roll(1, 0).contiguous()})), "output"),
    ("channel_order", "onnx"): (_onnx_edit(_onnx_weight("output::weight", _rolled)), "output"),
    ("channel_order", "caffe"): (lambda out: _caffe_blobs(out, lambda b: b["output"].__setitem__(
        0, _rolled(b["output"][0]))), "output"),
    ("channel_order", "mxnet"): (_mxnet_params("import numpy as np\nw = d['arg:output_weight'].asnumpy()\n"
                                               "d['arg:output_weight'] = mx.nd.array(np.roll(w, 1, axis=0))"),
                                 "output"),
}

NOT_APPLICABLE = {
    ("bn_epsilon", "torch"): "batch norm is folded into a scale and a shift: no epsilon in model.py or model.pt",
    ("bn_epsilon", "onnx"): "batch norm is folded into Mul + Add: no epsilon in model.onnx",
    ("bn_epsilon", "caffe"): "batch norm is folded into a Scale layer: no epsilon in the prototxt",
}

KINDS = tuple(dict.fromkeys(kind for kind, _ in MUTATIONS))


# ---- running the check -------------------------------------------------------------------------------

def run_cli(*args) -> tuple[int, str, str]:
    from click.testing import CliRunner

    from tf_convert import cli

    result = CliRunner().invoke(cli.main, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def convert(pb: Path, target: str, out: Path) -> Path:
    code, _, err = run_cli(f"tf2{target}", pb, "-o", out, "--verify", *convert_args(target))
    if code != 0:
        raise AssertionError(f"converting {pb} to {target}: exit {code}: {err}")
    return out


def planted(converted: Path, kind: str, target: str, where: Path) -> tuple[Path, str]:
    """A copy of `converted` with the (kind, target) fault in its files; the node it sits at."""
    mutate, node = MUTATIONS[(kind, target)]
    out = where / f"{target}-{kind}"
    shutil.rmtree(out, ignore_errors=True)
    copy_out(converted, out)
    mutate(out)
    return out, node


def copy_out(converted: Path, out: Path) -> Path:
    """A copy of the conversion `converted` at `out` that names its source as if converted there: `convert
    verify` reads only the source recorded relative to OUT (app/recorded.py)."""
    from tf_convert.app import recorded

    shutil.copytree(converted, out)
    doc = json.loads((out / "conversion.json").read_text())
    doc["source"]["relative_path"] = recorded.relative_path(Path(doc["source"]["path"]), out)
    (out / "conversion.json").write_text(json.dumps(doc, indent=2))
    return out


def check(out: Path) -> dict:
    """`convert verify OUT` and `convert verify OUT --layers --json`: exit codes, message, first divergence."""
    code, _, err = run_cli("verify", out)
    layers_code, stdout, layers_err = run_cli("verify", out, "--layers", "--json")
    try:
        doc = json.loads(stdout)
    except ValueError:
        doc = {}
    first = (doc.get("first_divergence") or {}).get("node")
    head = (doc.get("layers") or [{}])[-1]  # the output, on the check's input
    old_rel = None
    if head.get("scale") is not None and head.get("max_rel") is not None:  # the old metric
        old_rel = head["max_rel"] * head["scale"] / max(1.0, head["scale"])
    return {"exit": code, "error": err.strip(), "layers_exit": layers_code, "first_divergence": first,
            "layers_error": layers_err.strip() if first is None else "", "output_max_rel": head.get("max_rel"),
            "output_scale": head.get("scale"), "old_metric_max_rel": old_rel,
            "old_metric_passed": None if old_rel is None else old_rel <= 1e-4}


def caught(result: dict, node: str) -> tuple[bool, bool]:
    """(caught: exit 4, located: --layers names the planted node first)."""
    return result["exit"] == 4, result["first_divergence"] == node


# ---- make verify-faults ------------------------------------------------------------------------------

def matrix(scales: list[float], targets: list[str], root: Path) -> list[dict]:
    rows = []
    for scale in scales:
        pb = build_model(root / f"model-{scale:g}.pb", scale)
        for target in targets:
            base = convert(pb, target, root / f"{scale:g}" / target)
            clean = check(base)
            rows.append({"scale": scale, "target": target, "kind": "unmutated", "node": None,
                         "false_alarm": clean["exit"] != 0 or clean["first_divergence"] is not None, **clean})
            for kind in KINDS:
                if (kind, target) not in MUTATIONS:
                    continue
                out, node = planted(base, kind, target, root / f"{scale:g}" / "mutants")
                result = check(out)
                hit, located = caught(result, node)
                rows.append({"scale": scale, "target": target, "kind": kind, "node": node, "caught": hit,
                             "located": located, **result})
                print(f"{scale:>7g} {target:<6} {kind:<18} exit {result['exit']} first "
                      f"{result['first_divergence']} ({'caught' if hit else 'MISSED'}, "
                      f"{'located' if located else 'NOT LOCATED'})", flush=True)
                shutil.rmtree(out, ignore_errors=True)
    return rows


def table(rows: list[dict], targets: list[str]) -> str:
    """Markdown: caught/located/run per kind and target, then the false alarms."""
    lines = ["| mutation | " + " | ".join(targets) + " |", "|---|" + "---|" * len(targets)]
    for kind in KINDS:
        cells = []
        for target in targets:
            mine = [r for r in rows if r["kind"] == kind and r["target"] == target]
            if not mine:
                cells.append("n/a" if (kind, target) in NOT_APPLICABLE else "-")
                continue
            cells.append(f"{sum(r['caught'] for r in mine)}/{sum(r['located'] for r in mine)}/{len(mine)}")
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    clean = [r for r in rows if r["kind"] == "unmutated"]
    fooled = [r for r in rows if r["kind"] != "unmutated" and r.get("old_metric_passed")]
    lines.append("")
    lines.append(f"the old metric (max|a-b| / max(1, max|ref|) <= 1e-4 at the output) passes "
                 f"{len(fooled)} of these mutants")
    lines.append(f"caught/located/run per cell; unmutated models: {sum(not r['false_alarm'] for r in clean)}/"
                 f"{len(clean)} passed (false alarms: {sum(r['false_alarm'] for r in clean)})")
    for (kind, target), why in NOT_APPLICABLE.items():
        if target in targets:
            lines.append(f"n/a {kind} in {target}: {why}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scales", default=",".join(f"{s:g}" for s in SCALES))
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--json", type=Path, help="write every row here")
    args = parser.parse_args(argv)
    scales = [float(s) for s in args.scales.split(",")]
    targets = args.targets.split(",")
    with tempfile.TemporaryDirectory(prefix="verify-faults-") as tmp:
        rows = matrix(scales, targets, Path(tmp))
    print(table(rows, targets))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    mutants = [r for r in rows if r["kind"] != "unmutated"]
    ok = all(r["caught"] and r["located"] for r in mutants) and not any(
        r["false_alarm"] for r in rows if r["kind"] == "unmutated")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["build_model", "MUTATIONS", "NOT_APPLICABLE", "KINDS", "planted", "check", "caught", "matrix", "table",
           "convert"]
