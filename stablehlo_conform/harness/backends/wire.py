"""Wire types: how values of every element type cross into a native backend.

A native backend exchanges only some element types with Python ("wire"
types): e.g. bf16 travels as its i16 bit pattern, complex as real and
imaginary parts. :func:`wire_for` picks the wire form of a tensor type,
:func:`encode` / :func:`decode` convert arrays, and :func:`wrapper_text`
writes a public ``@main`` that converts between the wire types and the
program's types around a call of the function under test.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import types as T
from ...errors import UnsupportedOp
from ...process_grid import grid_size_of
from ...program import Module
from .base import BackendError

BASIC = frozenset({"i1", "i8", "i16", "i32", "i64", "ui8", "ui16", "ui32", "ui64", "f16", "f32", "f64"})
_SMALL_INT = {"i2": "i8", "i4": "i8", "ui2": "ui8", "ui4": "ui8"}


@dataclass
class Wire:
    """How one tensor type crosses into a backend and back."""

    ttype: Any  # program TensorType
    pieces: tuple  # wire TensorTypes

    @property
    def name(self) -> str:
        return str(self.ttype.element)


def _tt(shape, name: str):
    return T.TensorType(shape, T.element_type(name))


def wire_for(ttype, native: frozenset[str] | None, label: str) -> Wire:
    """The wire form of ``ttype`` for a backend exchanging ``native`` element
    types (None: every type)."""
    if not isinstance(ttype, T.TensorType):
        raise UnsupportedOp(label, f"arguments or results of type {ttype}")
    el = ttype.element
    if getattr(el, "quantized", False):
        raise UnsupportedOp(label, f"quantized arguments or results ({ttype})")
    name = str(el)
    if name.startswith("f6E"):
        raise UnsupportedOp(label, f"{name} values cannot be passed to this backend")
    if native is None or name in native:
        return Wire(ttype, (ttype,))
    shape = ttype.shape
    if el.kind == "complex":
        part = "f32" if name == "complex<f32>" else "f64"
        return Wire(ttype, (_tt(shape, part), _tt(shape, part)))
    if name in _SMALL_INT:
        return Wire(ttype, (_tt(shape, _SMALL_INT[name]),))
    if el.kind == "float":
        if el.bits == 16:
            return Wire(ttype, (_tt(shape, "i16"),))
        if el.bits == 8:
            return Wire(ttype, (_tt(shape, "i8"),))
        if el.bits == 4:
            return Wire(ttype, (_tt(shape, "ui8"),))
    raise UnsupportedOp(label, f"{name} values cannot be passed to this backend")


def encode(w: Wire, a: np.ndarray) -> list[np.ndarray]:
    a = np.asarray(a)
    if len(w.pieces) == 1 and w.pieces[0] is w.ttype:
        return [a]
    el = w.ttype.element
    if el.kind == "complex":
        dt = w.pieces[0].dtype
        return [np.require(part.astype(dt), requirements="C") for part in (a.real, a.imag)]
    if w.name in _SMALL_INT:
        return [a.astype(w.pieces[0].dtype)]
    bits = T.to_bits(a).reshape(a.shape)
    if el.bits == 4:
        return [(bits & 0xF).astype(np.uint8)]
    return [bits.view(w.pieces[0].dtype)]


def decode(w: Wire, parts: Sequence[np.ndarray]) -> np.ndarray:
    if len(w.pieces) == 1 and w.pieces[0] is w.ttype:
        return np.asarray(parts[0]).astype(w.ttype.dtype, copy=False)
    el = w.ttype.element
    dt = w.ttype.dtype
    if el.kind == "complex":
        re, im = (np.asarray(p) for p in parts)
        out = np.empty(re.shape, dt)
        out.real = re
        out.imag = im
        return out
    p = np.asarray(parts[0])
    if w.name in _SMALL_INT:
        return p.astype(dt)
    if el.bits == 4:
        return (p.astype(np.uint8) & 0xF).view(dt)
    return np.require(p, requirements="C").view(T.bits_container(dt)).view(dt).reshape(p.shape)


def _in_ops(w: Wire, names: list[str], out: str) -> list[str]:
    """Ops turning wire values ``names`` into ``%out`` of the program type."""
    t = str(w.ttype)
    if len(w.pieces) == 1 and w.pieces[0] is w.ttype:
        return []
    p0 = str(w.pieces[0])
    el = w.ttype.element
    if el.kind == "complex":
        return [f'    {out} = "stablehlo.complex"({names[0]}, {names[1]}) : ({p0}, {p0}) -> {t}']
    if w.name in _SMALL_INT:
        return [f'    {out} = "stablehlo.convert"({names[0]}) : ({p0}) -> {t}']
    if el.bits == 4:
        mid = str(_tt(w.ttype.shape, "ui4"))
        return [f'    {out}_n = "stablehlo.convert"({names[0]}) : ({p0}) -> {mid}',
                f'    {out} = "stablehlo.bitcast_convert"({out}_n) : ({mid}) -> {t}']
    return [f'    {out} = "stablehlo.bitcast_convert"({names[0]}) : ({p0}) -> {t}']


def _out_ops(w: Wire, value: str, out: str) -> tuple[list[str], list[str]]:
    """Ops turning ``value`` of the program type into wire values."""
    t = str(w.ttype)
    if len(w.pieces) == 1 and w.pieces[0] is w.ttype:
        return [], [value]
    p0 = str(w.pieces[0])
    el = w.ttype.element
    if el.kind == "complex":
        return ([f'    {out}_re = "stablehlo.real"({value}) : ({t}) -> {p0}',
                 f'    {out}_im = "stablehlo.imag"({value}) : ({t}) -> {p0}'], [f"{out}_re", f"{out}_im"])
    if w.name in _SMALL_INT:
        return [f'    {out} = "stablehlo.convert"({value}) : ({t}) -> {p0}'], [out]
    if el.bits == 4:
        mid = str(_tt(w.ttype.shape, "ui4"))
        return ([f'    {out}_n = "stablehlo.bitcast_convert"({value}) : ({t}) -> {mid}',
                 f'    {out} = "stablehlo.convert"({out}_n) : ({mid}) -> {p0}'], [out])
    return [f'    {out} = "stablehlo.bitcast_convert"({value}) : ({t}) -> {p0}'], [out]


def replicated_attr(module: Module) -> Any:
    """For a program run on several devices (``mhlo.num_partitions`` or
    ``mhlo.num_replicas`` above 1): a function giving the attribute that
    makes a wrapper argument or result of some type whole on every device
    (``sdy.sharding`` on the module's first mesh with axes, else
    ``mhlo.sharding``); None for single-device programs."""
    r, p = grid_size_of(module)
    if r * p == 1:
        return None
    meshes = getattr(module, "meshes", None) or {}
    # a mesh without axes puts a value on one device: only one with axes replicates
    mesh = next((name for name, m in meshes.items() if getattr(m, "axes", ())), None)
    if mesh is not None:
        def sdy(t) -> str:
            dims = ", ".join(["{}"] * len(getattr(t, "shape", ())))
            return f"{{sdy.sharding = #sdy.sharding<@{mesh}, [{dims}]>}}"

        return sdy
    return lambda t: '{mhlo.sharding = "{replicated}"}'


def wrapper_text(callee: str, params: list[Wire | None], results: list[Wire],
                 declared: dict[int, Any] | None = None, consts: dict[int, str] | None = None,
                 attr: Any = None) -> str:
    """A public ``@main`` calling ``callee`` through wire types.

    ``declared``: parameters whose declared (dynamic) type differs from the
    wire's static type get a cast; ``consts``: parameters passed as a
    constant (``dense<...> : type`` text) instead of an argument; ``attr``:
    a function giving each wire argument's and result's attribute text
    (:func:`replicated_attr`)."""
    declared = declared or {}
    consts = consts or {}
    attr = attr or (lambda t: "")
    args: list[str] = []
    body: list[str] = []
    call_args: list[str] = []
    ptypes: list[str] = []
    for i, w in enumerate(params):
        if i in consts:
            body.append(f"    %p{i} = stablehlo.constant {consts[i]}")
            call_args.append(f"%p{i}")
            ptypes.append(consts[i].rsplit(" : ", 1)[1])
            continue
        names = [f"%w{i}_{j}" for j in range(len(w.pieces))]
        args += [f"{n}: {p} {attr(p)}".rstrip() for n, p in zip(names, w.pieces)]
        ops = _in_ops(w, names, f"%p{i}")
        body += ops
        value = f"%p{i}" if ops else names[0]
        if i in declared:
            body.append(f'    %q{i} = "stablehlo.convert"({value}) : ({w.ttype}) -> {declared[i]}')
            value = f"%q{i}"
        call_args.append(value)
        ptypes.append(str(declared.get(i, w.ttype)))
    rtypes = ", ".join(str(w.ttype) for w in results)
    n = len(results)
    lhs = "" if n == 0 else ("%r = " if n == 1 else f"%r:{n} = ")
    body.append(f"    {lhs}func.call @{callee}({', '.join(call_args)}) : ({', '.join(ptypes)}) -> ({rtypes})")
    outs: list[str] = []
    out_types: list[str] = []
    out_decls: list[str] = []
    for i, w in enumerate(results):
        v = "%r" if n == 1 else f"%r#{i}"
        ops, names = _out_ops(w, v, f"%o{i}")
        body += ops
        outs += names
        out_types += [str(p) for p in w.pieces]
        out_decls += [f"{p} {attr(p)}".rstrip() for p in w.pieces]
    ret = f"    func.return {', '.join(outs)} : {', '.join(out_types)}" if outs else "    func.return"
    head = f"  func.func public @main({', '.join(args)}) -> ({', '.join(out_decls)}) {{"
    return "\n".join([head, *body, ret, "  }"])


def splice(module_text: str, func_text: str) -> str:
    """Insert a function before the closing brace of a printed module."""
    lines = module_text.rstrip("\n").split("\n")
    for i in range(len(lines) - 1, -1, -1):
        if lines[i] == "}":
            return "\n".join(lines[:i] + [func_text] + lines[i:]) + "\n"
    raise BackendError("cannot find the end of the module in its printed form")
