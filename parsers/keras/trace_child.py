"""`python -m tf_convert.parsers.keras.trace_child MODEL.keras OUT_DIR safe|unsafe`: Keras loads the
model (safe mode unless `unsafe`) and exports its call as a TF SavedModel (model.export). Run by
parsers.keras.traced in a child process, so the class's own code runs outside the converter."""

from __future__ import annotations

import os
import sys


def main(argv: list[str]) -> int:
    src, dst, mode = argv
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import keras

    model = keras.saving.load_model(src, compile=False, safe_mode=mode != "unsafe")
    model.export(dst, format="tf_saved_model", verbose=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
