"""Interrupts and child processes in the corners of the gate (issue 39), with
real processes and real signals: an interrupt in plugin-report's version
window or in run's bundle phase ends that phase and every report says
incomplete; accuracy's workers never outlive their command, even one killed
by SIGKILL; a reduce script's processes never outlive its check."""

from __future__ import annotations

import json
import os
import signal
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from test_cli import FAILING, PASSING, SPIN
from test_gate_commands import interrupt, popen, wait_stderr
from test_gate_guarantees import alive, descendants, start, wait_for

ROOT = Path(__file__).resolve().parents[1]
# a test whose checked value never comes: its bundle runs it again until the timeout (SPIN's loop is
# dead code to a bundle: nothing looks at its value)
SPIN_CHECKED = SPIN.replace("  func.return\n", "  check.expect_eq_const %r, dense<0> : tensor<i64>\n  func.return\n")
SIGNALS = [pytest.param(signal.SIGINT, 130, id="SIGINT"), pytest.param(signal.SIGTERM, 143, id="SIGTERM")]


def kill_all(pids) -> None:
    """SIGKILL whatever of ``pids`` is still alive (a test's cleanup)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def forked_workers(pid: int) -> list[int]:
    """The live processes below ``pid`` forked from it (same command line)."""
    try:
        own = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    out = []
    for c in descendants(pid):
        try:
            if Path(f"/proc/{c}/cmdline").read_bytes() == own and alive(c):
                out.append(c)
        except OSError:
            pass
    return out


# --------------------------------------------------------------------------- #
# plugin-report: an interrupt in the version window writes what ran, marked incomplete
# --------------------------------------------------------------------------- #

@pytest.mark.parametrize("sig, code", SIGNALS[:1])  # SIGTERM takes the same way: the bundle phase's test has both
def test_an_interrupt_in_the_version_window_writes_the_reports_marked_incomplete(tmp_path, plugin, sig, code):
    """The suites ran whole; the window's first version is cut short, the
    second never runs: both are counted, every report says incomplete."""
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "ok.mlir").write_text(PASSING)
    out = tmp_path / "out"
    p = popen("plugin-report", f"pjrt:{plugin}", suite, "-o", out, "--versions", "2", "-j", "1")
    stdout, stderr = interrupt(p, sig, lambda: wait_stderr(p, "running the sample"))
    name = signal.Signals(sig).name
    assert p.returncode == code, stdout + stderr
    assert "Traceback" not in stderr and "Aborted" not in stderr
    assert f"run INCOMPLETE (interrupted by {name})" in stdout
    doc = json.loads((out / "report.json").read_text())
    assert (doc["complete"], doc["interrupted"]) == (False, name)
    assert [r["status"] for r in doc["results"]] == ["pass"]
    assert [w["complete"] for w in doc["window"]] == [False]  # the first version, cut short
    sample_files = len(list((ROOT / "testsuite" / "spec").rglob("*.mlir")))
    assert doc["not_run"]["files"] >= sample_files  # the second version, not begun
    assert "INCOMPLETE" in (out / "report.html").read_text()
    errors = [e for e in ET.parse(out / "junit.xml").getroot().iter("error") if e.get("type") == "incomplete"]
    assert len(errors) == 1 and f"interrupted by {name}" in errors[0].get("message")


# --------------------------------------------------------------------------- #
# run --repro-dir: an interrupt ends the bundle phase; the bundles written stay whole
# --------------------------------------------------------------------------- #

@pytest.mark.parametrize("sig, code", SIGNALS)
def test_an_interrupt_in_the_bundle_phase_ends_it_and_the_reports_say_incomplete(tmp_path, sig, code):
    """The first bundle is written (whole) when the signal comes; the second
    (the spinning test run again, for seconds) is not begun or is dropped
    whole, its child process killed."""
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "a_fail.mlir").write_text(FAILING)
    (suite / "b_spin.mlir").write_text(SPIN_CHECKED)
    repro, out = tmp_path / "repro", tmp_path / "out"
    p = start("run", suite, "--timeout", "3", "-j", "1", "--repro-dir", repro, "--json", out / "r.json",
              "--jsonl", out / "r.jsonl")
    children: list[int] = []
    try:
        def first_bundle():
            return repro.is_dir() and [d for d in repro.iterdir() if (d / "README.md").exists()]

        wait_for(first_bundle, timeout=180, what="the first bundle")
        children = descendants(p.pid)
        p.send_signal(sig)
        stdout, stderr = p.communicate(timeout=60)
    finally:
        p.kill()
        p.wait()
    name = signal.Signals(sig).name
    assert p.returncode == code, stdout + stderr
    assert "Traceback" not in stderr
    note = f"run INCOMPLETE (interrupted by {name}): 1 repro bundles not written"
    assert note in stdout and "repro bundles: 1 in" in stdout
    doc = json.loads((out / "r.json").read_text())
    assert (doc["complete"], doc["interrupted"]) == (False, name)
    assert doc["not_run"] == {"tests": 0, "files": 0, "bundles": 1}
    assert sorted(r["status"] for r in doc["results"]) == ["fail", "timeout"]  # every test ran
    end = json.loads((out / "r.jsonl").read_text().splitlines()[-1])
    assert end == {"kind": "end", "complete": False, "interrupted": name, "not_run": doc["not_run"]}
    bundles = sorted(repro.iterdir())  # the first bundle whole, no half one, no temporary folder
    assert len(bundles) == 1, bundles
    assert sorted(f.name for f in bundles[0].iterdir()) == ["README.md", "bundle.json", "expected.npz",
                                                            "program.mlir", "values"]
    assert json.loads((bundles[0] / "bundle.json").read_text())["title"].endswith("a_fail.mlir::wrong")
    wait_for(lambda: not any(alive(c) for c in children), timeout=10, what="the bundle's child to end")


# --------------------------------------------------------------------------- #
# accuracy -j 2: the workers die with their command
# --------------------------------------------------------------------------- #

@pytest.mark.parametrize("sig", [pytest.param(signal.SIGKILL, id="SIGKILL"), pytest.param(signal.SIGTERM, id="SIGTERM")])
def test_accuracy_workers_never_outlive_their_command(tmp_path, sig):
    """Two cells of minutes each, one per worker: killed with SIGKILL (no
    chance to clean up: the kernel ends the workers) or interrupted with
    SIGTERM (the command kills them and ends at once, not after the cells)."""
    p = popen("accuracy", "--op", "exponential", "--op", "log", "--type", "f64", "--samples", "1000000", "-j", "2",
              "-q", "-o", tmp_path / "t.md")
    ws: list[int] = []
    try:
        ws = wait_for(lambda: (lambda w: w if len(w) == 2 else None)(forked_workers(p.pid)), timeout=120,
                      what="two workers")
        p.send_signal(sig)
        stdout, stderr = p.communicate(timeout=60)
        wait_for(lambda: not any(alive(w) for w in ws), timeout=10, what="the workers to end")
    finally:
        p.kill()
        p.wait()
        kill_all(ws)
    if sig == signal.SIGTERM:
        assert p.returncode == 143, stdout + stderr
        assert "INCOMPLETE: interrupted by SIGTERM" in (tmp_path / "t.md").read_text()


# --------------------------------------------------------------------------- #
# reduce --script: the script's processes end with its check
# --------------------------------------------------------------------------- #

@pytest.mark.parametrize("how", ["timeout", "interrupt"])
def test_a_reduce_script_leaves_no_process_behind(tmp_path, how):
    """The script starts a grandchild (``sleep 300 &``) and waits: timed out,
    or the reduction interrupted while it runs, the grandchild goes too."""
    prog = tmp_path / "p.mlir"
    prog.write_text("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
                    "  %0 = stablehlo.add %a, %a : tensor<2xf32>\n  func.return %0 : tensor<2xf32>\n}\n")
    pid_file = tmp_path / "grandchild.pid"
    script = tmp_path / "script.sh"
    script.write_text(f"sleep 300 &\necho $! > {pid_file}.tmp\nmv {pid_file}.tmp {pid_file}\nwait\n")
    timeout = "2" if how == "timeout" else "300"
    p = popen("reduce", prog, "--script", f"sh {script}", "--backends", "numpy", "--timeout", timeout,
              "-o", tmp_path / "out")
    grandchild: list[int] = []
    try:
        wait_for(pid_file.exists, timeout=120, what="the script's grandchild")
        grandchild.append(int(pid_file.read_text()))
        if how == "interrupt":
            p.send_signal(signal.SIGINT)
        stdout, stderr = p.communicate(timeout=60)
        wait_for(lambda: not alive(grandchild[0]), timeout=10, what="the script's grandchild to end")
    finally:
        p.kill()
        p.wait()
        kill_all(grandchild)
    if how == "timeout":
        assert p.returncode == 1 and "the property does not hold" in stdout, stdout + stderr
    else:
        assert p.returncode == 130, stdout + stderr
    assert "Traceback" not in stderr
