"""Products on several threads (``kernels/_parallel.py``) give the single-threaded kernel's
bits: a convolution's im2col block GEMMs taken by the threads as they are free
(``linalg._gemm_blocks``), a grouped (depthwise) convolution's gather and stacked product in
slices of groups (``linalg._grouped_gemms``; its gather one kernel offset at a time,
``linalg._gather_by_offset``), and a batched ``dot_general`` in slices of batch entries
(``linalg._batched_matmul``), on the zoo's shapes and types (unet_small, resnet50,
mobilenet_v1, efficientnet_b0, vit_b16, mmdit_small, bert_base_bf16, llama_bf16), with IEEE
special values in the operands. Compared as bit patterns, never as values.

The oracle is the kernel run on one thread (``_parallel.set_threads(1)``), which is the code
before threads (one worker takes every block in order through one buffer; the batched and
grouped products are then the whole stack's ``np.matmul``), and for the grouped convolution
also the formula the kernel used before (``matmul_exact`` of the gathered stack).
"""

from __future__ import annotations

from types import SimpleNamespace

import ml_dtypes
import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

from stablehlo_conform.kernels import _parallel, linalg
from stablehlo_conform.kernels._blas_threads import one_blas_thread

BF16 = np.dtype(ml_dtypes.bfloat16)
NHWC = SimpleNamespace(input_batch_dimension=0, input_feature_dimension=3, input_spatial_dimensions=(1, 2),
                       kernel_input_feature_dimension=2, kernel_output_feature_dimension=3,
                       kernel_spatial_dimensions=(0, 1), output_batch_dimension=0,
                       output_feature_dimension=3, output_spatial_dimensions=(1, 2))


@pytest.fixture
def threads():
    """Set the number of threads for the test; restored afterwards."""
    before = _parallel.threads()
    yield _parallel.set_threads
    _parallel.set_threads(before)


def _bits(x: np.ndarray) -> bytes:
    x = np.ascontiguousarray(x)
    return x.dtype.str.encode() + repr(x.shape).encode() + x.view(np.uint8).tobytes()


def _specials(x: np.ndarray, rng, count: int = 64) -> np.ndarray:
    """``x`` with IEEE specials (NaN, +-inf, +-0, subnormals, extremes) at random places."""
    x = x.copy()
    info = ml_dtypes.finfo(x.dtype)
    with np.errstate(over="ignore"):
        vals = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, info.smallest_subnormal,
                         -info.smallest_subnormal, info.max, -info.max, info.tiny], dtype=x.dtype)
    flat = x.reshape(-1)
    flat[rng.integers(0, flat.size, count)] = rng.choice(vals, count)
    return x


def _conv(x, w, threads, n, strides=(1, 1), pad=((1, 1), (1, 1)), fgc=1, rhs_dil=None, lhs_dil=None):
    threads(n)
    with one_blas_thread(), np.errstate(all="ignore"):
        return linalg.convolution_arrays(x, w, strides=strides, pad=pad, lhs_dil=lhs_dil, rhs_dil=rhs_dil,
                                         reversal=None, dn=NHWC, fgc=fgc, bgc=1, out_dtype=x.dtype)


def _blocks(monkeypatch, fn) -> list[int]:
    """The block sizes (rows) the convolution ``fn()`` multiplies, in the order taken."""
    sizes, real = [], linalg._taker

    def taker(items):
        sizes.extend(k for _, _, k in items)
        return real(items)
    monkeypatch.setattr(linalg, "_taker", taker)
    fn()
    monkeypatch.setattr(linalg, "_taker", real)
    return sizes


