// StableHLO ops without a specification section (status.md "Specification: no").

func.func @broadcast_prepends_dims() {
  %x = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  %r = "stablehlo.broadcast"(%x) {broadcast_sizes = array<i64: 2, 3>} : (tensor<2xi32>) -> tensor<2x3x2xi32>
  check.expect_eq_const %r, dense<[[[1, 2], [1, 2], [1, 2]], [[1, 2], [1, 2], [1, 2]]]> : tensor<2x3x2xi32>
  func.return
}

func.func @broadcast_scalar() {
  %x = stablehlo.constant dense<1.5> : tensor<f32>
  %r = "stablehlo.broadcast"(%x) {broadcast_sizes = array<i64: 3>} : (tensor<f32>) -> tensor<3xf32>
  check.expect_eq_const %r, dense<[1.5, 1.5, 1.5]> : tensor<3xf32>
  func.return
}

func.func @dot_matrix_vector() {
  %a = stablehlo.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>
  %v = stablehlo.constant dense<[5, 6]> : tensor<2xi32>
  %r = "stablehlo.dot"(%a, %v) : (tensor<2x2xi32>, tensor<2xi32>) -> tensor<2xi32>
  check.expect_eq_const %r, dense<[17, 39]> : tensor<2xi32>
  func.return
}

