"""The gate's promises on every command, not only ``conform run``: a compare
that could not run is never a pass, every stream the tool writes is read
back by every command that takes one, outputs are checked first and written
whole, interrupts save what ran, inputs are bounded regular files, constants
of every element type meet the memory budget, and bad options, paths and
file contents are usage errors. Real processes and real signals throughout;
the sweeps run in-process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from test_cli import PASSING
from test_gate_guarantees import conform, slow_file, stream_records, wait_for

from stablehlo_conform.cli import main
from stablehlo_conform.harness.suite.cases import Options, run_file

CMD = [sys.executable, "-m", "stablehlo_conform.cli"]
ROOT = Path(__file__).resolve().parents[1]
FAILING = PASSING.replace("@ok", "@bad").replace("[1, 2]> : tensor<2xi32>\n  func", "[1, 3]> : tensor<2xi32>\n  func")


def popen(*args, env=None):
    return subprocess.Popen([*CMD, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)


def usage_error(r, *words):
    """A usage error: exit 2, no traceback, every word in its message."""
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and "Aborted" not in r.stderr, r.stderr
    for w in words:
        assert w in r.stderr, (w, r.stderr)


def wait_stderr(p, marker: str, timeout: float = 240) -> list[str]:
    """Lines of ``p``'s stderr up to the first holding ``marker``."""
    seen = []
    end = time.monotonic() + timeout
    for line in p.stderr:
        seen.append(line)
        if marker in line or time.monotonic() > end:
            break
    assert any(marker in x for x in seen), seen
    return seen


def interrupt(p, sig, ready, timeout: float = 120) -> tuple[str, str]:
    """Send ``sig`` to ``p`` once ``ready()`` has returned; its stdout and stderr (it is
    killed afterwards whatever happened)."""
    try:
        ready()
        p.send_signal(sig)
        return p.communicate(timeout=timeout)
    finally:
        p.kill()


def invoke(*args):
    """A command in this process: its result (an exception other than the
    exit is a traceback the user would see)."""
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exception is None or isinstance(r.exception, SystemExit), (args, r.output, r.exception)
    return r


# --------------------------------------------------------------------------- #
# 1: --compare: a backend that cannot run is a usage error, a compare that did not run is not a pass
# --------------------------------------------------------------------------- #

@pytest.mark.parametrize("compare, words", [
    ("typo1,typo2", ["--compare typo1", "unknown backend 'typo1'"]),
    ("numpy,pjrt:/no/such.so", ["--compare pjrt:/no/such.so", "no PJRT plugin library at /no/such.so"]),
    (" , ", ["names no backend"]),
])
def test_compare_with_a_backend_that_cannot_run_is_a_usage_error_before_any_test(tmp_path, compare, words):
    (tmp_path / "ok.mlir").write_text(PASSING)
    r = conform("run", tmp_path / "ok.mlir", "--compare", compare, "--json", tmp_path / "r.json")
    usage_error(r, *words)
    assert not (tmp_path / "r.json").exists() and "tests in" not in r.stdout


def test_a_comparison_that_did_not_run_on_a_backend_is_never_a_pass(tmp_path):
    (tmp_path / "ok.mlir").write_text(PASSING)
    opts = Options(compare=("numpy", "no-such-backend"))
    (rec,) = [ev[1] for ev in run_file(str(tmp_path / "ok.mlir"), opts) if ev[0] == "result"]
    assert rec.compare["numpy"] == "ok"
    assert rec.status == "error", rec
    assert rec.message.startswith("not compared: no-such-backend: ")
    (rec,) = [ev[1] for ev in run_file(str(tmp_path / "ok.mlir"), Options(compare=("numpy", "reference")))
              if ev[0] == "result"]
    assert rec.status == "pass" and set(rec.compare.values()) == {"ok"}


# --------------------------------------------------------------------------- #
# 2: every stream the tool writes is read back, a cut last line repaired
# --------------------------------------------------------------------------- #

