"""Run a written model.py + model.pt in PyTorch (inputs/outputs in IR layout, graph order)."""

from __future__ import annotations

import importlib.util
import inspect
import itertools
import os
import sys
from pathlib import Path
from types import ModuleType

import numpy as np

_counter = itertools.count()


def import_model(out_dir: Path) -> ModuleType:
    """Import out_dir/model.py under a fresh module name (several models can live in one process).

    The module is registered in sys.modules so torch.jit.script can find its source.
    """
    name = f"convert_torch_model_{os.getpid()}_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, Path(out_dir) / "model.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_weights(module: ModuleType, out_dir: Path):
    """model.py's load() on out_dir/model.pt, memory-mapped where that load() offers it (as it is
    written): the weights are used where they lie in the page cache, not copied (2.64 GB: 2.2 s of CPU)."""
    path = str(Path(out_dir) / "model.pt")
    if "mmap" in inspect.signature(module.load).parameters:
        return module.load(path, mmap=True)
    return module.load(path)


def _set_threads(torch) -> None:
    # one intra-op thread per core, but never more than 8: small models gain nothing from more
    torch.set_num_threads(max(1, min(8, os.cpu_count() or 1)))


def _as_fed(x: np.ndarray, dtype: str = "float32") -> np.ndarray:
    """Integer and bool inputs keep their type (token ids, masks); numbers are float32, or the float64 /
    float16 the model's input is."""
    x = np.asarray(x)
    fed = x if x.dtype.kind in "iub" else x.astype(dtype if dtype in ("float64", "float16") else np.float32)
    return np.ascontiguousarray(fed).reshape(fed.shape)  # a 0-d input stays 0-d


def run(out_dir: Path, inputs: list[np.ndarray]) -> list[np.ndarray]:
    return run_sets(out_dir, [inputs])[0]


def run_sets(out_dir: Path, input_sets: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
    """run() for each of `input_sets`, model.pt loaded once (a check runs several sizes)."""
    import torch

    _set_threads(torch)
    module = import_model(out_dir)
    try:
        model = load_weights(module, out_dir)
        return [_forward(torch, module, model, inputs) for inputs in input_sets]
    finally:
        sys.modules.pop(module.__name__, None)


def _forward(torch, module: ModuleType, model, inputs: list[np.ndarray]) -> list[np.ndarray]:
    tensors = []
    dtypes = getattr(module.Model, "input_dtypes", ("float32",) * len(inputs))
    for x, layout, dtype in zip(inputs, module.Model.input_layouts, dtypes):
        t = torch.from_numpy(_as_fed(x, dtype))
        tensors.append(t.permute(0, 2, 3, 1) if layout == "NHWC" else t)
    with torch.no_grad():
        result = model(*tensors)
    outputs = list(result) if isinstance(result, (tuple, list)) else [result]
    return [
        (y.permute(0, 3, 1, 2) if layout == "NHWC" else y).contiguous().numpy()
        for y, layout in zip(outputs, module.Model.output_layouts)
    ]


def run_internals(out_dir: Path, inputs: list[np.ndarray], names: list[str]) -> dict[str, np.ndarray]:
    """Run the model once and read the locals `names` of its forward() as it returns (NCHW).

    A trace function on forward's frame sees every intermediate without touching model.py."""
    import torch

    _set_threads(torch)
    module = import_model(out_dir)
    captured: dict[str, object] = {}
    code = module.Model.forward.__code__

    def on_forward(frame, event, arg):
        if event == "return":
            captured.update(frame.f_locals)
        return on_forward

    def on_call(frame, event, arg):
        return on_forward if frame.f_code is code else None

    try:
        model = load_weights(module, out_dir)
        tensors = []
        dtypes = getattr(module.Model, "input_dtypes", ("float32",) * len(inputs))
        for x, layout, dtype in zip(inputs, module.Model.input_layouts, dtypes):
            t = torch.from_numpy(_as_fed(x, dtype))
            tensors.append(t.permute(0, 2, 3, 1) if layout == "NHWC" else t)
        previous = sys.gettrace()
        sys.settrace(on_call)
        try:
            with torch.no_grad():
                model(*tensors)
        finally:
            sys.settrace(previous)
    finally:
        sys.modules.pop(module.__name__, None)
    return {n: captured[n].contiguous().numpy() for n in names if isinstance(captured.get(n), torch.Tensor)}
