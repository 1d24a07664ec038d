"""Element-wise float math: rounding, classification, sign and the
transcendental functions.

See spec.md#ceil, #floor, #round_nearest_afz, #round_nearest_even,
#is_finite, #sign, #cosine, #sine, #tan, #tanh, #exponential,
#exponential_minus_one, #log, #log_plus_one, #logistic, #rsqrt, #cbrt,
#sqrt, #atan2.

Floats narrower than ``f64`` are computed in ``f64`` (complex in
``complex128``) and rounded once into the result type (an f64 value on a
rounding midpoint of the narrower type is resolved by the exact evaluation
of :mod:`stablehlo_conform.oracle`). Real ``f64`` results of the
transcendental functions and ``atan2`` are computed in extended precision
(``np.longdouble``, 64 significand bits on x87: the C library's ``expl``,
``sinl``, ...) and rounded once (:func:`._extended.in_f64`): their error is
below ``0.5 + 2**-9`` ULP, and the rare results within that distance of a
rounding midpoint may round the other way (measured: at most 0.5005 ULP
over 10**5 samples). ``round_nearest_afz``
breaks ties away from zero. ``sign`` keeps signed zeros and NaN; on complex
numbers it is ``x / convert(abs(x), type(x))`` with the modulus rounded to
the element type first. Complex branch cuts are NumPy's.
"""

from __future__ import annotations

import numpy as np
from ._lazy import special as sc

from . import _extended as X
from . import _fast
from ..numeric import C128, F32, F64, make_complex, midpoint_screen, near_midpoint, rounded_screen, wide
from ..opinfo import DEQUANTIZE, EXACT, FastPath
from .elementwise import _kind, binary, exact_float_fn, float_fn, int_fn, unary

@unary("stablehlo.ceil", quantized=DEQUANTIZE, accuracy=EXACT, native={"float": np.ceil})
def ceil(dt, x):
    return exact_float_fn(np.ceil, dt, x)


@unary("stablehlo.floor", quantized=DEQUANTIZE, accuracy=EXACT, native={"float": np.floor})
def floor(dt, x):
    return exact_float_fn(np.floor, dt, x)


@unary("stablehlo.round_nearest_even", quantized=DEQUANTIZE, accuracy=EXACT, native={"float": np.rint})
def round_nearest_even(dt, x):
    return exact_float_fn(np.rint, dt, x)


def _afz(w):
    t = np.trunc(w)
    frac = np.abs(w - t)
    return np.where(frac >= 0.5, t + np.sign(w), t)


@unary("stablehlo.round_nearest_afz", quantized=DEQUANTIZE, accuracy=EXACT)
def round_nearest_afz(dt, x):
    """Ties away from zero: ``trunc(x) + sign(x)`` when ``|x - trunc(x)| >= 0.5``."""
    return float_fn(_afz, dt, x)


@unary("stablehlo.is_finite", quantized=DEQUANTIZE, accuracy=EXACT)
def is_finite(dt, x):
    return np.isfinite(wide(x))


def _sign(w):
    return np.where(np.isnan(w) | (w == 0), w, np.sign(w))


def complex_sign(x, dt):
    """``divide(x, convert(abs(x), type(x)))``: the modulus is rounded to the
    element type first, then the division is rounded once."""
    x = np.asarray(x)
    comp = np.float32 if np.dtype(dt) == np.dtype(np.complex64) else np.float64
    w = x.astype(np.complex128)
    mag = np.abs(w).astype(comp).astype(np.float64)
    nan = np.isnan(w.real) | np.isnan(w.imag)
    safe = np.where(mag == 0, 1.0, mag)
    with np.errstate(all="ignore"):
        r = make_complex(np.where(mag == 0, 0.0, w.real / safe), np.where(mag == 0, 0.0, w.imag / safe))
    r = np.where(nan, complex(np.nan, np.nan), r)
    return r.astype(dt)


@unary("stablehlo.sign", folds=True, quantized=DEQUANTIZE, accuracy=EXACT)
def sign(dt, x):
    k = _kind(x)
    if k in ("int", "uint"):
        return int_fn(np.sign, dt, x)
    if k == "complex":
        return complex_sign(x, dt)
    return float_fn(_sign, dt, x)


# --------------------------------------------------------------------------- #
# transcendental functions
# --------------------------------------------------------------------------- #

def _transcendental(name, f, f64=None, **facts):
    """``f`` on f64 (complex128) values, rounded once; on an f64 or complex128 result type
    ``f64`` instead (default: ``f`` evaluated in extended precision, :func:`._extended.in_f64`);
    ``facts``: the op's facts (:func:`.registry.kernel`)."""
    f64 = f64 or X.in_f64(f)

    def g(dt, x):
        return float_fn(f64 if np.dtype(dt) in (F64, C128) else f, dt, x, op=name)

    g.__name__ = name.split(".")[-1]
    return unary(name, fast=rounded_once_fast(f, g), **facts)(g)


