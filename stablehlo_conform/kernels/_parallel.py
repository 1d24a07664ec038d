"""Running the independent pieces of one op on the process's cores.

A kernel or fast path hands :func:`run` pieces of work that do not depend on each other and
write disjoint parts of a result: the blocks of an element-wise op (:func:`blocks`), the
row blocks of a convolution's im2col product, the batch entries of a batched product. Each
piece is exactly the computation the single-threaded code does for that part (the same NumPy
call on the same operands: the same BLAS call on one BLAS thread, the same ufunc loop), so
the result is the same bit for bit whatever the number of threads; only the order in which
pieces run changes. One kind of piece is not the single-threaded code's own call: the row or
column blocks of a cut product (``_split_gemm``), used only where a trial showed them giving the
whole call's bits. NumPy releases the GIL inside ufunc loops and BLAS calls, so the pieces run
at once.

The number of threads (:func:`threads`) is the number of cores this process may use
(``os.sched_getaffinity``), or ``CONFORM_THREADS`` where set, and a harness running several
workers gives each its share (:func:`share`, :func:`set_threads`; ``conform run -j N``). A
harness worker starts the pool's threads before its tests' memory budgets (:func:`start`). A
child process started by ``fork`` starts without the parent's pool (:func:`_forget_pool`).
Where the other cores are busy with other work, threads do not pay: :func:`paying` says so
from the last run's measured speedup, and an op that asks it then runs on one thread.
"""

from __future__ import annotations

import contextvars
import itertools
import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor


def cores() -> int:
    """The cores this process may run on (``os.sched_getaffinity``; ``os.cpu_count`` off Linux)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


def _env_threads() -> int | None:
    env = os.environ.get("CONFORM_THREADS", "").strip()
    return int(env) if env.isdigit() and int(env) >= 1 else None


def _default_threads() -> int:
    return _env_threads() or cores()


def share(workers: int) -> int:
    """Threads for each of ``workers`` processes running at once on this process's cores:
    ``max(1, cores() // workers)`` (never more threads than cores in all), or
    ``CONFORM_THREADS`` where set."""
    return _env_threads() or max(1, cores() // max(1, workers))


_threads = _default_threads()
_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_lock = threading.Lock()
_local = threading.local()


def threads() -> int:
    """How many pieces :func:`run` runs at once (1: one after the other, in the caller)."""
    return _threads


def set_threads(n: int) -> None:
    """Run at most ``n`` (>= 1) pieces at once from now on."""
    global _threads
    _threads = max(1, int(n))


def _forget_pool() -> None:
    """In a child started by ``fork``: no thread of the parent's pool exists there, and the
    lock may have been held by one of them at the fork."""
    global _pool, _pool_size, _lock
    _pool, _pool_size, _lock = None, 0, threading.Lock()


os.register_at_fork(after_in_child=_forget_pool)


def _executor(n: int) -> ThreadPoolExecutor:
    global _pool, _pool_size
    with _lock:
        if _pool is None or _pool_size < n:
            if _pool is not None:
                _pool.shutdown(wait=False)
            _pool, _pool_size = ThreadPoolExecutor(n, thread_name_prefix="conform-op"), n
        return _pool


def start() -> None:
    """Start the pool's threads now (at most :func:`threads` - 1 of them: :func:`run` runs one
    piece in its caller): a harness worker calls this before a test's memory budget is set, so
    that the threads' stacks are not charged to a test (``RLIMIT_DATA`` counts them)."""
    n = _threads - 1
    if n < 1:
        return
    pool = _executor(n)
    gate = threading.Barrier(n + 1, timeout=10.0)
    # each task waits for the others: the pool starts a thread for each (an idle one takes none)
    futures = []
    try:
        for _ in range(n):
            futures.append(pool.submit(gate.wait))
        gate.wait()
    except (RuntimeError, threading.BrokenBarrierError):  # a thread did not start: run starts it when needed
        gate.abort()
    for f in futures:
        if not f.cancel():  # a task no thread took is dropped; one running ends with the barrier
            f.exception()


def inside() -> bool:
    """Whether this thread is running a piece of :func:`run` (a nested :func:`run` then runs
    its pieces one after the other)."""
    return getattr(_local, "inside", False)


def _piece(fn: Callable[[], object], context: contextvars.Context | None = None):
    _local.inside = True
    try:
        return fn() if context is None else context.run(fn)
    finally:
        _local.inside = False


