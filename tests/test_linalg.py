"""dot_general, convolution, fft, cholesky, triangular_solve, batch norm and
chlo.ragged_dot.

Hand-computed values and small direct references (spec.md#dot_general,
#convolution, #fft, #cholesky, #triangular_solve, #batch_norm_training,
#batch_norm_inference, #batch_norm_grad), and the official tests when
present.
"""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

from stablehlo_conform.kernels.linalg import dot_general_arrays

from kernel_util import SUITE, assert_interpret_file_passes, assert_suite_file_passes, one, run, ty


# ----------------------------------------------------------------------------- dot_general


def dot_text(ls, le, rs, re_, os_, oe, lb, rb, lc, rc):
    j = lambda v: ", ".join(map(str, v))  # noqa: E731
    return f"""
func.func @main(%a: {ty(ls, le)}, %b: {ty(rs, re_)}) -> {ty(os_, oe)} {{
  %r = stablehlo.dot_general %a, %b, batching_dims = [{j(lb)}] x [{j(rb)}],
         contracting_dims = [{j(lc)}] x [{j(rc)}] : ({ty(ls, le)}, {ty(rs, re_)}) -> {ty(os_, oe)}
  func.return %r : {ty(os_, oe)}
}}"""


def test_dot_general_batch_and_contracting_dims_match_einsum():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4, 2, 5)).astype(np.float32)  # contract dims 1, 3; batch 2
    b = rng.standard_normal((5, 2, 6, 4)).astype(np.float32)  # contract dims 3, 0; batch 1
    out = one(dot_text(a.shape, "f32", b.shape, "f32", (2, 3, 6), "f32", [2], [1], [1, 3], [3, 0]), a, b)
    ref = np.einsum("ikbl,lbjk->bij", a.astype(np.float64), b.astype(np.float64))
    assert out.dtype == np.float32 and out.shape == (2, 3, 6)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_dot_general_int8_to_int32_is_exact():
    a = np.full((2, 300), 127, np.int8)
    b = np.full((300, 3), -128, np.int8)
    out = one(dot_text((2, 300), "i8", (300, 3), "i8", (2, 3), "i32", [], [], [1], [0]), a, b)
    assert out.dtype == np.int32 and (out == 127 * -128 * 300).all()


def test_dot_general_int64_wraps():
    a = np.array([[2**62, 2**62]], np.int64)
    b = np.array([[2], [2]], np.int64)
    out = dot_general_arrays(a, b, (), (), (1,), (0,), np.dtype(np.int64))
    # 2**63 + 2**63 = 2**64 wraps to 0
    assert out.tolist() == [[0]]


def test_dot_general_bf16_rounds_once():
    # 1 + 2**-8 + 2**-8: each partial sum would round back to 1 in bf16
    # (a tie, to even), the exact sum 1 + 2**-7 is representable
    a = np.array([1.0, 2**-8, 2**-8], dtype=ml_dtypes.bfloat16)
    b = np.ones(3, dtype=ml_dtypes.bfloat16)
    out = one(dot_text((3,), "bf16", (3,), "bf16", (), "bf16", [], [], [0], [0]), a, b)
    assert out.dtype == ml_dtypes.bfloat16 and float(out) == 1 + 2**-7


def test_dot_general_bool():
    a = np.array([[True, False], [False, False]])
    b = np.array([[True, True], [True, False]])
    out = dot_general_arrays(a, b, (), (), (1,), (0,), np.dtype(np.bool_))
    assert out.tolist() == [[True, True], [False, False]]


# ----------------------------------------------------------------------------- convolution


