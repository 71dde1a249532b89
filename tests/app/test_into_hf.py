"""`--into` Hugging Face's own classes (transformers 5.x), recorded by running them: a PreTrainedModel built
from `config_class(**--into-kwargs)`, ModelOutput fields paired with TF's outputs, padding done in forward
(`tf_padding=True`'s F.pad) judged like a conv's own, architecture differences refused by name. Tiny
configs and small inputs; every number against TensorFlow."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

from tests.app.test_into import load_into, run_cli
from tests.app.test_into_transformer import bert_reference
from tests.support import bert, into_modules
from tests.support.ir_cases import rel_error
from tf_convert import app as convert
from tf_convert.convert.errors import ConvertError

pytest.importorskip("tensorflow")
transformers = pytest.importorskip("transformers")

MNV2 = {"depth_multiplier": 0.35}
BERT = {"vocab_size": 30, "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
        "intermediate_size": 24, "max_position_embeddings": 16, "type_vocab_size": 2}
BERT_OUTPUTS = ["bert/encoder/Reshape_2", "pooled"]
CONVNEXT = {"depths": [1, 1, 1, 1], "hidden_sizes": [8, 16, 32, 64], "layer_scale_init_value": 1e-6}
RESNET = {"depths": [1, 1], "hidden_sizes": [256, 512], "embedding_size": 64, "layer_type": "bottleneck"}


@pytest.fixture(scope="module")
def mobilenet_v2(tmp_path_factory):
    """keras.applications.MobileNetV2 (alpha 0.35) at 64x64, global average pooling, no top."""
    import keras

    path = tmp_path_factory.mktemp("hf") / "mnv2.keras"
    model = keras.applications.MobileNetV2(input_shape=(64, 64, 3), alpha=0.35, weights=None, include_top=False,
                                           pooling="avg")
    into_modules.randomize(model, seed=3).save(path)
    return path


@pytest.fixture(scope="module")
def resnet_v1(tmp_path_factory):
    """Keras' ResNet50 code (v1: the stride in each stage's first 1x1 conv) at one block per stage, two stages."""
    from keras.src.applications import resnet

    def stack_fn(x):
        x = resnet.stack_residual_blocks_v1(x, 64, 1, stride1=1, name="conv2")
        return resnet.stack_residual_blocks_v1(x, 128, 1, name="conv3")

    path = tmp_path_factory.mktemp("hf") / "resnet.keras"
    model = resnet.ResNet(stack_fn, False, True, name="resnet_tiny", include_top=False, weights=None,
                          input_shape=(64, 64, 3))
    into_modules.randomize(model, seed=2).save(path)
    return path


@pytest.fixture(scope="module")
def bert_ckpt(tmp_path_factory):
    """A TF1 checkpoint as the original BERT modeling code writes it (tests/support/bert.py), re-saved at 7."""
    return bert.build_bert(tmp_path_factory.mktemp("bert"), bert.BertConfig(), batch=2, train_seq=8, infer_seq=7)[1]


def keras_rel_error(model: torch.nn.Module, source, field: str, shape=(2, 3, 64, 64)) -> float:
    import keras

    x = np.random.default_rng(11).standard_normal(shape).astype(np.float32)
    with torch.no_grad():
        got = getattr(model(torch.from_numpy(x)), field).numpy()
    want = np.asarray(keras.models.load_model(source, compile=False)(x.transpose(0, 2, 3, 1)))
    return rel_error(got, want.transpose(0, 3, 1, 2) if want.ndim == 4 else want)


# ---- Keras MobileNetV2 -> MobileNetV2Model ------------------------------------------------------------
def test_mobilenet_v2_tf_padding_is_exact_as_is(mobilenet_v2, tmp_path):
    """tf_padding=True pads in forward (F.pad before a padding=0 conv): judged as the conv's padding, equal to
    TF's at 64x64. Keras sized its ZeroPadding2D at 64: at 65 the module's pads follow the size and TF's
    do not, which is a warning (exact at the conversion size), not a failure."""
    out = tmp_path / "out"
    doc = convert.into(mobilenet_v2, "transformers:MobileNetV2Model", out, kwargs={**MNV2, "tf_padding": True},
                       verify=True)
    assert not doc["differences"] and doc["verify"]["passed"], doc["verify"]
    assert [o["module"] for o in doc["outputs"]] == ["pooler_output"]
    assert doc["outputs"][0]["tf"].startswith("global_average_pooling2d")
    assert doc["warnings"] and all("exact at the conversion's input size only" in w for w in doc["warnings"])
    assert "module path 'layer.0.conv_3x3.convolution': padding differs" in doc["warnings"][0]
    config = transformers.MobileNetV2Config(**MNV2, tf_padding=True)
    error = keras_rel_error(load_into(out, transformers.MobileNetV2Model(config)), mobilenet_v2, "pooler_output")
    print(f"\nKeras MobileNetV2 -> MobileNetV2Model(tf_padding=True): {error:.2e}")
    assert error < 1e-5


def test_mobilenet_v2_without_tf_padding_found_then_fixed(mobilenet_v2, tmp_path):
    """Symmetric padding=1 at the stride-2 convs where TF pads (0,1): found, and pads.py makes it exact."""
    out = tmp_path / "out"
    code, _, err = run_cli("tf2torch", mobilenet_v2, "--into", "transformers:MobileNetV2Model", "--into-kwargs",
                           json.dumps({**MNV2, "tf_padding": False}), "--fix-pads", "-o", out)
    assert code == 0, err
    doc = json.loads((out / "conversion.json").read_text())
    found = {d["module"]: d["detail"] for d in doc["differences"]}
    assert found["conv_stem.first_conv.convolution"].startswith("the module pads (1,1,1,1), TF (0,1,0,1) at 64x64")
    assert len(found) == 5 and {d["what"] for d in doc["differences"]} == {"padding"}
    config = transformers.MobileNetV2Config(**MNV2, tf_padding=False)
    error = keras_rel_error(load_into(out, transformers.MobileNetV2Model(config)), mobilenet_v2, "pooler_output")
    print(f"\nKeras MobileNetV2 -> MobileNetV2Model(tf_padding=False) + pads.py: {error:.2e}")
    assert error < 1e-5


# ---- Keras ResNet (v1) -> ResNetModel (v1.5) -----------------------------------------------------------
def test_resnet_v1_into_v1_5_is_refused_at_the_first_differing_block(resnet_v1, tmp_path):
    with pytest.raises(ConvertError) as failure:
        convert.into(resnet_v1, "transformers:ResNetModel", tmp_path / "out", kwargs=RESNET)
    message = str(failure.value)
    assert failure.value.exit_code == 3 and (
        "module path 'encoder.stages.1.layers.0.layer.0.convolution' has no partner (TF node 'conv3_block1_1_conv'): "
        "stride (1, 1) where TF has (2, 2): TF strides the block's 1x1 conv (ResNet v1)") in message, message
    assert "downsample_in_bottleneck=true" in message and not (tmp_path / "out").exists()


def test_resnet_v1_into_resnet_model_with_the_v1_stride(resnet_v1, tmp_path):
    """downsample_in_bottleneck=true: the blocks pair. Keras' convs carry a bias before each batch norm where
    Hugging Face's have none: it goes into the batch norm's running mean (BN(x + b) is BN(x) with mean - b);
    Keras' batch-norm epsilon 1.001e-5 is fixed by pads.py."""
    out = tmp_path / "out"
    kwargs = {**RESNET, "downsample_in_bottleneck": True}
    doc = convert.into(resnet_v1, "transformers:ResNetModel", out, kwargs=kwargs, fix_pads=True)
    assert {d["what"] for d in doc["differences"]} == {"epsilon"}
    records = {r["parameter"]: r for r in doc["parameters"]}
    assert records["embedder.embedder.normalization.running_mean"]["tf"] == "conv1_bn/moving_mean - conv1_conv/bias"
    model = load_into(out, transformers.ResNetModel(transformers.ResNetConfig(**kwargs)))
    error = keras_rel_error(model, resnet_v1, "last_hidden_state")
    print(f"\nKeras ResNet v1 -> ResNetModel(downsample_in_bottleneck=True): {error:.2e}")
    assert error < 1e-5


