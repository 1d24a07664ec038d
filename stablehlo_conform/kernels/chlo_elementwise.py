"""Element-wise CHLO ops and the ``chlo.broadcast_*`` family.

CHLO (spec.md#chlo) ops decompose into StableHLO; their values here are the
mathematical functions they approximate, computed in f64 (complex128) with
SciPy/NumPy and rounded once into the result type:

- ``acos``, ``acosh``, ``asin``, ``asinh``, ``atan``, ``atanh``, ``cosh``,
  ``sinh``, ``tan``: NumPy (complex branch cuts as NumPy).
- ``bessel_i0e``, ``bessel_i1e``, ``digamma``, ``erf``, ``erfc``,
  ``erf_inv``, ``lgamma``, ``igamma``, ``igammac``, ``polygamma``, ``zeta``:
  ``scipy.special``; the odd ``bessel_i1e`` and ``erf_inv`` keep the sign of
  a zero argument; ``lgamma(+-inf) = +inf``; ``digamma`` and ``lgamma`` of a
  negative argument near a root (result below 1/8 in magnitude, where the
  reflection formula cancels) are evaluated exactly
  (:mod:`stablehlo_conform.oracle`). Results on a rounding midpoint of a
  narrower type are resolved exactly too (see
  :func:`.elementwise.float_fn`). ``digamma`` is -inf at 0 and NaN at negative integers;
  ``polygamma(n, x)`` is NaN unless ``n`` is a non-negative integer, and for
  ``n >= 1`` +inf at a pole for odd ``n``, NaN for even ``n``; of a negative
  ``x`` it is three Hurwitz zetas of positive arguments (SciPy's ``polygamma``
  uses ``zeta(n + 1, x)`` of the negative ``x`` itself, which is not the
  series), and where that cancels, an order above 170 (``n!`` overflows f64) or
  a ``zeta(n + 1, x)`` below the f64 normal range, it is evaluated exactly;
  ``igamma``/``igammac`` are NaN for ``a <= 0`` or ``x < 0``. Where SciPy's
  ``erfc`` underflows to 0 (``x > 26.6``) the f64 intermediate is the
  smallest subnormal instead (the value is positive: ``f8E8M0FNU``, which
  has no zero, gets ``2**-127``).

**f64 results** are computed in extended precision (``np.longdouble``, 64
significand bits on x87) and rounded once: the elementary functions with
the C library's ``acosl``, ``sinhl``, ...; ``bessel_i1e``, ``digamma``,
``erf``, ``erfc``, ``erf_inv`` and ``lgamma`` with the series and continued
fractions of :mod:`._extended` (``erf_inv``: one Newton step from SciPy's
value). Their error is below ``0.5 + 2**-8`` ULP, so a result is correctly
rounded unless the value lies that close to a rounding midpoint (measured
over 10**5 samples plus edge values: at most 0.5015 ULP for the elementary
functions and ``bessel_i1e``, 0.505 for ``digamma``, ``erf``, ``erf_inv``,
``erfc`` and ``lgamma``, where the summation of a few dozen terms adds a few
``2**-64``). ``bessel_i0e``, ``igamma``, ``igammac``, ``polygamma`` and
``zeta`` are SciPy's f64 functions, with no wider implementation here
(``zeta`` measured up to 344 ULP over 2000 samples for large ``x``, where
``q ** -x`` in f64 loses ``x log q`` ULPs; ``polygamma`` of order ``n >= 1``
measured up to 3.1 ULP over 2000 samples; ``polygamma(0, x)`` is ``digamma``
above). **complex128 results** of the elementary functions are NumPy's
complex functions evaluated in ``np.clongdouble`` and rounded once per part
(measured over 2 * 10**4 samples plus edge values: at most 1 ULP per part,
on parts much smaller than the other part, whose relative accuracy the
complex functions do not guarantee, and on products rounded twice, once to
the 64 bits of ``np.longdouble``).
- ``next_after(x, y)``: the neighbour of ``x`` toward ``y`` in the element
  type (NaN if either is NaN, ``y`` if ``x == y``).
- ``is_inf``, ``is_neg_inf``, ``is_pos_inf``: classification.
- ``mulhi``: the high half of the double-width product (signed or
  unsigned by the element type).
- ``square``: ``x * x`` (complex: ``(re - im)(re + im) + 2 re im i``);
  ``conj``: complex conjugate (identity on reals).

``chlo.broadcast_<op>(lhs, rhs)`` applies the StableHLO op after
broadcasting: with ``broadcast_dimensions`` the lower-rank operand's
dimension ``i`` maps to result dimension ``broadcast_dimensions[i]``;
without it operands are aligned on their trailing dimensions (NumPy rules).
"""

