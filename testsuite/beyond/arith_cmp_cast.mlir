// arith comparisons (every predicate), select and casts.

func.func @cmpi_all_predicates() {
  %a = arith.constant dense<[-1, 1, 5]> : tensor<3xi8>
  %b = arith.constant dense<[1, 1, 3]> : tensor<3xi8>
  %eq = arith.cmpi eq, %a, %b : tensor<3xi8>
  %ne = arith.cmpi ne, %a, %b : tensor<3xi8>
  %slt = arith.cmpi slt, %a, %b : tensor<3xi8>
  %sle = arith.cmpi sle, %a, %b : tensor<3xi8>
  %sgt = arith.cmpi sgt, %a, %b : tensor<3xi8>
  %sge = arith.cmpi sge, %a, %b : tensor<3xi8>
  %ult = arith.cmpi ult, %a, %b : tensor<3xi8>
  %ule = arith.cmpi ule, %a, %b : tensor<3xi8>
  %ugt = arith.cmpi ugt, %a, %b : tensor<3xi8>
  %uge = arith.cmpi uge, %a, %b : tensor<3xi8>
  check.expect_eq_const %eq, dense<[false, true, false]> : tensor<3xi1>
  check.expect_eq_const %ne, dense<[true, false, true]> : tensor<3xi1>
  check.expect_eq_const %slt, dense<[true, false, false]> : tensor<3xi1>
  check.expect_eq_const %sle, dense<[true, true, false]> : tensor<3xi1>
  check.expect_eq_const %sgt, dense<[false, false, true]> : tensor<3xi1>
  check.expect_eq_const %sge, dense<[false, true, true]> : tensor<3xi1>
  check.expect_eq_const %ult, dense<[false, false, false]> : tensor<3xi1>
  check.expect_eq_const %ule, dense<[false, true, false]> : tensor<3xi1>
  check.expect_eq_const %ugt, dense<[true, false, true]> : tensor<3xi1>
  check.expect_eq_const %uge, dense<[true, true, true]> : tensor<3xi1>
  func.return
}

func.func @cmpf_all_predicates() {
  %a = arith.constant dense<[1.0, 0x7FC00000, 2.0]> : tensor<3xf32>
  %b = arith.constant dense<[1.0, 1.0, 1.0]> : tensor<3xf32>
  %p0 = arith.cmpf false, %a, %b : tensor<3xf32>
  %p1 = arith.cmpf oeq, %a, %b : tensor<3xf32>
  %p2 = arith.cmpf ogt, %a, %b : tensor<3xf32>
  %p3 = arith.cmpf oge, %a, %b : tensor<3xf32>
  %p4 = arith.cmpf olt, %a, %b : tensor<3xf32>
  %p5 = arith.cmpf ole, %a, %b : tensor<3xf32>
  %p6 = arith.cmpf one, %a, %b : tensor<3xf32>
  %p7 = arith.cmpf ord, %a, %b : tensor<3xf32>
  %p8 = arith.cmpf ueq, %a, %b : tensor<3xf32>
  %p9 = arith.cmpf ugt, %a, %b : tensor<3xf32>
  %p10 = arith.cmpf uge, %a, %b : tensor<3xf32>
  %p11 = arith.cmpf ult, %a, %b : tensor<3xf32>
  %p12 = arith.cmpf ule, %a, %b : tensor<3xf32>
  %p13 = arith.cmpf une, %a, %b : tensor<3xf32>
  %p14 = arith.cmpf uno, %a, %b : tensor<3xf32>
  %p15 = arith.cmpf true, %a, %b : tensor<3xf32>
  check.expect_eq_const %p0, dense<[false, false, false]> : tensor<3xi1>
  check.expect_eq_const %p1, dense<[true, false, false]> : tensor<3xi1>
  check.expect_eq_const %p2, dense<[false, false, true]> : tensor<3xi1>
  check.expect_eq_const %p3, dense<[true, false, true]> : tensor<3xi1>
  check.expect_eq_const %p4, dense<[false, false, false]> : tensor<3xi1>
  check.expect_eq_const %p5, dense<[true, false, false]> : tensor<3xi1>
  check.expect_eq_const %p6, dense<[false, false, true]> : tensor<3xi1>
  check.expect_eq_const %p7, dense<[true, false, true]> : tensor<3xi1>
  check.expect_eq_const %p8, dense<[true, true, false]> : tensor<3xi1>
  check.expect_eq_const %p9, dense<[false, true, true]> : tensor<3xi1>
  check.expect_eq_const %p10, dense<[true, true, true]> : tensor<3xi1>
  check.expect_eq_const %p11, dense<[false, true, false]> : tensor<3xi1>
  check.expect_eq_const %p12, dense<[true, true, false]> : tensor<3xi1>
  check.expect_eq_const %p13, dense<[false, true, true]> : tensor<3xi1>
  check.expect_eq_const %p14, dense<[false, true, false]> : tensor<3xi1>
  check.expect_eq_const %p15, dense<[true, true, true]> : tensor<3xi1>
  func.return
}

func.func @cmpi_scalar_index() {
  %a = arith.constant 3 : index
  %b = arith.constant -4 : index
  %lt = arith.cmpi slt, %b, %a : index
  %ult = arith.cmpi ult, %b, %a : index
  %t = tensor.from_elements %lt, %ult : tensor<2xi1>
  check.expect_eq_const %t, dense<[true, false]> : tensor<2xi1>
  func.return
}

