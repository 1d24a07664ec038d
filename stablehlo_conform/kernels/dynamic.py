"""Dynamic-shape ops: shapes and sizes come from tensor operands at run time.

See spec.md#dynamic_broadcast_in_dim, #dynamic_iota, #dynamic_pad,
#dynamic_reshape, #dynamic_gather, #real_dynamic_slice; plus
``set_dimension_size`` (XLA's bounded-dynamic op: the dimension becomes the
given size). Each kernel reads the shape values and reuses the static
kernels' helpers, then checks the result against the declared static
dimensions.
"""

from __future__ import annotations

import numpy as np

from .indexing import _gather_numbers, gather_array, index_int64
from ..opinfo import EXACT, STORAGE
from .registry import kernel
from .shape import broadcast_to_shape, iota_array, pad_array, slice_array


def _values(t) -> list[int]:
    return [int(v) for v in index_int64(np.asarray(t)).reshape(-1)]


def _check_shape(op, shape, i: int = 0) -> None:
    declared = op.result_shape(i)
    if len(declared) != len(shape) or any(d is not None and d != s for d, s in zip(declared, shape)):
        raise ValueError(f"run-time shape {tuple(shape)} does not match the declared result {declared}")
    if any(s < 0 for s in shape):
        raise ValueError(f"negative dimension in run-time shape {tuple(shape)}")


@kernel("stablehlo.dynamic_broadcast_in_dim", quantized=STORAGE, accuracy=EXACT)
def dynamic_broadcast_in_dim(op, operand, output_dimensions):
    """See spec.md#dynamic_broadcast_in_dim."""
    shape = _values(output_dimensions)
    _check_shape(op, shape)
    dims = tuple(int(d) for d in op.attr("broadcast_dimensions"))
    return (broadcast_to_shape(operand, dims, shape),)


@kernel("stablehlo.dynamic_iota", quantized=STORAGE, accuracy=EXACT)
def dynamic_iota(op, output_shape):
    """See spec.md#dynamic_iota."""
    shape = _values(output_shape)
    _check_shape(op, shape)
    return (iota_array(shape, int(op.attr("iota_dimension")), op.result_dtype(0)),)


@kernel("stablehlo.dynamic_pad", quantized=STORAGE, accuracy=EXACT)
def dynamic_pad(op, operand, padding_value, low, high, interior):
    """See spec.md#dynamic_pad."""
    out = pad_array(operand, padding_value, _values(low), _values(high), _values(interior))
    _check_shape(op, out.shape)
    return (out,)


@kernel("stablehlo.dynamic_reshape", quantized=STORAGE, accuracy=EXACT)
def dynamic_reshape(op, operand, output_shape):
    """See spec.md#dynamic_reshape."""
    shape = _values(output_shape)
    _check_shape(op, shape)
    operand = np.asarray(operand)
    if int(np.prod(shape, dtype=np.int64)) != operand.size:
        raise ValueError(f"cannot reshape {operand.shape} to {tuple(shape)}")
    return (np.array(operand.reshape(tuple(shape)), copy=True),)


@kernel("stablehlo.dynamic_gather", quantized=STORAGE, accuracy=EXACT)
def dynamic_gather(op, operand, start_indices, slice_sizes):
    """See spec.md#dynamic_gather: gather with run-time slice sizes."""
    out = gather_array(operand, start_indices, slice_sizes=_values(slice_sizes),
                       **_gather_numbers(op.attr("dimension_numbers")))
    _check_shape(op, out.shape)
    return (out.astype(op.result_dtype(0), copy=False),)


@kernel("stablehlo.real_dynamic_slice", quantized=STORAGE, accuracy=EXACT)
def real_dynamic_slice(op, operand, start_indices, limit_indices, strides):
    """See spec.md#real_dynamic_slice."""
    start, limit, step = _values(start_indices), _values(limit_indices), _values(strides)
    operand = np.asarray(operand)
    for d, (s, l, st) in enumerate(zip(start, limit, step)):
        if not (0 <= s <= l <= operand.shape[d]) or st <= 0:
            raise ValueError(f"slice [{s}:{l}:{st}] out of bounds for dimension {d} of {operand.shape}")
    out = slice_array(operand, start, limit, step)
    _check_shape(op, out.shape)
    return (out,)


@kernel("stablehlo.set_dimension_size", quantized=STORAGE, accuracy=EXACT)
def set_dimension_size(op, operand, size):
    """Dimension ``dimension`` of the result has the run-time ``size``:
    the leading ``size`` entries of the operand along it."""
    dim = int(op.attr("dimension"))
    n = _values(size)[0]
    operand = np.asarray(operand)
    if not 0 <= n <= operand.shape[dim]:
        raise op.unsupported(f"size {n} beyond the operand's dimension {operand.shape[dim]}")
    idx = [slice(None)] * operand.ndim
    idx[dim] = slice(0, n)
    return (np.array(operand[tuple(idx)], copy=True),)