from __future__ import annotations

import numpy as np
from ._lazy import special as sc

from ..numeric import (
    C128,
    F64,
    bits_of,
    float_bits,
    float_from_bits,
    is_signed,
    kind_of,
    make_complex,
    out,
    positive_underflow,
    to_i64,
    unsigned_pattern,
    from_unsigned_pattern,
    wide,
    wrap_i64,
)
from . import _extended as X
from . import bitwise as B
from . import elementwise as E
from . import float_math as M
from .comparison import compare_values, enum_value
from ..opinfo import EXACT
from .registry import kernel, kernel_of

_U64 = np.uint64


def _chlo_unary(name, f, refine=None, f64=None):
    """``f`` on f64 (complex128) values, rounded once; on an f64 result type ``f64`` instead,
    and on complex128 ``f`` in extended precision (default ``f64``: that too,
    :func:`._extended.in_f64`). Without ``refine``, an f32 tensor takes the screened fast path
    of :func:`.float_math.rounded_once_fast` (``f`` in f64, rounded once, the kernel's own
    function for a block near a rounding midpoint), and a 16- or 8-bit float tensor reads the
    table of the kernel's function."""
    complex_f64 = f64 is None
    f64 = f64 or X.in_f64(f)

    def g(dt, x):
        wide_f = f64 if np.dtype(dt) == F64 or (np.dtype(dt) == C128 and complex_f64) else f
        return E.float_fn(wide_f, dt, x, op=name, refine=refine)

    g.__name__ = name.split(".")[-1]
    # the fast path (screened f32, tables of narrower floats) computes float_fn's value without refine only
    return E.unary(name, fast=M.rounded_once_fast(f, g) if refine is None else None)(g)


def _odd(f):
    """``f`` with ``f(+-0) = +-0`` (SciPy gives +0 for -0 in ``erfinv``/``i1e``)."""
    def g(w):
        return np.where(w == 0, w, f(w))

    return g


def _digamma(w):
    r = sc.digamma(w)
    r = np.where((w < 0) & (w == np.floor(w)), np.nan, r)
    return np.where(w == 0, -np.inf, r)


def _digamma_f64(w):
    return np.where(w == 0, -np.inf, X.digamma(w).astype(F64))


def _erfc(w):
    """SciPy's ``erfc``; where it underflows to 0 (``x > 26.6``), the smallest f64 subnormal
    instead: the value is positive, which rounds to +0 in the types with a zero and to
    ``2**-127`` in ``f8E8M0FNU``, which has none."""
    return positive_underflow(sc.erfc(w), w < np.inf)


def _erf_inv_f64(w):
    return X.erf_inv(w, sc.erfinv(w)).astype(F64)


def _near_negative_root(w, r):
    """Where SciPy's f64 ``digamma``/``lgamma`` of a negative argument is small
    (near one of the roots): the reflection formula cancels there, and the
    value is evaluated exactly instead."""
    return (w < 0) & (np.abs(r) < 0.125) & np.isfinite(w)


def _lgamma(w):
    """``log|gamma(w)|``; +inf at the poles and at +-inf."""
    return np.where(np.isinf(w), np.inf, sc.gammaln(w))


def _igamma(a, x):
    r = sc.gammainc(a, x)
    bad = (a <= 0) | (x < 0) | np.isnan(a) | np.isnan(x)
    return np.where(bad, np.nan, r)


def _igammac(a, x):
    r = sc.gammaincc(a, x)
    bad = (a <= 0) | (x < 0) | np.isnan(a) | np.isnan(x)
    return np.where(bad, np.nan, r)


# the largest order whose n! is a finite f64
_MAX_F64_ORDER = 170


