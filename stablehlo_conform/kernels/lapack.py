"""LAPACK and GPU-solver ``custom_call`` targets (spec.md#custom_call).

JAX lowers ``jnp.linalg`` on CPU to typed-FFI calls ``lapack_<p><routine>_ffi``
(``p`` in ``s d c z``), on GPUs to ``cusolver_*_ffi`` / ``hipsolver_*_ffi``.
Each target here has the semantics of the LAPACK routine it names, computed by
the same routine through :mod:`scipy.linalg.lapack` (the precision is the one
the target names: ``s``/``c`` single, ``d``/``z`` double). GPU targets run the
LAPACK routine of the operand's element type (cuSOLVER documents them as the
same factorisations).

Operands and results are logical arrays ``(batch..., rows, cols)``; the leading
dimensions are batch dimensions, looped over because LAPACK takes one matrix
per call. The handlers read matrices column-major and vectors in order;
``operand_layouts`` / ``result_layouts`` (XLA's default, row-major, when absent)
say how the program's buffers are laid out, so a program whose layout differs
from the handler's gets what the handler would read (see :func:`relayout`).

Attributes are those of the typed FFI (``mhlo.backend_config`` dictionary):
characters as ``ui8`` codes (``uplo = 'L'``, ``mode = 'V'``, ...) for LAPACK
targets, booleans (``lower``, ``compute_uv``, ``full_matrices``) for GPU ones.
``info`` outputs carry LAPACK's ``INFO`` per batch element. Output buffers that
LAPACK leaves unspecified (the input of ``gesdd`` after the call, the matrix of
``syevd`` without vectors) hold the input unchanged. An empty problem is
LAPACK's quick return (``info = 0``, nothing written) without calling LAPACK,
whose wrappers reject a leading dimension of 0.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from .custom_call import custom_target
from .random import threefry2x32

_PREFIXES = "sdcz"
_REAL = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
         np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}


def _lapack(prefix: str, name: str) -> Callable:
    from scipy.linalg import lapack

    return getattr(lapack, prefix + name)


def _config(op) -> dict:
    """The typed-FFI attributes of the op (``mhlo.backend_config`` or
    ``backend_config`` given as a dictionary)."""
    out: dict = {}
    for key in ("backend_config", "mhlo.backend_config"):
        v = op.attr(key)
        if isinstance(v, dict):
            out.update(v)
    return out


def _char(cfg: dict, key: str, default: str) -> str:
    v = cfg.get(key, default)
    return chr(v) if isinstance(v, int) and not isinstance(v, bool) else str(v)


# --------------------------------------------------------------------------- #
# layouts
# --------------------------------------------------------------------------- #


def _handler_layout(rank: int, matrix: bool) -> tuple[int, ...]:
    """The minor-to-major layout a handler reads: column-major matrices with
    the batch dimensions outermost, or plain row-major for vectors."""
    if matrix and rank >= 2:
        return (rank - 2, rank - 1) + tuple(range(rank - 3, -1, -1))
    return tuple(range(rank - 1, -1, -1))


def relayout(x: np.ndarray, src: tuple[int, ...], dst: tuple[int, ...]) -> np.ndarray:
    """The logical array whose buffer in layout ``dst`` holds the same bytes as
    ``x``'s buffer in layout ``src`` (layouts are XLA minor-to-major lists)."""
    src, dst = tuple(src), tuple(dst)
    if src == dst or x.ndim < 2:
        return x
    flat = np.transpose(x, src[::-1]).ravel()
    major = dst[::-1]
    return flat.reshape([x.shape[d] for d in major]).transpose(np.argsort(major))


def _layouts(op, key: str, n: int) -> list[tuple[int, ...] | None]:
    v = op.attr(key)
    if not v:
        return [None] * n
    return [tuple(int(i) for i in np.asarray(a).ravel()) for a in v]


