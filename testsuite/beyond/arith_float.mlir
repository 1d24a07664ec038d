// arith float ops: IEEE arithmetic, NaN and signed-zero rules of min/max.

func.func @basic_f32() {
  %a = arith.constant dense<[1.5, -2.0, 3.0, 1.0]> : tensor<4xf32>
  %b = arith.constant dense<[0.25, 0.5, -4.0, 0.0]> : tensor<4xf32>
  %add = arith.addf %a, %b : tensor<4xf32>
  %sub = arith.subf %a, %b : tensor<4xf32>
  %mul = arith.mulf %a, %b : tensor<4xf32>
  %div = arith.divf %a, %b : tensor<4xf32>
  check.expect_eq_const %add, dense<[1.75, -1.5, -1.0, 1.0]> : tensor<4xf32>
  check.expect_eq_const %sub, dense<[1.25, -2.5, 7.0, 1.0]> : tensor<4xf32>
  check.expect_eq_const %mul, dense<[0.375, -1.0, -12.0, 0.0]> : tensor<4xf32>
  check.expect_eq_const %div, dense<[6.0, -4.0, -0.75, 0x7F800000]> : tensor<4xf32>
  func.return
}

func.func @remf_negf_f64() {
  %a = arith.constant dense<[7.5, -7.5, 1.0]> : tensor<3xf64>
  %b = arith.constant dense<[2.0, 2.0, 0.5]> : tensor<3xf64>
  %rem = arith.remf %a, %b : tensor<3xf64>
  %neg = arith.negf %a : tensor<3xf64>
  check.expect_eq_const %rem, dense<[1.5, -1.5, 0.0]> : tensor<3xf64>
  check.expect_eq_const %neg, dense<[-7.5, 7.5, -1.0]> : tensor<3xf64>
  func.return
}

func.func @negf_flips_zero_sign() {
  %z = arith.constant 0.0 : f32
  %n = arith.negf %z : f32
  %bits = arith.bitcast %n : f32 to i32
  %t = tensor.from_elements %bits : tensor<1xi32>
  check.expect_eq_const %t, dense<[-2147483648]> : tensor<1xi32>
  func.return
}

func.func @min_max_nan_rules() {
  %a = arith.constant dense<[1.0, 0x7FC00000, -0.0, 0.0]> : tensor<4xf32>
  %b = arith.constant dense<[2.0, 1.0, 0.0, -0.0]> : tensor<4xf32>
  %min = arith.minimumf %a, %b : tensor<4xf32>
  %max = arith.maximumf %a, %b : tensor<4xf32>
  %minn = arith.minnumf %a, %b : tensor<4xf32>
  %maxn = arith.maxnumf %a, %b : tensor<4xf32>
  %minb = arith.bitcast %min : tensor<4xf32> to tensor<4xi32>
  %maxb = arith.bitcast %max : tensor<4xf32> to tensor<4xi32>
  %minnb = arith.bitcast %minn : tensor<4xf32> to tensor<4xi32>
  %maxnb = arith.bitcast %maxn : tensor<4xf32> to tensor<4xi32>
  // 1.0 = 0x3F800000 = 1065353216, 2.0 = 1073741824, -0.0 = -2147483648
  check.expect_eq_const %minb, dense<[1065353216, 2143289344, -2147483648, -2147483648]> : tensor<4xi32>
  check.expect_eq_const %maxb, dense<[1073741824, 2143289344, 0, 0]> : tensor<4xi32>
  check.expect_eq_const %minnb, dense<[1065353216, 1065353216, -2147483648, -2147483648]> : tensor<4xi32>
  check.expect_eq_const %maxnb, dense<[1073741824, 1065353216, 0, 0]> : tensor<4xi32>
  func.return
}

func.func @bf16_rounding() {
  %a = arith.constant dense<[1.0, 1.0, 1.0]> : tensor<3xbf16>
  // 2^-7 is representable next to 1.0; 2^-9 is below half an ulp; 3*2^-8 rounds up to 2^-6
  %b = arith.constant dense<[0.0078125, 0.001953125, 0.01171875]> : tensor<3xbf16>
  %s = arith.addf %a, %b : tensor<3xbf16>
  check.expect_eq_const %s, dense<[1.0078125, 1.0, 1.015625]> : tensor<3xbf16>
  func.return
}

func.func @f16_division() {
  %a = arith.constant 1.0 : f16
  %b = arith.constant 3.0 : f16
  %q = arith.divf %a, %b : f16
  %bits = arith.bitcast %q : f16 to i16
  %t = tensor.from_elements %bits : tensor<1xi16>
  // nearest f16 to 1/3 is 0x3555
  check.expect_eq_const %t, dense<[13653]> : tensor<1xi16>
  func.return
}

func.func @mx_scaling_casts() {
  %x = arith.constant dense<[1.5, -3.0, 0.5, 6.0]> : tensor<4xf4E2M1FN>
  %s = arith.constant dense<[4.0, 0.5, 1.0, 1024.0]> : tensor<4xf8E8M0FNU>
  %e = arith.scaling_extf %x, %s : tensor<4xf4E2M1FN>, tensor<4xf8E8M0FNU> to tensor<4xf32>
  check.expect_eq_const %e, dense<[6.0, -1.5, 0.5, 6144.0]> : tensor<4xf32>
  %y = arith.constant dense<[12.0, -1.0, 5.0, 100.0]> : tensor<4xf32>
  %t = arith.scaling_truncf %y, %s : tensor<4xf32>, tensor<4xf8E8M0FNU> to tensor<4xf4E2M1FN>
  %te = arith.extf %t : tensor<4xf4E2M1FN> to tensor<4xf32>
  // 12/4 = 3; -1/0.5 = -2; 5/1 = 5 -> 4 (ties to even); 100/1024 -> 0
  check.expect_eq_const %te, dense<[3.0, -2.0, 4.0, 0.0]> : tensor<4xf32>
  func.return
}
