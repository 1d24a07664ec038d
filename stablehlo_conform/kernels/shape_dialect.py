"""The MLIR ``shape`` dialect, as found in dynamic-shape programs.

Runtime values: a shape (``!shape.shape`` or ``tensor<?xindex>``) is a 1-d
int64 array of extents; a size (``!shape.size`` or ``index``) a 0-d int64
array; a witness (``!shape.witness``) a Python bool. A failing constraint
(``cstr_*``) ends the test as failed with the constraint's message.
"""

from __future__ import annotations

import numpy as np

from ..errors import CheckFailure, ConformError
from .registry import kernel


def _shape(v) -> tuple[int, ...]:
    return tuple(int(x) for x in np.asarray(v).reshape(-1))


def _shape_value(extents) -> np.ndarray:
    return np.asarray(tuple(int(e) for e in extents), dtype=np.int64).reshape(-1)


def _size(v) -> int:
    return int(np.asarray(v).reshape(()))


def _size_value(n: int) -> np.ndarray:
    return np.asarray(int(n), dtype=np.int64)


def _broadcast(shapes) -> tuple[int, ...] | None:
    """The NumPy-style broadcast of extent lists, or None if incompatible."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for d in range(rank):
        ext = 1
        for s in shapes:
            k = d - (rank - len(s))
            if k < 0:
                continue
            e = s[k]
            if e == 1:
                continue
            if ext != 1 and ext != e:
                return None
            ext = e
        out.append(ext)
    return tuple(out)


@kernel("shape.shape_of")
def shape_of(op, t):
    return (_shape_value(np.shape(t)),)


@kernel("shape.const_shape")
def const_shape(op):
    return (_shape_value(np.asarray(op.attr("shape")).reshape(-1)),)


@kernel("shape.const_size")
def const_size(op):
    return (_size_value(op.attr("value")),)


@kernel("shape.const_witness")
def const_witness(op):
    return (bool(op.attr("passing")),)


@kernel("shape.broadcast")
def broadcast(op, *shapes):
    out = _broadcast([_shape(s) for s in shapes])
    if out is None:
        msg = op.attr("error") or "shapes are not broadcastable"
        raise ConformError(f"{op.name} at {op.loc}: {msg}: {[_shape(s) for s in shapes]}")
    return (_shape_value(out),)


@kernel("shape.num_elements")
def num_elements(op, s):
    return (_size_value(int(np.prod(_shape(s), dtype=np.int64))),)


@kernel("shape.rank")
def rank(op, s):
    return (_size_value(len(_shape(s))),)


@kernel("shape.get_extent")
def get_extent(op, s, d):
    ext = _shape(s)
    i = _size(d)
    if not 0 <= i < len(ext):
        raise ConformError(f"{op.name} at {op.loc}: dimension {i} out of range for shape {ext}")
    return (_size_value(ext[i]),)


@kernel("shape.dim")
def dim(op, t, d):
    ext = np.shape(t)
    i = _size(d)
    if not 0 <= i < len(ext):
        raise ConformError(f"{op.name} at {op.loc}: dimension {i} out of range for rank {len(ext)}")
    return (_size_value(ext[i]),)


@kernel("shape.index_to_size", "shape.size_to_index")
def index_size(op, v):
    return (_size_value(_size(v)),)


@kernel("shape.to_extent_tensor", "shape.from_extent_tensor")
def extent_tensor(op, s):
    return (_shape_value(_shape(s)),)


@kernel("shape.value_as_shape")
def value_as_shape(op, v):
    return (_shape_value(_shape(v)),)


@kernel("shape.concat")
def concat(op, a, b):
    return (_shape_value(_shape(a) + _shape(b)),)


@kernel("shape.split_at")
def split_at(op, s, index):
    ext = _shape(s)
    i = _size(index)
    if i < 0:
        i += len(ext)
    return (_shape_value(ext[:i]), _shape_value(ext[i:]))


@kernel("shape.any")
def any_(op, *shapes):
    return (_shape_value(_shape(shapes[0])),)


@kernel("shape.add")
def add(op, a, b):
    return (_size_value(_size(a) + _size(b)),)


@kernel("shape.mul")
def mul(op, a, b):
    return (_size_value(_size(a) * _size(b)),)


@kernel("shape.div")
def div(op, a, b):
    """Floor division (a zero divisor is an error)."""
    d = _size(b)
    if d == 0:
        raise ConformError(f"{op.name} at {op.loc}: division by zero")
    return (_size_value(_size(a) // d),)


@kernel("shape.max")
def max_(op, a, b):
    if np.ndim(a) == 0:
        return (_size_value(max(_size(a), _size(b))),)
    return (_shape_value(np.maximum(_shape(a), _shape(b))),)


@kernel("shape.min")
def min_(op, a, b):
    if np.ndim(a) == 0:
        return (_size_value(min(_size(a), _size(b))),)
    return (_shape_value(np.minimum(_shape(a), _shape(b))),)


@kernel("shape.shape_eq")
def shape_eq(op, *shapes):
    first = _shape(shapes[0])
    return (np.asarray(all(_shape(s) == first for s in shapes[1:]), dtype=np.bool_),)


@kernel("shape.is_broadcastable")
def is_broadcastable(op, *shapes):
    return (np.asarray(_broadcast([_shape(s) for s in shapes]) is not None, dtype=np.bool_),)


# constraints and witnesses ---------------------------------------------------


def _fail(op, why: str):
    raise CheckFailure(f"{op.loc}: {op.name}: {why}")


@kernel("shape.cstr_broadcastable")
def cstr_broadcastable(op, *shapes):
    ext = [_shape(s) for s in shapes]
    if _broadcast(ext) is None:
        _fail(op, f"shapes {ext} are not broadcastable")
    return (True,)


@kernel("shape.cstr_eq")
def cstr_eq(op, *shapes):
    ext = [_shape(s) for s in shapes]
    if any(e != ext[0] for e in ext[1:]):
        _fail(op, f"shapes {ext} are not equal")
    return (True,)


@kernel("shape.cstr_require")
def cstr_require(op, pred):
    if not bool(np.asarray(pred)):
        _fail(op, op.attr("msg") or "requirement not met")
    return (True,)


@kernel("shape.assuming_all")
def assuming_all(op, *witnesses):
    return (all(bool(w) for w in witnesses),)


@kernel("shape.assuming")
def assuming(op, witness):
    """Runs the region when the witness holds."""
    if not bool(witness):
        _fail(op, "assumption does not hold")
    return tuple(op.region(0)())


@kernel("shape.debug_print")
def debug_print(op, v):
    return (v,)
