"""The reference for a `.tflite` source: the file itself in TFLite's interpreter (ai-edge-litert's where it is
installed, and then TensorFlow is never imported on this path; else TensorFlow's `tf.lite.Interpreter`), at
the file's input size (or a size its shape signature leaves free). A full-integer model runs on TFLite's
reference kernels (the op resolver BUILTIN_REF): its optimized kernels and the XNNPACK delegate round some
products differently.

The interpreter refusing the file (it cannot load it, or run it at the file's own size) is an InputError
(exit 2: "TFLite's interpreter cannot run this file: ..."); refusing another size is not (verify skips that
size). `refusal(path)` asks the interpreter, in a child process (a corrupt file may crash it), whether it
loads, prepares and runs a file at all: the builder asks when an operator cannot be read, to tell a corrupt
file from a converter bug.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np

from tf_convert.convert import ir, isolated
from tf_convert.convert.errors import InputError

from . import layout
from .quantized import integer
from .schema import read


def _interpreter_class() -> type:
    """LiteRT's interpreter (ai-edge-litert: the same TFLite runtime, packaged without TensorFlow: its import
    takes a fraction of TensorFlow's time and memory), else TensorFlow's tf.lite.Interpreter."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        from ai_edge_litert.interpreter import Interpreter
    except ImportError:
        import tensorflow as tf

        return tf.lite.Interpreter
    return Interpreter


