"""Arrays whose values are computed only when they are needed (a weight read from a checkpoint at
the moment a writer stores it), so a conversion holds one weight at a time, not the model.

A `LazyArray` knows its shape and dtype and a recipe: `fn(*args)`, where args that are themselves lazy
are materialized first. `.transpose`, `.reshape`, `.astype` and indexing have ndarray's names and
return new lazy arrays, so handler code such as `w.transpose(3, 2, 0, 1)` works on both kinds;
`np.asarray(lazy)` (or `.read()`) computes the value. Lazy arrays are immutable: copying returns the
same object, and pickling stores the recipe (module-level functions and their arguments), not values.
"""

from __future__ import annotations

import math
import queue
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Callable

import numpy as np


class LazyArray:
    __slots__ = ("shape", "dtype", "_fn", "_args")
    __array_priority__ = 20  # ndarray <op> lazy defers to numpy's materializing __array__

    def __init__(self, shape: Sequence[int], dtype: Any, fn: Callable[..., Any], args: tuple = ()):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self._fn, self._args = fn, tuple(args)

    # ---- what ndarray has without computing anything ---------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    @property
    def recipe(self) -> tuple[Callable[..., Any], tuple]:
        """(fn, args): what the value is computed from, for code that reads the same source another way."""
        return self._fn, self._args

    def __repr__(self) -> str:
        return f"LazyArray(shape={self.shape}, dtype={self.dtype.name}, fn={getattr(self._fn, '__name__', self._fn)})"

    # ---- the value -----------------------------------------------------------------------------------
    def read(self) -> np.ndarray:
        """Compute the value (each call computes it again; nothing is kept)."""
        value = np.asarray(self._fn(*(materialize(a) for a in self._args)))
        if value.shape != self.shape or value.dtype != self.dtype:
            raise AssertionError(f"{self!r} produced {value.dtype}{list(value.shape)}")
        return value

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        value = self.read()
        return value if dtype is None else value.astype(dtype, copy=False)

    # scalars and lists (shape arithmetic on a small constant) are computed at once
    def __int__(self) -> int:
        return int(self.read())

    def __float__(self) -> float:
        return float(self.read())

    def item(self, *args: Any) -> Any:
        return self.read().item(*args)

    def tolist(self) -> Any:
        return self.read().tolist()

    @property
    def flat(self) -> Any:
        return self.read().flat

    __hash__ = None  # type: ignore[assignment] - like ndarray: compared by value, not hashable

    # ---- lazy views with ndarray's method names -------------------------------------------------------
    def transpose(self, *axes: Any) -> LazyArray:
        axes = tuple(axes[0]) if len(axes) == 1 and isinstance(axes[0], (tuple, list)) else axes
        axes = tuple(int(a) for a in axes) or tuple(reversed(range(self.ndim)))
        if axes == tuple(range(self.ndim)):
            return self
        shape = tuple(self.shape[a] for a in axes)
        if getattr(self._fn, "reads_transposed", False):  # one copy, no second whole-tensor array
            source, before = self._view()
            return LazyArray(shape, self.dtype, self._fn, (*self._args[:-1], (source, tuple(before[a] for a in axes))))
        return LazyArray(shape, self.dtype, transposed, (self, axes))

    def _view(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """For a recipe that `reads_transposed` (its last argument is a view (shape, axes) or None: its
        bytes read as `shape`, then transposed to `axes`): that view."""
        return self._args[-1] or (self.shape, tuple(range(self.ndim)))

    def _split_view(self, shape: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        """The view that reads this array reshaped to `shape`, when the reshape only splits axes (each
        axis becomes consecutive axes of the same total size); None otherwise."""
        if 0 in shape or 1 in shape or 0 in self.shape or 1 in self.shape:
            return None
        groups, at = [], 0
        for size in self.shape:
            first, product = at, 1
            while product < size and at < len(shape):
                product *= shape[at]
                at += 1
            if product != size:
                return None
            groups.append(list(range(first, at)))
        if at != len(shape):
            return None
        source, before = self._view()
        by_source = sorted(range(self.ndim), key=lambda j: before[j])  # current axes in source order
        new_source, index = [], {}
        for j in by_source:
            for k in groups[j]:
                index[k] = len(new_source)
                new_source.append(shape[k])
        return tuple(new_source), tuple(index[k] for k in range(len(shape)))

    @property
    def T(self) -> LazyArray:  # upper case: ndarray's name
        return self.transpose()

    def reshape(self, *shape: Any, order: str = "C") -> LazyArray:
        if order != "C":
            raise NotImplementedError("a lazy array reshapes in C order only")
        shape = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        shape = _resolve(tuple(int(d) for d in shape), self.size)
        if shape == self.shape:
            return self
        view = self._split_view(shape) if getattr(self._fn, "reads_transposed", False) else None
        if view is not None:  # read in the split shape: a transpose after it still folds into the read
            return LazyArray(shape, self.dtype, self._fn, (*self._args[:-1], view))
        return LazyArray(shape, self.dtype, _reshape, (self, shape))

    def astype(self, dtype: Any, copy: bool = True) -> LazyArray:
        dtype = np.dtype(dtype)
        if dtype == self.dtype:
            return self
        return LazyArray(self.shape, dtype, _astype, (self, dtype))

    def __getitem__(self, index: Any) -> LazyArray:
        shape = np.broadcast_to(np.empty((), self.dtype), self.shape)[index].shape  # a view of no memory
        return LazyArray(shape, self.dtype, _getitem, (self, index))

    # ---- immutable: copies are the object itself; pickles hold the recipe ---------------------------
    def __copy__(self) -> LazyArray:
        return self

    def __deepcopy__(self, memo: dict) -> LazyArray:
        return self

    def __reduce__(self) -> tuple:
        return LazyArray, (self.shape, self.dtype, self._fn, self._args)


def _materializing(name: str) -> Callable[..., Any]:
    """Arithmetic and comparisons compute the value, then behave exactly as ndarray's."""
    def method(self: LazyArray, *args: Any) -> Any:
        return getattr(self.read(), name)(*args)

    method.__name__ = name
    return method


for _name in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__add__", "__radd__", "__sub__",
              "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__", "__pow__", "__neg__", "__abs__",
              "__bool__", "__matmul__", "__rmatmul__"):
    setattr(LazyArray, _name, _materializing(_name))


_BLOCK_BYTES = 2 << 20  # bytes per block of a big transpose: stays in the core's caches between its two copies
_PARALLEL_BYTES = 16 << 20  # a transpose this big is shared by two threads


def transposed(value: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """value.transpose(axes), contiguous. A big one is copied block by block (copy_tiled): numpy's single
    strided copy misses the cache on nearly every read (2x slower for a 400 MB fc weight)."""
    view = np.asarray(value).transpose(axes)
    if view.ndim < 2 or view.nbytes < (1 << 20) or view.flags.c_contiguous:
        return np.ascontiguousarray(view)
    out = np.empty(view.shape, view.dtype)
    copy_tiled(out, view)
    return out


def copy_tiled(dest: np.ndarray, view: np.ndarray) -> None:
    """dest[...] = view (same shape), block by block of the first axis. Each block is first copied in the
    order its bytes lie in the source (long runs: cheap even from a cold mapped file), then permuted
    from that cache-resident copy (HWIO -> OIHW of a 3x3x1024x1024 kernel 45 -> 22 ms, a
    4096x8192 transpose 210 -> 80 ms, against tiles permuted straight from the source). A big copy
    shares its blocks with a second thread (numpy's copies release the GIL)."""
    rest = math.prod(view.shape[1:])
    if view.ndim < 2 or not view.size:
        dest[...] = view
        return
    rows = max(1, _BLOCK_BYTES // (rest * view.itemsize))
    starts = range(0, view.shape[0], rows)
    if view.nbytes < _PARALLEL_BYTES or len(starts) < 2:
        _copy_blocks(dest, view, starts, rows)
        return
    errors: list[BaseException] = []

    def helper() -> None:
        try:
            _copy_blocks(dest, view, starts[1::2], rows)
        except BaseException as error:  # noqa: BLE001 - raised by the caller below
            errors.append(error)

    thread = threading.Thread(target=helper, name="transpose", daemon=True)
    thread.start()
    try:
        _copy_blocks(dest, view, starts[0::2], rows)
    finally:
        thread.join()
    if errors:
        raise errors[0]


def _copy_blocks(dest: np.ndarray, view: np.ndarray, starts: Sequence[int], rows: int) -> None:
    """copy_tiled's blocks [first, first + rows) of the first axis for each first in `starts`."""
    order = sorted(range(view.ndim), key=lambda a: -abs(view.strides[a]))  # the view's axes in source order
    back = tuple(int(a) for a in np.argsort(order))
    buffer = np.empty(min(rows, view.shape[0]) * math.prod(view.shape[1:]), view.dtype)
    for first in starts:
        part = view[first:first + rows]
        staged = buffer[:part.size].reshape([part.shape[a] for a in order])
        staged[...] = part.transpose(order)
        dest[first:first + rows] = staged.transpose(back)


def _reshape(value: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    return np.ascontiguousarray(value).reshape(shape)


def _astype(value: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return value.astype(dtype)


def _getitem(value: np.ndarray, index: Any) -> np.ndarray:
    return np.ascontiguousarray(value[index])


def _resolve(shape: tuple[int, ...], size: int) -> tuple[int, ...]:
    if shape.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        shape = tuple(size // known if d == -1 and known else d for d in shape)
    if math.prod(shape) != size:
        raise ValueError(f"cannot reshape array of size {size} into shape {shape}")
    return shape


def is_lazy(value: Any) -> bool:
    return isinstance(value, LazyArray)


def materialize(value: Any) -> Any:
    """The value of a lazy array; anything else as it is."""
    return value.read() if isinstance(value, LazyArray) else value


def apply(fn: Callable[..., Any], *args: Any, shape: Sequence[int], dtype: Any) -> Any:
    """`fn(*args)`, lazily when an argument is lazy (its result must have `shape` and `dtype`), else at
    once. For passes that compute a weight from weights (batch norm folded into a conv): `fn` should be
    a module-level function so the graph still pickles."""
    if any(isinstance(a, LazyArray) for a in args):
        return LazyArray(shape, dtype, fn, args)
    return np.asarray(fn(*args))


def nbytes(value: Any) -> int:
    """Bytes of an array, lazy or not, without computing it."""
    return int(value.nbytes) if hasattr(value, "nbytes") else int(np.asarray(value).nbytes)


def contiguous(value: Any, dtype: Any = None) -> Any:
    """np.ascontiguousarray(value, dtype), lazily for a lazy value (whose results are contiguous)."""
    if isinstance(value, LazyArray):
        return value if dtype is None else value.astype(dtype)
    array = np.asarray(value, dtype)
    return np.ascontiguousarray(array).reshape(array.shape)  # ascontiguousarray alone makes a 0-d value 1-d


def read_ahead(items: Iterable[tuple[str, Any]], depth: int = 2) -> Iterator[tuple[str, np.ndarray]]:
    """`(name, contiguous ndarray)` for each `(name, lazy or not)`, computed by a worker thread up to
    `depth` items ahead of the consumer, so reading, transposing and checksumming the next weights
    overlap the write of this one (numpy copies, CRCs and file writes release the GIL). At most
    `depth + 2` values are alive at once. An error in the worker is raised here, at its item; a
    consumer that stops early stops the worker."""
    buffer: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()
    done = object()

    def put(entry: Any) -> bool:
        while not stop.is_set():
            try:
                buffer.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        try:
            for name, value in items:
                value = np.asarray(materialize(value))
                value = value if value.flags.c_contiguous else value.copy(order="C")  # 0-d stays 0-d
                if not put((name, value, None)):
                    return
            put((done, None, None))
        except BaseException as error:  # noqa: BLE001 - handed to the consumer, raised there
            put((done, None, error))

    worker = threading.Thread(target=work, name="read-ahead", daemon=True)
    worker.start()
    try:
        while True:
            name, value, error = buffer.get()
            if name is done:
                if error is not None:
                    raise error
                return
            yield name, value
            del value
    finally:
        stop.set()
        worker.join()