# (x NHWC, w HWIO, strides, padding, blocks): shapes of unet_small and resnet50 with several
# blocks, and one block (a single GEMM: the threads have nothing to share)
BLOCKED = [
    ((1, 64, 64, 64), (3, 3, 64, 64), (1, 1), ((1, 1), (1, 1)), 3),      # unet_small
    ((1, 64, 64, 128), (3, 3, 128, 128), (1, 1), ((1, 1), (1, 1)), 6),   # unet_small
    ((1, 32, 32, 384), (3, 3, 384, 128), (1, 1), ((1, 1), (1, 1)), 4),   # unet_small
    ((1, 56, 56, 64), (3, 3, 64, 64), (1, 1), ((1, 1), (1, 1)), 3),      # resnet50
    ((1, 230, 230, 3), (7, 7, 3, 64), (2, 2), ((0, 0), (0, 0)), 3),      # resnet50's stem
    ((3, 80, 40, 32), (3, 3, 32, 64), (1, 1), ((1, 1), (1, 1)), 6),      # batch 3: 2 blocks an image
    ((1, 7, 7, 512), (3, 3, 512, 512), (1, 1), ((1, 1), (1, 1)), 1),     # resnet50
]


@pytest.mark.parametrize("case", BLOCKED, ids=lambda c: "x".join(map(str, c[0] + c[1][-1:])))
def test_threaded_convolution_blocks_give_the_single_thread_bits(case, threads, monkeypatch):
    xs, ws, strides, pad, blocks = case
    rng = np.random.default_rng(sum(xs) + sum(ws))
    x = _specials(rng.standard_normal(xs).astype(np.float32), rng)
    w = rng.standard_normal(ws).astype(np.float32)
    one = _conv(x, w, threads, 1, strides, pad)
    sizes = _blocks(monkeypatch, lambda: _conv(x, w, threads, 2, strides, pad))
    assert len(sizes) == blocks
    with one_blas_thread(), np.errstate(all="ignore"):
        assert _bits(_blocks_before(x, w, strides, pad, sizes)) == _bits(one)
    for n in (2, 3):
        assert _bits(_conv(x, w, threads, n, strides, pad)) == _bits(one)


def _blocks_before(x, w, strides, pad, sizes):
    """The convolution as the kernel computed it before threads: the im2col matrix multiplied
    in row blocks of ``sizes`` rows, one ``np.dot`` of a C-ordered block by the kernel matrix in
    Fortran order each, in order."""
    xp = np.pad(x, ((0, 0),) + tuple(pad) + ((0, 0),))
    v = sliding_window_view(xp, w.shape[:2], axis=(1, 2))[:, ::strides[0], ::strides[1]]
    v = np.moveaxis(v, 3, -1)  # N, P1, P2, KH, KW, C
    rows = np.ascontiguousarray(v).reshape(-1, w.shape[0] * w.shape[1] * w.shape[2])
    wt = np.asfortranarray(w.reshape(-1, w.shape[-1]))
    cuts = np.cumsum(sizes)[:-1]
    return np.concatenate([np.dot(np.ascontiguousarray(r), wt) for r in np.split(rows, cuts)]).reshape(
        v.shape[:3] + (w.shape[-1],))


def test_threaded_f64_convolution_with_dilations_gives_the_single_thread_bits(threads, monkeypatch):
    monkeypatch.setattr(linalg, "CONV_BLOCK_BYTES", 1 << 18)  # smaller blocks: more of them
    rng = np.random.default_rng(7)
    x = _specials(rng.standard_normal((3, 40, 30, 24)), rng)
    w = rng.standard_normal((2, 3, 24, 48))
    args = dict(strides=(1, 2), pad=((0, 1), (2, 0)), lhs_dil=(2, 1), rhs_dil=(1, 2))
    one = _conv(x, w, threads, 1, **args)
    assert len(_blocks(monkeypatch, lambda: _conv(x, w, threads, 2, **args))) >= 2
    assert _bits(_conv(x, w, threads, 2, **args)) == _bits(one)


