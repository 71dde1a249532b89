"""A warm spare for TensorFlow's reference run (issue 25): a process that has imported TensorFlow and Keras
and waits, for a while, to be the next check's reference child.

Importing TF and Keras is ~2.5 s of a MobileNetV2 `--verify` that takes ~4 s when TF's outputs are not
in the reference store. A `--verify` run whose reference ran in a child leaves one spare (`leave`); the
next run on this machine, of any source, claims it (`claim`) instead of starting a child, and leaves the
next. A spare serves one run, as a child would, and ends: nothing crosses runs. Unclaimed, it ends after
IDLE_S seconds (TF_CONVERT_SPARE_IDLE). It holds ~0.5 GB meanwhile, and its output goes nowhere: a
program waiting for `convert`'s output (a CI step, `$(...)`) does not wait for the spare.

It listens on a Unix socket in the reference store's directory (0700 and ours: reference_store._usable),
named after what decides TF's outputs (reference_store.environment: TF's and Keras's versions, the kernel
settings, the tool's reference code) and the Python that runs it, so a run only claims a spare that
computes what its own child would; the peer's uid is checked too. The store off (TF_CONVERT_CACHE_DIR=off, as in the
tests) or TF_CONVERT_SPARE=off: no spare. Anything wrong with a spare (none, gone, busy, slow) means a child
of one's own, as before.

usage (by `leave`): python -m tf_convert.app.reference_spare SOCKET
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

ENV = "TF_CONVERT_SPARE"  # "off" (or "0", "no", "false"): never leave or claim a spare
IDLE_ENV = "TF_CONVERT_SPARE_IDLE"
IDLE_S = 180.0  # an unclaimed spare ends after this many seconds
READY_S = 20.0  # how long a claim waits for a spare still importing TF before it starts a child instead
_MAX_PATH = 107  # a Unix socket's path must fit sun_path (108 bytes on Linux, with its NUL)


def socket_path(root: Path | None, environ: Mapping[str, str] = os.environ) -> Path | None:
    """The spare's socket for this environment in the store directory `root`; None: no spare here."""
    from .reference_store import OFF, _usable, environment

    if root is None or environ.get(ENV, "").strip().lower() in OFF or not hasattr(socket, "SO_PEERCRED"):
        return None  # (SO_PEERCRED: Linux's Unix sockets, which say who is at the other end)
    mark = repr((environment(environ), sys.executable)).encode()
    path = Path(root) / f"spare-{hashlib.sha256(mark).hexdigest()[:16]}.sock"
    return path if len(os.fsencode(path)) <= _MAX_PATH and _usable(Path(root)) else None


class Claimed:
    """A spare that has agreed to be this run's reference child (reference_process.Child drives it)."""

    def __init__(self, conn: socket.socket, pid: int):
        self.conn, self.pid = conn, pid
        self.code: int | None = None

    def start(self, work: Path) -> None:
        """The child's temp dir (its source file written): the spare checks TF for it, then waits for go()."""
        self.conn.sendall(f"work {work}\n".encode())

    def go(self) -> None:
        with contextlib.suppress(OSError):  # it has ended already: wait() says how
            self.conn.sendall(b"go\n")

    def wait(self) -> int:
        """The spare's exit code as a child's (1 when it ended without one: killed, crashed)."""
        if self.code is None:
            reply = b""
            with contextlib.suppress(OSError):
                reply = self.conn.makefile("rb").readline()
            self.code = int(reply.split()[1]) if reply.startswith(b"exit ") else 1
        return self.code

    def kill(self) -> None:
        """End the spare if it still runs (idempotent)."""
        if self.code is None:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
            self.code = -9
        self.conn.close()


def claim(path: Path | None, wait_s: float = READY_S) -> Claimed | None:
    """The spare listening at `path`, now this run's; None when there is none ready within `wait_s`."""
    if path is None:
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.settimeout(wait_s)
        conn.connect(str(path))
        conn.sendall(b"claim\n")
        reply = conn.makefile("rb").readline()
        if not reply.startswith(b"ready ") or _peer_uid(conn) != os.geteuid():
            raise OSError(errno.EPROTO, "not a spare")
        conn.settimeout(None)
        return Claimed(conn, int(reply.split()[1]))
    except (OSError, ValueError):
        conn.close()
        return None


