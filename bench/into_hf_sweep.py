"""`make into-hf-sweep`: every base TF class of transformers 4.46 whose PyTorch class transformers 5 still has,
`--into` its PyTorch class. Each is built in `.venv-hf4` as tests/support/hf_tf_models.py builds its fixtures
(a tiny config, every variable random, a SavedModel with a serving signature), converted with
`convert tf2torch SAVED --into transformers:<PT class> --into-kwargs <config>` (a process of its own, with a
timeout), and, when that succeeds, the PyTorch class loaded with `state_dict.pt` (strict) is run against TF's
signature at two sizes (sequence lengths 7 and 11 with the second row padded, images at two sizes).

    python -m bench.into_hf_sweep [--cache DIR] [--only NAME,...] [--table FILE]

prints (and writes to `--table`) one row per architecture: exit code, max relative error of every output field
against TF, conversion seconds, the first line of a refusal. The SavedModels are cached under `--cache`."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HF4 = ROOT / ".venv-hf4" / "bin" / "python"
CONVERT = [sys.executable, "-m", "tf_convert.cli"]

# inputs: (name, dtype, shape with None); the first size's shapes come from `size`, the second from `_other`
IDS = ("input_ids", "int32", (None, None))
MASK = ("attention_mask", "int32", (None, None))
TYPES = ("token_type_ids", "int32", (None, None))
DECODER = ("decoder_input_ids", "int32", (None, None))
BBOX = ("bbox", "int32", (None, None, 4))
TEXT = [IDS, MASK, TYPES]
SEQ2SEQ = [IDS, MASK, DECODER]


def image(size: int = 32, fixed: bool = False, channels: int = 3) -> list:
    side = size if fixed else None
    return [("pixel_values", "float32", (None, channels, side, side))]


BERT = {"vocab_size": 40, "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
        "intermediate_size": 24, "max_position_embeddings": 24, "type_vocab_size": 2}
ROBERTA = {**BERT, "max_position_embeddings": 26, "pad_token_id": 1, "type_vocab_size": 1}
BART = {"vocab_size": 40, "d_model": 16, "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 2,
        "decoder_attention_heads": 2, "encoder_ffn_dim": 24, "decoder_ffn_dim": 24, "max_position_embeddings": 24,
        "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2, "decoder_start_token_id": 2}
T5 = {"vocab_size": 40, "d_model": 16, "d_kv": 8, "d_ff": 24, "num_layers": 2, "num_decoder_layers": 2,
      "num_heads": 2, "relative_attention_num_buckets": 8, "relative_attention_max_distance": 16,
      "decoder_start_token_id": 0, "pad_token_id": 0}
VIT = {"image_size": 32, "patch_size": 8, "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
       "intermediate_size": 24}
WAV2VEC2 = {"hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 24,
            "conv_dim": [8, 8], "conv_stride": [5, 2], "conv_kernel": [10, 3], "num_conv_pos_embeddings": 16,
            "num_conv_pos_embedding_groups": 2}
CLIP_TEXT = {"vocab_size": 40, "hidden_size": 16, "intermediate_size": 24, "num_hidden_layers": 2,
             "num_attention_heads": 2, "max_position_embeddings": 24, "projection_dim": 8}
CLIP_VISION = {"image_size": 32, "patch_size": 8, "hidden_size": 16, "intermediate_size": 24,
               "num_hidden_layers": 2, "num_attention_heads": 2, "projection_dim": 8}

# name -> (TF class, PyTorch class, config kwargs, inputs)
SWEEP: dict[str, tuple[str, str, dict, list]] = {
    "albert": ("TFAlbertModel", "AlbertModel", {**BERT, "embedding_size": 8}, TEXT),
    "camembert": ("TFCamembertModel", "CamembertModel", ROBERTA, TEXT[:2]),
    "xlm_roberta": ("TFXLMRobertaModel", "XLMRobertaModel", ROBERTA, TEXT[:2]),
    "roberta_prelayernorm": ("TFRobertaPreLayerNormModel", "RobertaPreLayerNormModel", ROBERTA, TEXT[:2]),
    "electra": ("TFElectraModel", "ElectraModel", {**BERT, "embedding_size": 8}, TEXT),
    "convbert": ("TFConvBertModel", "ConvBertModel", {**BERT, "embedding_size": 16, "head_ratio": 2,
                                                       "conv_kernel_size": 3}, TEXT),
    "mpnet": ("TFMPNetModel", "MPNetModel", ROBERTA, TEXT[:2]),  # 32 buckets: PyTorch's MPNet ignores the config's
    "mobilebert": ("TFMobileBertModel", "MobileBertModel",
                   {**BERT, "embedding_size": 8, "intra_bottleneck_size": 8, "true_hidden_size": 8,
                    "num_feedforward_networks": 2}, TEXT),
    "rembert": ("TFRemBertModel", "RemBertModel", {**BERT, "input_embedding_size": 8, "output_embedding_size": 8},
                TEXT),
    "roformer": ("TFRoFormerModel", "RoFormerModel", {**BERT, "embedding_size": 16}, TEXT),
    "layoutlm": ("TFLayoutLMModel", "LayoutLMModel", {**BERT, "max_2d_position_embeddings": 64},
                 [IDS, BBOX, MASK, TYPES]),
    "deberta": ("TFDebertaModel", "DebertaModel",
                {**BERT, "relative_attention": True, "max_relative_positions": 16, "pos_att_type": ["c2p", "p2c"],
                 "type_vocab_size": 0}, TEXT[:2]),
    "deberta_v2": ("TFDebertaV2Model", "DebertaV2Model",
                   {**BERT, "relative_attention": True, "position_buckets": 8, "max_relative_positions": 16,
                    "pos_att_type": ["c2p", "p2c"], "norm_rel_ebd": "layer_norm", "share_att_key": True,
                    "type_vocab_size": 0, "position_biased_input": False}, TEXT[:2]),
    "esm": ("TFEsmModel", "EsmModel", {**BERT, "pad_token_id": 1, "mask_token_id": 3,
                                       "position_embedding_type": "absolute", "max_position_embeddings": 26},
            TEXT[:2]),
    "flaubert": ("TFFlaubertModel", "FlaubertModel",
                 {"vocab_size": 40, "emb_dim": 16, "n_layers": 2, "n_heads": 2, "max_position_embeddings": 24},
                 TEXT[:2]),
    "xlm": ("TFXLMModel", "XLMModel",
            {"vocab_size": 40, "emb_dim": 16, "n_layers": 2, "n_heads": 2, "max_position_embeddings": 24},
            TEXT[:2]),
    "funnel": ("TFFunnelModel", "FunnelModel",
               {"vocab_size": 40, "block_sizes": [1, 1], "num_decoder_layers": 1, "d_model": 16, "n_head": 2,
                "d_head": 8, "d_inner": 24}, TEXT),
    "funnel_base": ("TFFunnelBaseModel", "FunnelBaseModel",
                    {"vocab_size": 40, "block_sizes": [1, 1], "d_model": 16, "n_head": 2, "d_head": 8,
                     "d_inner": 24}, TEXT),
    "longformer": ("TFLongformerModel", "LongformerModel", {**ROBERTA, "attention_window": [4, 4]}, TEXT[:2]),
    "tapas": ("TFTapasModel", "TapasModel", {**BERT, "type_vocab_sizes": [3, 4, 4, 2, 4, 4, 4]}, TEXT[:2]),
    "gpt2": ("TFGPT2Model", "GPT2Model", {"vocab_size": 40, "n_embd": 16, "n_layer": 2, "n_head": 2,
                                          "n_positions": 24}, TEXT[:2]),
    "openai_gpt": ("TFOpenAIGPTModel", "OpenAIGPTModel", {"vocab_size": 40, "n_embd": 16, "n_layer": 2, "n_head": 2,
                                                          "n_positions": 24}, TEXT[:1]),
    "ctrl": ("TFCTRLModel", "CTRLModel", {"vocab_size": 40, "n_embd": 16, "n_layer": 2, "n_head": 2, "dff": 24,
                                          "n_positions": 24}, TEXT[:1]),
    "gptj": ("TFGPTJModel", "GPTJModel", {"vocab_size": 40, "n_embd": 16, "n_layer": 2, "n_head": 2, "rotary_dim": 4,
                                          "n_positions": 24}, TEXT[:1]),
    "opt": ("TFOPTModel", "OPTModel", {"vocab_size": 40, "hidden_size": 16, "ffn_dim": 24, "num_hidden_layers": 2,
                                       "num_attention_heads": 2, "max_position_embeddings": 24,
                                       "word_embed_proj_dim": 16, "pad_token_id": 1}, TEXT[:2]),
    "xglm": ("TFXGLMModel", "XGLMModel", {"vocab_size": 40, "d_model": 16, "num_layers": 2, "attention_heads": 2,
                                          "ffn_dim": 24, "max_position_embeddings": 24, "pad_token_id": 1},
             TEXT[:2]),
    "mistral": ("TFMistralModel", "MistralModel",
                {"vocab_size": 40, "hidden_size": 16, "intermediate_size": 24, "num_hidden_layers": 2,
                 "num_attention_heads": 2, "num_key_value_heads": 1, "max_position_embeddings": 24,
                 "sliding_window": None}, TEXT[:2]),
    "xlnet": ("TFXLNetModel", "XLNetModel", {"vocab_size": 40, "d_model": 16, "n_layer": 2, "n_head": 2,
                                             "d_inner": 24}, TEXT[:2]),
    "bart": ("TFBartModel", "BartModel", BART, SEQ2SEQ),
    "mbart": ("TFMBartModel", "MBartModel", BART, SEQ2SEQ),
    "marian": ("TFMarianModel", "MarianModel", {**BART, "decoder_start_token_id": 1}, SEQ2SEQ),
    "pegasus": ("TFPegasusModel", "PegasusModel", {**BART, "decoder_start_token_id": 1}, SEQ2SEQ),
    "blenderbot": ("TFBlenderbotModel", "BlenderbotModel", BART, SEQ2SEQ),
    "blenderbot_small": ("TFBlenderbotSmallModel", "BlenderbotSmallModel", BART, SEQ2SEQ),
    "led": ("TFLEDModel", "LEDModel", {**BART, "max_encoder_position_embeddings": 24,
                                       "max_decoder_position_embeddings": 24, "attention_window": [4, 4]},
            SEQ2SEQ),
    "t5": ("TFT5Model", "T5Model", T5, SEQ2SEQ),
    "mt5": ("TFMT5Model", "MT5Model", T5, SEQ2SEQ),
    "t5_encoder": ("TFT5EncoderModel", "T5EncoderModel", T5, TEXT[:2]),
    "speech2text": ("TFSpeech2TextModel", "Speech2TextModel",
                    {**BART, "input_feat_per_channel": 8, "input_channels": 1, "conv_channels": 16,
                     "num_conv_layers": 2, "conv_kernel_sizes": [5, 5], "max_source_positions": 24,
                     "max_target_positions": 24},
                    [("input_features", "float32", (None, None, 8)), MASK, DECODER]),
    "clip_text": ("TFCLIPTextModel", "CLIPTextModel", CLIP_TEXT, TEXT[:2]),
    "clip_vision": ("TFCLIPVisionModel", "CLIPVisionModel", CLIP_VISION, image(fixed=True)),
    "blip_vision": ("TFBlipVisionModel", "BlipVisionModel", CLIP_VISION, image(fixed=True)),
    "blip_text": ("TFBlipTextModel", "BlipTextModel", {**BERT, "max_position_embeddings": 24,
                                                       "encoder_hidden_size": 16}, TEXT[:2]),
    "groupvit_text": ("TFGroupViTTextModel", "GroupViTTextModel", CLIP_TEXT, TEXT[:2]),
    "data2vec_vision": ("TFData2VecVisionModel", "Data2VecVisionModel",
                        {**VIT, "use_relative_position_bias": True, "use_mean_pooling": True}, image(fixed=True)),
    "vit_mae": ("TFViTMAEModel", "ViTMAEModel", {**VIT, "mask_ratio": 0.0}, image(fixed=True)),
    "cvt": ("TFCvtModel", "CvtModel",
            {"embed_dim": [8, 16], "num_heads": [1, 2], "depth": [1, 1], "patch_sizes": [7, 3],
             "patch_stride": [4, 2], "patch_padding": [2, 1], "mlp_ratio": [2.0, 2.0],
             "attention_drop_rate": [0.0, 0.0], "drop_rate": [0.0, 0.0], "drop_path_rate": [0.0, 0.0],
             "qkv_bias": [True, True],
             "cls_token": [False, True], "qkv_projection_method": ["dw_bn", "dw_bn"], "kernel_qkv": [3, 3],
             "padding_kv": [1, 1], "stride_kv": [2, 2], "padding_q": [1, 1], "stride_q": [1, 1]}, image()),
    "convnextv2": ("TFConvNextV2Model", "ConvNextV2Model", {"depths": [1, 1], "hidden_sizes": [8, 16],
                                                             "num_stages": 2}, image()),
    "swiftformer": ("TFSwiftFormerModel", "SwiftFormerModel", {"depths": [1, 1], "embed_dims": [8, 16],
                                                                "downsamples": [True, True]}, image()),
    "hubert": ("TFHubertModel", "HubertModel", WAV2VEC2, [("input_values", "float32", (None, None))]),
}
# transformers 4.46 TF base classes left out, and why
LEFT_OUT = {
    "TFEfficientFormerModel": "transformers 5 has no EfficientFormerModel",
    "TFTransfoXLModel": "transformers 5 has no TransfoXLModel",
    "TFIdeficsModel": "a multimodal LLM with a vision tower and perceiver: no tiny config builds in TF 4.46",
    "TFRagModel / TFEncoderDecoderModel / TFVisionEncoderDecoderModel / TFVisionTextDualEncoderModel":
        "compositions of other classes (their parts are rows here)",
}
FIRST = {"text": 7, "image": 32, "audio": 400, "frames": 16}


def shapes(inputs: list, second: bool) -> dict[str, tuple[int, ...]]:
    """Concrete shapes of the two sizes: sequences 7 and 11, images 32 and 40 (fixed ones: batch 2 and 3),
    audio 400 and 560 samples."""
    out = {}
    for name, _, shape in inputs:
        if name == "pixel_values":
            side = shape[2] or FIRST["image"]
            fixed = shape[2] is not None
            out[name] = (3 if second and fixed else 2, shape[1], side + (8 if second and not fixed else 0),
                         side + (8 if second and not fixed else 0))
        elif name == "input_values":
            out[name] = (2, 560 if second else 400)
        elif name == "input_features":
            out[name] = (2, 20 if second else FIRST["frames"], *(d for d in shape[2:]))
        else:
            length = 11 if second else FIRST["text"]
            out[name] = (2, length, *shape[2:])
    return out


def feeds(shape_map: dict[str, tuple[int, ...]], vocab: int, seed: int) -> dict:
    import numpy as np

    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in shape_map.items():
        if name in ("pixel_values", "input_features", "input_values"):
            out[name] = rng.standard_normal(shape).astype(np.float32)
        elif name == "attention_mask":  # padding at the end of the second row
            mask = np.ones(shape, np.int32)
            mask[1, shape[1] - 2:] = 0
            out[name] = mask
        elif name == "bbox":
            corners = np.sort(rng.integers(0, 60, (*shape[:2], 2, 2)), axis=2)
            out[name] = corners.transpose(0, 1, 3, 2).reshape(shape).astype(np.int32)
        else:
            out[name] = rng.integers(0, 2 if name == "token_type_ids" else vocab, shape).astype(np.int32)
    return out


def build(names: list[str], cache: Path) -> None:
    """In .venv-hf4: each SavedModel, as hf_tf_models.build writes them; a failure is written beside."""
    from tests.support import hf_tf_models

    for name in names:
        try:
            hf_tf_models.build(name, cache, spec=SWEEP[name])
            print(name, "built", flush=True)
        except Exception as exc:  # noqa: BLE001 -- the table reports it
            (cache / f"{name}.build-error").write_text(f"{type(exc).__name__}: {exc}".splitlines()[0])
            print(name, "build failed:", exc, flush=True)


def errors_vs_tf(path: Path, meta: dict, inputs: list, out: Path) -> list[float]:
    """max |torch - TF| / max |TF| over every output field TF's signature returns, at both sizes."""
    import numpy as np
    import tensorflow as tf
    import torch
    import transformers

    cls = getattr(transformers, meta["pt_class"])
    config = cls.config_class(**meta["kwargs"])
    config._attn_implementation = "eager"
    model = cls(config).eval()
    model.load_state_dict(torch.load(out / "state_dict.pt"), strict=True)
    signature = tf.saved_model.load(str(path)).signatures["serving_default"]
    result = []
    for k in range(2):
        feed = feeds(shapes(inputs, k == 1), meta["kwargs"].get("vocab_size", 2), k)
        want = {n: v.numpy() for n, v in signature(**{n: tf.constant(x) for n, x in feed.items()}).items()}
        with torch.no_grad():
            got = model(**{n: torch.from_numpy(x).long() if x.dtype == np.int32 else torch.from_numpy(x)
                           for n, x in feed.items()})
        worst = 0.0
        for name, expected in want.items():
            value = getattr(got, name, None)
            if value is None or tuple(value.shape) != expected.shape:
                raise ValueError(f"output {name}: {None if value is None else tuple(value.shape)} vs TF "
                                 f"{expected.shape}")
            worst = max(worst, float(np.abs(value.numpy() - expected).max() / max(np.abs(expected).max(), 1e-30)))
        result.append(worst)
    return result


