"""`python -m tests.support.verify_order LOG [--old-order] ARGS...`: the `convert` command with ARGS, with
the order of the target's runs and of the reads of TF's reference outcomes written to LOG (JSON).

A thin wrapper around what the pipeline hands verify.verify: the real emitter's run/run_sets and the real
references callable, each logged and then called; no runtime is replaced. `--old-order` has verify run the
target after reading TF's outcomes (target_first off), the order before the target ran beside the child.
Nothing here imports TensorFlow: the CLI then starts its reference child for a small source too."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable


def _recorded_emitter(emitter: Any, events: list[dict]) -> SimpleNamespace:
    def run(out_dir, inputs):
        events.append({"event": "target", "sets": 1})
        return emitter.run(out_dir, inputs)

    def run_sets(out_dir, input_sets):
        events.append({"event": "target", "sets": len(input_sets)})
        return emitter.run_sets(out_dir, input_sets)

    extra = {"run_sets": run_sets} if hasattr(emitter, "run_sets") else {}
    return SimpleNamespace(TARGET=emitter.TARGET, run=run, **extra)


def recording(real: Callable, events: list[dict], old_order: bool) -> Callable:
    """verify.verify, its emitter and references logged into `events`."""
    from tf_convert.app.verify import reference_process

    def verify(source, graph, emitter, out_dir, *args, run_references=None, target_first=False, **kwargs):
        events.append({"event": "verify", "target_first": target_first})
        references = run_references or reference_process.run_references

        def recorded_references(source_, graph_, input_sets):
            events.append({"event": "references", "sets": len(input_sets)})
            return references(source_, graph_, input_sets)

        return real(source, graph, _recorded_emitter(emitter, events), out_dir, *args,
                    run_references=recorded_references, target_first=target_first and not old_order, **kwargs)

    return verify


def main(argv: list[str]) -> None:
    from tf_convert import cli
    from tf_convert.app import verify

    log, *args = argv
    old_order = args[:1] == ["--old-order"]
    events: list[dict] = []
    verify.verify = recording(verify.verify, events, old_order)  # this driver process only
    try:
        cli.main(args[1:] if old_order else args, prog_name="convert")
    finally:
        Path(log).write_text(json.dumps(events))


if __name__ == "__main__":
    main(sys.argv[1:])
