"""convert: TensorFlow models to PyTorch, Caffe, MXNet and ONNX with exact padding."""

__version__ = "0.1.0"
