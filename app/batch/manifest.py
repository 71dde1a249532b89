"""The `convert batch` manifest: read TOML or YAML, validate every entry, keep line numbers.

A manifest lists models under `model` (TOML `[[model]]` tables; YAML `model:` or `models:` list) and
optional `defaults` applied to every entry. The whole file is checked before anything runs, and every
problem is reported at once as `FILE:LINE: ...` so a CI log points at the line to fix.

Only the standard library is imported here (PyYAML lazily, for .yaml files).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from tf_convert.app import outdir
from tf_convert.convert.errors import UsageError
from tf_convert.emitters import TARGETS  # light: emitters/__init__ imports no framework
from tf_convert.emitters import options as target_options
from tf_convert.emitters.options import OptionSpec

ENTRY_LISTS = ("model", "models")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
VAR_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# a manifest lists models; one this large is a mistake or an attack (YAML's "billion laughs" is small on
# disk and huge once its aliases are expanded: the expanded node count is capped too)
MAX_MANIFEST_BYTES = 4 * 1024 * 1024
MAX_YAML_NODES = 200_000
OUT_FIELDS = ("name", "target")
EXTRA_TARGETS = ("ir",)  # pipeline targets that are not emitters


class ManifestError(Exception):
    """Every problem found in a manifest; `problems` are ready-to-print `FILE:LINE: message` lines."""

    exit_code = 2

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__(f"{len(problems)} problem(s) in the manifest")


@dataclass(frozen=True)
class Entry:
    """One model of the manifest, validated and normalised (paths absolute)."""

    name: str
    source: Path
    targets: tuple[str, ...]
    line: int
    input_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    inputs: tuple[str, ...] | None = None
    outputs: tuple[str, ...] | None = None
    rtol: float = 1e-4
    verify: bool = True
    seed: int = 0
    keep_ir: bool = False
    timeout: float | None = None
    feeds: dict[str, Any] = field(default_factory=dict)  # input -> the value --verify feeds it (as --feed)
    emit: dict[str, Any] = field(default_factory=dict)  # EmitOptions fields: nhwc, caffe_pad, opset
    outs: dict[str, Path] = field(default_factory=dict)  # target -> output directory

    def fingerprint(self, target: str) -> str:
        """Hash of every option that changes the conversion's result (for --changed-only)."""
        doc = {
            "source": str(self.source), "target": target, "out": str(self.outs[target]),
            "input_shapes": {k: list(v) for k, v in sorted(self.input_shapes.items())},
            "inputs": self.inputs, "outputs": self.outputs, "rtol": self.rtol, "verify": self.verify,
            "seed": self.seed, "keep_ir": self.keep_ir, "emit": dict(sorted(self.emit.items())),
        }
        if self.feeds:  # only where given: the fingerprints of manifests without feeds stay as they were
            doc["feeds"] = dict(sorted(self.feeds.items()))
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


# ---- one normaliser per key: value -> normalised value, or raise ValueError(message) ------------


def _targets(value: Any) -> tuple[str, ...]:
    names = _str_list(value)
    if not names:
        raise ValueError("targets is empty: list at least one of " + ", ".join(TARGETS))
    bad = [t for t in names if t not in TARGETS + EXTRA_TARGETS]
    if bad:
        raise ValueError(f"unknown target(s) {', '.join(map(repr, bad))}: choose from {', '.join(TARGETS)}")
    if len(set(names)) != len(names):
        raise ValueError(f"targets lists a target twice: {names}")
    return tuple(names)


def _shape(value: Any) -> tuple[int, ...]:
    if isinstance(value, str):
        try:  # "1,224,224,3" or "1x224x224x3"
            value = [int(d) for d in re.split(r"[,x]", value.strip().rstrip(","))]
        except ValueError:
            raise ValueError(f"input_shape {value!r} is not a list of integers, e.g. [1, 224, 224, 3]") from None
    if (not isinstance(value, list) or not value
            or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in value)):
        raise ValueError(f"input_shape {value!r} must list positive integers, e.g. [1, 224, 224, 3]")
    return tuple(value)


