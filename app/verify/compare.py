"""Run the source in TensorFlow and the converted model in its real runtime; compare every output."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import numpy as np

from tf_convert.convert.errors import ConvertError, InputError
from tf_convert.convert.ir import Graph, runtime_dims
from tf_convert.convert.padding.sizes import input_free_axes

from . import feeds, mask_inputs, reference_process, token_inputs
from .metric import CANNOT_TELL, judge, judge_across, verdict_of
from .metric import worst as worst_row


def make_inputs(graph: Graph, seed: int = 0) -> list[np.ndarray]:
    """The same random inputs for both sides: standard normal (token ids, integer and bool masks, float
    ids cast to int: whole numbers uniform over their valid range, app.verify.token_inputs), fixed seed, IR layout."""
    rng = np.random.default_rng(seed)
    given = feeds.fed(graph)  # --feed: the values a run-time size follows
    return [given[name] if name in given else _random_input(graph, name, graph.shape(name), rng)
            for name in graph.inputs]


def _random_input(graph: Graph, name: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    ids = token_inputs.value_range(graph, name)  # token ids, masks: whole numbers in their valid range
    if ids is not None:
        values = rng.integers(*ids, shape).astype(graph.tensors[name].dtype)
    else:  # numbers in the input's float dtype (float64, float16 models compute in it)
        dtype = graph.tensors[name].dtype
        values = rng.standard_normal(shape).astype(dtype if dtype in ("float64", "float16") else np.float32)
    return mask_inputs.plant(graph, name, values)  # Keras's mask value at some steps, where the IR masks


def metrics(actual: np.ndarray, expected: np.ndarray, rtol: float = 1e-4, depth: int = 1) -> dict[str, Any]:
    """max_abs, max_rel (max|a-b| / max|ref|), SNR and PSNR in dB (None when exact), and the verdict:
    metric.judge, the one judgement every check uses."""
    return judge(actual, expected, rtol, depth)


def depth_of(graph: Graph) -> int:
    """How many ops deep the graph is at most (its non-constant nodes): scales the float32 floor."""
    return max(1, sum(1 for n in graph.nodes if n.op != "const"))


def other_sizes(graph: Graph) -> list[dict[str, tuple[int, ...]]]:
    """Two more input sizes for a size-free model: every free axis (an image's H/W, a volume's D/H/W, a
    sequence's length: convert.padding.sizes.input_free_axes) + 1 (flips SAME's odd pads) and ~1.25x + 1
    (larger), the batch 2; empty when no input has a free axis."""
    parameters = runtime_dims.parameter_inputs(graph)  # a fed shape or paddings keeps its value and its shape
    free = {n: frozenset() if n in parameters else input_free_axes(graph.shape(n)) for n in graph.inputs}
    if not any(free.values()):
        return []
    sizes = []
    for grow in (lambda d: d + 1, lambda d: d + d // 4 + 1):
        sizes.append({n: _grown(graph.shape(n), free[n], grow) for n in graph.inputs})
    return sizes


def _grown(shape: tuple[int, ...], free: frozenset[int], grow: Callable[[int], int]) -> tuple[int, ...]:
    if not free:
        return shape
    return (2, *(grow(d) if a in free else d for a, d in enumerate(shape) if a > 0))


# The reference outputs of each of a list of input sets, or per set what TF raised (reference_process.Outcome):
# one call per verification, so a child process (large sources) is started once.
References = Callable[[Path, Graph, list[list[np.ndarray]]], list[Any]]


def verify(
    source: Path, graph: Graph, emitter: ModuleType, out_dir: Path, rtol: float = 1e-4, seed: int = 0,
    run_reference: Callable[[Path, Graph, list[np.ndarray]], list[np.ndarray]] | None = None,
    size_free: bool = False, depth: int | None = None, run_references: References | None = None,
    target_first: bool = False,
) -> dict[str, Any]:
    """Compare TF (reference) with the target runtime on the same input; `passed` when every output's
    verdict is "ok" (metric.judge). `run_references` replaces reference_process.run_references (e.g. one
    that reuses earlier outputs); `run_reference` (one input set a call) replaces it too. A `size_free`
    model is also compared at two other sizes (other_sizes), TF re-run at them: `sizes` in the result.
    `sensitivity` says whether each output moves when the input's last row and column change (and, if
    not, when the whole input changes): `warnings` when it does not. Every input set is drawn first and
    TF asked for all of them in one call: one child process for a large source. `target_first`:
    before TF's outcomes are read, the target runs the sets it is compared on when TF refuses none, so that
    its run overlaps a reference child's (a small source's: its memory is no issue); its failure
    is raised only after TF's own on the main set, as in the usual order."""
    references = run_references or (_one_by_one(run_reference) if run_reference
                                    else reference_process.run_references)  # one child for a large source
    depth = depth or depth_of(graph)
    planned = plan(source, graph, seed, size_free, one_set_a_call=run_reference is not None)
    early = _run_early(emitter, out_dir, [planned.inputs, *(d[2] for d in planned.draws)]) if target_first else None
    # a runtime in its own process (MXNet's) starts now: its import overlaps TF's run, not its model's load
    started = emitter.start_run() if not target_first and hasattr(emitter, "start_run") else None
    try:
        return _compared(source, graph, started or emitter, out_dir, rtol, seed, size_free, depth, references,
                         planned, early)
    finally:
        if started is not None:
            started.close()


