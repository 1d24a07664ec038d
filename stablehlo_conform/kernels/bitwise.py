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
fill with their top bit.
"""

from __future__ import annotations

import numpy as np

from ..numeric import bits_of, from_unsigned_pattern, is_signed, to_i64, unsigned_pattern, wrap_i64
from .elementwise import _kind, binary, int_fn, unary

def _logic(f_bool, f_int):
    def g(dt, *xs):
        if _kind(xs[0]) == "bool":
            return f_bool(*xs)
        return int_fn(f_int, dt, *xs)

    return g


and_ = binary("stablehlo.and")(_logic(np.logical_and, np.bitwise_and))
or_ = binary("stablehlo.or")(_logic(np.logical_or, np.bitwise_or))
xor = binary("stablehlo.xor")(_logic(np.logical_xor, np.bitwise_xor))
not_ = unary("stablehlo.not")(_logic(np.logical_not, np.invert))


@unary("stablehlo.popcnt")
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


@unary("stablehlo.count_leading_zeros")
def count_leading_zeros(dt, x):
    return wrap_i64(clz_values(x), dt)


def _shift(kind: str):
    def f(dt, a, s):
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

    return f


shift_left = binary("stablehlo.shift_left")(_shift("left"))
shift_right_logical = binary("stablehlo.shift_right_logical")(_shift("logical"))
shift_right_arithmetic = binary("stablehlo.shift_right_arithmetic")(_shift("arithmetic"))