def _cut_half(stream: Path) -> int:
    """Leave the header, the first half of the results and half a line: what
    a run killed half way leaves. Returns the results kept whole."""
    lines = stream.read_text().splitlines()
    results = [x for x in lines if '"id"' in x and not x.startswith('{"kind": "header"')]
    keep = len(results) // 2
    stream.write_text("\n".join([lines[0], *results[:keep]]) + "\n" + results[keep][: len(results[keep]) // 2])
    return keep


def _read_back(stream: Path, tmp_path: Path, complete: bool) -> None:
    """report, triage, baseline check and update read the stream (and say
    when it did not finish)."""
    r = conform("report", stream, "--json", tmp_path / "rep" / "r.json")
    assert r.returncode == 0 and ("INCOMPLETE" in r.stdout) != complete, r.stdout + r.stderr
    assert json.loads((tmp_path / "rep" / "r.json").read_text())["results"]
    r = conform("triage", stream)
    assert r.returncode in (0, 1) and "non-passing results in" in r.stdout, r.stdout + r.stderr
    r = conform("baseline", "update", stream, "-o", tmp_path / "known.json")
    assert r.returncode == 0, r.stdout + r.stderr
    r = conform("baseline", "check", stream, "--baseline", tmp_path / "known.json")
    assert r.returncode == (0 if complete else 1), r.stdout + r.stderr
    assert "gate PASSED" in r.stdout and ("INCOMPLETE" in r.stdout) != complete


def test_streams_of_the_official_suites_are_read_back_and_resumed(tmp_path, interpret, testdata):
    """A few files of each suite, with programs taking arguments (``kind``
    ``args``) and programs run on generated inputs (``generated``)."""
    files = [interpret / "add.mlir", interpret / "api_input_arguments.mlir", interpret / "while.mlir",
             testdata / "abs_int16_20_20.mlir", testdata / "abs_bfloat16_20_20.mlir",
             testdata / "dynamic" / "add_transpose_dynamic.mlir", testdata / "dynamic" / "arange_dynamic.mlir"]
    stream = tmp_path / "s.jsonl"
    r = conform("run", *files, "--jsonl", stream, "--json", tmp_path / "full.json")
    assert r.returncode == 0, r.stdout + r.stderr
    full = {x["id"]: x["status"] for x in json.loads((tmp_path / "full.json").read_text())["results"]}
    kinds = {x.get("kind") for x in stream_records(stream)}
    assert {"args", "generated", None} <= kinds, kinds
    _read_back(stream, tmp_path, complete=True)
    kept = _cut_half(stream)
    _read_back(stream, tmp_path, complete=False)
    r = conform("run", *files, "--jsonl", stream, "--resume")
    assert r.returncode == 0 and f"resuming: {kept} results kept" in r.stdout, r.stdout + r.stderr
    ids = [x["id"] for x in stream_records(stream)]
    assert sorted(ids) == sorted(full)  # every test once
    assert {x["id"]: x["status"] for x in stream_records(stream)} == full
    _read_back(stream, tmp_path, complete=True)


def test_streams_of_iree_format_programs_are_read_back(tmp_path):
    stream = tmp_path / "s.jsonl"
    conform("run", ROOT / "testsuite" / "iree_format", "--jsonl", stream)
    assert "iree" in {x.get("kind") for x in stream_records(stream)}
    for args in (["report", stream], ["triage", stream], ["baseline", "check", stream]):
        r = conform(*args)
        assert r.returncode in (0, 1) and "Traceback" not in r.stderr and "unknown record kind" not in r.stderr, \
            (args, r.stderr)


def test_a_fuzz_campaigns_results_are_read_back(tmp_path):
    r = conform("fuzz", "--count", "3", "--backends", "numpy,reference", "--json", tmp_path / "f.json", "-q")
    assert r.returncode in (0, 1), r.stdout + r.stderr
    r = conform("report", tmp_path / "f.json")
    assert r.returncode == 0 and "total" in r.stdout, r.stdout + r.stderr


# --------------------------------------------------------------------------- #
# 3: fuzz, accuracy, plugin-report, reduce: outputs first, written whole, interrupts save what ran
# --------------------------------------------------------------------------- #

@pytest.mark.parametrize("args, words", [
    (["fuzz", "--count", "2", "--json", "/dev/full/f.json"], ["--json /dev/full/f.json: cannot create"]),
    (["fuzz", "--count", "2", "-o", "/dev/full/out"], ["-o /dev/full/out: cannot create"]),
    (["accuracy", "--op", "exponential", "--type", "f8E4M3FN", "-o", "/dev/full/t.md"], ["-o /dev/full/t.md"]),
    (["accuracy", "--op", "exponential", "--type", "f8E4M3FN", "--json", "DIR"], ["--json", "is a directory"]),
    (["plugin-report", "xla", "SUITE", "-o", "/dev/full/out"], ["-o /dev/full/out: cannot create"]),
    (["reduce", "PROG", "--backends", "numpy,reference", "-o", "/dev/full/out"], ["-o /dev/full/out"]),
    (["diff", "PROG", "--backends", "numpy,reference", "--json", "/dev/full/d.json"], ["/dev/full/d.json"]),
    (["eval", "PROG", "--random", "-o", "/dev/full/o.npz"], ["/dev/full/o.npz"]),
])
def test_unusable_outputs_stop_every_command_before_any_work(tmp_path, args, words):
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "ok.mlir").write_text(PASSING)
    prog = tmp_path / "p.mlir"
    prog.write_text("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
                    "  %0 = stablehlo.add %a, %a : tensor<2xf32>\n  func.return %0 : tensor<2xf32>\n}\n")
    subst = {"SUITE": tmp_path / "suite", "PROG": prog, "DIR": tmp_path}
    t0 = time.monotonic()
    r = conform(*[subst.get(a, a) for a in args], timeout=120)
    usage_error(r, *words)
    assert "programs on" not in r.stdout and "reduced" not in r.stdout
    assert time.monotonic() - t0 < 60


def test_report_and_triage_create_the_folders_of_their_outputs(tmp_path):
    (tmp_path / "ok.mlir").write_text(PASSING)
    conform("run", tmp_path / "ok.mlir", "--json", tmp_path / "r.json")
    r = conform("report", tmp_path / "r.json", "--json", tmp_path / "a" / "b.json", "--html", tmp_path / "c" / "d.html",
                "--junit-xml", tmp_path / "e" / "f.xml")
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "a" / "b.json").read_text())["results"][0]["status"] == "pass"
    assert (tmp_path / "c" / "d.html").stat().st_size and (tmp_path / "e" / "f.xml").stat().st_size
    r = conform("triage", tmp_path / "r.json", "--json", tmp_path / "g" / "t.json")
    assert r.returncode == 0 and json.loads((tmp_path / "g" / "t.json").read_text())["groups"] == []
    assert not [p for p in tmp_path.rglob("*.part")]  # written whole: no temporary file left


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_fuzz_campaign_writes_what_ran_marked_incomplete(tmp_path, sig):
    out = tmp_path / "out"
    p = popen("fuzz", "--count", "100000", "--backends", "numpy,reference", "-o", out, "--no-reduce")
    def programs_ran():
        wait_for(lambda: out.is_dir(), what="the output folder")
        time.sleep(4)

    stdout, stderr = interrupt(p, sig, programs_ran)
    assert p.returncode == 128 + sig, stdout + stderr
    assert "Traceback" not in stderr and "Aborted" not in stderr
    doc = json.loads((out / "results.json").read_text())
    assert doc["complete"] is False and doc["interrupted"] == signal.Signals(sig).name
    ids = [x["id"] for x in doc["results"]]
    assert len(ids) == len(set(ids)) and len(ids) + doc["not_run"]["tests"] == 100000
    assert f"run INCOMPLETE (interrupted by {signal.Signals(sig).name})" in stdout
    r = conform("baseline", "check", out / "results.json")  # a gate over it is red
    assert r.returncode == 1 and "INCOMPLETE" in r.stdout


