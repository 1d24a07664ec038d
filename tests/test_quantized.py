"""Quantization (spec.md#quantized-element-types, #uniform_quantize,
#uniform_dequantize, #quantization-computations): types, the quantize /
dequantize formulas, dequantize_op_quantize through the engine, and the
official quantized programs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stablehlo_conform import types as T
from stablehlo_conform.errors import ParseError, UnsupportedOp
from stablehlo_conform.kernels import quantized as Q
from stablehlo_conform.program import Loc, Op

from kernel_util import SUITE, run


def qtype(text: str) -> T.QuantizedType:
    t = T.parse_element_text(text)
    assert isinstance(t, T.QuantizedType), t
    return t


def needs_iree():
    pytest.importorskip("iree.compiler.ir", reason="iree-base-compiler is not installed")


# --------------------------------------------------------------------------- #
# types
# --------------------------------------------------------------------------- #


def test_parse_per_tensor_per_axis_ranges_and_unsigned():
    t = qtype("!quant.uniform<i8:f32, 0.5:-20>")
    assert (t.storage.name, t.expressed.name, t.scales, t.zero_points, t.axis) == ("i8", "f32", (0.5,), (-20,), None)
    t = qtype("!quant.uniform<i8:f32:0, {0.1:-30,0.5:-20}>")
    assert t.axis == 0 and t.scales == (0.1, 0.5) and t.zero_points == (-30, -20)
    t = qtype("!quant.uniform<i8<-127:127>:f32:1, {5.000000e-01:3,2.000000e+00}>")
    assert (t.storage_min, t.storage_max, t.axis, t.zero_points) == (-127, 127, 1, (3, 0))
    t = qtype("!quant.uniform<u8:f16, 2.000000e+00>")
    assert t.storage.name == "ui8" and t.dtype == np.uint8 and t.zero_points == (0,)
    t = qtype("!quant.uniform<i32:f32, 1.533503795273843E-5>")
    assert t.scales == (1.533503795273843e-5,) and t.dtype == np.int32


# --------------------------------------------------------------------------- #
# quantize / dequantize formulas
# --------------------------------------------------------------------------- #


def test_spec_examples_per_axis():
    qt = qtype("!quant.uniform<i8:f32:0, {0.1:-30,0.5:-20}>")
    q = Q.quantize(np.array([4.0, 15.0], np.float32), qt)
    assert q.dtype == np.int8 and q.tolist() == [10, 10]
    d = Q.dequantize(np.array([10, 10], np.int8), qt)
    assert d.dtype == np.float32
    np.testing.assert_allclose(d, [4.0, 15.0], rtol=1e-6)
    # requantize: [4.0, 15.0] / {0.1, 0.2} + {-20, -30} = [20, 45]
    qt2 = qtype("!quant.uniform<i8:f32:0, {0.1:-20,0.2:-30}>")
    assert Q.quantize(d, qt2).tolist() == [20, 45]


def test_quantize_rounds_half_to_even_after_clamp_to_storage_range():
    qt = qtype("!quant.uniform<i8:f32, 0.5>")
    assert Q.quantize(np.array([1.25, 1.75, -1.25, 0.75], np.float32), qt).tolist() == [2, 4, -2, 2]
    narrow = qtype("!quant.uniform<i8<-127:127>:f32, 0.5:1>")
    got = Q.quantize(np.array([100.0, -100.0, np.inf, -np.inf, np.nan], np.float32), narrow)
    assert got.tolist() == [127, -127, 127, -127, 0]


def test_one_quantize_adds_the_zero_point_before_rounding():
    """spec.md ``quantize``: round_nearest_even(clamp(x / scale + zero_point)); the element-wise
    kernels use this very pair (rounding first and adding the zero point after gives 3 here)."""
    from stablehlo_conform.kernels import elementwise as E

    assert E.quantize is Q.quantize and E.dequantize is Q.dequantize
    qt = qtype("!quant.uniform<i8:f32, 1.0:3>")
    assert Q.quantize(np.array([0.5, -0.5, 1.5], np.float32), qt).tolist() == [4, 2, 4]


def test_dequantize_difference_does_not_wrap_in_storage():
    qt = qtype("!quant.uniform<i8:f32, 1.0:-30>")
    # 120 - (-30) = 150 exceeds i8; the value is 150.0
    assert Q.dequantize(np.array([120, -128], np.int8), qt).tolist() == [150.0, -98.0]


def test_unsigned_and_i32_storage():
    qt = qtype("!quant.uniform<u8:f32, 0.25:128>")
    got = Q.quantize(np.array([0.0, 1.0, -40.0, 40.0], np.float32), qt)
    assert got.dtype == np.uint8 and got.tolist() == [128, 132, 0, 255]
    wide = qtype("!quant.uniform<i32:f32, 1.0>")
    # the clamp bound 2147483647 is 2147483648.0 in f32; the storage value saturates
    assert Q.quantize(np.array([3e9, -3e9], np.float32), wide).tolist() == [2147483647, -2147483648]


def test_expressed_bf16_steps_round_in_bf16():
    import ml_dtypes

    qt = qtype("!quant.uniform<i8:bf16, 0.1>")
    # 0.1 as bf16 is 0.10009765625; dequantize(3) = 0.300292968... rounds to bf16 0.30078125
    d = Q.dequantize(np.array([3], np.int8), qt)
    assert d.dtype == ml_dtypes.bfloat16 and float(d[0]) == 0.30078125


def test_storage_ops_and_unsupported_ops():
    qt = T.TensorType((2,), qtype("!quant.uniform<i8:f32, 0.5>"))
    f = T.TensorType((2,), T.ElementType("f32"))
    mk = lambda name, ins, outs: Op(name, (0,), (1,), ins, outs, {}, (), Loc("x.mlir", 3, 5))  # noqa: E731
    assert Q.passes_storage(mk("stablehlo.transpose", (qt,), (qt,)))
    assert Q.passes_storage(mk("stablehlo.exponential", (f,), (f,)))
    assert not Q.passes_storage(mk("stablehlo.exponential", (qt,), (qt,)))
    with pytest.raises(UnsupportedOp, match="no quantized semantics"):
        Q.dequantize_op_quantize(None, mk("stablehlo.xor", (qt,), (qt,)), None, [np.zeros(2, np.int8)])


# --------------------------------------------------------------------------- #
# programs (parsed through IREE's bindings: jaxlib's verifier rejects quant types)
# --------------------------------------------------------------------------- #


def test_quantized_add_program():
    needs_iree()
    text = """
