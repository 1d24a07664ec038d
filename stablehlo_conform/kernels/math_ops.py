"""The MLIR ``math`` dialect on scalars and tensors.

Float functions are evaluated in f64 and rounded once to the result type (f16,
bf16 and the small float formats, f32), or natively in f64; ``math.cbrt`` is
evaluated as ``stablehlo.cbrt`` (spec.md "cbrt"), one cube-root policy. Integer functions
(``absi``, ``ctlz``, ``cttz``, ``ctpop``, ``ipowi``) use the two's complement
bits of the signless operand and wrap.

The ``complex`` dialect (scalar complex values) is here too: its functions
are evaluated in complex128 and rounded once to the result type.
"""

from __future__ import annotations

import numpy as np
from ._lazy import special

from .arith import (
    as_signed,
    as_unsigned,
    bits_of,
    float_view,
    operand_element,
    result_element,
    to_float,
    wrap,
)
from ..numeric import make_complex, two_prod, two_sum
from .elementwise import apply
from .float_math import cbrt as _cbrt
from .registry import kernel, kernel_of

_U64 = np.dtype(np.uint64)


def _f64(x) -> np.ndarray:
    return np.asarray(x).astype(np.float64)


def _unary_float(name, fn):
    def k(op, a):
        dt = op.result_dtype(0)
        with np.errstate(all="ignore"):
            return (to_float(fn(_f64(a)), dt),)

    return kernel_of(k, name, doc=f"``{name}`` (MLIR math dialect), evaluated in f64 and rounded once.")


def _binary_float(name, fn):
    def k(op, a, b):
        dt = op.result_dtype(0)
        with np.errstate(all="ignore"):
            return (to_float(fn(_f64(a), _f64(b)), dt),)

    return kernel_of(k, name, doc=f"``{name}`` (MLIR math dialect), evaluated in f64 and rounded once.")


def round_half_away(x):
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.copysign(1.0, x), t)


_unary_float("math.absf", np.abs)
_unary_float("math.ceil", np.ceil)
_unary_float("math.floor", np.floor)
_unary_float("math.trunc", np.trunc)
_unary_float("math.round", round_half_away)
_unary_float("math.roundeven", np.rint)
_unary_float("math.sqrt", np.sqrt)
_unary_float("math.rsqrt", lambda x: 1.0 / np.sqrt(x))
_unary_float("math.exp", np.exp)
_unary_float("math.exp2", np.exp2)
_unary_float("math.expm1", np.expm1)
_unary_float("math.log", np.log)
_unary_float("math.log2", np.log2)
_unary_float("math.log10", np.log10)

_unary_float("math.log1p", np.log1p)
_unary_float("math.sin", np.sin)
_unary_float("math.cos", np.cos)
_unary_float("math.tan", np.tan)
_unary_float("math.asin", np.arcsin)
_unary_float("math.acos", np.arccos)
_unary_float("math.atan", np.arctan)
_unary_float("math.sinh", np.sinh)
_unary_float("math.cosh", np.cosh)
_unary_float("math.tanh", np.tanh)
_unary_float("math.asinh", np.arcsinh)
_unary_float("math.acosh", np.arccosh)
_unary_float("math.atanh", np.arctanh)
_unary_float("math.erf", special.erf)
_unary_float("math.erfc", special.erfc)
_binary_float("math.atan2", np.arctan2)
_binary_float("math.powf", np.power)
_binary_float("math.copysign", np.copysign)


@kernel("math.cbrt")
def math_cbrt(op, a):
    """``math.cbrt``: evaluated as ``stablehlo.cbrt`` is (one cube-root policy: an f64 result
    in extended precision, results near a rounding midpoint settled by the exact oracle)."""
    return apply(op, _cbrt, (a,))


@kernel("math.sincos")
def sincos(op, a):
    x = _f64(a)
    with np.errstate(all="ignore"):
        return (to_float(np.sin(x), op.result_dtype(0)), to_float(np.cos(x), op.result_dtype(1)))


