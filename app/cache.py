"""What one conversion may reuse from an earlier one of the same source: the parsed graph and
TensorFlow's reference outputs.

`pipeline.run(req, cache=...)` asks an explicit cache object (nothing is patched): `convert batch`
gives each worker one, so converting a model to four targets parses it and runs TensorFlow once.
Keys hold the source's path and the size and mtime of each of its files, so an edited source is
parsed again.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np

    from tf_convert.convert.ir import Graph
    from tf_convert.parsers.base import ParseOptions


class Cache(Protocol):
    """get returns None on a miss, else a value the caller may change freely (a copy); put stores
    a copy of `value` as it is now (later changes by the caller do not reach the cache)."""

    def get(self, key: tuple) -> Any | None: ...

    def put(self, key: tuple, value: Any) -> None: ...


def source_stamp(path: str | Path) -> tuple:
    """Path plus (name, size, mtime) of every file of the source (file, directory or ckpt prefix)."""
    path = Path(path).resolve()
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file())
    elif path.exists():
        files = [path]
    else:
        files = sorted(path.parent.glob(path.name + ".*"))
    return (str(path), tuple((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files))


def parse_key(source: str | Path, options: ParseOptions) -> tuple:
    """Key of (graph, notes) parsed from `source` with `options`."""
    return ("parse", source_stamp(source), repr(options.inputs), repr(options.outputs),
            repr(sorted(options.input_shapes.items())), repr(sorted(options.settings.items())), options.use_ema,
            options.safe_mode, options.input_layout)


def reference_key(source: str | Path, graph: Graph, inputs: list[np.ndarray]) -> tuple:
    """Key of TensorFlow's outputs for `inputs` fed to the graph's inputs (by their source names):
    ("reference", the source's stamp, what the outputs depend on besides the source)."""
    import numpy as np

    digest = hashlib.sha256()
    for x in inputs:
        x = np.ascontiguousarray(x)
        digest.update(f"{x.dtype}{x.shape}".encode())
        digest.update(x.tobytes())
    names = tuple(graph.inputs) + ("->",) + tuple(graph.outputs)
    return ("reference", source_stamp(source), names, repr(graph.metadata.get("tf_settings")),
            tuple((graph.source_names.get(n), graph.source_layouts.get(n)) for n in names), digest.hexdigest())


def with_content(key: tuple, sha256: str) -> tuple:
    """reference_key's key as kept across runs (app.verify.reference_store): the source's stamp (path, sizes, mtimes)
    replaced by its content hash (a file rewritten in place must miss), and without the IR's own tensor
    names (the TF tensors they stand for follow them: `convert verify OUT`'s skeleton names them otherwise)."""
    return (key[0], sha256, *key[3:])
