"""Locating and checking the files of a TF source before TensorFlow touches them.

Every problem becomes a one-line InputError naming the file that was expected and what to pass
instead, so users never see a TensorFlow traceback for a missing shard.
"""

from __future__ import annotations

import re
from pathlib import Path

from tf_convert.convert.errors import InputError
from tf_convert.parsers.source import checkpoint_prefix, require_regular

__all__ = ["check_checkpoint", "check_saved_model", "checkpoint_prefix"]

_INSTEAD = "pass the frozen .pb or the SavedModel directory instead"
_SHARD = re.compile(r"\.data-(\d+)-of-(\d+)$")


def check_checkpoint(prefix: str | Path) -> None:
    """Raise InputError unless the graph (.meta), the index and every data shard exist."""
    meta = Path(str(prefix) + ".meta")
    index = Path(str(prefix) + ".index")
    require_regular(meta, "the checkpoint's graph (.meta)")
    require_regular(index, "the checkpoint's index")
    prefix = _PrefixPath(str(prefix))
    if not meta.exists():
        raise InputError(
            f"{meta} not found: the checkpoint has no graph; {_INSTEAD}, "
            f"or re-save the checkpoint with its .meta (tf.compat.v1.train.Saver writes it)"
        )
    if not index.exists():
        raise InputError(
            f"{index} not found: the checkpoint's weight index is missing; copy the whole "
            f"checkpoint ({prefix.name}.index and {prefix.name}.data-*) or {_INSTEAD}"
        )
    shards = list(prefix.parent.glob(prefix.name + ".data-*-of-*"))
    if not shards:
        expected = f"{prefix}.data-00000-of-00001"
        raise InputError(
            f"{expected} not found: the checkpoint has no weights (data shard); copy the "
            f"{prefix.name}.data-* files next to the .index or {_INSTEAD}"
        )
    for shard in shards:
        require_regular(shard, "a checkpoint data shard")
    found = {m.group(1): m.group(2) for s in shards if (m := _SHARD.search(s.name))}
    total = max(int(t) for t in found.values()) if found else 1
    width = len(next(iter(found))) if found else 5
    for i in range(total):
        key = f"{i:0{width}d}"
        if key not in found:
            expected = f"{prefix}.data-{key}-of-{total:0{width}d}"
            raise InputError(
                f"{expected} not found: data shard {i + 1} of {total} is missing; copy every "
                f"{prefix.name}.data-* file or {_INSTEAD}"
            )


class _PrefixPath:
    """`parent` and `name` of a prefix string, where the name may be empty ('dir/')."""

    def __init__(self, prefix: str):
        self._prefix = prefix
        head, _, tail = prefix.replace("\\", "/").rpartition("/")
        self.parent = Path(head or ".")
        self.name = tail

    def __str__(self) -> str:
        return self._prefix


def check_saved_model(directory: Path) -> None:
    require_regular(directory / "saved_model.pb", "the SavedModel's graph")
    if not (directory / "saved_model.pb").exists():
        raise InputError(
            f"{directory / 'saved_model.pb'} not found: not a SavedModel directory "
            "(a .pbtxt SavedModel is not supported); pass a binary SavedModel or a frozen .pb"
        )
    variables = directory / "variables"
    if variables.is_dir() and any(variables.iterdir()):
        index = variables / "variables.index"
        require_regular(index, "the SavedModel's variable index")
        if not index.exists():
            raise InputError(f"{index} not found: the SavedModel's weights are incomplete; {_INSTEAD}")
        _check_shards(variables / "variables")


def _check_shards(prefix: Path) -> None:
    """The data shards of a checkpoint that has no .meta (SavedModel variables)."""
    shards = list(prefix.parent.glob(prefix.name + ".data-*-of-*"))
    for shard in shards:
        require_regular(shard, "a SavedModel variables data shard")
    if not shards:
        raise InputError(
            f"{prefix}.data-00000-of-00001 not found: the SavedModel has no weights; "
            "copy its variables/ directory completely or pass a frozen .pb"
        )