def _polygamma(n, x):
    """``polygamma(n, x)``: ``digamma`` for ``n = 0``; SciPy's ``(-1)**(n+1) n! zeta(n+1, x)`` for
    ``x > 0``; for ``x < 0`` (not an integer) :func:`_polygamma_negative` (SciPy's Hurwitz zeta
    of a negative ``q`` is not the sum the formula needs). An order above 170, whose ``n!``
    overflows f64, is left NaN here and evaluated exactly (:func:`_polygamma_refine`)."""
    ok = (n >= 0) & (n == np.floor(n)) & (n < np.inf)
    nn = np.where(ok & (n <= _MAX_F64_ORDER), n, 0)
    r = np.where(nn == 0, sc.digamma(x), sc.polygamma(nn.astype(np.int64), x))
    r = np.where((nn >= 1) & (x < 0) & (x != np.floor(x)), _polygamma_negative(nn, x)[0], r)
    # the poles: digamma NaN at a negative integer; order n >= 1: +inf for odd n (every term
    # positive), NaN for even n (the nearest term changes sign)
    pole = (x <= 0) & (x == np.floor(x)) & (x > -np.inf)
    r = np.where((nn >= 1) & pole, np.where(np.fmod(nn, 2) == 1, np.inf, np.nan), r)
    r = np.where(x == -np.inf, np.nan, r)
    r = np.where((nn == 0) & (x < 0) & (x == np.floor(x)), np.nan, r)
    r = np.where((nn == 0) & (x == 0), -np.inf, r)
    r = np.where(n > _MAX_F64_ORDER, np.nan, r)
    # polygamma(n, +inf) = (-1)**(n+1) * 0 for n >= 1 (SciPy: NaN for an order beyond int64)
    r = np.where((n >= 1) & (x == np.inf), np.where(np.fmod(n, 2) == 1, 0.0, -0.0), r)
    return np.where(ok, r, np.nan)


def _polygamma_negative(n, x):
    """``polygamma(n, x)`` for ``n >= 1`` and a negative non-integer ``x``, and the factor by which
    its f64 evaluation cancels.

    With ``s = n + 1``, ``m = -floor(x)`` and ``a = x + m`` in (0, 1), the series
    ``polygamma(n, x) = (-1)**s n! sum_{k >= 0} (x + k)**-s`` splits into the terms ``a + k``
    (``zeta(s, a)``) and the ``m`` terms ``a - j = -(j - a)``, ``j = 1..m``, which are
    ``(-1)**s (zeta(s, 1 - a) - zeta(s, 1 - x))``: three Hurwitz zetas of positive arguments.
    For an even order the first two cancel near ``a = 1/2`` (exactly at it, where the sum over
    all integers is 0) and the bracket near a root of ``polygamma``; the returned factor is the
    sum of the magnitudes over the magnitude of the result."""
    s = n + 1.0
    m = -np.floor(x)
    a = x + m  # exact: |x| < 2**52 for a non-integer f64
    sign = np.where(np.fmod(s, 2) == 0, 1.0, -1.0)  # (-1)**s
    z_a, z_b, z_tail = sc.zeta(s, a), sc.zeta(s, 1.0 - a), sc.zeta(s, 1.0 - x)
    bracket = (z_a + sign * z_b) - sign * z_tail
    r = sign * sc.gamma(s) * bracket
    return r, (np.abs(z_a) + np.abs(z_b) + np.abs(z_tail)) / np.abs(bracket)


def _zeta(x, q):
    """SciPy's Hurwitz zeta; ``q ** -x`` (the first term, to which the sum rounds) for
    ``x > 2**16`` where SciPy gives NaN; NaN for a NaN argument. For a type narrower than f64 (:func:`_zeta_narrow`),
    positive for ``x > 1``, ``q > 0`` also where it underflows
    (:func:`stablehlo_conform.numeric.positive_underflow`)."""
    r = sc.zeta(x, q)
    r = np.where(np.isnan(r) & (x > 2.0 ** 16) & (q > 0) & (q < np.inf), np.power(q, -x), r)
    return np.where(np.isnan(x) | np.isnan(q), np.nan, r)  # SciPy: zeta(1, nan) = inf


def _zeta_narrow(x, q):
    valid = (x > 1) & (q > 0) & (x < np.inf) & (q < np.inf)
    return positive_underflow(_zeta(x, q), valid)


acos = _chlo_unary("chlo.acos", np.arccos)
acosh = _chlo_unary("chlo.acosh", np.arccosh)
asin = _chlo_unary("chlo.asin", np.arcsin)
asinh = _chlo_unary("chlo.asinh", np.arcsinh)
atan = _chlo_unary("chlo.atan", np.arctan)
atanh = _chlo_unary("chlo.atanh", np.arctanh)
cosh = _chlo_unary("chlo.cosh", np.cosh)
sinh = _chlo_unary("chlo.sinh", np.sinh)
tan = _chlo_unary("chlo.tan", np.tan)
bessel_i0e = _chlo_unary("chlo.bessel_i0e", sc.i0e, f64=sc.i0e)
bessel_i1e = _chlo_unary("chlo.bessel_i1e", _odd(sc.i1e), f64=X.in_f64(X.bessel_i1e))
digamma = _chlo_unary("chlo.digamma", _digamma, _near_negative_root, f64=_digamma_f64)
erf = _chlo_unary("chlo.erf", sc.erf, f64=X.in_f64(X.erf))
erfc = _chlo_unary("chlo.erfc", _erfc, f64=X.in_f64(X.erfc))
erf_inv = _chlo_unary("chlo.erf_inv", _odd(sc.erfinv), f64=_odd(_erf_inv_f64))
lgamma = _chlo_unary("chlo.lgamma", _lgamma, _near_negative_root, f64=X.in_f64(X.lgamma))


