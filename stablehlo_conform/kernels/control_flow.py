"""Control flow: if, case, while, map, optimization_barrier, tuples.

See spec.md#if, #case, #while, #map, #optimization_barrier, #tuple,
#get_tuple_element.
"""

from __future__ import annotations

import numpy as np

from .registry import kernel


@kernel("stablehlo.if")
def if_(op, pred):
    branch = 0 if bool(np.asarray(pred)) else 1
    return op.region(branch)()


@kernel("stablehlo.case")
def case(op, index):
    n = op.num_regions
    i = int(np.asarray(index))
    if i < 0 or i >= n:
        i = n - 1
    return op.region(i)()


@kernel("stablehlo.while")
def while_(op, *operands):
    cond = op.region(0)
    body = op.region(1)
    values = tuple(operands)
    while bool(np.asarray(cond(*values)[0])):
        values = body(*values)
    return values


@kernel("stablehlo.map")
def map_(op, *inputs):
    """Evaluates the computation on all elements at once (element-wise body)."""
    body = op.region(0, lanes=True)
    shape = op.result_type(0).shape
    shape = tuple(inputs[0].shape) if inputs else tuple(shape)
    out = body(*inputs)
    return tuple(np.broadcast_to(np.asarray(o), shape).copy() for o in out)


@kernel("stablehlo.optimization_barrier")
def optimization_barrier(op, *operands):
    return tuple(operands)


@kernel("stablehlo.tuple")
def tuple_(op, *operands):
    return (tuple(operands),)


@kernel("stablehlo.get_tuple_element")
def get_tuple_element(op, t):
    return (t[int(op.attr("index"))],)


class Future:
    """The value of a ``!stablehlo.future<...>``: the body's results."""

    __slots__ = ("values",)

    def __init__(self, values: tuple):
        self.values = values

    def __repr__(self) -> str:
        return f"future{self.values!r}"


@kernel("stablehlo.async_start")
def async_start(op, *operands):
    """See spec.md#async_start: the body runs now (asynchrony is optional)."""
    nargs = len(op.op.regions[0].blocks[0].args)
    return (Future(tuple(op.region(0)(*operands[:nargs]))),)


@kernel("stablehlo.async_done")
def async_done(op, future):
    """See spec.md#async_done."""
    return tuple(future.values)
