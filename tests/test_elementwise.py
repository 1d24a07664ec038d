"""Element-wise, comparison and CHLO kernels: hand-computed values.

Each test pins one semantic pitfall (spec.md sections cited by the kernels).
"""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from stablehlo_conform import evaluate
from stablehlo_conform import types as T
from stablehlo_conform.kernels import load_all

from kernel_util import SUITE, assert_interpret_file_passes


def ty(a: np.ndarray) -> str:
    name = T.name_of_dtype(a.dtype)
    dims = "".join(f"{d}x" for d in a.shape)
    return f"tensor<{dims}{name}>"


def run_op(op: str, *args, result=None, attrs: str = "", generic: bool = False):
    """Evaluate ``%r = <op> args`` on NumPy arrays; returns the result."""
    args = [np.asarray(a) for a in args]
    rty = result if result is not None else ty(args[0])
    params = ", ".join(f"%a{i}: {ty(a)}" for i, a in enumerate(args))
    names = ", ".join(f"%a{i}" for i in range(len(args)))
    in_tys = ", ".join(ty(a) for a in args)
    text = (f"func.func @main({params}) -> {rty} {{\n"
            f"  %r = \"{op}\"({names}) {attrs} : ({in_tys}) -> {rty}\n"
            f"  return %r : {rty}\n}}\n")
    (out,) = evaluate(text, *args)
    return out


def same(actual, expected, dtype=None):
    actual = np.asarray(actual)
    expected = np.asarray(expected, dtype=dtype or actual.dtype)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if actual.dtype.kind in "fc" or actual.dtype.kind == "V" and "float" in actual.dtype.name:
        a = actual.astype(np.complex128 if actual.dtype.kind == "c" else np.float64)
        e = expected.astype(a.dtype)
        ok = (a == e) | (np.isnan(a) & np.isnan(e))
        if a.dtype.kind == "f":
            ok &= (np.signbit(a) == np.signbit(e)) | np.isnan(a)
        assert ok.all(), (actual, expected)
    else:
        assert np.array_equal(actual, expected), (actual, expected)


I32 = np.int32
INT32_MIN = np.iinfo(np.int32).min


# --------------------------------------------------------------------------- #
# integer division, remainder, power
# --------------------------------------------------------------------------- #

def test_integer_divide_truncates_and_defines_overflow():
    lhs = np.array([17, -17, 17, -17, 7, -7, INT32_MIN], I32)
    rhs = np.array([3, 3, -3, -3, 0, 0, -1], I32)
    same(run_op("stablehlo.divide", lhs, rhs), [5, -5, -5, 5, -1, -1, INT32_MIN])


def test_unsigned_divide_by_zero_is_all_ones():
    same(run_op("stablehlo.divide", np.array([7, 0], np.uint32), np.array([0, 0], np.uint32)),
         [0xFFFFFFFF, 0xFFFFFFFF])


def test_integer_remainder_takes_dividend_sign():
    lhs = np.array([17, -17, 17, -17, 7, -7, INT32_MIN], I32)
    rhs = np.array([3, 3, -3, -3, 0, 0, -1], I32)
    same(run_op("stablehlo.remainder", lhs, rhs), [2, -2, 2, -2, 7, -7, 0])


def test_float_remainder_is_fmod():
    lhs = np.array([5.5, -5.5, 5.5, -5.5, 1.0], np.float32)
    rhs = np.array([2.0, 2.0, -2.0, -2.0, 0.0], np.float32)
    same(run_op("stablehlo.remainder", lhs, rhs), [1.5, -1.5, 1.5, -1.5, np.nan])


def test_integer_power_negative_exponents_and_wrap():
    base = np.array([2, -2, 1, -1, -1, 0, 3, 3], I32)
    exp = np.array([-1, -1, -5, -5, -4, 0, 4, 21], I32)
    assert 3**21 % 2**32 == 1870418611
    same(run_op("stablehlo.power", base, exp), [0, 0, 1, -1, 1, 1, 81, 1870418611])  # 3**21 mod 2**32


def test_divide_i4_wraps_and_defines_overflow():
    a = np.array([-8, 7, 5], ml_dtypes.int4)
    b = np.array([-1, 0, -2], ml_dtypes.int4)
    same(run_op("stablehlo.divide", a, b), np.array([-8, -1, -2], ml_dtypes.int4))


# --------------------------------------------------------------------------- #
# wrapping arithmetic, sub-byte integers
# --------------------------------------------------------------------------- #

def test_int8_arithmetic_wraps_without_warnings():
    a = np.array([127, -128, 100], np.int8)
    b = np.array([1, 1, 3], np.int8)
    with np.errstate(all="raise"):
        same(run_op("stablehlo.add", a, b), [-128, -127, 103])
        same(run_op("stablehlo.subtract", a, b), [126, 127, 97])
        same(run_op("stablehlo.multiply", a, b), [127, -128, 44])
        same(run_op("stablehlo.negate", a), [-127, -128, -100])
        same(run_op("stablehlo.abs", a), [127, -128, 100])


def test_sub_byte_integers_wrap_at_their_width():
    i4 = ml_dtypes.int4
    same(run_op("stablehlo.add", np.array([7, -8], i4), np.array([1, -1], i4)), np.array([-8, 7], i4))
    same(run_op("stablehlo.multiply", np.array([4, 3], i4), np.array([4, 3], i4)), np.array([0, -7], i4))
    same(run_op("stablehlo.subtract", np.array([0], ml_dtypes.uint4), np.array([1], ml_dtypes.uint4)),
         np.array([15], ml_dtypes.uint4))
    same(run_op("stablehlo.add", np.array([1], ml_dtypes.int2), np.array([1], ml_dtypes.int2)),
         np.array([-2], ml_dtypes.int2))
    same(run_op("stablehlo.not", np.array([0, 5], ml_dtypes.uint4)), np.array([15, 10], ml_dtypes.uint4))


