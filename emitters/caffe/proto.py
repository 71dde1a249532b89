"""Python message classes for caffe_subset.proto (BVLC) and, for the OpenCV dialect, that file with
opencv_subset.proto's additions, built at import time without protoc.

The .proto texts are the single source of truth; convert/protobuf.py reads them.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from tf_convert.convert.protobuf import compile_file, parse

PROTO_PATH = Path(__file__).with_name("caffe_subset.proto")
OPENCV_PROTO_PATH = Path(__file__).with_name("opencv_subset.proto")
OPENCV_ONLY_PARAMS = ("resize_param",)  # not in OpenCV's caffe.proto: deploy.prototxt only (see the .proto)


@lru_cache(maxsize=2)
def messages(dialect: str = "bvlc") -> dict[str, type]:
    """Message name (e.g. 'NetParameter') -> generated class, for 'bvlc' or 'opencv' (a superset)."""
    if dialect == "bvlc":
        compiled = compile_file(PROTO_PATH)
        return {name.split(".", 1)[1]: cls for name, cls in compiled.messages.items()}
    return _merged()


def _merged() -> dict[str, type]:
    from google.protobuf import descriptor_pool, message_factory

    base = parse(PROTO_PATH.read_text(), PROTO_PATH.name)
    extra = parse(OPENCV_PROTO_PATH.read_text(), OPENCV_PROTO_PATH.name)
    layers = {m.name: m for m in base.message_type}
    for message in extra.message_type:
        if message.name in layers:  # LayerParameter: its fields join BVLC's
            layers[message.name].field.extend(message.field)
        else:
            base.message_type.add().CopyFrom(message)
    base.name = "caffe_opencv_subset.proto"
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(base.SerializeToString())
    return {m.name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{base.package}.{m.name}"))
            for m in base.message_type}
