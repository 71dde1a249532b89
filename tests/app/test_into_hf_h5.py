"""`--into transformers:NAME` from save_pretrained's `tf_model.h5` (weights only, beside config.json): the names and
layouts (table-driven), a file written here from a small PyTorch model's weights under TF's names and read back
exactly, and the refusals. Against transformers 4.x's TF classes (BERT, ViT, GPT-2, ResNet at two sizes):
tests/app/test_into_hf_tf.py, `make test-into-hf`."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.app.test_into import run_cli

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
h5py = pytest.importorskip("h5py")

BERT = {"vocab_size": 40, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 24,
        "max_position_embeddings": 24, "type_vocab_size": 2}


@pytest.mark.parametrize("tf_name, pt_name", [
    ("tf_bert_model/bert/encoder/layer_._0/attention/self/query/kernel:0",
     "bert.encoder.layer.0.attention.self.query.weight"),
    ("tf_bert_model/bert/embeddings/LayerNorm/gamma:0", "bert.embeddings.LayerNorm.weight"),
    ("tf_bert_model/bert/embeddings/LayerNorm/beta:0", "bert.embeddings.LayerNorm.bias"),
    ("tfgpt2lm_head_model/transformer/wte/embeddings:0", "transformer.wte.weight"),
    ("tf_res_net_model/resnet/embedder/embedder/normalization/moving_mean:0",
     "resnet.embedder.embedder.normalization.running_mean"),
    ("tf_res_net_model/resnet/embedder/embedder/normalization/moving_variance:0",
     "resnet.embedder.embedder.normalization.running_var"),
    ("tf_wav2_vec2_model/wav2vec2/encoder/pos_conv_embed/conv/weight_g:0",
     "wav2vec2.encoder.pos_conv_embed.conv.parametrizations.weight.original0"),
])
def test_tf_weight_names_become_pytorch_keys(tf_name, pt_name):
    from tf_convert.app.into_module import hf_h5

    assert hf_h5.pytorch_name(tf_name) == pt_name


@pytest.mark.parametrize("name, shape, pt_shape, expect", [
    ("a/conv/kernel:0", (3, 3, 2, 5), (5, 2, 3, 3), lambda v: v.transpose(3, 2, 0, 1)),
    ("a/conv1d/kernel:0", (3, 2, 5), (5, 2, 3), lambda v: v.transpose(2, 1, 0)),
    ("a/dense/kernel:0", (4, 6), (6, 4), lambda v: v.T),
    ("a/c_attn/weight:0", (16, 48), (16, 48), lambda v: v),  # GPT-2's Conv1D keeps (in, out)
    ("a/c_attn/bias:0", (1, 48), (48,), lambda v: v.reshape(48)),
    ("a/cls_token:0", (1, 1, 16), (1, 1, 16), lambda v: v),
    ("a/conv/weight_v:0", (16, 8, 5), (16, 8, 5), lambda v: v),  # weight norm: TF's layer keeps v (out, in, k)
    ("a/conv/weight_g:0", (5, 1, 1), (1, 1, 5), lambda v: v.reshape(1, 1, 5)),
])
def test_tf_values_in_pytorch_layouts(name, shape, pt_shape, expect):
    from tf_convert.app.into_module import hf_h5

    value = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    got, _ = hf_h5.to_pytorch(name, value, pt_shape)
    np.testing.assert_array_equal(got, expect(value))


def test_a_shape_the_config_does_not_build_is_refused():
    from tf_convert.app.into_module import hf_h5
    from tf_convert.app.into_module.mismatch import ArchitectureMismatch

    with pytest.raises(ArchitectureMismatch, match="'a/dense/kernel:0' has shape"):
        hf_h5.to_pytorch("a/dense/kernel:0", np.zeros((4, 6), np.float32), (6, 5))


def _tf_name(key: str, value: np.ndarray) -> tuple[str, np.ndarray]:
    """A BertModel key as TFBertModel names it, and the value as TF holds it."""
    path, _, last = key.rpartition(".")
    path = path.replace(".", "/").replace("encoder/layer/", "encoder/layer_._")
    if "LayerNorm" in path:
        last = {"weight": "gamma", "bias": "beta"}[last]
    elif path.endswith("_embeddings") and path != "embeddings.word_embeddings":
        last = "embeddings"
    elif last == "weight" and value.ndim == 2 and "word_embeddings" not in path:
        last, value = "kernel", value.T
    return f"tf_bert_model/bert/{path}/{last}:0", value


def _write_h5(directory, weights: dict[str, np.ndarray], config: dict) -> None:
    with h5py.File(directory / "tf_model.h5", "w") as f:
        f.attrs["layer_names"] = [b"bert"]
        group = f.create_group("bert")
        group.attrs["weight_names"] = [n.encode() for n in weights]
        for name, value in weights.items():
            group.create_dataset(name, data=value)
    (directory / "config.json").write_text(json.dumps({"architectures": ["BertModel"], "model_type": "bert",
                                                       **config}))


@pytest.fixture
def bert_h5(tmp_path):
    """tf_model.h5 as TFBertModel's save_pretrained names it, from a small random BertModel; (dir, its state)."""
    torch.manual_seed(0)
    model = transformers.BertModel(transformers.BertConfig(**BERT)).eval()
    state = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    _write_h5(tmp_path, dict(_tf_name(k, v) for k, v in state.items()), BERT)
    return tmp_path, state


