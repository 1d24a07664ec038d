"""The ``--jsonl`` result stream: one JSON object per line.

The first line is a header naming the settings the results depend on
(backend, compared backends, time and memory budgets, ``-k`` pattern and
the paths run); then one result record per line as it arrives; the last line
is an end record saying whether the run finished and how much it left
undone. A run killed outright leaves no end record, and may leave its last
line cut short: reading tolerates (and resuming repairs) a cut last line
only; anything else malformed is a :class:`StreamError` naming the file and
the line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STREAM_FORMAT = "stablehlo-conform-stream"
STREAM_VERSION = 1


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


def read_stream(path: str | Path) -> Stream:
    try:
        raw = Path(path).read_bytes()
    except OSError as e:
        raise StreamError(f"cannot read {path}: {e.strerror or e}") from None
    out = Stream()
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
            _take(out, obj, path, lineno)
        out.good_bytes = end
        out.newline = last
        pos = end
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
        out.end = obj
    elif kind is not None:
        raise StreamError(f"{path}: line {lineno}: unknown record kind {kind!r}")
    elif not isinstance(obj.get("id"), str) or not isinstance(obj.get("status"), str):
        raise StreamError(f"{path}: line {lineno}: a result needs a string 'id' and 'status'")
    else:
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


def repair(path: str | Path, stream: Stream) -> None:
    """Cut what follows the last whole line and end that line."""
    with open(path, "r+b") as f:
        f.truncate(stream.good_bytes)
        if stream.newline:
            f.seek(0, 2)
            f.write(b"\n")
