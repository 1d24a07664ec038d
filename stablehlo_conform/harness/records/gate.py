"""CI gates over a run's results: baselines of expected failures and
minimum pass rates per op family.

A *baseline* lists the tests a backend is known to fail, each with a reason.
Gating a run against it fails only on *regressions*: tests that are not
listed and did not pass. Listed tests that pass now are reported as *newly
passing* (the entry can go), listed tests that did not run are *stale*.

A *minimum pass rate* (``FAMILY=0.9``, or one number for every family) is an
alternative gate: it fails when the share of passing tests of an op family
is below its threshold. When both gates are given, both must pass; with
neither, every test must pass.

Test ids are matched on their path *suffix* (at ``/`` boundaries), so a
baseline written from ``conform run ../suite`` also applies to a run of
``/abs/path/suite`` or ``suite``. Entries may be globs (``*``, ``?``,
``[``); a glob matches the end of an id.

An entry may also name a failure *signature* (see
:mod:`stablehlo_conform.harness.records.triage`) instead of ids: it excuses every
non-passing result with that signature (a whole group of ``conform
triage``). Text lines ``signature: <stage> | <op> | <types> | <message> | <reason>``
(types ``*``: any); JSON ``"expected_signatures": {"<signature>": {"reason": ...}}``.
"""

from __future__ import annotations

import fnmatch
import json
import os
import posixpath
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import jsonout
from .guard import GuardError, read_input_text, write_atomic
from .triage import Signature, signature

BASELINE_FORMAT = "stablehlo-conform-baseline"
BASELINE_VERSION = 1
GLOB_CHARS = "*?["


class GateError(ValueError):
    """A baseline or threshold that cannot be used (a usage error)."""


# test ids -------------------------------------------------------------------

def normalize_id(test_id: str) -> str:
    """``../a/./b.mlir::f`` -> ``a/b.mlir::f``: POSIX separators, no leading
    ``/``, ``./`` or ``../`` parts."""
    path, sep, rest = test_id.rpartition("::")
    if not sep:
        path, rest = test_id, ""
    path = path.replace(os.sep, "/") if os.sep != "/" else path
    if path:
        path = posixpath.normpath(path)
    parts = [p for p in path.split("/") if p not in ("", ".", "..")]
    out = "/".join(parts)
    return f"{out}::{rest}" if sep else out


def _suffixes(key: str) -> Iterable[str]:
    """``a/b/c.mlir::f`` -> itself, ``b/c.mlir::f``, ``c.mlir::f``."""
    path, sep, rest = key.rpartition("::")
    if not sep:
        path, rest = key, ""
    parts = path.split("/")
    for i in range(len(parts)):
        yield "/".join(parts[i:]) + (f"::{rest}" if sep else "")


# baselines ------------------------------------------------------------------

@dataclass
class BaselineEntry:
    id: str
    reason: str = ""
    status: str = ""
    evidence: dict | None = None  # the verdict that accepted the entry (golden wrong)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"reason": self.reason}
        if self.status:
            d["status"] = self.status
        if self.evidence:
            d["evidence"] = self.evidence
        return d


