"""Element-wise arithmetic of StableHLO, and the shared element-wise machinery.

See spec.md#abs, #add, #clamp, #complex, #divide, #imag, #maximum, #minimum,
#multiply, #negate, #power, #real, #remainder, #select, #subtract. Bitwise
ops live in :mod:`.bitwise`, float math in :mod:`.float_math`, ``compare``
in :mod:`.comparison`, conversions in :mod:`.conversion`.

Implementation-defined cases (the spec leaves them open; these follow XLA):

- Integer ``divide`` by zero gives ``-1`` (all bits set: the maximum value for
  unsigned types); ``INT_MIN / -1`` gives ``INT_MIN``.
- Integer ``remainder`` by zero gives the dividend; ``INT_MIN % -1`` gives 0.
  The remainder takes the sign of the dividend (C ``fmod`` semantics).
- Integer ``power`` with a negative exponent gives 0, except for bases 1
  (result 1) and -1 (result +-1 by the exponent's parity).
- Integer ``power`` is exact modulo 2^N for every exponent (square and
  multiply over all exponent bits).
- Integer arithmetic wraps (two's complement) at the type's own width,
  including the sub-byte types i2/i4/ui2/ui4.

Floats narrower than ``f64`` are computed in ``f64`` (complex in
``complex128``) and rounded once into the result type. Complex division keeps
infinities (C99 Annex G); for ``complex128`` its numerator and denominator come
from the exact halves of their products, divided in extended precision and
rounded once. Complex ``multiply`` and, for f64 and complex128, ``power`` are
computed in a wider type (``np.longdouble`` for f64 parts) and rounded once;
complex128 ``multiply`` from the exact halves of its products
(:func:`complex128_multiply`: each part correctly rounded where the parts lie
within ``2**+-450``, else within 1 ULP). Complex ``power`` is ``exp(w log z)`` (NumPy's): where
``|im(w log z)|`` is large the phase carries the rounding error of
``w log z``, so parts can be off by any amount, signs of overflowing parts
included (measured: arbitrary errors on 1 in 10 samples with huge
arguments); it is not improved here. Quantized operands follow ``dequantize_op_quantize``.
"""

from __future__ import annotations

import numpy as np

from .. import types as T
from ..numeric import (
    complex128_multiply,
    in_f64,
    complex_divide,
    bits_of,
    ieee_maximum,
    ieee_minimum,
    is_signed,
    is_subbyte_int,
    kind_of,
    make_complex,
    native_float_pair,
    may_be_near_midpoint,
    midpoint_screen,
    near_midpoint,
    out,
    positive_underflow,
    round_to,
    to_i64,
    wide,
    wrap_i64,
)
from . import _fast
from ..opinfo import DEQUANTIZE, EXACT, FastPath
from .quantized import dequantize, quantize
from .registry import kernel, kernel_of


_NATIVE = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64),
           np.dtype(np.complex64), np.dtype(np.complex128))


# --------------------------------------------------------------------------- #
# quantization (spec.md#dequantize_op_quantize; dequantize and quantize are
# the spec's, from .quantized)
# --------------------------------------------------------------------------- #

def _element(ty):
    return ty.element if isinstance(ty, T.TensorType) else ty


def apply(op, fn, args):
    """Run ``fn(dtype, *arrays)`` with ``dequantize_op_quantize`` if needed.

    ``fn`` raises ``NotImplementedError`` for cases the spec leaves open;
    they end the test as unsupported."""
    try:
        return _apply(op, fn, args)
    except NotImplementedError as e:
        raise op.unsupported(str(e)) from None


def _apply(op, fn, args):
    node = getattr(op, "op", None)
    plain = getattr(node, "_plain_dtype", None)  # the result dtype of an op without quantized types
    if plain is not None:
        return (out(fn(plain, *args), plain),)
    rty = _element(op.result_type(0))
    q_in = [isinstance(_element(op.operand_type(i)), T.QuantizedType) for i in range(len(args))]
    if not any(q_in) and not isinstance(rty, T.QuantizedType):
        dt = op.result_dtype(0)
        if node is not None and len(args) == len(op.operand_types):
            node._plain_dtype = dt
        return (out(fn(dt, *args), dt),)
    vals = [dequantize(a, _element(op.operand_type(i))) if q else a
            for i, (a, q) in enumerate(zip(args, q_in))]
    if isinstance(rty, T.QuantizedType):
        ex = rty.expressed.dtype
        r = out(fn(ex, *vals), ex)
        return (quantize(r, rty),)
    dt = op.result_dtype(0)
    return (out(fn(dt, *vals), dt),)


