"""Exact values of element-wise math ops, correctly rounded into any float type.

The reference for :mod:`.accuracy` and for deciding who is right when a backend and a golden
value disagree. For an op of :data:`DEFINED_OPS` and inputs of a float (or complex) type,
:func:`correctly_rounded` returns the op's mathematical value rounded to nearest, ties to even,
into the element type; :func:`ulp_error` measures how far another result is from that value.

**How a value is computed.** Inputs are converted exactly to f64 (complex128). Each distinct
input tuple is evaluated once per process (a cache keyed by the inputs' bit patterns):

- special inputs (NaN, infinities, zeros, poles, points outside the domain) follow the IEEE 754
  conventions of the corresponding function (``pow``, ``atan2``, ``rSqrt``, ... of IEEE 754-2019
  section 9.2; C99 Annex F for the rest) and the op's docstring in spec.md;
- every other input is evaluated with mpmath at a working precision of the target's significand
  plus 40 bits. Functions whose mpmath implementation is not known to be accurate to the last
  bit (special functions) are evaluated twice, at ``P`` and ``P + 32`` bits, and only the bits on
  which both agree are trusted (complex values are always evaluated twice, and a part both give
  as exactly zero is trusted only at the last precision). If the trusted value lies too close to
  a rounding midpoint of the target type to decide the rounding, the precision is doubled (Ziv's
  strategy), up to 2560 bits; a value that stays on a midpoint is an exact midpoint (``x ** y``)
  and is rounded to even.
- add, subtract, multiply and ``chlo.square`` are exact in mpmath; abs, negate, ceil, floor,
  the round ops, sign and remainder are exact in f64 and computed there (complex negate too,
  part by part; complex ``sign`` is ``z / |z|``, and ``(0, 0)`` at zero as spec.md "sign" says).

**Rounding.** Round to nearest, ties to even, with the target's subnormals. Overflow gives an
infinity where the type has one, NaN where it has NaN but no infinity (``*FN``, ``*FNUZ``,
``f8E8M0FNU``), and the largest finite value where it has neither (f4/f6, which saturate, as
``ml_dtypes`` converts). Types without -0 (``*FNUZ``) give +0. A NaN result in a type without
NaN (f4/f6) is whatever ``ml_dtypes`` converts NaN to; such elements are :func:`spec_silent`.

**Signed zeros.** An exact zero result takes the sign IEEE 754 gives: odd functions and the
rounding ops keep the sign of the argument (``sin(-0) = -0``, ``erf_inv(-0) = -0``,
``bessel_i1e(-0) = -0``, ``ceil(-0.5) = -0``); ``x + (-x)`` is +0; products and quotients take
the exclusive-or of the signs; every other exact zero is +0. A result that underflows keeps the
sign of the exact value. For complex arguments a zero part stands for the limit from its side
(C99 Annex G branch-cut convention: ``sqrt(-4 - 0i) = 0 - 2i``): it is evaluated as
``+-2**-(2**20)``, so that results on both sides of a cut, and the signs of zero parts of the
result, follow the argument's signed zeros. A result part that stays exactly 0 at every precision
(the stand-in only enters at first order, below any working precision: ``acos(x + 0i)``) takes the
sign of the part at stand-ins of ``2**-(prec/2)`` (:func:`_zero_part_sign`).

**Complex results** are rounded part by part (each part correctly rounded). Complex arguments
with an infinite or NaN part (except for ``negate``), ``0 + 0i`` at a pole or branch point
(``log``, ``rsqrt``, ``power``, ``divide``), and the poles ``atanh(+-1)`` and ``atan(+-i)`` have no
value the spec fixes: :func:`correctly_rounded` gives the value NumPy computes in complex128
there, and :func:`spec_silent` marks them.

**ULP error** (:func:`ulp_error`): ``|actual - exact| / ulp(exact)``, where ``exact`` is the
unrounded value and ``ulp(x) = 2 ** (max(floor(log2|x|), emin) - p + 1)`` is the spacing of the
target type at ``x`` (``p`` significand bits, ``emin`` the exponent of the smallest normal
number; the exponent range above is unbounded, so a finite result where the value overflows is
measured against the value itself). A correctly rounded result therefore has an error of at most
0.5. Exceptions: a result equal to the correctly rounded one counts at most 0.5 (so saturation
and overflow to infinity are not errors); NaN where the value is NaN, and the infinity of the
right sign where the value is infinite, count 0; any other result where the value is NaN or
infinite, and NaN where the value is a number, count ``inf``. A zero of the wrong sign counts 0
(it is not correctly rounded, but it is no distance away). For complex results the error is the
larger of the two parts' errors, each in its own part's ULP. Elements :func:`spec_silent` marks
are NaN in the result of :func:`ulp_error` (not measured).
"""

from __future__ import annotations

import inspect
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import ml_dtypes
import mpmath
import numpy as np

from ..numeric import complex_divide, kind_of, wide
from ..opinfo import OPS

_MP = mpmath.mp
_MPF = mpmath.mpf
_MPC = mpmath.mpc

# --------------------------------------------------------------------------- #
# float formats
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class Format:
    """A binary float type: ``p`` significand bits (with the leading one), ``emin`` the exponent of
    the smallest normal number, ``max`` the largest finite value and what it can represent."""

    dtype: np.dtype
    p: int
    emin: int
    max: float
    has_inf: bool
    has_nan: bool
    has_negzero: bool
    has_zero: bool
    unsigned: bool


