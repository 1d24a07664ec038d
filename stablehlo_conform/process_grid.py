"""The StableHLO process grid and the rendezvous between its processes.

See spec.md#parallel-execution and spec.md#collective-ops. A grid of
``num_replicas x num_partitions`` processes runs in threads of one Python
process, each with its own :class:`~stablehlo_conform.engine.Engine`. Processes
meet in *rendezvous* (collective ops) and exchange values over *channels*
(send/recv). Every wait is bounded:

- when every live process is blocked and none of the waits can complete (a
  deadlock: mismatched collectives, a recv nobody sends to, a process that
  finished without reaching a collective), the waits end at once with a
  :class:`DeadlockError` naming the op, its location and the processes that
  never arrived;
- otherwise a wait ends after the time left to the engine's deadline (or
  :data:`DEFAULT_TIMEOUT` seconds) with a :class:`RendezvousTimeout`;
- when one process fails, the grid is aborted: the others stop at their next
  op or wait with :class:`ProcessAborted`, and the first error is the one
  reported.

This module imports no engine (a process's engine is made as its parent's class);
:func:`stablehlo_conform.engine.run_spmd` runs a function on a whole grid.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import ConformError, Timeout

DEFAULT_TIMEOUT = 30.0  # seconds a process waits for the others without a deadline
# the most processes a grid may have where a backend makes a device per process (XLA CPU: about
# 2 s and 0.5 GB for 1024 devices, 10 GB for 100000): a program asking for more is refused
MAX_PROCESSES = 1024

ProcessId = tuple[int, int]


class DeadlockError(ConformError):
    """The processes of a grid can no longer make progress."""


class CollectiveMismatch(ConformError):
    """Processes met at a rendezvous while executing different ops."""


class RendezvousTimeout(Timeout):
    """A process waited too long for the others."""


class ProcessAborted(ConformError):
    """This process was stopped because another one failed."""


def grid_limit_error(replicas: int, partitions: int, limit: int = MAX_PROCESSES) -> str | None:
    """Why a ``replicas x partitions`` grid is not made (more processes than
    ``limit``), or None when it may be."""
    n = replicas * partitions
    if n <= limit:
        return None
    return (f"a grid of {replicas} replicas x {partitions} partitions ({n} processes) is larger than "
            f"the limit of {limit} processes")


def fmt_pid(pid: ProcessId) -> str:
    return f"({pid[0]}, {pid[1]})"


def fmt_pids(pids: Iterable[ProcessId]) -> str:
    pids = list(pids)
    word = "process" if len(pids) == 1 else "processes"
    return f"{word} " + ", ".join(fmt_pid(p) for p in pids)


@dataclass
class _Meeting:
    group: tuple[ProcessId, ...]
    values: dict[ProcessId, Any] = field(default_factory=dict)
    what: dict[ProcessId, str] = field(default_factory=dict)
    readers: int = 0

    @property
    def complete(self) -> bool:
        return len(self.values) == len(self.group)


@dataclass
class _Wait:
    what: str  # "<op> at <loc>"
    ready: Callable[[], bool]
    missing: Callable[[], str]  # who it is waiting for, for messages


class ProcessGrid:
    """``num_replicas x num_partitions`` processes and their rendezvous."""

    def __init__(
        self,
        num_replicas: int = 1,
        num_partitions: int = 1,
        *,
        deadline: float | None = None,
        timeout: float | None = None,
        infeed: Sequence[Any] = (),
    ):
        if num_replicas < 1 or num_partitions < 1:
            raise ConformError(f"invalid process grid {num_replicas}x{num_partitions}")
        self.num_replicas = int(num_replicas)
        self.num_partitions = int(num_partitions)
        self.deadline = deadline
        self.timeout = timeout
        self.cond = threading.Condition()
        self.states: dict[ProcessId, str] = {}  # running, waiting, done, failed
        self.waits: dict[ProcessId, _Wait] = {}
        self.where: dict[ProcessId, str] = {}  # last collective each process reached
        self.meetings: dict[Any, _Meeting] = {}
        self.channels: dict[Any, deque] = {}
        self.infeed: deque = deque(infeed)
        self.outfeed: list[tuple[ProcessId, tuple]] = []
        self.error: BaseException | None = None
        self.io_lock = threading.Lock()

    # the grid ------------------------------------------------------------
    @property
    def num_processes(self) -> int:
        return self.num_replicas * self.num_partitions

    def process_ids(self) -> list[ProcessId]:
        return [(r, p) for r in range(self.num_replicas) for p in range(self.num_partitions)]

    def process(self, replica_id: int, partition_id: int) -> "ProcessInfo":
        return ProcessInfo(replica_id, partition_id, self)

    # process groups (spec.md#collective-ops) ------------------------------
    def cross_replica(self, replica_groups: Sequence[Sequence[int]]) -> list[list[ProcessId]]:
        return [[(r, p) for r in g] for g in replica_groups for p in range(self.num_partitions)]

    def cross_partition(self, partition_groups: Sequence[Sequence[int]]) -> list[list[ProcessId]]:
        return [[(r, p) for p in g] for g in partition_groups for r in range(self.num_replicas)]

    def cross_replica_and_partition(self, replica_groups: Sequence[Sequence[int]]) -> list[list[ProcessId]]:
        return [[(r, p) for p in range(self.num_partitions) for r in g] for g in replica_groups]

    def flattened_ids(self, id_groups: Sequence[Sequence[int]]) -> list[list[ProcessId]]:
        n = self.num_partitions
        return [[(i // n, i % n) for i in g] for g in id_groups]

    def process_groups(self, mode: str, groups: Sequence[Sequence[int]]) -> list[list[ProcessId]]:
        if mode == "cross_replica":
            out = self.cross_replica(groups)
        elif mode == "cross_partition":
            out = self.cross_partition(groups)
        elif mode == "cross_replica_and_partition":
            out = self.cross_replica_and_partition(groups)
        elif mode == "flattened_ids":
            out = self.flattened_ids(groups)
        else:
            raise ConformError(f"unknown process group strategy {mode!r}")
        for g in out:
            for pid in g:
                if not (0 <= pid[0] < self.num_replicas and 0 <= pid[1] < self.num_partitions):
                    raise ConformError(
                        f"{mode}({[list(x) for x in groups]}) names process {fmt_pid(pid)} outside the "
                        f"{self.num_replicas}x{self.num_partitions} process grid")
        return out

    # lifecycle -------------------------------------------------------------
    def started(self, pid: ProcessId) -> None:
        with self.cond:
            self.states[pid] = "running"

    def finished(self, pid: ProcessId) -> None:
        with self.cond:
            self.states[pid] = "done"
            self._after_change()

    def failed(self, pid: ProcessId, exc: BaseException) -> None:
        with self.cond:
            self.states[pid] = "failed"
            if self.error is None and not isinstance(exc, ProcessAborted):
                self.error = exc
            self._after_change()

    def abort(self, exc: BaseException) -> None:
        with self.cond:
            if self.error is None:
                self.error = exc
            self.cond.notify_all()

    def check(self) -> None:
        """Raise :class:`ProcessAborted` if another process failed."""
        if self.error is not None:
            raise ProcessAborted(f"stopped: {self.error}")

    def _after_change(self) -> None:
        """A process finished, failed or started waiting: wake the waiters
        and look for a deadlock. The lock is held."""
        if self.error is None:
            msg = self._deadlock()
            if msg is not None:
                self.error = DeadlockError(msg)
        self.cond.notify_all()

    def _deadlock(self) -> str | None:
        if any(s == "running" for s in self.states.values()):
            return None
        waiting = sorted(pid for pid, s in self.states.items() if s == "waiting")
        if not waiting:
            return None
        if any(self.waits[pid].ready() for pid in waiting):
            return None
        pid = waiting[0]
        w = self.waits[pid]
        return f"deadlock: {w.what} in process {fmt_pid(pid)} never completed: {w.missing()}"

    def _status_of(self, pid: ProcessId, done: str = "finished without reaching it") -> str:
        """What ``pid`` is doing, as a phrase: "finished without reaching it"."""
        s = self.states.get(pid)
        if s is None:
            return "is not running"
        if s == "done":
            return done
        if s == "failed":
            return "failed"
        if s == "waiting":
            return f"is blocked at {self.waits[pid].what}"
        return "is still running"

    def _wait(self, pid: ProcessId, wait: _Wait) -> None:
        """Block until ``wait.ready()``; the lock is held."""
        if wait.ready():
            return
        if self.deadline is not None:
            limit = max(0.0, self.deadline - time.monotonic())
            if self.timeout is not None:
                limit = min(limit, self.timeout)
        else:
            limit = self.timeout if self.timeout is not None else DEFAULT_TIMEOUT
        end = time.monotonic() + limit
        self.states[pid] = "waiting"
        self.waits[pid] = wait
        try:
            self._after_change()
            while not wait.ready():
                if self.error is not None:
                    if isinstance(self.error, (DeadlockError, RendezvousTimeout)):
                        raise type(self.error)(str(self.error))
                    raise ProcessAborted(f"stopped: {self.error}")
                left = end - time.monotonic()
                if left <= 0:
                    err = RendezvousTimeout(
                        f"timed out after {limit:g} s: {wait.what} in process {fmt_pid(pid)} "
                        f"never completed: {wait.missing()}")
                    if self.error is None:
                        self.error = err
                    self.cond.notify_all()
                    raise err
                self.cond.wait(min(left, 1.0))
        finally:
            self.states[pid] = "running"
            self.waits.pop(pid, None)

    # rendezvous ------------------------------------------------------------
    def exchange(self, pid: ProcessId, key: Any, group: Sequence[ProcessId], value: Any,
                 what: str) -> dict[ProcessId, Any]:
        """Contribute ``value`` to the meeting ``key`` of ``group``; returns
        every member's value once all of them have arrived."""
        group = tuple(group)
        with self.cond:
            self.check()
            m = self.meetings.get(key)
            if m is None:
                m = self.meetings[key] = _Meeting(group)
            if pid in m.values:
                raise ConformError(f"{what}: process {fmt_pid(pid)} joined the same rendezvous twice")
            m.values[pid] = value
            m.what[pid] = what
            self.where[pid] = what
            if m.complete:
                self.cond.notify_all()
            else:
                def missing() -> str:
                    absent = [q for q in group if q not in m.values]
                    return "; ".join(
                        f"process {fmt_pid(q)} never arrived (it {self._status_of(q)})" for q in absent)

                self._wait(pid, _Wait(what, lambda: m.complete, missing))
            out = dict(m.values)
            m.readers += 1
            if m.readers == len(group):
                del self.meetings[key]
            return out

    def send(self, pid: ProcessId, key: Any, value: Any, what: str) -> None:
        with self.cond:
            self.check()
            self.channels.setdefault(key, deque()).append((pid, value))
            self.cond.notify_all()

    def recv(self, pid: ProcessId, key: Any, what: str, describe: str) -> tuple[ProcessId, Any]:
        """Take the oldest message of channel ``key`` (waits for one)."""
        with self.cond:
            self.check()
            q = self.channels.setdefault(key, deque())

            def missing() -> str:
                others = [p for p in self.process_ids() if p != pid]
                status = "; ".join(f"process {fmt_pid(p)} {self._status_of(p, 'finished')}" for p in others)
                status = status or "it is the only process"
                return f"nothing was sent {describe} ({status})"

            self._wait(pid, _Wait(what, lambda: bool(q), missing))
            return q.popleft()

    def next_infeed(self) -> Any:
        with self.cond:
            if not self.infeed:
                return None
            return self.infeed.popleft()

    # running programs --------------------------------------------------------
    def run(self, jobs: dict[ProcessId, Callable[["ProcessInfo"], Any]],
            join_timeout: float | None = None) -> dict[ProcessId, Any]:
        """Run ``jobs[pid](process)`` for every process, each in its own
        thread; returns the results, or raises the first error."""
        results: dict[ProcessId, Any] = {}
        for pid in jobs:
            self.started(pid)

        def body(pid: ProcessId) -> None:
            try:
                results[pid] = jobs[pid](self.process(*pid))
            except BaseException as e:  # noqa: BLE001 - handed to the caller
                self.failed(pid, e)
            else:
                self.finished(pid)

        threads = [threading.Thread(target=body, args=(pid,), name=f"process{fmt_pid(pid)}", daemon=True)
                   for pid in jobs]
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                t.join(0.5)
                if self.error is not None:
                    # the others stop at their next op; give them a moment
                    t.join(5.0)
                    break
                if join_timeout is not None and self.deadline is not None and \
                        time.monotonic() > self.deadline + join_timeout:
                    break
        if self.error is not None:
            raise self.error
        missing = [pid for pid in jobs if pid not in results]
        if missing:
            raise RendezvousTimeout(f"{fmt_pids(missing)} did not finish")
        return results