def rounded_once_fast(f, g):
    """The fast path of a unary kernel function ``g(dt, x)`` computing ``f`` in f64 and rounding
    once (:func:`.elementwise.float_fn` with ``op`` and no ``refine``; also the CHLO functions
    of :mod:`.chlo_elementwise`): on an f32 tensor, ``f`` of the widened operand
    rounded into the type, one block of :data:`SCREEN_BLOCK` elements at a time (its f64
    values stay in cache), where no element of the block lies near a rounding midpoint
    (:func:`~stablehlo_conform.numeric.rounded_screen`, which reads the rounded block and
    writes over the f64 one, or :func:`~stablehlo_conform.numeric.midpoint_screen` where ``f``
    returns an array that is not its own: what ``float_fn`` returns there); ``g`` of the
    block otherwise (``float_fn`` is element-wise; ``f`` computed once more where the screen
    wrote over it); on other types :func:`._fast.elementwise` of ``g``: on f16 (as on bf16 and
    the f8 types) the table of ``g`` on every bit pattern, which costs a few milliseconds once
    per function and type and reads 4 to 23 times faster than the screened path (1M f16
    elements: ``exp`` 5.5 -> 0.7 ms, ``log`` 16.2 -> 0.7 ms; 1024 elements 10-14 -> 2.4-2.6 us),
    or ``g`` itself.

    Bit for bit ``float_fn``'s value: it computes the same ``f`` of the same widened values,
    rounds them with the same cast, and returns that cast wherever
    :func:`~stablehlo_conform.numeric.may_be_near_midpoint` clears every element, which both
    screens clear only where it does (``tests/test_fast_paths.py``); in a block they do not
    clear, the elements near a midpoint go to ``g``, the kernel's own function
    (:func:`screened_out`)."""
    general = _fast.elementwise(g)

    def fast(op):
        types = _fast.plain_types(op)
        if types is None:
            return None
        (src,), dt, shape = types
        if src != dt or dt != F32 or not shape:
            return general(op)
        screen, scratch = midpoint_screen(dt), rounded_screen(dt)
        size = int(np.prod(shape))
        wide = _widened(f)

        def one(x, into=None):  # into: where the result goes
            r = wide(x)
            if into is None:
                res = r.astype(dt)
            else:
                res = into
                np.copyto(res, r, casting="same_kind")
            flags = r.flags
            if r.size and r.dtype == F64 and flags.owndata and flags.c_contiguous and flags.writeable:
                if not scratch(r, res):
                    return res
                r = wide(x)  # the screen wrote over r
            elif not screen(r):
                return res
            res[...] = screened_out(g, dt, x, r)
            return res

        if size <= SCREEN_BLOCK:
            return FastPath(one, fresh=True)

        def call(x):  # x of any shape (a block of the operand, see engine.codegen._in_pieces)
            flat = x.reshape(-1)
            res = np.empty(flat.size, dt)
            for i in range(0, flat.size, SCREEN_BLOCK):
                one(flat[i:i + SCREEN_BLOCK], res[i:i + SCREEN_BLOCK])
            return res.reshape(x.shape)

        return FastPath(call, fresh=True, split_min=SPLIT_MIN)

    return fast


def _widened(f):
    """``x -> f(x.astype(F64))``: for a NumPy ufunc of one operand, ``f(x, dtype=F64)``, the
    same f64 loop on the same (exactly widened) values, with the widening done chunk by chunk
    in the ufunc's buffer instead of into a new array: one pass over memory less, and one
    f64 array fewer alive at once (128k f32 values: ``tanh`` 119 -> 115 us, ``exp`` 88 -> 82
    us; 1M: 952 -> 902 and 731 -> 692 us). NumPy's loops compute each element on its own (its
    SIMD loops lane by lane, with the same code for a chunk's last elements), so a chunk's
    elements get the values the whole array's get (``tests/test_fast_buffers.py``; for
    ``tanh``, ``exp``, ``log``, ``sin``, ``cos`` and ``tan`` checked on all 2**32 f32 bit
    patterns when this was written)."""
    if isinstance(f, np.ufunc) and f.nin == 1 and f.nout == 1:
        return lambda x: f(x, dtype=F64)
    return lambda x: f(x.astype(F64))


# the fewest elements of a result computed in blocks on several threads (about 1.5 ns an
# element on one core: 1.5 ms of work; the blocks' hand-offs cost tens of microseconds)
SPLIT_MIN = 1 << 20
# elements per block of a rounded-once fast path: 1 MiB of f64 values, a core's level-2 cache.
# Each block is about ten NumPy calls, each giving the GIL up and taking it back: on two threads,
# blocks of 2**15 elements gained nothing over one thread (a 3.4M-element f32 exp: 5.4-6.4 ms
# on two, 5.9 ms on one); these take 4.3-4.7 ms on two threads and 5.8 ms on one
SCREEN_BLOCK = 1 << 17


