"""Bitwise element-wise ops: and, or, xor, not, popcnt, count_leading_zeros,
shift_left, shift_right_arithmetic, shift_right_logical.

See spec.md#and, #or, #xor, #not, #popcnt, #count_leading_zeros,
#shift_left, #shift_right_arithmetic, #shift_right_logical. On booleans
``and``/``or``/``xor``/``not`` are the logical operations.

Integers are handled as two's-complement bit patterns of the type's own
width (sub-byte types included). Shift amounts outside ``[0, bit width)``
(negative ones included) give 0 for ``shift_left`` and
``shift_right_logical`` and the sign fill (0 or -1) for
``shift_right_arithmetic``; unsigned operands of ``shift_right_arithmetic``
fill with their top bit. Shifts of native integer types (8 to 64 bits) run as
NumPy's own shifts on the type's bit patterns (``shift_native``), the others on
uint64 patterns (``shift_general``).
"""

from __future__ import annotations

import functools

import numpy as np

from ..numeric import bits_of, from_unsigned_pattern, is_signed, to_i64, unsigned_pattern, wrap_i64
from ..opinfo import EXACT, FastPath
from . import _fast
from ._fast import native_family
from .elementwise import _kind, binary, int_fn, unary

def _logic(f_bool, f_int):
    def g(dt, *xs):
        if _kind(xs[0]) == "bool":
            return f_bool(*xs)
        return int_fn(f_int, dt, *xs)

    return g


and_ = binary("stablehlo.and", folds=True, accuracy=EXACT, selects=True)(_logic(np.logical_and, np.bitwise_and))
or_ = binary("stablehlo.or", folds=True, accuracy=EXACT, selects=True)(_logic(np.logical_or, np.bitwise_or))
xor = binary("stablehlo.xor", folds=True, accuracy=EXACT)(_logic(np.logical_xor, np.bitwise_xor))
not_ = unary("stablehlo.not", folds=True, accuracy=EXACT)(_logic(np.logical_not, np.invert))


@unary("stablehlo.popcnt", accuracy=EXACT)
def popcnt(dt, x):
    u = unsigned_pattern(x)
    return np.bitwise_count(u).astype(np.int64).astype(dt)


def clz_values(x) -> np.ndarray:
    """Leading zeros of the bit pattern at the type's own width."""
    x = np.asarray(x)
    b = bits_of(x.dtype)
    u = unsigned_pattern(x)
    n = np.zeros(u.shape, dtype=np.int64)
    # bit length by binary search over the 64-bit container
    length = np.zeros(u.shape, dtype=np.int64)
    v = u.copy()
    for s in (32, 16, 8, 4, 2, 1):
        big = v >= (np.uint64(1) << np.uint64(s))
        length = np.where(big, length + s, length)
        v = np.where(big, v >> np.uint64(s), v)
    length = np.where(u != 0, length + 1, 0)
    n = b - length
    return n


@unary("stablehlo.count_leading_zeros", accuracy=EXACT)
def count_leading_zeros(dt, x):
    return wrap_i64(clz_values(x), dt)


def shift_general(kind: str, dt, a, s) -> np.ndarray:
    """``kind`` (``"left"``, ``"logical"`` or ``"arithmetic"``) shift of ``a`` by ``s`` on the
    two's-complement bit patterns of ``dt`` held in uint64: any integer type, sub-byte ones
    included."""
    dt = np.dtype(dt)
    b = bits_of(dt)
    a, s = np.broadcast_arrays(np.asarray(a), np.asarray(s))
    amount = to_i64(s)
    if not is_signed(s.dtype) and s.dtype == np.dtype(np.uint64):
        amount = np.where(s.astype(np.uint64) >= np.uint64(b), b, amount)
    bad = (amount < 0) | (amount >= b)
    sh = np.where(bad, 0, amount).astype(np.uint64)
    u = unsigned_pattern(a)
    mask = np.uint64((1 << b) - 1) if b < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)
    top = np.uint64(1 << (b - 1))
    with np.errstate(all="ignore"):
        if kind == "left":
            r = (u << sh) & mask
            r = np.where(bad, np.uint64(0), r)
        elif kind == "logical":
            r = u >> sh
            r = np.where(bad, np.uint64(0), r)
        else:
            negative = (u & top) != 0
            r = u >> sh
            top_bits = (mask << (np.uint64(b) - sh).astype(np.uint64)) & mask
            fill = np.where(negative, top_bits, np.uint64(0))
            fill = np.where(sh == 0, np.uint64(0), fill)
            r = r | fill
            r = np.where(bad, np.where(negative, mask, np.uint64(0)), r)
    return from_unsigned_pattern(r, dt)


