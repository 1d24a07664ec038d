// scf structured control flow, as left in programs by some exporters.

func.func @for_loop_sum_of_squares() {
  %lb = arith.constant 0 : index
  %ub = arith.constant 10 : index
  %step = arith.constant 1 : index
  %zero = arith.constant 0 : i64
  %sum = scf.for %i = %lb to %ub step %step iter_args(%acc = %zero) -> (i64) {
    %v = arith.index_cast %i : index to i64
    %sq = arith.muli %v, %v : i64
    %next = arith.addi %acc, %sq : i64
    scf.yield %next : i64
  }
  %t = tensor.from_elements %sum : tensor<1xi64>
  // 0^2 + ... + 9^2 = 285
  check.expect_eq_const %t, dense<[285]> : tensor<1xi64>
  func.return
}

func.func @for_loop_with_step_updates_tensor() {
  %lb = arith.constant 1 : index
  %ub = arith.constant 6 : index
  %step = arith.constant 2 : index
  %init = arith.constant dense<0> : tensor<6xi32>
  %r = scf.for %i = %lb to %ub step %step iter_args(%t = %init) -> (tensor<6xi32>) {
    %v = arith.index_cast %i : index to i32
    %u = tensor.insert %v into %t[%i] : tensor<6xi32>
    scf.yield %u : tensor<6xi32>
  }
  check.expect_eq_const %r, dense<[0, 1, 0, 3, 0, 5]> : tensor<6xi32>
  func.return
}

func.func @if_else_with_results() {
  %a = arith.constant 7 : i32
  %b = arith.constant 3 : i32
  %gt = arith.cmpi sgt, %a, %b : i32
  %r:2 = scf.if %gt -> (i32, i32) {
    %d = arith.subi %a, %b : i32
    scf.yield %d, %a : i32, i32
  } else {
    %d = arith.subi %b, %a : i32
    scf.yield %d, %b : i32, i32
  }
  %t = tensor.from_elements %r#0, %r#1 : tensor<2xi32>
  check.expect_eq_const %t, dense<[4, 7]> : tensor<2xi32>
  func.return
}

func.func @while_gcd() {
  %a = arith.constant 1071 : i32
  %b = arith.constant 462 : i32
  %zero = arith.constant 0 : i32
  %r:2 = scf.while (%x = %a, %y = %b) : (i32, i32) -> (i32, i32) {
    %nz = arith.cmpi ne, %y, %zero : i32
    scf.condition(%nz) %x, %y : i32, i32
  } do {
  ^bb0(%x: i32, %y: i32):
    %m = arith.remui %x, %y : i32
    scf.yield %y, %m : i32, i32
  }
  %t = tensor.from_elements %r#0 : tensor<1xi32>
  // gcd(1071, 462) = 21
  check.expect_eq_const %t, dense<[21]> : tensor<1xi32>
  func.return
}

func.func @nested_loops_and_index_switch() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %zero = arith.constant 0 : i32
  %total = scf.for %i = %c0 to %c3 step %c1 iter_args(%acc = %zero) -> (i32) {
    %inner = scf.for %j = %c0 to %c3 step %c1 iter_args(%a2 = %acc) -> (i32) {
      %s = arith.addi %i, %j : index
      %w = scf.index_switch %s -> i32
      case 0 {
        %v = arith.constant 100 : i32
        scf.yield %v : i32
      }
      case 4 {
        %v = arith.constant 10 : i32
        scf.yield %v : i32
      }
      default {
        %v = arith.constant 1 : i32
        scf.yield %v : i32
      }
      %n = arith.addi %a2, %w : i32
      scf.yield %n : i32
    }
    scf.yield %inner : i32
  }
  %t = tensor.from_elements %total : tensor<1xi32>
  // sums i+j over 3x3: one 0 (100), one 4 (10), seven others (1 each)
  check.expect_eq_const %t, dense<[117]> : tensor<1xi32>
  func.return
}

func.func @execute_region_multi_block() {
  %c = arith.constant true
  %r = scf.execute_region -> i32 {
    cf.cond_br %c, ^a, ^b
  ^a:
    %x = arith.constant 1 : i32
    scf.yield %x : i32
  ^b:
    %y = arith.constant 2 : i32
    scf.yield %y : i32
  }
  %t = tensor.from_elements %r : tensor<1xi32>
  check.expect_eq_const %t, dense<[1]> : tensor<1xi32>
  func.return
}
