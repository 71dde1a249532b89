"""The layout page (docs/layout.md), generated: one line per module, from each module's docstring.

    python -m scripts.readme_layout          # rewrite the section between the layout markers
    python -m scripts.readme_layout --check  # exit 1 if docs/layout.md's section is stale (tests run this)

A module's line is the first sentence of its docstring, so the tree cannot drift from the code: a new module
without a docstring, or docs/layout.md edited by hand, fails tests/scripts/test_readme_layout.py.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

from scripts import readme_section

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "layout.md"
BEGIN, END = "<!-- layout:begin (scripts/readme_layout.py) -->", "<!-- layout:end -->"

# (path, what it is) for the top level; packages below are walked
TOP = [
    ("cli.py", None),
    ("convert", "the ground floor: importable without TensorFlow or PyTorch; imports nothing above it"),
    ("parsers", "one package per source format, one file per op family; each returns an IR Graph"),
    ("emitters", "one package per target: its contract, one file per op family, the assembler"),
    ("app", "the application above parsers and emitters: pipeline, verify, diagnose, batch, the API"),
    ("tests", "mirrors the package: core/, parsers/, emitters/, app/, bench/, zoo/, scripts/; support/ helpers"),
]
NAME_WIDTH = 30


def first_line(path: Path) -> str:
    """The first sentence of a module's docstring, on one line ('' when it has none)."""
    doc = ast.get_docstring(ast.parse(path.read_text()))
    if not doc:
        return ""
    paragraph = " ".join(line.strip() for line in doc.strip().split("\n\n")[0].splitlines())
    end = paragraph.find(". ")
    return paragraph if end < 0 else paragraph[: end + 1]


def _entries(folder: Path, depth: int) -> list[tuple[str, str]]:
    rows = []
    for path in sorted(folder.iterdir()):
        if path.name.startswith((".", "_")) and path.name != "__init__.py" or path.name == "__pycache__":
            continue
        if path.is_dir() and (path / "__init__.py").exists():
            rows.append(("  " * depth + path.name + "/", first_line(path / "__init__.py")))
            rows.extend(_entries(path, depth + 1))
        elif path.suffix == ".py" and path.name != "__init__.py":
            rows.append(("  " * depth + path.name, first_line(path)))
    return rows


def layout() -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    for name, what in TOP:
        path = ROOT / name
        if path.is_file():
            rows.append((name, first_line(path)))
        elif name == "tests":
            rows.append((name + "/", what))
        else:
            rows.append((name + "/", what))
            rows.extend(_entries(path, 1))
    return rows


LINE_WIDTH = 120


def clip(line: str, width: int = LINE_WIDTH) -> str:
    """`line` cut at the last word that fits in `width` (with an ellipsis): the tree is a map, the
    docstring the full story."""
    if len(line) <= width:
        return line
    cut = line[: width - 1].rsplit(" ", 1)[0].rstrip(",;:(")
    return cut + "…"


def render() -> str:
    lines = ["```"]
    for name, doc in layout():
        line = f"{name:<{NAME_WIDTH}}{doc}" if len(name) < NAME_WIDTH else f"{name}  {doc}"
        lines.append(clip(line.rstrip()))
    lines.append("```")
    return "\n".join(lines)


def missing_docstrings() -> list[str]:
    return [name.strip() for name, doc in layout() if not doc]


def updated(text: str) -> str:
    return readme_section.replace(text, BEGIN, END, render())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the layout section is stale")
    args = parser.parse_args(argv)
    text = PAGE.read_text()
    return readme_section.write_or_check(PAGE, text, updated(text), args.check, "layout section",
                                         "python -m scripts.readme_layout")


if __name__ == "__main__":
    sys.exit(main())
