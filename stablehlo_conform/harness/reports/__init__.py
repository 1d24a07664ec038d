"""Reports of a run: JUnit XML, a self-contained HTML page, text summaries.

Every report reads the records of ``conform run --json`` (one dict per test
with ``id``, ``status``, ``message``, ``family``, ``dtypes``, ``backend``...).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ..records.guard import GuardError, read_input_text
from ..records.stream import StreamError, check_result, read_stream


class ReportError(ValueError):
    """A results file that cannot be read."""


# fields of a results document the reports read: the types they must have
_RUN_FIELDS = (
    ("backend", (str, type(None)), "a string"),
    ("complete", (bool, type(None)), "true or false"),
    ("interrupted", (str, type(None)), "a string"),
    ("not_run", (dict, type(None)), "an object"),
    ("shard", (dict, type(None)), "an object"),
    ("wall_time", (int, float, type(None)), "a number"),
    ("paths", (list, type(None)), "a list"),
    ("missing_shards", (list, type(None)), "a list"),
)


def load_results(path: str | Path) -> dict[str, Any]:
    """A ``conform run --json`` document (``results`` list and ``backend``);
    a ``--jsonl`` stream is accepted too (a stream with a header but no end
    record is the record of a run that did not finish: ``complete`` False)."""
    p = Path(path)
    try:
        text = read_input_text(p, kind="conform results file")
    except GuardError as e:
        raise ReportError(str(e)) from None
    try:
        doc = json.loads(text)
    except RecursionError:
        raise ReportError(f"{path}: not a conform results file: JSON nested too deeply") from None
    except json.JSONDecodeError:
        doc = None
    if doc is None or (isinstance(doc, dict) and doc.get("kind") == "header"):
        try:  # a --jsonl stream
            stream = read_stream(p)
        except StreamError as e:
            raise ReportError(f"{path}: not a conform results file: {e}") from None
        doc = {"results": stream.records}
        if stream.header is not None:
            end = stream.end or {}
            doc.update(backend=stream.header["settings"].get("backend"), complete=bool(end.get("complete")),
                       interrupted=end.get("interrupted"), not_run=end.get("not_run"),
                       shard=stream.header["settings"].get("shard"))
    if isinstance(doc, list):
        doc = {"results": doc}
    if isinstance(doc, dict) and "results" not in doc and "id" in doc:
        doc = {"results": [doc]}
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise ReportError(f"{path}: not a conform results file (no 'results' list)")
    for r in doc["results"]:
        why = check_result(r)
        if why is not None:
            raise ReportError(f"{path}: {why}" if "needs a string" not in why else
                              f"{path}: a result lacks 'id' or 'status'")
    for name, types, what in _RUN_FIELDS:
        v = doc.get(name)
        if not isinstance(v, types) or (isinstance(v, bool) and bool not in types):
            raise ReportError(f"{path}: field {name!r} must be {what}, not {type(doc.get(name)).__name__}")
        if isinstance(v, float) and not math.isfinite(v):
            raise ReportError(f"{path}: field {name!r} must be a finite number, not {v}")
    for name in ("not_run",):
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (doc.get(name) or {}).values()):
            raise ReportError(f"{path}: field {name!r} must map to counts")
    shard = doc.get("shard")
    if shard and (not isinstance(shard.get("universe"), str) or not all(
            isinstance(shard.get(k), int) and not isinstance(shard.get(k), bool) for k in ("index", "count"))):
        raise ReportError(f"{path}: field 'shard' must hold an integer 'index' and 'count' and a string 'universe'")
    if not doc.get("backend"):
        backends = {r.get("backend") for r in doc["results"] if r.get("backend")}
        doc["backend"] = backends.pop() if len(backends) == 1 else p.stem
    doc.setdefault("source", str(p))
    return doc


def incomplete_note(run: dict) -> str | None:
    """``None`` for a finished run; else what every report says of a run
    that did not finish (interrupted, or a stream without its end)."""
    if run.get("complete", True):
        return None
    why = (f"interrupted by {run['interrupted']}" if run.get("interrupted")
           else "merged from shards, not all present" if run.get("missing_shards") else "did not finish")
    nr = run.get("not_run") or {}
    parts = []
    if nr.get("tests"):
        parts.append(f"{nr['tests']} selected tests not run")
    if nr.get("files"):
        parts.append(f"{nr['files']} files not loaded (their tests are not counted)")
    if nr.get("bundles"):
        parts.append(f"{nr['bundles']} repro bundles not written")
    if run.get("missing_shards"):
        parts.append(f"shards missing: {', '.join(run['missing_shards'])} (their tests are not counted)")
    elif not nr:
        parts.append("tests not run unknown")
    return f"run INCOMPLETE ({why}): {', '.join(parts) or '0 tests not run'}"


__all__ = ["ReportError", "incomplete_note", "load_results"]
