"""Shape, data-movement, sort, dynamic-shape and composite kernels.

Hand-computed values for each op (spec.md#broadcast_in_dim, #concatenate,
#iota, #pad, #reshape, #reverse, #slice, #transpose, #sort, #composite and
the dynamic_* ops), the sort merge path checked against the argsort fast
path, and the official interpreter tests of these ops when the suite is
present.
"""

from __future__ import annotations


import ml_dtypes
import numpy as np
import pytest

from stablehlo_conform.kernels import sorting

from kernel_util import assert_interpret_file_passes, one, run


# ----------------------------------------------------------------------------- static shape ops


def test_broadcast_in_dim_permuted_dims():
    x = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int32)  # 2x3
    out = one("""
func.func @main(%x: tensor<2x3xi32>) -> tensor<3x4x2xi32> {
  %0 = stablehlo.broadcast_in_dim %x, dims = [2, 0] : (tensor<2x3xi32>) -> tensor<3x4x2xi32>
  func.return %0 : tensor<3x4x2xi32>
}""", x)
    assert out.shape == (3, 4, 2)
    # result[i, j, k] = x[k, i]
    assert out[2, 3, 1] == 6 and out[0, 1, 1] == 4 and out[1, 0, 0] == 2


def test_broadcast_in_dim_size_one_expands():
    out = one("""
func.func @main(%x: tensor<1x2xf32>) -> tensor<3x2xf32> {
  %0 = stablehlo.broadcast_in_dim %x, dims = [0, 1] : (tensor<1x2xf32>) -> tensor<3x2xf32>
  func.return %0 : tensor<3x2xf32>
}""", np.array([[1.5, -2.0]], dtype=np.float32))
    assert out.tolist() == [[1.5, -2.0]] * 3


def test_concatenate_and_reverse_and_transpose():
    a = np.arange(6, dtype=np.int64).reshape(2, 3)
    b = np.array([[10, 11, 12]], dtype=np.int64)
    out = one("""
func.func @main(%a: tensor<2x3xi64>, %b: tensor<1x3xi64>) -> tensor<3x3xi64> {
  %0 = stablehlo.concatenate %a, %b, dim = 0 : (tensor<2x3xi64>, tensor<1x3xi64>) -> tensor<3x3xi64>
  %1 = stablehlo.reverse %0, dims = [1] : tensor<3x3xi64>
  %2 = stablehlo.transpose %1, dims = [1, 0] : (tensor<3x3xi64>) -> tensor<3x3xi64>
  func.return %2 : tensor<3x3xi64>
}""", a, b)
    assert out.tolist() == [[2, 5, 12], [1, 4, 11], [0, 3, 10]]


def test_slice_with_strides():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    out = one("""
func.func @main(%x: tensor<3x4xi32>) -> tensor<2x2xi32> {
  %0 = stablehlo.slice %x [0:3:2, 1:4:2] : (tensor<3x4xi32>) -> tensor<2x2xi32>
  func.return %0 : tensor<2x2xi32>
}""", x)
    assert out.tolist() == [[1, 3], [9, 11]]


def test_reshape_to_rank0_stays_rank0():
    out = one("""
func.func @main(%x: tensor<1x1xbf16>) -> tensor<bf16> {
  %0 = stablehlo.reshape %x : (tensor<1x1xbf16>) -> tensor<bf16>
  func.return %0 : tensor<bf16>
}""", np.array([[3.0]], dtype=ml_dtypes.bfloat16))
    assert out.shape == () and out.dtype == ml_dtypes.bfloat16 and float(out) == 3.0


def test_pad_negative_and_interior():
    # spec.md#pad example
    x = np.array([[0, 0, 0, 0], [0, 1, 2, 0], [0, 3, 4, 0], [0, 5, 6, 0], [0, 0, 0, 0]], dtype=np.int64)
    out = one("""
func.func @main(%x: tensor<5x4xi64>) -> tensor<7x5xi64> {
  %v = stablehlo.constant dense<-1> : tensor<i64>
  %0 = stablehlo.pad %x, %v, low = [1, -1], high = [1, -1], interior = [0, 1]
    : (tensor<5x4xi64>, tensor<i64>) -> tensor<7x5xi64>
  func.return %0 : tensor<7x5xi64>
}""", x)
    assert out.tolist() == [
        [-1, -1, -1, -1, -1], [-1, 0, -1, 0, -1], [-1, 1, -1, 2, -1], [-1, 3, -1, 4, -1],
        [-1, 5, -1, 6, -1], [-1, 0, -1, 0, -1], [-1, -1, -1, -1, -1]]