def test_an_interrupted_accuracy_run_keeps_its_cells_and_writes_its_tables_marked_incomplete(tmp_path):
    cells = tmp_path / "cells.jsonl"
    p = popen("accuracy", "--op", "exponential", "--op", "log", "--op", "sine", "--op", "cosine", "--jsonl", cells,
              "-o", tmp_path / "t.md", "--json", tmp_path / "t.json", "--write-defaults", tmp_path / "d.json")
    stdout, stderr = interrupt(p, signal.SIGTERM, lambda: wait_stderr(p, "inputs"), timeout=240)  # a cell measured
    assert p.returncode == 143, stdout + stderr
    assert "Traceback" not in stderr
    lines = [json.loads(x) for x in cells.read_text().splitlines()]
    assert lines[-1]["run"]["finished"] is False and lines[-1]["run"]["cells"] == len(lines) - 1 > 0
    assert "INCOMPLETE: interrupted by SIGTERM" in (tmp_path / "t.md").read_text()
    meta = json.loads((tmp_path / "t.json").read_text())["meta"]
    assert (meta["complete"], meta["interrupted"]) == (False, "SIGTERM")
    assert not (tmp_path / "d.json").exists()  # bounds from a partial measurement are not written


def test_accuracy_resumes_a_cell_file_whose_last_line_was_cut(tmp_path):
    cells = tmp_path / "cells.jsonl"
    r = conform("accuracy", "--op", "exponential", "--type", "f8E4M3FN", "--type", "f8E5M2", "--jsonl", cells, "-q")
    assert r.returncode == 0, r.stderr
    whole = cells.read_text().splitlines()
    cells.write_text(whole[0] + "\n" + whole[1][:40])  # killed while writing the second cell
    r = conform("accuracy", "--op", "exponential", "--type", "f8E4M3FN", "--type", "f8E5M2", "--jsonl", cells, "-q")
    assert r.returncode == 0 and "a last line cut short (a killed run) was dropped" in r.stderr, r.stderr
    lines = [json.loads(x) for x in cells.read_text().splitlines()]  # every line whole
    assert sorted(x["type"] for x in lines if "type" in x) == ["f8E4M3FN", "f8E5M2"]
    cells.write_text(whole[0] + "\n{broken\n" + whole[1] + "\n")  # not the last line: refused
    r = conform("accuracy", "--op", "exponential", "--type", "f8E4M3FN", "--jsonl", cells, "--render-only")
    usage_error(r, f"{cells}: line 2: not valid JSON")


