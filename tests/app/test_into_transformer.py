"""`--into` with transformer encoders: a TF1 BERT checkpoint (tests/support/bert.py,
written as the original modeling.py) into a module with Hugging Face BertModel's structure and names, and a
Keras Embedding + MultiHeadAttention + LayerNormalization encoder into the usual PyTorch hand port
(separate q/k/v nn.Linear). Q, K and V have equal shapes: they pair by where they are used (which side of
which product). Layer-norm epsilon, the gelu variant and the attention scale are checked; the first two
pads.apply() fixes. Every number against TensorFlow, at an odd sequence length."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.app.test_into import load_into, run_cli
from tests.support import bert, into_modules
from tests.support.ir_cases import rel_error
from tf_convert import app as convert
from tf_convert.convert.errors import ConvertError

pytest.importorskip("tensorflow")

MODULES = "tests.support.into_modules"
SEQUENCE = "bert/encoder/Reshape_2"  # modeling.py's sequence_output: the last layer's (batch, seq, hidden)
BERT_OUTPUTS = [SEQUENCE, "pooled"]  # BertModel returns (sequence_output, pooled_output)
OUTPUTS_ARG = ",".join(BERT_OUTPUTS)
CFG = bert.BertConfig()


@pytest.fixture(scope="module")
def bert_ckpt(tmp_path_factory) -> Path:
    """The inference re-save at sequence length 7 (odd; fine-tuned at 8)."""
    return bert.build_bert(tmp_path_factory.mktemp("bert"), CFG, batch=2, train_seq=8, infer_seq=7)[1]


@pytest.fixture(scope="module")
def encoder(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("encoder") / "encoder.keras"
    into_modules.randomize(into_modules.keras_encoder(), seed=4).save(path)
    return path


def bert_reference(prefix: Path, feeds: list[np.ndarray]) -> dict[str, np.ndarray]:
    """TF's sequence and pooled outputs (modeling.py's inference path, restored from the checkpoint)."""
    import tensorflow as tf

    with tf.Graph().as_default():
        holders = [tf.compat.v1.placeholder(tf.int32, f.shape, name=n) for n, f in zip(bert.INPUTS, feeds)]
        pooled, _ = bert.bert_model(*holders, CFG, training=False)
        sequence = tf.compat.v1.get_default_graph().get_tensor_by_name(f"{SEQUENCE}:0")
        with tf.compat.v1.Session() as sess:
            tf.compat.v1.train.Saver().restore(sess, str(prefix))
            values = sess.run([sequence, pooled], dict(zip(holders, feeds)))
    return dict(zip(("sequence", "pooled"), values))


def bert_errors(model: torch.nn.Module, prefix: Path) -> dict[str, float]:
    feeds = bert.random_feeds(CFG, 2, 7, seed=5)
    with torch.no_grad():
        sequence, pooled = model(*[torch.from_numpy(f.astype(np.int64)) for f in feeds])
    want = bert_reference(prefix, feeds)
    return {"sequence": rel_error(sequence.numpy(), want["sequence"]),
            "pooled": rel_error(pooled.numpy(), want["pooled"])}


def _into_bert(prefix: Path, out: Path, **options):
    return convert.into(prefix, f"{MODULES}:BertModel", out, inputs=list(bert.INPUTS), outputs=BERT_OUTPUTS,
                        **options)


# ---- TF1 BERT into BertModel ------------------------------------------------------------------------
def test_bert_checkpoint_into_hf_bert_model(bert_ckpt, tmp_path):
    out = tmp_path / "out"
    doc = _into_bert(bert_ckpt, out, verify=True, layers=True)
    assert not doc["differences"] and doc["verify"]["passed"], doc["verify"]
    rows = {row["module"]: row for row in doc["verify"]["layers"]}  # per module path, TF's (tokens, features)
    assert {"embeddings.word_embeddings", "encoder.layer.1.attention.self.key", "pooler.dense"} <= set(rows)
    assert all(row["passed"] for row in rows.values()), rows
    records = {r["parameter"]: r for r in doc["parameters"]}
    # Q, K, V have one shape: each pairs with TF's by where it is used, and the record names its variable
    for layer in range(CFG.layers):
        for part in ("query", "key", "value"):
            record = records[f"encoder.layer.{layer}.attention.self.{part}.weight"]
            assert record["tf"] == f"bert/encoder/layer_{layer}/attention/self/{part}/kernel"
            assert record["transform"] == "TF (in, out) -> (out, in)"
    assert records["embeddings.word_embeddings.weight"]["tf"] == "bert/embeddings/word_embeddings"
    assert records["embeddings.LayerNorm.weight"]["tf"] == "bert/embeddings/LayerNorm/gamma"
    # TF's graph adds only the first 7 rows of the position table: all 16 come from the checkpoint
    assert records["embeddings.position_embeddings.weight"] == {
        "parameter": "embeddings.position_embeddings.weight", "shape": [16, 16],
        "tf": "bert/embeddings/position_embeddings", "transform": "the table TF slices and adds as a constant"}
    errors = bert_errors(load_into(out, into_modules.BertModel()), bert_ckpt)
    print(f"\nBERT into BertModel at seq 7: {errors}")
    assert max(errors.values()) < 1e-5, errors


def test_bert_epsilon_and_gelu_found_then_fixed(bert_ckpt, tmp_path):
    """nn.LayerNorm's default eps (1e-5) against TF1 BERT's 1e-12, the tanh gelu against erf."""
    kwargs = {"layer_norm_eps": 1e-5, "hidden_act": "gelu_new"}
    with pytest.raises(ConvertError) as failure:
        _into_bert(bert_ckpt, tmp_path / "a", kwargs=kwargs)
    message = str(failure.value)
    assert failure.value.exit_code == 4 and message.startswith(
        "module path 'embeddings.LayerNorm': epsilon differs: eps=1e-05, TF's epsilon is 1e-12; alone it costs"
    ), message
    out = tmp_path / "out"
    doc = _into_bert(bert_ckpt, out, kwargs=kwargs, fix_pads=True, verify=True)
    found = {(d["module"], d["what"]) for d in doc["differences"]}
    assert ("encoder.layer.1.intermediate.intermediate_act_fn", "activation") in found
    assert ("encoder.layer.0.output.LayerNorm", "epsilon") in found
    assert len(found) == 1 + 2 * 2 + 2  # 5 layer norms, 2 gelus
    assert doc["verify"]["passed"] and doc["errors"]["as_is"]["max_rel"] > 1e-4
    errors = bert_errors(load_into(out, into_modules.BertModel(**kwargs)), bert_ckpt)
    print(f"\nBERT eps/gelu: as is {doc['errors']['as_is']['max_rel']:.2e}, with pads.py {errors}")
    assert max(errors.values()) < 1e-5, errors


def test_bert_through_the_cli(bert_ckpt, tmp_path):
    out = tmp_path / "out"
    code, _, err = run_cli("tf2torch", bert_ckpt, "--inputs", ",".join(bert.INPUTS), "--outputs", OUTPUTS_ARG,
                           "--into", f"{MODULES}:BertModel", "--into-kwargs", '{"hidden_act": "gelu_new"}', "-o", out)
    assert code == 4 and ("module path 'encoder.layer.0.intermediate.intermediate_act_fn': activation differs: "
                          "the module computes gelu (tanh approximation), TF computes gelu (erf)") in err, err
    code, _, err = run_cli("tf2torch", bert_ckpt, "--inputs", ",".join(bert.INPUTS), "--outputs", OUTPUTS_ARG,
                           "--into", f"{MODULES}:BertModel", "--into-kwargs", '{"hidden_act": "gelu_new"}',
                           "--fix-pads", "--verify", "-o", out)
    assert code == 0, err
    assert json.loads((out / "conversion.json").read_text())["verify"]["max_rel"] < 1e-5


# ---- Keras MultiHeadAttention encoder into a hand port -----------------------------------------------
def keras_errors(model: torch.nn.Module, source: Path, seq: int) -> float:
    import keras

    ids = np.random.default_rng(seq).integers(0, 30, (2, seq)).astype(np.int32)
    with torch.no_grad():
        got = model(torch.from_numpy(ids.astype(np.int64))).numpy()
    return rel_error(got, np.asarray(keras.models.load_model(source, compile=False)(ids)))


def test_keras_mha_encoder_fused_kernels_and_epsilon(encoder, tmp_path):
    out = tmp_path / "out"
    doc = convert.into(encoder, f"{MODULES}:KerasStyleEncoder", out, input_shape="2,7", fix_pads=True, verify=True)
    assert {(d["module"], d["what"]) for d in doc["differences"]} == {(f"norm{i}", "epsilon") for i in range(3)}
    records = {r["parameter"]: r for r in doc["parameters"]}
    assert records["attn.query.weight"]["transform"] == ("Keras MultiHeadAttention (d_model, heads, head_dim) -> "
                                                         "(heads*head_dim, d_model)")
    assert records["attn_out.weight"]["tf"] == "attn/attention_output/kernel"
    assert records["embed.weight"]["tf"] == "embed/embeddings"
    errors = {"as_is": doc["errors"]["as_is"]["max_rel"]}
    for seq in (7, 10):  # one pads.py at any sequence length
        errors[f"seq {seq}"] = keras_errors(load_into(out, into_modules.KerasStyleEncoder()), encoder, seq)
    print(f"\nKeras MHA encoder: {errors}")
    assert errors["as_is"] > 1e-3 and errors["seq 7"] < 1e-5 and errors["seq 10"] < 1e-5, errors


def test_q_and_k_pair_by_connectivity_not_by_name(encoder, tmp_path):
    """The module's `key` Linear stands where TF's query does: it gets the query kernel."""
    doc = convert.into(encoder, f"{MODULES}:KerasStyleEncoder", tmp_path / "out", input_shape="2,7", fix_pads=True,
                       verify=True, kwargs={"swap_qk": True})
    pairs = {p["module"]: p["tf"] for p in doc["pairs"] if p["kind"] == "linear"}
    assert pairs["attn.key"].endswith("/query") and pairs["attn.query"].endswith("/key"), pairs
    assert doc["verify"]["passed"]


def test_a_missing_attention_scale_is_named(encoder, tmp_path):
    with pytest.raises(ConvertError) as failure:
        convert.into(encoder, f"{MODULES}:KerasStyleEncoder", tmp_path / "out", input_shape="2,7", fix_pads=True,
                     kwargs={"scaled": False, "eps": 1e-3})
    message = str(failure.value)
    assert failure.value.exit_code == 4 and "scale differs: the module scales the product by 1, TF by 0.353553" \
        in message and "pads.apply() cannot fix this" in message, message


def test_inputs_in_another_order_than_forward_are_refused_by_name(bert_ckpt, tmp_path):
    """forward(input_ids, attention_mask, token_type_ids) is fed TF's inputs in TF's order: a different
    --inputs order is refused with the order to pass (ids and masks pair by what reads them)."""
    code, _, err = run_cli("tf2torch", bert_ckpt, "--inputs", "input_mask,input_ids,segment_ids", "--outputs",
                           OUTPUTS_ARG, "--into", f"{MODULES}:BertModel", "-o", tmp_path / "out")
    assert code == 3 and "pass --inputs input_ids,input_mask,segment_ids" in err, err


def test_keras_mha_encoder_into_nn_multihead_attention(encoder, tmp_path):
    """torch's own nn.MultiheadAttention: TF's separate query/key/value kernels fill the thirds of its fused
    in_proj_weight (and in_proj_bias); exact at two sequence lengths."""
    out = tmp_path / "out"
    doc = convert.into(encoder, f"{MODULES}:MhaEncoder", out, input_shape="2,7", verify=True)
    assert not doc["differences"] and doc["verify"]["passed"], doc["verify"]
    records = {r["parameter"]: r for r in doc["parameters"]}
    for index, part in enumerate(("query", "key", "value")):
        rows = f"[{16 * index}:{16 * (index + 1)}]"
        assert records[f"attn.in_proj_weight{rows}"]["tf"] == f"attn/{part}/kernel"
        assert records[f"attn.in_proj_bias{rows}"]["tf"] == f"attn/{part}/bias"
    assert records["attn.out_proj.weight"]["tf"] == "attn/attention_output/kernel"
    errors = {seq: keras_errors(load_into(out, into_modules.MhaEncoder()), encoder, seq) for seq in (7, 10)}
    print(f"\nKeras MHA encoder into nn.MultiheadAttention: {errors}")
    assert max(errors.values()) < 1e-5, errors
