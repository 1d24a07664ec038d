"""Conversions: ``convert``, ``bitcast_convert``, ``reduce_precision``.

See spec.md#convert, spec.md#bitcast_convert, spec.md#reduce_precision.

``convert`` (the spec leaves out-of-range cases TBD; these follow XLA):

- bool -> any: false is 0, true is 1; any -> bool: non-zero is true (for
  complex sources only the real part counts).
- integer -> integer wraps (two's complement), also for sub-byte widths.
- integer -> float rounds to nearest even, once (64-bit integers are first
  rounded to ``f64`` with round-to-odd so a narrower target is not rounded
  twice); overflow gives infinity.
- float -> integer truncates toward zero and saturates at the target's
  limits; NaN gives 0; negative values give 0 for unsigned targets.
- float -> float rounds to nearest even once; overflow gives infinity
  (types without infinity follow ml_dtypes: NaN or saturation). A value
  below ``2**-126`` rounds to the nearer power of two in ``f8E8M0FNU``
  (:func:`stablehlo_conform.numeric.round_to_e8m0`; ``ml_dtypes`` rounds such values up).
- complex -> complex converts each part; complex -> real drops the imaginary
  part; real -> complex has a zero imaginary part.

``bitcast_convert`` works on the little-endian bit stream of the elements:
``i1`` is one bit, sub-byte types are their own width, and complex values
are the real part's bits followed by the imaginary part's. When the widths
differ the last result (or operand) dimension holds the pieces, least
significant first.

``reduce_precision`` rounds the mantissa to nearest even, then overflows to
infinity / flushes to zero (subnormals of the narrow format included) by the
exponent range. NaN stays NaN when ``mantissa_bits > 0`` and becomes an
infinity of the same sign when ``mantissa_bits = 0``.
"""

from __future__ import annotations

from functools import lru_cache

import ml_dtypes
import numpy as np

from .. import types as T
from ..numeric import (
    E8M0,
    F32,
    F64,
    NATIVE_FLOATS,
    bits_of,
    float_bits,
    float_format,
    float_from_bits,
    int_limits,
    kind_of,
    make_complex,
    out,
    round_to,
    to_i64,
    wrap_i64,
)
from ..opinfo import DEQUANTIZE, EXACT, FastPath, STORAGE
from . import _fast
from .elementwise import _element, apply
from .registry import kernel

_U64 = np.uint64


# --------------------------------------------------------------------------- #
# convert
# --------------------------------------------------------------------------- #

def _int_to_f64_odd(x: np.ndarray) -> np.ndarray:
    """64-bit integers to f64 with round-to-odd on inexact results."""
    x0 = np.asarray(x)
    x = np.atleast_1d(x0)
    with np.errstate(all="ignore"):
        f = x.astype(F64)
        if x.dtype == np.dtype(np.uint64):
            back = np.where(f >= 2.0**64, np.uint64(0), f.astype(np.uint64))
            diff = (x - back).view(np.int64)
        else:
            back = np.where(f >= 2.0**63, np.int64(-(2**63)), f.astype(np.int64))
            diff = x.astype(np.int64) - back
        inexact = diff != 0
        if inexact.any():
            even = (f.view(np.uint64) & _U64(1)) == 0
            toward = np.where(diff > 0, np.inf, -np.inf)
            f = np.where(inexact & even, np.nextafter(f, toward), f)
    return f.reshape(x0.shape)


def int_to_float(x: np.ndarray, dt) -> np.ndarray:
    dt = np.dtype(dt)
    x = np.asarray(x)
    k = kind_of(dt)
    comp = np.dtype(np.float32 if dt == np.dtype(np.complex64) else np.float64) if k == "complex" else dt
    if comp in (F32, F64, np.dtype(np.float16)) and x.dtype.kind in "iub" and bits_of(x.dtype) >= 8:
        with np.errstate(all="ignore"):
            r = x.astype(comp)
        if comp == np.dtype(np.float16) and bits_of(x.dtype) > 53:
            r = _int_to_f64_odd(x).astype(comp)
    else:
        if bits_of(x.dtype) > 53:
            w = _int_to_f64_odd(x)
        else:
            w = to_i64(x).astype(F64)
        r = round_to(w, comp)
    return r.astype(dt) if k == "complex" else r


