"""Indexed reads and writes: gather, scatter, dynamic_slice, dynamic_update_slice.

See spec.md#gather, #scatter, #dynamic_slice, #dynamic_update_slice. Every
kernel builds index arrays for all elements at once and moves data with one
NumPy fancy-indexing operation; scatter applies its ``update_computation``
either through ``np.<ufunc>.at`` (plain add/multiply/min/max/replace bodies)
or by evaluating the region on lanes in rounds whose targets never collide.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..opinfo import EXACT, FastPath, STORAGE
from . import _fast
from .reduction import _orders_zeros, combine_at
from .registry import kernel


def _c(a) -> np.ndarray:
    """A C-ordered array that owns its data (keeps rank 0)."""
    return np.array(a, order="C", copy=True)

_INT64_MAX = np.iinfo(np.int64).max


def index_int64(a) -> np.ndarray:
    """Integer indices as int64; unsigned values above the int64 range
    saturate (they are out of bounds either way)."""
    a = np.asarray(a)
    if a.dtype.kind == "u" and a.dtype.itemsize >= 8:
        return np.minimum(a, np.uint64(_INT64_MAX)).astype(np.int64)
    if a.dtype.kind == "b":
        return a.astype(np.int64)
    return a.astype(np.int64)


def _index_vectors(indices: np.ndarray, index_vector_dim: int) -> np.ndarray:
    """``indices`` with the index vector as its last axis."""
    idx = index_int64(indices)
    if index_vector_dim >= idx.ndim:
        return idx[..., None]
    return np.moveaxis(idx, index_vector_dim, -1)


def _batch_axis(d_start: int, index_vector_dim: int) -> int:
    return d_start - (1 if d_start > index_vector_dim else 0)


def _along(n: int, axis: int, ndim: int) -> np.ndarray:
    shape = [1] * ndim
    shape[axis] = n
    return np.arange(n, dtype=np.int64).reshape(shape)


# ---------------------------------------------------------------------------
# gather


def gather_array(operand: np.ndarray, start_indices: np.ndarray, *, offset_dims: Sequence[int],
                 collapsed_slice_dims: Sequence[int], operand_batching_dims: Sequence[int],
                 start_indices_batching_dims: Sequence[int], start_index_map: Sequence[int],
                 index_vector_dim: int, slice_sizes: Sequence[int]) -> np.ndarray:
    """See spec.md#gather. Start indices are clamped so that every slice is
    in bounds."""
    operand = np.asarray(operand)
    rank = operand.ndim
    slice_sizes = [int(s) for s in slice_sizes]
    idx = _index_vectors(start_indices, index_vector_dim)
    batch_shape = idx.shape[:-1]
    nb = len(batch_shape)
    window_dims = [d for d in range(rank)
                   if d not in collapsed_slice_dims and d not in operand_batching_dims]
    no = len(window_dims)
    full_shape = tuple(batch_shape) + tuple(slice_sizes[d] for d in window_dims)
    pad = (1,) * no
    arrays = []
    for d in range(rank):
        arr = np.zeros((1,) * (nb + no), dtype=np.int64)
        if d in start_index_map:
            k = list(start_index_map).index(d)
            hi = max(operand.shape[d] - slice_sizes[d], 0)
            arr = arr + np.clip(idx[..., k], 0, hi).reshape(tuple(batch_shape) + pad)
        if d in operand_batching_dims:
            k = list(operand_batching_dims).index(d)
            ax = _batch_axis(int(start_indices_batching_dims[k]), index_vector_dim)
            arr = arr + _along(batch_shape[ax], ax, nb + no)
        if d in window_dims:
            j = window_dims.index(d)
            arr = arr + _along(slice_sizes[d], nb + j, nb + no)
        arrays.append(arr.astype(np.intp, copy=False))
    if operand.size == 0 or 0 in full_shape:
        g = np.zeros(full_shape, dtype=operand.dtype)
    else:
        g = np.broadcast_to(operand[tuple(arrays)], full_shape)
    offset_dims = list(offset_dims)
    perm = []
    b = 0
    for r in range(nb + no):
        if r in offset_dims:
            perm.append(nb + offset_dims.index(r))
        else:
            perm.append(b)
            b += 1
    return _c(np.transpose(g, perm))


def _gather_numbers(dn) -> dict:
    return dict(
        offset_dims=tuple(dn.get("offset_dims", ()) or ()),
        collapsed_slice_dims=tuple(dn.get("collapsed_slice_dims", ()) or ()),
        operand_batching_dims=tuple(dn.get("operand_batching_dims", ()) or ()),
        start_indices_batching_dims=tuple(dn.get("start_indices_batching_dims", ()) or ()),
        start_index_map=tuple(dn.get("start_index_map", ()) or ()),
        index_vector_dim=int(dn.get("index_vector_dim", 0)),
    )


def _whole_rows(oshape: tuple, ishape: tuple, ivd: int, window_dims: tuple, other: tuple) -> tuple | None:
    """The batch shape of the indices of a gather or scatter of whole rows of an operand of shape
    ``oshape`` (one index each: an index vector of size 1 at ``ivd``, or an implicit one past the
    indices' last axis), where the window dimensions of ``other`` (the gather's result, the
    scatter's updates: ``window_dims``) follow its batch dimensions and hold one whole row of the
    operand, ``other`` being of shape ``batch + oshape[1:]``; None otherwise (the dimension
    numbers' other fields are the caller's to check)."""
    if not oshape or (ivd < len(ishape) and ishape[ivd] != 1):
        return None
    batch = ishape[:ivd] + ishape[ivd + 1:] if ivd < len(ishape) else ishape
    nb = len(batch)
    if window_dims != tuple(range(nb, nb + len(oshape) - 1)) or other != batch + oshape[1:]:
        return None
    return batch


def _fast_gather(op):
    """``gather`` of whole rows (an embedding look-up): one start index into dimension 0,
    collapsed, every other dimension sliced whole and placed last in operand order, no batching
    dimensions. The rows ``np.take`` picks at the clamped indices, which are the elements the
    kernel's index arrays pick (its clamp bounds a start by ``size - 1``), already in the
    result's order; one copy of each row instead of one index per element."""
    types = _fast.plain_types(op)
    if types is None or types[0][0] != types[1] or types[0][1].kind not in "iu":
        return None
    oshape, ishape = (tuple(t.shape) for t in op.operand_types)
    dn = _gather_numbers(op.attr("dimension_numbers"))
    batch = _whole_rows(oshape, ishape, dn["index_vector_dim"], dn["offset_dims"], types[2])
    sizes = tuple(int(s) for s in np.asarray(op.attr("slice_sizes")).reshape(-1))
    if (batch is None or dn["operand_batching_dims"] or dn["start_index_map"] != (0,)
            or dn["collapsed_slice_dims"] != (0,) or 0 in oshape or sizes != (1,) + oshape[1:]):
        return None
    hi = oshape[0] - 1

    def call(operand, indices):
        idx = np.clip(index_int64(indices).reshape(batch), 0, hi)
        return np.take(operand, idx, axis=0)

    return FastPath(call, views=True, fresh=True)


@kernel("stablehlo.gather", quantized=STORAGE, accuracy=EXACT, fast=_fast_gather)
def gather(op, operand, start_indices):
    """See spec.md#gather."""
    sizes = op.attr("slice_sizes")
    sizes = [int(s) for s in np.asarray(sizes).reshape(-1)]
    out = gather_array(operand, start_indices, slice_sizes=sizes,
                       **_gather_numbers(op.attr("dimension_numbers")))
    return (out.astype(op.result_dtype(0), copy=False),)


# ---------------------------------------------------------------------------
# scatter

_UFUNCS = {
    "stablehlo.add": ("add", np.add),
    "stablehlo.multiply": ("mul", np.multiply),
    "stablehlo.maximum": ("max", np.maximum),
    "stablehlo.minimum": ("min", np.minimum),
}


def scatter_body_kind(op, n: int) -> str | None:
    """``add``/``multiply``/``maximum``/``minimum``/``replace``/``keep`` for a
    single-input body of that exact form on its two arguments, else None (``op``: the
    kernel's op context)."""
    return body_kind(op.op, n)


def body_kind(op, n: int) -> str | None:
    """:func:`scatter_body_kind` of the program's op (``program.Op``)."""
    if n != 1 or len(op.regions) != 1:
        return None
    region = op.regions[0]
    if len(region.blocks) != 1:
        return None
    block = region.blocks[0]
    if len(block.args) != 2:
        return None
    in_ty = op.operand_types[0]
    el = getattr(in_ty, "element", None)
    if el is None or getattr(el, "quantized", False):
        return None
    for t in block.arg_types:
        if getattr(t, "dtype", None) != in_ty.dtype:
            return None
    a, b = block.args
    ops = block.ops
    if len(ops) == 1 and ops[0].name == "stablehlo.return" and len(ops[0].operands) == 1:
        r = ops[0].operands[0]
        if r == b:
            return "replace"
        if r == a:
            return "keep"
        return None
    if (len(ops) == 2 and ops[1].name == "stablehlo.return" and ops[0].name in _UFUNCS
            and tuple(ops[1].operands) == tuple(ops[0].results)
            and len(ops[0].operands) == 2 and set(ops[0].operands) == {a, b}):
        return ops[0].name
    return None


def scatter_targets(input_shape: Sequence[int], indices: np.ndarray, updates_shape: Sequence[int], *,
                    update_window_dims: Sequence[int], inserted_window_dims: Sequence[int],
                    input_batching_dims: Sequence[int], scatter_indices_batching_dims: Sequence[int],
                    scatter_dims_to_operand_dims: Sequence[int], index_vector_dim: int):
    """Flat result positions of the update elements that are applied and
    the flat positions (in ``updates`` order) they come from.

    A whole update window is skipped when it does not fit in the result."""
    rank = len(input_shape)
    upd_rank = len(updates_shape)
    uwd = [int(d) for d in update_window_dims]
    scatter_dims = [d for d in range(upd_rank) if d not in uwd]
    idx = _index_vectors(indices, index_vector_dim)
    batch_shape = tuple(idx.shape[:-1])
    nb = len(batch_shape)
    window_in = [d for d in range(rank)
                 if d not in inserted_window_dims and d not in input_batching_dims]
    window_shape = tuple(int(updates_shape[d]) for d in uwd)
    no = len(window_shape)
    valid = np.ones(batch_shape, dtype=bool)
    starts = []
    for d in range(rank):
        s = np.zeros(batch_shape, dtype=np.int64)
        if d in scatter_dims_to_operand_dims:
            k = list(scatter_dims_to_operand_dims).index(d)
            s = s + idx[..., k]
        if d in input_batching_dims:
            k = list(input_batching_dims).index(d)
            ax = _batch_axis(int(scatter_indices_batching_dims[k]), index_vector_dim)
            s = s + _along(batch_shape[ax], ax, nb)
        wsize = window_shape[window_in.index(d)] if d in window_in else 1
        valid &= (s >= 0) & (s <= int(input_shape[d]) - wsize)
        starts.append(s)
    strides = [1] * rank
    for d in range(rank - 2, -1, -1):
        strides[d] = strides[d + 1] * int(input_shape[d + 1])
    full = batch_shape + window_shape
    lin = np.zeros((1,) * (nb + no), dtype=np.int64)
    pad = (1,) * no
    for d in range(rank):
        arr = np.where(valid, starts[d], 0).reshape(batch_shape + pad)
        if d in window_in:
            j = window_in.index(d)
            arr = arr + _along(window_shape[j], nb + j, nb + no)
        lin = lin + arr * strides[d]
    lin = np.broadcast_to(lin, full).reshape(-1)
    mask = np.broadcast_to(valid.reshape(batch_shape + pad), full).reshape(-1)
    # positions in the updates arrays, in (scatter dims, window dims) order
    src = np.arange(int(np.prod(updates_shape, dtype=np.int64)), dtype=np.int64)
    src = np.transpose(src.reshape(tuple(updates_shape)), scatter_dims + uwd).reshape(-1)
    return lin[mask], src[mask]


def _scatter_numbers(dn) -> dict:
    return dict(
        update_window_dims=tuple(dn.get("update_window_dims", ()) or ()),
        inserted_window_dims=tuple(dn.get("inserted_window_dims", ()) or ()),
        input_batching_dims=tuple(dn.get("input_batching_dims", ()) or ()),
        scatter_indices_batching_dims=tuple(dn.get("scatter_indices_batching_dims", ()) or ()),
        scatter_dims_to_operand_dims=tuple(
            dn.get("scattered_dims_to_operand_dims", None)
            or dn.get("scatter_dims_to_operand_dims", ()) or ()),
        index_vector_dim=int(dn.get("index_vector_dim", 0)),
    )


def conflict_free_rounds(targets: np.ndarray) -> list[np.ndarray]:
    """Splits positions ``0..len(targets)-1`` into rounds: round ``r`` holds
    the ``r``-th occurrence (in order) of every target, so no round writes
    one target twice and repeated targets are updated in order."""
    m = targets.shape[0]
    if m == 0:
        return []
    order = np.argsort(targets, kind="stable")
    ts = targets[order]
    first = np.ones(m, dtype=bool)
    first[1:] = ts[1:] != ts[:-1]
    pos = np.arange(m, dtype=np.int64)
    group_start = np.maximum.accumulate(np.where(first, pos, 0))
    occ = pos - group_start
    by_round = np.argsort(occ, kind="stable")
    counts = np.bincount(occ)
    return np.split(order[by_round], np.cumsum(counts)[:-1])


def scatter_apply(op, results: list[np.ndarray], lin: np.ndarray, upd_flat: list[np.ndarray],
                  kind: str | None) -> None:
    """Applies the updates to ``results`` (flat, contiguous, owned) in place."""
    if lin.size == 0:
        return
    if kind == "keep":
        return
    if kind == "replace":
        for rnd in conflict_free_rounds(lin):
            results[0][lin[rnd]] = upd_flat[0][rnd]
        return
    if kind is not None:
        # float maximum/minimum order -0 below +0 (combine_at), as the ops do
        combine_at(*_UFUNCS[kind], results[0], lin, upd_flat[0])
        return
    body = op.region(0, lanes=True)
    n = len(results)
    for rnd in conflict_free_rounds(lin):
        tgt = lin[rnd]
        cur = [r[tgt] for r in results]
        upd = [u[rnd] for u in upd_flat]
        out = body(*cur, *upd)
        for i in range(n):
            results[i][tgt] = np.broadcast_to(np.asarray(out[i]), tgt.shape).astype(
                results[i].dtype, copy=False)


def scatter_arrays(op, inputs, indices, updates, numbers: dict, kind: str | None,
                   result_dtypes) -> tuple:
    shape = tuple(np.shape(inputs[0]))
    lin, src = scatter_targets(shape, indices, np.shape(updates[0]), **numbers)
    results = [np.array(x, dtype=dt, copy=True).reshape(-1) for x, dt in zip(inputs, result_dtypes)]
    upd_flat = [np.asarray(u).reshape(-1)[src].astype(dt, copy=False)
                for u, dt in zip(updates, result_dtypes)]
    with np.errstate(all="ignore"):  # IEEE results: overflow is inf, inf * 0 is NaN
        scatter_apply(op, results, lin, upd_flat, kind)
    return tuple(r.reshape(shape) for r in results)


def _fast_scatter(op):
    """``scatter`` of whole rows (an embedding's gradient, ``table.at[ids].add(rows)``): one
    input, one index into dimension 0, inserted, each update window one whole row of the
    operand (every other dimension, in operand order, after the update's scatter dimensions),
    no batching dimensions, operand, updates and result of one type, and a body the kernel
    names (``add``, ``multiply``, integer ``maximum``/``minimum``, ``replace``, ``keep``;
    float ``maximum``/``minimum``, which order signed zeros, take the kernel, and so does f16
    arithmetic: where both operands are NaN, NumPy's f16 ``add``/``multiply`` keep the second
    one's payload and their ``ufunc.at`` the first one's; f32, f64 and bf16 keep the first in both).

    The kernel applies the update elements one by one in the updates' order, skipping a window
    that does not fit (spec.md#scatter: an index outside ``[0, size - 1]``), with
    ``ufunc.at(result, targets, updates)`` (``result[t] = f(result[t], u)``) or, for ``replace``,
    by rounds of distinct targets. Here each round (:func:`conflict_free_rounds` of the row
    indices that fit: round ``r`` holds the ``r``-th occurrence of every row) is one
    ``f(result[rows], updates)`` of whole rows, so each element is combined with the same
    update values, by the same ufunc, in the same order, with the result as the first operand:
    the kernel's bits (``tests/test_fast_scatter.py``). An embedding gradient of 2048 rows of
    128 f32 into a ``(30000, 128)`` table (``bench_models.py --shapes large``): 1.2-1.4 ms, half
    of it the copy of the table; the program 4.6 ms step by step (the kernels), 1.7 ms generated."""
    types = _fast.plain_types(op)
    if types is None or len(op.operand_types) != 3:
        return None
    (dt, it, ut), rt, _shape = types
    if not dt == ut == rt or it.kind not in "iu":
        return None
    kind = body_kind(op, 1)
    if kind in _UFUNCS and not _orders_zeros(_UFUNCS[kind][0], dt) and dt != np.float16:
        uf = _UFUNCS[kind][1]
    elif kind in ("replace", "keep"):
        uf = None
    else:
        return None
    oshape, ishape, ushape = (tuple(t.shape) for t in op.operand_types)
    dn = _scatter_numbers(op.attr("scatter_dimension_numbers"))
    batch = _whole_rows(oshape, ishape, dn["index_vector_dim"], dn["update_window_dims"], ushape)
    if (batch is None or dn["input_batching_dims"] or dn["scatter_dims_to_operand_dims"] != (0,)
            or dn["inserted_window_dims"] != (0,)):
        return None
    n, row = oshape[0], oshape[1:]

    def call(operand, indices, updates):
        res = np.array(operand, order="C", copy=True)  # the kernel's result is a new C-ordered array
        if kind == "keep":
            return res
        rows = index_int64(indices).reshape(-1)
        upd = updates.reshape((-1,) + row)
        fit = (rows >= 0) & (rows < n)
        if not fit.all():
            rows, upd = rows[fit], upd[fit]
        rounds = conflict_free_rounds(rows)
        for sel in rounds if len(rounds) > 1 else [slice(None)] * len(rounds):
            at, u = rows[sel], upd[sel]
            res[at] = u if uf is None else uf(res[at], u)
        return res

    return FastPath(call, fresh=True)


@kernel("stablehlo.scatter", quantized=STORAGE, reduces=True, fast=_fast_scatter)
def scatter(op, *args):
    """See spec.md#scatter. Inputs are never modified."""
    n = (len(args) - 1) // 2
    inputs, indices, updates = args[:n], args[n], args[n + 1:]
    numbers = _scatter_numbers(op.attr("scatter_dimension_numbers"))
    kind = scatter_body_kind(op, n)
    dtypes = [op.result_dtype(i) for i in range(n)]
    return scatter_arrays(op, inputs, indices, updates, numbers, kind, dtypes)


# ---------------------------------------------------------------------------
# dynamic_slice / dynamic_update_slice


def _clamped_starts(starts, dims: Sequence[int], sizes: Sequence[int]) -> list[int]:
    out = []
    for s, n, k in zip(starts, dims, sizes):
        v = int(index_int64(np.asarray(s).reshape(-1)[0]))
        out.append(min(max(v, 0), max(int(n) - int(k), 0)))
    return out


def _start_plan(op, sizes: tuple[int, ...]) -> tuple | None:
    """``(size, largest start)`` per dimension of a static operand whose windows of ``sizes``
    start at the op's rank-0 start operands (after the operand and, for
    ``dynamic_update_slice``, the update), clamped as :func:`_clamped_starts` clamps them; None
    where the kernel runs: a rank-0 operand, a size count not the rank, u64 starts (they
    saturate there)."""
    dims = tuple(op.operand_types[0].shape)
    if len(sizes) != len(dims) or not dims:
        return None
    starts = op.operand_types[len(op.operand_types) - len(dims):]
    if any(ty.dtype.kind == "u" and ty.dtype.itemsize >= 8 for ty in starts):
        return None
    return tuple((k, max(n - k, 0)) for n, k in zip(dims, sizes))


def _window(starts, plan: tuple) -> tuple[slice, ...]:
    """The clamped window of :func:`_start_plan` at ``starts`` (rank-0 integers of at most 64
    bits, NumPy scalars or 0-d arrays: ``int`` is their value)."""
    idx = []
    for s, (k, hi) in zip(starts, plan):
        v = int(s)
        v = 0 if v < 0 else hi if v > hi else v
        idx.append(slice(v, v + k))
    return tuple(idx)


def _fast_dynamic_slice(op):
    """``dynamic_slice`` of a static operand: the kernel's clamped slice (a view where it is
    C-ordered, else a C-ordered copy)."""
    types = _fast.plain_types(op)
    if types is None:
        return None
    plan = _start_plan(op, tuple(int(s) for s in np.asarray(op.attr("slice_sizes")).reshape(-1)))
    if plan is None:
        return None

    def call(x, *starts):
        r = x[_window(starts, plan)]
        return r if r.flags.c_contiguous else np.array(r, order="C")  # values are never written to

    return FastPath(call, scalars=True)


@kernel("stablehlo.dynamic_slice", quantized=STORAGE, accuracy=EXACT, fast=_fast_dynamic_slice)
def dynamic_slice(op, operand, *start_indices):
    """See spec.md#dynamic_slice: start indices are clamped into bounds."""
    operand = np.asarray(operand)
    sizes = [int(s) for s in np.asarray(op.attr("slice_sizes")).reshape(-1)]
    starts = _clamped_starts(start_indices, operand.shape, sizes)
    idx = tuple(slice(s, s + k) for s, k in zip(starts, sizes))
    return (_c(operand[idx]),)


def _fast_dynamic_update_slice(op):
    """``dynamic_update_slice`` of static operand and update of the result's type: a C-ordered
    copy of the operand with the update written at the kernel's clamped starts (both may be
    any strided arrays: ``copy`` and the assignment read values, not layouts)."""
    types = _fast.plain_types(op)
    if types is None or types[0][0] != types[1] or types[0][1] != types[1]:
        return None
    plan = _start_plan(op, tuple(op.operand_types[1].shape))
    if plan is None:
        return None

    def call(x, update, *starts):
        out = x.copy()
        out[_window(starts, plan)] = update
        return out

    return FastPath(call, views=True, scalars=True, fresh=True)


def update_in_place(op):
    """``dynamic_update_slice`` writing the update into the operand's own buffer, which it
    returns: for the engine's loops, where the operand is a buffer nobody else reads (see
    ``engine.codegen._Plan._in_place``), on the ops :func:`_fast_dynamic_update_slice` takes.
    The same window, clamped as the kernel clamps it (spec.md#dynamic_update_slice), and the
    same assignment: the bits of the kernel's copy, without the copy."""
    plan = _start_plan(op, tuple(op.operand_types[1].shape))

    def call(x, update, *starts):
        x[_window(starts, plan)] = update
        return x

    return call


@kernel("stablehlo.dynamic_update_slice", quantized=STORAGE, accuracy=EXACT, fast=_fast_dynamic_update_slice)
def dynamic_update_slice(op, operand, update, *start_indices):
    """See spec.md#dynamic_update_slice: start indices are clamped into bounds."""
    operand = np.asarray(operand)
    update = np.asarray(update)
    starts = _clamped_starts(start_indices, operand.shape, update.shape)
    out = operand.copy()
    idx = tuple(slice(s, s + k) for s, k in zip(starts, update.shape))
    out[idx] = update
    return (out,)