def test_weights_by_name_come_back_exactly(bert_h5, tmp_path, monkeypatch):
    """Every parameter from its TF weight (transposed where TF keeps (in, out)), loads with strict=True; without a
    Python that has the TF class the result says it was not measured."""
    monkeypatch.delenv("CONVERT_HF4_PYTHON", raising=False)
    directory, state = bert_h5
    code, out, err = run_cli("tf2torch", directory / "tf_model.h5", "--into", "transformers:BertModel", "-o",
                             tmp_path / "out")
    assert code == 0, err
    got = torch.load(tmp_path / "out" / "state_dict.pt")
    assert set(got) == set(state)
    for key, value in state.items():
        np.testing.assert_array_equal(got[key].numpy(), value, err_msg=key)
    doc = json.loads((tmp_path / "out" / "conversion.json").read_text())
    assert doc["verify"] is None and "not measured against TF" in doc["warnings"][0]


@pytest.mark.parametrize("change, message", [
    (lambda w: w.pop(next(k for k in w if k.endswith("pooler/dense/bias:0"))), "module parameter 'pooler.dense.bias'"),
    (lambda w: w.update({"tf_bert_model/bert/extra/kernel:0": np.zeros((2, 2), np.float32)}),
     "'tf_bert_model/bert/extra/kernel:0'"),
])
def test_a_weight_missing_or_left_over_is_exit_3(bert_h5, tmp_path, change, message):
    directory, state = bert_h5
    weights = dict(_tf_name(k, v) for k, v in state.items())
    change(weights)
    _write_h5(directory, weights, BERT)
    code, _, err = run_cli("tf2torch", directory / "tf_model.h5", "--into", "transformers:BertModel", "-o",
                           tmp_path / "out")
    assert code == 3 and message in err, err
    assert not (tmp_path / "out").exists()


def test_without_into_the_refusal_names_both_routes(bert_h5, tmp_path):
    directory, _ = bert_h5
    code, _, err = run_cli("tf2torch", directory / "tf_model.h5", "-o", tmp_path / "out")
    assert code == 2, err
    assert "--into transformers:BertModel" in err and "save_pretrained(dir, saved_model=True)" in err
    assert "model.save('model.h5')" not in err and not (tmp_path / "out").exists()


@pytest.mark.parametrize("architectures, name, want", [
    (["BertForSequenceClassification"], "BertModel", "TFBertForSequenceClassification"),
    (["TFGPT2LMHeadModel"], "GPT2Model", "TFGPT2LMHeadModel"),
    ([], "ViTModel", "TFViTModel"),
    (["os.system"], "BertModel", "TFBertModel"),  # not a model class name: the file picks nothing
    (["Bert__import__"], "BertModel", "TFBertModel"),
])
def test_the_reference_class_a_config_names_is_only_a_model_class_name(architectures, name, want):
    from tf_convert.app.into_module import hf_h5

    assert hf_h5._tf_class({"architectures": architectures}, name) == want
