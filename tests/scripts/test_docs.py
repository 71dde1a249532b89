"""The README is a newcomer's page: short, and every link in it and in docs/ resolves."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_the_readme_fits_a_newcomers_reading():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 300


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_resolves(page):
    broken = []
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target):
            continue  # a URL
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path) if path else page
        if not resolved.exists():
            broken.append(target)
        elif anchor and resolved.suffix == ".md":
            headings = {_anchor(h) for h in re.findall(r"^#+ (.+)$", resolved.read_text(), flags=re.M)}
            if anchor not in headings:
                broken.append(target)
    assert not broken, f"{page.name}: links that resolve to nothing: {broken}"


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
