"""TF's side of hf_h5's check, run alone (`python -I hf_h5_reference.py DIR TF_CLASS INPUTS.npz OUT.npz N`) in a
Python with transformers 4.x and TensorFlow: the TF class loads DIR (save_pretrained's tf_model.h5 and
config.json) and runs on each of the N input sets of INPUTS.npz ("K/name" arrays); OUT.npz gets "K/field" for every
tensor output field of the sets it ran (a set TF refuses, say another image size, is left out). Exit 3 where the
TF class is not importable here. Imports nothing of this project (it runs in another environment)."""

import sys


def main(directory: str, tf_class: str, inputs_path: str, out_path: str, count: int) -> int:
    import numpy as np

    try:
        import transformers

        cls = getattr(transformers, tf_class)  # transformers 5 has no TF classes: told before TF is imported
        import tensorflow as tf
    except (ImportError, AttributeError) as exc:
        print(f"{tf_class} is not importable here: {exc}", file=sys.stderr)
        return 3
    model = cls.from_pretrained(directory)
    inputs = np.load(inputs_path)
    results = {}
    for k in range(count):
        feed = {key.split("/", 1)[1]: inputs[key] for key in inputs.files if key.startswith(f"{k}/")}
        try:
            out = model(**{n: tf.constant(v) for n, v in feed.items()}, training=False)
        except Exception as exc:  # noqa: BLE001 - a size TF refuses (ViT's fixed image size) is left out
            print(f"set {k}: {type(exc).__name__}: {str(exc)[:200]}", file=sys.stderr)
            continue
        for field, value in out.items():
            if isinstance(value, tf.Tensor):
                results[f"{k}/{field}"] = value.numpy()
    np.savez(out_path, **results)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])))
