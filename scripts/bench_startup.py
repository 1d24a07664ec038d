#!/usr/bin/env python3
"""Cold start: wall time of ``conform run`` on one small file (new process each time).

    python scripts/bench_startup.py [FILE] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SMALL = """func.func @t() {
  %0 = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  %1 = stablehlo.add %0, %0 : tensor<2xi32>
  check.expect_eq_const %1, dense<[2, 4]> : tensor<2xi32>
  func.return
}
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", nargs="?")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.file) if args.file else Path(tmp) / "small.mlir"
        if not args.file:
            path.write_text(SMALL)
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            r = subprocess.run([sys.executable, "-m", "stablehlo_conform.cli", "run", str(path), "-q"],
                               capture_output=True, text=True)
            times.append(time.perf_counter() - t0)
            if r.returncode not in (0, 1):
                print(r.stdout, r.stderr)
                return 1
    print(f"conform run {path.name}: median {statistics.median(times):.2f} s, "
          f"min {min(times):.2f} s over {len(times)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
