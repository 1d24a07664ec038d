"""reduce, reduce_window, select_and_scatter and chlo.scan.

Hand-computed values (spec.md#reduce, #reduce_window, #select_and_scatter),
the ``ufunc`` fast paths checked against the general lanes path on the same
data, variadic argmax-style bodies, and the official interpreter tests when
present.
"""

from __future__ import annotations


import ml_dtypes
import numpy as np
import pytest

from stablehlo_conform.kernels import reduction

from kernel_util import SUITE, assert_interpret_file_passes, assert_suite_file_passes, one, run, ty


BINOPS = {"add": "stablehlo.add", "mul": "stablehlo.multiply", "max": "stablehlo.maximum",
          "min": "stablehlo.minimum", "and": "stablehlo.and", "or": "stablehlo.or",
          "xor": "stablehlo.xor"}


def reduce_text(shape, el, dims, kind, init):
    out = [d for i, d in enumerate(shape) if i not in dims]
    return f"""
func.func @main(%x: {ty(shape, el)}) -> {ty(out, el)} {{
  %init = stablehlo.constant dense<{init}> : tensor<{el}>
  %r = "stablehlo.reduce"(%x, %init) ({{
    ^bb0(%a: tensor<{el}>, %b: tensor<{el}>):
      %s = {BINOPS[kind]} %a, %b : tensor<{el}>
      stablehlo.return %s : tensor<{el}>
  }}) {{dimensions = array<i64: {", ".join(map(str, dims))}>}}
     : ({ty(shape, el)}, tensor<{el}>) -> {ty(out, el)}
  func.return %r : {ty(out, el)}
}}"""


def general_only(monkeypatch):
    monkeypatch.setattr(reduction, "simple_body", lambda op, i=0: None)


# ----------------------------------------------------------------------------- reduce


def test_reduce_add_folds_non_identity_init():
    x = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    out = one(reduce_text((2, 3), "i32", (1,), "add", 5), x)
    assert out.dtype == np.int32 and out.tolist() == [11, 20]


def test_reduce_int_add_wraps():
    x = np.array([120, 100, 50], np.int8)
    out = one(reduce_text((3,), "i8", (0,), "add", 0), x)
    assert out.shape == () and int(out) == (270 + 128) % 256 - 128


def test_reduce_short_bf16_sum_rounds_every_step_long_sum_accumulates_in_f32():
    # up to 32 elements: sequential from init in bf16 (256 + 1 rounds back to 256)
    x = np.ones(8, dtype=ml_dtypes.bfloat16)
    x[0] = 256
    out = one(reduce_text((8,), "bf16", (0,), "add", "0.0"), x)
    assert float(out) == 256.0
    # longer: f32 accumulation, rounded once
    x = np.ones(64, dtype=ml_dtypes.bfloat16)
    x[0] = 256
    out = one(reduce_text((64,), "bf16", (0,), "add", "0.0"), x)
    assert float(out) == 320.0


def test_reduce_empty_dimension_gives_init():
    x = np.zeros((0, 3), np.float32)
    out = one(reduce_text((0, 3), "f32", (0,), "max", "-1.0"), x)
    assert out.tolist() == [-1.0, -1.0, -1.0]


CASES = [
    ("add", "i32", np.int32, "7"),
    ("mul", "i16", np.int16, "1"),
    ("max", "f32", np.float32, "0xFF800000"),
    ("min", "f64", np.float64, "0x7FF0000000000000"),
    ("and", "ui8", np.uint8, "255"),
    ("or", "i64", np.int64, "0"),
    ("xor", "i32", np.int32, "3"),
    ("add", "i1", np.bool_, "false"),
    ("mul", "i1", np.bool_, "true"),
    ("add", "f32", np.float32, "0.5"),
    ("add", "bf16", ml_dtypes.bfloat16, "0.0"),
]


@pytest.mark.parametrize("kind,el,dt,init", CASES)
def test_reduce_fast_path_matches_general_path(kind, el, dt, init, monkeypatch):
    rng = np.random.default_rng(3)
    shape = (4, 5, 6)
    if dt == np.bool_:
        x = rng.integers(0, 2, shape).astype(np.bool_)
    elif np.dtype(dt).kind in "iu":
        x = rng.integers(-50, 50, shape).astype(dt)
    else:
        x = rng.integers(-8, 8, shape).astype(dt)  # exact in any order
    if kind == "max" and dt == np.float32:
        x[1, 2, 3] = np.nan
    text = reduce_text(shape, el, (0, 2), kind, init)
    fast = one(text, x)
    general_only(monkeypatch)
    slow = one(text, x)
    assert fast.dtype == slow.dtype == np.dtype(dt)
    np.testing.assert_array_equal(fast, slow)


