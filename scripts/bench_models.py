#!/usr/bin/env python3
"""Model-level benchmark: realistic programs exported from JAX, numpy engine vs XLA CPU.

    python scripts/bench_models.py [--repeat 5] [--no-reference] [--only rnn_while,...] [--startup-runs 3]
    python scripts/bench_models.py --zoo [--only resnet50,...]     # the model zoo (testsuite/models)
    python scripts/bench_models.py --shapes large [--only scan_stack,...]  # batch >= 16, hidden >= 128

``--shapes large``: the same kinds of program at realistic sizes (batch 16 or more, hidden
sizes 128 or more), with a scan stacking its outputs (``lax.scan``: a ``dynamic_update_slice``
per step), a recurrent loop and a chain of int8 products; the tiny default shapes measure
mostly the engine's per-op cost.

Each program is exported with ``jax.jit(f).lower(...).as_text()`` and run on
the same inputs by this package's numpy engine and by XLA's CPU compiler,
side by side in one process:

- cold: numpy parses, lowers and runs the text (``load`` + ``Engine.call``);
  XLA compiles the text and runs it (its executable cache emptied first).
- warm: the already-loaded module (numpy) or the compiled executable (XLA)
  run again on the same inputs, host arrays in and out for both.

Every run is timed by two clocks at once, wall time and the process's CPU time
(every thread's, XLA's compiler and runtime threads included; on a loaded
machine wall time mostly measures waiting for a core): two tables, each figure
the median of ``--repeat`` runs. numpy and XLA take turns, run by run (cold runs
first, then warm ones), so that a slower spell of the machine falls on both; a
timed warm run comes right after an untimed one of its own side, so that it
finds the caches as a repeated run of that side leaves them. The reference interpreter (a child process:
``stablehlo-translate --interpret``) runs each program once, cold, where it
can (wall time only), after every program has been timed. Results of XLA and
the reference are compared with numpy's. The ratios printed are numpy/xla, cold
and warm.

Start-up: the first program a process runs pays for what the package loads
once (the MLIR bindings and their context, kernel modules, first-use caches).
The first selected program is run cold twice by a fresh child process (this
script with ``--startup-child``), once with ``jax`` imported first (as here)
and once without; each line gives the first run, the second and their
difference, medians over ``--startup-runs`` processes (after one unmeasured
process), with bytecode caching on in the child (``PYTHONDONTWRITEBYTECODE``
removed from its environment). ``stablehlo_conform``, its ``load`` and
``stablehlo_conform.engine`` are imported before the timed runs, as in the
tables; the time of that import is printed too.

The first line printed names the kernels NumPy's OpenBLAS runs (``SkylakeX``, ``Haswell``...),
which set the speed of every float product, and the ``OPENBLAS_*`` settings of the environment
that choose them. OpenBLAS picks the kernels of the CPU it finds unless ``OPENBLAS_CORETYPE``
says otherwise; a host that pins older kernels there (``Haswell`` on an AVX-512 CPU) halves the
speed of products: ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python scripts/bench_models.py
...`` measures with the library's own choice, as on a machine without those settings.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def _programs(shapes: str = "small"):
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

    if shapes == "large":
        return _large_programs(f32, rng, mlp, cnn, layernorm_gelu, rnn, embedding, topk_sort, bf16_mlp,
                               int8_matmul, rfft_cumsum)
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


def _large_programs(f32, rng, mlp, cnn, layernorm_gelu, rnn, embedding, topk_sort, bf16_mlp, int8_matmul,
                    rfft_cumsum):
    """The programs of ``--shapes large``: batch >= 16, hidden >= 128."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    def attention(q, k, v):  # batched heads
        s = jnp.einsum("bqd,bkd->bqk", q, k) / np.sqrt(q.shape[-1]).astype(np.float32)
        return jnp.einsum("bqk,bkd->bqd", jax.nn.softmax(s, axis=-1), v)

    def scan_stack(h, xs, w, u):  # outputs stacked by dynamic_update_slice, one per step
        def step(h, x):
            h = jnp.tanh(h @ w + x @ u)
            return h, h
        return lax.scan(step, h, xs)

    def int8_chain(x, w1, w2, s1, s2):
        def quant(a):
            scale = jnp.max(jnp.abs(a), axis=-1, keepdims=True) / 127.0
            return jnp.clip(jnp.round(a / scale), -127, 127).astype(jnp.int8), scale
        xq, xs = quant(x)
        h = jax.nn.relu(lax.dot(xq, w1, preferred_element_type=jnp.int32).astype(jnp.float32) * xs * s1)
        hq, hs = quant(h)
        return lax.dot(hq, w2, preferred_element_type=jnp.int32).astype(jnp.float32) * hs * s2

    def i8(*shape):
        return rng.integers(-127, 128, shape).astype(np.int8)

    small = 0.1  # contractive recurrences (see rnn_while of the small shapes)
    return [
        ("mlp", mlp, (f32(128, 512), f32(512, 512), f32(512, 128))),
        ("cnn", cnn, (f32(16, 32, 32, 32), f32(3, 3, 32, 64))),
        ("attention", attention, (f32(16, 128, 64), f32(16, 128, 64), f32(16, 128, 64))),
        ("layernorm_gelu", layernorm_gelu, (f32(16 * 128, 768), f32(768), f32(768))),
        ("rnn_while", rnn, (f32(16, 128), f32(64, 16, 128), small * f32(128, 128), small * f32(128, 128))),
        ("scan_stack", scan_stack, (f32(16, 128), f32(64, 16, 128), small * f32(128, 128), small * f32(128, 128))),
        ("embedding", embedding, (f32(30000, 128), rng.integers(0, 30000, 16 * 128).astype(np.int32),
                                  f32(16 * 128, 128))),
        ("topk_sort", topk_sort, (f32(16, 4096),)),
        ("bf16_mlp", bf16_mlp, (f32(128, 512), f32(512, 512), f32(512, 128))),
        ("int8_matmul", int8_matmul, (f32(128, 512), i8(512, 512), np.float32(0.01) * np.ones((1, 512), np.float32))),
        ("int8_chain", int8_chain, (f32(128, 512), i8(512, 512), i8(512, 256),
                                    np.float32(0.01) * np.ones((1, 512), np.float32),
                                    np.float32(0.01) * np.ones((1, 256), np.float32))),
        ("rfft_cumsum", rfft_cumsum, (f32(16, 4096),)),
    ]


