"""convert: TensorFlow models to PyTorch, Caffe, MXNet and ONNX with exact padding.

The conversion functions of the Python API (convert/api.py) are reachable from here:
`convert.tf2onnx("model.ckpt", verify=True)`; `inspect` and `verify` are in `convert.api` (the
names `convert.inspect` and `convert.verify` are modules). They load on first use, so
`import convert` stays light.
"""

__version__ = "0.1.0"

_API = ("convert", "tf2torch", "tf2caffe", "tf2mxnet", "tf2onnx", "tf2ir")


def __getattr__(name: str):
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'convert' has no attribute {name!r}")