def _run(op, operands, fn, matrices_in=(0,), matrices_out=(0,)) -> tuple:
    """Lay the operands out as the handler reads them, run ``fn`` and lay its
    results out as the program declares them, each cast to its type."""
    if any(np.size(x) == 0 for x in operands):
        quick = _quick_return(op, operands)
        if quick is not None:
            return quick
    lin = _layouts(op, "operand_layouts", len(operands))
    args = []
    for i, x in enumerate(operands):
        x = np.asarray(x)
        src = lin[i] if lin[i] is not None else tuple(range(x.ndim - 1, -1, -1))
        args.append(relayout(x, src, _handler_layout(x.ndim, i in matrices_in)))
    outs = fn(*args)
    lout = _layouts(op, "result_layouts", len(outs))
    res = []
    for i, y in enumerate(outs):
        t = op.result_type(i)
        y = np.asarray(y).astype(t.dtype, copy=False).reshape(t.shape if None not in t.shape else y.shape)
        dst = lout[i] if lout[i] is not None else tuple(range(y.ndim - 1, -1, -1))
        res.append(relayout(y, _handler_layout(y.ndim, i in matrices_out), dst))
    return tuple(res)


def _quick_return(op, operands) -> tuple | None:
    """An empty problem (no matrices, or matrices without rows or columns):
    LAPACK returns at once with ``info = 0``, computing and writing nothing.
    Results aliasing an operand of their shape keep it; the others (left
    unspecified) are zeros."""
    types = op.result_types
    if any(None in t.shape for t in types):
        return None
    out = []
    for i, t in enumerate(types):
        x = np.asarray(operands[i]) if i < len(operands) else None
        same = x is not None and x.shape == tuple(t.shape)
        out.append(x.astype(t.dtype) if same else np.zeros(t.shape, t.dtype))
    return tuple(out)


def _batched(core: int, fn: Callable[..., tuple], *arrays: np.ndarray) -> tuple:
    """Apply ``fn`` (one matrix problem -> tuple of arrays) over the batch
    dimensions of ``arrays`` (all but the last ``core`` of the first array;
    every array shares them) and stack the results."""
    batch = arrays[0].shape[: arrays[0].ndim - core]
    nb = len(batch)
    count = int(np.prod(batch, dtype=np.int64))
    flat = [a.reshape((count,) + a.shape[nb:]) for a in arrays]
    outs = [fn(*(a[b] for a in flat)) for b in range(count)]
    if count == 0:  # no matrices: run once on zeros to learn the result shapes
        probe = fn(*(np.zeros(a.shape[nb:], a.dtype) for a in arrays))
        return tuple(np.zeros(batch + np.shape(p), np.asarray(p).dtype) for p in probe)
    return tuple(np.stack([np.asarray(o[k]) for o in outs]).reshape(batch + np.shape(outs[0][k]))
                 for k in range(len(outs[0])))


def _prefix(op, target: str, x: np.ndarray) -> str:
    """The LAPACK precision prefix: the one a ``lapack_`` target names (its
    operand must have that element type, as the handler checks), else the
    operand's."""
    p = _REAL.get(np.dtype(x.dtype))
    m = re.match(r"lapack_([sdcz])", target)
    if m and p != m.group(1):
        want = next(d for d, q in _REAL.items() if q == m.group(1))
        raise ValueError(f"{target} takes {want} operands, not {x.dtype}")
    if p is None:
        raise op.unsupported(f"custom_call target {target!r} on element type {x.dtype}")
    return p


def _lapack_targets(routines: str | tuple[str, ...], gpu: tuple[str, ...] = ()):
    """Register ``lapack_<p><routine>_ffi`` for each prefix (``routines`` may
    give a real and a complex name, e.g. ``("syevd", "heevd")``) and the GPU
    names given."""
    names = (routines,) if isinstance(routines, str) else routines
    real, cplx = names[0], names[-1]
    targets = [f"lapack_{p}{real if p in 'sd' else cplx}_ffi" for p in _PREFIXES] + list(gpu)
    return custom_target(*targets)


def _target(op) -> str:
    return op.attr("call_target_name")


def _uplo_lower(op) -> bool:
    cfg = _config(op)
    if "lower" in cfg:
        return bool(cfg["lower"])
    return _char(cfg, "uplo", "L") == "L"


def _info(x) -> np.int32:
    return np.int32(x)


# --------------------------------------------------------------------------- #
# factorizations
# --------------------------------------------------------------------------- #


@_lapack_targets("potrf", ("cusolver_potrf_ffi", "hipsolver_potrf_ffi"))
def potrf(op, a):
    """Cholesky factorisation (LAPACK ``?potrf``): the ``uplo`` triangle of
    the result holds the factor, the other triangle keeps the input."""
    p, lower = _prefix(op, _target(op), a), _uplo_lower(op)
    fn = _lapack(p, "potrf")

    def one(m):
        c, info = fn(m, lower=lower, clean=0)
        return c, _info(info)

    return _run(op, (a,), lambda x: _batched(2, one, x))


