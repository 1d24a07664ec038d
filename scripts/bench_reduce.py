#!/usr/bin/env python
"""Times ``conform reduce`` on the planted bugs of ``tests/test_reduce.py``.

Installs the test's planted backends (an ``exponential`` off by 3 ULP on f32
inside ``while`` bodies; a ``cosine`` calling ``abort()``) as a plugin in a
temporary folder, writes the test's programs (the 252-op MLP with a while loop;
the 26-op chain) and reduces each with a fresh ``conform`` process, printing
wall time, candidates and op counts (terminators not counted).

    python scripts/bench_reduce.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from test_reduce import BACKENDS, crash_program, mlp_program  # noqa: E402


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        site = tmp / "site"
        info = site / "planted_reduce-0.1.dist-info"
        info.mkdir(parents=True)
        (site / "planted_reduce.py").write_text(BACKENDS)
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: planted-reduce\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text("[stablehlo_conform.backends]\nloopexp = planted_reduce:LoopExp\n"
                                               "abortcos = planted_reduce:AbortCos\n")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
        cases = [("while/exponential 3 ULP", mlp_program(), ["--backends", "numpy,loopexp"]),
                 ("abort on cosine", crash_program(), ["--backends", "numpy,abortcos", "--property", "crash"])]
        for label, text, args in cases:
            prog = tmp / "p.mlir"
            prog.write_text(text)
            t0 = time.perf_counter()
            p = subprocess.run([sys.executable, "-m", "stablehlo_conform.cli", "reduce", str(prog), *args,
                                "-o", str(tmp / "out"), "-q"], env=env, capture_output=True, text=True, cwd=tmp)
            wall = time.perf_counter() - t0
            print(f"{label:<26} {wall:6.1f} s  {p.stdout.splitlines()[0] if p.stdout else p.stderr[-300:]}")


if __name__ == "__main__":
    main()