def _compared(source: Path, graph: Graph, emitter: Any, out_dir: Path, rtol: float, seed: int, size_free: bool,
              depth: int, references: References, planned: Plan, early: EarlyRun | None) -> dict[str, Any]:
    """verify()'s comparison, once TF is asked for `planned`'s sets and the target may have run early."""
    inputs, edged, other, eager, probes, sizes = (planned.inputs, planned.edged, planned.other, planned.eager,
                                                  planned.probes, planned.sizes)
    outcomes = references(source, graph, planned.sets)
    expected = _outputs(outcomes[0])
    answered = _answer_fallbacks(source, graph, sizes, seed, outcomes[1 + len(probes):], references)

    # the target runs every compared set in one call where its runtime allows it (model loaded once)
    chosen = [next((x for (at, _a, x), o in answered if at == s and not isinstance(o, BaseException)), None)
              for s in range(len(sizes))]
    actual = _target_outputs(emitter, out_dir, [inputs, *(x for x in chosen if x is not None)], early)
    result = _verify_at(actual, graph, inputs, expected, rtol, seed, depth)
    other_outcome = _once(lambda: outcomes[len(probes)] if eager else references(source, graph, [other])[0])
    result["sensitivity"], result["warnings"] = sensitivity(
        graph, expected, outcomes[1] if edged is not None else None, other_outcome, depth)
    across = _judge_across_inputs(
        result, graph, actual, [(inputs, expected), *([(edged, outcomes[1])] if edged is not None else []),
                                (other, other_outcome)],
        lambda sets: references(source, graph, sets), rtol, seed, depth)
    _judge_fed_only(result, graph, rtol, seed)
    result["depth"] = depth
    if size_free:
        result["sizes"] = [
            _verify_other_size(graph, actual, shapes,
                               [(a, x, outcome) for (at, a, x), outcome in answered if at == s], rtol, seed, depth,
                               across)
            for s, shapes in enumerate(sizes)]
        compared = [s for s in result["sizes"] if "skipped" not in s]
        for at in compared:
            _judge_fed_only(at, graph, rtol, seed)
        result["verdict"] = verdict_of([result, *compared])
        result["passed"] = result["verdict"] == "ok"
        result["max_rel"] = max([result["max_rel"], *(s["max_rel"] for s in compared)])
    return result


@dataclass
class Plan:
    """The input sets of one verification's first reference call (`sets`), and what they are."""

    inputs: list[np.ndarray]  # the check's input
    edged: list[np.ndarray] | None  # sensitivity_probes: the border changed (None: no image input)
    other: list[np.ndarray]  # sensitivity_probes: the whole input changed
    eager: bool  # `other` is asked for up front
    probes: list[list[np.ndarray]]  # those of edged and other asked for up front, in that order
    sizes: list[dict[str, tuple[int, ...]]]  # other_sizes, for a size-free model
    draws: list[tuple[int, int, list[np.ndarray]]]  # (size, attempt, inputs) of the first guess at each size

    @property
    def sets(self) -> list[list[np.ndarray]]:
        return [self.inputs, *self.probes, *(d[2] for d in self.draws)]


