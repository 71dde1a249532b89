"""`convert tf2torch SRC --into TARGET`: TF's weights into a PyTorch module the user already has.

    parse (batch norm kept) -> trace the module (trace.py) -> pair layers (match.py) -> values and
    transforms (transforms.py) -> what the module computes differently (semantics.py) -> OUT/pads.py
    with --fix-pads (fixpads.py) -> measured against TF -> OUT/state_dict.pt + conversion.json

Batch norm: the IR folds it into the conv before it reaches any emitter, so --into runs the passes
with `fold_bias_into_conv` in place of `fold_affine_into_conv`: a BiasAdd still joins its conv, a batch
norm stays a channel_affine that keeps TF's statistics and epsilon (parsers record them).
"""

from __future__ import annotations

import copy
import importlib.util
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from tf_convert import parsers
from tf_convert.convert.errors import ConvertError, MissingDependency, UsageError, VerifyError
from tf_convert.convert.ir import lazy
from tf_convert.convert.ir.index import GraphIndex
from tf_convert.convert.padding.sizes import size_bound
from tf_convert.convert.passes import DEFAULT_PASSES, fold_affine_into_conv, fold_bias_into_conv
from tf_convert.emitters.torch.state_file import save_state_dict
from tf_convert.parsers.tensorflow.bundle import Bundle

from .. import outdir, pipeline, report, verify
from ..verify import token_inputs
from ..version import __version__
from . import derive, fixpads, hf_h5, layerdiff, layers, match, preprocessing, record, semantics, trace, transforms
from .mismatch import ArchitectureMismatch, SemanticsMismatch
from .record import flat_outputs


@dataclass
class IntoRequest:
    source: Path
    target: str  # FILE.py:NAME or package.module:NAME
    out: Path | None = None
    kwargs: dict[str, Any] = field(default_factory=dict)
    fix_pads: bool = False
    pins: dict[str, str] = field(default_factory=dict)  # module path -> TF node (or variable) name
    verify: bool = False
    rtol: float = 1e-4
    seed: int = 0
    force: bool = False
    input_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    layers: bool = False  # with verify: the per-layer diff, named by module path
    inputs: list[str] | None = None
    outputs: list[str] | None = None
    input_layout: str | None = None  # --input-layout nchw|nhwc; None: from the graph


def into_passes() -> list:
    """The default passes with batch norm kept (only a bias folds into its conv)."""

    return [fold_bias_into_conv if p is fold_affine_into_conv else p for p in DEFAULT_PASSES]


def read_map(path: Path) -> dict[str, str]:
    """--map map.toml: `"module.path" = "tf_node_or_variable"` lines, at the top or under [map]."""
    import tomllib

    try:
        data = tomllib.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"--map {path}: {exc}; write lines like \"features.0.0\" = \"Conv1\"") from None
    data = data.get("map", data)
    if not all(isinstance(v, str) for v in data.values()):
        raise UsageError(f"--map {path}: every value must be a TF node or variable name (a string)")
    return dict(data)


def _pins(pins: dict[str, str], module: layers.LayerGraph, ir: layers.LayerGraph) -> dict[str, str]:
    resolved = {}
    for path, name in pins.items():
        node = name if name in ir.layers else name.rpartition("/")[0]  # a variable: conv1/kernel -> conv1
        if path not in module.layers:
            raise UsageError(f"--map: the module has no layer '{path}'")
        if node not in ir.layers:
            raise UsageError(f"--map: the TF graph has no node or variable '{name}' (for '{path}')")
        resolved[path] = node
    return resolved


def _flattened(graph) -> set[str]:
    """IR linear layers fed by a flatten of a spatial map (their rows were permuted NHWC -> NCHW)."""

    index, found = GraphIndex(graph), set()
    for node in graph.nodes:
        if node.op != "linear":
            continue
        flat = index.producer(node.inputs[0])
        if flat is not None and flat.op == "reshape":
            shape = graph.shape(flat.inputs[0])
            rows = graph.shape(flat.output)[0]  # (N, C*H*W): a flatten; (N*T, heads*dim): tokens, no permutation
            if len(shape) == 4 and shape[2] * shape[3] > 1 and rows == shape[0]:
                found.add(node.name)
    return found