# ---- TF1 BERT checkpoint -> BertModel ------------------------------------------------------------------
def test_bert_checkpoint_into_transformers_bert_model(bert_ckpt, tmp_path):
    """Hugging Face's mask (`where(mask, 0, min)`) against TF1 BERT's `(1 - mask) * -10000`: both read through to
    the mask input; exact with padding masks at the conversion's length and another one."""
    out = tmp_path / "out"
    doc = convert.into(bert_ckpt, "transformers:BertModel", out, inputs=list(bert.INPUTS), outputs=BERT_OUTPUTS,
                       kwargs=BERT, verify=True)
    assert not doc["differences"] and doc["verify"]["passed"], doc["verify"]
    assert [o["module"] for o in doc["outputs"]] == ["last_hidden_state", "pooler_output"]
    records = {r["parameter"]: r["tf"] for r in doc["parameters"]}
    assert records["encoder.layer.1.attention.self.query.weight"] == "bert/encoder/layer_1/attention/self/query/kernel"
    assert records["embeddings.position_embeddings.weight"] == "bert/embeddings/position_embeddings"
    model = load_into(out, transformers.BertModel(transformers.BertConfig(**BERT, attn_implementation="eager")))
    errors = {}
    for seq in (7, 12):
        feeds = bert.random_feeds(bert.BertConfig(), 2, seq, seed=seq)
        assert feeds[1].min() == 0  # padding in the mask
        with torch.no_grad():
            got = model(*[torch.from_numpy(f.astype(np.int64)) for f in feeds])
        want = bert_reference(bert_ckpt, feeds)
        errors[seq] = max(rel_error(got.last_hidden_state.numpy(), want["sequence"]),
                          rel_error(got.pooler_output.numpy(), want["pooled"]))
    print(f"\nTF1 BERT -> transformers.BertModel: {errors}")
    assert max(errors.values()) < 1e-5, errors


