"""Hugging Face's TF models as users hold them: transformers 4.x's TF classes (transformers 5 has none), tiny
configs, every variable random (biases, norms, batch-norm statistics too), saved as a SavedModel with a serving
signature. Run in `.venv-hf4` (`make hf4-env`: transformers 4.46 beside .venv's TF and tf_keras):

    .venv-hf4/bin/python -m tests.support.hf_tf_models OUT_DIR [NAME ...]

writes OUT_DIR/NAME/{saved_model.pb,variables/,kwargs.json}; with `--h5` first, OUT_DIR/NAME.h5/{tf_model.h5,
config.json,kwargs.json} (save_pretrained's default, the same weights). `kwargs.json` holds the config's arguments, the
same for the PyTorch class (`--into-kwargs`), its name (`pt_class`) and the signature's inputs. The test
module imports only ARCHITECTURES from here (no transformers needed for that)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

# name -> (TF class, PyTorch class, config kwargs, inputs: [(name, dtype, shape with None)])
TEXT = [("input_ids", "int32", (None, None)), ("attention_mask", "int32", (None, None)),
        ("token_type_ids", "int32", (None, None))]
IMAGE = [("pixel_values", "float32", (None, 3, None, None))]
BERT = {"vocab_size": 40, "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
        "intermediate_size": 24, "max_position_embeddings": 24, "type_vocab_size": 2}
ARCHITECTURES: dict[str, tuple[str, str, dict, list]] = {
    "bert": ("TFBertModel", "BertModel", BERT, TEXT),
    "bert_ids": ("TFBertModel", "BertModel", BERT, TEXT[:1]),
    "albert": ("TFAlbertModel", "AlbertModel", {**BERT, "embedding_size": 8}, TEXT),  # one layer, run twice
    "bart": ("TFBartModel", "BartModel",  # a scaled embedding subclass, positions from row 2, a tiled mask
             {"vocab_size": 40, "d_model": 16, "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 2,
              "decoder_attention_heads": 2, "encoder_ffn_dim": 24, "decoder_ffn_dim": 24,
              "max_position_embeddings": 24, "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2,
              "decoder_start_token_id": 2},
             [*TEXT[:2], ("decoder_input_ids", "int32", (None, None))]),
    "opt": ("TFOPTModel", "OPTModel",  # its causal mask by MatrixBandPart
            {"vocab_size": 40, "hidden_size": 16, "ffn_dim": 24, "num_hidden_layers": 2, "num_attention_heads": 2,
             "max_position_embeddings": 24, "word_embed_proj_dim": 16, "pad_token_id": 1}, TEXT[:2]),
    "mistral": ("TFMistralModel", "MistralModel",  # RMS norms (x / sqrt(...)), where(mask, 0, min), rotary
                {"vocab_size": 40, "hidden_size": 16, "intermediate_size": 24, "num_hidden_layers": 2,
                 "num_attention_heads": 2, "num_key_value_heads": 1, "max_position_embeddings": 24,
                 "sliding_window": None}, TEXT[:2]),
    "distilbert": ("TFDistilBertModel", "DistilBertModel",
                   {"vocab_size": 40, "dim": 16, "n_layers": 2, "n_heads": 2, "hidden_dim": 24,
                    "max_position_embeddings": 24}, TEXT[:2]),
    "roberta": ("TFRobertaModel", "RobertaModel", {**BERT, "max_position_embeddings": 26, "pad_token_id": 1},
                TEXT[:2]),
    "gpt2_lm": ("TFGPT2LMHeadModel", "GPT2LMHeadModel",
                {"vocab_size": 40, "n_embd": 16, "n_layer": 2, "n_head": 2, "n_positions": 24}, TEXT[:1]),
    "whisper": ("TFWhisperModel", "WhisperModel",
                {"vocab_size": 40, "num_mel_bins": 8, "d_model": 16, "encoder_layers": 1, "decoder_layers": 1,
                 "encoder_attention_heads": 2, "decoder_attention_heads": 2, "encoder_ffn_dim": 24,
                 "decoder_ffn_dim": 24, "max_source_positions": 8, "max_target_positions": 24, "pad_token_id": 1,
                 "bos_token_id": 2, "eos_token_id": 2, "decoder_start_token_id": 3},
                [("input_features", "float32", (None, 8, 16)), ("decoder_input_ids", "int32", (None, None))]),
    "vit": ("TFViTModel", "ViTModel",
            {"image_size": 32, "patch_size": 8, "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
             "intermediate_size": 24}, [("pixel_values", "float32", (None, 3, 32, 32))]),
    "deit": ("TFDeiTModel", "DeiTModel",
             {"image_size": 32, "patch_size": 8, "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
              "intermediate_size": 24}, [("pixel_values", "float32", (None, 3, 32, 32))]),
    "swin": ("TFSwinModel", "SwinModel",
             {"image_size": 32, "patch_size": 4, "embed_dim": 8, "depths": [1, 1], "num_heads": [1, 2],
              "window_size": 4}, IMAGE),
    "swin_shift": ("TFSwinModel", "SwinModel",
                   {"image_size": 32, "patch_size": 4, "embed_dim": 8, "depths": [2, 2], "num_heads": [1, 2],
                    "window_size": 2}, IMAGE),
    "regnet": ("TFRegNetModel", "RegNetModel",
               {"embedding_size": 8, "hidden_sizes": [8, 16], "depths": [1, 1], "groups_width": 8, "layer_type": "x"},
               IMAGE),
    "convnext": ("TFConvNextModel", "ConvNextModel",
                 {"depths": [1, 1], "hidden_sizes": [8, 16], "num_stages": 2}, IMAGE),
    "resnet": ("TFResNetModel", "ResNetModel",
               {"depths": [1, 1], "hidden_sizes": [16, 32], "embedding_size": 8, "layer_type": "basic"}, IMAGE),
    "mobilevit": ("TFMobileViTModel", "MobileViTModel",
                  {"image_size": 32, "patch_size": 2, "hidden_sizes": [16, 24, 32],
                   "neck_hidden_sizes": [8, 8, 16, 16, 24, 32, 40], "num_attention_heads": 2}, IMAGE),
    "segformer": ("TFSegformerModel", "SegformerModel",
                  {"num_encoder_blocks": 2, "depths": [1, 1], "sr_ratios": [2, 1], "hidden_sizes": [8, 16],
                   "patch_sizes": [7, 3], "strides": [4, 2], "num_attention_heads": [1, 2], "mlp_ratios": [2, 2],
                   "decoder_hidden_size": 16}, IMAGE),
    "wav2vec2": ("TFWav2Vec2Model", "Wav2Vec2Model",
                 {"hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 24,
                  "conv_dim": [8, 8], "conv_stride": [5, 2], "conv_kernel": [10, 3], "num_conv_pos_embeddings": 16,
                  "num_conv_pos_embedding_groups": 2}, [("input_values", "float32", (None, None))]),
}


def randomize(model, seed: int) -> None:
    """Every float variable random: normal around its own scale; variances and moving variances positive."""
    import numpy as np

    rng = np.random.default_rng(seed)
    for v in model.variables:
        shape, name = tuple(v.shape), v.name
        if not v.dtype.is_floating:  # an index table (Swin's relative_position_index) is no weight
            continue
        if "variance" in name:
            value = rng.uniform(0.5, 1.5, shape)
        elif "gamma" in name or "LayerNorm/gamma" in name or name.endswith("weight:0") and len(shape) == 1:
            value = rng.uniform(0.5, 1.5, shape)
        else:
            value = rng.normal(0.0, 0.3, shape)
        v.assign(value.astype(v.dtype.as_numpy_dtype))


def build(name: str, out: Path, seed: int = 0, spec: tuple[str, str, dict, list] | None = None) -> Path:
    """OUT/NAME: the SavedModel of ARCHITECTURES[name] (or of `spec`, the same tuple: bench/into_hf_sweep.py's)."""
    import tensorflow as tf
    import transformers

    tf_class, pt_class, kwargs, inputs = spec or ARCHITECTURES[name]
    cls = getattr(transformers, tf_class)
    config = cls.config_class(**kwargs)
    model = cls(config)
    model(model.dummy_inputs, training=False)
    randomize(model, seed)
    specs = [tf.TensorSpec(shape, getattr(tf, dtype), name=n) for n, dtype, shape in inputs]

    @tf.function(input_signature=specs)
    def serving(*args):
        result = model(**{n: a for (n, _, _), a in zip(inputs, args)}, training=False)
        return {k: v for k, v in result.items() if isinstance(v, tf.Tensor)}

    path = out / name
    tf.saved_model.save(model, str(path), signatures={"serving_default": serving})
    (path / "kwargs.json").write_text(json.dumps({"kwargs": kwargs, "pt_class": pt_class, "tf_class": tf_class,
                                                  "inputs": [n for n, _, _ in inputs]}, indent=1))
    return path


def build_h5(name: str, out: Path, seed: int = 0) -> Path:
    """What `save_pretrained` writes by default: OUT/NAME.h5/{tf_model.h5, config.json} (weights only), the same
    random weights as `build`'s SavedModel, and kwargs.json."""
    import transformers

    tf_class, pt_class, kwargs, inputs = ARCHITECTURES[name]
    cls = getattr(transformers, tf_class)
    model = cls(cls.config_class(**kwargs))
    model(model.dummy_inputs, training=False)
    randomize(model, seed)
    path = out / f"{name}.h5"
    model.save_pretrained(str(path))
    (path / "kwargs.json").write_text(json.dumps({"kwargs": kwargs, "pt_class": pt_class, "tf_class": tf_class,
                                                  "inputs": [n for n, _, _ in inputs]}, indent=1))
    return path


def main(argv: list[str]) -> None:
    h5 = argv[:1] == ["--h5"]
    argv = argv[1:] if h5 else argv
    out = Path(argv[0])
    for name in argv[1:] or list(ARCHITECTURES):
        print(name, "->", (build_h5 if h5 else build)(name, out))


if __name__ == "__main__":
    main(sys.argv[1:])
