// Whole-program patterns that exporters emit around StableHLO ops: shape
// computations in shape/tensor/arith feeding dynamic StableHLO ops.

func.func private @broadcast_add(%x: tensor<?x?xf32>, %y: tensor<?xf32>) -> tensor<?x?xf32> {
  %sx = shape.shape_of %x : tensor<?x?xf32> -> tensor<2xindex>
  %sy = shape.shape_of %y : tensor<?xf32> -> tensor<1xindex>
  %w = shape.cstr_broadcastable %sx, %sy : tensor<2xindex>, tensor<1xindex>
  %r = shape.assuming %w -> (tensor<?x?xf32>) {
    %s = shape.broadcast %sx, %sy : tensor<2xindex>, tensor<1xindex> -> tensor<2xindex>
    %bx = stablehlo.dynamic_broadcast_in_dim %x, %s, dims = [0, 1] : (tensor<?x?xf32>, tensor<2xindex>) -> tensor<?x?xf32>
    %by = stablehlo.dynamic_broadcast_in_dim %y, %s, dims = [1] : (tensor<?xf32>, tensor<2xindex>) -> tensor<?x?xf32>
    %sum = stablehlo.add %bx, %by : tensor<?x?xf32>
    shape.assuming_yield %sum : tensor<?x?xf32>
  }
  func.return %r : tensor<?x?xf32>
}

func.func @dynamic_broadcast_add() {
  %x = stablehlo.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %y = stablehlo.constant dense<[10.0, 20.0, 30.0]> : tensor<3xf32>
  %dx = tensor.cast %x : tensor<2x3xf32> to tensor<?x?xf32>
  %dy = tensor.cast %y : tensor<3xf32> to tensor<?xf32>
  %r = func.call @broadcast_add(%dx, %dy) : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  %s = tensor.cast %r : tensor<?x?xf32> to tensor<2x3xf32>
  check.expect_eq_const %s, dense<[[11.0, 22.0, 33.0], [14.0, 25.0, 36.0]]> : tensor<2x3xf32>
  func.return
}

func.func @flatten_with_computed_shape() {
  %x = stablehlo.constant dense<[[[1, 2], [3, 4]], [[5, 6], [7, 8]], [[9, 10], [11, 12]]]> : tensor<3x2x2xi32>
  %d = tensor.cast %x : tensor<3x2x2xi32> to tensor<?x2x2xi32>
  %c0 = arith.constant 0 : index
  %n = tensor.dim %d, %c0 : tensor<?x2x2xi32>
  %n32 = arith.index_cast %n : index to i32
  %four = arith.constant 4 : i32
  %shape = tensor.from_elements %n32, %four : tensor<2xi32>
  %r = stablehlo.dynamic_reshape %d, %shape : (tensor<?x2x2xi32>, tensor<2xi32>) -> tensor<?x4xi32>
  %s = tensor.cast %r : tensor<?x4xi32> to tensor<3x4xi32>
  check.expect_eq_const %s, dense<[[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]> : tensor<3x4xi32>
  func.return
}
