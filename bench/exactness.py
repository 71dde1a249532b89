"""Exactness at sizes `--verify` is not used for: TF's output from the checkpoint vs a converted model.

    python -m bench.exactness reference PREFIX N,H,W,C REF.npz   # TF: restore the .meta's Saver, run once
    python -m bench.exactness compare OUT_DIR TARGET REF.npz      # the converted model on the same input

Each step is its own process (the caller runs them after the timed conversion), so neither TF's nor the
target runtime's memory counts in the conversion's figures. `compare` prints {"max_rel": ..., "verdict": ...}: the
project's one judgement, app.verify.metric.judge (max|a - b| / max|ref|, float32 and SNR floors).
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

INPUT = "input:0"
OUTPUT = "output:0"


def reference(prefix: str, shape: str, ref_path: str) -> None:
    import tensorflow as tf

    v1 = tf.compat.v1
    x = np.random.default_rng(0).standard_normal(tuple(int(d) for d in shape.split(","))).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default(), v1.Session(graph=graph) as sess:
        v1.train.import_meta_graph(f"{prefix}.meta").restore(sess, prefix)
        y = sess.run(OUTPUT, {INPUT: x})
    np.savez(ref_path, x=x, y=y)


def compare(out_dir: str, target: str, ref_path: str) -> dict:
    ref = np.load(ref_path)
    if target == "openvino":  # ovc keeps TF's NHWC
        import openvino as ov

        # f32 inference: the CPU plugin may otherwise pick bf16 on CPUs that have it
        model = ov.Core().compile_model(os.path.join(out_dir, "model.xml"), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        y = model(ref["x"])[0]
    else:
        from tf_convert import emitters

        (y,) = emitters.get(target).run(out_dir, [ref["x"].transpose(0, 3, 1, 2)])
        y = np.asarray(y).transpose(0, 2, 3, 1)  # runners return NCHW; TF gave NHWC
    want = ref["y"]
    if y.shape != want.shape:
        return {"max_rel": None, "error": f"shape {y.shape} != TF's {want.shape}"}
    from tf_convert.app.verify.metric import judge

    judged = judge(np.asarray(y), want)
    return {"max_rel": judged["max_rel"], "snr_db": judged["snr_db"], "verdict": judged["verdict"]}


if __name__ == "__main__":
    command, *rest = sys.argv[1:]
    if command == "reference":
        reference(*rest)
    else:
        print(json.dumps(compare(*rest)))
