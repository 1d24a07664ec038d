// tensor dialect: element access, construction, reshaping, slicing, regions.

func.func @extract_insert_from_elements() {
  %t = arith.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %i1 = arith.constant 1 : index
  %i2 = arith.constant 2 : index
  %v = tensor.extract %t[%i1, %i2] : tensor<2x3xi32>
  %w = tensor.extract %t[%i1, %i1] : tensor<2x3xi32>
  %m = tensor.from_elements %v, %w, %v, %w : tensor<2x2xi32>
  check.expect_eq_const %m, dense<[[6, 5], [6, 5]]> : tensor<2x2xi32>
  %c = arith.constant 42 : i32
  %u = tensor.insert %c into %t[%i1, %i2] : tensor<2x3xi32>
  check.expect_eq_const %u, dense<[[1, 2, 3], [4, 5, 42]]> : tensor<2x3xi32>
  check.expect_eq_const %t, dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %s = arith.constant dense<7.5> : tensor<f32>
  %e = tensor.extract %s[] : tensor<f32>
  %r = tensor.from_elements %e : tensor<f32>
  check.expect_eq_const %r, dense<7.5> : tensor<f32>
  func.return
}

func.func @splat_empty_dim_rank_cast() {
  %n = arith.constant 3 : index
  %x = arith.constant 2.5 : f32
  %s = tensor.splat %x[%n] : tensor<?x2xf32>
  %d0 = arith.constant 0 : index
  %dim = tensor.dim %s, %d0 : tensor<?x2xf32>
  %rank = tensor.rank %s : tensor<?x2xf32>
  %dims = tensor.from_elements %dim, %rank : tensor<2xindex>
  check.expect_eq_const %dims, dense<[3, 2]> : tensor<2xindex>
  %st = tensor.cast %s : tensor<?x2xf32> to tensor<3x2xf32>
  check.expect_eq_const %st, dense<2.5> : tensor<3x2xf32>
  %e = tensor.empty(%n) : tensor<?xi32>
  %one = arith.constant 1 : index
  %c9 = arith.constant 9 : i32
  %e1 = tensor.insert %c9 into %e[%one] : tensor<?xi32>
  %v = tensor.extract %e1[%one] : tensor<?xi32>
  %vt = tensor.from_elements %v : tensor<1xi32>
  check.expect_eq_const %vt, dense<[9]> : tensor<1xi32>
  func.return
}