def test_popcnt_and_clz_use_own_width():
    i4 = ml_dtypes.int4
    same(run_op("stablehlo.popcnt", np.array([-1, -8, 3], i4)), np.array([4, 1, 2], i4))
    same(run_op("stablehlo.count_leading_zeros", np.array([1, 0, -1], i4)), np.array([3, 4, 0], i4))
    same(run_op("stablehlo.count_leading_zeros", np.array([0, 1, 1 << 62, -1], np.int64)), [64, 63, 1, 0])
    same(run_op("stablehlo.popcnt", np.array([-1, 0x7F], np.int8)), [8, 7])


def test_bool_add_multiply_max_min():
    t, f = np.array([True, True, False, False]), np.array([True, False, True, False])
    same(run_op("stablehlo.add", t, f), [True, True, True, False])
    same(run_op("stablehlo.multiply", t, f), [True, False, False, False])
    same(run_op("stablehlo.maximum", t, f), [True, True, True, False])
    same(run_op("stablehlo.minimum", t, f), [True, False, False, False])


# --------------------------------------------------------------------------- #
# shifts
# --------------------------------------------------------------------------- #

def test_shift_amounts_out_of_range():
    a = np.array([1, 1, -128, 64, -1, -1, -2], np.int8)
    s = np.array([8, -1, 8, 9, 8, 1, 1], np.int8)
    same(run_op("stablehlo.shift_left", a, s), [0, 0, 0, 0, 0, -2, -4])
    same(run_op("stablehlo.shift_right_arithmetic", a, s), [0, 0, -1, 0, -1, -1, -1])
    same(run_op("stablehlo.shift_right_logical", a, s), [0, 0, 0, 0, 0, 127, 127])


def test_shift_right_arithmetic_unsigned_fills_top_bit():
    a = np.array([0x80, 0x80, 0x40], np.uint8)
    s = np.array([1, 9, 1], np.uint8)
    same(run_op("stablehlo.shift_right_arithmetic", a, s), [0xC0, 0xFF, 0x20])


def test_shift_64_bit():
    a = np.array([-1, 1, np.iinfo(np.int64).min], np.int64)
    s = np.array([63, 63, 63], np.int64)
    same(run_op("stablehlo.shift_right_logical", a, s), [1, 0, 1])
    same(run_op("stablehlo.shift_left", a, s), [np.iinfo(np.int64).min] * 2 + [0])
    same(run_op("stablehlo.shift_right_arithmetic", a, np.array([64, 64, 64], np.int64)), [-1, 0, -1])


# --------------------------------------------------------------------------- #
# rounding, sign, min/max, clamp, select
# --------------------------------------------------------------------------- #

def test_round_nearest_afz_ties_away_from_zero():
    x = np.array([-2.5, -0.5, 0.5, 1.5, 2.5, 0.49999997, -0.0], np.float32)
    same(run_op("stablehlo.round_nearest_afz", x), [-3.0, -1.0, 1.0, 2.0, 3.0, 0.0, -0.0])


def test_round_nearest_even_ties_to_even():
    x = np.array([-2.5, -0.5, 0.5, 1.5, 2.5], np.float64)
    same(run_op("stablehlo.round_nearest_even", x), [-2.0, -0.0, 0.0, 2.0, 2.0])


def test_round_bf16_stays_bf16():
    x = np.array([2.5, -3.5], ml_dtypes.bfloat16)
    same(run_op("stablehlo.round_nearest_afz", x), np.array([3, -4], ml_dtypes.bfloat16))


def test_float_sign_keeps_signed_zero_and_nan():
    x = np.array([-0.0, 0.0, np.nan, -3.0, 7.0], np.float32)
    same(run_op("stablehlo.sign", x), [-0.0, 0.0, np.nan, -1.0, 1.0])
    same(run_op("stablehlo.sign", np.array([-5, 0, 9], np.int16)), [-1, 0, 1])
    same(run_op("stablehlo.sign", np.array([3 + 4j, 0j], np.complex128)), [0.6 + 0.8j, 0j])


def test_maximum_minimum_ieee_zero_and_nan():
    a = np.array([0.0, -0.0, np.nan, 1.0], np.float32)
    b = np.array([-0.0, 0.0, 1.0, np.nan], np.float32)
    same(run_op("stablehlo.maximum", a, b), [0.0, 0.0, np.nan, np.nan])
    same(run_op("stablehlo.minimum", a, b), [-0.0, -0.0, np.nan, np.nan])


def test_complex_maximum_is_lexicographic():
    a = np.array([1 + 5j, 2 + 0j], np.complex64)
    b = np.array([1 + 6j, 1 + 9j], np.complex64)
    same(run_op("stablehlo.maximum", a, b), [1 + 6j, 2 + 0j])
    same(run_op("stablehlo.minimum", a, b), [1 + 5j, 1 + 9j])


def test_clamp_with_scalar_bounds():
    x = np.array([-5, 0, 5, 10], I32)
    out = run_op("stablehlo.clamp", np.array(0, I32), x, np.array(6, I32), result="tensor<4xi32>")
    same(out, [0, 0, 5, 6])


def test_select_with_scalar_pred():
    t = np.array([1.0, 2.0], np.float32)
    f = np.array([3.0, 4.0], np.float32)
    same(run_op("stablehlo.select", np.array(False), t, f, result="tensor<2xf32>"), [3.0, 4.0])
    same(run_op("stablehlo.select", np.array([True, False]), t, f, result="tensor<2xf32>"), [1.0, 4.0])


# --------------------------------------------------------------------------- #
# floats: one rounding into narrow types
# --------------------------------------------------------------------------- #

def test_bf16_exponential_rounded_once():
    x = np.array([1.0, 0.0], ml_dtypes.bfloat16)
    same(run_op("stablehlo.exponential", x), np.array([2.71875, 1.0], ml_dtypes.bfloat16))


def test_f16_logistic_and_tanh():
    x = np.array([0.0, 100.0, -100.0], np.float16)
    same(run_op("stablehlo.logistic", x), np.array([0.5, 1.0, 0.0], np.float16))
    same(run_op("stablehlo.tanh", x), np.array([0.0, 1.0, -1.0], np.float16))


def test_rsqrt_and_cbrt_values():
    same(run_op("stablehlo.rsqrt", np.array([4.0, 0.5], np.float64)), [0.5, 1.4142135623730951])
    same(run_op("stablehlo.cbrt", np.array([-27.0, 8.0], np.float32)), [-3.0, 2.0])


