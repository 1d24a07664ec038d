"""One output planner for every command (issue 39): folders checked before
any work, bundle folder names unique and inside their folder, an output
never replacing an input of its command, a stream locked for the run that
writes it. Real commands throughout: subprocesses where a run must hold its
stream, in-process where the command stops before any work."""

from __future__ import annotations

import json
import os
import signal

import pytest
from test_cli import FAILING, PASSING
from test_gate_commands import invoke, popen, usage_error
from test_gate_guarantees import conform, stream_records, wait_for

PROGRAM = ("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
           "  %0 = stablehlo.add %a, %a : tensor<2xf32>\n  func.return %0 : tensor<2xf32>\n}\n")
# a program neither numpy nor the reference interpreter runs: `diff` bundles it
NO_BACKEND_RUNS = ("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
                   "  %0 = stablehlo.custom_call @no_such_target(%a) : (tensor<2xf32>) -> tensor<2xf32>\n"
                   "  func.return %0 : tensor<2xf32>\n}\n")
FOREVER = """func.func @forever() {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %w = stablehlo.while(%i = %c0) : tensor<i32>
   cond {
    %t = stablehlo.constant dense<true> : tensor<i1>
    stablehlo.return %t : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i32>
    %i1 = stablehlo.add %i, %one : tensor<i32>
    stablehlo.return %i1 : tensor<i32>
  }
  check.expect_eq_const %w, dense<0> : tensor<i32>
  func.return
}
"""


def _files(tmp_path):
    """A passing suite, a program, a results file and a baseline in ``tmp_path``."""
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "ok.mlir").write_text(PASSING)
    (tmp_path / "p.mlir").write_text(PROGRAM)
    (tmp_path / "file").write_text("a file, not a folder\n")
    (tmp_path / "r.json").write_text(json.dumps({"backend": "numpy", "results": [
        {"id": "suite/ok.mlir::ok", "status": "pass", "file": "suite/ok.mlir"}]}))
    (tmp_path / "b.txt").write_text("suite/ok.mlir::ok | known\n")
    return {"SUITE": tmp_path / "suite", "OK": tmp_path / "suite" / "ok.mlir", "PROG": tmp_path / "p.mlir",
            "UNDER_FILE": tmp_path / "file" / "sub", "R": tmp_path / "r.json", "B": tmp_path / "b.txt"}


# --------------------------------------------------------------------------- #
# 1: a folder output is checked before any test runs
# --------------------------------------------------------------------------- #

@pytest.mark.parametrize("args", [
    ["run", "SUITE", "--repro-dir", "UNDER_FILE"],
    ["diff", "PROG", "--backends", "numpy,reference", "--repro-dir", "UNDER_FILE"],
    ["reduce", "PROG", "--backends", "numpy,reference", "-o", "UNDER_FILE"],
    ["fuzz", "--count", "2", "--backends", "numpy,reference", "-o", "UNDER_FILE"],
    ["plugin-report", "xla", "SUITE", "-o", "UNDER_FILE"],
])
def test_output_folders_are_checked_before_any_test(tmp_path, args):
    """A folder that cannot be created (its parent is a file) is a usage
    error before the work (``run --repro-dir`` found it after the run:
    'LOST OUTPUT', exit 1)."""
    subst = _files(tmp_path)
    r = conform(*[subst.get(a, a) for a in args], timeout=120)
    usage_error(r, f"{subst['UNDER_FILE']}: cannot create")
    assert "tests in" not in r.stdout and "programs on" not in r.stdout and "LOST OUTPUT" not in r.stderr


# --------------------------------------------------------------------------- #
# 2: bundle folder names unique by construction
# --------------------------------------------------------------------------- #

def test_bundles_of_tests_whose_ids_share_their_first_120_characters_are_all_kept(tmp_path):
    """Two failing tests whose ids agree on their first 130 characters get a
    bundle each (the second overwrote the first), each in a folder of at
    most 120 characters."""
    names = ["wrong_" + "x" * 124 + suffix for suffix in ("_a", "_b")]
    (tmp_path / "suite.mlir").write_text("\n".join(FAILING.replace("@wrong", f"@{n}") for n in names))
    r = conform("run", "suite.mlir", "--repro-dir", "repro", cwd=tmp_path, timeout=240)
    assert r.returncode == 1 and "repro bundles: 2 in repro" in r.stdout, r.stdout + r.stderr
    folders = sorted((tmp_path / "repro").iterdir())
    assert len(folders) == 2 and all(len(f.name) <= 120 for f in folders), folders
    titles = sorted(json.loads((f / "bundle.json").read_text())["title"] for f in folders)
    assert titles == [f"suite.mlir::{n}" for n in names]


# --------------------------------------------------------------------------- #
# 3: a derived name never leaves its folder
# --------------------------------------------------------------------------- #