def test_iota_types():
    out = one("""
func.func @main() -> tensor<2x3xbf16> {
  %0 = stablehlo.iota dim = 1 : tensor<2x3xbf16>
  func.return %0 : tensor<2x3xbf16>
}""")
    assert out.dtype == ml_dtypes.bfloat16 and out.astype(np.float32).tolist() == [[0, 1, 2]] * 2
    out = one("""
func.func @main() -> tensor<3xcomplex<f32>> {
  %0 = stablehlo.iota dim = 0 : tensor<3xcomplex<f32>>
  func.return %0 : tensor<3xcomplex<f32>>
}""")
    assert out.tolist() == [0j, 1 + 0j, 2 + 0j]


def test_get_dimension_size():
    out = one("""
func.func @main(%x: tensor<2x5xf32>) -> tensor<i32> {
  %0 = stablehlo.get_dimension_size %x, dim = 1 : (tensor<2x5xf32>) -> tensor<i32>
  func.return %0 : tensor<i32>
}""", np.zeros((2, 5), np.float32))
    assert out.shape == () and out.dtype == np.int32 and int(out) == 5


# ----------------------------------------------------------------------------- dynamic shapes


def test_dynamic_ops_take_shapes_from_values():
    x = np.arange(6, dtype=np.int64).reshape(1, 6)
    outs = run("""
func.func @main(%x: tensor<?x6xi64>, %n: tensor<2xi64>) -> (tensor<?x?xi64>, tensor<?x?xi32>, tensor<?xi64>) {
  %s = stablehlo.constant dense<[2, 3]> : tensor<2xi64>
  %0 = stablehlo.dynamic_reshape %x, %s : (tensor<?x6xi64>, tensor<2xi64>) -> tensor<?x?xi64>
  %1 = stablehlo.dynamic_iota %n, dim = 0 : (tensor<2xi64>) -> tensor<?x?xi32>
  %st = stablehlo.constant dense<[1]> : tensor<1xi64>
  %li = stablehlo.constant dense<[6]> : tensor<1xi64>
  %sd = stablehlo.constant dense<[2]> : tensor<1xi64>
  %r = stablehlo.reshape %0 : (tensor<?x?xi64>) -> tensor<6xi64>
  %2 = stablehlo.real_dynamic_slice %r, %st, %li, %sd
    : (tensor<6xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?xi64>
  func.return %0, %1, %2 : tensor<?x?xi64>, tensor<?x?xi32>, tensor<?xi64>
}""", x, np.array([3, 2], np.int64))
    assert outs[0].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert outs[1].tolist() == [[0, 0], [1, 1], [2, 2]] and outs[1].dtype == np.int32
    assert outs[2].tolist() == [1, 3, 5]


def test_dynamic_broadcast_and_pad():
    outs = run("""
func.func @main(%x: tensor<?xf32>, %shape: tensor<2xi32>) -> (tensor<?x?xf32>, tensor<?xf32>) {
  %0 = stablehlo.dynamic_broadcast_in_dim %x, %shape, dims = [1] : (tensor<?xf32>, tensor<2xi32>) -> tensor<?x?xf32>
  %v = stablehlo.constant dense<9.0> : tensor<f32>
  %lo = stablehlo.constant dense<[1]> : tensor<1xi64>
  %hi = stablehlo.constant dense<[-1]> : tensor<1xi64>
  %in = stablehlo.constant dense<[1]> : tensor<1xi64>
  %1 = stablehlo.dynamic_pad %x, %v, %lo, %hi, %in
    : (tensor<?xf32>, tensor<f32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?xf32>
  func.return %0, %1 : tensor<?x?xf32>, tensor<?xf32>
}""", np.array([1, 2, 3], np.float32), np.array([2, 3], np.int32))
    assert outs[0].tolist() == [[1, 2, 3], [1, 2, 3]]
    assert outs[1].tolist() == [9, 1, 9, 2, 9]


def test_dynamic_shape_mismatch_is_an_error():
    with pytest.raises(Exception, match="declared"):
        run("""
func.func @main(%s: tensor<2xi64>) -> tensor<3x?xi64> {
  %0 = stablehlo.dynamic_iota %s, dim = 0 : (tensor<2xi64>) -> tensor<3x?xi64>
  func.return %0 : tensor<3x?xi64>
}""", np.array([4, 2], np.int64))


# ----------------------------------------------------------------------------- sort / top_k

SORT2 = """
func.func @main(%k: tensor<{n}xi32>, %v: tensor<{n}xi32>) -> (tensor<{n}xi32>, tensor<{n}xi32>) {{
  %0:2 = "stablehlo.sort"(%k, %v) ({{
    ^bb0(%a: tensor<i32>, %b: tensor<i32>, %c: tensor<i32>, %d: tensor<i32>):
      %p = stablehlo.compare {dir}, %a, %b, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
  }}) {{dimension = 0 : i64, is_stable = true}} : (tensor<{n}xi32>, tensor<{n}xi32>) -> (tensor<{n}xi32>, tensor<{n}xi32>)
  func.return %0#0, %0#1 : tensor<{n}xi32>, tensor<{n}xi32>
}}
"""


