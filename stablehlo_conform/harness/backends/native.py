"""Native backends: runtimes that take MLIR text.

To run a function a native backend gets the module text with the function
renamed and a wrapper ``@main`` added that converts arguments and results to
wire types (:mod:`.wire`). Self-checking tests are run by removing the check
ops, returning the checked values instead, and evaluating the checks on the
host (:mod:`.checks`). Calls run in a child process (:mod:`.isolated`)
unless the backend or the options say otherwise. A subclass implements
:meth:`NativeBackend.execute` and nothing else; one that runs a program on
several devices at once implements :meth:`NativeBackend.execute_grid` too,
and then runs the official tests' ``interpreter.run_parallel`` grids: the
test's body (constants, tokens, checks) is evaluated on the host and each
grid's program runs on the backend, one device per process.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ... import frontend
from ... import types as T
from ...engine import Engine
from ...errors import ConformError, Timeout, UnsupportedOp
from ...kernels.registry import load_all
from ...program import Func, Module, walk_ops
from ..records.options import LOAD_SECONDS, RunOptions, run_options
from ..records.result import Outcome
from .base import Backend, BackendError
from .checks import _reachable, check_ops, check_outcome, evaluate_checks, is_check
from .isolated import Isolated
from .wire import BASIC, Wire, decode, encode, replicated_attr, splice, wire_for, wrapper_text

GRID_OP = "interpreter.run_parallel"
_start_listener: Callable[[str, bool], None] | None = None


def on_client_start(listener: Callable[[str, bool], None] | None) -> None:
    """Have ``listener(label, done)`` called in this process before (``done``
    False) and after (True) a backend's child starts its client: a worker
    tells its parent, which allows that start the load deadline instead of
    the test's timeout. None: no listener."""
    global _start_listener
    _start_listener = listener
# what a test's body may make on the host beside the grids and checks it holds
_GRID_HOST_OPS = frozenset({"stablehlo.constant", "arith.constant", "stablehlo.after_all",
                            "stablehlo.create_token", "func.return", GRID_OP})


def _runs_grid(func: Func) -> bool:
    """Whether ``func``'s body runs an ``interpreter.run_parallel`` grid."""
    return bool(func.body.blocks) and any(op.name == GRID_OP for op in func.body.blocks[0].ops)


def _dynamic_inside(func: Func) -> bool:
    """Whether an op of ``func``'s body has a dynamically shaped result (a
    static program seen through dynamic types, which needs refining)."""
    return any(isinstance(t, T.TensorType) and not t.is_static
               for op in walk_ops(func.body) for t in op.result_types)