def _state_dict(model, values: dict[str, np.ndarray], idle=None):
    """The module's state_dict with every float tensor from TF; ArchitectureMismatch for one left over.
    `idle(key)`: the module's own value of a parameter its forward does not read at inference (Wav2Vec2's
    `masked_spec_embed`, for SpecAugment in training), or None where forward reads it."""
    import torch

    state = model.state_dict()
    tied = _tied(model, values)
    _check_tied(model, values)
    result = {}
    for key, current in state.items():
        if key not in values and key in tied:  # one tensor under two names (a head tied to the embeddings)
            values[key] = values[tied[key]]
        if key in values:
            value = values[key]
            if tuple(value.shape) != tuple(current.shape):
                raise ArchitectureMismatch(f"module parameter '{key}' has shape {tuple(current.shape)}, "
                                           f"TF's value {tuple(value.shape)}")
            result[key] = torch.from_numpy(np.require(value, requirements=["C", "W"])).to(current.dtype)
        elif key.endswith("num_batches_tracked"):
            result[key] = torch.zeros(current.shape, dtype=current.dtype)  # a fresh module's count
        elif idle is not None and idle(key) is not None:
            result[key] = idle(key)
        else:
            raise ArchitectureMismatch(f"module parameter '{key}' has no partner in the TF graph; "
                                       f"pin its layer with --map if the pairing is ambiguous")
    return result


def _tied(model, values: dict[str, np.ndarray]) -> dict[str, str]:
    """{parameter key: the key of the same tensor that TF fills} for tied parameters (BertForPreTraining's
    `cls.predictions.bias` is its decoder's bias): one tensor, so one TF value under both names."""
    named: dict[int, list[str]] = {}
    for key, p in model.named_parameters(remove_duplicate=False):
        named.setdefault(id(p), []).append(key)
    return {key: filled for keys in named.values() for filled in keys if filled in values
            for key in keys if key != filled}


def _check_tied(model, values: dict[str, np.ndarray]) -> None:
    """Parameters that are one tensor in the module (a head tied to the embeddings) get one value from TF: where
    TF holds two different ones, loading would keep only the last. ArchitectureMismatch naming both."""
    named: dict[int, list[str]] = {}
    for key, p in model.named_parameters(remove_duplicate=False):
        named.setdefault(id(p), []).append(key)
    for keys in named.values():
        filled = [k for k in keys if k in values]
        for key in filled[1:]:
            if not np.array_equal(values[key], values[filled[0]]):
                raise ArchitectureMismatch(f"module parameters '{filled[0]}' and '{key}' are one tensor (tied) where "
                                           f"TF holds two different values; untie them in the module "
                                           f"(transformers: tie_word_embeddings=false)")


# A volume stays (N, D, H, W, C) in the IR (only rank-4 tensors change layout); the module takes NCDHW.
_TO_MODULE = {5: (0, 4, 1, 2, 3)}
_FROM_MODULE = {5: (0, 2, 3, 4, 1)}


def module_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The module's input shape for the IR input `shape` (NCHW as is; a volume NDHWC -> NCDHW)."""
    perm = _TO_MODULE.get(len(shape))
    return tuple(shape[p] for p in perm) if perm else tuple(shape)


def _run_torch(model, inputs: list[np.ndarray], feed: preprocessing.Feed | None = None) -> list[np.ndarray]:
    """The module's outputs for IR-layout `inputs`, in the IR's layout: `fields` (names as record.flat_outputs
    gives them: a ModelOutput's fields, a tuple's indices) in TF's output order, or every tensor output."""
    import torch

    with torch.no_grad():
        if feed is not None:
            inputs = [feed.module_input(x) for x in inputs]
        out = record.call(model, [torch.from_numpy(np.ascontiguousarray(x.transpose(_TO_MODULE[x.ndim]))
                                                   if x.ndim in _TO_MODULE else x) for x in inputs],
                          feed.keywords if feed is not None else None)
    named = {k: v for k, v in flat_outputs(out) if isinstance(v, torch.Tensor)}
    fields = feed.fields if feed is not None else None
    outs = [named[f].detach().numpy() for f in fields] if fields else [v.detach().numpy() for v in named.values()]
    return [o.transpose(_FROM_MODULE[o.ndim]) if o.ndim in _FROM_MODULE else o for o in outs]


