"""Edits of a program for the reducer, made with the bindings and verified: ops replaced,
results returned early, calls inlined, loops unrolled, functions pruned, shapes shrunk.

Part of :mod:`stablehlo_conform.frontend`, the one package that imports the bindings.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..errors import ParseError
from .sugar import _sugar_free
from .bindings import _bindings, _isa, _state
from .parse import _diagnostics


# --------------------------------------------------------------------------- #
# Editing programs (the reducer): text in, text out, verified by the bindings
# --------------------------------------------------------------------------- #

_TERMINATOR_SUFFIXES = (".return", ".yield")
# ops never deleted as dead code: they act on something other than their results
_EFFECTFUL = frozenset({"stablehlo.custom_call", "stablehlo.outfeed", "stablehlo.send", "stablehlo.infeed",
                        "stablehlo.recv", "interpreter.print", "interpreter.probe"})


def _is_terminator_name(name: str) -> bool:
    return name.endswith(_TERMINATOR_SUFFIXES) or name.startswith("cf.")


def _entry_ops(fop) -> list:
    """Every op nested in function op ``fop``, pre-order (the order of
    :func:`stablehlo_conform.program.walk_ops`)."""
    out: list = []

    def walk(op):
        for r in op.regions:
            for b in r.blocks:
                for inner in b.operations:
                    inner = inner.operation
                    out.append(inner)
                    walk(inner)

    walk(fop)
    return out


def _module_funcs(mod) -> dict[str, Any]:
    ir = _state["ir"]
    return {ir.StringAttr(o.operation.attributes["sym_name"]).value: o.operation
            for o in mod.body.operations if o.operation.name == "func.func"}


def _parse_for_edit(text: str, entry: str):
    st = _bindings()
    ir = st["ir"]
    mod = ir.Module.parse(_sugar_free(text))
    funcs = _module_funcs(mod)
    if entry not in funcs:
        raise ParseError(f"no function @{entry} in module")
    return mod, funcs[entry]


def op_inventory(text: str, entry: str = "main") -> list[dict[str, Any]]:
    """One record per op of function ``entry`` (nested ops included,
    pre-order): ``index``, ``name``, ``parent`` (index of the enclosing op,
    None at the top level), ``results`` and ``operands`` (type texts),
    ``used`` (some result has a use), ``terminator``, ``regions``."""
    st = _bindings()
    ir = st["ir"]
    with st["ctx"], ir.Location.unknown():
        mod, fop = _parse_for_edit(text, entry)
        ops = _entry_ops(fop)
        where = {o: i for i, o in enumerate(ops)}
        out = []
        for i, o in enumerate(ops):
            parent = o.parent
            out.append({
                "index": i, "name": o.name,
                "parent": where.get(parent) if parent is not None and parent != fop else None,
                "results": [str(r.type) for r in o.results],
                "operands": [str(v.type) for v in o.operands],
                "used": any(True for r in o.results for _ in r.uses),
                "terminator": _is_terminator_name(o.name), "regions": len(o.regions),
            })
        return out


def count_ops(text: str) -> int:
    """Ops of every function of a module, terminators not counted."""
    st = _bindings()
    ir = st["ir"]
    with st["ctx"], ir.Location.unknown():
        mod = ir.Module.parse(_sugar_free(text))
        return sum(1 for f in _module_funcs(mod).values() for o in _entry_ops(f)
                   if not _is_terminator_name(o.name))


def dense_attr(a: np.ndarray, type_text: str):
    """A DenseElementsAttr of ``a`` for a tensor type (in the current context)."""
    ir = _state["ir"]
    t = ir.Type.parse(type_text)
    a = np.require(np.asarray(a), requirements="C")
    if a.dtype.kind == "b":
        return ir.DenseElementsAttr.get(a.astype(np.bool_), type=t)
    if a.dtype.kind == "V":  # ml_dtypes: bf16 and f8 cross as their bit patterns, sub-byte types do not
        el = ir.ShapedType(t).element_type
        width = ir.FloatType(el).width if _isa(el, ir.FloatType) else 0
        if width != a.dtype.itemsize * 8 or width not in (8, 16):
            raise ParseError(f"values of type {type_text} cannot become a constant")
        return ir.DenseElementsAttr.get(a.view(np.uint8 if width == 8 else np.uint16), type=t)
    return ir.DenseElementsAttr.get(a, signless=a.dtype.kind != "u", type=t)


def _set_function_type(fop, block) -> None:
    ir = _state["ir"]
    ret = list(block.operations)[-1].operation
    fop.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(
        [a.type for a in block.arguments], [v.type for v in ret.operands]))
    for name in ("arg_attrs", "res_attrs"):
        if name in fop.attributes:
            del fop.attributes[name]


def _replace_return(block, values) -> None:
    ir = _state["ir"]
    ret = list(block.operations)[-1].operation
    with ir.InsertionPoint(ret):
        ir.Operation.create(ret.name, operands=list(values))
    ret.erase()


def _clone_region_body(body_block, before, mapping: dict) -> list:
    """Clone the ops of ``body_block`` (but its terminator) before op
    ``before``, block arguments and values mapped by ``mapping``; returns
    the terminator's operands, mapped."""
    ir = _state["ir"]
    ops = [o.operation for o in body_block.operations]
    for o in ops[:-1]:
        c = o.clone(ip=ir.InsertionPoint(before)).operation
        # operands of the clone and of every op nested in it
        todo = [c]
        while todo:
            x = todo.pop()
            for old, new in mapping.items():
                x.replace_uses_of_with(old, new)
            for r in x.regions:
                for b in r.blocks:
                    todo.extend(i.operation for i in b.operations)
        for r_old, r_new in zip(o.results, c.results):
            mapping[r_old] = r_new
    return [mapping.get(v, v) for v in ops[-1].operands]


