"""Quantization: ``uniform_quantize``, ``uniform_dequantize`` and the
``dequantize_op_quantize`` evaluation of ops on quantized tensors.

See spec.md#quantized-element-types, spec.md#uniform_quantize,
spec.md#uniform_dequantize and spec.md#quantization-computations.

Values of quantized tensors are their storage integers. ``dequantize`` and
``quantize`` follow the spec's formulas step by step in the expressed type:
every arithmetic step is carried out exactly in ``f64`` and rounded once to
the expressed type, so the result is the correctly rounded expressed-type
operation the spec writes. Two details the spec leaves open:

- ``x_storage - zero_point`` is taken in 64-bit integers (the storage type
  could overflow; the value is then converted exactly as the spec's
  ``convert`` would for an in-range difference);
- a NaN reaching the final ``convert`` into the storage type gives 0, as
  float -> integer ``convert`` does in this project.

The engine hands every op with quantized operand or result types to
:func:`dequantize_op_quantize` unless :func:`passes_storage` says the op only
moves storage values (data movement, control flow, checks) or its kernel is
marked ``quantization_aware``. Ops whose spec semantics is
``dequantize_op_quantize`` (element-wise math, ``dot_general``,
``convolution``, ``batch_norm_*``, ...), ``dequantize_compare``,
``dequantize_select_quantize`` and ``hybrid_dequantize_then_op`` run their
float kernel on a shadow op whose quantized types are replaced by their
expressed types; other ops on quantized tensors are unsupported. Per-axis
quantized operands and results (which e.g. ``add``, ``dot_general`` and
``convolution`` allow) are dequantized and quantized slice by slice along
their quantization dimension, as ``dequantize``/``quantize`` define.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .. import types as T
from ..errors import UnsupportedOp
from ..opinfo import DEQUANTIZE, STORAGE
from .context import OpContext
from ..numeric import int_limits, round_to, to_i64, wrap_i64
from .registry import KERNELS, kernel

F64 = np.float64

# Ops whose spec semantics on quantized tensors is dequantize -> float op ->
# quantize, and ops that move or forward storage values unchanged: declared
# ``quantized`` in the op registry (stablehlo_conform/opinfo.py).
DEQUANTIZE_OPS = KERNELS.where(quantized=DEQUANTIZE)
STORAGE_OPS = KERNELS.where(quantized=STORAGE)


# --------------------------------------------------------------------------- #
# spec.md#quantization-computations
# --------------------------------------------------------------------------- #


def _element(t):
    return t.element if isinstance(t, T.TensorType) else t


def is_quantized_type(t) -> bool:
    return isinstance(_element(t), T.QuantizedType)


def _along_axis(values, qt: T.QuantizedType, ndim: int) -> np.ndarray:
    """``compute_scales``/``compute_zero_points``: per-tensor values as 0-d,
    per-axis values shaped to broadcast along the quantization dimension."""
    arr = np.asarray(values)
    if qt.axis is None:
        return arr.reshape(())
    shape = [1] * ndim
    shape[qt.axis] = arr.size
    return arr.reshape(shape)


def _scales(qt: T.QuantizedType, ndim: int) -> np.ndarray:
    """The scales as constants of the expressed type, widened to f64."""
    ex = qt.expressed.dtype
    return _along_axis(np.array(qt.scales, dtype=F64).astype(ex).astype(F64), qt, ndim)


def storage_limits(qt: T.QuantizedType) -> tuple[int, int]:
    lo, hi = int_limits(qt.storage.dtype)
    return (lo if qt.storage_min is None else qt.storage_min,
            hi if qt.storage_max is None else qt.storage_max)


def dequantize(x: np.ndarray, qt: T.QuantizedType) -> np.ndarray:
    """spec.md ``dequantize``: ``convert(x - zero_point) * scale`` in the
    expressed type."""
    x = np.asarray(x)
    ex = qt.expressed.dtype
    zp = _along_axis(np.array(qt.zero_points, dtype=np.int64), qt, x.ndim)
    with np.errstate(all="ignore"):
        sub = x.astype(np.int64) - zp
        conv = round_to(sub.astype(F64), ex).astype(F64)
        return np.asarray(round_to(conv * _scales(qt, x.ndim), ex))


def quantize(x: np.ndarray, qt: T.QuantizedType) -> np.ndarray:
    """spec.md ``quantize``: ``convert(round_nearest_even(clamp(min, x /
    scale + zero_point, max)), storage)``, each step in the expressed type."""
    ex = qt.expressed.dtype
    x = np.asarray(x)
    if x.dtype != ex:
        x = round_to(x.astype(F64), ex)
    lo, hi = storage_limits(qt)
    zp = _along_axis(np.array(qt.zero_points, dtype=F64), qt, x.ndim)
    zp = round_to(zp, ex).astype(F64)
    cmin = float(round_to(np.array(lo, dtype=F64), ex))
    cmax = float(round_to(np.array(hi, dtype=F64), ex))
    with np.errstate(all="ignore"):
        scaled = round_to(x.astype(F64) / _scales(qt, x.ndim), ex).astype(F64)
        shifted = round_to(scaled + zp, ex).astype(F64)
        clamped = np.minimum(np.maximum(shifted, cmin), cmax)  # NaN stays NaN
        rounded = np.rint(clamped)
        rounded = np.where(np.isnan(rounded), 0.0, rounded)
        # the clamp bounds are expressed-type values: keep the integers in range
        ints = np.clip(rounded, lo, hi).astype(np.int64)
    return np.asarray(ints.astype(qt.storage.dtype))  # rank 0 stays an array


# --------------------------------------------------------------------------- #
# kernels
# --------------------------------------------------------------------------- #


@kernel("stablehlo.uniform_quantize", quantized=STORAGE)
def uniform_quantize(op, operand):
    """See spec.md#uniform_quantize (float -> quantized and requantize)."""
    rq = _element(op.result_type(0))
    if not isinstance(rq, T.QuantizedType):
        raise op.unsupported("result is not quantized")
    src = _element(op.operand_type(0))
    x = dequantize(operand, src) if isinstance(src, T.QuantizedType) else operand
    return (quantize(x, rq),)


