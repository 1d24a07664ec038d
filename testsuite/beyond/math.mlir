// math dialect: rounding, transcendental and integer bit functions.

func.func @rounding_family() {
  %x = arith.constant dense<[-2.5, -0.5, 0.5, 1.5, 2.5, 2.4]> : tensor<6xf32>
  %c = math.ceil %x : tensor<6xf32>
  %f = math.floor %x : tensor<6xf32>
  %r = math.round %x : tensor<6xf32>
  %e = math.roundeven %x : tensor<6xf32>
  %t = math.trunc %x : tensor<6xf32>
  check.expect_eq_const %c, dense<[-2.0, -0.0, 1.0, 2.0, 3.0, 3.0]> : tensor<6xf32>
  check.expect_eq_const %f, dense<[-3.0, -1.0, 0.0, 1.0, 2.0, 2.0]> : tensor<6xf32>
  check.expect_eq_const %r, dense<[-3.0, -1.0, 1.0, 2.0, 3.0, 2.0]> : tensor<6xf32>
  check.expect_eq_const %e, dense<[-2.0, -0.0, 0.0, 2.0, 2.0, 2.0]> : tensor<6xf32>
  check.expect_eq_const %t, dense<[-2.0, -0.0, 0.0, 1.0, 2.0, 2.0]> : tensor<6xf32>
  func.return
}

func.func @round_keeps_large_and_near_half_values() {
  // 0.49999997 (largest f32 below 0.5) must not round up
  %x = arith.constant dense<[0.49999997, 8388609.0, -0.49999997]> : tensor<3xf32>
  %r = math.round %x : tensor<3xf32>
  check.expect_eq_const %r, dense<[0.0, 8388609.0, -0.0]> : tensor<3xf32>
  func.return
}

func.func @exact_elementary_values() {
  %x = arith.constant dense<[4.0, 2.25, 0.25]> : tensor<3xf64>
  %s = math.sqrt %x : tensor<3xf64>
  %rs = math.rsqrt %x : tensor<3xf64>
  %a = math.absf %x : tensor<3xf64>
  check.expect_eq_const %s, dense<[2.0, 1.5, 0.5]> : tensor<3xf64>
  check.expect_eq_const %rs, dense<[0.5, 0.66666666666666663, 2.0]> : tensor<3xf64>
  check.expect_eq_const %a, dense<[4.0, 2.25, 0.25]> : tensor<3xf64>
  %y = arith.constant dense<[3.0, 8.0, 27.0]> : tensor<3xf32>
  %e2 = math.exp2 %y : tensor<3xf32>
  %l2 = math.log2 %y : tensor<3xf32>
  %cb = math.cbrt %y : tensor<3xf32>
  check.expect_eq_const %e2, dense<[8.0, 256.0, 134217728.0]> : tensor<3xf32>
  check.expect_almost_eq_const %l2, dense<[1.5849625, 3.0, 4.7548875]> : tensor<3xf32>
  check.expect_eq_const %cb, dense<[1.4422495, 2.0, 3.0]> : tensor<3xf32>
  func.return
}

func.func @transcendental_f32() {
  %x = arith.constant dense<[0.0, 0.5, 1.0]> : tensor<3xf32>
  %exp = math.exp %x : tensor<3xf32>
  %expm1 = math.expm1 %x : tensor<3xf32>
  %log1p = math.log1p %x : tensor<3xf32>
  %sin = math.sin %x : tensor<3xf32>
  %cos = math.cos %x : tensor<3xf32>
  %tan = math.tan %x : tensor<3xf32>
  %tanh = math.tanh %x : tensor<3xf32>
  %atan = math.atan %x : tensor<3xf32>
  %erf = math.erf %x : tensor<3xf32>
  check.expect_almost_eq_const %exp, dense<[1.0, 1.6487213, 2.7182817]> : tensor<3xf32>
  check.expect_almost_eq_const %expm1, dense<[0.0, 0.6487213, 1.7182817]> : tensor<3xf32>
  check.expect_almost_eq_const %log1p, dense<[0.0, 0.4054651, 0.6931472]> : tensor<3xf32>
  check.expect_almost_eq_const %sin, dense<[0.0, 0.47942555, 0.84147096]> : tensor<3xf32>
  check.expect_almost_eq_const %cos, dense<[1.0, 0.87758255, 0.5403023]> : tensor<3xf32>
  check.expect_almost_eq_const %tan, dense<[0.0, 0.54630249, 1.5574077]> : tensor<3xf32>
  check.expect_almost_eq_const %tanh, dense<[0.0, 0.46211716, 0.7615942]> : tensor<3xf32>
  check.expect_almost_eq_const %atan, dense<[0.0, 0.4636476, 0.7853982]> : tensor<3xf32>
  check.expect_almost_eq_const %erf, dense<[0.0, 0.5204999, 0.8427008]> : tensor<3xf32>
  func.return
}

func.func @logs_f64() {
  %x = arith.constant dense<[1.0, 100.0, 1000.0]> : tensor<3xf64>
  %ln = math.log %x : tensor<3xf64>
  %l10 = math.log10 %x : tensor<3xf64>
  check.expect_almost_eq_const %ln, dense<[0.0, 4.605170185988092, 6.907755278982137]> : tensor<3xf64>
  check.expect_eq_const %l10, dense<[0.0, 2.0, 3.0]> : tensor<3xf64>
  func.return
}