def run_reference(path: str | Path, graph: ir.Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Run the file in TFLite's interpreter on `inputs` (IR layout); outputs in IR layout, graph order."""
    return run_reference_sets(path, graph, [inputs])[0]


def run_reference_sets(path: str | Path, graph: ir.Graph,
                       input_sets: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
    """run_reference for each of `input_sets`, the file read once."""
    return _Runner(Path(path), graph).run_all(input_sets)


# custom operator -> its outputs the interpreter encodes its own way: MediaPipe's argmax index, which TFLite's
# XNNPACK delegate (the one that runs MediaPipe's pair) writes as a uint32 in column-major window order where
# MediaPipe's kernel writes a float (parsers/tflite/mediapipe_pooling.py): no reference for that tensor
OWN_ENCODING = {"MaxPoolingWithArgmax2D": (1,)}

REFUSAL_TIMEOUT_S = 300  # the child imports TensorFlow (seconds) and prepares a small file
_REFUSED = 3  # the child's exit status when the interpreter refuses the file (its message on stdout)


def cannot_run(path: Path, error: BaseException) -> InputError:
    """The one line for a file TFLite's interpreter refuses."""
    message = " ".join(str(error).split())[:200] or type(error).__name__
    return InputError(f"{path}: TFLite's interpreter cannot run this file: {message}")


def refusal(path: str | Path) -> str | None:
    """Why TFLite's interpreter refuses to load, prepare or run `path` at its own size; None when it runs it
    (or when no interpreter imports: then nobody can tell)."""
    try:
        done = subprocess.run(isolated.python_module(__name__, str(path)), capture_output=True, text=True,
                              timeout=REFUSAL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None
    if done.returncode == _REFUSED:
        return done.stdout.strip() or "it refuses the file"
    if done.returncode < 0:
        return f"it crashes on the file ({signal.Signals(-done.returncode).name})"
    return None


def _prepare(path: str) -> int:
    """The child of refusal(): load the file, prepare it and run it once on zeros at its own size; exit
    _REFUSED with the reason when that fails."""
    try:
        interpreter = _interpreter_class()
    except ImportError:
        return 0
    try:
        it = interpreter(model_path=path, num_threads=1)
        it.allocate_tensors()
        for detail in it.get_input_details():
            it.set_tensor(detail["index"], np.zeros(detail["shape"], detail["dtype"]))
        it.invoke()
    except Exception as error:  # noqa: BLE001 - whatever the interpreter raises: it refuses the file
        print(" ".join(str(error).split())[:300] or type(error).__name__)
        return _REFUSED
    return 0


def run_tensors(path: str | Path, graph: ir.Graph, inputs: list[np.ndarray],
                names: list[str]) -> dict[str, np.ndarray]:
    """The subgraph's tensors `names` (TFLite layout) on `inputs` (IR layout), the interpreter keeping every
    intermediate tensor (experimental_preserve_all_tensors, TFLite's own kernels): the per-layer diff.
    {} for a signature's subgraph (the interpreter exposes the main subgraph's tensors only)."""
    runner = _Runner(Path(path), graph, preserve=True)
    if runner.signature:
        return {}
    runner.run(inputs)
    return {name: np.array(runner.interpreter.get_tensor(runner.by_name[name]))
            for name in names if name in runner.by_name and runner.by_name[name] not in runner.own_encoding}


class _Runner:
    def __init__(self, path: Path, graph: ir.Graph, preserve: bool = False):
        self.path = path
        self.graph = graph
        self.signature = (graph.metadata.get("tf_settings") or {}).get("signature")  # parse() records it
        model = read(path)
        sub = model.subgraphs[0]
        if self.signature:
            found = next(s for s in model.signatures if s.key == self.signature)
            sub = model.subgraphs[found.subgraph]
            self.by_name = {**found.inputs, **found.outputs, **{t.name: t.index for t in sub.tensors}}
        else:
            self.by_name = {t.name: t.index for t in sub.tensors}
        self.tensors = sub.tensors
        self.outputs = [self.by_name[graph.source_names.get(t, t)] for t in graph.outputs]
        self.own_encoding = {op.outputs[k] for op in sub.operators if op.custom
                             for k in OWN_ENCODING.get(op.name, ()) if k < len(op.outputs)}
        for index in set(self.outputs) & self.own_encoding:
            raise InputError(f"{path.name}: output '{self.tensors[index].name}' is an argmax index TFLite's "
                             "interpreter encodes its own way (XNNPACK's), not MediaPipe's: it cannot be "
                             "checked; leave it out of --outputs to verify the others")
        self.inner = preserve or (not self.signature and not set(self.outputs) <= set(sub.outputs))
        cls = _interpreter_class()
        kernels = {}
        if any(integer(op, sub.tensors) for op in sub.operators):  # integer arithmetic as the reference kernels do it
            kernels["experimental_op_resolver_type"] = sys.modules[cls.__module__].OpResolverType.BUILTIN_REF
        try:
            with warnings.catch_warnings():  # its advice against preserving tensors: keeping them is the point
                warnings.filterwarnings("ignore", message=".*experimental_preserve_all_tensors")
                self.interpreter = self._load(cls, kernels)
        except ValueError as error:  # what the interpreter raises for a file it cannot load
            raise cannot_run(path, error) from None
        self.shapes: dict[int, tuple[int, ...]] = {}

    def _load(self, cls: type, kernels: dict) -> object:
        """The interpreter on `kernels`; where the reference kernels lack one of the file's operators (their
        resolver registers fewer versions: int8 TILE), TFLite's builtin kernels without a delegate."""
        try:
            return cls(model_path=str(self.path), num_threads=1, experimental_preserve_all_tensors=self.inner,
                       **kernels)
        except ValueError:
            if not kernels:
                raise
        kernels = {"experimental_op_resolver_type": sys.modules[cls.__module__].OpResolverType
                   .BUILTIN_WITHOUT_DEFAULT_DELEGATES}
        return cls(model_path=str(self.path), num_threads=1, experimental_preserve_all_tensors=self.inner, **kernels)

    def run_all(self, input_sets: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
        return [self.run(inputs) for inputs in input_sets]

    def _feed(self, inputs: list[np.ndarray]) -> dict[str, np.ndarray]:
        feed = {}
        for name, x in zip(self.graph.inputs, inputs):
            if self.graph.source_layouts.get(name) == "NHWC":
                x = x.transpose(layout.TO_NHWC)
            feed[self.graph.source_names.get(name, name)] = np.ascontiguousarray(x).reshape(x.shape)  # 0-d stays 0-d
        return feed

    def _check_size(self, index: int, shape: tuple[int, ...]) -> None:
        t = self.tensors[index]
        signature = t.signature if len(t.signature) == len(t.shape) else t.shape
        if len(shape) != len(t.shape) or any(d >= 0 and d != n for d, n in zip(signature, shape)):
            # not a ConvertError: verify takes it as "the reference cannot run this size" and skips that size
            raise ValueError(f"{self.path.name}: input '{t.name}' is fixed at {t.shape} (shape signature "
                             f"{t.signature}); TFLite cannot run it at {shape}")

    def run(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        feed = self._feed(inputs)
        for name, x in feed.items():
            self._check_size(self.by_name[name], x.shape)
        own = all(tuple(x.shape) == tuple(self.tensors[self.by_name[n]].shape) for n, x in feed.items())
        try:
            return self._run(feed)
        except RuntimeError as error:  # what allocate_tensors and invoke raise for a node that fails
            if own:  # at the file's own size: the file, not the size, is what the interpreter refuses
                raise cannot_run(self.path, error) from None
            raise

    def _run(self, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        if self.signature:
            runner = self.interpreter.get_signature_runner(self.signature)
            self.interpreter.reset_all_variables()  # every run starts from zero recurrent state
            results = runner(**feed)
            wanted = [self.graph.source_names.get(t, t) for t in self.graph.outputs]
            values = [results[w] for w in wanted]
        else:
            it = self.interpreter
            for name, x in feed.items():
                index = self.by_name[name]
                if self.shapes.get(index, tuple(self.tensors[index].shape)) != x.shape:  # the file's size: as loaded
                    it.resize_tensor_input(index, list(x.shape), strict=True)
                    self.shapes[index] = x.shape
            it.allocate_tensors()
            # a recurrent kernel's state lives in variable tensors kept between invocations: every run starts
            # from zeros, as the converted model does
            it.reset_all_variables()
            for name, x in feed.items():
                it.set_tensor(self.by_name[name], x)
            it.invoke()
            values = [np.array(it.get_tensor(i)) for i in self.outputs]
        out = []
        for name, y in zip(self.graph.outputs, values):
            y = np.asarray(y)
            nhwc = self.graph.source_layouts.get(name) == "NHWC" and y.ndim == 4
            out.append(np.ascontiguousarray(y.transpose(layout.TO_NCHW)) if nhwc else y)
        return out


if __name__ == "__main__":
    sys.exit(_prepare(sys.argv[1]))
