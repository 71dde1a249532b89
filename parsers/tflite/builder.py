"""Walk one subgraph of a TFLite model into an IR graph (NCHW): inputs, operators in an order that runs
them (file order: the schema stores them topologically sorted; validate.order where a file does not),
outputs. The model is checked first (validate.check): a corrupt file is one line, exit 2."""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Iterator

import numpy as np

from tf_convert.convert import ir
from tf_convert.convert.errors import InputError, Unsupported, UnsupportedError, UsageError
from tf_convert.convert.ir.subgraph import Subgraph as NestedGraph
from tf_convert.parsers.base import ParseOptions

from . import layout, quantized, reference, refused, validate, weights
from .op import Op
from .schema import NUMPY_TYPES, Model, Operator, Subgraph, Tensor
from .table import CUSTOM, FOLD, QUANTIZED, TABLE

POISON = "\0unbuilt"  # stands for the outputs of an operator that could not be converted
_INPUT_TYPES = {"FLOAT32": "float32", "INT32": "int32", "INT64": "int64", "BOOL": "bool", **quantized.INTEGER_TYPES}


def choose(model: Model, signature: str | None) -> tuple[Subgraph, dict[str, int] | None, dict[str, int] | None]:
    """The subgraph to convert: the signature's (`signature` by key) or the main one (subgraph 0);
    with the signature's input and output names when one is chosen."""
    if signature:
        keys = [s.key for s in model.signatures]
        found = next((s for s in model.signatures if s.key == signature), None)
        if found is None:
            have = ", ".join(keys) or "none"
            raise UsageError(f"--signature {signature}: {model.path.name} has no such signature (signatures: {have})")
        if not 0 <= found.subgraph < len(model.subgraphs):
            raise UsageError(f"--signature {signature}: names subgraph {found.subgraph}, the file has "
                             f"{len(model.subgraphs)}")
        return model.subgraphs[found.subgraph], found.inputs, found.outputs
    return model.subgraphs[0], None, None


def known_values(tensors: list[Tensor]) -> dict[int, np.ndarray]:
    """The tensors whose values the file fixes: constants, and tensors of no elements at a static shape (an
    empty tensor's value is its shape: TFLite's converter leaves RESHAPE's new shape `[]`, a reshape to a
    scalar, as an empty tensor without a buffer)."""
    known = {t.index: t.data for t in tensors if t.data is not None}
    for t in tensors:
        empty = t.data is None and not t.variable and 0 in t.shape and -1 not in t.signature
        if empty and t.type in NUMPY_TYPES:
            known[t.index] = np.zeros(t.shape, NUMPY_TYPES[t.type])
    return known


