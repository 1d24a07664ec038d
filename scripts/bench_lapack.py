#!/usr/bin/env python3
"""LAPACK custom calls: the numpy engine against XLA CPU on jnp.linalg programs.

    python scripts/bench_lapack.py [--repeat 3]

Each program is exported with ``jax.jit(f).lower(...).as_text()`` and run on
one large matrix and on a batch of many small ones (where the engine calls
LAPACK once per matrix). Reported: the best of ``--repeat`` runs of
``evaluate()`` on an already loaded module (numpy) and of an already compiled
``jax.jit`` (XLA CPU), and their ratio.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None) -> int:
    import jax
    import jax.numpy as jnp

    from stablehlo_conform import evaluate, load

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    funcs = {"qr": jnp.linalg.qr, "eigh": jnp.linalg.eigh, "svd": jnp.linalg.svd, "cholesky": jnp.linalg.cholesky,
             "solve": lambda a: jnp.linalg.solve(a, a[..., :1])}
    print(f"{'program':10} {'shape':>14} {'numpy s':>10} {'xla s':>10} {'numpy/xla':>10}")
    for shape in ((256, 256), (1000, 4, 4)):
        x = rng.standard_normal(shape).astype(np.float32)
        spd = (x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(np.float32)
        for name, f in funcs.items():
            a = spd if name in ("eigh", "cholesky") else x
            jf = jax.jit(f)
            module = load(jf.lower(a).as_text())[0]
            jax.block_until_ready(jf(a))
            t_np = _best(lambda: evaluate(module, a), args.repeat)
            t_xla = _best(lambda: jax.block_until_ready(jf(a)), args.repeat)
            print(f"{name:10} {'x'.join(map(str, shape)):>14} {t_np:10.4f} {t_xla:10.4f} {t_np / t_xla:10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