ZOO = Path(__file__).resolve().parent.parent / "testsuite" / "models"


def _zoo_programs():
    """The zoo's models: (name, text, inputs) with the inputs their recipes build."""
    from stablehlo_conform import load
    from stablehlo_conform.harness.programs.recipe import build_inputs, read_recipe

    for path in sorted(ZOO.glob("*.recipe.json")):
        r = read_recipe(path)
        (mod,) = load(str(r.program_path))
        yield r.name, mod.text, tuple(build_inputs(r))


def _clocks() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _timed(fn):
    """``fn()``'s result and its (wall, cpu) seconds."""
    w, c = _clocks()
    out = fn()
    w2, c2 = _clocks()
    return out, (w2 - w, c2 - c)


def _medians(fns: dict, repeat: int, again: bool = False) -> tuple[dict, dict]:
    """For each of ``fns`` (name -> function), (median wall seconds, median cpu seconds) of
    ``repeat`` runs, and its last result: ``repeat`` rounds, each running every function in
    turn, so that a slower spell of the machine falls on every side of a ratio alike.
    ``again``: each function runs once untimed before its timed run in a round (a warm run
    then finds the caches as its own last run left them, not as the other side's did)."""
    times: dict = {k: [] for k in fns}
    outs: dict = {}
    for _ in range(repeat):
        for k, fn in fns.items():
            if again:
                fn()
            outs[k], t = _timed(fn)
            times[k].append(t)
    return {k: (statistics.median(t[0] for t in ts), statistics.median(t[1] for t in ts))
            for k, ts in times.items()}, outs


def _differs(out, expect) -> bool:
    from stablehlo_conform.compare import compare

    return any(compare(np.asarray(o), np.asarray(r), max_ulp=64, atol=1e-3) is not None
               for o, r in zip(out, expect))