def claim_soon(path: Path | None) -> Callable[[], Claimed | None] | None:
    """claim(path) in a thread, so that a spare still importing TF does not hold up the caller; the function
    returned waits for the answer. None where no spare's socket exists (nothing to wait for)."""
    if path is None or not path.exists():
        return None
    answer: list[Claimed | None] = []
    thread = threading.Thread(target=lambda: answer.append(claim(path)), name="claim-spare", daemon=True)
    thread.start()

    def result() -> Claimed | None:
        thread.join()
        return answer[0] if answer else None

    return result


def leave(path: Path | None) -> None:
    """Start a spare for the next run at `path`, unless one listens there already (of two started at once,
    the second ends when it finds the first)."""
    if path is None or _alive(path):
        return
    # in "/", holding no directory of the user's; its import path made absolute to find the same tf_convert
    env = dict(os.environ)
    if env.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in env["PYTHONPATH"].split(os.pathsep) if p)
    with contextlib.suppress(OSError):
        subprocess.Popen([sys.executable, "-m", "tf_convert.app.reference_spare", str(path)], cwd="/", env=env,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, close_fds=True)


def pids(root: Path) -> list[int]:
    """The processes that are spares for sockets in the store directory `root` (from /proc; [] without it)."""
    found = []
    with contextlib.suppress(OSError):
        for entry in os.listdir("/proc"):
            try:
                command = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if b"tf_convert.app.reference_spare" in command and os.fsencode(root) in command:
                found.append(int(entry))
    return found


def _peer_uid(conn: socket.socket) -> int:
    pid_uid_gid = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", pid_uid_gid)[1]


def _listen(path: Path) -> socket.socket | None:
    """The socket bound at `path`; None when a live spare has it (a stale file there is replaced)."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    for _ in range(2):
        try:
            server.bind(str(path))
            os.chmod(path, 0o600)
            server.listen(8)
            return server
        except OSError as error:
            if error.errno != errno.EADDRINUSE or _alive(path):
                break
            with contextlib.suppress(OSError):
                path.unlink()  # a spare that died without removing it
    server.close()
    return None


def _alive(path: Path) -> bool:
    """Something listens at `path` (a spare takes a connection that says nothing as a probe)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(2)
        probe.connect(str(path))
        return True
    except OSError:
        return False
    finally:
        probe.close()


def _claimed_by(server: socket.socket, idle_s: float) -> socket.socket | None:
    """The connection of the run that claims this spare; None after `idle_s` without one."""
    server.settimeout(idle_s)
    while True:
        try:
            conn, _ = server.accept()
        except socket.timeout:
            return None
        try:
            conn.settimeout(5)
            if _peer_uid(conn) == os.geteuid() and conn.makefile("rb").readline() == b"claim\n":
                conn.settimeout(None)
                return conn
        except OSError:
            pass
        conn.close()  # a probe, or not ours


def main(path: Path, environ: Mapping[str, str] = os.environ) -> int:
    """Be a spare at `path`: listen, import TF and Keras, wait to be claimed, then serve as a child."""
    from . import reference_process
    from .requirements import missing, reference_needs

    server = _listen(path)
    if server is None:
        return 0
    inode = os.stat(path).st_ino
    try:
        if any(missing(need) for need in reference_needs("keras_v3")):  # TF and Keras, imported now
            return 0
        conn = _claimed_by(server, float(environ.get(IDLE_ENV) or IDLE_S))
    finally:
        server.close()
        with contextlib.suppress(OSError):
            if os.stat(path).st_ino == inode:  # ours still: the next spare may have bound its own
                path.unlink()
    if conn is None:
        return 0
    conn.sendall(f"ready {os.getpid()}\n".encode())
    lines = conn.makefile("rb")
    request = lines.readline()
    if not request.startswith(b"work "):
        return 1
    code = reference_process.serve_spare(Path(request[5:].decode().strip()), lines.readline, conn)
    with contextlib.suppress(OSError):
        conn.sendall(f"exit {code}\n".encode())
    return code


if __name__ == "__main__":
    from .interrupts import exit_now

    exit_now(main(Path(sys.argv[1])))