func.func @reshape_expand_collapse() {
  %t = arith.constant dense<[1, 2, 3, 4, 5, 6]> : tensor<6xi32>
  %shape = arith.constant dense<[3, 2]> : tensor<2xindex>
  %r = tensor.reshape %t(%shape) : (tensor<6xi32>, tensor<2xindex>) -> tensor<3x2xi32>
  check.expect_eq_const %r, dense<[[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi32>
  %e = tensor.expand_shape %t [[0, 1, 2]] output_shape [1, 2, 3] : tensor<6xi32> into tensor<1x2x3xi32>
  check.expect_eq_const %e, dense<[[[1, 2, 3], [4, 5, 6]]]> : tensor<1x2x3xi32>
  %c = tensor.collapse_shape %e [[0, 1], [2]] : tensor<1x2x3xi32> into tensor<2x3xi32>
  check.expect_eq_const %c, dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %n = arith.constant 3 : index
  %td = tensor.cast %t : tensor<6xi32> to tensor<?xi32>
  %d = tensor.expand_shape %td [[0, 1]] output_shape [2, %n] : tensor<?xi32> into tensor<2x?xi32>
  %ds = tensor.cast %d : tensor<2x?xi32> to tensor<2x3xi32>
  check.expect_eq_const %ds, dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  func.return
}

func.func @extract_and_insert_slices() {
  %t = arith.constant dense<[[0, 1, 2, 3], [10, 11, 12, 13], [20, 21, 22, 23]]> : tensor<3x4xi32>
  %s = tensor.extract_slice %t[0, 1] [2, 2] [2, 2] : tensor<3x4xi32> to tensor<2x2xi32>
  check.expect_eq_const %s, dense<[[1, 3], [21, 23]]> : tensor<2x2xi32>
  %i1 = arith.constant 1 : index
  %row = tensor.extract_slice %t[%i1, 0] [1, 4] [1, 1] : tensor<3x4xi32> to tensor<4xi32>
  check.expect_eq_const %row, dense<[10, 11, 12, 13]> : tensor<4xi32>
  %z = arith.constant dense<[[-1, -2]]> : tensor<1x2xi32>
  %u = tensor.insert_slice %z into %t[2, %i1] [1, 2] [1, 1] : tensor<1x2xi32> into tensor<3x4xi32>
  check.expect_eq_const %u, dense<[[0, 1, 2, 3], [10, 11, 12, 13], [20, -1, -2, 23]]> : tensor<3x4xi32>
  %v = arith.constant dense<[7, 8]> : tensor<2xi32>
  %w = tensor.insert_slice %v into %t[0, 3] [2, 1] [1, 1] : tensor<2xi32> into tensor<3x4xi32>
  check.expect_eq_const %w, dense<[[0, 1, 2, 7], [10, 11, 12, 8], [20, 21, 22, 23]]> : tensor<3x4xi32>
  func.return
}

func.func @concat_and_bitcast() {
  %a = arith.constant dense<[[1, 2]]> : tensor<1x2xi32>
  %b = arith.constant dense<[[3, 4], [5, 6]]> : tensor<2x2xi32>
  %c = tensor.concat dim(0) %a, %b : (tensor<1x2xi32>, tensor<2x2xi32>) -> tensor<3x2xi32>
  check.expect_eq_const %c, dense<[[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi32>
  %f = arith.constant dense<[1.0, -2.0]> : tensor<2xf32>
  %bits = tensor.bitcast %f : tensor<2xf32> to tensor<2xi32>
  check.expect_eq_const %bits, dense<[1065353216, -1073741824]> : tensor<2xi32>
  func.return
}

func.func @generate_from_indices() {
  %n = arith.constant 3 : index
  %ten = arith.constant 10 : index
  %g = tensor.generate %n {
  ^bb0(%i: index, %j: index):
    %a = arith.muli %i, %ten : index
    %b = arith.addi %a, %j : index
    %v = arith.index_cast %b : index to i32
    tensor.yield %v : i32
  } : tensor<2x?xi32>
  %s = tensor.cast %g : tensor<2x?xi32> to tensor<2x3xi32>
  check.expect_eq_const %s, dense<[[0, 1, 2], [10, 11, 12]]> : tensor<2x3xi32>
  func.return
}

func.func @generate_reads_other_tensor() {
  %src = arith.constant dense<[5.0, 6.0, 7.0]> : tensor<3xf32>
  %c2 = arith.constant 2 : index
  %g = tensor.generate {
  ^bb0(%i: index):
    %k = arith.subi %c2, %i : index
    %v = tensor.extract %src[%k] : tensor<3xf32>
    tensor.yield %v : f32
  } : tensor<3xf32>
  check.expect_eq_const %g, dense<[7.0, 6.0, 5.0]> : tensor<3xf32>
  func.return
}

func.func @pad_constant_and_index_dependent() {
  %t = arith.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>
  %z = arith.constant 0 : i32
  %one = arith.constant 1 : index
  %p = tensor.pad %t low[1, 0] high[0, %one] {
  ^bb0(%i: index, %j: index):
    tensor.yield %z : i32
  } : tensor<2x2xi32> to tensor<3x?xi32>
  %ps = tensor.cast %p : tensor<3x?xi32> to tensor<3x3xi32>
  check.expect_eq_const %ps, dense<[[0, 0, 0], [1, 2, 0], [3, 4, 0]]> : tensor<3x3xi32>
  %q = tensor.pad %t low[0, 1] high[1, 0] {
  ^bb0(%i: index, %j: index):
    %s = arith.addi %i, %j : index
    %v = arith.index_cast %s : index to i32
    %n = arith.subi %z, %v : i32
    tensor.yield %n : i32
  } : tensor<2x2xi32> to tensor<3x3xi32>
  check.expect_eq_const %q, dense<[[0, 1, 2], [-1, 3, 4], [-2, -3, -4]]> : tensor<3x3xi32>
  func.return
}