func.func @einsum_matmul() {
  %a = stablehlo.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %b = stablehlo.constant dense<[[5.0, 6.0, 7.0], [8.0, 9.0, 10.0]]> : tensor<2x3xf32>
  %r = "stablehlo.einsum"(%a, %b) {einsum_config = "ab,bc->ac"} : (tensor<2x2xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  check.expect_eq_const %r, dense<[[21.0, 24.0, 27.0], [47.0, 54.0, 61.0]]> : tensor<2x3xf32>
  func.return
}

func.func @einsum_batched_outer_and_transpose() {
  %a = stablehlo.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>
  %b = stablehlo.constant dense<[[1, 10, 100], [2, 20, 200]]> : tensor<2x3xi32>
  // batch over b, outer product of a's row and b's row
  %r = "stablehlo.einsum"(%a, %b) {einsum_config = "bi,bj->bji"} : (tensor<2x2xi32>, tensor<2x3xi32>) -> tensor<2x3x2xi32>
  check.expect_eq_const %r, dense<[[[1, 2], [10, 20], [100, 200]], [[6, 8], [60, 80], [600, 800]]]> : tensor<2x3x2xi32>
  func.return
}

func.func @einsum_wraps_in_result_type() {
  %a = stablehlo.constant dense<[100, 100]> : tensor<2xi8>
  %b = stablehlo.constant dense<[2, 1]> : tensor<2xi8>
  // 200 + 100 = 300 = 44 (mod 256)
  %r = "stablehlo.einsum"(%a, %b) {einsum_config = "i,i->"} : (tensor<2xi8>, tensor<2xi8>) -> tensor<i8>
  check.expect_eq_const %r, dense<44> : tensor<i8>
  func.return
}

func.func @unary_einsum_reduce_and_transpose() {
  %a = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %rows = "stablehlo.unary_einsum"(%a) {einsum_config = "ab->a"} : (tensor<2x3xi32>) -> tensor<2xi32>
  %t = "stablehlo.unary_einsum"(%a) {einsum_config = "ab->ba"} : (tensor<2x3xi32>) -> tensor<3x2xi32>
  check.expect_eq_const %rows, dense<[6, 15]> : tensor<2xi32>
  check.expect_eq_const %t, dense<[[1, 4], [2, 5], [3, 6]]> : tensor<3x2xi32>
  func.return
}

func.func @torch_index_select_dim0() {
  %x = stablehlo.constant dense<[[[1, 2, 3, 4, 5]], [[6, 7, 8, 9, 10]], [[11, 12, 13, 14, 15]], [[16, 17, 18, 19, 20]], [[21, 22, 23, 24, 25]]]> : tensor<5x1x5xi32>
  %i = stablehlo.constant dense<[0, 2]> : tensor<2xi32>
  %r = "stablehlo.torch_index_select"(%x, %i) {dim = 0 : i64, batch_dims = 0 : i64} : (tensor<5x1x5xi32>, tensor<2xi32>) -> tensor<2x1x5xi32>
  check.expect_eq_const %r, dense<[[[1, 2, 3, 4, 5]], [[11, 12, 13, 14, 15]]]> : tensor<2x1x5xi32>
  func.return
}

func.func @torch_index_select_inner_dim_scalar_index() {
  %x = stablehlo.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %i = stablehlo.constant dense<2> : tensor<i64>
  %r = "stablehlo.torch_index_select"(%x, %i) {dim = 1 : i64, batch_dims = 0 : i64} : (tensor<2x3xf32>, tensor<i64>) -> tensor<2xf32>
  check.expect_eq_const %r, dense<[3.0, 6.0]> : tensor<2xf32>
  func.return
}

func.func @torch_index_select_batched() {
  %x = stablehlo.constant dense<[[[100, 101], [110, 111]], [[200, 201], [210, 211]]]> : tensor<2x2x2xi32>
  %i = stablehlo.constant dense<[[[0, 1], [1, 0]], [[0, 0], [1, 1]]]> : tensor<2x2x2xi32>
  // dim = batch_dims = 2 (given as -1): result[a, b, k] = x[a, b, i[a, b, k]]
  %r = "stablehlo.torch_index_select"(%x, %i) {dim = -1 : i64, batch_dims = -1 : i64} : (tensor<2x2x2xi32>, tensor<2x2x2xi32>) -> tensor<2x2x2xi32>
  check.expect_eq_const %r, dense<[[[100, 101], [111, 110]], [[200, 200], [211, 211]]]> : tensor<2x2x2xi32>
  func.return
}

func.func @torch_index_select_batch_then_gather() {
  %x = stablehlo.constant dense<[[6, 7], [8, 9]]> : tensor<2x2xi32>
  %i = stablehlo.constant dense<[[[0, 1], [1, 0]], [[1, 1], [0, 0]]]> : tensor<2x2x2xi32>
  // batch_dims = 1, dim = 1: result[b, k, l] = x[b, i[b, k, l]]
  %r = "stablehlo.torch_index_select"(%x, %i) {dim = 1 : i64, batch_dims = 1 : i64} : (tensor<2x2xi32>, tensor<2x2x2xi32>) -> tensor<2x2x2xi32>
  check.expect_eq_const %r, dense<[[[6, 7], [7, 6]], [[9, 9], [8, 8]]]> : tensor<2x2x2xi32>
  func.return
}

func.func @cross_replica_sum_single_process() {
  %x = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %r = "stablehlo.cross-replica-sum"(%x) {replica_groups = dense<[[0]]> : tensor<1x1xi64>} : (tensor<2xf32>) -> tensor<2xf32>
  check.expect_eq_const %r, dense<[1.0, 2.0]> : tensor<2xf32>
  func.return
}

func.func @einsum_ellipsis_bf16() {
  %a = stablehlo.constant dense<[[[1.0, 2.0]], [[3.0, 4.0]]]> : tensor<2x1x2xbf16>
  %b = stablehlo.constant dense<[[0.5], [0.25]]> : tensor<2x1xbf16>
  %r = "stablehlo.einsum"(%a, %b) {einsum_config = "...ij,jk->...ik"} : (tensor<2x1x2xbf16>, tensor<2x1xbf16>) -> tensor<2x1x1xbf16>
  check.expect_eq_const %r, dense<[[[1.0]], [[2.5]]]> : tensor<2x1x1xbf16>
  func.return
}

func.func @dot_mixed_precision_i8_to_i32() {
  %a = stablehlo.constant dense<[100, 100, -128]> : tensor<3xi8>
  %b = stablehlo.constant dense<[100, 100, -128]> : tensor<3xi8>
  %r = "stablehlo.dot"(%a, %b) : (tensor<3xi8>, tensor<3xi8>) -> tensor<i32>
  // 10000 + 10000 + 16384 in i32 (no i8 wraparound)
  check.expect_eq_const %r, dense<36384> : tensor<i32>
  func.return
}
