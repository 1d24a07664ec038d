"""Export ``jnp.linalg`` / ``jax.scipy.linalg`` functions over f32/f64/c64/c128
as StableHLO programs (CPU: LAPACK custom calls), run each through
``stablehlo_conform.evaluate`` and check it against ``jax.jit``.

    python scripts/gen_linalg.py [--platform cpu|cuda|rocm ...] [--out DIR] [-k NAME] [--backend numpy]

``--platform cuda``/``rocm`` exports the GPU lowering (cuSOLVER/hipSOLVER
custom calls; no GPU needed) and checks it against ``jax.jit`` on this
machine; functions JAX does not lower for a platform are listed as ``n/a``.
With ``--out`` every program is written as ``NAME_DTYPE_PLATFORM.mlir`` next
to its inputs ``.npz`` (``arg0``, ...; runnable with ``conform eval``).
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

import numpy as np

from stablehlo_conform import evaluate
from stablehlo_conform.harness.suite import jax_linalg


def run_one(name: str, dt: str, platform: str, args) -> str:
    try:
        prog = jax_linalg.export(name, dt, platform=platform)
    except Exception as e:  # JAX has no lowering of it for this platform
        print(f"n/a   {name:18} {dt:10} {platform:5} {str(e).splitlines()[0][:100]}")
        return "n/a"
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        stem = args.out / f"{name}_{dt}_{platform}"
        stem.with_suffix(".mlir").write_text(prog.text)
        np.savez(stem.with_suffix(".npz"), **{f"arg{i}": x for i, x in enumerate(prog.inputs)})
    try:
        got = evaluate(prog.text, *prog.inputs, backend=args.backend)
        how, msg = jax_linalg.check(prog, got)
        status = "fail" if msg else "pass"
    except Exception as e:  # reported, the run goes on
        how, msg, status = "-", f"{type(e).__name__}: {e}", "error"
    tg = ",".join(jax_linalg.targets(prog.text))
    print(f"{status:5} {name:18} {dt:10} {platform:5} {how.split(':')[0]:8} {tg[:60]:60} {(msg or '')[:120]}")
    return status


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--platform", action="append", help="cpu (default), cuda, rocm")
    ap.add_argument("--out", type=Path)
    ap.add_argument("-k", dest="pattern", default="")
    ap.add_argument("--backend", default="numpy")
    args = ap.parse_args(argv)
    counts: collections.Counter = collections.Counter()
    for platform in args.platform or ["cpu"]:
        for name in jax_linalg.SPECS:
            if args.pattern not in name:
                continue
            for dt in jax_linalg.DTYPES:
                counts[run_one(name, dt, platform, args)] += 1
    print("\n" + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return 0 if set(counts) <= {"pass", "n/a"} else 1


if __name__ == "__main__":
    sys.exit(main())
