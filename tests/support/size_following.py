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