def test_an_interrupted_plugin_report_writes_the_suites_that_ran_marked_incomplete(tmp_path):
    first, second = tmp_path / "a_quick", tmp_path / "b_slow"
    first.mkdir()
    second.mkdir()
    (first / "ok.mlir").write_text(PASSING)
    slow_file(second / "slow.mlir", ops=300_000)
    out = tmp_path / "out"
    p = popen("plugin-report", "xla", first, second, "-o", out, "--versions", "0", "-j", "1")
    stdout, stderr = interrupt(p, signal.SIGTERM, lambda: (wait_stderr(p, f"running {second}"), time.sleep(0.5)))
    assert p.returncode == 143, stdout + stderr
    assert "run INCOMPLETE (interrupted by SIGTERM)" in stdout and "Traceback" not in stderr
    doc = json.loads((out / "report.json").read_text())
    assert doc["complete"] is False and [r["status"] for r in doc["results"]] == ["pass"]
    assert "INCOMPLETE" in (out / "report.html").read_text()
    r = conform("baseline", "check", out / "report.json")
    assert r.returncode == 1 and "INCOMPLETE" in r.stdout


def test_an_interrupted_reduction_bundles_the_smallest_program_found_so_far(tmp_path):
    prog = tmp_path / "p.mlir"
    body = ["  %0 = stablehlo.add %a, %a : tensor<4xf32>"]
    body += [f"  %{i} = stablehlo.{op} %{i - 1} : tensor<4xf32>"
             for i, op in enumerate(["exponential", "sine", "cosine", "negate", "abs"], start=1)]
    prog.write_text("func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n" + "\n".join(body)
                    + "\n  func.return %5 : tensor<4xf32>\n}\n")
    out = tmp_path / "bundle"
    p = popen("reduce", prog, "--script", "sleep 1; exit 0", "--backends", "numpy", "-o", out)
    stdout, stderr = interrupt(p, signal.SIGINT, lambda: wait_stderr(p, "returned"))  # once an edit is kept
    assert p.returncode == 130, stdout + stderr
    assert "INCOMPLETE: interrupted by SIGINT" in stdout and "Traceback" not in stderr
    readme = (out / "README.md").read_text()
    assert "INCOMPLETE: interrupted by SIGINT; the smallest program found so far" in readme
    assert (out / "program.mlir").read_text().count("stablehlo.") < 6
    assert not [x for x in tmp_path.iterdir() if x.name.endswith(".part")]


