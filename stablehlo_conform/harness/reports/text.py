"""Plain-text summaries: the gate verdict and pass tables."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence

from ..records.gate import GateResult
from ..records.result import describe_failure

MAX_LISTED = 50
# C0 and C1 controls, DEL, and the bidi embeddings/overrides/isolates that reorder what a terminal shows
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: object) -> str:
    """``text`` for a terminal: every control character becomes a visible
    escape (``\\x1b``, ``\\n``, ``\\u202e``), so a test id cannot move the
    cursor, recolour the screen or start a line of its own."""
    return _CONTROL.sub(_escape, str(text))


def _escape(m: re.Match) -> str:
    c = m.group()
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
    return named.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def gate_lines(g: GateResult, baseline_name: str | None = None, max_listed: int = MAX_LISTED) -> list[str]:
    """The gate's verdict, then what made it so (regressions, pass rates),
    then what needs attention in the baseline (newly passing, stale)."""
    out: list[str] = []
    verdict = "PASSED" if g.ok else "FAILED"
    parts = []
    if g.mode in ("baseline", "baseline+pass-rate"):
        parts.append(f"baseline {baseline_name or ''}".rstrip() + ":")
        parts.append(f"{len(g.regressions)} regressions, {len(g.expected)} expected failures, "
                     f"{len(g.newly_passing)} newly passing")
    elif g.mode == "all-pass":
        parts.append(f"{len(g.regressions)} of {g.total} tests did not pass")
    if g.rate_checks:
        bad = len(g.rate_failures)
        parts.append(("; " if parts else "") + f"pass rate: {bad} of {len(g.rate_checks)} families below threshold")
    if g.total == 0:
        parts = ["no test ran"]
    out.append(f"gate {verdict} ({' '.join(parts)})")
    if g.mode != "pass-rate":
        for rec in g.regressions[:max_listed]:
            f = describe_failure(rec)
            out.append(f"  REGRESSION  {printable(f.id)}: {f.status}: {printable(f.headline(200))}")
        if len(g.regressions) > max_listed:
            out.append(f"  ... {len(g.regressions) - max_listed} more regressions")
    for c in g.rate_failures:
        if c.total:
            out.append(f"  PASS RATE   {c.family}: {_pct(c.rate)} < {_pct(c.threshold)} ({c.passed}/{c.total})")
        else:
            out.append(f"  PASS RATE   {c.family}: no test ran (threshold {_pct(c.threshold)})")
    for rec, entry in g.newly_passing[:max_listed]:
        why = f" (baseline reason: {entry.reason})" if entry.reason else ""
        out.append(f"  NEWLY PASSING {printable(rec['id'])}{printable(why)}")
    if len(g.newly_passing) > max_listed:
        out.append(f"  ... {len(g.newly_passing) - max_listed} more newly passing")
    if g.newly_passing:
        out.append("  (newly passing tests can leave the baseline: conform baseline update RESULTS.json -o BASELINE)")
    if g.stale:
        out.append(f"  {len(g.stale)} baseline entries matched no test of this run")
    return out


def _cell(ok: int, total: int) -> str:
    return f"{ok}/{total} {_pct(ok / total)}" if total else "-"


def family_table(runs: Sequence[dict]) -> list[str]:
    """Pass counts per op family (rows) and results file (columns, headed by each run's backend:
    two runs of one backend are two columns)."""
    backends = [r["backend"] for r in runs]
    cells: dict[str, dict[int, Counter]] = defaultdict(lambda: defaultdict(Counter))
    for i, run in enumerate(runs):
        for rec in run["results"]:
            cells[rec.get("family") or "other"][i][rec["status"] == "pass"] += 1
    width = max([len(f) for f in cells] + [9])
    head = f"{'op family':<{width}} " + " ".join(f"{b:>16}" for b in backends)
    lines = [head, "-" * len(head)]
    for fam in sorted(cells):
        row = []
        for i in range(len(runs)):
            c = cells[fam].get(i)
            if not c:
                row.append(f"{'-':>16}")
                continue
            row.append(f"{_cell(c[True], c[True] + c[False]):>16}")
        lines.append(f"{fam:<{width}} " + " ".join(row))
    tot_row = []
    for run in runs:
        n = len(run["results"])
        ok = sum(r["status"] == "pass" for r in run["results"])
        tot_row.append(f"{_cell(ok, n):>16}")
    lines.append("-" * len(head))
    lines.append(f"{'total':<{width}} " + " ".join(tot_row))
    return lines
