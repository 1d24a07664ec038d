"""Native backends: runtimes that take MLIR text.

To run a function a native backend gets the module text with the function
renamed and a wrapper ``@main`` added that converts arguments and results to
wire types (:mod:`.wire`). Self-checking tests are run by removing the check
ops, returning the checked values instead, and evaluating the checks on the
host (:mod:`.checks`). Calls run in a child process (:mod:`.isolated`)
unless the backend or the options say otherwise. A subclass implements
:meth:`NativeBackend.execute` and nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from ... import types as T
from ...errors import ConformError, UnsupportedOp
from ...program import Func, Module, walk_ops
from .base import Backend, BackendError
from .checks import _reachable, check_ops, check_outcome, evaluate_checks, is_check
from .isolated import Isolated
from .wire import BASIC, Wire, decode, encode, replicated_attr, splice, wire_for, wrapper_text


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

    def __init__(self) -> None:
        self._child: Isolated | None = None

    # to implement -------------------------------------------------------
    def execute(self, text: str, args: list[np.ndarray]) -> list[np.ndarray]:
        """Run ``@main`` of ``text`` on wire-typed arrays."""
        raise NotImplementedError

    def check_available(self) -> None:
        """Raise :class:`BackendUnavailable` when the backend cannot run."""

    # plumbing -----------------------------------------------------------
    def _call(self, text: str, args: list[np.ndarray], opts: Any,
              default_isolate: bool | None = None) -> list[np.ndarray]:
        """Isolation: ``opts.isolate`` or ``opts.extra["isolate"]`` when set,
        else ``default_isolate``, else the backend's default."""
        isolate = getattr(opts, "isolate", None)
        if isolate is None:
            extra = getattr(opts, "extra", None) or {}
            isolate = extra.get("isolate", self.isolate if default_isolate is None else default_isolate)
        self.check_available()
        if not isolate:
            return self.execute(text, args)
        return self.child().call("execute", text, args, timeout=getattr(opts, "timeout", None))

    def child(self) -> Isolated:
        """This backend's long-lived child process (started on first use)."""
        if self._child is None:
            self._child = Isolated(self.spec, self.name, self.init)
        return self._child

    def _run(self, module: Module, func: Func, args: Sequence[np.ndarray], result_types,
             strip_checks: bool, opts: Any, default_isolate: bool | None = None) -> list[np.ndarray]:
        from ... import frontend

        label = self.name
        if len(args) != len(func.param_types):
            raise ConformError(f"@{func.name} takes {len(func.param_types)} arguments, got {len(args)}")
        dynamic = any(isinstance(t, T.TensorType) and not t.is_static
                      for t in (*func.param_types, *result_types)) or _dynamic_inside(func)
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
        for f in _reachable(module, func):
            for op in walk_ops(f.body):
                if op.name.startswith("interpreter."):
                    raise UnsupportedOp(label, f"{op.name} at {op.loc}: {_INTERPRETER_OPS.get(op.name, _OTHER)}")
        try:
            text, _ = frontend.prepare_entry(module.text, func.name, strip_checks=strip_checks)
        except ConformError:
            raise
        except Exception as e:
            raise UnsupportedOp(label, "the program does not parse with jaxlib's bindings"
                                + _bindings_error(str(e))) from None
        text = splice(text, wrapper_text(frontend.ENTRY_ALIAS, params, results, declared, consts,
                                         replicated_attr(module)))
        if dynamic:
            try:
                text = frontend.refine_shapes(text)
            except Exception as e:
                why = str(e).strip()[:200]
                raise UnsupportedOp(label, f"dynamic shapes could not be refined: {why}") from None
            head = next((ln for ln in text.splitlines() if "func.func public @main(" in ln), "")
            if "?" in head:
                raise UnsupportedOp(label, "dynamic shapes remain after refinement")
        wire_args: list[np.ndarray] = []
        for w, a in zip(params, args):
            if w is not None:
                wire_args += encode(w, a)
        outs = self._call(text, wire_args, opts, default_isolate)
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

    def run_function(self, module, func_name: str, args: Sequence[np.ndarray], opts: Any = None) -> tuple:
        func = module.funcs.get(func_name)
        if func is None:
            raise ConformError(f"no function @{func_name} in module")
        return tuple(self._run(module, func, args, func.result_types, False, opts))

    def _test_run(self, module: Module, func: Func, opts: Any) -> tuple[list, list[list[np.ndarray]]]:
        checks = check_ops(func)
        top = set(map(id, checks))
        for f in _reachable(module, func):
            for op in walk_ops(f.body):
                if is_check(op) and id(op) not in top:
                    raise UnsupportedOp(self.name, f"check op outside the test function's body at {op.loc}")
        for op in checks:
            if op.name == "check.expect_serialized_eq":
                raise UnsupportedOp(self.name, "check.expect_serialized_eq needs interpreter probes")
        types = [t for op in checks for t in op.operand_types]
        flat = self._run(module, func, (), types, True, opts)
        grouped: list[list[np.ndarray]] = []
        k = 0
        for op in checks:
            grouped.append(flat[k:k + len(op.operands)])
            k += len(op.operands)
        return checks, grouped

    def test_values(self, module, func, opts) -> list[np.ndarray]:
        _, grouped = self._test_run(module, func, opts)
        return [g[0] for g in grouped if g]

    def run_test(self, module, func, opts) -> dict[str, Any]:
        checks, grouped = self._test_run(module, func, opts)
        return check_outcome(evaluate_checks(module, checks, grouped))


# Ops of the reference interpreter's own dialect: tests use them, programs
# sent to a compiler cannot contain them.
_OTHER = "an op of the reference interpreter's dialect, not of StableHLO, so no compiled program can hold it"
_INTERPRETER_OPS = {
    "interpreter.run_parallel": "the test runs its functions on a grid of processes with the reference "
                                "interpreter's run_parallel op (not StableHLO); a compiled program cannot "
                                "hold it",
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
