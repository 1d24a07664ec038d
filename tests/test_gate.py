"""CI gate: baselines, pass-rate thresholds, exit codes, the example plugin."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from click.testing import CliRunner

from stablehlo_conform.cli import main
from stablehlo_conform.harness.records.gate import (
    Baseline,
    BaselineEntry,
    GateError,
    evaluate_gate,
    normalize_id,
    parse_min_pass_rates,
    update_baseline,
)

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "ci" / "example_plugin"
SUITE = "tests/data/example_suite.mlir"
PLANTED = {f"{SUITE}::add_i16_wraps", f"{SUITE}::add_i16_cancel"}
CONFORM = [sys.executable, "-m", "stablehlo_conform.cli"]


def rec(tid, status="pass", family="stablehlo.add", message=""):
    return {"id": tid, "status": status, "family": family, "message": message, "dtypes": ["i32"]}


# ids and matching --------------------------------------------------------------

def test_normalize_id_strips_relative_prefixes():
    assert normalize_id("../shared/suite/./add.mlir::f") == "shared/suite/add.mlir::f"
    assert normalize_id("/abs/x/add.mlir::f#2") == "abs/x/add.mlir::f#2"
    assert normalize_id("add.mlir::<chunk@12>") == "add.mlir::<chunk@12>"


def test_baseline_matches_on_path_suffix_both_ways():
    b = Baseline()
    b.add(BaselineEntry("shared/stablehlo-suite/interpret/add.mlir::add_op_test_si16", "planted"))
    # the run was started from another directory
    assert b.match("/work/shared/stablehlo-suite/interpret/add.mlir::add_op_test_si16").reason == "planted"
    assert b.match("../shared/stablehlo-suite/interpret/add.mlir::add_op_test_si16") is not None
    # the run was started inside the suite: shorter ids
    assert b.match("interpret/add.mlir::add_op_test_si16") is not None
    # other function, other file name: no match
    assert b.match("../shared/stablehlo-suite/interpret/add.mlir::add_op_test_si32") is None
    assert b.match("../shared/stablehlo-suite/interpret/xadd.mlir::add_op_test_si16") is None


def test_text_baseline_with_globs(tmp_path):
    p = tmp_path / "known.txt"
    p.write_text("# comment\n"
                 "testdata/foo_bfloat16_*.mlir::main | flushes subnormals\n"
                 "interpret/add.mlir::add_op_test_c64 | complex add missing\n")
    b = Baseline.load(p)
    assert len(b) == 2
    assert b.match("../shared/stablehlo-suite/testdata/foo_bfloat16_20_20.mlir::main").reason == "flushes subnormals"
    assert b.match("x/interpret/add.mlir::add_op_test_c64").reason == "complex add missing"
    assert b.match("x/testdata/foo_float32_20_20.mlir::main") is None


def test_bad_baseline_is_a_usage_error(tmp_path):
    p = tmp_path / "b.json"
    p.write_text('{"format": "something-else"}')
    with pytest.raises(GateError):
        Baseline.load(p)
    p.write_text("{not json")
    with pytest.raises(GateError):
        Baseline.load(p)


# update ------------------------------------------------------------------------

def test_update_keeps_reasons_adds_messages_drops_fixed():
    old = Baseline(backend="vendor")
    old.add(BaselineEntry("s/a.mlir::still_fails", "tracked in VENDOR-12", "fail"))
    old.add(BaselineEntry("s/a.mlir::fixed_now", "was broken", "fail"))
    old.add(BaselineEntry("s/other.mlir::not_run", "other suite", "crash"))
    results = [
        rec("../s/a.mlir::still_fails", "fail", message="loc: check.expect_eq: 1/2 elements differ\nmore"),
        rec("../s/a.mlir::fixed_now", "pass"),
        rec("../s/a.mlir::new_failure", "unsupported", message="unsupported: stablehlo.add at x:1:1"),
        rec("../s/a.mlir::ok", "pass"),
    ]
    new, stats = update_baseline(results, old)
    assert set(new.entries) == {"s/a.mlir::still_fails", "s/a.mlir::new_failure", "s/other.mlir::not_run"}
    assert new.entries["s/a.mlir::still_fails"].reason == "tracked in VENDOR-12"
    assert new.entries["s/a.mlir::new_failure"].reason == "unsupported: stablehlo.add at x:1:1"
    assert new.entries["s/a.mlir::new_failure"].status == "unsupported"
    assert stats.removed == ["s/a.mlir::fixed_now"]
    assert stats.added == ["s/a.mlir::new_failure"]
    assert stats.not_run == ["s/other.mlir::not_run"]
    assert new.backend == "vendor"
    pruned, _ = update_baseline(results, old, prune=True)
    assert "s/other.mlir::not_run" not in pruned.entries


def test_baseline_json_roundtrip(tmp_path):
    b = Baseline(backend="example")
    b.add(BaselineEntry("a.mlir::f", "why", "fail"))
    b.save(tmp_path / "k.json")
    doc = json.loads((tmp_path / "k.json").read_text())
    assert doc["format"] == "stablehlo-conform-baseline"
    assert doc["expected_failures"] == {"a.mlir::f": {"reason": "why", "status": "fail"}}
    assert Baseline.load(tmp_path / "k.json").match("x/a.mlir::f").reason == "why"


# gate ---------------------------------------------------------------------------

def test_gate_regressions_expected_and_newly_passing():
    b = Baseline()
    b.add(BaselineEntry("a.mlir::known", "r1"))
    b.add(BaselineEntry("a.mlir::fixed", "r2"))
    b.add(BaselineEntry("a.mlir::gone", "r3"))
    results = [rec("a.mlir::known", "fail"), rec("a.mlir::fixed", "pass"), rec("a.mlir::ok", "pass")]
    g = evaluate_gate(results, b)
    assert g.ok and g.exit_code == 0
    assert [r["id"] for r, _ in g.expected] == ["a.mlir::known"]
    assert [r["id"] for r, _ in g.newly_passing] == ["a.mlir::fixed"]
    assert [e.id for e in g.stale] == ["a.mlir::gone"]
    g = evaluate_gate(results + [rec("a.mlir::new", "crash")], b)
    assert not g.ok and g.exit_code == 1
    assert [r["id"] for r in g.regressions] == ["a.mlir::new"]
    # without a baseline every non-passing test fails the gate; no test fails it too
    assert evaluate_gate(results).exit_code == 1
    assert evaluate_gate([rec("a.mlir::ok")]).exit_code == 0
    assert evaluate_gate([]).exit_code == 1


def test_parse_min_pass_rates():
    assert parse_min_pass_rates(["0.9"]) == {"*": 0.9}
    assert parse_min_pass_rates(["stablehlo.add=95%", "dot=1"]) == {"stablehlo.add": 0.95, "dot": 1.0}
    for bad in ["1.5", "add=", "=0.5", "add=x", "-0.1"]:
        with pytest.raises(GateError):
            parse_min_pass_rates([bad])


def test_min_pass_rate_gate_per_family():
    results = ([rec(f"a.mlir::add{i}", "pass" if i < 9 else "fail") for i in range(10)]
               + [rec(f"m.mlir::max{i}", "pass" if i < 1 else "unsupported", "stablehlo.maximum")
                  for i in range(2)])
    # add: 9/10 = 0.9, maximum: 1/2 = 0.5
    assert evaluate_gate(results, min_rates={"stablehlo.add": 0.9}).ok
    assert not evaluate_gate(results, min_rates={"add": 0.91}).ok  # short family name
    assert not evaluate_gate(results, min_rates={"*": 0.9}).ok
    g = evaluate_gate(results, min_rates={"*": 0.9, "maximum": 0.5})
    assert g.ok and {c.family: c.threshold for c in g.rate_checks} == {"stablehlo.add": 0.9,
                                                                       "stablehlo.maximum": 0.5}
    # a threshold for a family that did not run cannot be met
    g = evaluate_gate(results, min_rates={"stablehlo.dot": 0.5})
    assert not g.ok and g.rate_failures[0].total == 0
    # both gates: both must pass
    b = Baseline()
    b.add(BaselineEntry("a.mlir::add9", "known"))
    assert not evaluate_gate(results, b, {"add": 0.5}).ok  # maximum failures are regressions
    b.add(BaselineEntry("m.mlir::max1", "known"))
    assert evaluate_gate(results, b, {"add": 0.5}).ok
    assert not evaluate_gate(results, b, {"add": 0.95}).ok


def test_baseline_check_and_update_commands(tmp_path):
    results = {"backend": "vendor", "results": [
        rec("s/a.mlir::f", "fail", message="loc: check.expect_eq: 1/2 elements differ; first at index [1]"),
        rec("s/a.mlir::g", "pass")]}
    rp = tmp_path / "r.json"
    rp.write_text(json.dumps(results))
    kp = tmp_path / "known.json"
    runner = CliRunner()
    r = runner.invoke(main, ["baseline", "update", str(rp), "-o", str(kp)])
    assert r.exit_code == 0, r.output
    doc = json.loads(kp.read_text())
    assert doc["backend"] == "vendor"
    assert doc["expected_failures"]["s/a.mlir::f"]["reason"].startswith("fail: loc: check.expect_eq: 1/2")
    # a hand-written reason survives the next update
    doc["expected_failures"]["s/a.mlir::f"]["reason"] = "vendor bug 7"
    kp.write_text(json.dumps(doc))
    r = runner.invoke(main, ["baseline", "update", str(rp), "-o", str(kp)])
    assert r.exit_code == 0 and "1 kept" in r.output
    assert json.loads(kp.read_text())["expected_failures"]["s/a.mlir::f"]["reason"] == "vendor bug 7"
    assert runner.invoke(main, ["baseline", "check", str(rp), "--baseline", str(kp)]).exit_code == 0
    assert runner.invoke(main, ["baseline", "check", str(rp)]).exit_code == 1
    r = runner.invoke(main, ["baseline", "check", str(rp), "--min-pass-rate", "add=0.5"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(main, ["baseline", "check", str(rp), "--min-pass-rate", "add=0.6"])
    assert r.exit_code == 1 and "PASS RATE" in r.output and "50.0% < 60.0%" in r.output
    assert runner.invoke(main, ["baseline", "check", str(rp), "--min-pass-rate", "lots"]).exit_code == 2
    assert runner.invoke(main, ["baseline", "check", str(tmp_path / "missing.json")]).exit_code == 2


def test_run_usage_errors_exit_2(tmp_path):
    runner = CliRunner()
    r = runner.invoke(main, ["run", str(ROOT / SUITE), "--min-pass-rate", "add=2"])
    assert r.exit_code == 2 and "outside [0, 1]" in r.output
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2")
    assert runner.invoke(main, ["run", str(ROOT / SUITE), "--baseline", str(bad)]).exit_code == 2
    assert runner.invoke(main, ["run", str(ROOT / SUITE), "--baseline", str(tmp_path / "none")]).exit_code == 2


# the example plugin end to end ------------------------------------------------

def example_plugin_env(tmp: Path) -> dict[str, str]:
    """Environment in which the ``example`` backend is installed: as it is,
    when the plugin was pip-installed; otherwise with the distribution
    metadata an install writes (entry point included) on PYTHONPATH."""
    env = dict(os.environ)
    if any(ep.name == "example" for ep in entry_points(group="stablehlo_conform.backends")):
        return env
    site = tmp / "site"
    info = site / "conform_example_backend-0.1.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: conform-example-backend\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(
        "[stablehlo_conform.backends]\nexample = conform_example_backend:ExampleBackend\n")
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(PLUGIN), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def conform(args, env, cwd=ROOT):
    return subprocess.run(CONFORM + list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def example_run(tmp_path_factory):
    """One run of the example backend on the small suite, gated by a
    baseline that lists the planted failures by hand."""
    tmp = tmp_path_factory.mktemp("example")
    env = example_plugin_env(tmp)
    planted = tmp / "planted.txt"
    planted.write_text("".join(f"{t} | planted: i16 add is off by one\n" for t in sorted(PLANTED)))
    out = tmp / "results.json"
    p = conform(["run", "--backend", "example", SUITE, "--json", str(out), "--baseline", str(planted)], env)
    return tmp, env, p, json.loads(out.read_text())


def test_example_backend_is_listed(example_run):
    _tmp, env, _p, _doc = example_run
    p = conform(["backends"], env)
    assert p.returncode == 0
    line = next(ln for ln in p.stdout.splitlines() if ln.split()[:1] == ["example"])
    assert "plugin conform_example_backend:ExampleBackend" in line


def test_example_backend_reports_exactly_the_planted_failures(example_run):
    _tmp, _env, p, doc = example_run
    assert doc["backend"] == "example"
    assert len(doc["results"]) == 7
    not_passing = {r["id"]: r for r in doc["results"] if r["status"] != "pass"}
    assert set(not_passing) == PLANTED
    assert all(r["status"] == "fail" for r in not_passing.values())
    # 1 + 2 = 3 and 100 + -100 = 0, each off by the planted one
    assert "first at index [0]: actual 4, expected 3" in not_passing[f"{SUITE}::add_i16_wraps"]["message"]
    assert "first at index [0, 0]: actual 1, expected 0" in not_passing[f"{SUITE}::add_i16_cancel"]["message"]
    # the run prints them as known failures, and the baseline listing both lets the gate pass
    assert p.stdout.count("KNOWN ") == 2 and "FAIL " not in p.stdout
    assert f"KNOWN       {SUITE}::add_i16_cancel: fail (baseline: planted: i16 add is off by one)" in p.stdout
    assert p.returncode == 0, p.stdout + p.stderr
    assert "gate PASSED" in p.stdout and "0 regressions, 2 expected failures" in p.stdout


def test_baseline_gate_exit_codes_with_the_example_backend(example_run):
    tmp, env, _p, _doc = example_run
    known = tmp / "known.json"
    r = CliRunner().invoke(main, ["baseline", "update", str(tmp / "results.json"), "-o", str(known)])
    assert r.exit_code == 0, r.output
    doc = json.loads(known.read_text())
    assert doc["backend"] == "example"
    assert set(doc["expected_failures"]) == PLANTED
    assert doc["expected_failures"][f"{SUITE}::add_i16_wraps"]["reason"].startswith(
        f"fail: {SUITE}:9:3: check.expect_eq_const: 3/3 elements differ")
    # forget one planted failure: it is a regression now
    del doc["expected_failures"][f"{SUITE}::add_i16_cancel"]
    known.write_text(json.dumps(doc))
    p = conform(["run", "--backend", "example", SUITE, "--baseline", str(known), "-q",
                 "--min-pass-rate", "stablehlo.add=0.6"], env)
    assert p.returncode == 1, p.stdout + p.stderr
    verdict = p.stdout.split("gate FAILED", 1)[1]
    assert "1 regressions, 1 expected failures" in verdict
    assert f"REGRESSION  {SUITE}::add_i16_cancel: fail:" in verdict
    assert "add_i16_wraps" not in verdict


def test_example_plugin_installs_with_pip(tmp_path):
    """A real ``pip install`` of ci/example_plugin (into a target folder, so
    the running environment is left as it is), unless it is installed."""
    if any(ep.name == "example" and ep.value.startswith("conform_example_backend")
           for ep in entry_points(group="stablehlo_conform.backends")):
        import conform_example_backend

        assert conform_example_backend.PLANTED_TYPE == "i16"
        return
    if shutil.which("pip", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("pip is not available in this environment")
    target = tmp_path / "target"
    src = tmp_path / "src"  # build from a copy: setuptools writes build/ next to the sources
    shutil.copytree(PLUGIN, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    p = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--target", str(target),
                        str(src)], capture_output=True, text=True, timeout=240)
    if p.returncode != 0:
        pytest.skip(f"pip could not build the plugin here (no package index?): {p.stderr.strip()[-300:]}")
    env = dict(os.environ, PYTHONPATH=str(target))
    p = conform(["backends"], env)
    assert "plugin conform_example_backend:ExampleBackend" in p.stdout
