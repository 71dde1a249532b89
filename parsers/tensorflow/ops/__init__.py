"""The TF op handlers, one module per catalog family; importing them fills the table."""

from . import (  # noqa: F401
    elementwise,
    elementwise_color,
    elementwise_extra,
    elementwise_quant,
    nn,
    nn_extra,
    reduce,
    resize,
    sequence,
    shape,
    shape_matrix,
    shape_volume,
    spatial,
    spatial_3d,
)
