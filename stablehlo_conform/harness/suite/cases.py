"""Test cases: finding the tests of a file and running one of them.

Everything here runs inside a worker process (see :mod:`.runner`); it may
import the bindings.
"""

from __future__ import annotations

import fnmatch
import hashlib
import itertools
import os
import stat
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ... import frontend
from ... import types as T
from ...errors import ConformError, KernelError, ParseError, UnsupportedOp
from ...program import Func, Module, SymbolRef, walk_ops
from ..backends import get_backend
from ..judge.diff import compare_test
from ..judge.model import run_model
from ..judge.verdict import judge_record, needs_oracle
from ..programs.arguments import ProgramCase, find_program_cases, format_results, generated_inputs
from ..programs.filecheck import filecheck
from ..programs.recipe import RecipeError, read_recipe, recipe_path
from ..programs.support import iree_programs, load_functions, test_ids, unsupported_message, unsupported_ops
from ..records.guard import file_kind
from ..records.options import RunOptions
from ..records.result import NOT_RUN, FailedAt, Outcome, Result, Status, new_result, replace
from ..records.shard import in_shard

SUFFIXES = (".mlir", ".mlirbc", ".bc", ".vhlo")

TRIVIAL_OPS = frozenset({
    "stablehlo.constant", "func.return", "stablehlo.return", "func.call", "func.func",
    "stablehlo.custom_call", "interpreter.run_parallel", "arith.constant", "chlo.return",
})


def memory_budget_bytes(mib: float | None) -> int | None:
    """The memory budget of a run in bytes, from a user's MiB (``0``: none;
    ``None``: the default, a quarter of the machine's RAM, or none where the
    platform does not say)."""
    if mib is not None:
        return int(mib * 2**20) if mib > 0 else None
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 4
    except (ValueError, OSError, AttributeError):  # pragma: no cover
        return None


@dataclass(frozen=True)
class Options(RunOptions):
    """The options of ``conform run``: the :class:`RunOptions` its backends
    receive (:meth:`~RunOptions.plain`) and what the suite alone reads."""

    load_timeout: float | None = None  # seconds to read, parse and lower one file (None: no limit)
    compare: tuple[str, ...] = ()
    pattern: str | None = None  # -k: only tests whose id matches
    shard: tuple[int, int] | None = None  # --shard K/N: only the tests of shard K (see harness/records/shard.py)


def matches(test_id: str, pattern: str | None) -> bool:
    """``-k``: a substring of the test id, or a glob."""
    if not pattern:
        return True
    if any(c in pattern for c in "*?["):
        return fnmatch.fnmatch(test_id, pattern) or fnmatch.fnmatch(test_id, f"*{pattern}*")
    return pattern in test_id


def discover(paths: list[str]) -> list[str]:
    """Files under ``paths`` (recursively), sorted, each file once (however
    it is named). Entries of a folder with a program suffix that are not
    regular files (FIFOs, devices, broken links) are kept: loading them ends
    in an error record, without opening them."""
    out: list[str] = []
    seen: set[str] = set()
    for p in paths:
        path = Path(p)
        if path.is_dir():
            files = sorted(f for f in path.rglob("*") if f.suffix in SUFFIXES and not f.is_dir())
        else:
            files = [path]
        for f in files:
            key = os.path.realpath(f)
            if key not in seen:
                seen.add(key)
                out.append(str(f))
    return out


JUDGED_WRONG = "fail"  # a compared backend that ran, outside the accuracy class of the exact values


def compare_failures(statuses: dict[str, str]) -> list[tuple[str, str, str]]:
    """``(backend, status, why)`` of every backend of ``--compare`` that did
    not run the test (its entry ``<status>: <message>`` instead of ``ok``, or
    ``fail: ...`` for one that ran and was judged wrong), the worst status
    first (crash, timeout, error, unsupported)."""
    out = []
    for name, text in statuses.items():
        if text == "ok" or str(text).startswith(f"{JUDGED_WRONG}: "):
            continue
        status, _, why = str(text).partition(": ")
        if status not in NOT_RUN:
            status, why = "error", str(text)
        out.append((name, status, why))
    return sorted(out, key=lambda t: NOT_RUN.index(t[1]))