# --------------------------------------------------------------------------- #
# 4: only regular files within a bound are read; FIFOs and devices never opened
# --------------------------------------------------------------------------- #

@pytest.mark.parametrize("args", [
    ["report", "BAD"], ["triage", "BAD"], ["baseline", "check", "BAD"], ["baseline", "update", "BAD", "-o", "K"],
    ["run", "OK", "--baseline", "BAD"], ["run", "OK", "--accuracy-profile", "BAD"],
    ["run", "OK", "--jsonl", "BAD", "--resume"], ["accuracy", "--op", "exponential", "--jsonl", "BAD"],
    ["eval", "OK2", "--inputs", "BAD"], ["eval", "BAD"],
])
@pytest.mark.parametrize("bad", ["fifo", "/dev/zero"])
def test_fifos_and_devices_are_refused_as_inputs_without_hanging(tmp_path, args, bad):
    (tmp_path / "ok.mlir").write_text(PASSING)
    (tmp_path / "ok2.mlir").write_text("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
                                       "  func.return %a : tensor<2xf32>\n}\n")
    if bad == "fifo":
        bad = tmp_path / "fifo"
        os.mkfifo(bad)
    subst = {"BAD": bad, "OK": tmp_path / "ok.mlir", "OK2": tmp_path / "ok2.mlir", "K": tmp_path / "k.json"}
    r = conform(*[subst.get(a, a) for a in args], timeout=60)
    usage_error(r, "not a regular file")


@pytest.mark.parametrize("option", ["--conform-baseline", "--conform-accuracy-profile"])
def test_the_pytest_plugin_refuses_a_fifo_as_baseline_or_accuracy_profile(tmp_path, option):
    (tmp_path / "ok.mlir").write_text(PASSING)
    os.mkfifo(tmp_path / "fifo")
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--conform", option,
                        str(tmp_path / "fifo"), str(tmp_path / "ok.mlir")], capture_output=True, text=True,
                       cwd=tmp_path, timeout=120)
    # a usage error at start (the baseline), or on the first test that reads the profile; never a hang
    assert r.returncode == (4 if option == "--conform-baseline" else 1), r.stdout + r.stderr
    assert "not a regular file (a FIFO)" in r.stdout + r.stderr


def test_inputs_over_the_size_bound_are_refused_before_reading(tmp_path):
    (tmp_path / "ok.mlir").write_text(PASSING)
    conform("run", tmp_path / "ok.mlir", "--json", tmp_path / "r.json", "--jsonl", tmp_path / "r.jsonl")
    env = {**os.environ, "CONFORM_MAX_INPUT_MIB": "0.0001"}  # 104 bytes
    for args in (["report", tmp_path / "r.json"], ["baseline", "check", tmp_path / "r.jsonl"],
                 ["run", tmp_path / "ok.mlir", "--jsonl", tmp_path / "r.jsonl", "--resume"]):
        r = subprocess.run([*CMD, *map(str, args)], capture_output=True, text=True, env=env, timeout=60)
        usage_error(r, "over the bound of 104 bytes")


# --------------------------------------------------------------------------- #
# 5: one loading path for constants of every element type under the memory budget
# --------------------------------------------------------------------------- #

