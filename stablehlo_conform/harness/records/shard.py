"""Splitting a run into shards and merging the shards' results.

``--shard K/N`` (``1 <= K <= N``) keeps shard ``K`` of ``N``:

- ``conform run``: a test belongs to shard ``1 + sha256(test id) mod N``, so
  the split depends only on the ids (not on the order files are found or on
  which machine runs it) and every test is in exactly one shard;
- ``conform fuzz``: program ``i`` belongs to shard ``1 + i mod N`` (program
  ``i`` of a seed is the same in every shard).

Each shard's results file records ``shard``: ``{"index": K, "count": N,
"universe": ..., "universe_size": ...}`` where the universe names what was
split (a hash of the sorted input files and the settings for ``run``; the
seed and count for ``fuzz``), so that :func:`merge_shards` can tell shards of
one run from shards of different runs and say which shards are missing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from typing import Any


class ShardError(ValueError):
    """A malformed ``--shard`` or shards that do not belong together."""


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """``"K/N"`` -> ``(K, N)``; None for None or empty."""
    if not text:
        return None
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise ShardError(f"--shard {text!r}: expected K/N, e.g. 2/4") from None
    if n < 1 or not 1 <= k <= n:
        raise ShardError(f"--shard {text!r}: K must be between 1 and N")
    return k, n


def shard_of_id(test_id: str, count: int) -> int:
    """The shard (1-based) of a test id among ``count`` shards."""
    h = hashlib.sha256(test_id.encode("utf-8", "surrogatepass")).digest()
    return 1 + int.from_bytes(h[:8], "big") % count


def in_shard(test_id: str, shard: tuple[int, int] | None) -> bool:
    return shard is None or shard_of_id(test_id, shard[1]) == shard[0]


def indices(count: int, shard: tuple[int, int] | None) -> range:
    """Program indices of shard ``K/N`` among ``count`` programs."""
    if shard is None:
        return range(count)
    return range(shard[0] - 1, count, shard[1])


def universe_hash(items: Iterable[str], settings: dict[str, Any] | None = None) -> str:
    h = hashlib.sha256()
    for s in sorted(items):
        h.update(s.encode("utf-8", "surrogatepass") + b"\0")
    h.update(json.dumps(settings or {}, sort_keys=True, default=str).encode())
    return h.hexdigest()[:16]


def shard_info(shard: tuple[int, int] | None, universe: str, size: int) -> dict[str, Any] | None:
    if shard is None:
        return None
    return {"index": shard[0], "count": shard[1], "universe": universe, "universe_size": size}


def merge_shards(runs: Sequence[dict]) -> tuple[list[dict], list[str]]:
    """Runs that are shards of one run (same ``universe`` and ``count``, and
    the same backend) become one run; runs without shard info stay as they
    are. Returns ``(runs, notes)``; a note says which shards are missing or
    repeated, or that shards do not belong together."""
    groups: dict[tuple, list[dict]] = {}
    out: list[dict] = []
    notes: list[str] = []
    for run in runs:
        info = run.get("shard")
        if not info:
            out.append(run)
            continue
        groups.setdefault((run.get("backend"), info["universe"], info["count"]), []).append(run)
    for (backend, universe, count), shards in groups.items():
        have: dict[int, dict] = {}
        for s in shards:
            k = s["shard"]["index"]
            if k in have:
                notes.append(f"shard {k}/{count} of {backend} appears twice ({have[k].get('source')}, "
                             f"{s.get('source')}); the second is ignored")
                continue
            have[k] = s
        missing = [k for k in range(1, count + 1) if k not in have]
        parts = [have[k] for k in sorted(have)]
        merged = dict(parts[0])
        merged["results"] = [r for p in parts for r in p["results"]]
        merged["source"] = ", ".join(str(p.get("source")) for p in parts)
        merged["complete"] = not missing and all(p.get("complete", True) for p in parts)
        merged["shard"] = {"count": count, "universe": universe, "merged": sorted(have), "missing": missing}
        not_run: dict[str, int] = {}
        for p in parts:
            for key, v in (p.get("not_run") or {}).items():
                not_run[key] = not_run.get(key, 0) + int(v)
        merged["not_run"] = not_run
        interrupted = [p.get("interrupted") for p in parts if p.get("interrupted")]
        merged["interrupted"] = interrupted[0] if interrupted else None
        if missing:
            merged["missing_shards"] = [f"{k}/{count}" for k in missing]
            notes.append(f"{backend}: shards missing: {', '.join(merged['missing_shards'])} "
                         f"(merged {len(parts)} of {count}; their results are not counted)")
        if "summary" in merged:
            merged["summary"] = _summary(merged["results"])
        out.append(merged)
    if len({i for (_b, i, _c) in groups}) > 1 and len({b for (b, _i, _c) in groups}) == 1:
        notes.append("shards of different runs (other files, settings or shard counts) were given; "
                     "each run is reported on its own")
    return out, notes


def _summary(results: Sequence[dict]) -> dict[str, int]:
    counts: dict[str, int] = {"total": len(results)}
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    return counts
