"""Linear algebra: dot_general, convolution, dynamic_conv, cholesky,
triangular_solve, batch_norm_training/inference/grad.

See spec.md#dot_general, spec.md#convolution, spec.md#dynamic_conv,
spec.md#cholesky, spec.md#triangular_solve, spec.md#batch_norm_training,
spec.md#batch_norm_inference, spec.md#batch_norm_grad.

Products go through one BLAS call (``np.matmul``) on one BLAS thread (see
``_blas_threads``); f32/f64 convolutions
large enough gather and multiply their im2col matrix in cache-sized row
blocks, one GEMM per block (see ``_conv_gemm_blocked``). Independent pieces of
one product (those blocks, the groups of a grouped convolution, the batch entries
of a batched float product) run on the process's cores (``_parallel``), each the
same call as on one thread, so the bits do not depend on the thread count
(``tests/test_fast_products.py``); a large 2-D product (and a convolution of one
block) runs as row or column blocks on those cores only where a trial showed that
cut giving the whole call's bits (``_split_gemm``). Floating-point inputs
narrower than f32 (f16, bf16, f8, ...) are computed in f32 and rounded once
into the result type. Integer products are exact: they run in f32 (whole, or
in contraction chunks added in int64) or f64 when every partial sum provably
fits in 24 or 53 bits, otherwise in (u)int64 with wraparound, and are then
wrapped into the result type (see ``_int_matmul``). Complex products with a short
contraction (at most ``SEQUENTIAL_COMPLEX_K`` terms) are accumulated term by
term in index order, as XLA's CPU dot does; longer ones use BLAS.
"""

from __future__ import annotations

import functools
import math
import threading

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..numeric import is_float
from ..opinfo import ACCUMULATE, DEQUANTIZE, DOT, FastPath
from . import _fast, _parallel
from ._blas_threads import one_blas_thread
from ._split_gemm import blocked_product, same_in_c_order, split_narrow_product, split_product
from .reduction import cast_result, contiguous, pad_dilate
from .registry import kernel

# ---------------------------------------------------------------------------
# shared helpers


def _is_int(dt: np.dtype) -> bool:
    dt = np.dtype(dt)
    return dt.kind in "iu" or dt.name in ("int2", "int4", "uint2", "uint4")


def _is_unsigned(dt: np.dtype) -> bool:
    dt = np.dtype(dt)
    return dt.kind == "u" or dt.name in ("uint2", "uint4")


def compute_dtype(dtypes, out_dtype) -> np.dtype:
    """The dtype a product of operands with ``dtypes`` is computed in."""
    return _compute_dtype(tuple(np.dtype(d) for d in dtypes), np.dtype(out_dtype))


@functools.lru_cache(maxsize=None)
def _compute_dtype(dtypes, out_dtype) -> np.dtype:
    dts = [np.dtype(d) for d in dtypes] + [np.dtype(out_dtype)]
    if any(d.kind == "c" for d in dts):
        wide = any(d in (np.dtype(np.complex128), np.dtype(np.float64)) for d in dts)
        return np.dtype(np.complex128 if wide else np.complex64)
    ins = [np.dtype(d) for d in dtypes]
    if all(d == np.bool_ or _is_int(d) for d in ins):
        if all(d == np.bool_ for d in ins):
            return np.dtype(np.int64)
        if any(d == np.uint64 for d in ins):
            return np.dtype(np.uint64)
        return np.dtype(np.int64)
    if any(d == np.float64 for d in dts):
        return np.dtype(np.float64)
    return np.dtype(np.float32)


def _max_abs(x: np.ndarray) -> float:
    if x.size == 0:
        return 0.0
    return float(max(abs(int(x.max())), abs(int(x.min()))))


SEQUENTIAL_COMPLEX_K = 256


def _type_bound(dt: np.dtype) -> float:
    """The largest magnitude of an integer type (infinity if unknown)."""
    try:
        info = np.iinfo(dt)
    except (TypeError, ValueError):
        return float("inf")
    return float(max(-int(info.min), int(info.max)))


def matmul_exact(a: np.ndarray, b: np.ndarray, cdt: np.dtype) -> np.ndarray:
    """``a @ b`` (batched) in ``cdt``; integer products exact modulo 2**64 (see
    :func:`_int_matmul`)."""
    if cdt.kind in "iu":
        return _int_matmul(a, b, cdt)
    a = a.astype(cdt, copy=False)
    b = b.astype(cdt, copy=False)
    k = a.shape[-1]
    if cdt.kind == "c" and 0 < k <= SEQUENTIAL_COMPLEX_K:
        # the order XLA's CPU dot accumulates complex products in
        acc = a[..., :, 0:1] * b[..., 0:1, :]
        for i in range(1, k):
            acc = acc + a[..., :, i:i + 1] * b[..., i:i + 1, :]
        return acc
    return _blas(a, b)


F32_EXACT = 2.0 ** 24  # every integer of smaller magnitude is exact in f32
F64_EXACT = 2.0 ** 53  # and in f64
MIN_F32_CHUNK = 256  # the shortest contraction split into f32 products (shorter: f64)