def sweep_one(name: str, cache: Path, timeout: float) -> dict:
    tf_class, pt_class, kwargs, inputs = SWEEP[name]
    row = {"arch": name, "tf_class": tf_class, "pt_class": pt_class}
    path = cache / name
    if (cache / f"{name}.build-error").is_file():
        return {**row, "exit": "build", "message": (cache / f"{name}.build-error").read_text()}
    out = cache / "out" / name
    command = [*CONVERT, "tf2torch", str(path), "--into", f"transformers:{pt_class}", "--into-kwargs",
               json.dumps(kwargs), "-o", str(out), "--force", "-q", "--timeout", str(timeout)]
    for n, shape in shapes(inputs, False).items():
        command += ["--input-shape", f"{n}:{','.join(map(str, shape))}"]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    row.update(exit=done.returncode, seconds=round(time.perf_counter() - started, 1))
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("convert: error") or "Traceback" in ln]
    row["message"] = "" if done.returncode == 0 else (
        lines[0] if lines else done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "")
    if done.returncode == 0:
        try:
            errors = errors_vs_tf(path, json.loads((path / "kwargs.json").read_text()), inputs, out)
            row["max_rel"] = max(errors)
            row["errors"] = errors
        except Exception as exc:  # noqa: BLE001 -- the table reports it
            row["message"] = f"compare: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return row


