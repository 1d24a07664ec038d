"""The float64 shadow of a program: the same ops, every float computed in f64.

A model's outputs are judged against what its program means without the
rounding of its own float types (see ``docs/models.md``). The shadow is that
program: every floating-point element type narrower than f64 (f32, f16,
bf16, every f8/f6/f4) becomes ``f64`` and ``complex<f32>`` becomes
``complex<f64>``, in every function signature, block argument, op operand
and result, and float constants are widened exactly. Integer, boolean and
quantized types are kept, so integer arithmetic (token ids, indices, int8
matmuls) stays what it is. A conversion to a narrow float in the program
(``convert`` to bf16, say) becomes a conversion to f64: the shadow keeps the
exact value, which is what the program would compute without rounding.

Ops that look at a float's bits cannot be widened (``bitcast_convert``
between a float and an integer type): a program with one has no shadow,
and :class:`NoShadow` says which op and where.
"""

from __future__ import annotations

import numpy as np

from ... import types as T
from ...errors import ConformError
from ...program import Block, Func, Module, Op, Region

F64 = T.element_type("f64")
C128 = T.element_type("complex<f64>")

BIT_OPS = frozenset({"stablehlo.bitcast_convert"})


class NoShadow(ConformError):
    """The program has an op whose float bits matter: no float64 shadow."""

    status = "unsupported"


def _wide_element(el):
    if isinstance(el, T.ElementType):
        if el.is_float and el.bits < 64:
            return F64
        if el.is_complex and el.bits < 128:
            return C128
    return el


def wide_type(t):
    """``t`` with its float element type widened (tensors, tuples; others kept)."""
    if isinstance(t, T.TensorType):
        el = _wide_element(t.element)
        return t if el is t.element else T.TensorType(t.shape, el)
    if isinstance(t, T.TupleType):
        return T.TupleType(tuple(wide_type(x) for x in t.types))
    return t


def widened(t) -> bool:
    return wide_type(t) is not t


def wide_value(a):
    """An argument or constant widened exactly to its shadow type."""
    if isinstance(a, np.ndarray) and a.dtype != np.float64 and a.dtype.kind in "fcV":
        try:
            el = T.element_type(T.name_of_dtype(a.dtype))
        except (KeyError, ValueError):
            return a
        wide = _wide_element(el)
        if wide is not el:
            return a.astype(wide.dtype)
    return a


def _attrs(attrs: dict) -> dict:
    out = {}
    for k, v in attrs.items():
        if isinstance(v, np.ndarray):
            out[k] = wide_value(v)
        elif isinstance(v, (T.TensorType, T.TupleType)):
            out[k] = wide_type(v)
        else:
            out[k] = v
    return out


def _op(op: Op) -> Op:
    if op.name in BIT_OPS and any(widened(t) for t in (*op.operand_types, *op.result_types)):
        raise NoShadow(f"no float64 shadow: {op.name} at {op.loc} reads the bits of a float")
    return Op(op.name, op.operands, op.results, tuple(wide_type(t) for t in op.operand_types),
              tuple(wide_type(t) for t in op.result_types), _attrs(op.attrs),
              tuple(_region(r) for r in op.regions), op.loc, op.successors)


def _region(r: Region) -> Region:
    return Region(tuple(Block(b.args, tuple(wide_type(t) for t in b.arg_types), tuple(_op(o) for o in b.ops))
                        for b in r.blocks))


def shadow_module(module: Module) -> Module:
    """The float64 shadow of ``module`` (see the module's text)."""
    funcs = {name: Func(f.name, tuple(wide_type(t) for t in f.param_types),
                        tuple(wide_type(t) for t in f.result_types), _region(f.body), f.visibility, f.loc,
                        dict(f.attrs))
             for name, f in module.funcs.items()}
    return Module(funcs, dict(module.attrs), module.name, module.source, module.line, "",
                  {k: shadow_module(m) for k, m in module.nested.items()}, dict(module.meshes))