ARGMAX = """
func.func @main(%x: tensor<2x5xf32>) -> (tensor<2xf32>, tensor<2xi32>) {
  %i = stablehlo.iota dim = 1 : tensor<2x5xi32>
  %vi = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %ii = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.reduce(%x init: %vi), (%i init: %ii) across dimensions = [1]
      : (tensor<2x5xf32>, tensor<2x5xi32>, tensor<f32>, tensor<i32>) -> (tensor<2xf32>, tensor<2xi32>)
   reducer(%a: tensor<f32>, %c: tensor<f32>) (%b: tensor<i32>, %d: tensor<i32>) {
    %gt = stablehlo.compare GT, %a, %c, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %eq = stablehlo.compare EQ, %a, %c, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %lt = stablehlo.compare LT, %b, %d, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %tie = stablehlo.and %eq, %lt : tensor<i1>
    %take = stablehlo.or %gt, %tie : tensor<i1>
    %v = stablehlo.select %take, %a, %c : tensor<i1>, tensor<f32>
    %j = stablehlo.select %take, %b, %d : tensor<i1>, tensor<i32>
    stablehlo.return %v, %j : tensor<f32>, tensor<i32>
  }
  func.return %r#0, %r#1 : tensor<2xf32>, tensor<2xi32>
}"""


def test_variadic_argmax_reduce_prefers_lowest_index():
    x = np.array([[1, 7, 3, 7, 2], [-1, -5, -1, -9, -2]], np.float32)
    v, i = run(ARGMAX, x)
    assert v.tolist() == [7.0, -1.0]
    assert i.tolist() == [1, 0]
    assert i.dtype == np.int32


# ----------------------------------------------------------------------------- reduce_window


def window_text(shape, el, out, kind, init, attrs):
    return f"""
func.func @main(%x: {ty(shape, el)}) -> {ty(out, el)} {{
  %init = stablehlo.constant dense<{init}> : tensor<{el}>
  %r = "stablehlo.reduce_window"(%x, %init) ({{
    ^bb0(%a: tensor<{el}>, %b: tensor<{el}>):
      %s = {BINOPS[kind]} %a, %b : tensor<{el}>
      stablehlo.return %s : tensor<{el}>
  }}) {{{attrs}}} : ({ty(shape, el)}, tensor<{el}>) -> {ty(out, el)}
  func.return %r : {ty(out, el)}
}}"""


SPEC_WINDOW = ("window_dimensions = array<i64: 2, 1>, window_strides = array<i64: 4, 1>, "
               "base_dilations = array<i64: 2, 1>, window_dilations = array<i64: 3, 1>, "
               "padding = dense<[[2, 1], [0, 0]]> : tensor<2x2xi64>")


def test_reduce_window_spec_example():
    x = np.array([[1, 2], [3, 4], [5, 6]], np.int64)
    out = one(window_text((3, 2), "i64", (2, 2), "add", 0, SPEC_WINDOW), x)
    assert out.tolist() == [[0, 0], [3, 4]]


def test_reduce_window_general_path_matches_fast_path(monkeypatch):
    rng = np.random.default_rng(0)
    x = rng.integers(-9, 9, (7, 8)).astype(np.int32)
    attrs = ("window_dimensions = array<i64: 3, 2>, window_strides = array<i64: 2, 1>, "
             "base_dilations = array<i64: 1, 2>, window_dilations = array<i64: 1, 2>, "
             "padding = dense<[[1, 2], [0, 1]]> : tensor<2x2xi64>")
    # padded: rows 7+3=10, cols (8-1)*2+1+1=16; windows: rows (10-3)//2+1=4, cols 16-3+1=14
    for kind, init in (("max", -100), ("add", 3), ("min", 100)):
        text = window_text((7, 8), "i32", (4, 14), kind, init, attrs)
        fast = one(text, x)
        with monkeypatch.context() as m:
            general_only(m)
            slow = one(text, x)
        np.testing.assert_array_equal(fast, slow)


