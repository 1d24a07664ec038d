"""The default backend: this package's NumPy engine."""

from __future__ import annotations

import io
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...engine import Engine, run_spmd
from ...kernels.registry import Registry, load_all
from .base import Backend
from ..records.result import Outcome, replace
from .checks import check_outcome


MAX_OUTPUT = 20000  # characters of printed output kept in a result


class NumpyBackend(Backend):
    name = "numpy"

    def __init__(self, registry: Registry | None = None):
        self.registry = registry

    def engine(self, module, opts: Any = None) -> Engine:
        timeout = getattr(opts, "timeout", None)
        return Engine(
            module,
            self.registry if self.registry is not None else load_all(),
            deadline=(time.monotonic() + timeout) if timeout else None,
            max_bytes=getattr(opts, "max_bytes", None),
            probe_dir=getattr(opts, "probe_dir", None),
            io=getattr(opts, "io", None),
        )

    def run_function(self, module, func_name: str, args: Sequence[np.ndarray], opts: Any = None) -> tuple:
        """Runs on one process, or — when ``opts`` asks for a grid of several
        (``num_replicas`` x ``num_partitions``) — on every process of it,
        returning process (0, 0)'s results (all are in ``opts.io.processes``)."""
        replicas = getattr(opts, "num_replicas", None)
        partitions = getattr(opts, "num_partitions", None)
        if (replicas or 1) * (partitions or 1) > 1:
            timeout = getattr(opts, "timeout", None)
            io_ = getattr(opts, "io", None)
            per_process = run_spmd(module, func_name, args, num_replicas=replicas, num_partitions=partitions,
                                   registry=self.registry if self.registry is not None else load_all(),
                                   deadline=(time.monotonic() + timeout) if timeout else None, io=io_)
            if io_ is not None:
                io_.processes = per_process
            return tuple(per_process[min(per_process)])
        return self.engine(module, opts).call(func_name, tuple(args))

    def run_test(self, module, func, opts) -> Outcome:
        eng = self.engine(module, opts)
        printed = io.StringIO()  # interpreter.print output goes into the result
        eng.io = printed
        eng.call(func.name, ())
        out = check_outcome(eng.checks)
        return replace(out, output=printed.getvalue()[:MAX_OUTPUT]) if printed.getvalue() else out
