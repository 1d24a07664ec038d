// Small self-checking suite for the example backend plugin (ci/example_plugin):
// the two i16 additions are the failures that backend plants (it adds 1);
// every other test passes on a conforming backend.

func.func @add_i16_wraps() {
  %0 = stablehlo.constant dense<[1, 32767, -5]> : tensor<3xi16>
  %1 = stablehlo.constant dense<[2, 1, -7]> : tensor<3xi16>
  %2 = stablehlo.add %0, %1 : tensor<3xi16>
  check.expect_eq_const %2, dense<[3, -32768, -12]> : tensor<3xi16>
  func.return
}

// -----

func.func @add_i16_cancel() {
  %0 = stablehlo.constant dense<100> : tensor<2x2xi16>
  %1 = stablehlo.constant dense<-100> : tensor<2x2xi16>
  %2 = stablehlo.add %0, %1 : tensor<2x2xi16>
  check.expect_eq_const %2, dense<0> : tensor<2x2xi16>
  func.return
}

// -----

func.func @add_i32_wraps() {
  %0 = stablehlo.constant dense<[2147483647, -3]> : tensor<2xi32>
  %1 = stablehlo.constant dense<[1, 3]> : tensor<2xi32>
  %2 = stablehlo.add %0, %1 : tensor<2xi32>
  check.expect_eq_const %2, dense<[-2147483648, 0]> : tensor<2xi32>
  func.return
}

// -----

func.func @add_ui16_wraps() {
  %0 = stablehlo.constant dense<[65535, 1]> : tensor<2xui16>
  %1 = stablehlo.constant dense<[1, 2]> : tensor<2xui16>
  %2 = stablehlo.add %0, %1 : tensor<2xui16>
  check.expect_eq_const %2, dense<[0, 3]> : tensor<2xui16>
  func.return
}

// -----

func.func @add_f32_exact() {
  %0 = stablehlo.constant dense<[0.5, -1.5]> : tensor<2xf32>
  %1 = stablehlo.constant dense<[0.25, 1.5]> : tensor<2xf32>
  %2 = stablehlo.add %0, %1 : tensor<2xf32>
  check.expect_eq_const %2, dense<[0.75, 0.0]> : tensor<2xf32>
  func.return
}

// -----

func.func @maximum_i16() {
  %0 = stablehlo.constant dense<[1, -2]> : tensor<2xi16>
  %1 = stablehlo.constant dense<[0, 5]> : tensor<2xi16>
  %2 = stablehlo.maximum %0, %1 : tensor<2xi16>
  check.expect_eq_const %2, dense<[1, 5]> : tensor<2xi16>
  func.return
}

// -----

func.func @subtract_i16() {
  %0 = stablehlo.constant dense<[5, 0]> : tensor<2xi16>
  %1 = stablehlo.constant dense<[7, 1]> : tensor<2xi16>
  %2 = stablehlo.subtract %0, %1 : tensor<2xi16>
  check.expect_eq_const %2, dense<[-2, -1]> : tensor<2xi16>
  func.return
}
