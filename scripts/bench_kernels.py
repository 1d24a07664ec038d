#!/usr/bin/env python3
"""Throughput of the dot_general and convolution kernels next to np.matmul.

Runs, in one process on this machine:

- ``stablehlo.dot_general`` 512x512 @ 512x512 f32 through the engine,
  against ``np.matmul`` on the same operands;
- ``stablehlo.convolution`` 8x32x32x64 (NHWC) * 3x3x64x64 (HWIO), stride 1,
  SAME padding, f32, as the kernel runs it (im2col rows gathered and
  multiplied in cache-sized blocks) and with one GEMM over the whole im2col
  matrix (the same values), against ``np.matmul`` on the equivalent GEMM
  (8192x576 @ 576x64) and on 512^3.

Prints the best-of-N time and the achieved GFLOP/s (2 flops per
multiply-add) of each, and the kernel's rate as a fraction of np.matmul's.

Usage: python scripts/bench_kernels.py [--repeat N]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from stablehlo_conform import frontend
from stablehlo_conform.engine import Engine
from stablehlo_conform.kernels import linalg

DOT = """
func.func @main(%a: tensor<512x512xf32>, %b: tensor<512x512xf32>) -> tensor<512x512xf32> {
  %r = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0]
       : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  func.return %r : tensor<512x512xf32>
}"""

CONV = """
func.func @main(%x: tensor<8x32x32x64xf32>, %w: tensor<3x3x64x64xf32>) -> tensor<8x32x32x64xf32> {
  %r = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
       window = {stride = [1, 1], pad = [[1, 1], [1, 1]]}
       {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
       : (tensor<8x32x32x64xf32>, tensor<3x3x64x64xf32>) -> tensor<8x32x32x64xf32>
  func.return %r : tensor<8x32x32x64xf32>
}"""


def best_times(fns, repeat: int) -> list[float]:
    """Best-of-``repeat`` wall time of each function, calls interleaved so
    that every function sees the same machine load."""
    for fn in fns:
        fn()  # warm up
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best


def row(name: str, flops: float, seconds: float) -> float:
    rate = flops / seconds / 1e9
    print(f"  {name:<50} {seconds * 1e3:9.2f} ms {rate:9.1f} GFLOP/s")
    return rate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    rng = np.random.default_rng(0)

    print("dot_general 512x512x512 f32")
    a = rng.standard_normal((512, 512)).astype(np.float32)
    b = rng.standard_normal((512, 512)).astype(np.float32)
    (mod,) = frontend.load_text(DOT)
    eng = Engine(mod)
    out = eng.call("main", (a, b))[0]
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-3)
    flops = 2.0 * 512**3
    tk, tm = best_times([lambda: eng.call("main", (a, b)), lambda: np.matmul(a, b)], args.repeat)
    k = row("stablehlo.dot_general (engine)", flops, tk)
    m = row("np.matmul", flops, tm)
    print(f"  kernel / np.matmul: {k / m:.2f}")

    print("convolution 8x32x32x64 * 3x3x64x64 f32 (NHWC, HWIO, SAME)")
    x = rng.standard_normal((8, 32, 32, 64)).astype(np.float32)
    w = rng.standard_normal((3, 3, 64, 64)).astype(np.float32)
    (mod,) = frontend.load_text(CONV)
    eng = Engine(mod)
    out = eng.call("main", (x, w))[0]
    # spot check one output against a direct sum
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    ref = np.einsum("hwc,hwco->o", xp[3, 5:8, 7:10, :].astype(np.float64), w.astype(np.float64))
    np.testing.assert_allclose(out[3, 5, 7], ref, rtol=1e-4, atol=1e-3)
    flops = 2.0 * 8 * 32 * 32 * 64 * 64 * 9
    A = rng.standard_normal((8 * 32 * 32, 576)).astype(np.float32)
    B = rng.standard_normal((576, 64)).astype(np.float32)

    def conv_single():
        # the im2col matrix multiplied by one GEMM (the kernel before row blocks)
        saved = linalg.CONV_BLOCK_BYTES
        linalg.CONV_BLOCK_BYTES = 1 << 62
        try:
            return eng.call("main", (x, w))
        finally:
            linalg.CONV_BLOCK_BYTES = saved

    single = conv_single()[0]
    if np.array_equal(single, out):
        same = "values bit-identical"
    else:
        d = np.abs(single.astype(np.float64) - out)
        same = f"values differ by up to {d.max():.3g} (this BLAS's rounding depends on the call shape)"
    tk, ts, tm, tm2 = best_times([lambda: eng.call("main", (x, w)), conv_single, lambda: np.matmul(A, B),
                                  lambda: np.matmul(a, b)], args.repeat)
    k = row(f"stablehlo.convolution (engine, {linalg.CONV_BLOCK_BYTES >> 20} MiB row blocks)", flops, tk)
    k1 = row("stablehlo.convolution (engine, one GEMM)", flops, ts)
    m = row("np.matmul, same GEMM (8192x576 @ 576x64)", flops, tm)
    m2 = row("np.matmul, 512x512x512", 2.0 * 512**3, tm2)
    print(f"  row blocks / np.matmul (same GEMM): {k / m:.2f}   row blocks / np.matmul (512^3): {k / m2:.2f}")
    print(f"  one GEMM   / np.matmul (same GEMM): {k1 / m:.2f}   one GEMM   / np.matmul (512^3): {k1 / m2:.2f}")
    print(f"  row blocks / one GEMM: {k / k1:.2f} ({same})")

if __name__ == "__main__":
    main()