def _int_matmul(a: np.ndarray, b: np.ndarray, cdt: np.dtype) -> np.ndarray:
    """``a @ b`` of integer (or bool) operands, exact modulo 2**64 (the result type wraps it
    further, spec.md#dot_general): int32 where it fits in f32, else in ``cdt``.

    A float product of integers is exact when every product and every partial sum is an
    integer below the float's 2**p in magnitude (then no operation rounds, in whatever order
    BLAS adds), which holds when ``K * max|a| * max|b|`` is below it. From the types' bounds
    (no pass over the data): below 2**24, one f32 product; below 2**53, f32 products of
    contraction chunks each below 2**24 (``F32_EXACT / (max|a| * max|b|)`` terms, e.g. 1023
    for 8-bit operands), their exact integer results added in int64, or one f64 product
    where those chunks would be short. Otherwise the bound is taken from the values: f64
    below 2**53, else integer ``matmul`` (wrapping modulo 2**64). Every path gives the
    product's exact value (or that value modulo 2**64), so they agree bit for bit."""
    k = max(a.shape[-1], 1)
    term = _type_bound(a.dtype) * _type_bound(b.dtype)
    if term * k < F32_EXACT:
        return _blas(a.astype(np.float32), b.astype(np.float32), exact=True).astype(np.int32)
    if term * k < F64_EXACT:
        longest = int((F32_EXACT - 1) // term) if term else k
        if longest >= MIN_F32_CHUNK:
            return _f32_chunks(a.astype(np.float32), b.astype(np.float32), -(-k // longest))
        return _blas(a.astype(np.float64), b.astype(np.float64), exact=True).astype(np.int64)
    a64 = a.astype(cdt, copy=False)
    b64 = b.astype(cdt, copy=False)
    if _max_abs(a64) * _max_abs(b64) * k < F64_EXACT:
        return _blas(a64.astype(np.float64), b64.astype(np.float64), exact=True).astype(np.int64).astype(cdt)
    return np.matmul(a64, b64)


def _f32_chunks(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """``a @ b`` of f32 operands holding integers, as the int64 sum of ``n`` products over
    contraction chunks of (nearly) equal length, each exact in f32 (see :func:`_int_matmul`)."""
    k = a.shape[-1]
    edges = [k * i // n for i in range(n + 1)]
    acc = None
    for k0, k1 in zip(edges, edges[1:]):
        part = _blas(a[..., k0:k1], b[..., k0:k1, :], exact=True).astype(np.int64)
        acc = part if acc is None else np.add(acc, part, out=acc)
    return acc


def _blas(a: np.ndarray, b: np.ndarray, exact: bool = False) -> np.ndarray:
    """``a @ b``; 2-D products through ``np.dot`` (a direct GEMM call, faster
    than ``np.matmul`` for skinny shapes), on one BLAS thread; a large one in pieces
    on several threads where they give its bits (:func:`._split_gemm.split_product`;
    ``exact``: every value of the product is exact in its type)."""
    with one_blas_thread():
        if a.ndim == 2 and b.ndim == 2:
            return _dot(a, b, exact)
        if a.ndim == 3 and a.shape[0] == 1 and b.ndim == 3:
            return np.dot(a[0], b[0])[None]
        return np.matmul(a, b)


def finish(x: np.ndarray, out_dtype: np.dtype, bool_inputs: bool = False) -> np.ndarray:
    """Round or wrap a computed product into the result type."""
    out_dtype = np.dtype(out_dtype)
    if out_dtype == np.bool_:
        return contiguous(x != 0)
    if x.dtype.kind == "c" and out_dtype.kind != "c":
        x = x.real
    return contiguous(cast_result(x, out_dtype))


def _check_not_quantized(op):
    for t in tuple(op.operand_types) + tuple(op.result_types):
        el = getattr(t, "element", None)
        if el is not None and getattr(el, "quantized", False):
            raise op.unsupported("quantized operands")


# ---------------------------------------------------------------------------
# dot_general / dot


def dot_general_arrays(lhs, rhs, lb, rb, lc, rc, out_dtype) -> np.ndarray:
    """spec.md#dot_general on arrays: result dims are batch + lhs free + rhs free."""
    lperm, rperm, lshape, rshape, out_shape = _dot_plan(
        lhs.shape, rhs.shape, tuple(lb), tuple(rb), tuple(lc), tuple(rc))
    cdt = compute_dtype([lhs.dtype, rhs.dtype], out_dtype)
    L = (lhs if lperm is None else np.transpose(lhs, lperm)).reshape(lshape)
    R = (rhs if rperm is None else np.transpose(rhs, rperm)).reshape(rshape)
    if _batches_in_pieces(L, R, cdt, out_dtype):
        return _batched_matmul(L, R, cdt, np.dtype(out_dtype)).reshape(out_shape)
    if (cdt.kind == "f" and L.dtype == R.dtype and is_float(L.dtype) and L.dtype.itemsize < cdt.itemsize
            and is_float(out_dtype)):
        with one_blas_thread():
            narrow = split_narrow_product(L, R, cdt, np.dtype(out_dtype))
        if narrow is not None:  # widened and rounded in the product's pieces
            return finish(narrow.reshape(out_shape), out_dtype)
    return finish(matmul_exact(L, R, cdt).reshape(out_shape), out_dtype)


BATCH_PIECE_MIN_MACS = 1 << 26  # the least batched product (multiply-adds) split between threads


def _batches_in_pieces(L: np.ndarray, R: np.ndarray, cdt: np.dtype, out_dtype) -> bool:
    """Whether :func:`_batched_matmul` computes this product: a stack of at least two
    matrices of real floats computed in f32 or f64 (where :func:`matmul_exact` is one
    ``np.matmul`` of the stacks), into a float result, large enough to be worth threads."""
    if L.ndim != 3 or L.shape[0] < 2 or _parallel.threads() < 2 or cdt.kind != "f":
        return False
    if not (is_float(L.dtype) and is_float(R.dtype) and is_float(out_dtype)):
        return False
    return L.shape[0] * L.shape[1] * L.shape[2] * R.shape[2] >= BATCH_PIECE_MIN_MACS


def _batched_matmul(L: np.ndarray, R: np.ndarray, cdt: np.dtype, out_dtype: np.dtype) -> np.ndarray:
    """``finish(matmul_exact(L, R, cdt), out_dtype)`` of stacks ``(B, M, K) @ (B, K, N)``
    (see :func:`_batches_in_pieces`), computed in slices of whole batch entries, one slice
    per thread (:func:`_parallel.run`): each slice widened to ``cdt``, multiplied by
    ``np.matmul`` and rounded into ``out_dtype``.

    ``np.matmul`` of a stack makes one BLAS call (or its own loop) per batch entry, chosen from
    the strides and sizes of an entry's matrices, which a slice of the stack shares; the
    widening and the rounding are element by element. So each entry is the same computation
    as in the whole product, and the result is the same bit for bit
    (``tests/test_fast_products.py`` compares them on the zoo's shapes and types)."""
    res = np.empty(L.shape[:2] + R.shape[2:], out_dtype)

    def piece(b0: int, b1: int) -> None:
        a = L[b0:b1].astype(cdt, copy=False)
        b = R[b0:b1].astype(cdt, copy=False)
        if out_dtype == cdt:
            np.matmul(a, b, out=res[b0:b1])
        else:
            res[b0:b1] = cast_result(np.matmul(a, b), out_dtype)

    with one_blas_thread():
        _parallel.run([functools.partial(piece, a, b) for a, b in _parallel.spans(L.shape[0], _parallel.threads())])
    return res


@functools.lru_cache(maxsize=4096)
def _dot_plan(lshape, rshape, lb, rb, lc, rc):
    """How :func:`dot_general_arrays` lays out operands of these shapes and dimension numbers:
    the transposes (None: already in order), the shapes of the matrices (one batch) or batches
    of matrices they are reshaped to, and the result shape."""
    lb, rb, lc, rc = (tuple(int(v) for v in d) for d in (lb, rb, lc, rc))
    lf = [d for d in range(len(lshape)) if d not in lb and d not in lc]
    rf = [d for d in range(len(rshape)) if d not in rb and d not in rc]
    bshape = tuple(lshape[d] for d in lb)
    lfs = tuple(lshape[d] for d in lf)
    rfs = tuple(rshape[d] for d in rf)
    B, M, N = math.prod(bshape), math.prod(lfs), math.prod(rfs)
    K = math.prod([lshape[d] for d in lc])
    lperm = list(lb) + lf + list(lc)
    rperm = list(rb) + list(rc) + rf
    mats = ((M, K), (K, N)) if B == 1 else ((B, M, K), (B, K, N))
    return (None if lperm == sorted(lperm) else tuple(lperm), None if rperm == sorted(rperm) else tuple(rperm),
            *mats, bshape + lfs + rfs)


def _dot(a: np.ndarray, b: np.ndarray, exact: bool = False, out: np.ndarray | None = None) -> np.ndarray:
    """``np.dot`` of 2-D operands, or its cut where one gives its bits: pieces on several threads
    (:func:`._split_gemm.split_product`) or column blocks on one
    (:func:`._split_gemm.blocked_product`), on the BLAS thread the caller set; into ``out``
    where given (``np.dot`` writes the same values there as into an array of its own)."""
    split = split_product(a, b, exact)
    if split is None:
        split = blocked_product(a, b)
    if split is None:
        return np.dot(a, b) if out is None else np.dot(a, b, out=out)
    if out is None:
        return split
    out[...] = split
    return out


def _fast_dot_general(op):
    """``dot_general`` of plain types with its layout planned once: for f32 or f64 operands and
    result of one type without batch dimensions, one ``np.dot`` of the (reshaped) operands,
    which is what :func:`dot_general_arrays` computes there; else that function directly."""
    types = _fast.plain_types(op)
    if types is None:
        return None
    (ldt, rdt), dt, _ = types
    dn = op.attr("dot_dimension_numbers")
    nums = tuple(tuple(int(v) for v in dn.get(k, ())) for k in (
        "lhs_batching_dimensions", "rhs_batching_dimensions", "lhs_contracting_dimensions",
        "rhs_contracting_dimensions"))
    lshape, rshape = (tuple(t.shape) for t in op.operand_types)
    lperm, rperm, lmat, rmat, out_shape = _dot_plan(lshape, rshape, *nums)
    if (ldt == rdt == dt and dt in (np.dtype(np.float32), np.dtype(np.float64)) and not nums[0]
            and lperm is None and rperm is None):
        # engines run products on one BLAS thread (Engine.call)
        if lshape == lmat and rshape == rmat and out_shape == (lmat[0], rmat[1]):
            return FastPath(_dot, fresh=True)

        def call(a, b):
            return _dot(a.reshape(lmat), b.reshape(rmat)).reshape(out_shape)
        return FastPath(call, fresh=True)

    def general(a, b):
        return dot_general_arrays(a, b, *nums, dt)
    return FastPath(general)


@kernel("stablehlo.dot_general", quantized=DEQUANTIZE, accuracy=DOT, fast=_fast_dot_general)
def dot_general(op, lhs, rhs):
    """See spec.md#dot_general. ``precision_config`` and ``algorithm`` are
    accepted; products are computed at least in f32."""
    _check_not_quantized(op)
    dn = op.attr("dot_dimension_numbers")
    return (dot_general_arrays(
        lhs, rhs,
        dn.get("lhs_batching_dimensions", ()), dn.get("rhs_batching_dimensions", ()),
        dn.get("lhs_contracting_dimensions", ()), dn.get("rhs_contracting_dimensions", ()),
        op.result_dtype(0)),)


# ---------------------------------------------------------------------------
# convolution


def convolution_arrays(lhs, rhs, *, strides, pad, lhs_dil, rhs_dil, reversal, dn,
                       fgc: int, bgc: int, out_dtype, out_shape=None) -> np.ndarray:
    """spec.md#convolution: an im2col gather and a batched matmul (for f32/f64
    operands without groups, gathered and multiplied in cache-sized row
    blocks: see ``_conv_gemm_blocked``)."""
    isd = [int(v) for v in dn.input_spatial_dimensions]
    ksd = [int(v) for v in dn.kernel_spatial_dimensions]
    osd = [int(v) for v in dn.output_spatial_dimensions]
    ib, if_ = int(dn.input_batch_dimension), int(dn.input_feature_dimension)
    ki, ko = int(dn.kernel_input_feature_dimension), int(dn.kernel_output_feature_dimension)
    ob, of = int(dn.output_batch_dimension), int(dn.output_feature_dimension)
    ns = len(isd)
    # lists longer than the spatial rank (seen in dynamic_conv programs) are
    # read up to the spatial rank
    strides = [int(v) for v in strides][:ns] if strides is not None else [1] * ns
    lhs_dil = [int(v) for v in lhs_dil][:ns] if lhs_dil is not None else [1] * ns
    rhs_dil = [int(v) for v in rhs_dil][:ns] if rhs_dil is not None else [1] * ns
    reversal = [bool(v) for v in reversal][:ns] if reversal is not None else [False] * ns
    pad = np.zeros((ns, 2), np.int64) if pad is None else np.asarray(pad, np.int64).reshape(ns, 2)
    cdt = compute_dtype([lhs.dtype, rhs.dtype], out_dtype)

    x = np.transpose(lhs, [ib] + isd + [if_]).astype(cdt, copy=False)  # N, S..., C
    w = np.transpose(rhs, [ko] + ksd + [ki]).astype(cdt, copy=False)   # O, K..., Ci
    flips = tuple(1 + i for i in range(ns) if reversal[i])
    if flips:
        w = np.flip(w, axis=flips)
    x = pad_dilate(x, [0] + list(pad[:, 0]) + [0], [0] + list(pad[:, 1]) + [0],
                   [0] + [d - 1 for d in lhs_dil] + [0], np.zeros((), cdt))
    N, C = x.shape[0], x.shape[-1]
    O = w.shape[0]
    ksz = list(w.shape[1:1 + ns])
    ext = [(k - 1) * d + 1 if k > 0 else 0 for k, d in zip(ksz, rhs_dil)]
    counts = [0 if s < e else (s - e) // st + 1 for s, e, st in zip(x.shape[1:1 + ns], ext, strides)]
    G = fgc if fgc > 1 else bgc
    Nout = N // bgc
    if any(c == 0 for c in counts) or N == 0 or O == 0 or any(k == 0 for k in ksz):
        mine = np.zeros((Nout,) + tuple(counts) + (O,), dtype=cdt)
    else:
        v = sliding_window_view(x, ext, axis=tuple(range(1, 1 + ns)))  # N, P..., C, E...
        sl = ((slice(None),) + tuple(slice(None, None, s) for s in strides) + (slice(None),)
              + tuple(slice(None, None, d) for d in rhs_dil))
        v = v[sl]
        v = v[(slice(None),) + tuple(slice(0, c) for c in counts) + (Ellipsis,)]
        # -> N, P..., K..., C
        v = np.moveaxis(v, 1 + ns, -1)
        P = int(np.prod(counts, dtype=np.int64))
        Kp = int(np.prod(ksz, dtype=np.int64))
        # f32/f64 operands: blocked GEMM (same values); other types (integers
        # exact, narrow floats rounded once) keep the single product below
        blocked = G == 1 and cdt.kind == "f" and lhs.dtype == cdt and rhs.dtype == cdt
        out = None
        if blocked:
            out = _conv_gemm_blocked(v, w.reshape(O, Kp * w.shape[-1]), cdt)
            mine = out.reshape((N,) + tuple(counts) + (O,))
        elif fgc > 1:
            Cg = C // G
            v = v.reshape(v.shape[:-1] + (G, Cg))
            Og = O // G
            W = w.reshape(G, Og, Kp * w.shape[-1]).transpose(0, 2, 1)
            if cdt.kind == "f" and lhs.dtype == cdt and rhs.dtype == cdt:
                groups = np.moveaxis(v, -2, 0)  # G, N, P..., K..., Cg
                if Kp <= OFFSET_GATHER_MAX_TERMS:
                    by_group = np.moveaxis(x.reshape(x.shape[:-1] + (G, Cg)), -2, 0)  # G, N, S..., Cg
                    gather = functools.partial(_gather_by_offset, by_group, ksz, strides, rhs_dil, counts)
                else:
                    gather = functools.partial(_gather_view, groups)
                out = _grouped_gemms(gather, W, (G, N * P, Kp * Cg), groups.shape)
            else:
                A = np.moveaxis(v, -2, 0).reshape(G, N * P, Kp * Cg)
        else:
            Nb = N // G
            A = v.reshape((G, Nb) + v.shape[1:]).reshape(G, Nb * P, Kp * C)
            Og = O // G
            W = w.reshape(G, Og, Kp * w.shape[-1]).transpose(0, 2, 1)
        if not blocked:
            if out is None:
                out = matmul_exact(A, W, cdt)  # G, N'*P, Og
            out = out.reshape((G, Nout) + tuple(counts) + (Og,))
            mine = np.moveaxis(out, 0, -2).reshape((Nout,) + tuple(counts) + (O,))
    perm = [0] * (ns + 2)
    perm[ob] = 0
    for i, d in enumerate(osd):
        perm[d] = 1 + i
    perm[of] = ns + 1
    return finish(np.transpose(mine, perm), out_dtype)


def _grouped_gemms(gather, W: np.ndarray, shape: tuple[int, int, int], groups: tuple) -> np.ndarray:
    """``np.matmul(A, W)`` of a grouped convolution's f32/f64 im2col stack ``A`` of ``shape``
    ``(G, N*P, K*Cg)`` and kernel stack ``W`` ``(G, K*Cg, Og)``, ``A`` gathered by
    ``gather(g0, g1, dst)`` (groups ``g0:g1`` of the window view, of shape ``groups``
    ``(G, N, P..., K..., Cg)``, into ``dst``; see :func:`_gather_view`,
    :func:`_gather_by_offset`): gathered and multiplied in slices of whole groups, one slice
    per thread (:func:`_parallel.run`).

    The gather is a copy (the same values in the same layout). ``np.matmul`` of a stack makes
    one BLAS call (or its own loop) per group, chosen from the strides and sizes of a group's
    matrices, which a slice of the stack shares; so the matmul of each slice makes, for each of
    its groups, the call the whole stack makes, on the same memory, and the result is the same
    bit for bit (``tests/test_fast_products.py``). A depthwise convolution's time is mostly
    this gather (the stack is laid out group-major from a channel-last view)."""
    G = shape[0]
    A = np.empty(shape, W.dtype)
    res = np.empty((G, shape[1], W.shape[2]), W.dtype)

    def piece(g0: int, g1: int) -> None:
        gather(g0, g1, A[g0:g1].reshape((g1 - g0,) + tuple(groups[1:])))
        np.matmul(A[g0:g1], W[g0:g1], out=res[g0:g1])

    parts = _parallel.threads() if A.size >= PIECE_MIN_ELEMENTS else 1
    with one_blas_thread():
        _parallel.run([functools.partial(piece, a, b) for a, b in _parallel.spans(G, parts)])
    return res


def _gather_view(groups: np.ndarray, g0: int, g1: int, dst: np.ndarray) -> None:
    """Groups ``g0:g1`` of the window view ``groups`` ``(G, N, P..., K..., Cg)`` into ``dst``."""
    np.copyto(dst, groups[g0:g1])


def _gather_by_offset(by_group: np.ndarray, ksz, strides, rhs_dil, counts, g0: int, g1: int,
                      dst: np.ndarray) -> None:
    """What :func:`_gather_view` writes (``dst[g, n, p..., k..., c]`` is
    ``by_group[g0 + g, n, p*stride + k*dilation, c]``), written one kernel offset ``k`` at a
    time from a group-major copy of the input ``by_group`` ``(G, N, S..., Cg)``: each copy
    runs along output positions, reading consecutive input elements, where the window view
    reads a few elements per position across channels (a depthwise 3x3 gather in about
    two thirds of the time, measured; with more offsets the copies cost more)."""
    src = np.ascontiguousarray(by_group[g0:g1])
    ns = len(ksz)
    for k in np.ndindex(*ksz):
        at = tuple(slice(i * d, i * d + s * (c - 1) + 1, s) for i, d, s, c in zip(k, rhs_dil, strides, counts))
        dst[(slice(None),) * (2 + ns) + k] = src[(slice(None), slice(None)) + at]


PIECE_MIN_ELEMENTS = 1 << 17  # the least gathered stack (f32: 512 KiB) split between threads
OFFSET_GATHER_MAX_TERMS = 9  # the most kernel offsets gathered one offset at a time (3x3)
CONV_BLOCK_BYTES = 3 << 20
CONV_BLOCK_MIN_MNK = 1 << 22
TILE_ROWS, TILE_COLUMNS = 512, 16  # the tiles of c_order_copy (16 f32: one 64-byte cache line)
TILED_COPY_MIN = 1 << 16  # elements


def c_order_copy(x: np.ndarray) -> np.ndarray:
    """``np.ascontiguousarray(x)`` of a 2-D array: the same array, copied tile by tile where
    ``x`` is a large transposed view (a kernel's ``(O, K*C)`` view of its HWIO layout), as
    ``TILE_ROWS`` rows of ``TILE_COLUMNS`` elements: NumPy copies a transposed view in the
    destination's order, one element per source row (a cache line and a page each), several
    times slower than in tiles whose source rows and destination lines stay in cache. The
    copy holds the same values in the same layout, so the GEMM that reads it is the same
    call on the same data."""
    if x.flags.c_contiguous or x.size < TILED_COPY_MIN or abs(x.strides[0]) >= abs(x.strides[1]):
        return np.ascontiguousarray(x)
    out = np.empty(x.shape, x.dtype)
    rows, cols = x.shape
    for i in range(0, rows, TILE_ROWS):
        dst, src = out[i:i + TILE_ROWS], x[i:i + TILE_ROWS]
        for j in range(0, cols, TILE_COLUMNS):
            dst[:, j:j + TILE_COLUMNS] = src[:, j:j + TILE_COLUMNS]
    return out


def _conv_gemm_blocked(v: np.ndarray, w2: np.ndarray, cdt: np.dtype) -> np.ndarray:
    """The im2col product ``windows @ w2.T`` of a convolution, block by block.

    ``v`` is the window view ``(N, P..., K..., C)`` and ``w2`` the kernel as
    ``(O, K*C)``. Rows of the im2col matrix (output positions) are gathered
    into a buffer of about ``CONV_BLOCK_BYTES`` and multiplied by one GEMM per
    block into the matching rows of the result, so the gathered block is
    still in cache when the GEMM reads it: the tall-skinny GEMM of a
    convolution with few output features then runs much closer to the BLAS
    peak than one GEMM over the whole gathered matrix.

    Values: the result is defined by these blocks (a function of the shapes only, the same
    on every run). Every block has at least ``CONV_BLOCK_MIN_MNK`` multiply-adds (a short
    tail joins the block before it), and smaller problems, single output features and
    single-term contractions use one GEMM. Whether the blocks' rows equal those of one GEMM
    over all rows depends on the BLAS kernels the machine selects: with OpenBLAS's SkylakeX
    kernels they do; with others (measured on an AVX-512 AMD EPYC, where splitting a GEMM by
    rows or columns changes the last bits) they can differ in the last bits, within the
    ordering freedom of a float sum (spec.md#convolution leaves that order open).

    Threads: the blocks are those above whatever the number of threads; each of
    :func:`_parallel.threads` workers (:func:`_gemm_blocks`, with its own buffer) takes
    the next block when it is free, gathers it and runs its GEMM (one BLAS thread each),
    so each block is the same call on the same rows as one after the other, and the
    result is the same bit for bit (``tests/test_fast_products.py``). A convolution of one
    block (a small output) multiplies it in pieces where a cut gives that call's bits
    (:func:`_one_block`).

    The kernel: each block is multiplied by ``(K*C, O)``, which the values define in Fortran
    order (a transposed copy of the kernel, made on every call: about 2 ms for a 3x3x512x512
    kernel, a fifth of ResNet-50's run). Where the kernel's own layout is that matrix in C
    order (an HWIO kernel) and a trial showed every block's product giving the same bits with
    it (:func:`._split_gemm.same_in_c_order`; one-row products, for one, do not), the blocks
    read it in place instead (``tests/test_split_gemm.py``).
    """
    kc = w2.shape[1]
    O = w2.shape[0]
    w2 = w2.astype(cdt, copy=False)
    ns = (v.ndim - 2) // 2
    row_dims = v.shape[: 1 + ns]
    rows = int(np.prod(row_dims, dtype=np.int64))
    out = np.empty((rows, O), dtype=cdt)
    if rows == 0:
        return out
    min_rows = max(16, -(-CONV_BLOCK_MIN_MNK // max(1, O * kc)))
    target = max(min_rows, CONV_BLOCK_BYTES // max(1, kc * cdt.itemsize))
    if O == 1 or kc <= 1 or rows < 2 * min_rows:
        target = rows
    # iterate over the leading dims one index at a time, then in steps along
    # dimension j that cover whole trailing output positions
    j = 0
    inner = rows // row_dims[0]
    while inner > target and j < ns:
        j += 1
        inner //= row_dims[j]
    step = max(1, -(-target // inner))
    starts = list(range(0, row_dims[j], step))
    if len(starts) > 1 and (row_dims[j] - starts[-1]) * inner < min_rows:
        starts.pop()
    bounds = list(zip(starts, starts[1:] + [row_dims[j]]))
    blocks, r0 = [], 0
    for prefix in np.ndindex(*row_dims[:j]):
        for a, b in bounds:
            blocks.append((prefix + (slice(a, b),), r0, (b - a) * inner))
            r0 += (b - a) * inner
    take = _taker(blocks)
    most = max(b - a for a, b in bounds) * inner
    with one_blas_thread():
        # K*C, O: the layout of the single product, or the kernel's own C-ordered view where
        # each block's product gives the same bits with it (no transposed copy)
        view = w2.T
        in_place = view.flags.c_contiguous and same_in_c_order({k for _, _, k in blocks}, view)
        wt = view if in_place else c_order_copy(w2).T
        if len(blocks) == 1:
            _one_block(v[take()[0]], wt, out)
            return out
        workers = min(_parallel.threads(), len(blocks))
        _parallel.run([lambda: _gemm_blocks(v, wt, out, most, take)] * workers)
    return out


def _one_block(blk: np.ndarray, wt: np.ndarray, out: np.ndarray) -> None:
    """The GEMM of a convolution of one block (:func:`_conv_gemm_blocked`): the block gathered,
    and multiplied into ``out`` by :func:`_dot` (one ``np.dot``, or pieces on several threads
    where they give that call's bits)."""
    dst = np.empty((out.shape[0], wt.shape[0]), dtype=wt.dtype)
    np.copyto(dst.reshape(blk.shape), blk)
    _dot(dst, wt, out=out)


def _taker(items: list):
    """A function returning the next of ``items`` on each call (None after the last), safe to
    call from several threads: the pieces of :func:`_parallel.run` share the blocks of one
    convolution this way, each taking the next block when it is free."""
    it, lock = iter(items), threading.Lock()

    def take():
        with lock:
            return next(it, None)
    return take


def _gemm_blocks(v: np.ndarray, wt: np.ndarray, out: np.ndarray, most: int, take) -> None:
    """Gather and multiply the blocks ``take`` hands out (``(index of v, first row, rows)``)
    into their rows of ``out``, one ``np.dot`` per block, through a buffer of ``most`` rows:
    the block GEMMs of :func:`_conv_gemm_blocked`, the same call on the same block whichever
    thread runs it."""
    buf = np.empty((most, wt.shape[0]), dtype=wt.dtype)
    for at, r0, k in iter(take, None):
        blk = v[at]
        dst = buf[:k]
        np.copyto(dst.reshape(blk.shape), blk)
        np.dot(dst, wt, out=out[r0:r0 + k])


def _conv(op, lhs, rhs, pad):
    _check_not_quantized(op)
    res = convolution_arrays(
        lhs, rhs,
        strides=op.attr("window_strides"), pad=pad,
        lhs_dil=op.attr("lhs_dilation"), rhs_dil=op.attr("rhs_dilation"),
        reversal=op.attr("window_reversal"), dn=op.attr("dimension_numbers"),
        fgc=int(op.attr("feature_group_count", 1) or 1), bgc=int(op.attr("batch_group_count", 1) or 1),
        out_dtype=op.result_dtype(0))
    want = op.result_shape(0)
    if all(d is not None for d in want) and tuple(res.shape) != tuple(want):
        raise op.unsupported(f"computed shape {res.shape} differs from declared {tuple(want)}")
    return (res,)


@kernel("stablehlo.convolution", quantized=DEQUANTIZE, accuracy=DOT)
def convolution(op, lhs, rhs):
    """See spec.md#convolution."""
    return _conv(op, lhs, rhs, op.attr("padding"))


@kernel("stablehlo.dynamic_conv", quantized=DEQUANTIZE, accuracy=DOT)
def dynamic_conv(op, lhs, rhs, padding):
    """See spec.md#dynamic_conv: padding is an operand."""
    return _conv(op, lhs, rhs, np.asarray(padding))


# ---------------------------------------------------------------------------
# cholesky / triangular_solve


def _linalg_dtype(dt: np.dtype) -> np.dtype:
    dt = np.dtype(dt)
    if dt.kind == "c":
        return dt
    if dt == np.float64:
        return dt
    return np.dtype(np.float32)


@kernel("stablehlo.cholesky", quantized=DEQUANTIZE)
def cholesky(op, a):
    """See spec.md#cholesky. Only the triangle named by ``lower`` is read;
    the other triangle of the result is zero. A matrix that is not
    Hermitian positive-definite gives NaNs."""
    lower = bool(op.attr("lower", False))
    cdt = _linalg_dtype(a.dtype)
    x = a.astype(cdt)
    tri = np.tril(x) if lower else np.conj(np.swapaxes(np.triu(x), -1, -2))
    diag = np.einsum("...ii->...i", tri).real
    herm = tri + np.conj(np.swapaxes(tri, -1, -2))
    idx = np.arange(x.shape[-1])
    herm[..., idx, idx] = diag
    try:
        L = np.linalg.cholesky(herm)
    except np.linalg.LinAlgError:
        flat = herm.reshape((-1,) + herm.shape[-2:])
        L = np.empty_like(flat)
        for i in range(flat.shape[0]):
            try:
                L[i] = np.linalg.cholesky(flat[i])
            except np.linalg.LinAlgError:
                L[i] = np.nan
        L = L.reshape(herm.shape)
    res = L if lower else np.conj(np.swapaxes(L, -1, -2))
    return (contiguous(res.astype(op.result_dtype(0))),)


def _trsm(a: np.ndarray, b: np.ndarray, lower: bool, unit: bool, trans: int) -> np.ndarray:
    """Solve op(a) x = b for one matrix; trans 0 = N, 1 = T, 2 = conj T."""
    from scipy.linalg import solve_triangular

    return solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit, check_finite=False)


@kernel("stablehlo.triangular_solve", quantized=DEQUANTIZE, accuracy=ACCUMULATE)
def triangular_solve(op, a, b):
    """See spec.md#triangular_solve (batched; only the named triangle of
    ``a`` is read)."""
    left = bool(op.attr("left_side"))
    lower = bool(op.attr("lower"))
    unit = bool(op.attr("unit_diagonal"))
    ta = str(op.attr("transpose_a", "NO_TRANSPOSE"))
    trans = {"NO_TRANSPOSE": 0, "TRANSPOSE": 1, "ADJOINT": 2}.get(ta)
    if trans is None:
        raise op.unsupported(f"transpose_a {ta}")
    cdt = _linalg_dtype(a.dtype)
    A = a.astype(cdt)
    B = b.astype(cdt)
    batch = A.shape[:-2]
    Af = A.reshape((-1,) + A.shape[-2:])
    Bf = B.reshape((-1,) + B.shape[-2:])
    X = np.empty_like(Bf)
    for i in range(Af.shape[0]):
        ai, bi = Af[i], Bf[i]
        if left:
            X[i] = _trsm(ai, bi, lower, unit, trans)
        else:
            # x op(a) = b  <=>  op(a)^T x^T = b^T
            if trans == 0:
                X[i] = _trsm(ai, bi.T, lower, unit, 1).T
            elif trans == 1:
                X[i] = _trsm(ai, bi.T, lower, unit, 0).T
            else:
                X[i] = np.conj(_trsm(ai, np.conj(bi.T), lower, unit, 0)).T
    return (contiguous(X.reshape(batch + B.shape[-2:]).astype(op.result_dtype(0))),)


# ---------------------------------------------------------------------------
# batch norm


def _bcast(v: np.ndarray, rank: int, fi: int) -> np.ndarray:
    shape = [1] * rank
    shape[fi] = v.shape[0]
    return v.reshape(shape)


def _bn_dtype(dt):
    dt = np.dtype(dt)
    return dt if dt == np.float64 else np.dtype(np.float32)


def _bn_operands(op, operand):
    """What the three batch norm ops start from: the feature index, the
    compute dtype (see ``_bn_dtype``), the operand in it and ``epsilon``
    rounded to the operand's type, then widened."""
    _check_not_quantized(op)
    eps = float(op.attr("epsilon"))
    fi = int(op.attr("feature_index"))
    cdt = _bn_dtype(operand.dtype)
    eps_c = np.asarray(eps, dtype=operand.dtype).astype(cdt)
    return fi, cdt, operand.astype(cdt), eps_c


@kernel("stablehlo.batch_norm_inference", quantized=DEQUANTIZE)
def batch_norm_inference(op, operand, scale, offset, mean, variance):
    """See spec.md#batch_norm_inference."""
    fi, cdt, x, eps_c = _bn_operands(op, operand)
    r = x.ndim
    b = lambda v: _bcast(v.astype(cdt), r, fi)  # noqa: E731
    out = (x - b(mean)) / np.sqrt(b(variance) + eps_c) * b(scale) + b(offset)
    return (contiguous(out.astype(op.result_dtype(0))),)


@kernel("stablehlo.batch_norm_training", quantized=DEQUANTIZE)
def batch_norm_training(op, operand, scale, offset):
    """See spec.md#batch_norm_training."""
    fi, cdt, x, eps_c = _bn_operands(op, operand)
    r = x.ndim
    axes = tuple(i for i in range(r) if i != fi)
    mean = x.mean(axis=axes) if x.size else np.zeros(x.shape[fi], cdt)
    centered = x - _bcast(mean, r, fi)
    var = (centered * centered).mean(axis=axes) if x.size else np.zeros(x.shape[fi], cdt)
    out = centered / np.sqrt(_bcast(var, r, fi) + eps_c) * _bcast(scale.astype(cdt), r, fi) \
        + _bcast(offset.astype(cdt), r, fi)
    return (contiguous(out.astype(op.result_dtype(0))),
            mean.astype(op.result_dtype(1)), var.astype(op.result_dtype(2)))


@kernel("stablehlo.batch_norm_grad", quantized=DEQUANTIZE)
def batch_norm_grad(op, operand, scale, mean, variance, grad_output):
    """See spec.md#batch_norm_grad (the decomposition given there)."""
    fi, cdt, x, eps_c = _bn_operands(op, operand)
    r = x.ndim
    axes = tuple(i for i in range(r) if i != fi)
    g = grad_output.astype(cdt)
    sb, mb, vb = (_bcast(v.astype(cdt), r, fi) for v in (scale, mean, variance))
    centered = x - mb
    stddev = np.sqrt(vb + eps_c)
    normalized = centered / stddev
    n = np.asarray(x.size / x.shape[fi] if x.shape[fi] else 0, dtype=cdt)
    i1 = g * n
    i2 = _bcast(g.sum(axis=axes), r, fi)
    i3 = _bcast((g * centered).sum(axis=axes), r, fi)
    i4 = i3 * centered
    i5 = i4 / (vb + eps_c)
    i6 = (i1 - i2) - i5
    grad_operand = sb / stddev / n * i6
    grad_scale = (g * normalized).sum(axis=axes)
    grad_offset = g.sum(axis=axes)
    return (contiguous(grad_operand.astype(op.result_dtype(0))),
            grad_scale.astype(op.result_dtype(1)), grad_offset.astype(op.result_dtype(2)))