def test_atan2_and_complex_parts():
    same(run_op("stablehlo.atan2", np.array([1.0, -0.0], np.float64), np.array([-1.0, -1.0], np.float64)),
         [3 * math.pi / 4, -math.pi])
    c = np.array([1.5 + 2.5j], np.complex64)
    same(run_op("stablehlo.real", c, result="tensor<1xf32>"), np.array([1.5], np.float32))
    same(run_op("stablehlo.imag", c, result="tensor<1xf32>"), np.array([2.5], np.float32))
    same(run_op("stablehlo.complex", np.array([1.0], np.float64), np.array([2.0], np.float64),
                result="tensor<1xcomplex<f64>>"), [1 + 2j])
    same(run_op("stablehlo.abs", np.array([3 + 4j], np.complex64), result="tensor<1xf32>"),
         np.array([5.0], np.float32))


def test_is_finite():
    x = np.array([1.0, np.inf, -np.inf, np.nan], np.float16)
    same(run_op("stablehlo.is_finite", x, result="tensor<4xi1>"), [True, False, False, False])


def test_rank0_results_are_0d_arrays_of_result_dtype():
    out = run_op("stablehlo.add", np.array(3, np.int8), np.array(4, np.int8))
    assert isinstance(out, np.ndarray) and out.shape == () and out.dtype == np.int8 and out == 7
    out = run_op("stablehlo.sine", np.array(0.0, ml_dtypes.bfloat16))
    assert isinstance(out, np.ndarray) and out.shape == () and out.dtype == ml_dtypes.bfloat16


class _StubOp:
    """Just enough of the engine's OpContext for direct kernel calls."""

    def __init__(self, result: str, operands: list[str], attrs=None):
        self._r = T.TensorType((), T.ElementType(result))
        self._o = [T.TensorType((), T.ElementType(o)) for o in operands]
        self.attrs = attrs or {}

    def result_type(self, i=0):
        return self._r

    def result_dtype(self, i=0):
        return self._r.dtype

    def operand_type(self, i=0):
        return self._o[i]

    def attr(self, name, default=None):
        return self.attrs.get(name, default)


def test_kernels_accept_lanes_that_broadcast():
    reg = load_all()
    add = reg.lookup("stablehlo.add")
    (r,) = add(_StubOp("f32", ["f32", "f32"]), np.arange(4, dtype=np.float32), np.array(1.0, np.float32))
    same(r, np.array([1, 2, 3, 4], np.float32))
    cmp = reg.lookup("stablehlo.compare")
    (r,) = cmp(_StubOp("i1", ["i32", "i32"], {"comparison_direction": "LT"}),
               np.array([[1], [5]], I32), np.array([2, 3, 4], I32))
    same(r, [[True, True, True], [False, False, False]])
    sel = reg.lookup("stablehlo.select")
    (r,) = sel(_StubOp("i32", ["i1", "i32", "i32"]), np.array([True, False]), np.array(7, I32),
               np.array([1, 2], I32))
    same(r, np.array([7, 2], I32))


# --------------------------------------------------------------------------- #
# compare
# --------------------------------------------------------------------------- #

def _cmp(direction, a, b, ctype=None):
    attrs = f"{{comparison_direction = #stablehlo<comparison_direction {direction}>"
    if ctype:
        attrs += f", compare_type = #stablehlo<comparison_type {ctype}>"
    attrs += "}"
    return run_op("stablehlo.compare", a, b, attrs=attrs, result=f"tensor<{len(a)}xi1>")


def test_compare_float_is_quiet_ieee():
    a = np.array([np.nan, -0.0, 1.0], np.float64)
    b = np.array([np.nan, 0.0, np.nan], np.float64)
    same(_cmp("EQ", a, b, "FLOAT"), [False, True, False])
    same(_cmp("NE", a, b, "FLOAT"), [True, False, True])
    same(_cmp("LT", a, b), [False, False, False])


def test_compare_totalorder():
    neg_nan = np.array([0xFFF8000000000000], np.uint64).view(np.float64)[0]
    a = np.array([-0.0, np.nan, neg_nan, np.inf, -0.0], np.float64)
    b = np.array([0.0, np.nan, -np.inf, np.nan, -0.0], np.float64)
    same(_cmp("LT", a, b, "TOTALORDER"), [True, False, True, True, False])
    same(_cmp("EQ", a, b, "TOTALORDER"), [False, True, False, False, True])
    bf = ml_dtypes.bfloat16
    same(_cmp("GT", np.array([0.0, 1.0], bf), np.array([-0.0, np.nan], bf), "TOTALORDER"), [True, False])


def test_compare_default_and_unsigned():
    same(_cmp("GT", np.array([255, 0], np.uint8), np.array([1, 1], np.uint8)), [True, False])
    same(_cmp("LT", np.array([-1, 5], np.int8), np.array([1, 1], np.int8), "SIGNED"), [True, False])
    same(_cmp("GT", np.array([True, False]), np.array([False, False]), "UNSIGNED"), [True, False])
    same(_cmp("LT", np.array([-8, 7], ml_dtypes.int4), np.array([7, -8], ml_dtypes.int4)), [True, False])


def test_compare_complex_lexicographic():
    a = np.array([1 + 2j, 1 + 2j, 2 + 0j], np.complex64)
    b = np.array([1 + 3j, 1 + 2j, 1 + 9j], np.complex64)
    same(_cmp("LT", a, b, "FLOAT"), [True, False, False])
    same(_cmp("GE", a, b, "FLOAT"), [False, True, True])


# --------------------------------------------------------------------------- #
# CHLO
# --------------------------------------------------------------------------- #

def test_chlo_mulhi():
    same(run_op("chlo.mulhi", np.array([64, -64, -64], np.int8), np.array([4, 4, -4], np.int8)), [1, -1, 1])
    big = np.array([-1, np.iinfo(np.int64).min, 3 << 61], np.int64)
    same(run_op("chlo.mulhi", big, np.array([-1, -1, 4], np.int64)), [0, 0, 1])
    same(run_op("chlo.mulhi", np.array([2**64 - 1], np.uint64), np.array([2**64 - 1], np.uint64)),
         np.array([2**64 - 2], np.uint64))


