"""Would torch's fused attention stay exact? ("use a fused form only if it stays exact").

Attention as TF1 BERT writes it -- softmax(q k^T * s + (1 - mask) * -10000) v -- computed by TensorFlow
(the reference), by float64 numpy (the exact value), by the explicit torch ops `model.py` emits today and
by `torch.nn.functional.scaled_dot_product_attention`. Errors are in app/verify/metric.py's floor units
(eps32 x peak of TF's output; one op deep), so each can be read against ROUNDING.

    python -m bench.fused_attention
"""

from __future__ import annotations

import os

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from tf_convert.app.verify.metric import EPS32, ROUNDING

# (batch, heads, length, head size, input scale, half the keys masked)
CASES = [(1, 2, 7, 8, 1.0, False), (2, 4, 13, 16, 1.0, False), (2, 12, 128, 64, 1.0, False),
         (1, 12, 384, 64, 1.0, False), (2, 4, 33, 32, 1.0, True), (1, 12, 128, 64, 3.0, True)]


def measure(batch: int, heads: int, length: int, size: int, scale: float, masked: bool, seed: int = 0) -> dict:
    import tensorflow as tf
    import torch

    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((batch, heads, length, size)).astype(np.float32) * scale for _ in range(3))
    mask = np.ones((batch, 1, 1, length), np.float32)
    if masked:
        mask[..., length // 2:] = 0
    add = (1.0 - mask) * -10000.0
    s = 1 / np.sqrt(size)
    reference = tf.matmul(tf.nn.softmax(tf.matmul(q, k, transpose_b=True) * s + add), v).numpy()
    scores = q.astype(np.float64) @ k.astype(np.float64).transpose(0, 1, 3, 2) * s + add
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    exact = (weights / weights.sum(-1, keepdims=True)) @ v.astype(np.float64)
    tq, tk, tv, tadd = map(torch.from_numpy, (q, k, v, add))
    explicit = (torch.softmax(tq @ tk.transpose(-1, -2) * s + tadd, -1) @ tv).numpy()
    fused = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=tadd).numpy()
    unit = EPS32 * float(np.abs(reference).max())
    return {"tf_vs_exact": np.abs(reference - exact).max() / unit,
            "explicit_vs_tf": np.abs(explicit - reference).max() / unit,
            "fused_vs_tf": np.abs(fused - reference).max() / unit,
            "fused_vs_exact": np.abs(fused - exact).max() / unit}


def main() -> None:
    print(f"| batch, heads, length, head size, scale, masked | TF vs float64 | explicit torch vs TF | SDPA vs TF "
          f"| SDPA vs float64 |  (units of eps32 x peak; the floor is {ROUNDING:.0f})")
    print("|---|---|---|---|---|")
    for case in CASES:
        r = measure(*case)
        print(f"| {', '.join(map(str, case))} | {r['tf_vs_exact']:.1f} | {r['explicit_vs_tf']:.1f} | "
              f"{r['fused_vs_tf']:.1f} | {r['fused_vs_exact']:.1f} |")


if __name__ == "__main__":
    main()
