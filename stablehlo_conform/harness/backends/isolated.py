"""The isolated-child protocol: a native backend in its own long-lived process.

Native code may abort its process, so a native backend runs in a child
process (:class:`Isolated`) that turns a dead child into a ``crash`` error
carrying the signal and the captured stderr, and a call past its timeout
into a ``timeout``. The child is a plain subprocess speaking pickled,
length-prefixed frames ``(spec, init, method, args)`` over its stdin/stdout;
it builds ``spec(*init)`` once and keeps it for later calls.
"""

from __future__ import annotations

import os
import signal
import tempfile
from typing import Any

from ...errors import ConformError, Timeout, UnsupportedOp
from .base import BackendCrash, BackendError
from .memory import bounded, inherited_budget


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes | None:
    """``n`` bytes from ``fd``; None at end of file; TimeoutError past ``deadline``."""
    import select
    import time

    chunks: list[bytes] = []
    while n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
        b = os.read(fd, min(n, 1 << 20))
        if not b:
            return None
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


def _write_frame(fd: int, obj: Any) -> None:
    import pickle

    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(len(data).to_bytes(8, "little") + data)
    while view:
        view = view[os.write(fd, view):]


def _read_frame(fd: int, deadline: float | None = None) -> Any:
    import pickle

    head = _read_exact(fd, 8, deadline)
    if head is None:
        raise EOFError
    body = _read_exact(fd, int.from_bytes(head, "little"), deadline)
    if body is None:
        raise EOFError
    return pickle.loads(body)


def _serve() -> None:  # the child process's main loop
    """Read ``(spec, init, method, args)`` frames from stdin, answer on stdout.
    Stray output of native code goes to stderr (a file the parent reads
    when the child dies)."""
    import importlib

    try:  # die with the parent (Linux)
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)
    except Exception:
        pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    budget = inherited_budget()  # --max-memory of the worker's test: each program's call is bounded below
    fin, fout = os.dup(0), os.dup(1)
    os.dup2(2, 1)
    cache: dict[tuple, Any] = {}
    while True:
        try:
            msg = _read_frame(fin)
        except EOFError:
            return
        if msg is None:
            return
        spec, init, method, args = msg
        try:
            obj = cache.get((spec, init))
            if obj is None:
                mod, _, attr = spec.partition(":")
                obj = cache[spec, init] = getattr(importlib.import_module(mod), attr)(*init)
            # --max-memory: what a program's call allocates, temporaries included (not the client's start)
            with bounded(None if method == getattr(obj, "start_method", None) else budget):
                reply: tuple = ("ok", getattr(obj, method)(*args))
        except UnsupportedOp as e:  # rebuilt as it was, not wrapped again
            reply = ("err", (type(e).__name__, e.status, (e.op, e.detail, e.loc)))
        except ConformError as e:
            reply = ("err", (type(e).__name__, e.status, str(e)))
        except Exception as e:
            reply = ("err", (type(e).__name__, "error", f"{type(e).__name__}: {e}"))
        _write_frame(fout, reply)


_ERROR_CLASSES = {"unsupported": UnsupportedOp, "timeout": Timeout, "crash": BackendCrash}
_CHILD = "from stablehlo_conform.harness.backends.isolated import _serve; _serve()"


class Isolated:
    """A persistent child process that runs ``method`` of ``spec(*init)``
    (``spec``: ``"module:Class"`` of a backend class, ``init``: picklable
    constructor arguments).

    The child is a plain subprocess (so daemonic worker processes can have
    one too) speaking pickled frames over its stdin/stdout. A dead child
    becomes :class:`BackendCrash` with the signal and what it wrote to
    stderr during the call; a call over ``timeout`` seconds kills the child
    and raises :class:`Timeout`. The next call starts a fresh child.
    """

    def __init__(self, spec: str, label: str, init: tuple = (), env: dict[str, str] | None = None):
        self.spec = spec
        self.init = tuple(init)
        self.label = label
        self.env = dict(env or {})  # set in the child's environment
        self.proc: Any = None
        # an anonymous file (no name on disk) collects the child's stderr
        self.stderr_file = tempfile.TemporaryFile()

    @property
    def running(self) -> bool:
        """Whether the child process is up (a call would not start one)."""
        return self.proc is not None and self.proc.poll() is None

    def _start(self) -> None:
        import subprocess
        import sys
        from pathlib import Path

        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[3])
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
        env.update(self.env)
        self.proc = subprocess.Popen([sys.executable, "-P", "-c", _CHILD], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr_file, env=env,
                                     close_fds=True)

    def call(self, method: str, *args: Any, timeout: float | None = None) -> Any:
        import time

        if self.proc is None or self.proc.poll() is not None:
            self._start()
        offset = os.fstat(self.stderr_file.fileno()).st_size
        deadline = time.monotonic() + timeout if timeout else None
        try:
            _write_frame(self.proc.stdin.fileno(), (self.spec, self.init, method, args))
            kind, payload = _read_frame(self.proc.stdout.fileno(), deadline)
        except TimeoutError:
            self.close(kill=True)
            raise Timeout(f"{self.label}: timed out after {timeout:g} s") from None
        except (EOFError, BrokenPipeError, OSError):
            try:
                code = self.proc.wait(10)
            except Exception:
                self.proc.kill()
                code = self.proc.wait()
            self.proc = None
            why = describe_exit(code) + self._stderr_tail(offset)
            raise BackendCrash(f"{self.label} crashed: {why}") from None
        if kind == "ok":
            return payload
        cls_name, status, message = payload
        if status == "unsupported":
            raise UnsupportedOp(*message) if isinstance(message, tuple) else UnsupportedOp(self.label, message)
        raise _ERROR_CLASSES.get(status, BackendError)(message)

    def _stderr_tail(self, offset: int = 0) -> str:
        try:
            data = os.pread(self.stderr_file.fileno(), 1 << 20, offset)
            text = data.decode("utf-8", errors="replace")
        except (OSError, ValueError):
            return ""
        lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
        lines = [ln for ln in lines if "Stack dump" not in ln and not ln.lstrip().startswith("#")
                 and not ln.startswith(("I1", "W1", "PLEASE submit"))]
        return ("; stderr: " + " | ".join(lines[-4:])) if lines else ""

    def close(self, kill: bool = False) -> None:
        p = self.proc
        self.proc = None
        if p is None:
            return
        try:
            if not kill:
                p.stdin.close()
                p.wait(2)
        except Exception:
            pass
        if p.poll() is None:
            p.kill()
            p.wait(5)
        for f in (p.stdin, p.stdout):
            try:
                f.close()
            except Exception:
                pass

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            self.close(kill=True)
            self.stderr_file.close()
        except Exception:
            pass


def describe_exit(code: int | None) -> str:
    if code is None:
        return "process died"
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"
