"""A tiny BERT-style encoder written the way the original TF1 BERT code (modeling.py) writes it.

tf.compat.v1 variable scopes bert/embeddings, bert/encoder/layer_<i>, bert/pooler; embedding_lookup
(tf.gather on the flattened ids, or one_hot + matmul); token types as one_hot + matmul; the position
table sliced to the sequence length; layer norm as tf_slim's layer_norm (moments +
batch_normalization, the TF1 decomposed pattern); the additive attention mask from an int32
input_mask; BatchMatMul attention with Reshape/Transpose between heads; gelu with erf or tanh;
dropout in its training form; the pooler (token 0, dense, tanh); a classifier on top.

`build_bert` fine-tunes 2 steps with Adam, saves with Saver (`<dir>/train/model.ckpt`) and
re-saves the inference graph (is_training=False, no optimizer) at another sequence length
(`<dir>/infer/model.ckpt`). `reference(prefix, feeds)` runs TF's inference path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

INPUTS = ("input_ids", "input_mask", "segment_ids")


@dataclass(frozen=True)
class BertConfig:
    vocab_size: int = 30
    hidden: int = 16
    layers: int = 2
    heads: int = 2
    intermediate: int = 24
    max_positions: int = 16
    type_vocab: int = 2
    classes: int = 3
    gelu: str = "erf"  # or "tanh" (the original modeling.py's approximation)
    one_hot_embeddings: bool = False
    # BertForPreTraining's heads as the original run_pretraining.py writes them: cls/predictions (transform
    # dense + LayerNorm, logits against the word embeddings, output_bias) over every position, and
    # cls/seq_relationship (output_weights/output_bias) on the pooled output
    pretraining: bool = False


def _dense(x, units: int, name: str, activation=None):
    import tensorflow as tf

    with tf.compat.v1.variable_scope(name):
        width = x.shape[-1]
        init = tf.compat.v1.truncated_normal_initializer(stddev=0.2)
        kernel = tf.compat.v1.get_variable("kernel", [width, units], initializer=init)
        bias = tf.compat.v1.get_variable("bias", [units], initializer=init)
        y = tf.nn.bias_add(tf.matmul(x, kernel), bias)
    return activation(y) if activation else y


def _gelu(kind: str):
    import tensorflow as tf

    def erf(x):
        return x * 0.5 * (1.0 + tf.math.erf(x / tf.sqrt(2.0)))

    def tanh(x):
        cdf = 0.5 * (1.0 + tf.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * tf.pow(x, 3))))
        return x * cdf

    return {"erf": erf, "tanh": tanh}[kind]


def _layer_norm(x, name: str):
    from tests.support.training_graphs import slim

    return slim().layers.layer_norm(x, begin_norm_axis=-1, begin_params_axis=-1, scope=name)


def _dropout(x, training: bool):
    import tensorflow as tf

    return tf.nn.dropout(x, rate=0.1) if training else x


def _embedding_lookup(ids, table, one_hot: bool):
    import tensorflow as tf

    flat = tf.reshape(ids, [-1])
    if one_hot:
        return tf.matmul(tf.one_hot(flat, depth=table.shape[0]), table)
    return tf.gather(table, flat)


def bert_model(input_ids, input_mask, segment_ids, cfg: BertConfig, training: bool):
    """Returns (pooled_output, logits); shapes are static (batch, seq)."""
    import tensorflow as tf

    batch, seq = input_ids.shape
    init = tf.compat.v1.truncated_normal_initializer(stddev=0.2)
    h, heads = cfg.hidden, cfg.heads
    size = h // heads
    with tf.compat.v1.variable_scope("bert"):
        with tf.compat.v1.variable_scope("embeddings"):
            words = tf.compat.v1.get_variable("word_embeddings", [cfg.vocab_size, h], initializer=init)
            x = tf.reshape(_embedding_lookup(input_ids, words, cfg.one_hot_embeddings), [batch, seq, h])
            types = tf.compat.v1.get_variable("token_type_embeddings", [cfg.type_vocab, h], initializer=init)
            x += tf.reshape(_embedding_lookup(segment_ids, types, True), [batch, seq, h])
            positions = tf.compat.v1.get_variable("position_embeddings", [cfg.max_positions, h], initializer=init)
            x += tf.reshape(tf.slice(positions, [0, 0], [seq, -1]), [1, seq, h])
            x = _dropout(_layer_norm(x, "LayerNorm"), training)
        with tf.compat.v1.variable_scope("encoder"):
            to_mask = tf.cast(tf.reshape(input_mask, [batch, 1, seq]), tf.float32)
            mask = tf.ones([batch, seq, 1], tf.float32) * to_mask
            adder = (1.0 - tf.cast(tf.expand_dims(mask, axis=[1]), tf.float32)) * -10000.0
            prev = tf.reshape(x, [batch * seq, h])
            for i in range(cfg.layers):
                with tf.compat.v1.variable_scope(f"layer_{i}"):
                    with tf.compat.v1.variable_scope("attention"):
                        with tf.compat.v1.variable_scope("self"):
                            def heads_of(t):
                                return tf.transpose(tf.reshape(t, [batch, seq, heads, size]), [0, 2, 1, 3])

                            q = heads_of(_dense(prev, h, "query"))
                            k = heads_of(_dense(prev, h, "key"))
                            v = heads_of(_dense(prev, h, "value"))
                            scores = tf.matmul(q, k, transpose_b=True) * (1.0 / math.sqrt(size))
                            probs = _dropout(tf.nn.softmax(scores + adder), training)
                            ctx = tf.transpose(tf.matmul(probs, v), [0, 2, 1, 3])
                            ctx = tf.reshape(ctx, [batch * seq, h])
                        with tf.compat.v1.variable_scope("output"):
                            att = _dropout(_dense(ctx, h, "dense"), training)
                            att = _layer_norm(att + prev, "LayerNorm")
                    with tf.compat.v1.variable_scope("intermediate"):
                        mid = _dense(att, cfg.intermediate, "dense", _gelu(cfg.gelu))
                    with tf.compat.v1.variable_scope("output"):
                        out = _dropout(_dense(mid, h, "dense"), training)
                        prev = _layer_norm(out + att, "LayerNorm")
            sequence = tf.reshape(prev, [batch, seq, h])
        with tf.compat.v1.variable_scope("pooler"):
            first = tf.squeeze(sequence[:, 0:1, :], axis=1)
            pooled = _dense(first, h, "dense", tf.tanh)
    logits = _dense(_dropout(pooled, training), cfg.classes, "output")
    if cfg.pretraining:
        _pretraining_heads(sequence, pooled, words, cfg)
    return tf.identity(pooled, name="pooled"), tf.identity(logits, name="logits")


def _pretraining_heads(sequence, pooled, words, cfg: BertConfig):
    """run_pretraining.py's get_masked_lm_output (at every position, not gathered: what
    BertForPreTraining's prediction_logits holds) and get_next_sentence_output, as logits; the output biases
    start random (run_pretraining.py's zeros would hide a bias left out)."""
    import tensorflow as tf

    batch, seq, h = sequence.shape
    init = tf.compat.v1.truncated_normal_initializer(stddev=0.2)
    with tf.compat.v1.variable_scope("cls/predictions"):
        with tf.compat.v1.variable_scope("transform"):
            x = _dense(tf.reshape(sequence, [batch * seq, h]), h, "dense", _gelu(cfg.gelu))
            x = _layer_norm(x, "LayerNorm")
        bias = tf.compat.v1.get_variable("output_bias", [cfg.vocab_size], initializer=init)
        scores = tf.nn.bias_add(tf.matmul(x, words, transpose_b=True), bias)
    with tf.compat.v1.variable_scope("cls/seq_relationship"):
        weights = tf.compat.v1.get_variable("output_weights", [2, h], initializer=init)
        bias = tf.compat.v1.get_variable("output_bias", [2], initializer=init)
        relationship = tf.nn.bias_add(tf.matmul(pooled, weights, transpose_b=True), bias)
    tf.identity(tf.reshape(scores, [batch, seq, cfg.vocab_size]), name="prediction_logits")
    tf.identity(relationship, name="seq_relationship_logits")


def _placeholders(batch: int, seq: int):
    import tensorflow as tf

    return [tf.compat.v1.placeholder(tf.int32, [batch, seq], name=n) for n in INPUTS]


def random_feeds(cfg: BertConfig, batch: int, seq: int, seed: int = 0) -> list[np.ndarray]:
    """Token ids < vocab, a 0/1 mask with padding at the end of each row, segment ids 0/1."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, cfg.vocab_size, (batch, seq)).astype(np.int32)
    lengths = rng.integers(1, seq + 1, batch)
    mask = (np.arange(seq)[None, :] < lengths[:, None]).astype(np.int32)
    segments = (np.arange(seq)[None, :] >= seq // 2).astype(np.int32).repeat(batch, 0)
    return [ids, mask, segments]


def build_bert(directory: Path, cfg: BertConfig = BertConfig(), batch: int = 2, train_seq: int = 8,
               infer_seq: int = 6) -> tuple[Path, Path]:
    """Fine-tune 2 steps (Adam, training-form dropout) and save; re-save the inference graph.
    Returns (training checkpoint prefix, inference checkpoint prefix)."""
    import tensorflow as tf

    train = directory / "train" / "model.ckpt"
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(1)
        feeds = _placeholders(batch, train_seq)
        labels = tf.compat.v1.placeholder(tf.int32, [batch], name="labels")
        _, logits = bert_model(*feeds, cfg, training=True)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        step = tf.compat.v1.train.get_or_create_global_step()
        train_op = tf.compat.v1.train.AdamOptimizer(1e-2).minimize(loss, global_step=step)
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            for i in range(2):
                values = random_feeds(cfg, batch, train_seq, seed=i)
                sess.run(train_op, {**dict(zip(feeds, values)), labels: np.arange(batch) % cfg.classes})
            train.parent.mkdir(parents=True, exist_ok=True)
            saver.save(sess, str(train))
    infer = directory / "infer" / "model.ckpt"
    graph = tf.Graph()
    with graph.as_default():
        feeds = _placeholders(batch, infer_seq)
        bert_model(*feeds, cfg, training=False)
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session() as sess:
            saver.restore(sess, str(train))
            infer.parent.mkdir(parents=True, exist_ok=True)
            saver.save(sess, str(infer))
    return train, infer


def reference(prefix: Path, feeds: list[np.ndarray], cfg: BertConfig = BertConfig()) -> dict[str, np.ndarray]:
    """TF's inference path at the feeds' shape: the model rebuilt with training=False, restored."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        holders = _placeholders(*feeds[0].shape)
        pooled, logits = bert_model(*holders, cfg, training=False)
        with tf.compat.v1.Session() as sess:
            tf.compat.v1.train.Saver().restore(sess, str(prefix))
            pooled_value, logits_value = sess.run([pooled, logits], dict(zip(holders, feeds)))
    return {"pooled": pooled_value, "logits": logits_value}
