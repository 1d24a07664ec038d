"""Control flow: if, case, while, map, optimization_barrier, tuples; and the facts of the
ops the engine runs itself (the terminators, ``func.call``).

See spec.md#if, #case, #while, #map, #optimization_barrier, #tuple,
#get_tuple_element.
"""

from __future__ import annotations

import numpy as np

from ..opinfo import EXACT, STORAGE
from .registry import kernel, register_op


# Ops without a kernel: the engine itself calls a function and ends a region or function
# where a terminator passes its operands on as the results. Their facts are declared here,
# beside the region ops', so that load_all() declares the facts of every built-in op: the
# oracle reads ``selects`` of a reduction body's stablehlo.return where no engine is loaded.
register_op("func.call", quantized=STORAGE)
register_op("func.return", terminator=True, quantized=STORAGE)
register_op("stablehlo.return", terminator=True, quantized=STORAGE, selects=True)
for _name in ("chlo.return", "mhlo.return", "scf.yield", "tensor.yield", "shape.assuming_yield", "sdy.return"):
    register_op(_name, terminator=True)


@kernel("stablehlo.if", quantized=STORAGE)
def if_(op, pred):
    branch = 0 if bool(np.asarray(pred)) else 1
    return op.region(branch)()


@kernel("stablehlo.case", quantized=STORAGE)
def case(op, index):
    n = op.num_regions
    i = int(np.asarray(index))
    if i < 0 or i >= n:
        i = n - 1
    return op.region(i)()


@kernel("stablehlo.while", quantized=STORAGE)
def while_(op, *operands):
    cond = op.region(0)
    body = op.region(1)
    values = tuple(operands)
    while bool(np.asarray(cond(*values)[0])):
        values = body(*values)
    return values


@kernel("stablehlo.map", quantized=STORAGE)
def map_(op, *inputs):
    """Evaluates the computation on all elements at once (element-wise body)."""
    body = op.region(0, lanes=True)
    shape = op.result_type(0).shape
    shape = tuple(inputs[0].shape) if inputs else tuple(shape)
    out = body(*inputs)
    return tuple(np.broadcast_to(np.asarray(o), shape).copy() for o in out)


@kernel("stablehlo.optimization_barrier", quantized=STORAGE, accuracy=EXACT)
def optimization_barrier(op, *operands):
    return tuple(operands)


@kernel("stablehlo.tuple", quantized=STORAGE, accuracy=EXACT)
def tuple_(op, *operands):
    return (tuple(operands),)


@kernel("stablehlo.get_tuple_element", quantized=STORAGE, accuracy=EXACT)
def get_tuple_element(op, t):
    return (t[int(op.attr("index"))],)


class Future:
    """The value of a ``!stablehlo.future<...>``: the body's results."""

    __slots__ = ("values",)

    def __init__(self, values: tuple):
        self.values = values

    def __repr__(self) -> str:
        return f"future{self.values!r}"


@kernel("stablehlo.async_start", quantized=STORAGE)
def async_start(op, *operands):
    """See spec.md#async_start: the body runs now (asynchrony is optional)."""
    nargs = len(op.op.regions[0].blocks[0].args)
    return (Future(tuple(op.region(0)(*operands[:nargs]))),)


@kernel("stablehlo.async_done", quantized=STORAGE)
def async_done(op, future):
    """See spec.md#async_done."""
    return tuple(future.values)