@pytest.mark.parametrize("name", ["...mlir", "..mlir"])
def test_diff_bundles_of_a_program_named_with_dots_stay_inside_the_repro_folder(tmp_path, name):
    """``...mlir`` made the bundle folder ``repro/..`` (written beside the
    program), ``..mlir`` made it ``repro/.`` (the bundle's files loose in
    the repro folder)."""
    (tmp_path / name).write_text(NO_BACKEND_RUNS)
    r = conform("diff", name, "--backends", "numpy,reference", "--repro-dir", "repro", cwd=tmp_path, timeout=240)
    assert r.returncode == 1 and "repro bundle:" in r.stdout, r.stdout + r.stderr
    assert sorted(os.listdir(tmp_path)) == sorted([name, "repro"])
    (bundle,) = (tmp_path / "repro").iterdir()
    assert bundle.is_dir() and not bundle.name.startswith(".") and (bundle / "program.mlir").is_file()


# --------------------------------------------------------------------------- #
# 4: an output never names an input of its command
# --------------------------------------------------------------------------- #

@pytest.mark.parametrize("args, output, given", [
    (["run", "PROG", "--json", "./PROG"], "--json", "PROG"),
    (["run", "SUITE", "--junit-xml", "OK"], "--junit-xml", "OK"),
    (["run", "PROG", "--html", "LINK"], "--html", "PROG"),
    (["run", "SUITE", "--baseline", "B", "--json", "B"], "--json", "B"),
    (["eval", "PROG", "--random", "-o", "HARD"], "--output", "PROG"),
    (["diff", "PROG", "--backends", "numpy,reference", "--json", "PROG"], "--json", "PROG"),
    (["reduce", "BUNDLE/program.mlir", "--script", "true", "--budget", "5", "-o", "BUNDLE"], "-o", "BUNDLE"),
    (["report", "R", "--json", "R"], "--json", "R"),
    (["triage", "R", "--json", "R"], "--json", "R"),
    (["baseline", "update", "R", "-o", "R"], "-o", "R"),
])
def test_an_output_naming_an_input_is_refused_before_any_work(tmp_path, args, output, given):
    """The same file by any name (``./x``, a symbolic link, a hard link, a
    folder holding it) is refused, both named, and the input stays whole
    (it was overwritten by the report, the bundle or the results)."""
    subst = _files(tmp_path)
    os.symlink(subst["PROG"], tmp_path / "link.mlir")
    os.link(subst["PROG"], tmp_path / "hard.mlir")
    (tmp_path / "bundle").mkdir()
    (tmp_path / "bundle" / "program.mlir").write_text(PROGRAM)
    subst.update(LINK=tmp_path / "link.mlir", HARD=tmp_path / "hard.mlir", BUNDLE=tmp_path / "bundle")
    subst["./PROG"] = f"{tmp_path}/./p.mlir"
    subst["BUNDLE/program.mlir"] = tmp_path / "bundle" / "program.mlir"
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    r = invoke(*[subst.get(a, a) for a in args])
    assert r.exit_code == 2, r.output
    assert f"{output} " in r.output and "input" in r.output and str(subst[given]) in r.output, r.output
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


# --------------------------------------------------------------------------- #
# 5: a stream is locked for the run that writes it
# --------------------------------------------------------------------------- #

def test_a_second_run_on_a_stream_in_use_is_refused_and_the_first_reads_back(tmp_path):
    """While a run writes its ``--jsonl``, a second run (or an accuracy run)
    on the same file is a usage error that leaves it untouched (they
    truncated it and interleaved their lines); the first run's stream then
    reads back whole."""
    (tmp_path / "forever.mlir").write_text(FOREVER)
    (tmp_path / "ok.mlir").write_text(PASSING)
    stream = tmp_path / "s.jsonl"
    first = popen("run", tmp_path / "forever.mlir", "--jsonl", stream, "--timeout", "600")
    try:
        wait_for(lambda: stream.exists() and stream.read_text().endswith("\n"), what="the first run's header")
        header = stream.read_text()
        for args in (["run", tmp_path / "ok.mlir", "--jsonl", stream],
                     ["accuracy", "--op", "exponential", "--type", "f8E4M3FN", "--jsonl", stream]):
            r = conform(*args, timeout=120)
            usage_error(r, f"--jsonl {stream}: another run is writing this stream")
            assert stream.read_text() == header and first.poll() is None
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=120)
    finally:
        first.kill()
    assert first.returncode == 143
    lines = [json.loads(x) for x in stream.read_text().splitlines()]
    assert [x.get("kind") for x in (lines[0], lines[-1])] == ["header", "end"] and not stream_records(stream)
    r = conform("report", stream)
    assert r.returncode == 0 and "INCOMPLETE (interrupted by SIGTERM)" in r.stdout, r.stdout + r.stderr
    r = conform("run", tmp_path / "ok.mlir", "--jsonl", stream)  # the lock went with the run
    assert r.returncode == 0 and [x["status"] for x in stream_records(stream)] == ["pass"], r.stderr
