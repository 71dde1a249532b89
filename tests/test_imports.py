"""The import lint over all product code: the project's own modules are imported at module top, never inside a
function (a function-local import hides a cycle and a dependency from the reader), and the modules' imports
form no cycle. Heavy frameworks (TensorFlow, torch, ...) may be imported where they are needed, and so may
an own module that compiles protocol-buffer descriptors when imported, where that defers the work (DEFERRED)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("convert", "parsers", "emitters", "app", "cli.py")
# Function-local imports of an own module whose import is itself heavy (compiling TF's .proto files: 0.7 s),
# where the importing module is loaded without it, each with its reason. (Inside the TF parser and the Caffe
# emitter the package's own __init__ loads the protos, so their modules import them at the top.)
DEFERRED = {
    ("parsers/source.py", "tf_convert.parsers.tensorflow.protos"):
        "detecting a source's kind compiles TF's protos only to check a .pb file",
}
# Modules that load the project's own modules on use, each for a reason a reader can check:
LAZY_ON_PURPOSE = {
    "cli.py": "each command's modules load when that command runs: `convert --help` answers in 0.2 s",
    "app/__init__.py": "the API loads on first use, so that `import tf_convert.app.X` stays light",
    "app/batch/cluster.py": "the worker module imports the optional `distributed` at its top",
}


def _files(tops: tuple[str, ...]) -> list[Path]:
    found = []
    for top in tops:
        path = ROOT / top
        found += [path] if path.is_file() else sorted(path.rglob("*.py"))
    return found


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(["tf_convert", *(parts[:-1] if parts[-1] == "__init__" else parts)])


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def _absolute(path: Path, node: ast.ImportFrom) -> str:
    """The module a `from X import ...` names, made absolute."""
    if not node.level:
        return node.module or ""
    base = _module(path).split(".")
    if not _is_package(path):
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _own(name: str) -> bool:
    return name == "tf_convert" or name.startswith("tf_convert.")


def _targets(path: Path, node: ast.Import | ast.ImportFrom, modules: set[str]) -> list[str]:
    """The own modules an import statement runs: `from X import n` runs X.n when that is a module, else X."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if _own(a.name)]
    base = _absolute(path, node)
    if not _own(base):
        return []
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]


def _local_imports(path: Path, modules: set[str]) -> list[str]:
    tree = ast.parse(path.read_text())
    found = []
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    found += [f"{path.relative_to(ROOT)}:{node.lineno}: {t}" for t in _targets(path, node, modules)
                              if (str(path.relative_to(ROOT)), t) not in DEFERRED]
    return found


def test_no_function_local_import_of_the_project_s_own_modules():
    files = [p for p in _files(PRODUCT) if str(p.relative_to(ROOT)) not in LAZY_ON_PURPOSE]
    modules = {_module(p) for p in _files(PRODUCT)}
    found = [line for path in files for line in _local_imports(path, modules)]
    assert not found, "import these at module top:\n" + "\n".join(found)


def _graph() -> dict[str, set[str]]:
    """module -> the own modules its top-level imports run (imports under `if TYPE_CHECKING:` do not run)."""
    files = _files(PRODUCT)
    modules = {_module(p) for p in files}
    graph: dict[str, set[str]] = {}
    for path in files:
        me = _module(path)
        edges = graph.setdefault(me, set())
        statements = [n for n in ast.parse(path.read_text()).body if isinstance(n, (ast.Import, ast.ImportFrom))]
        for node in statements:
            for target in _targets(path, node, modules):
                # importing a.b.c runs the packages a and a.b first, except those `me` lives in (already running)
                parts = target.split(".")
                for i in range(2, len(parts) + 1):
                    step = ".".join(parts[:i])
                    if step in modules and step != me and (step == target or not me.startswith(step + ".")):
                        edges.add(step)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_imports_form_no_cycle():
    graph = _graph()
    cycles = _cycles(graph)
    assert not cycles, "\n".join(" <-> ".join(c) for c in cycles)