class NativeBackend(Backend):
    """A backend that runs MLIR text; subclasses implement :meth:`execute`.

    ``native``: element type names the backend exchanges directly (None: all).
    ``isolate``: run native calls in a child process by default.
    """

    name = "native"
    native: frozenset[str] | None = BASIC
    isolate = True
    spec = ""  # "module:Class" of the subclass, for the child process
    init: tuple = ()  # its constructor arguments there
    start_method: str | None = None  # run first in a fresh child: what it loads before any program (a client)

    def __init__(self) -> None:
        self._child: Isolated | None = None
        self._start_failed: str | None = None

    # to implement -------------------------------------------------------
    def execute(self, text: str, args: list[np.ndarray]) -> list[np.ndarray]:
        """Run ``@main`` of ``text`` on wire-typed arrays."""
        raise NotImplementedError

    def execute_grid(self, text: str, per_process: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
        """Run ``@main`` of ``text`` (a module naming its grid) once per
        process of the grid, process ``i`` on ``per_process[i]``."""
        raise UnsupportedOp(self.label, "interpreter.run_parallel: this backend runs one process")

    def check_available(self) -> None:
        """Raise :class:`BackendUnavailable` when the backend cannot run."""

    def child_env(self) -> dict[str, str]:
        """Environment variables of the backend's child process."""
        return {}

    # plumbing -----------------------------------------------------------
    def _call(self, text: str, args: list, opts: RunOptions | None, default_isolate: bool | None = None,
              method: str = "execute") -> list:
        """``method`` (``execute``, or ``execute_grid`` with one argument list
        per process) on ``text``. Isolation: ``opts.isolate`` when set, else
        ``default_isolate``, else the backend's default."""
        opts = run_options(opts)
        isolate = opts.isolate
        if isolate is None:
            isolate = self.isolate if default_isolate is None else default_isolate
        self.check_available()
        if not isolate:
            return getattr(self, method)(text, args)
        self.ready(opts.load_timeout)
        return self.child().call(method, text, args, timeout=opts.timeout)

    def ready(self, timeout: float | None = LOAD_SECONDS) -> None:
        """Start the child and what it loads (``start_method``: a plugin's
        client) unless the child runs, within ``timeout`` seconds (the load
        deadline; None: none), never within a program's own timeout. A start
        that passed the deadline once is not waited for again."""
        child = self.child()
        if self.start_method is None or child.running:
            return
        if self._start_failed:
            raise Timeout(self._start_failed)
        listener = _start_listener
        if listener is not None:
            listener(self.label, False)
        try:
            child.call(self.start_method, timeout=timeout)
        except Timeout:
            self._start_failed = f"{self.label}: its client did not start within {timeout:g} s (the load deadline)"
            raise Timeout(self._start_failed) from None
        finally:
            if listener is not None:
                listener(self.label, True)

    def child(self) -> Isolated:
        """This backend's long-lived child process (started on first use)."""
        if self._child is None:
            self._child = Isolated(self.spec, self.label, self.init, env=self.child_env())
        return self._child

    def _run(self, module: Module, func: Func, args: Sequence[np.ndarray], result_types,
             strip_checks: bool, opts: RunOptions | None, default_isolate: bool | None = None,
             grid: tuple[int, int] | None = None, per_process: Sequence[Sequence[np.ndarray]] = ()) -> list:
        """``func`` run on the backend: its values (one list), or with
        ``grid`` = (replicas, partitions) one list per process of that grid,
        process ``i`` given ``per_process[i]`` (spec.md#parallel-execution)."""
        label = self.label
        if grid is not None:
            args = per_process[0] if per_process else ()
        if len(args) != len(func.param_types):
            raise ConformError(f"@{func.name} takes {len(func.param_types)} arguments, got {len(args)}")
        dynamic = any(isinstance(t, T.TensorType) and not t.is_static
                      for t in (*func.param_types, *result_types)) or _dynamic_inside(func)
        if dynamic and grid is not None:
            raise UnsupportedOp(label, f"@{func.name} of an interpreter.run_parallel grid has dynamic shapes")
        declared: dict[int, Any] = {}
        consts: dict[int, str] = {}
        params: list[Wire | None] = []
        for i, t in enumerate(func.param_types):
            if dynamic and isinstance(t, T.TensorType) and t.rank == 0 and t.element.kind in ("int", "uint"):
                consts[i] = f"dense<{int(np.asarray(args[i]))}> : {t}"
                params.append(None)
                continue
            if isinstance(t, T.TensorType) and not t.is_static:
                declared[i] = t
                t = T.TensorType(tuple(np.shape(args[i])), t.element)
            params.append(wire_for(t, self.native, label))
        results = [wire_for(t, self.native, label) for t in result_types]
        reachable = _reachable(module, func)
        for f in reachable:
            for op in walk_ops(f.body):
                if op.name.startswith("interpreter."):
                    raise UnsupportedOp(label, f"{op.name} at {op.loc}: {_INTERPRETER_OPS.get(op.name, _OTHER)}")
        keep = None if grid is None else frozenset(f.name for f in reachable)
        try:
            text, _ = frontend.prepare_entry(module.text, func.name, strip_checks=strip_checks, keep=keep, grid=grid)
        except ConformError:
            raise
        except Exception as e:
            raise UnsupportedOp(label, "the program does not parse with jaxlib's bindings"
                                + _bindings_error(str(e))) from None
        # a grid's processes each hold their own values: the wrapper's are manual on partitioned grids
        attr = replicated_attr(module) if grid is None else (
            (lambda t: '{mhlo.sharding = "{manual}"}') if grid[1] > 1 else None)
        text = splice(text, wrapper_text(frontend.ENTRY_ALIAS, params, results, declared, consts, attr))
        if dynamic:
            try:
                text = frontend.refine_shapes(text)
            except Exception as e:
                why = str(e).strip()[:200]
                raise UnsupportedOp(label, f"dynamic shapes could not be refined: {why}") from None
            head = next((ln for ln in text.splitlines() if "func.func public @main(" in ln), "")
            if "?" in head:
                raise UnsupportedOp(label, "dynamic shapes remain after refinement")

        def encoded(values: Sequence[np.ndarray]) -> list[np.ndarray]:
            out: list[np.ndarray] = []
            for w, a in zip(params, values):
                if w is not None:
                    out += encode(w, a)
            return out

        if grid is None:
            return self._decode(results, self._call(text, encoded(args), opts, default_isolate))
        outs = self._call(text, [encoded(a) for a in per_process], opts, default_isolate, method="execute_grid")
        return [self._decode(results, o) for o in outs]

    def _decode(self, results: list[Wire], outs: list[np.ndarray]) -> list[np.ndarray]:
        """The backend's wire-typed outputs as values of the result types."""
        label = self.label
        values: list[np.ndarray] = []
        k = 0
        if len(outs) != sum(len(w.pieces) for w in results):
            raise BackendError(f"{label} returned {len(outs)} values, expected "
                               f"{sum(len(w.pieces) for w in results)}")
        for i, w in enumerate(results):
            n = len(w.pieces)
            v = decode(w, outs[k:k + n])
            want = w.ttype.shape
            if len(v.shape) != len(want) or any(d not in (None, s) for d, s in zip(want, v.shape)):
                raise BackendError(f"{label} returned shape {list(v.shape)} for result #{i} "
                                   f"of type {w.ttype}")
            values.append(v)
            k += n
        return values

    # interpreter.run_parallel: the grid's processes on the backend's devices
    def run_grid(self, module: Module, op: Any, inputs: Sequence[np.ndarray], opts: RunOptions | None) -> tuple:
        """The results of ``interpreter.run_parallel`` ``op`` with its
        programs run on the backend, one device per process, in row-major
        process order (spec.md#parallel-execution). A client runs one
        program on every device of a grid, so every process must run the same
        function; infeed stays with the host."""
        programs = op.attr("programs") or ()
        names = [[getattr(s, "name", str(s).lstrip("@")) for s in row] for row in programs]
        if not names or not names[0] or any(len(row) != len(names[0]) for row in names):
            raise ConformError(f"{op.name} at {op.loc}: programs must be a non-empty 2-D array of symbols")
        distinct = sorted({n for row in names for n in row})
        if len(distinct) > 1:
            programs = ", ".join("@" + n for n in distinct)
            raise UnsupportedOp(self.label, f"{op.name} runs different programs ({programs}) on its processes;"
                                " a backend runs one program on every device of a grid")
        if op.attr("infeed"):
            raise UnsupportedOp(self.label, f"{op.name} with an infeed: the infeed values stay with the host")
        func = module.funcs.get(distinct[0])
        if func is None:
            raise ConformError(f"{op.name} at {op.loc}: no function @{distinct[0]}")
        replicas, partitions = len(names), len(names[0])
        k = len(func.param_types)
        if len(inputs) != k * replicas * partitions:
            raise ConformError(f"{op.name} at {op.loc}: {len(inputs)} operands, programs take "
                               f"{k * replicas * partitions}")
        per_process = [tuple(inputs[i * k:(i + 1) * k]) for i in range(replicas * partitions)]
        outs = self._run(module, func, (), func.result_types, False, opts, grid=(replicas, partitions),
                         per_process=per_process)
        return tuple(v for process in outs for v in process)

    def _grid_engine(self, module: Module, func: Func, opts: RunOptions | None,
                     overrides: dict | None = None) -> Engine:
        """The test function evaluated on the host with its
        ``interpreter.run_parallel`` ops run on the backend (its body holds
        nothing but constants, tokens, grids and checks)."""
        for op in func.body.blocks[0].ops if func.body.blocks else ():
            if op.name not in _GRID_HOST_OPS and not is_check(op):
                raise UnsupportedOp(self.label, f"{op.name} beside interpreter.run_parallel in a test's body "
                                    "(only constants and tokens are made on the host)")

        def grid_kernel(ctx, *inputs):
            return self.run_grid(module, ctx.op, inputs, opts)

        timeout = run_options(opts).timeout
        eng = Engine(module, load_all().with_overrides({GRID_OP: grid_kernel, **(overrides or {})}),
                     deadline=(time.monotonic() + timeout) if timeout else None)
        eng.call(func.name, ())
        return eng

    def run_function(self, module, func_name: str, args: Sequence[np.ndarray],
                     opts: RunOptions | None = None) -> tuple:
        func = module.funcs.get(func_name)
        if func is None:
            raise ConformError(f"no function @{func_name} in module")
        return tuple(self._run(module, func, args, func.result_types, False, opts))

    def _test_run(self, module: Module, func: Func, opts: RunOptions | None) -> tuple[list, list[list[np.ndarray]]]:
        checks = check_ops(func)
        top = set(map(id, checks))
        for f in _reachable(module, func):
            for op in walk_ops(f.body):
                if is_check(op) and id(op) not in top:
                    raise UnsupportedOp(self.label, f"check op outside the test function's body at {op.loc}")
        for op in checks:
            if op.name == "check.expect_serialized_eq":
                raise UnsupportedOp(self.label, "check.expect_serialized_eq needs interpreter probes")
        types = [t for op in checks for t in op.operand_types]
        flat = self._run(module, func, (), types, True, opts)
        grouped: list[list[np.ndarray]] = []
        k = 0
        for op in checks:
            grouped.append(flat[k:k + len(op.operands)])
            k += len(op.operands)
        return checks, grouped

    def test_values(self, module, func, opts: RunOptions | None) -> list[np.ndarray]:
        if _runs_grid(func):
            seen: list[np.ndarray] = []

            def record(ctx, *values):
                if values and (ctx.op.name != "stablehlo.custom_call" or is_check(ctx.op)):
                    seen.append(values[0])
                return ()

            names = {op.name for op in check_ops(func)}
            self._grid_engine(module, func, opts, {n: record for n in names})
            return seen
        _, grouped = self._test_run(module, func, opts)
        return [g[0] for g in grouped if g]

    def run_test(self, module, func, opts: RunOptions | None) -> Outcome:
        if _runs_grid(func):
            return check_outcome(self._grid_engine(module, func, opts).checks)
        checks, grouped = self._test_run(module, func, opts)
        return check_outcome(evaluate_checks(module, checks, grouped))


# Ops of the reference interpreter's own dialect: tests use them, programs
# sent to a compiler cannot contain them.
_OTHER = "an op of the reference interpreter's dialect, not of StableHLO, so no compiled program can hold it"
_INTERPRETER_OPS = {
    "interpreter.run_parallel": "a grid of processes run by the reference interpreter's run_parallel op "
                                "(not StableHLO) inside another function; a compiled program cannot hold it "
                                "(a test's own body may hold grids: they run on the backend's devices)",
    "interpreter.print": "the reference interpreter's print op (not StableHLO); a compiled program cannot hold it",
    "interpreter.probe": "the reference interpreter's probe op (not StableHLO); a compiled program cannot hold it",
}


def _bindings_error(text: str) -> str:
    """The bindings' own error of a program they reject (``: <error>``),
    not the notes after it: the first ``error:`` line without its location."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    errors = [ln for ln in lines if "error:" in ln]
    if not errors and not lines:
        return ""
    line = errors[0] if errors else lines[-1]
    line = re.sub(r'^.*?\berror:\s*(?:"[^"]*":\d+:\d+:\s*)?', "", line)
    return f": {line[:300]}"
