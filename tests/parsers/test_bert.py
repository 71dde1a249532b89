"""A TF1 BERT fine-tuning checkpoint (and its inference re-save) -> every target, exact.

The fixture is written as the original modeling.py writes it (tests/support/bert.py); the reference
is TF's own inference path (the model rebuilt with training=False, restored from the checkpoint).
The training checkpoint has sequence length 8, the inference re-save 6: two sequence lengths.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from tests.app.test_cli import run_cli
from tests.support import bert
from tf_convert import emitters
from tf_convert.app import pipeline
from tf_convert.app.verify import metrics
from tf_convert.convert.ir import check
from tf_convert.emitters.base import EmitOptions

pytest.importorskip("tensorflow")

RTOL = 1e-4
VARIANTS = {
    "gather_erf": bert.BertConfig(),  # embedding_lookup as tf.gather, gelu with erf
    "one_hot_tanh": bert.BertConfig(gelu="tanh", one_hot_embeddings=True),  # use_one_hot_embeddings
}
OUTPUTS = ["pooled", "logits"]
# max relative error vs TF per "<variant>/<checkpoint>" and target, printed at the end of the module
ERRORS: dict[str, dict[str, float]] = {}


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("bert")
    built: dict[str, tuple[Path, Path]] = {}

    def get(variant: str) -> tuple[Path, Path]:
        if variant not in built:
            built[variant] = bert.build_bert(root / variant, VARIANTS[variant])
        return built[variant]

    yield get
    for name, errors in ERRORS.items():
        print(f"\n{name}: " + ", ".join(f"{t} {e:.2e}" for t, e in errors.items()))


def _graph(prefix: Path):
    req = pipeline.Request(source=prefix, target="ir", inputs=list(bert.INPUTS), outputs=OUTPUTS)
    graph = pipeline.load_graph(req)[0]
    assert check.problems(graph) == []  # every node agrees with its catalog row (shape rule, attrs)
    return graph


@pytest.mark.parametrize("checkpoint", ["train", "infer"])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_bert_checkpoint_on_every_target(checkpoints, variant, checkpoint, tmp_path):
    prefix = dict(zip(("train", "infer"), checkpoints(variant)))[checkpoint]
    graph = _graph(prefix)
    assert [graph.tensors[n].dtype for n in graph.inputs] == ["int32"] * 3
    ops = {n.op for n in graph.nodes}
    assert {"layer_norm", "softmax", "matmul", "one_hot"} <= ops  # TF1 layer norm fused; token types
    assert ("gather" in ops) != VARIANTS[variant].one_hot_embeddings
    batch, seq = graph.shape(graph.inputs[0])
    feeds = bert.random_feeds(VARIANTS[variant], batch, seq, seed=3)
    expected = bert.reference(prefix, feeds, VARIANTS[variant])
    errors = {}
    for target in emitters.TARGETS:
        emitter = emitters.get(target)
        g = copy.deepcopy(graph)
        problems = emitter.unsupported(g)
        if target == "caffe":  # BVLC Caffe has no gather, permute or batched matmul: refused by name
            assert "one_hot" in {p.op for p in problems}, problems
            continue
        assert not problems, (target, problems)
        out = tmp_path / target
        out.mkdir()
        emitter.emit(g, out, EmitOptions())
        actual = emitter.run(out, feeds)
        errors[target] = max(metrics(np.asarray(a), expected[name])["max_rel"] for a, name in zip(actual, OUTPUTS))
    ERRORS[f"{variant}/{checkpoint} (seq {seq})"] = errors
    assert max(errors.values()) <= RTOL, errors


def test_done_when_the_cli_gives_an_exact_torch_model(checkpoints, tmp_path):
    """`convert tf2torch bert_model.ckpt --inputs input_ids,input_mask,segment_ids --outputs logits`."""
    train, _ = checkpoints("gather_erf")
    out = tmp_path / "out"
    code, _, stderr = run_cli("tf2torch", train, "--inputs", ",".join(bert.INPUTS), "--outputs", "logits",
                              "-o", out, "--verify")
    assert code == 0, stderr
    doc = json.loads((out / "conversion.json").read_text())
    assert doc["verify"]["passed"] and doc["verify"]["max_rel"] <= RTOL
    # --verify fed ids below the vocabulary size and 0/1 masks and segments; recorded for `convert verify`
    assert [(r["dtype"], r["value_range"]) for r in doc["inputs"]] == [("int32", [0, 30]), ("int32", [0, 2]),
                                                                       ("int32", [0, 2])]
    source = (out / "model.py").read_text()
    assert "nn.LayerNorm(16" in source and "torch.nn.functional.gelu(" in source
    assert "dropout" not in source.lower()  # training-form dropout is identity
    code, stdout, stderr = run_cli("verify", out, "--layers")  # the recorded ranges feed the re-run too
    assert code == 0 and "no divergence" in stdout, stderr  # the per-layer diff over sequence tensors


def _embedding_module(seq: int):
    """A TF2 SavedModel: embedding_lookup on a resource variable (ResourceGather), one_hot(int64) +
    matmul, tf.nn.gelu (erfc form) and BERT's erf gelu, a gather of an activation on axis 1."""
    import tensorflow as tf

    rng = np.random.default_rng(seq)

    class Embedder(tf.Module):
        def __init__(self):
            self.table = tf.Variable(rng.normal(size=(17, 6)).astype(np.float32))
            self.types = tf.Variable(rng.normal(size=(2, 6)).astype(np.float32))
            self.w = tf.Variable(rng.normal(size=(6, 6)).astype(np.float32))

        @tf.function(input_signature=[tf.TensorSpec([2, seq], tf.int32), tf.TensorSpec([2, seq], tf.int64)])
        def __call__(self, ids, segments):
            x = tf.nn.embedding_lookup(self.table, ids) + tf.matmul(tf.one_hot(segments, 2), self.types)
            x = tf.nn.gelu(tf.matmul(x, self.w), approximate=False)
            x = x * 0.5 * (1.0 + tf.math.erf(x / tf.sqrt(2.0)))
            return {"out": tf.gather(x, [seq - 1, 0], axis=1)}

    return Embedder()