def plan(source: Path, graph: Graph, seed: int = 0, size_free: bool = False, one_set_a_call: bool = False,
         child: bool | None = None) -> Plan:
    """What verify() asks TF for first: drawn from the graph alone, so the pipeline can start the reference
    run (reference_process.start_references) before the model is written, with these same sets. `child`:
    TF runs them in a child process (None: reference_process.in_child decides, by the source's size)."""
    inputs = make_inputs(graph, seed)
    edged, other = sensitivity_probes(graph, inputs)
    sizes = other_sizes(graph) if size_free else []
    draws = _size_draws(graph, sizes, seed, set())
    # The whole-input probe is needed only when an output does not move with the border: asked for up front
    # where a later call would cost another child or TF's import (one more TF run there is cheap), else
    # only when needed.
    eager = edged is None or (not one_set_a_call and (reference_process.in_child(source) if child is None else child))
    probes = [p for p, wanted in ((edged, edged is not None), (other, eager)) if wanted]
    return Plan(inputs, edged, other, eager, probes, sizes, draws)


def _once(make: Callable[[], Any]) -> Callable[[], Any]:
    """`make()`'s value, computed on the first call only (a reference run asked for at most once)."""
    kept: list[Any] = []

    def value() -> Any:
        if not kept:
            kept.append(make())
        return kept[0]

    return value


# Input sets the check adds when an output is one constant on every input it has tried: other scales and
# distributions (a score saturated on standard normal noise may move on an image-like [0, 1] input).
EXTRA_PROBES = ("uniform01", "uniform11", "normal_x0.25", "normal_x4")


def extra_probes(graph: Graph, inputs: list[np.ndarray]) -> list[list[np.ndarray]]:
    """More input sets for an output none of the check's inputs moved (EXTRA_PROBES): float inputs drawn
    anew at other scales, token ids and masks redrawn in their valid range."""
    rng = np.random.default_rng(54321)
    draws = {"uniform01": lambda s: rng.uniform(0.0, 1.0, s), "uniform11": lambda s: rng.uniform(-1.0, 1.0, s),
             "normal_x0.25": lambda s: 0.25 * rng.standard_normal(s),
             "normal_x4": lambda s: 4.0 * rng.standard_normal(s)}
    given = feeds.fed(graph)  # kept: the sizes follow them
    return [[x if name in given else draws[kind](x.shape).astype(x.dtype)
             if np.issubdtype(x.dtype, np.floating) and token_inputs.value_range(graph, name) is None
             else _redrawn_ids(graph, name, x, rng) for name, x in zip(graph.inputs, inputs)]
            for kind in EXTRA_PROBES]


# per output index: (the target's values, TF's values) on every input set it was judged across
Across = dict[int, tuple[list[np.ndarray], list[np.ndarray]]]


def _judge_across_inputs(result: dict[str, Any], graph: Graph, actual: Callable[[list[np.ndarray]], list[np.ndarray]],
                         sets: list[tuple[list[np.ndarray], Any]],
                         more: Callable[[list[list[np.ndarray]]], list[Any]], rtol: float,
                         seed: int, depth: int) -> Across:
    """An output TF gives one constant on the check's input (a one-element score) is judged again over all
    of the check's inputs (`sets`: (inputs, TF's outcome or a function giving it)), and, where TF agrees on
    all of them, over extra_probes too (`more(sets)`: TF's outcomes). `result` is updated in place; the
    values judged are returned, so other sizes judge such an output at the same scale."""
    undecided = [i for i, row in enumerate(result["outputs"]) if row["verdict"] == CANNOT_TELL]
    if not undecided:
        return {}
    known = [(x, _outputs(o() if callable(o) else o)) for x, o in sets if not _is_error(o)]
    across: Across = {}
    ran: list[list[np.ndarray]] = []  # the target's outputs on known[k], each set run once
    for round_ in range(2):
        ran += [actual(x) for x, _ in known[len(ran):]]
        for i in undecided:
            rows = [(np.asarray(got[i]), np.asarray(e[i])) for got, (_, e) in zip(ran, known)]
            name = graph.outputs[i]
            a = [_as_declared(r[0], graph.shape(name)) for r in rows]
            judged = judge_across(a, [r[1] for r in rows], rtol, depth, same_dtype=True)
            result["outputs"][i] = {**judged, "output": result["outputs"][i]["output"]}
            across[i] = (a, [r[1] for r in rows])
        undecided = [i for i in undecided if result["outputs"][i]["verdict"] == CANNOT_TELL]
        if not undecided or round_:
            break
        probes = extra_probes(graph, known[0][0])
        known += [(x, _outputs(o)) for x, o in zip(probes, more(probes)) if not isinstance(o, BaseException)]
    result.update(_summary(result["outputs"], rtol, seed))
    return across


