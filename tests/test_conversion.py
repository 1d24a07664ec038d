"""convert, bitcast_convert and reduce_precision: hand-computed values.

See spec.md#convert, spec.md#bitcast_convert, spec.md#reduce_precision.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from stablehlo_conform.kernels.conversion import convert_values, reduce_precision_values

from kernel_util import SUITE, assert_interpret_file_passes, assert_suite_file_passes
from test_elementwise import run_op, same

BF16 = ml_dtypes.bfloat16


def convert(x, result):
    return run_op("stablehlo.convert", x, result=result)


# --------------------------------------------------------------------------- #
# convert
# --------------------------------------------------------------------------- #

def test_float_to_int_truncates_and_saturates():
    x = np.array([300.0, -300.0, np.nan, np.inf, -np.inf, 2.7, -2.7, -0.5], np.float32)
    same(convert(x, "tensor<8xi8>"), [127, -128, 0, 127, -128, 2, -2, 0])
    same(convert(x, "tensor<8xui8>"), [255, 0, 0, 255, 0, 2, 0, 0])
    big = np.array([1e19, -1e19, 9.2233720368547758e18, 1.8446744073709552e19], np.float64)
    same(convert(big, "tensor<4xi64>"), [2**63 - 1, -(2**63), 2**63 - 1, 2**63 - 1])
    same(convert(big, "tensor<4xui64>"), np.array([10**19, 0, 2**63, 2**64 - 1], np.uint64))


def test_float_to_sub_byte_int_saturates():
    x = np.array([9.5, -9.5, 3.9], np.float32)
    same(convert(x, "tensor<3xi4>"), np.array([7, -8, 3], ml_dtypes.int4))
    same(convert(x, "tensor<3xui4>"), np.array([9, 0, 3], ml_dtypes.uint4))


def test_int_to_int_wraps():
    x = np.array([300, -129, 255, 128], np.int32)
    same(convert(x, "tensor<4xi8>"), [44, 127, -1, -128])
    same(convert(x, "tensor<4xui8>"), [44, 127, 255, 128])
    same(convert(np.array([9, 8, -9], np.int32), "tensor<3xi4>"), np.array([-7, -8, 7], ml_dtypes.int4))
    same(convert(np.array([17, -1], np.int32), "tensor<2xui4>"), np.array([1, 15], ml_dtypes.uint4))
    same(convert(np.array([2**64 - 1], np.uint64), "tensor<1xi64>"), [-1])
    same(convert(np.array([-1], np.int8), "tensor<1xui64>"), np.array([2**64 - 1], np.uint64))


def test_float_to_float_rounds_once_to_nearest_even():
    x = np.array([1 + 2**-8 + 2**-30, 1 + 2**-8, 1 + 3 * 2**-8, 1e300], np.float64)
    same(convert(x, "tensor<4xbf16>"), np.array([1.0078125, 1.0, 1.015625, np.inf], BF16))
    same(convert(np.array([1e300, -1e300, 1 + 2**-24], np.float64), "tensor<3xf32>"),
         np.array([np.inf, -np.inf, 1.0], np.float32))
    same(convert(np.array([65520.0, 65519.0], np.float32), "tensor<2xf16>"),
         np.array([np.inf, 65504], np.float16))


def test_int64_to_bf16_rounds_once():
    # 2**60 + 2**52 + 1 lies just above the midpoint of two bf16 neighbours;
    # rounding through f64 first would land exactly on the midpoint.
    x = np.array([2**60 + 2**52 + 1, 2**60 + 2**52], np.int64)
    same(convert(x, "tensor<2xbf16>"), np.array([2.0**60 * 1.0078125, 2.0**60], BF16))
    u = np.array([2**63 + 2**55 + 1], np.uint64)
    same(convert(u, "tensor<1xbf16>"), np.array([2.0**63 * 1.0078125], BF16))


def test_int_to_float_exact_and_rounding():
    same(convert(np.array([2**24 + 1, -7], np.int32), "tensor<2xf32>"), np.array([2.0**24, -7.0], np.float32))
    same(convert(np.array([-8, 7], ml_dtypes.int4), "tensor<2xf16>"), np.array([-8.0, 7.0], np.float16))
    same(convert(np.array([70000], np.int32), "tensor<1xf16>"), np.array([np.inf], np.float16))


def test_bool_conversions():
    same(convert(np.array([True, False]), "tensor<2xf32>"), np.array([1.0, 0.0], np.float32))
    same(convert(np.array([True, False]), "tensor<2xi4>"), np.array([1, 0], ml_dtypes.int4))
    same(convert(np.array([True, False]), "tensor<2xcomplex<f64>>"), [1 + 0j, 0j])
    same(convert(np.array([0.0, -0.0, np.nan, 0.5], np.float32), "tensor<4xi1>"), [False, False, True, True])
    same(convert(np.array([-2, 0], np.int64), "tensor<2xi1>"), [True, False])


def test_complex_conversions():
    c = np.array([-1.5 + 2j, 0 + 1j, 1e300 + 1e300j], np.complex128)
    same(convert(c, "tensor<3xf64>"), [-1.5, 0.0, 1e300])
    same(convert(c, "tensor<3xi1>"), [True, False, True])
    same(convert(c, "tensor<3xi32>"), [-1, 0, 2**31 - 1])
    same(convert(c, "tensor<3xcomplex<f32>>"),
         np.array([-1.5 + 2j, 1j, complex(np.inf, np.inf)], np.complex64))
    same(convert(np.array([3, -4], np.int64), "tensor<2xcomplex<f32>>"),
         np.array([3 + 0j, -4 + 0j], np.complex64))


def test_f8_conversions():
    x = np.array([300.0, 1.0625, -0.0], np.float32)
    same(convert(x, "tensor<3xf8E4M3FN>"), np.array([288.0, 1.0, -0.0], ml_dtypes.float8_e4m3fn))
    y = np.array([1.0, 448.0], ml_dtypes.float8_e4m3fn)
    same(convert(y, "tensor<2xbf16>"), np.array([1.0, 448.0], BF16))


def test_convert_values_keeps_0d():
    r = convert_values(np.array(2.5, np.float64), np.int16)
    assert isinstance(r, np.ndarray) and r.shape == () and r.dtype == np.int16 and r == 2


# --------------------------------------------------------------------------- #
# bitcast_convert
# --------------------------------------------------------------------------- #

def test_bitcast_same_width():
    out = run_op("stablehlo.bitcast_convert", np.array([1.0, -2.0], np.float32), result="tensor<2xi32>")
    same(out, [0x3F800000, np.int32(-0x40000000)])
    out = run_op("stablehlo.bitcast_convert", np.array(0x3C00, np.int16), result="tensor<f16>")
    same(out, np.array(1.0, np.float16))


def test_bitcast_to_narrower_adds_last_dim_little_endian():
    x = np.array(np.uint64(0x0123456789ABCDEF)).view(np.float64)
    out = run_op("stablehlo.bitcast_convert", x, result="tensor<4xf16>")
    same(out.view(np.uint16), np.array([0xCDEF, 0x89AB, 0x4567, 0x0123], np.uint16))
    out = run_op("stablehlo.bitcast_convert", np.array([0x21, -1], np.int8), result="tensor<2x2xi4>")
    same(out, np.array([[1, 2], [-1, -1]], ml_dtypes.int4))


def test_bitcast_to_wider_removes_last_dim():
    x = np.array([[0xCDEF, 0x89AB, 0x4567, 0x0123]], np.uint16)
    out = run_op("stablehlo.bitcast_convert", x, result="tensor<1xui64>")
    same(out, np.array([0x0123456789ABCDEF], np.uint64))
    bits = np.array([True, False, False, False, False, False, False, True])
    out = run_op("stablehlo.bitcast_convert", bits, result="tensor<ui8>")
    same(out, np.array(0x81, np.uint8))


def test_bitcast_complex_splits_real_then_imag():
    # real part 1.0 = 0x3FF0000000000000, imaginary part -2.0 = 0xC000000000000000
    c = np.array(complex(1.0, -2.0), np.complex128)
    out = run_op("stablehlo.bitcast_convert", c, result="tensor<2xcomplex<f32>>")
    same(out, np.array([complex(0.0, 1.875), complex(0.0, -2.0)], np.complex64))


# --------------------------------------------------------------------------- #
# reduce_precision
# --------------------------------------------------------------------------- #

def test_reduce_precision_spec_example():
    x = np.array([np.inf, np.nan, 5e-324, 0.0, 65519.0, 65520.0], np.float64)
    out = run_op("stablehlo.reduce_precision", x, attrs="{exponent_bits = 5 : i32, mantissa_bits = 10 : i32}")
    same(out, [np.inf, np.nan, 0.0, 0.0, 65504.0, np.inf])


def test_reduce_precision_rounds_ties_to_even_and_nan_without_mantissa():
    x = np.array([1 + 2**-11, 1 + 3 * 2**-11, -1e-6], np.float32)
    same(reduce_precision_values(x, 5, 10), np.array([1.0, 1 + 2**-9, -0.0], np.float32))
    nan = np.array([np.nan, -np.nan], np.float64)
    nan[1] = -np.abs(nan[1])
    same(reduce_precision_values(nan, 5, 0), [np.inf, -np.inf])
    # with no mantissa bits the tie breaks on the exponent's lowest bit
    same(reduce_precision_values(np.array([3.0, 6.0, 5.0], BF16), 8, 0), np.array([2.0, 8.0, 4.0], BF16))


# --------------------------------------------------------------------------- #
# the official suite (skips when absent)
# --------------------------------------------------------------------------- #

@pytest.mark.skipif(not (SUITE / "interpret").is_dir(), reason="official suite not present")
@pytest.mark.parametrize("name", ["convert", "bitcast_convert", "reduce_precision"])
def test_interpret_suite_file(name):
    assert_interpret_file_passes(name)


@pytest.mark.skipif(not (SUITE / "testdata").is_dir(), reason="official suite not present")
@pytest.mark.parametrize("pattern", ["convert_element_type_*.mlir", "bitcast_convert_type_*.mlir",
                                     "reduce_precision_*.mlir"])
def test_testdata_family(pattern):
    files = sorted((SUITE / "testdata").glob(pattern))
    assert files
    for path in files:
        assert_suite_file_passes(path)


def test_every_pair_of_element_types_converts_without_warnings():
    import warnings

    from stablehlo_conform import types as T

    names = [n for n in T.known_element_names() if n != "index"]
    base = np.array([0.0, -0.0, 1.0, -1.0, 0.5, 2.5, 7.0, 100.0, -100.0, 1e10, np.inf, -np.inf, np.nan])
    for s in names:
        src = T.ElementType(s)
        with np.errstate(all="ignore"):
            x = (base + 1j * base[::-1]).astype(src.dtype) if src.kind == "complex" else convert_values(base, src.dtype)
        for d in names:
            dst = T.ElementType(d)
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                r = convert_values(x, dst.dtype)
            assert r.dtype == dst.dtype and r.shape == x.shape, (s, d)
            if src.kind in ("int", "uint") and dst.kind in ("int", "uint", "float") and dst.bits >= 8 \
                    and d != "f8E8M0FNU":
                # small integers are exact in every integer and float type of 8+ bits
                # (f8E8M0FNU holds powers of two only)
                small = (x.astype(np.int64) >= 0) & (x.astype(np.int64) <= 7)
                assert (r[small].astype(np.float64) == x[small].astype(np.float64)).all(), (s, d)