@pytest.mark.parametrize("seq", [5, 9])
def test_saved_model_embedding_lookup_on_every_target(seq, tmp_path):
    import tensorflow as tf

    from tests.support.every_target import errors_per_target

    module = _embedding_module(seq)
    tf.saved_model.save(module, str(tmp_path / "sm"))
    graph = pipeline.load_graph(pipeline.Request(source=tmp_path / "sm", target="ir"))[0]
    assert [graph.tensors[n].dtype for n in graph.inputs] == ["int32", "int64"] and check.problems(graph) == []
    rng = np.random.default_rng(1)
    feeds = [rng.integers(0, 17, (2, seq)).astype(np.int32), rng.integers(0, 2, (2, seq)).astype(np.int64)]
    expected = [module(*feeds)["out"].numpy()]
    errors = errors_per_target(graph, feeds, expected, tmp_path, refused=("caffe",))
    ERRORS[f"saved_model embedding (seq {seq})"] = errors
    assert max(errors.values()) <= RTOL, errors


REFUSED = {  # TF graph -> what the one-line exit-3 message must name
    # (a plain erf and a cast to bool convert: the erf and cast IR ops)
    # (float64 arithmetic converts too: tests/parsers/test_wide_dtypes.py); unsigned arithmetic does not
    "cast_to_uint16": (lambda tf, x: tf.identity(tf.cast(tf.cast(x, tf.uint16) * 2, tf.float32), name="y"),
                       "of a uint16 tensor"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_refused_by_name(case, tmp_path):
    import tensorflow as tf

    from tests.support.tf_models import save_frozen

    build, hint = REFUSED[case]
    pb = save_frozen(tmp_path / "m.pb", lambda x: build(tf, x), [2, 3])
    code, _, stderr = run_cli("tf2torch", pb, "--outputs", "y", "-o", tmp_path / "out")
    assert code == 3 and hint in stderr, stderr
