"""The pytest plugin: StableHLO programs as pytest items, opt-in, xdist-safe."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SUITE_DIR = ROOT / ".." / "shared" / "stablehlo-suite"
PLUGIN = ROOT / "ci" / "example_plugin"
EXAMPLE = "tests/data/example_suite.mlir"
CASES = "tests/data/report_cases.mlir"


def example_env(tmp: Path) -> dict[str, str]:
    """An environment where the ``example`` backend plugin is importable and
    registered (its distribution metadata on PYTHONPATH unless installed)."""
    env = dict(os.environ)
    if any(ep.name == "example" for ep in entry_points(group="stablehlo_conform.backends")):
        return env
    info = tmp / "site" / "conform_example_backend-0.1.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: conform-example-backend\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(
        "[stablehlo_conform.backends]\nexample = conform_example_backend:ExampleBackend\n")
    env["PYTHONPATH"] = os.pathsep.join([str(tmp / "site"), str(PLUGIN), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def pytest_run(args, env=None, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=300)


def test_inert_unless_asked():
    """A folder of programs is not collected without --conform / -p (so the
    project's own ``pytest tests/`` collects none of tests/data)."""
    p = pytest_run(["--collect-only", "-q", "tests/data"])
    assert p.returncode == 5, p.stdout + p.stderr  # no tests collected
    assert ".mlir" not in p.stdout


def test_items_outcomes_baseline_and_xdist(tmp_path):
    """Program files named explicitly, run on two xdist workers by the
    example backend, with a baseline that lists one of its two planted
    failures."""
    env = example_env(tmp_path)
    known = tmp_path / "known.txt"
    known.write_text(f"{EXAMPLE}::add_i16_wraps | planted: i16 add is off by one\n")
    p = pytest_run(["-n", "2", "-rA", "--conform-backend", "example", "--conform-baseline", str(known),
                    EXAMPLE, CASES], env=env)
    out = p.stdout
    assert p.returncode == 1, out + p.stderr
    summary = out.strip().splitlines()[-1]
    # example_suite: 5 pass, add_i16_wraps xfailed (baselined), add_i16_cancel fails;
    # report_cases: 1 pass, the ULP mismatch, unsupported op and parse error fail
    assert re.search(r"\b4 failed, 6 passed, 1 xfailed\b", summary), summary
    failed = set(re.findall(r"^FAILED (\S+)", out, re.M))
    assert failed == {f"{EXAMPLE}::add_i16_cancel", f"{CASES}::add_f32_one_ulp_off",
                      f"{CASES}::unknown_custom_call", f"{CASES}::<chunk@33>"}
    assert re.search(rf"^XFAIL {re.escape(EXAMPLE)}::add_i16_wraps - known failure \(fail\): planted", out, re.M)
    # the failure shows the tool's message: index, values, ULP distance
    assert "first at index [0, 0]: actual 1, expected 0" in out
    assert "first at index [1]: actual 3.0, expected 3.000000238418579 (1 ULP)" in out
    assert "UNSUPPORTED: " in out and "custom_call target 'no_such_target_anywhere'" in out
    assert "[gw0]" in out or "[gw1]" in out


def _conform_ids(paths: list[str]) -> list[str]:
    """The test ids ``conform run`` reports for ``paths`` (its own file
    walk; the test bodies are not run)."""
    from stablehlo_conform.harness.suite import cases
    from stablehlo_conform.harness.records.result import new_result

    def skip(mod, what, tid, opts):
        return new_result(mod.source, tid, "", 0, status="pass")

    ids = []
    saved = cases.run_test, cases.run_program
    cases.run_test = cases.run_program = skip
    try:
        for f in cases.discover(paths):
            ids += [ev[1].id for ev in cases.run_file(f, cases.Options()) if ev[0] == "result"]
    finally:
        cases.run_test, cases.run_program = saved
    return ids


@pytest.mark.skipif(not (SUITE_DIR / "interpret").is_dir(), reason="../shared/stablehlo-suite is absent")
def test_xdist_collects_what_conform_run_runs(tmp_path):
    """``pytest -n 2 -p stablehlo_conform ../shared/stablehlo-suite/interpret``:
    both workers collect the same items (xdist checks it), one per test of
    ``conform run`` on the same folder. The items are skipped at setup by a
    helper plugin so that only collection and distribution are timed."""
    (tmp_path / "conform_skip_all.py").write_text(
        "import pytest\n\n\ndef pytest_runtest_setup(item):\n    pytest.skip('collection check')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    rel = os.path.relpath(SUITE_DIR / "interpret", ROOT)
    p = pytest_run(["-n", "2", "-v", "-p", "conform_skip_all", "-p", "stablehlo_conform", rel], env=env)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    items = re.findall(r"^\[gw\d\] \[\s*\d+%\] SKIPPED (\S+::\S+)", p.stdout, re.M)
    workers = set(re.findall(r"^\[(gw\d)\]", p.stdout, re.M))
    assert workers == {"gw0", "gw1"}
    m = re.search(r"(\d+) skipped", p.stdout.strip().splitlines()[-1])
    assert m and int(m.group(1)) == len(items)
    expected = _conform_ids([rel])
    assert len(items) == len(expected) > 500

    def key(tid):
        return tid.split("interpret/", 1)[1]

    assert sorted(map(key, items)) == sorted(map(key, expected))


def test_max_memory_budget_covers_loading_and_running(tmp_path):
    """``--conform-max-memory`` is the budget of ``conform run --max-memory``:
    a 1 MiB constant is refused while loading (file:line:col and size), a
    4 MiB broadcast while running; without the option both run."""
    blob = "0x" + np.arange(262144, dtype=np.float32).tobytes().hex().upper()
    p = tmp_path / "big.mlir"
    p.write_text(f"""func.func @big_constant() {{
  %0 = stablehlo.constant dense<"{blob}"> : tensor<262144xf32>
  %1 = stablehlo.slice %0 [4095:4096] : (tensor<262144xf32>) -> tensor<1xf32>
  check.expect_eq_const %1, dense<4095.0> : tensor<1xf32>
  func.return
}}

// -----

func.func @big_result() {{
  %0 = stablehlo.constant dense<2.0> : tensor<f32>
  %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<1024x1024xf32>
  %2 = stablehlo.slice %1 [7:8, 9:10] : (tensor<1024x1024xf32>) -> tensor<1x1xf32>
  check.expect_eq_const %2, dense<2.0> : tensor<1x1xf32>
  func.return
}}
""")
    small = pytest_run(["-q", "-rA", "--conform-max-memory", "0.5", str(p)])
    out = small.stdout
    assert small.returncode == 1, out + small.stderr
    assert re.search(r"\b2 failed\b", out.strip().splitlines()[-1]), out
    assert f"{p}:2:" in out
    assert "constant of type tensor<262144xf32> needs 1.0 MiB, over the memory budget of 0.5 MiB" in out
    assert f"stablehlo.broadcast_in_dim at {p}:12:8 " in out
    assert "would allocate 4.0 MiB, over the memory budget of 0.5 MiB" in out
    free = pytest_run(["-q", str(p)])
    assert free.returncode == 0, free.stdout + free.stderr
    assert re.search(r"\b2 passed\b", free.stdout.strip().splitlines()[-1]), free.stdout