def family_of(module: Module, func: Func) -> tuple[str, list[str], list[str]]:
    """(op family, ops under test, element types) of a test function."""
    ops: list[str] = []
    dtypes: list[str] = []
    visited: set[str] = set()

    def body(name: str) -> Iterator:
        """The ops of a function not visited yet (checked when it is reached)."""
        if name in visited:
            return iter(())
        visited.add(name)
        return walk_ops(module.funcs[name].body)

    # depth first through the functions called, in call order; an explicit
    # stack, so a call chain of any length is followed
    stack = [body(func.name)]
    while stack:
        op = next(stack[-1], None)
        if op is None:
            stack.pop()
            continue
        target = op.attrs.get("call_target_name") if op.name == "stablehlo.custom_call" else None
        if op.name.startswith("check.") or (op.name in TRIVIAL_OPS and not (
                isinstance(target, str) and not target.startswith("check."))):
            pass
        elif op.name not in ops:
            ops.append(op.name)
            for ty in op.operand_types or op.result_types:
                if isinstance(ty, T.TensorType):
                    dtypes.append(str(ty.element))
                    break
        callees = [sym for v in op.attrs.values() for sym in _symbols(v) if sym in module.funcs]
        if callees:
            stack.append(itertools.chain.from_iterable(map(body, callees)))
    if not ops:  # a test of constants or of the check ops themselves
        names = [op.name for op in walk_ops(func.body) if op.name not in ("func.return", "func.call")]
        consts = [n for n in names if n.endswith(".constant")]
        family = consts[0] if consts else (names[0].split(".")[0] if names else "other")
        for op in walk_ops(func.body):
            if op.name == family and op.result_types and isinstance(op.result_types[0], T.TensorType):
                dtypes.append(str(op.result_types[0].element))
                break
    else:
        family = ops[0]
    return family, ops, list(dict.fromkeys(dtypes))


def _symbols(v: Any) -> Iterator[str]:
    if isinstance(v, SymbolRef):
        yield v.name
    elif isinstance(v, (tuple, list)):
        for x in v:
            yield from _symbols(x)


@dataclass
class FileCases:
    """What one file holds, as ``conform run`` and the pytest plugin see it:
    load errors (as results), self-checking tests, and programs with
    arguments (only when the file has no self-checking test)."""

    errors: list[Result] = field(default_factory=list)
    tests: list[tuple[str, Module, Func]] = field(default_factory=list)
    programs: list[tuple[str, Module, Any]] = field(default_factory=list)
    modules: list[Module] = field(default_factory=list)  # every module that loaded


def enumerate_file(path: str) -> FileCases:
    out = FileCases()
    try:
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):  # a FIFO or a device would block or never end
            raise OSError(f"not a regular file ({file_kind(mode, 'a special file')})")
        chunks = frontend.read_chunks(path)
    except OSError as e:
        out.errors.append(new_result(path, f"{path}::<file>", "", 0, message=f"{path}: error: cannot read: {e}"))
        return out
    found: list[tuple[Module, Func]] = []
    loaded: list[Module] = []
    for c in chunks:
        try:
            mod = frontend.lower_module(frontend.parse_chunk(c), c)
        except ParseError as e:
            mods, recs = load_functions(path, c, e)
            loaded.extend(mods)
            found.extend((m, f) for m in mods for f in m.tests())
            out.errors.extend(recs)
            continue
        except Exception as e:  # bindings or lowering bug: report, go on
            out.errors.append(new_result(path, f"{path}::<chunk@{c.line}>", "", c.line,
                                         message=f"{path}:{c.line}: error: cannot load: {type(e).__name__}: {e}"))
            continue
        loaded.append(mod)
        found.extend((mod, f) for f in mod.tests())
    out.tests = [(tid, m, f) for tid, (m, f) in zip(test_ids(path, found), found)]
    out.modules = loaded
    if iree_programs(path, "\n".join(c.text for c in chunks if c.text), loaded, out):
        return out
    if found or out.errors:
        return out
    recipe = recipe_path(path)
    if loaded and recipe is not None:
        return model_case(path, recipe, loaded, out)
    if loaded:
        source = chunks[0].text if chunks and chunks[0].text is not None else ""
        cases = find_program_cases(source, loaded)
        ids = test_ids(path, [(m, c.func) for m, c in cases])
        out.programs = [(tid, m, c) for tid, (m, c) in zip(ids, cases)]
    if not out.programs:  # an empty or truncated file must not pass unnoticed
        out.errors.append(new_result(path, f"{path}::<file>", "", 0, message=f"{path}: error: no test in file: " + (
            "no test function (a public function without arguments that no other function calls) and no "
            "program taking arguments" if loaded else "the file is empty or holds only comments")))
    return out


def model_case(path: str, recipe: Path, loaded: list[Module], out: FileCases) -> FileCases:
    """A model: the program and the recipe beside it (:mod:`..judge.model`), one test."""
    mod = loaded[0]
    try:
        rec = read_recipe(recipe)
        func = mod.funcs.get(rec.entry)
        if func is None:
            raise RecipeError(f"{recipe}: error: the program has no @{rec.entry} (functions: {', '.join(mod.funcs)})")
    except RecipeError as e:
        out.errors.append(new_result(path, f"{path}::<recipe>", "", 0, message=str(e)))
        return out
    out.programs = [(f"{path}::{func.name}", mod, ProgramCase(func, "model", recipe=rec))]
    return out


