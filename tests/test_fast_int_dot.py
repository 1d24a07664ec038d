"""Integer products through float BLAS (``linalg._int_matmul``: one f32 product, f32 products of
contraction chunks added in int64, one f64 product, chosen from the operand types' bounds),
against the exact products computed on Python integers and wrapped into the result type, bit
for bit: 8-bit operands at their extremes (every partial sum at the f32 bound) with
contractions just below, at and past each chunk length, mixed signed/unsigned and wider
types, batched and through ``convolution``; and the tiled copy of a convolution's kernel matrix
(``linalg.c_order_copy``) against NumPy's own.
"""

from __future__ import annotations

import numpy as np
import pytest

from stablehlo_conform.kernels import linalg


def _exact(a, b, out_dtype):
    """``a @ b`` on Python integers, wrapped modulo 2**bits into ``out_dtype``."""
    r = np.matmul(a.astype(object), b.astype(object))
    bits = np.dtype(out_dtype).itemsize * 8
    wrapped = [int(v) % 2 ** bits for v in np.ravel(r)]
    u = np.array(wrapped, dtype=np.uint64).astype(np.dtype(f"u{bits // 8}"))
    return u.view(out_dtype).reshape(r.shape)


def _operand(dt, shape, rng, extreme):
    info = np.iinfo(dt)
    if extreme:  # the type's extremes: the largest products, of both signs
        return rng.choice(np.array([info.min, info.max], dtype=dt), shape)
    return rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)


def _check(a, b, out_dtype):
    got = linalg.dot_general_arrays(a, b, (), (), (a.ndim - 1,), (0,), out_dtype)
    want = _exact(a, b, out_dtype)
    assert got.dtype == np.dtype(out_dtype) and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("k", [1, 1023, 1024, 1025, 2046, 2047, 3072, 5000])
@pytest.mark.parametrize("dts", [(np.int8, np.int8), (np.uint8, np.int8), (np.uint8, np.uint8)])
def test_8_bit_products_in_f32_chunks_are_exact(k, dts):
    rng = np.random.default_rng(k)
    for extreme in (True, False):
        a = _operand(dts[0], (1, 3, k), rng, extreme)
        b = _operand(dts[1], (k, 4), rng, extreme)
        a[0, 0] = np.iinfo(dts[0]).min or np.iinfo(dts[0]).max  # one row and column of equal extremes:
        b[:, 0] = np.iinfo(dts[1]).min or np.iinfo(dts[1]).max  # the largest sum the types allow
        for out in (np.int32, np.int64, np.int16, np.uint32, np.int8):
            _check(a, b, out)


@pytest.mark.parametrize("dts", [(np.int16, np.int8), (np.int16, np.int16), (np.uint16, np.int16),
                                 (np.int32, np.int8), (np.int32, np.int32), (np.int64, np.int8),
                                 (np.uint32, np.uint32), (np.uint64, np.int8), (np.int64, np.int64)])
@pytest.mark.parametrize("k", [3, 600])
def test_wider_products_take_f64_or_the_values_bound_and_wrap(dts, k):
    rng = np.random.default_rng(k + len(dts))
    for extreme in (True, False):
        a = _operand(dts[0], (4, k), rng, extreme)
        b = _operand(dts[1], (k, 5), rng, extreme)
        for out in (np.int32, np.int64, np.uint64, np.int8):
            _check(a, b, out)
    small = (rng.integers(-3, 4, (4, k)).astype(dts[0]) if np.iinfo(dts[0]).min else
             rng.integers(0, 4, (4, k)).astype(dts[0]))
    _check(small, rng.integers(0, 4, (k, 5)).astype(dts[1]), np.int32)  # small values: f64 by the data


def test_batched_products_and_chunks_agree_with_one_product():
    rng = np.random.default_rng(3)
    a = _operand(np.int8, (3, 2, 2500), rng, False)
    b = _operand(np.int8, (3, 2500, 6), rng, False)
    got = linalg.dot_general_arrays(a, b, (0,), (0,), (2,), (1,), np.int32)
    want = np.stack([_exact(a[i], b[i], np.int32) for i in range(3)])
    assert got.tobytes() == want.tobytes()
    parts = linalg._f32_chunks(a.astype(np.float32), b.astype(np.float32), 3)
    assert parts.dtype == np.int64 and np.array_equal(parts, np.matmul(a.astype(np.int64), b.astype(np.int64)))


class _Dn:
    input_batch_dimension, input_feature_dimension, input_spatial_dimensions = 0, 3, (1, 2)
    kernel_input_feature_dimension, kernel_output_feature_dimension, kernel_spatial_dimensions = 2, 3, (0, 1)
    output_batch_dimension, output_feature_dimension, output_spatial_dimensions = 0, 3, (1, 2)


def test_integer_convolution_with_a_long_window_is_exact():
    # 3x3 window of 256 features: 2304 terms of 8-bit extremes, in f32 chunks
    rng = np.random.default_rng(5)
    x = _operand(np.int8, (1, 4, 4, 256), rng, True)
    w = _operand(np.int8, (3, 3, 256, 2), rng, True)
    got = linalg.convolution_arrays(x, w, strides=None, pad=None, lhs_dil=None, rhs_dil=None, reversal=None,
                                    dn=_Dn, fgc=1, bgc=1, out_dtype=np.int32)
    v = np.lib.stride_tricks.sliding_window_view(x[0], (3, 3), axis=(0, 1))  # 2, 2, C, 3, 3
    cols = np.moveaxis(v, 2, -1).reshape(4, -1)  # positions, (kh, kw, C)
    want = _exact(cols, w.reshape(-1, 2), np.int32).reshape(1, 2, 2, 2)
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("shape", [(512, 4608), (2048, 512), (64, 576), (513, 1000), (7, 70000), (3, 5)])
def test_tiled_copy_of_a_transposed_kernel_is_the_plain_copy(shape):
    # the convolution's (O, K*C) kernel matrix, a transposed view of HWIO: its C-order copy
    # (what the blocked GEMM multiplies by) is the same array whatever way it is copied
    rng = np.random.default_rng(shape[0])
    w = rng.standard_normal(shape[::-1]).astype(np.float32)
    views = [w.T, w[::-1].T, w[:, ::-1].T, np.asarray(w.T, order="F")]
    for x in views + [w.T.astype(np.float64), np.ascontiguousarray(w.T)]:
        got = linalg.c_order_copy(x)
        want = np.ascontiguousarray(x)
        assert got.flags.c_contiguous and got.dtype == want.dtype and got.tobytes() == want.tobytes()
