"""OUT/pads.py: the fixes `apply(model)` makes, filled into pads_template.txt (a plain-PyTorch file that
imports nothing of this project)."""

from __future__ import annotations

from pathlib import Path

from .semantics import Finding

TEMPLATE = Path(__file__).with_name("pads_template.txt")  # pads.py with {fields} (not importable as is)


def fixable(findings: list[Finding]) -> tuple[list[Finding], list[Finding]]:
    """(what apply() fixes, what the user has to change)."""
    return [f for f in findings if f.fix is not None], [f for f in findings if f.fix is None]


def source(findings: list[Finding], model: str, factory: str) -> str:
    """The text of pads.py for the fixable `findings`."""
    pads, attributes, activations, crops = {}, {}, {}, {}
    for f in findings:
        fix = f.fix or {}
        if fix.get("op") in ("conv", "max_pool", "avg_pool"):
            pads[fix["path"]] = {"same": True} if fix.get("same") else {"pads": list(fix["pads"])}
        elif fix.get("op") == "conv_transpose":
            crops[fix["path"]] = [tuple(c) for c in fix["crop"]]
        elif fix.get("op") == "attribute":
            attributes[fix["path"]] = (fix["name"], fix["value"])
        elif fix.get("op") == "module":
            activations[fix["path"]] = (fix["class"], dict(fix["kwargs"]))
    return TEMPLATE.read_text().format(model=model, factory=factory, pads=fmt(pads), attributes=fmt(attributes),
                                       activations=fmt(activations), crops=fmt(crops))


def fmt(table: dict) -> str:
    """A dict literal, one entry a line."""
    if not table:
        return "{}"
    return "{\n" + "".join(f"    {key!r}: {value!r},\n" for key, value in table.items()) + "}"


def write(findings: list[Finding], out: Path, model: str, factory: str) -> Path:
    path = Path(out) / "pads.py"
    path.write_text(source(findings, model, factory))
    return path