def screened_out(g, dt, x: np.ndarray, r: np.ndarray) -> np.ndarray:
    """``g(dt, x)`` (a kernel's function computing ``f`` in f64 and rounding once, through
    :func:`.elementwise.float_fn` with ``op`` and no ``refine``) given ``r``, the f64 values of
    ``f`` of ``x``, which the midpoint screen did not clear: ``r`` rounded into ``dt``, and
    ``g`` of the elements :func:`~stablehlo_conform.numeric.near_midpoint` marks. It is what
    ``float_fn`` computes: the same rounding of the same ``r`` wherever that mask is false,
    ``g`` (an element-wise function) of the others; where a zero or a tiny value (a masked
    softmax's ``exp``, a small cube) stopped the screen, the few elements near a midpoint, if
    any, instead of the whole block (:func:`~stablehlo_conform.numeric.near_midpoint`)."""
    res = r.astype(dt)
    mask = near_midpoint(r, dt)
    if mask.any():
        res[mask] = g(dt, x[mask])
    return res


def _logistic(w):
    if np.iscomplexobj(w):
        return X.complex_logistic(w)
    return sc.expit(w)


def _logistic_wide(w):
    if np.iscomplexobj(w):
        return X.complex_logistic(w)
    return 1 / (1 + np.exp(-w))


def _rsqrt(w):
    if np.iscomplexobj(w):
        return X.complex_rsqrt(w)
    if w.dtype == np.dtype(np.float64) and np.finfo(np.longdouble).nmant > 52:
        # one rounding into f64 (the f64 quotient of a rounded root can be 1 ULP off)
        return (1.0 / np.sqrt(w.astype(np.longdouble))).astype(np.float64)
    return 1.0 / np.sqrt(w)


def _cbrt(w):
    if np.iscomplexobj(w):
        return X.complex_cbrt(w)
    return np.cbrt(w)


def _complex_or(complex_f, real_f):
    def g(w):
        return complex_f(w) if np.iscomplexobj(w) else real_f(w)

    return g


_expm1 = _complex_or(X.complex_expm1, np.expm1)
_log1p = _complex_or(X.complex_log1p, np.log1p)

cosine = _transcendental("stablehlo.cosine", np.cos, quantized=DEQUANTIZE)
sine = _transcendental("stablehlo.sine", np.sin, quantized=DEQUANTIZE)
tan = _transcendental("stablehlo.tan", np.tan, quantized=DEQUANTIZE)
tanh = _transcendental("stablehlo.tanh", np.tanh, quantized=DEQUANTIZE)
exponential = _transcendental("stablehlo.exponential", np.exp, quantized=DEQUANTIZE)
exponential_minus_one = _transcendental("stablehlo.exponential_minus_one", _expm1, quantized=DEQUANTIZE)
log = _transcendental("stablehlo.log", np.log, quantized=DEQUANTIZE)
log_plus_one = _transcendental("stablehlo.log_plus_one", _log1p, quantized=DEQUANTIZE)
logistic = _transcendental("stablehlo.logistic", _logistic, X.in_f64(_logistic_wide), quantized=DEQUANTIZE)
rsqrt = _transcendental("stablehlo.rsqrt", _rsqrt, quantized=DEQUANTIZE)
cbrt = _transcendental("stablehlo.cbrt", _cbrt, quantized=DEQUANTIZE)


@unary("stablehlo.sqrt", quantized=DEQUANTIZE, native={"float": np.sqrt})
def sqrt(dt, x):
    """Correctly rounded on real types; complex roots are computed in complex128 (extended
    precision for complex128) and rounded once."""
    if np.dtype(dt) == C128:
        return float_fn(X.in_f64(np.sqrt), dt, x, op="stablehlo.sqrt")
    if _kind(x) == "complex":
        return float_fn(np.sqrt, dt, x, op="stablehlo.sqrt")
    return exact_float_fn(np.sqrt, dt, x)


def _atan2(y, x):
    if np.iscomplexobj(y) or np.iscomplexobj(x):
        y = y.astype(np.complex128)
        x = x.astype(np.complex128)
        # x + i y and -i w from their parts (see make_complex)
        w = np.log(make_complex(x.real - y.imag, x.imag + y.real) / np.sqrt(x * x + y * y))
        return make_complex(w.imag, -w.real)
    return np.arctan2(y, x)


@binary("stablehlo.atan2", quantized=DEQUANTIZE)
def atan2(dt, y, x):
    """Rounded once: a result on a rounding midpoint of a narrower type
    (``atan2(1.1754942e-38, 2)`` in f32, whose f64 value is exactly
    ``y / 2``) is resolved exactly (see :func:`.elementwise.float_fn`)."""
    if np.dtype(dt) == F64:
        return float_fn(X.in_f64(np.arctan2), dt, y, x, op="stablehlo.atan2")
    return float_fn(_atan2, dt, y, x, op="stablehlo.atan2")