def float_to_int(x: np.ndarray, dt) -> np.ndarray:
    """Truncate toward zero, saturate, NaN -> 0."""
    dt = np.dtype(dt)
    lo, hi = int_limits(dt)
    w = np.asarray(x)
    if w.dtype.kind == "c":
        w = w.real
    if _clips_exactly(w.dtype, dt):
        return _float_to_int_clipped(w, dt, lo, hi)
    with np.errstate(all="ignore"):  # a signaling NaN is flagged as an invalid cast; it becomes 0 below
        w = w.astype(F64) if w.dtype in (F32, F64, np.dtype(np.float16)) else w.astype(F32).astype(F64)
        t = np.trunc(w)
        nan = np.isnan(t)
        t = np.where(nan, 0.0, t)
        over = t >= float(hi + 1)
        under = t < float(lo)
        if kind_of(dt) == "uint":
            mid = np.where(over | under, 0.0, t).astype(np.uint64)
            r = np.where(over, np.uint64(hi), np.where(under, np.uint64(lo), mid))
            return r.astype(np.uint64).astype(dt) if bits_of(dt) >= 8 else wrap_i64(r.astype(np.int64), dt)
        mid = np.where(over | under, 0.0, t).astype(np.int64)
        r = np.where(over, np.int64(hi), np.where(under, np.int64(lo), mid))
        # saturated into [lo, hi]: nothing left to wrap
        return r.astype(dt) if bits_of(dt) >= 8 else wrap_i64(r, dt)


@lru_cache(maxsize=None)
def _clips_exactly(src: np.dtype, dt: np.dtype) -> bool:
    """Whether ``src`` (f16/f32/f64) holds both limits of the integer type
    ``dt`` (8 to 32 bits) exactly: :func:`_float_to_int_clipped` applies."""
    if src not in NATIVE_FLOATS or dt.kind not in "iu" or dt.itemsize > 4:
        return False
    top = float(np.finfo(src).max)
    return all(abs(v) <= top and int(src.type(v)) == v for v in int_limits(dt))


def _float_to_int_clipped(w: np.ndarray, dt: np.dtype, lo: int, hi: int) -> np.ndarray:
    """:func:`float_to_int` for an f16/f32/f64 source whose type holds the
    target's limits exactly (e.g. f32 -> i8/ui8/i16/ui16, f64 -> i32/ui32),
    without widening: clipping to the integer limits commutes with truncation
    toward zero (both limits are integers), so ``clip`` then NumPy's cast
    (which truncates, and is defined for every clipped value) gives the
    saturated result; NaN, which ``clip`` keeps, is then set to 0."""
    with np.errstate(all="ignore"):
        r = np.asarray(np.clip(w, w.dtype.type(lo), w.dtype.type(hi)).astype(dt))
    nan = np.isnan(w)
    if nan.any():
        r[nan] = 0
    return r


def convert_values(x: np.ndarray, dt) -> np.ndarray:
    """Element-wise conversion of ``x`` into dtype ``dt`` (see module docs)."""
    with np.errstate(all="ignore"):
        return _convert(x, dt)


def _convert(x: np.ndarray, dt) -> np.ndarray:
    dt = np.dtype(dt)
    x = np.asarray(x)
    src = kind_of(x.dtype)
    dst = kind_of(dt)
    if x.dtype == dt:
        return x.copy()
    if dst == "bool":
        if src == "complex":
            return x.real != 0
        if src == "float":
            return x.astype(F32) != 0 if x.dtype not in (F32, F64) else x != 0
        return to_i64(x) != 0 if src != "uint" or bits_of(x.dtype) < 64 else x != 0
    if src == "bool":
        return convert_values(x.astype(np.uint8), dt)
    if src in ("int", "uint"):
        if dst in ("int", "uint"):
            if bits_of(dt) >= 8 and bits_of(x.dtype) >= 8:
                with np.errstate(all="ignore"):
                    return x.astype(dt)
            return wrap_i64(to_i64(x), dt)
        return int_to_float(x, dt)
    # float or complex source
    if dst in ("int", "uint"):
        return float_to_int(x, dt)
    if src == "complex" and dst == "complex":
        return x.astype(dt)
    if src == "complex":
        x = x.real
    if dst == "complex":
        comp = np.dtype(np.float32 if dt == np.dtype(np.complex64) else np.float64)
        return _float_to_float(x, comp).astype(dt)
    return _float_to_float(x, dt)