@kernel("math.clampf")
def clampf(op, x, lo, hi):
    """``min(max(x, lo), hi)`` (NaN propagates)."""
    dt = op.result_dtype(0)
    with np.errstate(all="ignore"):
        return (to_float(np.minimum(np.maximum(_f64(x), _f64(lo)), _f64(hi)), dt),)


@kernel("math.fma")
def fma(op, a, b, c):
    """``a * b + c`` with one rounding.

    For f32 and narrower the f64 product is exact and the sum is rounded to
    f64 and then to the result type. For f64 the product and sum are carried
    as error-free pairs (Dekker/Knuth), giving the fused result in all but
    pathological halfway cases.
    """
    dt = op.result_dtype(0)
    x, y, z = _f64(a), _f64(b), _f64(c)
    with np.errstate(all="ignore"):
        if dt != np.float64:
            return (to_float(x * y + z, dt),)
        p, e = two_prod(x, y)
        s, t = two_sum(p, z)
        r = s + (t + e)
        plain = x * y + z
        r = np.where(np.isfinite(r), r, plain)
    return (to_float(r, dt),)


@kernel("math.fpowi")
def fpowi(op, a, n):
    """Float base raised to a (signless) integer power."""
    dt = op.result_dtype(0)
    e = as_signed(n, bits_of(operand_element(op, 1))).astype(np.float64)
    with np.errstate(all="ignore"):
        return (to_float(np.power(_f64(a), e), dt),)


@kernel("math.ipowi")
def ipowi(op, a, n):
    """Integer power with wrapping; a negative exponent gives 1 for base 1,
    +-1 for base -1 and 0 otherwise (the integer part of the quotient)."""
    el = result_element(op)
    bits = bits_of(el)
    base = as_unsigned(a, bits)
    sb = as_signed(a, bits)
    exp = as_signed(n, bits)
    e = np.where(exp < 0, 0, exp).astype(_U64)
    result = np.ones(np.broadcast_shapes(base.shape, e.shape), dtype=_U64)
    b = np.broadcast_to(base, result.shape).copy()
    e = np.broadcast_to(e, result.shape).copy()
    with np.errstate(all="ignore"):
        for _ in range(bits):
            if not e.any():
                break
            result = np.where((e & np.uint64(1)) != 0, result * b, result)
            b = b * b
            e = e >> np.uint64(1)
    odd = (exp & 1) != 0
    neg_val = np.where(sb == 1, 1, np.where(sb == -1, np.where(odd, -1, 1), 0)).astype(np.int64)
    out = np.where(exp < 0, np.asarray(neg_val).view(_U64), result)
    return (wrap(out, el),)


@kernel("math.absi")
def absi(op, a):
    el = result_element(op)
    with np.errstate(all="ignore"):
        return (wrap(np.abs(as_signed(a, bits_of(el))), el),)


def _popcount(u: np.ndarray) -> np.ndarray:
    return np.bitwise_count(u).astype(np.int64)


def _bit_length(u: np.ndarray) -> np.ndarray:
    v = u.copy()
    for s in (1, 2, 4, 8, 16, 32):
        v = v | (v >> np.uint64(s))
    return _popcount(v)


@kernel("math.ctpop")
def ctpop(op, a):
    el = result_element(op)
    return (wrap(_popcount(as_unsigned(a, bits_of(el))), el),)


@kernel("math.ctlz")
def ctlz(op, a):
    el = result_element(op)
    bits = bits_of(el)
    return (wrap(bits - _bit_length(as_unsigned(a, bits)), el),)


@kernel("math.cttz")
def cttz(op, a):
    el = result_element(op)
    bits = bits_of(el)
    u = as_unsigned(a, bits)
    with np.errstate(all="ignore"):
        low = u & (~u + np.uint64(1))
        n = _popcount(low - np.uint64(1))
    return (wrap(np.where(u == 0, bits, n), el),)


def _float_predicate(fn):
    def k(op, a):
        with np.errstate(all="ignore"):
            return (np.asarray(fn(float_view(a)), dtype=np.bool_),)

    return k


