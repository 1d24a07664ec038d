// Programs with known outcomes for the report tests: one passes, one is
// off by exactly one ULP (1.0 + 2.0 is 3.0, the expectation is the next
// f32 after 3.0), one uses an op that does not exist in any backend's
// kernels (a custom call target nobody registers), one does not parse.

func.func @add_f32_pass() {
  %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %1 = stablehlo.add %0, %0 : tensor<2xf32>
  check.expect_eq_const %1, dense<[2.0, 4.0]> : tensor<2xf32>
  func.return
}

// -----

func.func @add_f32_one_ulp_off() {
  %0 = stablehlo.constant dense<[0.5, 1.0]> : tensor<2xf32>
  %1 = stablehlo.constant dense<[0.5, 2.0]> : tensor<2xf32>
  %2 = stablehlo.add %0, %1 : tensor<2xf32>
  check.expect_eq_const %2, dense<[1.0, 0x40400001]> : tensor<2xf32>
  func.return
}

// -----

func.func @unknown_custom_call() {
  %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %1 = stablehlo.custom_call @no_such_target_anywhere(%0) : (tensor<2xf32>) -> tensor<2xf32>
  check.expect_eq_const %1, dense<[1.0, 2.0]> : tensor<2xf32>
  func.return
}

// -----

func.func @does_not_parse() {
  %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %1 = stablehlo.add %0, %0 : tensor<3xf32>
  func.return
}
