"""convert.ir.lazy.read_ahead: weights are computed a few items ahead of the writer, in order, with
errors raised at their item and nothing left running when the writer stops early."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from tf_convert.convert.ir import lazy


def _lazy(value: np.ndarray, record: list | None = None) -> lazy.LazyArray:
    def compute(v):
        if record is not None:
            record.append(threading.current_thread().name)
        return v
    return lazy.LazyArray(value.shape, value.dtype, compute, (value,))


def test_order_values_and_shapes_are_kept():
    items = [("scalar", np.float32(3.0)), ("t", np.arange(12, dtype=np.float32).reshape(3, 4).T),
             ("lazy", _lazy(np.ones((2, 2), np.int64)))]
    out = list(lazy.read_ahead(items))
    assert [n for n, _ in out] == ["scalar", "t", "lazy"]
    assert out[0][1].shape == () and out[1][1].flags.c_contiguous
    np.testing.assert_array_equal(out[1][1], np.arange(12, dtype=np.float32).reshape(3, 4).T)


def test_values_are_computed_off_the_writer_thread():
    seen: list[str] = []
    list(lazy.read_ahead([(str(i), _lazy(np.zeros(3), seen)) for i in range(4)]))
    assert seen == ["read-ahead"] * 4


def test_an_error_is_raised_at_its_item():
    def broken(_):
        raise OSError("crc mismatch in shard 3")
    items = [("a", np.zeros(2)), ("b", lazy.LazyArray((2,), np.float64, broken, (np.zeros(2),)))]
    got = []
    with pytest.raises(OSError, match="crc mismatch"):
        for name, _ in lazy.read_ahead(items):
            got.append(name)
    assert got == ["a"]


def test_a_writer_that_stops_early_stops_the_worker():
    computed: list[str] = []
    items = ((str(i), _lazy(np.zeros(2), computed)) for i in range(1000))
    reader = lazy.read_ahead(items, depth=2)
    next(reader)
    reader.close()
    time.sleep(0.2)
    assert len(computed) <= 5
    assert not [t for t in threading.enumerate() if t.name == "read-ahead"]


@pytest.mark.parametrize("shape, axes", [((3, 3, 64, 96), (3, 2, 0, 1)), ((300, 700), (1, 0)),
                                         ((5, 7, 11, 13), (2, 0, 3, 1)), ((3, 3, 1024, 1024), (3, 2, 0, 1)),
                                         ((1, 2048, 2304), (2, 0, 1))])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int8"])
def test_transposed_blocks_equal_numpy(shape, axes, dtype):
    """transposed copies big arrays block by block (source order first, then permuted; over 16 MB in
    two threads): the values are numpy's transpose, for any axes and item size."""
    from tf_convert.convert.ir.lazy import copy_tiled, transposed

    value = (np.arange(np.prod(shape)) % 251).astype(dtype).reshape(shape)
    expected = np.ascontiguousarray(value.transpose(axes))
    assert np.array_equal(transposed(value, axes), expected)
    out = np.zeros(expected.shape, dtype)
    copy_tiled(out, value.transpose(axes))
    assert np.array_equal(out, expected)
