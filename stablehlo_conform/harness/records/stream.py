"""The ``--jsonl`` result stream: one JSON object per line.

The first line is a header naming the settings the results depend on
(backend, compared backends, time and memory budgets, ``-k`` pattern and
the paths run); then one result record per line as it arrives; the last line
is an end record saying whether the run finished and how much it left
undone. A run killed outright leaves no end record, and may leave its last
line cut short: reading tolerates (and resuming repairs) a cut last line
only; anything else malformed is a :class:`StreamError` naming the file and
the line.

A line is a header or an end record by its ``kind``; any other line is a
result, whatever else it carries (results of programs name their ``kind`` of
case: ``args``, ``generated``, ``iree``). The fields every report reads
must have their type (:func:`check_result`). The same line reading (a cut
last line tolerated, :func:`repair` to cut it off) serves every JSON Lines
file the tool appends to (:func:`read_lines`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .guard import GuardError, read_input

STREAM_FORMAT = "stablehlo-conform-stream"
STREAM_VERSION = 1

# result fields the reports, the triage and the gates read: the types they must have
_TEXT = (str, type(None))
_NUMBER = (int, float, type(None))
_RESULT_FIELDS: dict[str, tuple[tuple[type, ...], str]] = {
    "message": (_TEXT, "a string"),
    "family": (_TEXT, "a string"),
    "file": (_TEXT, "a string"),
    "function": (_TEXT, "a string"),
    "backend": (_TEXT, "a string"),
    "kind": (_TEXT, "a string"),
    "line": ((int, type(None)), "an integer"),
    "checks": ((int, type(None)), "an integer"),
    "duration": (_NUMBER, "a number"),
    "dtypes": ((list, type(None)), "a list of strings"),
    "ops": ((list, str, type(None)), "a list of strings"),
    "verdict": ((dict, type(None)), "an object"),
    "compare": ((dict, type(None)), "an object"),
    "disagreements": ((list, type(None)), "a list of strings"),
}


class StreamError(ValueError):
    """A stream that cannot be read or continued (a usage error)."""


def header_record(settings: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "header", "format": STREAM_FORMAT, "version": STREAM_VERSION, "settings": settings}


def end_record(complete: bool, interrupted: str | None, not_run: dict[str, int]) -> dict[str, Any]:
    return {"kind": "end", "complete": complete, "interrupted": interrupted, "not_run": not_run}


@dataclass
class Stream:
    """What a stream file holds. ``good_bytes``: length of the prefix made of
    whole lines (what a resumed run keeps); ``newline``: the last kept line
    lacks its newline."""

    header: dict[str, Any] | None = None
    records: list[dict] = field(default_factory=list)
    end: dict[str, Any] | None = None
    good_bytes: int = 0
    newline: bool = False
    cut: bool = False


def check_result(rec: Any) -> str | None:
    """Why ``rec`` is not a result record (None: it is one): an object with a
    string ``id`` and ``status``, and the fields reports read of their type."""
    if not isinstance(rec, dict):
        return f"a result must be a JSON object, not {type(rec).__name__}"
    if not isinstance(rec.get("id"), str) or not isinstance(rec.get("status"), str):
        return "a result needs a string 'id' and 'status'"
    for name, (types, what) in _RESULT_FIELDS.items():
        v = rec.get(name)
        if not isinstance(v, types) or isinstance(v, bool):
            return f"result {rec['id']!r}: field {name!r} must be {what}, not {type(v).__name__}"
        if isinstance(v, float) and not math.isfinite(v):  # NaN, Infinity: no report can show or sum them
            return f"result {rec['id']!r}: field {name!r} must be a finite number, not {v}"
        if isinstance(v, list) and not all(isinstance(x, str) for x in v):
            return f"result {rec['id']!r}: field {name!r} must be {what}"
    return None


@dataclass
class Lines:
    """The JSON values of a JSON Lines file, by line number; ``good_bytes``,
    ``newline``, ``cut`` as in :class:`Stream`."""

    values: list[tuple[int, Any]] = field(default_factory=list)
    good_bytes: int = 0
    newline: bool = False
    cut: bool = False


def read_lines(path: str | Path, what: str = "") -> Lines:
    """Every line of a JSON Lines file the tool appends to, read as an input
    (a regular file within the bound, see :mod:`.guard`). A last line that
    is not whole JSON is the one a killed run was writing: it is left out
    (``cut``); any other bad line is a :class:`StreamError`."""
    try:
        raw = read_input(path, what)
    except GuardError as e:
        raise StreamError(str(e)) from None
    out = Lines()
    pos = 0
    lineno = 0
    while pos < len(raw):
        nl = raw.find(b"\n", pos)
        last = nl < 0
        end = len(raw) if last else nl + 1
        line = raw[pos:end]
        lineno += 1
        try:
            obj = json.loads(line.decode("utf-8")) if line.strip() else None
        except (UnicodeDecodeError, ValueError, RecursionError) as e:
            if last:  # the line a killed run was writing
                out.cut = True
                break
            why = "not UTF-8 text" if isinstance(e, UnicodeDecodeError) else \
                "nested too deeply" if isinstance(e, RecursionError) else f"not valid JSON ({e})"
            raise StreamError(f"{path}: line {lineno}: {why}") from None
        if obj is not None:
            out.values.append((lineno, obj))
        out.good_bytes = end
        out.newline = last
        pos = end
    return out


def read_stream(path: str | Path) -> Stream:
    lines = read_lines(path)
    out = Stream(good_bytes=lines.good_bytes, newline=lines.newline, cut=lines.cut)
    for lineno, obj in lines.values:
        _take(out, obj, path, lineno)
    return out


def _take(out: Stream, obj: Any, path: str | Path, lineno: int) -> None:
    if not isinstance(obj, dict):
        raise StreamError(f"{path}: line {lineno}: a record must be a JSON object, not {type(obj).__name__}")
    kind = obj.get("kind")
    if kind == "header":
        if lineno != 1 or obj.get("format") != STREAM_FORMAT or not isinstance(obj.get("settings"), dict):
            raise StreamError(f"{path}: line {lineno}: a stream header must be the first line, "
                              f"with format {STREAM_FORMAT!r} and settings")
        out.header = obj
    elif kind == "end":
        if not isinstance(obj.get("not_run") or {}, dict) or \
                not all(isinstance(v, int) for v in (obj.get("not_run") or {}).values()):
            raise StreamError(f"{path}: line {lineno}: an end record's 'not_run' must map to counts")
        out.end = obj
    else:
        why = check_result(obj)
        if why is not None:
            if "id" not in obj and "status" not in obj and kind is not None:
                why = f"unknown record kind {kind!r}"
            raise StreamError(f"{path}: line {lineno}: {why}")
        out.records.append(obj)
        out.end = None  # results after an end record: a resumed run that has not ended


def check_resumable(stream: Stream, path: str | Path, settings: dict[str, Any]) -> None:
    """Raise :class:`StreamError` unless ``stream`` was written with the same
    ``settings`` (an empty stream, or one cut inside its header, is new)."""
    if stream.header is None:
        if stream.records:
            raise StreamError(f"{path}: the stream has no header line, so the settings it was written "
                              "with are unknown; start a new stream (run without --resume)")
        return
    old = stream.header["settings"]
    diffs = [f"{k} {old.get(k)!r} (this run: {settings.get(k)!r})"
             for k in sorted(set(old) | set(settings)) if old.get(k) != settings.get(k)]
    if diffs:
        raise StreamError(f"{path} was written with other settings: {'; '.join(diffs)}; resume with the "
                          "same backend, paths and options, or start a new stream (run without --resume)")


def repair(path: str | Path, stream: Stream | Lines) -> None:
    """Cut what follows the last whole line and end that line."""
    with open(path, "r+b") as f:
        f.truncate(stream.good_bytes)
        if stream.newline:
            f.seek(0, 2)
            f.write(b"\n")
