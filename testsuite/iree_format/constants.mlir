// util.unfoldable_constant, flow.tensor.dynamic_constant, util.optimization_barrier.

func.func @unfoldable_tensor() {
  %x = util.unfoldable_constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %y = stablehlo.transpose %x, dims = [1, 0] : (tensor<2x2xf32>) -> tensor<2x2xf32>
  check.expect_eq_const(%y, dense<[[1.0, 3.0], [2.0, 4.0]]> : tensor<2x2xf32>) : tensor<2x2xf32>
  return
}

func.func @unfoldable_splat_and_scalar() {
  %x = util.unfoldable_constant dense<3> : tensor<4xi8>
  %s = util.unfoldable_constant 5 : i32
  %y = stablehlo.add %x, %x : tensor<4xi8>
  check.expect_eq_const(%y, dense<6> : tensor<4xi8>) : tensor<4xi8>
  %t = arith.muli %s, %s : i32
  %w = arith.constant 25 : i32
  %eq = arith.cmpi eq, %t, %w : i32
  %eq32 = arith.extui %eq : i1 to i32
  check.expect_true(%eq32) : i32
  return
}

func.func @dynamic_constant() {
  %d = flow.tensor.dynamic_constant dense<[4.0, -1.0, 9.0]> : tensor<3xf32> -> tensor<?xf32>
  %a = stablehlo.abs %d : tensor<?xf32>
  check.expect_almost_eq_const(%a, dense<[4.0, 1.0, 9.0]> : tensor<3xf32>) : tensor<?xf32>
  return
}

func.func @dynamic_constant_size() {
  %c0 = arith.constant 0 : index
  %d = flow.tensor.dynamic_constant dense<[4.0, -1.0, 9.0]> : tensor<3xf32> -> tensor<?xf32>
  %n = tensor.dim %d, %c0 : tensor<?xf32>
  %three = arith.constant 3 : index
  %ok = arith.cmpi eq, %n, %three : index
  %ok32 = arith.extui %ok : i1 to i32
  check.expect_true(%ok32) : i32
  return
}

func.func @dynamic_constant_2d() {
  %d = flow.tensor.dynamic_constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32> -> tensor<?x?xi32>
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %r = stablehlo.reduce(%d init: %zero) applies stablehlo.add across dimensions = [1]
       : (tensor<?x?xi32>, tensor<i32>) -> tensor<?xi32>
  check.expect_eq_const(%r, dense<[6, 15]> : tensor<2xi32>) : tensor<?xi32>
  return
}

func.func @dynamic_constant_into_static_result() {
  // dynamic operands, a static result: backends needing static shapes refine the program
  %base = util.unfoldable_constant dense<1> : tensor<5xi32>
  %idx = flow.tensor.dynamic_constant dense<[[1], [3]]> : tensor<2x1xi32> -> tensor<?x1xi32>
  %upd = flow.tensor.dynamic_constant dense<[10, 30]> : tensor<2xi32> -> tensor<?xi32>
  %0 = "stablehlo.scatter"(%base, %idx, %upd) ({
  ^bb0(%a: tensor<i32>, %b: tensor<i32>):
    %s = stablehlo.add %a, %b : tensor<i32>
    stablehlo.return %s : tensor<i32>
  }) {scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0],
        scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}
     : (tensor<5xi32>, tensor<?x1xi32>, tensor<?xi32>) -> tensor<5xi32>
  check.expect_eq_const(%0, dense<[1, 11, 1, 31, 1]> : tensor<5xi32>) : tensor<5xi32>
  return
}
