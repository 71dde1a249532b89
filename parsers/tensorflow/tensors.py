"""TF tensor values <-> numpy, and TF's DataType enum <-> numpy dtypes.

TEMPORARY SHIM (issue 12): backed by TensorFlow's tensor_util/dtypes; to be replaced by a numpy-only
implementation with the same functions.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def to_numpy(tensor: Any) -> np.ndarray:
    """The value of a TensorProto."""
    from tensorflow.python.framework import tensor_util

    return tensor_util.MakeNdarray(tensor)


def to_proto(value: Any) -> Any:
    """A TensorProto holding `value` (a numpy array or scalar)."""
    from tensorflow.python.framework import tensor_util

    return tensor_util.make_tensor_proto(np.asarray(value))


def numpy_dtype(enum: int) -> np.dtype:
    """The numpy dtype of TF DataType `enum` (a _REF type counts as its base type)."""
    from tensorflow import dtypes

    return np.dtype(dtypes.as_dtype(enum).as_numpy_dtype)


def dtype_enum(dtype: Any) -> int:
    """TF's DataType enum of a numpy dtype."""
    from tensorflow import dtypes

    return dtypes.as_dtype(np.dtype(dtype)).as_datatype_enum


def dtype_name(enum: int) -> str:
    """TF's name of DataType `enum` ('float32', 'int64', 'bool', ...)."""
    from tensorflow import dtypes

    return dtypes.as_dtype(enum).name
