"""The options of a run, one shape for every caller and every backend.

``conform run``, ``conform eval``, ``conform diff``, the reducer and the
accuracy campaign each build a :class:`RunOptions`; every backend's
``run_function(module, func_name, args, opts)`` and ``run_test(module, func,
opts)`` receive one (or None: the defaults). It is frozen: a variant is
``dataclasses.replace(opts, timeout=...)``, and nothing a callee does changes
the caller's options. The accuracy profile travels parsed, so no callee loads
it again or writes it back.

This module imports nothing of the package: backends (a higher wing) and
plugin backends written elsewhere read it without loading an interpreter.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Protocol

LOAD_SECONDS = 60.0  # default seconds a backend's client may take to start (the load deadline)
DIFF_MAX_OPS = 300  # default number of single-op runs when localising a difference
DIFF_PER_OP_LIMIT = 2  # default single-op runs per distinct op when localising


class AccuracyBounds(Protocol):
    """What a parsed accuracy profile offers (:class:`stablehlo_conform.oracle.classes.Profile`):
    per-op, per-element-type ULP bounds and the meaning of the ``precision_config`` levels of
    dots (spec.md#dot_general)."""

    source: str
    precision: dict[str, str]

    def lookup(self, op: str, element: str) -> Any: ...


@dataclass
class RunIO:
    """The host side of a run's infeed and outfeed (spec.md#infeed, spec.md#outfeed):
    ``infeed`` the values infeed ops take, in order; ``outfeed`` the values outfeed
    ops give; ``processes`` the results of every process of a grid, by process id
    (written by the run)."""

    infeed: list = field(default_factory=list)
    outfeed: list = field(default_factory=list)
    processes: dict | None = None


@dataclass(frozen=True)
class RunOptions:
    """How to run programs; every field has the meaning it has on the command line.

    ``timeout``: seconds one program (or test) may run (None: no limit).
    ``load_timeout``: seconds a backend's client may take to start (None: no limit).
    ``max_bytes``: the memory budget of the NumPy engine (None: none).
    ``probe_dir``: where ``interpreter.probe`` writes its files.
    ``io``: the infeed/outfeed channel of a run (:class:`RunIO`; the run
    writes into it: it is where its outputs go, not an option). ``num_replicas`` / ``num_partitions``: the process grid
    (spec.md#parallel-execution; None: the module's own).
    ``isolate``: run a native backend in its child process (None: the backend's default).
    ``backend``: the backend's name where a caller resolves it.
    ``max_ops`` / ``per_op_limit`` / ``localise``: how ``conform diff`` runs ops
    alone to localise a difference (``auto``: on a mismatch; ``always``; ``never``).
    ``accuracy_profile``: the parsed accuracy profile whose bounds override the
    default ULP tables (None: the defaults)."""

    backend: str = "numpy"
    timeout: float | None = None
    load_timeout: float | None = LOAD_SECONDS
    max_bytes: int | None = None
    probe_dir: str | None = None
    io: RunIO | None = None
    num_replicas: int | None = None
    num_partitions: int | None = None
    isolate: bool | None = None
    max_ops: int = DIFF_MAX_OPS
    per_op_limit: int = DIFF_PER_OP_LIMIT
    localise: str = "auto"
    accuracy_profile: AccuracyBounds | None = None

    def plain(self) -> RunOptions:
        """These options as a :class:`RunOptions` itself: a subclass (the suite's
        ``Options``) leaves its own fields behind, so a backend sees only these."""
        if type(self) is RunOptions:
            return self
        return RunOptions(**{f.name: getattr(self, f.name) for f in fields(RunOptions)})


def run_options(opts: RunOptions | None) -> RunOptions:
    """``opts``, or the defaults for None."""
    return RunOptions() if opts is None else opts
