"""`--into` with BART's embeddings, without transformers 4 (the whole model: bench/into_hf_sweep.py, slow): a word
embedding that is an `nn.Embedding` subclass with a forward of its own (scaled), learned positions that start at
row 2 of their table (BART's offset), and a padding mask TF tiles over the query axis. TF's graph adds the
positions as a constant (rows 2..L+1 of the table): the whole table comes from the SavedModel's variable, and a
module that picks other rows is refused (exit 3). Against TensorFlow at two sequence lengths."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from tf_convert import app as convert

tf = pytest.importorskip("tensorflow")

VOCAB, WIDTH, POSITIONS, OFFSET = 30, 8, 24, 2
HERE = "tests.app.test_into_offset_positions"


class ScaledEmbedding(nn.Embedding):
    def forward(self, input_ids):
        return super().forward(input_ids) * 2.0


class LearnedPositions(nn.Embedding):
    """BART's: rows `offset + position`."""

    def __init__(self, offset: int):
        super().__init__(POSITIONS + OFFSET, WIDTH)
        self.offset = offset

    def forward(self, input_ids):
        positions = torch.arange(input_ids.shape[1], dtype=torch.long, device=self.weight.device)
        return super().forward(positions + self.offset)


class Encoder(nn.Module):
    def __init__(self, offset: int = OFFSET):
        super().__init__()
        self.embed_tokens = ScaledEmbedding(VOCAB, WIDTH)
        self.embed_positions = LearnedPositions(offset)
        self.query = nn.Linear(WIDTH, WIDTH)
        self.key = nn.Linear(WIDTH, WIDTH)

    def forward(self, input_ids, attention_mask):
        tokens = self.embed_tokens(input_ids)
        x = tokens + self.embed_positions(input_ids).expand_as(tokens)  # XLM's spelling of the broadcast
        scores = self.query(x) @ self.key(x).transpose(1, 2)
        mask = (1.0 - attention_mask[:, None, :].float()) * -1e9
        probs = torch.softmax(scores + mask.expand(-1, x.shape[1], -1), dim=-1)
        return probs @ x


class ShiftedRows(Encoder):
    def __init__(self):
        super().__init__(offset=0)


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    rng = np.random.default_rng(5)

    def variable(*shape):
        return tf.Variable(rng.normal(0.0, 0.5, shape).astype(np.float32))

    class Model(tf.Module):
        def __init__(self):
            super().__init__()
            self.table, self.positions = variable(VOCAB, WIDTH), variable(POSITIONS + OFFSET, WIDTH)
            self.wq, self.bq, self.wk, self.bk = variable(WIDTH, WIDTH), variable(WIDTH), variable(WIDTH, WIDTH), \
                variable(WIDTH)

        @tf.function(input_signature=[tf.TensorSpec((None, None), tf.int32, name="input_ids"),
                                      tf.TensorSpec((None, None), tf.int32, name="attention_mask")])
        def __call__(self, input_ids, attention_mask):
            length = tf.shape(input_ids)[1]
            x = tf.gather(self.table, input_ids) * 2.0 + tf.gather(self.positions, tf.range(length) + OFFSET)
            scores = tf.matmul(tf.tensordot(x, self.wq, 1) + self.bq, tf.tensordot(x, self.wk, 1) + self.bk,
                               transpose_b=True)
            mask = tf.tile(attention_mask[:, None, :], (1, length, 1))
            probs = tf.nn.softmax(scores + (1.0 - tf.cast(mask, tf.float32)) * -1e9, axis=-1)
            return {"last_hidden_state": tf.matmul(probs, x)}

    path = tmp_path_factory.mktemp("offset_positions") / "model"
    model = Model()
    tf.saved_model.save(model, str(path), signatures={"serving_default": model.__call__})
    return path


def _max_error(source: Path, model: nn.Module) -> float:
    signature = tf.saved_model.load(str(source)).signatures["serving_default"]
    worst = 0.0
    for steps in (7, 11):
        ids = np.random.default_rng(steps).integers(0, VOCAB, (2, steps)).astype(np.int32)
        mask = np.ones_like(ids)
        mask[1, -2:] = 0
        want = signature(input_ids=tf.constant(ids), attention_mask=tf.constant(mask))["last_hidden_state"].numpy()
        with torch.no_grad():
            got = model(torch.from_numpy(ids).long(), torch.from_numpy(mask).long()).numpy()
        worst = max(worst, float(np.abs(got - want).max() / np.abs(want).max()))
    return worst


def test_positions_at_an_offset_and_a_scaled_embedding_subclass(source, tmp_path):
    doc = convert.into(source, f"{HERE}:Encoder", tmp_path / "out", input_shape={"input_ids": (2, 7),
                                                                                 "attention_mask": (2, 7)})
    records = {r["parameter"]: r for r in doc["parameters"]}
    assert records["embed_positions.weight"]["shape"] == [POSITIONS + OFFSET, WIDTH], records
    assert {"embed_tokens", "embed_positions"} <= {p["module"] for p in doc["pairs"]}, doc["pairs"]
    model = Encoder().eval()
    model.load_state_dict(torch.load(tmp_path / "out" / "state_dict.pt"), strict=True)
    error = _max_error(source, model)
    print(f"\npositions at row {OFFSET}, scaled embedding, tiled mask: {error:.2g}")
    assert error < 1e-5, error


def test_a_module_picking_other_rows_is_refused(source, tmp_path):
    from tf_convert.convert.errors import ConvertError

    with pytest.raises(ConvertError) as failure:
        convert.into(source, f"{HERE}:ShiftedRows", tmp_path / "out", input_shape={"input_ids": (2, 7),
                                                                                   "attention_mask": (2, 7)})
    message = str(failure.value)
    assert failure.value.exit_code == 3 and "module path 'embed_positions' adds rows 0..6 of its table; TF's graph " \
        "adds rows 2..8" in message, message