def _judge_fed_only(result: dict[str, Any], graph: Graph, rtol: float, seed: int) -> None:
    """An output only fed inputs reach (feeds.fed_only) is one value TF gives at the fed values: a fixed feed
    leaves nothing to compare across, and the conversion claims that value only (conversion.json records the
    feeds). Equal to TF's (shape, dtype, values) there, it passes rather than 'cannot tell'; the warning says
    the check holds at the fed values only."""
    fed_only = set(feeds.fed_only(graph))
    if not fed_only:
        return
    shown = {graph.source_names.get(n, n) for n in fed_only}
    given = ", ".join(graph.source_names.get(n, n).rsplit(":", 1)[0] for n in feeds.fed(graph))
    for i, row in enumerate(result["outputs"]):
        if graph.outputs[i] in fed_only and row["verdict"] == CANNOT_TELL:
            result["outputs"][i] = {**row, "verdict": "ok", "passed": True, "constant": False,
                                    "why": f"follows only the fed values ({given}): equal to TensorFlow's there"}
    if "warnings" not in result:  # another size's row: its verdict only
        result.update(_summary(result["outputs"], rtol, seed))
        return
    result["warnings"] = [w for w in result["warnings"] if not any(f"output '{o}'" in w for o in shown)]
    result["warnings"] += [f"output '{o}' follows only the values --feed gave ({given}): TensorFlow's value is "
                           "fixed by them, so --verify checked it at those values only" for o in sorted(shown)]
    result.update(_summary(result["outputs"], rtol, seed))


def _is_error(outcome: Any) -> bool:
    return isinstance(outcome, BaseException)


def _one_by_one(run_reference: Callable[[Path, Graph, list[np.ndarray]], list[np.ndarray]]) -> References:
    """A one-set reference as run_references: each set in turn, what it raises kept as that set's outcome."""
    def run_references(source: Path, graph: Graph, input_sets: list[list[np.ndarray]]) -> list[Any]:
        outcomes: list[Any] = []
        for inputs in input_sets:
            try:
                outcomes.append(run_reference(source, graph, inputs))
            except Exception as error:  # noqa: BLE001 - kept per set; _outputs raises it where it is used
                outcomes.append(error)
        return outcomes

    return run_references


def _outputs(outcome: Any) -> list[np.ndarray]:
    """A set's reference outputs, or what TF raised for it raised here (reference_process.refusal: TF refusing
    the input is exit 2, in process and in a child alike)."""
    if isinstance(outcome, BaseException):
        raise reference_process.refusal(outcome)
    return outcome


def _attempts(graph: Graph, shapes: dict[str, tuple[int, ...]]) -> list[dict[str, tuple[int, ...]]]:
    """An other size at batch 2 first; at the conversion's batch when TF cannot run batch 2 (a graph that
    bakes its batch into a Reshape)."""
    return [shapes, {n: (graph.shape(n)[0], *shape[1:]) for n, shape in shapes.items()}]


def _size_draws(graph: Graph, sizes: list[dict[str, tuple[int, ...]]], seed: int,
                refused: set[tuple[int, int]]) -> list[tuple[int, int, list[np.ndarray]]]:
    """(size, attempt, inputs) for every attempt made when TF refuses exactly the attempts in `refused`:
    one rng in that order, so the inputs are those drawn one attempt at a time."""
    rng = np.random.default_rng(seed + 1)
    draws = []
    for s, shapes in enumerate(sizes):
        for a, attempt in enumerate(_attempts(graph, shapes)):
            draws.append((s, a, [_random_input(graph, n, attempt[n], rng) for n in graph.inputs]))
            if (s, a) not in refused:
                break
    return draws


def _refused(outcome: Any) -> bool:
    """TF cannot run the source at this size (not a failure of the conversion or of memory)."""
    return isinstance(outcome, BaseException) and not isinstance(outcome, (ConvertError, MemoryError))


