"""The MLIR ``tensor`` dialect: element access, construction and reshaping.

Exporters of dynamic-shape programs mix these ops with StableHLO (shape
tensors built with ``tensor.from_elements``, scalars read back with
``tensor.extract``). Mixed static/dynamic operands (offsets, sizes, strides,
padding, dynamic result dimensions) follow MLIR's convention: a static
attribute entry equal to ``ShapedType::kDynamic`` (INT64_MIN) takes the next
dynamic operand. Out-of-bounds accesses, undefined in the dialect, end the
test with an error.
"""

from __future__ import annotations

import numpy as np

from ..errors import ConformError
from .registry import kernel
from .arith import wrap, as_unsigned, bits_of

DYNAMIC = -(2**63)


def _index(v) -> int:
    return int(np.asarray(v).reshape(()))


def mixed(static, dynamic, start: int = 0) -> tuple[list[int], int]:
    """Merge a static attribute list with dynamic operands (from ``start``)."""
    out, j = [], start
    for s in static:
        if s == DYNAMIC:
            out.append(_index(dynamic[j]))
            j += 1
        else:
            out.append(int(s))
    return out, j


def result_shape(op, dynamic_sizes, i: int = 0) -> tuple[int, ...]:
    """The result type's shape with ``?`` dims taken from ``dynamic_sizes``."""
    shape, j = [], 0
    for d in op.result_shape(i):
        if d is None:
            shape.append(_index(dynamic_sizes[j]))
            j += 1
        else:
            shape.append(d)
    return tuple(shape)


def _segments(op, n_operands: int) -> tuple[int, ...]:
    seg = op.attr("operandSegmentSizes") or op.attr("operand_segment_sizes")
    if seg is None:
        return (n_operands,)
    return tuple(int(s) for s in seg)


def _check_indices(op, shape, idx) -> None:
    for k, (i, n) in enumerate(zip(idx, shape)):
        a = np.asarray(i)
        if a.size and (a.min() < 0 or a.max() >= n):
            raise ConformError(f"{op.name} at {op.loc}: index {a.min() if a.min() < 0 else a.max()} "
                               f"out of bounds for dimension {k} of size {n}")


@kernel("tensor.extract")
def extract(op, t, *indices):
    """Reads one element (or, in element-wise regions, one per lane)."""
    arr = np.asarray(t)
    idx = tuple(np.asarray(i).astype(np.int64) for i in indices)
    _check_indices(op, arr.shape, idx)
    return (np.asarray(arr[idx], dtype=op.result_dtype(0)),)


@kernel("tensor.insert")
def insert(op, scalar, dest, *indices):
    out = np.array(dest, copy=True)
    idx = tuple(_index(i) for i in indices)
    _check_indices(op, out.shape, idx)
    out[idx] = np.asarray(scalar)
    return (out,)


@kernel("tensor.from_elements")
def from_elements(op, *elements):
    dt = op.result_dtype(0)
    flat = np.array([np.asarray(e).reshape(()) for e in elements], dtype=dt)
    return (flat.reshape(op.result_shape(0)),)


@kernel("tensor.splat")
def splat(op, value, *dynamic_sizes):
    shape = result_shape(op, dynamic_sizes)
    return (np.full(shape, np.asarray(value), dtype=op.result_dtype(0)),)


@kernel("tensor.empty")
def empty(op, *dynamic_sizes):
    """Contents are unspecified; zeros are returned."""
    return (np.zeros(result_shape(op, dynamic_sizes), dtype=op.result_dtype(0)),)


@kernel("tensor.dim")
def dim(op, t, index):
    d = _index(index)
    shape = np.shape(t)
    if not 0 <= d < len(shape):
        raise ConformError(f"{op.name} at {op.loc}: dimension {d} out of range for rank {len(shape)}")
    return (np.asarray(shape[d], dtype=np.int64),)


@kernel("tensor.rank")
def rank(op, t):
    return (np.asarray(np.ndim(t), dtype=np.int64),)


@kernel("tensor.cast")
def cast(op, t):
    """Changes static/dynamic dimension information; the runtime shape must
    agree with every static dimension of the result type."""
    arr = np.asarray(t)
    want = op.result_shape(0)
    if len(want) != arr.ndim or any(w is not None and w != g for w, g in zip(want, arr.shape)):
        raise ConformError(f"{op.name} at {op.loc}: value of shape {arr.shape} "
                           f"does not fit {op.result_type(0)}")
    return (arr,)


@kernel("tensor.bitcast")
def bitcast(op, t):
    src, dst = op.operand_type(0).element, op.result_type(0).element
    arr = np.asarray(t)
    if src.dtype.itemsize == dst.dtype.itemsize and src.kind != "bool" and dst.kind != "bool":
        return (np.ascontiguousarray(arr).view(dst.dtype),)
    if src.kind in ("int", "uint", "bool") and dst.kind in ("int", "uint", "bool"):
        return (wrap(as_unsigned(arr, bits_of(src)), dst),)
    raise op.unsupported(f"bitcast {src} -> {dst}")