def unary(*names, native: dict | None = None, fast=None, **facts):
    """Register ``fn(dt, x)`` as the kernel of ``names`` (through :func:`apply`), with its
    fast path: ``fast``, else :func:`._fast.elementwise` (``native`` maps ``"float"`` /
    ``"int"`` to the NumPy ufunc ``fn`` computes on operands of those types), and the ops'
    other ``facts`` (:func:`.registry.kernel`)."""
    def deco(fn):
        def k(op, x):
            return apply(op, fn, (x,))

        kernel_of(k, *names, label=fn.__name__, doc=fn.__doc__, fast=fast or _fast.elementwise(fn, native), **facts)
        return fn

    return deco


def binary(*names, native: dict | None = None, fast=None, **facts):
    """As :func:`unary`, for ``fn(dt, a, b)``."""
    def deco(fn):
        def k(op, a, b):
            return apply(op, fn, (a, b))

        kernel_of(k, *names, label=fn.__name__, doc=fn.__doc__, fast=fast or _fast.elementwise(fn, native), **facts)
        return fn

    return deco


# --------------------------------------------------------------------------- #
# generic computation paths
# --------------------------------------------------------------------------- #

# elements per block of a large element-wise float op (its f64 temporaries
# are a few of 512 KiB)
FLOAT_BLOCK = 1 << 16


def float_fn(f, dt, *xs, op: str | None = None, refine=None):
    """Compute ``f`` in f64/complex128 and round once into ``dt``.

    With ``op`` (an op of :data:`stablehlo_conform.oracle.DEFINED_OPS`), the
    elements whose f64 value lies within a few f64 ULPs of a rounding midpoint
    of a narrower ``dt`` (where rounding the f64 value could round the other
    way than the exact value: double rounding) are evaluated exactly by the
    oracle and rounded once; so are the elements ``refine(*wide_args, r)``
    marks (regions where the f64 function loses relative accuracy).

    Operands of one shape with more than two blocks of ``FLOAT_BLOCK``
    elements are computed block by block into the result (``f``, ``refine``
    and the midpoint test are element-wise, so the values are the same): the
    f64 temporaries of one block stay in cache, those of a whole large
    operand do not."""
    xs = [np.asarray(x) for x in xs]
    n = xs[0].size
    if n <= 2 * FLOAT_BLOCK or any(x.shape != xs[0].shape for x in xs):
        return _float_fn(f, dt, xs, op, refine)
    flat = [x.reshape(-1) for x in xs]
    res = np.empty(n, dtype=dt)
    for i in range(0, n, FLOAT_BLOCK):
        res[i:i + FLOAT_BLOCK] = _float_fn(f, dt, [x[i:i + FLOAT_BLOCK] for x in flat], op, refine)
    return res.reshape(xs[0].shape)


def _float_fn(f, dt, xs, op, refine):
    """:func:`float_fn` on operands taken whole."""
    ws = [wide(x) for x in xs]
    with np.errstate(all="ignore"):
        r = f(*ws)
    res = round_to(r, dt)
    if op is None:
        return res
    dt = np.dtype(dt)
    r = np.asarray(r)
    if dt in (np.dtype(np.float64), np.dtype(np.complex128)):
        mask = np.zeros(r.shape, dtype=bool)
    elif refine is None and r.dtype.kind == "f" and not may_be_near_midpoint(r, dt):
        return res  # no element near a midpoint: ``res`` is correctly rounded
    elif r.dtype.kind == "c":
        mask = near_midpoint(r.real, dt.type(0).real.dtype) | near_midpoint(r.imag, dt.type(0).real.dtype)
    else:
        mask = near_midpoint(r, dt)
    if refine is not None:
        with np.errstate(all="ignore"):
            mask = mask | np.asarray(refine(*ws, r), dtype=bool)
    if not mask.any():
        return res
    from ..oracle.exact import correctly_rounded  # here: mpmath's start-up only where a result is near a midpoint

    args = np.broadcast_arrays(*xs)
    res = np.array(np.broadcast_to(res, mask.shape), dtype=dt)
    res[mask] = correctly_rounded(op, [a[mask] for a in args], dt)
    return res


