"""The one door to TensorFlow's outputs for a verification: where they come from is chosen once, here.

Three sources, each behind the same `run_references(source, graph, input_sets)` that verify() calls:
- in process (reference_process.run_references: a small source through the API, `convert batch`);
- a child process (reference_process.Child): a large source's, and the CLI's for any source, started before
  the parse so that TensorFlow's import overlaps the parse and the emit; `ask()` gives it the planned sets
  before the model is written;
- stored (app.verify.reference_store): outputs TF gave before for the same source bytes, inputs and environment, in
  front of either of the above. A verification that fails while some of its sets came from the store is run
  again with TF answering every set (`checked`), so a stored entry is never the only reason for an exit 4; the
  verify record says where the verdict came from.

A source that TensorFlow itself does not run (another interpreter computes its reference) registers its
`run_references` in COMPUTED_BY, by source kind: it runs in process, with the store in front like TF's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from tf_convert.parsers.source import Source

from .. import interrupts
from ..cache import Cache, reference_key, source_stamp
from . import reference_process
from .compare import References
from .reference_store import StoredReferences, refusal, refusal_line

# source kind -> run_references, for sources whose reference is not TensorFlow's run (e.g. an interpreter of
# their own format); TensorFlow's kinds are not listed
COMPUTED_BY: dict[str, References] = {}


class Reference:
    """TensorFlow's outputs for one conversion's verification (module doc). `cache`: what lookups go
    through (the store, in front of the caller's cache), also for the parse; `child`: TF runs in a child."""

    def __init__(self, source: Source, child: bool, store: StoredReferences | None, cache: Cache | None,
                 warnings: list[str] | None = None) -> None:
        self.source, self.child, self.store = source, child, store
        self.cache = store if store is not None else cache
        self.warnings = list(warnings or [])  # one line each, for conversion.json and the CLI (a refused store)
        self._spawned: reference_process.Child | None = None
        self._started: list[reference_process.Started] = []
        self._missing: list[tuple[tuple, Any]] = []
        self._known: dict[tuple, Any] = {}
        computed = COMPUTED_BY.get(source.kind)
        self._compute: References = computed or reference_process.run_references

    @classmethod
    def open(cls, source: Source, *, checks: bool, small_too: bool = False, store_root: Path | None = None,
             cache: Cache | None = None, sha256: Callable[[], str] | None = None) -> Reference:
        """The reference of a conversion that `checks` (verifies a written model): in a child when
        reference_process.wants_child says so (`small_too`: the CLI), through the store at `store_root`."""
        child = checks and source.kind not in COMPUTED_BY and reference_process.wants_child(source, small_too)
        store, warnings = None, []
        if checks and store_root is not None:
            why = refusal(Path(store_root))
            if why is not None:
                warnings.append(refusal_line(Path(store_root), why))
            else:
                store = StoredReferences(Path(store_root), source_stamp(source),
                                         sha256 or (lambda: source.sha256), inner=cache)
        return cls(source, child, store, cache, warnings)

    @property
    def target_first(self) -> bool:
        """The target runs before TF's outcomes are read: a small source's child holds little memory."""
        return self.child and not reference_process.in_child(self.source)

    def start(self) -> None:
        """Start the child now, before the parse (TF's import then overlaps it), unless the store most likely
        holds a small source's outputs (a child starts in ask() for any set it does not)."""
        if not self.child or self._known_small():
            return
        with interrupts.deferred():  # a signal while it starts: raised once the child can be cancelled
            self._spawned = reference_process.spawn(self.source)

    def _known_small(self) -> bool:
        """A small source TF has run on here before: its outputs are most likely stored. A large source's
        child starts all the same: hashing it first would delay TF by seconds."""
        return self.store is not None and not reference_process.in_child(self.source) and self.store.knows()

    def ask(self, graph: Any, sets: list) -> None:
        """Give the child the planned `sets` now (those not stored), so that TF runs while the model is
        written; run_references reads them later."""
        with interrupts.deferred():  # a signal while it starts: raised once cancel() can end it
            keys = [reference_key(self.source, graph, inputs) for inputs in sets]
            for key in keys if self.cache is not None else []:
                hit = self.cache.get(key)
                if hit is not None:
                    self._known[key] = hit
            self._missing = [(key, inputs) for key, inputs in zip(keys, sets) if key not in self._known]
            if self._missing and self._spawned is None:  # not started early: thought to be stored
                self._spawned = reference_process.spawn(self.source)
            if self._missing:
                self._started = [reference_process.start_references(
                    self.source, graph, [x for _, x in self._missing], self._spawned)]
            elif self._spawned is not None:  # every set stored: nothing to ask the child
                self._spawned.cancel()
            self._spawned = None

    def run_references(self, source: Any, graph: Any, input_sets: list) -> list[Any]:
        """verify()'s reference: the asked sets from the child (waiting for it), the others through the
        cache, the rest computed now (in one call)."""
        while self._started:  # one pop: cancel() then has nothing to end
            for (key, _), outcome in zip(self._missing, self._started.pop().outcomes()):
                self._known[key] = outcome
                if self.cache is not None and not isinstance(outcome, BaseException):
                    self.cache.put(key, outcome)
        keys = [reference_key(source, graph, inputs) for inputs in input_sets]
        outcomes = [self._known.get(key) for key in keys]
        for k, key in enumerate(keys):
            if outcomes[k] is None and self.cache is not None:
                outcomes[k] = self.cache.get(key)
        todo = [k for k, outcome in enumerate(outcomes) if outcome is None]
        for k, outcome in zip(todo, self._compute(source, graph, [input_sets[k] for k in todo]) if todo else []):
            outcomes[k] = outcome
            if self.cache is not None and not isinstance(outcome, BaseException):  # a refusal re-runs
                self.cache.put(keys[k], outcome)
        return outcomes

    def checked(self, check: Callable[[References], dict[str, Any]]) -> dict[str, Any]:
        """`check(run_references)` (a verification); one that fails while the store answered some of its sets
        runs again with TF answering every set (and replacing those entries). The result's `reference`
        record says where the verdict came from."""
        result = check(self.run_references)
        if self.store is None:
            return result
        rechecked = not result["passed"] and self.store.answered
        if rechecked:
            self.cancel()
            self._known.clear()
            self.store.bypass()
            result = check(self.run_references)
        result["reference"] = dict(self.store.record(), rechecked=rechecked)
        return result

    def cancel(self) -> None:
        """End a child nobody will read (a failure, an interrupt); idempotent."""
        for pending in self._started:
            pending.cancel()
        self._started = []
        if self._spawned is not None:
            self._spawned.cancel()
            self._spawned = None
