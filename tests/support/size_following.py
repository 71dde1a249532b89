"""What the size-following tests (sequence lengths, free sequences, volume sizes) share."""

from __future__ import annotations

from tf_convert.convert.ir import Graph


def assert_bound_as_expected(graph: Graph, expected: str | None) -> None:
    """`graph` follows the input size (expected None), or is bound with `expected` in size_bound's reason."""
    from tf_convert.convert.padding.sizes import size_bound

    bound = size_bound(graph)
    if expected is None:
        assert bound is None, bound
    else:
        assert bound is not None and expected in bound, bound


def free_twin(build, keras, model, free_size):
    """The model `build(keras, free_size)` makes (a free length or volume: None axes), holding `model`'s
    weights: TF's reference at any size for a model converted at `model`'s fixed one."""
    twin = build(keras, free_size)
    twin.set_weights(model.get_weights())
    return twin