def _wider(f, dt):
    """``f`` for :func:`float_fn`: evaluated in extended precision for an f64 or complex128
    result (:func:`stablehlo_conform.numeric.in_f64`), else in f64 (complex128)."""
    return in_f64(f) if np.dtype(dt) in (np.dtype(np.float64), np.dtype(np.complex128)) else f


def exact_float_fn(f, dt, *xs):
    """For correctly-rounded basic ops: native for f16/f32/f64/complex; in f32 and rounded once
    for bf16 and the f8/f6/f4 types where ``f`` is one of :data:`._fast.ROUNDED_IN_F32` (the
    value :func:`float_fn` computes, see :func:`._fast.in_f32`)."""
    xs = [np.asarray(x) for x in xs]
    dt = np.dtype(dt)
    if dt in _NATIVE and all(x.dtype in _NATIVE for x in xs):
        with np.errstate(all="ignore"):
            return f(*xs)
    if f in _fast.ROUNDED_IN_F32 and _fast.rounds_in_f32(dt) and all(x.dtype == dt for x in xs):
        return _fast.in_f32(f, dt, *xs)
    return float_fn(f, dt, *xs)


def int_fn(f, dt, *xs):
    """Integer op with two's-complement wrapping at the type's width."""
    dt = np.dtype(dt)
    if is_subbyte_int(dt) or any(is_subbyte_int(np.asarray(x).dtype) for x in xs):
        with np.errstate(all="ignore"):
            r = f(*[to_i64(x) for x in xs])
        return wrap_i64(r, dt)
    with np.errstate(all="ignore"):
        return f(*xs)


def _kind(x) -> str:
    return kind_of(np.asarray(x).dtype)


# --------------------------------------------------------------------------- #
# arithmetic
# --------------------------------------------------------------------------- #

@unary("stablehlo.abs", folds=True, quantized=DEQUANTIZE, accuracy=EXACT, native={"float": np.abs, "int": np.abs})
def abs_(dt, x):
    k = _kind(x)
    if k in ("int", "uint"):
        return int_fn(np.abs, dt, x)
    if k == "complex":
        return round_to(np.abs(x.astype(np.complex128)), dt)
    return exact_float_fn(np.abs, dt, x)


@binary("stablehlo.add", folds=True, quantized=DEQUANTIZE, native={"float": np.add, "int": np.add})
def add(dt, a, b):
    k = _kind(a)
    if k == "bool":
        return np.logical_or(a, b)
    if k in ("int", "uint"):
        return int_fn(np.add, dt, a, b)
    return exact_float_fn(np.add, dt, a, b)


@binary("stablehlo.subtract", folds=True, quantized=DEQUANTIZE, native={"float": np.subtract, "int": np.subtract})
def subtract(dt, a, b):
    k = _kind(a)
    if k == "bool":
        return np.logical_and(a, np.logical_not(b))
    if k in ("int", "uint"):
        return int_fn(np.subtract, dt, a, b)
    return exact_float_fn(np.subtract, dt, a, b)


@binary("stablehlo.multiply", folds=True, quantized=DEQUANTIZE, native={"float": np.multiply, "int": np.multiply})
def multiply(dt, a, b):
    k = _kind(a)
    if k == "bool":
        return np.logical_and(a, b)
    if k in ("int", "uint"):
        return int_fn(np.multiply, dt, a, b)
    if k == "complex":
        # the parts' products in a wider type: no overflow before the subtraction, one rounding
        f = complex128_multiply if np.dtype(dt) == np.dtype(np.complex128) else np.multiply
        return float_fn(f, dt, a, b, op="stablehlo.multiply")
    return exact_float_fn(np.multiply, dt, a, b)


