"""gather, scatter, dynamic_slice, dynamic_update_slice, dynamic_gather.

Hand-computed values (spec.md#gather, #scatter, #dynamic_slice,
#dynamic_update_slice), the scatter region path checked against the
``np.<ufunc>.at`` fast path on data with repeated indices, skipped
out-of-bounds windows, and the official interpreter tests when present.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from stablehlo_conform import frontend
from stablehlo_conform.engine import Engine
from stablehlo_conform.kernels import indexing

from kernel_util import SUITE, assert_interpret_file_passes, one, run


# ----------------------------------------------------------------------------- gather

ROWS = """
func.func @main(%t: tensor<5x3xf32>, %i: tensor<4x1xi32>) -> tensor<4x3xf32> {
  %0 = "stablehlo.gather"(%t, %i) {
    dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0],
                                          start_index_map = [0], index_vector_dim = 1>,
    slice_sizes = array<i64: 1, 3>
  } : (tensor<5x3xf32>, tensor<4x1xi32>) -> tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}"""


def test_gather_rows_with_clamping():
    t = np.arange(15, dtype=np.float32).reshape(5, 3)
    i = np.array([[4], [0], [9], [-2]], np.int32)  # 9 -> 4, -2 -> 0 (clamped)
    out = one(ROWS, t, i)
    assert out.tolist() == [[12, 13, 14], [0, 1, 2], [12, 13, 14], [0, 1, 2]]


def test_gather_windows_and_offset_dims_position():
    # 2-D windows of size 2x2 starting at (r, c); offset dims first in the result.
    x = np.arange(16, dtype=np.int64).reshape(4, 4)
    out = one("""
func.func @main(%x: tensor<4x4xi64>, %i: tensor<3x2xi64>) -> tensor<2x3x2xi64> {
  %0 = "stablehlo.gather"(%x, %i) {
    dimension_numbers = #stablehlo.gather<offset_dims = [0, 2], start_index_map = [0, 1],
                                          index_vector_dim = 1>,
    slice_sizes = array<i64: 2, 2>
  } : (tensor<4x4xi64>, tensor<3x2xi64>) -> tensor<2x3x2xi64>
  func.return %0 : tensor<2x3x2xi64>
}""", x, np.array([[0, 0], [1, 2], [3, 3]], np.int64))
    # window k is x[r:r+2, c:c+2] (clamped to start <= 2); result[a, k, b] = window_k[a, b]
    wins = [x[0:2, 0:2], x[1:3, 2:4], x[2:4, 2:4]]
    for k, w in enumerate(wins):
        np.testing.assert_array_equal(out[:, k, :], w)


def test_gather_batching_dims():
    x = np.arange(2 * 5, dtype=np.int32).reshape(2, 5)
    out = one("""
func.func @main(%x: tensor<2x5xi32>, %i: tensor<2x3xi32>) -> tensor<2x3xi32> {
  %0 = "stablehlo.gather"(%x, %i) {
    dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [1], operand_batching_dims = [0],
      start_indices_batching_dims = [0], start_index_map = [1], index_vector_dim = 2>,
    slice_sizes = array<i64: 1, 1>
  } : (tensor<2x5xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  func.return %0 : tensor<2x3xi32>
}""", x, np.array([[0, 4, 2], [1, 1, 3]], np.int32))
    assert out.tolist() == [[0, 4, 2], [6, 6, 8]]


def test_dynamic_gather_uses_runtime_slice_sizes():
    t = np.arange(15, dtype=np.float32).reshape(5, 3)
    out = one("""
func.func @main(%t: tensor<5x3xf32>, %i: tensor<2x1xi32>) -> tensor<2x2xf32> {
  %s = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  %0 = "stablehlo.dynamic_gather"(%t, %i, %s) {
    dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0],
                                          start_index_map = [0], index_vector_dim = 1>
  } : (tensor<5x3xf32>, tensor<2x1xi32>, tensor<2xi64>) -> tensor<2x2xf32>
  func.return %0 : tensor<2x2xf32>
}""", t, np.array([[1], [3]], np.int32))
    assert out.tolist() == [[3, 4], [9, 10]]


# ----------------------------------------------------------------------------- scatter


def scatter_text(body: str, dtype: str = "i32", n: int = 6, rows: int = 4, cols: int = 2) -> str:
    t = f"tensor<{dtype}>"
    return f"""
