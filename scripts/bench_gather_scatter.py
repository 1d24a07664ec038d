#!/usr/bin/env python
"""Times the gather and scatter kernels on embedding-table sized inputs.

A 10,000 x 64 f32 table, 512 row indices (with repeats): a row gather, a
scatter-add and a replace scatter, each by the engine's generated block (its
fast path: rounds of whole rows) and by the kernel step by step (``np.add.at``,
rounds of elements), and the scatter-add written so that no fast path
recognises its body (the region evaluated on lanes). Prints milliseconds per
call (best of several runs).

    python scripts/bench_gather_scatter.py
"""

from __future__ import annotations

import time

import numpy as np

from stablehlo_conform import load
from stablehlo_conform.engine import Engine

ROWS, COLS, N = 10_000, 64, 512

GATHER = f"""
func.func @main(%table: tensor<{ROWS}x{COLS}xf32>, %idx: tensor<{N}x1xi32>) -> tensor<{N}x{COLS}xf32> {{
  %0 = "stablehlo.gather"(%table, %idx) {{
    dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0],
                                          start_index_map = [0], index_vector_dim = 1>,
    slice_sizes = array<i64: 1, {COLS}>, indices_are_sorted = false
  }} : (tensor<{ROWS}x{COLS}xf32>, tensor<{N}x1xi32>) -> tensor<{N}x{COLS}xf32>
  func.return %0 : tensor<{N}x{COLS}xf32>
}}
"""


def scatter_text(body: str) -> str:
    return f"""
func.func @main(%table: tensor<{ROWS}x{COLS}xf32>, %idx: tensor<{N}x1xi32>,
                %upd: tensor<{N}x{COLS}xf32>) -> tensor<{ROWS}x{COLS}xf32> {{
  %0 = "stablehlo.scatter"(%table, %idx, %upd) ({{
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      {body}
  }}) {{
    scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1],
        inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>,
    indices_are_sorted = false, unique_indices = false
  }} : (tensor<{ROWS}x{COLS}xf32>, tensor<{N}x1xi32>, tensor<{N}x{COLS}xf32>) -> tensor<{ROWS}x{COLS}xf32>
  func.return %0 : tensor<{ROWS}x{COLS}xf32>
}}
"""


ADD = "%s = stablehlo.add %a, %b : tensor<f32>\n      stablehlo.return %s : tensor<f32>"
# The same sum written so that the fast-path detector does not recognise it.
ADD_GENERAL = ("%z = stablehlo.constant dense<0.0> : tensor<f32>\n"
               "      %t = stablehlo.add %b, %z : tensor<f32>\n"
               "      %s = stablehlo.add %a, %t : tensor<f32>\n      stablehlo.return %s : tensor<f32>")
REPLACE = "stablehlo.return %b : tensor<f32>"


def bench(text: str, args, repeat: int = 7, generated: bool = True) -> tuple[float, tuple]:
    """Best milliseconds of ``repeat`` runs: generated blocks (after the first runs) or, with
    ``generated=False``, the kernels step by step."""
    module = load(text)[0]
    best = float("inf")
    out = None
    for _ in range(repeat):
        eng = Engine(module)
        eng.generate_blocks = generated
        t0 = time.perf_counter()
        out = eng.call("main", args)
        best = min(best, time.perf_counter() - t0)
    return best * 1e3, out


def main() -> None:
    rng = np.random.default_rng(0)
    table = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    idx = rng.integers(0, ROWS, (N, 1)).astype(np.int32)
    idx[:64] = idx[64:128]  # repeated rows exercise duplicate handling
    upd = rng.standard_normal((N, COLS)).astype(np.float32)

    ms, (g,) = bench(GATHER, (table, idx))
    assert np.array_equal(g, table[idx[:, 0]])
    print(f"gather         {ROWS}x{COLS} f32, {N} indices: {ms:8.3f} ms")

    expected = table.copy()
    np.add.at(expected, idx[:, 0], upd)
    ms, (s,) = bench(scatter_text(ADD), (table, idx, upd))
    assert np.array_equal(s, expected)
    print(f"scatter add    (fast path, rows in rounds) : {ms:8.3f} ms")
    ms, (k,) = bench(scatter_text(ADD), (table, idx, upd), generated=False)
    assert k.tobytes() == s.tobytes()
    print(f"scatter add    (kernel, np.add.at)         : {ms:8.3f} ms")
    ms, (s2,) = bench(scatter_text(ADD_GENERAL), (table, idx, upd))
    assert np.allclose(s2, expected, rtol=1e-5, atol=1e-5)
    print(f"scatter add    (region on lanes, in rounds): {ms:8.3f} ms")
    ms, (s3,) = bench(scatter_text(REPLACE), (table, idx, upd))
    print(f"scatter replace (fast path)                : {ms:8.3f} ms")
    ms, (k3,) = bench(scatter_text(REPLACE), (table, idx, upd), generated=False)
    assert k3.tobytes() == s3.tobytes()
    print(f"scatter replace (kernel)                   : {ms:8.3f} ms")
    assert not np.shares_memory(s, table)


if __name__ == "__main__":
    main()