def test_reduce_window_cumsum_rounds_every_step_bf16():
    # XLA folds the window sequentially in the element type
    x = np.array([256, 1, 1, 1], dtype=ml_dtypes.bfloat16)
    attrs = "window_dimensions = array<i64: 4>, padding = dense<[[3, 0]]> : tensor<1x2xi64>"
    out = one(window_text((4,), "bf16", (4,), "add", "0.0", attrs), x)
    # 256 + 1 rounds back to 256 in bf16 (8 bits of precision) at every step
    assert out.astype(np.float32).tolist() == [256, 256, 256, 256]


def test_reduce_window_padding_is_left_out_of_the_fold():
    # init 1 (not an identity): padded positions do not add another 1
    x = np.array([1, 2, 3], np.int32)
    attrs = "window_dimensions = array<i64: 3>, padding = dense<[[2, 2]]> : tensor<1x2xi64>"
    out = one(window_text((3,), "i32", (5,), "add", 1, attrs), x)
    assert out.tolist() == [2, 4, 7, 6, 4]


def test_reduce_window_empty_result():
    x = np.ones((2, 2), np.float32)
    attrs = "window_dimensions = array<i64: 3, 1>"
    out = one(window_text((2, 2), "f32", (0, 2), "add", "0.0", attrs), x)
    assert out.shape == (0, 2)


# ----------------------------------------------------------------------------- select_and_scatter


def sas_text(cmp, scatter="stablehlo.add"):
    return f"""
func.func @main(%x: tensor<4x2xi64>, %s: tensor<2x2xi64>) -> tensor<4x2xi64> {{
  %init = stablehlo.constant dense<0> : tensor<i64>
  %r = "stablehlo.select_and_scatter"(%x, %s, %init) ({{
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %0 = stablehlo.compare {cmp}, %a, %b : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %0 : tensor<i1>
  }}, {{
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %0 = {scatter} %a, %b : tensor<i64>
      stablehlo.return %0 : tensor<i64>
  }}) {{
    window_dimensions = array<i64: 3, 1>,
    window_strides = array<i64: 2, 1>,
    padding = dense<[[0, 1], [0, 0]]> : tensor<2x2xi64>
  }} : (tensor<4x2xi64>, tensor<2x2xi64>, tensor<i64>) -> tensor<4x2xi64>
  func.return %r : tensor<4x2xi64>
}}"""


OPERAND = np.array([[1, 5], [2, 5], [3, 6], [4, 4]], np.int64)
SOURCE = np.array([[5, 6], [7, 8]], np.int64)


def test_select_and_scatter_spec_example():
    out = one(sas_text("GE"), OPERAND, SOURCE)
    assert out.tolist() == [[0, 0], [0, 0], [5, 14], [7, 0]]


def test_select_and_scatter_min_selection_and_first_of_ties():
    # LE selects the minimum; on the tie 5, 5 the first element is kept
    out = one(sas_text("LE"), OPERAND, SOURCE)
    # col 0: windows [1,2,3] -> row 0, [3,4,pad] -> row 2
    # col 1: windows [5,5,6] -> row 0, [6,4,pad] -> row 3
    assert out.tolist() == [[5, 6], [0, 0], [7, 0], [0, 8]]


def test_select_and_scatter_general_scatter_body(monkeypatch):
    general_only(monkeypatch)
    out = one(sas_text("GE", "stablehlo.maximum"), OPERAND, SOURCE)
    assert out.tolist() == [[0, 0], [0, 0], [5, 8], [7, 0]]


def test_scatter_combine_rounds_match_ufunc_at():
    rng = np.random.default_rng(1)
    targets = rng.integers(0, 6, 40)
    src = rng.integers(-5, 5, 40).astype(np.int32)
    base = np.zeros(6, np.int32)
    expect = base.copy()
    np.add.at(expect, targets, src)
    got = reduction.scatter_combine(lambda a, b: (a + b,), None, base, targets, src)
    np.testing.assert_array_equal(got, expect)


# ----------------------------------------------------------------------------- chlo.scan