@kernel("stablehlo.uniform_dequantize", quantized=STORAGE)
def uniform_dequantize(op, operand):
    """See spec.md#uniform_dequantize."""
    qt = _element(op.operand_type(0))
    if not isinstance(qt, T.QuantizedType):
        raise op.unsupported("operand is not quantized")
    return (np.asarray(dequantize(operand, qt), dtype=op.result_dtype(0)),)


uniform_quantize.quantization_aware = True
uniform_dequantize.quantization_aware = True


# --------------------------------------------------------------------------- #
# the engine's hook
# --------------------------------------------------------------------------- #


def _any_quantized(types) -> bool:
    for t in types:
        if isinstance(t, T.TupleType):
            if _any_quantized(t.types):
                return True
        elif is_quantized_type(t):
            return True
    return False


def passes_storage(op) -> bool:
    """True when ``op`` has no quantized types or only moves storage values."""
    if op.name in STORAGE_OPS or op.name.startswith("check."):
        return True
    return not (_any_quantized(op.operand_types) or _any_quantized(op.result_types))


def _expressed(t):
    if isinstance(t, T.TensorType) and isinstance(t.element, T.QuantizedType):
        return T.TensorType(t.shape, t.element.expressed)
    return t


def _shadow(op):
    """The op with expressed types in place of quantized ones (cached)."""
    sh = op.__dict__.get("_float_shadow")
    if sh is None:
        sh = dataclasses.replace(
            op,
            operand_types=tuple(_expressed(t) for t in op.operand_types),
            result_types=tuple(_expressed(t) for t in op.result_types),
        )
        op._float_shadow = sh
    return sh


def dequantize_op_quantize(engine, op, fn, args):
    """Run ``fn`` on dequantized operands and quantize its results: see
    spec.md#quantization-computations (``dequantize_op_quantize``,
    ``dequantize_compare``, ``dequantize_select_quantize``,
    ``dequantize_batch_norm_grad_or_training_quantize``,
    ``hybrid_dequantize_then_op``)."""
    if op.name == "stablehlo.constant":
        return _quantized_constant(op, fn(OpContext(op, engine)))
    if op.name not in DEQUANTIZE_OPS:
        raise UnsupportedOp(op.name, "quantized operands or results: the spec gives this op no "
                            "quantized semantics", str(op.loc))
    if op.name == "stablehlo.is_finite":
        # spec.md#is_finite: for quantized types the result is always true
        return (np.ones(np.shape(args[0]), dtype=np.bool_),)
    shadow = _shadow(op)
    fargs = [dequantize(a, _element(t)) if is_quantized_type(t) else a
             for a, t in zip(args, op.operand_types)]
    results = fn(OpContext(shadow, engine), *fargs)
    if not isinstance(results, (tuple, list)):
        return results  # the engine reports the kernel bug
    return tuple(quantize(r, _element(t)) if is_quantized_type(t) else r
                 for r, t in zip(results, op.result_types))


def _quantized_constant(op, results):
    """spec.md#constant with a quantized result: the attribute holds storage
    values in a signless integer type of the storage width (``u8`` storage
    is written ``i8``); reinterpret them as the storage type."""
    if not isinstance(results, (tuple, list)) or len(results) != 1:
        return results
    v = np.asarray(results[0])
    ty = op.result_types[0]
    qt = _element(ty)
    if not isinstance(qt, T.QuantizedType) or v.dtype == qt.dtype:
        return results
    if v.dtype.kind not in "iub" and "int" not in v.dtype.name:
        raise op_unsupported(op, f"quantized constant holds {v.dtype} values")
    return (wrap_i64(to_i64(v), qt.dtype),)


def op_unsupported(op, detail: str) -> UnsupportedOp:
    return UnsupportedOp(op.name, detail, str(op.loc))
