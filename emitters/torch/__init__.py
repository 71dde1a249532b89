"""PyTorch target: a readable standalone `model.py` (nn.Module `Model`) plus `model.pt` (state_dict).

torch is imported only inside the functions that need it, so `import emitters.torch` stays light.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tf_convert.convert import ir
from tf_convert.convert.errors import Unsupported
from tf_convert.convert.ir.ops import FAMILIES
from tf_convert.convert.progress import SILENT, Progress
from tf_convert.convert.registry import import_family_modules

from ..base import EmitResult
from ..options import options_for
from .codegen import generate
from .contract import TABLE
from .runner import run as _run
from .runner import run_internals as _run_internals
from .runner import run_sets as _run_sets
from .state_file import save_state_dict

import_family_modules(__name__, FAMILIES)  # the handlers, a module per catalog family: they fill TABLE

TARGET = "torch"
MODEL_FILE = "model.py"
WEIGHTS_FILE = "model.pt"


def unsupported(graph: ir.Graph, options=None) -> list[Unsupported]:
    """Every node torch cannot express: no handler for its op, or a handler-specific limit."""
    return TABLE.unsupported(graph, options)


def emit(graph: ir.Graph, out_dir: Path, options=None, progress: Progress = SILENT) -> EmitResult:
    """`options`: TorchOptions (or anything emitters.options.options_for accepts). The state_dict is
    written tensor by tensor (state_file.py), each weight read when it is written."""
    out_dir = Path(out_dir)
    gen = generate(graph, options_for(TARGET, options))
    (out_dir / MODEL_FILE).write_text(gen.source)
    save_state_dict(out_dir / WEIGHTS_FILE, gen.state, progress)
    return EmitResult(
        files=[MODEL_FILE, WEIGHTS_FILE],
        pad_layers=gen.pad_layers,
        inputs=gen.inputs,
        outputs=gen.outputs,
        tensor_names=gen.tensor_names,
        size_bound=gen.size_bound,
    )


def run(out_dir: Path, inputs: list[np.ndarray]) -> list[np.ndarray]:
    return _run(Path(out_dir), inputs)


def run_sets(out_dir: Path, input_sets: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
    """run() for each of `input_sets`, the model loaded once."""
    return _run_sets(Path(out_dir), input_sets)


def run_internals(out_dir: Path, inputs: list[np.ndarray], names: list[str]) -> dict[str, np.ndarray]:
    """The values of forward()'s locals `names` (NCHW) on `inputs`."""
    return _run_internals(Path(out_dir), inputs, names)