# parts whose products and their rounding errors stay in the normal range of f64
def _division_operands(a, b, dt):
    """Integer dividend and divisor made safe for NumPy's division ops.

    Sub-byte operands are widened to int64. Returns ``(a, safe, zero, neg1)``:
    ``safe`` is the divisor with 0 (and, for signed operands, -1) replaced by
    1, so the NumPy op neither traps nor overflows; ``zero`` and ``neg1`` mark
    those lanes (``neg1`` is None for unsigned operands) for the caller to
    fix up.
    """
    a = np.asarray(a)
    b = np.asarray(b)
    if is_subbyte_int(np.dtype(dt)):
        a, b = to_i64(a), to_i64(b)
    zero = b == 0
    if not is_signed(a.dtype):
        return a, np.where(zero, np.ones_like(b), b), zero, None
    neg1 = b == -1
    return a, np.where(zero | neg1, np.ones_like(b), b), zero, neg1


def int_divide(a, b, dt):
    """Truncating integer division; x/0 = -1, INT_MIN/-1 = INT_MIN."""
    dt = np.dtype(dt)
    a, safe, zero, neg1 = _division_operands(a, b, dt)
    with np.errstate(all="ignore"):
        q = np.floor_divide(a, safe)
        if neg1 is not None:
            r = a - q * safe
            q = np.where((r != 0) & ((a < 0) != (safe < 0)), q + 1, q)
            q = np.where(neg1, np.negative(a), q)
        q = np.where(zero, np.array(-1).astype(q.dtype), q)
    return wrap_i64(q, dt) if is_subbyte_int(dt) else q


def int_remainder(a, b, dt):
    """Remainder with the dividend's sign; x%0 = x, INT_MIN%-1 = 0."""
    dt = np.dtype(dt)
    a, safe, zero, neg1 = _division_operands(a, b, dt)
    with np.errstate(all="ignore"):
        r = np.fmod(a, safe)
        if neg1 is not None:
            r = np.where(neg1, np.zeros_like(r), r)
        r = np.where(zero, a, r)
    return wrap_i64(r, dt) if is_subbyte_int(dt) else r


@binary("stablehlo.divide", folds=True, quantized=DEQUANTIZE, native={"float": np.divide})
def divide(dt, a, b):
    k = _kind(a)
    if k in ("int", "uint"):
        return int_divide(a, b, dt)
    if k == "complex":
        return float_fn(complex_divide, dt, a, b)
    return exact_float_fn(np.divide, dt, a, b)


@binary("stablehlo.remainder", folds=True, quantized=DEQUANTIZE, accuracy=EXACT)
def remainder(dt, a, b):
    k = _kind(a)
    if k in ("int", "uint"):
        return int_remainder(a, b, dt)
    if k == "complex":
        raise NotImplementedError("remainder of complex numbers is TBD in the spec")
    return exact_float_fn(np.fmod, dt, a, b)


def int_power(a, b, dt):
    """Integer exponentiation by squaring with wrapping."""
    dt = np.dtype(dt)
    a = np.asarray(a)
    b = np.asarray(b)
    sub = is_subbyte_int(dt)
    base = to_i64(a) if sub else a.copy()
    e = to_i64(b) if sub else b.copy()
    base, e = np.broadcast_arrays(base, e)
    base = base.copy()
    neg = e < 0 if is_signed(e.dtype) or sub else np.zeros(e.shape, bool)
    e = np.where(neg, np.zeros_like(e), e)
    result = np.ones_like(base)
    nbits = 64 if sub else bits_of(b.dtype)
    with np.errstate(all="ignore"):
        for _ in range(nbits):
            if not (e != 0).any():
                break
            odd = (e & 1) == 1
            result = np.where(odd, result * base, result)
            if sub:
                result = to_i64(wrap_i64(result, dt))
            base = base * base
            if sub:
                base = to_i64(wrap_i64(base, dt))
            e = e >> 1
        if neg.any():
            a_b = to_i64(np.broadcast_to(a, neg.shape))
            b_b = to_i64(np.broadcast_to(b, neg.shape))
            special = np.where(a_b == 1, 1, np.where(a_b == -1, np.where((b_b & 1) == 1, -1, 1), 0))
            result = np.where(neg, special.astype(result.dtype), result)
    return wrap_i64(result, dt) if sub else result


