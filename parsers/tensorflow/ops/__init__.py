"""The TF op handlers, one module per catalog family; importing them fills the table."""

from . import (  # noqa: F401
    elementwise,
    elementwise_quant,
    nn,
    nn_block_rnn,
    nn_tridiagonal,
    reduce,
    reduce_running,
    reduce_segment,
    resize,
    sequence,
    shape,
    shape_index,
    shape_scatter,
    shape_sparse,
    spatial,
    spatial_3d,
    spatial_conv,
    spatial_space_batch,
)
