// IREE-style checks that must fail (tests/test_iree_format.py asserts each
// fails and shows both values).

func.func @eq_const_fails() {
  %x = util.unfoldable_constant dense<[1, 2, 3]> : tensor<3xi32>
  check.expect_eq_const(%x, dense<[1, 5, 3]> : tensor<3xi32>) : tensor<3xi32>
  return
}

func.func @eq_signed_zero_fails() {
  %x = util.unfoldable_constant dense<[-0.0, 1.0]> : tensor<2xf32>
  check.expect_eq_const(%x, dense<[0.0, 1.0]> : tensor<2xf32>) : tensor<2xf32>
  return
}

func.func @eq_fails() {
  %a = util.unfoldable_constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = util.unfoldable_constant dense<[1.0, 2.5]> : tensor<2xf32>
  check.expect_eq(%a, %b) : tensor<2xf32>
  return
}

func.func @almost_eq_const_fails() {
  %x = util.unfoldable_constant dense<[1.0, 2.0]> : tensor<2xf32>
  check.expect_almost_eq_const(%x, dense<[1.0, 2.001]> : tensor<2xf32>) : tensor<2xf32>
  return
}

func.func @almost_eq_rtol_fails() {
  %x = util.unfoldable_constant dense<[1000.0]> : tensor<1xf32>
  check.expect_almost_eq_const(%x, dense<[1002.0]> : tensor<1xf32>, atol 0.0, rtol 1.0e-3) : tensor<1xf32>
  return
}

func.func @almost_eq_nan_fails() {
  %a = util.unfoldable_constant dense<[0x7FC00000]> : tensor<1xf32>
  %b = util.unfoldable_constant dense<[1.0]> : tensor<1xf32>
  check.expect_almost_eq(%a, %b) : tensor<1xf32>
  return
}

func.func @almost_eq_inf_fails() {
  %a = util.unfoldable_constant dense<[3.0e38]> : tensor<1xf32>
  %b = util.unfoldable_constant dense<[0x7F800000]> : tensor<1xf32>
  check.expect_almost_eq(%a, %b, atol 1.0e38, rtol 1.0) : tensor<1xf32>
  return
}

func.func @true_fails() {
  %z = util.unfoldable_constant 0 : i32
  check.expect_true(%z) : i32
  return
}

func.func @false_fails() {
  %z = util.unfoldable_constant 4 : i32
  check.expect_false(%z) : i32
  return
}

func.func @all_true_fails() {
  %x = util.unfoldable_constant dense<[1, 1, 0, 1]> : tensor<4xi32>
  check.expect_all_true(%x) : tensor<4xi32>
  return
}

func.func @dynamic_constant_fails() {
  %d = flow.tensor.dynamic_constant dense<[1.0, 2.0]> : tensor<2xf32> -> tensor<?xf32>
  check.expect_almost_eq_const(%d, dense<[1.0, 3.0]> : tensor<2xf32>) : tensor<?xf32>

  return
}

func.func @does_not_parse() {
  %x = util.unfoldable_constant dense<1> : tensor<i32>
  %y = stablehlo.no_such_op %x : tensor<i32>
  return
}

func.func @unknown_dialect() {
  %x = util.unfoldable_constant dense<1> : tensor<i32>
  %y = annot.hint %x : tensor<i32>
  %z = mydialect.frob %y : tensor<i32>
  return
}