def _input_shapes(value: Any) -> dict[str, tuple[int, ...]]:
    """[1,224,224,3], "1,224,224,3", or {input_name = [..], ...} for several inputs."""
    if isinstance(value, dict):
        return {str(k): _shape(v) for k, v in value.items()}
    return {"": _shape(value)}


def _feeds(value: Any) -> dict[str, Any]:
    """{input_name = VALUE}: what --verify feeds each input (as --feed NAME=VALUE), a number or a list of
    numbers (nested for a matrix), or that written as a JSON string ("[4, 15]")."""
    if not isinstance(value, dict) or not value:
        raise ValueError(f"feeds must be a table of input names and values, e.g. {{shape = [4, 15]}}, got {value!r}")
    fed = {}
    for name, given in value.items():
        if isinstance(given, str):
            try:
                given = json.loads(given)
            except json.JSONDecodeError:
                raise ValueError(f"feeds.{name}: {given!r} is not a number or a list such as [4, 15]") from None
        if not _numbers(given):
            raise ValueError(f"feeds.{name}: {given!r} is not a number or a list such as [4, 15]")
        fed[str(name)] = given
    return fed


def _numbers(value: Any) -> bool:
    if isinstance(value, list):
        return all(_numbers(v) for v in value)
    return isinstance(value, (int, float))  # a bool is an int: TF's bool inputs take true / false


def _str_list(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"expected a list of names (or a comma-separated string), got {value!r}")
    return tuple(value)


def _rtol(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ValueError(f"rtol must be a number >= 0, got {value!r}")
    return float(value)


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {value!r}")
    return value


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"expected an integer, got {value!r}")
    return value


def _timeout(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"timeout must be a number of seconds > 0, got {value!r}")
    return float(value)


def _target_option(spec: OptionSpec) -> Callable[[Any], Any]:
    """The manifest key of one target option (nhwc, caffe_pad, opset): the same type, choices and
    range as its `tf2<target>` flag, from the target's options dataclass."""
    normalise = {bool: _bool, int: _int, str: _text}[spec.type]

    def check(value: Any) -> Any:
        value = normalise(value)
        try:
            target_options.check(spec, value)
        except ValueError as exc:
            raise ValueError(f"{spec.name}: {str(exc).replace(spec.flag + ' ', '', 1)}") from None
        return value

    return check


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"expected a non-empty string, got {value!r}")
    return value


def _name(value: Any) -> str:
    if not isinstance(value, str) or not NAME_RE.match(value):
        raise ValueError(f"name {value!r} must be letters, digits, '_', '.', '+' or '-' (it names directories)")
    return value


# key -> (normaliser, attribute of Entry); EmitOptions keys go to Entry.emit
FIELDS: dict[str, tuple[Callable[[Any], Any], str]] = {
    "name": (_name, "name"),
    "source": (_text, "source"),
    "targets": (_targets, "targets"),
    "input_shape": (_input_shapes, "input_shapes"),
    "inputs": (_str_list, "inputs"),
    "outputs": (_str_list, "outputs"),
    "feeds": (_feeds, "feeds"),
    "rtol": (_rtol, "rtol"),
    "verify": (_bool, "verify"),
    "seed": (_int, "seed"),
    "keep_ir": (_bool, "keep_ir"),
    "timeout": (_timeout, "timeout"),
    "out": (_text, "out"),
}
EMIT_KEYS = tuple(target_options.all_option_specs())
FIELDS.update({name: (_target_option(spec), "emit") for name, spec in target_options.all_option_specs().items()})
REQUIRED = ("name", "source", "targets")
NOT_IN_DEFAULTS = ("name", "source")


# ---- line numbers ------------------------------------------------------------------------------


class LineMap:
    """Where each entry (and each of its keys) starts in the file, 1-based; 0 when unknown."""

    def __init__(self) -> None:
        self.entries: list[int] = []
        self.keys: dict[tuple[int | str, str], int] = {}  # (entry index | "defaults" | "top", key)

    def entry(self, i: int) -> int:
        return self.entries[i] if i < len(self.entries) else self.keys.get(("top", "model"), 0)

    def key(self, where: int | str, key: str) -> int:
        fallback = self.entry(where) if isinstance(where, int) else self.keys.get(("top", where), 0)
        return self.keys.get((where, key), fallback)