func.func @main(%a: tensor<2xf32>, %b: tensor<2xf32>) -> (tensor<2xi8>, tensor<2xf32>) {
  %qa = stablehlo.uniform_quantize %a : (tensor<2xf32>) -> tensor<2x!quant.uniform<i8:f32, 0.1:-30>>
  %qb = stablehlo.uniform_quantize %b : (tensor<2xf32>) -> tensor<2x!quant.uniform<i8:f32, 0.5:-20>>
  %s = stablehlo.add %qa, %qb : (tensor<2x!quant.uniform<i8:f32, 0.1:-30>>, tensor<2x!quant.uniform<i8:f32, 0.5:-20>>) -> tensor<2x!quant.uniform<i8:f32, 0.5:-20>>
  %bits = stablehlo.bitcast_convert %s : (tensor<2x!quant.uniform<i8:f32, 0.5:-20>>) -> tensor<2xi8>
  %f = stablehlo.uniform_dequantize %s : (tensor<2x!quant.uniform<i8:f32, 0.5:-20>>) -> tensor<2xf32>
  return %bits, %f : tensor<2xi8>, tensor<2xf32>
}
"""
    bits, f = run(text, np.array([1.0, 2.0], np.float32), np.array([3.0, 4.0], np.float32))
    # [1,2] + [3,4] = [4,6]; 4/0.5-20 = -12, 6/0.5-20 = -8
    assert bits.dtype == np.int8 and bits.tolist() == [-12, -8]
    assert f.tolist() == [4.0, 6.0]


def test_compare_select_and_data_movement_on_storage():
    needs_iree()
    text = """
