"""The application: pipeline, verification and the per-layer diff, reports, batch on Dask, and the
Python API (app/api.py), reachable from here:

    import tf_convert.app as convert
    record = convert.tf2onnx("model.ckpt", verify=True)

`inspect` and `verify` are in `tf_convert.app.api` (the names `app.inspect` and `app.verify` are
modules). They load on first use, so importing this package stays light.
"""

from .version import __version__ as __version__

_API = ("convert", "into", "tf2torch", "tf2caffe", "tf2mxnet", "tf2onnx", "tf2ir")


def __getattr__(name: str):
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'tf_convert.app' has no attribute {name!r}")