@dataclass
class Baseline:
    """Expected failures of one backend, keyed by (normalized) test id."""

    entries: dict[str, BaselineEntry] = field(default_factory=dict)
    backend: str | None = None
    source: str | None = None

    signatures: dict[str, BaselineEntry] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._index: dict[str, str] | None = None

    def __len__(self) -> int:
        return len(self.entries) + len(self.signatures)

    def add_signature(self, text: str, reason: str = "", source: str = "<baseline>") -> None:
        try:
            sig = Signature.parse(text)
        except ValueError as e:
            raise GateError(f"{source}: {e}") from None
        self.signatures[str(sig)] = BaselineEntry(f"signature: {sig}", reason)

    def __contains__(self, test_id: str) -> bool:
        return self.match(test_id) is not None

    def add(self, entry: BaselineEntry) -> None:
        self.entries[entry.id] = entry
        self._index = None

    def remove(self, test_id: str) -> None:
        self.entries.pop(test_id, None)
        self._index = None

    # matching ------------------------------------------------------------
    def _build(self) -> None:
        full: dict[str, str] = {}
        for key in self.entries:
            if not any(c in key for c in GLOB_CHARS):
                full[normalize_id(key)] = key
        # entry ids longer than the run's ids (run from inside the suite)
        longer: dict[str, str | None] = {}
        for norm, key in full.items():
            for suf in list(_suffixes(norm))[1:]:
                longer[suf] = None if suf in longer and longer[suf] != key else key
        self._full = full
        self._longer = longer
        self._globs = [k for k in self.entries if any(c in k for c in GLOB_CHARS)]
        self._index = full

    def match(self, test: str | dict) -> BaselineEntry | None:
        """The entry for a test id or a result record: by id (exact, then the
        longest path-suffix match either way, then a glob), then — for a
        non-passing record — by its signature; None when nothing matches."""
        test_id = test["id"] if isinstance(test, dict) else test
        entry = self._match_id(test_id)
        if entry is None and isinstance(test, dict) and self.signatures and test.get("status") != "pass":
            sig = signature(test)
            for text, e in self.signatures.items():
                if sig is not None and Signature.parse(text).matches(sig):
                    return e
        return entry

    def _match_id(self, test_id: str) -> BaselineEntry | None:
        if self._index is None:
            self._build()
        norm = normalize_id(test_id)
        for suf in _suffixes(norm):
            key = self._full.get(suf)
            if key is not None:
                return self.entries[key]
        key = self._longer.get(norm)
        if key:
            return self.entries[key]
        for g in self._globs:
            pat = normalize_id(g) if "::" in g else g
            if fnmatch.fnmatchcase(norm, pat) or fnmatch.fnmatchcase(norm, f"*/{pat}") \
                    or fnmatch.fnmatchcase(test_id, pat):
                return self.entries[g]
        return None

    # files ---------------------------------------------------------------
    @classmethod
    def load(cls, path: str | Path) -> "Baseline":
        """Read a JSON baseline (see :meth:`to_json`) or a text file of
        ``<test-id suffix pattern> | <reason>`` lines (``#`` comments)."""
        p = Path(path)
        try:  # a regular file within the bound of inputs (see .guard)
            text = read_input_text(p, kind="baseline")
        except GuardError as e:
            raise GateError(str(e) if str(path) in str(e) else f"cannot read baseline {path}: {e}") from None
        if p.suffix == ".json" or text.lstrip().startswith("{"):
            return cls.from_json(text, str(p))
        return cls.from_text(text, str(p))

    @classmethod
    def from_json(cls, text: str, source: str = "<baseline>") -> "Baseline":
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise GateError(f"{source}: not valid JSON: {e}") from None
        except RecursionError:
            raise GateError(f"{source}: not a baseline: JSON nested too deeply") from None
        if not isinstance(doc, dict):
            raise GateError(f"{source}: a baseline is a JSON object")
        fmt = doc.get("format", BASELINE_FORMAT)
        if fmt != BASELINE_FORMAT:
            raise GateError(f"{source}: format is {fmt!r}, expected {BASELINE_FORMAT!r}")
        raw = doc.get("expected_failures", {})
        b = cls(backend=doc.get("backend"), source=source)
        if isinstance(raw, list):  # a plain list of ids
            raw = {str(k): {} for k in raw}
        if not isinstance(raw, dict):
            raise GateError(f"{source}: expected_failures must be an object of test id -> entry")
        for tid, v in raw.items():
            if isinstance(v, str):
                v = {"reason": v}
            elif not isinstance(v, dict):
                raise GateError(f"{source}: entry {tid!r} must be an object or a reason string")
            ev = v.get("evidence")
            b.add(BaselineEntry(str(tid), str(v.get("reason", "")), str(v.get("status", "")),
                                ev if isinstance(ev, dict) else None))
        sigs = doc.get("expected_signatures", {})
        if not isinstance(sigs, dict):
            raise GateError(f"{source}: expected_signatures must be an object of signature -> entry")
        for text, v in sigs.items():
            b.add_signature(str(text), str(v.get("reason", "")) if isinstance(v, dict) else str(v), source)
        return b

    @classmethod
    def from_text(cls, text: str, source: str = "<baseline>") -> "Baseline":
        b = cls(source=source)
        for line in text.splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("signature:"):
                fields = line[len("signature:"):].split(" | ", 4)
                b.add_signature(" | ".join(fields[:4]), fields[4].strip() if len(fields) > 4 else "", source)
                continue
            pattern, _, reason = line.partition("|")
            pattern = pattern.strip()
            if pattern:
                b.add(BaselineEntry(pattern, reason.strip()))
        return b

    def to_json(self) -> dict[str, Any]:
        return {
            "format": BASELINE_FORMAT,
            "version": BASELINE_VERSION,
            "backend": self.backend,
            "expected_failures": {k: self.entries[k].to_json() for k in sorted(self.entries)},
            **({"expected_signatures": {k: {"reason": self.signatures[k].reason} for k in sorted(self.signatures)}}
               if self.signatures else {}),
        }

    def save(self, path: str | Path) -> None:
        write_atomic(path, jsonout.dumps(self.to_json(), indent=2) + "\n")


