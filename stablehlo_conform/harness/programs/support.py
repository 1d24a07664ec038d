"""Will it run: the ops, custom-call targets and dialects of a program this
installation cannot evaluate, and loading files whose chunks do not parse
test by test (IREE's files hold many tests in one module).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ... import frontend, iree_format
from ...engine import TERMINATORS
from ...errors import ConformError, ParseError
from ...kernels.custom_call import TARGETS
from ...kernels.registry import load_all
from ...program import Func, Module, walk_ops
from ..records.result import Result, new_result
from .iree_run import find_cases

_OP_AT_START = re.compile(r"^\s*(?:%[^=\"]*=\s*)?([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_.]*)")
# dialects of whole programs outside StableHLO that tests mix in, and what they are
OUTSIDE_STABLEHLO = {
    "linalg": "MLIR's structured-ops dialect",
    "ml_program": "MLIR's module-globals dialect",
}
_UNKNOWN_DIAG = re.compile(r"Dialect .[^']+' not found for custom op|unregistered operation|"
                           r"custom op '[^']+' is unknown")


def _all_modules(modules: Iterable[Module]) -> Iterable[Module]:
    for m in modules:
        yield m
        yield from _all_modules(m.nested.values())


def missing(ops: Iterable[tuple[str, str | None]]) -> list[str]:
    """Of ``(op name, custom-call target)`` pairs: the op names without a
    kernel and ``stablehlo.custom_call @target`` for targets without one,
    in order, each once."""
    reg = load_all()
    engine_ops = TERMINATORS | {"func.call", "cf.br", "cf.cond_br", "cf.switch", "func.func", "builtin.module"}
    out: dict[str, None] = {}
    for name, target in ops:
        if name in engine_ops:
            continue
        if name == "stablehlo.custom_call":
            if target not in TARGETS:
                out[f"stablehlo.custom_call @{target}"] = None
        elif name not in reg:
            out[name] = None
    return list(out)


def unsupported_ops(modules: Iterable[Module]) -> list[str]:
    """Op names without a kernel and ``stablehlo.custom_call @target``s
    without a registered target, in program order."""
    return missing((op.name, op.attrs.get("call_target_name") if op.name == "stablehlo.custom_call" else None)
                   for mod in _all_modules(modules) for f in mod.funcs.values() for op in walk_ops(f.body))


def unknown_dialect_ops(text: str) -> list[str]:
    """Ops (as written in custom syntax) of dialects the bindings do not know."""
    known: dict[str, bool] = {}
    out: dict[str, None] = {}
    for line in iree_format.rewrite(text).splitlines():
        m = _OP_AT_START.match(iree_format._code(line))
        if m is None:
            continue
        dialect = m.group(1)
        if dialect not in known:
            known[dialect] = frontend.known_dialect(dialect)
        if not known[dialect]:
            out[f"{dialect}.{m.group(2)}"] = None
    return list(out)


def describe_parse_error(error: ParseError, text: str | None) -> tuple[str, str]:
    """``(status, message)`` of a chunk that does not parse: ``unsupported``
    naming every op of an unknown dialect on the first line when that is
    why, else ``error`` with the diagnostics."""
    diags = "\n".join(error.diagnostics)
    if text and _UNKNOWN_DIAG.search(diags):
        ops = unknown_dialect_ops(text)
        if ops:
            outside = dict.fromkeys(o.split(".")[0] for o in ops if o.split(".")[0] in OUTSIDE_STABLEHLO)
            why = "".join(f" ({d} is {OUTSIDE_STABLEHLO[d]}, not StableHLO: no kernel evaluates it)" for d in outside)
            return "unsupported", f"unsupported dialect ops: {', '.join(ops)}{why}\n{diags}"
    return "error", diags


def unsupported_message(module: Module, error: ConformError) -> str:
    """An ``unsupported`` test's message: the op that stopped it and, on the
    same line, every other op of the module the engine cannot evaluate."""
    others = [n for n in unsupported_ops([module]) if n.rpartition("@")[2] not in str(error)]
    return f"{error} (also unsupported here: {', '.join(others)})" if others else str(error)


def test_ids(path: str, modules: list[tuple[Module, Func]]) -> list[str]:
    """``path::function`` per test function, ``#n`` after the n-th of one name."""
    ids: list[str] = []
    counts: dict[str, int] = {}
    for _m, f in modules:
        counts[f.name] = counts.get(f.name, 0) + 1
        n = counts[f.name]
        ids.append(f"{path}::{f.name}" + (f"#{n}" if n > 1 else ""))
    return ids


def load_functions(path: str, chunk, error: ParseError) -> tuple[list[Module], list[Result]]:
    """A chunk that does not parse: each test function of it on its own
    (the others emptied), so those that parse run and every other one is a
    record named after its function. Returns the modules that loaded and
    the error records."""
    pieces = iree_format.function_pieces(chunk.text) if chunk.text else []
    if not pieces:
        status, message = describe_parse_error(error, chunk.text)
        return [], [new_result(path, f"{path}::<chunk@{chunk.line}>", "", chunk.line, status=status, message=message)]
    spans = {s.name: s for s in iree_format.function_spans(chunk.text)}
    mods: list[Module] = []
    recs: list[Result] = []
    for name, text in pieces:
        piece = frontend.Chunk(path, chunk.line, text=text)
        line = chunk.line + spans[name].first
        try:
            mods.append(frontend.lower_module(frontend.parse_chunk(piece), piece))
            continue
        except ParseError as e:
            status, message = describe_parse_error(e, text)
        except Exception as e:  # bindings or lowering bug: report, go on
            status, message = "error", f"{path}:{line}: error: cannot load: {type(e).__name__}: {e}"
        recs.append(new_result(path, f"{path}::{name}", name, line, status=status, message=message))
    return mods, recs


def iree_programs(path: str, source: str, loaded: list[Module], out) -> bool:
    """Fill ``out.programs`` with the cases of IREE RUN lines (they replace
    the file's tests when they carry CHECK lines); False when there is none."""
    if not loaded:
        return False
    try:
        cases = find_cases(path, source, loaded)
    except ConformError as e:
        out.errors.append(new_result(path, f"{path}::<run>", "", 0, message=str(e)))
        return True
    if not cases or (out.tests and not any(c.checks for _m, c in cases)):
        return False
    ids = test_ids(path, [(m, c.func) for m, c in cases])
    out.programs = [(tid, m, c) for tid, (m, c) in zip(ids, cases)]
    out.tests = []
    return True


def unsupported_lines(files: Iterable[str]) -> Iterable[str]:
    """One line per file that needs ops, targets or dialects without a
    kernel, naming them (files that load and need nothing print nothing)."""
    for f in files:
        ops: list[tuple[str, str | None]] = []
        try:
            chunks = frontend.read_chunks(f)
        except OSError:
            continue
        for c in chunks:
            try:
                ops += frontend.op_names(c)
            except ParseError as e:
                status, message = describe_parse_error(e, c.text)
                if status == "unsupported":
                    ops += [(n, None) for n in message.splitlines()[0].partition(": ")[2].split(", ")]
            except Exception:
                continue  # not loadable at all: the run reports it
        names = missing(ops)
        if names:
            yield f"{f}: unsupported: {', '.join(names)}"