def run(pieces: Sequence[Callable[[], object]], state: list | None = None, record: bool = True) -> list:
    """Each of ``pieces`` called once, at most :func:`threads` at a time (the caller and the
    pool's threads each take the next piece not yet taken, so any number of pieces keeps
    them all busy); their results in order. Where pieces raise, the exception of the first
    of them (in order, as one after the other would) is raised once every piece has ended.
    A piece that itself calls :func:`run` runs its own pieces one after the other.
    ``state``: where the run's speedup is recorded for :func:`paying` (its default, or
    :data:`PRODUCTS`); ``record=False``: nowhere (a caller that does not ask :func:`paying`)."""
    n = min(_threads, len(pieces))
    if n <= 1 or inside():
        return [p() for p in pieces]
    results: list = [None] * len(pieces)
    errors: dict[int, BaseException] = {}
    take = itertools.count().__next__  # one C call: atomic under the GIL
    busy: list[float] = []  # each piece's CPU seconds
    stop: list[BaseException] = []

    def work() -> None:
        clock = time.thread_time
        while not stop and (i := take()) < len(pieces):
            t = clock()
            try:
                results[i] = pieces[i]()
            except Exception as e:  # noqa: BLE001 - raised below, after every piece ended
                errors[i] = e
            except BaseException as e:  # an interrupt: no piece starts after it, and it is raised
                stop.append(e)
            busy.append(clock() - t)

    # a helper that starts after the caller took the last piece does nothing, and the caller
    # waits only for the helpers that started (a thread slow to get a core costs nothing)
    lock, done, helpers = threading.Lock(), threading.Semaphore(0), [False, 0]  # closed, helpers started

    def helper() -> None:
        with lock:
            if helpers[0]:
                return
            helpers[1] += 1
        try:
            work()
        finally:
            done.release()

    # a helper works in a copy of the caller's context (NumPy's errstate lives there: a piece
    # ignores the floating-point errors its caller ignores)
    pool = _executor(n - 1)
    start = time.perf_counter()
    try:
        for _ in range(n - 1):
            pool.submit(_piece, helper, contextvars.copy_context())
    except RuntimeError:  # no thread could start (a memory budget counts its stack): the caller does it all
        pass
    try:
        _piece(work)
    finally:
        with lock:
            helpers[0] = True
        for _ in range(helpers[1]):
            done.acquire()
    wall = time.perf_counter() - start
    if record and wall >= MEASURED_S:
        _measured(sum(busy) / wall, state)
    if stop:
        raise stop[0]
    if errors:
        raise errors[min(errors)]
    return results


# the last run's speedup (the pieces' CPU time over the run's wall time) below which the
# other cores are taken to be busy (with other processes), and how many calls of
# :func:`paying` then say False before one tries again: BACK_OFF, doubled after each try that
# did not pay either, up to BACK_OFF_MOST
PAYING_SPEEDUP = 1.15
BACK_OFF = 16
BACK_OFF_MOST = 1024
MEASURED_S = 2e-4  # a shorter run is mostly hand-off: it says little of the cores
_paying = [0, BACK_OFF]  # calls of paying() left to say False, the next back-off
# the same for runs of whole products at once (compute-bound BLAS calls: engine.codegen's
# groups), kept apart: element-wise pieces bound by memory pay less on the same cores
PRODUCTS = [0, BACK_OFF]


def _measured(speedup: float, state: list | None = None) -> None:
    state = _paying if state is None else state
    if speedup >= PAYING_SPEEDUP:
        state[:] = [0, BACK_OFF]
    else:
        state[:] = [state[1], min(2 * state[1], BACK_OFF_MOST)]


def paying(state: list | None = None) -> bool:
    """Whether running pieces on several threads paid the last time: False after a run whose
    pieces took about as long one after the other as they took at once (the other cores are
    busy with other work: the threads waited for each other), for the next :data:`BACK_OFF`
    calls (twice as many after each further try that did not pay); then True once again, to
    measure again. An op that may run on one thread or several asks this first: where the cores
    are taken by other work it then costs about what one thread costs. Which path runs never
    changes a result (the pieces compute what one call computes). ``state``: the record of
    the runs asked about (see :func:`run`)."""
    state = _paying if state is None else state
    if state[0] <= 0:
        return True
    state[0] -= 1
    return False


def blocks(shape: Sequence[int], parts: int) -> list[tuple]:
    """Basic indices (``(i, j, ..., slice)``: integers on leading axes, then a range of one
    axis) cutting an array of ``shape`` into about ``parts`` blocks (at least ``parts`` where
    it has as many elements) of about equal size, in C order: together they cover each
    element once. An element-wise computation done block by block computes each element as
    on the whole array."""
    shape = tuple(int(d) for d in shape)
    if not shape or 0 in shape:
        return [()]
    size = math.prod(shape)
    target = max(1, -(-size // max(1, parts)))
    k, inner = 0, size // shape[0]
    while inner > target:  # the first axis whose rows are at most a block
        k += 1
        inner //= shape[k]
    cuts = spans(shape[k], -(-shape[k] * inner // target))
    leads = itertools.product(*(range(d) for d in shape[:k]))
    return [lead + (slice(a, b),) for lead in leads for a, b in cuts]


def spans(n: int, parts: int, least: int = 1) -> list[tuple[int, int]]:
    """``[start, stop)`` ranges cutting ``range(n)`` into at most ``parts`` pieces of at least
    ``least`` each (one piece when ``n < 2 * least``)."""
    parts = max(1, min(parts, n // max(1, least)))
    cuts = [n * i // parts for i in range(parts + 1)]
    return [(cuts[i], cuts[i + 1]) for i in range(parts)]