def _paired_outputs(module_layers: layers.LayerGraph, names: list[str], ir_layers: layers.LayerGraph,
                    pins: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """(the pairing, the module output each TF output went to). A module with more outputs than TF (a
    ModelOutput's last_hidden_state and pooler_output against one TF output) pairs each TF output with the
    field that matches it: fields in their own order first; the mismatch that got furthest otherwise."""
    import itertools

    wanted = len(ir_layers.outputs)
    orders = list(itertools.islice(itertools.permutations(range(len(module_layers.outputs)), wanted), 120))
    worst = None
    for order in orders or [()]:
        chosen = layers.LayerGraph(module_layers.layers, [module_layers.outputs[k] for k in order],
                                   module_layers.inputs)
        paired = match.match(chosen, ir_layers, pins)
        if not isinstance(paired, match.Mismatch):
            return paired, [names[k] for k in order]
        if worst is None or paired.depth > worst.depth:
            worst = paired
    if worst is None or not orders:
        worst = match.match(module_layers, ir_layers, pins)
    raise ArchitectureMismatch(worst.message())


def _reference(source, graph, shapes: dict[str, tuple[int, ...]] | None, seed: int):
    """(inputs, TF's outputs) on a random input (the conversion's size when `shapes` is None)."""

    inputs = _random_inputs(graph, shapes, seed)
    return inputs, parsers.run_reference(source, graph, inputs)


def _random_inputs(graph, shapes: dict[str, tuple[int, ...]] | None, seed: int) -> list[np.ndarray]:
    """Standard normal; token ids and masks whole numbers in their valid range (as verify feeds them)."""

    rng = np.random.default_rng(seed)
    dims = shapes or {n: graph.shape(n) for n in graph.inputs}
    inputs = []
    for n in graph.inputs:
        ids = token_inputs.value_range(graph, n)
        inputs.append(rng.integers(*ids, dims[n]).astype(graph.tensors[n].dtype) if ids is not None
                      else rng.standard_normal(dims[n]).astype(np.float32))
    return inputs


def _check_factors(pairs: list[tuple[layers.Layer, layers.Layer]]) -> None:
    """Each per-channel factor on one side (a layer scale) has one on the other, after the same layer."""
    for t, i in pairs:
        if len(t.factors) != len(i.factors):
            mine = ", ".join(f"'{key}'" for key, _ in t.factors) or "nothing"
            theirs = ", ".join(f"'{name}'" for name, _ in i.factors) or "nothing"
            raise ArchitectureMismatch(
                f"{layers.named(t.label)}: its output is multiplied per channel by {mine} where TF multiplies "
                f"'{i.id}' by {theirs} (a layer scale on one side only); make the module scale as TF does")


def _check_input_order(module_inputs: list[str], graph, paired: dict[str, str]) -> None:
    """The module is fed TF's inputs in TF's order: refused (by name) where its forward takes them in another."""
    want = [paired.get(name) for name in module_inputs]
    if len(module_inputs) > 1 and want != list(graph.inputs):
        def source(n: str) -> str:
            return graph.source_names.get(n, n).removesuffix(":0")

        raise ArchitectureMismatch(f"the module's forward takes {module_inputs} where TF's inputs are, in its order, "
                                   f"{[source(n) for n in graph.inputs]}; pass --inputs "
                                   f"{','.join(source(n) for n in want if n is not None)}")


def _whole_table(source, t: layers.Layer, i: layers.Layer) -> tuple[np.ndarray, str]:
    """(the whole table, its TF name) for module embedding `t` of constant ids (positions) paired with
    the constant TF adds: its first rows only (TF1 BERT slices the table to the sequence length, and the
    slice folds); the rest are read from the checkpoint's variable that starts with those rows."""

    rows, width = t.attrs["weight"]
    known = np.asarray(lazy.materialize(i.node.params["value"]), np.float32).reshape(-1, width)
    picked = t.attrs.get("rows")  # the rows the module picks, where the record knows them
    if known.shape[0] == rows and not i.attrs.get("uniform") and picked in (None, tuple(range(rows))):
        return known, i.node.name
    bundle = _checkpoint(source)
    for key in bundle.keys() if bundle is not None else []:
        if tuple(bundle.shape(key)) == (rows, width):
            value = np.asarray(bundle.read(key), np.float32)
            if i.attrs.get("uniform") and np.array_equal(value[:1], known[:1]):  # token type 0 everywhere
                return value, key
            start = _rows_at(value, known)
            if start is None:
                continue
            if picked is not None and picked != tuple(range(start, start + known.shape[0])):
                raise ArchitectureMismatch(
                    f"module path '{t.id}' adds rows {_span(picked)} of its table; TF's graph adds rows "
                    f"{start}..{start + known.shape[0] - 1} of '{key}' (constant '{i.node.name}')")
            if picked is not None or start == 0:
                return value, key
    what = "one row of it" if i.attrs.get("uniform") else f"only its first {known.shape[0]} rows"
    raise ArchitectureMismatch(f"module path '{t.id}' is a ({rows}, {width}) table; TF's graph adds {what} "
                               f"(constant '{i.node.name}') and the source has no variable that holds the rest: "
                               f"convert a graph built at sequence length {rows}")


def _rows_at(table: np.ndarray, rows: np.ndarray) -> int | None:
    """Where `rows` stand in `table`, one block of consecutive rows (TF1 BERT's positions at 0, BART's at 2)."""
    for start in range(table.shape[0] - rows.shape[0] + 1):
        if np.array_equal(table[start:start + rows.shape[0]], rows):
            return start
    return None


def _span(picked: tuple[int, ...]) -> str:
    consecutive = picked == tuple(range(picked[0], picked[0] + len(picked)))
    return f"{picked[0]}..{picked[-1]}" if consecutive else str(list(picked))


def _selection(built: trace.Built, req: IntoRequest, real: dict, t: layers.Layer, i: layers.Layer) -> np.ndarray:
    """Module parameter behind `t` (a selection of its entries: Swin's relative position bias) from TF's constant
    `i`, the selection replayed on a module built for real (index buffers computed, not uninitialized), built
    once into `real`."""
    tensor, param = t.attrs["selected"]
    if "model" not in real:
        real["model"] = trace.materialize(built, req.target, req.kwargs)
    real = real["model"]
    value = np.asarray(lazy.materialize(i.node.params["value"]), np.float32)
    return derive.parameter_value(built.traced, real, tensor, param, t.attrs["param"], value, i.node.name)


def _checkpoint(source):
    """The checkpoint bundle behind `source` (a TF1 checkpoint, a SavedModel's variables), or None."""

    path = Path(str(source.path))
    for prefix in (path, path.with_suffix(""), path / "variables" / "variables"):  # a SavedModel's variables
        if Path(f"{prefix}.index").is_file():
            return Bundle(prefix)
    return None


def _compare(model, inputs: list[np.ndarray], expected: list[np.ndarray], feed: preprocessing.Feed | None = None
             ) -> dict[str, Any]:

    got = _run_torch(model, inputs, feed)
    worst = max((verify.metrics(a, e) for a, e in zip(got, expected)), key=lambda m: m["max_rel"])
    worst["input_shape"] = list(inputs[0].shape)
    return worst


def _error(model, source, graph, shapes: dict[str, tuple[int, ...]] | None, seed: int,
           feed: preprocessing.Feed | None = None) -> dict[str, Any]:
    """max_abs / max_rel of `model` against TF on a random input."""
    return _compare(model, *_reference(source, graph, shapes, seed), feed)


def _fixed_model(model, pads_py: Path, state):
    """A copy of `model` with pads.py's apply() and the state dict loaded (strict)."""
    spec = importlib.util.spec_from_file_location(f"_into_pads_{pads_py.parent.name}", pads_py)
    pads = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pads)
    fixed = pads.apply(copy.deepcopy(model))
    fixed.load_state_dict(state, strict=True)
    return fixed.eval()