def test_chlo_next_after():
    bf = ml_dtypes.bfloat16
    x = np.array([1.0, 0.0, 1.0, np.nan, -1.0], bf)
    y = np.array([2.0, -1.0, 1.0, 0.0, -np.inf], bf)
    tiny = np.array([0x8001], np.uint16).view(bf)[0]
    same(run_op("chlo.next_after", x, y), np.array([1.0078125, tiny, 1.0, np.nan, -1.0078125], bf))
    same(run_op("chlo.next_after", np.array([1.0], np.float64), np.array([0.0], np.float64)),
         [np.nextafter(1.0, 0.0)])


def test_chlo_special_functions():
    same(run_op("chlo.lgamma", np.array([1.0, 3.0], np.float64)), [0.0, math.log(2.0)])
    d = run_op("chlo.digamma", np.array([1.0, -1.0, 0.0], np.float64))
    assert d[0] == pytest.approx(-0.5772156649015329) and np.isnan(d[1]) and d[2] == -np.inf
    sq = run_op("chlo.square", np.array([1e20 + 1e20j, 3 + 4j], np.complex64))
    same(sq, np.array([complex(0, np.inf), -7 + 24j], np.complex64))
    assert run_op("chlo.erf", np.array([0.5], np.float32))[0] == np.float32(math.erf(0.5))
    assert run_op("chlo.erf_inv", np.array([0.0], np.float32))[0] == 0.0
    pg = run_op("chlo.polygamma", np.array([1.0, 0.5], np.float64), np.array([1.0, 1.0], np.float64))
    assert pg[0] == pytest.approx(math.pi**2 / 6) and np.isnan(pg[1])
    z = run_op("chlo.zeta", np.array([2.0], np.float64), np.array([1.0], np.float64))
    assert z[0] == pytest.approx(math.pi**2 / 6)
    same(run_op("chlo.is_pos_inf", np.array([np.inf, -np.inf, 1.0], np.float32), result="tensor<3xi1>"),
         [True, False, False])
    same(run_op("chlo.conj", np.array([1 + 2j], np.complex64)), [1 - 2j])


def test_chlo_broadcast_with_dimensions():
    a = np.array([1.0, 2.0, 3.0], np.float32)
    b = np.array([[10.0, 20.0, 30.0], [40.0, 50.0, 60.0]], np.float32)
    out = run_op("chlo.broadcast_add", a, b, attrs="{broadcast_dimensions = array<i64: 1>}",
                 result="tensor<2x3xf32>")
    same(out, [[11, 22, 33], [41, 52, 63]])
    col = np.array([1.0, 2.0], np.float32)
    out = run_op("chlo.broadcast_multiply", col, b, attrs="{broadcast_dimensions = array<i64: 0>}",
                 result="tensor<2x3xf32>")
    same(out, [[10, 20, 30], [80, 100, 120]])
    out = run_op("chlo.broadcast_compare", a, b,
                 attrs="{comparison_direction = #chlo<comparison_direction LT>}", result="tensor<2x3xi1>")
    same(out, np.ones((2, 3), bool))


# --------------------------------------------------------------------------- #
# the official suite (skips when absent)
# --------------------------------------------------------------------------- #

INTERPRET_FILES = [
    "abs", "add", "and", "atan2", "cbrt", "ceil", "clamp", "compare", "complex", "cosine",
    "count_leading_zeros", "divide", "exponential", "exponential_minus_one", "floor", "imag",
    "is_finite", "log", "log_plus_one", "logistic", "maximum", "minimum", "multiply", "negate",
    "not", "or", "popcnt", "power", "real", "remainder", "round_nearest_afz", "round_nearest_even",
    "rsqrt", "select", "shift_left", "shift_right_arithmetic", "shift_right_logical", "sign",
    "sine", "sqrt", "subtract", "tan", "tanh", "xor", "chlo/mulhi",
]


@pytest.mark.skipif(not (SUITE / "interpret").is_dir(), reason="official suite not present")
@pytest.mark.parametrize("name", INTERPRET_FILES)
def test_interpret_suite_file(name):
    assert_interpret_file_passes(name)


def test_complex_divide_keeps_infinities_and_rounds_once():
    a = np.array([1 + 1j, complex(np.inf, 0), 1 + 1j, -2.5 + 0j], np.complex128)
    b = np.array([0j, 1 + 1j, complex(np.inf, 0), 1 - 2.5j], np.complex128)
    r = run_op("stablehlo.divide", a, b)
    assert np.isinf(r[0].real) and np.isinf(r[0].imag)
    assert np.isinf(r[1].real) and r[1].real > 0 and r[1].imag < 0 and np.isinf(r[1].imag)
    assert r[2] == 0
    # -2.5 / (1 - 2.5i) = (-2.5 - 6.25i) / 7.25, each part correctly rounded
    assert r[3] == complex(-2.5 / 7.25, -6.25 / 7.25)


class _QStubOp(_StubOp):
    def __init__(self, result, operands):
        self._r = T.TensorType((2,), result)
        self._o = [T.TensorType((2,), o) for o in operands]
        self.attrs = {}


def _q(scale, zp):
    return T.QuantizedType(storage=T.ElementType("i8"), expressed=T.ElementType("f32"),
                           scales=(scale,), zero_points=(zp,))


def test_quantized_add_is_dequantize_op_quantize():
    # lhs [1.0, 2.0] stored with 0.1:-30, rhs [3.0, 4.0] with 0.5:-20
    # (1 + 3) / 0.5 - 20 = -12 and (2 + 4) / 0.5 - 20 = -8
    add = load_all().lookup("stablehlo.add")
    op = _QStubOp(_q(0.5, -20), [_q(0.1, -30), _q(0.5, -20)])
    (r,) = add(op, np.array([-20, -10], np.int8), np.array([-14, -12], np.int8))
    same(r, np.array([-12, -8], np.int8))