def _answer_fallbacks(source: Path, graph: Graph, sizes: list[dict[str, tuple[int, ...]]], seed: int,
                      first: list[Any], references: References) -> list:
    """[((size, attempt, inputs), outcome)] of every attempt made: `first` answers the first guess (every
    batch-2 attempt runs); where TF refused one, the attempts that follow it are asked for in one more
    call (rare: a graph that bakes its batch in), with the inputs drawn in the order they were before."""
    known = list(zip(_size_draws(graph, sizes, seed, set()), first))
    while True:
        refused = {(s, a) for (s, a, _), o in known if _refused(o)}
        draws = _size_draws(graph, sizes, seed, refused)
        missing = [d for d in draws if _lookup(known, d) is None]
        if not missing:
            return [(d, _lookup(known, d)) for d in draws]
        known += list(zip(missing, references(source, graph, [d[2] for d in missing])))


def _lookup(known: list, draw: tuple[int, int, list[np.ndarray]]) -> Any:
    """The outcome already had for these exact inputs at this size and attempt; None if not asked yet."""
    for (s, a, inputs), outcome in known:
        if (s, a) == draw[:2] and _same_inputs(inputs, draw[2]):
            return outcome
    return None


def failure_message(target: str, result: dict[str, Any], rtol: float) -> str:
    """The one line a failed or undecided check raises (VerifyError, exit 4)."""
    bad = [result] + [s for s in result.get("sizes", []) if "skipped" not in s]
    decisive = next((r for r in bad if r["verdict"] == "failed"), None)
    if decisive is None:
        decisive = next(r for r in bad if r["verdict"] != "ok")
        row = next((o for o in decisive.get("outputs", []) if o["output"] == decisive["worst_output"]), {})
        advice = ("that output does not move with the input (TensorFlow gives it for every input the check "
                  "tried), so no comparison can tell a right conversion from a wrong one: check the model, or "
                  "leave the output out with --outputs" if row.get("constant") else
                  "a comparison there cannot tell a right conversion from a wrong one (try another --seed or "
                  "check the model)")
        return (f"verification cannot tell for {target}: output '{decisive['worst_output']}': {decisive['why']}; "
                f"{advice}")
    return (f"verification failed for {target}: max relative error {decisive['max_rel']:.3g} > rtol {rtol:g} "
            f"(output '{decisive['worst_output']}': {decisive['why']})")


def sensitivity_probes(graph: Graph, inputs: list[np.ndarray]) -> tuple[list[np.ndarray] | None,
                                                                        list[np.ndarray]]:
    """The inputs `sensitivity` compares against: the last row and column of every image input changed
    (where SAME's extra pad sits; None without an image input), and the whole input changed."""
    images = [i for i, n in enumerate(graph.inputs) if len(graph.shape(n)) == 4]
    rng = np.random.default_rng(12345)
    edged = None
    if images:
        edged = [x.copy() for x in inputs]
        for i in images:
            edged[i][:, :, -1, :] = rng.standard_normal(edged[i][:, :, -1, :].shape)
            edged[i][:, :, :, -1] = rng.standard_normal(edged[i][:, :, :, -1].shape)
    # token ids and masks are redrawn in their valid range too: kept, a text model's output looked dead
    # (float ids that a Keras 2 text model casts to int too: tf_keras's gather refuses a negative id)
    given = feeds.fed(graph)  # kept: the sizes follow them
    other = [x if name in given else rng.standard_normal(x.shape).astype(x.dtype)
             if np.issubdtype(x.dtype, np.floating) and token_inputs.value_range(graph, name) is None
             else _redrawn_ids(graph, name, x, rng) for name, x in zip(graph.inputs, inputs)]
    return edged, other


