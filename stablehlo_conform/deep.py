"""Running deeply recursive work (parsing, lowering, evaluating nested regions
and call chains) on a thread with a large stack.

The engine and the lowering recurse once per nested region or call, and the
MLIR parser recurses natively once per nested region. The main thread's stack
(often 8 MiB) and Python's default recursion limit (1000 frames) end legitimate
programs a few hundred levels deep. :func:`run_deep` runs a callable on a
thread whose stack is :data:`STACK_BYTES` (reserved address space; only the
pages used are committed) with the Python recursion limit raised to
:data:`RECURSION_LIMIT`, so that the depth limits the project documents
(:data:`stablehlo_conform.engine.MAX_DEPTH` nested calls and regions,
:data:`stablehlo_conform.frontend.MAX_NESTING` nested blocks in the source) are
reached before any stack is exhausted.

Handing work to another thread costs a thread switch, so callers do it only
when the work gets deep: at :data:`HANDOFF_DEPTH` levels of recursion the rest
of it moves to a large-stack thread (shallow programs never switch).
"""

from __future__ import annotations

import contextvars
import queue
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

STACK_BYTES = 1 << 30
RECURSION_LIMIT = 400_000
HANDOFF_DEPTH = 64  # levels of recursion done on the caller's own stack

R = TypeVar("R")

_local = threading.local()
_lock = threading.Lock()


def in_deep_thread() -> bool:
    return getattr(_local, "deep", False)


class _DeepThread:
    """A daemon thread with a large stack running one job at a time."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.done: queue.SimpleQueue = queue.SimpleQueue()
        with _lock:  # the stack size applies to threads started while it is set
            old = threading.stack_size()
            threading.stack_size(STACK_BYTES)
            try:
                threading.Thread(target=self._loop, name="conform-deep", daemon=True).start()
            finally:
                threading.stack_size(old)

    def _loop(self) -> None:
        _local.deep = True
        while True:
            ctx, fn, args = self.jobs.get()
            try:
                self.done.put((True, ctx.run(fn, *args)))
            except BaseException as e:  # handed to the caller
                self.done.put((False, e))
            del ctx, fn, args


_idle: list[_DeepThread] = []


def run_deep(fn: Callable[..., R], *args: Any) -> R:
    """``fn(*args)`` on a thread with a large stack (directly when already on
    one); its result is returned and its exception re-raised here. The
    caller's context variables (NumPy's error state among them) carry over.
    Threads are kept for reuse; concurrent callers get a thread each."""
    if in_deep_thread():
        return fn(*args)
    if sys.getrecursionlimit() < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)
    with _lock:
        worker = _idle.pop() if _idle else None
    if worker is None:
        worker = _DeepThread()
    worker.jobs.put((contextvars.copy_context(), fn, args))
    ok, value = worker.done.get()  # an interrupted caller leaves the busy thread behind
    with _lock:
        _idle.append(worker)
    if not ok:
        raise value
    return value