class Builder:
    def __init__(self, model: Model, options: ParseOptions, signature: str | None = None):
        validate.check(model)
        self.model = model
        self.options = options
        self.signature = signature
        self.subgraph, self.sig_inputs, self.sig_outputs = choose(model, signature)
        validate.converted(model, self.subgraph, self.sig_outputs)
        self.tensors = self.subgraph.tensors
        stem = model.path.stem
        self.graph = ir.Graph(name=stem if not signature else f"{stem}_{signature}")
        self.ir: dict[int, str] = {}
        self.values: dict[int, np.ndarray] = {}
        self.errors: list[Unsupported] = []
        self.resized = False  # --input-shape set a size the file does not store: shapes are not checked
        self.depth = 0  # how many subgraph calls (IF branches) deep this builder is

    def call(self, index: int, inputs: list[str | np.ndarray], keep_values: bool = False) -> list[str | np.ndarray]:
        """Subgraph `index` inlined into the same IR graph on `inputs` (an IF's branch, a WHILE's body): IR
        tensors, or known values (numpy) that fold through it. Its outputs: IR tensors, or with `keep_values`
        the values it computes from known ones only (a loop's counter). A subgraph that calls itself, directly
        or not, is refused (TFLite's own recursion)."""
        return self._run_child(self._child(index, inputs, self.graph), keep_values)

    def nested(self, index: int, inputs: list[str | np.ndarray], name: str) -> NestedGraph:
        """Subgraph `index` as an IR graph of its own (a run-time WHILE's condition or body, an IF's branch):
        its inputs are new tensors like the IR tensors in `inputs` (of this graph), in order; a known value
        (numpy) folds through it instead. Its outputs are what the subgraph returns."""
        graph = NestedGraph(name)
        bound: list[str | np.ndarray] = []
        for k, tensor in enumerate(inputs):
            if isinstance(tensor, np.ndarray):
                bound.append(tensor)
                continue
            inner = graph.add_tensor(f"{name}/in{k}", self.graph.shape(tensor), self.graph.tensors[tensor].dtype)
            graph.inputs.append(inner)
            bound.append(inner)
        graph.outputs = list(self._run_child(self._child(index, bound, graph), keep_values=False))
        graph.prune()
        return graph

    def _child(self, index: int, inputs: list[str | np.ndarray], graph: ir.Graph) -> Builder:
        if not 0 <= index < len(self.model.subgraphs):
            raise UnsupportedError([Unsupported("IF", f"subgraph {index}", f"the file has "
                                                f"{len(self.model.subgraphs)} subgraphs")], target="tflite parser")
        if self.depth >= 8:
            raise UnsupportedError([Unsupported("IF", f"subgraph {index}", "subgraph calls nested more than 8 "
                                                "deep (recursion?)")], target="tflite parser")
        child = Builder.__new__(Builder)
        child.__dict__.update(self.__dict__)
        child.graph = graph
        child.subgraph = self.model.subgraphs[index]
        child.tensors = child.subgraph.tensors
        child.ir, child.values, child.errors, child.depth = {}, {}, [], self.depth + 1
        child.values.update(known_values(child.tensors))
        if len(inputs) != len(child.subgraph.inputs):
            raise UnsupportedError([Unsupported("IF", f"subgraph {index}", f"called with {len(inputs)} inputs, it "
                                                f"takes {len(child.subgraph.inputs)}")], target="tflite parser")
        for index_in, tensor in zip(child.subgraph.inputs, inputs):
            if isinstance(tensor, np.ndarray):
                child.values[index_in] = tensor
            else:
                child.ir[index_in] = tensor
        return child

    def _run_child(self, child: Builder, keep_values: bool) -> list[str | np.ndarray]:
        for operator in validate.order(child.subgraph, self.model.path.name):
            child._operator(operator)
        if child.errors:
            raise UnsupportedError(child.errors, target="tflite parser")
        outs: list[str | np.ndarray] = []
        for i in child.subgraph.outputs:
            if keep_values and i in child.values:
                outs.append(child.values[i])
                continue
            if i not in child.ir and i in child.values:  # an output the branch computes from constants only
                Op(child.graph, _holder(i), child.tensors, child.ir, child.values).x(0)
            outs.append(child.ir[i])
        return outs

    # ---- entry -----------------------------------------------------------------------------
    def build(self) -> ir.Graph:
        if len(self.model.subgraphs) > 1:
            which = f"signature '{self.signature}'" if self.signature else "the main subgraph (0)"
            self.options.notes.append(f"{self.model.path.name} holds {len(self.model.subgraphs)} subgraphs: "
                                      f"converting {which}")
        self.values.update(known_values(self.tensors))
        inputs = list(self.sig_inputs.items()) if self.sig_inputs is not None else \
            [(self.tensors[i].name, i) for i in self.subgraph.inputs]
        self._check_inputs(inputs)
        for name, index in inputs:
            self._graph_input(name, index)
        weights.record(self, self.options)
        for operator in validate.order(self.subgraph, self.model.path.name):
            self._operator(operator)
        outputs = self._outputs()
        if self.options.outputs:  # only what the chosen outputs need must convert (a graph cut before its head)
            self.errors = [e for e in self.errors if e.node in self._needed_names([i for _, i in outputs])]
        if self.errors:
            raise UnsupportedError(self.errors, target="tflite parser")
        self._set_outputs(outputs)
        self.graph.prune()
        self.graph.metadata["source_format"] = "tflite"
        self.graph.metadata["source_tensors"] = self._source_tensors()
        self.graph.validate()
        return self.graph

    # ---- inputs / outputs ------------------------------------------------------------------
    def _check_inputs(self, inputs: list[tuple[str, int]]) -> None:
        if self.options.inputs:
            wanted = [n.split(":")[0] for n in self.options.inputs]
            names = [n for n, _ in inputs]
            if sorted(wanted) != sorted(n.split(":")[0] for n in names):
                raise UsageError(f"--inputs {','.join(wanted)}: a TFLite model's inputs are fixed in the file: "
                                 f"{', '.join(names)}")

    def _graph_input(self, name: str, index: int) -> None:
        t = self.tensors[index]
        dtype = _INPUT_TYPES.get(t.type)
        if dtype is None:
            raise UnsupportedError([Unsupported(f"{t.type} input", name, weights.QUANTIZED_HINT if
                                                t.type in weights.QUANTIZED_TYPES else "input type not supported")],
                                   target="tflite parser")
        shape = list(t.shape)
        given = self.options.input_shapes
        override = given.get(name) or given.get(t.name) or (given.get("") if len(given) == 1 else None)
        free = len(t.signature) == len(shape) and any(d < 0 for d in t.signature[1:])
        if override is None and free:  # the stored sizes are placeholders (often 1): SAME pads need the real ones
            example = ",".join(str(d if d >= 0 else 1 if i == 0 else 224) for i, d in enumerate(t.signature))
            raise UsageError(f"input '{name}' has free sizes {tuple(t.signature)} in {self.model.path.name}; pass "
                             f"--input-shape (TFLite's layout), e.g. {example}")
        if override is not None and tuple(override) != tuple(shape):
            free = [d < 0 for d in t.signature] if len(t.signature) == len(shape) else [False] * len(shape)
            fixed = [i for i, (a, b) in enumerate(zip(shape, override)) if a != b and not free[i]]
            if len(override) != len(shape) or fixed:
                raise UsageError(f"input '{name}' is fixed at {tuple(shape)} in {self.model.path.name} (sizes -1 in "
                                 f"its shape signature {tuple(t.signature)} may change); convert at --input-shape "
                                 f"{','.join(str(d) for d in shape)}")
            shape = [int(d) for d in override]
            self.resized = True
        out = self.graph.add_tensor(self.graph.unique_name(name), layout.ir_shape(shape), dtype)
        self.graph.inputs.append(out)
        self.graph.source_names[out] = name
        self.graph.source_layouts[out] = "NHWC" if len(shape) == 4 else ""
        self.ir[index] = out
        self.options.notes.append(f"input {name}: {tuple(shape)}" + (" (NHWC)" if len(shape) == 4 else ""))

    def _outputs(self) -> list[tuple[str, int]]:
        if self.options.outputs:
            by_name = {t.name: t.index for t in self.tensors}
            chosen = []
            for raw in self.options.outputs:
                key = raw if raw in by_name else raw.split(":")[0]
                if self.sig_outputs and key in self.sig_outputs:
                    chosen.append((key, self.sig_outputs[key]))
                    continue
                if key not in by_name:
                    close = difflib.get_close_matches(key, list(by_name), n=5)
                    hint = f"; close matches: {', '.join(close)}" if close else ""
                    raise UsageError(f"--outputs: no tensor named '{key}' in the TFLite model{hint}")
                chosen.append((key, by_name[key]))
            return chosen
        if self.sig_outputs is not None:
            return list(self.sig_outputs.items())
        return [(self.tensors[i].name, i) for i in self.subgraph.outputs]

    def _set_outputs(self, outputs: list[tuple[str, int]]) -> None:
        taken: set[str] = set(self.graph.inputs)
        for name, index in outputs:
            if index not in self.ir and index in self.values:  # an output the file computes from constants only
                probe = Op(self.graph, _holder(index), self.tensors, self.ir, self.values)
                probe.x(0)
            tensor = self.ir.get(index)
            if tensor is None or tensor == POISON:
                raise UsageError(f"output '{name}' is not computed by the converted operators")
            if tensor in taken:  # an output that is an input or repeats: give it its own tensor
                tensor = self.graph.add_node("identity", self.graph.unique_name(name), [tensor],
                                             self.graph.shape(tensor))
            taken.add(tensor)
            self.graph.outputs.append(tensor)
            self.graph.source_names[tensor] = name
            self.graph.source_layouts[tensor] = "NHWC" if len(self.graph.shape(tensor)) == 4 else ""

    def _needed_names(self, wanted: list[int]) -> set[str]:
        """The IR base names (first outputs' names) of the operators the tensors `wanted` depend on."""
        producer = {i: op for op in self.subgraph.operators for i in op.outputs if i >= 0}
        needed: dict[int, Operator] = {}
        todo = list(wanted)
        while todo:
            op = producer.get(todo.pop())
            if op is not None and op.index not in needed:
                needed[op.index] = op
                todo.extend(i for i in op.inputs if i >= 0)
        return {Op(self.graph, op, self.tensors, {}, {}).name for op in needed.values()}

    def _source_tensors(self) -> dict[str, list]:
        """TFLite tensor name -> [IR tensor, perm (IR = transpose(TFLite, perm)) or None, IR shape], in the
        file's operator order: what the per-layer diff (convert verify --layers) fetches from TFLite's
        interpreter for each IR tensor. Names the subgraph repeats are left out (which one is meant?)."""
        names = [t.name for t in self.tensors]
        inputs = set(self.graph.inputs)
        found = {}
        for operator in self.subgraph.operators:
            for index in operator.outputs:
                out = self.ir.get(index)
                if out is None or out == POISON or out in inputs or out not in self.graph.tensors:
                    continue
                name = self.tensors[index].name
                if names.count(name) != 1:
                    continue
                shape = list(self.graph.shape(out))
                found[name] = [out, list(layout.TO_NCHW) if len(shape) == 4 else None, shape]
        return found

    # ---- operators -------------------------------------------------------------------------
    def _operator(self, operator) -> None:
        ins = [i for i in operator.inputs if i >= 0]
        if any(self.ir.get(i) == POISON for i in ins):
            self._poison(operator)
            return
        op = Op(self.graph, operator, self.tensors, self.ir, self.values, self.call, self.nested)
        fold = FOLD.get(operator.name) if not operator.custom else None
        if fold is not None and all(i in self.values for i in ins):
            try:
                with self._options_read(operator):
                    results = fold(op, [self.values[i] for i in ins])
            except UnsupportedError as err:
                self.errors.extend(err.items)
                self._poison(operator)
                return
            for index, value in zip(operator.outputs, results):
                self.values[index] = np.asarray(value)
            return
        integer = not operator.custom and quantized.integer(operator, self.tensors)
        handler = (CUSTOM if operator.custom else QUANTIZED if integer else TABLE).get(operator.name)
        if handler is None:
            why = quantized.refusal(operator.name) if integer else \
                None if operator.custom else refused.reason(operator.name)
            what = "custom operator" if operator.custom else "builtin operator"
            self.errors.append(Unsupported(operator.name, op.name, f"{what}: {why}" if why else
                                           f"{what} with no converter"))
            self._poison(operator)
            return
        try:
            with self._options_read(operator):
                outs = list(handler(op))
        except UnsupportedError as err:
            self.errors.extend(err.items)
            self._poison(operator)
            return
        for index, out in zip(operator.outputs, outs):
            if index < 0:  # an optional output the file leaves out
                continue
            self.ir[index] = out
            self._check_shape(op, self.tensors[index], out)

    @contextlib.contextmanager
    def _options_read(self, operator: Operator) -> Iterator[None]:
        """A handler reading an option its operator's options table does not have: the table is missing or
        of another operator's type (a corrupt file), one line naming the operator."""
        try:
            yield
        except AttributeError as err:
            if err.obj is not operator.options:
                self._refused_by_tflite(operator, err)
                raise
            kind = type(operator.options).__name__ if operator.options is not None else "none"
            raise InputError(f"{self.model.path.name}: subgraph {self.subgraph.index}: operator {operator.index} "
                             f"{operator.name} ('{Op(self.graph, operator, self.tensors, {}, {}).name}'): its "
                             f"builtin options ({kind}) have no {err.name}: missing or of another operator's "
                             f"type; the file is corrupt") from None
        except (ValueError, IndexError, KeyError, TypeError, ArithmeticError) as err:
            self._refused_by_tflite(operator, err)
            raise

    def _refused_by_tflite(self, operator: Operator, err: Exception) -> None:
        """A handler failed on an operator the checks let through: when TFLite's interpreter refuses the file
        too, the file is what is wrong (one line, exit 2); else the failure is the converter's own."""
        why = reference.refusal(self.model.path)
        if why is not None:
            raise InputError(f"{self.model.path.name}: subgraph {self.subgraph.index}: operator {operator.index} "
                             f"{operator.name} cannot be read ({type(err).__name__}: {err}) and TFLite's "
                             f"interpreter cannot run this file either: {why}") from None

    def _poison(self, operator) -> None:
        for index in operator.outputs:
            self.ir[index] = POISON

    def _check_shape(self, op: Op, t: Tensor, out: str) -> None:
        """The IR shape and dtype a handler computed must be those the file stores (the shape at the file's
        own size): a handler that misreads an option fails here, loudly, instead of writing a wrong model.
        Where TFLite's interpreter refuses the file too, the file is what is wrong (exit 2)."""
        have = layout.source_shape(self.graph.shape(out))
        known = t.signature if len(t.signature) == len(t.shape) else t.shape  # -1: the file does not store it
        if not self.resized and t.shape and (len(have) != len(t.shape) or
                                             any(k >= 0 and h != d for h, d, k in zip(have, t.shape, known))):
            self._differs(op, t, f"shape {have}", f"{t.shape}")
        dtype = self.graph.tensors[out].dtype
        stored = NUMPY_TYPES.get(t.type)
        if stored is not None and t.type != "FLOAT16" and np.dtype(stored).name != dtype:
            self._differs(op, t, f"dtype {dtype}", t.type)

    def _differs(self, op: Op, t: Tensor, have: str, stored: str) -> None:
        why = reference.refusal(self.model.path)
        if why is not None:
            raise InputError(f"{self.model.path.name}: subgraph {self.subgraph.index}: operator {op.op.index} "
                             f"{op.op.name} computes {have} for tensor {t.index} '{t.name}', the file says {stored}, "
                             f"and TFLite's interpreter cannot run this file: {why}")
        raise UnsupportedError([Unsupported(op.op.name, t.name, f"the converted output has {have}, the file says "
                                            f"{stored}: the operator is not read as the file means it")],
                               target="tflite parser")


def _holder(index: int):
    """An operator record reading tensor `index` as its only input (to make a const node of it)."""
    return Operator(-1, "constant", False, [index], [index], None)
