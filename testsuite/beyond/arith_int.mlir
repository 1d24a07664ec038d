// arith integer ops: signless values, wraparound, signed/unsigned readings.

func.func @addi_subi_muli_wrap_i8() {
  %a = arith.constant dense<[100, -128, 7, -1]> : tensor<4xi8>
  %b = arith.constant dense<[100, -1, -3, 1]> : tensor<4xi8>
  %add = arith.addi %a, %b : tensor<4xi8>
  %sub = arith.subi %a, %b : tensor<4xi8>
  %mul = arith.muli %a, %b : tensor<4xi8>
  check.expect_eq_const %add, dense<[-56, 127, 4, 0]> : tensor<4xi8>
  check.expect_eq_const %sub, dense<[0, -127, 10, -2]> : tensor<4xi8>
  check.expect_eq_const %mul, dense<[16, -128, -21, -1]> : tensor<4xi8>
  func.return
}

func.func @signed_division_family() {
  %a = arith.constant dense<[7, -7, 7, -7, 6, -2147483648]> : tensor<6xi32>
  %b = arith.constant dense<[2, 2, -2, -2, 3, -1]> : tensor<6xi32>
  %div = arith.divsi %a, %b : tensor<6xi32>
  %rem = arith.remsi %a, %b : tensor<6xi32>
  %fl = arith.floordivsi %a, %b : tensor<6xi32>
  %ce = arith.ceildivsi %a, %b : tensor<6xi32>
  check.expect_eq_const %div, dense<[3, -3, -3, 3, 2, -2147483648]> : tensor<6xi32>
  check.expect_eq_const %rem, dense<[1, -1, 1, -1, 0, 0]> : tensor<6xi32>
  check.expect_eq_const %fl, dense<[3, -4, -4, 3, 2, -2147483648]> : tensor<6xi32>
  check.expect_eq_const %ce, dense<[4, -3, -3, 4, 2, -2147483648]> : tensor<6xi32>
  func.return
}

func.func @unsigned_division_family() {
  %a = arith.constant dense<[-1, 10, -128]> : tensor<3xi8>
  %b = arith.constant dense<[16, 3, -1]> : tensor<3xi8>
  %div = arith.divui %a, %b : tensor<3xi8>
  %rem = arith.remui %a, %b : tensor<3xi8>
  %ce = arith.ceildivui %a, %b : tensor<3xi8>
  // 255/16 = 15 r 15; 10/3 = 3 r 1; 128/255 = 0 r 128
  check.expect_eq_const %div, dense<[15, 3, 0]> : tensor<3xi8>
  check.expect_eq_const %rem, dense<[15, 1, -128]> : tensor<3xi8>
  check.expect_eq_const %ce, dense<[16, 4, 1]> : tensor<3xi8>
  func.return
}

func.func @shifts_i8() {
  %a = arith.constant dense<[-128, 1, -1, 64]> : tensor<4xi8>
  %b = arith.constant dense<[1, 7, 3, 2]> : tensor<4xi8>
  %shl = arith.shli %a, %b : tensor<4xi8>
  %shru = arith.shrui %a, %b : tensor<4xi8>
  %shrs = arith.shrsi %a, %b : tensor<4xi8>
  check.expect_eq_const %shl, dense<[0, -128, -8, 0]> : tensor<4xi8>
  check.expect_eq_const %shru, dense<[64, 0, 31, 16]> : tensor<4xi8>
  check.expect_eq_const %shrs, dense<[-64, 0, -1, 16]> : tensor<4xi8>
  func.return
}

func.func @bitwise_i32() {
  %a = arith.constant dense<[12, -1]> : tensor<2xi32>
  %b = arith.constant dense<[10, 5]> : tensor<2xi32>
  %and = arith.andi %a, %b : tensor<2xi32>
  %or = arith.ori %a, %b : tensor<2xi32>
  %xor = arith.xori %a, %b : tensor<2xi32>
  check.expect_eq_const %and, dense<[8, 5]> : tensor<2xi32>
  check.expect_eq_const %or, dense<[14, -1]> : tensor<2xi32>
  check.expect_eq_const %xor, dense<[6, -6]> : tensor<2xi32>
  func.return
}

