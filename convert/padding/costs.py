"""Which exact lowering of a conv's asymmetric pads runs fastest in each target runtime, by measurement.

Two lowerings give TF's numbers for a conv2d whose pads differ per side (plans.py):
* 'pad'    -- a separate constant pad layer in front, then the layer unpadded;
* 'kernel' -- zero taps added to the kernel's short side plus a symmetric pad (no extra layer, but
             a larger kernel: free for a depthwise 3x3 in one runtime, +78% MACs for a dense conv).
Which is cheaper depends on the runtime's kernels, so it is measured, not guessed:
`python -m bench.lowering --write` times both on single-layer models (batch 1, stride 2, the layer
shapes of MobileNet/EfficientNet/ResNet stems) in every runtime and rewrites MEASURED below.
ONNX takes four pads natively, so it has no entry.
"""

from __future__ import annotations

from typing import Sequence

LOWERINGS = ("pad", "kernel")

# (target, "depthwise" | "dense", kernel size) -> lowering -> ms of the layer, pad included (bench/lowering.py)
# BEGIN MEASURED (written by bench/lowering.py)
MEASURED: dict[tuple[str, str, int], dict[str, float]] = {  # 2026-11-23, bench/lowering.py
    ('caffe', 'dense', 3): {'pad': 3.614, 'kernel': 9.991},
    ('caffe', 'dense', 7): {'pad': 11.161, 'kernel': 18.003},
    ('caffe', 'depthwise', 3): {'pad': 2.48, 'kernel': 3.629},
    ('caffe', 'depthwise', 5): {'pad': 3.538, 'kernel': 2.919},
    ('mxnet', 'dense', 3): {'pad': 23.765, 'kernel': 27.403},
    ('mxnet', 'dense', 7): {'pad': 30.725, 'kernel': 31.218},
    ('mxnet', 'depthwise', 3): {'pad': 29.209, 'kernel': 17.6},
    ('mxnet', 'depthwise', 5): {'pad': 13.802, 'kernel': 4.748},
    ('torch', 'dense', 3): {'pad': 1.759, 'kernel': 2.687},
    ('torch', 'dense', 7): {'pad': 2.838, 'kernel': 3.401},
    ('torch', 'depthwise', 3): {'pad': 0.895, 'kernel': 0.528},
    ('torch', 'depthwise', 5): {'pad': 0.527, 'kernel': 0.379},
}
# END MEASURED


def conv_lowering(target: str, depthwise: bool, kernel: Sequence[int]) -> str:
    """The measured-cheapest lowering ('pad' or 'kernel') of an asymmetric conv for `target`; the
    nearest measured kernel size stands in for an unmeasured one; 'pad' where nothing was measured."""
    kind = "depthwise" if depthwise else "dense"
    sizes = [k for (t, c, k) in MEASURED if t == target and c == kind]
    if not sizes:
        return "pad"
    k = max(int(v) for v in kernel)
    costs = MEASURED[(target, kind, min(sizes, key=lambda size: (abs(size - k), size)))]
    return min(LOWERINGS, key=lambda name: costs.get(name, float("inf")))
