"""Reductions: reduce, reduce_window, select_and_scatter.

See spec.md#reduce, spec.md#reduce_window, spec.md#select_and_scatter.

Bodies are evaluated on whole arrays of lanes (every op of such a body is
element-wise on rank-0 values). Plain ``add``/``multiply``/``maximum``/
``minimum``/``and``/``or``/``xor`` bodies (recognised from the body's ops and
operand wiring) take a NumPy fast path; every other body goes through the
general path. Both compute the same schedule:

- ``reduce``: up to ``SEQUENTIAL_LIMIT`` (32) reduced elements, a sequential
  fold from the init value rounding into the element type after every step
  (XLA's CPU schedule for short reductions). Longer reductions: fast path
  ``init (op) ufunc.reduce(x)`` with f16/bf16/f8 accumulated in f32 and
  rounded once (integers are computed in 64 bits and wrapped); general path
  a pairwise tree fold along the reduced axes that keeps the operands in
  index order (valid for any associative body), then ``body(init, tree)``.
  Float ``maximum``/``minimum`` fast paths order -0 below +0 as the ops do
  (spec.md#maximum: IEEE-754 maximum), which NumPy's ufuncs do not.
- ``reduce_window``: a sequential fold over the window positions in row-major
  order starting from the init value, ``acc = body(acc, x)``, rounding into
  the element type after every step (the schedule XLA uses on CPU). Padding
  and base-dilation positions are skipped (as XLA does; the spec's schedule
  admits any number of init values, so this differs only for non-identity
  init values).
- ``select_and_scatter``: a sequential select over the window positions
  (padding is never selected), then the scatter body folds the source values
  into each selected position in source order (``np.ufunc.at`` fast path).

Quantized (per-tensor) operands: the spec defines these ops through their
bodies (spec.md#reduce: ``results = exec(schedule)`` of ``body``, with the
operands converted by ``to_destination_type`` into the body's argument
types, which ``is_promotable`` lets differ in storage type only). The kernels
therefore convert (requantize) the operands when the body's quantized type
differs, skip the fast paths (storage arithmetic is not quantized
arithmetic) and run the body, whose ops apply their own quantized semantics
(``dequantize_op_quantize`` for ``add``/``maximum``/..., ``dequantize_compare``
for a ``select`` body's ``compare``) at every step of the same schedule as
for other element types.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .. import types as T
from ..numeric import ieee_maximum, ieee_minimum, kind_of
from ..opinfo import ACCUMULATE, FastPath, STORAGE
from . import _fast
from .registry import kernel
from .shape import transpose_copy
from .quantized import dequantize, quantize

# ---------------------------------------------------------------------------
# body analysis


_UFUNC_OPS = {
    "stablehlo.add": "add",
    "stablehlo.multiply": "mul",
    "stablehlo.maximum": "max",
    "stablehlo.minimum": "min",
    "stablehlo.and": "and",
    "stablehlo.or": "or",
    "stablehlo.xor": "xor",
}


def simple_body(op, region_index: int = 0) -> str | None:
    """Name of the binary op a region reduces with (``add``, ``mul``, ``max``,
    ``min``, ``and``, ``or``, ``xor``), or None if the body is anything else.

    The body must be exactly ``%r = op(%a0, %a1); return %r`` over its two
    block arguments (either operand order: all these ops are commutative).
    """
    return body_kind(op.op.regions[region_index])


def body_kind(region) -> str | None:
    """:func:`simple_body` of one region."""
    if len(region.blocks) != 1:
        return None
    block = region.blocks[0]
    if len(block.args) != 2 or len(block.ops) != 2:
        return None
    bop, ret = block.ops
    kind = _UFUNC_OPS.get(bop.name)
    if kind is None or ret.name not in ("stablehlo.return", "mhlo.return"):
        return None
    if sorted(bop.operands) != sorted(block.args) or bop.operands[0] == bop.operands[1]:
        return None
    if tuple(ret.operands) != (bop.results[0],):
        return None
    types = set(str(t) for t in block.arg_types) | {str(bop.result_types[0])}
    if len(types) != 1:
        return None
    return kind


def _compute_dtype(dtype: np.dtype, kind: str) -> np.dtype | None:
    """The dtype a fast-path reduction of ``kind`` runs in (None: no fast path)."""
    dtype = np.dtype(dtype)
    name = dtype.name
    if dtype == np.bool_:
        return dtype
    if dtype.kind in "iu":
        if kind in ("add", "mul"):
            return np.dtype(np.int64 if dtype.kind == "i" else np.uint64)
        return dtype
    if name in ("int2", "int4"):
        return np.dtype(np.int64)
    if name in ("uint2", "uint4"):
        return np.dtype(np.uint64)
    if dtype in (np.dtype(np.float32), np.dtype(np.float64)):
        return dtype
    if dtype.kind == "c":
        return dtype if kind in ("add", "mul") else None
    if kind in ("and", "or", "xor"):
        return None
    if dtype == np.float16 or "float" in name:
        return np.dtype(np.float32)
    return None


_BOOL_UFUNC = {"add": np.logical_or, "mul": np.logical_and, "max": np.logical_or,
               "min": np.logical_and, "and": np.logical_and, "or": np.logical_or,
               "xor": np.logical_xor}
_UFUNC = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum,
          "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}


def ufunc_for(kind: str, dtype: np.dtype):
    if dtype == np.bool_:
        return _BOOL_UFUNC[kind]
    if kind in ("and", "or", "xor") and dtype.kind not in "iu":
        return None
    return _UFUNC[kind]


_ZERO_ORDERED = {"max": ieee_maximum, "min": ieee_minimum}


def _orders_zeros(kind: str, dtype) -> bool:
    return kind in _ZERO_ORDERED and kind_of(np.dtype(dtype)) == "float"


def binary_for(kind: str, dtype: np.dtype):
    """The element-wise function of a fast path: :func:`ufunc_for`, except
    float ``max``/``min``, which order -0 below +0 (``np.maximum`` does not)."""
    if _orders_zeros(kind, dtype):
        return _ZERO_ORDERED[kind]
    return ufunc_for(kind, dtype)


def order_zeros(kind: str, r: np.ndarray, neg_zero: np.ndarray, pos_zero: np.ndarray) -> np.ndarray:
    """A zero result of a float ``min`` that saw a -0 made -0, of a ``max``
    that saw a +0 made +0 (``neg_zero``/``pos_zero``: per result element)."""
    if kind == "min":
        return np.where((r == 0) & neg_zero, -np.abs(r), r)
    return np.where((r == 0) & pos_zero, np.abs(r), r)


def _mixed_zeros(*xs: np.ndarray) -> bool:
    """Whether the float arrays ``xs`` together hold both a +0 and a -0: only then can a
    max/min by ``np.maximum``/``np.minimum`` (which return one of their operands, any of two
    zeros) pick the wrong zero. -0 is looked for first (a ReLU's output holds many +0 and no
    -0)."""
    ut = np.dtype(f"u{xs[0].dtype.itemsize}")
    neg = ut.type(1 << (8 * xs[0].dtype.itemsize - 1))
    return (any(bool((x.view(ut) == neg).any()) for x in xs)
            and any(bool((x.view(ut) == ut.type(0)).any()) for x in xs))


def _zero_flags(x: np.ndarray):
    z = x == 0
    neg = np.signbit(x)
    return z & neg, z & ~neg


def reduce_last(kind: str, uf, x: np.ndarray) -> np.ndarray:
    """``uf.reduce`` over the last axis, with zeros ordered for float max/min (only a zero
    result can be the wrong zero: the zeros are looked for where some result is 0)."""
    r = uf.reduce(x, axis=-1)
    if _orders_zeros(kind, x.dtype) and (np.asarray(r) == 0).any() and _mixed_zeros(x):
        neg, pos = _zero_flags(x)
        r = order_zeros(kind, r, neg.any(axis=-1), pos.any(axis=-1))
    return r


def combine_at(kind: str, uf, acc: np.ndarray, targets: np.ndarray, src: np.ndarray) -> None:
    """``uf.at(acc, targets, src)`` in place, with zeros ordered for float max/min."""
    if not _orders_zeros(kind, acc.dtype):
        uf.at(acc, targets, src)
        return
    neg, pos = _zero_flags(acc)
    sneg, spos = _zero_flags(src)
    np.logical_or.at(neg, targets, sneg)
    np.logical_or.at(pos, targets, spos)
    uf.at(acc, targets, src)
    acc[...] = order_zeros(kind, acc, neg, pos)


def contiguous(x) -> np.ndarray:
    """``x`` as a C-contiguous array, keeping rank 0."""
    x = np.asarray(x)
    return x if x.flags.c_contiguous else x.copy()


def cast_result(x, dtype: np.dtype) -> np.ndarray:
    """Round/wrap ``x`` into ``dtype`` (integers wrap modulo 2**bits)."""
    x = np.asarray(x)
    if x.dtype == dtype:
        return x
    if dtype.kind in "iu" or "int" in dtype.name:
        bits = np.dtype(dtype).itemsize * 8
        name = dtype.name
        if name in ("int4", "uint4", "int2", "uint2"):
            bits = int(name[-1])
        if x.dtype.kind in "iu" and bits < 64 and x.size and dtype.kind in "iu":
            info = np.iinfo(dtype)
            if int(x.min()) >= info.min and int(x.max()) <= info.max:
                return x.astype(dtype)  # in range: nothing to wrap
        if x.dtype.kind in "iu" and bits < 64:
            x = x.astype(np.int64) & ((1 << bits) - 1)
            if not name.startswith("u"):
                x = np.where(x >= (1 << (bits - 1)), x - (1 << bits), x)
        return x.astype(dtype)
    return x.astype(dtype)


SEQUENTIAL_LIMIT = 32


def _move_reduced_last(x: np.ndarray, dims) -> tuple[tuple, np.ndarray]:
    """``x`` with the ``dims`` axes flattened into one trailing axis: NumPy's transpose and
    reshape, a view where it makes one (``ufunc.reduce`` adds a strided axis in another order
    than a contiguous one), else the C-ordered copy it makes (:func:`.shape.transpose_copy`)."""
    keep = [i for i in range(x.ndim) if i not in dims]
    out_shape = tuple(x.shape[i] for i in keep)
    count = int(np.prod([x.shape[i] for i in dims], dtype=np.int64)) if dims else 1
    perm = keep + list(dims)
    moved = np.transpose(x, perm)
    try:  # a view where NumPy makes one: the layout decides the order ufunc.reduce adds in
        return out_shape, moved.reshape(out_shape + (count,), copy=False)
    except ValueError:  # NumPy's reshape would copy into C order: the same copy, made faster
        return out_shape, transpose_copy(x, perm).reshape(out_shape + (count,))


def fast_reduce(kind: str, x: np.ndarray, axes: tuple[int, ...], init, out_dtype: np.dtype):
    """``init (op) reduce(op, x, axes)`` for one of the simple bodies, or None
    if this kind/dtype has no fast path.

    Up to ``SEQUENTIAL_LIMIT`` reduced elements are folded sequentially from
    ``init`` with a rounding into the element type after every step (XLA's
    CPU schedule for short reductions); longer reductions use
    ``ufunc.reduce``, low-precision floats accumulated in f32.
    """
    cdt = _compute_dtype(x.dtype, kind)
    if cdt is None:
        return None
    uf = ufunc_for(kind, cdt)
    if uf is None:
        return None
    step = binary_for(kind, cdt)
    ic = np.asarray(init).astype(cdt)
    out_shape, flat = _move_reduced_last(x, axes)
    count = flat.shape[-1]
    with np.errstate(all="ignore"):  # IEEE results: inf - inf is NaN, overflow is inf
        if count <= SEQUENTIAL_LIMIT:
            per_step = cdt != x.dtype and cdt.kind == "f"
            acc = np.full(out_shape, ic, dtype=cdt)
            for k in range(count):
                acc = step(acc, flat[..., k].astype(cdt, copy=False))
                if per_step:
                    acc = acc.astype(x.dtype).astype(cdt)
            return contiguous(cast_result(acc, out_dtype))
        red = reduce_last(kind, uf, flat.astype(cdt, copy=False))
        return contiguous(cast_result(step(ic, red), out_dtype))


# ---------------------------------------------------------------------------
# reduce


def _tree_fold(body, arrays: list[np.ndarray]) -> list[np.ndarray]:
    """Fold the last axis of ``arrays`` pairwise, keeping index order."""
    n = arrays[0].shape[-1]
    while n > 1:
        h = n // 2
        left = [a[..., 0:2 * h:2] for a in arrays]
        right = [a[..., 1:2 * h:2] for a in arrays]
        res = [np.asarray(r) for r in body(*left, *right)]
        if n % 2:
            res = [np.concatenate([r.astype(a.dtype, copy=False), a[..., 2 * h:]], axis=-1)
                   for r, a in zip(res, arrays)]
        arrays = res
        n = arrays[0].shape[-1]
    return [a[..., 0] for a in arrays]


def _element(t):
    return getattr(t, "element", t)


def _is_quantized(t) -> bool:
    return bool(getattr(_element(t), "quantized", False))


def _quantized_op(op) -> bool:
    """True when any operand or result of ``op`` is quantized; per-axis
    quantization (which these ops do not accept) is unsupported."""
    found = False
    for t in tuple(op.operand_types) + tuple(op.result_types):
        if _is_quantized(t):
            if _element(t).axis is not None:
                raise op.unsupported("per-axis quantized operands (the spec allows per-tensor only)")
            found = True
    return found


def _to_destination(op, value: np.ndarray, src, dst) -> np.ndarray:
    """spec.md ``to_destination_type`` of ``value`` (of element type ``src``)
    into element type ``dst``: between quantized types ``quantize(x, dst)``
    of the dequantized value (the storage promotion ``is_promotable``
    allows), otherwise ``convert``."""
    src, dst = _element(src), _element(dst)
    value = np.asarray(value)
    sq, dq = getattr(src, "quantized", False), getattr(dst, "quantized", False)
    if not sq and not dq:
        return value if value.dtype == dst.dtype else value.astype(dst.dtype)
    if sq and dq:
        if dataclasses.replace(src, text="") == dataclasses.replace(dst, text=""):
            return value

        return quantize(dequantize(value, src), dst)
    raise op.unsupported(f"conversion from {src} to {dst} (is_promotable needs both quantized)")


def _converted_operands(op, operands, n: int):
    """``inputs`` and ``init_values`` converted to the body's argument types
    (``input_slices_converted``/``init_values_converted`` of spec.md#reduce)."""
    arg_types = op.op.regions[0].blocks[0].arg_types
    inputs = [_to_destination(op, x, op.operand_type(i), arg_types[i]) for i, x in enumerate(operands[:n])]
    inits = [_to_destination(op, v, op.operand_type(n + i), arg_types[n + i])
             for i, v in enumerate(operands[n:])]
    return inputs, inits


def _fast_reduce(op):
    """``reduce`` of one static operand by a simple body (:func:`simple_body`) whose argument
    types are the operand's and the result's: :func:`fast_reduce` with the body and dimensions
    read once, which is what the kernel computes there (its conversions into the body's types
    change nothing) on the operand the kernel gets (not a broadcast view: ``ufunc.reduce``
    adds in an order that follows the layout); None where :func:`fast_reduce` has no fast path
    (the kernel's general path)."""
    if len(op.operands) != 2 or len(op.regions) != 1:
        return None
    types = _fast.plain_types(op)
    if types is None:
        return None
    (xdt, idt), dt, _ = types
    kind = body_kind(op.regions[0])
    args = op.regions[0].blocks[0].arg_types
    if kind is None or not xdt == idt == dt or any(
            not isinstance(t, T.TensorType) or t.element.quantized or t.dtype != dt for t in args):
        return None
    cdt = _compute_dtype(dt, kind)
    if cdt is None or ufunc_for(kind, cdt) is None:
        return None
    dims = tuple(sorted(int(d) for d in op.attr("dimensions", ())))
    shape = tuple(op.operand_types[0].shape)
    rank, count = len(shape), int(np.prod([shape[d] for d in dims], dtype=np.int64))
    if (cdt == dt and dims and dims == tuple(range(rank - len(dims), rank)) and count > SEQUENTIAL_LIMIT
            and len(dims) < rank):
        # the trailing axes, long enough for ufunc.reduce, in the element type itself
        uf, step, flat = ufunc_for(kind, dt), binary_for(kind, dt), shape[:rank - len(dims)] + (count,)

        def trailing(x, init):
            return step(init, reduce_last(kind, uf, x.reshape(flat)))

        return FastPath(trailing)

    def call(x, init):
        return fast_reduce(kind, x, dims, init, dt)

    return FastPath(call)  # no views: the layout decides the order ufunc.reduce adds in


def rows_reduce(op) -> tuple[int, object] | None:
    """For a ``reduce`` that has a fast path (:func:`_fast_reduce` gave one: the caller knows)
    over the operand's trailing axes only: ``(k, call)``, ``k`` the leading axes it keeps and
    ``call(x, init)`` what the fast path computes (:func:`fast_reduce` on the same dimensions),
    on the whole operand or on any block of it cut along those ``k`` axes (a C-ordered block of
    whole rows: each row reduced as in the whole call, by the same sequential fold or
    ``ufunc.reduce`` of the same contiguous row); None otherwise."""
    shape = tuple(op.operand_types[0].shape)
    dims = tuple(sorted(int(d) for d in op.attr("dimensions", ())))
    k = len(shape) - len(dims)
    if not dims or k < 1 or dims != tuple(range(k, len(shape))):
        return None
    kind, dt = body_kind(op.regions[0]), op.result_types[0].dtype

    def call(x, init):
        return fast_reduce(kind, x, dims, init, dt)

    return k, call


@kernel("stablehlo.reduce", quantized=STORAGE, accuracy=ACCUMULATE, reduces=True, fast=_fast_reduce)
def reduce(op, *operands):
    """See spec.md#reduce."""
    quant = _quantized_op(op)
    n = len(operands) // 2
    dims = tuple(sorted(int(d) for d in op.attr("dimensions", ())))
    out_dtypes = [op.result_dtype(i) for i in range(n)]
    inputs, inits = _converted_operands(op, operands, n)
    if n == 1 and not quant:
        kind = simple_body(op)
        if kind is not None and inputs[0].dtype == out_dtypes[0]:
            r = fast_reduce(kind, inputs[0], dims, inits[0], out_dtypes[0])
            if r is not None:
                return (r,)
    return tuple(reduce_general(op.region(0, lanes=True), inputs, inits, dims, out_dtypes))


def reduce_general(body, inputs, inits, dims, out_dtypes):
    """Fold ``inputs`` over ``dims`` with ``body`` (lanes), init folded in:
    sequentially from the init values for up to ``SEQUENTIAL_LIMIT``
    elements, else a pairwise tree in index order then ``body(init, tree)``."""
    out_shape = _move_reduced_last(inputs[0], dims)[0]
    flat = [_move_reduced_last(x, dims)[1] for x in inputs]
    count = flat[0].shape[-1]
    if count == 0:
        return [np.full(out_shape, v, dtype=d) for v, d in zip(inits, out_dtypes)]
    if count <= SEQUENTIAL_LIMIT:
        accs = [np.broadcast_to(v, out_shape) for v in inits]
        for k in range(count):
            res = body(*accs, *[f[..., k] for f in flat])
            accs = [np.broadcast_to(np.asarray(r), out_shape) for r in res]
        res = accs
    else:
        folded = _tree_fold(body, flat)
        ib = [np.broadcast_to(v, out_shape) for v in inits]
        res = body(*ib, *folded)
    return [contiguous(np.broadcast_to(np.asarray(r), out_shape)).astype(d, copy=False)
            for r, d in zip(res, out_dtypes)]


# ---------------------------------------------------------------------------
# padding / windows helpers (also used by convolution)


def pad_dilate(x: np.ndarray, low, high, interior, value) -> np.ndarray:
    """spec.md#pad: edge padding ``low``/``high`` (negative crops) and
    ``interior`` padding between elements, filled with ``value``."""
    low = [int(v) for v in low]
    high = [int(v) for v in high]
    interior = [int(v) for v in interior]
    if not any(low) and not any(high) and not any(interior):
        return x
    dil = [(n - 1) * (i + 1) + 1 if n > 0 else 0 for n, i in zip(x.shape, interior)]
    full = [max(lo, 0) + d + max(hi, 0) for lo, d, hi in zip(low, dil, high)]
    out = np.full(full, value, dtype=x.dtype)
    dst = tuple(slice(max(lo, 0), max(lo, 0) + d, i + 1) for lo, d, i in zip(low, dil, interior))
    out[dst] = x
    crop = tuple(slice(max(-lo, 0), f - max(-hi, 0)) for lo, hi, f in zip(low, high, full))
    out = out[crop]
    return out


def windows(x: np.ndarray, window, strides, dilations) -> np.ndarray:
    """View of shape ``num_windows + window`` of the windows of ``x``."""
    r = x.ndim
    ext = [(w - 1) * d + 1 for w, d in zip(window, dilations)]
    counts = [0 if (s < e) else (s - e) // st + 1 for s, e, st in zip(x.shape, ext, strides)]
    if any(c == 0 for c in counts) or x.size == 0:
        return np.zeros(tuple(counts) + tuple(window), dtype=x.dtype)
    v = sliding_window_view(x, ext, axis=tuple(range(r)))
    sl = tuple(slice(None, None, st) for st in strides) + tuple(slice(None, None, d) for d in dilations)
    v = v[sl]
    return v[tuple(slice(0, c) for c in counts) + (Ellipsis,)]


def _window_attrs(op, rank: int):
    wd = tuple(int(v) for v in op.attr("window_dimensions"))
    ws = tuple(int(v) for v in (op.attr("window_strides") or (1,) * rank))
    bd = tuple(int(v) for v in (op.attr("base_dilations") or (1,) * rank))
    wdl = tuple(int(v) for v in (op.attr("window_dilations") or (1,) * rank))
    pad = op.attr("padding")
    if pad is None:
        pad = np.zeros((rank, 2), dtype=np.int64)
    pad = np.asarray(pad, dtype=np.int64).reshape(rank, 2)
    return wd, ws, bd, wdl, pad


@kernel("stablehlo.reduce_window", quantized=STORAGE, accuracy=ACCUMULATE, reduces=True)
def reduce_window(op, *operands):
    """See spec.md#reduce_window."""
    quant = _quantized_op(op)
    n = len(operands) // 2
    rank = operands[0].ndim
    wd, ws, bd, wdl, pad = _window_attrs(op, rank)
    out_dtypes = [op.result_dtype(i) for i in range(n)]
    inputs, inits = _converted_operands(op, operands, n)
    out_shape = tuple(op.result_shape(0))
    kind = simple_body(op) if n == 1 and not quant and inputs[0].dtype == out_dtypes[0] else None
    if (kind is not None and inputs[0].size > 0 and len(out_shape) == rank
            and all(o in (None, d) for o, d in zip(out_shape, inputs[0].shape))):
        # a running fold (cumsum, cummax, ...): no padded copy, no window view
        axis = prefix_axis(inputs[0].shape, wd, ws, bd, wdl, pad)
        r = prefix_scan(kind, inputs[0], axis, inits[0]) if axis is not None else None
        if r is not None:
            return (r,)
    padded = [pad_dilate(x, pad[:, 0], pad[:, 1], [b - 1 for b in bd], v) for x, v in zip(inputs, inits)]
    wins = [windows(p, wd, ws, wdl) for p in padded]
    # Padding and base-dilation holes hold the init value (spec.md#reduce_window);
    # like XLA they are left out of the fold, which the spec's reduce schedule
    # allows (any number of init values). Identity inits give the same result.
    valid = None
    if pad.any() or any(b > 1 for b in bd):
        mask = pad_dilate(np.ones(inputs[0].shape, np.bool_), pad[:, 0], pad[:, 1], [b - 1 for b in bd], False)
        valid = windows(mask, wd, ws, wdl)
    if None not in out_shape and wins[0].shape[:rank] != out_shape:
        raise op.unsupported(f"window count {wins[0].shape[:rank]} does not match result {out_shape}")
    out_shape = wins[0].shape[:rank]
    n_out = int(np.prod(out_shape, dtype=np.int64))
    offsets = window_offsets(wd) if n_out > 0 else []
    if kind is not None:
        r = _fast_window_fold(kind, wins[0], offsets, inits[0], out_shape, valid, padded[0])
        if r is not None:
            return (r,)
    body = op.region(0, lanes=True)
    accs = [np.full(out_shape, v, dtype=v.dtype) for v in inits]
    for off in offsets:
        xs = [w[(Ellipsis,) + off] for w in wins]
        new = [np.broadcast_to(np.asarray(a), out_shape) for a in _window_step(body, accs, xs)]
        if valid is not None:
            m = valid[(Ellipsis,) + off]
            new = [np.where(m, a, b) for a, b in zip(new, accs)]
        accs = new
    return tuple(contiguous(a).astype(d, copy=False) for a, d in zip(accs, out_dtypes))


def prefix_axis(shape, wd, ws, bd, wdl, pad) -> int | None:
    """The axis of a window that is a running (prefix) fold, else None.

    That is the window ``jnp.cumsum``/``cumprod``/``cummax``/``cummin`` lower
    to on CPU: along one axis of size ``n`` a window of ``n`` elements, low
    padding ``n - 1``, no high padding, unit strides and dilations; every
    other axis a window of one element without padding. Result element ``i``
    along that axis folds input elements ``0..i``.
    """
    axis = None
    for d, size in enumerate(shape):
        if ws[d] != 1 or bd[d] != 1 or wdl[d] != 1 or pad[d, 1] != 0:
            return None
        if wd[d] == 1 and pad[d, 0] == 0:
            continue
        if axis is not None or size < 2 or wd[d] != size or pad[d, 0] != size - 1:
            return None
        axis = d
    return axis


def prefix_scan(kind, x: np.ndarray, axis: int, init):
    """The running fold of a :func:`prefix_axis` window with a simple body
    (None where :func:`_fast_window_fold` has no fast path either).

    The same schedule as the window fold (padding skipped, the window's
    elements in index order from ``init``, rounding into the element type
    after every step): result ``i`` is ``(((init op x0) op x1) ... op xi)``,
    which is ``ufunc.accumulate`` (a strictly sequential left fold) over
    ``init op x0, x1, x2, ...``, in place in one copy of the input; float
    max/min then order a zero result as the ops do (-0 < +0, from which zeros
    the prefix holds; only needed when the input holds zeros of both signs).
    Integers are computed in
    64 bits and wrapped once (wrapping commutes with ``+`` and ``*``); f16,
    bf16 and f8 run the fold step by step along the axis with a rounding
    into the element type after each step. O(n) instead of O(n * window).
    """
    dtype = x.dtype
    fold = _window_ufunc(kind, dtype)
    if fold is None:
        return None
    cdt, uf = fold
    xm = np.moveaxis(x, axis, -1).astype(cdt, copy=False)
    first = np.asarray(init).astype(cdt)
    if cdt != dtype and cdt.kind == "f":
        acc = np.full(xm.shape[:-1], first, dtype=cdt)
        out = np.empty(xm.shape, dtype=cdt)
        for i in range(xm.shape[-1]):
            with np.errstate(invalid="ignore", over="ignore"):  # inf - inf, 0 * inf: NaN, as the op says
                acc = uf(acc, xm[..., i]).astype(dtype).astype(cdt)
            out[..., i] = acc
    else:
        # the fold in place: the first element combined with init, then one
        # accumulate (each element combined with the fold before it)
        out = np.array(xm, dtype=cdt, order="C")
        flags = None
        with np.errstate(invalid="ignore", over="ignore"):  # inf - inf, 0 * inf: NaN, as the op says
            out[..., 0] = uf(first, out[..., 0])
            if _orders_zeros(kind, cdt) and _mixed_zeros(out):  # -0 < +0 for a zero seen so far
                flags = _zero_flags(out)
            ufunc_for(kind, cdt).accumulate(out, axis=-1, out=out)
        if flags is not None:
            out = order_zeros(kind, out, np.logical_or.accumulate(flags[0], axis=-1),
                              np.logical_or.accumulate(flags[1], axis=-1))
    return contiguous(cast_result(np.moveaxis(out, -1, axis), dtype))


def window_offsets(window) -> list[tuple[int, ...]]:
    """Window positions in row-major order (the last window dimension varies
    fastest)."""
    return list(np.ndindex(*window))


def _window_step(body, accs, xs):
    """One step of the window fold: ``body(accumulators..., elements...)``."""
    return body(*accs, *xs)


def _window_ufunc(kind, dtype: np.dtype):
    """``(compute dtype, ufunc)`` of a window fold's fast path, or None."""
    cdt = _compute_dtype(dtype, kind)
    if cdt is None or (dtype.kind == "c" and kind == "mul"):
        return None
    uf = binary_for(kind, cdt)
    return None if uf is None else (cdt, uf)


def _fast_window_fold(kind, win, offsets, init, out_shape, valid=None, source=None):
    """Sequential fold over the window positions in row-major order starting
    from ``init``, rounding to the element type after every step. ``source``:
    the array ``win`` views (all its elements, for :func:`_mixed_zeros`).

    A float max/min of f32/f64 without padding folds with ``np.maximum`` /
    ``np.minimum`` in place where the elements and ``init`` hold zeros of one
    sign at most: only a +0 met by a -0 can come out as the wrong zero, so
    every step is then the IEEE one (spec.md#maximum: -0 < +0)."""
    dtype = win.dtype
    fold = _window_ufunc(kind, dtype)
    if fold is None:
        return None
    cdt, uf = fold
    per_step = cdt != dtype and cdt.kind == "f"
    acc = np.full(out_shape, np.asarray(init).astype(cdt), dtype=cdt)
    if (valid is None and not per_step and source is not None and _orders_zeros(kind, dtype)
            and not _mixed_zeros(source, acc.reshape(-1)[:1])):
        plain = _UFUNC[kind]
        with np.errstate(invalid="ignore"):
            for off in offsets:
                plain(acc, win[(Ellipsis,) + off], out=acc)
        return contiguous(cast_result(acc, dtype))
    for off in offsets:
        with np.errstate(invalid="ignore", over="ignore"):  # inf - inf, 0 * inf: NaN, as the op says
            step = uf(acc, win[(Ellipsis,) + off].astype(cdt, copy=False))
            if per_step:
                step = step.astype(dtype).astype(cdt)
        acc = step if valid is None else np.where(valid[(Ellipsis,) + off], step, acc)
    return contiguous(cast_result(acc, dtype))


# ---------------------------------------------------------------------------
# select_and_scatter


def scatter_combine(body, kind, result_flat: np.ndarray, targets: np.ndarray, src: np.ndarray) -> np.ndarray:
    """``result[t] = body(result[t], s)`` for every (t, s) pair, in order."""
    if targets.size == 0:
        return result_flat
    if kind is not None:
        cdt = _compute_dtype(result_flat.dtype, kind)
        uf = ufunc_for(kind, cdt) if cdt is not None else None
        if uf is not None:
            acc = result_flat.astype(cdt)
            combine_at(kind, uf, acc, targets, src.astype(cdt))
            return cast_result(acc, result_flat.dtype)
    order = np.argsort(targets, kind="stable")
    t = targets[order]
    s = src[order]
    starts = np.r_[0, np.flatnonzero(t[1:] != t[:-1]) + 1]
    group_start = np.repeat(starts, np.diff(np.r_[starts, t.size]))
    rank = np.arange(t.size) - group_start
    out = result_flat.copy()
    for r in range(int(rank.max()) + 1):
        m = rank == r
        tt = t[m]
        (v,) = body(out[tt], s[m])[:1]
        out[tt] = np.asarray(v).astype(out.dtype, copy=False)
    return out


@kernel("stablehlo.select_and_scatter", quantized=STORAGE, reduces=True)
def select_and_scatter(op, operand, source, init_value):
    """See spec.md#select_and_scatter. Padding elements are never selected."""
    quant = _quantized_op(op)
    rank = operand.ndim
    wd = tuple(int(v) for v in op.attr("window_dimensions"))
    ws = tuple(int(v) for v in (op.attr("window_strides") or (1,) * rank))
    pad = op.attr("padding")
    pad = np.zeros((rank, 2), np.int64) if pad is None else np.asarray(pad, np.int64).reshape(rank, 2)
    out_dtype = op.result_dtype(0)
    idx = np.arange(operand.size, dtype=np.int64).reshape(operand.shape)
    pv = pad_dilate(operand, pad[:, 0], pad[:, 1], [0] * rank, np.asarray(init_value).astype(operand.dtype))
    pi = pad_dilate(idx, pad[:, 0], pad[:, 1], [0] * rank, -1)
    wv = windows(pv, wd, ws, (1,) * rank)
    wi = windows(pi, wd, ws, (1,) * rank)
    nwin = wv.shape[:rank]
    scatter_types = op.op.regions[1].blocks[0].arg_types
    init_e = _to_destination(op, init_value, op.operand_type(2), scatter_types[0])
    result = np.full(operand.size, np.asarray(init_e), dtype=out_dtype)
    if int(np.prod(nwin, dtype=np.int64)) == 0 or operand.size == 0:
        return (result.reshape(operand.shape),)
    if tuple(source.shape) != tuple(nwin):
        raise op.unsupported(f"source shape {source.shape} does not match window count {nwin}")
    select = op.region(0, lanes=True)
    offs = window_offsets(wd)
    sel_v = wv[(Ellipsis,) + offs[0]].copy()
    sel_i = wi[(Ellipsis,) + offs[0]].copy()
    for off in offs[1:]:
        cv = wv[(Ellipsis,) + off]
        ci = wi[(Ellipsis,) + off]
        (keep,) = select(sel_v, cv)[:1]
        keep = np.broadcast_to(np.asarray(keep, dtype=bool), nwin)
        cvalid = ci >= 0
        take = cvalid & ((sel_i < 0) | ~keep)
        sel_v = np.where(take, cv, sel_v)
        sel_i = np.where(take, ci, sel_i)
    targets = sel_i.ravel()
    src = _to_destination(op, source.ravel(), op.operand_type(1), scatter_types[1])
    ok = targets >= 0
    kind = None if quant else simple_body(op, 1)
    result = scatter_combine(op.region(1, lanes=True), kind, result, targets[ok], src[ok])
    return (result.reshape(operand.shape),)