def _other_shapes(graph) -> dict[str, tuple[int, ...]] | None:

    if len(graph.inputs) != 1 or len(graph.shape(graph.inputs[0])) != 4 or size_bound(graph):
        return None
    n, c, h, w = graph.shape(graph.inputs[0])
    return {graph.inputs[0]: (n, c, h + 1, w + 1)}


def _loaded(model, state):
    """`model` with TF's weights loaded (strict)."""
    model.load_state_dict(state, strict=True)
    return model.eval()


def run(req: IntoRequest) -> dict[str, Any]:
    """The whole --into conversion; returns the conversion.json document (with `out`)."""

    if hf_h5.applies(req.source, req.target):  # save_pretrained's tf_model.h5: weights by name, no graph
        return hf_h5.run(req)
    started = time.perf_counter()
    source = parsers.open_source(req.source)
    out = Path(req.out) if req.out else pipeline.default_out(source, "torch")
    outdir.check_out(out, source, force=req.force)
    preq = pipeline.Request(source=source, target="torch", input_shapes=dict(req.input_shapes), inputs=req.inputs,
                            outputs=req.outputs, input_layout=req.input_layout)
    graph, kind, seconds, notes = pipeline.load_graph(preq, passes=into_passes())
    images = [len(graph.shape(n)) in (4, 5) and graph.tensors[n].dtype == "float32" for n in graph.inputs]
    if any(images) and len(graph.inputs) != 1:
        raise ArchitectureMismatch("--into maps models with one image input (N, C, H, W) or volume (N, C, D, H, W), "
                                   f"or token inputs; this one has {[graph.shape(n) for n in graph.inputs]}")
    t0, cpu0 = time.perf_counter(), time.process_time()
    import torch  # noqa: F401 - timed apart: running the user's module needs torch, tf2torch does not
    seconds["import_torch"] = round(time.perf_counter() - t0, 3)
    seconds["import_torch_cpu"] = round(time.process_time() - cpu0, 3)
    t0 = time.perf_counter()
    shape = [(module_shape(graph.shape(n)), graph.tensors[n].dtype) for n in graph.inputs]
    built = trace.build(req.target, req.kwargs, shape,
                        [graph.source_names.get(n, n).removesuffix(":0") for n in graph.inputs])
    model, traced = built.model, built.traced
    in_hw = trace.input_shapes_of(traced)
    module_layers = layers.canonical(trace.torch_layers(traced, built.other))
    ir_layers = layers.canonical(layers.ir_layers(graph))
    affine = preprocessing.input_affine(ir_layers, module_layers)
    if affine is not None:
        ir_layers, scale, shift, prep_names = affine
    paired, fields = _paired_outputs(module_layers, traced.outputs, ir_layers,
                                     _pins(req.pins, module_layers, ir_layers))
    feed = preprocessing.Feed(fields, *(affine[1:3] if affine is not None else (None, None)), built.keywords)
    _check_input_order(module_layers.inputs, graph, paired)
    pairs = [(module_layers.layers[t], ir_layers.layers[i]) for t, i in paired.items()]
    order = list(module_layers.layers)
    pairs.sort(key=lambda p: order.index(p[0].id))
    _check_factors(pairs)
    biases = transforms.bias_folds(pairs, module_layers.layers, ir_layers.layers)
    values, records = transforms.parameters(pairs, _flattened(graph), partial(_whole_table, source), biases,
                                            partial(_selection, built, req, {}))
    unread = trace.unread_parameters(traced)
    fresh: dict = {}

    def idle(key: str):
        if key not in unread:
            return None
        if "model" not in fresh:
            fresh["model"] = trace.materialize(built, req.target, req.kwargs)
        return dict(fresh["model"].named_parameters())[key].detach().clone()

    state = _state_dict(model, values, idle)
    seconds["match"] = round(time.perf_counter() - t0, 3)

    folded = {module_layers.layers[bn].inputs[0] for bn in biases}
    firsts = [(t, i) for t, i in pairs if layers.module_path(t.id) == t.id]  # a module called again: judged once
    findings = [f for f in semantics.check(firsts, in_hw) if not (f.what == "bias" and f.path in folded)]
    warnings = [f"{f.line()}: exact at the conversion's input size only; convert at the size you run"
                for f in findings if f.warning]
    size_bound = bool(warnings)
    findings = [f for f in findings if not f.warning]
    warnings += [f"module parameter '{key}' is not read by forward at inference and TF's graph does not use it: "
                 f"it keeps the module's own initial value" for key in sorted(unread) if key not in values]
    if affine is not None:
        first = next(t.id for t, i in pairs if graph.inputs[0] in i.inputs)
        warnings.append(preprocessing.note(prep_names, scale, shift, first))

    tmp = outdir.temp_dir(out)
    try:
        save_state_dict(tmp / "state_dict.pt", {key: value.numpy() for key, value in state.items()})
        files = ["state_dict.pt", "conversion.json"]
        errors: dict[str, Any] = {}
        pads_py = None
        if findings:
            fixes, changes = fixpads.fixable(findings)
            name, factory = Path(str(source.path)).name, req.target.rpartition(":")[2]
            if not req.fix_pads or changes:  # a failure: measured, so the message says what it costs
                model = _loaded(trace.materialize(built, req.target, req.kwargs), state)
                subject = changes[0] if req.fix_pads else findings[0]
                measured = _measure_findings(model, state, source, graph, req.seed, subject, findings, tmp, name,
                                             factory, feed)
                raise SemanticsMismatch(_mismatch_line(subject, findings, measured, fixing=req.fix_pads))
            pads_py = fixpads.write(fixes, tmp, name, factory)
            files.insert(1, "pads.py")
        verified = None
        if req.verify:  # TensorFlow runs only when asked to (converting needs none of it)
            t1 = time.perf_counter()
            model = _loaded(trace.materialize(built, req.target, req.kwargs), state)
            runnable = _fixed_model(model, pads_py, state) if pads_py is not None else model
            if pads_py is not None:
                inputs, expected = _reference(source, graph, None, req.seed)
                errors = {"as_is": _compare(model, inputs, expected, feed),
                          "with_pads": _compare(runnable, inputs, expected, feed)}
            verified = _verify(runnable, source, graph, req.rtol, req.seed, feed,
                               other_size=not size_bound)
            if req.layers:
                inputs = _random_inputs(graph, None, req.seed)
                verified["layers"] = layerdiff.rows(runnable, source, graph, firsts, inputs, req.rtol, built.keywords)
            seconds["verify"] = round(time.perf_counter() - t1, 3)
        seconds["total"] = round(time.perf_counter() - started, 3)
        doc = {
            "tool_version": __version__,
            "source": {"path": str(Path(str(source.path)).resolve()), "format": kind, "sha256": source.sha256},
            "target": "torch",
            "into": {"module": req.target, "kwargs": req.kwargs, "fix_pads": req.fix_pads, "map": req.pins},
            "files": files,
            "inputs": [{"source_name": graph.source_names.get(n, n), "name": name,
                        "shape": list(module_shape(graph.shape(n))),
                        "layout": {4: "NCHW", 5: "NCDHW"}.get(len(graph.shape(n)))}
                       for n, name in zip(graph.inputs, module_layers.inputs)],
            "outputs": [{"tf": graph.source_names.get(n, n), "module": f} for n, f in zip(graph.outputs, fields)],
            "preprocessing": None if affine is None else {"tf": prep_names, "scale": scale.tolist(),
                                                          "shift": shift.tolist()},
            "parameters": records,
            "pairs": [{"module": t.id, "tf": i.id, "kind": t.kind} for t, i in pairs],
            "differences": [{"module": f.path, "what": f.what, "detail": f.detail,
                             "fixed_by": "pads.apply()" if f.fix is not None and req.fix_pads else None}
                            for f in findings],
            "errors": errors,
            "verify": verified,
            "warnings": warnings,
            "seconds": seconds,
            "notes": notes,
        }
        report.write(doc, tmp / "conversion.json")
        if verified is not None and not verified["passed"]:
            first = next((r for r in verified.get("layers", []) if not r["passed"]), None)
            where = f"; first diverging module: '{first['module']}' (TF '{first['tf']}')" if first else ""
            raise VerifyError(f"verification failed for --into: max relative error {verified['max_rel']:.3g} > rtol "
                              f"{req.rtol:g} at input {verified['worst_input']}{where}")
        outdir.commit(tmp, out, force=req.force)
    except BaseException:
        outdir.discard_temps(out)
        raise
    doc["out"] = str(out)
    return doc