def _float_to_float(x: np.ndarray, dt) -> np.ndarray:
    dt = np.dtype(dt)
    if x.dtype == dt:
        return x
    with np.errstate(all="ignore"):
        if x.dtype == F64:
            return round_to(x, dt)
        if x.dtype in (F32, np.dtype(np.float16)):
            return round_to(x.astype(F64), dt) if dt == E8M0 else x.astype(dt)
        # ml_dtypes source: exact through f32 (8-bit sources through a table of that conversion)
        return round_to(_fast.f32_values(x).astype(F64), dt) if dt.kind == "V" else _fast.f32_values(x).astype(dt)


def _convert_dt(dt, x):
    return convert_values(x, dt)


_fast_convert_values = _fast.elementwise(_convert_dt)


def _fast_convert(op):
    """``convert`` of plain types: the operand itself to its own type (the kernel copies it),
    ``astype`` between integer types of 8 bits or more, a float type narrower than f32's values
    as f32 (:func:`._fast.f32_values`: the kernel's ``x.astype(f32).astype(f32)``), else
    :func:`convert_values` directly (8-bit sources and large 16-bit ones through a table of it,
    :func:`._fast.elementwise`)."""
    types = _fast.plain_types(op)
    if types is None:
        return None
    (src,), dt, _ = types
    if src == dt:
        return FastPath(lambda x: x, scalars=True)
    if _fast.native_family(src) == _fast.native_family(dt) == "int":
        return FastPath(lambda x: x.astype(dt), scalars=True)
    if dt == F32 and kind_of(src) == "float" and src not in NATIVE_FLOATS:
        return FastPath(_fast.f32_values, views=True, fresh=True)
    return _fast_convert_values(op)


@kernel("stablehlo.convert", folds=True, accuracy=EXACT, fast=_fast_convert)
@kernel("mhlo.convert", fast=_fast_convert)
def convert(op, x):
    """See spec.md#convert."""
    return apply(op, lambda dt, v: convert_values(v, dt), (x,))


# --------------------------------------------------------------------------- #
# bitcast_convert
# --------------------------------------------------------------------------- #

def _element_bits(x: np.ndarray, nbits: int) -> np.ndarray:
    """Bits of each element, least significant first: shape (..., nbits)."""
    x = np.asarray(x)
    if x.dtype == np.dtype(np.bool_):
        return x.astype(np.uint8)[..., None]
    raw = np.ascontiguousarray(x).view(np.uint8).reshape(x.shape + (x.dtype.itemsize,))
    bits = np.unpackbits(raw, axis=-1, bitorder="little")
    return bits[..., :nbits]


def _from_element_bits(bits: np.ndarray, dt: np.dtype, nbits: int) -> np.ndarray:
    dt = np.dtype(dt)
    if dt == np.dtype(np.bool_):
        return bits[..., 0].astype(np.bool_)
    item = dt.itemsize
    pad = item * 8 - nbits
    if pad:
        bits = np.concatenate([bits, np.zeros(bits.shape[:-1] + (pad,), np.uint8)], axis=-1)
    raw = np.packbits(bits, axis=-1, bitorder="little")
    k = kind_of(dt)
    if nbits < 8 and k in ("int", "uint"):
        v = raw[..., 0].astype(np.int64)
        return wrap_i64(v, dt)
    shape = raw.shape[:-1]
    return np.ascontiguousarray(raw).view(dt).reshape(shape)