kernel("math.isnan")(_float_predicate(np.isnan))
kernel("math.isinf")(_float_predicate(np.isinf))
kernel("math.isfinite")(_float_predicate(np.isfinite))


@kernel("math.isnormal")
def isnormal(op, a):
    import ml_dtypes

    x = np.asarray(a)
    dt = operand_element(op).dtype
    try:
        tiny = float(np.finfo(dt).tiny)
    except (ValueError, TypeError):
        tiny = float(ml_dtypes.finfo(dt).smallest_normal)
    xf = float_view(x)
    return (np.asarray(np.isfinite(xf) & (np.abs(xf) >= tiny), dtype=np.bool_),)


# the complex dialect ------------------------------------------------------------
#
# Complex values are complex64/complex128 arrays; functions are evaluated in
# complex128 and rounded once to the result type.


def _c128(x) -> np.ndarray:
    return np.asarray(x).astype(np.complex128)


def _to_result(op, v, i: int = 0) -> np.ndarray:
    dt = op.result_dtype(i)
    with np.errstate(all="ignore"):
        return np.asarray(np.asarray(v).astype(dt), dtype=dt)


def _complex_unary(name, fn):
    def k(op, a):
        with np.errstate(all="ignore"):
            return (_to_result(op, fn(_c128(a))),)

    return kernel_of(k, name, doc=f"``{name}`` (MLIR complex dialect), evaluated in complex128.")


def _complex_binary(name, fn):
    def k(op, a, b):
        with np.errstate(all="ignore"):
            return (_to_result(op, fn(_c128(a), _c128(b))),)

    return kernel_of(k, name, doc=f"``{name}`` (MLIR complex dialect), evaluated in complex128.")


@kernel("complex.constant")
def complex_constant(op):
    v = op.attr("value")
    re, im = (float(x) for x in v)
    return (_to_result(op, complex(re, im)),)


@kernel("complex.create")
def complex_create(op, re, im):
    return (_to_result(op, make_complex(np.asarray(re).astype(np.float64), np.asarray(im).astype(np.float64))),)


@kernel("complex.re")
def complex_re(op, z):
    return (_to_result(op, np.real(np.asarray(z))),)


@kernel("complex.im")
def complex_im(op, z):
    return (_to_result(op, np.imag(np.asarray(z))),)


@kernel("complex.abs")
def complex_abs(op, z):
    with np.errstate(all="ignore"):
        return (_to_result(op, np.abs(_c128(z))),)


@kernel("complex.angle")
def complex_angle(op, z):
    with np.errstate(all="ignore"):
        return (_to_result(op, np.angle(_c128(z))),)


@kernel("complex.eq")
def complex_eq(op, a, b):
    return (np.asarray(_c128(a) == _c128(b), dtype=np.bool_),)


@kernel("complex.neq")
def complex_neq(op, a, b):
    return (np.asarray(_c128(a) != _c128(b), dtype=np.bool_),)


def _complex_sign(z):
    r = np.abs(z)
    return np.where(r == 0, z, z / np.where(r == 0, 1.0, r))


_complex_unary("complex.neg", np.negative)
_complex_unary("complex.conj", np.conj)
_complex_unary("complex.exp", np.exp)
_complex_unary("complex.expm1", np.expm1)
_complex_unary("complex.log", np.log)
_complex_unary("complex.log1p", np.log1p)
_complex_unary("complex.sqrt", np.sqrt)
_complex_unary("complex.rsqrt", lambda z: 1.0 / np.sqrt(z))
_complex_unary("complex.sin", np.sin)
_complex_unary("complex.cos", np.cos)
_complex_unary("complex.tan", np.tan)
_complex_unary("complex.tanh", np.tanh)
_complex_unary("complex.sign", _complex_sign)
_complex_binary("complex.add", np.add)
_complex_binary("complex.sub", np.subtract)
_complex_binary("complex.mul", np.multiply)
_complex_binary("complex.div", np.divide)
_complex_binary("complex.pow", np.power)