def test_one_thread_runs_the_blocks_in_order_through_one_buffer(threads, monkeypatch):
    """On one thread the blocks are multiplied in order, one ``np.dot`` each into its rows:
    the code before threads."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 64, 64, 64)).astype(np.float32)
    w = rng.standard_normal((3, 3, 64, 64)).astype(np.float32)
    calls, real_dot = [], np.dot

    def dot(a, b, out=None):
        calls.append((a.__array_interface__["data"][0], a.shape, out.__array_interface__["data"][0]))
        return real_dot(a, b, out=out)
    _conv(x, w, threads, 1)  # the first run also tries the kernel's layout (_split_gemm.same_in_c_order)
    monkeypatch.setattr(np, "dot", dot)
    _conv(x, w, threads, 1)
    assert len(calls) >= 3
    assert len({c[0] for c in calls}) == 1  # one buffer
    starts = [c[2] for c in calls]
    assert starts == sorted(starts)  # rows in order


# depthwise convolutions (feature_group_count = channels) of mobilenet_v1 and efficientnet_b0
GROUPED = [
    ((1, 112, 112, 32), (3, 3, 1, 32), (1, 1), 32),
    ((1, 113, 113, 64), (3, 3, 1, 64), (2, 2), 64),
    ((1, 56, 56, 144), (3, 3, 1, 144), (1, 1), 144),
    ((1, 59, 59, 144), (5, 5, 1, 144), (2, 2), 144),
    ((1, 7, 7, 1152), (5, 5, 1, 1152), (1, 1), 1152),
    ((2, 20, 20, 48), (3, 3, 8, 96), (1, 1), 6),   # groups of 8 channels, 16 outputs each
    ((1, 9, 9, 6), (3, 3, 2, 6), (1, 1), 3),       # small: one piece
]


def _grouped_before(x, w, strides, fgc):
    """The grouped product as the kernel computed it before threads: the gathered stack
    (``moveaxis(...).reshape``) and ``matmul_exact``."""
    half = w.shape[0] // 2  # "same" padding
    xp = np.pad(x, ((0, 0), (half, half), (half, half), (0, 0)))
    wt = np.transpose(w, (3, 0, 1, 2))  # O, KH, KW, Cg
    v = sliding_window_view(xp, w.shape[:2], axis=(1, 2))[:, ::strides[0], ::strides[1]]
    v = np.moveaxis(v, 3, -1)  # N, P, P, K, K, C
    N, P1, P2 = v.shape[:3]
    G, Cg, O = fgc, x.shape[-1] // fgc, w.shape[-1]
    v = v.reshape(v.shape[:-1] + (G, Cg))
    A = np.moveaxis(v, -2, 0).reshape(G, N * P1 * P2, -1)
    W = wt.reshape(G, O // G, -1).transpose(0, 2, 1)
    out = linalg.matmul_exact(A, W, np.dtype(np.float32)).reshape(G, N, P1, P2, O // G)
    return np.moveaxis(out, 0, -2).reshape(N, P1, P2, O)


@pytest.mark.parametrize("case", GROUPED, ids=lambda c: "x".join(map(str, c[0][1:] + c[1][:2])))
def test_threaded_grouped_convolution_gives_the_kernels_bits(case, threads):
    xs, ws, strides, fgc = case
    rng = np.random.default_rng(sum(xs) + fgc)
    x = _specials(rng.standard_normal(xs).astype(np.float32), rng)
    w = rng.standard_normal(ws).astype(np.float32)
    pad = ((ws[0] // 2,) * 2,) * 2
    one = _conv(x, w, threads, 1, strides, pad, fgc)
    with one_blas_thread(), np.errstate(all="ignore"):
        assert _bits(_grouped_before(x, w, strides, fgc)) == _bits(one)
    for n in (2, 3):
        assert _bits(_conv(x, w, threads, n, strides, pad, fgc)) == _bits(one)


def _dn(ns: int) -> SimpleNamespace:
    """Channel-last dimension numbers of ``ns`` spatial dimensions."""
    sp = tuple(range(1, 1 + ns))
    return SimpleNamespace(input_batch_dimension=0, input_feature_dimension=ns + 1, input_spatial_dimensions=sp,
                           kernel_input_feature_dimension=ns, kernel_output_feature_dimension=ns + 1,
                           kernel_spatial_dimensions=tuple(range(ns)), output_batch_dimension=0,
                           output_feature_dimension=ns + 1, output_spatial_dimensions=sp)


# (x, w, strides, padding, lhs dilation, rhs dilation, feature groups)
OFFSETS = [
    ((1, 30, 30, 64), (3, 3, 1, 64), (1, 1), ((1, 1), (1, 1)), None, None, 64),
    ((2, 31, 29, 48), (3, 3, 8, 96), (2, 1), ((0, 2), (1, 0)), None, (2, 1), 6),
    ((1, 20, 20, 32), (3, 3, 1, 32), (2, 2), ((1, 1), (1, 1)), (2, 1), (1, 3), 32),
    ((3, 300, 40), (9, 1, 40), (3,), ((4, 4),), None, (2,), 40),            # 1-D, 9 offsets
    ((1, 9, 10, 11, 24), (2, 2, 2, 3, 24), (1, 2, 1), ((1, 0), (0, 0), (1, 1)), None, None, 8),  # 3-D
]


@pytest.mark.parametrize("case", OFFSETS, ids=lambda c: "x".join(map(str, c[0] + c[1])))
def test_grouped_gather_by_kernel_offset_gives_the_window_views_bits(case, threads, monkeypatch):
    """The grouped (depthwise) gather one kernel offset at a time from a group-major copy of
    the input (``_gather_by_offset``) writes the stack the window view's gather writes, on
    strides, paddings and dilations in 1, 2 and 3 spatial dimensions; so the product's bits."""
    xs, ws, strides, pad, lhs_dil, rhs_dil, fgc = case
    rng = np.random.default_rng(sum(xs))
    x = _specials(rng.standard_normal(xs).astype(np.float32), rng)
    w = rng.standard_normal(ws).astype(np.float32)

    def conv(n):
        threads(n)
        with one_blas_thread(), np.errstate(all="ignore"):
            return linalg.convolution_arrays(x, w, strides=strides, pad=pad, lhs_dil=lhs_dil, rhs_dil=rhs_dil,
                                             reversal=None, dn=_dn(len(strides)), fgc=fgc, bgc=1,
                                             out_dtype=np.float32)
    monkeypatch.setattr(linalg, "OFFSET_GATHER_MAX_TERMS", 0)  # the window view's gather
    want = conv(1)
    monkeypatch.setattr(linalg, "OFFSET_GATHER_MAX_TERMS", 9)
    calls, real = [], linalg._gather_by_offset

    def counted(*a):
        calls.append(a)
        return real(*a)
    monkeypatch.setattr(linalg, "_gather_by_offset", counted)
    for n in (1, 2, 3):
        assert _bits(conv(n)) == _bits(want)
    assert calls