def conv_reference(x, w, strides, pad, lhs_dil, rhs_dil, reversal, fgc, bgc):
    """Direct spec.md#convolution on [N, C, S...] x [O, I, K...] -> [N, O, P...]."""
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    ns = x.ndim - 2
    for i in range(ns):
        if reversal[i]:
            w = np.flip(w, axis=2 + i)
    # lhs dilation then padding
    dshape = [(s - 1) * d + 1 for s, d in zip(x.shape[2:], lhs_dil)]
    xd = np.zeros(x.shape[:2] + tuple(dshape))
    xd[(slice(None), slice(None)) + tuple(slice(None, None, d) for d in lhs_dil)] = x
    for i in range(ns):
        lo, hi = pad[i]
        ax = 2 + i
        if lo < 0:
            xd = np.take(xd, range(-lo, xd.shape[ax]), axis=ax)
        if hi < 0:
            xd = np.take(xd, range(0, xd.shape[ax] + hi), axis=ax)
        widths = [(0, 0)] * xd.ndim
        widths[ax] = (max(lo, 0), max(hi, 0))
        xd = np.pad(xd, widths)
    N, C = xd.shape[:2]
    O = w.shape[0]
    K = w.shape[2:]
    ext = [(k - 1) * d + 1 for k, d in zip(K, rhs_dil)]
    P = [(s - e) // st + 1 for s, e, st in zip(xd.shape[2:], ext, strides)]
    Nb, Ob = N // bgc, O // bgc
    Cg, Og = C // fgc, O // fgc
    out = np.zeros((Nb, O) + tuple(P))
    for n, o in itertools.product(range(Nb), range(O)):
        bg = o // Ob
        fg = o // Og
        nn = bg * Nb + n
        for p in itertools.product(*[range(v) for v in P]):
            acc = 0.0
            for k in itertools.product(*[range(v) for v in K]):
                idx = tuple(pi * st + ki * d for pi, st, ki, d in zip(p, strides, k, rhs_dil))
                for ci in range(w.shape[1]):
                    c = fg * Cg + ci
                    acc += xd[(nn, c) + idx] * w[(o, ci) + k]
            out[(n, o) + p] = acc
    return out


def conv_text(ls, rs, os_, el, oel, dn, window, fgc=1, bgc=1):
    return f"""
func.func @main(%a: {ty(ls, el)}, %b: {ty(rs, el)}) -> {ty(os_, oel)} {{
  %r = stablehlo.convolution(%a, %b) dim_numbers = {dn}, window = {{{window}}}
       {{batch_group_count = {bgc} : i64, feature_group_count = {fgc} : i64}}
       : ({ty(ls, el)}, {ty(rs, el)}) -> {ty(os_, oel)}
  func.return %r : {ty(os_, oel)}
}}"""


CONV_CASES = [
    # (x [N,C,H,W], w [O,I,KH,KW], strides, pad, lhs_dil, rhs_dil, reversal, fgc, bgc)
    ((2, 3, 7, 6), (4, 3, 3, 2), (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1), (False, False), 1, 1),
    ((1, 2, 6, 5), (3, 2, 2, 3), (2, 1), ((1, 2), (2, -1)), (1, 2), (2, 1), (True, False), 1, 1),
    ((2, 4, 5, 5), (6, 2, 3, 3), (1, 2), ((1, 1), (1, 1)), (1, 1), (1, 1), (False, True), 2, 1),
    ((4, 2, 5, 4), (6, 2, 2, 2), (1, 1), ((0, 1), (0, 0)), (2, 1), (1, 1), (False, False), 1, 2),
]


@pytest.mark.parametrize("case", range(len(CONV_CASES)))
def test_convolution_matches_direct_reference_nchw_and_nhwc(case):
    xs, ws, strides, pad, ld, rd, rev, fgc, bgc = CONV_CASES[case]
    rng = np.random.default_rng(case)
    x = rng.integers(-4, 5, xs).astype(np.float32)
    w = rng.integers(-4, 5, ws).astype(np.float32)
    ref = conv_reference(x, w, strides, pad, ld, rd, rev, fgc, bgc)
    j = lambda v: ", ".join(map(str, v))  # noqa: E731
    window = (f"stride = [{j(strides)}], pad = [[{j(pad[0])}], [{j(pad[1])}]], "
              f"lhs_dilate = [{j(ld)}], rhs_dilate = [{j(rd)}], "
              f"reverse = [{', '.join('true' if r else 'false' for r in rev)}]")
    out = one(conv_text(xs, ws, ref.shape, "f32", "f32", "[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]",
                        window, fgc, bgc), x, w)
    np.testing.assert_array_equal(out, ref.astype(np.float32))
    # same convolution with channels-last layouts
    xh = x.transpose(0, 2, 3, 1)
    wh = w.transpose(2, 3, 1, 0)
    refh = ref.transpose(0, 2, 3, 1)
    out = one(conv_text(xh.shape, wh.shape, refh.shape, "f32", "f32",
                        "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]", window, fgc, bgc), xh, wh)
    np.testing.assert_array_equal(out, refh.astype(np.float32))


BLOCK_CASES = [
    # (x shape, w shape, dim_numbers, window, element): each large enough to
    # be split into several blocks of at least CONV_BLOCK_MIN_MNK
    ((2, 40, 20, 32), (3, 3, 32, 64), "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]",
     "stride = [1, 1], pad = [[1, 1], [1, 1]]", "f32"),
    ((4, 24, 41, 31), (40, 24, 3, 2), "[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]",
     "stride = [2, 1], pad = [[1, 0], [0, 1]], rhs_dilate = [1, 2]", "f32"),
    ((5, 400, 16), (5, 16, 96), "[b, 0, f]x[0, i, o]->[b, 0, f]", "stride = [1], pad = [[2, 2]]", "f32"),
    ((4, 40, 30, 24), (2, 2, 24, 48), "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]",
     "stride = [1, 1], lhs_dilate = [2, 1]", "f64"),
]


def _blas_rows_independent(dt, blocks, n: int) -> bool:
    """Whether this BLAS gives GEMM rows the same values when they are split
    into calls of ``blocks`` (a list of ``(rows, k)``) with ``n`` columns as
    with one call (true of OpenBLAS's SkylakeX kernels for large calls; its
    Haswell/Zen kernels round depending on the call shape)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((sum(r for r, _ in blocks), blocks[0][1])).astype(dt)
    b = np.ascontiguousarray(rng.standard_normal((n, blocks[0][1])).astype(dt)).T
    cuts = np.cumsum([r for r, _ in blocks])[:-1]
    parts = [np.dot(p, b) for p in np.split(a, cuts)]
    return np.array_equal(np.concatenate(parts), np.dot(a, b))


@pytest.mark.parametrize("case", range(len(BLOCK_CASES)))
def test_convolution_row_blocks_give_the_single_gemm_values(case, monkeypatch):
    """f32/f64 convolutions multiply the im2col rows block by block: the
    values are bit-identical to one GEMM over all rows wherever the BLAS
    computes a row the same way whatever the call's row count."""
    from stablehlo_conform.kernels import linalg

    xs, ws, dn, window, el = BLOCK_CASES[case]
    rng = np.random.default_rng(10 + case)
    dt = np.float32 if el == "f32" else np.float64
    x = rng.standard_normal(xs).astype(dt)
    w = rng.standard_normal(ws).astype(dt)
    text = conv_text(xs, ws, (0,), el, el, dn, window)
    # result shape left dynamic: the kernel's computed shape is returned
    text = text.replace(ty((0,), el), "tensor<" + "?x" * len(xs) + el + ">")
    calls = []
    real_dot = np.dot

    def counting_dot(*a, **k):
        calls.append(a[0].shape)
        return real_dot(*a, **k)

    monkeypatch.setattr(np, "dot", counting_dot)
    monkeypatch.setattr(linalg, "CONV_BLOCK_BYTES", 1 << 62)
    one(text, x, w)  # the first run of a block size tries the kernel's layout (_split_gemm.same_in_c_order)
    calls.clear()
    single = one(text, x, w)
    assert len(calls) == 1
    n_out = w.shape[-1 if dn.startswith("[b, 0") else 0]
    for nbytes in (1, 100_000, 3 << 20):
        monkeypatch.setattr(linalg, "CONV_BLOCK_BYTES", nbytes)
        one(text, x, w)
        calls.clear()
        out = one(text, x, w)
        blocks = list(calls)
        if _blas_rows_independent(dt, blocks, n_out):
            np.testing.assert_array_equal(out, single)
        else:
            np.testing.assert_allclose(out, single, rtol=1e-5, atol=1e-4)
        assert out.dtype == dt and out.flags.c_contiguous
        if nbytes == 1:
            assert len(blocks) > 1
        # no block below the minimum size (the BLAS's small-matrix kernels)
        assert all(r * n_out * c >= linalg.CONV_BLOCK_MIN_MNK for r, c in blocks)
    # the values are the convolution's: the same program in f64
    t64 = text.replace(el, "f64")
    np.testing.assert_allclose(single, one(t64, x.astype(np.float64), w.astype(np.float64)),
                               rtol=1e-4, atol=1e-4)


def test_convolution_int8_to_int32():
    x = np.full((1, 1, 4, 4), 100, np.int8)
    w = np.full((1, 1, 3, 3), 100, np.int8)
    out = one(conv_text((1, 1, 4, 4), (1, 1, 3, 3), (1, 1, 2, 2), "i8", "i32",
                        "[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]", "stride = [1, 1]"), x, w)
    assert out.dtype == np.int32 and (out == 90000).all()


# ----------------------------------------------------------------------------- fft


def fft_text(kind, ins, iel, outs, oel, length):
    return f"""
func.func @main(%a: {ty(ins, iel)}) -> {ty(outs, oel)} {{
  %r = stablehlo.fft %a, type = {kind}, length = [{", ".join(map(str, length))}]
       : ({ty(ins, iel)}) -> {ty(outs, oel)}
  func.return %r : {ty(outs, oel)}
}}"""


def test_rfft_f32_gives_complex64_and_irfft_inverts():
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    spec = one(fft_text("RFFT", (2, 6), "f32", (2, 4), "complex<f32>", [6]), x)
    assert spec.dtype == np.complex64
    np.testing.assert_allclose(spec[0, 0], 15.0)
    np.testing.assert_allclose(spec, np.fft.rfft(x.astype(np.float64)), rtol=1e-6, atol=1e-5)
    back = one(fft_text("IRFFT", (2, 4), "complex<f32>", (2, 6), "f32", [6]), spec)
    assert back.dtype == np.float32
    np.testing.assert_allclose(back, x, atol=1e-5)


def test_fft_2d_and_ifft():
    x = (np.arange(6) + 1j * np.arange(6)[::-1]).reshape(2, 3).astype(np.complex128)
    f = one(fft_text("FFT", (2, 3), "complex<f64>", (2, 3), "complex<f64>", [2, 3]), x)
    np.testing.assert_allclose(f, np.fft.fft2(x))
    b = one(fft_text("IFFT", (2, 3), "complex<f64>", (2, 3), "complex<f64>", [2, 3]), f)
    np.testing.assert_allclose(b, x, atol=1e-12)


# ----------------------------------------------------------------------------- cholesky / triangular_solve

CHOL = """
func.func @main(%a: tensor<2x3x3xf64>) -> tensor<2x3x3xf64> {
  %r = stablehlo.cholesky %a, lower = LOWER : tensor<2x3x3xf64>
  func.return %r : tensor<2x3x3xf64>
}"""


@pytest.mark.parametrize("lower", [True, False])
def test_cholesky_reads_only_named_triangle(lower):
    L = np.array([[2.0, 0, 0], [1, 3, 0], [-1, 2, 1]])
    spd = L @ L.T
    a = np.stack([spd, 4 * spd])
    junk = np.triu(np.full((3, 3), 99.0), 1)
    a = a + (junk if lower else junk.T)
    out = one(CHOL.replace("LOWER", "true" if lower else "false"), a)
    expect = np.stack([L, 2 * L])
    np.testing.assert_allclose(out, expect if lower else expect.transpose(0, 2, 1), atol=1e-12)


def tri_text(a_shape, b_shape, el, left, lower, unit, trans):
    b = lambda v: "true" if v else "false"  # noqa: E731
    return f"""
func.func @main(%a: {ty(a_shape, el)}, %b: {ty(b_shape, el)}) -> {ty(b_shape, el)} {{
  %r = "stablehlo.triangular_solve"(%a, %b) {{left_side = {b(left)}, lower = {b(lower)},
        unit_diagonal = {b(unit)}, transpose_a = #stablehlo<transpose {trans}>}}
        : ({ty(a_shape, el)}, {ty(b_shape, el)}) -> {ty(b_shape, el)}
  func.return %r : {ty(b_shape, el)}
}}"""


@pytest.mark.parametrize("left,lower,unit,trans", list(itertools.product(
    [True, False], [True, False], [True, False], ["NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"])))
def test_triangular_solve_all_variants_complex_batched(left, lower, unit, trans):
    rng = np.random.default_rng(7)
    n, m = 4, 3
    a = (rng.standard_normal((2, n, n)) + 1j * rng.standard_normal((2, n, n))) + 4 * np.eye(n)
    bshape = (2, n, m) if left else (2, m, n)
    b = rng.standard_normal(bshape) + 1j * rng.standard_normal(bshape)
    x = one(tri_text(a.shape, bshape, "complex<f64>", left, lower, unit, trans), a, b)
    t = np.tril(a) if lower else np.triu(a)  # the other triangle is never read
    if unit:
        t = t - np.einsum("...ii->...i", t)[..., None] * np.eye(n) + np.eye(n)
    op = {"NO_TRANSPOSE": t, "TRANSPOSE": t.transpose(0, 2, 1), "ADJOINT": t.conj().transpose(0, 2, 1)}[trans]
    np.testing.assert_allclose(op @ x if left else x @ op, b, atol=1e-10)


# ----------------------------------------------------------------------------- batch norm

BN_TRAIN = """
func.func @main(%x: tensor<2x2x2xf32>, %s: tensor<2xf32>, %o: tensor<2xf32>)
    -> (tensor<2x2x2xf32>, tensor<2xf32>, tensor<2xf32>) {
  %r:3 = "stablehlo.batch_norm_training"(%x, %s, %o) {epsilon = 0.0 : f32, feature_index = 2 : i64}
      : (tensor<2x2x2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2x2x2xf32>, tensor<2xf32>, tensor<2xf32>)
  func.return %r#0, %r#1, %r#2 : tensor<2x2x2xf32>, tensor<2xf32>, tensor<2xf32>
}"""


def test_batch_norm_training_spec_example():
    x = np.array([[[1, 2], [3, 4]], [[3, 4], [1, 2]]], np.float32)
    out, mean, var = run(BN_TRAIN, x, np.ones(2, np.float32), np.ones(2, np.float32))
    assert mean.tolist() == [2.0, 3.0] and var.tolist() == [1.0, 1.0]
    assert out.tolist() == [[[0, 0], [2, 2]], [[2, 2], [0, 0]]]


BN_INF = """
func.func @main(%x: tensor<2x2x2xf32>, %s: tensor<2xf32>, %o: tensor<2xf32>, %m: tensor<2xf32>,
                %v: tensor<2xf32>) -> tensor<2x2x2xf32> {
  %r = "stablehlo.batch_norm_inference"(%x, %s, %o, %m, %v) {epsilon = 0.0 : f32, feature_index = 2 : i64}
      : (tensor<2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2x2x2xf32>
  func.return %r : tensor<2x2x2xf32>
}"""


def test_batch_norm_inference_spec_example():
    x = np.array([[[1, 2], [3, 4]], [[3, 4], [1, 2]]], np.float32)
    one_ = np.ones(2, np.float32)
    out = one(BN_INF, x, one_, one_, np.array([2, 3], np.float32), one_)
    assert out.tolist() == [[[0, 0], [2, 2]], [[2, 2], [0, 0]]]


BN_GRAD = """
func.func @main(%x: tensor<2x2x2xf32>, %s: tensor<2xf32>, %m: tensor<2xf32>, %v: tensor<2xf32>,
                %g: tensor<2x2x2xf32>) -> (tensor<2x2x2xf32>, tensor<2xf32>, tensor<2xf32>) {
  %r:3 = "stablehlo.batch_norm_grad"(%x, %s, %m, %v, %g) {epsilon = 0.0 : f32, feature_index = 2 : i64}
      : (tensor<2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2x2x2xf32>)
        -> (tensor<2x2x2xf32>, tensor<2xf32>, tensor<2xf32>)
  func.return %r#0, %r#1, %r#2 : tensor<2x2x2xf32>, tensor<2xf32>, tensor<2xf32>
}"""


def test_batch_norm_grad_spec_example():
    x = np.array([[[1, 2], [3, 4]], [[3, 4], [1, 2]]], np.float32)
    g = np.full((2, 2, 2), 0.1, np.float32)
    gx, gs, go = run(BN_GRAD, x, np.ones(2, np.float32), np.array([2, 3], np.float32),
                     np.ones(2, np.float32), g)
    np.testing.assert_allclose(gx, np.zeros((2, 2, 2)), atol=1e-7)
    np.testing.assert_allclose(gs, [0.0, 0.0], atol=1e-7)
    np.testing.assert_allclose(go, [0.4, 0.4], rtol=1e-6)


# ----------------------------------------------------------------------------- chlo.ragged_dot

RAGGED = """
func.func @main(%a: tensor<5x2xf32>, %b: tensor<2x2x3xf32>, %g: tensor<2xi64>) -> tensor<5x3xf32> {
  %r = "chlo.ragged_dot"(%a, %b, %g) {
    ragged_dot_dimension_numbers = #chlo.ragged_dot<
      lhs_batching_dimensions = [], rhs_batching_dimensions = [],
      lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1],
      lhs_ragged_dimensions = [0], rhs_group_dimensions = [0]>,
    precision_config = [#chlo<precision DEFAULT>, #chlo<precision DEFAULT>]
  } : (tensor<5x2xf32>, tensor<2x2x3xf32>, tensor<2xi64>) -> tensor<5x3xf32>
  func.return %r : tensor<5x3xf32>
}"""


def test_ragged_dot_groups_rows_and_zeroes_the_rest():
    a = np.arange(10, dtype=np.float32).reshape(5, 2)
    b = np.stack([np.ones((2, 3)), 2 * np.ones((2, 3))]).astype(np.float32)
    out = one(RAGGED, a, b, np.array([1, 3], np.int64))
    row_sums = a.sum(axis=1)
    assert out[:, 0].tolist() == [row_sums[0], 2 * row_sums[1], 2 * row_sums[2], 2 * row_sums[3], 0.0]


# ----------------------------------------------------------------------------- official tests




@pytest.mark.parametrize("name", ["dot_general", "convolution", "dynamic_conv", "fft", "triangular_solve",
                                  "chlo/ragged_dot"])
def test_interpret_suite(name):
    assert_interpret_file_passes(name)


@pytest.mark.parametrize("name", ["dot_general_bfloat16_4_3_complex64_3_6", "dot_general_int8_4_3_int32_3_6",
                                  "conv_general_dilated_float32_2_3_9_10_float32_3_3_4_5_t2",
                                  "conv_general_dilated_float32_1_3_2_2_float32_64_3_7_7",
                                  "fft_float32_14_15_0_17",
                                  "triangular_solve_float16_4_4_float16_4_1"])
def test_testdata(name):
    assert_suite_file_passes(SUITE / "testdata" / f"{name}.mlir")
