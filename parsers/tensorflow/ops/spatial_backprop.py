"""Issue 22 part B (opsb): DepthwiseConv2dNativeBackpropInput, a transposed depthwise conv, as the IR
conv_transpose2d with one group per input channel; SAME's crop like Conv2DBackpropInput's.
(Conv2DBackpropInputV2 would be the same call, but TF has no CPU kernel to check it against.)"""

from __future__ import annotations

from typing import Any

import numpy as np

from tf_convert.convert.ir.lazy import contiguous

from ..context import Context
from ..table import tf_op
from .spatial import emit_conv_transpose


@tf_op("DepthwiseConv2dNativeBackpropInput")
def depthwise_conv_transpose(ctx: Context, op: Any) -> None:
    """Filter (kh, kw, C, M): input channel c*M + m of the transposed conv feeds group c's one output."""
    filt = np.asarray(ctx.const(op.inputs[1]))
    kh, kw, c, m = filt.shape
    weight = filt.transpose(2, 3, 0, 1).reshape(c * m, 1, kh, kw)  # IOHW, O per group
    emit_conv_transpose(ctx, op, contiguous(weight, np.float32), c)
