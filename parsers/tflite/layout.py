"""TFLite (NHWC) <-> IR (NCHW) axis bookkeeping: every rank-4 activation is an image in TFLite's
layout, as in the Keras parser (parsers/common/layout.py)."""

from tf_convert.parsers.common.layout import TO_NCHW, TO_NHWC, ir_axis, ir_shape, keras_shape, moves_only_unit_dims

source_shape = keras_shape  # an IR shape as TFLite sees it

__all__ = ["TO_NCHW", "TO_NHWC", "ir_axis", "ir_shape", "moves_only_unit_dims", "source_shape"]
