#!/usr/bin/env python3
"""Model-level benchmark: realistic programs exported from JAX, numpy engine vs XLA CPU.

    python scripts/bench_models.py [--repeat 5] [--clock wall|cpu] [--no-reference] [--only rnn_while,...]

Each program is exported with ``jax.jit(f).lower(...).as_text()`` and run on
the same inputs by this package's numpy engine and by XLA's CPU compiler,
side by side in one process:

- cold: numpy parses, lowers and runs the text (``load`` + ``Engine.call``);
  XLA compiles the text and runs it (its executable cache emptied first).
- warm: the already-loaded module (numpy) or the compiled executable (XLA)
  run again on the same inputs, host arrays in and out for both.

Every figure is the median of ``--repeat`` runs, of wall time or (``--clock
cpu``, for a loaded machine where wall time mostly measures waiting for a
core) of the process's CPU time, every thread's (XLA's compiler and runtime
threads included). The reference interpreter
(a child process: ``stablehlo-translate --interpret``) runs each program once,
cold, where it can. Results of XLA and the reference are compared with
numpy's. The ratios printed are numpy/xla, cold and warm.
"""

from __future__ import annotations

import argparse
import statistics
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

    def int8_matmul(x, w, w_scale):
        # symmetric int8 quantisation of the activations per row, int8 x int8
        # products accumulated in int32, rescaled to f32
        x_scale = jnp.max(jnp.abs(x), axis=-1, keepdims=True) / 127.0
        xq = jnp.clip(jnp.round(x / x_scale), -127, 127).astype(jnp.int8)
        acc = lax.dot(xq, w, preferred_element_type=jnp.int32)
        return acc.astype(jnp.float32) * x_scale * w_scale

    def rfft_cumsum(x):
        spec = jnp.abs(jnp.fft.rfft(x, axis=-1))
        return jnp.cumsum(spec, axis=-1), lax.cummax(x, axis=1)

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
        ("int8_matmul", int8_matmul, (f32(256, 256), rng.integers(-127, 128, (256, 256)).astype(np.int8),
                                      np.float32(0.01) * np.ones((1, 256), np.float32))),
        ("rfft_cumsum", rfft_cumsum, (f32(64, 1024),)),
    ]


CLOCK = time.perf_counter


def _median(fn, repeat: int):
    times = []
    out = None
    for _ in range(repeat):
        t0 = CLOCK()
        out = fn()
        times.append(CLOCK() - t0)
    return statistics.median(times), out


def _differs(out, expect) -> bool:
    from stablehlo_conform.compare import compare

    return any(compare(np.asarray(o), np.asarray(r), max_ulp=64, atol=1e-3) is not None
               for o, r in zip(out, expect))


def bench(name, text, inputs, repeat: int, reference: bool) -> dict:
    from stablehlo_conform import load
    from stablehlo_conform.engine import Engine
    from stablehlo_conform.harness.backends import get_backend

    row: dict = {"program": name}

    def numpy_cold():
        (mod,) = load(text)
        return mod, Engine(mod).call("main", inputs)

    row["np_cold"], (mod, out) = _median(numpy_cold, repeat)
    row["np_warm"], _ = _median(lambda: Engine(mod).call("main", inputs), repeat)

    xla = get_backend("xla")

    def xla_cold():
        xla._cache.clear()
        return xla.execute(text, list(inputs))

    try:
        row["xla_cold"], xout = _median(xla_cold, repeat)
        row["xla_warm"], _ = _median(lambda: xla.execute(text, list(inputs)), repeat)
        row["xla_differs"] = _differs(xout, out)
    except Exception as e:  # a program XLA cannot run
        row["xla_cold"] = row["xla_warm"] = type(e).__name__
    if reference:
        try:
            ref = get_backend("reference")
            t0 = time.perf_counter()
            rout = ref._call(text, list(inputs), None)  # in a child process (aborts stay there)
            row["ref"] = time.perf_counter() - t0
            row["ref_differs"] = _differs(rout, out)
        except Exception as e:
            row["ref"] = type(e).__name__
    return row


def _cell(v, fmt="{:>10.2f}") -> str:
    return fmt.format(v) if isinstance(v, float) else f"{str(v)[:9]:>10}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    ap.add_argument("--no-reference", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated program names")
    args = ap.parse_args()
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    import jax

    only = {s for s in args.only.split(",") if s}
    rows = []
    for name, f, inputs in _programs():
        if only and name not in only:
            continue
        text = jax.jit(f).lower(*inputs).as_text()
        rows.append(bench(name, text, inputs, args.repeat, not args.no_reference))
    print(f"median of {args.repeat} runs, milliseconds of {args.clock} time (reference: wall time of one run); "
          "ratios numpy/xla")
    print(f"{'program':<16}{'np cold':>10}{'xla cold':>10}{'cold x':>10}{'np warm':>10}{'xla warm':>10}"
          f"{'warm x':>10}{'reference':>10}")
    for r in rows:
        ms = {k: v * 1e3 if isinstance(v, float) else v for k, v in r.items()}
        cold = r["np_cold"] / r["xla_cold"] if isinstance(r.get("xla_cold"), float) else "-"
        warm = r["np_warm"] / r["xla_warm"] if isinstance(r.get("xla_warm"), float) else "-"
        flags = [k for k in ("xla_differs", "ref_differs") if r.get(k)]
        print(f"{r['program']:<16}" + _cell(ms["np_cold"]) + _cell(ms["xla_cold"]) + _cell(cold)
              + _cell(ms["np_warm"]) + _cell(ms["xla_warm"]) + _cell(warm) + _cell(ms.get("ref", "-"))
              + (f"  ({', '.join(flags)})" if flags else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