POWER_CHAINS = {2.0: np.square, 3.0: lambda w: (w * w) * w, 4.0: lambda w: np.square(w * w)}
"""Exponents whose power of a value of a type of at most 24 significand bits and f32's exponent
range (f32, f16, bf16, the f8 types) :func:`power` (:func:`_real_power`) and :func:`_fast_power`
compute in f64 by multiplications: the square of such a value is exact in f64 (at most 48
significand bits), so the cube and the fourth power round once (an exact square times the value,
the square of an exact square), within half an f64 ULP of the exact power, which stays within
f64's range (no overflow, no underflow)."""

POWER_BLOCK = 1 << 14
"""Elements per block of :func:`_fast_power` (its f64 values stay in cache)."""


def _fast_power(op):
    """``power`` of an f16 or f32 base by an exponent of its type whose elements are all one
    value of :data:`POWER_CHAINS` (:func:`_one_value`: a broadcast, a folded constant): the
    chain in f64 rounded once into the type, one block at a time, where the rounding-midpoint
    screen (:func:`~stablehlo_conform.numeric.midpoint_screen`) clears the block, and elsewhere
    where :func:`~stablehlo_conform.numeric.near_midpoint` does not mark the element (as
    :func:`float_fn` does); the exponent 2 as ``np.square`` in the type itself; :func:`power`
    itself otherwise (other exponents, the marked elements). Other types take the fast path
    of every element-wise kernel (:func:`~stablehlo_conform.kernels._fast.elementwise`).

    Bit for bit :func:`power`'s value: it computes ``np.power`` in f64 (within an f64 ULP of
    the exact power) and rounds it once, resolving the values within 4 f64 ULPs of a midpoint
    exactly, so it is the exact power correctly rounded. So is the chain's value (within half
    an f64 ULP) on an element not within 4 f64 ULPs of a midpoint, and so is
    IEEE-754's correctly rounded square (a square is exact in f64: ``np.power`` returns it,
    and the kernel rounds it once). Signed zeros (exact products), subnormal results (the
    mask tests them on their own grid), infinities and NaN (the base's, quieted, as ``pow``
    returns it) are checked in ``tests/test_fast_lowp.py``."""
    types = _fast.plain_types(op)
    if types is None:
        return None
    (adt, bdt), dt, shape = types
    if not adt == bdt == dt or dt not in (np.dtype(np.float32), np.dtype(np.float16)) or not all(shape):
        return _fast.elementwise(power)(op)  # every other type: as any element-wise kernel
    screen = midpoint_screen(dt)

    def block(chain, x, e):
        with np.errstate(all="ignore"):
            r = chain(x.astype(np.float64))
            res = r.astype(dt)
        if screen(r):  # the elements near a midpoint (if any) as the kernel computes them
            mask = near_midpoint(r, dt)
            if mask.any():
                res[mask] = out(power(dt, x[mask], e[mask]), dt)
        return res

    def call(a, b):
        a, b = np.asarray(a), np.asarray(b)
        e = _one_value(b)
        if e == 2.0:
            with np.errstate(all="ignore"):
                return np.square(a)
        chain = POWER_CHAINS.get(e)
        if chain is None:
            return out(power(dt, np.ascontiguousarray(a), np.ascontiguousarray(b)), dt)
        if a.size <= POWER_BLOCK:  # a and b of any one shape (a block of the operands, engine.codegen._in_pieces)
            return block(chain, a, b)
        flat, e, res = a.reshape(-1), b.reshape(-1), np.empty(a.size, dt)
        for i in range(0, a.size, POWER_BLOCK):
            res[i:i + POWER_BLOCK] = block(chain, flat[i:i + POWER_BLOCK], e[i:i + POWER_BLOCK])
        return res.reshape(a.shape)

    return FastPath(call, views=True, fresh=True)


def _one_value(b: np.ndarray) -> float | None:
    """The value of every element of ``b`` (a broadcast view, or a folded constant's array),
    else None: its minimum and maximum (two passes without temporaries) are one number, which no
    other value equals (a NaN makes them differ; the zeros, equal as values, have no chain)."""
    if not b.size:
        return None
    if not any(b.strides):
        return float(b.flat[0])
    lo, hi = np.minimum.reduce(b, axis=None), np.maximum.reduce(b, axis=None)
    return float(lo) if lo == hi else None


