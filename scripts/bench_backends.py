#!/usr/bin/env python3
"""Per-test overhead of a PJRT plugin (``pjrt:``) against the built-in ``xla``
backend, on the testdata suite, in one run.

    python scripts/bench_backends.py [PLUGIN.so] [--suite DIR] [--jobs 2]

PLUGIN.so defaults to the ``lammps-jax-pjrt-cpu`` package's XLA CPU plugin
when it is installed (``pip install --no-deps lammps-jax-pjrt-cpu``). Both
backends run the same programs through the same code (jaxlib's PJRT client
in a child process), so the difference is the plugin's: loading it, the
re-serialization of each program to the plugin's StableHLO version, and its
compiler and runtime. Prints wall time, summed per-test time (compile +
transfer + execute + checks, as recorded in each test's ``duration``), the
mean per test, and the pjrt/xla ratios.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_suite import DEFAULT_SUITE, run_backend  # noqa: E402


def default_plugin() -> str | None:
    spec = importlib.util.find_spec("lammps_jax_pjrt_cpu")
    so = Path(spec.origin).parent / "pjrt_c_api_cpu_plugin.so" if spec and spec.origin else None
    return str(so) if so and so.is_file() else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("plugin", nargs="?", default=default_plugin())
    ap.add_argument("--suite", default=str(DEFAULT_SUITE))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=120)
    args = ap.parse_args()
    if not args.plugin or not Path(args.plugin).is_file():
        print("no plugin: give PLUGIN.so or pip install --no-deps lammps-jax-pjrt-cpu")
        return 2
    suite = Path(args.suite)
    if not suite.exists():
        print(f"suite not found: {suite}")
        return 2
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, backend in (("xla", "xla"), ("pjrt", f"pjrt:{args.plugin}")):
            wall, doc = run_backend(suite, backend, args.jobs, args.timeout, Path(tmp) / f"{label}.json")
            durations = [float(r.get("duration") or 0.0) for r in doc.get("results", [])]
            rows[label] = (wall, sum(durations), len(durations), doc.get("summary", {}))
            print(f"ran {label}: {wall:.1f} s", flush=True)
    print(f"\nsuite: {suite}  (--jobs {args.jobs}); plugin: {args.plugin}\n")
    print(f"{'backend':<8} {'wall s':>8} {'tests':>6} {'pass':>6} {'sum of tests s':>15} {'per test ms':>12}")
    for label, (wall, total, n, s) in rows.items():
        print(f"{label:<8} {wall:>8.1f} {n:>6} {s.get('pass', 0):>6} {total:>15.1f} {1e3 * total / max(n, 1):>12.2f}")
    (xw, xt, xn, _), (pw, pt, pn, _) = rows["xla"], rows["pjrt"]
    print(f"\npjrt/xla wall-time ratio: {pw / xw:.2f}")
    if xt > 0 and xn and pn:
        print(f"pjrt/xla per-test time ratio: {(pt / pn) / (xt / xn):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