func.func @main(%x: tensor<{rows}x{cols}x{dtype}>, %i: tensor<{n}x1xi32>, %u: tensor<{n}x{cols}x{dtype}>)
    -> tensor<{rows}x{cols}x{dtype}> {{
  %0 = "stablehlo.scatter"(%x, %i, %u) ({{
    ^bb0(%a: {t}, %b: {t}):
      {body.format(t=t)}
  }}) {{
    scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0],
        scatter_dims_to_operand_dims = [0], index_vector_dim = 1>
  }} : (tensor<{rows}x{cols}x{dtype}>, tensor<{n}x1xi32>, tensor<{n}x{cols}x{dtype}>) -> tensor<{rows}x{cols}x{dtype}>
  func.return %0 : tensor<{rows}x{cols}x{dtype}>
}}"""


BODIES = {
    "add": "%r = stablehlo.add %a, %b : {t}\n      stablehlo.return %r : {t}",
    "multiply": "%r = stablehlo.multiply %b, %a : {t}\n      stablehlo.return %r : {t}",
    "maximum": "%r = stablehlo.maximum %a, %b : {t}\n      stablehlo.return %r : {t}",
    "minimum": "%r = stablehlo.minimum %a, %b : {t}\n      stablehlo.return %r : {t}",
    "replace": "stablehlo.return %b : {t}",
}


def test_scatter_add_by_hand_with_duplicates_and_oob():
    x = np.zeros((4, 2), np.int32)
    i = np.array([[1], [1], [3], [4], [-1], [0]], np.int32)  # 4 and -1 are out of bounds
    u = np.arange(12, dtype=np.int32).reshape(6, 2)
    out = one(scatter_text(BODIES["add"]), x, i, u)
    assert out.tolist() == [[10, 11], [2, 4], [0, 0], [4, 5]]
    assert not x.any()  # input untouched


def test_scatter_skips_whole_window_partly_out_of_bounds():
    # window of 2 rows starting at row 3 of a 4-row input: the whole window is skipped
    out = one("""
func.func @main(%x: tensor<4xi32>, %i: tensor<2x1xi32>, %u: tensor<2x2xi32>) -> tensor<4xi32> {
  %0 = "stablehlo.scatter"(%x, %i, %u) ({
    ^bb0(%a: tensor<i32>, %b: tensor<i32>):
      stablehlo.return %b : tensor<i32>
  }) {
    scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1],
        scatter_dims_to_operand_dims = [0], index_vector_dim = 1>
  } : (tensor<4xi32>, tensor<2x1xi32>, tensor<2x2xi32>) -> tensor<4xi32>
  func.return %0 : tensor<4xi32>
}""", np.zeros(4, np.int32), np.array([[3], [1]], np.int32), np.array([[7, 8], [5, 6]], np.int32))
    assert out.tolist() == [0, 5, 6, 0]


@pytest.mark.parametrize("name", sorted(BODIES))
@pytest.mark.parametrize("dtype", ["i32", "f32"])
def test_scatter_region_path_matches_fast_path(monkeypatch, name, dtype):
    rng = np.random.default_rng(7)
    n, rows = 200, 13
    np_dtype = np.int32 if dtype == "i32" else np.float32
    x = rng.integers(-5, 5, (rows, 2)).astype(np_dtype)
    i = rng.integers(-1, rows + 1, (n, 1)).astype(np.int32)  # many repeats, some out of bounds
    u = rng.integers(-3, 4, (n, 2)).astype(np_dtype)
    if name == "multiply":
        u = np.where(u == 0, 1, u % 3 - 1 + (u == 1)).astype(np_dtype)  # keep products small
    text = scatter_text(BODIES[name], dtype=dtype, n=n, rows=rows)
    (mod,) = frontend.load_text(text)
    op_name = "stablehlo." + name if name != "replace" else None

    def kernel_run():  # the kernel's own paths (a generated block runs the engine's fast path)
        eng = Engine(mod)
        eng.generate_blocks = False
        return eng.call("main", (x, i, u))[0]

    fast = kernel_run()
    seen = []
    real = indexing.scatter_body_kind

    def spy(op, n_inputs):
        seen.append(real(op, n_inputs))
        return None

    monkeypatch.setattr(indexing, "scatter_body_kind", spy)
    slow = kernel_run()
    assert seen == [op_name or "replace"]
    np.testing.assert_array_equal(fast, slow)


def test_scatter_general_region_and_variadic():
    # Two inputs, body keeps the pair with the larger key (an argmax-style scatter).
    x_key = np.array([0, 0, 0], np.int32)
    x_val = np.array([-1, -1, -1], np.int32)
    idx = np.array([[0], [2], [0], [2], [1]], np.int32)
    u_key = np.array([5, 1, 7, 3, -4], np.int32)
    u_val = np.array([10, 11, 12, 13, 14], np.int32)
    k, v = run("""
