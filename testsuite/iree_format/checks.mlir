// IREE's check ops with IREE's semantics, next to StableHLO's check syntax.
// One module of zero-argument test functions, as IREE writes its e2e tests.

func.func @expect_eq_const() {
  %x = util.unfoldable_constant dense<[1, -2, 3]> : tensor<3xi32>
  %y = stablehlo.negate %x : tensor<3xi32>
  check.expect_eq_const(%y, dense<[-1, 2, -3]> : tensor<3xi32>) : tensor<3xi32>
  return
}

func.func @expect_eq_bitwise_nan() {
  // bitwise: a NaN equals a NaN of the same bit pattern
  %x = util.unfoldable_constant dense<[0x7FC00000, -0.0, 0x7F800000]> : tensor<3xf32>
  %y = stablehlo.abs %x : tensor<3xf32>
  check.expect_eq(%y, %y) : tensor<3xf32>
  check.expect_eq_const(%y, dense<[0x7FC00000, 0.0, 0x7F800000]> : tensor<3xf32>) : tensor<3xf32>
  return
}

func.func @expect_almost_eq_const_default_atol() {
  %x = util.unfoldable_constant dense<[1.0, 2.0, 0.5]> : tensor<3xf32>
  %y = stablehlo.sqrt %x : tensor<3xf32>
  check.expect_almost_eq_const(%y, dense<[1.0, 1.41421, 0.70711]> : tensor<3xf32>) : tensor<3xf32>
  return
}

func.func @expect_almost_eq_const_atol_rtol() {
  %x = util.unfoldable_constant dense<[1000.0, 2.0e6, -3.0]> : tensor<3xf32>
  %y = stablehlo.multiply %x, %x : tensor<3xf32>
  // 1e6 and 4e12 are matched within rtol 1e-3; the small 9.0 within atol
  check.expect_almost_eq_const(%y, dense<[1.0005e6, 4.001e12, 9.05]> : tensor<3xf32>,
                               atol 1.0e-1, rtol 1.0e-3) : tensor<3xf32>
  return
}

func.func @expect_almost_eq_opposite_signs() {
  // IREE: |a - e| <= atol holds, signs do not matter (StableHLO's check rejects this)
  %a = util.unfoldable_constant dense<[-2.0e-5, 3.0]> : tensor<2xf32>
  %e = util.unfoldable_constant dense<[2.0e-5, 3.0]> : tensor<2xf32>
  check.expect_almost_eq(%a, %e) : tensor<2xf32>
  return
}

func.func @expect_almost_eq_nan_inf() {
  %a = util.unfoldable_constant dense<[0x7FC00000, 0x7F800000, 0xFF800000]> : tensor<3xf32>
  %b = stablehlo.add %a, %a : tensor<3xf32>
  check.expect_almost_eq(%b, %a, atol 0.0, rtol 0.0) : tensor<3xf32>
  return
}

func.func @expect_almost_eq_f16() {
  %x = util.unfoldable_constant dense<[0.1, 0.2]> : tensor<2xf16>
  %y = stablehlo.add %x, %x : tensor<2xf16>
  check.expect_almost_eq_const(%y, dense<[0.2, 0.4]> : tensor<2xf16>, atol 1.0e-3, rtol 0.0) : tensor<2xf16>
  return
}

func.func @expect_true_false() {
  %c = util.unfoldable_constant 7 : i32
  %z = arith.subi %c, %c : i32
  check.expect_true(%c) : i32
  check.expect_false(%z) : i32
  return
}

func.func @expect_all_true() {
  %x = util.unfoldable_constant dense<[1, 2, 3]> : tensor<3xi32>
  %y = util.unfoldable_constant dense<[1, 0, 3]> : tensor<3xi32>
  %ne = stablehlo.compare NE, %x, %y : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
  %ge = stablehlo.compare GE, %x, %y : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
  check.expect_all_true(%ge) : tensor<3xi1>
  check.expect_all_true(%x) : tensor<3xi32>
  %sel = stablehlo.select %ne, %x, %y : tensor<3xi1>, tensor<3xi32>
  check.expect_eq(%sel, %x) : tensor<3xi32>
  return
}

func.func @both_check_syntaxes() {
  %x = util.unfoldable_constant dense<[1.5, -2.5]> : tensor<2xf32>
  %y = stablehlo.floor %x : tensor<2xf32>
  // StableHLO's check syntax and IREE's in one function
  check.expect_eq_const %y, dense<[1.0, -3.0]> : tensor<2xf32>
  check.expect_almost_eq_const %y, dense<[1.0, -3.0]> : tensor<2xf32>
  check.expect_eq_const(%y, dense<[1.0, -3.0]> : tensor<2xf32>) : tensor<2xf32>
  check.expect_almost_eq_const(%y, dense<[1.0, -3.0]> : tensor<2xf32>) : tensor<2xf32>
  return
}
