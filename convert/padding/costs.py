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
    ('caffe', 'dense', 3): {'pad': 3.794, 'kernel': 5.743},
    ('caffe', 'dense', 7): {'pad': 6.662, 'kernel': 8.289},
    ('caffe', 'depthwise', 3): {'pad': 2.458, 'kernel': 3.521},
    ('caffe', 'depthwise', 5): {'pad': 3.606, 'kernel': 2.874},
    ('mxnet', 'dense', 3): {'pad': 19.91, 'kernel': 24.327},
    ('mxnet', 'dense', 7): {'pad': 28.696, 'kernel': 29.755},
    ('mxnet', 'depthwise', 3): {'pad': 30.029, 'kernel': 14.607},
    ('mxnet', 'depthwise', 5): {'pad': 13.632, 'kernel': 4.572},
    ('torch', 'dense', 3): {'pad': 1.59, 'kernel': 2.606},
    ('torch', 'dense', 7): {'pad': 2.581, 'kernel': 3.057},
    ('torch', 'depthwise', 3): {'pad': 0.839, 'kernel': 0.512},
    ('torch', 'depthwise', 5): {'pad': 0.534, 'kernel': 0.371},
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