@_lapack_targets("getrf", ("cusolver_getrf_ffi", "hipsolver_getrf_ffi"))
def getrf(op, a):
    """LU factorisation with partial pivoting (LAPACK ``?getrf``): packed
    ``L\\U``, 1-based pivot rows ``ipiv``, ``info``."""
    fn = _lapack(_prefix(op, _target(op), a), "getrf")

    def one(m):
        lu, piv, info = fn(m)
        return lu, (piv + 1).astype(np.int32), _info(info)

    return _run(op, (a,), lambda x: _batched(2, one, x))


@_lapack_targets("geqrf", ("cusolver_geqrf_ffi", "hipsolver_geqrf_ffi"))
def geqrf(op, a):
    """QR factorisation (LAPACK ``?geqrf``): ``R`` above the diagonal and the
    Householder vectors below it, and the scalars ``tau``."""
    fn = _lapack(_prefix(op, _target(op), a), "geqrf")

    def one(m):
        qr, tau, _work, _info_ = fn(m)
        return qr, tau

    return _run(op, (a,), lambda x: _batched(2, one, x))


@_lapack_targets(("orgqr", "ungqr"), ("cusolver_orgqr_ffi", "hipsolver_orgqr_ffi"))
def orgqr(op, a, tau):
    """The ``m x n`` matrix ``Q`` with orthonormal columns from ``k``
    Householder reflectors (LAPACK ``?orgqr`` / ``?ungqr``)."""
    p = _prefix(op, _target(op), a)
    fn = _lapack(p, "orgqr" if p in "sd" else "ungqr")

    def one(m, t):
        q, _work, info = fn(m, t)
        return (q,)

    return _run(op, (a, tau), lambda x, t: _batched(2, one, x, t))


@custom_target("ProductOfElementaryHouseholderReflectors")
def householder_product(op, a, tau):
    """XLA's ``ProductOfElementaryHouseholderReflectors``: ``?orgqr`` on
    logical (row-major) operands."""
    p = _prefix(op, "", a)
    fn = _lapack(p, "orgqr" if p in "sd" else "ungqr")
    return _batched(2, lambda m, t: (fn(m, t)[0],), np.asarray(a), np.asarray(tau))


@_lapack_targets(("syevd", "heevd"), ("cusolver_syevd_ffi", "hipsolver_syevd_ffi"))
def syevd(op, a):
    """Hermitian eigendecomposition (LAPACK ``?syevd`` / ``?heevd``): the
    eigenvectors (``mode = 'V'``) in place of the input, eigenvalues in
    ascending order, ``info``. Only the ``uplo`` triangle is read."""
    p, lower = _prefix(op, _target(op), a), _uplo_lower(op)
    vectors = _char(_config(op), "mode", "V") == "V"
    fn = _lapack(p, "syevd" if p in "sd" else "heevd")

    def one(m):
        w, v, info = fn(m, compute_v=int(vectors), lower=int(lower))
        return (v if vectors else m), w, _info(info)

    return _run(op, (a,), lambda x: _batched(2, one, x))


def _svd_shapes(op) -> tuple[bool, bool]:
    """(compute_uv, full_matrices) from a LAPACK ``mode`` or GPU booleans."""
    cfg = _config(op)
    if "mode" in cfg:
        mode = _char(cfg, "mode", "A")
        return mode != "N", mode == "A"
    return bool(cfg.get("compute_uv", True)), bool(cfg.get("full_matrices", True))


@_lapack_targets("gesdd", ("hipsolver_gesdd_ffi",))
def gesdd(op, a):
    """Singular value decomposition by divide and conquer (LAPACK ``?gesdd``):
    ``(a, s, u, vt, info)``; ``mode`` ``'A'`` full, ``'S'`` thin, ``'N'`` no
    vectors (``u``/``vt`` zero)."""
    return _svd(op, a, "gesdd")


@_lapack_targets("gesvd", ("cusolver_gesvd_ffi", "hipsolver_gesvd_ffi", "cusolver_gesvdj_ffi",
                           "hipsolver_gesvdj_ffi"))
