"""Fast paths: what a kernel declares it computes, for one op of static plain types, with a
single NumPy call or a few (see :class:`stablehlo_conform.opinfo.FastPath`).

The engine's generated blocks (``engine.codegen``) call a fast path in place of the
kernel: no context, no dispatch on element types, no result check. A fast path returns what
the kernel returns for the same operands, bit for bit (``tests/test_fast_paths.py`` and
``tests/test_engine.py`` compare them); its factory returns None wherever it would not.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .. import types as T
from ..errors import UnsupportedOp
from ..opinfo import FastPath
from ..numeric import NATIVE_FLOATS, is_subbyte_int, out


def plain_types(op) -> tuple[tuple[np.dtype, ...], np.dtype, tuple[int, ...]] | None:
    """``(operand dtypes, result dtype, result shape)`` of an op with one result whose
    operands and result are all static tensors of non-quantized element types; else None."""
    if len(op.result_types) != 1:
        return None
    types = (*op.operand_types, op.result_types[0])
    for ty in types:
        if not isinstance(ty, T.TensorType) or not ty.is_static or ty.element.quantized:
            return None
    return tuple(ty.dtype for ty in op.operand_types), op.result_types[0].dtype, tuple(op.result_types[0].shape)


def native_family(dt: np.dtype) -> str | None:
    """``"float"`` for f16/f32/f64, ``"int"`` for integer types of 8 bits or more, else None:
    the element types NumPy's own ufuncs compute as the kernels do."""
    if dt in NATIVE_FLOATS:
        return "float"
    if dt.kind in "iu" and not is_subbyte_int(dt):
        return "int"
    return None


def elementwise(fn: Callable, native: dict[str, Callable] | None = None) -> Callable:
    """The fast-path factory of an element-wise kernel ``apply``-ing ``fn(dt, *xs)``
    (``kernels.elementwise.apply``): ``native[family]`` itself (a ufunc, see
    :func:`native_family`, or a :class:`FastPath`) where every operand has the result's type
    and the kernel computes exactly that there; else ``fn`` called directly (the kernel
    without its dispatch)."""

    def fast(op) -> FastPath | None:
        types = plain_types(op)
        if types is None:
            return None
        ins, dt, _ = types
        if native and all(d == dt for d in ins):
            uf = native.get(native_family(dt))
            if isinstance(uf, FastPath):
                return uf
            if uf is not None:
                return FastPath(uf, views=True, out=True)
        name, loc = op.name, str(op.loc)

        def call(*xs):
            try:
                r = fn(dt, *xs)
            except NotImplementedError as e:  # as kernels.elementwise.apply reports it
                raise UnsupportedOp(name, str(e), loc) from None
            return out(r, dt)

        return FastPath(call)

    return fast
