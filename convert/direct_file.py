"""A write-only file for big weight files that goes around the page cache and is durable when closed.

Writing gigabytes through the page cache costs the kernel a page allocation and a copy per 4 KB, then a
second pass to write them back (on this kind of VM 3-6 s of system CPU for 2.6 GB, more than the rest of
a conversion); `O_DIRECT` hands the disk our own buffer instead. O_DIRECT needs block-aligned offsets,
lengths and memory, so writes are gathered in an aligned staging buffer that goes to disk whole, by a
writer thread while the next one fills (the caller waits for the disk only when it is a stage behind).
It is written front to back: a seek forward leaves a hole, and a seek back may rewrite only what is still
in the stage (every writer here writes a header before its data). `close()` writes the last partial
block, cuts the file to its length and fsyncs it: the bytes on disk are exactly those written, as with a plain file, and
they are durable once close returns. Where the file system refuses O_DIRECT (tmpfs, some network file
systems) the same code writes through the page cache and still fsyncs.

`open_direct(path)` returns it; it has what the weight writers use: write, seek, tell, flush, close, and
is a context manager.
"""

from __future__ import annotations

import errno
import io
import os
import queue
import threading
from pathlib import Path
from typing import Any

import numpy as np

BLOCK = 4096  # alignment of offsets, lengths and memory: covers 512-byte and 4 KB logical blocks
STAGE = 4 << 20  # bytes per write (two stages: one filling, one being written): long enough for the disk


def _aligned(size: int) -> np.ndarray:
    raw = np.empty(size + BLOCK, np.uint8)
    start = -raw.ctypes.data % BLOCK
    return raw[start:start + size]


def _as_bytes(data: Any) -> np.ndarray:
    """A flat uint8 view of bytes, a memoryview or a contiguous array (no copy)."""
    if isinstance(data, np.ndarray):
        return data.reshape(-1).view(np.uint8)
    return np.frombuffer(data, np.uint8)


class DirectFile:
    """See the module docstring. Not thread-safe: one writer at a time, as a file object."""

    def __init__(self, path: str | Path, stage: int = STAGE):
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)
        self.name = str(path)
        self._fd = -1
        direct = getattr(os, "O_DIRECT", 0)
        try:
            self._fd = os.open(path, flags | direct, 0o666)
        except OSError as e:
            if not direct or e.errno != errno.EINVAL:  # only "this file system has no O_DIRECT" falls back
                raise
            self._fd = os.open(path, flags, 0o666)
        self._stage = _aligned(stage)
        self._spare: queue.Queue = queue.Queue()  # the other stage, back from the writer thread
        self._spare.put(_aligned(stage))
        self._pending: queue.Queue = queue.Queue()  # (stage, offset) for the writer thread; None: stop
        self._writer: threading.Thread | None = None
        self._failure: list[BaseException] = []  # the writer thread's error, raised to the caller
        self._base = 0  # file offset of _stage[0] (a multiple of BLOCK); everything below it is handed off
        self._fill = 0  # bytes of _stage holding data
        self._pos = 0
        self._size = 0
        self.closed = False

    # ---- what a file object has ------------------------------------------------------------------------
    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self._pos, os.SEEK_END: self._size}[whence]
        if base + offset < 0:
            raise OSError(errno.EINVAL, "negative seek position")
        self._pos = base + offset
        return self._pos

    def flush(self) -> None:
        """Nothing: bytes reach the disk in whole stages, the rest at close (which makes them durable)."""

    def write(self, data: Any) -> int:
        view = _as_bytes(data)
        n = len(view)
        if self._pos < self._base and n:
            raise io.UnsupportedOperation(f"{self.name}: written front to back; byte {self._pos} has gone to disk")
        gap = self._pos - (self._base + self._fill)
        if gap > 0:  # past the end (a seek forward): the hole reads as zeros, as in a plain file
            self._append(np.zeros(min(gap, len(self._stage)), np.uint8), gap)
        while len(view):
            at = self._pos - self._base
            take = min(len(view), len(self._stage) - at)
            self._stage[at:at + take] = view[:take]
            self._fill = max(self._fill, at + take)
            self._pos += take
            self._size = max(self._size, self._pos)
            view = view[take:]
            if self._fill == len(self._stage):
                self._write_stage()
        return n

    def close(self) -> None:
        """Write what is left, cut the file to its length, fsync it and close it."""
        if self.closed:
            return
        try:
            self._stop_writer()
            if self._fill:
                length = -(-self._fill // BLOCK) * BLOCK
                self._stage[self._fill:length] = 0
                self._pwrite(self._stage[:length], self._base)
            os.ftruncate(self._fd, self._size)
            os.fsync(self._fd)
        finally:
            self.closed = True
            os.close(self._fd)

    def discard(self) -> None:
        """Close without writing what is left (after a failure: the file is deleted with its directory)."""
        if not self.closed:
            self.closed = True
            try:
                self._stop_writer(raise_failure=False)
            finally:
                os.close(self._fd)

    def __enter__(self) -> DirectFile:
        return self

    def __exit__(self, kind: Any, *rest: Any) -> None:
        if kind is None:
            self.close()
        else:
            self.discard()

    # ---- the staging buffer and the disk ---------------------------------------------------------------
    def _append(self, zeros: np.ndarray, count: int) -> None:
        """`count` zero bytes at the end of the stage (`zeros` is a zero block of up to a stage)."""
        while count:
            take = min(count, len(zeros))
            self._pos = self._base + self._fill
            self.write(zeros[:take])
            count -= take

    def _write_stage(self) -> None:
        """Hand the full stage to the writer thread and go on filling the spare one."""
        if self._writer is None:
            self._writer = threading.Thread(target=self._write_pending, name="direct-write", daemon=True)
            self._writer.start()
        self._pending.put((self._stage, self._base))
        self._stage = self._spare.get()  # waits only while the disk is a whole stage behind
        if self._failure:
            raise self._failure[0]
        self._base += len(self._stage)
        self._fill = 0

    def _write_pending(self) -> None:
        while (item := self._pending.get()) is not None:
            stage, offset = item
            try:
                if not self._failure:
                    self._pwrite(stage, offset)
            except BaseException as error:  # noqa: BLE001 - raised in the caller's next write or close
                self._failure.append(error)
            finally:
                self._spare.put(stage)

    def _stop_writer(self, raise_failure: bool = True) -> None:
        if self._writer is not None:
            self._pending.put(None)
            self._writer.join()
            self._writer = None
        if raise_failure and self._failure:
            raise self._failure[0]

    def _pwrite(self, block: np.ndarray, offset: int) -> None:
        view = memoryview(block)
        done = 0
        while done < len(view):
            try:
                done += os.pwrite(self._fd, view[done:], offset + done)
            except OSError as e:
                if e.errno != errno.EINVAL or not self._drop_direct():
                    raise  # as a plain file's write raises it (no file name: the caller names OUT)

    def _drop_direct(self) -> bool:
        """The file system took O_DIRECT at open but refuses the write: go on through the page cache."""
        import fcntl

        flags = fcntl.fcntl(self._fd, fcntl.F_GETFL)
        direct = getattr(os, "O_DIRECT", 0)
        if not flags & direct:
            return False
        fcntl.fcntl(self._fd, fcntl.F_SETFL, flags & ~direct)
        return True


def open_direct(path: str | Path) -> DirectFile:
    """A new (truncated) file at `path`, written around the page cache and fsynced on close."""
    return DirectFile(path)