def gesvd(op, a):
    """Singular value decomposition (LAPACK ``?gesvd``): ``(a, s, u, vt,
    info)``. The Jacobi GPU variants (``gesvdj``) compute the same
    decomposition, run here through ``?gesvd``, and return ``V`` where the
    others return ``Vᴴ``. With ``transposed = true`` (GPU ``gesvd`` of a
    wide matrix) the handler reads its column-major matrix from a row-major
    ``m x n`` buffer, i.e. ``Aᵀ``, and writes the factors of ``Aᵀ`` column-major;
    read back row-major these are ``(a, s, Vᴴ, U)`` of ``A``."""
    return _svd(op, a, "gesvd")


def _svd(op, a, routine: str):
    fn = _lapack(_prefix(op, _target(op), a), routine)
    uv, full = _svd_shapes(op)
    ushape, vshape = op.result_shape(2)[-2:], op.result_shape(3)[-2:]

    jacobi = "gesvdj" in _target(op)
    transposed = bool(_config(op).get("transposed", False))
    if transposed:
        ushape, vshape = vshape, ushape

    def one(m):
        u, s, vt, info = fn(m, compute_uv=int(uv), full_matrices=int(full))
        if not uv:
            u, vt = np.zeros(ushape, m.dtype), np.zeros(vshape, m.dtype)
        elif jacobi:  # cuSOLVER/hipSOLVER gesvdj return V, not Vᴴ
            vt = np.conj(vt.T)
        if transposed:
            return m, s, vt, u, _info(info)
        return m, s, u, vt, _info(info)

    if transposed:  # every matrix as a row-major buffer (see gesvd)
        return _run(op, (a,), lambda x: _batched(2, one, x), matrices_in=(), matrices_out=())
    return _run(op, (a,), lambda x: _batched(2, one, x), matrices_out=(0, 2, 3))


def _complex_vectors(v: np.ndarray, wi: np.ndarray) -> np.ndarray:
    """LAPACK's packed real eigenvectors as complex ones: for a conjugate
    pair ``(j, j+1)`` (``wi[j] > 0``) the vectors are ``v[:, j] ± i v[:, j+1]``."""
    out = v.astype(np.result_type(v.dtype, np.complex64))
    j = np.nonzero(wi > 0)[0]
    j = j[j + 1 < v.shape[-1]]
    re_, im_ = v[:, j], v[:, j + 1]
    out[:, j] = re_ + 1j * im_
    out[:, j + 1] = re_ - 1j * im_
    return out


@_lapack_targets("geev")
def geev(op, a):
    """Eigendecomposition of a general matrix (LAPACK ``?geev``): real types
    give ``(wr, wi, vl, vr, info)`` with the vectors unpacked to complex,
    complex types ``(w, vl, vr, info)``. Each vector has unit 2-norm and its
    largest component real; ``compute_left``/``compute_right`` ``'N'`` give
    zero vectors."""
    p = _prefix(op, _target(op), a)
    cfg = _config(op)
    left, right = _char(cfg, "compute_left", "V") == "V", _char(cfg, "compute_right", "V") == "V"
    fn = _lapack(p, "geev")
    real = p in "sd"

    def one(m):
        out = fn(m, compute_vl=int(left), compute_vr=int(right))
        if real:
            wr, wi, vl, vr, info = out
            vl = _complex_vectors(vl, wi) if left else np.zeros(m.shape, np.result_type(m, np.complex64))
            vr = _complex_vectors(vr, wi) if right else np.zeros(m.shape, np.result_type(m, np.complex64))
            return wr, wi, vl, vr, _info(info)
        w, vl, vr, info = out
        vl = vl if left else np.zeros(m.shape, m.dtype)
        vr = vr if right else np.zeros(m.shape, m.dtype)
        return w, vl, vr, _info(info)

    mats = (2, 3) if real else (1, 2)
    return _run(op, (a,), lambda x: _batched(2, one, x), matrices_out=mats)


