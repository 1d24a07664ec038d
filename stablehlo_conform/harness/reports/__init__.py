"""Reports of a run: JUnit XML, a self-contained HTML page, text summaries.

Every report reads the records of ``conform run --json`` (one dict per test
with ``id``, ``status``, ``message``, ``family``, ``dtypes``, ``backend``...).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class ReportError(ValueError):
    """A results file that cannot be read."""


def load_results(path: str | Path) -> dict[str, Any]:
    """A ``conform run --json`` document (``results`` list and ``backend``);
    a ``--jsonl`` stream (one record per line) is accepted too."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ReportError(f"cannot read {path}: {e}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        try:  # a --jsonl stream
            doc = {"results": [json.loads(ln) for ln in text.splitlines() if ln.strip()]}
        except json.JSONDecodeError as e:
            raise ReportError(f"{path}: not a conform results file: {e}") from None
    if isinstance(doc, list):
        doc = {"results": doc}
    if isinstance(doc, dict) and "results" not in doc and "id" in doc:
        doc = {"results": [doc]}
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise ReportError(f"{path}: not a conform results file (no 'results' list)")
    for r in doc["results"]:
        if not isinstance(r, dict) or "id" not in r or "status" not in r:
            raise ReportError(f"{path}: a result lacks 'id' or 'status'")
    if not doc.get("backend"):
        backends = {r.get("backend") for r in doc["results"] if r.get("backend")}
        doc["backend"] = backends.pop() if len(backends) == 1 else p.stem
    doc.setdefault("source", str(p))
    return doc


__all__ = ["ReportError", "load_results"]