def _dce(fop) -> None:
    """Erase ops (anywhere in ``fop``) none of whose results is used."""
    changed = True
    while changed:
        changed = False
        for o in reversed(_entry_ops(fop)):
            if _is_terminator_name(o.name) or o.name in _EFFECTFUL or not len(o.results):
                continue
            if any(True for r in o.results for _ in r.uses):
                continue
            o.erase()
            changed = True


def edit_module(text: str, edits: list[tuple], entry: str = "main") -> tuple[str, list[tuple]]:
    """Apply ``edits`` to function ``entry`` of a module, delete ops no
    result depends on and arguments nothing uses, verify, and return the
    module text with the provenance of each argument of the edited entry:
    ``("arg", i)`` (the entry's argument i before the edits) or ``("op", k,
    j)`` (result j of op k, an op that became an argument).

    Ops are named by their index in :func:`op_inventory` of ``text``.
    Edits: ``("keep_results", [i, ...])``; ``("results_of", k)`` (return op
    k's results instead); ``("to_arg", k)``; ``("to_const", k, [arrays])``;
    ``("to_operand", k, j)`` (op k's only result replaced by its operand
    j); ``("passthrough", k, j)`` (while op k's body returns its argument j
    unchanged); ``("drop_carried", k, j)`` (while op k without its
    loop-carried value j, which nothing uses); ``("unroll", k, n)`` (while op k replaced by n copies of its
    body); ``("inline",)`` (inline every ``func.call``); ``("prune",)`` (erase
    every function the entry does not reach through symbol references); ``("rename", old,
    new)``; ``("reshape", {old type text: new type text})`` (every value and
    splat constant of a type takes another). Raises :class:`ParseError` when
    the result does not verify.
    """
    st = _bindings()
    ir = st["ir"]
    with st["ctx"], ir.Location.unknown():
        mod, fop = _parse_for_edit(text, entry)
        ops = _entry_ops(fop)
        block = fop.regions[0].blocks[0]
        provenance: dict[Any, tuple] = {a: ("arg", i) for i, a in enumerate(block.arguments)}
        try:
            for e in edits:
                _apply_edit(mod, fop, block, ops, e, provenance)
            _dce(fop)
            for i in range(len(block.arguments) - 1, -1, -1):
                a = block.arguments[i]
                if not any(True for _ in a.uses):
                    block.erase_argument(i)
            _set_function_type(fop, block)
            if not mod.operation.verify():
                raise ParseError("the edited module does not verify")
        except ir.MLIRError as e:
            raise ParseError(_diagnostics(e, "<edit>")[0]) from None
        except (ValueError, TypeError, IndexError, RuntimeError) as e:
            raise ParseError(f"edit failed: {e}") from None
        args = [provenance.get(a, ("?",)) for a in block.arguments]
        return mod.operation.get_asm(enable_debug_info=False), args


def _apply_edit(mod, fop, block, ops, e, provenance) -> None:
    ir = _state["ir"]
    kind = e[0]
    if kind == "keep_results":
        ret = list(block.operations)[-1].operation
        values = list(ret.operands)
        _replace_return(block, [values[i] for i in e[1]])
    elif kind == "results_of":
        if ops[e[1]].parent != fop:
            raise ValueError("only an op of the function's own body can give its results")
        _replace_return(block, list(ops[e[1]].results))
    elif kind == "to_arg":
        o = ops[e[1]]
        for j, r in enumerate(o.results):
            a = block.add_argument(r.type, ir.Location.unknown())
            provenance[a] = ("op", e[1], j)
            r.replace_all_uses_with(a)
        o.erase()
    elif kind == "to_const":
        o = ops[e[1]]
        with ir.InsertionPoint(o):
            for r, v in zip(o.results, e[2]):
                c = ir.Operation.create("stablehlo.constant", results=[r.type],
                                        attributes={"value": dense_attr(v, str(r.type))})
                r.replace_all_uses_with(c.results[0])
        o.erase()
    elif kind == "to_operand":
        o = ops[e[1]]
        o.results[0].replace_all_uses_with(o.operands[e[2]])
        o.erase()
    elif kind == "passthrough":
        body = ops[e[1]].regions[1].blocks[0]
        ret = list(body.operations)[-1].operation
        values = list(ret.operands)
        values[e[2]] = body.arguments[e[2]]
        _replace_return(body, values)
    elif kind == "drop_carried":
        _drop_carried(ops[e[1]], e[2])
    elif kind == "unroll":
        o = ops[e[1]]
        values = list(o.operands)
        body = o.regions[1].blocks[0]
        for _ in range(e[2]):
            values = _clone_region_body(body, o, dict(zip(body.arguments, values)))
        for r, v in zip(o.results, values):
            r.replace_all_uses_with(v)
        o.erase()
    elif kind == "inline":
        _inline_calls(mod, fop)
    elif kind == "prune":
        _prune_functions(mod, fop)
    elif kind == "rename":
        funcs = _module_funcs(mod)
        ir.SymbolTable.replace_all_symbol_uses(e[1], e[2], mod.operation)
        ir.SymbolTable.set_symbol_name(funcs[e[1]], e[2])
    elif kind == "reshape":
        _retype(fop, block, e[1])
    else:
        raise ValueError(f"unknown edit {kind!r}")


