#!/usr/bin/env python3
"""Suite-level benchmark: one suite on several backends, in one run.

    python scripts/bench_suite.py [SUITE] [--backends numpy,reference,xla] [--jobs 2]

Runs ``conform run SUITE --jobs N --backend B --json`` for each backend, one
after the other on the same machine, and prints the wall time per backend, the
ratios numpy/<other>, the status counts, and the slowest op families on numpy
(summed test durations).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SUITE = ROOT / ".." / "shared" / "stablehlo-suite" / "testdata"


def run_backend(suite: Path, backend: str, jobs: int, timeout: float, out: Path) -> tuple[float, dict]:
    cmd = [sys.executable, "-m", "stablehlo_conform.cli", "run", str(suite), "-q", "--jobs", str(jobs),
           "--backend", backend, "--timeout", str(timeout), "--json", str(out)]
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - t0
    doc = json.loads(out.read_text()) if out.exists() else {"summary": {}, "results": []}
    return wall, doc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("suite", nargs="?", default=str(DEFAULT_SUITE))
    ap.add_argument("--backends", default="numpy,reference,xla")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--top", type=int, default=10)
    args = ap.parse_args()
    suite = Path(args.suite)
    if not suite.exists():
        print(f"suite not found: {suite}")
        return 2
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    walls: dict[str, float] = {}
    docs: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for b in backends:
            walls[b], docs[b] = run_backend(suite, b, args.jobs, args.timeout, Path(tmp) / f"{b}.json")
            print(f"ran {b}: {walls[b]:.1f} s", flush=True)
    print(f"\nsuite: {suite}  (--jobs {args.jobs})\n")
    print(f"{'backend':<12} {'wall s':>8} {'tests':>6} {'pass':>6} {'fail':>6} {'error':>6} "
          f"{'unsup':>6} {'crash':>6} {'timeout':>7}")
    for b in backends:
        s = docs[b].get("summary", {})
        print(f"{b:<12} {walls[b]:>8.1f} {s.get('total', 0):>6} {s.get('pass', 0):>6} {s.get('fail', 0):>6} "
              f"{s.get('error', 0):>6} {s.get('unsupported', 0):>6} {s.get('crash', 0):>6} "
              f"{s.get('timeout', 0):>7}")
    if "numpy" in walls:
        print()
        for b in backends:
            if b != "numpy" and walls[b] > 0:
                print(f"numpy/{b} wall-time ratio: {walls['numpy'] / walls[b]:.2f}")
        fam: dict[str, float] = defaultdict(float)
        for r in docs["numpy"].get("results", []):
            fam[r.get("family") or "other"] += float(r.get("duration") or 0.0)
        print("\nslowest op families on numpy (summed test time):")
        for name, t in sorted(fam.items(), key=lambda kv: -kv[1])[: args.top]:
            print(f"  {name:<40} {t:8.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