_TOML_ARRAY_TABLE = re.compile(r'^\s*\[\[\s*"?([A-Za-z0-9_-]+)"?\s*\]\]')
_TOML_TABLE = re.compile(r'^\s*\[\s*"?([A-Za-z_][A-Za-z0-9_.-]*)"?\s*\]\s*(#.*)?$')
_TOML_KEY = re.compile(r'^\s*"?([A-Za-z0-9_-]+)"?\s*=')


def _toml_lines(text: str) -> LineMap:
    """A light scan of the TOML text: tomllib keeps no positions."""
    lines = LineMap()
    where: int | str = "top"
    for number, line in enumerate(text.splitlines(), 1):
        if m := _TOML_ARRAY_TABLE.match(line):
            if m.group(1) in ENTRY_LISTS:
                lines.entries.append(number)
                where = len(lines.entries) - 1
            else:
                where = "other"
        elif m := _TOML_TABLE.match(line):
            where = m.group(1)
            lines.keys.setdefault(("top", where), number)
        elif m := _TOML_KEY.match(line):
            lines.keys.setdefault((where, m.group(1)), number)
    return lines


def _load_toml(text: str, path: Path) -> tuple[Any, LineMap]:
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        try:
            import tomli as tomllib
        except ImportError:
            raise ManifestError([f"{path}:0: TOML manifests need Python >= 3.11 or `pip install tomli`; "
                                 f"or write the manifest in YAML"]) from None

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        raise ManifestError([f"{path}:{m.group(1) if m else 0}: not valid TOML: {exc}"]) from None
    return data, _toml_lines(text)


def _expanded_nodes(node: Any, budget: int) -> int:
    """How many nodes the document has once every alias is expanded, counting no further than `budget`."""
    count, stack = 0, [node]
    while stack and count <= budget:
        current = stack.pop()
        count += 1
        value = getattr(current, "value", None)
        if isinstance(value, list):
            for item in value:
                stack.extend(item if isinstance(item, tuple) else (item,))
    return count