def first_line(message: str | None, limit: int = 300) -> str:
    msg = (message or "").strip()
    line = msg.splitlines()[0] if msg else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


@dataclass
class UpdateStats:
    added: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    not_run: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)  # failures not accepted (--accept-golden-wrong)


def update_baseline(results: Sequence[dict], existing: Baseline | None = None,
                    backend: str | None = None, prune: bool = False,
                    accept_golden_wrong: bool = False) -> tuple[Baseline, UpdateStats]:
    """A baseline listing every non-passing test of ``results``.

    Entries of ``existing`` that still fail keep their id and reason; new
    entries get ``"<status>: <first line of the message>"`` as reason.
    Entries whose test passes now are dropped; entries whose test did not
    run are kept (dropped with ``prune``). Signature entries are kept as they
    are, and the failures they cover are not listed one by one. With ``accept_golden_wrong``, new
    entries are made only for failures whose verdict is ``golden wrong``,
    with the verdict's summary as reason and its evidence attached; other
    new failures are left out (they stay regressions).
    """
    existing = existing or Baseline()
    out = Baseline(backend=backend or existing.backend, signatures=dict(existing.signatures))
    stats = UpdateStats()
    matched: set[str] = set()
    for rec in results:
        entry = existing.match(rec)
        if entry is not None:
            matched.add(entry.id)
        if entry is not None and entry.id.startswith("signature: "):
            continue
        if rec["status"] == "pass":
            if entry is not None and entry.id not in out.entries:
                stats.removed.append(entry.id)
            continue
        if entry is not None:
            if entry.id not in out.entries:
                out.add(BaselineEntry(entry.id, entry.reason, rec["status"]))
                stats.kept.append(entry.id)
            continue
        tid = normalize_id(rec["id"])
        verdict = rec.get("verdict") if isinstance(rec.get("verdict"), dict) else None
        if accept_golden_wrong:
            if verdict is None or verdict.get("verdict") != "golden wrong":
                stats.left_out.append(tid)
                continue
            out.add(BaselineEntry(tid, verdict.get("summary", "golden wrong"), rec["status"], verdict))
            stats.added.append(tid)
            continue
        reason = first_line(rec.get("message")) or rec["status"]
        if not reason.startswith(rec["status"]):
            reason = f"{rec['status']}: {reason}"
        out.add(BaselineEntry(tid, reason, rec["status"]))
        stats.added.append(tid)
    stats.removed = [k for k in stats.removed if k not in out.entries]
    for key, entry in existing.entries.items():
        if key in matched or key in out.entries:
            continue
        stats.not_run.append(key)
        if not prune:
            out.add(entry)
    return out, stats


# pass-rate thresholds -----------------------------------------------------

def parse_min_pass_rates(values: Iterable[str]) -> dict[str, float]:
    """``["0.9", "stablehlo.add=95%"]`` -> ``{"*": 0.9, "stablehlo.add": 0.95}``."""
    out: dict[str, float] = {}
    for raw in values:
        text = raw.strip()
        fam, sep, num = text.rpartition("=")
        fam = fam.strip() if sep else "*"
        num = num.strip()
        if sep and not fam:
            raise GateError(f"{raw!r}: missing op family before '='")
        try:
            rate = float(num[:-1]) / 100 if num.endswith("%") else float(num)
        except ValueError:
            raise GateError(f"{raw!r}: expected FAMILY=RATE or RATE, RATE in [0, 1] or a percentage") from None
        if not 0.0 <= rate <= 1.0:
            raise GateError(f"{raw!r}: rate {rate:g} is outside [0, 1] (use 0.9 or 90%)")
        out[fam] = rate
    return out


