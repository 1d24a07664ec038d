"""Lowering a parsed module into plain :mod:`stablehlo_conform.program` objects: every attribute
decoded once (ints, tuples, enums, arrays, types, shardings).

Part of :mod:`stablehlo_conform.frontend`, the one package that imports the bindings.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from .. import types as T
from ..deep import HANDOFF_DEPTH, in_deep_thread, run_deep
from ..errors import ParseError
from ..program import (AttrRecord, AxisRef, Block, Func, Loc, Mesh, MeshAxesGroups, Module, Op, OpaqueAttr, Region,
                      SymbolRef, TensorSharding)
from .chunks import Chunk
from .bindings import _IREE_CHECK, _bindings, _iree_state, _is_iree_module, _isa, _state, _string_attr
from .parse import _ConstantError, _LITERAL_NAME, _LITERAL_REF_RE, _check_budget, _hex_to_bytes, _line_col, source_of


# --------------------------------------------------------------------------- #
# Lowering to program objects
# --------------------------------------------------------------------------- #


class _Lowerer:
    def __init__(self, path: str, st: dict[str, Any] | None = None, line_offset: int = 0,
                 chunk: Chunk | None = None):
        self.path = path
        self.line_offset = line_offset
        self.chunk = chunk  # for the large literals kept out of the parser
        self.level = 0  # regions being lowered
        self.ids: dict[Any, int] = {}
        self.types: dict[str, Any] = {}
        st = _state if st is None else st
        self.ctx = st["ctx"]
        self.ir = st["ir"]
        self.attr_classes = st["attr_classes"]
        self.foreign = _jaxlib_attr if st.get("foreign") else None  # another provider's context
        self.sdy = st.get("sdy")
        self.sh = st.get("sh")

    # values -------------------------------------------------------------
    def vid(self, value) -> int:
        key = value
        i = self.ids.get(key)
        if i is None:
            i = len(self.ids)
            self.ids[key] = i
        return i

    # types --------------------------------------------------------------
    def type(self, t) -> Any:
        key = str(t)
        got = self.types.get(key)
        if got is not None:
            return got
        ir = self.ir
        if _isa(t, ir.RankedTensorType):
            rt = ir.RankedTensorType(t)
            shape = tuple(None if rt.is_dynamic_dim(i) else int(rt.shape[i]) for i in range(rt.rank))
            et = T.parse_element_text(str(rt.element_type))
            got = T.TensorType(shape, et)
        elif _isa(t, ir.VectorType):
            vt = ir.VectorType(t)
            got = T.TensorType(tuple(int(d) for d in vt.shape), T.parse_element_text(str(vt.element_type)))
        elif _isa(t, ir.TupleType):
            tt = ir.TupleType(t)
            got = T.TupleType(tuple(self.type(tt.get_type(i)) for i in range(tt.num_types)))
        elif key == "!stablehlo.token":
            got = T.TokenType()
        else:
            got = T.parse_element_text(key)
        self.types[key] = got
        return got

    # locations ----------------------------------------------------------
    def loc(self, location) -> Loc:
        """The op's place in the program's text, or the source another file names (:func:`.parse.source_of`)."""
        text = str(location)
        source = source_of(text)
        if source:
            return Loc(self.path, name=source)
        lc = _line_col(text, self.line_offset)
        return Loc(self.path, *lc) if lc else Loc(self.path)

    # attributes ---------------------------------------------------------
    def attr(self, a, type_hint=None) -> Any:
        ir = self.ir
        if _isa(a, ir.BoolAttr):
            return bool(ir.BoolAttr(a).value)
        if _isa(a, ir.IntegerAttr):
            return int(ir.IntegerAttr(a).value)
        if _isa(a, ir.FloatAttr):
            return float(ir.FloatAttr(a).value)
        if _isa(a, ir.StringAttr):
            return _string_attr(ir.StringAttr(a))
        if _isa(a, ir.UnitAttr):
            return True
        for cls_name in ("DenseI64ArrayAttr", "DenseI32ArrayAttr", "DenseI16ArrayAttr",
                         "DenseI8ArrayAttr", "DenseBoolArrayAttr", "DenseF32ArrayAttr",
                         "DenseF64ArrayAttr"):
            cls = getattr(ir, cls_name, None)
            if cls is not None and _isa(a, cls):
                return tuple(cls(a))
        if _isa(a, ir.DenseElementsAttr):
            return self.dense(ir.DenseElementsAttr(a))
        if _isa(a, ir.ArrayAttr):
            return tuple(self.attr(x) for x in ir.ArrayAttr(a))
        if _isa(a, ir.DictAttr):
            d = ir.DictAttr(a)
            return {d[i].name: self.attr(d[i].attr) for i in range(len(d))}
        if _isa(a, ir.FlatSymbolRefAttr):
            return SymbolRef(ir.FlatSymbolRefAttr(a).value)
        if _isa(a, ir.SymbolRefAttr):
            return SymbolRef(str(a).lstrip("@").split("::")[-1].lstrip("@"))
        if _isa(a, ir.TypeAttr):
            tv = ir.TypeAttr(a).value
            if _isa(tv, ir.FunctionType):
                ft = ir.FunctionType(tv)
                return (tuple(self.type(x) for x in ft.inputs), tuple(self.type(x) for x in ft.results))
            return self.type(tv)
        for cls in self.attr_classes:
            if _isa(a, cls):
                return self.record(cls, cls(a))
        if self.sdy is not None:
            got = self.sharding_attr(a)
            if got is not None:
                return got
        text = str(a)
        if self.chunk is not None and self.chunk.literals and text.startswith("dense_resource<" + _LITERAL_NAME):
            return self.literal(text)
        if self.foreign is not None:
            return self.foreign(text, self.path)
        return OpaqueAttr(text)

    # sharding (Shardy and StableHLO meshes) ---------------------------
    def sharding_attr(self, a) -> Any:
        """Meshes, tensor shardings, manual axes and mesh-axes replica
        groups as :mod:`program` objects; None for other attributes."""
        sdy, sh = self.sdy, self.sh
        if _isa(a, sdy.TensorShardingAttr):
            t = sdy.TensorShardingAttr(a)
            dims = tuple(tuple(self.axis_ref(x) for x in sdy.DimensionShardingAttr(d).axes)
                         for d in t.dimension_shardings)
            return TensorSharding(self.mesh(t.mesh_or_ref), dims,
                                  tuple(self.axis_ref(x) for x in t.replicated_axes),
                                  tuple(self.axis_ref(x) for x in t.unreduced_axes))
        if _isa(a, sdy.TensorShardingPerValueAttr):
            return tuple(self.attr(x) for x in sdy.TensorShardingPerValueAttr(a).shardings)
        if _isa(a, sdy.ManualAxesAttr):
            m = sdy.ManualAxesAttr(a)
            return tuple(m[i] for i in range(len(m)))
        if _isa(a, sdy.MeshAttr) or _isa(a, sh.MeshAttr):
            return self.mesh(a)
        if _isa(a, sh.ReplicaGroupMeshAxesAttr):
            r = sh.ReplicaGroupMeshAxesAttr(a)
            return MeshAxesGroups(self.mesh(r.mesh), tuple(self.axis_ref(x) for x in self.ir.ArrayAttr(r.axes)))
        return None

    def mesh(self, m) -> str | Mesh:
        """A mesh attribute, or the name of the mesh symbol it refers to."""
        ir, sdy, sh = self.ir, self.sdy, self.sh
        if _isa(m, ir.FlatSymbolRefAttr):
            return ir.FlatSymbolRefAttr(m).value
        if _isa(m, sdy.MeshAttr):
            ma = sdy.MeshAttr(m)
            axes = [sdy.MeshAxisAttr(x) for x in ma.axes]
            ids = ma.device_ids
        else:
            ma = sh.MeshAttr(m)
            axes = [sh.MeshAxisAttr(x) for x in ir.ArrayAttr(ma.axes)]
            ids = ma.device_ids
            ids = self.attr(ids) if ids is not None else ()
        ids = np.ravel(np.asarray(ids if ids is not None else (), dtype=np.int64))
        return Mesh(tuple((str(x.name), int(x.size)) for x in axes), tuple(int(i) for i in ids))

    def axis_ref(self, x) -> AxisRef:
        sdy, sh = self.sdy, self.sh
        r = sdy.AxisRefAttr(x) if _isa(x, sdy.AxisRefAttr) else sh.AxisRefAttr(x)
        info = r.sub_axis_info
        if info is None:
            return AxisRef(str(r.name))
        si = sdy.SubAxisInfoAttr(info) if _isa(info, sdy.SubAxisInfoAttr) else sh.SubAxisInfoAttr(info)
        return AxisRef(str(r.name), int(si.pre_size), int(si.size))

    _SKIP = {"context", "type", "typeid", "static_typeid", "dump", "get", "isinstance",
             "maybe_downcast", "parse", "get_named", "owner", "location"}

    def record(self, cls, x) -> Any:
        names = [n for n in dir(x) if not n.startswith("_") and n not in self._SKIP]
        if names == ["value"] or cls.__name__.endswith("Attr") and "value" in names and len(names) <= 2:
            return str(x.value)
        fields = []
        for n in names:
            try:
                v = getattr(x, n)
            except Exception:
                continue
            if callable(v):
                continue
            fields.append((n, self.plain(v)))
        return AttrRecord(cls.__name__, tuple(fields))

    def plain(self, v) -> Any:
        if isinstance(v, (list, tuple)):
            return tuple(self.plain(x) for x in v)
        if isinstance(v, (int, float, str, bool)) or v is None:
            return v
        if isinstance(v, self.ir.Attribute):
            return self.attr(v)
        if isinstance(v, self.ir.Type):
            return self.type(v)
        return str(v)

    def dense(self, a) -> np.ndarray:
        ttype = self.type(a.type)
        if a.is_splat and ttype.num_elements() != 1:  # one value printed; a read-only view of the declared shape
            return self.dense_from_text(str(a), ttype)
        _check_budget(ttype)
        try:
            arr = np.array(a)
            if arr.dtype == ttype.dtype or (ttype.element.name == "index"):
                if arr.shape != tuple(ttype.shape):
                    arr = np.broadcast_to(arr, ttype.shape).copy()
                return arr.astype(ttype.dtype, copy=False)
        except Exception:
            pass
        text = str(a)
        return self.dense_from_text(text, ttype)

    def literal(self, ref: str) -> np.ndarray:
        """A large hex literal, decoded from the chunk's source text."""
        m = _LITERAL_REF_RE.match(ref)
        span = self.chunk.literals.get(m.group(1)) if m else None
        if span is None:
            raise _ConstantError(f"cannot decode attribute {ref[:80]}")
        ttype = T.parse_type_text(m.group(2))
        start, end = span
        if (end - start) // 2 != ttype.element.dtype.itemsize:  # not a splat
            _check_budget(ttype)
        try:
            return T.decode_hex_storage(_hex_to_bytes(self.chunk.text, start, end), ttype)
        except ValueError as e:
            raise _ConstantError(str(e)) from None

    def dense_from_text(self, text: str, ttype) -> np.ndarray:
        m = re.match(r"\s*dense<(.*)>\s*:\s*(tensor<.*>)\s*$", text, re.S)
        if not m:
            raise ParseError(f"{self.path}: cannot decode attribute {text[:80]}")
        return T.decode_dense_literal(m.group(1), ttype)

    def op_attrs(self, op) -> dict[str, Any]:
        out: dict[str, Any] = {}
        attrs = op.attributes
        n = len(attrs)
        short = full = None
        for i in range(n):
            name = attrs[i].name
            try:
                a = attrs[name]
            except TypeError:
                # element types the bindings cannot hand out (e.g. complex):
                # decode the attribute from the op's printed generic form,
                # printed first with every non-splat literal elided, so its
                # type meets the memory budget before its values are printed
                if short is None:
                    short = op.get_asm(print_generic_op_form=True, skip_regions=True, large_elements_limit=1)
                elided = re.search(re.escape(name) + r" = dense_resource<__elided__> : (tensor<[^{}]*?>)(?=[,}])",
                                   short)
                if elided is None:
                    out[name] = self._attr_from_generic(short, name)
                    continue
                _check_budget(T.parse_type_text(elided.group(1)))
                if full is None:
                    full = op.get_asm(print_generic_op_form=True, skip_regions=True)
                out[name] = self._attr_from_generic(full, name)
                continue
            out[name] = self.attr(a)
        return out

    def _attr_from_generic(self, generic: str, name: str) -> Any:
        m = re.search(re.escape(name) + r" = (dense<[^>]*>) : (tensor<[^{}]*?>)(?=[,}])", generic)
        if not m:
            raise ParseError(f"{self.path}: cannot decode attribute {name}")
        ttype = T.parse_type_text(m.group(2))
        return self.dense_from_text(f"{m.group(1)} : {m.group(2)}", ttype)

    # structure ----------------------------------------------------------
    def region(self, r) -> Region:
        if self.level >= HANDOFF_DEPTH and not in_deep_thread():
            return run_deep(self._region_in_context, r)
        self.level += 1
        try:
            return self._region(r)
        finally:
            self.level -= 1

    def _region_in_context(self, r) -> Region:
        with self.ctx:  # the bindings' current context is per thread
            return self.region(r)

    def _region(self, r) -> Region:
        blocks = list(r.blocks)
        index = {b: i for i, b in enumerate(blocks)}
        out = []
        for b in blocks:
            args = tuple(self.vid(a) for a in b.arguments)
            arg_types = tuple(self.type(a.type) for a in b.arguments)
            # list comprehensions (not generators) on the recursive path: no C frame per level
            ops = tuple([self.op(o, index) for o in b.operations])
            out.append(Block(args, arg_types, ops))
        return Region(tuple(out))

    def op(self, o, block_index=None) -> Op:
        o = o.operation
        name = o.name
        if self.foreign is not None and name.startswith(_IREE_CHECK):
            name = "check." + name[len(_IREE_CHECK):]
        try:
            attrs = self.op_attrs(o)
        except _ConstantError as e:
            raise ParseError(f"{self.loc(o.location)}: error: {name}: {e}") from None
        succ: tuple[int, ...] = ()
        if block_index is not None and len(o.successors):
            succ = tuple(block_index.get(s, -1) for s in o.successors)
        return Op(
            name=name,
            operands=tuple(self.vid(v) for v in o.operands),
            results=tuple(self.vid(v) for v in o.results),
            operand_types=tuple(self.type(v.type) for v in o.operands),
            result_types=tuple(self.type(v.type) for v in o.results),
            attrs=attrs,
            regions=tuple([self.region(r) for r in o.regions]),
            loc=self.loc(o.location),
            successors=succ,
        )

    def module(self, mod_op, chunk_line: int) -> Module:
        mod_op = mod_op.operation
        attrs = self.op_attrs(mod_op)
        funcs: dict[str, Func] = {}
        nested: dict[str, Module] = {}
        meshes: dict[str, Mesh] = {}
        for o in mod_op.regions[0].blocks[0].operations:
            o = o.operation
            if o.name == "func.func":
                fa = self.op_attrs(o)
                params, results = fa.get("function_type", ((), ()))
                name = fa["sym_name"]
                body = self.region(o.regions[0]) if len(o.regions[0].blocks) else Region(())
                funcs[name] = Func(
                    name=name,
                    param_types=params,
                    result_types=results,
                    body=body,
                    visibility=fa.get("sym_visibility", "public"),
                    loc=self.loc(o.location),
                    attrs=fa,
                )
            elif o.name == "builtin.module":
                sub = self.module(o, chunk_line)
                nested[sub.name or f"module{len(nested)}"] = sub
            elif o.name == "sdy.mesh":
                ma = self.op_attrs(o)
                meshes[ma["sym_name"]] = ma["mesh"]
        return Module(
            funcs=funcs,
            attrs=attrs,
            name=attrs.get("sym_name"),
            source=self.path,
            line=chunk_line,
            nested=nested,
            meshes=meshes,
        )


