"""Running many files in worker processes.

Each worker is a separate Python process (spawned, so the parent never
imports the bindings). A worker reports ``start`` before each test and a
``result`` after it. When a worker dies (a native crash in the bindings or a
backend) or a test outlives its timeout, the parent records that test as
``crash`` / ``timeout``, starts a fresh worker and resubmits the file with
the finished tests skipped. Results are handed to a callback as they arrive,
so nothing computed is lost.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from typing import Any

from .cases import Options, base_record

GRACE = 5.0  # seconds past the cooperative deadline before a worker is killed


def _worker_main(conn, opts: Options) -> None:  # runs in the child
    import sys

    from .cases import run_file

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg is None:
            return
        path, skip = msg
        try:
            for ev in run_file(path, opts, frozenset(skip)):
                conn.send(ev)
        except Exception as e:  # never leave the parent waiting
            rec = base_record(path, f"{path}::<file>", "", 0)
            rec["message"] = f"internal error: {type(e).__name__}: {e}"
            conn.send(("result", rec))
        conn.send(("done", path))
        sys.stdout.flush()


@dataclass
class _Worker:
    proc: Any
    conn: Any
    path: str | None = None
    current: str | None = None
    started: float = 0.0
    done_ids: set[str] = field(default_factory=set)


class Runner:
    def __init__(self, opts: Options, jobs: int = 1, on_result: Callable[[dict], None] | None = None):
        self.opts = opts
        self.jobs = max(1, jobs)
        self.on_result = on_result or (lambda r: None)
        self.ctx = mp.get_context("spawn")
        self.results: list[dict] = []
        self.attempts: dict[str, int] = {}

    def _spawn(self) -> _Worker:
        parent, child = self.ctx.Pipe()
        p = self.ctx.Process(target=_worker_main, args=(child, self.opts), daemon=True)
        p.start()
        child.close()
        return _Worker(p, parent)

    def _emit(self, rec: dict) -> None:
        self.results.append(rec)
        self.on_result(rec)

    def run(self, files: list[str], skip: set[str] | None = None) -> list[dict]:
        queue: deque[tuple[str, frozenset]] = deque((f, frozenset(skip or ())) for f in files)
        workers: list[_Worker] = [self._spawn() for _ in range(min(self.jobs, max(1, len(files))))]
        idle = list(workers)
        busy: list[_Worker] = []
        timeout = self.opts.timeout
        try:
            while queue or busy:
                while idle and queue:
                    w = idle.pop()
                    path, sk = queue.popleft()
                    w.path, w.current, w.done_ids = path, None, set(sk)
                    w.started = time.monotonic()
                    w.conn.send((path, tuple(sk)))
                    busy.append(w)
                ready = wait([w.conn for w in busy] + [w.proc.sentinel for w in busy], timeout=0.5)
                now = time.monotonic()
                for w in list(busy):
                    if w.conn in ready or w.proc.sentinel in ready:
                        finished = self._drain(w)
                        if finished:
                            busy.remove(w)
                            idle.append(w)
                            continue
                        if not w.proc.is_alive():  # _drain read all it sent (or hit EOF)
                            # the worker died: a crash of the current test
                            code = w.proc.exitcode
                            self._lost(w, "crash", _describe_exit(code))
                            busy.remove(w)
                            nw = self._spawn()
                            self._requeue(w, queue)
                            idle.append(nw)
                            continue
                    if timeout and w.current is not None and now - w.started > timeout + GRACE:
                        w.proc.kill()
                        w.proc.join(5)
                        self._lost(w, "timeout", f"timed out after {timeout:g} s (worker stopped)")
                        busy.remove(w)
                        self._requeue(w, queue)
                        idle.append(self._spawn())
        finally:
            for w in idle + busy:
                try:
                    w.conn.send(None)
                except Exception:
                    pass
            deadline = time.monotonic() + 0.2
            for w in idle + busy:
                w.proc.join(max(0.0, deadline - time.monotonic()))
                if w.proc.is_alive():
                    w.proc.kill()  # all its results are in; native teardown can be slow
                    w.proc.join(1)
        return self.results

    def _drain(self, w: _Worker) -> bool:
        """Read every pending event of ``w``; True when its file is done."""
        while True:
            try:
                if not w.conn.poll():
                    return False
                ev = w.conn.recv()
            except (EOFError, OSError):
                return False
            kind = ev[0]
            if kind == "start":
                w.current = ev[1]
                w.started = time.monotonic()
            elif kind == "result":
                rec = ev[1]
                w.done_ids.add(rec["id"])
                w.current = None
                self._emit(rec)
            elif kind == "done":
                w.path = None
                return True

    def _lost(self, w: _Worker, status: str, message: str) -> None:
        tid = w.current or f"{w.path}::<file>"
        rec = base_record(w.path or "", tid, tid.rsplit("::", 1)[-1], 0)
        rec["status"] = status
        rec["message"] = message
        rec["backend"] = self.opts.backend
        w.done_ids.add(tid)
        self._emit(rec)

    def _requeue(self, w: _Worker, queue: deque) -> None:
        if w.path is None:
            return
        if w.current is None:
            # died while loading the file: retry once, then give up on it
            self.attempts[w.path] = self.attempts.get(w.path, 0) + 1
            if self.attempts[w.path] > 1:
                return
        queue.appendleft((w.path, frozenset(w.done_ids)))


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "worker process died"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = str(-code)
        return f"process killed by signal {name}"
    return f"process exited with code {code}"


def default_jobs() -> int:
    return max(1, (os.cpu_count() or 1))
