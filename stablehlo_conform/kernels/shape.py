"""Shape and data-movement ops.

See spec.md#broadcast_in_dim, #concatenate, #get_dimension_size, #iota, #pad,
#reshape, #reverse, #slice, #transpose. The helpers here are shared with the
dynamic-shape kernels (:mod:`.dynamic`), which compute the same results from
shapes known only at run time.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from ..opinfo import EXACT, FastPath, STORAGE
from . import _fast, _parallel
from .registry import kernel


def _c(a) -> np.ndarray:
    """A C-ordered array that owns its data (keeps rank 0)."""
    return np.array(a, order="C", copy=True)


def _ints(v) -> tuple[int, ...]:
    if v is None:
        return ()
    if isinstance(v, np.ndarray):
        return tuple(int(x) for x in v.reshape(-1))
    if isinstance(v, (int, np.integer)):
        return (int(v),)
    return tuple(int(x) for x in v)


def broadcast_layout(ishape: Sequence[int], dims: Sequence[int], shape: Sequence[int]) -> tuple[list, tuple]:
    """How an operand of shape ``ishape`` broadcasts into ``shape`` with its dimension ``i``
    becoming result dimension ``dims[i]`` (spec.md#broadcast_in_dim): the order its
    dimensions are transposed into (ascending ``dims``) and the shape it is then reshaped to
    (its sizes at ``dims``, 1 elsewhere). Raises ValueError where sizes neither match nor are 1."""
    dims = list(dims)
    if len(dims) != len(ishape):
        raise ValueError(f"broadcast_dimensions {dims} do not match operand rank {len(ishape)}")
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    expanded = [1] * len(shape)
    for i in order:
        n = ishape[i]
        if n != 1 and n != shape[dims[i]]:
            raise ValueError(f"operand dimension {i} of size {n} cannot broadcast to {shape[dims[i]]}")
        expanded[dims[i]] = n
    return order, tuple(expanded)


def broadcast_to_shape(operand: np.ndarray, dims: Sequence[int], shape: Sequence[int]) -> np.ndarray:
    """``operand`` dimension ``i`` becomes result dimension ``dims[i]``
    (spec.md#broadcast_in_dim); sizes must match or be 1."""
    operand = np.asarray(operand)
    shape = tuple(int(s) for s in shape)
    order, expanded = broadcast_layout(operand.shape, dims, shape)
    moved = operand.transpose(order) if order != list(range(len(order))) else operand
    return _c(np.broadcast_to(moved.reshape(expanded), shape))


def iota_array(shape: Sequence[int], dim: int, dtype: np.dtype) -> np.ndarray:
    """See spec.md#iota: ``result[i] = i[dim]`` converted to the element type."""
    shape = tuple(int(s) for s in shape)
    n = shape[dim]
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        line = np.arange(n) != 0
    elif dtype.kind in "fcV" and not _is_int_like(dtype):
        line = np.arange(n, dtype=np.float64).astype(dtype)
    else:
        line = np.arange(n, dtype=np.int64).astype(dtype)
    view = [1] * len(shape)
    view[dim] = n
    return _c(np.broadcast_to(line.reshape(view), shape))


def _is_int_like(dtype: np.dtype) -> bool:
    try:
        np.iinfo(dtype)
        return True
    except ValueError:
        return False


def quantized_iota(shape: Sequence[int], dim: int, qt) -> np.ndarray:
    """spec.md#iota for a per-tensor quantized result: ``quantize(i)``,
    computed in the expressed type as spec.md's ``quantize`` does."""
    if qt.axis is not None or len(qt.scales) != 1:
        raise ValueError("iota result must be per-tensor quantized")
    et = qt.expressed.dtype
    info = np.iinfo(qt.storage.dtype)
    lo = info.min if qt.storage_min is None else qt.storage_min
    hi = info.max if qt.storage_max is None else qt.storage_max
    x = np.arange(int(shape[dim]), dtype=np.float64).astype(et)
    scaled = (x / np.asarray(qt.scales[0], dtype=et)).astype(et)
    scaled = (scaled + np.asarray(qt.zero_points[0], dtype=et)).astype(et)
    clamped = np.clip(scaled.astype(np.float64), lo, hi)
    line = np.round(clamped).astype(np.int64).astype(qt.storage.dtype)
    view = [1] * len(shape)
    view[dim] = int(shape[dim])
    return _c(np.broadcast_to(line.reshape(view), tuple(int(s) for s in shape)))


def pad_array(operand: np.ndarray, value, low: Sequence[int], high: Sequence[int],
              interior: Sequence[int]) -> np.ndarray:
    """See spec.md#pad: edge padding (possibly negative) and interior padding."""
    operand = np.asarray(operand)
    value = np.asarray(value, dtype=operand.dtype)
    full_shape = []
    place = []
    crop = []
    for n, lo, hi, it in zip(operand.shape, low, high, interior):
        if it < 0:
            raise ValueError("interior padding must be non-negative")
        inner = n + max(n - 1, 0) * it
        full = max(lo, 0) + inner + max(hi, 0)
        full_shape.append(full)
        start = max(lo, 0)
        place.append(slice(start, start + inner, it + 1) if n else slice(start, start))
        c0 = -lo if lo < 0 else 0
        c1 = full - (-hi if hi < 0 else 0)
        if c1 < c0:
            raise ValueError("negative result dimension after padding")
        crop.append(slice(c0, c1))
    out = np.full(full_shape, value, dtype=operand.dtype)
    out[tuple(place)] = operand
    return _c(out[tuple(crop)])


def slice_array(operand: np.ndarray, start: Sequence[int], limit: Sequence[int],
                strides: Sequence[int]) -> np.ndarray:
    """See spec.md#slice."""
    operand = np.asarray(operand)
    idx = tuple(slice(int(s), int(l), int(st)) for s, l, st in zip(start, limit, strides))
    return _c(operand[idx])


def reshape_to(op, operand: np.ndarray, shape: Sequence) -> np.ndarray:
    shape = list(shape)
    unknown = [i for i, s in enumerate(shape) if s is None]
    if len(unknown) > 1:
        raise op.unsupported(f"reshape to {shape} with more than one dynamic dimension")
    if unknown:
        shape[unknown[0]] = -1
    return _c(np.reshape(np.asarray(operand), tuple(int(s) for s in shape)))


def _fast_broadcast_in_dim(op):
    """``broadcast_in_dim`` of static shapes as a read-only view of the operand (the
    kernel's result without its copy); the operand may be a view itself."""
    types = _fast.plain_types(op)
    if types is None or op.operand_types[0].dtype != types[1]:
        return None
    dims = _ints(op.attr("broadcast_dimensions"))
    shape = types[2]
    ishape = tuple(op.operand_types[0].shape)
    try:
        order, expanded = broadcast_layout(ishape, dims, shape)
    except ValueError:
        return None  # the kernel reports it
    if order == list(range(len(dims))):
        dt = types[1]
        # a C-ordered operand's element strides along the result's dimensions (0 where broadcast)
        inner = [int(np.prod(ishape[i + 1:], dtype=np.int64)) * dt.itemsize for i in range(len(ishape))]
        strides = [0] * len(shape)
        for i, d in enumerate(dims):
            if ishape[i] != 1:
                strides[d] = inner[i]
        strides = tuple(strides)

        def call(x):
            if x.__class__ is np.ndarray and x.flags.c_contiguous:
                v = np.ndarray(shape, dt, x, 0, strides)
                v.flags.writeable = False
                return v
            return np.broadcast_to(np.reshape(x, expanded), shape)
    else:
        def call(x):
            return np.broadcast_to(np.transpose(x, order).reshape(expanded), shape)
    return FastPath(call, view=True, views=True)


def rows_broadcast(op) -> tuple[int, object] | None:
    """For a ``broadcast_in_dim`` that has a fast path (:func:`_fast_broadcast_in_dim` gave one:
    the caller knows) whose first ``k`` operand dimensions are the result's first ``k``, of the
    same sizes: ``(k, call)``, ``call(x, sizes)`` the result's block for the block ``x`` of the
    operand cut along its leading axes, ``sizes`` the block's sizes on the first of them (the
    others whole): a read-only view, of the values of the fast path's view at the same index.
    None otherwise."""
    dims = _ints(op.attr("broadcast_dimensions"))
    shape, ishape = tuple(op.result_types[0].shape), tuple(op.operand_types[0].shape)
    if list(dims) != sorted(dims):
        return None
    k = 0
    while k < len(dims) and dims[k] == k and ishape[k] == shape[k]:
        k += 1
    if k == 0:
        return None
    _, expanded = broadcast_layout(ishape, dims, shape)
    tail, inner = expanded[k:], shape[k:]

    def call(x, sizes):
        lead = tuple(sizes) + shape[len(sizes):k]
        return np.broadcast_to(x.reshape(lead + tail), lead + inner)

    return k, call


@kernel("stablehlo.broadcast_in_dim", folds=True, quantized=STORAGE, accuracy=EXACT, fast=_fast_broadcast_in_dim)
def broadcast_in_dim(op, operand):
    """See spec.md#broadcast_in_dim."""
    dims = _ints(op.attr("broadcast_dimensions"))
    shape = list(op.result_shape(0))
    for i, d in enumerate(dims):
        if shape[d] is None:
            shape[d] = operand.shape[i]
    if any(s is None for s in shape):
        raise op.unsupported("dynamic result dimension not tied to an operand dimension")
    return (broadcast_to_shape(operand, dims, shape),)


def _fast_concatenate(op):
    """``concatenate`` of operands of the result's type: ``np.concatenate`` itself (the kernel's
    ``astype`` changes nothing there; a new C-ordered array of any strided operands)."""
    types = _fast.plain_types(op)
    if types is None or any(d != types[1] for d in types[0]):
        return None
    dim = int(op.attr("dimension"))

    def call(*xs):
        return np.concatenate(xs, axis=dim)

    return FastPath(call, views=True, fresh=True)


@kernel("stablehlo.concatenate", folds=True, quantized=STORAGE, accuracy=EXACT, fast=_fast_concatenate)
def concatenate(op, *inputs):
    """See spec.md#concatenate."""
    dim = int(op.attr("dimension"))
    dtype = op.result_dtype(0)
    return (np.concatenate([np.asarray(x) for x in inputs], axis=dim).astype(dtype, copy=False),)


@kernel("stablehlo.get_dimension_size", quantized=STORAGE, accuracy=EXACT)
def get_dimension_size(op, operand):
    """See spec.md#get_dimension_size."""
    dim = int(op.attr("dimension"))
    return (np.asarray(np.shape(operand)[dim], dtype=op.result_dtype(0)),)


@kernel("stablehlo.iota", folds=True, quantized=STORAGE, accuracy=EXACT)
def iota(op):
    """See spec.md#iota."""
    shape = op.result_shape(0)
    if any(s is None for s in shape):
        raise op.unsupported("iota with a dynamic result shape")
    el = op.result_element(0)
    if getattr(el, "quantized", False):
        return (quantized_iota(shape, int(op.attr("iota_dimension")), el),)
    return (iota_array(shape, int(op.attr("iota_dimension")), op.result_dtype(0)),)


@kernel("stablehlo.pad", folds=True, quantized=STORAGE, accuracy=EXACT)
def pad(op, operand, padding_value):
    """See spec.md#pad."""
    low = _ints(op.attr("edge_padding_low"))
    high = _ints(op.attr("edge_padding_high"))
    interior = _ints(op.attr("interior_padding"))
    return (pad_array(operand, padding_value, low, high, interior),)


def _fast_reshape(op):
    """``reshape`` to a static shape: the operand's elements in row-major order (a view of
    a C-ordered operand)."""
    types = _fast.plain_types(op)
    if types is None:
        return None
    shape = types[2]
    return FastPath(lambda x: x.reshape(shape), scalars=True)


@kernel("stablehlo.reshape", folds=True, quantized=STORAGE, accuracy=EXACT, fast=_fast_reshape)
def reshape(op, operand):
    """See spec.md#reshape (row-major element order is kept)."""
    return (reshape_to(op, operand, op.result_shape(0)),)


@kernel("stablehlo.reverse", folds=True, quantized=STORAGE, accuracy=EXACT)
def reverse(op, operand):
    """See spec.md#reverse."""
    dims = _ints(op.attr("dimensions"))
    operand = np.asarray(operand)
    if not dims:
        return (operand.copy(),)
    return (_c(np.flip(operand, axis=dims)),)


def _fast_slice(op):
    """``slice`` of a static operand of rank one or more: the kernel's slice (a view where it
    is C-ordered, as a C-ordered operand's ``reshape`` is, else a C-ordered copy)."""
    types = _fast.plain_types(op)
    if types is None or not types[2]:
        return None
    idx = tuple(slice(s, l, st) for s, l, st in zip(
        _ints(op.attr("start_indices")), _ints(op.attr("limit_indices")), _ints(op.attr("strides"))))

    def call(x):
        r = x[idx]
        return r if r.flags.c_contiguous else np.array(r, order="C")  # values are never written to

    return FastPath(call)


@kernel("stablehlo.slice", folds=True, quantized=STORAGE, accuracy=EXACT, fast=_fast_slice)
def slice_(op, operand):
    """See spec.md#slice."""
    return (slice_array(operand, _ints(op.attr("start_indices")), _ints(op.attr("limit_indices")),
                        _ints(op.attr("strides"))),)


TILED_TRANSPOSE_MIN = 1 << 16
"""Elements from which :func:`transpose_copy` copies a swap of two axis groups tile by tile."""
TILED_MATRIX_MIN = (32, 128, 1 << 14)
"""The least rows, columns and elements of each matrix :func:`transpose_copy` tiles (measured:
below, NumPy's own copy, whose reads of short rows or writes of short lines stay in cache,
costs less than the tiles' calls)."""
TILE_LINE_BYTES = 64  # a tile's width in the result: one cache line
TILE_SPAN_BYTES = 3072  # a tile's height in the result, times the item size: its run in the operand
TILED_PIECES_MIN = 1 << 20
"""Elements of a matrix from which :func:`transpose_copy` copies its tiles in pieces on the
process's threads (each piece its own columns of the result: the same tiles, the same copy).
Measured on 2 cores: a tied embedding's ``(50257, 768)`` f32 transpose (GPT-2's logits read
it) 39.5 ms on one thread, 23.5-25.5 ms in pieces on two, faults of its fresh pages included."""


def merged_permutation(shape: Sequence[int], perm: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(shape, perm)`` of the same transpose of a C-ordered operand with the axes of size 1
    dropped and each run of axes that stay adjacent and in order merged into one: the
    operand's merged shape (in its own order) and the permutation of the merged axes."""
    groups: list[list[int]] = []
    for p in perm:
        if shape[p] == 1:
            continue
        if groups and groups[-1][-1] + 1 == p:
            groups[-1].append(p)
        else:
            groups.append([p])
    order = sorted(range(len(groups)), key=lambda g: groups[g][0])
    merged = tuple(int(np.prod([shape[a] for a in groups[g]], dtype=np.int64)) for g in order)
    return merged, tuple(order.index(g) for g in range(len(groups)))


def _copy_tiles(dst: np.ndarray, src: np.ndarray) -> None:
    """``dst[...] = src`` for 2-D ``dst`` (C-ordered) and ``src`` a transposed view, in tiles of
    :data:`TILE_SPAN_BYTES` rows by :data:`TILE_LINE_BYTES` bytes of ``dst``: each tile reads
    short runs of the operand's rows and writes whole cache lines, both staying in cache
    (NumPy copies in the destination's order, one operand row per element)."""
    rows, cols = dst.shape
    height = max(1, TILE_SPAN_BYTES // dst.itemsize)
    width = max(1, TILE_LINE_BYTES // dst.itemsize)
    for i in range(0, rows, height):
        d, s = dst[i:i + height], src[i:i + height]
        for j in range(0, cols, width):
            d[:, j:j + width] = s[:, j:j + width]


RUN_COPY_MIN = 1 << 14
"""Elements from which :func:`transpose_copy` moves a short trailing run as one element."""
RUN_MAX_BYTES = 64
"""The longest trailing run :func:`transpose_copy` moves as one element (measured: longer runs
are one inner loop of NumPy's own copy already)."""


def transpose_copy(operand: np.ndarray, perm: Sequence[int]) -> np.ndarray:
    """``np.transpose(operand, perm)`` as a new C-ordered array (spec.md#transpose), the same
    elements in the same places, faster for a large C-ordered operand (see
    :func:`merged_permutation`) in two cases: where the transpose keeps a short run of trailing
    elements last (a group norm's ``(N, H, W, G, C/G) -> (N, G, H, W, C/G)``), each run moves
    as one element (a ``void`` of its bytes: NumPy's copy otherwise loops over each run);
    where it swaps two axis groups (a batch of matrix transposes), each matrix is copied tile
    by tile (:func:`_copy_tiles`)."""
    operand = np.asarray(operand)
    t = np.transpose(operand, perm)
    if t.size < RUN_COPY_MIN or not operand.flags.c_contiguous:
        return _c(t)
    shape, mperm = merged_permutation(operand.shape, perm)
    k = len(mperm)
    run = shape[-1] * operand.itemsize if k else 0
    if k >= 2 and mperm[-1] == k - 1 and run <= RUN_MAX_BYTES:
        runs = operand.reshape(shape).view(np.dtype((np.void, run))).reshape(shape[:-1])
        return transpose_copy(runs, mperm[:-1]).view(operand.dtype).reshape(t.shape)
    if t.size < TILED_TRANSPOSE_MIN or k < 2 or mperm != tuple(range(k - 2)) + (k - 1, k - 2):
        return _c(t)
    rows, cols, least = TILED_MATRIX_MIN
    if shape[-2] < rows or shape[-1] < cols or shape[-2] * shape[-1] < least:
        return _c(t)
    x = operand.reshape((-1,) + shape[-2:])
    res = np.empty((x.shape[0], shape[-1], shape[-2]), operand.dtype)
    for b in range(x.shape[0]):
        _tiles_in_pieces(res[b], x[b].T)
    return res.reshape(t.shape)


def _tiles_in_pieces(dst: np.ndarray, src: np.ndarray) -> None:
    """:func:`_copy_tiles`, for a matrix of at least :data:`TILED_PIECES_MIN` elements in pieces
    of whole tile columns of ``dst`` on the process's threads where they pay
    (:func:`._parallel.paying`): each element is copied once, whichever thread copies it."""
    n = _parallel.threads()
    if dst.size < TILED_PIECES_MIN or n < 2 or _parallel.inside() or not _parallel.paying():
        _copy_tiles(dst, src)
        return
    width = max(1, TILE_LINE_BYTES // dst.itemsize)
    spans = _parallel.spans(-(-dst.shape[1] // width), 4 * n)
    _parallel.run([functools.partial(_copy_tiles, dst[:, a * width:b * width], src[:, a * width:b * width])
                   for a, b in spans])


def _fast_transpose(op):
    """``transpose`` of a static operand: :func:`transpose_copy`, the kernel's own copy."""
    types = _fast.plain_types(op)
    if types is None or types[0][0] != types[1]:
        return None
    perm = _ints(op.attr("permutation"))

    def call(x):
        return transpose_copy(x, perm)

    return FastPath(call, views=True, fresh=True)


@kernel("stablehlo.transpose", folds=True, quantized=STORAGE, accuracy=EXACT, fast=_fast_transpose)
def transpose(op, operand):
    """See spec.md#transpose: ``result[i] = operand[j]`` with ``j[d] = i[permutation[d]]``."""
    perm = _ints(op.attr("permutation"))
    return (transpose_copy(operand, perm),)