def _chlo_binary(name, f, f64=None, refine=None):
    def g(dt, a, b):
        wide_f = f64 if f64 is not None and np.dtype(dt) == F64 else f
        return E.float_fn(wide_f, dt, a, b, op=name, refine=refine)

    g.__name__ = name.split(".")[-1]
    return E.binary(name)(g)


igamma = _chlo_binary("chlo.igamma", _igamma)
igammac = _chlo_binary("chlo.igammac", _igammac)
def _polygamma_f64(n, x):
    """f64: ``digamma`` (:func:`_digamma_f64`) for ``n = 0``."""
    return np.where(n == 0, _digamma_f64(x), _polygamma(n, x))


def _polygamma_refine(n, x, r):
    """The elements evaluated exactly: ``polygamma(0, x) = digamma(x)`` near a negative root; an
    order ``n >= 1`` at a negative ``x`` where the f64 evaluation cancels by more than a factor of
    2 (:func:`_polygamma_negative`: near ``x = k + 1/2`` for an even order, near a root); an
    order whose ``zeta(n + 1, x)`` falls below the normal range of f64 (then ``n! zeta`` can still
    be a normal number of the type); an order above 170 at a finite non-pole ``x`` (rare in
    programs, and slow: mpmath takes seconds for an order of thousands)."""
    n, x = np.broadcast_arrays(n, x)
    order = (n >= 1) & (n == np.floor(n))
    negative = order & (n <= _MAX_F64_ORDER) & (x < 0) & (x != np.floor(x)) & np.isfinite(x)
    cancels = np.zeros(np.shape(r), dtype=bool)
    if negative.any():
        cancels = negative & ~(_polygamma_negative(np.where(negative, n, 1.0), np.where(negative, x, -0.5))[1] <= 2)
    huge = order & (n > _MAX_F64_ORDER) & (n < np.inf) & np.isfinite(x) & ~((x <= 0) & (x == np.floor(x)))
    # n! zeta(n + 1, x) with zeta below the f64 normal range (then |r| < 2**1019 * 2**-1022)
    small = order & (n <= _MAX_F64_ORDER) & (x > 0) & (x < np.inf) & (np.abs(r) < 0.125)
    if small.any():
        small[small] = sc.zeta(n[small] + 1.0, x[small]) < np.finfo(np.float64).tiny
    return ((n == 0) & _near_negative_root(x, r)) | cancels | huge | small


polygamma = _chlo_binary("chlo.polygamma", _polygamma, _polygamma_f64, _polygamma_refine)
zeta = _chlo_binary("chlo.zeta", _zeta_narrow, f64=_zeta)


def _asin_acos_kernel(w):
    """``sqrt(a^2 - x^2) + i log(a + sqrt(a^2 - 1))`` with ``x = |re z|``,
    ``y = |im z|``, ``a = (hypot(x + 1, y) + hypot(x - 1, y)) / 2``.

    The real part is ``sqrt(a - x) sqrt(a + x)`` with ``a - x`` formed without
    cancellation (``hypot(p, y) - p = y^2 / (hypot(p, y) + p)``); the
    imaginary part is ``im asin(x + iy)`` from NumPy's complex ``arcsin``
    (``asin(x + iy) = asin(x / a) + i log(a + sqrt(a^2 - 1))``).
    """
    w = np.asarray(w).astype(np.complex128)
    x, y = np.abs(w.real), np.abs(w.imag)
    h1 = np.hypot(x + 1.0, y)
    h2 = np.hypot(x - 1.0, y)
    a = (h1 + h2) * 0.5
    d1 = np.where(y == 0, 0.0, y * (y / (h1 + x + 1.0)))  # h1 - (x + 1)
    d2 = np.where(y == 0, 0.0, y * (y / (h2 + np.abs(x - 1.0))))  # h2 - |x - 1|
    a_minus_x = (d1 + d2) * 0.5 + np.maximum(1.0 - x, 0.0)
    s = np.arcsin(make_complex(x, y))
    return make_complex(np.where(np.isinf(a), np.inf, np.sqrt(a_minus_x) * np.sqrt(a + x)), s.imag)


