"""The conform command: exit codes, JSON output, bad files, timeouts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


PASSING = """func.func @ok() {
  %0 = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  check.expect_eq_const %0, dense<[1, 2]> : tensor<2xi32>
  func.return
}
"""
FAILING = """func.func @wrong() {
  %0 = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  check.expect_eq_const %0, dense<[1, 3]> : tensor<2xi32>
  func.return
}
"""
SYNTAX = "func.func @broken() {\n  %0 = stablehlo.constant dense<[1, 2> : tensor<2xi32>\n}\n"
SPIN = """func.func @spin() {
  %zero = stablehlo.constant dense<0> : tensor<i64>
  %t = stablehlo.constant dense<true> : tensor<i1>
  %r = stablehlo.while(%i = %zero) : tensor<i64>
    cond { stablehlo.return %t : tensor<i1> }
    do { stablehlo.return %i : tensor<i64> }
  func.return
}
"""


def conform(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "stablehlo_conform.cli", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=300)


def test_all_pass_exits_0(tmp_path):
    (tmp_path / "a.mlir").write_text(PASSING)
    r = conform("run", tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 tests in 1 files" in r.stdout and "1 pass" in r.stdout


def test_failure_and_syntax_error_exit_1_and_run_continues(tmp_path):
    (tmp_path / "a_bad.mlir").write_text(SYNTAX)
    (tmp_path / "b_fail.mlir").write_text(FAILING)
    (tmp_path / "c_ok.mlir").write_text(PASSING)
    out = tmp_path / "out.json"
    r = conform("run", tmp_path, "--json", out)
    assert r.returncode == 1
    assert f"{tmp_path / 'a_bad.mlir'}:2:" in r.stdout  # file:line:col diagnostic
    assert "first at index [1]: actual 2, expected 3" in r.stdout
    doc = json.loads(out.read_text())
    statuses = {Path(x["file"]).name: x["status"] for x in doc["results"]}
    assert statuses == {"a_bad.mlir": "error", "b_fail.mlir": "fail", "c_ok.mlir": "pass"}
    assert doc["summary"] == {"total": 3, "pass": 1, "fail": 1, "error": 1, "unsupported": 0,
                              "crash": 0, "timeout": 0}
    assert "Traceback" not in r.stdout + r.stderr


def test_pattern_selects_tests(tmp_path):
    (tmp_path / "b_fail.mlir").write_text(FAILING)
    (tmp_path / "c_ok.mlir").write_text(PASSING)
    r = conform("run", tmp_path, "-k", "c_ok")
    assert r.returncode == 0 and "1 tests" in r.stdout


def test_usage_errors_exit_2(tmp_path):
    assert conform("run", tmp_path / "missing.mlir").returncode == 2
    assert conform("run").returncode == 2
    assert conform("run", tmp_path, "--jobs", "0").returncode == 2


def test_timeout_stops_infinite_while_and_run_goes_on(tmp_path):
    (tmp_path / "a_spin.mlir").write_text(SPIN)
    (tmp_path / "b_ok.mlir").write_text(PASSING)
    out = tmp_path / "o.json"
    r = conform("run", tmp_path, "--timeout", "1", "--json", out, "--jobs", "2")
    assert r.returncode == 1
    doc = json.loads(out.read_text())
    statuses = sorted(x["status"] for x in doc["results"])
    assert statuses == ["pass", "timeout"]


def test_streaming_jsonl(tmp_path):
    (tmp_path / "c_ok.mlir").write_text(PASSING)
    lines = tmp_path / "r.jsonl"
    conform("run", tmp_path, "--jsonl", lines)
    head, *recs, end = [json.loads(x) for x in lines.read_text().splitlines()]
    assert head["kind"] == "header" and head["settings"]["backend"] == "numpy"
    assert [r["status"] for r in recs] == ["pass"]
    assert end == {"kind": "end", "complete": True, "interrupted": None, "not_run": {"tests": 0, "files": 0}}


def test_interpret_suite_runs_every_test_without_tracebacks(interpret, tmp_path):
    out = tmp_path / "interp.json"
    r = conform("run", interpret, "--json", out, "--jobs", "2", "-q")
    doc = json.loads(out.read_text())
    results = doc["results"]
    assert len(results) >= 500
    allowed = {"pass", "fail", "error", "unsupported", "crash", "timeout"}
    assert {x["status"] for x in results} <= allowed
    for x in results:
        assert "internal error" not in x["message"], x
        if x["status"] == "unsupported":
            assert x["message"].startswith("unsupported: ")
    assert "Traceback" not in r.stdout + r.stderr
    ids = [x["id"] for x in results]
    assert len(ids) == len(set(ids))


def test_ops_lists_coverage():
    r = conform("ops")
    assert r.returncode == 0
    assert "stablehlo.constant" in r.stdout and "ops have a kernel" in r.stdout


def test_resume_keeps_streamed_results_and_runs_the_rest(tmp_path):
    (tmp_path / "b_fail.mlir").write_text(FAILING)
    (tmp_path / "c_ok.mlir").write_text(PASSING)
    lines = tmp_path / "r.jsonl"
    conform("run", tmp_path, "--jsonl", lines)
    # as if that run had been killed after one result (and half a line)
    head, kept = (json.loads(x) for x in lines.read_text().splitlines()[:2])
    kept["message"] = "from before"
    lines.write_text(json.dumps(head) + "\n" + json.dumps(kept) + "\n" + '{"id": "cut')
    out = tmp_path / "o.json"
    r = conform("run", tmp_path, "--jsonl", lines, "--resume", "--json", out)
    assert "resuming: 1 results kept" in r.stdout
    doc = json.loads(out.read_text())
    by_id = {x["id"]: x for x in doc["results"]}
    assert by_id[kept["id"]]["message"] == "from before"  # not run again
    assert by_id[f"{tmp_path / 'c_ok.mlir'}::ok"]["status"] == "pass"
    assert len(doc["results"]) == 2
    assert conform("run", tmp_path, "--resume").returncode == 2


RUN_ARGS = """// RUN: stablehlo-translate %s --interpret --args="[dense<[1, 2]> : tensor<2xi32>, dense<3> : tensor<2xi32>]"
func.func @main(%a: tensor<2xi32>, %b: tensor<2xi32>) -> tensor<2xi32> {
  %0 = stablehlo.add %a, %b : tensor<2xi32>
  return %0 : tensor<2xi32>
}
// CHECK:      tensor<2xi32> {
// CHECK-NEXT:   [4, 5]
// CHECK-NEXT: }
"""
POLY = """func.func public @main(%n: tensor<i64>, %x: tensor<?x3xf32>, %i: tensor<2xi32>) -> tensor<?x3xf32> {
  %0 = stablehlo.add %x, %x : tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}
