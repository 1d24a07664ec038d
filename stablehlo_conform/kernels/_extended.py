"""f64 special functions evaluated in extended precision and rounded once.

SciPy's f64 special functions are accurate to a few ULPs at best (``erfc`` loses hundreds of
ULPs for large arguments and flushes its subnormal tail to zero, ``bessel_i1e`` is off by up to 9
ULPs). The functions here evaluate in :data:`W`, ``np.longdouble`` where it has at least 64
significand bits (:data:`stablehlo_conform.numeric.LONG_OK`: x87 extended precision or binary128), from
series, continued fractions and asymptotic expansions whose truncation error is below ``2**-64``,
and the f64 result is rounded once from there: its error stays within ``0.5 + 2**-8`` ULP
where the evaluation does not cancel. Where ``np.longdouble`` is f64, the same formulas run in
f64 (a few ULPs).

Every function takes and returns arrays of :data:`W`; arguments are f64 values, so that
``x - round(x)``, ``x * x`` split into two f64 numbers and the like are exact.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..numeric import LONG_OK, in_f64, make_complex, two_prod  # noqa: F401 - in_f64 is used as X.in_f64

W = np.longdouble if LONG_OK else np.float64
"""The working type."""

PI = W("3.14159265358979323846264338327950288")
_RSQRT_PI = W("0.564189583547756286948079451560772586")  # 1/sqrt(pi)
_TWO_RSQRT_PI = 2 * _RSQRT_PI
_EULER = W("0.577215664901532860606512090082402431")
_HALF_LOG_2PI = W("0.918938533204672741780329736405617640")

# B_2k / (2k) and B_2k / (2k (2k - 1)), k = 1..8 (Bernoulli numbers as fractions)
_BERNOULLI = [(1, 6), (-1, 30), (1, 42), (-1, 30), (5, 66), (-691, 2730), (7, 6), (-3617, 510)]
_PSI_ASYM = [W(n) / W(d * 2 * k) for k, (n, d) in enumerate(_BERNOULLI, 1)]
_LGAMMA_ASYM = [W(n) / W(d * 2 * k * (2 * k - 1)) for k, (n, d) in enumerate(_BERNOULLI, 1)]


def _f64(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def exp_minus_square(x: np.ndarray) -> np.ndarray:
    """``exp(-x*x)`` for f64 ``x`` with ``|x| < 2**500``: ``x*x = h + l`` split exactly into two f64
    numbers, ``exp(-h) * (1 - l)`` (``l`` is below ``2**-52 h``)."""
    xf = _f64(x)
    h, lo = two_prod(xf, xf)
    return np.exp(-h.astype(W)) * (1 - lo.astype(W))


def _erf_series(x: np.ndarray) -> np.ndarray:
    """``erf(x)`` for ``|x| <= 2``: ``2x/sqrt(pi) exp(-x*x) sum (2x^2)^n / (1*3*...*(2n+1))``
    (positive terms; 45 of them reach ``2**-64`` at ``|x| = 2``)."""
    xw = x.astype(W)
    z = 2 * xw * xw
    term = np.ones_like(xw)
    s = np.ones_like(xw)
    n = 45 if xw.size and np.max(np.abs(xw)) > 1 else 25
    for k in range(1, n):
        term = term * z / (2 * k + 1)
        s = s + term
    return _TWO_RSQRT_PI * xw * exp_minus_square(x) * s


def _erfc_fraction(x: np.ndarray) -> np.ndarray:
    """``erfc(x)`` for ``x >= 1``: ``exp(-x*x)/sqrt(pi) * 2x / (2x^2 + 1 - 1*2 / (2x^2 + 5 -
    3*4 / (2x^2 + 9 - ...)))``, the even part of Laplace's continued fraction, evaluated from
    the tail (160 terms reach ``2**-64`` at 1, 80 at 1.5, 40 at 2, 20 at 3)."""
    xw = x.astype(W)
    z = 2 * xw * xw
    r = np.empty_like(xw)
    for lo, hi, n in ((1.0, 1.5, 160), (1.5, 2.0, 80), (2.0, 3.0, 40), (3.0, np.inf, 20)):
        m = (x >= lo) & (x < hi)
        if not m.any():
            continue
        zm = z[m]
        t = np.zeros_like(zm)
        for k in range(n, 0, -1):
            t = (2 * k - 1) * (2 * k) / (zm + (4 * k + 1) - t)
        r[m] = 2 * xw[m] / (zm + 1 - t)
    return _RSQRT_PI * exp_minus_square(x) * r


def erf(x) -> np.ndarray:
    """``erf`` of f64 ``x`` (finite or not) in :data:`W`."""
    x = _f64(x)
    a = np.abs(x)
    r = np.where(np.isnan(x), np.nan, np.sign(x)).astype(W)  # +-1 from |x| >= 6 on
    small = a <= 2
    r[small] = _erf_series(x[small])
    mid = (a > 2) & (a < 6)
    r[mid] = np.copysign(1 - _erfc_fraction(a[mid]), x[mid])
    return np.where(x == 0, x, r)


def erfc(x) -> np.ndarray:
    """``erfc`` of f64 ``x`` in :data:`W` (not flushed: positive up to ``x = 27.3`` in f64)."""
    x = _f64(x)
    r = np.where(np.isnan(x), np.nan, np.where(x > 0, 0.0, 2.0)).astype(W)
    near = (x < 1) & (x > -1.5)
    r[near] = 1 - _erf_series(x[near])
    tail = (x >= 1) & (x < 28)
    r[tail] = _erfc_fraction(x[tail])
    neg = (x <= -1.5) & (x > -6)
    r[neg] = 2 - _erfc_fraction(-x[neg])
    return r


def erf_inv(x, y0) -> np.ndarray:
    """``erf_inv`` of f64 ``x`` in :data:`W`: one Newton step from the f64 estimate ``y0``, with
    ``erf(y) - x`` formed as ``(1 - |x|) - erfc(|y|)`` for ``|x| > 1/2`` (no cancellation)."""
    x = _f64(x)
    y0 = _f64(y0)
    ok = np.isfinite(y0) & (y0 != 0)
    xs, ys = x[ok], y0[ok]
    a = np.abs(xs)
    d = np.empty(xs.shape, W)
    small = a <= 0.5
    d[small] = erf(ys[small]) - xs[small].astype(W)
    big = ~small
    d[big] = np.sign(xs[big]) * ((1 - a[big]).astype(W) - erfc(np.abs(ys[big])))
    r = y0.astype(W)
    r[ok] = ys.astype(W) - d / (_TWO_RSQRT_PI * exp_minus_square(ys))
    return r


def bessel_i1e(x) -> np.ndarray:
    """``exp(-|x|) I1(|x|)``, odd, in :data:`W`: the power series ``exp(-|x|) (x/2) sum
    (x^2/4)^k / (k! (k+1)!)`` (positive terms) for ``|x| < 25``, the asymptotic series
    ``(2 pi |x|)^-1/2 sum_k (-1)^k prod_{j<=k} (4 - (2j-1)^2) / (8 j |x|)`` beyond (its terms fall
    below ``2**-64`` before they grow)."""
    x = _f64(x)
    a = np.abs(x)
    r = np.where(np.isnan(x), np.nan, 0.0).astype(W)
    small = a < 25
    aw = a[small].astype(W)
    q = aw * aw / 4
    term = np.ones_like(aw)
    s = np.ones_like(aw)
    n = 70 if aw.size and np.max(aw) > 5 else 30
    for k in range(1, n):
        term = term * q / (k * (k + 1))
        s = s + term
    r[small] = np.exp(-aw) * (aw / 2) * s
    big = (a >= 25) & np.isfinite(a)
    aw = a[big].astype(W)
    term = np.ones_like(aw)
    s = np.ones_like(aw)
    for j in range(1, 40):
        term = -term * (4 - (2 * j - 1) ** 2) / (8 * j * aw)
        s = s + term
    r[big] = s / np.sqrt(2 * PI * aw)
    return np.where(x == 0, x, np.copysign(r, x))


@lru_cache(maxsize=None)
def _taylor(kind: str) -> tuple:
    """``(x0_hi, x0_lo, coefficients)``: the Taylor coefficients (computed once with mpmath,
    highest order first) of digamma at its positive root ``x0 = x0_hi + x0_lo`` (``"psi"``), of
    lgamma at 1 (``"lgamma1"``: ``(-1)^k zeta(k)/k``) and at 2 (``"lgamma2"``: ``(-1)^k
    (zeta(k) - 1)/k``)."""
    import mpmath

    with mpmath.workprec(160):
        x0 = mpmath.mpf(1 if kind == "lgamma1" else 2)
        if kind == "psi":
            x0 = mpmath.findroot(mpmath.digamma, mpmath.mpf("1.4616321449683622"))
            cs = [mpmath.polygamma(k, x0) / mpmath.factorial(k) for k in range(1, 60)]
        elif kind == "lgamma1":
            cs = [-mpmath.euler] + [(-1) ** k * mpmath.zeta(k) / k for k in range(2, 90)]
        else:
            cs = [1 - mpmath.euler] + [(-1) ** k * (mpmath.zeta(k) - 1) / k for k in range(2, 90)]
        hi = float(x0)
        return hi, W(mpmath.nstr(x0 - hi, 40)), tuple(W(mpmath.nstr(c, 40)) for c in reversed(cs))


def _horner_t(cs, t):
    """``t * sum cs[::-1][k] t^k`` (``cs`` highest order first)."""
    s = np.zeros_like(t)
    for c in cs:
        s = s * t + c
    return s * t


def _shift_up(x: np.ndarray, to: float):
    """``(y, inv)``: ``y = x + n >= to`` and ``inv = 1/x + ... + 1/(x + n - 1)``."""
    y = x.copy()
    inv = np.zeros_like(x)
    while True:
        m = y < to
        if not m.any():
            return y, inv
        inv = np.where(m, inv + 1 / y, inv)
        y = np.where(m, y + 1, y)


def _digamma_positive(x: np.ndarray) -> np.ndarray:
    """digamma of positive :data:`W` values: Taylor series at the positive root for ``|x - x0| <
    1/2`` (the recurrence cancels there), else the recurrence up to 16 and the asymptotic
    series ``log y - 1/(2y) - sum B_2k / (2k y^2k)``."""
    y, inv = _shift_up(x, 16.0)
    y2 = 1 / (y * y)
    s = np.zeros_like(y)
    for c in reversed(_PSI_ASYM):
        s = s * y2 + c
    r = np.log(y) - 1 / (2 * y) - s * y2 - inv
    hi, lo, cs = _taylor("psi")
    near = np.abs(x - hi) < 0.5
    if near.any():
        r[near] = _horner_t(cs, (x[near] - hi) - lo)
    return r


def digamma(x) -> np.ndarray:
    """digamma of f64 ``x`` in :data:`W`; ``x < 0`` by reflection, ``psi(1 - x) - pi cot(pi r)``
    with ``r = x - round(x)`` exact (no loss of accuracy near the poles). NaN at the poles and
    at ``-inf`` (the caller fixes the sign of zero and the poles)."""
    x = _f64(x)
    r = np.full(x.shape, np.nan, W)
    pos = (x > 0) & np.isfinite(x)
    r[pos] = _digamma_positive(x[pos].astype(W))
    r[x == np.inf] = np.inf
    neg = (x < 0) & np.isfinite(x) & (x != np.floor(x))
    xn = x[neg]
    red = xn - np.round(xn)
    r[neg] = _digamma_positive(1 - xn.astype(W)) - PI / np.tan(PI * red.astype(W))
    return r


def _lgamma_positive(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    """lgamma of positive :data:`W` values ``x``, ``t = x - 1`` given exactly: Taylor series at 1
    and 2 (``(-1)^k zeta(k)/k t^k``) on ``[0, 2.5)``, the recurrence down to ``[1.5, 2.5)`` on
    ``[2.5, 16)``, Stirling's series from 16 on; ``-log x - euler x`` below ``2**-32``."""
    r = np.empty_like(x)
    tiny = x < 2.0 ** -32
    r[tiny] = -np.log(x[tiny]) - _EULER * x[tiny]
    low = (x >= 2.0 ** -32) & (x < 1.5)
    if low.any():
        xl = x[low]
        small = xl < 0.5  # lgamma(x) = lgamma(1 + x) - log(x)
        tl = np.where(small, xl, t[low])
        r[low] = _horner_t(_taylor("lgamma1")[2], tl) - np.where(small, np.log(xl), 0)
    mid = (x >= 1.5) & (x < 16)
    if mid.any():
        y = x[mid]  # down to [1.5, 2.5): lgamma(y + n) = lgamma(y) + log(y ... (y + n - 1))
        prod = np.ones_like(y)
        while True:
            m = y >= 2.5
            if not m.any():
                break
            y = np.where(m, y - 1, y)
            prod = np.where(m, prod * y, prod)
        r[mid] = _horner_t(_taylor("lgamma2")[2], y - 2) + np.log(prod)
    big = x >= 16
    xb = x[big]
    y2 = 1 / (xb * xb)
    s = np.zeros_like(xb)
    for c in reversed(_LGAMMA_ASYM):
        s = s * y2 + c
    r[big] = (xb - W(0.5)) * np.log(xb) - xb + _HALF_LOG_2PI + s / xb
    return r


