// util.optimization_barrier on tensors (stablehlo.optimization_barrier) and on
// scalars (an identity the numpy engine evaluates; kept apart so that the
// other files' programs also run on backends that take only tensors).

func.func @tensor_barrier() {
  %x = util.unfoldable_constant dense<[1.0, 2.0]> : tensor<2xf32>
  %y = util.optimization_barrier %x : tensor<2xf32>
  %z = stablehlo.add %y, %y : tensor<2xf32>
  check.expect_eq_const(%z, dense<[2.0, 4.0]> : tensor<2xf32>) : tensor<2xf32>
  return
}

func.func @optimization_barrier() {
  %x = util.unfoldable_constant dense<[1.0, 2.0]> : tensor<2xf32>
  %c = util.unfoldable_constant 2 : i32
  %y, %k = util.optimization_barrier %x, %c : tensor<2xf32>, i32
  %z = util.optimization_barrier %y : tensor<2xf32>
  check.expect_eq(%z, %x) : tensor<2xf32>
  check.expect_true(%k) : i32
  return
}