func.func @main(%xk: tensor<3xi32>, %xv: tensor<3xi32>, %i: tensor<5x1xi32>, %uk: tensor<5xi32>, %uv: tensor<5xi32>)
    -> (tensor<3xi32>, tensor<3xi32>) {
  %0:2 = "stablehlo.scatter"(%xk, %xv, %i, %uk, %uv) ({
    ^bb0(%ak: tensor<i32>, %av: tensor<i32>, %bk: tensor<i32>, %bv: tensor<i32>):
      %gt = stablehlo.compare GT, %bk, %ak, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %k = stablehlo.select %gt, %bk, %ak : tensor<i1>, tensor<i32>
      %v = stablehlo.select %gt, %bv, %av : tensor<i1>, tensor<i32>
      stablehlo.return %k, %v : tensor<i32>, tensor<i32>
  }) {
    scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0],
        scatter_dims_to_operand_dims = [0], index_vector_dim = 1>
  } : (tensor<3xi32>, tensor<3xi32>, tensor<5x1xi32>, tensor<5xi32>, tensor<5xi32>) -> (tensor<3xi32>, tensor<3xi32>)
  func.return %0#0, %0#1 : tensor<3xi32>, tensor<3xi32>
}""", x_key, x_val, idx, u_key, u_val)
    assert k.tolist() == [7, 0, 3] and v.tolist() == [12, -1, 13]


def test_conflict_free_rounds_keep_order():
    rounds = indexing.conflict_free_rounds(np.array([5, 2, 5, 5, 2, 9]))
    assert [r.tolist() for r in rounds] == [[1, 0, 5], [4, 2], [3]]


# ----------------------------------------------------------------------------- dynamic slices


def test_dynamic_slice_and_update_clamp():
    x = np.arange(9, dtype=np.int64).reshape(3, 3)
    s, u = run("""