SCAN = """
func.func @main(%x: tensor<2x3xi32>) -> (tensor<2x3xi32>, tensor<2xi32>) {
  %init = stablehlo.constant dense<[10, 20]> : tensor<2xi32>
  %0:2 = chlo.scan(%x) inits(%init) dimension=1 attributes {is_reverse = true} {
  ^bb0(%a: tensor<2xi32>, %c: tensor<2xi32>):
    %1 = stablehlo.add %a, %c : tensor<2xi32>
    stablehlo.return %1, %1 : tensor<2xi32>, tensor<2xi32>
  } : (tensor<2x3xi32>, tensor<2xi32>) -> (tensor<2x3xi32>, tensor<2xi32>)
  func.return %0#0, %0#1 : tensor<2x3xi32>, tensor<2xi32>
}"""


def test_chlo_scan_reverse_along_dim1():
    x = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    out, carry = run(SCAN, x)
    assert out.tolist() == [[16, 15, 13], [35, 31, 26]]
    assert carry.tolist() == [16, 35]


# ----------------------------------------------------------------------------- official tests




@pytest.mark.parametrize("name", ["reduce", "reduce_window", "select_and_scatter", "map", "while",
                                  "chlo/scan"])
def test_interpret_suite(name):
    assert_interpret_file_passes(name)


@pytest.mark.parametrize("name", ["argmax_float32_4", "reduce_max_complex64_2_3", "cumsum_bfloat16_8_9",
                                  "cumlogsumexp_float32_8_9", "select_and_gather_add_float32_4_6_float32_4_6",
                                  "select_and_scatter_add_float32_2_3_4_float32_2_4_6",
                                  "reduce_window_min_float32_1_1600"])
def test_testdata(name):
    assert_suite_file_passes(SUITE / "testdata" / f"{name}.mlir")


# ----------------------------------------------------------------------------- signed zeros in min/max
# spec.md#maximum/#minimum are IEEE-754 maximum/minimum: -0 < +0. NumPy's ufuncs
# treat the zeros as equal, so a fast path built on them gave reduce-min([-0, +0]) = +0.


def _signs(a):
    return np.signbit(np.asarray(a).astype(np.float32)).tolist()


@pytest.mark.parametrize("el,dt", [("f32", np.float32), ("f64", np.float64), ("bf16", ml_dtypes.bfloat16)])
@pytest.mark.parametrize("n", [2, 40])  # the sequential schedule and the long ufunc.reduce one
def test_reduce_min_max_order_negative_zero_below_positive_zero(el, dt, n):
    x = np.zeros((2, n), dt)
    x[0, n // 2] = -0.0  # row 0: one -0 among +0s
    x[1, :] = -0.0       # row 1: only -0s
    mn = one(reduce_text((2, n), el, (1,), "min", "1.0e30"), x)
    mx = one(reduce_text((2, n), el, (1,), "max", "-1.0e30"), x)
    assert mn.tolist() == [0, 0] and mx.tolist() == [0, 0]
    assert _signs(mn) == [True, True]    # min(+0, -0) = -0
    assert _signs(mx) == [False, True]   # max(+0, -0) = +0; max of -0s is -0


def test_reduce_window_cumulative_min_max_order_zeros():
    attrs = "window_dimensions = array<i64: 3>, padding = dense<[[2, 0]]> : tensor<1x2xi64>"
    x = np.array([0.0, -0.0, 0.0], np.float32)
    mn = one(window_text((3,), "f32", (3,), "min", "1.0e30", attrs), x)
    assert mn.tolist() == [0, 0, 0] and _signs(mn) == [False, True, True]
    x = np.array([-0.0, 0.0, -0.0], np.float32)
    mx = one(window_text((3,), "f32", (3,), "max", "-1.0e30", attrs), x)
    assert mx.tolist() == [0, 0, 0] and _signs(mx) == [True, False, False]


def test_select_and_scatter_min_body_orders_zeros():
    base = np.zeros(3, np.float32)                      # +0 +0 +0
    src = np.array([-0.0, 0.0, -0.0], np.float32)
    out = reduction.scatter_combine(None, "min", base, np.array([0, 1, 1]), src)
    assert out.tolist() == [0, 0, 0] and _signs(out) == [True, True, False]
    base = -np.zeros(2, np.float32)                     # -0 -0
    out = reduction.scatter_combine(None, "max", base, np.array([0, 0]), np.array([0.0, -0.0], np.float32))
    assert _signs(out) == [False, True]