def lgamma(x) -> np.ndarray:
    """``log|gamma(x)|`` of f64 ``x`` in :data:`W`; +inf at the poles and at +-inf; ``x < 0``
    by reflection, ``log(pi / |sin(pi r)|) - lgamma(1 - x)`` with ``r = x - round(x)`` exact."""
    x = _f64(x)
    r = np.where(np.isnan(x), np.nan, np.inf).astype(W)
    pos = (x > 0) & np.isfinite(x)
    xp = x[pos].astype(W)
    r[pos] = _lgamma_positive(xp, xp - 1)
    neg = (x < 0) & (x != np.floor(x))
    xn = x[neg]
    tiny = xn > -(2.0 ** -32)
    red = (xn - np.round(xn)).astype(W)
    refl = np.log(PI / np.abs(np.sin(PI * red))) - _lgamma_positive(1 - xn.astype(W), -xn.astype(W))
    r[neg] = np.where(tiny, -np.log(-xn.astype(W)) - _EULER * xn.astype(W), refl)
    return r + 0  # lgamma(1) = lgamma(2) = +0


CW = np.clongdouble if LONG_OK else np.complex128
"""The complex working type."""


def complex_expm1(z):
    """``exp(z) - 1 = (expm1(x) cos y - 2 sin(y/2)^2) + i exp(x) sin y`` (no cancellation for
    small ``|z|``; the imaginary part keeps a zero ``y`` where ``exp(x)`` overflows)."""
    x, y = z.real, z.imag
    h = np.sin(y / 2)
    im = np.where(y == 0, y, np.exp(x) * np.sin(y))
    return make_complex(np.expm1(x) * np.cos(y) - 2 * h * h, im, z.dtype)