func.func @main(%x: tensor<3x3xi64>, %r: tensor<i64>, %c: tensor<i64>) -> (tensor<2x2xi64>, tensor<3x3xi64>) {
  %0 = stablehlo.dynamic_slice %x, %r, %c, sizes = [2, 2] : (tensor<3x3xi64>, tensor<i64>, tensor<i64>) -> tensor<2x2xi64>
  %z = stablehlo.constant dense<[[-1, -2]]> : tensor<1x2xi64>
  %1 = stablehlo.dynamic_update_slice %x, %z, %r, %c : (tensor<3x3xi64>, tensor<1x2xi64>, tensor<i64>, tensor<i64>) -> tensor<3x3xi64>
  func.return %0, %1 : tensor<2x2xi64>, tensor<3x3xi64>
}""", x, np.array(5, np.int64), np.array(-3, np.int64))
    assert s.tolist() == [[3, 4], [6, 7]]  # starts clamped to (1, 0)
    assert u.tolist() == [[0, 1, 2], [3, 4, 5], [-1, -2, 8]]  # starts clamped to (2, 0)
    assert x[2, 0] == 6


# ----------------------------------------------------------------------------- official tests

INTERPRET = ["gather", "scatter", "dynamic_slice", "dynamic_update_slice", "dynamic_gather"]


@pytest.mark.parametrize("name", INTERPRET)
def test_interpret_suite(name):
    assert_interpret_file_passes(name)


# ----------------------------------------------------------------------------- shape-polymorphic programs

DYNAMIC = SUITE / "testdata" / "dynamic"
_DYN_PATTERN = ("dynamic_", "dynamlic_", "broadcast_", "concatenate", "iota", "pad", "collapse", "re0",
                "re2", "re3", "slice_in_dim", "squeeze", "take", "tile", "getitem", "index_in_dim",
                "vmap_gather", "vmap_scatter", "vmap_sort", "vmap_pad", "vmap_rev", "vmap_slice",
                "vmap_dynamic_slice", "scatter_add", "arange", "full_", "ones_", "eye_", "tri_",
                "repeat", "roll")


def _dynamic_files():
    if not DYNAMIC.is_dir():
        return []
    return sorted(p.name for p in DYNAMIC.glob("*.mlir") if p.name.startswith(_DYN_PATTERN))


@pytest.mark.parametrize("name", _dynamic_files() or ["<suite absent>"])
def test_shape_polymorphic_programs_run(name):
    """Each program takes its dimension sizes as leading i64 scalars; with
    every size set to 3 (and index inputs 0) the results must have the
    declared static dims."""
    if name == "<suite absent>":
        pytest.skip("stablehlo-suite not present")
    (mod,) = frontend.load_file(DYNAMIC / name)
    f = mod.funcs["main"]
    rng = np.random.default_rng(0)
    args = []
    for t in f.param_types:
        if t.shape == () and t.dtype == np.int64 and all(np.shape(a) == () for a in args):
            args.append(np.asarray(3, np.int64))
            continue
        shape = tuple(3 if s is None else s for s in t.shape)
        if t.dtype.kind == "b":
            args.append(rng.random(shape) < 0.5)
        elif t.dtype.kind in "iu":
            args.append(np.zeros(shape, t.dtype))  # in bounds for any index use
        else:
            args.append(rng.standard_normal(shape).astype(t.dtype))
    outs = Engine(mod).call("main", args)
    for out, ty in zip(outs, f.result_types):
        assert len(np.shape(out)) == len(ty.shape)
        assert all(d is None or d == s for d, s in zip(ty.shape, np.shape(out)))


@pytest.mark.parametrize("dtype,np_dtype", [("f32", np.float32), ("bf16", ml_dtypes.bfloat16)])
def test_scatter_min_max_bodies_order_negative_zero_below_positive_zero(dtype, np_dtype):
    # spec.md#minimum: IEEE-754 minimum, -0 < +0 (np.minimum.at treats them as equal)
    x = np.zeros((4, 2), np_dtype)                      # all +0
    i = np.array([[1], [2]], np.int32)
    u = np.array([[-0.0, 0.0], [-0.0, -0.0]], np_dtype)
    mn = one(scatter_text(BODIES["minimum"], dtype=dtype, n=2), x, i, u)
    assert np.signbit(mn.astype(np.float32)).tolist() == [[False, False], [True, False], [True, True],
                                                          [False, False]]
    mx = one(scatter_text(BODIES["maximum"], dtype=dtype, n=2), -x, i, -u)  # all -0, updates +0
    assert np.signbit(mx.astype(np.float32)).tolist() == [[True, True], [False, True], [False, False],
                                                          [True, True]]