def bench(name, text, inputs, repeat: int) -> tuple[dict, tuple]:
    """The row of one program (numpy and XLA, cold and warm) and numpy's results."""
    from stablehlo_conform import load
    from stablehlo_conform.engine import Engine
    from stablehlo_conform.harness.backends import get_backend

    row: dict = {"program": name}

    def numpy_cold():
        (mod,) = load(text)
        return mod, Engine(mod).call("main", inputs)

    xla = get_backend("xla")

    def xla_cold():
        xla._cache.clear()
        return xla.execute(text, list(inputs))

    try:
        xla_cold()
    except Exception as e:  # a program XLA cannot run: numpy alone
        row["xla_cold"] = row["xla_warm"] = type(e).__name__
        xla = None
    cold = {"np_cold": numpy_cold} if xla is None else {"np_cold": numpy_cold, "xla_cold": xla_cold}
    medians, outs = _medians(cold, repeat)
    mod, out = outs["np_cold"]
    warm = {"np_warm": lambda: Engine(mod).call("main", inputs)}
    if xla is not None:
        warm["xla_warm"] = lambda: xla.execute(text, list(inputs))
    more, _ = _medians(warm, repeat, again=True)
    row.update(medians, **more)
    if xla is not None:
        row["xla_differs"] = _differs(outs["xla_cold"], out)
    return row, out


def reference_run(row: dict, text, inputs, out) -> None:
    """The reference interpreter's time of one cold run of ``text`` into ``row`` (run after
    every program's timing: its long child processes would disturb the timings after them)."""
    from stablehlo_conform.harness.backends import get_backend

    try:
        ref = get_backend("reference")
        rout, t = _timed(lambda: ref._call(text, list(inputs), None))  # in a child process (aborts stay there)
        row["ref"] = t[0]
        row["ref_differs"] = _differs(rout, out)
    except Exception as e:
        row["ref"] = type(e).__name__


def _cell(v, fmt="{:>10.2f}") -> str:
    return fmt.format(v) if isinstance(v, float) else f"{str(v)[:9]:>10}"


def _table(rows: list[dict], clock: int, repeat: int) -> None:
    """One table of ``rows``: wall times (``clock`` 0, with the reference's) or CPU times (1)."""
    name = ("wall", "cpu")[clock]
    ref = " (reference: wall time of one run)" if clock == 0 else ""
    print(f"median of {repeat} runs, milliseconds of {name} time{ref}; ratios numpy/xla")
    print(f"{'program':<16}{'np cold':>10}{'xla cold':>10}{'cold x':>10}{'np warm':>10}{'xla warm':>10}"
          f"{'warm x':>10}" + (f"{'reference':>10}" if clock == 0 else ""))
    for r in rows:
        v = {k: (x[clock] if isinstance(x, tuple) else x) for k, x in r.items()}
        ms = {k: x * 1e3 if isinstance(x, float) else x for k, x in v.items()}
        cold = v["np_cold"] / v["xla_cold"] if isinstance(v.get("xla_cold"), float) else "-"
        warm = v["np_warm"] / v["xla_warm"] if isinstance(v.get("xla_warm"), float) else "-"
        flags = [k for k in ("xla_differs", "ref_differs") if r.get(k)]
        print(f"{r['program']:<16}" + _cell(ms["np_cold"]) + _cell(ms["xla_cold"]) + _cell(cold)
              + _cell(ms["np_warm"]) + _cell(ms["xla_warm"]) + _cell(warm)
              + (_cell(ms.get("ref", "-")) if clock == 0 else "")
              + (f"  ({', '.join(flags)})" if flags else ""))


def startup_child(folder: Path, with_jax: bool) -> int:
    """In a fresh process: the program of ``folder`` run cold twice; prints the times as JSON."""
    if with_jax:
        import jax  # noqa: F401 - imported first, as the benchmark's own process does
    (t_import, (load, engine)) = _timed_import()
    text = (folder / "program.mlir").read_text()
    with np.load(folder / "inputs.npz") as z:
        inputs = tuple(z[f"arg{i}"] for i in range(len(z.files)))

    def numpy_cold():
        (mod,) = load(text)
        return engine(mod).call("main", inputs)

    _, first = _timed(numpy_cold)
    _, second = _timed(numpy_cold)
    print(json.dumps({"import": t_import, "first": first, "second": second}))
    return 0


