"""The result of one test: a :class:`Result` value and its :class:`Status`.

Every input ends as exactly one result. ``conform run --json``, the JSON
Lines stream, JUnit XML and the text output all write the same fields, in
the same order: the record's eleven base fields (``id`` to ``checks``), then
those a step added, each only when it is set (:meth:`Result.to_json`).
Nothing edits a result: a verdict or a comparison gives a new one
(:func:`dataclasses.replace`). A backend's ``run_test`` gives an
:class:`Outcome`; the partial dictionary older plugin backends return is
read by :meth:`Outcome.of`, the one place that converts it.
:func:`describe_failure` is the one text of a failure every report renders.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, fields, replace
from typing import Any

__all__ = ["Status", "STATUSES", "NOT_RUN", "FailedAt", "Result", "new_result", "Outcome", "Failure",
           "describe_failure", "replace"]


class Status(str, enum.Enum):
    """A test's status: the value is what JSON holds; each knows what it says about the backend,
    and every grouping of statuses (summaries, JUnit, the plugin page, repro bundles, the gate)
    reads these facts instead of listing statuses again.

    - ``kind``: what it says about the backend, in triage's words: ``pass``, ``wrong value``
      (it computed something else), ``crash`` (it died or hung), ``error`` (it refused a program
      it should take), ``unsupported``;
    - ``failure``: a failure of the backend (an unsupported op is not one: it is coverage);
    - ``reproducible``: a program that ran and gave a wrong value or killed its process, which a
      repro bundle reproduces;
    - ``rank``: worst first (a wrong value, a crash, a timeout, an error, unsupported, pass);
    - ``junit``: the JUnit element a non-passing test gets (``error``: the test did not run to its
      checks; ``failure``: it ran, or its op is unsupported).

    The members' order is the order summaries list counts in."""

    PASS = ("pass", "pass", 5, "")
    FAIL = ("fail", "wrong value", 0, "failure")
    ERROR = ("error", "error", 3, "error")
    UNSUPPORTED = ("unsupported", "unsupported", 4, "failure")
    CRASH = ("crash", "crash", 1, "error")
    TIMEOUT = ("timeout", "crash", 2, "error")

    def __new__(cls, value: str, kind: str, rank: int, junit: str) -> "Status":
        obj = str.__new__(cls, value)
        obj._value_ = value
        obj.kind, obj.rank, obj.junit = kind, rank, junit
        return obj

    def __str__(self) -> str:
        return self.value

    @property
    def failure(self) -> bool:
        return self.kind in ("wrong value", "crash", "error")

    @property
    def reproducible(self) -> bool:
        return self.kind in ("wrong value", "crash")

    @property
    def ran(self) -> bool:
        """The program ran to its checks (passed, or a value was wrong)."""
        return self.kind in ("pass", "wrong value")

    @classmethod
    def of(cls, value: Any) -> "Status | None":
        """The status a record's ``status`` field names, None for a value that names none
        (a record of another tool)."""
        try:
            return cls(value)
        except ValueError:
            return None


STATUSES = tuple(s.value for s in Status)  # the order summaries count in
# the statuses of a test that did not run to its checks, worst first: crash, timeout, error, unsupported
NOT_RUN = tuple(s.value for s in sorted(Status, key=lambda s: s.rank) if not s.ran)


# optional fields, in the order they are written (after the base fields); absent when None
_OPTIONAL = ("backend", "kind", "output", "accuracy", "verdict", "compare", "disagreements",
             "compare_accuracy", "compare_verdict", "model", "failed_at")


@dataclass(frozen=True)
class FailedAt:
    """Where a test stopped, as the error that stopped it said (an op without a kernel, a kernel
    that raised): the triage stage (``unsupported``, ``run``), the op and its ``file:line:col``.
    Triage reads these instead of the message; a record without them (a native backend's own
    text, an older file) is triaged from its message."""

    stage: str
    op: str = ""
    loc: str = ""

    def to_json(self) -> dict[str, str]:
        return {"stage": self.stage, "op": self.op, "loc": self.loc}


