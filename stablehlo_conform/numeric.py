"""Numeric helpers shared by the kernels and the oracle's maths (below both of them).

Floats narrower than ``f64`` are computed in ``f64`` (complex in
``complex128``) and rounded once into the result type. NumPy rounds
``f64 -> f16/f32`` directly, but ``ml_dtypes`` converts ``f64`` to ``bf16`` and
the f4/f6/f8 family through ``f32``, which can round twice; :func:`round_to`
avoids that by rounding to ``f32`` with round-to-odd first (exact for any
target with at most 22 significand bits). ``f8E8M0FNU`` (the powers of two
``2**-127 .. 2**127`` and NaN) is rounded directly from ``f64``:
``ml_dtypes`` rounds a value between ``2**-127`` and ``2**-126`` up to
``2**-126`` (it rounds the ``f32`` subnormal significand as if the type had
subnormals), while the nearest power of two is ``2**-127`` below
``1.5 * 2**-127``; see :func:`round_to_e8m0`.

Sub-byte integers (``i2``, ``i4``, ``ui2``, ``ui4``) are computed in ``int64``
and wrapped at their own width.
"""

from __future__ import annotations

from functools import lru_cache

import ml_dtypes
import numpy as np

from . import types as T

F64 = np.dtype(np.float64)
F32 = np.dtype(np.float32)
C128 = np.dtype(np.complex128)

NATIVE_FLOATS = (np.dtype(np.float16), F32, F64)


def native_float_pair(a, b) -> bool:
    """Both operands f16, f32 or f64 of one dtype: NumPy's own ufuncs and
    comparisons on them are exact, no widening needed."""
    dt = np.asarray(a).dtype
    return dt in NATIVE_FLOATS and np.asarray(b).dtype == dt

LONG_OK = np.finfo(np.longdouble).nmant >= 63
"""``np.longdouble`` has at least 64 significand bits (x87 extended or binary128): f64 results
computed in it are rounded once into f64."""


@lru_cache(maxsize=None)
def kind_of(dt: np.dtype) -> str:
    """``bool``, ``int``, ``uint``, ``float`` or ``complex`` for a value dtype."""
    dt = np.dtype(dt)
    try:
        return T.ElementType(T.name_of_dtype(dt)).kind
    except KeyError:
        if dt.kind == "b":
            return "bool"
        if dt.kind == "i":
            return "int"
        if dt.kind == "u":
            return "uint"
        if dt.kind == "c":
            return "complex"
        return "float"


@lru_cache(maxsize=None)
def bits_of(dt: np.dtype) -> int:
    dt = np.dtype(dt)
    try:
        return T.ElementType(T.name_of_dtype(dt)).bits
    except KeyError:
        return dt.itemsize * 8


def is_float(dt) -> bool:
    return kind_of(np.dtype(dt)) == "float"


def is_complex(dt) -> bool:
    return kind_of(np.dtype(dt)) == "complex"


def is_integer(dt) -> bool:
    return kind_of(np.dtype(dt)) in ("int", "uint")


def is_signed(dt) -> bool:
    return kind_of(np.dtype(dt)) == "int"


def is_subbyte_int(dt) -> bool:
    dt = np.dtype(dt)
    return is_integer(dt) and bits_of(dt) < 8


def out(x, dt) -> np.ndarray:
    """``x`` as an ndarray of exactly ``dt`` (0-d stays a 0-d array)."""
    dt = np.dtype(dt)
    if isinstance(x, np.ndarray) and x.dtype == dt:
        return x
    return np.asarray(x).astype(dt)


# --------------------------------------------------------------------------- #
# floats
# --------------------------------------------------------------------------- #

def make_complex(re, im, dtype=C128) -> np.ndarray:
    """The complex array with parts ``re`` and ``im`` (broadcast), assembled
    without arithmetic: ``re + 1j * im`` would turn ``-0`` parts into ``+0``
    and an infinite ``im`` into a NaN real part (``0 * inf``)."""
    re, im = np.broadcast_arrays(np.asarray(re), np.asarray(im))
    r = np.empty(re.shape, dtype=dtype)
    r.real = re
    r.imag = im
    return r


def positive_underflow(r, positive) -> np.ndarray:
    """``r`` (f64 values of a function) with the zeros where the value is known to be positive
    (``positive``) replaced by the smallest f64 subnormal: an intermediate that rounds to +0 in
    the types with a zero, and to ``2**-127`` in ``f8E8M0FNU``, which has none (for a result type
    narrower than f64 only)."""
    return np.where((r == 0) & positive, 5e-324, r)


