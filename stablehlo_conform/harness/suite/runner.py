"""Running many files in worker processes.

Each worker is a separate Python process (spawned, so the parent never
imports the bindings). A worker reports ``loaded`` with the ids it is about to
run once a file is loaded, ``start`` before each test and a ``result`` after
it. Loading a file and running each test are bounded: when a worker dies (a
native crash in the bindings or a backend) or outlives its budget, the parent
records that test (or, while loading, the file) as ``crash`` / ``timeout``,
starts a fresh worker and resubmits the file with the finished tests skipped.
Results are handed to a callback as they arrive, so nothing computed is lost,
and every id is handed over once.

Workers are started with a safe ``sys.path`` (the current folder is not on
it), live in their own process group (killed as a group, so whatever they
started dies with them) and die with the parent (``PR_SET_PDEATHSIG``).
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

from ...kernels import _parallel
from ..backends.memory import bounded_events
from ..backends.native import on_client_start
from ..programs.recipe import recipe_path
from ..records.guard import interrupts_held
from ..records.result import Result, new_result
from .cases import Options, run_file

GRACE = 5.0  # seconds past the cooperative deadline before a worker is killed
STARTUP = 30.0  # seconds a fresh worker may take to start (imports) before its first file counts
MODEL_BUDGET = 5  # a model's test runs the program three times (backend, oracle, float64 shadow), and
# localising a failure runs every op once on two engines: its budget is this many --timeout
_INTERRUPTS = {signal.SIGINT, signal.SIGTERM}


def _serialised(ev: tuple) -> tuple:
    """A worker's event as it crosses the pipe: a result as its JSON record
    (:meth:`Result.to_json`), read back by the parent with :meth:`Result.from_json`,
    so the two sides share the record format, not the class's pickled layout."""
    return ("result", ev[1].to_json()) if ev[0] == "result" else ev


