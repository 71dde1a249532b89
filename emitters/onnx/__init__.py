"""ONNX target: `model.onnx` (opset range and default: emitters/options.py), run with onnxruntime on the CPU.

ONNX layers take per-side pads natively and AveragePool(count_include_pad=0) is TF's rule, so the
IR's explicit pads map straight into the layers: no pad layer (the handlers: one module per op family, see contract.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tf_convert.convert import ir
from tf_convert.convert.errors import Unsupported, UnsupportedError, UsageError
from tf_convert.convert.ir.dtypes import IR_DTYPES
from tf_convert.convert.ir.ops import FAMILIES
from tf_convert.convert.progress import SILENT, Progress
from tf_convert.convert.registry import import_family_modules
from tf_convert.emitters.base import EmitResult
from tf_convert.emitters.options import options_for, validate

from .contract import TABLE
from .model import EXTERNAL_DATA_THRESHOLD, MODEL_FILE, build, save_checked
from .wide_kernels import missing_kernels

import_family_modules(__name__, FAMILIES)  # the handlers, a module per catalog family: they fill TABLE

TARGET = "onnx"


def _layout(dims: tuple[int, ...]) -> str:
    return "NCHW" if len(dims) == 4 else ""


# the IR dtypes an ONNX model here takes and returns: every one (onnxruntime feeds and returns each)
_BOUNDARY_DTYPES = IR_DTYPES


def unsupported(graph: ir.Graph, options=None) -> list[Unsupported]:
    """Every node ONNX (at `options.opset`) cannot express, with a hint."""
    found = TABLE.unsupported(graph, options) + missing_kernels(graph)
    for t in list(graph.inputs) + list(graph.outputs):
        if graph.tensors[t].dtype not in _BOUNDARY_DTYPES:
            found.append(Unsupported("dtype", t, f"tensor dtype {graph.tensors[t].dtype} at the model boundary"))
    return found


def emit(graph: ir.Graph, out_dir: Path, options=None, progress: Progress = SILENT) -> EmitResult:
    """`options`: OnnxOptions (or anything emitters.options.options_for accepts)."""
    options = options_for(TARGET, options)
    try:
        validate(options)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    graph.validate()
    problems = unsupported(graph, options)
    if problems:
        raise UnsupportedError(problems, TARGET)
    out_dir = Path(out_dir)
    built = build(graph, options)
    # `onnx_external_data_threshold` (bytes of weights) exists so tests can force the > 2 GB branch.
    threshold = int(options.extra.get("onnx_external_data_threshold", EXTERNAL_DATA_THRESHOLD))
    files = save_checked(built, graph, out_dir, threshold, progress)
    model_graph = built.model.graph
    return EmitResult(
        files=files,
        pad_layers=built.pad_layers,
        inputs=[
            {"name": vi.name, "shape": list(graph.shape(t)), "layout": _layout(graph.shape(t))}
            for vi, t in zip(model_graph.input, graph.inputs)
        ],
        outputs=[
            {"name": vi.name, "shape": list(graph.shape(t)), "layout": _layout(graph.shape(t))}
            for vi, t in zip(model_graph.output, graph.outputs)
        ],
        tensor_names={n.output: built.names[n.output] for n in graph.nodes if n.op != "const"},
        size_bound=built.size_bound,
    )


_ORT_DTYPES = {
    "tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64,
    "tensor(int32)": np.int32, "tensor(int64)": np.int64, "tensor(bool)": np.bool_,
    "tensor(int16)": np.int16, "tensor(uint16)": np.uint16, "tensor(uint32)": np.uint32, "tensor(uint64)": np.uint64,
}


def _as_written(ort):
    """Session options that run the file as the ONNX spec defines it: onnxruntime's graph rewrites can
    hide a wrong file (its pad fusion turns a Pad(0) before MaxPool into -inf padding), so the check
    judges the operators we wrote, not what one runtime makes of them. It also keeps one copy of the
    weights: ORT_ENABLE_ALL's NCHWc layout transform holds a reordered second copy of every conv weight
    (1.17 vs 0.59 GB for 0.53 GB of convs). Its idle threads sleep instead of spinning on a core
    that other work needs (2.64 GB, three sets: 4.9-6.4 CPU s instead of 6.9-7.2 on 2 shared cores)."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


def run(out_dir: Path, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Run `model.onnx` in onnxruntime (CPU); inputs and outputs NCHW, in graph order."""
    import onnxruntime as ort


    session = ort.InferenceSession(str(Path(out_dir) / MODEL_FILE), _as_written(ort),
                                   providers=["CPUExecutionProvider"])
    return _run_session(session, inputs)


def run_sets(out_dir: Path, input_sets: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
    """run() for each of `input_sets` in one onnxruntime session (the weights loaded once)."""
    import onnxruntime as ort


    session = ort.InferenceSession(str(Path(out_dir) / MODEL_FILE), _as_written(ort),
                                   providers=["CPUExecutionProvider"])
    return [_run_session(session, inputs) for inputs in input_sets]


def _fed(x: np.ndarray, onnx_type: str) -> np.ndarray:
    """`x` as the model's input `onnx_type`, C-contiguous; a 0-d input stays 0-d."""
    array = np.asarray(x, dtype=_ORT_DTYPES.get(onnx_type, None))
    return np.ascontiguousarray(array).reshape(array.shape)


def _run_session(session, inputs: list[np.ndarray]) -> list[np.ndarray]:
    specs = session.get_inputs()
    if len(specs) != len(inputs):
        raise ValueError(f"the model takes {len(specs)} inputs, got {len(inputs)}")
    feed = {
        spec.name: _fed(x, spec.type) for spec, x in zip(specs, inputs)
    }
    return [np.asarray(y) for y in session.run(None, feed)]


def run_internals(out_dir: Path, inputs: list[np.ndarray], names: list[str]) -> dict[str, np.ndarray]:
    """The ONNX values `names` on `inputs`: each made an extra graph output, one onnxruntime run."""
    import onnx
    import onnxruntime as ort


    model = onnx.load(str(Path(out_dir) / MODEL_FILE))
    produced = {o for node in model.graph.node for o in node.output}
    present = {o.name for o in model.graph.output}
    wanted = [n for n in dict.fromkeys(names) if n in produced]
    model.graph.output.extend(onnx.ValueInfoProto(name=n) for n in wanted if n not in present)
    session = ort.InferenceSession(model.SerializeToString(), _as_written(ort), providers=["CPUExecutionProvider"])
    feed = {spec.name: _fed(x, spec.type)
            for spec, x in zip(session.get_inputs(), inputs)}
    return dict(zip(wanted, (np.asarray(y) for y in session.run(wanted, feed))))
