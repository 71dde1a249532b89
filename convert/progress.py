"""Progress of one conversion: the stage it is in, tensors and bytes of weights written.

The pipeline creates one `Progress` per conversion and hands it to the emitter; writers call
`written()` per tensor. `SILENT` does nothing (the default: tests, the API, batch workers).
Issue 12 fills in the terminal display (stderr, only when it is a TTY).
"""

from __future__ import annotations


class Progress:
    """Reports nothing; subclasses draw. One instance per conversion."""

    def stage(self, name: str, total_bytes: int | None = None) -> None:
        """A new stage begins ('parse', 'emit', 'verify'); `total_bytes`: weights it will write."""

    def written(self, name: str, nbytes: int) -> None:
        """One tensor of `nbytes` bytes was written to the output."""

    def close(self) -> None:
        """The conversion ended (success or not): clear what was drawn."""


SILENT = Progress()
