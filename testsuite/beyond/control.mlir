// func and cf companions: multi-block functions, calls through values, asserts.

func.func @factorial_cond_br_loop() {
  %c1 = arith.constant 1 : i64
  %n = arith.constant 10 : i64
  cf.br ^loop(%c1, %c1 : i64, i64)
^loop(%i: i64, %acc: i64):
  %done = arith.cmpi sgt, %i, %n : i64
  cf.cond_br %done, ^exit(%acc : i64), ^body
^body:
  %acc2 = arith.muli %acc, %i : i64
  %i2 = arith.addi %i, %c1 : i64
  cf.br ^loop(%i2, %acc2 : i64, i64)
^exit(%r: i64):
  %t = tensor.from_elements %r : tensor<1xi64>
  // 10! = 3628800
  check.expect_eq_const %t, dense<[3628800]> : tensor<1xi64>
  func.return
}

func.func private @fact(%n: i64) -> i64 {
  %c1 = arith.constant 1 : i64
  %small = arith.cmpi sle, %n, %c1 : i64
  cf.cond_br %small, ^base, ^rec
^base:
  func.return %c1 : i64
^rec:
  %m = arith.subi %n, %c1 : i64
  %f = func.call @fact(%m) : (i64) -> i64
  %r = arith.muli %n, %f : i64
  func.return %r : i64
}

func.func @factorial_recursive_call() {
  %n = arith.constant 20 : i64
  %r = func.call @fact(%n) : (i64) -> i64
  %t = tensor.from_elements %r : tensor<1xi64>
  // 20! = 2432902008176640000 (fits in i64)
  check.expect_eq_const %t, dense<[2432902008176640000]> : tensor<1xi64>
  func.return
}

func.func private @twice(%x: tensor<3xi32>) -> tensor<3xi32> {
  %r = arith.addi %x, %x : tensor<3xi32>
  func.return %r : tensor<3xi32>
}

func.func private @apply(%f: (tensor<3xi32>) -> tensor<3xi32>, %x: tensor<3xi32>) -> tensor<3xi32> {
  %y = func.call_indirect %f(%x) : (tensor<3xi32>) -> tensor<3xi32>
  %z = func.call_indirect %f(%y) : (tensor<3xi32>) -> tensor<3xi32>
  func.return %z : tensor<3xi32>
}

func.func @call_indirect_through_function_value() {
  %f = func.constant @twice : (tensor<3xi32>) -> tensor<3xi32>
  %x = arith.constant dense<[1, -2, 3]> : tensor<3xi32>
  %r = func.call @apply(%f, %x) : ((tensor<3xi32>) -> tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  check.expect_eq_const %r, dense<[4, -8, 12]> : tensor<3xi32>
  func.return
}

func.func @assert_that_holds() {
  %a = arith.constant 3 : index
  %b = arith.constant 4 : index
  %lt = arith.cmpi slt, %a, %b : index
  cf.assert %lt, "3 < 4"
  %t = tensor.from_elements %lt : tensor<1xi1>
  check.expect_eq_const %t, dense<[true]> : tensor<1xi1>
  func.return
}

func.func @collatz_steps_with_two_loops() {
  // steps of the Collatz sequence from 27 (111 steps), with a branch per parity
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %c3 = arith.constant 3 : i32
  %start = arith.constant 27 : i32
  cf.br ^head(%start, %c0 : i32, i32)
^head(%x: i32, %k: i32):
  %is_one = arith.cmpi eq, %x, %c1 : i32
  cf.cond_br %is_one, ^done(%k : i32), ^step
^step:
  %k1 = arith.addi %k, %c1 : i32
  %r = arith.remui %x, %c2 : i32
  %even = arith.cmpi eq, %r, %c0 : i32
  cf.cond_br %even, ^even_case, ^odd_case
^even_case:
  %h = arith.divui %x, %c2 : i32
  cf.br ^head(%h, %k1 : i32, i32)
^odd_case:
  %t3 = arith.muli %x, %c3 : i32
  %t31 = arith.addi %t3, %c1 : i32
  cf.br ^head(%t31, %k1 : i32, i32)
^done(%steps: i32):
  %t = tensor.from_elements %steps : tensor<1xi32>
  check.expect_eq_const %t, dense<[111]> : tensor<1xi32>
  func.return
}