@dataclass
class ProcessInfo:
    """The position of one process in its grid (what replica_id and
    partition_id return) and its share of the rendezvous bookkeeping."""

    replica_id: int
    partition_id: int
    grid: ProcessGrid
    counters: dict = field(default_factory=dict)

    @property
    def id(self) -> ProcessId:
        return (self.replica_id, self.partition_id)

    @property
    def rendezvous(self) -> ProcessGrid:
        return self.grid

    def next_seq(self, key: Any) -> int:
        n = self.counters.get(key, 0)
        self.counters[key] = n + 1
        return n


def grid_size_of(module: Any) -> tuple[int, int]:
    """``(num_replicas, num_partitions)`` from the module attributes."""
    attrs = getattr(module, "attrs", {}) or {}

    def num(name: str) -> int:
        v = attrs.get(name, 1)
        try:
            return max(1, int(np.asarray(v).reshape(-1)[0]))
        except (TypeError, ValueError, IndexError):
            return 1

    return num("mhlo.num_replicas"), num("mhlo.num_partitions")


def process_of(engine: Any) -> ProcessInfo:
    """The process an engine runs as. An engine started outside
    ``run_parallel`` is process (0, 0) of the grid its module declares; the
    other processes of such a grid are not running."""
    info = getattr(engine, "process", None)
    if info is None:
        r, p = grid_size_of(engine.module)
        grid = ProcessGrid(r, p, deadline=engine.deadline)
        grid.started((0, 0))
        io = getattr(engine, "io", None)
        queue = getattr(io, "infeed", None)
        if queue is not None:
            grid.infeed.extend(queue)
        info = grid.process(0, 0)
        engine.process = info
    return info


def child_engine(parent: Any, info: ProcessInfo, module: Any = None, forward_trace: bool = True) -> Any:
    """An engine for one process of a ``run_parallel`` grid: it shares the
    parent's registry, deadline, io, state (probes) and check records, and
    stops at its next op once another process has failed. With
    ``forward_trace`` its ops are also reported to the parent's trace."""
    eng = type(parent)(
        module if module is not None else parent.module,
        parent.registry,
        deadline=parent.deadline,
        max_bytes=parent.max_bytes,
        probe_dir=parent.probe_dir,
        process=info,
        io=parent.io,
    )
    eng.state = parent.state
    eng.checks = parent.checks
    grid = info.grid
    outer = parent.trace if forward_trace else None

    def trace(op, args, results) -> None:
        if grid.error is not None:
            raise ProcessAborted(f"stopped: {grid.error}")
        if outer is not None:
            outer(op, args, results)

    eng.trace = trace
    return eng