def _load_yaml(text: str, path: Path) -> tuple[Any, LineMap]:
    try:
        import yaml
    except ImportError:
        raise ManifestError([f"{path}:0: YAML manifests need PyYAML: pip install 'tf-convert[batch]'"]) from None
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is not None and _expanded_nodes(node, MAX_YAML_NODES) > MAX_YAML_NODES:
            raise ManifestError([f"{path}:0: the manifest expands to more than {MAX_YAML_NODES} YAML nodes "
                                 f"(aliases of aliases?); write the entries out"])
        data = loader.construct_document(node) if node is not None else {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else 0
        what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ManifestError([f"{path}:{line}: not valid YAML: {what}"]) from None
    finally:
        loader.dispose()
    lines = LineMap()
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            lines.keys[("top", key.value)] = key.start_mark.line + 1
            if key.value in ENTRY_LISTS and isinstance(value, yaml.SequenceNode):
                for item in value.value:
                    lines.entries.append(item.start_mark.line + 1)
                    if isinstance(item, yaml.MappingNode):
                        for k, _ in item.value:
                            lines.keys[(len(lines.entries) - 1, k.value)] = k.start_mark.line + 1
            elif key.value == "defaults" and isinstance(value, yaml.MappingNode):
                for k, _ in value.value:
                    lines.keys[("defaults", k.value)] = k.start_mark.line + 1
    return data, lines


# ---- validation --------------------------------------------------------------------------------


def _expand(text: str, env: dict[str, str]) -> str:
    """`${VAR}` from the environment (an unset variable is an error, not an empty string), and `~`."""
    missing = [v for v in VAR_RE.findall(text) if v not in env]
    if missing:
        raise ValueError(f"{text!r} uses ${{{missing[0]}}}, which is not set in the environment")
    return os.path.expanduser(VAR_RE.sub(lambda m: env[m.group(1)], text))


def _check_template(raw: str, text: str) -> None:
    """Only plain {name} and {target}: str.format on a user's template could reach attributes
    ({name.__class__}), items ({name[0]}) or build huge strings ({name:>300000000})."""
    import string

    try:
        fields = list(string.Formatter().parse(text))
    except ValueError:
        fields = [("", "?", "", None)]
    for _, field_name, spec, conversion in fields:
        if field_name is not None and (field_name not in OUT_FIELDS or spec or conversion):
            raise ValueError(f"out {raw!r} may only use the plain placeholders {{name}} and {{target}} "
                             f"(no attribute, index, conversion or format spec)")


def _out_dirs(raw: str | None, name: str, targets: tuple[str, ...], base: Path, out_root: Path,
              env: dict[str, str]) -> dict[str, Path]:
    """`out` may use {name} and {target}; default <out_root>/<name>-<target>."""
    if raw is None:
        return {t: out_root / f"{name}-{t}" for t in targets}
    text = _expand(raw, env)
    _check_template(raw, text)
    if len(targets) > 1 and "{target}" not in text:
        raise ValueError(f"out {raw!r} is shared by {len(targets)} targets: put {{target}} in it, "
                         f"e.g. \"{raw.rstrip('/')}/{{target}}\"")
    return {t: base / text.format(name=name, target=t) for t in targets}


def _normalise(raw: dict[str, Any], where: int | str, lines: LineMap, path: Path, problems: list[str],
               label: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key, value in raw.items():
        line = lines.key(where, key)
        if key not in FIELDS or (where == "defaults" and key in NOT_IN_DEFAULTS):
            known = ", ".join(k for k in FIELDS if where != "defaults" or k not in NOT_IN_DEFAULTS)
            problems.append(f"{path}:{line}: {label}: unknown key {key!r} (known: {known})")
            continue
        try:
            values[key] = FIELDS[key][0](value)
        except ValueError as exc:
            text = str(exc)
            problems.append(f"{path}:{line}: {label}: {text if text.startswith(key) else f'{key}: {text}'}")
    return values


def _unsafe_out(out: Path, source: Path, root: Path, allow_outside_root: bool) -> str | None:
    """Why writing `out` could touch files convert did not write, or None when it is safe."""
    where = out.resolve()
    if not allow_outside_root and (where == root or root not in where.parents):
        return (f"output directory {out} is not inside --out-root {root}; move it there or pass "
                "--allow-outside-out-root")
    try:
        outdir.check_out(out, source, force=True)  # batch replaces its own previous outputs
    except UsageError as exc:
        return str(exc)
    return None


def load(path: Path, out_root: Path = Path("."), env: dict[str, str] | None = None,
         allow_outside_root: bool = False) -> list[Entry]:
    """Read and validate the manifest at `path`; raise ManifestError listing every problem.

    Every output directory is checked like `-o` before anything runs (never the source, the current
    directory or a parent of it; only a previous output of convert is replaced) and must lie inside
    `out_root` unless `allow_outside_root`."""
    path = Path(path)
    env = dict(os.environ if env is None else env)
    try:
        if not path.is_file():  # a FIFO or a device would block or never end
            raise ManifestError([f"{path}:0: the manifest is not a regular file"])
        if path.stat().st_size > MAX_MANIFEST_BYTES:
            raise ManifestError([f"{path}:0: the manifest is {path.stat().st_size} bytes; at most "
                                 f"{MAX_MANIFEST_BYTES} are read (split it, or use shards)"])
        text = path.read_text()
    except OSError as exc:
        raise ManifestError([f"{path}:0: cannot read the manifest: {exc.strerror or exc}"]) from None
    loader = _load_yaml if path.suffix.lower() in (".yaml", ".yml") else _load_toml
    data, lines = loader(text, path)
    problems: list[str] = []
    if not isinstance(data, dict):
        raise ManifestError([f"{path}:1: the manifest must be a table with a 'model' list"])
    for key in data:
        if key not in ENTRY_LISTS + ("defaults",):
            problems.append(f"{path}:{lines.key('top', key)}: unknown top-level key {key!r} "
                            f"(expected 'defaults' and a 'model' list)")
    lists = [k for k in ENTRY_LISTS if k in data]
    raw_entries = data.get(lists[0]) if lists else None
    if len(lists) > 1:
        problems.append(f"{path}:{lines.key('top', lists[1])}: use either 'model' or 'models', not both")
    if not isinstance(raw_entries, list) or not raw_entries:
        problems.append(f"{path}:1: no models: add [[model]] tables (TOML) or a 'model:' list (YAML)")
        raise ManifestError(problems)
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        problems.append(f"{path}:{lines.key('top', 'defaults')}: 'defaults' must be a table")
        defaults = {}
    defaults = _normalise(defaults, "defaults", lines, path, problems, "defaults")

    base = path.resolve().parent
    entries: list[Entry] = []
    seen_names: dict[str, int] = {}
    seen_outs: dict[Path, str] = {}
    for i, raw in enumerate(raw_entries):
        line = lines.entry(i)
        label = f"model #{i + 1}"
        if not isinstance(raw, dict):
            problems.append(f"{path}:{line}: {label}: expected a table of keys, got {raw!r}")
            continue
        if isinstance(raw.get("name"), str):
            label = f"model {raw['name']!r}"
        before = len(problems)
        values = {**defaults, **_normalise(raw, i, lines, path, problems, label)}
        for key in REQUIRED:
            if key not in values and key not in raw:  # (present but invalid: reported above)
                problems.append(f"{path}:{line}: {label}: missing required key {key!r}")
        name = values.get("name")
        if name in seen_names:
            problems.append(f"{path}:{lines.key(i, 'name')}: {label}: duplicate name "
                            f"(first used on line {seen_names[name]})")
        elif name:
            seen_names[name] = lines.key(i, "name")
        if len(problems) > before or not all(k in values for k in REQUIRED):
            continue
        try:
            source = base / _expand(values["source"], env)
        except ValueError as exc:
            problems.append(f"{path}:{lines.key(i, 'source')}: {label}: {exc}")
            continue
        try:
            outs = _out_dirs(values.get("out"), name, values["targets"], base, out_root.resolve(), env)
        except ValueError as exc:
            problems.append(f"{path}:{lines.key(i, 'out') if 'out' in raw else lines.key('defaults', 'out')}: "
                            f"{label}: {exc}")
            continue
        for target, out in outs.items():
            other = seen_outs.setdefault(out.resolve(), f"{name}/{target}")
            if other != f"{name}/{target}":
                problems.append(f"{path}:{line}: {label}: output directory {out} is also used by {other}")
            problem = _unsafe_out(out, source, out_root.resolve(), allow_outside_root)
            if problem:
                problems.append(f"{path}:{line}: {label}: {problem}")
        entries.append(Entry(
            name=name, source=source, targets=values["targets"], line=line,
            input_shapes=values.get("input_shape", {}), inputs=values.get("inputs"),
            outputs=values.get("outputs"), rtol=values.get("rtol", 1e-4), verify=values.get("verify", True),
            seed=values.get("seed", 0), keep_ir=values.get("keep_ir", False), timeout=values.get("timeout"),
            feeds=values.get("feeds", {}),
            emit={k: values[k] for k in EMIT_KEYS if k in values}, outs=outs,
        ))
    if problems:
        raise ManifestError(sorted(problems, key=_line_of))
    return entries


def _line_of(problem: str) -> int:
    m = re.match(r".*?:(\d+): ", problem)
    return int(m.group(1)) if m else 0


def shard(entries: list[Entry], index: int, count: int) -> list[Entry]:
    """Shard `index` of `count` (1-based): every count-th entry of the name-sorted list.

    Deterministic and balanced; shards 1..count together hold every entry exactly once."""
    ordered = sorted(entries, key=lambda e: e.name)
    return [e for k, e in enumerate(ordered) if k % count == index - 1]


def parse_shard(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise ValueError(f"--shard {text!r}: expected I/N with 1 <= I <= N, e.g. 2/3")
    return int(m.group(1)), int(m.group(2))