def _compact(x: np.ndarray) -> np.ndarray:
    """``x`` without the repeats of a broadcast view: its stride-0 dimensions cut to length 1
    (the same values once broadcast back to ``x``'s shape)."""
    return x[tuple(slice(0, 1) if st == 0 else slice(None) for st in x.strides)]


def shift_native(kind: str, a: np.ndarray, s: np.ndarray):
    """:func:`shift_general` for operands of one native integer type (8 to 64 bits), by NumPy's
    own shifts on that type's bit patterns: ``left`` and ``logical`` on the unsigned view
    (``<<`` keeps the low bits, i.e. wraps; ``>>`` fills with zeros), ``arithmetic`` on the
    signed view (``>>`` fills with the top bit, for unsigned operands too, as
    spec.md#shift_right_arithmetic asks). NumPy (as C) shifts by amounts in ``[0, bits)``
    only; the others (negative amounts are at least ``2**(bits-1)`` as unsigned patterns)
    give spec.md's results: 0 for ``left``/``logical``, and for ``arithmetic`` the sign fill,
    which is the shift by ``bits - 1``. The amounts are read once per element of a broadcast
    view (:func:`_compact`), so a broadcast constant amount costs one scalar test.
    ``tests/test_fast_shifts.py`` compares it with :func:`shift_general` (every i8/ui8 value by
    every amount in [-1, 9], and random wider operands)."""
    dt = a.dtype
    bits = dt.itemsize * 8
    x = a.view(np.dtype(f"i{dt.itemsize}") if kind == "arithmetic" else np.dtype(f"u{dt.itemsize}"))
    amounts = _compact(s).view(np.dtype(f"u{dt.itemsize}"))  # negative amounts: 2**bits + s >= bits
    shift = np.left_shift if kind == "left" else np.right_shift
    if amounts.size == 0 or amounts.max() < bits:
        return shift(x, amounts.view(x.dtype)).view(dt)
    r = shift(x, np.minimum(amounts, bits - 1).view(x.dtype))
    if kind != "arithmetic":
        r = np.where(amounts >= bits, x.dtype.type(0), r)
    return r.view(dt)


def _native(dt, *operand_dtypes) -> bool:
    """A native integer type (8 to 64 bits) ``dt``, the type of every operand."""
    return native_family(dt) == "int" and all(d == dt for d in operand_dtypes)


def _shift_op(name: str, kind: str, **facts):
    """Register the ``kind`` shift as the kernel of ``name`` (with the op's ``facts``):
    :func:`shift_native` where the operands are of one native integer type, else
    :func:`shift_general`; its fast path takes broadcast views (a constant amount is not
    materialized)."""
    def f(dt, a, s):
        dt = np.dtype(dt)
        a, s = np.asarray(a), np.asarray(s)
        if _native(dt, a.dtype, s.dtype):
            return shift_native(kind, a, s)
        return shift_general(kind, dt, a, s)

    def fast(op) -> FastPath | None:
        types = _fast.plain_types(op)
        if types is not None and _native(types[1], *types[0]):
            return FastPath(functools.partial(shift_native, kind), views=True, fresh=True)
        return _fast.elementwise(f)(op)

    f.__name__ = name.rsplit(".", 1)[1]
    return binary(name, fast=fast, **facts)(f)


shift_left = _shift_op("stablehlo.shift_left", "left", folds=True, accuracy=EXACT)
shift_right_logical = _shift_op("stablehlo.shift_right_logical", "logical", folds=True, accuracy=EXACT)
shift_right_arithmetic = _shift_op("stablehlo.shift_right_arithmetic", "arithmetic", folds=True, accuracy=EXACT)
