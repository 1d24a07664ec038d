"""Where the tasks of a long campaign run: local worker processes, or a Dask cluster.

A *task* is a module-level function and a tuple of picklable arguments; its
result is a JSON-ready value. :func:`executor` gives the local pool (``jobs``
processes forked from this one, dying with it) or, for
``--cluster tcp://HOST:PORT``, a client of a running Dask distributed
scheduler (``dask scheduler`` / ``dask worker``, the optional ``cluster``
extra). Both :meth:`run` the same tasks and yield ``(index, result)`` as they
finish, in any order; the caller orders what it keeps, so a result does not
depend on where it ran.

Nothing is lost with a worker: a local worker process that dies fails the
pool, whose tasks not finished are submitted again to a fresh pool (at most
:data:`RETRIES` times each); on a cluster the scheduler gives the tasks of a
worker that died to the others (Dask's own bookkeeping, with ``retries`` for a
task that raised). Each worker process loads the backend itself, once
(:func:`.backends.get_backend` keeps it), so on a cluster each worker drives
the device of its own machine.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TextIO

RETRIES = 3  # times a task is submitted again after its worker died


class ClusterError(Exception):
    """The cluster cannot be reached, or a task failed on every try."""


def init_worker(parent: int) -> None:
    """The initializer of a pool's forked worker: it dies with its parent
    ``parent`` (Linux: also a parent killed by SIGKILL) and leaves
    interrupts to it (SIGINT ignored; SIGTERM ends it, not the handler the
    parent had when it forked)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:  # pragma: no cover - not Linux
        pass
    if os.getppid() != parent:
        os._exit(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def kill_workers(ex: ProcessPoolExecutor) -> None:
    """Kill the worker processes of ``ex`` now (their tasks are dropped), so
    an interrupted command does not wait for the tasks they run."""
    kill = getattr(ex, "kill_workers", None)  # Python 3.14
    if kill is not None:
        kill()
        return
    for proc in list((getattr(ex, "_processes", None) or {}).values()):
        proc.kill()


class LocalExecutor:
    """``jobs`` forked worker processes (one: the tasks run in this process)."""

    where = "local"

    def __init__(self, jobs: int = 1):
        self.jobs = max(1, jobs)

    def run(self, fn: Callable, tasks: Sequence[tuple]) -> Iterator[tuple[int, Any]]:
        if self.jobs == 1:
            for i, args in enumerate(tasks):
                yield i, fn(*args)
            return
        todo = dict(enumerate(tasks))
        tries = {i: 0 for i in todo}
        while todo:
            ctx = multiprocessing.get_context("fork")
            ex = ProcessPoolExecutor(self.jobs, mp_context=ctx, initializer=init_worker, initargs=(os.getpid(),))
            futures = {ex.submit(fn, *args): i for i, args in todo.items()}
            broken = False
            try:
                pending = set(futures)
                while pending:
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for fut in done:
                        i = futures[fut]
                        try:
                            result = fut.result()
                        except BrokenProcessPool:
                            broken = True
                            continue
                        del todo[i]
                        yield i, result
                    if broken:
                        break
            except BaseException:  # interrupted, or no more results wanted: the running tasks are dropped
                kill_workers(ex)
                raise
            finally:
                ex.shutdown(wait=not broken, cancel_futures=True)
            if broken:
                for i in todo:
                    tries[i] += 1
                    if tries[i] > RETRIES:
                        raise ClusterError(f"a local worker died {tries[i]} times while task {i} was not finished")

    def close(self) -> None:
        pass


class DaskExecutor:
    """A client of the Dask scheduler at ``address``."""

    def __init__(self, address: str, timeout: float = 30.0):
        try:
            from distributed import Client
        except ImportError:
            raise ClusterError("--cluster needs Dask distributed: pip install 'stablehlo-conform[cluster]'") from None
        try:
            self.client = Client(address, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError) as e:
            raise ClusterError(f"cannot reach the Dask scheduler at {address}: {e}") from None
        self.where = address

    def workers(self) -> int:
        return len(self.client.scheduler_info().get("workers", {}))

    def run(self, fn: Callable, tasks: Sequence[tuple]) -> Iterator[tuple[int, Any]]:
        from distributed import as_completed

        futures = {self.client.submit(fn, *args, pure=False, retries=RETRIES): i for i, args in enumerate(tasks)}
        try:
            for fut in as_completed(list(futures), loop=self.client.loop):
                try:
                    result = fut.result()
                except Exception as e:
                    raise ClusterError(f"task {futures[fut]} failed on the cluster: {type(e).__name__}: {e}") from e
                yield futures[fut], result
                fut.release()
        finally:
            self.client.cancel([f for f in futures if not f.done()])

    def close(self) -> None:
        self.client.close()


def executor(cluster: str | None, jobs: int = 1) -> LocalExecutor | DaskExecutor:
    """The local pool of ``jobs`` processes, or a client of the cluster at ``cluster``."""
    return DaskExecutor(cluster) if cluster else LocalExecutor(jobs)


class Progress:
    """A progress line on ``stream``: done of total, the rate and the time left,
    rewritten in place on a terminal, else printed every ``every`` seconds."""

    def __init__(self, total: float, unit: str = "inputs", stream: TextIO | None = None, every: float = 10.0):
        self.total = total
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        self.every = every
        self.start = time.monotonic()
        self.last = 0.0
        self.done = 0.0
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())

    def line(self) -> str:
        secs = max(time.monotonic() - self.start, 1e-9)
        rate = self.done / secs
        left = (self.total - self.done) / rate if rate > 0 else float("inf")
        pct = 100.0 * self.done / self.total if self.total else 100.0
        eta = f"{left / 60:.1f} min left" if left != float("inf") else "time left unknown"
        return f"{pct:5.1f}% of {self.total:,.0f} {self.unit}, {_rate(rate)} {self.unit}/s, {eta}"

    def update(self, amount: float) -> None:
        self.done += amount
        now = time.monotonic()
        if self.tty:
            self.stream.write("\r" + self.line())
            self.stream.flush()
        elif now - self.last >= self.every or self.done >= self.total:
            self.stream.write(self.line() + "\n")
            self.stream.flush()
            self.last = now

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def _rate(r: float) -> str:
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if r >= div:
            return f"{r / div:.1f}{suffix}"
    return f"{r:.0f}"