@binary("stablehlo.power", quantized=DEQUANTIZE, fast=_fast_power)
def power(dt, a, b):
    k = _kind(a)
    if k in ("int", "uint"):
        return int_power(a, b, dt)
    if np.dtype(dt) in (np.dtype(np.float64), np.dtype(np.complex128)) or k == "complex":
        return float_fn(_wider(np.power, dt), dt, a, b, op="stablehlo.power")
    return float_fn(_real_power, dt, a, b, op="stablehlo.power")


def _real_power(a, b):
    """``a ** b`` in f64 for a narrower type (``a`` holds at most 24 significand bits): where
    every exponent is one value of :data:`POWER_CHAINS`, its multiplications (the exact power
    within half an f64 ULP; ``np.power`` is within about one, and :func:`float_fn` resolves the
    elements near a rounding midpoint exactly, so the rounded results are the same: the exact
    power correctly rounded); else ``np.power``, positive where it underflows with ``a > 0``
    (:func:`stablehlo_conform.numeric.positive_underflow`)."""
    chain = POWER_CHAINS.get(_one_value(b))
    if chain is not None:
        return chain(a)
    return positive_underflow(np.power(a, b), (a > 0) & (a < np.inf) & np.isfinite(b))


@unary("stablehlo.negate", folds=True, quantized=DEQUANTIZE, accuracy=EXACT,
       native={"float": np.negative, "int": np.negative})
def negate(dt, x):
    k = _kind(x)
    if k in ("int", "uint"):
        return int_fn(np.negative, dt, x)
    return exact_float_fn(np.negative, dt, x)


# --------------------------------------------------------------------------- #
# min / max / clamp
# --------------------------------------------------------------------------- #

def _pick_max(a, b):
    """Mask choosing ``a`` for IEEE-754 maximum (NaN-propagating, +0 > -0).

    The general path of ``maximum``; f16/f32/f64 take :func:`.ieee_maximum`
    (the same choices: ``a`` if it is NaN, else ``b`` if it is NaN, else the
    larger, ``+0`` over ``-0``). The narrower types (bf16, f8, ...) are compared
    as f32 values, which hold theirs exactly (:func:`._fast.f32_values`; a broadcast
    operand's distinct values converted once, :func:`._fast.distinct`); the kernels then
    pick by :func:`where` (the bits of ``a`` or ``b``)."""
    wa, wb = _fast.f32_values(_fast.distinct(a)), _fast.f32_values(_fast.distinct(b))
    return np.isnan(wa) | ((wa > wb) & ~np.isnan(wb)) | ((wa == wb) & ~np.signbit(wa))


def _pick_min(a, b):
    wa, wb = _fast.f32_values(_fast.distinct(a)), _fast.f32_values(_fast.distinct(b))
    return np.isnan(wa) | ((wa < wb) & ~np.isnan(wb)) | ((wa == wb) & np.signbit(wa))


def _lex(a, b, greater: bool):
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    nan_a = np.isnan(ar) | np.isnan(ai)
    if greater:
        pick = (ar > br) | ((ar == br) & (ai >= bi))
    else:
        pick = (ar < br) | ((ar == br) & (ai <= bi))
    return nan_a | pick


# NumPy's maximum and minimum loops are vectorised for contiguous operands only: with a broadcast
# operand (a ReLU's zero, a clip's bound) they take about 3x the time they take with its
# contiguous copy (802k f32 elements: 248 against 79 us; add and multiply take less with the
# broadcast). Their fast paths take no views, so such an operand reaches them as its kernel's
# copy (a folded constant's, made once).
@binary("stablehlo.maximum", folds=True, quantized=DEQUANTIZE, accuracy=EXACT, selects=True,
        native={"int": FastPath(np.maximum, out=True), "float": FastPath(ieee_maximum, scalars=True, fresh=True)})
def maximum(dt, a, b):
    k = _kind(a)
    if k == "bool":
        return np.logical_or(a, b)
    if k in ("int", "uint"):
        return int_fn(np.maximum, dt, a, b)
    if k == "complex":
        return where(_lex(a, b, True), a, b)
    if native_float_pair(a, b):
        return ieee_maximum(a, b)
    return where(_pick_max(a, b), a, b)


@binary("stablehlo.minimum", folds=True, quantized=DEQUANTIZE, accuracy=EXACT, selects=True,
        native={"int": FastPath(np.minimum, out=True), "float": FastPath(ieee_minimum, scalars=True, fresh=True)})
