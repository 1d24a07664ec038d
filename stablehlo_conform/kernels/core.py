"""Constants and other ops every program needs (spec.md#constant)."""

from __future__ import annotations

import numpy as np

from .registry import kernel


@kernel("stablehlo.constant", "arith.constant", "mhlo.constant")
def constant(op, *_):
    """See spec.md#constant. The value was decoded once at load time."""
    v = op.attr("value")
    if isinstance(v, np.ndarray):
        return (v,)
    ty = op.result_type(0)
    return (np.asarray(v, dtype=ty.dtype),)