def _timed_import():
    def imports():
        from stablehlo_conform import load
        from stablehlo_conform.engine import Engine

        return load, Engine

    mods, t = _timed(imports)
    return t, mods


def startup(name: str, text: str, inputs, runs: int) -> list[str]:
    """The start-up lines: ``name`` run cold first and second in fresh processes, with jax
    imported first and without."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "program.mlir").write_text(text)
        np.savez(folder / "inputs.npz", **{f"arg{i}": np.asarray(a) for i, a in enumerate(inputs)})
        for with_jax in (True, False):
            cmd = [sys.executable, str(Path(__file__).resolve()), "--startup-child", tmp]
            cmd += [] if with_jax else ["--no-jax"]
            got = []
            for i in range(runs + 1):  # the first process only makes sure the bytecode cache is written
                r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
                if r.returncode != 0:
                    raise SystemExit(f"start-up child failed:\n{r.stderr}")
                if i:
                    got.append(json.loads(r.stdout.strip().splitlines()[-1]))

            def ms(key: str, clock: int) -> float:
                return 1e3 * statistics.median(g[key][clock] for g in got)

            def diff(clock: int) -> float:
                return 1e3 * statistics.median(g["first"][clock] - g["second"][clock] for g in got)

            lines.append(
                f"start-up, {'jax imported first' if with_jax else 'without jax'} ({name}, median of {runs} "
                f"processes): first run {ms('first', 0):.1f} ms, second {ms('second', 0):.1f} ms, "
                f"the first pays {diff(0):.1f} ms more (cpu: {ms('first', 1):.1f}, {ms('second', 1):.1f}, "
                f"{diff(1):.1f} ms); importing load and the engine before: {ms('import', 0):.1f} ms")
    return lines


def _blas_line() -> str:
    from stablehlo_conform.kernels._blas_threads import kernels

    knobs = ", ".join(f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("OPENBLAS_"))
    return f"numpy's BLAS kernels: {kernels() or 'not OpenBLAS'} ({knobs or 'no OPENBLAS_* settings'})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-reference", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated program names")
    ap.add_argument("--zoo", action="store_true", help="the model zoo's programs on their recipes' inputs")
    ap.add_argument("--shapes", choices=("small", "large"), default="small",
                    help="the programs' sizes: tiny (default), or batch >= 16 and hidden >= 128")
    ap.add_argument("--startup-runs", type=int, default=3, help="fresh processes per start-up line (0: none)")
    ap.add_argument("--startup-child", metavar="DIR", help=argparse.SUPPRESS)
    ap.add_argument("--no-jax", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.startup_child:
        return startup_child(Path(args.startup_child), not args.no_jax)
    import jax

    only = {s for s in args.only.split(",") if s}
    names = ({p.name.split(".")[0] for p in ZOO.glob("*.recipe.json")} if args.zoo
             else {name for name, _f, _i in _programs(args.shapes)})
    unknown = only - names
    if unknown:
        ap.error(f"unknown program(s): {', '.join(sorted(unknown))}")
    rows = []
    programs = []
    source = ((n, (lambda t=t: t), i) for n, t, i in _zoo_programs() if not only or n in only) if args.zoo else (
        (n, (lambda f=f, i=i: jax.jit(f).lower(*i).as_text()), i) for n, f, i in _programs(args.shapes))
    for name, text_of, inputs in source:
        if only and name not in only:
            continue
        text = text_of()
        row, out = bench(name, text, inputs, args.repeat)
        programs.append((name, text, inputs, out))
        rows.append(row)
    first = programs[0][:3] if programs else None
    if not args.no_reference:
        for row, (_name, text, inputs, out) in zip(rows, programs):
            reference_run(row, text, inputs, out)
    print(_blas_line())
    print()
    _table(rows, 0, args.repeat)
    print()
    _table(rows, 1, args.repeat)
    if first is not None and args.startup_runs > 0:
        print()
        for line in startup(*first, args.startup_runs):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