"""


def test_programs_with_arguments_run_as_tests(tmp_path):
    (tmp_path / "a_args.mlir").write_text(RUN_ARGS)
    (tmp_path / "b_wrong.mlir").write_text(RUN_ARGS.replace("[4, 5]", "[4, 6]"))
    (tmp_path / "c_poly.mlir").write_text(POLY)
    out = tmp_path / "o.json"
    conform("run", tmp_path, "--json", out)
    by_file = {Path(x["file"]).name: x for x in json.loads(out.read_text())["results"]}
    assert by_file["a_args.mlir"]["status"] == "pass" and by_file["a_args.mlir"]["checks"] == 3
    assert by_file["b_wrong.mlir"]["status"] == "fail"
    assert "[4, 6]" in by_file["b_wrong.mlir"]["message"]
    assert by_file["c_poly.mlir"]["status"] == "pass"
    assert "generated inputs" in by_file["c_poly.mlir"]["message"]


def test_nothing_is_written_outside_named_paths(tmp_path):
    work = tmp_path / "work"
    tmp = tmp_path / "tmp"
    home = tmp_path / "home"
    for d in (work, tmp, home):
        d.mkdir()
    (work / "a.mlir").write_text(PASSING + "\n// -----\n" + FAILING)
    out = tmp_path / "named.json"
    env = {**__import__("os").environ, "TMPDIR": str(tmp), "HOME": str(home)}
    r = subprocess.run([sys.executable, "-m", "stablehlo_conform.cli", "run", str(work), "-j", "2",
                        "--json", str(out)], capture_output=True, text=True, cwd=work, env=env,
                       timeout=300)
    assert r.returncode == 1
    assert out.exists()
    assert sorted(p.name for p in work.iterdir()) == ["a.mlir"]
    assert list(tmp.iterdir()) == [] and list(home.iterdir()) == []
