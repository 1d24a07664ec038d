"""The MLIR ``arith`` dialect on scalars, ``index`` values and tensors.

Exporters leave ``arith`` ops in StableHLO programs for shape and index
computations (``arith.constant`` itself lives in :mod:`.core`). Integers are
signless: an ``iN`` value is stored in its signed NumPy dtype, and every op
chooses the signed or unsigned reading of the bits, as its name says
(``divsi``/``divui``, ``cmpi slt``/``ult``, ...). ``index`` is a 64-bit
integer. Integer results wrap modulo 2^N. Results whose type is a bare
element type (``i32``, ``index``, ``f32``) are 0-d arrays of that dtype.

Cases the dialect leaves undefined (poison or immediate UB: division by zero,
signed overflow of ``divsi``, shift amounts >= the bit width, out-of-range
``fptosi``) produce a deterministic value instead of an error: 0 for
division by zero and for oversized shifts, the wrapped value otherwise.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from .. import types as T
from ..numeric import ieee_maximum, ieee_minimum, order_zero_result
from .registry import kernel, kernel_of

_I64 = np.dtype(np.int64)
_U64 = np.dtype(np.uint64)


# --------------------------------------------------------------------------- #
# element types and bit-level views
# --------------------------------------------------------------------------- #


def element_of(ty):
    """The element type of a tensor type, or the type itself for scalars."""
    if isinstance(ty, T.TensorType):
        return ty.element
    return ty


def result_element(op, i: int = 0):
    return element_of(op.result_type(i))


def operand_element(op, i: int = 0):
    return element_of(op.operand_type(i))


def bits_of(el) -> int:
    if isinstance(el, T.ElementType):
        return 64 if el.name == "index" else el.bits
    raise TypeError(f"not an integer element type: {el}")


def as_unsigned(x, bits: int) -> np.ndarray:
    """The low ``bits`` bits of integer (or i1) values, as uint64."""
    a = np.asarray(x)
    with np.errstate(all="ignore"):
        v = a.astype(_I64).view(_U64) if a.dtype != _U64 else a
    if bits < 64:
        v = v & np.uint64((1 << bits) - 1)
    return np.asarray(v, dtype=_U64)


def as_signed(x, bits: int) -> np.ndarray:
    """The two's complement reading of the low ``bits`` bits, as int64."""
    u = as_unsigned(x, bits)
    if bits == 64:
        return u.view(_I64)
    s = u.astype(_I64)
    return np.where(s >= (1 << (bits - 1)), s - (1 << bits), s).astype(_I64)


def wrap(v, el) -> np.ndarray:
    """Integer values (int64 or uint64) reduced modulo 2^bits into ``el``."""
    bits = bits_of(el)
    with np.errstate(all="ignore"):
        a = np.asarray(v)
        u = a.view(_U64) if a.dtype == _I64 else a.astype(_U64)
        if bits < 64:
            u = u & np.uint64((1 << bits) - 1)
        if el.kind == "bool":
            return np.asarray(u != 0)
        if el.kind == "uint":
            return np.asarray(u.astype(el.dtype), dtype=el.dtype)
        if bits == 64:
            s = u.view(_I64)
        else:
            s = u.astype(_I64)
            s = np.where(s >= (1 << (bits - 1)), s - (1 << bits), s)
        return np.asarray(np.asarray(s, dtype=_I64).astype(el.dtype), dtype=el.dtype)


