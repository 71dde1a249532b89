"""How the tool starts a Python child of its own: isolated from the directory it is run in and from the user's
site tweaks, so that a `numpy.py` or `tensorflow.py` lying beside a model, or in the directory one `cd`s into,
never runs. A model (or the files around it) never makes the tool run code.

`python -I` leaves the working directory (and a script's directory) off the import path and ignores PYTHON*
variables and the user's site-packages; the tool's own package is then found where it is installed (the
site-packages an installed or editable tool registers itself in), and, for a checkout reached some other way,
through the directory that holds the `tf_convert` package, added after everything else.
"""

from __future__ import annotations

import sys
from pathlib import Path

import tf_convert

# for a process the tool does not start with its own command line (a Dask worker spawned by multiprocessing):
# what -I's -P and -s are as variables (read when that interpreter starts, before any import)
ISOLATED_ENV = {"PYTHONSAFEPATH": "1", "PYTHONNOUSERSITE": "1"}

_BOOT = ("import runpy, sys; sys.path.extend({roots!r}); "
         "runpy.run_module({module!r}, run_name='__main__', alter_sys=True)")


def package_roots() -> list[str]:
    """Directories that hold the `tf_convert` package as a folder of that name (none for an editable install,
    whose finder maps the name, nor for one in site-packages, which -I keeps on the path)."""
    return [str(Path(p).resolve().parent) for p in tf_convert.__path__ if Path(p).name == "tf_convert"]


def python_module(module: str, *args: str) -> list[str]:
    """The command line running `python -m module args...` with this interpreter, isolated (module doc)."""
    return [sys.executable, "-I", "-c", _BOOT.format(roots=package_roots(), module=module), *args]