# ---- TF1 BERT pre-training checkpoint -> BertForPreTraining --------------------------------------------
HEADS = ("prediction_logits", "seq_relationship_logits")


def pretraining_reference(prefix, feeds: list[np.ndarray], cfg) -> dict[str, np.ndarray]:
    """TF's two heads (run_pretraining.py's logits), restored from the checkpoint at the feeds' length."""
    import tensorflow as tf

    with tf.Graph().as_default() as graph:
        holders = [tf.compat.v1.placeholder(tf.int32, f.shape, name=n) for n, f in zip(bert.INPUTS, feeds)]
        bert.bert_model(*holders, cfg, training=False)
        with tf.compat.v1.Session() as sess:
            tf.compat.v1.train.Saver().restore(sess, str(prefix))
            values = sess.run([graph.get_tensor_by_name(f"{h}:0") for h in HEADS], dict(zip(holders, feeds)))
    return dict(zip(HEADS, values))


def test_bert_pretraining_checkpoint_into_bert_for_pretraining(tmp_path):
    """cls/predictions (transform dense + LayerNorm, logits against the word embeddings + output_bias) and
    cls/seq_relationship into BertForPreTraining's heads: the decoder's weight tied to the word embeddings and
    its bias to `cls.predictions.bias` get one TF value each; exact with padding masks at 7 and 12."""
    cfg = bert.BertConfig(pretraining=True)
    prefix = bert.build_bert(tmp_path / "bert", cfg, batch=2, train_seq=8, infer_seq=7)[1]
    out = tmp_path / "out"
    doc = convert.into(prefix, "transformers:BertForPreTraining", out, inputs=list(bert.INPUTS), outputs=list(HEADS),
                       kwargs=BERT, verify=True)
    assert not doc["differences"] and doc["verify"]["passed"], doc["verify"]
    assert [o["module"] for o in doc["outputs"]] == list(HEADS)
    records = {r["parameter"]: r["tf"] for r in doc["parameters"]}
    assert records["cls.predictions.transform.dense.weight"] == "cls/predictions/transform/dense/kernel"
    assert records["cls.predictions.transform.LayerNorm.weight"] == "cls/predictions/transform/LayerNorm/gamma"
    model = load_into(out, transformers.BertForPreTraining(transformers.BertConfig(**BERT,
                                                                                   attn_implementation="eager")))
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight
    errors = {}
    for seq in (7, 12):
        feeds = bert.random_feeds(cfg, 2, seq, seed=seq)
        assert feeds[1].min() == 0  # padding in the mask
        with torch.no_grad():
            got = model(*[torch.from_numpy(f.astype(np.int64)) for f in feeds])
        want = pretraining_reference(prefix, feeds, cfg)
        errors[seq] = {h: rel_error(getattr(got, h).numpy(), want[h]) for h in HEADS}
    print(f"\nTF1 BERT pre-training heads -> transformers.BertForPreTraining: {errors}")
    assert max(e for row in errors.values() for e in row.values()) < 1e-5, errors


