"""Einsum attention as TF2 writes it: a tf.function encoder block with tf.einsum
projections (EinsumDense's 'abc,cde->abde'), scores 'aecd,abcd->acbe', context 'acbe,aecd->abcd',
an ellipsis matmul and a one-operand permutation, and a Keras MultiHeadAttention model exported as a
SavedModel; each compared with TF in every target runtime at two sequence lengths. Caffe (BVLC) has
no batched matmul: it refuses by name."""

from __future__ import annotations

import numpy as np
import pytest

from tests.app.test_cli import run_cli
from tests.support.every_target import errors_per_target
from tf_convert.app import pipeline
from tf_convert.convert.ir import check

pytest.importorskip("tensorflow")

RTOL = 1e-4
WIDTH, HEADS, HEAD = 8, 2, 3
ERRORS: dict[str, dict[str, float]] = {}  # "<model> seq <n>" -> target -> max_rel, printed at the end


@pytest.fixture(scope="module", autouse=True)
def _print_errors():
    yield
    for name, errors in ERRORS.items():
        print(f"\n{name}: " + ", ".join(f"{t} {e:.2e}" for t, e in errors.items()))


def _einsum_block(seq: int):
    import tensorflow as tf

    rng = np.random.default_rng(seq)
    var = lambda *shape: tf.Variable(rng.normal(0, 0.5, shape).astype(np.float32))  # noqa: E731

    class Block(tf.Module):
        def __init__(self):
            self.q, self.k, self.v = var(WIDTH, HEADS, HEAD), var(WIDTH, HEADS, HEAD), var(WIDTH, HEADS, HEAD)
            self.o, self.w = var(HEADS, HEAD, WIDTH), var(WIDTH, 5)

        @tf.function(input_signature=[tf.TensorSpec([2, seq, WIDTH], tf.float32)])
        def __call__(self, x):
            q = tf.einsum("abc,cde->abde", x, self.q) * (HEAD ** -0.5)
            k, v = tf.einsum("abc,cde->abde", x, self.k), tf.einsum("abc,cde->abde", x, self.v)
            probs = tf.nn.softmax(tf.einsum("aecd,abcd->acbe", k, q), axis=-1)
            context = tf.einsum("acbe,aecd->abcd", probs, v)
            y = tf.einsum("abcd,cde->abe", context, self.o) + x
            y = tf.einsum("...ij,jk->...ik", y, self.w)
            gram = tf.einsum("...ij,...kj->...ik", y, y) * 0.1
            return {"out": tf.einsum("abc->acb", tf.einsum("abc,acd->abd", gram, y))}

    return Block()


@pytest.mark.parametrize("seq", [6, 11])
def test_einsum_attention_saved_model_every_target(seq, tmp_path):
    import tensorflow as tf

    module = _einsum_block(seq)
    tf.saved_model.save(module, str(tmp_path / "sm"))
    graph = pipeline.load_graph(pipeline.Request(source=tmp_path / "sm", target="ir"))[0]
    assert "Einsum" in {n.source_op for n in graph.nodes} and check.problems(graph) == []
    x = np.random.default_rng(3).normal(size=(2, seq, WIDTH)).astype(np.float32)
    expected = [module(x)["out"].numpy()]
    errors = errors_per_target(graph, [x], expected, tmp_path, refused=("caffe",))
    ERRORS[f"einsum attention block seq {seq}"] = errors
    assert max(errors.values()) <= RTOL, errors


def test_keras_multi_head_attention_saved_model_every_target(tmp_path):
    """Keras MultiHeadAttention + LayerNormalization + training-form Dropout, exported as a SavedModel
    (its graph is EinsumDense/einsum as Keras computes them), at two sequence lengths."""
    import keras

    keras.utils.set_random_seed(4)
    layers = keras.layers
    x_in = keras.Input((None, WIDTH), name="x")
    x = layers.Dropout(0.3)(x_in, training=True)
    a = layers.MultiHeadAttention(HEADS, HEAD, value_dim=4, name="mha")(x, x)
    y = layers.LayerNormalization(epsilon=1e-6, name="ln")(layers.Add()([x, a]))
    model = keras.Model(x_in, layers.Dense(5, activation="gelu", name="ffn")(y))
    rng = np.random.default_rng(2)
    model.set_weights([rng.normal(0, 0.4, w.shape).astype(np.float32) for w in model.get_weights()])
    model.export(str(tmp_path / "sm"), verbose=False)
    for seq in (7, 12):
        request = pipeline.Request(source=tmp_path / "sm", target="ir", input_shapes={"": (2, seq, WIDTH)})
        graph = pipeline.load_graph(request)[0]
        assert "Einsum" in {n.source_op for n in graph.nodes} and check.problems(graph) == []
        x = rng.normal(size=(2, seq, WIDTH)).astype(np.float32)
        out = tmp_path / f"seq{seq}"
        out.mkdir()
        errors = errors_per_target(graph, [x], [np.asarray(model(x, training=False))], out, refused=("caffe",))
        ERRORS[f"Keras MultiHeadAttention SavedModel seq {seq}"] = errors
        assert max(errors.values()) <= RTOL, (seq, errors)


REFUSED = {  # equation -> what the one-line exit-3 message must name
    "diagonal": (lambda tf, x: tf.einsum("aii->ai", tf.reshape(x, [2, 3, 3])), "repeats a label"),
    "one_sided_sum": (lambda tf, x: tf.einsum("ab,bc->a", x, tf.ones([9, 4])), "sums over label(s) c"),
    "broadcast": (lambda tf, x: tf.einsum("...ab,...bc->...ac", x[None], tf.ones([3, 9, 4])), "broadcasting"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_unsupported_einsum_refused_by_name(case, tmp_path):
    import tensorflow as tf

    from tests.support.tf_models import save_frozen

    build, hint = REFUSED[case]
    pb = save_frozen(tmp_path / "m.pb", lambda x: tf.identity(build(tf, x), name="y"), [2, 9])
    code, _, stderr = run_cli("tf2torch", pb, "--outputs", "y", "-o", tmp_path / "out")
    assert code == 3 and hint in stderr and "Einsum" in stderr, stderr