def test_chlo_asin_acos_kernel_identities():
    z = np.array([0.5 + 0j, 2.0 + 0j, 0.3 + 0.7j, -1.5 - 2.0j, 1e-8 + 3.0j], np.complex128)
    w = run_op("chlo._asin_acos_kernel", z)
    # w = sqrt(a^2 - x^2) + i acosh(a): for real |x| <= 1, a = 1; for x = 2, a = 2
    assert w[0] == pytest.approx(math.sqrt(0.75)) and w[1].real == 0.0
    assert w[1].imag == pytest.approx(math.acosh(2.0))
    asin = np.arctan2(z.real, w.real) + 1j * np.sign(z.imag) * w.imag
    np.testing.assert_allclose(asin[2:], np.arcsin(z[2:]), rtol=1e-14)


# --------------------------------------------------------------------------- #
# bugs found by differential fuzzing with an arbitrary-precision tie-break;
# every expected value below was derived by hand (and checked with mpmath at
# 200 bits) as explained next to it
# --------------------------------------------------------------------------- #


def test_complex_divide_keeps_zero_signs_and_overflowing_parts():
    # (1 - 0i) / (1 + 0i) = (1 - 0i)(1 - 0i) / 1 = 1 - 0i: the imaginary part is
    # 0*1 - 1*0 with the -0 of the dividend, so -0 (re + 1j*im gave +0)
    r = run_op("stablehlo.divide", np.array([complex(1, -0.0)], np.complex128), np.array([1 + 0j], np.complex128))
    assert r[0] == 1 and np.signbit(r[0].imag)
    # (1e300 + 1e300i) / 1e-10 = 1e310 + 1e310i: both parts overflow to +inf
    # (re + 1j*im made the real part inf + 0*inf = NaN)
    for dt in (np.complex128, np.complex64):
        big = 1e300 if dt == np.complex128 else 3e38
        r = run_op("stablehlo.divide", np.array([complex(big, big)], dt), np.array([1e-10 + 0j], dt))
        assert r[0].real == np.inf and r[0].imag == np.inf, r


def test_complex_create_keeps_infinite_imaginary_part():
    # complex.create(-0, inf) is exactly -0 + inf i (-0 + 1j*inf gave NaN + inf i)
    text = """
func.func @main(%a: f64, %b: f64) -> complex<f64> {
  %r = complex.create %a, %b : complex<f64>
  return %r : complex<f64>
}"""
    (r,) = evaluate(text, np.float64(-0.0), np.float64(np.inf))
    assert np.signbit(r.real) and r.real == 0 and r.imag == np.inf


def test_lgamma_of_minus_infinity_is_plus_infinity():
    # log|gamma(x)| grows without bound as x -> -inf (C99 lgamma(-inf) = +inf)
    same(run_op("chlo.lgamma", np.array([-np.inf, np.inf], np.float32)), [np.inf, np.inf])


def test_odd_special_functions_keep_negative_zero():
    # erf_inv and bessel_i1e are odd: f(-0) = -0
    same(run_op("chlo.erf_inv", np.array([-0.0, 0.0], np.float32)), [-0.0, 0.0])
    same(run_op("chlo.bessel_i1e", np.array([-0.0, 0.0], np.float64)), [-0.0, 0.0])


def test_atan2_rounds_once_on_a_midpoint():
    # y = 1.1754942e-38 = (2**23 - 1) * 2**-149, the largest f32 subnormal; atan2(y, 2)
    # = y/2 - (y/2)**3/3 + ... lies just below y/2 = (2**23 - 1/2) * 2**-149, a midpoint
    # of the f32 subnormals; so it rounds down to (2**23 - 1) * 2**-149 / ... = 4194303 * 2**-149
    # = 5.877470353e-39 (the f64 value is exactly y/2, which ties to even: 4194304 * 2**-149)
    y = np.array([(2 ** 23 - 1) * 2.0 ** -149], np.float32)
    same(run_op("stablehlo.atan2", y, np.array([2.0], np.float32)), [4194303 * 2.0 ** -149])
    # the same in bf16: y = 127 * 2**-133 (largest bf16 subnormal), y/2 = 63.5 * 2**-133 -> 63 * 2**-133
    yb = np.array([127 * 2.0 ** -133], ml_dtypes.bfloat16)
    same(run_op("stablehlo.atan2", yb, np.array([2.0], ml_dtypes.bfloat16)), [63 * 2.0 ** -133],
         dtype=ml_dtypes.bfloat16)


def test_bessel_i1e_on_subnormals():
    # i1e(x) = e**-x I1(x) = x/2 (1 - x + ...) for tiny x: just below x/2. For x = 3 units of the
    # smallest subnormal, x/2 = 1.5 units is a midpoint, so the correctly rounded result is 1 unit
    # (the f64 value is exactly 1.5 units and tied to even, 2 units)
    f32 = np.array([3 * 2.0 ** -149, -3 * 2.0 ** -149, 5 * 2.0 ** -149], np.float32)
    same(run_op("chlo.bessel_i1e", f32), [2.0 ** -149, -(2.0 ** -149), 2 * 2.0 ** -149])
    bf = np.array([3 * 2.0 ** -133], ml_dtypes.bfloat16)
    same(run_op("chlo.bessel_i1e", bf), [2.0 ** -133], dtype=ml_dtypes.bfloat16)


def test_digamma_near_its_negative_root_f32():
    # x = -1.5734984874725342 (f32 nearest to digamma's root -1.57349847316239...):
    # digamma(x) = -1.42264490245067775e-07 (mpmath, 200 bits), whose nearest f32 is
    # -1.42264497e-07; SciPy's f64 value -1.4226448978582606e-07 rounds to the f32 one ULP above
    same(run_op("chlo.digamma", np.array([-1.5734984874725342], np.float32)), [-1.42264497e-07],
         dtype=np.float32)


# --------------------------------------------------------------------------- #
# f64 and complex results rounded once (expected values computed with mpmath at 300 bits)
# --------------------------------------------------------------------------- #

def test_lgamma_of_tiny_and_subnormal_f64_arguments():
    # 1/x overflows for |x| < 2**-1024: the value is -log|x| - euler x
    x = np.array([5e-324, -5e-324, 1e-310, -2.5e-320, 2.0 ** -1024])
    same(run_op("chlo.lgamma", x),
         np.array([744.4400719213812, 744.4400719213812, 713.8013788281542, 735.9109501590998, 709.782712893384]))


