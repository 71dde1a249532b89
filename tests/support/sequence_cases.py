"""IR recurrent nodes (the `sequence` family) with random canonical weights."""

from __future__ import annotations

import numpy as np

GATES = {"lstm": 4, "gru": 3, "rnn": 1}


def recurrent_node_spec(op: str, features: int, units: int, seed: int = 0, **attrs) -> tuple[dict, dict]:
    """(attrs, params) of one lstm/gru/rnn node; attrs default to Keras's defaults, sequence out."""
    rng = np.random.default_rng(seed)
    size = GATES[op] * units
    params = {
        "weight_ih": rng.normal(0, 0.5, (size, features)).astype(np.float32),
        "weight_hh": rng.normal(0, 0.5, (size, units)).astype(np.float32),
        "bias_ih": rng.normal(0, 0.3, size).astype(np.float32),
        "bias_hh": rng.normal(0, 0.3, size).astype(np.float32),
    }
    base = {"units": units, "activation": "tanh", "go_backwards": False, "output": "sequence",
            "sequence_order": "processed"}
    if op != "rnn":
        base["recurrent_activation"] = "sigmoid"
    if op == "gru":
        base["reset_after"] = True
    base.update(attrs)
    return base, params


def keras_layer(op: str, attrs: dict, params: dict):
    """The Keras layer computing the node (built and loaded with its weights), for TF references."""
    import keras

    units = attrs["units"]
    kwargs = dict(units=units, activation=attrs["activation"], go_backwards=attrs["go_backwards"],
                  return_sequences=attrs["output"] == "sequence", return_state=attrs["output"] == "last_c")
    if op != "rnn":
        kwargs["recurrent_activation"] = attrs["recurrent_activation"]
    cls = {"lstm": keras.layers.LSTM, "gru": keras.layers.GRU, "rnn": keras.layers.SimpleRNN}[op]
    if op == "gru":
        kwargs["reset_after"] = attrs["reset_after"]
    layer = cls(**kwargs)
    layer.build((None, None, params["weight_ih"].shape[1]))
    if op == "gru" and attrs["reset_after"]:
        bias = np.stack([params["bias_ih"], params["bias_hh"]])
    elif op == "gru":
        assert not np.any(params["bias_hh"]), "Keras's GRU with reset_after=False has no recurrent bias"
        bias = params["bias_ih"]
    else:  # one bias in Keras: the two halves are added unscaled
        bias = params["bias_ih"] + params["bias_hh"]
    layer.set_weights([params["weight_ih"].T, params["weight_hh"].T, bias])
    return layer
