"""The default backend: this package's NumPy engine."""

from __future__ import annotations

import io
import time
from collections.abc import Sequence

import numpy as np

from ...engine import Engine, run_spmd
from ...kernels.registry import Registry, load_all
from ..records.options import RunOptions, run_options
from ..records.result import Outcome, replace
from .base import Backend
from .checks import check_outcome

MAX_OUTPUT = 20000  # characters of printed output kept in a result


class NumpyBackend(Backend):
    name = "numpy"

    def __init__(self, registry: Registry | None = None):
        self.registry = registry

    def engine(self, module, opts: RunOptions | None = None) -> Engine:
        opts = run_options(opts)
        return Engine(
            module,
            self.registry if self.registry is not None else load_all(),
            deadline=(time.monotonic() + opts.timeout) if opts.timeout else None,
            max_bytes=opts.max_bytes,
            probe_dir=opts.probe_dir,
            io=opts.io,
        )

    def run_function(self, module, func_name: str, args: Sequence[np.ndarray],
                     opts: RunOptions | None = None) -> tuple:
        """Runs on one process, or — when ``opts`` asks for a grid of several
        (``num_replicas`` x ``num_partitions``) — on every process of it,
        returning process (0, 0)'s results (all are in ``opts.io.processes``)."""
        opts = run_options(opts)
        replicas, partitions = opts.num_replicas, opts.num_partitions
        if (replicas or 1) * (partitions or 1) > 1:
            timeout, io_ = opts.timeout, opts.io
            per_process = run_spmd(module, func_name, args, num_replicas=replicas, num_partitions=partitions,
                                   registry=self.registry if self.registry is not None else load_all(),
                                   deadline=(time.monotonic() + timeout) if timeout else None, io=io_)
            if io_ is not None:
                io_.processes = per_process
            return tuple(per_process[min(per_process)])
        return self.engine(module, opts).call(func_name, tuple(args))

    def run_test(self, module, func, opts: RunOptions | None) -> Outcome:
        eng = self.engine(module, opts)
        printed = io.StringIO()  # interpreter.print output goes into the result
        eng.io = printed
        eng.call(func.name, ())
        out = check_outcome(eng.checks)
        return replace(out, output=printed.getvalue()[:MAX_OUTPUT]) if printed.getvalue() else out