def table(rows: list[dict]) -> str:
    lines = ["| arch | TF class | exit | max rel (2 sizes) | seconds | first line of refusal |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        err = f"{r['max_rel']:.2g}" if "max_rel" in r else "-"
        lines.append(f"| {r['arch']} | {r['tf_class']} | {r['exit']} | {err} | {r.get('seconds', '-')} | "
                     f"{r.get('message', '')[:300].replace('|', '/')} |")
    exact = sum(1 for r in rows if r.get("max_rel", 1) < 1e-5)
    lines.append(f"\n{exact} of {len(rows)} exact (< 1e-5 at both sizes).")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=ROOT / ".cache" / "into-hf-sweep")
    parser.add_argument("--only", default="")
    parser.add_argument("--table", type=Path)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--build", action="store_true", help="(in .venv-hf4) only build the SavedModels")
    args = parser.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(SWEEP)
    args.cache.mkdir(parents=True, exist_ok=True)
    if args.build:
        build(names, args.cache)
        return
    missing = [n for n in names if not (args.cache / n / "kwargs.json").is_file()
               and not (args.cache / f"{n}.build-error").is_file()]
    if missing:
        subprocess.run([str(HF4), "-m", "bench.into_hf_sweep", "--build", "--cache", str(args.cache),
                        "--only", ",".join(missing)], cwd=ROOT, check=True,
                       env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    rows = []
    for name in names:
        rows.append(sweep_one(name, args.cache, args.timeout))
        r = rows[-1]
        print(f"{name}: exit {r['exit']} max_rel {r.get('max_rel', '-')} {r.get('seconds', '-')} s "
              f"{r.get('message', '')[:200]}", flush=True)
    text = table(rows)
    print(text)
    if args.table:
        args.table.write_text(text + "\n")
    (args.cache / "rows.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