def test_erfc_f64_tail_is_not_flushed_and_rounded_once():
    x = np.array([26.65648055931726, 26.741924754695873, 27.2, 25.559727556113753, 5.981929390887171, 27.3])
    same(run_op("chlo.erfc", x),
         np.array([5.36506475586e-311, 5.58061549357e-313, 1e-323, 4.160008233527578e-286, 2.6800722756648095e-17,
                   0.0]))


def test_digamma_f64_near_the_negative_poles():
    x = np.array([-0.9999999999999999, -1.0000000000000002, -2.0000000000000004, -9.999999999999998,
                  -3.0000000000000004])
    same(run_op("chlo.digamma", x),
         np.array([-9007199254740992.0, 4503599627370496.0, 2251799813685249.0, -562949953421309.6,
                   2251799813685249.5]))


@pytest.mark.parametrize("op, x, expected", [
    ("chlo.bessel_i1e", [7.677893503754277, 7.351897355630086, -0.0], [0.13661649458469108, 0.13926091745930105, -0.0]),
    ("chlo.erf", [-0.9564011996360264, -0.0], [-0.8238023382754421, -0.0]),
    ("chlo.erf_inv", [-0.79283963815704, -0.0], [-0.8919531464674711, -0.0]),
    ("stablehlo.logistic", [-1.1118064476600136], [0.24753426428697597]),
    ("stablehlo.cbrt", [3.877284831412343e+222], [1.5709989763010965e+74]),
    ("stablehlo.tanh", [0.5088222596577063], [0.4690270530221065]),
])
def test_f64_values_that_scipy_or_numpy_miss_by_an_ulp_or_more(op, x, expected):
    same(run_op(op, np.array(x)), np.array(expected))


def test_one_cube_root_policy_for_math_and_stablehlo():
    """``math.cbrt`` is evaluated as ``stablehlo.cbrt`` is: both give the correctly rounded
    f64 cube root (where the C library's is one ULP off)."""
    from stablehlo_conform import frontend
    from stablehlo_conform.engine import run_function

    (mod,) = frontend.load_text("""
    func.func @main(%x: tensor<2xf64>, %s: f64) -> (tensor<2xf64>, tensor<2xf64>, f64) {
      %m = math.cbrt %x : tensor<2xf64>
      %h = stablehlo.cbrt %x : tensor<2xf64>
      %c = math.cbrt %s : f64
      return %m, %h, %c : tensor<2xf64>, tensor<2xf64>, f64
    }""")
    x = np.array([7.371358815644248e+131, -27.0])
    # (glibc's cube root, which NumPy calls, gives 9.033357207648531e+43: one ULP above)
    m, h, c = run_function(mod, "main", [x, np.float64(x[0])])
    assert m.tolist() == h.tolist() == [9.03335720764853e+43, -3.0]
    assert float(c) == 9.03335720764853e+43


def test_f8e8m0fnu_rounds_to_the_nearest_power_of_two():
    e8 = ml_dtypes.float8_e8m0fnu
    # erfc(32) underflows in f64 but is positive: the smallest value 2**-127 (the type has no zero);
    # erf(2**-127) = 1.128 * 2**-127 and i1e(2**-126) ~ 2**-127 round down to 2**-127
    same(run_op("chlo.erfc", np.array([32.0, 1.0], e8)), np.array([2.0 ** -127, 0.125], e8))
    same(run_op("chlo.erf", np.array([2.0 ** -127], e8)), np.array([2.0 ** -127], e8))
    same(run_op("chlo.bessel_i1e", np.array([2.0 ** -126], e8)), np.array([2.0 ** -127], e8))
    x = np.array([1.128 * 2.0 ** -127, 1.6 * 2.0 ** -127, 1.4 * 2.0 ** -126, 3.0, 0.0], np.float32)
    same(run_op("stablehlo.convert", x, result="tensor<5xf8E8M0FNU>"),
         np.array([2.0 ** -127, 2.0 ** -126, 2.0 ** -126, 4.0, np.nan], e8))


@pytest.mark.parametrize("op, z, expected", [
    ("chlo.square", [complex(1.7976931348623157e308, 0.0)], [complex(np.inf, 0.0)]),
    ("stablehlo.exponential_minus_one", [complex(1.7976931348623157e308, 0.0)], [complex(np.inf, 0.0)]),
    ("stablehlo.logistic", [complex(-1.7976931348623157e308, 5e-324)], [complex(0.0, 0.0)]),
    ("stablehlo.cbrt", [complex(2.7169867363692364e+240, 4.360401064333989e-140)],
     [complex(1.395390749060875e+80, 7.464719678754157e-301)]),
    ("stablehlo.rsqrt", [complex(1.0865009142694402e-08, -7.026e-321)],
     [complex(9593.673894128118, 3.10176658782137e-309)]),
    ("stablehlo.multiply", [complex(1.7976931348623157e308, 1.7976931348623157e308)], [complex(0.0, np.inf)]),
])
def test_complex128_overflow_and_tiny_parts(op, z, expected):
    args = [np.array(z)] * (2 if op == "stablehlo.multiply" else 1)
    r = run_op(op, *args)
    same(r.real, np.array(expected).real)
    same(r.imag, np.array(expected).imag)


def test_complex64_sqrt_and_log1p_are_rounded_once():
    r = run_op("stablehlo.sqrt", np.array([complex(-0.4781261682510376, -2.0992257595062256)], np.complex64))
    assert r[0] == np.complex64(complex(0.91511226760344394, -1.14697717090156367))
    z = np.array([complex(-6.77585039162491e-21, 6.815986443807952e-31)], np.complex64)
    r = run_op("stablehlo.log_plus_one", z)
    assert r[0] == np.complex64(complex(-6.7758503916249097e-21, 6.8159864438079519e-31))