# ---- Keras EfficientNetB0 -> EfficientNetModel (slow: B0 at full depth) --------------------------------
@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("CONVERT_INTO_SLOW"), reason="full-depth model: make test-into-hf")
def test_efficientnet_b0_preprocessing_named_everything_after_exact(tmp_path):
    """Keras keeps Rescaling + Normalization inside the model, Hugging Face leaves them to its image processor:
    named at the module's input with the affine to apply; with it applied, exact at 64 and 65."""
    import keras

    source = tmp_path / "eff.keras"
    model = keras.applications.EfficientNetB0(input_shape=(64, 64, 3), weights=None, include_top=False,
                                              pooling="avg")
    into_modules.randomize(model, seed=3)
    mean, std = np.array([0.485, 0.456, 0.406], np.float32), np.array([0.229, 0.224, 0.225], np.float32)
    model.get_layer("normalization").set_weights([mean, std ** 2, np.array(0)])
    model.save(source)
    kwargs = {"width_coefficient": 1.0, "depth_coefficient": 1.0, "hidden_dim": 1280, "image_size": 64}
    doc = convert.into(source, "transformers:EfficientNetModel", tmp_path / "out", kwargs=kwargs, verify=True)
    assert doc["verify"]["passed"] and [s["input_shape"][2] for s in doc["verify"]["sizes"]] == [64, 65]
    assert doc["preprocessing"]["tf"] == ["rescaling", "normalization"]
    np.testing.assert_allclose(doc["preprocessing"]["scale"], 1 / (255 * std), rtol=1e-5)
    np.testing.assert_allclose(doc["preprocessing"]["shift"], -mean / std, rtol=1e-5)
    assert "before 'embeddings.convolution'" in doc["warnings"][0]
    assert doc["outputs"] == [{"tf": "avg_pool", "module": "pooler_output"}]
    print(f"\nKeras EfficientNetB0 -> EfficientNetModel: {doc['verify']['sizes']}")


# ---- Keras ConvNeXt -> ConvNextModel ------------------------------------------------------------------
def convnext_into(tmp_path, keras_model, kwargs: dict, size: int) -> tuple[dict, torch.nn.Module, float]:
    """Keras ConvNeXt (random weights, layer-scale gammas spread out) into ConvNextModel with --fix-pads --verify;
    then the module as a user loads it, against Keras with the named preprocessing applied to its input."""
    source = tmp_path / "convnext.keras"
    into_modules.randomize(keras_model, seed=4).save(source)
    out = tmp_path / "out"
    doc = convert.into(source, "transformers:ConvNextModel", out, kwargs=kwargs, fix_pads=True, verify=True)
    assert doc["verify"]["passed"] and [s["input_shape"][2] for s in doc["verify"]["sizes"]] == [size, size + 1]
    model = load_into(out, transformers.ConvNextModel(transformers.ConvNextConfig(**kwargs)))
    x = np.random.default_rng(5).uniform(0, 255, (2, 3, size, size)).astype(np.float32)
    scale, shift = (np.asarray(doc["preprocessing"][k], np.float32).reshape(1, 3, 1, 1) for k in ("scale", "shift"))
    with torch.no_grad():
        got = model(torch.from_numpy(x * scale + shift)).pooler_output.numpy()
    want = np.asarray(keras_model(x.transpose(0, 2, 3, 1)))
    return doc, model, rel_error(got, want)


def check_convnext(doc: dict, stages: int) -> None:
    """Keras' built-in Normalization named at the input; every LayerScale gamma in layer_scale_parameter; the
    head's layer-norm epsilon (Keras 1e-6, ConvNextConfig's 1e-12) fixed by pads.py."""
    assert doc["preprocessing"]["tf"][-1].endswith("prestem_normalization")
    assert "before 'embeddings.patch_embeddings'" in doc["warnings"][-1]
    np.testing.assert_allclose(doc["preprocessing"]["scale"], 1 / (255 * np.array([0.229, 0.224, 0.225])), rtol=1e-5)
    scales = {r["parameter"]: r for r in doc["parameters"] if r["parameter"].endswith("layer_scale_parameter")}
    assert len(scales) == stages and all(r["tf"].endswith("_layer_scale") for r in scales.values()), scales
    records = {r["parameter"]: r for r in doc["parameters"]}
    assert records["encoder.stages.0.layers.0.pwconv1.weight"]["tf"].endswith("stage_0_block_0_pointwise_conv_1/kernel")
    assert [(d["module"], d["what"]) for d in doc["differences"]] == [("layernorm", "epsilon")]
    assert doc["outputs"][0]["module"] == "pooler_output"