def _measure_findings(model, state, source, graph, seed: int, subject, findings, tmp: Path, name: str, factory: str,
                      feed: preprocessing.Feed):
    """{"as_is": error of the module as it is, "first": error with every other fixable difference fixed
    (what `subject` alone causes)}; {} when TensorFlow cannot run here."""

    other = _other_shapes(graph)
    shapes = {n: (1, *shape[1:]) for n, shape in other.items()} if subject.at_other_size and other else None
    try:
        inputs, expected = _reference(source, graph, shapes, seed)
    except MissingDependency:
        return {}
    result = {"as_is": _compare(model, inputs, expected, feed)}
    others = [f for f in findings if f is not subject and f.fix is not None]
    if others:
        probe = tmp / "first-alone"
        probe.mkdir()
        try:
            alone = _fixed_model(model, fixpads.write(others, probe, name, factory), state)
            result["first"] = _compare(alone, inputs, expected, feed)
        finally:
            import shutil

            shutil.rmtree(probe, ignore_errors=True)
    else:
        result["first"] = result["as_is"]
    return result


def _mismatch_line(subject: semantics.Finding, findings: list[semantics.Finding], measured: dict[str, Any],
                   fixing: bool) -> str:
    if measured:
        size = "x".join(map(str, measured["as_is"]["input_shape"]))
        error = f"; alone it costs max_rel {measured['first']['max_rel']:.2g} vs TF at {size}"
        if len(findings) > 1:
            error += f" (all {len(findings)} differences: {measured['as_is']['max_rel']:.2g})"
    else:
        error = "; output error not measured (TensorFlow is not installed)"
    if fixing:
        tail = f"; pads.apply() cannot fix this: {subject.change}"
    else:
        tail = "; --fix-pads writes pads.py to fix " + (
            "them" if all(f.fix is not None for f in findings) else "the padding and attributes")
    return f"{subject.line()}{error}{tail}"


def _verify(model, source, graph, rtol: float, seed: int, feed: preprocessing.Feed, other_size: bool = True
            ) -> dict[str, Any]:
    """The module against TF at the conversion size and (size-free graphs, `other_size`) at another size,
    batch 2."""
    results = [_error(model, source, graph, None, seed, feed)]
    other = _other_shapes(graph) if other_size else None
    if other is not None:
        n, c, h, w = other[graph.inputs[0]]
        try:
            results.append(_error(model, source, graph, {graph.inputs[0]: (2, c, h, w)}, seed + 1, feed))
        except Exception as exc:
            if isinstance(exc, ConvertError):
                raise
    worst = max(results, key=lambda r: r["max_rel"])
    return {"max_rel": worst["max_rel"], "max_abs": max(r["max_abs"] for r in results),
            "passed": worst["max_rel"] <= rtol,
            "rtol": rtol, "seed": seed, "worst_input": worst["input_shape"],
            "sizes": [{"input_shape": r["input_shape"], "max_rel": r["max_rel"]} for r in results]}