func.func @main(%a: tensor<2xi8>, %b: tensor<2xi8>) -> (tensor<2xi1>, tensor<2xi8>) {
  %qa = stablehlo.bitcast_convert %a : (tensor<2xi8>) -> tensor<2x!quant.uniform<i8:f32, 0.1:-30>>
  %qb = stablehlo.bitcast_convert %b : (tensor<2xi8>) -> tensor<2x!quant.uniform<i8:f32, 0.5:-20>>
  %eq = stablehlo.compare EQ, %qa, %qb : (tensor<2x!quant.uniform<i8:f32, 0.1:-30>>, tensor<2x!quant.uniform<i8:f32, 0.5:-20>>) -> tensor<2xi1>
  %r = stablehlo.reverse %qa, dims = [0] : tensor<2x!quant.uniform<i8:f32, 0.1:-30>>
  %bits = stablehlo.bitcast_convert %r : (tensor<2x!quant.uniform<i8:f32, 0.1:-30>>) -> tensor<2xi8>
  return %eq, %bits : tensor<2xi1>, tensor<2xi8>
}
"""
    # storage [-20, -10] at 0.1:-30 is [1, 2]; [-18, -17] at 0.5:-20 is [1, 1.5]
    eq, bits = run(text, np.array([-20, -10], np.int8), np.array([-18, -17], np.int8))
    assert eq.tolist() == [True, False]
    assert bits.tolist() == [-10, -20]


def test_hybrid_and_per_axis_dot_general():
    needs_iree()
    text = """
func.func @main(%l: tensor<1x2xf32>, %r: tensor<2x1xi8>, %ql: tensor<1x2xi8>, %pr: tensor<2x2xi8>) -> (tensor<1x1xf32>, tensor<1x2xi32>) {
  %q = stablehlo.bitcast_convert %r : (tensor<2x1xi8>) -> tensor<2x1x!quant.uniform<i8:f32, 0.5>>
  %h = stablehlo.dot_general %l, %q, contracting_dims = [1] x [0] : (tensor<1x2xf32>, tensor<2x1x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x1xf32>
  %a = stablehlo.bitcast_convert %ql : (tensor<1x2xi8>) -> tensor<1x2x!quant.uniform<i8:f32, 1.0>>
  %b = stablehlo.bitcast_convert %pr : (tensor<2x2xi8>) -> tensor<2x2x!quant.uniform<i8:f32:1, {0.5, 0.25}>>
  %d = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<1x2x!quant.uniform<i8:f32, 1.0>>, tensor<2x2x!quant.uniform<i8:f32:1, {0.5, 0.25}>>) -> tensor<1x2x!quant.uniform<i32:f32:1, {0.5, 0.25}>>
  %bits = stablehlo.bitcast_convert %d : (tensor<1x2x!quant.uniform<i32:f32:1, {0.5, 0.25}>>) -> tensor<1x2xi32>
  return %h, %bits : tensor<1x1xf32>, tensor<1x2xi32>
}
"""
    h, bits = run(text, np.array([[1.0, 2.0]], np.float32), np.array([[2], [4]], np.int8),
                  np.array([[1, 2]], np.int8), np.array([[2, 4], [2, 4]], np.int8))
    # hybrid: [1, 2] . [1, 2] = 5
    assert h.tolist() == [[5.0]]
    # rhs dequantizes to [[1, 1], [1, 1]]; [1, 2] . [[1,1],[1,1]] = [3, 3]; / {0.5, 0.25} = [6, 12]
    assert bits.tolist() == [[6, 12]]


def test_diagnostics_keep_file_line_col():
    needs_iree()
    from stablehlo_conform import frontend

    text = """func.func @main(%a: tensor<2xi8>) -> tensor<2xf16> {
  %q = stablehlo.bitcast_convert %a : (tensor<2xi8>) -> tensor<2x!quant.uniform<i8:f32, 0.5>>
  %f = stablehlo.uniform_dequantize %q : (tensor<2x!quant.uniform<i8:f32, 0.5>>) -> tensor<2xf16>
  return %f : tensor<2xf16>
}
"""
    with pytest.raises(ParseError) as e:
        frontend.load_text(text, "bad_quant.mlir")
    assert str(e.value).startswith("bad_quant.mlir:3:")


# --------------------------------------------------------------------------- #
# the official quantized programs
# --------------------------------------------------------------------------- #


def _suite_files() -> list[Path]:
    if not SUITE.is_dir():
        return []
    return [SUITE / "interpret" / "quantized_ops.mlir"] + sorted((SUITE / "testdata" / "quantized").glob("*.mlir"))


def test_official_quantized_programs_pass():
    if not SUITE.is_dir():
        pytest.skip("../shared/stablehlo-suite is absent")
    needs_iree()
    from stablehlo_conform.harness.suite.cases import Options, run_file

    statuses: dict[str, str] = {}
    for path in _suite_files():
        for kind, rec in run_file(str(path), Options()):
            if kind == "result":
                statuses[rec.id] = f"{rec.status}: {rec.message[:200]}"
    bad = {k: v for k, v in statuses.items() if not v.startswith("pass")}
    assert len(statuses) >= 140
    assert not bad, bad


CHECKED_PROGRAMS = """
func.func @per_axis_add() {
  %a = stablehlo.constant dense<[[2, 4], [6, 8]]> : tensor<2x2xi8>
  %q = stablehlo.bitcast_convert %a : (tensor<2x2xi8>) -> tensor<2x2x!quant.uniform<i8:f32:1, {0.5:0, 0.25:2}>>
  %s = stablehlo.add %q, %q : (tensor<2x2x!quant.uniform<i8:f32:1, {0.5:0, 0.25:2}>>, tensor<2x2x!quant.uniform<i8:f32:1, {0.5:0, 0.25:2}>>) -> tensor<2x2x!quant.uniform<i8:f32:1, {1.0:0, 2.0:1}>>
  %b = stablehlo.bitcast_convert %s : (tensor<2x2x!quant.uniform<i8:f32:1, {1.0:0, 2.0:1}>>) -> tensor<2x2xi8>
  check.expect_eq_const %b, dense<[[2, 2], [6, 2]]> : tensor<2x2xi8>
  func.return
}