@pytest.mark.parametrize("etype, literal", [
    ("complex<f32>", "(1.0,2.0)"), ("complex<f64>", "(1.0,2.0)"), ("f32", "1.0"), ("i8", "1"),
])
def test_constants_of_every_element_type_meet_the_memory_budget(tmp_path, etype, literal):
    """Written element by element (complex ones are decoded from the printed
    generic form): 4096 elements, over a budget of 1 KiB, within 1 MiB."""
    n = 4096
    values = ", ".join([literal] * (n - 1) + [literal.replace("1", "3")])
    p = tmp_path / "c.mlir"
    p.write_text(f"func.func @main() {{\n  %0 = stablehlo.constant dense<[{values}]> : tensor<{n}x{etype}>\n"
                 f"  %1 = stablehlo.slice %0 [0:1] : (tensor<{n}x{etype}>) -> tensor<1x{etype}>\n"
                 f"  check.expect_eq_const %1, dense<[{literal}]> : tensor<1x{etype}>\n  func.return\n}}\n")
    (rec,) = [ev[1] for ev in run_file(str(p), Options(max_bytes=1024)) if ev[0] == "result"]
    assert rec.status == "error" and f"constant of type tensor<{n}x{etype}> needs" in rec.message, rec
    assert "over the memory budget of 0.0 MiB" in rec.message
    (rec,) = [ev[1] for ev in run_file(str(p), Options(max_bytes=2**20)) if ev[0] == "result"]
    assert rec.status == "pass", rec
    splat = tmp_path / "splat.mlir"  # a splat is never materialised: within any budget
    splat.write_text(p.read_text().replace(f"dense<[{values}]>", f"dense<{literal}>"))
    (rec,) = [ev[1] for ev in run_file(str(splat), Options(max_bytes=1024)) if ev[0] == "result"]
    assert rec.status == "pass", rec


# --------------------------------------------------------------------------- #
# 6: bad file contents are usage errors
# --------------------------------------------------------------------------- #

_BAD_VALUES = [7, True, [1], {"a": 1}, "x"]
_RESULT_TYPES = {"message": str, "family": str, "file": str, "function": str, "backend": str, "kind": str,
                 "line": int, "checks": int, "duration": float, "dtypes": list, "ops": list, "verdict": dict,
                 "compare": dict, "disagreements": list}
_RUN_TYPES = {"backend": str, "complete": bool, "interrupted": str, "not_run": dict, "shard": dict,
              "wall_time": float, "paths": list}


def _fits(value, kind) -> bool:
    if isinstance(value, bool):
        return kind is bool
    return isinstance(value, kind) or (kind is float and isinstance(value, int))


def _cases():
    for name, kind in _RESULT_TYPES.items():
        for v in _BAD_VALUES:
            if not _fits(v, kind) and not (name == "ops" and isinstance(v, str)):  # fuzz records: ops as text
                yield "result", name, v
    for name, kind in _RUN_TYPES.items():
        for v in _BAD_VALUES:
            if not _fits(v, kind):
                yield "run", name, v


def test_wrong_typed_fields_of_a_results_file_are_usage_errors_for_every_reader(tmp_path):
    good = {"id": "a.mlir::f", "status": "fail", "message": "boom", "family": "stablehlo.add", "dtypes": ["f32"],
            "ops": ["stablehlo.add"], "file": "a.mlir", "line": 3, "duration": 0.1}
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps({"backend": "numpy", "results": [good]}))
    out = tmp_path / "out"

    def readers(path):
        return [["report", path, "--html", out / "r.html", "--junit-xml", out / "r.xml", "--json", out / "r.json"],
                ["triage", path], ["baseline", "check", path], ["baseline", "update", path, "-o", out / "k.json"]]

    for args in readers(ok):
        assert invoke(*args).exit_code in (0, 1), args
    checked = 0
    for where, name, value in _cases():
        doc = {"backend": "numpy", "results": [dict(good)]}
        (doc["results"][0] if where == "result" else doc)[name] = value
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps(doc))
        for args in readers(bad):
            r = invoke(*args)
            assert r.exit_code == 2 and repr(name) in r.output, (where, name, value, args, r.output)
            checked += 1
    assert checked > 150


def test_a_wrong_typed_field_in_a_stream_is_a_usage_error_naming_its_line(tmp_path):
    stream = tmp_path / "s.jsonl"
    head = {"kind": "header", "format": "stablehlo-conform-stream", "version": 1, "settings": {}}
    stream.write_text(json.dumps(head) + "\n" + json.dumps({"id": "a", "status": "fail", "message": 7}) + "\n")
    for args in (["report", stream], ["baseline", "check", stream], ["triage", stream]):
        r = invoke(*args)
        assert r.exit_code == 2 and "line 2: result 'a': field 'message' must be a string" in r.output, r.output


