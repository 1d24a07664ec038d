"""The fast path of the element-wise CHLO functions on f32 (screened) and f16 (the table of the
kernel's function), ``kernels.float_math.rounded_once_fast``: the generated blocks give the
kernels' values bit for bit, on special values, subnormals, inputs whose f64 value lies near a
rounding midpoint, and random values, over operands large enough to go block by block."""

from __future__ import annotations

import numpy as np
import pytest

from stablehlo_conform.engine import Engine
from stablehlo_conform.kernels.float_math import SCREEN_BLOCK
from stablehlo_conform.numeric import near_midpoint
from stablehlo_conform.kernels import chlo_elementwise as C

from test_fused import _check, _module

# f32 inputs whose erf / erfc in f64 lies within 4 f64 ULPs of a rounding midpoint of f32
# (found by a search over random f32 inputs with near_midpoint)
NEAR = {"erf": [3116369277], "erfc": [1074656538]}
OPS = ["erf", "erfc", "erf_inv", "tan", "atan", "asinh", "sinh", "cosh", "acos", "acosh", "asin", "atanh",
       "bessel_i1e"]


def _inputs(dt, rng) -> np.ndarray:
    cols = 2 * SCREEN_BLOCK + 7  # three blocks per row, the last one short
    x = (rng.standard_normal((3, cols)) * 3).astype(dt)
    x[0, : cols // 2] = rng.uniform(-1, 1, cols // 2).astype(dt)  # erf_inv, asin, atanh's domain
    info = np.finfo(dt)
    x[1, 5:17] = [0.0, -0.0, info.smallest_subnormal, -info.smallest_subnormal, info.tiny, -info.tiny,
                  1.0, -1.0, info.max, -info.max, 0.5, -0.5]
    x[2, -3:] = [np.inf, -np.inf, np.nan]
    if dt == np.float32:
        near = np.array(NEAR["erf"] + NEAR["erfc"], np.uint32).view(np.float32)
        x[0, 100:102] = near
        x[2, SCREEN_BLOCK + 3:SCREEN_BLOCK + 5] = near
    return x


def test_the_near_midpoint_inputs_are_near_midpoints():
    for name, f in (("erf", C.sc.erf), ("erfc", C._erfc)):
        x = np.array(NEAR[name], np.uint32).view(np.float32)
        assert near_midpoint(f(x.astype(np.float64)), np.float32).all()


@pytest.mark.parametrize("dt", [np.float32, np.float16], ids=["f32", "f16"])
@pytest.mark.parametrize("op", OPS)
def test_chlo_fast_path_matches_the_kernel(op, dt):
    x = _inputs(dt, np.random.default_rng(21))
    t = "f32" if dt == np.float32 else "f16"
    ty = f"tensor<{x.shape[0]}x{x.shape[1]}x{t}>"
    text = f"""func.func @main(%a: {ty}) -> {ty} {{
  %r = "chlo.{op}"(%a) : ({ty}) -> {ty}
  func.return %r : {ty}
}}"""
    assert _check(text, (x,)) == 1


def test_small_and_rank_0_chlo_operands_match_the_kernel():
    x = np.array([0.0, -0.0, 1e-40, 0.3, -2.0, 30.0, np.inf, np.nan], np.float32)
    for op in ("erf", "erfc"):
        text = f"""func.func @main(%a: tensor<8xf32>, %s: tensor<f32>) -> (tensor<8xf32>, tensor<f32>) {{
  %r = "chlo.{op}"(%a) : (tensor<8xf32>) -> tensor<8xf32>
  %q = "chlo.{op}"(%s) : (tensor<f32>) -> tensor<f32>
  func.return %r, %q : tensor<8xf32>, tensor<f32>
}}"""
        for s in x:
            assert _check(text, (x, s.reshape(()))) == 2


SCAN = """func.func @main(%xs: tensor<6x4xf32>, %h0: tensor<4xf32>) -> (tensor<6x4xf32>, tensor<4xf32>, tensor<1x4xf32>) {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %n = stablehlo.constant dense<6> : tensor<i32>
  %init = stablehlo.constant dense<0.0> : tensor<6x4xf32>
  %first = stablehlo.dynamic_slice %init, %zero, %zero, sizes = [1, 4] : (tensor<6x4xf32>, tensor<i32>, tensor<i32>) -> tensor<1x4xf32>
  %r:4 = stablehlo.while(%i = %zero, %h = %h0, %ys = %init, %seen = %first) : tensor<i32>, tensor<4xf32>, tensor<6x4xf32>, tensor<1x4xf32>
    cond {
      %c = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %row = stablehlo.dynamic_slice %xs, %i, %zero, sizes = [1, 4] : (tensor<6x4xf32>, tensor<i32>, tensor<i32>) -> tensor<1x4xf32>
      %x = stablehlo.reshape %row : (tensor<1x4xf32>) -> tensor<4xf32>
      %s = stablehlo.add %h, %x : tensor<4xf32>
      %h2 = "chlo.erf"(%s) : (tensor<4xf32>) -> tensor<4xf32>
      %old = stablehlo.dynamic_slice %ys, %i, %zero, sizes = [1, 4] : (tensor<6x4xf32>, tensor<i32>, tensor<i32>) -> tensor<1x4xf32>
      %u = stablehlo.reshape %h2 : (tensor<4xf32>) -> tensor<1x4xf32>
      %ys2 = stablehlo.dynamic_update_slice %ys, %u, %i, %zero : (tensor<6x4xf32>, tensor<1x4xf32>, tensor<i32>, tensor<i32>) -> tensor<6x4xf32>
      %seen2 = stablehlo.add %seen, %old : tensor<1x4xf32>
      %i2 = stablehlo.add %i, %one : tensor<i32>
      stablehlo.return %i2, %h2, %ys2, %seen2 : tensor<i32>, tensor<4xf32>, tensor<6x4xf32>, tensor<1x4xf32>
    }
  func.return %r#2, %r#1, %r#3 : tensor<6x4xf32>, tensor<4xf32>, tensor<1x4xf32>
}"""


def test_scan_with_a_stacked_output_matches_the_stepwise_path():
    """A scan writing each step's value into a stacked output (``dynamic_update_slice`` of a
    loop-carried value), with a slice of the stacked value read before its update; the
    constant it starts from is not written into."""
    rng = np.random.default_rng(5)
    args = (rng.standard_normal((6, 4)).astype(np.float32), rng.standard_normal(4).astype(np.float32))
    assert _check(SCAN, args) is not None
    for _ in range(2):  # the folded start value is the same after runs of the generated loop
        ys, _h, seen = Engine(_module(SCAN)).call("main", args)
        assert not seen.any() and ys.all()