def test_f8e8m0fnu_power_and_zeta_that_underflow_in_f64():
    # (2**-127)**16 and zeta(2**127, 2) = 2**-(2**127) are positive: the smallest value 2**-127
    e8 = ml_dtypes.float8_e8m0fnu
    same(run_op("stablehlo.power", np.array([2.0 ** -127], e8), np.array([16.0], e8)), np.array([2.0 ** -127], e8))
    same(run_op("chlo.zeta", np.array([2.0 ** 127], e8), np.array([2.0], e8)), np.array([2.0 ** -127], e8))
    # in f64 the same values round to +0; zeta(inf, 2) = 0, zeta(1, NaN) = NaN
    same(run_op("chlo.zeta", np.array([2.0 ** 127, np.inf, 1.0]), np.array([2.0, 2.0, np.nan])),
         np.array([0.0, 0.0, np.nan]))


def test_polygamma_order_zero_in_f64_and_at_infinity():
    same(run_op("chlo.polygamma", np.array([0.0, 1.0, 2.0 ** 100, np.inf]), np.array([-0.9999999999999999, np.inf,
                                                                                     np.inf, 1.0])),
         np.array([-9007199254740992.0, 0.0, -0.0, np.nan]))



def _polygamma_by_series(n: int, x: Fraction, terms: int) -> float:
    """(-1)**(n+1) n! sum_{k < terms} (x + k)**-(n+1) in rational arithmetic, rounded once to f64
    (the arguments below make the omitted terms smaller than 2**-60 of the sum)."""
    s = sum(1 / (x + k) ** (n + 1) for k in range(terms))
    return float((-1) ** (n + 1) * math.factorial(n) * s)


def test_polygamma_of_a_negative_argument():
    # reflection: psi1(-1/2) + psi1(3/2) = pi**2 / sin(-pi/2)**2 and psi1(3/2) = pi**2/2 - 4, so
    # psi1(-1/2) = pi**2/2 + 4; psi2(1 - x) - psi2(x) = 2 pi**3 cot(pi x) / sin(pi x)**2 = 0 at
    # x = -1/2, so psi2(-1/2) = psi2(3/2) = psi2(1/2) + 2 / (1/2)**3 = 16 - 14 zeta(3)
    zeta3 = 1.2020569031595942853997
    same(run_op("chlo.polygamma", np.array([1.0, 2.0], np.float32), np.array([-0.5, -0.5], np.float32)),
         np.array([math.pi ** 2 / 2 + 4, 16 - 14 * zeta3], np.float32))
    # psi28(-3/2) = -28! sum_{k >= 0} (k - 3/2)**-29: the terms -3/2 and 3/2, -1/2 and 1/2
    # cancel, -28! zeta(29, 5/2) remains (SciPy's polygamma gives +1.4e22)
    got = run_op("chlo.polygamma", np.array([28.0], np.float32), np.array([-1.5], np.float32))
    same(got, np.array([_polygamma_by_series(28, Fraction(5, 2), 40)], np.float32))
    assert got[0] < 0
    # the poles: +inf for an odd order, NaN for an even one; NaN at -inf
    same(run_op("chlo.polygamma", np.array([1.0, 2.0, 1.0], np.float32), np.array([-3.0, -3.0, -np.inf], np.float32)),
         np.array([np.inf, np.nan, np.nan], np.float32))


def test_polygamma_of_a_large_order_and_a_tiny_zeta():
    # 171! overflows f64 (SciPy: NaN); zeta(167, 104.5) ~ 1e-337 underflows it (SciPy: -0), while
    # 166! zeta(167, 104.5) is a subnormal bf16
    got = run_op("chlo.polygamma", np.array([171.0, 200.0], np.float32), np.array([60.0, 72.0], np.float32))
    same(got, np.array([_polygamma_by_series(171, Fraction(60), 60), _polygamma_by_series(200, Fraction(72), 60)],
                       np.float32))
    assert np.isfinite(got).all() and (got != 0).all()
    bf = ml_dtypes.bfloat16
    got = run_op("chlo.polygamma", np.array([166.0], bf), np.array([104.5], bf))
    same(got, np.array([_polygamma_by_series(166, Fraction(209, 2), 60)], bf))
    assert float(got[0]) < 0


def _parts(z):
    z = np.asarray(z)
    return [(float(v.real), math.copysign(1.0, v.real), float(v.imag), math.copysign(1.0, v.imag)) for v in z.ravel()]


def test_complex_zero_parts_follow_the_principal_branch():
    c64 = np.complex64
    # square(-1 + i) = (1 - 1) - 2i: the exact 0 of re**2 - im**2 is +0
    assert _parts(run_op("chlo.square", np.array([complex(-1, 1)], c64))) == _parts([complex(0.0, -2.0)])
    # cbrt at zero: +0 real part, the imaginary part of the sign of im z
    z = np.array([complex(0, 0), complex(0, 0)], c64)
    z.real = [-0.0, 0.0]
    z.imag = [0.0, -0.0]
    got = _parts(run_op("stablehlo.cbrt", z))
    assert got == [(0.0, 1.0, 0.0, 1.0), (0.0, 1.0, 0.0, -1.0)]
    # rsqrt(4 + 0i) = 1/2 - 0i (rsqrt(4 + iy) has imaginary part -y/16 to first order)
    assert _parts(run_op("stablehlo.rsqrt", np.array([complex(4, 0)], c64))) == [(0.5, 1.0, 0.0, -1.0)]
    # logistic(conj z) = conj(logistic(z)): logistic(-1 - 0i) has a -0 imaginary part
    z = np.array([complex(-1, 0)], c64)
    z.imag = [-0.0]
    assert _parts(run_op("stablehlo.logistic", z))[0][3] == -1.0
    # far from the axis: logistic(-1e30 + 2i) = exp(z) to first order, both parts underflow with
    # the signs of cos 2 < 0 and sin 2 > 0; logistic(100 - 2i) = 1 + exp(-100) sin(-2) i
    got = _parts(run_op("stablehlo.logistic", np.array([complex(-1e30, 2), complex(100, -2)], c64)))
    assert got[0] == (0.0, -1.0, 0.0, 1.0)
    im = float(np.float32(math.exp(-100) * math.sin(-2)))
    assert im < 0 and got[1] == (1.0, 1.0, im, -1.0)