@E.unary("chlo._asin_acos_kernel")
def asin_acos_kernel(dt, x):
    """``chlo._asin_acos_kernel``: if ``w = kernel(z)`` then
    ``asin(z) = complex(atan2(re z, re w), sign(im z) * im w)``."""
    return E.float_fn(_asin_acos_kernel, dt, x)


@E.unary("chlo.conj", accuracy=EXACT)
def conj(dt, x):
    x = np.asarray(x)
    return np.conj(x) if kind_of(x.dtype) == "complex" else x


def _complex_square(w):
    re, im = w.real, w.imag
    zero = (re == 0) | (im == 0)  # a signed zero, also where 2 re overflows
    # re**2 - im**2 is exactly 0 where |re| = |im|: +0, as a difference of equal values rounds
    # (the product (re - im)(re + im) would give -0 for re = -im)
    real = np.where(np.abs(re) == np.abs(im), 0.0, (re - im) * (re + im))
    return make_complex(real, np.where(zero, re * im, 2.0 * re * im))


def _complex128_square(w):
    """complex128: :func:`stablehlo_conform.numeric.complex128_multiply` of ``w`` by itself (each part rounded
    once), the formula of :func:`_complex_square` in extended precision where a part is zero,
    infinite, NaN or extreme."""
    return E.complex128_multiply(w, w, fallback=lambda a, _: X.in_f64(_complex_square)(a))


@E.unary("chlo.square")
def square(dt, x):
    """``x * x``; complex: ``(re - im)(re + im) + 2 re im i`` (no spurious
    overflow in the real part; a zero imaginary part where a part is zero);
    complex128 parts rounded once (:func:`_complex128_square`)."""
    if np.dtype(dt) == C128:
        return E.float_fn(_complex128_square, dt, x)
    if kind_of(np.asarray(x).dtype) == "complex":
        return E.float_fn(_complex_square, dt, x)
    return E.multiply(dt, x, x)


def _classify(name, f, **facts):
    def k(op, x):
        with np.errstate(all="ignore"):
            w = wide(np.asarray(x))
            return (np.asarray(f(w), dtype=np.bool_),)

    return kernel_of(k, name, label=name.split(".")[-1], **facts)


is_inf = _classify("chlo.is_inf", np.isinf, accuracy=EXACT)
is_neg_inf = _classify("chlo.is_neg_inf", lambda w: np.isinf(w) & (w < 0), accuracy=EXACT)
is_pos_inf = _classify("chlo.is_pos_inf", lambda w: np.isinf(w) & (w > 0), accuracy=EXACT)


def next_after_values(x, y, dt):
    """The element of ``dt`` next to ``x`` in the direction of ``y``."""
    dt = np.dtype(dt)
    x = np.asarray(x).astype(dt)
    y = np.asarray(y).astype(dt)
    x, y = np.broadcast_arrays(x, y)
    nbits = bits_of(dt)
    wx, wy = wide(x), wide(y)
    ux = float_bits(x)
    sign = _U64(1 << (nbits - 1))
    with np.errstate(all="ignore"):
        toward_bigger_mag = (wy > wx) == (wx > 0)
        step = np.where(toward_bigger_mag, ux + _U64(1), ux - _U64(1))
        # from zero: the smallest subnormal with y's sign
        tiny = np.where(wy < 0, sign | _U64(1), _U64(1))
        r = np.where(wx == 0, tiny, step)
    r = float_from_bits(r, dt)
    r = np.where(wx == wy, y, r)
    nan = np.isnan(wx) | np.isnan(wy)
    return np.where(nan, np.array(np.nan).astype(dt), r).astype(dt)


@E.binary("chlo.next_after", accuracy=EXACT)
def next_after(dt, x, y):
    return next_after_values(x, y, dt)