@lru_cache(maxsize=None)
def format_of(dt) -> Format:
    """The :class:`Format` of a float dtype (of the parts, for a complex dtype)."""
    dt = np.dtype(dt)
    if kind_of(dt) == "complex":
        dt = np.dtype(np.float32 if dt == np.dtype(np.complex64) else np.float64)
    native = dt in (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
    info = np.finfo(dt) if native else ml_dtypes.finfo(dt)

    def conv(v):
        with np.errstate(all="ignore"):
            return float(np.array(v, dtype=np.float64).astype(np.float32).astype(dt).astype(np.float64)) \
                if not native else float(np.array(v, dtype=np.float64).astype(dt).astype(np.float64))

    neg = conv(-1.0)
    return Format(dtype=dt, p=int(info.nmant) + 1, emin=int(info.minexp), max=float(info.max),
                  has_inf=math.isinf(conv(math.inf)), has_nan=math.isnan(conv(math.nan)),
                  has_negzero=math.copysign(1.0, conv(-0.0)) < 0, has_zero=conv(0.0) == 0.0,
                  unsigned=math.isnan(neg))


def _nan_value(fmt: Format) -> float:
    """What a NaN result is in ``fmt`` (``ml_dtypes``' conversion where the type has no NaN)."""
    if fmt.has_nan:
        return math.nan
    return float(np.array(np.nan, dtype=np.float32).astype(fmt.dtype).astype(np.float64))


def _overflow(negative: bool, fmt: Format) -> float:
    if fmt.unsigned and negative:
        return math.nan
    if fmt.has_inf:
        return -math.inf if negative else math.inf
    if fmt.has_nan:
        return math.nan
    return -fmt.max if negative else fmt.max


def _zero(negative: bool, fmt: Format) -> float:
    if not fmt.has_zero:
        return math.nan
    return -0.0 if negative and fmt.has_negzero else 0.0


def _round_mpf(v, fmt: Format, trusted: int | None) -> tuple[float, bool]:
    """Round mpf ``v`` to nearest-even in ``fmt``: ``(value as a Python float, ambiguous)``.

    ``trusted``: ``v`` has a relative error below ``2**-trusted`` (None: ``v`` is exact).
    ``ambiguous`` is True when the error interval contains a rounding midpoint."""
    if mpmath.isnan(v):
        return _nan_value(fmt), False
    if mpmath.isinf(v):
        return _overflow(v < 0, fmt), False
    sign, man, exp, bc = v._mpf_
    if man == 0:
        return _zero(False, fmt), False
    if fmt.unsigned and sign:
        return math.nan, False
    e = exp + bc - 1
    q = max(e, fmt.emin) - (fmt.p - 1)
    if e > 1100:  # far beyond every format's range (no huge integers below)
        return _overflow(bool(sign), fmt), False
    if e < q - 2:  # below a quarter of the smallest subnormal: rounds to zero
        if not fmt.has_zero:
            return (math.nan if sign else math.ldexp(1.0, fmt.emin)), False
        return _zero(bool(sign), fmt), False
    shift = q - exp
    ambiguous = False
    if shift <= 0:
        n = man << (-shift)
        if trusted is not None and trusted < fmt.p + 2:
            ambiguous = True
    else:
        n = man >> shift
        rem = man - (n << shift)
        half = 1 << (shift - 1)
        if trusted is not None:
            rad = (man >> trusted) + 1 if trusted >= 0 else man
            ambiguous = abs(rem - half) <= rad
        if rem > half or (rem == half and n & 1):
            n += 1
    if n == 0:
        if not fmt.has_zero:
            return (math.nan if sign else math.ldexp(1.0, fmt.emin)), ambiguous
        return _zero(bool(sign), fmt), ambiguous
    top = q + n.bit_length() - 1
    if top > 1100:
        return _overflow(bool(sign), fmt), ambiguous
    try:
        val = math.ldexp(n, q)
    except OverflowError:
        val = math.inf
    if val > fmt.max:
        return _overflow(bool(sign), fmt), ambiguous
    return (-val if sign else val), ambiguous


def _round_float(x: float, fmt: Format) -> float:
    """Round an exact f64 value into ``fmt``."""
    if math.isnan(x):
        return _nan_value(fmt)
    if x == 0:
        return _zero(math.copysign(1.0, x) < 0, fmt)
    return _round_mpf(_MPF(x), fmt, None)[0]


# --------------------------------------------------------------------------- #
# the ops
# --------------------------------------------------------------------------- #

_TINY_EXP = -(2 ** 20)


def _tiny(negative: bool):
    """The stand-in for a signed zero part of a complex argument (see module docs)."""
    return mpmath.ldexp(_MPF(-1 if negative else 1), _TINY_EXP)


def _sgn(x: float) -> bool:
    """True when ``x`` is negative (incl. -0)."""
    return math.copysign(1.0, x) < 0


def _is_int(x: float) -> bool:
    return math.isfinite(x) and x == math.floor(x)


def _is_odd_int(x: float) -> bool:
    return _is_int(x) and abs(x) < 2.0 ** 53 and int(x) % 2 == 1


def _copysign_mpf(x, negative):
    return -x if negative else x


@dataclass(frozen=True)
class OpDef:
    """One op: its mpmath function (real and complex arguments), its special cases and the sign of
    an exact zero result.

    ``special(*xs)`` (Python floats) returns None (evaluate), a float (the exact IEEE result), or a
    callable taking no argument that evaluates the value in the current mpmath precision.
    ``zero`` gives the sign of an exact zero result: ``"x"`` the first argument's, ``"+"`` +0, or a
    function of the arguments returning the signed zero. ``checked``: evaluate twice (special
    functions). ``exact``: mpmath's result is exact (no rounding in the evaluation)."""

    name: str
    arity: int
    real: Callable | None
    cplx: Callable | None = None
    special: Callable | None = None
    zero: object = "+"
    checked: bool = False
    exact: bool = False


def _nan_any(xs) -> bool:
    return any(math.isnan(x) for x in xs)


def _sp_exp(x):
    if math.isinf(x):
        return math.inf if x > 0 else 0.0
    return None


def _sp_expm1(x):
    if math.isinf(x):
        return math.inf if x > 0 else -1.0
    return None


def _sp_log(x):
    if x == 0:
        return -math.inf
    if x < 0:
        return math.nan
    if math.isinf(x):
        return math.inf
    return None


def _sp_log1p(x):
    if x == -1:
        return -math.inf
    if x < -1:
        return math.nan
    if math.isinf(x):
        return math.inf
    return None


def _sp_logistic(x):
    if math.isinf(x):
        return 1.0 if x > 0 else 0.0
    return None


def _sp_sqrt(x):
    if x == 0:
        return x
    if x < 0:
        return math.nan
    if math.isinf(x):
        return math.inf
    return None


def _sp_rsqrt(x):
    if x == 0:
        return math.copysign(math.inf, x)
    if x < 0:
        return math.nan
    if math.isinf(x):
        return 0.0
    return None


def _sp_cbrt(x):
    return x if (math.isinf(x) or x == 0) else None


def _sp_trig(x):
    return math.nan if math.isinf(x) else None


def _sp_tanh(x):
    return math.copysign(1.0, x) if math.isinf(x) else None


def _sp_acos_asin(x):
    return math.nan if abs(x) > 1 else None


def _sp_atan(x):
    if math.isinf(x):
        return lambda: _copysign_mpf(_MP.pi / 2, x < 0)
    return None


def _sp_acosh(x):
    if x < 1:
        return math.nan
    return math.inf if math.isinf(x) else None


def _sp_odd_inf(x):
    return x if math.isinf(x) else None


def _sp_atanh(x):
    if abs(x) > 1:
        return math.nan
    if abs(x) == 1:
        return math.copysign(math.inf, x)
    return None


def _sp_cosh(x):
    return math.inf if math.isinf(x) else None


def _sp_i0e(x):
    return 0.0 if math.isinf(x) else None


def _sp_i1e(x):
    return math.copysign(0.0, x) if math.isinf(x) else None


def _sp_digamma(x):
    if x == 0:
        return math.inf if _sgn(x) else -math.inf  # the one-sided limits
    if x < 0 and _is_int(x) or x == -math.inf:
        return math.nan
    if x == math.inf:
        return math.inf
    return None


def _sp_erf(x):
    return math.copysign(1.0, x) if math.isinf(x) else None


def _sp_erfc(x):
    if math.isinf(x):
        return 0.0 if x > 0 else 2.0
    return None


def _sp_erf_inv(x):
    if abs(x) > 1:
        return math.nan
    if abs(x) == 1:
        return math.copysign(math.inf, x)
    return None


def _sp_lgamma(x):
    if math.isinf(x) or (x <= 0 and _is_int(x)):
        return math.inf
    return None


def _sp_atan2(y, x):
    pi = _MP.pi
    if y == 0:
        if x > 0 or (x == 0 and not _sgn(x)):
            return y
        return lambda: _copysign_mpf(+pi, _sgn(y))
    if math.isinf(y):
        if x == math.inf:
            return lambda: _copysign_mpf(pi / 4, y < 0)
        if x == -math.inf:
            return lambda: _copysign_mpf(3 * pi / 4, y < 0)
        return lambda: _copysign_mpf(pi / 2, y < 0)
    if x == math.inf:
        return math.copysign(0.0, y)
    if x == -math.inf:
        return lambda: _copysign_mpf(+pi, y < 0)
    if x == 0:
        return lambda: _copysign_mpf(pi / 2, y < 0)
    return None


def _sp_power(x, y):
    """IEEE 754 ``pow`` (section 9.2.1)."""
    if y == 0 or x == 1:
        return 1.0
    if math.isnan(x) or math.isnan(y):
        return math.nan
    odd = _is_odd_int(y)
    if x == 0:
        if y < 0:
            return math.copysign(math.inf, x) if odd else math.inf
        return math.copysign(0.0, x) if odd else 0.0
    if math.isinf(y):
        if x == -1:
            return 1.0
        return (math.inf if y > 0 else 0.0) if abs(x) > 1 else (0.0 if y > 0 else math.inf)
    if x == -math.inf:
        if y < 0:
            return -0.0 if odd else 0.0
        return -math.inf if odd else math.inf
    if x == math.inf:
        return 0.0 if y < 0 else math.inf
    if x < 0 and not _is_int(y):
        return math.nan
    return None


def _mp_power(x, y):
    if x < 0:
        r = mpmath.power(-x, y)
        return -r if _is_odd_int(float(y)) else r
    return mpmath.power(x, y)


def _sp_add(x, y):
    if math.isinf(x) or math.isinf(y):
        return x + y
    return None


def _sp_sub(x, y):
    if math.isinf(x) or math.isinf(y):
        return x - y
    return None


def _sp_mul(x, y):
    if math.isinf(x) or math.isinf(y) or x == 0 or y == 0:
        return x * y
    return None


def _sp_div(x, y):
    if math.isinf(x) and math.isinf(y) or (x == 0 and y == 0):
        return math.nan
    if y == 0 or math.isinf(x):
        return math.copysign(math.inf, x) * math.copysign(1.0, y)
    if math.isinf(y) or x == 0:
        return math.copysign(0.0, x) * math.copysign(1.0, y)
    return None


def _sp_igamma(a, x, upper=False):
    if a <= 0 or x < 0:
        return math.nan
    if math.isinf(a) and math.isinf(x):
        return math.nan
    if x == 0:
        return 1.0 if upper else 0.0
    if math.isinf(x):
        return 0.0 if upper else 1.0
    if math.isinf(a):
        return 1.0 if upper else 0.0
    return None


def _sp_polygamma(n, x):
    if not (n >= 0 and _is_int(n)):
        return math.nan
    if n == 0:
        return _sp_digamma(x)
    if x <= 0 and _is_int(x):
        return math.inf if int(n) % 2 == 1 else math.nan
    if x == math.inf:
        return 0.0 if int(n) % 2 == 1 else -0.0
    if x == -math.inf:
        return math.nan
    return None


def _mp_polygamma(n, x):
    return mpmath.polygamma(int(n), x)


def _sp_zeta(s, q):
    if s == 1:
        return math.inf
    if s < 1 or q <= 0:
        return math.nan
    if s == math.inf:
        return 0.0 if q > 1 else (1.0 if q == 1 else math.inf)
    if q == math.inf:
        return 0.0
    return None


def _mp_lgamma(x):
    if x > 0:
        return mpmath.loggamma(x)
    return mpmath.re(mpmath.loggamma(x))


def _mp_erf_inv(x):
    # Newton from the f64 estimate: two steps give far more than the working precision
    from scipy.special import erfinv

    y = _MPF(float(erfinv(float(x))))
    if not mpmath.isfinite(y) or y == 0:
        return mpmath.erfinv(x)
    c = 2 / mpmath.sqrt(_MP.pi)
    for _ in range(3 + max(0, _MP.prec // 100)):
        y = y - (mpmath.erf(y) - x) / (c * mpmath.exp(-y * y))
    return y


def _bessel_ie(nu: int, x):
    """``I_nu(|x|) exp(-|x|)`` for ``nu`` in (0, 1), odd in ``x`` for ``nu = 1``: the power series
    (in fixed point for ``|x| >= 2**-10``) up to ``|x| = max(150, 0.35 P)``, the asymptotic series
    ``(2 pi x)**-1/2 sum (-1)**k a_k(nu) / x**k`` beyond (its smallest term is below ``2**-P``
    there). Faster than mpmath's general ``besseli``."""
    ax = abs(x)
    if ax == 0:
        return _MPF(1 - nu)
    prec = _MP.prec
    eps = mpmath.ldexp(1, -(prec + 25))
    with mpmath.workprec(prec + 30):
        if ax > max(0.35 * (prec + 30) + 2, 150):
            mu = 4 * nu * nu
            term = s = _MPF(1)
            k = 1
            while True:
                term = -term * (mu - (2 * k - 1) ** 2) / (k * 8 * ax)
                s += term
                if abs(term) < abs(s) * eps:
                    break
                k += 1
            r = s / mpmath.sqrt(2 * _MP.pi * ax)
        elif ax < 2 ** -10:
            q = ax * ax / 4
            term = s = (ax / 2) ** nu
            k = 1
            while True:
                term = term * q / (k * (k + nu))
                s += term
                if term <= s * eps:
                    break
                k += 1
            r = s * mpmath.exp(-ax)
        else:
            wp = prec + 80
            xf = int(mpmath.ldexp(ax, wp))
            q = (xf * xf) >> (wp + 2)
            term = s = (xf >> 1) if nu else (1 << wp)
            k = 1
            while term:
                term = (term * q >> wp) // (k * (k + nu))
                s += term
                k += 1
            r = mpmath.ldexp(_MPF(s), -wp) * mpmath.exp(-ax)
    return -r if (nu == 1 and x < 0) else +r


def _mp_i0e(x):
    return _bessel_ie(0, x)


def _mp_i1e(x):
    return _bessel_ie(1, x)


def _mp_complex_acosh(z):
    """acosh below the real axis by ``acosh(conj z) = conj(acosh z)`` (C99 G.6.2.1): mpmath takes a
    point of the cut (-1, 1) whose imaginary part is a negative stand-in for -0 (too small for its
    precision) as a point above it (acosh(-0.25 - 0i) = 0 - 1.823i, not 0 + 1.823i)."""
    if z.imag < 0:
        return mpmath.conj(mpmath.acosh(mpmath.conj(z)))
    return mpmath.acosh(z)


def _mp_cbrt(x):
    if isinstance(x, mpmath.mpc):
        return mpmath.power(x, _MPF(1) / 3)
    return _copysign_mpf(mpmath.cbrt(abs(x)), x < 0)


def _mp_logistic(x):
    return 1 / (1 + mpmath.exp(-x))


def _mp_rsqrt(x):
    return 1 / mpmath.sqrt(x)


_ODD = "x"


def _zero_add(x, y):
    return x + y


def _zero_sub(x, y):
    return x - y


def _zero_mul(x, y):
    return x * y


_OPS: dict[str, OpDef] = {}


def _op(name, arity, real, cplx=None, special=None, zero="+", checked=False, exact=False, aliases=()):
    d = OpDef(name, arity, real, cplx, special, zero, checked, exact)
    _OPS[name] = d
    for a in aliases:
        _OPS[a] = OpDef(a, arity, real, cplx, special, zero, checked, exact)


_S, _C = "stablehlo.", "chlo."
_op(_S + "exponential", 1, mpmath.exp, mpmath.exp, _sp_exp)
_op(_S + "exponential_minus_one", 1, mpmath.expm1, mpmath.expm1, _sp_expm1, _ODD)
_op(_S + "log", 1, mpmath.log, mpmath.log, _sp_log)
_op(_S + "log_plus_one", 1, mpmath.log1p, mpmath.log1p, _sp_log1p, _ODD)
_op(_S + "logistic", 1, _mp_logistic, _mp_logistic, _sp_logistic)
_op(_S + "sqrt", 1, mpmath.sqrt, mpmath.sqrt, _sp_sqrt, _ODD)
_op(_S + "rsqrt", 1, _mp_rsqrt, _mp_rsqrt, _sp_rsqrt)
_op(_S + "cbrt", 1, _mp_cbrt, _mp_cbrt, _sp_cbrt, _ODD)
_op(_S + "sine", 1, mpmath.sin, mpmath.sin, _sp_trig, _ODD)
_op(_S + "cosine", 1, mpmath.cos, mpmath.cos, _sp_trig)
_op(_S + "tan", 1, mpmath.tan, mpmath.tan, _sp_trig, _ODD, aliases=(_C + "tan",))
_op(_S + "tanh", 1, mpmath.tanh, mpmath.tanh, _sp_tanh, _ODD)
_op(_S + "atan2", 2, mpmath.atan2, None, _sp_atan2)
_op(_S + "power", 2, _mp_power, mpmath.power, _sp_power)
_op(_S + "add", 2, lambda x, y: mpmath.fadd(x, y, exact=True), lambda x, y: x + y, _sp_add, _zero_add, exact=True)
_op(_S + "subtract", 2, lambda x, y: mpmath.fsub(x, y, exact=True), lambda x, y: x - y, _sp_sub, _zero_sub,
    exact=True)
_op(_S + "multiply", 2, lambda x, y: mpmath.fmul(x, y, exact=True), lambda x, y: x * y, _sp_mul, _zero_mul,
    exact=True)
_op(_S + "divide", 2, mpmath.fdiv, lambda x, y: x / y, _sp_div, _zero_mul)
_op(_C + "acos", 1, mpmath.acos, mpmath.acos, _sp_acos_asin)
_op(_C + "asin", 1, mpmath.asin, mpmath.asin, _sp_acos_asin, _ODD)
_op(_C + "atan", 1, mpmath.atan, mpmath.atan, _sp_atan, _ODD)
_op(_C + "acosh", 1, mpmath.acosh, _mp_complex_acosh, _sp_acosh)
_op(_C + "asinh", 1, mpmath.asinh, mpmath.asinh, _sp_odd_inf, _ODD)
_op(_C + "atanh", 1, mpmath.atanh, mpmath.atanh, _sp_atanh, _ODD)
_op(_C + "cosh", 1, mpmath.cosh, mpmath.cosh, _sp_cosh)
_op(_C + "sinh", 1, mpmath.sinh, mpmath.sinh, _sp_odd_inf, _ODD)
_op(_C + "square", 1, lambda x: mpmath.fmul(x, x, exact=True), lambda x: x * x, lambda x: x * x if
    (math.isinf(x) or x == 0) else None, exact=True)
_op(_C + "bessel_i0e", 1, _mp_i0e, None, _sp_i0e, checked=True)
_op(_C + "bessel_i1e", 1, _mp_i1e, None, _sp_i1e, _ODD, checked=True)
_op(_C + "digamma", 1, mpmath.digamma, None, _sp_digamma, checked=True)
_op(_C + "erf", 1, mpmath.erf, None, _sp_erf, _ODD, checked=True)
_op(_C + "erfc", 1, mpmath.erfc, None, _sp_erfc, checked=True)
_op(_C + "erf_inv", 1, _mp_erf_inv, None, _sp_erf_inv, _ODD, checked=True)
_op(_C + "lgamma", 1, _mp_lgamma, None, _sp_lgamma, checked=True)
_op(_C + "igamma", 2, lambda a, x: mpmath.gammainc(a, 0, x, regularized=True), None, _sp_igamma, checked=True)
_op(_C + "igammac", 2, lambda a, x: mpmath.gammainc(a, x, mpmath.inf, regularized=True), None,
    lambda a, x: _sp_igamma(a, x, upper=True), checked=True)
_op(_C + "polygamma", 2, _mp_polygamma, None, _sp_polygamma, checked=True)
_op(_C + "zeta", 2, mpmath.zeta, None, _sp_zeta, checked=True)


def _mp_complex_sign(z):
    return z / abs(z)


# complex sign only (real sign is exact in f64, below): z / |z| (spec.md "sign")
_op(_S + "sign", 1, None, _mp_complex_sign)


def _np_afz(w):
    t = np.trunc(w)
    return np.where(np.abs(w - t) >= 0.5, t + np.sign(w), t)


def _np_sign(w):
    return np.where(np.isnan(w) | (w == 0), w, np.sign(w))


# ops whose value is exactly representable: computed in f64 with NumPy (exact there)
_EXACT_F64: dict[str, Callable] = {
    _S + "abs": np.abs,
    _S + "negate": np.negative,
    _S + "ceil": np.ceil,
    _S + "floor": np.floor,
    _S + "round_nearest_even": np.rint,
    _S + "round_nearest_afz": _np_afz,
    _S + "sign": _np_sign,
    _S + "remainder": np.fmod,
}

# the op registry carries each op's exact reference: a name here, or a function of real arguments
for _name in sorted({*_OPS, *_EXACT_F64}):
    OPS.declare(_name, exact=_name)

DEFINED_OPS = OPS.where(lambda info: info.exact is not None)
"""Ops :func:`correctly_rounded` knows (real arguments): a live view of the op registry."""


def _definition(op: str) -> OpDef:
    """The definition of ``op``: a built-in one, or an :class:`OpDef` of the function the op
    registry holds as the op's exact reference."""
    d = _OPS.get(op)
    if d is not None:
        return d
    info = OPS.info(op)
    fn = info.exact if info is not None else None
    if not callable(fn):
        raise KeyError(f"no exact definition for {op}")
    return OpDef(op, len(inspect.signature(fn).parameters), fn)

COMPLEX_OPS: frozenset[str] = frozenset(n for n, d in _OPS.items() if d.cplx is not None) | {_S + "abs",
                                                                                           _S + "negate"}
"""The ops of :data:`DEFINED_OPS` that also take complex arguments."""


def _in_f64(op: str, args) -> bool:
    """Whether ``op`` on ``args`` is computed exactly in f64 (complex128) with NumPy."""
    if op == _S + "sign":
        return not any(kind_of(np.asarray(a).dtype) == "complex" for a in args)
    return op in _EXACT_F64

# complex arguments whose value the spec does not fix when a part is infinite/NaN or z == 0
_COMPLEX_POLE_AT_ZERO = {_S + "log", _S + "rsqrt", _S + "power", _S + "divide", _C + "atanh", _S + "log_plus_one"}

# --------------------------------------------------------------------------- #
# evaluation with Ziv's strategy
# --------------------------------------------------------------------------- #

_MAX_PREC = 2560


def _agree(a, b, cap: int) -> int:
    """Bits on which mpf ``a`` and ``b`` agree (relative to ``b``), at most ``cap``."""
    if a == b:
        return cap
    if b == 0 or not mpmath.isfinite(a) or not mpmath.isfinite(b):
        return -1
    return min(cap, int(mpmath.mag(b)) - 1 - int(mpmath.mag(a - b)))


class _Value:
    """The cached value of one op at one input: an exact float, or an mpf/mpc with the number of
    trusted bits of each part, refined on demand."""

    __slots__ = ("fixed", "fn", "args", "checked", "exact", "prec", "v", "t", "rounded", "zero_value", "start",
                 "unknown")

    def __init__(self):
        self.fixed = None
        self.rounded = {}
        self.prec = 0
        self.v = None
        self.t = None
        self.zero_value = 0.0
        self.start = 64
        self.unknown = False
        self.checked = self.exact = False

    def refine(self):
        prec = self.prec * 2 if self.prec else self.start
        with mpmath.workprec(prec):
            v = self.fn(*self.args)
        if self.exact:
            self.v, self.t, self.prec = v, None, _MAX_PREC
            return
        if self.checked:
            with mpmath.workprec(prec + 32):
                v2 = self.fn(*self.args)
            cap = prec - 4
            if isinstance(v, mpmath.mpc) or isinstance(v2, mpmath.mpc):
                v, v2 = _MPC(v), _MPC(v2)
                t = (_agree(v.real, v2.real, cap), _agree(v.imag, v2.imag, cap))
                v = v2
            else:
                t = _agree(v, v2, cap)
                v = v2
        else:
            t = prec - 4
            if isinstance(v, mpmath.mpc):
                m = mpmath.mag(v)
                t = tuple(t - int(m - mpmath.mag(part)) if part != 0 else t for part in (v.real, v.imag))
        self.v, self.t, self.prec = v, t, prec


def _round_value(val: _Value, fmt: Format):
    """The correctly rounded value (float or complex) of ``val`` in ``fmt``, refining as needed."""
    hit = val.rounded.get(fmt)
    if hit is not None:
        return hit
    if val.fixed is not None:
        r = val.fixed
        r = complex(_round_float(r.real, fmt), _round_float(r.imag, fmt)) if isinstance(r, complex) \
            else _round_float(r, fmt)
        val.rounded[fmt] = r
        return r
    try:
        return _round_refining(val, fmt)
    except (_EvalTimeout, ValueError, ZeroDivisionError, ArithmeticError, mpmath.libmp.NoConvergence):
        # not evaluated within EVAL_SECONDS (or mpmath gave up): not measured (see spec_silent)
        val.fixed, val.unknown = math.nan, True
        val.rounded[fmt] = _nan_value(fmt)
        return val.rounded[fmt]


class _EvalTimeout(Exception):
    pass


EVAL_SECONDS: float | None = None
"""When set (``conform accuracy`` sets it), an input whose evaluation takes longer is given up
and counted as not measured, like the inputs :func:`spec_silent` marks."""


def _timed_refine(val: _Value) -> None:
    if EVAL_SECONDS is None:
        val.refine()
        return
    import signal

    def expire(signum, frame):
        raise _EvalTimeout

    old = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, EVAL_SECONDS)
    try:
        val.refine()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _round_refining(val: _Value, fmt: Format):
    if val.v is None:
        val.start = fmt.p + 40
        _timed_refine(val)
    while True:
        last = val.prec >= _MAX_PREC
        if isinstance(val.v, mpmath.mpc):
            tr, ti = val.t if val.t is not None else (None, None)
            re, im = val.v.real, val.v.imag
            rr, ar = _round_part(re, fmt, None if last else tr, val, im)
            ri, ai = _round_part(im, fmt, None if last else ti, val, re)
            r, amb = complex(rr, ri), ar or ai
        else:
            r, amb = _round_part(val.v, fmt, None if last else val.t, val)
        if not amb or last:
            break
        _timed_refine(val)
    if isinstance(val.v, mpmath.mpc) and isinstance(r, complex):
        r = _signed_zero_parts(val, r, fmt)
    val.rounded[fmt] = r
    return r


def _signed_zero_parts(val: _Value, r: complex, fmt: Format) -> complex:
    """``r`` with the sign of each part that is exactly 0 at every precision set by
    :func:`_zero_part_sign` (the other parts as they are)."""
    parts = [r.real, r.imag]
    for i, p in enumerate((val.v.real, val.v.imag)):
        if p == 0 and parts[i] == 0:
            negative = _zero_part_sign(val, i)
            if negative is not None:
                parts[i] = _zero(negative, fmt)
    return complex(parts[0], parts[1])


def _zero_part_sign(val: _Value, index: int) -> bool | None:
    """Whether a complex result part that stays exactly 0 at every precision is the limit from
    below. Such a part depends on the stand-ins for the argument's zero parts (``2**-(2**20)``)
    only at first order, far below any working precision (``acos(x + 0i)`` for ``|x| < 1`` is
    ``acos(x) - 0i``: the imaginary part is ``-log|iz + sqrt(1 - z**2)|``, ``log`` of 1 plus a
    stand-in). It is probed with stand-ins of the same signs at ``2**-(prec / 2)`` of the
    argument's magnitude, where the part is that first-order term; None (keep the IEEE zero) where
    the argument has no zero part or the probe is 0 too."""
    eps_exp = -(max(val.prec, 64) // 2)
    probed, args = False, []
    for z in val.args:
        if not isinstance(z, mpmath.mpc):
            args.append(z)
            continue
        scale = max(abs(z), _MPF(1))
        parts = []
        for p in (z.real, z.imag):
            if p != 0 and mpmath.isfinite(p) and int(mpmath.mag(p)) < _TINY_EXP // 2:
                parts.append(mpmath.ldexp(scale if p > 0 else -scale, eps_exp))
                probed = True
            else:
                parts.append(p)
        args.append(_MPC(parts[0], parts[1]))
    if not probed:
        return None
    with mpmath.workprec(max(val.prec, 64)):
        v = _MPC(val.fn(*args))
    part = (v.real, v.imag)[index]
    if part == 0 or not mpmath.isfinite(part):
        return None
    return bool(part < 0)


def _round_part(v, fmt, t, val, other=None):
    if v == 0 and not mpmath.isnan(v):
        # a zero part of a complex value is trusted only at the last precision: mpmath's formulas
        # can cancel a tiny part to exactly 0 at every working precision below what it needs (the
        # imaginary part of acos(-3.5e-16 - 5.9e-33i) is 5.9e-33, and 0 at 64 and 96 bits)
        return val.zero_value, other is not None and t is not None
    if other is not None and mpmath.isfinite(v) and _from_stand_in(v, other):
        return _zero(v < 0, fmt), False
    return _round_mpf(v, fmt, t)


def _from_stand_in(part, other) -> bool:
    """A part of a complex value that only the stand-ins for zero parts made non-zero: below
    ``2**(_TINY_EXP / 2)``, absolutely or relative to the other part (exact values of float
    arguments never come near: their parts are at most a few thousand binades apart)."""
    m = int(mpmath.mag(part))
    if m < _TINY_EXP // 2:
        return True
    return bool(other != 0 and mpmath.isfinite(other) and m < int(mpmath.mag(other)) + _TINY_EXP // 2)


def _make_value(op: str, d: OpDef, xs: tuple) -> _Value:
    val = _Value()
    val.checked, val.exact = d.checked, d.exact
    if any(isinstance(x, complex) for x in xs):
        return _make_complex_value(op, d, val, xs)
    if _nan_any(xs) and d.special is not _sp_power:
        val.fixed = math.nan
        return val
    s = d.special(*xs) if d.special is not None else None
    if isinstance(s, float):
        val.fixed = s
        return val
    if s is not None:
        val.fn, val.args, val.exact, val.checked = s, (), False, False
    else:
        val.fn, val.args = d.real, tuple(_MPF(x) for x in xs)
    if d.zero == _ODD:
        val.zero_value = math.copysign(0.0, xs[0])
    elif callable(d.zero):
        val.zero_value = float(d.zero(*xs))
    return val


def _numpy_complex(op, xs):
    """NumPy's complex128 value for arguments the spec leaves open (see module docs)."""
    w = [np.complex128(x) for x in xs]
    f = {
        _S + "exponential": np.exp, _S + "exponential_minus_one": np.expm1, _S + "log": np.log,
        _S + "log_plus_one": np.log1p, _S + "sqrt": np.sqrt, _S + "sine": np.sin, _S + "cosine": np.cos,
        _S + "tan": np.tan, _S + "tanh": np.tanh, _C + "tan": np.tan, _C + "acos": np.arccos,
        _C + "asin": np.arcsin, _C + "atan": np.arctan, _C + "acosh": np.arccosh, _C + "asinh": np.arcsinh,
        _C + "atanh": np.arctanh, _C + "cosh": np.cosh, _C + "sinh": np.sinh,
        _S + "add": np.add, _S + "subtract": np.subtract, _S + "multiply": np.multiply,
        _S + "power": np.power,
    }.get(op)
    with np.errstate(all="ignore"):
        if f is not None:
            return complex(f(*w))
        if op == _S + "divide":
            return complex(complex_divide(np.asarray(w[0]), np.asarray(w[1])))
        if op == _S + "rsqrt":
            return complex(1.0 / np.sqrt(w[0]))
        if op == _S + "logistic":
            return complex(1.0 / (1.0 + np.exp(-w[0])))
        if op == _S + "cbrt":
            return complex(np.power(w[0], 1.0 / 3.0))
        if op == _C + "square":
            return complex(w[0] * w[0])
    return complex(math.nan, math.nan)


def _complex_silent(op, xs) -> bool:
    if op == _S + "negate":  # exact part by part, infinities and NaN included
        return False
    if any(not (math.isfinite(x.real) and math.isfinite(x.imag)) for x in xs):
        return True
    if op in _COMPLEX_POLE_AT_ZERO:
        z = xs[-1] if op == _S + "divide" else xs[0]
        if z == 0:
            return True
        if op == _C + "atanh" and (z == 1 or z == -1):
            return True
        if op == _S + "log_plus_one" and z == -1:
            return True
    if op == _C + "atan" and (xs[0] == 1j or xs[0] == -1j):  # the poles of atan, like atanh's at +-1
        return True
    return False


def _make_complex_value(op, d, val, xs):
    xs = tuple(complex(x) for x in xs)
    if _complex_silent(op, xs):
        val.fixed = _numpy_complex(op, xs)
        return val
    if op == _S + "sign" and xs[0] == 0:  # spec.md "sign": (0.0, 0.0) for a zero argument
        val.fixed = complex(0.0, 0.0)
        return val

    def part(x):
        return _tiny(_sgn(x)) if x == 0 else _MPF(x)

    val.fn, val.args = d.cplx, tuple(_MPC(part(x.real), part(x.imag)) for x in xs)
    val.exact = False  # the stand-ins for zero parts make every evaluation inexact
    # mpmath's complex functions are accurate relative to |z|, not part by part (atanh of a tiny z
    # loses the real part): evaluate twice and trust only the bits both evaluations agree on
    val.checked = True
    return val


# --------------------------------------------------------------------------- #
# the cache and the public API
# --------------------------------------------------------------------------- #

_CACHE: dict[tuple, _Value] = {}
_CACHE_LIMIT = 4_000_000


def clear_cache() -> None:
    """Forget the values computed so far."""
    _CACHE.clear()


def _columns(args, complex_args: bool):
    """Broadcast arguments to f64 (or complex128) columns: ``(shape, [columns], bit-key matrix)``."""
    arrs = np.broadcast_arrays(*[np.asarray(a) for a in args])
    shape = arrs[0].shape
    cols = [wide(a).ravel() for a in arrs]
    parts = []
    for c in cols:
        if c.dtype.kind == "c":
            parts += [np.ascontiguousarray(c.real), np.ascontiguousarray(c.imag)]
        else:
            parts.append(np.ascontiguousarray(c.astype(np.float64)))
    keys = np.stack([p.view(np.uint64) for p in parts], axis=1) if parts else np.zeros((0, 0), np.uint64)
    return shape, cols, keys


def _unique_rows(keys: np.ndarray):
    if keys.shape[0] == 0:
        return keys, np.zeros(0, np.int64)
    if keys.shape[1] == 1:
        u, inv = np.unique(keys[:, 0], return_inverse=True)
        return u[:, None], inv.reshape(-1)
    u, inv = np.unique(keys, axis=0, return_inverse=True)
    return u, inv.reshape(-1)


def _row_args(row: np.ndarray, complex_flags: list[bool]) -> tuple:
    vals = row.view(np.float64).tolist()
    out, i = [], 0
    for c in complex_flags:
        if c:
            out.append(complex(vals[i], vals[i + 1]))
            i += 2
        else:
            out.append(vals[i])
            i += 1
    return tuple(out)


def _check(op: str, dtype):
    if op not in DEFINED_OPS:
        raise KeyError(f"no exact definition for {op}")
    k = kind_of(np.dtype(dtype))
    if k not in ("float", "complex"):
        raise TypeError(f"{op}: {np.dtype(dtype)} is not a float or complex type")


def _values(op: str, args: Sequence[np.ndarray]):
    """The cached :class:`_Value` per unique input, and the inverse index."""
    d = _definition(op)
    flags = [np.asarray(a).dtype.kind == "c" or kind_of(np.asarray(a).dtype) == "complex" for a in args]
    shape, _cols, keys = _columns(args, any(flags))
    u, inv = _unique_rows(keys)
    if len(_CACHE) > _CACHE_LIMIT:
        _CACHE.clear()
    vals = []
    for row in u:
        key = (op,) + tuple(row.tolist())
        v = _CACHE.get(key)
        if v is None:
            v = _make_value(op, d, _row_args(row, flags))
            _CACHE[key] = v
        vals.append(v)
    return shape, vals, inv


def _exact_f64(op, args, dtype):
    ws = np.broadcast_arrays(*[wide(np.asarray(a)) for a in args])
    with np.errstate(all="ignore"):
        r = _EXACT_F64[op](*ws)
        if op == _S + "abs" and r.dtype.kind == "c":
            r = r.real
    return r


# mpmath's working precision (``mpmath.workprec``) is one setting of the whole process: threads
# evaluating at once (an op's blocks on several threads, see engine.codegen._in_pieces; the
# processes of a grid) take turns
_MPMATH = threading.RLock()


def correctly_rounded(op: str, args: Sequence[np.ndarray], dtype) -> np.ndarray:
    """``op`` applied to ``args``, exactly, rounded to nearest-even into ``dtype`` (see module docs).

    ``dtype`` is the result's element type (a real type for ``abs`` of complex numbers). One
    thread at a time (:data:`_MPMATH`)."""
    with _MPMATH:
        return _correctly_rounded(op, args, dtype)


def _correctly_rounded(op: str, args: Sequence[np.ndarray], dtype) -> np.ndarray:
    _check(op, dtype)
    dtype = np.dtype(dtype)
    fmt = format_of(dtype)
    if _in_f64(op, args):
        r = _exact_f64(op, args, dtype)
        return _to_dtype(r, dtype, fmt)
    if op == _S + "abs":
        return _complex_abs(args[0], dtype, fmt)[0]
    shape, vals, inv = _values(op, args)
    rounded = [_round_value(v, fmt) for v in vals]
    cplx = kind_of(dtype) == "complex"
    table = np.array(rounded, dtype=np.complex128 if cplx else np.float64)
    return _to_dtype(table[inv].reshape(shape), dtype, fmt)


def _to_dtype(r: np.ndarray, dtype: np.dtype, fmt: Format) -> np.ndarray:
    """Values already rounded into ``fmt`` (held in f64/complex128) as an array of ``dtype``."""
    with np.errstate(all="ignore"):
        if kind_of(dtype) == "complex":
            return r.astype(dtype)
        if dtype in (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)):
            return np.asarray(r).astype(dtype)
        r = np.asarray(r, dtype=np.float64)
        if not fmt.has_negzero:
            r = np.where(r == 0, 0.0, r)
        return r.astype(np.float32).astype(dtype)


def _complex_abs(x, dtype, fmt):
    """``|z|`` of complex ``x`` (correctly rounded, and the unrounded hi/lo pair)."""
    x = np.asarray(x)
    w = wide(x).ravel()
    keys = np.stack([np.ascontiguousarray(w.real).view(np.uint64), np.ascontiguousarray(w.imag).view(np.uint64)],
                    axis=1) if w.dtype.kind == "c" else np.ascontiguousarray(w).view(np.uint64)[:, None]
    u, inv = _unique_rows(keys)
    rounded, his, los = [], [], []
    for row in u:
        parts = row.view(np.float64).tolist()
        key = (_S + "abs",) + tuple(row.tolist())
        v = _CACHE.get(key)
        if v is None:
            v = _Value()
            v.checked, v.exact = False, False
            re, im = parts[0], parts[1] if len(parts) > 1 else 0.0
            if math.isinf(re) or math.isinf(im):
                v.fixed = math.inf
            elif math.isnan(re) or math.isnan(im):
                v.fixed = math.nan
            elif re == 0 and im == 0:
                v.fixed = 0.0
            else:
                v.fn, v.args = mpmath.hypot, (_MPF(re), _MPF(im))
            _CACHE[key] = v
        rounded.append(_round_value(v, fmt))
        h, lo = _hi_lo(v)
        his.append(h)
        los.append(lo)
    shape = x.shape
    r = _to_dtype(np.array(rounded, np.float64)[inv].reshape(shape), dtype, fmt)
    return r, np.array(his)[inv].reshape(shape), np.array(los)[inv].reshape(shape)


def _hi_lo(v: _Value):
    """The unrounded value as a pair of f64 (complex128) numbers whose sum is it."""
    if v.fixed is not None:
        return v.fixed, complex(0.0, 0.0) if isinstance(v.fixed, complex) else 0.0
    x = v.v

    def split(p, zero, other=None):
        if p == 0:
            return zero, 0.0
        if other is not None and mpmath.isfinite(p) and _from_stand_in(p, other):
            return (-0.0 if p < 0 else 0.0), 0.0
        h = float(p) if mpmath.isfinite(p) or mpmath.isinf(p) else math.nan
        if not math.isfinite(h):
            return h, 0.0
        return h, float(p - h)

    if isinstance(x, mpmath.mpc):
        hr, lr = split(x.real, 0.0, x.imag)
        hi_, li = split(x.imag, 0.0, x.real)
        return complex(hr, hi_), complex(lr, li)
    return split(x, v.zero_value)


def _ulp(hi: np.ndarray, fmt: Format) -> np.ndarray:
    """The spacing of ``fmt`` at ``hi`` (f64), with an unbounded exponent range above."""
    with np.errstate(all="ignore"):
        _, e = np.frexp(np.where(np.isfinite(hi) & (hi != 0), hi, 1.0))
        e = np.maximum(e.astype(np.int64) - 1, fmt.emin)
        return np.ldexp(1.0, (e - (fmt.p - 1)).astype(np.int32))


def _part_error(actual, hi, lo, cr, fmt: Format) -> np.ndarray:
    with np.errstate(all="ignore"):
        a = np.asarray(actual, dtype=np.float64)
        err = np.abs((a - hi) - lo) / _ulp(hi, fmt)
        err = np.where(np.isinf(a) & ~np.isinf(hi), np.inf, err)
        same = (a == cr) | (np.isnan(a) & np.isnan(cr))
        err = np.where(same, np.fmin(err, 0.5), err)
        exact_nan = np.isnan(hi)
        err = np.where(exact_nan, np.where(np.isnan(a), 0.0, np.inf), err)
        exact_inf = np.isinf(hi)
        err = np.where(exact_inf, np.where(a == hi, 0.0, np.where(same, 0.5, np.inf)), err)
        err = np.where(np.isnan(a) & ~exact_nan & ~same, np.inf, err)
        return np.where(np.isnan(err), np.inf, err)


def ulp_error(actual: np.ndarray, op: str, args: Sequence[np.ndarray], dtype) -> np.ndarray:
    """``|actual - exact| / ulp(exact)`` per element, as f64 (see module docs for the definition
    and its exceptions; NaN where :func:`spec_silent`)."""
    _check(op, dtype)
    dtype = np.dtype(dtype)
    fmt = format_of(dtype)
    actual = np.asarray(actual)
    cr = correctly_rounded(op, args, dtype)
    if _in_f64(op, args):
        hi = wide(cr)
        lo = np.zeros_like(hi)
    elif op == _S + "abs":
        _, hi, lo = _complex_abs(args[0], dtype, fmt)
    else:
        shape, vals, inv = _values(op, args)
        unknown = np.array([v.unknown for v in vals], dtype=bool)[inv].reshape(shape)
        pairs = [_hi_lo(v) for v in vals]
        cplx = kind_of(dtype) == "complex"
        ct = np.complex128 if cplx else np.float64
        hi = np.array([p[0] for p in pairs], dtype=ct)[inv].reshape(shape)
        lo = np.array([p[1] for p in pairs], dtype=ct)[inv].reshape(shape)
    a = wide(actual)
    c = wide(cr)
    if kind_of(dtype) == "complex":
        a = np.broadcast_to(a, c.shape)
        err = np.maximum(_part_error(a.real, hi.real, lo.real, c.real, fmt),
                         _part_error(a.imag, hi.imag, lo.imag, c.imag, fmt))
    else:
        err = _part_error(np.broadcast_to(a, c.shape), hi, lo, c, fmt)
    silent = spec_silent(op, args, dtype)
    if not _in_f64(op, args) and op != _S + "abs":
        silent = silent | unknown
    return np.where(silent, np.nan, err)


def spec_silent(op: str, args: Sequence[np.ndarray], dtype=None) -> np.ndarray:
    """Elements whose value the spec (and IEEE 754) leaves to the implementation: poles of
    digamma/polygamma (the sign of infinity, or NaN), ``igamma``/``igammac``/``zeta`` outside their
    domain, complex arguments with an infinite or NaN part or at a pole, and NaN results in a type
    without NaN."""
    arrs = np.broadcast_arrays(*[wide(np.asarray(a)) for a in args])
    shape = arrs[0].shape
    silent = np.zeros(shape, dtype=bool)
    with np.errstate(all="ignore"):
        if any(a.dtype.kind == "c" for a in arrs):
            flat = [a.ravel() for a in arrs]
            s = [_complex_silent(op, tuple(complex(c[i]) for c in flat)) for i in range(flat[0].size)]
            return np.array(s, dtype=bool).reshape(shape)
        x = arrs[-1]
        pole = (x <= 0) & (x == np.floor(x))
        if op == _C + "digamma":
            silent |= pole
        elif op == _C + "polygamma":
            n = arrs[0]
            silent |= pole | ~((n >= 0) & (n == np.floor(n)))
        elif op in (_C + "igamma", _C + "igammac"):
            silent |= (arrs[0] <= 0) | (arrs[1] < 0)
        elif op == _C + "zeta":
            silent |= (arrs[0] < 1) | (arrs[1] <= 0)
    if dtype is not None and not format_of(dtype).has_nan and op in DEFINED_OPS:
        silent |= np.isnan(wide(correctly_rounded_nan_mask(op, args, dtype)))
    return silent


def correctly_rounded_nan_mask(op, args, dtype):
    """f64 array that is NaN where the op's exact value is NaN (for types without NaN)."""
    if _in_f64(op, args):
        return _exact_f64(op, args, dtype)
    if op == _S + "abs":
        return np.zeros(np.asarray(args[0]).shape)
    shape, vals, inv = _values(op, args)
    nan = np.array([(v.fixed is not None and (v.fixed != v.fixed)) for v in vals], dtype=bool)
    return np.where(nan[inv].reshape(shape), np.nan, 0.0)
