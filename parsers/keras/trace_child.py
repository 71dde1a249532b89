"""`python -m tf_convert.parsers.keras.trace_child MODEL OUT_DIR safe|unsafe`: Keras loads the model (safe mode
unless `unsafe`) and exports its call as a TF SavedModel (model.export). Run by parsers.keras.traced in a child
process, so the class's own code runs outside the converter. A `.h5` that Keras 2 wrote is loaded by tf_keras (the
Keras that wrote it), whose `.h5` reader has no safe mode of its own: Keras's safe-mode scope is held around it."""

from __future__ import annotations

import os
import sys


def main(argv: list[str]) -> int:
    src, dst, mode = argv
    safe = mode != "unsafe"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if _written_by_keras_2(src):
        import tf_keras
        from tf_keras.src.saving.serialization_lib import SafeModeScope

        with SafeModeScope(safe):
            model = tf_keras.models.load_model(src, compile=False, safe_mode=safe)
        model.export(dst)
        return 0
    import keras

    model = keras.saving.load_model(src, compile=False, safe_mode=safe)
    model.export(dst, format="tf_saved_model", verbose=False)
    return 0


def _written_by_keras_2(src: str) -> bool:
    from tf_convert.parsers.keras.source import KerasSource

    with KerasSource(src) as source:
        return source.kind == "keras_h5" and source.keras_version.startswith(("1.", "2."))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