@_lapack_targets("gees")
def gees(op, a):
    """Schur decomposition (LAPACK ``?gees``): real types give ``(t, vs, wr,
    wi, sdim, info)``, complex types ``(t, vs, w, sdim, info)``; ``mode = 'N'``
    gives zero Schur vectors. Eigenvalue sorting (``sort = 'S'``) needs a
    selection function the call does not carry: unsupported."""
    p = _prefix(op, _target(op), a)
    cfg = _config(op)
    if _char(cfg, "sort", "N") != "N":
        raise op.unsupported(f"custom_call target {_target(op)!r} with sort = 'S'")
    vectors = _char(cfg, "mode", "V") == "V"
    fn = _lapack(p, "gees")

    def one(m):
        out = fn(lambda *x: 0, m, compute_v=int(vectors), sort_t=0)
        vs = out[-3] if vectors else np.zeros(m.shape, m.dtype)
        if p in "sd":
            t, sdim, wr, wi, _vs, _work, info = out
            return t, vs, wr, wi, _info(sdim), _info(info)
        t, sdim, w, _vs, _work, info = out
        return t, vs, w, _info(sdim), _info(info)

    return _run(op, (a,), lambda x: _batched(2, one, x), matrices_out=(0, 1))


@_lapack_targets("gehrd")
def gehrd(op, a):
    """Reduction to upper Hessenberg form (LAPACK ``?gehrd``) of rows and
    columns ``low..high`` (1-based, attributes): ``(a, tau, info)``."""
    p = _prefix(op, _target(op), a)
    cfg = _config(op)
    fn = _lapack(p, "gehrd")

    def one(m):
        n = m.shape[-1]
        lo, hi = int(cfg.get("low", 1)), int(cfg.get("high", n))
        ht, tau, info = fn(m, lo=lo - 1, hi=hi - 1)
        return ht, tau[: max(n - 1, 0)], _info(info)

    return _run(op, (a,), lambda x: _batched(2, one, x))


@_lapack_targets(("sytrd", "hetrd"), ("cusolver_sytrd_ffi", "hipsolver_sytrd_ffi"))
def sytrd(op, a):
    """Reduction of a Hermitian matrix to real tridiagonal form (LAPACK
    ``?sytrd`` / ``?hetrd``) from its ``uplo`` triangle: ``(a, d, e, tau,
    info)``."""
    p, lower = _prefix(op, _target(op), a), _uplo_lower(op)
    fn = _lapack(p, "sytrd" if p in "sd" else "hetrd")

    def one(m):
        c, d, e, tau, info = fn(m, lower=int(lower))
        return c, d, e, tau, _info(info)

    return _run(op, (a,), lambda x: _batched(2, one, x))


def _gtsv_one(fn):
    def one(dl, d, du, b):
        """JAX's convention: ``dl[0]`` and ``du[-1]`` are outside the matrix."""
        n = d.shape[-1]
        if n == 0:
            return dl, d, du, b, _info(0)
        du2, d2, du_, x, info = fn(dl[1:], d, du[:-1], b)
        return (np.concatenate([dl[:1], du2]), d2, np.concatenate([du_, du[-1:]]), x, _info(info))

    return one


@_lapack_targets("gtsv")
def gtsv(op, dl, d, du, b):
    """Tridiagonal solve (LAPACK ``?gtsv``) with the diagonals given as
    length-``n`` vectors (``dl[0]``, ``du[n-1]`` unused): ``(dl, d, du, x,
    info)`` with LAPACK's overwritten diagonals."""
    one = _gtsv_one(_lapack(_prefix(op, _target(op), d), "gtsv"))
    return _run(op, (dl, d, du, b), lambda *x: _batched(1, one, *x), matrices_in=(3,), matrices_out=(3,))


@custom_target("cusparse_gtsv2_ffi", "hipsparse_gtsv2_ffi")
def gtsv2(op, dl, d, du, b):
    """cuSPARSE ``gtsv2`` (tridiagonal solve without pivoting; run here with
    LAPACK ``?gtsv``, which pivots and agrees where both are stable): ``x``."""
    one = _gtsv_one(_lapack(_prefix(op, "", d), "gtsv"))

    def solve(dl_, d_, du_, b_):
        return (_batched(1, one, dl_, d_, du_, b_)[3],)

    return _run(op, (dl, d, du, b), solve, matrices_in=(3,), matrices_out=(0,))