def _drop_carried(o, j: int) -> None:
    """Rebuild while op ``o`` without its loop-carried value ``j``, which
    nothing may use: not its result, not the condition, and in the body
    only the terminator, at position ``j``."""
    ir = _state["ir"]
    cond, body = (r.blocks[0] for r in o.regions)
    body_ret = list(body.operations)[-1].operation
    uses = [u.owner for u in body.arguments[j].uses]
    if (any(True for _ in o.results[j].uses) or any(True for _ in cond.arguments[j].uses)
            or any(u != body_ret for u in uses)):
        raise ValueError(f"loop-carried value {j} is in use")
    keep = [i for i in range(len(o.operands)) if i != j]
    new = ir.Operation.create(o.name, results=[o.results[i].type for i in keep],
                              operands=[o.operands[i] for i in keep], regions=2, ip=ir.InsertionPoint(o))
    values = list(body_ret.operands)
    _replace_return(body, [values[i] for i in keep])
    for old_block, region in zip((cond, body), new.regions):
        block = ir.Block.create_at_start(region, [old_block.arguments[i].type for i in keep])
        for n, i in enumerate(keep):
            old_block.arguments[i].replace_all_uses_with(block.arguments[n])
        for inner in [x.operation for x in old_block.operations]:
            block.append(inner)
    for n, i in enumerate(keep):
        o.results[i].replace_all_uses_with(new.results[n])
    o.erase()


def _inline_calls(mod, fop) -> None:
    """Replace every ``func.call`` in ``fop`` by the callee's body (calls
    brought in by a body too, up to a depth), then erase functions nothing
    references any more."""
    ir = _state["ir"]
    funcs = _module_funcs(mod)
    for _ in range(32):
        calls = [o for o in _entry_ops(fop) if o.name == "func.call"]
        if not calls:
            break
        for c in calls:
            callee = funcs[ir.FlatSymbolRefAttr(c.attributes["callee"]).value]
            body = callee.regions[0].blocks[0]
            values = _clone_region_body(body, c, dict(zip(body.arguments, c.operands)))
            for r, v in zip(c.results, values):
                r.replace_all_uses_with(v)
            c.erase()
    entry = ir.StringAttr(fop.attributes["sym_name"]).value
    changed = True
    while changed:
        changed = False
        tops = [o.operation for o in mod.body.operations]
        for f in tops:
            if f.name != "func.func" or ir.StringAttr(f.attributes["sym_name"]).value == entry:
                continue
            ref = "@" + ir.StringAttr(f.attributes["sym_name"]).value
            if not any(re.search(re.escape(ref) + r"\b", str(o)) for o in tops if o != f):
                f.erase()
                changed = True
                break


def _prune_functions(mod, fop) -> None:
    """Erase every ``func.func`` that ``fop`` does not reference, directly
    or through the functions it references (calls, composites, reducers)."""
    ir = _state["ir"]
    funcs = _module_funcs(mod)
    entry = ir.StringAttr(fop.attributes["sym_name"]).value
    keep, todo = {entry}, [entry]
    while todo:
        text = str(funcs[todo.pop()])
        for name in funcs:
            if name not in keep and re.search("@" + re.escape(name) + r"(?![\w.$-])", text):
                keep.add(name)
                todo.append(name)
    for name, f in funcs.items():
        if name not in keep:
            f.erase()


def _retype(fop, block, mapping: dict[str, str]) -> None:
    """Give every value of a type in ``mapping`` the mapped type; splat
    constants follow (other constants make the edit fail)."""
    ir = _state["ir"]
    new = {k: ir.Type.parse(v) for k, v in mapping.items()}

    def fix(v) -> None:
        t = new.get(str(v.type))
        if t is not None:
            v.set_type(t)

    for a in block.arguments:
        fix(a)
    for o in _entry_ops(fop):
        for r in o.regions:
            for b in r.blocks:
                for a in b.arguments:
                    fix(a)
        for r in o.results:
            t = new.get(str(r.type))
            if t is None:
                continue
            if o.name == "stablehlo.constant":
                old = ir.DenseElementsAttr(o.attributes["value"])
                if not old.is_splat:
                    raise ValueError("a constant that is not a splat cannot change its shape")
                o.attributes["value"] = ir.DenseElementsAttr.get_splat(t, old.get_splat_value())
            r.set_type(t)
