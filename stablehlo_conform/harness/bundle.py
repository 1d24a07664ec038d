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

import json
import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np


def compare_outcomes(outcomes: dict[str, dict], backends: Sequence[str]) -> list[dict[str, Any]]:
    """Every result of every backend that ran against the first backend's
    (the one place that decides whether backends disagree): a list of
    ``compare_values`` records with ``index``, ``backend`` and ``against``."""
    from .diff import compare_values

    base = backends[0]
    ref = outcomes.get(base, {}).get("values")
    out: list[dict[str, Any]] = []
    if ref is None:
        return out
    for b in backends[1:]:
        got = outcomes.get(b, {}).get("values")
        if got is None:
            continue
        for i, (x, y) in enumerate(zip(got, ref)):
            c = compare_values(x, y)
            c.update(index=i, backend=b, against=base)
            out.append(c)
    return out


def safe_name(text: str) -> str:
    """A folder name from a test id or a program path."""
    return re.sub(r"[^\w.-]+", "_", text).strip("_")[:120] or "bundle"


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
    from .inputs import save_npz

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
    (folder / "bundle.json").write_text(json.dumps(doc, indent=1, default=str))
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
                ulp = "-" if c["max_ulp"] is None else c["max_ulp"]
                lines.append(f"  - out{c['index']} vs {c['against']}: {verdict} (max ULP {ulp})"
                             + (f": {c['message']}" if c["message"] else ""))
    return "\n".join(lines) + "\n"


def expected_values(text: str, entry: str) -> list[np.ndarray] | None:
    """The values the checks of a self-checking test expect (in the order
    :func:`stablehlo_conform.frontend.prepare_entry` returns the checked
    values), or None when some check has no expected value."""
    from .. import frontend
    from .backends.base import check_ops

    module = frontend.load_text(text, "<test>")[0]
    out: list[np.ndarray] = []
    for op in check_ops(module.funcs[entry]):
        value = op.attr("value")
        if value is None or len(op.operands) != 1:
            return None
        out.append(np.asarray(value))
    return out
