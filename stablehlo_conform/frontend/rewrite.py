"""Programs prepared for a native backend: an entry renamed and wrapped, check ops removed,
functions pruned, the grid written (spec.md#parallel-execution), shapes refined; the reference
interpreter.

Part of :mod:`stablehlo_conform.frontend`, the one package that imports the bindings.
"""

from __future__ import annotations


import numpy as np

from ..errors import ParseError
from .sugar import _sugar_free
from .bindings import _bindings, _state
from .lower import _Lowerer


# --------------------------------------------------------------------------- #
# Programs for other backends (reference interpreter, XLA, ...)
# --------------------------------------------------------------------------- #

ENTRY_ALIAS = "__conform_entry"


def _is_check_op(o) -> bool:
    if o.name.startswith("check."):
        return True
    if o.name == "stablehlo.custom_call" and "call_target_name" in o.attributes:
        target = _state["ir"].StringAttr(o.attributes["call_target_name"]).value
        return target.startswith("check.")
    return False


def prepare_entry(text: str, entry: str, strip_checks: bool = False, keep: frozenset[str] | None = None,
                  grid: tuple[int, int] | None = None) -> tuple[str, list[tuple[str, int]]]:
    """Module text (no locations) with function ``entry`` renamed to
    ``__conform_entry`` (and any other ``@main`` to ``__conform_main``) so a
    wrapper ``@main`` can be added. With ``strip_checks`` every check op is
    removed; those in the entry function's body become its results (their
    operands, in order) and ``(name, operand count)`` of each is returned.
    ``keep``: the functions to keep (the others are erased); ``grid``:
    ``(replicas, partitions)`` written as the module's ``mhlo.num_replicas``
    and ``mhlo.num_partitions`` (spec.md#parallel-execution)."""
    st = _bindings()
    ir = st["ir"]
    checks: list[tuple[str, int]] = []
    with st["ctx"], ir.Location.unknown():
        mod = ir.Module.parse(_sugar_free(text))
        body = mod.body
        funcs = {ir.StringAttr(o.attributes["sym_name"]).value: o.operation
                 for o in body.operations if o.operation.name == "func.func"}
        if entry not in funcs:
            raise ParseError(f"no function @{entry} in module")
        if keep is not None:
            for name in [n for n in funcs if n not in keep and n != entry]:
                funcs.pop(name).erase()
        if grid is not None:
            i32 = ir.IntegerType.get_signless(32)
            mod.operation.attributes["mhlo.num_replicas"] = ir.IntegerAttr.get(i32, grid[0])
            mod.operation.attributes["mhlo.num_partitions"] = ir.IntegerAttr.get(i32, grid[1])
        renames = [(entry, ENTRY_ALIAS)]
        if "main" in funcs and entry != "main":
            renames.append(("main", "__conform_main"))
        for old, new in renames:
            ir.SymbolTable.replace_all_symbol_uses(old, new, mod.operation)
            ir.SymbolTable.set_symbol_name(funcs[old], new)
        if strip_checks:
            fop = funcs[entry]
            block = fop.regions[0].blocks[0]
            values = []
            doomed = []
            for o in block.operations:
                o = o.operation
                if _is_check_op(o):
                    checks.append((o.name if o.name != "stablehlo.custom_call" else
                                   ir.StringAttr(o.attributes["call_target_name"]).value, len(o.operands)))
                    values.extend(o.operands)
                    doomed.append(o)
            for f in funcs.values():
                def walk(op):
                    for r in op.regions:
                        for b in r.blocks:
                            for inner in b.operations:
                                inner = inner.operation
                                if _is_check_op(inner) and inner not in doomed:
                                    doomed.append(inner)
                                walk(inner)
                walk(f)
            for o in doomed:
                o.erase()
            ret = list(block.operations)[-1].operation
            with ir.InsertionPoint(ret):
                ir.Operation.create("func.return", operands=values)
            ret.erase()
            ftype = ir.FunctionType(ir.TypeAttr(fop.attributes["function_type"]).value)
            fop.attributes["function_type"] = ir.TypeAttr.get(
                ir.FunctionType.get(list(ftype.inputs), [v.type for v in values]))
            if "res_attrs" in fop.attributes:
                del fop.attributes["res_attrs"]
        return mod.operation.get_asm(enable_debug_info=False), checks


def eval_reference(text: str, args: list[np.ndarray]) -> list[np.ndarray]:
    """Run ``@main`` of ``text`` on the official reference interpreter.

    Only element types the bindings exchange through the buffer protocol may
    cross (bool, standard integers and f16/f32/f64); the interpreter may
    abort the process, so call this in a child process."""
    st = _bindings()
    ir = st["ir"]
    with st["ctx"]:
        mod = ir.Module.parse(text)
        attrs = []
        for a in args:
            a = np.require(np.asarray(a), requirements="C")
            attrs.append(ir.DenseElementsAttr.get(a, signless=a.dtype.kind != "u"))
        outs = st["sh"].eval_module(mod, attrs)
        result = []
        for o in outs:
            ttype = _Lowerer("<result>").type(o.type)
            arr = np.array(o)
            if arr.shape != tuple(ttype.shape):
                arr = np.broadcast_to(arr, ttype.shape).copy()
            result.append(arr.astype(ttype.dtype, copy=False))
        return result


def op_texts(text: str) -> list[str]:
    """Generic-form text (no locations) of every op of every function, in
    the order :func:`lower_module` lowers them (pre-order)."""
    st = _bindings()
    ir = st["ir"]
    out: list[str] = []
    with st["ctx"]:
        mod = ir.Module.parse(_sugar_free(text))

        def walk(op):
            for r in op.regions:
                for b in r.blocks:
                    for inner in b.operations:
                        inner = inner.operation
                        out.append(inner.get_asm(print_generic_op_form=True, enable_debug_info=False))
                        walk(inner)

        for o in mod.body.operations:
            if o.operation.name == "func.func":
                walk(o.operation)
    return out


def refine_shapes(text: str) -> str:
    """Specialise a module whose ``@main`` has static argument types:
    inline, drop unused functions and refine every shape (StableHLO's
    ``stablehlo-refine-shapes`` and ``stablehlo-canonicalize-dynamism``
    passes). Returns the module text without locations."""
    st = _bindings()
    ir = st["ir"]
    if not st.get("passes"):
        st["sh"].register_stablehlo_passes()
        st["passes"] = True
    from jaxlib.mlir import passmanager

    with st["ctx"]:
        mod = ir.Module.parse(text)
        for o in mod.body.operations:
            o = o.operation
            if o.name == "func.func" and ir.StringAttr(o.attributes["sym_name"]).value != "main":
                o.attributes["sym_visibility"] = ir.StringAttr.get("private")
        pm = passmanager.PassManager.parse(
            "builtin.module(inline,symbol-dce,stablehlo-refine-shapes,"
            "func.func(stablehlo-canonicalize-dynamism),stablehlo-refine-shapes,canonicalize)")
        pm.run(mod.operation)
        return mod.operation.get_asm(enable_debug_info=False)
