"""Programs that take arguments, run as tests.

Two kinds of files carry no zero-argument test function:

- *RUN-line programs* (``// RUN: ... --interpret --args="[dense<...> : T, ...]"``
  with ``// CHECK:`` lines): the arguments are decoded by the bindings, the
  entry function runs, its results are printed the way the official
  interpreter prints them, and the ``CHECK`` lines are matched against that
  output (:mod:`.filecheck`).
- *Shape-polymorphic programs* (``@main`` taking dimension sizes and tensors
  with ``?`` dims, as JAX exports them): every dimension variable and every
  dynamic dimension is given one size, tensors get seeded random values, and
  the program must run with every op's results matching its declared types.
  Such a test has no expected values of its own; ``--compare`` adds another
  backend as the oracle.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import types as T
from ...kernels.interpreter_ops import format_value
from ...program import Func, Module
from .filecheck import check_lines
from .inputs import random_array

DYNAMIC_SIZE = 4
_ARGS_RE = re.compile(r'^//\s*RUN:(?!\s*not\b).*--interpret\b.*--args="(\[.*\])"', re.M)


@dataclass
class ProgramCase:
    func: Func
    kind: str  # "args", "generated" or "model"
    args_text: str | None = None
    checks: tuple[tuple[str, str], ...] = ()  # (directive, pattern): :func:`.filecheck.check_lines`
    recipe: Any = None  # a model's recipe (:mod:`.recipe`)


def find_program_cases(source_text: str, modules: list[Module]) -> list[tuple[Module, ProgramCase]]:
    """Program tests of a file whose modules hold no zero-argument test."""
    m = _ARGS_RE.search(source_text)
    out: list[tuple[Module, ProgramCase]] = []
    for mod in modules:
        entry = mod.funcs.get("main")
        if entry is None:
            public = [f for f in mod.funcs.values() if f.visibility != "private"]
            entry = public[0] if len(public) == 1 else None
        if entry is None or not entry.param_types:
            continue
        if m:
            out.append((mod, ProgramCase(entry, "args", m.group(1), check_lines(source_text))))
        else:
            out.append((mod, ProgramCase(entry, "generated")))
    return out


def generated_inputs(func: Func, seed: int = 0, size: int = DYNAMIC_SIZE, int_zeros: bool = False) -> list:
    """Arguments for a shape-polymorphic entry: leading integer scalars are
    dimension variables (all ``size``), ``?`` dims are ``size`` too; values from
    :func:`.inputs.random_array`, integer tensors small and non-negative (as indices),
    or zeros with ``int_zeros`` (in bounds wherever they are used as indices)."""
    rng = np.random.default_rng(seed)
    args = []
    leading = True
    for ty in func.param_types:
        if not isinstance(ty, T.TensorType):
            raise ValueError(f"cannot generate an argument of type {ty}")
        et = ty.element
        if leading and ty.rank == 0 and getattr(et, "is_integer", False):
            args.append(np.array(size, dtype=ty.dtype))
            continue
        leading = False
        if int_zeros and getattr(et, "kind", "") in ("int", "uint"):
            args.append(np.zeros(tuple(size if d is None else d for d in ty.shape), dtype=ty.dtype))
        else:
            args.append(random_array(ty, rng, index=True, dynamic=size))
    return args


def format_results(values, types) -> str:
    """Results printed like the official interpreter (``tensor<2xi32> {...}``)."""
    return "\n".join(format_value(v, t) for v, t in zip(values, types))
