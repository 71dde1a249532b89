"""scripts/readme_layout.py: docs/layout.md's section is the package tree, one line per module, current."""

from __future__ import annotations

from scripts import readme_layout


def test_every_module_says_what_it_is():
    assert readme_layout.missing_docstrings() == []


def test_each_line_is_one_short_line_cut_at_a_word():
    assert all(len(line) <= readme_layout.LINE_WIDTH for line in readme_layout.render().splitlines())
    assert readme_layout.clip("a " * 80, 20) == "a a a a a a a a a…"


def test_readme_layout_section_is_current():
    text = readme_layout.PAGE.read_text()
    assert readme_layout.updated(text) == text, "run `python -m scripts.readme_layout`"