def test_complex128_multiply_rounds_each_part_once():
    # products that cancel: each part from the exact rationals, rounded once by float(Fraction)
    a, b = complex(1.0626115202192832, 0.5122185730347342), complex(-2.5906685540577916, 1.2487745798137384)
    fa, fb = [(Fraction(z.real), Fraction(z.imag)) for z in (a, b)]
    re = float(fa[0] * fb[0] - fa[1] * fb[1])
    im = float(fa[0] * fb[1] + fa[1] * fb[0])
    got = run_op("stablehlo.multiply", np.array([a], np.complex128), np.array([b], np.complex128))
    assert (got[0].real, got[0].imag) == (re, im)
    # (1 + 2**-52 + 3i)**2: re = -8 + 2**-51 + 2**-104, just past the midpoint -8 + 2**-51, rounds
    # to -8 + 2**-50; im = 6 (1 + 2**-52) is a tie, to even: 6 + 2**-49
    z = np.array([complex(1 + 2.0 ** -52, 3)], np.complex128)
    for got in (run_op("stablehlo.multiply", z, z), run_op("chlo.square", z)):
        assert (got[0].real, got[0].imag) == (-8 + 2.0 ** -50, 6 + 2.0 ** -49)


def test_complex128_divide_does_not_lose_a_cancelling_numerator():
    # re = (ac + bd) / (c**2 + d**2) cancels to 5.06e-06 from terms of about 1.6 and 1.6: from
    # the exact rationals, rounded once by float(Fraction) (the products rounded to 64 bits first
    # gave 5.062124592108454e-06, 4 ULP off)
    a, b = complex(1.6423502977799398, -0.5881080183415959), complex(-0.9700114611298067, -2.708925014924258)
    ar, ai, br, bi = (Fraction(v) for v in (a.real, a.imag, b.real, b.imag))
    den = br * br + bi * bi
    got = run_op("stablehlo.divide", np.array([a], np.complex128), np.array([b], np.complex128))
    assert (got[0].real, got[0].imag) == (float((ar * br + ai * bi) / den), float((ai * br - ar * bi) / den))


@pytest.mark.parametrize("name", ["maximum", "minimum"])
@pytest.mark.parametrize("dt", [ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn])
def test_narrow_maximum_minimum_pick_the_operands_bits_on_large_tensors(name, dt):
    """Above elementwise.BLEND_MIN elements the narrow-float maximum / minimum pick each element's
    bits by a branch-free blend: the same bits as the kernel on the same elements in small
    pieces (np.where), NaN payloads, signed zeros and a broadcast operand included; and the
    hand-checked IEEE values (NaN propagates, -0 < +0)."""
    from stablehlo_conform.kernels import elementwise as E
    dt = np.dtype(dt)
    rng = np.random.default_rng(11)
    n = 3 * E.BLEND_MIN
    bits = rng.integers(0, 256 ** dt.itemsize, n).astype({1: np.uint8, 2: np.uint16}[dt.itemsize])
    a = bits.view(dt)
    b = rng.standard_normal(n).astype(dt)
    b[::7] = -0.0
    a[::11] = 0.0
    kernel = getattr(E, name)
    for other in (b, np.broadcast_to(np.zeros((), dt), a.shape)):
        whole = kernel(dt, a, other)
        pieces = np.concatenate([kernel(dt, a[i:i + 1000], other[i:i + 1000]) for i in range(0, n, 1000)])
        assert whole.view(bits.dtype).tolist() == pieces.view(bits.dtype).tolist()
    # pairs (NaN, 1), (+0, -0), (-0, +0), (1, NaN), repeated past the blend bound
    x = np.tile(np.array([np.nan, 0.0, -0.0, 1.0], np.float32), E.BLEND_MIN).astype(dt)
    y = np.tile(np.array([1.0, -0.0, 0.0, np.nan], np.float32), E.BLEND_MIN).astype(dt)
    r = kernel(dt, x, y)[:4].astype(np.float32)
    assert np.isnan(r[0]) and np.isnan(r[3])
    zero_sign = name == "minimum"  # maximum: +0, minimum: -0, whichever operand holds it
    assert r[1] == 0 and r[2] == 0 and bool(np.signbit(r[1])) == bool(np.signbit(r[2])) == zero_sign


@pytest.mark.parametrize("dt", [np.int8, ml_dtypes.bfloat16, np.float16, np.float32, np.int32, np.float64,
                                np.uint64, np.complex64])
def test_where_picks_each_elements_bits_as_np_where_does(dt):
    """elementwise.where above BLEND_MIN elements (unsigned arithmetic on the bit patterns):
    every bit pattern of either operand, NaN payloads, signed zeros and the patterns whose
    difference wraps around included, bit for bit np.where's; below the bound and on
    broadcast or mixed operands, np.where itself."""
    from stablehlo_conform.kernels import elementwise as E
    dt = np.dtype(dt)
    ut = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}.get(dt.itemsize)
    rng = np.random.default_rng(5)
    n = 3 * E.BLEND_MIN + 1
    for size in (n, E.BLEND_MIN - 1):
        if ut is None:
            a = (rng.standard_normal(size) + 1j * rng.standard_normal(size)).astype(dt)
            b = a[::-1].copy()
        else:
            a = rng.integers(0, np.iinfo(ut).max, size, dtype=ut, endpoint=True).view(dt)
            b = rng.integers(0, np.iinfo(ut).max, size, dtype=ut, endpoint=True).view(dt)
            b[:4] = np.array([0, np.iinfo(ut).max, 1, np.iinfo(ut).max - 1], ut).view(dt)
            a[:4] = np.array([np.iinfo(ut).max, 0, np.iinfo(ut).max, 0], ut).view(dt)
        pred = rng.integers(0, 4, size, dtype=np.uint8).view(np.bool_)  # bytes 2 and 3 are true too
        pred[:4] = [True, True, False, True]
        got, want = E.where(pred, a, b), np.where(pred, a, b)
        assert got.dtype == dt and got.shape == want.shape
        assert got.tobytes() == want.tobytes()
    scalar = np.zeros((), dt)
    assert E.where(pred, a, scalar).tobytes() == np.where(pred, a, scalar).tobytes()