def _jaxlib_attr(text: str, path: str) -> Any:
    """Decode a dialect attribute another provider handed out as text by
    parsing it with jaxlib's bindings (stablehlo attributes carry no types
    the jaxlib context rejects)."""
    st = _bindings()
    try:
        with st["ctx"]:
            a = st["ir"].Attribute.parse(text)
            return _Lowerer(path).attr(a)
    except Exception:
        return OpaqueAttr(text)


def lower_module(mod, chunk: Chunk) -> Module:
    """Program objects of a parsed chunk (the lowering recurses per nested
    region; deep regions are lowered on a thread with a large stack)."""
    st = _iree_state if _is_iree_module(mod) else _bindings()
    with st["ctx"]:
        low = _Lowerer(chunk.path, st, chunk.line - 1 if chunk.data is None else 0, chunk)
        m = low.module(mod.operation, chunk.line)
        # the chunk's own text (no copy): its users rewrite check sugar as they parse it
        m.text = str(mod) if chunk.data is not None else (chunk.text or "")
        return m


def parse_attribute(text: str, path: str = "<args>"):
    """Parse an attribute written in MLIR syntax (e.g. the ``--args`` list of
    a RUN line) and decode it like op attributes."""
    st = _bindings()
    with st["ctx"]:
        try:
            a = st["ir"].Attribute.parse(text)
        except Exception as e:
            raise ParseError(f"{path}: error: cannot parse attribute {text[:80]!r}: {e}") from None
        return _Lowerer(path).attr(a)
