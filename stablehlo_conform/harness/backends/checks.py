"""Check evaluation on the host: a native backend returns the values the
check ops of a self-checking test look at, and the checks are evaluated here
with the same check kernels as the NumPy engine."""

from __future__ import annotations

import numpy as np

from ...engine import Engine, OpContext
from ...errors import UnsupportedOp
from ...kernels import check as check_kernels
from ...kernels.custom_call import custom_call
from ...kernels.registry import Registry, load_all
from ...program import Func, Module, SymbolRef, walk_ops
from ..records.result import Outcome, Status


def check_ops(func: Func) -> list:
    """Check ops (check dialect or ``custom_call @check.*``) of ``func``'s body."""
    return [op for op in func.body.blocks[0].ops if is_check(op)] if func.body.blocks else []


def is_check(op) -> bool:
    if op.name.startswith("check."):
        return True
    target = str(op.attrs.get("call_target_name", ""))
    return op.name == "stablehlo.custom_call" and target.startswith("check.")


def evaluate_checks(module: Module, checks: list, values: list[list[np.ndarray]]) -> list:
    """Evaluate check ops on given operand values with the check kernels of
    :mod:`stablehlo_conform.kernels.check`; returns ``(ok, message, loc)``s."""
    eng = Engine(module, Registry())
    for op, vals in zip(checks, values):
        if op.name == "stablehlo.custom_call":
            fn = custom_call
        else:
            fn = getattr(check_kernels, op.name.split(".", 1)[1], None) or load_all().lookup(op.name)
        if fn is None:
            raise UnsupportedOp(op.name, loc=str(op.loc))
        fn(OpContext(op, eng), *vals)
    return eng.checks


def _reachable(module: Module, func: Func) -> list[Func]:
    """``func`` and every function it references (calls, symbol attributes)."""
    seen: dict[str, Func] = {}
    todo = [func]
    while todo:
        f = todo.pop()
        if f.name in seen:
            continue
        seen[f.name] = f
        for op in walk_ops(f.body):
            for v in op.attrs.values():
                for x in (v if isinstance(v, tuple) else (v,)):
                    if isinstance(x, SymbolRef) and x.name in module.funcs:
                        todo.append(module.funcs[x.name])
    return list(seen.values())


def check_outcome(checks: list) -> Outcome:
    failed = [(msg, loc) for ok, msg, loc in checks if not ok]
    if failed:
        shown = [f"{loc}: {msg}" for msg, loc in failed[:3]]
        more = f" (+{len(failed) - 3} more)" if len(failed) > 3 else ""
        return Outcome(Status.FAIL, len(checks), "; ".join(shown) + more)
    return Outcome(Status.PASS, len(checks), "")