def test_convnext_layer_scale_into_convnext_model(tmp_path):
    """ConvNeXt's layer scale (a Parameter multiplied in forward, not a module) gets Keras' LayerScale gamma;
    its channels-first LayerNorm (a subclass permuting around F.layer_norm) and Linear pointwise convs pair
    with TF's layer norm and 1x1 convs. Reduced depths and widths, 64x64: exact at 64 and 65."""
    from keras.src.applications import convnext

    model = convnext.ConvNeXt(depths=[1, 1, 1, 1], projection_dims=[8, 16, 32, 64], drop_path_rate=0.0,
                              layer_scale_init_value=1e-6, default_size=64, name="convnext_mini", include_top=False,
                              weights=None, input_shape=(64, 64, 3), pooling="avg")
    doc, _, error = convnext_into(tmp_path, model, {**CONVNEXT, "image_size": 64}, 64)
    check_convnext(doc, 4)
    print(f"\nKeras ConvNeXt (reduced) -> ConvNextModel: {doc['verify']['sizes']}, in process {error:.2e}")
    assert error < 1e-5
    with pytest.raises(ConvertError) as failure:  # no layer scale in the module: refused, not read through
        convert.into(tmp_path / "convnext.keras", "transformers:ConvNextModel", tmp_path / "none",
                     kwargs={**CONVNEXT, "image_size": 64, "layer_scale_init_value": 0.0})
    assert failure.value.exit_code == 3 and str(failure.value).startswith(
        "module path 'encoder.stages.0.layers.0.pwconv2': its output is multiplied per channel by nothing where TF "
        "multiplies 'convnext_mini_stage_0_block_0_pointwise_conv_2' by 'convnext_mini_stage_0_block_0_layer_scale'"
    ), str(failure.value)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("CONVERT_INTO_SLOW"), reason="full-size model: make test-into-hf")
def test_convnext_tiny_into_convnext_model(tmp_path):
    """keras.applications.ConvNeXtTiny at 224 into ConvNextModel's ConvNeXt-T config (the defaults)."""
    import keras

    model = keras.applications.ConvNeXtTiny(weights=None, include_top=False, input_shape=(224, 224, 3),
                                            pooling="avg")
    doc, _, error = convnext_into(tmp_path, model, {}, 224)
    check_convnext(doc, 18)
    print(f"\nKeras ConvNeXtTiny -> ConvNextModel: {doc['verify']['sizes']}, in process {error:.2e}")
    assert error < 1e-5


# ---- a conv that pads in its own forward (timm's Conv2dSame) ---------------------------------------------
def test_padding_in_forward_is_judged_as_the_convs(tmp_path):
    """F.pad + F.conv2d with the module's weight: paired with TF's SAME conv by its module path, its pad judged
    at two sizes (exact at 32 and 33 when it follows TF's rule; a symmetric port refused by name)."""
    from tests.app.test_into import rel_error as keras_error

    source = tmp_path / "same.keras"
    into_modules.randomize(into_modules.keras_same_net(), seed=5).save(source)
    out = tmp_path / "out"
    doc = convert.into(source, "tests.support.into_modules:SameNet", out, input_shape="1,32,32,3", verify=True)
    assert not doc["differences"] and doc["verify"]["passed"], doc
    assert {p["module"]: p["tf"] for p in doc["pairs"] if p["kind"] == "conv"} == {"conv": "conv", "dw": "dw"}
    errors = {hw: keras_error(load_into(out, into_modules.SameNet()), source, (1, 3, hw, hw)) for hw in (32, 33)}
    assert max(errors.values()) < 1e-5, errors
    with pytest.raises(ConvertError) as failure:
        convert.into(source, "tests.support.into_modules:SameNet", tmp_path / "b", input_shape="1,32,32,3",
                     kwargs={"symmetric": True}, fix_pads=True)
    assert failure.value.exit_code == 4 and str(failure.value).startswith(
        "module path 'conv': padding differs: the module pads (1,1,1,1) (its forward zero-pads the conv's input), "
        "TF (0,1,0,1) at 32x32"), str(failure.value)
    assert "pads.apply() cannot fix this: pad the input of 'conv' by (0,1,0,1)" in str(failure.value)
