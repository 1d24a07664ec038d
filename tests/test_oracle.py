"""The arbitrary-precision oracle: correct rounding into every float type, IEEE special cases,
signed zeros on branch cuts, and the ULP-error definition. Expected values are worked out by hand
in the comments (and were checked with mpmath at 200 bits)."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from stablehlo_conform.oracle import DEFINED_OPS, correctly_rounded, spec_silent, ulp_error
from stablehlo_conform.oracle.exact import format_of


def cr(op, *args, dtype=None):
    args = [np.asarray(a) for a in args]
    return correctly_rounded(op, args, dtype or args[0].dtype)


def bits_equal(a, b):
    a, b = np.asarray(a), np.asarray(b, dtype=np.asarray(a).dtype)
    wa, wb = a.astype(np.float64), b.astype(np.float64)
    return bool(np.all(((wa == wb) & (np.signbit(wa) == np.signbit(wb))) | (np.isnan(wa) & np.isnan(wb))))


def test_defined_ops_cover_unary_binary_and_chlo():
    for op in ("stablehlo.exponential", "stablehlo.atan2", "stablehlo.power", "stablehlo.divide",
               "chlo.erf_inv", "chlo.lgamma", "chlo.bessel_i1e", "chlo.zeta"):
        assert op in DEFINED_OPS
    with pytest.raises(KeyError):
        cr("stablehlo.add_nonexistent", np.float32([1]))


def test_sinh_golden_of_the_official_testdata_is_7_ulp_off():
    # sinh(-10.285651) = -14654.518549...; f32 spacing there is 2**-10 = 0.0009765625, and the
    # nearest f32 is -14654.5185546875 (printed -14654.519); the golden -14654.5254 is 7 spacings away
    x = np.float32([-10.285651])
    r = cr("chlo.sinh", x)
    assert r[0] == np.float32(-14654.5185546875)
    err = ulp_error(np.float32([-14654.5254]), "chlo.sinh", [x], np.float32)
    assert 6.5 < err[0] < 7.5
    assert ulp_error(r, "chlo.sinh", [x], np.float32)[0] <= 0.5


def test_atan2_midpoint_is_resolved():
    # atan2(y, 2) with y the largest f32 subnormal lies just below the midpoint y/2 (see
    # test_elementwise.test_atan2_rounds_once_on_a_midpoint): 4194303 * 2**-149
    y = np.float32([(2 ** 23 - 1) * 2.0 ** -149])
    assert cr("stablehlo.atan2", y, np.float32([2]))[0] == np.float32(4194303 * 2.0 ** -149)


def test_exact_midpoint_rounds_to_even():
    # 5**2 = 25 = 11001b needs 5 significant bits; f8E4M3 has 4: 25 is the midpoint of 24 and 26,
    # ties to even (24 = 1.100b * 2**4) gives 24; 7**2 = 49 = 110001b lies between 48 and 52, nearer 48
    x = np.array([5.0, 7.0], ml_dtypes.float8_e4m3fn)
    r = cr("stablehlo.power", x, np.array([2.0, 2.0], ml_dtypes.float8_e4m3fn))
    assert r.astype(np.float32).tolist() == [24.0, 48.0]


def test_overflow_follows_each_format():
    # exp(20) = 4.85e8 overflows every 8-bit type: inf in f8E5M2 (has inf), NaN in f8E4M3FN
    # (no inf), the largest value in f4E2M1FN (6, no inf or NaN: saturates like ml_dtypes)
    x = np.float32([20.0])
    assert np.isinf(cr("stablehlo.exponential", x.astype(ml_dtypes.float8_e5m2)).astype(np.float32)[0])
    assert np.isnan(cr("stablehlo.exponential", x.astype(ml_dtypes.float8_e4m3fn)).astype(np.float32)[0])
    assert cr("stablehlo.exponential", np.array([4.0], ml_dtypes.float4_e2m1fn)).astype(np.float32)[0] == 6.0
    # just below the f32 threshold: exp(88.72283) = 3.4028e38 < max; the next f32 overflows
    f = format_of(np.float32)
    assert f.p == 24 and f.emin == -126 and f.has_inf


def test_subnormal_results_and_fnuz_zero():
    # exp(-100) = 3.72e-44 = 26.55 units of 2**-149: rounds to 27 units in f32
    assert cr("stablehlo.exponential", np.float32([-100.0]))[0] == np.float32(27 * 2.0 ** -149)
    # sin(-0) = -0, but f8E4M3FNUZ has no -0: +0
    z = cr("stablehlo.sine", np.array([-0.0], ml_dtypes.float8_e4m3fnuz)).astype(np.float32)
    assert z[0] == 0 and not np.signbit(z[0])
    assert np.signbit(cr("stablehlo.sine", np.float16([-0.0]))[0])


def test_ieee_special_cases():
    nan, inf = math.nan, math.inf
    # pow: pow(x, +-0) = 1 even for NaN x; pow(+-0, -3) = +-inf; pow(-0, 2) = +0; pow(-1, +-inf) = 1;
    # pow(-2, 0.5) = NaN; pow(-8, 1/3 rounded) = NaN (not an integer exponent)
    x = np.float64([nan, -0.0, -0.0, -1.0, -2.0, -inf, -inf])
    y = np.float64([0.0, -3.0, 2.0, inf, 0.5, -3.0, 2.0])
    r = cr("stablehlo.power", x, y)
    assert bits_equal(r, [1.0, -inf, 0.0, 1.0, nan, -0.0, inf])
    # atan2: (+-0, -0) = +-pi, (-0, +0) = -0, (1, -inf) = pi, (-inf, +inf) = -pi/4
    y = np.float64([0.0, -0.0, -0.0, 1.0, -inf])
    x = np.float64([-0.0, -0.0, 0.0, -inf, inf])
    assert bits_equal(cr("stablehlo.atan2", y, x), [math.pi, -math.pi, -0.0, math.pi, -math.pi / 4])
    # the odd functions keep -0; lgamma(-inf) = lgamma(0) = +inf; erf_inv(+-1) = +-inf; log(-0) = -inf
    assert bits_equal(cr("chlo.erf_inv", np.float32([-0.0, 1.0, -1.0])), [-0.0, inf, -inf])
    assert bits_equal(cr("chlo.bessel_i1e", np.float32([-0.0, -inf])), [-0.0, -0.0])
    assert bits_equal(cr("chlo.lgamma", np.float32([-inf, 0.0, -2.0, 1.0])), [inf, inf, inf, 0.0])
    assert bits_equal(cr("stablehlo.log", np.float32([-0.0, -1.0])), [-inf, nan])
    # rsqrt(-0) = -inf (IEEE rSqrt); expm1(-0) = -0; 1 - 1 = +0, -0 + -0 = -0
    assert bits_equal(cr("stablehlo.rsqrt", np.float32([-0.0])), [-inf])
    assert bits_equal(cr("stablehlo.exponential_minus_one", np.float32([-0.0])), [-0.0])
    assert bits_equal(cr("stablehlo.subtract", np.float32([1.0, -0.0]), np.float32([1.0, 0.0])), [0.0, -0.0])


def test_complex_branch_cuts_follow_the_signed_zero():
    # sqrt(-4 -+ 0i) = 0 -+ 2i; log(-1 - 0i) = 0 - pi i
    z = np.complex128([complex(-4, -0.0), complex(-4, 0.0)])
    r = cr("stablehlo.sqrt", z)
    assert r.tolist() == [-2j, 2j] and np.signbit(r.imag[0]) and not np.signbit(r.real[0])
    r = cr("stablehlo.log", np.complex64([complex(-1, -0.0)]))
    assert r[0] == np.complex64(complex(0, -math.pi))
    # (1 - 0i) / (1 + 0i) = 1 - 0i
    r = cr("stablehlo.divide", np.complex128([complex(1, -0.0)]), np.complex128([1 + 0j]))
    assert r[0] == 1 and np.signbit(r[0].imag)
    # abs(3 + 4i) = 5 into a real type
    assert cr("stablehlo.abs", np.complex64([3 + 4j]), dtype=np.float32)[0] == 5.0


def test_a_zero_part_that_cancels_at_every_precision_takes_the_sign_of_its_limit():
    # C99 G.6.1.1: cacos(conj z) = conj(cacos z) and cacos(x + 0i) = acos(x) - 0i on (-1, 1) (the
    # imaginary part of acos(x + iy) is -y / sqrt(1 - x**2) to first order); catanh is odd and
    # catanh(+0 + iy) = +0 + i atan(y), so catanh(-0 - 10i) = -0 - i atan(10). mpmath gives those
    # zero parts as exactly 0 at every precision (log of 1 plus the stand-in for the zero part)
    z = np.complex64([complex(0.25, 0.0), complex(0.25, -0.0)])
    r = cr("chlo.acos", z)
    assert r.real.tolist() == [np.float32(math.acos(0.25))] * 2
    assert np.signbit(r.imag).tolist() == [True, False] and r.imag.tolist() == [0.0, 0.0]
    z = np.complex64([complex(-0.0, -10.0)])
    r = cr("chlo.atanh", z)
    assert r.imag[0] == np.float32(-math.atan(10.0)) and r.real[0] == 0 and np.signbit(r.real[0])


def test_a_tiny_part_of_a_complex_value_is_not_lost_to_cancellation():
    # acos(x + iy) = pi/2 - x - iy + O(|z|**3) for a tiny z: with x = -3.5135353e-16, y = -5.9446255e-33
    # (f32 values) the imaginary part is -y to far below an ULP (mpmath at 200 bits:
    # 5.9446255423220070333848591631017103236700430235127906048587e-33); mpmath's formula gives it
    # as exactly 0 at 64 and 96 bits
    z = np.complex64([complex(np.float32(-3.5135353e-16), np.float32(-5.9446255e-33))])
    r = cr("chlo.acos", z)
    assert r[0].real == np.float32(1.5707963267948966) and r[0].imag == -z[0].imag
    r = cr("chlo.acos", z.astype(np.complex128))
    assert r[0].imag == 5.9446255423220070e-33 == -float(z[0].imag)
    # a part that is exactly zero stays zero: (1 + i)**2 = 0 + 2i
    assert cr("chlo.square", np.complex64([1 + 1j]))[0] == 2j


def test_acosh_below_its_cut_and_the_poles_of_atan():
    # acosh(x -+ 0i) = 0 -+ i acos(x) on (-1, 1) (C99 G.6.2.1: acosh(conj z) = conj(acosh z));
    # acos(-0.25) = 1.8234765819369754 (pi/2 + asin(0.25) = 1.5707963267948966 + 0.25268025514207865)
    z = np.complex128([complex(-0.25, -0.0), complex(-0.25, 0.0)])
    r = cr("chlo.acosh", z)
    assert r[0].imag == -1.8234765819369754 and r[1].imag == 1.8234765819369754 and r[0].real == r[1].real == 0
    # atan(+-i) is a pole (like atanh(+-1)): not measured
    assert spec_silent("chlo.atan", [np.complex64([1j, -1j, 2j])]).tolist() == [True, True, False]


def test_complex_sign_and_negate():
    # sign(3 + 4i) = 3/5 + 4/5 i; sign(1 + i) = (1 + i)/sqrt(2): 0.70710678118654752 rounds in f32 to
    # 0.707106769084930419921875 (0x3F3504F3, 1.2e-8 below; the next f32 up is 4.8e-8 above)
    r = cr("stablehlo.sign", np.complex128([3 + 4j]))
    assert r[0] == complex(0.6, 0.8)
    r = cr("stablehlo.sign", np.complex64([1 + 1j]))
    assert r[0].real == r[0].imag == np.float32(0.707106769084930419921875)
    # sign(-4 - 0i) = -1 - 0i (the zero part keeps its side); sign(-0 - 0i) = (0.0, 0.0) (spec.md "sign")
    r = cr("stablehlo.sign", np.complex128([complex(-4.0, -0.0), complex(-0.0, -0.0)]))
    assert r[0] == -1 and np.signbit(r[0].imag)
    assert r[1] == 0 and not np.signbit(r[1].real) and not np.signbit(r[1].imag)
    assert spec_silent("stablehlo.sign", [np.complex64([complex(np.inf, 1.0)])]).tolist() == [True]
    # negate: exact part by part, infinite and NaN parts included (measured, not left open)
    z = np.complex64([complex(np.inf, np.nan), complex(0.0, -2.5)])
    r = cr("stablehlo.negate", z)
    assert r[0].real == -np.inf and np.isnan(r[0].imag) and r[1] == complex(-0.0, 2.5) and np.signbit(r[1].real)
    assert spec_silent("stablehlo.negate", [z]).tolist() == [False, False]
    assert ulp_error(-z, "stablehlo.negate", [z], np.complex64).tolist() == [0.0, 0.0]


def test_ulp_error_definition():
    x = np.float32([1.0, 1.0, 1.0, -np.inf, 2.0])
    e = np.float32(math.e)  # exp(1) rounded: error below 0.5
    one_up = np.nextafter(e, np.float32(3))
    actual = np.float32([e, one_up, np.nan, 0.0, np.inf])
    err = ulp_error(actual, "stablehlo.exponential", [x], np.float32)
    # f32 spacing at e is 2**-22 = 2.38e-7; float32(e) = 2.7182817459 lies 8.25e-8 = 0.35 ULP below
    # e = 2.7182818285, the next f32 up (2.7182819843) 1.56e-7 = 0.65 ULP above
    assert 0.34 < err[0] < 0.36 and 0.64 < err[1] < 0.66
    assert err[2] == np.inf       # NaN where the value is a number
    assert err[3] == 0.0          # exp(-inf) = 0 exactly
    assert err[4] == np.inf       # inf where the value is finite
    # complex: the larger of the parts' errors; spec-silent elements are NaN (not measured)
    z = np.complex64([complex(np.inf, 1.0)])
    assert np.isnan(ulp_error(z, "stablehlo.exponential", [z], np.complex64)[0])
    assert spec_silent("chlo.digamma", [np.float32([-2.0, -2.5])]).tolist() == [True, False]


def test_every_16_bit_value_in_a_slice_matches_float_math():
    # exhaustive over a small slice of f16 (the full tables run in `conform accuracy`):
    # sqrt is correctly rounded in IEEE hardware, so the oracle must agree bit for bit
    x = np.arange(0x3C00, 0x3C00 + 512, dtype=np.uint16).view(np.float16)
    assert bits_equal(cr("stablehlo.sqrt", x), np.sqrt(x))
    assert bits_equal(cr("stablehlo.divide", x, x[::-1]), x / x[::-1])


def test_an_evaluation_over_the_time_budget_is_not_measured(monkeypatch):
    from stablehlo_conform.oracle import exact

    monkeypatch.setattr(exact, "EVAL_SECONDS", 0.2)
    exact.clear_cache()
    # polygamma of order 65504 takes mpmath far longer than 0.2 s; order 1 at 2 is pi**2/6 - 1 = 0.6449
    n, x = np.float16([65504, 1]), np.float16([0.5, 2])
    err = ulp_error(np.float16([1, 0.6449]), "chlo.polygamma", [n, x], np.float16)
    assert np.isnan(err[0]) and err[1] <= 0.5
    exact.clear_cache()


def test_complex_acosh_is_the_principal_value_below_the_real_axis():
    # acosh(z) = log(z + sqrt(z + 1) sqrt(z - 1)); values from that formula with mpmath at 2000 bits
    # (mpmath's own complex acosh gives +1.82i for -0.25 - 1e-300i)
    z = np.array([complex(-0.25, -0.0), complex(-0.25, 0.0), complex(1.0, -2.225073858507201e-308),
                  complex(0.5, -1e-300)])
    r = correctly_rounded("chlo.acosh", [z], np.complex128)
    assert r.tolist() == [complex(0.0, -1.8234765819369754), complex(0.0, 1.8234765819369754),
                          complex(1.4916681462400412e-154, -1.4916681462400412e-154),
                          complex(1.1547005383792515e-300, -1.0471975511965979)]


def test_atan_at_its_poles_is_spec_silent():
    z = np.array([1j, -1j, complex(-0.0, 1.0), complex(1.0, 1.0)])
    assert spec_silent("chlo.atan", [z]).tolist() == [True, True, True, False]