def file_report(path: str) -> list[tuple[str, str, str]]:
    """``(where, status, detail)`` lines saying whether ``path`` will run:
    ``ok`` (with its test count), ``unsupported`` (the ops, targets and
    dialects it needs) or ``error`` (it does not parse)."""
    cases = enumerate_file(path)
    rows = []
    for rec in cases.errors:
        first = rec.message.splitlines()[0] if rec.message else ""
        rows.append((rec.id, rec.status.value, first))
    missing = unsupported_ops(cases.modules)
    n = len(cases.tests) + len(cases.programs)
    if missing:
        rows.append((path, "unsupported", ", ".join(missing)))
    elif cases.modules:
        rows.append((path, "ok", f"{n} test{'s' if n != 1 else ''}"))
    return rows


_LAST_LOADED: list[tuple[tuple, FileCases]] = []  # this process's last file: see load_cases


def _content_key(path: str, max_bytes: int | None) -> tuple | None:
    """What a loaded regular file is kept under: its path, budget and a digest
    of its bytes (read in chunks; a file rewritten within the resolution of
    its time stamps is not mistaken for the old one). None: not kept."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        digest = hashlib.blake2b(digest_size=16)
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
    except OSError:
        return None
    return (path, max_bytes, digest.digest())


def load_cases(path: str, max_bytes: int | None, keep: bool = False) -> FileCases:
    """:func:`enumerate_file` under the memory budget; with ``keep``, the
    last regular file is kept while its bytes are the same (a worker of the
    pytest plugin runs a file's tests one by one: the file is parsed once,
    not once per test)."""
    key = _content_key(path, max_bytes) if keep else None
    if key is not None and _LAST_LOADED and _LAST_LOADED[0][0] == key:
        return _LAST_LOADED[0][1]
    _LAST_LOADED.clear()  # before loading: never two files held at once
    with frontend.memory_budget(max_bytes):  # constants are checked against it while loading
        cases = enumerate_file(path)
    if key is not None:
        _LAST_LOADED.append((key, cases))
    return cases


def run_file(path: str, opts: Options, skip: frozenset[str] = frozenset(), keep: bool = False) -> Iterator[tuple]:
    """Yields ("loaded", ids) once the file is loaded (the ids of the results
    to come), then ("start", id) and ("result", :class:`Result`) events. ``keep``: see
    :func:`load_cases`."""
    cases = load_cases(path, opts.max_bytes, keep)
    if opts.pattern:
        skip = skip | {tid for tid, _m, _f in cases.tests + cases.programs if not matches(tid, opts.pattern)}
    if opts.shard:
        skip = skip | {tid for tid in [r.id for r in cases.errors] + [c[0] for c in cases.tests + cases.programs]
                       if not in_shard(tid, opts.shard)}
    yield ("loaded", tuple(tid for tid in [r.id for r in cases.errors]
                           + [c[0] for c in cases.tests + cases.programs] if tid not in skip))
    for rec in cases.errors:
        if rec.id not in skip:
            yield ("result", rec)
    for tid, mod, f in cases.tests:
        if tid not in skip:
            yield ("start", tid)
            yield ("result", run_test(mod, f, tid, opts))
    for tid, mod, case in cases.programs:
        if tid not in skip:
            yield ("start", tid)
            yield ("result", run_program(mod, case, tid, opts))


PROGRAM_SIZES = (4, 8, 5, 3)


def run_program(mod: Module, case, tid: str, opts: Options) -> Result:
    """Run a program that takes arguments (see :mod:`..programs.arguments`)."""
    func = case.func
    family, ops, dtypes = family_of(mod, func)
    r = new_result(mod.source, tid, func.name, func.loc.line, family=family, ops=ops, dtypes=dtypes,
                   backend=opts.backend, kind=case.kind)
    t0 = time.perf_counter()
    run = opts.plain()  # what the backend receives
    try:
        backend = get_backend(opts.backend)
        size = None
        if case.kind == "iree":
            r = Outcome.of(case.execute(backend, mod, run)).apply(r)
        elif case.kind == "model":
            v = run_model(mod, case.recipe, backend, run)
            r = replace(r, status=Status.PASS if v.ok else Status.FAIL, message=v.summary(), checks=len(v.outputs),
                        family="model", model=v.to_json())
        elif case.kind == "args":
            args = list(frontend.parse_attribute(case.args_text, mod.source))
            outputs = backend.run_function(mod, func.name, args, run)
        elif case.kind == "generated":
            # a size some programs cannot take (a slice past the end): try others
            attempts = [(n, zeros) for zeros in (False, True) for n in PROGRAM_SIZES]
            for i, (size, zeros) in enumerate(attempts):
                try:
                    args = generated_inputs(func, size=size, int_zeros=zeros)
                    outputs = backend.run_function(mod, func.name, args, run)
                    break
                except ConformError as e:
                    if e.status != "error" or i == len(attempts) - 1:
                        raise
        if case.kind == "args":
            why = filecheck(format_results(outputs, func.result_types), case.checks)
            r = replace(r, status=Status.FAIL if why else Status.PASS, message=why or "", checks=len(case.checks))
        elif case.kind == "generated":
            r = replace(r, status=Status.PASS, checks=0,
                        message=f"ran on generated inputs (dynamic sizes = {size}"
                        f"{', integer tensors zero' if zeros else ''}); no expected values in the program")
    except ConformError as e:
        r = stopped_by(r, mod, e)
    except Exception as e:
        r = replace(r, status=Status.ERROR, message=f"internal error: {type(e).__name__}: {e}")
    return replace(r, duration=round(time.perf_counter() - t0, 6))


def stopped_by(r: Result, mod: Module, e: ConformError) -> Result:
    """``r`` of a test an error stopped: the error's status and message, and where it stopped
    (:class:`FailedAt`: an op without a kernel, a kernel that raised) as fields triage reads."""
    why = unsupported_message(mod, e) if e.status == "unsupported" else str(e)
    at = (FailedAt("unsupported", e.op, e.loc) if isinstance(e, UnsupportedOp)
          else FailedAt("run", e.op, e.loc) if isinstance(e, KernelError) else None)
    return replace(r, status=e.status, message=why, failed_at=at)


def judge(mod: Module, func: Func, opts: RunOptions, r: Result, backend: Any = None) -> Result:
    """``r`` with the accuracy classes' judgement of its checks (see
    :func:`.verdict.judge_record`)."""
    j = judge_record(mod, func, opts, r.status.value, r.message, backend)
    if j is None:
        return r
    return replace(r, status=j.status, message=j.message, verdict=j.verdict if j.verdict is not None else r.verdict,
                   accuracy=j.accuracy if j.accuracy is not None else r.accuracy)


def with_comparison(r: Result, cmp: dict[str, Any]) -> Result:
    """``r`` with what comparing backends found (:func:`.diff.compare_test`):
    a pass the backends disagree on fails; one not compared is not a pass.
    A backend the verdict names wrong is ``fail`` in ``compare``, not ``ok``:
    the record says one thing about each backend."""
    statuses = dict(cmp.get("compare") or {})
    for b in (cmp.get("compare_verdict") or {}).get("wrong") or ():
        if statuses.get(b) == "ok":
            statuses[b] = f"{JUDGED_WRONG}: outside the accuracy class of the exact values"
    cmp = {**cmp, "compare": statuses}
    r = replace(r, compare=cmp["compare"], disagreements=cmp["disagreements"],
                compare_accuracy=cmp.get("compare_accuracy"), compare_verdict=cmp.get("compare_verdict"))
    if cmp["disagreements"] and r.status == Status.PASS:
        r = replace(r, status=Status.FAIL, message="backends disagree: " + "; ".join(cmp["disagreements"][:3]))
        if cmp.get("compare_verdict"):
            v = cmp["compare_verdict"]
            r = replace(r, verdict=v, verdict_last=r.verdict is None,
                        message=r.message + f"\nverdict: {v['summary']}")
    not_compared = compare_failures(cmp.get("compare") or {})
    if not_compared and r.status == Status.PASS:  # a comparison that did not run is not a pass
        r = replace(r, status=not_compared[0][1],
                    message="not compared: " + "; ".join(f"{b}: {why}" for b, _s, why in not_compared))
    return r


def run_test(mod: Module, func: Func, tid: str, opts: Options) -> Result:
    family, ops, dtypes = family_of(mod, func)
    r = new_result(mod.source, tid, func.name, func.loc.line, family=family, ops=ops, dtypes=dtypes,
                   backend=opts.backend)
    t0 = time.perf_counter()
    run = opts.plain()  # what the backends receive
    try:
        backend = get_backend(opts.backend)
        r = Outcome.of(backend.run_test(mod, func, run)).apply(r)
        if r.status == Status.FAIL or needs_oracle(mod):
            r = judge(mod, func, run, r, backend)
        if opts.compare:
            r = with_comparison(r, compare_test(mod, func, opts.compare, run))
    except ConformError as e:
        r = stopped_by(r, mod, e)
    except Exception as e:  # a bug in the tool: keep the run going, say where
        tb = traceback.extract_tb(e.__traceback__)
        where = f" ({tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno})" if tb else ""
        r = replace(r, status=Status.ERROR, message=f"internal error: {type(e).__name__}: {e}{where}")
    return replace(r, duration=round(time.perf_counter() - t0, 6))
