"""The memory bound of a test: ``--max-memory`` covers what a test really
allocates, kernel temporaries included, not only its declared tensors.

The engine refuses an op result or a constant over the budget before it is
allocated (a clear message at the op); what a kernel allocates on the way
(an im2col matrix, int64 copies of i32 operands, XLA's buffers) is bounded
here: while a test runs, the process that runs it (the worker; for a native
backend, its child during each program's call) may grow its data segment
(``RLIMIT_DATA``: heap and private mappings, NumPy's arrays included) by at
most the budget plus :data:`SLACK` over what it held when the test started.
An allocation past that fails (``MemoryError``, XLA's ``RESOURCE_EXHAUSTED``)
and the test ends in one ``error`` record naming the budget; the next test
starts from the bound lifted and set again from where its process stands.

What is the process's rather than a test's stays out of the bound: a
backend child's start (imports, its client), and under a small budget the
libraries the kernels load on first use (:func:`preload`), whose address
space reservations (SciPy's LAPACK: ~100 MiB, of which ~20 MiB resident)
would otherwise fail the first test that calls them, or crash the worker.

Linux only (``/proc/self/status``); elsewhere nothing is bounded beyond the
declared sizes. A backend's child started during a test learns the budget
from :data:`BOUND_ENV` (see :func:`inherited_budget`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator

from ..records.result import Result, Status, replace

SLACK = 64 << 20  # the process's own growth during a test: thread stacks, Python objects, caches
PRELOAD_BELOW = 1 << 30  # under this budget the libraries tests load on first use are loaded before it
BOUND_ENV = "CONFORM_MEMORY_BOUND"
OUT_OF_MEMORY = ("out of memory", "memoryerror", "bad_alloc")  # how a refused allocation is reported (lower case)

try:
    import resource
except ImportError:  # pragma: no cover - not POSIX
    resource = None  # type: ignore[assignment]


def data_bytes() -> int | None:
    """This process's data segment (``VmData``) in bytes; None where unknown."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmData:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


_preloaded: list[bool] = []


def preload(budget: int | None) -> None:
    """Once, before a budget under :data:`PRELOAD_BELOW` is first in force:
    load the libraries the kernels import on first use (SciPy's special
    functions and LAPACK: ~100 MiB of address space, ~20 MiB resident) and
    have NumPy's and SciPy's BLAS allocate their buffers (~32 MiB a thread,
    at their first product). Those are the process's, not the first test's
    that calls them: under a small bound their start would fail that test,
    or end the process (OpenBLAS exits when its buffer is refused)."""
    if _preloaded or budget is None or budget >= PRELOAD_BELOW:
        return
    _preloaded.append(True)
    import numpy as np

    a = np.ones((512, 512))
    a @ a  # large enough for every BLAS thread
    try:
        import scipy.linalg
        import scipy.special  # noqa: F401
    except ImportError:  # pragma: no cover - the kernels say what is missing
        return
    scipy.linalg.blas.dgemm(1.0, a, a)


@contextlib.contextmanager
def bounded(budget: int | None) -> Iterator[bool]:
    """Within: this process may allocate ``budget`` + :data:`SLACK` bytes
    more than it holds now. Yields whether a bound is in force."""
    now = data_bytes() if budget is not None and resource is not None else None
    if now is None:
        yield False
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    limit = now + budget + SLACK
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    try:
        resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    except (ValueError, OSError):
        yield False
        return
    os.environ[BOUND_ENV] = f"{budget} {soft}"  # a backend's child started now bounds its own calls
    try:
        yield True
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))
        os.environ.pop(BOUND_ENV, None)


def bounded_events(events: Iterable[tuple], budget: int | None) -> Iterator[tuple]:
    """The events of :func:`.cases.run_file` with each test (from its
    ``start`` to its ``result``) run within :func:`bounded`."""
    it = iter(events)
    for ev in it:
        yield ev
        if ev[0] != "start":
            continue
        preload(budget)
        with bounded(budget) as on:
            ev = next(it, None)
        if ev is None:
            return
        yield ("result", over_budget(ev[1], budget)) if on and ev[0] == "result" else ev


def inherited_budget() -> int | None:
    """In a backend's child: the budget its parent ran a test under
    (:data:`BOUND_ENV`, None: none), the parent's limit from before that
    bound restored (the child starts under the bound, but its start-up,
    imports and client, is not a test's memory: each call is bounded)."""
    try:
        budget, soft = (int(v) for v in os.environ.get(BOUND_ENV, "").split())
    except ValueError:
        return None
    if resource is not None:
        try:
            resource.setrlimit(resource.RLIMIT_DATA, (soft, resource.getrlimit(resource.RLIMIT_DATA)[1]))
        except (ValueError, OSError):
            pass
    return budget or None


def budget_text(budget: int) -> str:
    return f"over the memory budget of {budget / 2**20:.1f} MiB"


def over_budget(rec: Result, budget: int) -> Result:
    """``rec`` of a test that ran under the bound: one that ran out of memory (an error or
    a crash saying so) says so, naming the budget (``error``, as for a declared tensor over it)."""
    msg = rec.message
    if rec.status not in (Status.ERROR, Status.CRASH) or not any(s in msg.lower() for s in OUT_OF_MEMORY):
        return rec
    why = (f"{msg.rstrip(': .')}: the test went {budget_text(budget)} "
           "(--max-memory bounds what a test allocates, temporaries included)")
    return replace(rec, status=Status.ERROR, message=why)