@_lapack_targets("trsm")
def trsm(op, a, b):
    """Triangular solve (BLAS ``?trsm`` with ``alpha = 1``): ``op(A) X = B``
    (``side = 'L'``) or ``X op(A) = B``; ``trans_x`` ``N``/``T``/``C``,
    ``diag`` ``U`` for a unit diagonal."""
    from scipy.linalg import blas

    p = _prefix(op, _target(op), a)
    cfg = _config(op)
    fn = getattr(blas, p + "trsm")
    side = int(_char(cfg, "side", "L") == "R")
    lower = int(_char(cfg, "uplo", "L") == "L")
    trans = "NTC".index(_char(cfg, "trans_x", "N"))
    diag = int(_char(cfg, "diag", "N") == "U")

    def one(m, rhs):
        return (fn(1.0, m, rhs, side=side, lower=lower, trans_a=trans, diag=diag),)

    return _run(op, (a, b), lambda x, y: _batched(2, one, x, y), matrices_in=(0, 1))


# --------------------------------------------------------------------------- #
# GPU helpers
# --------------------------------------------------------------------------- #


@custom_target("cu_lu_pivots_to_permutation", "hip_lu_pivots_to_permutation")
def lu_pivots_to_permutation(op, pivots):
    """The row permutation of ``P A = L U`` from 0-based pivot rows: start
    from the identity of the result's size and swap rows ``i`` and
    ``pivots[i]`` in order (vectorised over the batch); a pivot outside
    ``[0, size)`` swaps nothing, as the GPU kernels do."""
    perm = pivots_to_permutation(pivots, op.result_shape(0)[-1])
    return (perm.astype(op.result_dtype(0)),)


def pivots_to_permutation(pivots, size: int) -> np.ndarray:
    """Apply the row swaps ``i <-> pivots[..., i]`` (0-based) in order to the
    identity permutation of ``size``."""
    piv = np.asarray(pivots).astype(np.int64)
    batch = piv.shape[:-1]
    flat = piv.reshape(-1, piv.shape[-1])
    perm = np.broadcast_to(np.arange(size, dtype=np.int64), (flat.shape[0], size)).copy()
    rows = np.arange(flat.shape[0])
    for i in range(min(flat.shape[1], size)):
        ok = (flat[:, i] >= 0) & (flat[:, i] < size)  # out-of-range pivots swap nothing
        r, j = rows[ok], flat[ok, i]
        pi, pj = perm[r, i].copy(), perm[r, j].copy()
        perm[r, i], perm[r, j] = pj, pi
    return perm.reshape(batch + (size,))


@custom_target("cu_threefry2x32_ffi", "hip_threefry2x32_ffi", "cu_threefry2x32", "hip_threefry2x32")
def threefry2x32_target(op, k0, k1, x0, x1):
    """Threefry-2x32 (20 rounds) on broadcast keys and counters, as JAX's
    ``threefry2x32`` primitive."""
    shape = np.broadcast_shapes(*(np.shape(v) for v in (k0, k1, x0, x1)))
    k0, k1, x0, x1 = (np.broadcast_to(np.asarray(v, np.uint32), shape).ravel() for v in (k0, k1, x0, x1))
    y0, y1 = threefry2x32(k0, k1, x0, x1)  # keys element-wise
    return y0.reshape(shape), y1.reshape(shape)


_LEGACY_GPU = [f"{lib}_{r}" for lib in ("cusolver", "hipsolver")
               for r in ("potrf", "getrf", "geqrf", "orgqr", "syevd", "syevj", "gesvd", "gesvdj", "sytrd")]
_LEGACY_GPU += [f"{lib}_{r}_batched" for lib in ("cublas", "hipblas") for r in ("getrf", "geqrf")]
_LEGACY_CPU = [f"lapack_{p}{r}" for p in _PREFIXES
               for r in ("potrf", "getrf", "geqrf", "orgqr", "ungqr", "syevd", "heevd", "gesdd", "geev", "gees",
                         "gehrd", "sytrd", "hetrd")] + [f"blas_{p}trsm" for p in _PREFIXES]


@custom_target(*_LEGACY_GPU, *_LEGACY_CPU)
def legacy_solver(op, *operands):
    """Solver calls of the API before the typed FFI: their sizes and options
    travel in an undocumented binary descriptor (GPU) or positional scalar
    operands (CPU)."""
    t = op.attr("call_target_name")
    raise op.unsupported(f"custom_call target {t!r}: a legacy solver call with an undocumented descriptor "
                         f"(exports since 2024 use {t.replace('blas_', 'lapack_')}_ffi)")
