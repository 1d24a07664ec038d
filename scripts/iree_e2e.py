"""Run IREE's end-to-end StableHLO test files (a folder holding copies of
``tests/e2e/stablehlo_ops``, ``tests/e2e/regression/stablehlo`` and
``tests/e2e/vulkan_specific``) through ``conform run`` and print the tally per
test function: passed, carrying the implementation-defined verdict (a failing
check of values the spec leaves to the implementation, ``spec silent``), and
every other one with its status and reason. Nothing is downloaded.

    python scripts/iree_e2e.py FOLDER [--backend numpy] [-j N] [--json OUT]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from stablehlo_conform import iree_format


def implementation_defined(rec: dict) -> bool:
    """A failing test whose every judged check is on implementation-defined
    values and within what the spec fixes."""
    v = rec.get("verdict") or {}
    checks = v.get("checks") or []
    return rec["status"] == "fail" and v.get("verdict") == "spec silent" and bool(checks) and all(
        (c.get("accuracy") or {}).get("kind") == "implementation-defined" for c in checks)


def functions_of(rec: dict) -> int:
    """Test functions a record stands for: one, or every test function of a
    file (or chunk) that did not load as a whole."""
    if rec.get("function"):
        return 1
    try:
        text = Path(rec["file"]).read_text()
    except OSError:
        return 1
    return max(1, sum(s.is_test for s in iree_format.function_spans(text)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder")
    ap.add_argument("--backend", default="numpy")
    ap.add_argument("-j", "--jobs", type=int, default=1)
    ap.add_argument("--json", help="also write conform's JSON results here")
    args = ap.parse_args(argv)
    if not Path(args.folder).is_dir():
        print(f"error: not a folder: {args.folder}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        out = args.json or os.path.join(tmp, "results.json")
        r = subprocess.run([sys.executable, "-m", "stablehlo_conform.cli", "run", args.folder, "--json", out, "-q",
                            "--backend", args.backend, "-j", str(args.jobs)], capture_output=True, text=True)
        if not os.path.exists(out):
            print(r.stdout + r.stderr, file=sys.stderr)
            return 1
        results = json.loads(Path(out).read_text())["results"]
    tally: collections.Counter = collections.Counter()
    others = []
    for rec in results:
        n = functions_of(rec)
        kind = "pass" if rec["status"] == "pass" else \
            "implementation-defined" if implementation_defined(rec) else rec["status"]
        tally[kind] += n
        if kind not in ("pass", "implementation-defined"):
            others.append((rec, n))
    total = sum(tally.values())
    ok = tally["pass"] + tally["implementation-defined"]
    print(f"{total} test functions in {len({r['file'] for r in results})} files ({args.backend}): "
          f"{tally['pass']} pass, {tally['implementation-defined']} implementation-defined (spec silent), "
          f"{total - ok} other")
    for rec, n in others:
        first = (rec.get("message") or "").splitlines()[:1]
        print(f"  {rec['status']:11} {rec['id']}" + (f" ({n} functions)" if n > 1 else "") +
              (f": {first[0][:200]}" if first else ""))
    print(f"{ok}/{total} pass or carry the implementation-defined verdict")
    return 0


if __name__ == "__main__":
    sys.exit(main())
