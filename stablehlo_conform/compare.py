"""Dtype-aware comparison of tensors.

Integers, booleans: exact. Floats: NaN equals NaN, infinities and signed
zeros exact, otherwise within a ULP budget of the element type; ULP distance
treats subnormals the way the official ``check.expect_close`` does (rounded
to zero or the smallest normal, since backends may flush them). Complex:
per component.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from . import types as T

# default ULP budgets per element type for comparisons between backends
DEFAULT_ULP = {"f64": 4, "f32": 4, "f16": 2, "bf16": 2, "complex<f32>": 4, "complex<f64>": 4}


def _float_info(dtype: np.dtype):
    if dtype in (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)):
        return np.finfo(dtype)
    return ml_dtypes.finfo(dtype)


def _bit_width(dtype: np.dtype) -> int:
    return _float_info(dtype).bits


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise ULP distance between two float arrays of one dtype
    (as uint64; NaN vs NaN is 0, NaN vs number is the maximum)."""
    a = np.asarray(a)
    b = np.asarray(b)
    if np.iscomplexobj(a):
        return np.maximum(ulp_distance(a.real, b.real), ulp_distance(a.imag, b.imag))
    dt = a.dtype
    info = _float_info(dt)
    bits = _bit_width(dt)
    signed = not (dt == np.dtype(ml_dtypes.float8_e8m0fnu))
    ab = T.to_bits(a).astype(np.uint64)
    bb = T.to_bits(b).astype(np.uint64)
    mask = np.uint64((1 << bits) - 1)
    ab &= mask
    bb &= mask
    if signed:
        sign = np.uint64(1 << (bits - 1))
        na, nb = (ab & sign) != 0, (bb & sign) != 0
        ma, mb = ab & ~sign, bb & ~sign
    else:
        na = nb = np.zeros(a.shape, bool)
        ma, mb = ab, bb
    ma = ma.astype(np.int64)
    mb = mb.astype(np.int64)
    fa = np.isfinite(a.astype(np.float64))
    fb = np.isfinite(b.astype(np.float64))
    both_finite = fa & fb
    tiny = np.array([info.smallest_normal], dtype=dt)
    z = int(T.to_bits(tiny).astype(np.int64)[0]) - 1
    if z > 0:
        def squash(m):
            return np.where(m > z, m - z, np.where(m < (z + 1) // 2, 0, 1))
        ma = np.where(both_finite, squash(ma), ma)
        mb = np.where(both_finite, squash(mb), mb)
    diff_sign = na != nb
    dist = np.where(both_finite & diff_sign, ma + mb, np.abs(ma - mb)).astype(np.uint64)
    an = np.isnan(a.astype(np.float64))
    bn = np.isnan(b.astype(np.float64))
    dist = np.where(an & bn, np.uint64(0), dist)
    dist = np.where(an ^ bn, np.uint64(np.iinfo(np.uint64).max), dist)
    return dist


@dataclass
class Mismatch:
    index: tuple
    actual: object
    expected: object
    ulp: int | None
    count: int
    total: int
    max_ulp: int | None = None
    max_abs: float | None = None

    def describe(self) -> str:
        s = (f"{self.count}/{self.total} elements differ; first at index {list(self.index)}: "
             f"actual {self.actual!r}, expected {self.expected!r}")
        if self.ulp is not None:
            s += f" ({self.ulp} ULP)"
        if self.max_ulp is not None:
            s += f"; max {self.max_ulp} ULP"
        if self.max_abs is not None:
            s += f", max abs diff {self.max_abs:.3g}"
        return s


def _scalar(x):
    x = np.asarray(x)
    if x.dtype.kind == "c":
        return complex(x)
    if x.dtype.name.startswith(("int", "uint")):  # incl. ml_dtypes' sub-byte integers (kind "V")
        return int(x.astype(np.int64))
    if x.dtype.kind == "f" or x.dtype.name in ("bfloat16",) or x.dtype.kind == "V":
        return float(x.astype(np.float64))
    try:
        return x.item() if x.dtype.kind in "biu" else float(x.astype(np.float64))
    except Exception:
        return str(x)


def is_float_dtype(dt: np.dtype) -> bool:
    return dt.kind in "fc" or dt.name.startswith(("float", "bfloat"))


def _almost_equal(a: np.ndarray, b: np.ndarray, tol: float) -> np.ndarray:
    """Element-wise closeness with an absolute tolerance, as the official
    ``check.expect_almost_eq``: equal values (incl. both NaN) match; an
    infinity matches only itself; otherwise ``|a - b| <= tol`` and, when both
    are non-zero, the signs agree. (The official check also rejects a tiny
    negative value against an expected +0.0, which only its asymmetric
    treatment of zero does; here a zero matches either sign.)"""
    a = np.asarray(a).astype(np.float64)
    b = np.asarray(b).astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        equal = (a == b) | (np.isnan(a) & np.isnan(b))
        finite = np.isfinite(a) & np.isfinite(b)
        same_sign = (np.signbit(a) == np.signbit(b)) | (a == 0) | (b == 0)
        close = finite & same_sign & (np.abs(a - b) <= tol)
    return equal | close


# elements compared at a time: the temporaries of a comparison (ULP distances,
# masks) stay this small however large the tensors (a splat is a view)
BLOCK = 1 << 20
_NO_ULP = np.iinfo(np.uint64).max


def _bad(a: np.ndarray, b: np.ndarray, max_ulp: int | None, atol: float | None,
         exact_bits: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """The mismatch mask of two flat blocks, and their ULP distances (floats)."""
    if not is_float_dtype(a.dtype):
        return a != b, None
    if exact_bits:
        return T.to_bits(a) != T.to_bits(b), None
    ulp = ulp_distance(a, b)
    if atol is None:
        return ulp > np.uint64(max_ulp or 0), ulp
    # signed zeros and infinities compare exactly
    if a.dtype.kind == "c":
        ok = _almost_equal(a.real, b.real, atol) & _almost_equal(a.imag, b.imag, atol)
    else:
        ok = _almost_equal(a, b, atol)
    return ~ok, ulp


def compare(actual: np.ndarray, expected: np.ndarray, *, max_ulp: int | None = 0,
            atol: float | None = None, exact_bits: bool = False) -> Mismatch | None:
    """None when equal within the budget, else the first mismatch.

    ``max_ulp`` bounds the ULP distance of floats; ``atol`` (if given) accepts
    elements whose absolute difference is within it instead. Any rank (0
    included) and size: elements are compared :data:`BLOCK` at a time in
    row-major order.
    """
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    if actual.shape != expected.shape:
        return Mismatch((), f"shape {actual.shape}", f"shape {expected.shape}", None, 1, 1)
    if actual.dtype != expected.dtype:
        return Mismatch((), f"dtype {actual.dtype}", f"dtype {expected.dtype}", None, 1, 1)
    total = actual.size
    if total > 1 and not any(actual.strides) and not any(expected.strides):
        # two splats (broadcast views of one element each): one comparison stands for all
        m = compare(actual.reshape(-1)[:1], expected.reshape(-1)[:1], max_ulp=max_ulp, atol=atol,
                    exact_bits=exact_bits)
        if m is not None:
            m.index, m.count, m.total = (0,) * actual.ndim, total, total
        return m
    flat_a, flat_b = actual.reshape(-1), expected.reshape(-1)  # views for contiguous arrays and splats
    blocks = range(0, total, BLOCK)
    count = 0
    first = first_ulp = None
    for i in blocks:
        bad, ulp = _bad(flat_a[i:i + BLOCK], flat_b[i:i + BLOCK], max_ulp, atol, exact_bits)
        n = int(np.count_nonzero(bad))
        if n and first is None:
            k = int(np.flatnonzero(bad)[0])
            first = i + k
            first_ulp = int(ulp[k]) if ulp is not None else None
        count += n
    if not count:
        return None
    return _describe(flat_a, flat_b, actual.shape, first, first_ulp, count, exact_bits)


def _describe(flat_a: np.ndarray, flat_b: np.ndarray, shape: tuple, first: int, first_ulp: int | None,
              count: int, exact_bits: bool = False) -> Mismatch:
    """The mismatch report: the first differing element (by flat position: the
    same for every rank, rank 0 included), both values, the count and, for
    floats, the largest ULP and absolute differences (a second pass over the
    blocks, on failures only)."""
    idx = tuple(int(i) for i in np.unravel_index(first, shape))
    m = Mismatch(idx, _scalar(flat_a[first]), _scalar(flat_b[first]),
                 first_ulp if first_ulp != _NO_ULP else None, count, int(flat_a.size))
    if not is_float_dtype(flat_a.dtype):
        return m
    max_ulps, max_abs = [], []
    for i in range(0, flat_a.size, BLOCK):
        a, b = flat_a[i:i + BLOCK], flat_b[i:i + BLOCK]
        if not exact_bits:
            ulp = ulp_distance(a, b)
            finite = ulp[ulp != _NO_ULP]
            if finite.size:
                max_ulps.append(int(finite.max()))
        with np.errstate(invalid="ignore", over="ignore"):
            d = np.abs(a.astype(np.complex128) - b.astype(np.complex128))
        d = d[np.isfinite(d)]
        if d.size:
            max_abs.append(float(d.max()))
    m.max_ulp = max(max_ulps) if max_ulps else None
    m.max_abs = max(max_abs) if max_abs else None
    return m


def mismatch_at(actual: np.ndarray, expected: np.ndarray, bad: np.ndarray) -> Mismatch | None:
    """None when no element of ``bad`` is set, else the mismatch report of
    :func:`compare` for the elements a caller's own rule marked ``bad``."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    flat_bad = np.broadcast_to(np.asarray(bad, dtype=bool), actual.shape).reshape(-1)
    count = int(np.count_nonzero(flat_bad))
    if not count:
        return None
    flat_a, flat_b = actual.reshape(-1), expected.reshape(-1)
    first = int(np.flatnonzero(flat_bad)[0])
    first_ulp = int(ulp_distance(flat_a[first:first + 1], flat_b[first:first + 1])[0]) \
        if is_float_dtype(actual.dtype) else None
    return _describe(flat_a, flat_b, actual.shape, first, first_ulp, count)