@dataclass(frozen=True)
class Result:
    """One test's result. ``status`` is a :class:`Status` (a plain string read
    from JSON is converted); lists are kept as tuples so a result cannot be
    changed after it is made. ``extra`` holds fields this class does not name
    (from other tools' streams), written last in their order."""

    id: str
    file: str = ""
    function: str = ""
    line: int = 0
    status: Status = Status.ERROR
    message: str = ""
    family: str = ""
    ops: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = ()
    duration: float = 0.0
    checks: int = 0
    backend: str | None = None
    kind: str | None = None
    output: str | None = None
    accuracy: dict | None = None
    verdict: dict | None = None
    compare: dict | None = None
    disagreements: tuple[str, ...] | None = None
    compare_accuracy: str | None = None
    compare_verdict: dict | None = None
    model: dict | None = None  # a model's judgement: metric, errors and bounds per output (harness/judge/model.py)
    failed_at: FailedAt | None = None
    extra: tuple[tuple[str, Any], ...] = ()
    # a verdict set by a comparison after the comparison's fields is written after them
    verdict_last: bool = field(default=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.status, Status):
            object.__setattr__(self, "status", Status(self.status))
        for name in ("ops", "dtypes", "disagreements"):
            v = getattr(self, name)
            if isinstance(v, list):
                object.__setattr__(self, name, tuple(v))
        if isinstance(self.failed_at, dict):  # read from JSON (a field another writer left out reads empty)
            at = self.failed_at
            object.__setattr__(self, "failed_at", FailedAt(str(at.get("stage") or ""), str(at.get("op") or ""),
                                                           str(at.get("loc") or "")))

    def to_json(self) -> dict[str, Any]:
        """The record as JSON writes it: base fields, then the set optional
        fields, then ``extra``."""
        out: dict[str, Any] = {
            "id": self.id, "file": self.file, "function": self.function, "line": self.line,
            "status": self.status.value, "message": self.message, "family": self.family,
            "ops": list(self.ops), "dtypes": list(self.dtypes), "duration": self.duration, "checks": self.checks,
        }
        for name in _OPTIONAL:
            if name == "verdict" and self.verdict_last:
                continue
            v = getattr(self, name)
            if v is not None:
                out[name] = list(v) if name == "disagreements" else v.to_json() if name == "failed_at" else v
        if self.verdict_last and self.verdict is not None:
            out["verdict"] = self.verdict
        out.update(self.extra)
        return out

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Result:
        """The result of a record :meth:`to_json` wrote (a stream's or a
        results file's line); unknown fields go to ``extra``."""
        names = {f.name for f in fields(cls)} - {"extra", "verdict_last"}
        known = {k: v for k, v in obj.items() if k in names}
        extra = tuple((k, v) for k, v in obj.items() if k not in names)
        keys = list(obj)
        last = ("verdict" in obj and "compare" in obj and keys.index("verdict") > keys.index("compare"))
        return cls(**known, extra=extra, verdict_last=last)

    @property
    def passed(self) -> bool:
        return self.status is Status.PASS


def new_result(path: str, test_id: str, func: str, line: int, **fields: Any) -> Result:
    """A test's result before it runs: ``error`` with no message."""
    return Result(id=test_id, file=path, function=func, line=line, **fields)


@dataclass(frozen=True)
class Outcome:
    """What a backend's ``run_test`` gives: the status of the test's checks,
    their number, the first failures' text, and what the program printed."""

    status: Status
    checks: int = 0
    message: str = ""
    output: str | None = None

    @classmethod
    def of(cls, value: Outcome | dict[str, Any]) -> Outcome:
        """An :class:`Outcome` from a backend's answer: one already, or the
        partial record (``status``, ``message``, ``checks``, ``output``)
        backends of plugins written against the older interface return."""
        if isinstance(value, Outcome):
            return value
        return cls(status=Status(value["status"]), checks=value.get("checks", 0),
                   message=value.get("message", ""), output=value.get("output"))

    def apply(self, result: Result) -> Result:
        """``result`` with this outcome's fields."""
        return replace(result, status=self.status, checks=self.checks, message=self.message,
                       output=self.output if self.output is not None else result.output)


@dataclass(frozen=True)
class Failure:
    """What every report says of a test that did not pass: its id and status,
    where it is (``file:line``, empty when the record has no file), the
    backend, ops and element types, the message (stripped), its first line
    and the whole message with one detail a line (the checks' ``; `` separators broken)."""

    id: str
    status: str
    where: str
    backend: str
    ops: tuple[str, ...]
    dtypes: tuple[str, ...]
    message: str
    first: str
    body: str

    def headline(self, limit: int = 300) -> str:
        """The message's first line, cut to ``limit`` characters (``...`` ending a cut one)."""
        return self.first if len(self.first) <= limit else self.first[: limit - 3] + "..."


def describe_failure(result: Result | dict[str, Any]) -> Failure:
    """The one description of a failure that JUnit, the pytest plugin and
    the text summaries render. Takes a :class:`Result` or its JSON record
    (reports also read records of older streams, which may lack fields)."""
    rec = result.to_json() if isinstance(result, Result) else result
    msg = (rec.get("message") or "").strip()
    return Failure(
        id=rec["id"], status=str(rec["status"]),
        where=f"{rec.get('file', '')}:{rec.get('line', '')}" if rec.get("file") else "",
        backend=rec.get("backend") or "", ops=tuple(rec.get("ops") or ()), dtypes=tuple(rec.get("dtypes") or ()),
        message=msg, first=msg.splitlines()[0] if msg else "",
        body=msg.replace("; ", "\n"))