def minimum(dt, a, b):
    k = _kind(a)
    if k == "bool":
        return np.logical_and(a, b)
    if k in ("int", "uint"):
        return int_fn(np.minimum, dt, a, b)
    if k == "complex":
        return where(_lex(a, b, False), a, b)
    if native_float_pair(a, b):
        return ieee_minimum(a, b)
    return where(_pick_min(a, b), a, b)


@kernel("stablehlo.clamp", folds=True, quantized=DEQUANTIZE, accuracy=EXACT)
def clamp(op, lo, x, hi):
    """See spec.md#clamp: ``minimum(maximum(operand, min), max)``; rank-0
    ``min``/``max`` broadcast."""

    def f(dt, lo_, x_, hi_):
        return minimum(dt, maximum(dt, x_, lo_), hi_)

    return apply(op, f, (lo, x, hi))


# --------------------------------------------------------------------------- #
# complex parts and select
# --------------------------------------------------------------------------- #

@binary("stablehlo.complex", accuracy=EXACT)
def complex_(dt, re, im):
    return make_complex(re, im, dt)


@unary("stablehlo.real", accuracy=EXACT)
def real(dt, x):
    x = np.asarray(x)
    return x.real.astype(dt) if _kind(x) == "complex" else x


@unary("stablehlo.imag", accuracy=EXACT)
def imag(dt, x):
    x = np.asarray(x)
    if _kind(x) == "complex":
        return x.imag.astype(dt)
    return np.zeros(x.shape, dtype=dt)


_UINTS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}

BLEND_MIN = 1 << 12
"""Elements from which :func:`where` blends bit patterns (below, ``np.where`` costs less)."""


def where(pred, a, b):
    """``np.where(pred, a, b)``; for a boolean ``pred`` and ``a``, ``b`` of its shape and one
    type of 1 to 8 bytes, of at least :data:`BLEND_MIN` elements, the bit patterns chosen
    without branches: each element's bits copied from ``a`` or ``b``, as ``np.where`` copies
    them (NaN payloads included), several times faster where ``pred`` changes at random.
    Computed on the patterns as unsigned integers of the elements' width ``k``, modulo
    ``2**k``: ``b + (a - b) * p`` with ``p`` 1 where ``pred`` holds and 0 elsewhere, which is
    ``a``'s pattern where ``p`` is 1 and ``b``'s where it is 0 (three passes; NumPy's cast of a
    boolean to an integer inside the product gives 1 for every nonzero byte, as ``np.where``
    reads it)."""
    pred, a, b = np.asarray(pred), np.asarray(a), np.asarray(b)
    ut = _UINTS.get(a.dtype.itemsize)
    if (ut is None or a.size < BLEND_MIN or pred.dtype != np.bool_ or a.dtype != b.dtype
            or not pred.shape == a.shape == b.shape):
        return np.where(pred, a, b)
    bb = b.view(ut)
    r = np.subtract(a.view(ut), bb)
    np.multiply(r, pred, out=r, casting="unsafe")  # a boolean of any nonzero byte counts as 1
    r += bb
    return r.view(a.dtype)


def _fast_select(op):
    """``select`` of plain types: :func:`where`, as the kernel computes it."""
    types = _fast.plain_types(op)
    if types is None or types[0][0] != np.bool_ or not types[0][1] == types[0][2] == types[1]:
        return None
    return FastPath(where, views=True, scalar="({1} if {0} else {2})", scalars=True)


@kernel("stablehlo.select", folds=True, quantized=DEQUANTIZE, accuracy=EXACT, selects=True, fast=_fast_select)
def select(op, pred, on_true, on_false):
    """See spec.md#select; a rank-0 ``pred`` selects whole tensors."""
    et = [_element(op.operand_type(i)) for i in (1, 2)] + [_element(op.result_type(0))]
    if any(isinstance(e, T.QuantizedType) for e in et) and not (et[0] == et[1] == et[2]):
        return apply(op, lambda dt, p, a, b: np.where(p, a, b), (pred, on_true, on_false))
    dt = op.result_dtype(0)
    return (out(where(np.asarray(pred, dtype=bool), on_true, on_false), dt),)