def test_sort_stable_by_hand():
    k = np.array([3, 1, 3, 2, 1], np.int32)
    v = np.array([0, 1, 2, 3, 4], np.int32)
    sk, sv = run(SORT2.format(n=5, dir="LT"), k, v)
    assert sk.tolist() == [1, 1, 2, 3, 3] and sv.tolist() == [1, 4, 3, 0, 2]
    sk, sv = run(SORT2.format(n=5, dir="GT"), k, v)
    assert sk.tolist() == [3, 3, 2, 1, 1] and sv.tolist() == [0, 2, 3, 1, 4]


@pytest.mark.parametrize("direction", ["LT", "GT"])
@pytest.mark.parametrize("n", [1, 2, 7, 64, 100])
def test_sort_merge_path_matches_fast_path(monkeypatch, direction, n):
    rng = np.random.default_rng(n)
    k = rng.integers(-4, 4, n).astype(np.int32)
    v = np.arange(n, dtype=np.int32)
    fast = run(SORT2.format(n=n, dir=direction), k, v)
    monkeypatch.setattr(sorting, "_key_plan", lambda op: None)
    slow = run(SORT2.format(n=n, dir=direction), k, v)
    for a, b in zip(fast, slow):
        np.testing.assert_array_equal(a, b)


def test_merge_sort_perm_lexicographic_two_keys():
    rng = np.random.default_rng(1)
    k1 = rng.integers(0, 3, (4, 37))
    k2 = rng.integers(0, 3, (4, 37))
    rows = np.arange(4)[:, None]

    def less(ia, ib):
        a1, b1 = k1[rows, ia], k1[rows, ib]
        return (a1 < b1) | ((a1 == b1) & (k2[rows, ia] < k2[rows, ib]))

    perm = sorting.merge_sort_perm(less, 4, 37)
    for r in range(4):
        np.testing.assert_array_equal(perm[r], np.lexsort((k2[r], k1[r])))


def test_total_order_key():
    x = np.array([np.nan, 1.0, -0.0, 0.0, -np.inf, -np.nan, np.inf, -1.0], np.float32)
    order = np.argsort(sorting.total_order_key(x), kind="stable")
    assert order.tolist() == [5, 4, 7, 2, 3, 1, 6, 0]


def test_top_k():
    vals, idx = run("""
func.func @main(%x: tensor<2x4xf32>) -> (tensor<2x2xf32>, tensor<2x2xi32>) {
  %0:2 = chlo.top_k(%x, k = 2) : tensor<2x4xf32> -> (tensor<2x2xf32>, tensor<2x2xi32>)
  func.return %0#0, %0#1 : tensor<2x2xf32>, tensor<2x2xi32>
}""", np.array([[1, 5, 5, 2], [-1, -3, 0, 0]], np.float32))
    assert vals.tolist() == [[5, 5], [0, 0]] and idx.tolist() == [[1, 2], [2, 3]]


# ----------------------------------------------------------------------------- composite


def test_composite_runs_decomposition():
    out = one("""
func.func private @swap_impl(%a: tensor<2xi32>) -> tensor<2xi32> {
  %0 = stablehlo.reverse %a, dims = [0] : tensor<2xi32>
  func.return %0 : tensor<2xi32>
}
func.func @main(%x: tensor<2xi32>) -> tensor<2xi32> {
  %0 = stablehlo.composite "my.swap" %x {decomposition = @swap_impl} : (tensor<2xi32>) -> tensor<2xi32>
  func.return %0 : tensor<2xi32>
}""", np.array([7, 8], np.int32))
    assert out.tolist() == [8, 7]


# ----------------------------------------------------------------------------- official tests

INTERPRET = ["broadcast_in_dim", "concatenate", "composite", "dynamic_broadcast_in_dim",
             "dynamic_iota", "dynamic_pad", "dynamic_reshape", "get_dimension_size", "iota",
             "pad", "reshape", "reverse", "slice", "sort", "transpose"]


@pytest.mark.parametrize("name", INTERPRET)
def test_interpret_suite(name):
    assert_interpret_file_passes(name)


def test_quantized_iota_quantizes_each_index():
    from stablehlo_conform import types as T
    from stablehlo_conform.kernels.shape import quantized_iota

    qt = T.QuantizedType(T.element_type("i8"), T.element_type("f32"), (0.5,), (3,))
    out = quantized_iota((2, 70), 1, qt)
    assert out.dtype == np.int8 and out.shape == (2, 70)
    assert out[0, :3].tolist() == [3, 5, 7]  # i / 0.5 + 3
    assert out[1, -1] == 127  # clamped to the storage range