# batched products of the zoo: (lhs, rhs, dimension numbers, element type)
BATCHED = [
    ((1, 197, 12, 64), (1, 197, 12, 64), ((0, 2), (0, 2), (3,), (3,)), np.float32),     # vit_b16 q.k
    ((1, 197, 12, 64), (1, 12, 197, 197), ((0, 2), (0, 1), (1,), (3,)), np.float32),    # vit_b16 p.v
    ((1, 333, 6, 64), (1, 333, 6, 64), ((0, 2), (0, 2), (3,), (3,)), np.float32),       # mmdit_small
    ((1, 333, 6, 64), (1, 6, 333, 333), ((0, 2), (0, 1), (1,), (3,)), np.float32),
    ((1, 256, 4, 64), (1, 256, 4, 64), ((0, 2), (0, 2), (3,), (3,)), np.float32),       # unet_small
    ((12, 128, 128), (12, 128, 64), ((0,), (0,), (2,), (1,)), BF16),                    # bert_base_bf16
    ((12, 128, 64), (12, 64, 128), ((0,), (0,), (2,), (1,)), BF16),
    ((1, 64, 8, 64), (1, 64, 8, 64), ((0, 2), (0, 2), (3,), (3,)), BF16),               # llama_bf16
    ((16, 96, 80), (16, 80, 112), ((0,), (0,), (2,), (1,)), np.float16),
    ((3, 5, 150, 40), (3, 5, 40, 130), ((0, 1), (0, 1), (3,), (2,)), np.float64),
]