def _is_std_float(dt: np.dtype) -> bool:
    return dt in (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


def float_view(x) -> np.ndarray:
    """Float values in a NumPy-native float dtype (exact widening of
    bf16/f8/f6/f4 to f32)."""
    a = np.asarray(x)
    if _is_std_float(a.dtype):
        return a
    return a.astype(np.float32)


def to_float(v, dt: np.dtype) -> np.ndarray:
    """Round values to the float dtype ``dt`` once (to nearest even)."""
    a = np.asarray(v)
    with np.errstate(all="ignore"):
        if np.dtype(dt).kind == "V" and a.dtype != dt and a.dtype.kind in "fiub":
            if a.dtype != np.float32:
                a = a.astype(np.float64)
            if a.dtype == np.float64:
                return _f64_to_small(a, dt)
        return np.asarray(a.astype(dt), dtype=dt)


def float_compute(fn, dt: np.dtype, *xs) -> np.ndarray:
    """Apply ``fn`` to float operands in a native dtype, round to ``dt``.

    bf16/f16 and the small float formats are evaluated in f32; f32 and f64
    natively.
    """
    work = np.float64 if dt == np.float64 else np.float32
    args = [np.asarray(x).astype(work) for x in xs]
    with np.errstate(all="ignore"):
        return to_float(fn(*args), dt)


def _shape_of(*xs) -> tuple:
    return np.broadcast_shapes(*(np.shape(x) for x in xs))


# --------------------------------------------------------------------------- #
# integer arithmetic
# --------------------------------------------------------------------------- #


def _int_binary(name, fn, signed: bool):
    def k(op, a, b):
        el = result_element(op)
        bits = bits_of(el)
        conv = as_signed if signed else as_unsigned
        with np.errstate(all="ignore"):
            r = fn(conv(a, bits), conv(b, bits))
        return (wrap(r, el),)

    return kernel_of(k, name, doc=f"``{name}`` (MLIR arith dialect).")


_int_binary("arith.addi", np.add, False)
_int_binary("arith.subi", np.subtract, False)
_int_binary("arith.muli", np.multiply, False)
_int_binary("arith.andi", np.bitwise_and, False)
_int_binary("arith.ori", np.bitwise_or, False)
_int_binary("arith.xori", np.bitwise_xor, False)
_int_binary("arith.maxsi", np.maximum, True)
_int_binary("arith.minsi", np.minimum, True)
_int_binary("arith.maxui", np.maximum, False)
_int_binary("arith.minui", np.minimum, False)


def _safe_div(a, b):
    """Divisor with zeros replaced by 1 and a mask of the zeros."""
    zero = b == 0
    return np.where(zero, np.ones_like(b), b), zero


def _trunc_div(a, b):
    """Signed division rounding toward zero (int64, wrapping); x / 0 -> 0."""
    zero = b == 0
    minus_one = b == -1
    b1 = np.where(zero | minus_one, np.ones_like(b), b)
    r = np.fmod(a, b1)
    q = (a - r) // b1
    q = np.where(minus_one, -a, q)
    return np.where(zero, np.zeros_like(q), q), zero


def _unsigned_division(name, fn):
    """Register ``name``: ``fn(x, y)`` on the unsigned readings of the
    operands, with 0 where the divisor is 0."""

    def k(op, a, b):
        el = result_element(op)
        bits = bits_of(el)
        x, y = as_unsigned(a, bits), as_unsigned(b, bits)
        y1, zero = _safe_div(x, y)
        return (wrap(np.where(zero, np.uint64(0), fn(x, y1)), el),)

    return kernel_of(k, name, doc=f"``{name}`` (MLIR arith dialect); division by zero gives 0.")


_unsigned_division("arith.divui", lambda x, y: x // y)
_unsigned_division("arith.remui", lambda x, y: x % y)
_unsigned_division("arith.ceildivui", lambda x, y: x // y + (x % y != 0).astype(_U64))


@kernel("arith.divsi")
def divsi(op, a, b):
    el = result_element(op)
    bits = bits_of(el)
    with np.errstate(all="ignore"):
        q, _ = _trunc_div(as_signed(a, bits), as_signed(b, bits))
    return (wrap(q, el),)


@kernel("arith.remsi")
def remsi(op, a, b):
    el = result_element(op)
    bits = bits_of(el)
    x, y = as_signed(a, bits), as_signed(b, bits)
    y1, zero = _safe_div(x, y)
    with np.errstate(all="ignore"):
        y1 = np.where(y1 == -1, np.ones_like(y1), y1)  # x rem -1 == 0 == x rem 1
        r = np.fmod(x, y1)
    return (wrap(np.where(zero, 0, r), el),)


def _rounded_signed_div(op, a, b, up: bool):
    """Signed division rounded toward +inf (``up``) or -inf: the truncated
    quotient moves one step that way where it is inexact and the exact
    quotient lies on that side of zero; x / 0 -> 0."""
    el = result_element(op)
    bits = bits_of(el)
    x, y = as_signed(a, bits), as_signed(b, bits)
    with np.errstate(all="ignore"):
        q, zero = _trunc_div(x, y)
        y1 = np.where(zero, np.ones_like(y), y)
        exact = q * y1 == x
        same_sign = (x < 0) == (y1 < 0)
        if up:
            q = np.where(~exact & same_sign & ~zero, q + 1, q)
        else:
            q = np.where(~exact & ~same_sign & ~zero, q - 1, q)
    return (wrap(q, el),)


@kernel("arith.ceildivsi")
def ceildivsi(op, a, b):
    return _rounded_signed_div(op, a, b, up=True)


@kernel("arith.floordivsi")
def floordivsi(op, a, b):
    return _rounded_signed_div(op, a, b, up=False)


def _shift(op, a, b, kind: str):
    el = result_element(op)
    bits = bits_of(el)
    amount = as_unsigned(b, bits)
    big = amount >= bits
    amt = np.where(big, np.uint64(0), amount)
    with np.errstate(all="ignore"):
        if kind == "shl":
            r = as_unsigned(a, bits) << amt
        elif kind == "shrui":
            r = as_unsigned(a, bits) >> amt
        else:
            r = as_signed(a, bits) >> amt.astype(_I64)
    return (wrap(np.where(big, 0, r), el),)


@kernel("arith.shli")
def shli(op, a, b):
    return _shift(op, a, b, "shl")


@kernel("arith.shrui")
def shrui(op, a, b):
    return _shift(op, a, b, "shrui")


@kernel("arith.shrsi")
def shrsi(op, a, b):
    return _shift(op, a, b, "shrsi")


@kernel("arith.addui_extended")
def addui_extended(op, a, b):
    """Sum modulo 2^N and the carry-out bit."""
    el = result_element(op)
    bits = bits_of(el)
    x, y = as_unsigned(a, bits), as_unsigned(b, bits)
    with np.errstate(all="ignore"):
        s = as_unsigned(x + y, bits)
    carry = s < x
    return (wrap(s, el), np.asarray(carry, dtype=np.bool_))


@kernel("arith.subui_extended")
def subui_extended(op, a, b):
    """Difference modulo 2^N and the borrow-out bit."""
    el = result_element(op)
    bits = bits_of(el)
    x, y = as_unsigned(a, bits), as_unsigned(b, bits)
    with np.errstate(all="ignore"):
        d = x - y
    return (wrap(d, el), np.asarray(x < y, dtype=np.bool_))


def _mul_wide_unsigned(x, y):
    """Full 128-bit product of uint64 values as (low, high) uint64 words."""
    m32 = np.uint64(0xFFFFFFFF)
    s32 = np.uint64(32)
    x0, x1 = x & m32, x >> s32
    y0, y1 = y & m32, y >> s32
    with np.errstate(all="ignore"):
        p00 = x0 * y0
        p01 = x0 * y1
        p10 = x1 * y0
        p11 = x1 * y1
        mid = (p00 >> s32) + (p01 & m32) + (p10 & m32)
        low = (p00 & m32) | (mid << s32)
        high = p11 + (p01 >> s32) + (p10 >> s32) + (mid >> s32)
    return low, high


def _mul_extended(op, a, b, signed: bool):
    el = result_element(op)
    bits = bits_of(el)
    if bits <= 32:
        conv = as_signed if signed else as_unsigned
        with np.errstate(all="ignore"):
            p = conv(a, bits).astype(_I64) * conv(b, bits).astype(_I64)
        low = wrap(p, el)
        high = wrap(p >> np.int64(bits), el)
        return (low, high)
    x, y = as_unsigned(a, 64), as_unsigned(b, 64)
    low, high = _mul_wide_unsigned(x, y)
    if signed:
        with np.errstate(all="ignore"):
            high = high - np.where(as_signed(x, 64) < 0, y, np.uint64(0))
            high = high - np.where(as_signed(y, 64) < 0, x, np.uint64(0))
    return (wrap(low, el), wrap(high, el))


@kernel("arith.mului_extended")
def mului_extended(op, a, b):
    """Low and high halves of the double-width unsigned product."""
    return _mul_extended(op, a, b, False)


@kernel("arith.mulsi_extended")
def mulsi_extended(op, a, b):
    """Low and high halves of the double-width signed product."""
    return _mul_extended(op, a, b, True)


# --------------------------------------------------------------------------- #
# float arithmetic
# --------------------------------------------------------------------------- #


def _float_binary(name, fn):
    def k(op, a, b):
        dt = op.result_dtype(0)
        return (float_compute(fn, dt, a, b),)

    return kernel_of(k, name, doc=f"``{name}`` (MLIR arith dialect), IEEE-754 with round to nearest even.")


def ieee_minimum_number(x, y):
    """IEEE-754 2019 minimumNumber: a NaN operand loses, -0 < +0."""
    return order_zero_result(x, y, np.fmin(x, y), False)


def ieee_maximum_number(x, y):
    """IEEE-754 2019 maximumNumber: a NaN operand loses, -0 < +0."""
    return order_zero_result(x, y, np.fmax(x, y), True)


_float_binary("arith.addf", np.add)
_float_binary("arith.subf", np.subtract)
_float_binary("arith.mulf", np.multiply)
_float_binary("arith.divf", np.divide)
_float_binary("arith.remf", np.fmod)
_float_binary("arith.minimumf", ieee_minimum)
_float_binary("arith.maximumf", ieee_maximum)
_float_binary("arith.minnumf", ieee_minimum_number)
_float_binary("arith.maxnumf", ieee_maximum_number)
_float_binary("arith.minimumnumf", ieee_minimum_number)
_float_binary("arith.maximumnumf", ieee_maximum_number)


@kernel("arith.negf")
def negf(op, a):
    """Flips the sign bit (also of NaN and zero)."""
    return (np.asarray(-np.asarray(a), dtype=op.result_dtype(0)),)


# --------------------------------------------------------------------------- #
# comparisons and select
# --------------------------------------------------------------------------- #

# arith::CmpIPredicate
CMPI = {0: "eq", 1: "ne", 2: "slt", 3: "sle", 4: "sgt", 5: "sge",
        6: "ult", 7: "ule", 8: "ugt", 9: "uge"}
# arith::CmpFPredicate
CMPF = {0: "false", 1: "oeq", 2: "ogt", 3: "oge", 4: "olt", 5: "ole", 6: "one",
        7: "ord", 8: "ueq", 9: "ugt", 10: "uge", 11: "ult", 12: "ule", 13: "une",
        14: "uno", 15: "true"}

_ORDER = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
          "gt": np.greater, "ge": np.greater_equal}


def _predicate(op, table):
    p = op.attr("predicate")
    if isinstance(p, str):
        return p.strip().split()[-1] if p.strip() else p
    name = table.get(int(p)) if p is not None else None
    if name is None:
        raise op.unsupported(f"predicate {p!r}")
    return name


@kernel("arith.cmpi")
def cmpi(op, a, b):
    pred = _predicate(op, CMPI)
    bits = bits_of(operand_element(op, 0))
    if pred in ("eq", "ne"):
        x, y = as_unsigned(a, bits), as_unsigned(b, bits)
        f = _ORDER[pred]
    else:
        conv = as_signed if pred[0] == "s" else as_unsigned
        x, y = conv(a, bits), conv(b, bits)
        f = _ORDER[pred[1:]]
    return (np.asarray(f(x, y), dtype=np.bool_),)


@kernel("arith.cmpf")
def cmpf(op, a, b):
    pred = _predicate(op, CMPF)
    x, y = float_view(a), float_view(b)
    shape = _shape_of(x, y)
    if pred == "false":
        return (np.zeros(shape, dtype=np.bool_),)
    if pred == "true":
        return (np.ones(shape, dtype=np.bool_),)
    unordered = np.isnan(x) | np.isnan(y)
    if pred == "ord":
        r = ~unordered
    elif pred == "uno":
        r = unordered
    elif pred == "one":
        r = ~unordered & (x != y)
    elif pred == "une":
        r = unordered | (x != y)
    elif pred[0] == "o":
        r = ~unordered & _ORDER[pred[1:]](x, y)
    else:
        r = unordered | _ORDER[pred[1:]](x, y)
    return (np.asarray(np.broadcast_to(r, shape), dtype=np.bool_),)


@kernel("arith.select")
def select(op, cond, a, b):
    """Element-wise (tensor condition) or whole-value (scalar condition)."""
    dt = op.result_dtype(0)
    r = np.where(np.asarray(cond, dtype=np.bool_), np.asarray(a), np.asarray(b))
    return (np.asarray(r, dtype=dt),)


# --------------------------------------------------------------------------- #
# casts
# --------------------------------------------------------------------------- #


@kernel("arith.index_cast", "arith.extsi", "arith.trunci")
def index_cast(op, a):
    """Sign-extending (or truncating) integer width change."""
    src = operand_element(op)
    return (wrap(as_signed(a, bits_of(src)), result_element(op)),)


@kernel("arith.index_castui", "arith.extui")
def index_castui(op, a):
    """Zero-extending (or truncating) integer width change."""
    src = operand_element(op)
    return (wrap(as_unsigned(a, bits_of(src)), result_element(op)),)


@kernel("arith.extf", "arith.truncf", "arith.convertf")
def extf(op, a):
    """Float format change, rounding to nearest even."""
    dt = op.result_dtype(0)
    mode = op.attr("roundingmode")
    if mode is not None and str(mode) not in ("0", "to_nearest_even") and "nearest_even" not in str(mode):
        raise op.unsupported(f"rounding mode {mode}")
    return (to_float(a, dt),)


def _f64_to_small(x: np.ndarray, dt: np.dtype) -> np.ndarray:
    """f64 -> a format narrower than f32, rounding once (to nearest even).

    Rounds the f64 to f32 with round-to-odd (keep the sticky bit), which
    makes the second rounding to the small format exact.
    """
    with np.errstate(all="ignore"):
        f = x.astype(np.float32)
    back = f.astype(np.float64)
    inexact = (back != x) & np.isfinite(x) & np.isfinite(back)
    bits = f.view(np.uint32)
    odd_fix = inexact & ((bits & 1) == 0)
    # move one ulp toward x when the f32 rounding landed on an even pattern
    toward = np.where(np.abs(back) > np.abs(x), bits - 1, bits + 1).astype(np.uint32)
    bits = np.where(odd_fix, toward, bits)
    return np.asarray(bits.view(np.float32).astype(dt), dtype=dt)


@kernel("arith.sitofp")
def sitofp(op, a):
    dt = op.result_dtype(0)
    v = as_signed(a, bits_of(operand_element(op)))
    return (to_float(v, dt),)


@kernel("arith.uitofp")
def uitofp(op, a):
    dt = op.result_dtype(0)
    v = as_unsigned(a, bits_of(operand_element(op)))
    return (to_float(v, dt),)


_I64_LIMITS = (-9223372036854775808.0, 9223372036854774784.0)
_U64_LIMIT = 18446744073709549568.0


@kernel("arith.fptosi")
def fptosi(op, a):
    """Rounds toward zero; out-of-range values (poison) saturate, NaN -> 0."""
    el = result_element(op)
    with np.errstate(all="ignore"):
        v = np.trunc(np.asarray(a).astype(np.float64))
        v = np.nan_to_num(v, nan=0.0, posinf=_I64_LIMITS[1], neginf=_I64_LIMITS[0])
        v = np.clip(v, *_I64_LIMITS).astype(_I64)
    return (wrap(v, el),)


@kernel("arith.fptoui")
def fptoui(op, a):
    """Rounds toward zero; out-of-range values (poison) saturate, NaN -> 0."""
    el = result_element(op)
    with np.errstate(all="ignore"):
        v = np.trunc(np.asarray(a).astype(np.float64))
        v = np.nan_to_num(v, nan=0.0, posinf=_U64_LIMIT, neginf=0.0)
        v = np.clip(v, 0.0, _U64_LIMIT).astype(_U64)
    return (wrap(v, el),)


@kernel("arith.bitcast")
def bitcast(op, a):
    """Reinterprets the bits of each value as the result type."""
    src, dst = operand_element(op), result_element(op)
    x = np.asarray(a)
    if src.kind in ("int", "uint", "bool"):
        bits = as_unsigned(x, bits_of(src))
    else:
        bits = T.to_bits(x).astype(_U64).reshape(x.shape)
    if dst.kind in ("int", "uint", "bool"):
        return (wrap(bits, dst),)
    return (np.asarray(T.from_bits(bits, dst.dtype).reshape(x.shape), dtype=dst.dtype),)


@kernel("arith.flush_denormals")
def flush_denormals(op, a):
    """Replaces subnormal values by zero of the same sign."""
    dt = op.result_dtype(0)
    x = np.asarray(a)
    tiny = float(ml_dtypes.finfo(dt).smallest_normal) if not _is_std_float(dt) else float(np.finfo(dt).tiny)
    xf = float_view(x)
    sub = (xf != 0) & (np.abs(xf) < tiny)
    zero = np.where(np.signbit(xf), -0.0, 0.0).astype(dt)
    return (np.asarray(np.where(sub, zero, x), dtype=dt),)


_E8M0 = np.dtype(ml_dtypes.float8_e8m0fnu)


def _scale_in(scale, el, dt) -> np.ndarray:
    """The scale as ``f8E8M0FNU`` (truncated to it first if needed), extended
    to ``dt``."""
    s = np.asarray(scale)
    if s.dtype != _E8M0:
        s = to_float(s, _E8M0)
    return to_float(s, dt)


@kernel("arith.scaling_extf")
def scaling_extf(op, x, scale):
    """``mulf(extf(x), extf(truncf(scale to f8E8M0FNU)))`` in the result type."""
    dt = op.result_dtype(0)
    s = _scale_in(scale, operand_element(op, 1), dt)
    return (float_compute(np.multiply, dt, to_float(x, dt), s),)


@kernel("arith.scaling_truncf")
def scaling_truncf(op, x, scale):
    """``truncf(divf(x, extf(truncf(scale to f8E8M0FNU))))``; the division is
    in the input type."""
    mode = op.attr("roundingmode")
    if mode is not None and int(mode) != 0:
        raise op.unsupported(f"rounding mode {mode}")
    src = operand_element(op, 0).dtype
    s = _scale_in(scale, operand_element(op, 1), src)
    q = float_compute(np.divide, src, x, s)
    return (to_float(q, op.result_dtype(0)),)


@kernel("ub.poison")
def poison(op):
    """A poison value (any value is a valid refinement): zeros."""
    ty = op.result_type(0)
    if isinstance(ty, T.TensorType):
        if not ty.is_static:
            raise op.unsupported("poison of a dynamically shaped tensor")
        return (np.zeros(ty.shape, dtype=ty.dtype),)
    if isinstance(ty, T.ElementType):
        return (np.zeros((), dtype=ty.dtype),)
    raise op.unsupported(f"poison of type {ty}")