def mulhi_values(a, b, dt):
    """High half of the 2N-bit product of two N-bit integers."""
    dt = np.dtype(dt)
    n = bits_of(dt)
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    signed = is_signed(dt)
    if n <= 32:
        with np.errstate(all="ignore"):
            if signed:
                p = to_i64(a) * to_i64(b)
                return wrap_i64(p >> n, dt)
            p = unsigned_pattern(a) * unsigned_pattern(b)
            return from_unsigned_pattern(p >> _U64(n), dt)
    ua, ub = unsigned_pattern(a), unsigned_pattern(b)
    m32 = _U64(0xFFFFFFFF)
    s32 = _U64(32)
    with np.errstate(all="ignore"):
        a_lo, a_hi = ua & m32, ua >> s32
        b_lo, b_hi = ub & m32, ub >> s32
        ll = a_lo * b_lo
        lh = a_lo * b_hi
        hl = a_hi * b_lo
        hh = a_hi * b_hi
        mid = (ll >> s32) + (lh & m32) + (hl & m32)
        hi = hh + (lh >> s32) + (hl >> s32) + (mid >> s32)
        if signed:
            hi = hi - np.where(to_i64(a) < 0, ub, _U64(0)) - np.where(to_i64(b) < 0, ua, _U64(0))
    return from_unsigned_pattern(hi, dt)


@E.binary("chlo.mulhi")
def mulhi(dt, a, b):
    return mulhi_values(a, b, dt)


# --------------------------------------------------------------------------- #
# chlo.broadcast_*
# --------------------------------------------------------------------------- #

def broadcast_operands(op, *xs):
    """Broadcast operands to the result's rank/shape (see module docs)."""
    xs = [np.asarray(x) for x in xs]
    dims = op.attr("broadcast_dimensions")
    rank = max(x.ndim for x in xs)
    if dims is not None and len(xs) == 2 and xs[0].ndim != xs[1].ndim:
        dims = tuple(int(d) for d in np.asarray(dims).reshape(-1))
        res = []
        for x in xs:
            if x.ndim < rank:
                shape = [1] * rank
                for i, d in enumerate(dims):
                    shape[d] = x.shape[i]
                x = x.reshape(shape)
            res.append(x)
        xs = res
    return np.broadcast_arrays(*xs)


_BROADCAST = {
    "chlo.broadcast_add": E.add,
    "chlo.broadcast_and": B.and_,
    "chlo.broadcast_atan2": M.atan2,
    "chlo.broadcast_divide": E.divide,
    "chlo.broadcast_multiply": E.multiply,
    "chlo.broadcast_or": B.or_,
    "chlo.broadcast_polygamma": polygamma,
    "chlo.broadcast_power": E.power,
    "chlo.broadcast_shift_left": B.shift_left,
    "chlo.broadcast_shift_right_arithmetic": B.shift_right_arithmetic,
    "chlo.broadcast_shift_right_logical": B.shift_right_logical,
    "chlo.broadcast_subtract": E.subtract,
    "chlo.broadcast_xor": B.xor,
    "chlo.broadcast_zeta": zeta,
    "chlo.broadcast_igamma": igamma,
    "chlo.broadcast_igammac": igammac,
}

# the broadcast forms of ops whose results are exact (data selection, exactly representable)
_BROADCAST_EXACT = {
    "chlo.broadcast_complex": E.complex_,
    "chlo.broadcast_maximum": E.maximum,
    "chlo.broadcast_minimum": E.minimum,
    "chlo.broadcast_next_after": next_after,
    "chlo.broadcast_remainder": E.remainder,
}


def _make_broadcast(name, fn, **facts):
    def k(op, a, b):
        a, b = broadcast_operands(op, a, b)
        return E.apply(op, fn, (a, b))

    return kernel_of(k, name, label=name.split(".")[-1], doc=f"``{name}``: broadcast, then the element-wise op.",
                     **facts)


for _name, _fn in _BROADCAST.items():
    _make_broadcast(_name, _fn)
for _name, _fn in _BROADCAST_EXACT.items():
    _make_broadcast(_name, _fn, accuracy=EXACT)


@kernel("chlo.broadcast_compare", accuracy=EXACT)
def broadcast_compare(op, a, b):
    a, b = broadcast_operands(op, a, b)
    direction = enum_value(op.attr("comparison_direction"))
    ctype = enum_value(op.attr("compare_type"))
    if ctype == "NOTYPE":
        ctype = None
    with np.errstate(all="ignore"):
        return (np.asarray(compare_values(a, b, direction, ctype), dtype=np.bool_),)


@kernel("chlo.broadcast_select", accuracy=EXACT)
def broadcast_select(op, pred, on_true, on_false):
    p, t, f = np.broadcast_arrays(np.asarray(pred), np.asarray(on_true), np.asarray(on_false))
    return (out(np.where(p.astype(bool), t, f), op.result_dtype(0)),)

