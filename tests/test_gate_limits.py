"""The limits of a test hold whatever its kernels do (issue 39):

- ``--max-memory`` bounds what a test really allocates, kernel temporaries
  included (not only its declared tensors), on the numpy backend and in the
  xla backend's child; a test over it is one ``error`` record naming the
  budget and the run goes on;
- the pytest plugin runs each item in the runner's worker, so
  ``--conform-timeout`` stops a kernel that runs past it (and
  ``--conform-max-memory`` bounds it), and the session goes on.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

from test_cli import PASSING
from test_gate_memory import MiB, peak_run
from test_pytest_plugin import SUITE_DIR, pytest_run

# an i32 convolution whose operands and result are small (2 MiB in, 229 KiB out) and whose kernel
# gathers an im2col matrix of 58564 x 1800 int64 values (804 MiB): unbounded, the worker peaks at ~1.7 GiB
CONV_I32 = """func.func @conv_temporaries() {
  %lhs = stablehlo.constant dense<1> : tensor<1x256x256x8xi32>
  %rhs = stablehlo.constant dense<1> : tensor<15x15x8x1xi32>
  %0 = stablehlo.convolution(%lhs, %rhs) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
      window = {stride = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
      : (tensor<1x256x256x8xi32>, tensor<15x15x8x1xi32>) -> tensor<1x242x242x1xi32>
  check.expect_eq_const %0, dense<1800> : tensor<1x242x242x1xi32>
  func.return
}
"""

# XLA sorts a 128 MiB iota: its buffers are XLA's own, never seen by the engine's declared-size check
XLA_SORT = """func.func @sort_buffer() {
  %0 = stablehlo.iota dim = 0 : tensor<8192x4096xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %1 = "stablehlo.sort"(%0) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %c = stablehlo.compare GT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }) {dimension = 0 : i64, is_stable = false} : (tensor<8192x4096xf32>) -> tensor<8192x4096xf32>
  %2 = stablehlo.reduce(%1 init: %z) applies stablehlo.maximum across dimensions = [0, 1]
      : (tensor<8192x4096xf32>, tensor<f32>) -> tensor<f32>
  check.expect_eq_const %2, dense<8191.0> : tensor<f32>
  func.return
}
"""

# one f32 convolution op of ~1.6e12 multiply-adds in one kernel call (minutes on one core), its temporaries
# ~140 MiB: nothing between its start and its end checks a deadline
LONG_CONV = """func.func @long_kernel() {
  %lhs = stablehlo.constant dense<1.0> : tensor<1x512x512x32xf32>
  %rhs = stablehlo.constant dense<1.0> : tensor<63x63x32x64xf32>
  %0 = stablehlo.convolution(%lhs, %rhs) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
      window = {stride = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
      : (tensor<1x512x512x32xf32>, tensor<63x63x32x64xf32>) -> tensor<1x450x450x64xf32>
  check.expect_eq_const %0, dense<127008.0> : tensor<1x450x450x64xf32>
  func.return
}
"""

OVER = "the test went over the memory budget of 10.0 MiB (--max-memory bounds what a test allocates, " \
       "temporaries included)"


def two_tests(tmp_path, name: str, first: str):
    """A file of ``first`` and then a passing test (``ok``)."""
    p = tmp_path / name
    p.write_text(first + "\n// -----\n\n" + PASSING)
    return p


def test_kernel_temporaries_over_max_memory_are_one_error_naming_the_budget(tmp_path):
    p = two_tests(tmp_path, "conv.mlir", CONV_I32)
    peak, recs = peak_run(tmp_path, p, "--max-memory", "10")
    assert [(r["id"], r["status"]) for r in recs] == [(f"{p}::conv_temporaries", "error"), (f"{p}::ok", "pass")]
    assert recs[0]["message"] == f"stablehlo.convolution at {p}:4:8: out of memory: {OVER}"
    assert peak < 400 * MiB, peak / MiB  # unbounded: ~1.7 GiB


def test_libraries_loaded_on_first_use_are_not_a_tests_memory(tmp_path):
    """SciPy's LAPACK reserves ~100 MiB of address space when a kernel first
    calls it: under a 1 MiB budget the official triangular_solve tests still
    pass (it is loaded before the first bound), none crashes the worker."""
    path = SUITE_DIR / "interpret" / "triangular_solve.mlir"
    _peak, recs = peak_run(tmp_path, path, "--max-memory", "1")
    assert len(recs) > 20
    assert {r["status"] for r in recs} == {"pass"}, [(r["id"], r["message"]) for r in recs if r["status"] != "pass"]


def test_xla_runs_under_a_small_budget_and_its_buffers_meet_it(tmp_path):
    """The budget bounds each program call of the xla child, not its start
    (jax and the client): a small test passes under 10 MiB, a 128 MiB
    buffer of XLA's is refused and named."""
    p = two_tests(tmp_path, "sort.mlir", XLA_SORT)
    out = tmp_path / "out.json"
    r = subprocess.run([sys.executable, "-m", "stablehlo_conform.cli", "run", str(p), "--backend", "xla", "-j", "1",
                        "--max-memory", "10", "--json", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    recs = json.loads(out.read_text())["results"]
    assert [(r["id"], r["status"]) for r in recs] == [(f"{p}::sort_buffer", "error"), (f"{p}::ok", "pass")]
    assert "RESOURCE_EXHAUSTED: Out of memory allocating" in recs[0]["message"]
    assert recs[0]["message"].endswith(OVER)


def _junit_times(path) -> dict[str, float]:
    return {case.get("name"): float(case.get("time")) for case in ET.parse(path).iter("testcase")}


def test_pytest_plugin_stops_a_kernel_past_conform_timeout_and_bounds_its_memory(tmp_path):
    """Items run in the runner's worker: a kernel past ``--conform-timeout``
    is stopped, kernel temporaries over ``--conform-max-memory`` are one
    error, and the session goes on."""
    p = tmp_path / "limits.mlir"
    p.write_text("\n// -----\n\n".join([LONG_CONV, CONV_I32, PASSING]))
    junit = tmp_path / "junit.xml"
    r = pytest_run(["-rA", "--conform-timeout", "1", "--conform-max-memory", "200", "--junit-xml", str(junit),
                    p.name], cwd=tmp_path)
    out = r.stdout
    assert r.returncode == 1, out + r.stderr
    assert re.search(r"\b2 failed, 1 passed\b", out.strip().splitlines()[-1]), out
    assert "FAILED limits.mlir::long_kernel - TIMEOUT: limits.mlir::long_kernel" in out
    assert "timed out after 1 s (worker stopped)" in out
    assert f"at {p}:1\n" in out  # the item's line, though the runner's record has none
    assert "FAILED limits.mlir::conv_temporaries - ERROR: limits.mlir::conv_temporaries" in out
    assert OVER.replace("10.0", "200.0") in out
    assert "PASSED limits.mlir::ok" in out
    # stopped at the timeout plus the runner's grace (and a worker's start), not when the kernel ends
    assert _junit_times(junit)["long_kernel"] < 60, _junit_times(junit)
