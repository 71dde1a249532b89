"""What each step needs beyond the base install, and the extra of this distribution that adds it.

Reading every source format (TF graphs and checkpoints, Keras files) needs only the base install.
Writing a target needs its writer's library (tf2onnx: onnx; tf2torch writes model.pt itself); `--verify`,
`convert verify`, `--layers` and `--report` run the source in TensorFlow (Keras sources in Keras on
TensorFlow) and the converted model in its runtime. `check` runs before anything is read or written
(the runtime of a check whose reference runs in a child: once the child has its question, after the
parse, so that its import runs beside TF's run), so a missing framework is one line (exit 2), never a
traceback halfway through a conversion.
The extras named here are those of pyproject.toml.
"""

from __future__ import annotations

import importlib
import itertools
from dataclasses import dataclass

from tf_convert.app import interrupts
from tf_convert.convert.errors import MissingDependency
from tf_convert.parsers import KERAS_KINDS, TFLITE_KINDS

DIST = "tf-convert"  # pyproject.toml [project] name


@dataclass(frozen=True)
class Need:
    module: str  # what gets imported
    extra: str  # pip install 'tf-convert[extra]'
    why: str  # the start of the message: what needs it
    instead: tuple[str, ...] = ()  # modules that serve as well when `module` does not import


REFERENCE = Need("tensorflow", "verify", "verification runs TensorFlow on the source as the reference")
KERAS_REFERENCE = Need("keras", "verify", "verification runs the Keras model itself (Keras on TensorFlow)")
# LiteRT's first: where it imports, the check of a .tflite never imports TensorFlow (seconds, hundreds of MB)
TFLITE_REFERENCE = Need("ai_edge_litert.interpreter", "verify", "verification runs the .tflite file in TFLite's "
                        "interpreter (ai-edge-litert's, or TensorFlow's tf.lite)", instead=("tensorflow",))

WRITE = {  # tf2torch, tf2caffe and tf2mxnet write with the base install (numpy, protobuf)
    "onnx": (Need("onnx", "onnx", "tf2onnx builds model.onnx with the onnx package"),),
}
RUN = {  # the runtime a check loads the converted model in (MXNet's lives in its own environment)
    "torch": (Need("torch", "torch", "verifying tf2torch runs the model in PyTorch"),),
    "onnx": (Need("onnxruntime", "onnx", "verifying tf2onnx runs the model in onnxruntime"),),
    "caffe": (Need("cv2", "caffe", "verifying tf2caffe runs the model in OpenCV DNN"),),
}


def missing(need: Need) -> str | None:
    """None when `need.module` (or one of `need.instead`) imports, else the one-line reason it does not."""
    detail = _import_failure(need.module)
    if detail is None or any(_import_failure(m) is None for m in need.instead):
        return None
    names = " nor ".join((need.module, *need.instead))
    return (f"{need.why}, but {'neither ' if need.instead else ''}{names} can be imported ({detail}): "
            f"pip install '{DIST}[{need.extra}]'")


def _import_failure(module: str) -> str | None:
    """None when `module` imports, else the first line of why not."""
    try:
        with interrupts.deferred():  # a signal during a framework's import ends the run after it
            importlib.import_module(module)
    except Exception as exc:  # noqa: BLE001 - ImportError, or a broken install failing at import
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return None


def needs(target: str, *, verify: bool = False, kind: str | None = None, write: bool = True,
          reference: bool = True) -> list[Need]:
    """What converting to `target` ('torch', 'onnx', ..., 'ir') needs (`write=False`: only checking a
    model written earlier); with `verify`, also what the check needs for a source of `kind` (None: a
    TF graph), its reference run's frameworks left out with `reference=False` (a reference child checks
    them itself: reference_needs). One entry per module, the first reason for it."""
    wanted = list(WRITE.get(target, ())) if write else []
    if verify:
        wanted += [*(reference_needs(kind) if reference else []), *RUN.get(target, ())]
    return [n for i, n in enumerate(wanted) if n.module not in {w.module for w in wanted[:i]}]


def reference_needs(kind: str | None = None) -> list[Need]:
    """What TensorFlow's reference run of a source of `kind` imports."""

    if kind in TFLITE_KINDS:
        return [TFLITE_REFERENCE]
    return [REFERENCE, *([KERAS_REFERENCE] if kind in KERAS_KINDS else [])]


def check(target: str, *, verify: bool = False, kind: str | None = None, write: bool = True,
          reference: bool = True) -> None:
    """Raise MissingDependency (exit 2) for the first need (see `needs`) that does not import.
    `reference=False`: TensorFlow is left to the reference child (importing it here would cost seconds
    and its memory beside the child's)."""
    for need in needs(target, verify=verify, kind=kind, write=write, reference=reference):
        reason = missing(need)
        if reason is not None:
            raise MissingDependency(reason)


def for_failed_import(exc: ImportError) -> MissingDependency | None:
    """The same one line for a framework found missing on a path `check` does not cover (the CLI's
    last resort, instead of calling it a bug); None when `exc` is not about one of ours."""
    root = (exc.name or "").split(".")[0]
    needs_ = itertools.chain((REFERENCE, KERAS_REFERENCE), *WRITE.values(), *RUN.values())
    need = next((n for n in needs_ if root and n.module.split(".")[0] == root), None)
    if need is None:
        return None
    return MissingDependency(f"this needs {need.module}, which is not installed ({exc}): "
                             f"pip install '{DIST}[{need.extra}]'")


def check_reference(kind: str | None = None) -> None:
    """MissingDependency (exit 2) when the reference run's frameworks do not import (the reference child's
    own check: the parent passed reference=False to `check`)."""
    for need in reference_needs(kind):
        reason = missing(need)
        if reason is not None:
            raise MissingDependency(reason)