def complex_log1p(z):
    """``log(1 + z) = log|1 + z| + i atan2(y, 1 + x)``, the modulus as ``log1p(u) / 2`` with
    ``u = 2x + x^2 + y^2`` (the squares split exactly into two f64 numbers, so that ``u`` does
    not cancel near the circle ``|1 + z| = 1``) unless ``|u| >= 3/4`` (then ``log|1 + z|``)."""
    x, y = z.real, z.imag
    xp = 1 + x
    small = (np.abs(x) < 4) & (np.abs(y) < 4)
    xf = np.where(small, x, 0).astype(np.float64)  # the parts are f64 values
    yf = np.where(small, y, 0).astype(np.float64)
    hx, lx = two_prod(xf, xf)
    hy, ly = two_prod(yf, yf)
    u = ((2 * xf.astype(x.dtype) + hy) + hx) + (lx.astype(x.dtype) + ly)
    near = small & (np.abs(u) < 0.75)
    re = np.where(near, np.log1p(np.where(near, u, 0)) / 2, np.log(np.hypot(xp, y)))
    return make_complex(re, np.arctan2(y, xp), z.dtype)


def complex_logistic(z):
    """``1 / (1 + exp(-z))``: ``(1 + tanh(z/2)) / 2`` (``1 + exp(-z)`` cancels near the poles
    ``z = (2k + 1) pi i``, where the real part is exactly 1/2), and ``exp(z) / (1 + exp(z))``
    for ``re z < -1`` (no cancellation in ``1 + tanh``, no overflow of ``exp(-z)``). Beyond
    ``|re z| = 50``, where ``exp(-|re z|)`` is below ``2**-72``, the first term of the series:
    ``exp(z)`` on the left and ``1 + exp(-x) sin(y) i`` on the right, from their parts, so that a
    part that underflows keeps the sign of ``cos y`` or ``sin y``."""
    x, y = z.real, z.imag
    left = x < -1
    e = np.exp(np.where(left, z, 0))
    q = e / (1 + e)
    t = np.tanh(make_complex(np.where(left, 0, x) / 2, np.where(left, 0, y) / 2, z.dtype))  # z/2 by parts
    # the parts of 1 + t are added as reals (a complex 1 + t turns a -0 imaginary part into +0);
    # im(e / (1 + e)) = im(e) / |1 + e|**2 has the sign of im(e)
    re = np.where(left, q.real, (1 + t.real) / 2)
    im = np.where(left, np.copysign(q.imag, e.imag), t.imag / 2)
    far_left, far_right = x < -50, (x > 50) & np.isfinite(x)
    if far_left.any() or far_right.any():
        ex = np.exp(np.where(far_left, x, np.where(far_right, -x, 0)))
        re = np.where(far_left, ex * np.cos(y), np.where(far_right, 1, re))
        im = np.where(far_left | far_right, ex * np.sin(y), im)
    return make_complex(re, im, z.dtype)