func.func @select_scalar_and_tensor_conditions() {
  %a = arith.constant dense<[1, 2, 3]> : tensor<3xi32>
  %b = arith.constant dense<[10, 20, 30]> : tensor<3xi32>
  %c = arith.constant dense<[true, false, true]> : tensor<3xi1>
  %f = arith.constant false
  %s1 = arith.select %c, %a, %b : tensor<3xi1>, tensor<3xi32>
  %s2 = arith.select %f, %a, %b : tensor<3xi32>
  check.expect_eq_const %s1, dense<[1, 20, 3]> : tensor<3xi32>
  check.expect_eq_const %s2, dense<[10, 20, 30]> : tensor<3xi32>
  %x = arith.constant 7 : i64
  %y = arith.constant 9 : i64
  %t = arith.constant true
  %s3 = arith.select %t, %x, %y : i64
  %v = tensor.from_elements %s3 : tensor<1xi64>
  check.expect_eq_const %v, dense<[7]> : tensor<1xi64>
  func.return
}

func.func @integer_casts() {
  %m1 = arith.constant -1 : i32
  %i0 = arith.index_cast %m1 : i32 to index
  %i1 = arith.index_castui %m1 : i32 to index
  %big = arith.constant 300 : index
  %back = arith.index_cast %big : index to i8
  %t = tensor.from_elements %i0, %i1 : tensor<2xindex>
  check.expect_eq_const %t, dense<[-1, 4294967295]> : tensor<2xindex>
  %t8 = tensor.from_elements %back : tensor<1xi8>
  check.expect_eq_const %t8, dense<[44]> : tensor<1xi8>
  %v = arith.constant dense<[-128, 127, -1]> : tensor<3xi8>
  %sx = arith.extsi %v : tensor<3xi8> to tensor<3xi32>
  %zx = arith.extui %v : tensor<3xi8> to tensor<3xi32>
  check.expect_eq_const %sx, dense<[-128, 127, -1]> : tensor<3xi32>
  check.expect_eq_const %zx, dense<[128, 127, 255]> : tensor<3xi32>
  %w = arith.constant dense<[300, -1, 128]> : tensor<3xi32>
  %tr = arith.trunci %w : tensor<3xi32> to tensor<3xi8>
  check.expect_eq_const %tr, dense<[44, -1, -128]> : tensor<3xi8>
  %bools = arith.constant dense<[true, false]> : tensor<2xi1>
  %bs = arith.extsi %bools : tensor<2xi1> to tensor<2xi32>
  %bu = arith.extui %bools : tensor<2xi1> to tensor<2xi32>
  check.expect_eq_const %bs, dense<[-1, 0]> : tensor<2xi32>
  check.expect_eq_const %bu, dense<[1, 0]> : tensor<2xi32>
  func.return
}

func.func @int_float_conversions() {
  %i = arith.constant dense<[-3, 16777217, 0]> : tensor<3xi32>
  %f = arith.sitofp %i : tensor<3xi32> to tensor<3xf32>
  check.expect_eq_const %f, dense<[-3.0, 16777216.0, 0.0]> : tensor<3xf32>
  %u8 = arith.constant dense<[-1, 2]> : tensor<2xi8>
  %uf = arith.uitofp %u8 : tensor<2xi8> to tensor<2xf32>
  check.expect_eq_const %uf, dense<[255.0, 2.0]> : tensor<2xf32>
  %g = arith.constant dense<[-2.7, 2.7, -0.5]> : tensor<3xf32>
  %gi = arith.fptosi %g : tensor<3xf32> to tensor<3xi32>
  check.expect_eq_const %gi, dense<[-2, 2, 0]> : tensor<3xi32>
  %h = arith.constant dense<[3.9, 200.0]> : tensor<2xf32>
  %hu = arith.fptoui %h : tensor<2xf32> to tensor<2xi8>
  check.expect_eq_const %hu, dense<[3, -56]> : tensor<2xi8>
  func.return
}

func.func @float_format_casts() {
  %h = arith.constant dense<[0.5, -1.25, 65504.0]> : tensor<3xf16>
  %e = arith.extf %h : tensor<3xf16> to tensor<3xf32>
  check.expect_eq_const %e, dense<[0.5, -1.25, 65504.0]> : tensor<3xf32>
  %x = arith.constant dense<[0.1, 1.00390625, 1.01171875]> : tensor<3xf32>
  %b = arith.truncf %x : tensor<3xf32> to tensor<3xbf16>
  %bb = arith.bitcast %b : tensor<3xbf16> to tensor<3xi16>
  // 0.1 -> 0x3DCD; 1+2^-8 ties to even 1.0 (0x3F80); 1+3*2^-8 ties to even 1+2^-6 (0x3F82)
  check.expect_eq_const %bb, dense<[15821, 16256, 16258]> : tensor<3xi16>
  // f64 1 + 2^-8 + 2^-40 lies just above the bf16 halfway point: rounds up (0x3F81)
  %d = arith.constant dense<0x3FF0100000001000> : tensor<1xf64>
  %db = arith.truncf %d : tensor<1xf64> to tensor<1xbf16>
  %dbb = arith.bitcast %db : tensor<1xbf16> to tensor<1xi16>
  check.expect_eq_const %dbb, dense<[16257]> : tensor<1xi16>
  func.return
}

func.func @bitcast_roundtrip() {
  %one = arith.constant 1.0 : f32
  %bits = arith.bitcast %one : f32 to i32
  %i = arith.constant -1082130432 : i32
  %f = arith.bitcast %i : i32 to f32
  %t = tensor.from_elements %bits : tensor<1xi32>
  %u = tensor.from_elements %f : tensor<1xf32>
  check.expect_eq_const %t, dense<[1065353216]> : tensor<1xi32>
  check.expect_eq_const %u, dense<[-1.0]> : tensor<1xf32>
  func.return
}
