"""``stablehlo.fft`` (spec.md#fft) with ``numpy.fft``.

FFT/IFFT are complex-to-complex over the trailing ``len(fft_length)`` axes,
RFFT real-to-complex (result's last axis ``fft_length[-1] // 2 + 1``), IRFFT
complex-to-real (result's last axis ``fft_length[-1]``). The transform runs
in double precision and is rounded once into the result type (complex64 for
f32 inputs).
"""

from __future__ import annotations

import numpy as np

from .reduction import contiguous
from ..opinfo import ACCUMULATE
from .registry import kernel


@kernel("stablehlo.fft", accuracy=ACCUMULATE)
def fft(op, operand):
    """See spec.md#fft."""
    kind = str(op.attr("fft_type"))
    lengths = tuple(int(v) for v in op.attr("fft_length"))
    n = len(lengths)
    axes = tuple(range(operand.ndim - n, operand.ndim))
    out_dtype = op.result_dtype(0)
    out_shape = tuple(op.result_shape(0))
    if any(d is None for d in out_shape):
        out_shape = operand.shape[:operand.ndim - n] + (
            lengths[:-1] + ((lengths[-1] // 2 + 1),) if kind == "RFFT" else lengths)
    if int(np.prod(out_shape, dtype=np.int64)) == 0 or operand.size == 0 or 0 in lengths:
        return (np.zeros(out_shape, dtype=out_dtype),)
    if kind == "FFT":
        r = np.fft.fftn(operand.astype(np.complex128), s=lengths, axes=axes)
    elif kind == "IFFT":
        r = np.fft.ifftn(operand.astype(np.complex128), s=lengths, axes=axes)
    elif kind == "RFFT":
        r = np.fft.rfftn(operand.astype(np.float64), s=lengths, axes=axes)
    elif kind == "IRFFT":
        r = np.fft.irfftn(operand.astype(np.complex128), s=lengths, axes=axes)
    else:
        raise op.unsupported(f"fft_type {kind}")
    return (contiguous(r.astype(out_dtype)),)