def _redrawn_ids(graph: Graph, name: str, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Integer or bool input `x` drawn again in its valid range (kept where that range is not known)."""
    ids = token_inputs.value_range(graph, name)
    return x if ids is None else rng.integers(*ids, x.shape).astype(x.dtype)


def sensitivity(graph: Graph, expected: list[np.ndarray], edged: Any, other: Callable[[], Any],
                depth: int) -> tuple[list[dict[str, Any]], list[str]]:
    """Does each output depend on the input? `edged`: TF's outcome for sensitivity_probes' first; `other()`
    its outcome for the second (asked for only when needed).
    `border` true when an output moves with the last row and column changed. An output that does not is
    re-checked with the whole input changed (`input`); one that does not move then either gets a
    warning -- a check on it says nothing about the conversion."""
    rows = [{"output": graph.source_names.get(n, n)} for n in graph.outputs]
    if edged is not None:
        for row, moved in zip(rows, _moved(_outputs(edged), expected, depth)):
            row["border"] = moved
    if all(row.get("border") for row in rows):
        return rows, []
    for row, moved in zip(rows, _moved(_outputs(other()), expected, depth)):
        row["input"] = moved
    warnings = [f"output '{row['output']}' does not depend on the input (TensorFlow gives the same value for "
                f"another input): --verify says nothing about the conversion there" for row in rows
                if not row["input"]]
    return rows, warnings


def _moved(moved: list[np.ndarray], expected: list[np.ndarray], depth: int) -> list[bool]:
    """Per output: does TF's value for the probe differ from `expected` beyond float32 rounding?"""
    return [_differs(np.asarray(m), np.asarray(e), depth) for m, e in zip(moved, expected)]


def _differs(new: np.ndarray, old: np.ndarray, depth: int) -> bool:
    if new.shape != old.shape:
        return True
    m = judge(new, old, 0.0, depth)
    return m["max_abs"] > m["floor"]


@dataclass
class EarlyRun:
    """The target's outputs for input sets it ran before TF's outcomes were read, or what it raised then."""

    input_sets: list[list[np.ndarray]]
    outputs: list[list[np.ndarray]] | None = None
    error: Exception | None = None


def _run_early(emitter: ModuleType, out_dir: Path, input_sets: list[list[np.ndarray]]) -> EarlyRun:
    """Run the target on `input_sets` now (in one run_sets call where the emitter has one), holding what it
    raises: TF's failure on the main set (a file Keras cannot load: exit 2) is what the user must see."""
    run_sets = getattr(emitter, "run_sets", None)
    try:
        outputs = (run_sets(Path(out_dir), input_sets) if run_sets
                   else [emitter.run(Path(out_dir), inputs) for inputs in input_sets])
    except Exception as error:  # noqa: BLE001 - held: _target_outputs raises it after TF's outcomes
        return EarlyRun(input_sets, error=error)
    return EarlyRun(input_sets, outputs)


def _target_outputs(emitter: ModuleType, out_dir: Path, input_sets: list[list[np.ndarray]],
                    early: EarlyRun | None = None) -> Callable[[list[np.ndarray]], list[np.ndarray]]:
    """The target's outputs for an input set: those of `input_sets` from one emitter.run_sets call (where
    the emitter has one: its model loaded once for all), any other set by emitter.run. `early`: a run made
    before (_run_early), whose sets are not run again; its error is raised when it ran exactly `input_sets`
    (the usual order would have met it too), else they run anew (a set TF refused may be what failed)."""
    if early is not None and early.error is not None:
        if _same_sets(early.input_sets, input_sets):
            raise early.error
        early = None
    if early is not None:
        known = list(zip(early.input_sets, early.outputs))
    else:
        run_sets = getattr(emitter, "run_sets", None)
        known = list(zip(input_sets, run_sets(Path(out_dir), input_sets))) if run_sets else []

    def actual(inputs: list[np.ndarray]) -> list[np.ndarray]:
        found = next((outputs for fed, outputs in known if _same_inputs(fed, inputs)), None)
        return found if found is not None else emitter.run(Path(out_dir), inputs)

    return actual


def _same_sets(a: list[list[np.ndarray]], b: list[list[np.ndarray]]) -> bool:
    return len(a) == len(b) and all(_same_inputs(x, y) for x, y in zip(a, b))


def _same_inputs(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    """The same input set: the very arrays, or equal ones (_answer_fallbacks draws the planned sets anew)."""
    return a is b or (len(a) == len(b) and all(
        x.shape == y.shape and x.dtype == y.dtype and np.array_equal(x, y) for x, y in zip(a, b)))



def unreadable_output(target: str, out_dir: Path, error: BaseException) -> InputError:
    """What a runtime's failure to load or run OUT's files says when the files are the user's to have changed
    (`convert verify OUT`, --layers): one line, exit 2, the runtime's own reason."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()] or [type(error).__name__]
    # a runtime's own traceback (MXNet's) ends with what went wrong; other messages start with it
    why = lines[-1] if "Traceback (most recent call last)" in lines[0] else lines[0]
    return InputError(f"the {target} runtime could not load or run the model in {out_dir} "
                      f"({type(error).__name__}: {why[:200]}); if its files were edited, re-run the conversion")

def _verify_other_size(
    graph: Graph, actual: Callable[[list[np.ndarray]], list[np.ndarray]], shapes: dict[str, tuple[int, ...]],
    attempts: list[tuple[int, list[np.ndarray], Any]], rtol: float, seed: int, depth: int,
    across: Across | None = None,
) -> dict[str, Any]:
    """One `sizes` entry from its attempts [(attempt, inputs, TF's outcome)] (_attempts: batch 2, then the
    conversion's batch); `skipped` (why) when TF cannot run the source at that H/W at all -- the model is
    then not checked there, and the summary says so. `across`: an output judged over several inputs at the
    check's size is judged here with its values there (one constant on this input is no verdict)."""
    why = ""
    for a, inputs, outcome in attempts:
        if _refused(outcome):  # TF refuses this size: the next attempt, else report it
            why = (str(outcome).strip().splitlines() or [type(outcome).__name__])[0][:200]
            continue
        at = _verify_at(actual, graph, inputs, _outputs(outcome), rtol, seed, depth)
        if across:
            _judge_with(at, graph, actual(inputs), _outputs(outcome), across, rtol, seed, depth)
        return {"input_shapes": [list(_attempts(graph, shapes)[a][n]) for n in graph.inputs],
                **{k: at[k] for k in ("max_rel", "passed", "verdict", "why", "worst_output")}}
    return {"input_shapes": [list(shapes[n]) for n in graph.inputs],
            "skipped": f"TensorFlow cannot run the source at this size ({why})"}


def _as_declared(a: np.ndarray, declared: tuple[int, ...]) -> np.ndarray:
    """A target's 0-d output as the graph declares it: MXNet 1.x returns every 0-d result (a non-max
    suppression count) as shape (1,); the one value is compared, any other shape still fails."""
    return a.reshape(()) if tuple(declared) == () and a.shape == (1,) else a


def _verify_at(
    actual: Callable[[list[np.ndarray]], list[np.ndarray]], graph: Graph, inputs: list[np.ndarray],
    expected: list[np.ndarray], rtol: float, seed: int, depth: int,
) -> dict[str, Any]:
    per_output = []
    for name, a, b in zip(graph.outputs, actual(inputs), expected):
        m = judge(_as_declared(np.asarray(a), graph.shape(name)), np.asarray(b), rtol, depth, same_dtype=True)
        m["output"] = graph.source_names.get(name, name)
        per_output.append(m)
    return _summary(per_output, rtol, seed)


def _judge_with(at: dict[str, Any], graph: Graph, actual: list[np.ndarray], expected: list[np.ndarray],
                across: Across, rtol: float, seed: int, depth: int) -> None:
    """`at`'s undecided outputs judged again together with their values on the check's inputs (`across`)."""
    for i, (values, references) in across.items():
        if at["outputs"][i]["verdict"] != CANNOT_TELL:
            continue
        a = _as_declared(np.asarray(actual[i]), graph.shape(graph.outputs[i]))
        judged = judge_across([*values, a], [*references, np.asarray(expected[i])], rtol, depth,
                              same_dtype=True)
        at["outputs"][i] = {**judged, "output": at["outputs"][i]["output"]}
    at.update(_summary(at["outputs"], rtol, seed))


def _summary(per_output: list[dict[str, Any]], rtol: float, seed: int) -> dict[str, Any]:
    """One verification's result from its judged outputs (metric.judge rows)."""
    decisive = worst_row(per_output)
    snrs = [m["snr_db"] for m in per_output if m["snr_db"] is not None]
    psnrs = [m["psnr_db"] for m in per_output if m["psnr_db"] is not None]
    verdict = verdict_of(per_output)
    return {
        "max_abs": max(m["max_abs"] for m in per_output),
        "max_rel": max(m["max_rel"] for m in per_output),
        "snr_db": min(snrs) if snrs else None,
        "psnr_db": min(psnrs) if psnrs else None,
        "passed": verdict == "ok",
        "verdict": verdict,
        "why": decisive["why"],
        "metric": "max|a-b| / max|ref| per output; see README 'How --verify judges'",
        "rtol": rtol,
        "seed": seed,
        "worst_output": decisive["output"],
        "outputs": per_output,
    }