@pytest.mark.parametrize("case", BATCHED, ids=lambda c: f"{np.dtype(c[3]).name}-" + "x".join(map(str, c[0])))
def test_threaded_batched_dot_general_gives_the_single_thread_bits(case, threads, monkeypatch):
    ls, rs, dn, dt = case
    rng = np.random.default_rng(sum(ls) + sum(rs))
    lhs = _specials(rng.standard_normal(ls).astype(dt), rng)
    rhs = _specials(rng.standard_normal(rs).astype(dt), rng)
    # small products stay on one thread: lower the bar so every case goes through the pieces
    monkeypatch.setattr(linalg, "BATCH_PIECE_MIN_MACS", 1)
    with one_blas_thread(), np.errstate(all="ignore"):
        threads(1)
        one = linalg.dot_general_arrays(lhs, rhs, *dn, dt)
        for n in (2, 3, 5):
            threads(n)
            got = linalg.dot_general_arrays(lhs, rhs, *dn, dt)
            assert got.dtype == one.dtype and _bits(got) == _bits(one)


def test_the_batched_product_takes_the_pieces_only_when_large(threads):
    """Only products of at least BATCH_PIECE_MIN_MACS multiply-adds (the zoo's attention
    products are below it: threads cost them more than they save, measured)."""
    a = np.ones((16, 256, 256), np.float32)
    b = np.ones((16, 256, 64), np.float32)
    threads(2)
    assert linalg._batches_in_pieces(a, b, np.dtype(np.float32), np.float32)
    assert not linalg._batches_in_pieces(a[:, :8], b, np.dtype(np.float32), np.float32)
    vit_qk = np.ones((12, 197, 64), np.float32), np.ones((12, 64, 197), np.float32)
    assert not linalg._batches_in_pieces(*vit_qk, np.dtype(np.float32), np.float32)
    assert not linalg._batches_in_pieces(a[:1], b[:1], np.dtype(np.float32), np.float32)
    assert not linalg._batches_in_pieces(a.astype(np.int32), b.astype(np.int32), np.dtype(np.int64), np.int32)
    assert not linalg._batches_in_pieces(a, b, np.dtype(np.float32), np.bool_)
    threads(1)
    assert not linalg._batches_in_pieces(a, b, np.dtype(np.float32), np.float32)


@pytest.mark.parametrize("case", BATCHED + [((128, 3136, 9), (128, 9, 1), None, np.float32),
                                            ((1152, 49, 25), (1152, 25, 1), None, np.float32)],
                         ids=lambda c: "x".join(map(str, c[0])))
def test_stack_matmul_is_the_matmul_of_each_entry(case):
    """What the pieces rely on: ``np.matmul`` of a stack gives each entry the bits of
    ``np.matmul`` of a slice holding that entry (one entry, or any span), on the zoo's
    stacked shapes, the depthwise stacks (a strided vector operand) included."""
    ls, rs, dn, dt = case
    rng = np.random.default_rng(len(ls) + ls[-1])
    cdt = np.float64 if dt == np.float64 else np.float32
    if dn is None:  # depthwise: (G, P, K) @ (G, K, 1), the kernel's view of its (K, O) layout
        a = rng.standard_normal(ls).astype(cdt)
        w = rng.standard_normal((rs[1], rs[0])).astype(cdt)
        b = w.T.reshape(rs[0], 1, rs[1]).transpose(0, 2, 1)
    else:  # the stacks dot_general multiplies
        lshape, rshape = linalg._dot_plan(ls, rs, *dn)[2:4]
        a = rng.standard_normal(lshape).astype(cdt)
        b = rng.standard_normal(rshape).astype(cdt)
    a, b = _specials(a, rng), _specials(b, rng)
    with one_blas_thread(), np.errstate(all="ignore"):
        whole = np.matmul(a, b)
        for i in range(a.shape[0]):
            assert _bits(np.matmul(a[i:i + 1], b[i:i + 1])[0]) == _bits(whole[i])
        h = a.shape[0] // 2
        out = np.empty_like(whole)
        np.matmul(a[:h], b[:h], out=out[:h])
        np.matmul(a[h:], b[h:], out=out[h:])
        assert _bits(out) == _bits(whole)
