"""Repro bundles: one folder per disagreement or crash, ready to hand over.

A bundle holds the program (``program.mlir``), its inputs (``inputs.npz``,
``arg0``, ``arg1``, ...), the values each backend produced
(``values/<backend>.npz``, ``out0``, ...), the expected values where known
(``expected.npz``: the values a self-checking test's checks expect),
``bundle.json`` (the same facts for tools) and a ``README.md`` with the
commands that reproduce it and each backend's outcome: status, first
differing element and ULP distance against the baseline backend, and the
stderr tail of a crash.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ... import frontend
from ...program import walk_ops
from ..backends.base import check_ops
from ..programs.arguments import generated_inputs
from ..programs.inputs import save_npz
from ..programs.recipe import build_inputs
from ..records import jsonout
from ..records.guard import FolderNames, atomic_folder, safe_name
from ..records.result import Status
from .reduce import ENTRY, compare_outcomes, entry_program, run_outcomes


def _cmd(*parts: str) -> str:
    return " ".join(shlex.quote(p) for p in parts)


def commands(backends: Sequence[str], has_inputs: bool, entry: str = "main") -> list[str]:
    """Shell commands, run in the bundle's folder, that reproduce it."""
    inputs = ["--inputs", "inputs.npz"] if has_inputs else []
    ent = [] if entry == "main" else ["--entry", entry]
    out = []
    if len(backends) > 1:
        out.append(_cmd("conform", "diff", "program.mlir", *inputs, *ent, "--backends", ",".join(backends)))
    out += [_cmd("conform", "eval", "program.mlir", *inputs, *ent, "--backend", b, "--print") for b in backends]
    return out


def _stderr_tail(message: str) -> str:
    i = message.find("stderr:")
    return message[i + len("stderr:"):].strip() if i >= 0 else ""


def write_bundle(folder: str | Path, text: str, inputs: Sequence[np.ndarray], backends: Sequence[str],
                 outcomes: dict[str, dict], *, title: str, expected: Sequence[np.ndarray] | None = None,
                 entry: str = "main", notes: Sequence[str] = ()) -> Path:
    """Write a bundle into ``folder`` (created); returns it."""
    folder = Path(folder)
    (folder / "values").mkdir(parents=True, exist_ok=True)
    (folder / "program.mlir").write_text(text if text.endswith("\n") else text + "\n")
    has_inputs = len(inputs) > 0
    if has_inputs:
        save_npz(folder / "inputs.npz", {f"arg{i}": np.asarray(a) for i, a in enumerate(inputs)})
    for b, o in outcomes.items():
        if o.get("values") is not None:
            save_npz(folder / "values" / f"{safe_name(b)}.npz",
                     {f"out{i}": np.asarray(v) for i, v in enumerate(o["values"])})
    if expected is not None:
        save_npz(folder / "expected.npz", {f"out{i}": np.asarray(v) for i, v in enumerate(expected)})
    comps = compare_outcomes(outcomes, backends)
    if expected is not None:
        exp = {"expected": {"status": "ok", "values": list(expected)}}
        for b in backends:
            comps += compare_outcomes({**exp, b: outcomes.get(b, {})}, ["expected", b])
    cmds = commands(backends, has_inputs, entry)
    doc = {"title": title, "backends": list(backends), "commands": cmds, "notes": list(notes),
           "inputs": [{"name": f"arg{i}", "dtype": str(np.asarray(a).dtype), "shape": list(np.shape(a))}
                      for i, a in enumerate(inputs)],
           "outcomes": {b: {"status": o["status"], "message": o.get("message", "")} for b, o in outcomes.items()},
           "comparisons": [{k: c[k] for k in ("index", "backend", "against", "status", "max_ulp", "max_abs",
                                              "message")} for c in comps]}
    (folder / "bundle.json").write_text(jsonout.dumps(doc, indent=1, default=str))
    (folder / "README.md").write_text(_readme(doc, comps, outcomes, has_inputs, expected is not None))
    return folder