func.func @binary_float_functions() {
  %y = arith.constant dense<[1.0, -1.0, 2.0]> : tensor<3xf32>
  %x = arith.constant dense<[1.0, -1.0, 10.0]> : tensor<3xf32>
  %at = math.atan2 %y, %x : tensor<3xf32>
  check.expect_almost_eq_const %at, dense<[0.7853982, -2.3561945, 0.19739556]> : tensor<3xf32>
  %p = math.powf %y, %x : tensor<3xf32>
  check.expect_eq_const %p, dense<[1.0, -1.0, 1024.0]> : tensor<3xf32>
  %neg = arith.constant dense<[-0.0, 5.0, -2.0]> : tensor<3xf32>
  %cs = math.copysign %x, %neg : tensor<3xf32>
  check.expect_eq_const %cs, dense<[-1.0, 1.0, -10.0]> : tensor<3xf32>
  %fma = math.fma %y, %x, %neg : tensor<3xf32>
  check.expect_eq_const %fma, dense<[1.0, 6.0, 18.0]> : tensor<3xf32>
  func.return
}

func.func @fma_is_fused_f64() {
  // (1 + 2^-30)(1 - 2^-30) - 1 = -2^-60 exactly; an unfused product rounds to 1 and gives 0
  %a = arith.constant 1.0000000009313226 : f64
  %b = arith.constant 0.99999999906867743 : f64
  %c = arith.constant -1.0 : f64
  %r = math.fma %a, %b, %c : f64
  %t = tensor.from_elements %r : tensor<1xf64>
  check.expect_eq_const %t, dense<[-8.6736173798840355e-19]> : tensor<1xf64>
  func.return
}

func.func @integer_powers() {
  %b = arith.constant dense<[3, 3, 2, -1, 1, 5]> : tensor<6xi8>
  %e = arith.constant dense<[4, 5, 0, 3, -4, -1]> : tensor<6xi8>
  %p = math.ipowi %b, %e : tensor<6xi8>
  // 3^5 = 243 wraps to -13; a negative power of |b| > 1 is 0
  check.expect_eq_const %p, dense<[81, -13, 1, -1, 1, 0]> : tensor<6xi8>
  %f = arith.constant dense<[2.0, 2.0, -3.0]> : tensor<3xf32>
  %n = arith.constant dense<[-2, 10, 3]> : tensor<3xi32>
  %fp = math.fpowi %f, %n : tensor<3xf32>, tensor<3xi32>
  check.expect_eq_const %fp, dense<[0.25, 1024.0, -27.0]> : tensor<3xf32>
  func.return
}

func.func @integer_bit_functions() {
  %x = arith.constant dense<[1, 8, -1, 0, -128]> : tensor<5xi32>
  %lz = math.ctlz %x : tensor<5xi32>
  %tz = math.cttz %x : tensor<5xi32>
  %pc = math.ctpop %x : tensor<5xi32>
  %ab = math.absi %x : tensor<5xi32>
  check.expect_eq_const %lz, dense<[31, 28, 0, 32, 0]> : tensor<5xi32>
  check.expect_eq_const %tz, dense<[0, 3, 0, 32, 7]> : tensor<5xi32>
  check.expect_eq_const %pc, dense<[1, 1, 32, 0, 25]> : tensor<5xi32>
  check.expect_eq_const %ab, dense<[1, 8, 1, 0, 128]> : tensor<5xi32>
  %m = arith.constant dense<[-128, -7]> : tensor<2xi8>
  %am = math.absi %m : tensor<2xi8>
  check.expect_eq_const %am, dense<[-128, 7]> : tensor<2xi8>
  func.return
}

func.func @float_classification() {
  %x = arith.constant dense<[1.0, 0x7FC00000, 0xFF800000, 1.0e-40, 0.0]> : tensor<5xf32>
  %nan = math.isnan %x : tensor<5xf32>
  %inf = math.isinf %x : tensor<5xf32>
  %fin = math.isfinite %x : tensor<5xf32>
  %nrm = math.isnormal %x : tensor<5xf32>
  check.expect_eq_const %nan, dense<[false, true, false, false, false]> : tensor<5xi1>
  check.expect_eq_const %inf, dense<[false, false, true, false, false]> : tensor<5xi1>
  check.expect_eq_const %fin, dense<[true, false, false, true, true]> : tensor<5xi1>
  check.expect_eq_const %nrm, dense<[true, false, false, false, false]> : tensor<5xi1>
  func.return
}

func.func @scalar_math_and_sincos() {
  %x = arith.constant 0.0 : f32
  %s, %c = math.sincos %x : f32
  %lo = arith.constant -1.0 : f32
  %hi = arith.constant 0.5 : f32
  %big = arith.constant 3.0 : f32
  %cl = math.clampf %big to [%lo, %hi] : f32
  %t = tensor.from_elements %s, %c, %cl : tensor<3xf32>
  check.expect_eq_const %t, dense<[0.0, 1.0, 0.5]> : tensor<3xf32>
  func.return
}

func.func @bf16_functions() {
  %x = arith.constant dense<[2.0, 0.25]> : tensor<2xbf16>
  %s = math.sqrt %x : tensor<2xbf16>
  // sqrt(2) = 1.41421... -> bf16 1.4140625 (0x3FB5)
  check.expect_eq_const %s, dense<[1.4140625, 0.5]> : tensor<2xbf16>
  func.return
}