@kernel("stablehlo.bitcast_convert", folds=True, quantized=STORAGE, accuracy=EXACT)
def bitcast_convert(op, x):
    """See spec.md#bitcast_convert."""
    src_el = _element(op.operand_type(0))
    dst_el = _element(op.result_type(0))
    sb = src_el.bits if not isinstance(src_el, T.QuantizedType) else src_el.storage.bits
    db = dst_el.bits if not isinstance(dst_el, T.QuantizedType) else dst_el.storage.bits
    dt = op.result_dtype(0)
    x = np.asarray(x)
    if sb % 8 == 0 and db % 8 == 0 and x.dtype.itemsize * 8 == sb and np.dtype(dt).itemsize * 8 == db:
        # whole bytes: the little-endian byte stream is the bit stream
        raw = np.ascontiguousarray(x).view(np.uint8).reshape(x.shape + (sb // 8,))
        if db <= sb:
            shape = x.shape + ((sb // db,) if db < sb else ())
        else:
            shape = x.shape[:-1]
        raw = np.ascontiguousarray(raw.reshape(shape + (db // 8,)))
        return (raw.view(dt).reshape(shape),)
    if x.dtype.kind == "c":
        # real part bits, then imaginary part bits
        comp_bits = sb // 2
        parts = np.stack([x.real, x.imag], axis=-1)
        bits = _element_bits(parts, comp_bits).reshape(x.shape + (sb,))
    else:
        bits = _element_bits(x, sb)
    if np.dtype(dt).kind == "c":
        comp = np.dtype(np.float32 if np.dtype(dt) == np.dtype(np.complex64) else np.float64)
        half = db // 2

        def decode(bb):
            re = _from_element_bits(bb[..., :half], comp, half)
            im = _from_element_bits(bb[..., half:], comp, half)
            return make_complex(re, im, dt)
    else:

        def decode(bb):
            return _from_element_bits(bb, dt, db)

    if sb == db:
        return (out(decode(bits), dt),)
    if db < sb:
        n = sb // db
        bits = bits.reshape(x.shape + (n, db))
        return (out(decode(bits), dt),)
    n = db // sb
    shape = x.shape[:-1]
    bits = bits.reshape(shape + (n * sb,))
    return (out(decode(bits), dt),)


# --------------------------------------------------------------------------- #
# reduce_precision
# --------------------------------------------------------------------------- #

_IEEE_LIKE = frozenset(np.dtype(t) for t in (
    np.float16, np.float32, np.float64, ml_dtypes.bfloat16,
    ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3, ml_dtypes.float8_e3m4))


def reduce_precision_values(x: np.ndarray, exponent_bits: int, mantissa_bits: int) -> np.ndarray:
    x = np.asarray(x)
    dt = x.dtype
    e_src, m_src = float_format(dt)
    nbits = bits_of(dt)
    if dt not in _IEEE_LIKE:
        raise NotImplementedError(f"reduce_precision on {dt} (no IEEE-754 infinity/NaN encoding)")
    u = float_bits(x)
    nan = np.isnan(x.astype(F32) if dt.kind == "V" else x)
    with np.errstate(all="ignore"):
        if mantissa_bits < m_src:
            shift = m_src - mantissa_bits
            last = _U64(1 << shift)
            base_bias = (last >> _U64(1)) - _U64(1)
            last_bit = (u & last) >> _U64(shift)
            u = (u + last_bit + base_bias) & ~(last - _U64(1))
            if nbits < 64:
                u = u & _U64((1 << nbits) - 1)
        if exponent_bits < e_src:
            sign_mask = _U64(1 << (nbits - 1))
            exp_mask = _U64(((1 << e_src) - 1) << m_src)
            bias = (1 << (e_src - 1)) - 1
            rbias = (1 << (exponent_bits - 1)) - 1
            max_exp = bias + rbias
            min_exp = bias - rbias
            xe = u & exp_mask
            over = xe > _U64(max_exp << m_src)
            under = xe <= _U64(min_exp << m_src)
            signed_zero = u & sign_mask
            signed_inf = signed_zero | exp_mask
            u = np.where(over, signed_inf, np.where(under, signed_zero, u))
    r = float_from_bits(u, dt)
    orig_sign = float_bits(x) & _U64(1 << (nbits - 1))
    if mantissa_bits > 0:
        r = np.where(nan, x, r)
    else:
        inf_bits = orig_sign | _U64(((1 << e_src) - 1) << m_src)
        r = np.where(nan, float_from_bits(inf_bits, dt), r)
    return np.asarray(r, dtype=dt)


@kernel("stablehlo.reduce_precision", quantized=DEQUANTIZE, accuracy=EXACT)
def reduce_precision(op, x):
    """See spec.md#reduce_precision."""
    eb = int(op.attr("exponent_bits"))
    mb = int(op.attr("mantissa_bits"))
    return apply(op, lambda dt, v: reduce_precision_values(np.asarray(v).astype(dt), eb, mb), (x,))
