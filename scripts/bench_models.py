#!/usr/bin/env python3
"""Model-level benchmark: realistic programs exported from JAX, timed per backend.

    python scripts/bench_models.py [--backends numpy,reference,xla] [--repeat 3]

Each program is exported with ``jax.jit(f).lower(...).as_text()`` and run on
the same inputs by every backend; the time reported is the best of
``--repeat`` runs of load + execute (for XLA: compile + run; for the reference
interpreter: its evaluation, which runs in a child process). Results of every
backend are compared with numpy's. Printed: a table of seconds per backend
and the ratios reference/numpy and numpy/xla.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np


def _programs():
    import jax
    import jax.numpy as jnp
    from jax import lax

    rng = np.random.default_rng(0)

    def f32(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    def mlp(x, w1, w2):
        return jnp.tanh(x @ w1) @ w2

    def cnn(x, k):
        y = lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        y = jax.nn.relu(y)
        return lax.reduce_window(y, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

    def attention(q, k, v):
        s = q @ k.T / np.sqrt(q.shape[-1]).astype(np.float32)
        return jax.nn.softmax(s, axis=-1) @ v

    def layernorm_gelu(x, g, b):
        m = x.mean(-1, keepdims=True)
        var = ((x - m) ** 2).mean(-1, keepdims=True)
        return jax.nn.gelu((x - m) / jnp.sqrt(var + 1e-5) * g + b)

    def rnn(h, xs, w, u):
        def step(i, h):
            return jnp.tanh(h @ w + xs[i] @ u)
        return lax.fori_loop(0, xs.shape[0], step, h)

    def embedding(table, ids, upd):
        g = table[ids]
        return g, table.at[ids].add(upd)

    def topk_sort(x):
        v, i = lax.top_k(x, 8)
        return v, i, jnp.sort(x, axis=-1)

    def bf16_mlp(x, w1, w2):
        return (jax.nn.relu(x.astype(jnp.bfloat16) @ w1.astype(jnp.bfloat16)) @ w2.astype(jnp.bfloat16))

    def int8_matmul(a, b):
        return lax.dot(a, b, preferred_element_type=jnp.int32)

    def rfft(x):
        return jnp.fft.rfft(x, axis=-1)

    return [
        ("mlp", mlp, (f32(64, 256), f32(256, 256), f32(256, 10))),
        ("cnn", cnn, (f32(4, 32, 32, 16), f32(3, 3, 16, 32))),
        ("attention", attention, (f32(128, 64), f32(128, 64), f32(128, 64))),
        ("layernorm_gelu", layernorm_gelu, (f32(256, 512), f32(512), f32(512))),
        # small recurrent weights: a contractive recurrence, so that 50 steps do
        # not amplify last-bit differences of tanh into different results
        ("rnn_while", rnn, (f32(1, 64), f32(50, 1, 32), 0.1 * f32(64, 64), 0.1 * f32(32, 64))),
        ("embedding", embedding, (f32(10000, 64), rng.integers(0, 10000, 512).astype(np.int32),
                                  f32(512, 64))),
        ("topk_sort", topk_sort, (f32(64, 1024),)),
        ("bf16_mlp", bf16_mlp, (f32(64, 256), f32(256, 256), f32(256, 10))),
        ("int8_matmul", int8_matmul, (rng.integers(-128, 127, (256, 256)).astype(np.int8),
                                      rng.integers(-128, 127, (256, 256)).astype(np.int8))),
        ("rfft", rfft, (f32(64, 1024),)),
    ]


def _time(fn, repeat: int):
    best = float("inf")
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backends", default="numpy,reference,xla")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    import jax

    from stablehlo_conform import load
    from stablehlo_conform.compare import compare
    from stablehlo_conform.harness.backends import get_backend

    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    rows = []
    for name, f, inputs in _programs():
        text = jax.jit(f).lower(*inputs).as_text()
        times: dict[str, float | str] = {}
        ref_out = None
        for b in backends:
            try:
                be = get_backend(b)

                def once():
                    (mod,) = load(text)
                    return be.run_function(mod, "main", inputs)

                t, out = _time(once, args.repeat if b != "reference" else 1)
                times[b] = t
                if b == "numpy":
                    ref_out = out
                elif ref_out is not None:
                    bad = [compare(np.asarray(o), np.asarray(r), max_ulp=64, atol=1e-3)
                           for o, r in zip(out, ref_out)]
                    if any(m is not None for m in bad):
                        times[b + "_mismatch"] = "differs"
            except Exception as e:  # a backend that cannot run this program
                times[b] = f"{type(e).__name__}"
        rows.append((name, times))
    print(f"{'program':<16}" + "".join(f"{b + ' s':>14}" for b in backends)
          + f"{'ref/numpy':>11}{'numpy/xla':>11}")
    for name, times in rows:
        cells = []
        for b in backends:
            v = times.get(b)
            cells.append(f"{v:>14.4f}" if isinstance(v, float) else f"{str(v)[:13]:>14}")
        r = times.get("reference")
        n = times.get("numpy")
        x = times.get("xla")
        ratio1 = f"{r / n:>11.1f}" if isinstance(r, float) and isinstance(n, float) else f"{'-':>11}"
        ratio2 = f"{n / x:>11.2f}" if isinstance(x, float) and isinstance(n, float) else f"{'-':>11}"
        flags = " (" + ", ".join(k for k in times if k.endswith("_mismatch")) + ")" if any(
            k.endswith("_mismatch") for k in times) else ""
        print(f"{name:<16}" + "".join(cells) + ratio1 + ratio2 + flags)
    return 0


if __name__ == "__main__":
    sys.exit(main())