def two_prod(a, b):
    """``(p, e)`` with ``p = fl(a * b)`` and ``p + e = a * b`` exactly (Dekker;
    f64 operands whose product neither overflows nor underflows)."""
    p = a * b
    ah, al = _split_half(a)
    bh, bl = _split_half(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def two_sum(a, b):
    """``(s, e)`` with ``s = fl(a + b)`` and ``s + e = a + b`` exactly (Knuth; any float type,
    no overflow)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _split_half(a):
    c = 134217729.0 * a  # 2^27 + 1: the high 26 bits and the rest
    hi = c - (c - a)
    return hi, a - hi


def wide(x: np.ndarray) -> np.ndarray:
    """Float -> f64, complex -> complex128, exactly."""
    x = np.asarray(x)
    k = kind_of(x.dtype)
    if k == "complex":
        return x.astype(C128)
    with np.errstate(invalid="ignore"):  # a signaling NaN (ml_dtypes: any NaN) is flagged as an invalid cast
        return x.astype(F64) if x.dtype in NATIVE_FLOATS else x.astype(F32).astype(F64)


def _f64_to_f32_odd(x: np.ndarray) -> np.ndarray:
    """Round f64 to f32 with round-to-odd (sticky) for inexact results."""
    with np.errstate(all="ignore"):
        f = x.astype(F32)
        back = f.astype(F64)
        inexact = (back != x) & ~np.isnan(x)
        if not inexact.any():
            return f
        # truncate toward zero, then force the last significand bit to 1
        too_big = np.abs(back) > np.abs(x)
        f = np.where(inexact & too_big, np.nextafter(f, np.float32(0)), f)
        bits = f.view(np.uint32)
        bits = np.where(inexact, bits | np.uint32(1), bits)
        return bits.astype(np.uint32).view(F32)


def round_to(x, dt) -> np.ndarray:
    """Round an f64/complex128 (or exact narrower) array once into ``dt``."""
    with np.errstate(all="ignore"):
        return _round_to(np.asarray(x), np.dtype(dt))


E8M0 = np.dtype(ml_dtypes.float8_e8m0fnu)


def round_to_e8m0(x) -> np.ndarray:
    """Round real values (exact in f64) to nearest ``f8E8M0FNU``: ``2**k`` with
    ``k = e + (m >= 1.5)`` for ``x = m * 2**e``, ``1 <= m < 2`` (a tie rounds
    up, to the even significand, as for the normal values); a positive value
    below ``2**-127`` gives ``2**-127`` (the type has no zero), and zero,
    negative values, NaN and values rounding above ``2**127`` give NaN (the
    type has no sign and no infinity), as ``ml_dtypes`` converts them."""
    x = np.asarray(x, dtype=F64)
    with np.errstate(all="ignore"):
        ok = np.isfinite(x) & (x > 0)
        m, e = np.frexp(np.where(ok, x, 1.0))  # x = m * 2**e, 0.5 <= m < 1
        k = np.maximum(e.astype(np.int64) - 1 + (m >= 0.75), -127)
        ok &= k <= 127
        r = np.where(ok, np.ldexp(1.0, np.clip(k, -127, 127).astype(np.int32)), np.nan)
        return r.astype(E8M0)


def _round_to(x: np.ndarray, dt: np.dtype) -> np.ndarray:
    k = kind_of(dt)
    if k == "complex":
        return x.astype(dt)
    if x.dtype.kind == "c":
        x = x.real
    if dt in NATIVE_FLOATS:
        return x.astype(dt)
    if dt == E8M0 and x.dtype.kind == "f":
        return round_to_e8m0(x.astype(F64))
    if k == "float" and x.dtype == F64:
        return _f64_to_f32_odd(x).astype(dt)
    return x.astype(dt)


@lru_cache(maxsize=None)
def significand_and_emin(dt: np.dtype) -> tuple[int, int]:
    """(significand bits with the leading one, exponent of the smallest normal
    number) of a float dtype."""
    dt = np.dtype(dt)
    info = np.finfo(dt) if dt in NATIVE_FLOATS else ml_dtypes.finfo(dt)
    return int(info.nmant) + 1, int(info.minexp)


def near_midpoint(r: np.ndarray, dt, f64_ulps: int = 4) -> np.ndarray:
    """Mask of the f64 values ``r`` within ``f64_ulps`` f64 ULPs of a rounding
    midpoint of the narrower float type ``dt`` (overflow threshold included).

    Where ``r`` approximates a value to within that many f64 ULPs, rounding
    ``r`` into ``dt`` can differ from rounding the value itself only there
    (double rounding).

    A finite ``r`` of magnitude at least the smallest normal number of ``dt``
    drops the low ``d = 53 - p`` bits of its f64 significand when rounded into
    ``dt`` (``p`` significand bits), so it lies on a midpoint when those bits
    are ``100...0`` and within ``k`` f64 ULPs of one when they differ from that
    pattern by at most ``k`` as an integer: one add, one and and one compare on
    the bit patterns. Zeros are near no midpoint. The other elements (subnormal
    range of ``dt``, infinities, NaN) are few; they take
    :func:`near_midpoint_general`, which the bit test equals element for element
    where both apply."""
    consts = _midpoint_constants(np.dtype(dt), f64_ulps)
    r = np.asarray(r, dtype=F64)
    if consts is None:
        return near_midpoint_general(r, dt, f64_ulps)
    shift, low, width, lo, span = consts
    flat = r.reshape(-1)
    bits = flat.view(np.uint64)
    work = np.add(bits, shift)
    work &= low
    mask = work <= width
    # finite with |r| >= 2**emin: the sign shifted out, one unsigned range test
    np.left_shift(bits, _ONE, out=work)
    work -= lo
    regular = work < span
    if not regular.all():
        mask &= regular
        other = np.flatnonzero(~regular)
        other = other[flat[other] != 0]  # a zero is near no midpoint (a masked softmax's exp: half zeros)
        mask[other] = near_midpoint_general(flat[other], dt, f64_ulps)
    return mask.reshape(r.shape)


_ONE = np.uint64(1)


def may_be_near_midpoint(r: np.ndarray, dt, f64_ulps: int = 4) -> bool:
    """False when no element of :func:`near_midpoint` ``(r, dt, f64_ulps)`` is true; True
    where some may be (see :func:`midpoint_screen`)."""
    screen = midpoint_screen(np.dtype(dt), f64_ulps)
    return True if screen is None or r.__class__ is not np.ndarray or r.dtype != F64 else screen(r)


@lru_cache(maxsize=None)
def midpoint_screen(dt: np.dtype, f64_ulps: int = 4):
    """``screen(r) -> bool`` for f64 arrays ``r``: False when no element of
    :func:`near_midpoint` ``(r, dt, f64_ulps)`` is true, found with two minimums over the bit
    patterns: of its bit test's window, and of the magnitudes (infinities and NaN are never
    near a midpoint, so only magnitudes below ``2**emin`` of ``dt`` leave the range the bit
    test covers); True where some may be (an element in the window, or a zero or a magnitude
    below ``2**emin``, which :func:`near_midpoint` decides the long way). None where
    :func:`near_midpoint` has no bit test for ``dt``."""
    consts = _midpoint_constants(np.dtype(dt), f64_ulps)
    if consts is None:
        return None
    lo = consts[3]
    left_shift, least = np.left_shift, np.minimum.reduce

    def screen(r: np.ndarray) -> bool:
        if r.size == 0:
            return False
        bits = r.view(np.uint64)
        if not bits.ndim:
            bits = bits.reshape(1)  # ufuncs of 0-d arrays return scalars, which take no out=
        work = np.empty(bits.shape, np.uint64)
        if _in_window(bits, consts, work):
            return True
        left_shift(bits, _ONE, out=work)  # the magnitude's bits, shifted left by one
        return bool(least(work, axis=None) < lo)

    return screen


def _in_window(bits: np.ndarray, consts: tuple, work: np.ndarray) -> bool:
    """The bit test of :func:`near_midpoint` over the f64 bit patterns ``bits``, written into
    ``work`` (``bits`` itself, or an array of its shape): whether some pattern's low bits lie
    in the window around the midpoint pattern (its least low bits, offset, at most its
    width)."""
    shift, low, width = consts[:3]
    np.add(bits, shift, out=work)
    np.bitwise_and(work, low, out=work)
    return bool(np.minimum.reduce(work, axis=None) <= width)


@lru_cache(maxsize=None)
def rounded_screen(dt: np.dtype, f64_ulps: int = 4):
    """``screen(r, rounded) -> bool``: :func:`midpoint_screen`'s question about the f64 values
    ``r`` (a C-contiguous array, which the caller owns and gives up: the screen overwrites
    it), given ``rounded``, ``r`` cast into ``dt`` (f16 or f32, C-contiguous,
    of ``r``'s shape). False when no element of :func:`near_midpoint` ``(r, dt, f64_ulps)`` is
    true; True where some may be. None where :func:`near_midpoint` has no bit test for ``dt``.

    The bit test is :func:`midpoint_screen`'s, run in ``r``'s own buffer (no temporary). Its
    range test (a zero, or a magnitude below ``2**emin`` of ``dt``, which the bit test does not
    cover) is made on ``rounded``, which has half or a quarter of the bytes: rounding is
    monotonic and ``2**emin`` is a value of ``dt``, so each such element of ``r`` rounds to a
    magnitude of at most ``2**emin``. The screen first asks whether the least rounded value
    exceeds ``2**emin`` (one pass: an ``exp`` or a ``logistic`` has no negative value), then
    whether the least rounded magnitude does (a NaN is no magnitude below it, as in
    :func:`midpoint_screen`). So it answers True wherever :func:`midpoint_screen` does, and on
    a few arrays more (an element rounded to ``2**emin`` exactly), where the caller then takes
    the long way."""
    dt = np.dtype(dt)
    consts = _midpoint_constants(dt, f64_ulps)
    ut = _SIGN_BITS.get(dt)
    if consts is None or ut is None:  # f64 has no bit test; bf16 and the f8 types no sign-bit view
        return None
    tiny = dt.type(np.finfo(dt).tiny)
    edge = ut(int(np.array(tiny, dt).view(ut)) << 1)  # 2**emin's magnitude bits, shifted left by one
    one = ut(1)
    left_shift, least = np.left_shift, np.minimum.reduce

    def screen(r: np.ndarray, rounded: np.ndarray) -> bool:
        if r.size == 0:
            return False
        bits = r.reshape(-1).view(np.uint64)
        if _in_window(bits, consts, bits):
            return True
        if least(rounded, axis=None) > tiny:
            return False
        narrow = rounded.reshape(-1).view(ut)
        mags = bits.view(ut)[:narrow.size]  # r's buffer once more, as scratch
        left_shift(narrow, one, out=mags)  # the magnitudes' bits, shifted left by one
        return bool(least(mags) <= edge)

    return screen


@lru_cache(maxsize=None)
def _midpoint_constants(dt: np.dtype, f64_ulps: int):
    """The bit-pattern constants of :func:`near_midpoint` (None where the
    dropped bits are too few for its test): the offset that moves the
    midpoint pattern of the low ``d`` bits to ``f64_ulps``, the mask of those
    bits, the width ``2 * f64_ulps`` of the window, and the bounds of the
    finite normal range of ``dt`` shifted left by one."""
    p, emin = significand_and_emin(dt)
    d = 53 - p
    if d < 2 or 2 * f64_ulps >= 1 << (d - 1):
        return None
    lo = (emin + 1023) << 53
    return (np.uint64((f64_ulps - (1 << (d - 1))) % (1 << 64)), np.uint64((1 << d) - 1),
            np.uint64(2 * f64_ulps), np.uint64(lo), np.uint64((0x7FF << 53) - lo))


def near_midpoint_general(r: np.ndarray, dt, f64_ulps: int = 4) -> np.ndarray:
    """:func:`near_midpoint` by scaling: ``r`` is scaled by a power of two so
    that one ULP of ``dt`` (at ``r``'s exponent, or the subnormal ULP below the
    normal range) becomes 1, and the fraction of the scaled value is compared
    with 1/2 in units of its own f64 spacing."""
    p, emin = significand_and_emin(dt)
    r = np.asarray(r, dtype=F64)
    with np.errstate(all="ignore"):
        ok = np.isfinite(r) & (r != 0)
        safe = np.where(ok, r, 1.0)
        _, e = np.frexp(safe)
        q = np.maximum(e.astype(np.int64) - 1, emin) - (p - 1)
        s = np.abs(np.ldexp(safe, (-q).astype(np.int32)))
        frac = s - np.floor(s)
        return ok & (np.abs(frac - 0.5) <= f64_ulps * np.spacing(s))


_SIGN_BITS = {np.dtype(np.float16): np.uint16, F32: np.uint32, F64: np.uint64}


def order_zero_result(x, y, r, high: bool) -> np.ndarray:
    """``r`` = ``np.maximum``/``np.fmax`` (``high``) or ``np.minimum``/``np.fmin``
    of the native floats ``x`` and ``y``, with zeros ordered as IEEE-754
    ``maximum``/``minimum`` order them: -0 < +0.

    NumPy may return either zero when the operands are ``+0`` and ``-0``; it
    is right everywhere else. Its result is one of the operands, so a wrong
    element is a zero of the sign the other operand does not have: ``-0``
    (maximum) or ``+0`` (minimum) where an operand is ``+0`` (``-0``). One
    compare of ``r``'s bit patterns finds the candidates (most arrays have
    none: a ReLU's ``-0`` inputs are rare), and among them the elements with
    an operand of the other sign are set to it."""
    r = np.asarray(r)
    ut = _SIGN_BITS[r.dtype]
    sign = ut(1 << (8 * r.dtype.itemsize - 1))
    wrong, right = (sign, ut(0)) if high else (ut(0), sign)
    fix = r.view(ut) == wrong
    if not fix.any():
        return r
    xb = np.asarray(x, dtype=r.dtype).view(ut)
    yb = np.asarray(y, dtype=r.dtype).view(ut)
    fix &= (xb == right) | (yb == right)
    if not fix.any():
        return r
    return np.where(fix, right.view(r.dtype), r)


def ieee_maximum(x, y) -> np.ndarray:
    """IEEE-754 2019 maximum of native floats: NaN-propagating (the first
    NaN operand, as ``np.maximum``), -0 < +0."""
    return order_zero_result(x, y, np.maximum(x, y), True)


def ieee_minimum(x, y) -> np.ndarray:
    """IEEE-754 2019 minimum of native floats: NaN-propagating, -0 < +0."""
    return order_zero_result(x, y, np.minimum(x, y), False)


@lru_cache(maxsize=None)
def float_format(dt: np.dtype) -> tuple[int, int]:
    """(exponent bits, explicit mantissa bits) of a float dtype."""
    dt = np.dtype(dt)
    info = np.finfo(dt) if dt in NATIVE_FLOATS else ml_dtypes.finfo(dt)
    nbits = bits_of(dt)
    m = int(info.nmant)
    e = nbits - m - 1
    if dt == E8M0:
        e = 8
    return e, m


def uint_of_bits(nbits: int):
    return {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}.get(nbits)


def float_bits(x: np.ndarray) -> np.ndarray:
    """Bit patterns of a float array as uint64 (low ``bits`` bits used)."""
    x = np.asarray(x)
    b = T.to_bits(x).reshape(x.shape)
    return b.astype(np.uint64) & np.uint64((1 << bits_of(x.dtype)) - 1)


def float_from_bits(b: np.ndarray, dt: np.dtype) -> np.ndarray:
    dt = np.dtype(dt)
    cont = T.bits_container(dt)
    b = np.asarray(b)
    return np.ascontiguousarray(b.astype(cont)).view(dt).reshape(b.shape)


# --------------------------------------------------------------------------- #
# integers
# --------------------------------------------------------------------------- #

def int_limits(dt) -> tuple[int, int]:
    dt = np.dtype(dt)
    b = bits_of(dt)
    if is_signed(dt):
        return -(1 << (b - 1)), (1 << (b - 1)) - 1
    if kind_of(dt) == "bool":
        return 0, 1
    return 0, (1 << b) - 1


def to_i64(x: np.ndarray) -> np.ndarray:
    """Integer/bool array -> int64 (uint64 keeps its bit pattern)."""
    x = np.asarray(x)
    with np.errstate(all="ignore"):
        return x.astype(np.int64)


def wrap_i64(v: np.ndarray, dt) -> np.ndarray:
    """Wrap int64 values (two's complement) into integer type ``dt``."""
    dt = np.dtype(dt)
    b = bits_of(dt)
    v = np.asarray(v, dtype=np.int64)
    with np.errstate(all="ignore"):
        if b >= 64:
            return v.astype(dt)
        mask = np.int64((1 << b) - 1)
        u = v & mask
        if is_signed(dt):
            half = np.int64(1 << (b - 1))
            u = np.where(u >= half, u - (mask + 1), u)
        return u.astype(dt)


def unsigned_pattern(x: np.ndarray) -> np.ndarray:
    """Two's-complement bit pattern of an integer array as uint64."""
    x = np.asarray(x)
    b = bits_of(x.dtype)
    with np.errstate(all="ignore"):
        v = to_i64(x).astype(np.uint64)
        if b < 64:
            v = v & np.uint64((1 << b) - 1)
    return v


def from_unsigned_pattern(u: np.ndarray, dt) -> np.ndarray:
    """Inverse of :func:`unsigned_pattern`."""
    dt = np.dtype(dt)
    b = bits_of(dt)
    u = np.asarray(u, dtype=np.uint64)
    if b == 64:
        return u.astype(dt)
    with np.errstate(all="ignore"):
        return wrap_i64((u & np.uint64((1 << b) - 1)).astype(np.int64), dt)


# --------------------------------------------------------------------------- #
# complex products and quotients in complex128 (the element-wise kernels and the oracle)
# --------------------------------------------------------------------------- #


_W = np.longdouble if LONG_OK else np.float64
_CW = np.clongdouble if LONG_OK else np.complex128


def in_f64(f):
    """``f`` (a NumPy function of real or complex arrays) evaluated in extended precision
    (``np.longdouble`` where :data:`LONG_OK`, else f64) and rounded once into f64 (each part
    into f64)."""
    def g(*ws):
        with np.errstate(all="ignore"):
            args = [np.asarray(w) for w in ws]
            cplx = any(a.dtype.kind == "c" for a in args)
            r = f(*[a.astype(_CW if cplx else _W) for a in args])
            return np.asarray(r).astype(np.complex128 if cplx else np.float64)

    g.__name__ = getattr(f, "__name__", "f")
    return g


_TWO_PROD_RANGE = (2.0 ** -450, 2.0 ** 450)


def complex128_multiply(a, b, fallback=None):
    """``(ac - bd) + (ad + bc) i`` for complex128 operands, each part rounded once: every
    product split exactly into two f64 numbers (:func:`stablehlo_conform.numeric.two_prod`), the high halves and
    the low halves summed apart in extended precision, then the two sums, rounded once with the
    rounding error of that last sum breaking ties (correctly rounded unless the extended sums of
    the halves themselves round, which takes products 2**11 apart in magnitude, far from any
    cancellation). Operands with a zero, infinite, NaN or
    extreme part are multiplied in extended precision as complex numbers (IEEE signs of zero,
    C99 infinities), or by ``fallback(a, b)``."""
    a, b = np.broadcast_arrays(np.asarray(a, np.complex128), np.asarray(b, np.complex128))
    r = np.asarray((fallback or in_f64(np.multiply))(a, b))
    parts = (a.real, a.imag, b.real, b.imag)
    ok = _two_prod_ok(*parts)
    if not ok.any():
        return r
    ar, ai, br, bi = (np.where(ok, p, 1.0) for p in parts)
    with np.errstate(all="ignore"):
        re = _round_once(*_sum_of_products(ar, br, ai, bi, -1))
        im = _round_once(*_sum_of_products(ar, bi, ai, br, 1))
    return np.where(ok, make_complex(re, im), r)


def _two_prod_ok(*parts) -> np.ndarray:
    """Where every part lies in :data:`_TWO_PROD_RANGE` (zeros, infinities and NaN do not)."""
    lo, hi = _TWO_PROD_RANGE
    return np.logical_and.reduce([(np.abs(p) >= lo) & (np.abs(p) <= hi) for p in parts])




def _sum_of_products(x1, y1, x2, y2, sign):
    """``x1 y1 + sign x2 y2`` of f64 values in range (:func:`_two_prod_ok`) from the exact halves
    of both products (:func:`stablehlo_conform.numeric.two_prod`): the high halves and the low halves summed apart
    in extended precision, then the two sums. Returns the extended sum and its rounding error."""
    p1, e1 = two_prod(x1, y1)
    p2, e2 = two_prod(x2, y2)
    return two_sum(p1.astype(_W) + sign * p2.astype(_W), e1.astype(_W) + sign * e2.astype(_W))


def _round_once(total, err):
    """The extended ``total`` rounded into f64, its rounding error ``err`` breaking ties: where it
    lies exactly on an f64 midpoint (``(1 + 2**-52)**2 - 9``), the error says which side the value
    is on."""
    r = total.astype(np.float64)
    d = total - r.astype(_W)
    other = np.nextafter(r, np.where(d > 0, np.inf, -np.inf))
    tie = (d != 0) & (total == (r.astype(_W) + other.astype(_W)) / 2) & (np.sign(err) == np.sign(d))
    return np.where(tie, other, r)


def _complex128_quotient(a, b, q):
    """``(a conj(b)) / |b|**2`` of complex128 ``a`` and ``b`` (broadcast), rounded once into f64
    parts, where the parts are finite and ``b`` is not 0 (``q`` elsewhere). Where every part lies
    in :data:`_TWO_PROD_RANGE`, the numerator's parts and the denominator come from the exact
    halves of their products (:func:`_sum_of_products`: the numerator's sums keep their low bits
    where they cancel); elsewhere from products in extended precision (no overflow or underflow
    for finite f64 parts). Both are divided in extended precision."""
    halves = _two_prod_ok(a.real, a.imag, b.real, b.imag)
    if not halves.all():
        ar, ai = a.real.astype(np.longdouble), a.imag.astype(np.longdouble)
        br, bi = b.real.astype(np.longdouble), b.imag.astype(np.longdouble)
        den = br * br + bi * bi
        ok = np.isfinite(ar) & np.isfinite(ai) & np.isfinite(den) & (den != 0)
        safe = np.where(ok, den, 1)
        re = ((ar * br + ai * bi) / safe).astype(np.float64)
        im = ((ai * br - ar * bi) / safe).astype(np.float64)
        q = np.where(ok, make_complex(re, im), q)
    if not halves.any():
        return q
    ar, ai, br, bi = (np.where(halves, p, 1.0) for p in (a.real, a.imag, b.real, b.imag))
    den = _sum_of_products(br, br, bi, bi, 1)[0]
    re = (_sum_of_products(ar, br, ai, bi, 1)[0] / den).astype(np.float64)
    im = (_sum_of_products(ai, br, ar, bi, -1)[0] / den).astype(np.float64)
    return np.where(halves, make_complex(re, im), q)


def complex_divide(a, b):
    """Complex division that keeps infinities (C99 Annex G recovery):
    finite / 0 and inf / finite are infinite, finite / inf is zero.

    Results are assembled from their parts (:func:`make_complex`), never as
    ``re + 1j * im``, which loses the sign of zero parts and turns an
    infinite part into NaN."""
    with np.errstate(all="ignore"):
        q = np.divide(a, b)
        if LONG_OK and q.dtype == np.dtype(np.complex128):
            q = _complex128_quotient(*np.broadcast_arrays(a, b), q)
        bad = np.isnan(q.real) & np.isnan(q.imag)
        if not bad.any():
            return q
        a, b = np.broadcast_arrays(a, b)
        ar, ai, br, bi = a.real, a.imag, b.real, b.imag
        a_nan = np.isnan(ar) | np.isnan(ai)
        b_nan = np.isnan(br) | np.isnan(bi)
        a_inf = np.isinf(ar) | np.isinf(ai)
        b_inf = np.isinf(br) | np.isinf(bi)
        b_zero = (br == 0) & (bi == 0)
        # x / 0 with x non-zero and not NaN
        case1 = bad & b_zero & ~a_nan & ((ar != 0) | (ai != 0))
        inf_b = np.copysign(np.inf, br)
        r1 = make_complex(inf_b * ar, inf_b * ai)
        # inf / finite
        case2 = bad & a_inf & ~b_inf & ~b_nan & ~case1
        ar2 = np.copysign(np.where(np.isinf(ar), 1.0, 0.0), ar)
        ai2 = np.copysign(np.where(np.isinf(ai), 1.0, 0.0), ai)
        r2 = make_complex(np.inf * (ar2 * br + ai2 * bi), np.inf * (ai2 * br - ar2 * bi))
        # finite / inf
        case3 = bad & b_inf & ~a_inf & ~a_nan
        br3 = np.copysign(np.where(np.isinf(br), 1.0, 0.0), br)
        bi3 = np.copysign(np.where(np.isinf(bi), 1.0, 0.0), bi)
        r3 = make_complex(0.0 * (ar * br3 + ai * bi3), 0.0 * (ai * br3 - ar * bi3))
        q = np.where(case1, r1, np.where(case2, r2, np.where(case3, r3, q)))
    return q