@pytest.mark.parametrize("content, words", [
    (b"", "the file is empty"), (b"PK\x03\x04 not really a zip", "not a readable .npz"),
    (b"\x93NUMPY garbage", "not a readable .npz"), ("cut", "not a readable .npz"),
])
@pytest.mark.parametrize("command", ["eval", "diff", "reduce", "infeed"])
def test_an_empty_or_corrupt_npz_is_a_usage_error(tmp_path, content, words, command):
    prog = tmp_path / "p.mlir"
    prog.write_text("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
                    "  %0 = stablehlo.add %a, %a : tensor<2xf32>\n  func.return %0 : tensor<2xf32>\n}\n")
    npz = tmp_path / "in.npz"
    if content == "cut":
        np.savez(npz, arg0=np.ones(1000, np.float32))
        npz.write_bytes(npz.read_bytes()[:300])
    else:
        npz.write_bytes(content)
    args = {"eval": ["eval", prog, "--inputs", npz], "diff": ["diff", prog, "--inputs", npz],
            "reduce": ["reduce", prog, "--inputs", npz, "-o", tmp_path / "b"],
            "infeed": ["eval", prog, "--random", "--infeed", npz]}[command]
    r = conform(*args, timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and "Aborted" not in r.stderr
    assert f"cannot read {npz}" in r.stderr and words in r.stderr, r.stderr


@pytest.mark.parametrize("args, words", [
    (["reduce", "PROG", "--property", "compile-error", "--match", "(", "-o", "OUT"], ["--match '('", "not a regular"]),
    (["run", "OK", "-k", "("], ["-k '('", "no test in"]),  # a -k naming no test: a usage error (issue 39)
])
def test_patterns_that_are_not_valid_are_usage_errors_or_match_as_text(tmp_path, args, words):
    (tmp_path / "ok.mlir").write_text(PASSING)
    prog = tmp_path / "p.mlir"
    prog.write_text("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n  func.return %a : tensor<2xf32>\n}\n")
    subst = {"PROG": prog, "OK": tmp_path / "ok.mlir", "OUT": tmp_path / "out"}
    r = conform(*[subst.get(a, a) for a in args])
    usage_error(r, *words)


# --------------------------------------------------------------------------- #
# 7: options are validated
# --------------------------------------------------------------------------- #

@pytest.mark.parametrize("args, words", [
    (["accuracy", "--backend", "typo", "--op", "exponential", "--type", "f32"], ["--backend typo", "unknown backend"]),
    (["run", "OK", "--timeout", "-1"], ["--timeout", "0 or more"]),
    (["run", "OK", "--timeout", "nan"], ["--timeout"]),
    (["run", "OK", "--load-timeout", "-2"], ["--load-timeout"]),
    (["run", "OK", "--max-memory", "-1"], ["--max-memory"]),
    (["fuzz", "--count", "-5"], ["--count"]),
    (["fuzz", "--count", "0"], ["--count"]),
    (["fuzz", "--timeout", "-1"], ["--timeout"]),
    (["fuzz", "--budget", "inf"], ["--budget"]),
    (["reduce", "OK", "--timeout", "-1", "-o", "OUT"], ["--timeout"]),
    (["diff", "OK", "--timeout", "-1"], ["--timeout"]),
    (["eval", "OK", "--timeout", "-1"], ["--timeout"]),
    (["plugin-report", "xla", "--timeout", "-1"], ["--timeout"]),
])
def test_bad_option_values_are_usage_errors(tmp_path, args, words):
    (tmp_path / "ok.mlir").write_text(PASSING)
    subst = {"OK": tmp_path / "ok.mlir", "OUT": tmp_path / "out"}
    r = invoke(*[subst.get(a, a) for a in args])
    assert r.exit_code == 2, r.output
    for w in words:
        assert w in r.output, (w, r.output)