def complex_cbrt(z):
    """The principal cube root ``|z|^(1/3) exp(i arg(z) / 3)`` (also at zero: ``+0`` real part,
    the imaginary part of the sign of ``im z``, as the limit along the principal branch)."""
    r = np.cbrt(np.hypot(z.real, z.imag))
    t = np.arctan2(z.imag, z.real) / 3
    return make_complex(r * np.cos(t), r * np.sin(t), z.dtype)


def complex_rsqrt(z):
    """``1 / sqrt(z) = conj(sqrt(z)) / |z|``, from the parts: on the positive real axis
    ``rsqrt(x + 0i) = x**-1/2 - 0i``, the limit along the principal branch (the imaginary part
    of ``rsqrt(x + iy)`` is ``-y / (2 x**3/2)`` to first order); a complex quotient
    ``1 / (sqrt(x) + 0i)`` gives ``+0``. ``1 / sqrt(z)`` at zero and at infinite or NaN parts."""
    s = np.sqrt(z)
    h = np.abs(z)
    ok = np.isfinite(h) & (h > 0) & np.isfinite(s.real) & np.isfinite(s.imag)
    safe = np.where(ok, h, 1)
    q = 1 / np.where(ok, 1, s)
    return make_complex(np.where(ok, s.real / safe, q.real), np.where(ok, -s.imag / safe, q.imag), z.dtype)

