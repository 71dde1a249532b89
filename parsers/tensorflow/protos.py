"""TensorFlow's protocol-buffer messages, the only place the parser gets them from.

TEMPORARY SHIM (issue 12): re-exported from TensorFlow's generated modules; to be replaced by a
vendored subset of TF's .proto files compiled at import (no TensorFlow), keeping these names.
"""

from __future__ import annotations

from tensorflow.core.framework import attr_value_pb2, graph_pb2, tensor_pb2, tensor_shape_pb2
from tensorflow.core.protobuf import meta_graph_pb2, saved_model_pb2, trackable_object_graph_pb2

GraphDef = graph_pb2.GraphDef
AttrValue = attr_value_pb2.AttrValue
TensorProto = tensor_pb2.TensorProto
TensorShapeProto = tensor_shape_pb2.TensorShapeProto
MetaGraphDef = meta_graph_pb2.MetaGraphDef
SavedModel = saved_model_pb2.SavedModel
# what a TF2 checkpoint stores under _CHECKPOINTABLE_OBJECT_GRAPH (checkpoint key of each object's values)
TrackableObjectGraph = trackable_object_graph_pb2.TrackableObjectGraph

__all__ = ["GraphDef", "AttrValue", "TensorProto", "TensorShapeProto", "MetaGraphDef", "SavedModel",
           "TrackableObjectGraph"]
