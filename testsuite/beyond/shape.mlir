// shape dialect as used by dynamic-shape programs: extents, broadcasting,
// constraints and assuming regions.

func.func @shape_of_and_extents() {
  %t = arith.constant dense<0.0> : tensor<2x3xf32>
  %s = shape.shape_of %t : tensor<2x3xf32> -> tensor<2xindex>
  check.expect_eq_const %s, dense<[2, 3]> : tensor<2xindex>
  %n = shape.num_elements %s : tensor<2xindex> -> index
  %r = shape.rank %s : tensor<2xindex> -> index
  %one = arith.constant 1 : index
  %e1 = shape.get_extent %s, %one : tensor<2xindex>, index -> index
  %v = tensor.from_elements %n, %r, %e1 : tensor<3xindex>
  check.expect_eq_const %v, dense<[6, 2, 3]> : tensor<3xindex>
  func.return
}

func.func @broadcast_shapes() {
  %a = shape.const_shape [4, 1, 3] : tensor<3xindex>
  %b = shape.const_shape [5, 1] : tensor<2xindex>
  %c = shape.broadcast %a, %b : tensor<3xindex>, tensor<2xindex> -> tensor<?xindex>
  %cs = tensor.cast %c : tensor<?xindex> to tensor<3xindex>
  check.expect_eq_const %cs, dense<[4, 5, 3]> : tensor<3xindex>
  %ok = shape.is_broadcastable %a, %b : tensor<3xindex>, tensor<2xindex>
  %d = shape.const_shape [2] : tensor<1xindex>
  %bad = shape.is_broadcastable %a, %d : tensor<3xindex>, tensor<1xindex>
  %flags = tensor.from_elements %ok, %bad : tensor<2xi1>
  check.expect_eq_const %flags, dense<[true, false]> : tensor<2xi1>
  func.return
}

func.func @constraints_and_assuming() {
  %x = arith.constant dense<[[1.0], [2.0]]> : tensor<2x1xf32>
  %y = arith.constant dense<[[10.0, 20.0, 30.0]]> : tensor<1x3xf32>
  %sx = shape.shape_of %x : tensor<2x1xf32> -> tensor<2xindex>
  %sy = shape.shape_of %y : tensor<1x3xf32> -> tensor<2xindex>
  %w1 = shape.cstr_broadcastable %sx, %sy : tensor<2xindex>, tensor<2xindex>
  %w2 = shape.cstr_eq %sx, %sx : tensor<2xindex>, tensor<2xindex>
  %true = arith.constant true
  %w3 = shape.cstr_require %true, "always"
  %w = shape.assuming_all %w1, %w2, %w3
  %r = shape.assuming %w -> (tensor<2xindex>) {
    %b = shape.broadcast %sx, %sy : tensor<2xindex>, tensor<2xindex> -> tensor<2xindex>
    shape.assuming_yield %b : tensor<2xindex>
  }
  check.expect_eq_const %r, dense<[2, 3]> : tensor<2xindex>
  func.return
}

func.func @shape_values_and_sizes() {
  %s = shape.const_shape [2, 3, 4] : !shape.shape
  %n = shape.num_elements %s : !shape.shape -> !shape.size
  %i = shape.size_to_index %n : !shape.size
  %k = arith.constant 5 : index
  %sz = shape.index_to_size %k
  %sum = shape.add %n, %sz : !shape.size, !shape.size -> !shape.size
  %prod = shape.mul %sum, %sz : !shape.size, !shape.size -> !shape.size
  %j = shape.size_to_index %prod : !shape.size
  %v = tensor.from_elements %i, %j : tensor<2xindex>
  check.expect_eq_const %v, dense<[24, 145]> : tensor<2xindex>
  %one = arith.constant 1 : index
  %h2, %t2 = "shape.split_at"(%s, %one) : (!shape.shape, index) -> (!shape.shape, !shape.shape)
  %cat = shape.concat %t2, %h2 : !shape.shape, !shape.shape -> !shape.shape
  %ext = shape.to_extent_tensor %cat : !shape.shape -> tensor<3xindex>
  check.expect_eq_const %ext, dense<[3, 4, 2]> : tensor<3xindex>
  func.return
}

func.func @dynamic_reshape_pattern() {
  // the pattern exporters emit for a dynamically shaped reshape
  %t = arith.constant dense<[1, 2, 3, 4, 5, 6]> : tensor<6xi32>
  %d = tensor.cast %t : tensor<6xi32> to tensor<?xi32>
  %s = shape.shape_of %d : tensor<?xi32> -> tensor<1xindex>
  %n = shape.num_elements %s : tensor<1xindex> -> index
  %two = arith.constant 2 : index
  %half = arith.divui %n, %two : index
  %new = tensor.from_elements %half, %two : tensor<2xindex>
  %r = tensor.reshape %d(%new) : (tensor<?xi32>, tensor<2xindex>) -> tensor<?x?xi32>
  %rs = tensor.cast %r : tensor<?x?xi32> to tensor<3x2xi32>
  check.expect_eq_const %rs, dense<[[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi32>
  func.return
}