func.func @min_max_signed_unsigned() {
  %a = arith.constant dense<[-1, 5]> : tensor<2xi8>
  %b = arith.constant dense<[1, 3]> : tensor<2xi8>
  %mins = arith.minsi %a, %b : tensor<2xi8>
  %maxs = arith.maxsi %a, %b : tensor<2xi8>
  %minu = arith.minui %a, %b : tensor<2xi8>
  %maxu = arith.maxui %a, %b : tensor<2xi8>
  check.expect_eq_const %mins, dense<[-1, 3]> : tensor<2xi8>
  check.expect_eq_const %maxs, dense<[1, 5]> : tensor<2xi8>
  check.expect_eq_const %minu, dense<[1, 3]> : tensor<2xi8>
  check.expect_eq_const %maxu, dense<[-1, 5]> : tensor<2xi8>
  func.return
}

func.func @index_scalars() {
  %a = arith.constant 17 : index
  %b = arith.constant 5 : index
  %add = arith.addi %a, %b : index
  %mul = arith.muli %a, %b : index
  %div = arith.divsi %a, %b : index
  %rem = arith.remsi %a, %b : index
  %sub = arith.subi %b, %a : index
  %fd = arith.floordivsi %sub, %b : index
  %t = tensor.from_elements %add, %mul, %div, %rem, %sub, %fd : tensor<6xindex>
  check.expect_eq_const %t, dense<[22, 85, 3, 2, -12, -3]> : tensor<6xindex>
  func.return
}

func.func @i32_scalars() {
  %a = arith.constant 2147483647 : i32
  %one = arith.constant 1 : i32
  %wrap = arith.addi %a, %one : i32
  %neg = arith.subi %one, %a : i32
  %t = tensor.from_elements %wrap, %neg : tensor<2xi32>
  check.expect_eq_const %t, dense<[-2147483648, -2147483646]> : tensor<2xi32>
  func.return
}

func.func @i1_arithmetic() {
  %a = arith.constant dense<[true, true, false, false]> : tensor<4xi1>
  %b = arith.constant dense<[true, false, true, false]> : tensor<4xi1>
  %add = arith.addi %a, %b : tensor<4xi1>
  %mul = arith.muli %a, %b : tensor<4xi1>
  %or = arith.ori %a, %b : tensor<4xi1>
  check.expect_eq_const %add, dense<[false, true, true, false]> : tensor<4xi1>
  check.expect_eq_const %mul, dense<[true, false, false, false]> : tensor<4xi1>
  check.expect_eq_const %or, dense<[true, true, true, false]> : tensor<4xi1>
  func.return
}

func.func @extended_arithmetic_i32() {
  %a = arith.constant -1 : i32
  %two = arith.constant 2 : i32
  %sum, %carry = arith.addui_extended %a, %two : i32, i1
  %ulo, %uhi = arith.mului_extended %a, %a : i32
  %slo, %shi = arith.mulsi_extended %a, %a : i32
  %t = tensor.from_elements %sum, %ulo, %uhi, %slo, %shi : tensor<5xi32>
  // (2^32-1)^2 = 2^64 - 2^33 + 1: low word 1, high word 0xFFFFFFFE
  check.expect_eq_const %t, dense<[1, 1, -2, 1, 0]> : tensor<5xi32>
  %c = tensor.from_elements %carry : tensor<1xi1>
  check.expect_eq_const %c, dense<[true]> : tensor<1xi1>
  func.return
}

func.func @extended_multiply_i64() {
  %a = arith.constant dense<[4611686018427387904, -1, -3]> : tensor<3xi64>
  %b = arith.constant dense<[4, -1, 5]> : tensor<3xi64>
  %slo, %shi = arith.mulsi_extended %a, %b : tensor<3xi64>
  %ulo, %uhi = arith.mului_extended %a, %b : tensor<3xi64>
  // 2^62*4 = 2^64; (-1)(-1) = 1; (-3)(5) = -15
  check.expect_eq_const %slo, dense<[0, 1, -15]> : tensor<3xi64>
  check.expect_eq_const %shi, dense<[1, 0, -1]> : tensor<3xi64>
  // unsigned: (2^64-1)^2 -> high 2^64-2; (2^64-3)*5 = 5*2^64 - 15 -> high 4
  check.expect_eq_const %ulo, dense<[0, 1, -15]> : tensor<3xi64>
  check.expect_eq_const %uhi, dense<[1, -2, 4]> : tensor<3xi64>
  func.return
}

func.func @sub_with_borrow() {
  %a = arith.constant dense<[5, 3, -1]> : tensor<3xi8>
  %b = arith.constant dense<[3, 5, 1]> : tensor<3xi8>
  %d, %borrow = arith.subui_extended %a, %b : tensor<3xi8>, tensor<3xi1>
  check.expect_eq_const %d, dense<[2, -2, -2]> : tensor<3xi8>
  check.expect_eq_const %borrow, dense<[false, true, false]> : tensor<3xi1>
  func.return
}