def die_with_parent(parent_pid: int | None = None) -> None:
    """Ask the kernel to kill this process when its parent dies (Linux), and
    exit at once if the parent is already gone."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:  # not Linux: the parent kills its workers' groups itself
        pass
    if parent_pid is not None and os.getppid() != parent_pid:
        os._exit(1)


def _worker_main(conn, opts: Options, parent_pid: int | None = None, keep: bool = False,
                 threads: int | None = None) -> None:  # in the child
    import sys

    die_with_parent(parent_pid)
    if threads is not None:  # its share of the cores (see Runner._spawn)
        _parallel.set_threads(threads)
    _parallel.start()  # the op threads' stacks, before any test's memory budget
    try:
        os.setpgid(0, 0)  # a group of its own: the parent kills it with everything it started
    except OSError:
        pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # a backend's client starting (before its first test, after a crash) runs on the load deadline, not a test's
    on_client_start(lambda label, done: conn.send(("client", label, done)))
    try:  # import the bindings now, so a file's load budget is spent on the file
        from ... import frontend  # the bindings, in the worker before its first file

        frontend.provider_version()
    except Exception:  # loading will say what is wrong
        pass
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg is None:
            return
        path, skip = msg
        conn.send(("loading", path))
        try:
            # keep: a file kept while unchanged (a pooled worker gets a file's tests one by one, see Runner's pool);
            # each test under --max-memory
            for ev in bounded_events(run_file(path, opts, frozenset(skip), keep=keep), opts.max_bytes):
                conn.send(_serialised(ev))
        except Exception as e:  # never leave the parent waiting
            rec = new_result(path, f"{path}::<file>", "", 0, message=f"internal error: {type(e).__name__}: {e}")
            conn.send(_serialised(("result", rec)))
        conn.send(("done", path))
        sys.stdout.flush()


@dataclass
class _Worker:
    proc: Any
    conn: Any
    path: str | None = None
    current: str | None = None
    loading: bool = False  # the worker has started on its file
    loaded: bool = False
    started: float = 0.0
    done_ids: set[str] = field(default_factory=set)
    model: bool = False  # its file is a model (a program with a recipe): MODEL_BUDGET timeouts a test
    starting: bool = False  # a backend's client is starting: the load deadline, not the test's timeout


class Runner:
    """Runs files in ``jobs`` workers; ``on_result`` gets each record once.

    After :meth:`run` returns or is interrupted, :meth:`not_run` tells what
    was selected but has no record."""

    def __init__(self, opts: Options, jobs: int = 1, on_result: Callable[[Result], None] | None = None,
                 pool: list | None = None):
        self.opts = opts
        # idle workers kept from run to run, for runners of the same opts (the pytest plugin's: one item a run;
        # see close_pool); None: each run ends its workers
        self.pool = pool
        self.jobs = max(1, jobs)
        self.on_result = on_result or (lambda r: None)
        self.ctx = mp.get_context("spawn")
        self.results: list[Result] = []
        self.attempts: dict[str, int] = {}
        self.emitted: set[str] = set()
        self.planned: dict[str, tuple[str, ...]] = {}  # file -> ids it runs, once loaded
        self.unfinished: set[str] = set()

    def _spawn(self) -> _Worker:
        parent, child = self.ctx.Pipe()
        # each of the jobs workers runs an op's pieces on its share of the cores: never more threads than cores
        p = self.ctx.Process(target=_worker_main, daemon=True,
                             args=(child, self.opts, os.getpid(), self.pool is not None, _parallel.share(self.jobs)))
        # the spawned interpreter starts with ``-c``: keep the current folder off sys.path
        old = os.environ.get("PYTHONSAFEPATH")
        os.environ["PYTHONSAFEPATH"] = "1"
        try:
            with interrupts_held():  # a start cut short leaves the worker without its data: a traceback
                p.start()
        finally:
            if old is None:
                del os.environ["PYTHONSAFEPATH"]
            else:
                os.environ["PYTHONSAFEPATH"] = old
        child.close()
        return _Worker(p, parent)

    def _emit(self, rec: Result) -> None:
        if rec.id in self.emitted:
            return  # one id, one record
        # a record is handed over whole: SIGINT/SIGTERM wait until it is written
        masked = signal.pthread_sigmask(signal.SIG_BLOCK, _INTERRUPTS)
        try:
            self.emitted.add(rec.id)
            self.results.append(rec)
            self.on_result(rec)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, masked)

    def not_run(self) -> dict[str, int]:
        """Selected tests without a record: ``tests`` of loaded files, and
        ``files`` whose loading never finished (their tests are not known)."""
        tests = sum(1 for f in self.unfinished for t in self.planned.get(f, ()) if t not in self.emitted)
        files = sum(1 for f in self.unfinished if f not in self.planned)
        return {"tests": tests, "files": files}

    def run(self, files: list[str], skip: set[str] | None = None) -> list[Result]:
        skip = frozenset(skip or ())
        # a file whose loading already ended in a record is finished
        todo = [f for f in files if f"{f}::<file>" not in skip]
        self.unfinished = set(todo)
        queue: deque[tuple[str, frozenset]] = deque((f, skip) for f in todo)
        workers: list[_Worker] = [self._take() for _ in range(min(self.jobs, max(1, len(todo))))]
        idle = list(workers)
        busy: list[_Worker] = []
        try:
            while queue or busy:
                while idle and queue:
                    w = idle.pop()
                    path, sk = queue.popleft()
                    w.path, w.current, w.loading, w.loaded, w.done_ids = path, None, False, False, set(sk)
                    w.starting = False
                    w.model = recipe_path(path) is not None
                    w.started = time.monotonic()
                    w.conn.send((path, tuple(sk)))
                    busy.append(w)
                ready = wait([w.conn for w in busy] + [w.proc.sentinel for w in busy], timeout=0.5)
                for w in list(busy):
                    if w.conn in ready or w.proc.sentinel in ready:
                        if self._drain(w):
                            busy.remove(w)
                            idle.append(w)
                            continue
                        if not w.proc.is_alive():  # _drain read all it sent (or hit EOF)
                            busy.remove(w)
                            self._stop(w)
                            self._failed(w, queue, "crash", _describe_exit(w.proc.exitcode))
                            idle.append(self._spawn())
                            continue
                    budget = self._budget(w)
                    if budget is not None and time.monotonic() - w.started > budget:
                        busy.remove(w)
                        self._stop(w)
                        self._failed(w, queue, "timeout", None)
                        idle.append(self._spawn())
        finally:
            if self.pool is not None:  # live idle workers wait in the pool for the next run
                self.pool.extend(w for w in idle if w.proc.is_alive())
                idle = [w for w in idle if w not in self.pool]
            for w in idle:
                try:
                    w.conn.send(None)
                except Exception:
                    pass
            for w in busy:
                self._stop(w)  # interrupted: its test has no result
            deadline = time.monotonic() + 0.2
            for w in idle + busy:
                w.proc.join(max(0.0, deadline - time.monotonic()))
                if w.proc.is_alive():
                    self._stop(w)  # all its results are in; native teardown can be slow
        return self.results

    def _take(self) -> _Worker:
        """A live worker of the pool, else a fresh one."""
        while self.pool:
            w = self.pool.pop()
            if w.proc.is_alive():
                return w
            self._stop(w)
        return self._spawn()

    def _budget(self, w: _Worker) -> float | None:
        """Seconds ``w`` may go without an event: a test's timeout plus a
        grace for its cooperative deadline; loading a file and starting a
        backend's client have the load deadline."""
        if w.starting:
            return None if self.opts.load_timeout is None else self.opts.load_timeout + GRACE
        if not w.loaded:
            if self.opts.load_timeout is None:
                return None
            return self.opts.load_timeout + (0.0 if w.loading else STARTUP)
        return self._test_timeout(w) + GRACE if self.opts.timeout else None

    def _test_timeout(self, w: _Worker) -> float:
        return self.opts.timeout * (MODEL_BUDGET if w.model else 1)

    @staticmethod
    def _stop(w: _Worker) -> None:
        """Kill ``w`` and every process of its group."""
        try:
            os.killpg(w.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError, OSError):
            pass
        if w.proc.is_alive():
            w.proc.kill()
        w.proc.join(5)

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
            w.started = time.monotonic()
            if kind == "loading":
                w.loading = True
            elif kind == "loaded":
                w.loaded = True
                self.planned[w.path] = tuple(ev[1])
            elif kind == "start":
                w.current = ev[1]
            elif kind == "client":
                w.starting = not ev[2]
            elif kind == "result":
                rec = Result.from_json(ev[1])  # read back as it was sent (see _serialised)
                w.done_ids.add(rec.id)
                w.current = None
                self._emit(rec)
            elif kind == "done":
                self.unfinished.discard(w.path)
                w.path = None
                return True

    def _failed(self, w: _Worker, queue: deque, status: str, why: str | None) -> None:
        """``w`` died (``crash``) or was stopped (``timeout``): record what it
        was doing and resubmit the rest of its file."""
        path = w.path
        if path is None:
            return
        if w.current is not None:  # a test: its record, then the rest of the file
            tid = w.current
            msg = why if status == "crash" else (f"timed out after {self._test_timeout(w):g} s" + (
                f" ({MODEL_BUDGET} x --timeout for a model)" if w.model else "") + " (worker stopped)")
            if w.starting and status == "timeout":
                msg = (f"the backend's client did not start within {self.opts.load_timeout:g} s "
                       "(the load deadline, --load-timeout) (worker stopped)")
            self._record(path, tid, status, msg)
            w.done_ids.add(tid)
            queue.appendleft((path, frozenset(w.done_ids)))
            return
        if not w.loaded and status == "timeout":
            self._record(path, f"{path}::<file>", "timeout",
                         f"{path}: loading the file took longer than {self.opts.load_timeout:g} s (worker stopped)")
            self.unfinished.discard(path)
            return
        # died while loading (or between tests): one retry, then the file ends in one record
        self.attempts[path] = self.attempts.get(path, 0) + 1
        if self.attempts[path] > 1:
            what = "loading the file" if not w.loaded else "between tests"
            self._record(path, f"{path}::<file>", status, f"{path}: {what}: {why or 'worker stopped'} (twice)")
            self.unfinished.discard(path)
            return
        queue.appendleft((path, frozenset(w.done_ids)))

    def _record(self, path: str, tid: str, status: str, message: str) -> None:
        self._emit(new_result(path, tid, tid.rsplit("::", 1)[-1], 0, status=status, message=message,
                              backend=self.opts.backend))


def close_pool(pool: list) -> None:
    """End the workers a :class:`Runner` kept in ``pool``."""
    for w in pool:
        try:
            w.conn.send(None)
        except Exception:
            pass
    deadline = time.monotonic() + 0.5
    for w in pool:
        w.proc.join(max(0.0, deadline - time.monotonic()))
        if w.proc.is_alive():
            Runner._stop(w)
    pool.clear()


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
