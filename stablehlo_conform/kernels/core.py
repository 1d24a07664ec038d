"""Constants and other ops every program needs (spec.md#constant)."""

from __future__ import annotations

import numpy as np

from ..opinfo import EXACT
from .registry import kernel


@kernel("stablehlo.constant", folds=True, accuracy=EXACT, constant=True)
@kernel("arith.constant", "mhlo.constant", folds=True, constant=True)
def constant(op, *_):
    """See spec.md#constant. The value was decoded once at load time."""
    v = op.attr("value")
    if isinstance(v, np.ndarray):
        return (v,)
    ty = op.result_type(0)
    return (np.asarray(v, dtype=ty.dtype),)


@kernel("chlo.constant", folds=True, accuracy=EXACT, constant=True)
def chlo_constant(op, *_):
    return constant(op)


@kernel("chlo.constant_like", accuracy=EXACT)
def chlo_constant_like(op, operand):
    """A splat of ``value`` with the operand's shape and the result's type."""
    v = np.asarray(op.attr("value"))
    return (np.full(np.shape(operand), v.reshape(-1)[0] if v.size else 0, dtype=op.result_dtype(0)),)