def _readme(doc: dict, comps: list[dict], outcomes: dict[str, dict], has_inputs: bool, has_expected: bool) -> str:
    lines = [f"# {doc['title']}", ""]
    lines += [*doc["notes"], ""] if doc["notes"] else []
    files = ["`program.mlir` (the program)"]
    if has_inputs:
        files.append("`inputs.npz` (its inputs: arg0, arg1, ...)")
    files.append("`values/<backend>.npz` (what each backend returned: out0, out1, ...)")
    if has_expected:
        files.append("`expected.npz` (the values the test expects)")
    lines += ["Files: " + ", ".join(files) + ".", "", "## Reproduce", "",
              "From this folder, with `conform` installed (`pip install stablehlo-conform` and the backends):", "",
              "```sh", *doc["commands"], "```", "", "## Outcomes", ""]
    for b in doc["backends"]:
        o = outcomes.get(b, {"status": "not run", "message": ""})
        lines.append(f"- **{b}**: {o['status']}")
        if o["status"] != "ok" and o.get("message"):
            first = o["message"].strip().splitlines()[0][:400]
            lines.append(f"  - message: `{first}`")
            tail = _stderr_tail(o["message"])
            if tail:
                lines.append(f"  - stderr tail: `{tail[-600:]}`")
        for c in comps:
            if c["backend"] == b:
                verdict = "agrees" if c["status"] == "ok" else "DIFFERS"
                how = "exact comparison" if c["max_ulp"] is None else f"max ULP {c['max_ulp']}"
                lines.append(f"  - out{c['index']} vs {c['against']}: {verdict} ({how})"
                             + (f": {c['message']}" if c["message"] else ""))
    return "\n".join(lines) + "\n"


def expected_values(text: str, entry: str) -> list[np.ndarray] | None:
    """The values the checks of a self-checking test expect (in the order
    :func:`stablehlo_conform.frontend.prepare_entry` returns the checked
    values), or None when some check has no expected value."""
    module = frontend.load_text(text, "<test>")[0]
    out: list[np.ndarray] = []
    for op in check_ops(module.funcs[entry]):
        value = op.attr("value")
        if value is None or len(op.operands) != 1:
            return None
        out.append(np.asarray(value))
    return out


# --------------------------------------------------------------------------- #
# Bundles of ``conform diff`` and ``conform run``
# --------------------------------------------------------------------------- #

def bundle_program(folder: str | Path, text: str, entry: str, args: Sequence[np.ndarray], backends: Sequence[str],
                   *, title: str, timeout: float | None = 120.0, notes: Sequence[str] = (),
                   expected: Sequence[np.ndarray] | None = None) -> Path:
    """Run ``entry`` of ``text`` on every backend (isolated, see
    :func:`.reduce.run_outcomes`) and write the bundle: the program with
    ``entry`` as ``main`` (a self-checking test returns what its checks
    look at), its inputs and each backend's outcome. The folder is written
    whole (see :func:`.guard.atomic_folder`): an interrupt leaves no half bundle."""
    main, _ = entry_program(text, entry)
    outcomes = run_outcomes(main, args, backends, timeout, ENTRY)
    with atomic_folder(folder) as tmp:
        write_bundle(tmp, main, args, backends, outcomes, title=title, notes=notes, expected=expected)
    return Path(folder)


def _case_of(record: dict) -> tuple[str, list[np.ndarray], str] | None:
    """(module text, inputs, entry) of a ``conform run`` result record."""
    from ..suite.cases import enumerate_file  # loads mpmath: kept here for start-up time

    try:
        cases = enumerate_file(record["file"])
    except Exception:
        return None
    for tid, mod, func in cases.tests:
        if tid == record["id"]:
            return mod.text, [], func.name
    for tid, mod, case in cases.programs:
        if tid == record["id"]:
            if case.args_text:
                args = [np.asarray(a) for a in frontend.parse_attribute(case.args_text, mod.source)]
            elif case.recipe is not None:  # a model: the inputs its test ran on
                args = build_inputs(case.recipe)
            else:
                args = generated_inputs(case.func)
            return mod.text, args, case.func.name
    return None


