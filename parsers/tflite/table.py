"""The TFLite operator table: one handler per builtin operator (by its schema name, CONV_2D) or custom
code. A handler takes an `Op` and returns the IR tensors of the operator's outputs, in order."""

from tf_convert.convert.registry import OpTable

TABLE = OpTable("tflite")

# Operators folded to numbers while parsing when every input is known (the shape arithmetic a converter
# writes for a free batch: SHAPE -> STRIDED_SLICE -> PACK): name -> (op, values) -> outputs.
FOLD = OpTable("tflite folding")

# Custom operators, by their custom code (Convolution2DTransposeBias): a table of their own, so that a custom
# code never shadows a builtin's name.
CUSTOM = OpTable("tflite custom")

# Operators on 8-bit quantized activations (parsers.tflite.quantized): TFLite's integer kernels, by builtin name.
QUANTIZED = OpTable("tflite quantized")