def _family_matches(pattern: str, family: str) -> bool:
    if pattern == family:
        return True
    if any(c in pattern for c in GLOB_CHARS):
        return fnmatch.fnmatchcase(family, pattern)
    return "." in family and family.split(".", 1)[1] == pattern


def family_rates(results: Sequence[dict]) -> dict[str, tuple[int, int]]:
    """op family -> (passed, total)."""
    tot: Counter = Counter()
    ok: Counter = Counter()
    for r in results:
        fam = r.get("family") or "other"
        tot[fam] += 1
        ok[fam] += r["status"] == "pass"
    return {f: (ok[f], tot[f]) for f in sorted(tot)}


@dataclass
class RateCheck:
    family: str
    passed: int
    total: int
    threshold: float

    @property
    def rate(self) -> float:
        return self.passed / self.total if self.total else 0.0

    @property
    def ok(self) -> bool:
        return self.total > 0 and self.rate + 1e-12 >= self.threshold


# the gate -------------------------------------------------------------------

@dataclass
class GateResult:
    mode: str  # "all-pass", "baseline", "pass-rate" or "baseline+pass-rate"
    total: int = 0
    passed: int = 0
    regressions: list[dict] = field(default_factory=list)
    expected: list[tuple[dict, BaselineEntry]] = field(default_factory=list)
    newly_passing: list[tuple[dict, BaselineEntry]] = field(default_factory=list)
    stale: list[BaselineEntry] = field(default_factory=list)
    rate_checks: list[RateCheck] = field(default_factory=list)

    @property
    def rate_failures(self) -> list[RateCheck]:
        return [c for c in self.rate_checks if not c.ok]

    @property
    def ok(self) -> bool:
        if self.total == 0:
            return False
        if self.mode == "pass-rate":
            return not self.rate_failures
        if self.mode == "baseline+pass-rate":
            return not self.regressions and not self.rate_failures
        return not self.regressions

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1


def evaluate_gate(results: Sequence[dict], baseline: Baseline | None = None,
                  min_rates: dict[str, float] | None = None) -> GateResult:
    """Judge ``results`` (run records) by a baseline and/or pass rates."""
    min_rates = min_rates or {}
    if baseline is not None and min_rates:
        mode = "baseline+pass-rate"
    elif baseline is not None:
        mode = "baseline"
    elif min_rates:
        mode = "pass-rate"
    else:
        mode = "all-pass"
    g = GateResult(mode=mode, total=len(results))
    seen: set[str] = set()
    for rec in results:
        passed = rec["status"] == "pass"
        g.passed += passed
        entry = baseline.match(rec) if baseline is not None else None
        if entry is not None:
            seen.add(entry.id)
            (g.newly_passing if passed else g.expected).append((rec, entry))
        elif not passed:
            g.regressions.append(rec)
    if baseline is not None:
        g.stale = [e for k, e in sorted(baseline.entries.items())
                   if k not in seen and not any(c in k for c in GLOB_CHARS)]
    if min_rates:
        rates = family_rates(results)
        default = min_rates.get("*")
        specific = {k: v for k, v in min_rates.items() if k != "*"}
        for fam, (ok, tot) in rates.items():
            th = None
            for pat, v in specific.items():
                if _family_matches(pat, fam):
                    th = v if th is None else max(th, v)
            if th is None:
                th = default
            if th is not None:
                g.rate_checks.append(RateCheck(fam, ok, tot, th))
        for pat, v in specific.items():
            if not any(_family_matches(pat, f) for f in rates):
                g.rate_checks.append(RateCheck(pat, 0, 0, v))
    return g


def known_status(rec: dict, baseline: Baseline | None) -> BaselineEntry | None:
    """The baseline entry that excuses a non-passing ``rec``, if any."""
    if baseline is None or rec["status"] == "pass":
        return None
    return baseline.match(rec)


def group_by(results: Iterable[dict], key: str) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = defaultdict(list)
    for r in results:
        out[r.get(key) or "other"].append(r)
    return dict(out)