def write_run_bundles(folder: str | Path, results: Sequence[dict], backend: str, compare: Sequence[str] = (),
                      timeout: float | None = 60.0, made: list[Path] | None = None) -> list[Path]:
    """One bundle per test of a ``conform run`` that failed, crashed, timed
    out or on which the compared backends disagree, in ``folder/<test id>``
    (named by :class:`.guard.FolderNames`: one folder per test, never one
    holding a program of the run): the test as a program returning the
    values its checks look at, run on the NumPy oracle and the backends of
    the run, with the values the checks expect. Each bundle is written
    whole and appended to ``made`` (returned) as soon as it is: what an
    interrupt leaves."""
    backends = list(dict.fromkeys(["numpy", *(compare or [backend])]))
    names = FolderNames(folder, inputs=sorted({r["file"] for r in results if r.get("file")}))
    out: list[Path] = [] if made is None else made
    for rec in results:
        if not Status(rec["status"]).reproducible:  # a wrong value or a dead backend
            continue
        case = _case_of(rec)
        if case is None:
            continue
        text, args, entry = case
        try:
            expected = None if args else expected_values(text, entry)
        except Exception:
            expected = None
        message = (rec.get("message") or "").strip()
        first = message.splitlines()[0][:300] if message else ""
        rerun = _cmd("conform", "run", str(Path(rec["file"]).resolve()), "-k", rec["id"].split("::", 1)[-1],
                     "--backend", backend)
        notes = [f"Test `{rec['id']}` ({rec['status']} on {backend}): `{first}`",
                 f"Re-run the test itself: `{rerun}`"]
        where = names.path(rec["id"])
        try:
            out.append(bundle_program(where, text, entry, args, backends,
                                      title=rec["id"], timeout=timeout, notes=notes, expected=expected))
        except Exception as e:  # the run's result stands; the bundle is a courtesy
            with atomic_folder(where) as tmp:
                (tmp / "README.md").write_text(f"# {rec['id']}\n\nNo bundle: {type(e).__name__}: {e}\n")
    return out


def diff_bundle(folder: str | Path, program: str, module, entry: str, args: Sequence[np.ndarray],
                backends: Sequence[str], report: dict, timeout: float | None = 120.0) -> Path:
    """The bundle of a ``conform diff`` that found a disagreement or a
    backend that did not run: the whole program in ``folder/<program>``
    and, when an op was found diverging, that op alone on its recorded
    inputs in ``folder/<program>.op`` (named by :class:`.guard.FolderNames`:
    inside ``folder`` whatever the program is called)."""
    names = FolderNames(folder, inputs=[program])
    stem = Path(program).stem
    notes = [f"From `conform diff {program}`: backends {report['status']}."]
    first = report.get("first_divergence")
    if first:
        notes.append(f"First diverging op: `{first['op']}` at `{first['loc']}`: {first['message']}")
    shrink = _cmd("conform", "reduce", "program.mlir", *(["--inputs", "inputs.npz"] if args else []),
                  "--backends", ",".join(backends), "-o", "reduced")
    notes.append(f"To shrink it: `{shrink}`")
    out = bundle_program(names.path(stem), module.text, entry, args, backends, title=f"{Path(program).name}",
                         timeout=timeout, notes=notes)
    if first:
        op_case = first_divergence_case(module, entry, args, first)
        if op_case is not None:
            text, op_args = op_case
            bundle_program(names.path(f"{stem}.op"), text, "main", op_args, backends, timeout=timeout,
                           title=f"{first['op']} alone (from {Path(program).name}, {first['loc']})",
                           notes=[f"The first op of `{program}` whose results differ, alone, on the inputs "
                                  f"it had in the program (run {first['run']} of it)."])
    return out


def first_divergence_case(module, entry: str, args: Sequence[np.ndarray], first: dict):
    """``(one-op module text, its recorded inputs)`` of the op a diff report
    names as the first divergence, or None."""
    from ..judge.diff import _trace, one_op_text  # loads mpmath: kept here for start-up time

    events = _trace(module, entry, args, None, None)
    texts = frontend.op_texts(module.text)
    order = {id(op): i for i, op in enumerate(op for fn in module.funcs.values() for op in walk_ops(fn.body))}
    seen: dict[int, int] = {}
    for op, op_args, _ in events:
        k = seen.get(id(op), 0)
        seen[id(op)] = k + 1
        if op.name == first["op"] and str(op.loc) == first["loc"] and k == first["run"]:
            i = order.get(id(op))
            text = one_op_text(op, texts[i]) if i is not None and i < len(texts) else None
            return (text, [np.asarray(a) for a in op_args]) if text else None
    return None