// -----

func.func @sort_by_dequantized_value() {
  %a = stablehlo.constant dense<[5, -3, 7, 0]> : tensor<4xi8>
  %q = stablehlo.bitcast_convert %a : (tensor<4xi8>) -> tensor<4x!quant.uniform<i8:f32, 0.5:1>>
  %s = "stablehlo.sort"(%q) ({
  ^bb0(%x: tensor<!quant.uniform<i8:f32, 0.5:1>>, %y: tensor<!quant.uniform<i8:f32, 0.5:1>>):
    %c = stablehlo.compare GT, %x, %y : (tensor<!quant.uniform<i8:f32, 0.5:1>>, tensor<!quant.uniform<i8:f32, 0.5:1>>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }) {dimension = 0 : i64} : (tensor<4x!quant.uniform<i8:f32, 0.5:1>>) -> tensor<4x!quant.uniform<i8:f32, 0.5:1>>
  %b = stablehlo.bitcast_convert %s : (tensor<4x!quant.uniform<i8:f32, 0.5:1>>) -> tensor<4xi8>
  check.expect_eq_const %b, dense<[7, 5, 0, -3]> : tensor<4xi8>
  func.return
}

// -----

func.func @is_finite_always_true() {
  %a = stablehlo.constant dense<[127, -128]> : tensor<2xi8>
  %q = stablehlo.bitcast_convert %a : (tensor<2xi8>) -> tensor<2x!quant.uniform<i8:f32, 3.0e38>>
  %f = stablehlo.is_finite %q : (tensor<2x!quant.uniform<i8:f32, 3.0e38>>) -> tensor<2xi1>
  check.expect_eq_const %f, dense<true> : tensor<2xi1>
  func.return
}

// -----

func.func @transpose_moves_quantization_dimension() {
  %a = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi8>
  %q = stablehlo.bitcast_convert %a : (tensor<2x3xi8>) -> tensor<2x3x!quant.uniform<i8:f32:0, {0.5, 0.25}>>
  %t = stablehlo.transpose %q, dims = [1, 0] : (tensor<2x3x!quant.uniform<i8:f32:0, {0.5, 0.25}>>) -> tensor<3x2x!quant.uniform<i8:f32:1, {0.5, 0.25}>>
  %f = stablehlo.uniform_dequantize %t : (tensor<3x2x!quant.uniform<i8:f32:1, {0.5, 0.25}>>) -> tensor<3x2xf32>
  check.expect_eq_const %f, dense<[[0.5, 1.0], [1.0, 1.25], [1.5, 1.5]]> : tensor<3x2xf32>
  func.return
}

// -----

func.func @quantized_constants_and_iota() {
  %q = stablehlo.constant() {value = dense<[200, 7]> : tensor<2xi8>} : () -> tensor<2x!quant.uniform<u8:f32, 0.5:128>>
  %f = stablehlo.uniform_dequantize %q : (tensor<2x!quant.uniform<u8:f32, 0.5:128>>) -> tensor<2xf32>
  check.expect_eq_const %f, dense<[36.0, -60.5]> : tensor<2xf32>
  %s = stablehlo.constant() {value = dense<4> : tensor<2x2xi8>} : () -> tensor<2x2x!quant.uniform<i8:f32:1, {0.5:1, 2.0:3}>>
  %g = stablehlo.uniform_dequantize %s : (tensor<2x2x!quant.uniform<i8:f32:1, {0.5:1, 2.0:3}>>) -> tensor<2x2xf32>
  check.expect_eq_const %g, dense<[[1.5, 2.0], [1.5, 2.0]]> : tensor<2x2xf32>
  %i = stablehlo.iota dim = 0 : tensor<3x!quant.uniform<i8:f32, 0.5:1>>
  %b = stablehlo.bitcast_convert %i : (tensor<3x!quant.uniform<i8:f32, 0.5:1>>) -> tensor<3xi8>
  check.expect_eq_const %b, dense<[1, 3, 5]> : tensor<3xi8>
  func.return
}

// -----

func.func @check_op_properties() {
  %a = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %q = stablehlo.uniform_quantize %a : (tensor<2xf32>) -> tensor<2x!quant.uniform<i8:f32, 0.25:-1>>
  %b = stablehlo.bitcast_convert %q : (tensor<2x!quant.uniform<i8:f32, 0.25:-1>>) -> tensor<2xi8>
  "check.expect_eq_const"(%b) <{value = dense<[3, 7]> : tensor<2xi8>}> : (tensor<2xi8>) -> ()
  func.return
}
"""


def test_checked_quantized_programs(tmp_path):
    needs_iree()
    from stablehlo_conform.harness.suite.cases import Options, run_file

    path = tmp_path / "quantized_checks.mlir"
    path.write_text(CHECKED_PROGRAMS)
    recs = [rec for kind, rec in run_file(str(path), Options()) if kind == "result"]
    assert [r.function for r in recs] == [
        "per_axis_add", "sort_by_dequantized_value", "is_finite_always_true",
        "transpose_moves_quantization_dimension", "quantized_constants_and_iota", "check_op_properties"]
    assert all(r.status == "pass" and r.checks >= 1 for r in recs), recs
    assert [r.checks for r in recs] == [1, 1, 1, 1, 3, 1]


# --------------------------------------------------------------------------- #
# reductions: spec.md#reduce, #reduce_window, #select_and_scatter run their
# bodies, whose ops carry the quantized semantics at every step
# --------------------------------------------------------------------------- #


def test_quantized_reduce_add_requantizes_each_step():
    needs_iree()
    q = "!quant.uniform<i8<-5:5>:f32, 0.5>"
    text = f"""
func.func @main(%a: tensor<2x3xi8>) -> tensor<2xi8> {{
  %q = stablehlo.bitcast_convert %a : (tensor<2x3xi8>) -> tensor<2x3x{q}>
  %z = stablehlo.constant() {{value = dense<0> : tensor<i8>}} : () -> tensor<{q}>
  %r = stablehlo.reduce(%q init: %z) applies stablehlo.add across dimensions = [1] : (tensor<2x3x{q}>, tensor<{q}>) -> tensor<2x{q}>
  %b = stablehlo.bitcast_convert %r : (tensor<2x{q}>) -> tensor<2xi8>
  return %b : tensor<2xi8>
}}
"""
    (bits,) = run(text, np.array([[4, 4, -4], [1, 2, -3]], np.int8))
    # row 0 is [2, 2, -2]: 0 + 2 = 2 (storage 4); 2 + 2 = 4 -> storage 8 clamps
    # to 5 (2.5); 2.5 - 2 = 0.5 -> storage 1 (a float sum then quantize gives 4)
    # row 1 is [0.5, 1, -1.5]: sum 0 -> storage 0
    assert bits.dtype == np.int8 and bits.tolist() == [1, 0]


def test_quantized_reduce_promotes_to_wider_body_type():
    needs_iree()
    q = "!quant.uniform<i8:f32, 0.5>"
    w = "!quant.uniform<i32:f32, 0.25:2>"
    text = f"""
func.func @main(%a: tensor<4xi8>, %i: tensor<i8>) -> tensor<i32> {{
  %q = stablehlo.bitcast_convert %a : (tensor<4xi8>) -> tensor<4x{q}>
  %z = stablehlo.bitcast_convert %i : (tensor<i8>) -> tensor<{q}>
  %r = "stablehlo.reduce"(%q, %z) ({{
  ^bb0(%x: tensor<{w}>, %y: tensor<{w}>):
    %s = stablehlo.add %x, %y : tensor<{w}>
    stablehlo.return %s : tensor<{w}>
  }}) {{dimensions = array<i64: 0>}} : (tensor<4x{q}>, tensor<{q}>) -> tensor<{w}>
  %b = stablehlo.bitcast_convert %r : (tensor<{w}>) -> tensor<i32>
  return %b : tensor<i32>
}}
"""
    (bits,) = run(text, np.array([100, 100, 100, 100], np.int8), np.array(2, np.int8))
    # to_destination_type: storage 100 is 50.0 -> 50 / 0.25 + 2 = 202 in the
    # i32 type; the init 2 is 1.0. 1 + 4 * 50 = 201 -> 201 / 0.25 + 2 = 806
    # (the i8 type would saturate at 127 = 63.5)
    assert bits.dtype == np.int32 and bits.shape == () and int(bits) == 806


def test_quantized_reduce_window_and_max_pool():
    needs_iree()
    q = "!quant.uniform<i8:f32, 0.5:1>"
    text = f"""
func.func @main(%a: tensor<4xi8>) -> (tensor<3xi8>, tensor<3xi8>) {{
  %q = stablehlo.bitcast_convert %a : (tensor<4xi8>) -> tensor<4x{q}>
  %z = stablehlo.constant() {{value = dense<1> : tensor<i8>}} : () -> tensor<{q}>
  %m = stablehlo.constant() {{value = dense<-128> : tensor<i8>}} : () -> tensor<{q}>
  %s = "stablehlo.reduce_window"(%q, %z) ({{
  ^bb0(%x: tensor<{q}>, %y: tensor<{q}>):
    %r = stablehlo.add %x, %y : tensor<{q}>
    stablehlo.return %r : tensor<{q}>
  }}) {{window_dimensions = array<i64: 2>}} : (tensor<4x{q}>, tensor<{q}>) -> tensor<3x{q}>
  %p = "stablehlo.reduce_window"(%q, %m) ({{
  ^bb0(%x: tensor<{q}>, %y: tensor<{q}>):
    %r = stablehlo.maximum %x, %y : tensor<{q}>
    stablehlo.return %r : tensor<{q}>
  }}) {{window_dimensions = array<i64: 2>, window_strides = array<i64: 2>,
       padding = dense<[[1, 1]]> : tensor<1x2xi64>}} : (tensor<4x{q}>, tensor<{q}>) -> tensor<3x{q}>
  %bs = stablehlo.bitcast_convert %s : (tensor<3x{q}>) -> tensor<3xi8>
  %bp = stablehlo.bitcast_convert %p : (tensor<3x{q}>) -> tensor<3xi8>
  return %bs, %bp : tensor<3xi8>, tensor<3xi8>
}}
"""
    sums, pooled = run(text, np.array([3, -2, 7, 1], np.int8))
    # storage [3, -2, 7, 1] is [1, -1.5, 3, 0]; window sums from init 0:
    # [-0.5, 1.5, 3] -> storage [0, 4, 7] (adding storage values would give
    # [1, 5, 8] with the zero points counted twice)
    assert sums.tolist() == [0, 4, 7]
    # padded windows [pad, 1], [-1.5, 3], [0, pad]: maxima [1, 3, 0]
    assert pooled.tolist() == [3, 7, 1]


def test_quantized_select_and_scatter_overlapping_windows():
    needs_iree()
    q = "!quant.uniform<i8:f32, 0.5:1>"
    text = f"""
func.func @main(%a: tensor<4xi8>, %s: tensor<2xi8>) -> tensor<4xi8> {{
  %q = stablehlo.bitcast_convert %a : (tensor<4xi8>) -> tensor<4x{q}>
  %qs = stablehlo.bitcast_convert %s : (tensor<2xi8>) -> tensor<2x{q}>
  %z = stablehlo.constant() {{value = dense<1> : tensor<i8>}} : () -> tensor<{q}>
  %r = "stablehlo.select_and_scatter"(%q, %qs, %z) ({{
  ^bb0(%x: tensor<{q}>, %y: tensor<{q}>):
    %c = stablehlo.compare GE, %x, %y : (tensor<{q}>, tensor<{q}>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }}, {{
  ^bb0(%x: tensor<{q}>, %y: tensor<{q}>):
    %t = stablehlo.add %x, %y : tensor<{q}>
    stablehlo.return %t : tensor<{q}>
  }}) {{window_dimensions = array<i64: 3>, window_strides = array<i64: 1>}}
      : (tensor<4x{q}>, tensor<2x{q}>, tensor<{q}>) -> tensor<4x{q}>
  %b = stablehlo.bitcast_convert %r : (tensor<4x{q}>) -> tensor<4xi8>
  return %b : tensor<4xi8>
}}
"""
    (bits,) = run(text, np.array([3, 9, 5, 1], np.int8), np.array([5, 3], np.int8))
    # operand [1, 4, 2, 0]: both windows select index 1; the sources [2, 1]
    # add to the init 0 there: 3 -> storage 7 (storage addition would give 9);
    # every other position keeps the init (storage 1)
    assert bits.tolist() == [1, 7, 1, 1]


def test_quantized_long_reduce_uses_body_semantics():
    needs_iree()
    q = "!quant.uniform<i8:f32, 0.5:-3>"
    text = f"""
func.func @main(%a: tensor<40xi8>) -> tensor<i8> {{
  %q = stablehlo.bitcast_convert %a : (tensor<40xi8>) -> tensor<40x{q}>
  %z = stablehlo.constant() {{value = dense<-3> : tensor<i8>}} : () -> tensor<{q}>
  %r = stablehlo.reduce(%q init: %z) applies stablehlo.add across dimensions = [0] : (tensor<40x{q}>, tensor<{q}>) -> tensor<{q}>
  %b = stablehlo.bitcast_convert %r : (tensor<{q}>) -> tensor<i8>
  return %b : tensor<i8>
}}
"""
    a = np.full(40, -2, np.int8)  # 40 x 0.5 = 20 -> 20 / 0.5 - 3 = 37
    a[::2] = -4  # every other one is -0.5: 20 x 0.5 - 20 x 0.5 = 0 -> storage -3
    (bits,) = run(text, a)
    assert bits.shape == () and int(bits) == -3
    (bits,) = run(text, np.full(40, -2, np.int8))
    assert int(bits) == 37
