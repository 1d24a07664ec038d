"""Failure triage: every non-pass result gets a *signature*, and results with
the same signature are one group — usually one bug.

A signature is ``(stage, op, element type, normalised message)``:

- *stage*: where the test stopped — ``parse``, ``verify``, ``unsupported``,
  ``compile``, ``run``, ``crash``, ``timeout``, ``wrong value`` (a check or a
  comparison of backends found different values), ``no test`` (a file
  without a test);
- *op*: the op the test stopped at, else the op family of the test.

Stage and op are read from the record's ``failed_at`` field where the error that stopped the
test carried them (an op without a kernel, a kernel that raised: see
:class:`~.result.FailedAt`); from the status, and from the message only where nothing else
says (a native backend's own text, a compiler's diagnostic, a record of an older file: the op
the message names, ``'stablehlo.add' op ...``, ``unsupported: stablehlo.foo``,
``stablehlo.sine at f.mlir:3:5: ...``);
- *element type*: the element type of the test (its first result type).
  Results that differ only in element type are one group (one bug seen on
  several types); the group's signature lists the types it was seen on;
- *message*: the first meaningful line of the message with everything that
  varies between instances of one bug stripped — file paths and locations,
  numbers, SSA names, shapes, hex bit patterns. For crashes the signal and the
  first native error line (``LLVM ERROR: ...``, ``F0000 ... Check failed``)
  stand for the message.

Baselines can list a signature instead of test ids (see
:mod:`stablehlo_conform.harness.records.gate`): ``signature: <stage> | <op> | <type> | <message>``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .names import display_name, shorten_names

STAGES = ("parse", "verify", "unsupported", "compile", "run", "crash", "timeout", "wrong value", "no test")

_OP_NAME = r"[a-z_][a-z0-9_]*\.[A-Za-z_][\w.$-]*"
_QUOTED_OP = re.compile(rf"'({_OP_NAME})' op\b")
_UNSUPPORTED_OP = re.compile(rf"unsupported:\s*({_OP_NAME})")
_LEADING_OP = re.compile(rf"^({_OP_NAME}) at ", re.M)  # a kernel error: '<op> at <loc>: <message>'
_NATIVE_OP = re.compile(rf"Unsupported op:\s*(?:%[\w#]+(?::\d+)? = )?\"?({_OP_NAME})")
# where a native error line starts (the line from there on is the error); an assertion
# only when ' failed' follows on its line (:func:`_native_line`)
_NATIVE_START = re.compile(r"LLVM ERROR:|F\d{4} |Check failed:|terminate called|Fatal Python error:|Segmentation fault")
_CHECK_TARGET = re.compile(r"@(check\.[\w.]+)")
_SIGNAL = re.compile(r"\b(SIG[A-Z]+)\b")

# Normalisation, applied in order to one line of a message. Every pattern takes time linear in
# the line (messages may hold a program's text: a 1 MB name must not cost minutes): a pattern
# whose match may start anywhere inside a run of its characters starts only where such a run
# starts (a look-behind; the first match of a run starts there anyway), and a pattern that
# ends at a closing character is applied only up to the last one (``tail``: a start after it
# cannot match, and each such start would scan to the end of the line).
_NORMALISE: tuple[tuple[re.Pattern, str, str], ...] = (
    (re.compile(r"(?<![\w.~/-])(?:[\w.~-]*/)+[\w.-]+\.(?:mlir|mlirbc|bc|py|so|npz|json|txt)"), "<path>", ""),
    (re.compile(r"<(?:chunk|file)[^>]*>"), "<chunk>", ">"),
    (re.compile(r"(?<![\w.-])([.-]*)\b[\w.-]+\.(?:mlir|mlirbc)\b"), r"\1<path>", ""),
    (re.compile(r"<path>(?::\d+)+"), "<path>", ""),
    (re.compile(r"\bloc\([^)]*\)"), "loc(..)", ")"),
    (re.compile(r"%[\w#.$-]+"), "%v", ""),
    (re.compile(r"@(?!check\.)[\w.$-]+"), "@f", ""),  # the checks' own names stay
    (re.compile(r"\b(tensor|vector|memref)<[^<>]*(?:<[^<>]*>[^<>]*)*>"), r"\1<..>", ">"),
    (re.compile(r"0x[0-9A-Fa-f]+"), "0x..", ""),
    (re.compile(r"\[[-+\d.,\s eEinfa()j]*\]"), "[..]", ""),
    (re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?j?"), "N", ""),
    (re.compile(r"\b(?:nan|inf)\b", re.I), "N", ""),
    (re.compile(r"\s+"), " ", ""),
)


# What a stage says about the backend, in the order triage lists groups:
# wrong values first (the backend computed something else), then crashes,
# then errors (it refused a program it should take), then unsupported.
KIND_ORDER = ("wrong value", "crash", "error", "unsupported")


def kind(stage: str) -> str:
    """The outcome kind of a stage (one of :data:`KIND_ORDER`)."""
    if stage in ("wrong value", "unsupported"):
        return stage
    return "crash" if stage in ("crash", "timeout") else "error"


@dataclass(frozen=True, order=True)
class Signature:
    stage: str
    op: str
    dtype: str
    message: str

    def __str__(self) -> str:
        return " | ".join((self.stage, self.op or "-", self.dtype or "-", self.message))

    @property
    def key(self) -> tuple[str, str, str]:
        """What a group shares: everything but the element type."""
        return (self.stage, self.op, self.message)

    def matches(self, other: "Signature") -> bool:
        """Whether ``other`` (one result's signature) falls under this one
        (a group's or a baseline's): same stage, op and message, and an
        element type among this one's (``-`` or ``*``: any)."""
        if self.key != other.key:
            return False
        return not self.dtype or self.dtype == "*" or other.dtype in self.dtype.split(",")

    @classmethod
    def parse(cls, text: str) -> "Signature":
        """The inverse of ``str()``: four fields separated by `` | ``."""
        parts = [p.strip() for p in text.split(" | ", 3)]
        if len(parts) != 4 or parts[0] not in STAGES:
            raise ValueError(f"not a signature (want 'stage | op | type | message', stage one of "
                             f"{', '.join(STAGES)}): {text!r}")
        stage, op, dtype, message = parts
        return cls(stage, "" if op == "-" else op, "" if dtype == "-" else dtype, message)

    def to_json(self) -> dict[str, str]:
        return {"stage": self.stage, "op": self.op, "dtype": self.dtype, "message": self.message}


def normalise(line: str) -> str:
    """One message line with what varies between instances of a bug stripped."""
    for pattern, repl, tail in _NORMALISE:
        end = line.rfind(tail) + 1 if tail else len(line)
        line = pattern.sub(repl, line[:end]) + line[end:]
    return line.strip()[:200]


def _message_lines(rec: dict[str, Any]) -> list[str]:
    text = str(rec.get("message") or "")
    if rec.get("backend"):  # a plugin's library path reads as the plugin's name
        text = shorten_names(text, [str(rec["backend"])])
    return [ln.strip() for ln in text.splitlines() if ln.strip()]


def _stage(rec: dict[str, Any], lines: list[str]) -> str:
    status = rec.get("status")
    text = "\n".join(lines)
    if status == "fail":
        return "wrong value"
    if status in ("crash", "timeout", "unsupported"):
        return str(status)
    if "no test in file" in text:
        return "no test"
    if "compile failed" in text or "failed to compile" in text or "failed to serialize" in text.lower():
        return "compile"
    test_id = str(rec.get("id", ""))
    if test_id.endswith(">"):  # a chunk or file that did not load
        return "verify" if _QUOTED_OP.search(text) or "verif" in text else "parse"
    if "error:" in text and not text.startswith("internal error") and _QUOTED_OP.search(text):
        return "verify"
    return "run"


def _op(rec: dict[str, Any], lines: list[str]) -> str:
    text = "\n".join(lines)
    for pattern in (_NATIVE_OP, _UNSUPPORTED_OP, _QUOTED_OP, _LEADING_OP):
        m = pattern.search(text)
        if m:
            if m.group(1) == "stablehlo.custom_call":  # a check op spelled as a custom call: its target
                target = _CHECK_TARGET.search(text)
                if target:
                    return target.group(1)
            return m.group(1)
    return str(rec.get("family") or "")


def _dtype(rec: dict[str, Any]) -> str:
    dtypes = rec.get("dtypes") or []
    return str(dtypes[0]) if dtypes else ""


def _native_line(text: str) -> str | None:
    """The first native error line of a crash's text, from where the error
    starts (``LLVM ERROR: ...``, ``F0000 ...``, ``Assertion `x' failed``), or None.
    Line by line, in time linear in the text: if the first ``Assertion `` of a
    line has no `` failed`` after it, no later one has."""
    for line in text.split("\n"):
        m = _NATIVE_START.search(line)
        starts = [m.start()] if m else []
        a = line.find("Assertion ")
        if a >= 0 and line.find(" failed", a + len("Assertion ")) >= 0:
            starts.append(a)
        if starts:
            return line[min(starts):]
    return None


def _key_line(rec: dict[str, Any], stage: str, lines: list[str]) -> str:
    if stage == "crash":
        text = "\n".join(lines)
        sig = _SIGNAL.search(text)
        native = _native_line(text)
        parts = [sig.group(1) if sig else "exit"]
        if native:
            parts.append(native)
        return normalise(": ".join(parts))
    if stage == "timeout":
        return "timeout"
    if not lines:
        return ""
    # the first line naming an error; diagnostics start with 'file:line:col: error:'
    for ln in lines:
        if "error" in ln.lower() or stage in ("wrong value", "unsupported"):
            return normalise(re.sub(r"^.*?\berror:\s*", "", ln))
    return normalise(lines[0])


def signature(rec: dict[str, Any]) -> Signature | None:
    """The signature of a result record; None for a pass."""
    if rec.get("status") == "pass":
        return None
    lines = _message_lines(rec)
    at = rec.get("failed_at") or {}  # where the error that stopped the test said it stopped
    stage = at.get("stage") or _stage(rec, lines)
    return Signature(stage, at.get("op") or _op(rec, lines), _dtype(rec), _key_line(rec, stage, lines))


def at_fault(rec: dict[str, Any]) -> list[str]:
    """The backends a non-pass record blames (see :attr:`Group.backends`)."""
    own = [str(rec.get("backend") or "numpy")]
    if not str(rec.get("message") or "").startswith("backends disagree"):
        return own  # the record's own check or run
    wrong = list((rec.get("compare_verdict") or {}).get("wrong") or ())
    ran = [b for b, s in (rec.get("compare") or {}).items() if s == "ok" or str(s).startswith("fail: ")]
    return wrong or ran or own


@dataclass
class Group:
    key: tuple[str, str, str]
    results: list[dict[str, Any]] = field(default_factory=list)
    dtypes: set[str] = field(default_factory=set)

    @property
    def signature(self) -> Signature:
        stage, op, message = self.key
        return Signature(stage, op, ",".join(sorted(self.dtypes)), message)

    @property
    def count(self) -> int:
        return len(self.results)

    @property
    def backends(self) -> list[str]:
        """The backends at fault: a record's own backend, but for a
        disagreement of ``--compare`` the backends its verdict names wrong
        (all that ran when no verdict says which)."""
        return sorted({display_name(b) for r in self.results for b in at_fault(r)})

    @property
    def example(self) -> dict[str, Any]:
        """The smallest instance: fewest distinct ops, then the shortest message, then the id."""
        return min(self.results, key=lambda r: (len(r.get("ops") or ()), len(str(r.get("message") or "")),
                                                str(r.get("id"))))

    def to_json(self) -> dict[str, Any]:
        ex = self.example
        return {"signature": str(self.signature), **self.signature.to_json(), "count": self.count,
                "backends": self.backends, "example": ex.get("id"),
                "example_message": str(ex.get("message") or "").splitlines()[:1],
                "ids": sorted(str(r.get("id")) for r in self.results)}


def triage(results: Iterable[dict[str, Any]]) -> list[Group]:
    """Non-pass results grouped by signature: wrong values first, then
    crashes and timeouts, errors, unsupported (:data:`KIND_ORDER`); the
    largest group first within each."""
    groups: dict[tuple[str, str, str], Group] = {}
    for rec in results:
        sig = signature(rec)
        if sig is None:
            continue
        g = groups.setdefault(sig.key, Group(sig.key))
        g.results.append(rec)
        if sig.dtype:
            g.dtypes.add(sig.dtype)
    return sorted(groups.values(), key=lambda g: (KIND_ORDER.index(kind(g.key[0])), -g.count, g.key))


def triage_runs(docs: Sequence[dict[str, Any]]) -> list[Group]:
    """Groups over several runs (one per backend): a group lists every
    backend whose results share its signature."""
    merged: list[dict[str, Any]] = []
    for doc in docs:
        backend = doc.get("backend")
        for r in doc.get("results", []):
            merged.append(r if r.get("backend") or not backend else {**r, "backend": backend})
    return triage(merged)


def triage_json(groups: Sequence[Group]) -> dict[str, Any]:
    return {"groups": [g.to_json() for g in groups],
            "failures": sum(g.count for g in groups)}


def triage_lines(groups: Sequence[Group], limit: int | None = None) -> list[str]:
    """Text: one block per group."""
    total = sum(g.count for g in groups)
    out = [f"{total} non-passing results in {len(groups)} groups"]
    shown = groups if limit is None else groups[:limit]
    for i, g in enumerate(shown, 1):
        out.append(f"{i:>3}. {g.count:>5} x  {g.signature}")
        out.append(f"       backends: {', '.join(g.backends)}; smallest example: {g.example.get('id')}")
    if limit is not None and len(groups) > limit:
        rest = groups[limit:]
        out.append(f"     ... {len(rest)} more groups ({sum(g.count for g in rest)} results)")
    return out
