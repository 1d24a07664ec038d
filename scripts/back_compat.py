"""Run JAX's backward-compatibility test programs through ``conform eval``'s
path and print one row per program: status and how it was compared.

    python scripts/back_compat.py [--platform cpu] [--backend numpy] [-k PATTERN] [--summary]
"""

from __future__ import annotations

import argparse
import collections
import sys
import time

from stablehlo_conform.harness.suite import back_compat


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--platform", action="append", help="cpu, cuda, rocm, tpu (default: all)")
    ap.add_argument("--backend", default="numpy")
    ap.add_argument("-k", dest="pattern", default="")
    ap.add_argument("--summary", action="store_true", help="one row per program family")
    args = ap.parse_args(argv)
    cases = [c for c in back_compat.cases()
             if (not args.platform or c.platform in args.platform) and args.pattern in c.name]
    if not cases:
        print("no cases (is jax installed?)", file=sys.stderr)
        return 1
    t0 = time.perf_counter()
    outcomes = [back_compat.run_case(c, backend=args.backend) for c in cases]
    wall = time.perf_counter() - t0
    if args.summary:
        groups: dict[tuple, list] = collections.defaultdict(list)
        for o in outcomes:
            groups[(o.case.platform, o.case.name.split("/")[0], o.compared.split(":")[0])].append(o)
        print(f"{'platform':8} {'program':40} {'n':>3} {'pass':>4}  compared  other")
        for (plat, mod, how), os_ in groups.items():
            npass = sum(o.status == "pass" for o in os_)
            other = "; ".join(sorted({f"{o.status}: {o.detail[:90]}" for o in os_ if o.status != "pass"}))
            print(f"{plat:8} {mod:40} {len(os_):>3} {npass:>4}  {how:8}  {other}")
    else:
        for o in outcomes:
            print(f"{o.case.platform:5} {o.status:11} {o.case.name:55} {o.compared.split(':')[0]:8} {o.detail[:150]}")
    counts = collections.Counter(o.status for o in outcomes)
    by_platform = collections.Counter((o.case.platform, o.status) for o in outcomes)
    print(f"\n{len(outcomes)} programs in {wall:.1f} s: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    for plat in sorted({o.case.platform for o in outcomes}):
        print(f"  {plat}: " + ", ".join(f"{s} {n}" for (p, s), n in sorted(by_platform.items()) if p == plat))
    return 0 if counts.get("pass", 0) == len(outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
