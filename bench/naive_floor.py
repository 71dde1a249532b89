"""The naive floor of the table: what any TF checkpoint -> torch script costs.

    python -m bench.naive_floor PREFIX OUT.pt

Imports TensorFlow and torch, reads every variable (tf.train.load_checkpoint), transposes conv kernels
HWIO -> OIHW and dense kernels to (out, in), `torch.save`s the state_dict. Its wall time and peak RSS
(measured by the caller) are the floor `convert` is compared with.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")


def main(prefix: str, out: str) -> int:
    import numpy as np
    import tensorflow as tf
    import torch

    reader = tf.train.load_checkpoint(prefix)
    state = {}
    for name in sorted(reader.get_variable_to_shape_map()):
        value = reader.get_tensor(name)
        if value.ndim == 4:
            value = value.transpose(3, 2, 0, 1)  # HWIO -> OIHW
        elif value.ndim == 2:
            value = value.T
        state[name] = torch.from_numpy(np.ascontiguousarray(value))
    torch.save(state, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