@kernel("tensor.reshape")
def reshape(op, t, shape):
    new = tuple(int(s) for s in np.asarray(shape).reshape(-1))
    arr = np.asarray(t)
    if int(np.prod(new, dtype=np.int64)) != arr.size:
        raise ConformError(f"{op.name} at {op.loc}: cannot reshape {arr.shape} to {new}")
    return (arr.reshape(new),)


@kernel("tensor.expand_shape")
def expand_shape(op, t, *dynamic_sizes):
    static = op.attr("static_output_shape")
    if static is not None:
        shape, _ = mixed(static, dynamic_sizes)
    else:
        shape = list(result_shape(op, dynamic_sizes))
    arr = np.asarray(t)
    if int(np.prod(shape, dtype=np.int64)) != arr.size:
        raise ConformError(f"{op.name} at {op.loc}: cannot expand {arr.shape} to {tuple(shape)}")
    return (arr.reshape(tuple(shape)),)


@kernel("tensor.collapse_shape")
def collapse_shape(op, t):
    arr = np.asarray(t)
    groups = op.attr("reassociation")
    shape = tuple(int(np.prod([arr.shape[d] for d in g], dtype=np.int64)) for g in groups)
    return (arr.reshape(shape),)


@kernel("tensor.concat")
def concat(op, *inputs):
    return (np.concatenate([np.asarray(x) for x in inputs], axis=int(op.attr("dim"))),)


def _slice_params(op, dyn):
    offsets, j = mixed(op.attr("static_offsets"), dyn)
    sizes, j = mixed(op.attr("static_sizes"), dyn, j)
    strides, j = mixed(op.attr("static_strides"), dyn, j)
    return offsets, sizes, strides


def _slices(op, shape, offsets, sizes, strides):
    out = []
    for d, (o, s, st, n) in enumerate(zip(offsets, sizes, strides, shape)):
        if s < 0 or o < 0 or (st < 1 and s > 1) or (s > 0 and o + (s - 1) * st >= n):
            raise ConformError(f"{op.name} at {op.loc}: slice offset {o} size {s} stride {st} "
                               f"out of bounds for dimension {d} of size {n}")
        out.append(slice(o, o + (s - 1) * st + 1, st) if s > 0 else slice(0, 0))
    return tuple(out)


@kernel("tensor.extract_slice")
def extract_slice(op, t, *dyn):
    """Strided slice; unit dimensions absent from the (rank-reduced) result
    type are dropped."""
    arr = np.asarray(t)
    offsets, sizes, strides = _slice_params(op, dyn)
    piece = arr[_slices(op, arr.shape, offsets, sizes, strides)]
    want = op.result_shape(0)
    n_drop = piece.ndim - len(want)
    if n_drop > 0:
        # which unit dimensions go does not change the layout: drop the first ones
        new, dropped = [], 0
        for n in piece.shape:
            if n == 1 and dropped < n_drop:
                dropped += 1
            else:
                new.append(n)
        piece = piece.reshape(tuple(new))
    return (np.ascontiguousarray(piece),)


@kernel("tensor.insert_slice")
def insert_slice(op, src, dest, *dyn):
    out = np.array(dest, copy=True)
    offsets, sizes, strides = _slice_params(op, dyn)
    sl = _slices(op, out.shape, offsets, sizes, strides)
    out[sl] = np.asarray(src).reshape(tuple(sizes))
    return (out,)


def _index_grid(shape):
    """One int64 index array per dimension, broadcastable to ``shape``."""
    return tuple(np.arange(n, dtype=np.int64).reshape((-1,) + (1,) * (len(shape) - d - 1))
                 for d, n in enumerate(shape))


@kernel("tensor.generate")
def generate(op, *dynamic_sizes):
    """Evaluates the body for every index at once (element-wise body)."""
    shape = result_shape(op, dynamic_sizes)
    dt = op.result_dtype(0)
    if 0 in shape:
        return (np.zeros(shape, dtype=dt),)
    body = op.region(0, lanes=True)
    (val,) = body(*_index_grid(shape))
    return (np.broadcast_to(np.asarray(val, dtype=dt), shape).copy(),)


@kernel("tensor.pad")
def pad(op, src, *dyn):
    """Pads with the body's value at each padding index (the body is
    evaluated for all indices at once)."""
    seg = _segments(op, 1 + len(dyn))
    n_low = seg[1] if len(seg) > 1 else 0
    low, _ = mixed(op.attr("static_low"), dyn[:n_low])
    high, _ = mixed(op.attr("static_high"), dyn[n_low:])
    arr = np.asarray(src)
    shape = tuple(n + lo + hi for n, lo, hi in zip(arr.shape, low, high))
    if any(lo < 0 or hi < 0 for lo, hi in zip(low, high)):
        raise ConformError(f"{op.name} at {op.loc}: negative padding")
    dt = op.result_dtype(0)
    if 0 in shape:
        return (np.zeros(shape, dtype=dt),)
    body = op.region(0, lanes=True)
    (val,) = body(*_index_grid(shape))
    out = np.broadcast_to(np.asarray(val, dtype=dt), shape).copy()
    out[tuple(slice(lo, lo + n) for lo, n in zip(low, arr.shape))] = arr
    return (out,)
