"""``stablehlo.compare`` (spec.md#compare).

``compare_type`` defaults to SIGNED for signed integers, UNSIGNED for
unsigned integers and booleans, FLOAT for floats and complex numbers.
FLOAT implements IEEE-754's quiet comparisons (NaN is unordered: only NE
holds). TOTALORDER orders every direction (EQ included) by IEEE-754
``totalOrder``: ``-NaN < -Inf < ... < -0 < +0 < ... < +Inf < +NaN``, with
distinct bit patterns distinct. Complex numbers compare the ``(real, imag)``
pairs lexicographically. Quantized operands are dequantized first.
"""

from __future__ import annotations

import numpy as np

from .. import types as T
from ..numeric import bits_of, float_bits, kind_of, native_float_pair
from ..opinfo import DEQUANTIZE, EXACT, FastPath
from . import _fast
from .elementwise import _element, dequantize
from .registry import kernel

_UFUNCS = {"EQ": np.equal, "NE": np.not_equal, "GE": np.greater_equal, "GT": np.greater,
           "LE": np.less_equal, "LT": np.less}

DIRECTIONS = ("EQ", "NE", "GE", "GT", "LE", "LT")


def enum_value(v, default=None):
    """An enum attribute's value: ``"GT"`` from ``"GT"`` or ``#chlo<comparison_direction GT>``."""
    if v is None:
        return default
    s = str(v).strip()
    if s.endswith(">"):
        s = s[:-1].split()[-1]
    return s


def _apply_direction(a, b, direction: str) -> np.ndarray:
    if direction == "EQ":
        return a == b
    if direction == "NE":
        return a != b
    if direction == "GE":
        return a >= b
    if direction == "GT":
        return a > b
    if direction == "LE":
        return a <= b
    if direction == "LT":
        return a < b
    raise ValueError(f"unknown comparison_direction {direction!r}")


def total_order_key(x: np.ndarray) -> np.ndarray:
    """An int64 key whose order is IEEE-754 ``totalOrder`` for float ``x``."""
    x = np.asarray(x)
    b = bits_of(x.dtype)
    u = float_bits(x)
    with np.errstate(all="ignore"):
        s = u.astype(np.int64)
        if b < 64:
            top = np.int64(1 << (b - 1))
            s = np.where(s >= top, s - (top << 1), s)
        maxpos = np.int64((1 << (b - 1)) - 1) if b < 64 else np.int64(0x7FFFFFFFFFFFFFFF)
        return np.where(s < 0, s ^ maxpos, s)


def compare_values(a, b, direction: str, ctype: str | None) -> np.ndarray:
    a = np.asarray(a)
    b = np.asarray(b)
    k = kind_of(a.dtype)
    if ctype is None:
        ctype = {"int": "SIGNED", "uint": "UNSIGNED", "bool": "UNSIGNED"}.get(k, "FLOAT")
    if k == "complex":
        ar, ai, br, bi = a.real, a.imag, b.real, b.imag
        if direction in ("EQ", "NE"):
            eq = (ar == br) & (ai == bi)
            return eq if direction == "EQ" else ~eq
        strict = _apply_direction(ar, br, direction[0] + "T")
        tie = (ar == br) & _apply_direction(ai, bi, direction)
        return strict | tie
    if k == "float":
        if ctype == "TOTALORDER":
            return _apply_direction(total_order_key(a), total_order_key(b), direction)
        if native_float_pair(a, b):
            return _apply_direction(a, b, direction)
        return _apply_direction(_fast.f32_values(a), _fast.f32_values(b), direction)
    if k in ("int", "uint") and bits_of(a.dtype) < 8:
        return _apply_direction(a.astype(np.int64), b.astype(np.int64), direction)
    return _apply_direction(a, b, direction)


def _fast_compare(op):
    """``compare`` of two operands of one NumPy float type (FLOAT or default comparison) or
    of one integer type of 8 bits or more: the direction's ufunc, as :func:`compare_values`
    computes it; of two operands of one narrower float type (bf16, f8, ...): the ufunc on their
    f32 values (:func:`._fast.f32_values`), as :func:`compare_values` computes it."""
    types = _fast.plain_types(op)
    if types is None or types[0][0] != types[0][1]:
        return None
    src = types[0][0]
    family = _fast.native_family(src)
    ctype = enum_value(op.attrs.get("compare_type"))
    narrow = family is None and kind_of(src) == "float"
    if (family is None and not narrow) or (family != "int" and ctype not in (None, "FLOAT")):
        return None
    uf = _UFUNCS.get(enum_value(op.attrs.get("comparison_direction")))
    if uf is None:
        return None
    if narrow:
        return FastPath(lambda a, b: uf(_fast.f32_values(a), _fast.f32_values(b)), views=True, fresh=True)
    return _fast.ufunc_path(uf, types[2])


@kernel("stablehlo.compare", folds=True, quantized=DEQUANTIZE, accuracy=EXACT, selects=True, fast=_fast_compare)
def compare(op, lhs, rhs):
    direction = enum_value(op.attr("comparison_direction"))
    ctype = enum_value(op.attr("compare_type"))
    ets = [_element(op.operand_type(i)) for i in (0, 1)]
    if isinstance(ets[0], T.QuantizedType):
        lhs = dequantize(lhs, ets[0])
    if isinstance(ets[1], T.QuantizedType):
        rhs = dequantize(rhs, ets[1])
    with np.errstate(all="ignore"):
        r = compare_values(lhs, rhs, direction, ctype)
    return (np.asarray(r, dtype=np.bool_),)
