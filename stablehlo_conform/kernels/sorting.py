"""Sorting: ``stablehlo.sort`` and ``chlo.top_k``.

See spec.md#sort. The comparator region is evaluated on lanes: a bottom-up
merge sort merges all runs of one width at once, placing every element by a
vectorised binary search into the neighbouring run (one comparator call per
search step over all elements), which yields a stable sort for any strict
weak order. Comparators that are a single ``compare LT/GT`` of one operand
pair take a ``np.argsort(kind="stable")`` fast path instead.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .registry import kernel

_FLOAT_KINDS = ("float",)


def total_order_key(x: np.ndarray) -> np.ndarray:
    """int64 keys ordering floats as spec.md#compare's TOTALORDER:
    -NaN < -Inf < ... < -0 < +0 < ... < +Inf < +NaN."""
    v = np.asarray(x).astype(np.float64)
    i = v.view(np.int64)
    return np.where(i < 0, i ^ np.int64(0x7FFFFFFFFFFFFFFF), i)


def stable_argsort(keys: np.ndarray, descending: bool) -> np.ndarray:
    """Stable argsort along the last axis (ties keep their order)."""
    if not descending:
        return np.argsort(keys, axis=-1, kind="stable")
    n = keys.shape[-1]
    rev = np.argsort(keys[..., ::-1], axis=-1, kind="stable")[..., ::-1]
    return (n - 1) - rev


def _simple_comparator(op, inputs) -> tuple[int, bool, str] | None:
    """``(operand index, descending, key kind)`` for a comparator that is one
    ``compare LT|GT`` of an operand pair, else None."""
    region = op.op.regions[0]
    if len(region.blocks) != 1:
        return None
    block = region.blocks[0]
    ops = block.ops
    if len(ops) != 2 or ops[0].name != "stablehlo.compare" or ops[1].name != "stablehlo.return":
        return None
    if tuple(ops[1].operands) != tuple(ops[0].results):
        return None
    direction = str(ops[0].attrs.get("comparison_direction", ""))
    if direction not in ("LT", "GT"):
        return None
    args = block.args
    a, b = ops[0].operands
    if a not in args or b not in args:
        return None
    ia, ib = args.index(a), args.index(b)
    if ia // 2 != ib // 2 or ia == ib:
        return None
    k = ia // 2
    swapped = ia % 2 == 1
    descending = (direction == "GT") != swapped
    el = getattr(op.operand_type(k), "element", None)
    if el is None or getattr(el, "quantized", False):
        return None
    ctype = ops[0].attrs.get("compare_type")
    ctype = None if ctype is None else str(ctype)
    if el.kind == "int" and ctype in (None, "SIGNED"):
        return k, descending, "plain"
    if el.kind in ("uint", "bool") and ctype in (None, "UNSIGNED"):
        return k, descending, "plain"
    if el.kind == "float" and ctype == "TOTALORDER":
        return k, descending, "total"
    if el.kind == "float" and ctype in (None, "FLOAT"):
        if np.isnan(np.asarray(inputs[k]).astype(np.float64)).any():
            return None
        return k, descending, "float"
    return None


def merge_sort_perm(less: Callable[[np.ndarray, np.ndarray], np.ndarray], batch: int, n: int) -> np.ndarray:
    """Stable sorting permutation ``perm`` of shape ``(batch, n)``.

    ``less(ia, ib)`` compares, lane by lane, the elements at positions ``ia``
    and ``ib`` (int arrays of shape ``(batch, n)``) of each row."""
    perm = np.broadcast_to(np.arange(n, dtype=np.int64), (batch, n)).copy()
    pos = np.arange(n, dtype=np.int64)
    rows = np.arange(batch, dtype=np.int64)[:, None]
    w = 1
    while w < n:
        block = (pos // (2 * w)) * (2 * w)
        in_left = (pos - block) < w
        mid_split = np.minimum(block + w, n)
        end = np.minimum(block + 2 * w, n)
        own_start = np.where(in_left, block, mid_split)
        other_start = np.where(in_left, mid_split, block)
        other_end = np.where(in_left, end, mid_split)
        lo = np.broadcast_to(other_start, (batch, n)).copy()
        hi = np.broadcast_to(other_end, (batch, n)).copy()
        left = np.broadcast_to(in_left, (batch, n))
        while True:
            active = lo < hi
            if not active.any():
                break
            mid = (lo + hi) // 2
            y = perm[rows, np.minimum(mid, n - 1)]
            # left element x: counts right elements r with r < x;
            # right element x: counts left elements l with not (x < l).
            c = less(np.where(left, y, perm), np.where(left, perm, y))
            pred = np.where(left, c, ~c)
            lo = np.where(active & pred, mid + 1, lo)
            hi = np.where(active & ~pred, mid, hi)
        new_pos = block + (pos - own_start) + (lo - other_start)
        out = np.empty_like(perm)
        out[rows, new_pos] = perm
        perm = out
        w *= 2
    return perm


def sort_arrays(op, inputs, dimension: int) -> tuple:
    arrs = [np.asarray(x) for x in inputs]
    if arrs[0].ndim == 0:
        return tuple(a.copy() for a in arrs)
    dim = dimension % arrs[0].ndim
    moved = [np.moveaxis(a, dim, -1) for a in arrs]
    shape = moved[0].shape
    n = shape[-1]
    batch = int(np.prod(shape[:-1], dtype=np.int64))
    flat = [m.reshape(batch, n) for m in moved]
    if n <= 1 or batch == 0:
        perm = np.broadcast_to(np.arange(n, dtype=np.int64), (batch, n))
    else:
        simple = _simple_comparator(op, arrs)
        if simple is not None:
            k, descending, how = simple
            key = flat[k]
            if how == "total":
                key = total_order_key(key)
            elif how == "float" or key.dtype.kind not in "biuf":
                key = key.astype(np.float64)
            perm = stable_argsort(key, descending)
        else:
            body = op.region(0, lanes=True)
            rows = np.arange(batch, dtype=np.int64)[:, None]

            def less(ia, ib):
                args = []
                for f in flat:
                    args.append(f[rows, ia])
                    args.append(f[rows, ib])
                r = body(*args)[0]
                return np.broadcast_to(np.asarray(r).astype(bool), ia.shape)

            perm = merge_sort_perm(less, batch, n)
    outs = []
    for f, m in zip(flat, moved):
        s = np.take_along_axis(f, perm, axis=1).reshape(shape)
        outs.append(np.array(np.moveaxis(s, -1, dim), order="C", copy=True))
    return tuple(outs)


@kernel("stablehlo.sort")
def sort(op, *inputs):
    """See spec.md#sort. The result is always stable, which also satisfies
    ``is_stable = false``."""
    dimension = int(op.attr("dimension", -1))
    return sort_arrays(op, inputs, dimension)


@kernel("chlo.top_k")
def top_k(op, operand):
    """The ``k`` largest entries along the last dimension, in descending
    order (TOTALORDER for floats), ties by lower index, with their indices."""
    k = int(op.attr("k"))
    x = np.asarray(operand)
    el = op.operand_type(0).element
    if getattr(el, "quantized", False):
        raise op.unsupported("top_k of a quantized tensor")
    if el.kind == "float":
        key = total_order_key(x)
    elif el.kind == "complex":
        raise op.unsupported("top_k of complex numbers")
    else:
        key = x
    perm = stable_argsort(key, descending=True)[..., :k]
    values = np.take_along_axis(x, perm, axis=-1)
    return (np.array(values, copy=True), perm.astype(op.result_dtype(1)))
