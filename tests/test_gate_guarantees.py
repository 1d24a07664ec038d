"""What the gate guarantees, each against a hostile input or event, with real
processes and real signals: interrupted runs exit non-zero and say so, every
input ends as exactly one record, loading is bounded, workers never outlive
the run, outputs are checked up front, resumed streams are repaired or
refused, malformed inputs are usage errors, untrusted folders run no code and
names cannot forge terminal output."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from test_cli import PASSING, SPIN

CMD = [sys.executable, "-m", "stablehlo_conform.cli"]


def conform(*args, cwd=None, timeout=300):
    return subprocess.run([*CMD, *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=timeout)


def start(*args, cwd=None):
    return subprocess.Popen([*CMD, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=cwd)


def slow_file(path: Path, ops: int = 150_000) -> None:
    """One test whose loading (parse + lowering of ``ops`` ops) takes seconds."""
    lines = ["func.func @big() {", "  %0 = stablehlo.constant dense<[1, 2]> : tensor<2xi32>"]
    lines += [f"  %{j} = stablehlo.add %{j - 1}, %0 : tensor<2xi32>" for j in range(1, ops)]
    lines += [f"  check.expect_eq_const %{ops - 1}, dense<[{ops}, {2 * ops}]> : tensor<2xi32>", "  func.return", "}"]
    path.write_text("\n".join(lines) + "\n")


def stream_records(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "id" in rec:
            out.append(rec)
    return out


def wait_for(cond, timeout: float = 120.0, what: str = "condition"):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = cond()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid``."""
    parents: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            parents.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        for c in parents.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def workers(pid: int) -> list[int]:
    """The worker processes of the ``conform`` process ``pid``."""
    out = []
    for c in descendants(pid):
        try:
            if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes() and alive(c):
                out.append(c)
        except OSError:
            pass
    return out


def age(pid: int) -> float:
    """Seconds since ``pid`` started."""
    ticks = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    return uptime - ticks / os.sysconf("SC_CLK_TCK")


# --------------------------------------------------------------------------- #
# fault 3: an interrupted run is never green
# --------------------------------------------------------------------------- #

@pytest.mark.parametrize("sig, code, backend", [(signal.SIGINT, 130, "numpy"), (signal.SIGTERM, 143, "reference")])
def test_interrupted_run_exits_128_plus_signal_and_every_report_says_incomplete(tmp_path, sig, code, backend):
    """With the reference backend the spinning test runs in a native child of the worker: it goes too."""
    src = tmp_path / "suite"
    src.mkdir()
    (src / "a_ok.mlir").write_text(PASSING)
    (src / "b_spin.mlir").write_text(SPIN)
    (src / "c_ok.mlir").write_text(PASSING)
    out = tmp_path / "out"
    p = start("run", src, "--timeout", "0", "--backend", backend, "--json", out / "r.json",
              "--jsonl", out / "r.jsonl", "--junit-xml", out / "r.xml", "--html", out / "r.html")
    try:
        wait_for(lambda: stream_records(out / "r.jsonl"), what="the first result")
        wait_for(lambda: workers(p.pid), what="a worker")
        time.sleep(0.5)  # b_spin is loaded and spinning
        spinning = descendants(p.pid)  # workers (and their native children)
        p.send_signal(sig)
        stdout, stderr = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == code, stdout + stderr
    name = signal.Signals(sig).name
    note = (f"run INCOMPLETE (interrupted by {name}): 1 selected tests not run, "
            "1 files not loaded (their tests are not counted)")
    assert note in stdout
    assert "Traceback" not in stderr
    doc = json.loads((out / "r.json").read_text())
    assert (doc["complete"], doc["interrupted"], doc["not_run"]) == (False, name, {"tests": 1, "files": 1})
    assert [r["status"] for r in doc["results"]] == ["pass"]
    end = json.loads((out / "r.jsonl").read_text().splitlines()[-1])
    assert end == {"kind": "end", "complete": False, "interrupted": name, "not_run": {"tests": 1, "files": 1}}
    suite = ET.parse(out / "r.xml").getroot().find("testsuite")
    errors = [tc.find("error") for tc in suite.iter("testcase") if tc.find("error") is not None]
    assert [(e.get("type"), e.get("message")) for e in errors] == [("incomplete", note)]
    assert note in (out / "r.html").read_text()
    wait_for(lambda: not any(alive(w) for w in spinning), timeout=10, what="every process of the run to end")


# --------------------------------------------------------------------------- #
# faults 1 and 2: loading is bounded, workers die with the run, one record per id
# --------------------------------------------------------------------------- #

def test_fifo_named_or_found_in_a_folder_never_hangs_the_run(tmp_path):
    os.mkfifo(tmp_path / "named.mlir")
    folder = tmp_path / "suite"
    folder.mkdir()
    os.mkfifo(folder / "found.mlir")
    (folder / "ok.mlir").write_text(PASSING)
    out = tmp_path / "r.json"
    r = conform("run", tmp_path / "named.mlir", folder, "--json", out, timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    by_id = {x["id"]: x for x in json.loads(out.read_text())["results"]}
    assert by_id[f"{folder / 'ok.mlir'}::ok"]["status"] == "pass"
    for fifo in (tmp_path / "named.mlir", folder / "found.mlir"):
        rec = by_id[f"{fifo}::<file>"]
        assert rec["status"] == "error" and "not a regular file (a FIFO)" in rec["message"]
    assert len(by_id) == 3


def test_a_file_slower_to_load_than_its_budget_is_a_timeout_and_the_run_goes_on(tmp_path):
    slow_file(tmp_path / "a_slow.mlir")
    (tmp_path / "b_ok.mlir").write_text(PASSING)
    out = tmp_path / "r.json"
    t0 = time.monotonic()
    r = conform("run", tmp_path, "--load-timeout", "1", "--json", out)
    assert r.returncode == 1, r.stdout + r.stderr
    recs = json.loads(out.read_text())["results"]
    assert [(Path(x["id"]).name, x["status"]) for x in recs] == [
        ("a_slow.mlir::<file>", "timeout"), ("b_ok.mlir::ok", "pass")]
    assert "loading the file took longer than 1 s" in recs[0]["message"]
    assert time.monotonic() - t0 < 60


@pytest.mark.parametrize("kills", [1, 2])
def test_a_worker_killed_while_loading_leaves_one_record_per_id(tmp_path, kills):
    """Killed once, the retry runs the file: only its real result. Killed on
    the retry too: one ``<file>`` crash record, never two, never beside
    results."""
    slow_file(tmp_path / "slow.mlir")
    stream = tmp_path / "r.jsonl"
    p = start("run", tmp_path / "slow.mlir", "--jsonl", stream, "--json", tmp_path / "r.json")
    try:
        killed: list[int] = []
        for _ in range(kills):
            w = wait_for(lambda: [x for x in workers(p.pid) if x not in killed and age(x) > 1.5],
                         what="a loading worker")[0]
            assert not stream_records(stream)  # still loading
            os.kill(w, signal.SIGKILL)
            killed.append(w)
        stdout, stderr = p.communicate(timeout=300)
    finally:
        p.kill()
    recs = json.loads((tmp_path / "r.json").read_text())["results"]
    ids = [x["id"] for x in recs]
    assert len(ids) == len(set(ids)) and stream_records(stream) == recs
    if kills == 1:
        assert [(x["id"].rsplit("::")[1], x["status"]) for x in recs] == [("big", "pass")], stdout
    else:
        assert [(x["id"].rsplit("::")[1], x["status"]) for x in recs] == [("<file>", "crash")], stdout
        assert "loading the file: process killed by signal SIGKILL (twice)" in recs[0]["message"]


def test_workers_die_with_a_killed_run(tmp_path):
    (tmp_path / "a_ok.mlir").write_text(PASSING)
    (tmp_path / "b_spin.mlir").write_text(SPIN)
    stream = tmp_path / "r.jsonl"
    p = start("run", tmp_path, "--timeout", "0", "-j", "1", "--jsonl", stream)
    try:
        wait_for(lambda: stream_records(stream), what="the first result")
        ws = workers(p.pid)
        time.sleep(0.5)  # the worker spins in b_spin
        os.kill(p.pid, signal.SIGKILL)  # no chance to clean up: the kernel ends the workers
        p.communicate(timeout=30)
        assert ws
        wait_for(lambda: not any(alive(w) for w in ws), timeout=10, what="the orphaned worker to die")
    finally:
        p.kill()


# --------------------------------------------------------------------------- #
# fault 8: outputs are checked before the first test; a lost output loses only itself
# --------------------------------------------------------------------------- #

def test_output_folders_are_created_and_unusable_paths_stop_before_any_test(tmp_path):
    (tmp_path / "ok.mlir").write_text(PASSING)
    out = tmp_path / "missing" / "deeper"
    r = conform("run", tmp_path / "ok.mlir", "--json", out / "r.json", "--jsonl", out / "s" / "r.jsonl",
                "--junit-xml", out / "j" / "r.xml", "--html", out / "h" / "r.html")
    assert r.returncode == 0, r.stdout + r.stderr
    for f in ("r.json", "s/r.jsonl", "j/r.xml", "h/r.html"):
        assert (out / f).stat().st_size > 0
    # a path under a file cannot be made: a usage error naming it, before any test (no stream started)
    stream = tmp_path / "never.jsonl"
    r = conform("run", tmp_path / "ok.mlir", "--jsonl", stream, "--json", "/dev/full/r.json")
    assert r.returncode == 2 and "--json /dev/full/r.json: cannot create its folder /dev/full" in r.stderr
    assert not stream.exists() and "tests in" not in r.stdout
    r = conform("run", tmp_path / "ok.mlir", "--html", tmp_path)
    assert r.returncode == 2 and "is a directory" in r.stderr


def test_a_full_disk_mid_run_keeps_the_other_outputs_and_says_what_was_lost(tmp_path):
    (tmp_path / "a.mlir").write_text(PASSING)
    (tmp_path / "b.mlir").write_text(PASSING.replace("@ok", "@ok2"))
    out = tmp_path / "out"
    r = conform("run", tmp_path, "--jsonl", "/dev/full", "--json", out / "r.json", "--junit-xml", out / "r.xml",
                "--html", out / "r.html")
    assert r.returncode == 1  # every test passed, but an output was lost
    assert "--jsonl /dev/full: write failed (No space left on device); 4 records not written" in r.stderr
    assert "Traceback" not in r.stderr
    assert json.loads((out / "r.json").read_text())["summary"]["pass"] == 2
    assert ET.parse(out / "r.xml").getroot().get("tests") == "2"
    assert (out / "r.html").exists()
    r = conform("run", tmp_path, "--jsonl", out / "r.jsonl", "--json", "/dev/full")
    assert r.returncode == 1 and "LOST OUTPUT --json /dev/full: not written (No space left on device)" in r.stderr
    assert len(stream_records(out / "r.jsonl")) == 2


# --------------------------------------------------------------------------- #
# fault 6: a file without a test fails the gate unless baselined
# --------------------------------------------------------------------------- #

def test_empty_and_test_less_files_get_a_record_that_fails_the_gate_unless_baselined(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "empty.mlir").write_text("")
    (suite / "comments.mlir").write_text("// RUN: nothing\n// only a comment\n")
    (suite / "no_test.mlir").write_text("func.func private @helper() {\n  func.return\n}\n")
    (suite / "ok.mlir").write_text(PASSING)
    out = tmp_path / "r.json"
    r = conform("run", suite, "--json", out)
    assert r.returncode == 1
    recs = {Path(x["id"]).name: x for x in json.loads(out.read_text())["results"]}
    assert set(recs) == {"empty.mlir::<file>", "comments.mlir::<file>", "no_test.mlir::<file>", "ok.mlir::ok"}
    for name in ("empty", "comments", "no_test"):
        rec = recs[f"{name}.mlir::<file>"]
        assert rec["status"] == "error" and "error: no test in file" in rec["message"], rec
    known = tmp_path / "known.txt"
    known.write_text("".join(f"suite/{n}.mlir::<file> | no test yet\n" for n in ("empty", "comments", "no_test")))
    assert conform("run", suite, "--baseline", known).returncode == 0


# --------------------------------------------------------------------------- #
# fault 9: an untrusted working folder runs no code
# --------------------------------------------------------------------------- #

def test_modules_in_the_working_folder_never_run_in_workers_or_native_children(tmp_path):
    (tmp_path / "ok.mlir").write_text(PASSING)
    for mod in ("multiprocessing", "numpy"):  # what a worker and a native child import first
        (tmp_path / f"{mod}.py").write_text(
            f"open({str(tmp_path / ('ran_' + mod))!r}, 'w').close()\nraise SystemExit('hijacked')\n")
    script = Path(sys.executable).parent / "conform"  # as installed: the script's folder leads sys.path
    for backend in ("numpy", "reference"):
        r = subprocess.run([str(script), "run", "ok.mlir", "--backend", backend], capture_output=True, text=True,
                           cwd=tmp_path, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "1 pass" in r.stdout
    assert not list(tmp_path.glob("ran_*"))


# --------------------------------------------------------------------------- #
# fault 5: resume repairs a cut tail and refuses a stream of other settings
# --------------------------------------------------------------------------- #

def _two_file_suite(tmp_path: Path) -> Path:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "a.mlir").write_text(PASSING)
    (suite / "b.mlir").write_text(PASSING.replace("@ok", "@ok2"))
    return suite


def test_resume_repairs_a_stream_cut_mid_line_and_report_reads_it(tmp_path):
    suite = _two_file_suite(tmp_path)
    stream = tmp_path / "r.jsonl"
    assert conform("run", suite, "--jsonl", stream).returncode == 0
    head, first, second, _end = stream.read_text().splitlines()
    stream.write_text(f"{head}\n{first}\n{second[:25]}")  # killed while writing the second result
    r = conform("report", stream)  # a cut stream is readable, and says the run did not finish
    assert r.returncode == 0 and "run INCOMPLETE (did not finish)" in r.stdout, r.stdout + r.stderr
    r = conform("baseline", "check", stream)  # a gate over a run that did not finish is red
    assert r.returncode == 1 and "run INCOMPLETE (did not finish)" in r.stdout
    r = conform("baseline", "update", stream, "-o", tmp_path / "k.json", "--prune")
    assert r.returncode == 2 and "--prune would drop" in r.stderr
    r = conform("run", suite, "--jsonl", stream, "--resume")
    assert r.returncode == 0 and "resuming: 1 results kept" in r.stdout, r.stdout + r.stderr
    lines = [json.loads(x) for x in stream.read_text().splitlines()]  # every line whole
    assert [x.get("kind") for x in lines] == ["header", None, None, "end"]
    assert sorted(x["id"].rsplit("::")[1] for x in lines[1:3]) == ["ok", "ok2"]
    r = conform("report", stream)
    assert r.returncode == 0 and "INCOMPLETE" not in r.stdout and "2/2" in r.stdout


@pytest.mark.parametrize("change, what", [
    (["--backend", "reference"], "backend 'numpy' (this run: 'reference')"),
    (["--timeout", "5"], "timeout 60.0 (this run: 5.0)"),
    (["-k", "ok2"], "pattern None (this run: 'ok2')"),
    (["SUITE2"], "paths"),
])
def test_resume_refuses_a_stream_written_with_other_settings(tmp_path, change, what):
    suite = _two_file_suite(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    (other / "c.mlir").write_text(PASSING)
    stream = tmp_path / "r.jsonl"
    assert conform("run", suite, "--jsonl", stream).returncode == 0
    before = stream.read_bytes()
    paths = [other] if change == ["SUITE2"] else [suite, *change]
    r = conform("run", *paths, "--jsonl", stream, "--resume")
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"{stream} was written with other settings: " in r.stderr and what in r.stderr
    assert stream.read_bytes() == before


# --------------------------------------------------------------------------- #
# fault 7: malformed --resume / --baseline / results files are usage errors
# --------------------------------------------------------------------------- #

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("body, problem", [
    (b'\xff\xfe not text\n{"id": "x", "status": "pass"}\n', "line 2: not UTF-8 text"),
    (b'[1, 2]\n{"id": "x", "status": "pass"}\n', "line 2: a record must be a JSON object, not list"),
    (b'{"status": "pass"}\n{"id": "x", "status": "pass"}\n', "line 2: a result needs a string 'id' and 'status'"),
    (DEEP.encode() + b'\n{"id": "x", "status": "pass"}\n', "line 2: nested too deeply"),
    (b'{"id": "x", "status": "pass"}\n', "the stream has no header line"),  # written before headers existed
])
def test_a_malformed_resume_stream_is_a_usage_error_naming_file_and_problem(tmp_path, body, problem):
    (tmp_path / "ok.mlir").write_text(PASSING)
    stream = tmp_path / "bad.jsonl"
    head = json.dumps({"kind": "header", "format": "stablehlo-conform-stream", "version": 1, "settings": {}})
    stream.write_bytes(body if "no header" in problem else head.encode() + b"\n" + body)
    r = conform("run", tmp_path / "ok.mlir", "--jsonl", stream, "--resume")
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"{stream}: {problem}" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("name, body, problem", [
    ("known.json", b'{"expected_failures": {"\xff": "x"}}', "not UTF-8 text"),
    ("known.txt", b"a.mlir::ok | \xe9t\xe9\n", "not UTF-8 text"),
    ("known.json", DEEP.encode(), "JSON nested too deeply"),
    ("known.json", b'{"expected_failures": [1, {"a": 1}]}', None),
    ("known.json", b'{"expected_failures": {"a": null}}', "entry 'a' must be an object or a reason string"),
])
def test_a_malformed_baseline_is_a_usage_error_naming_file_and_problem(tmp_path, name, body, problem):
    (tmp_path / "ok.mlir").write_text(PASSING)
    known = tmp_path / name
    known.write_bytes(body)
    results = tmp_path / "r.json"
    r = conform("run", tmp_path / "ok.mlir", "--baseline", known, "--json", results)
    assert "Traceback" not in r.stderr
    if problem is None:  # odd but readable: entries named by their text
        assert r.returncode == 0, r.stderr
        return
    assert r.returncode == 2 and str(known) in r.stderr and problem in r.stderr, r.stderr
    assert not results.exists()  # nothing ran
    r = conform("run", tmp_path / "ok.mlir", "--json", results)
    r = conform("baseline", "check", results, "--baseline", known)
    assert r.returncode == 2 and problem in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("body, problem", [
    (b"\xff\xfe", "not UTF-8 text"),
    (DEEP.encode(), "JSON nested too deeply"),
    (b'{"results": [{"id": 1, "status": "pass"}]}', "a result lacks 'id' or 'status'"),
])
def test_a_malformed_results_file_is_a_usage_error_for_report_and_baseline(tmp_path, body, problem):
    bad = tmp_path / "bad.json"
    bad.write_bytes(body)
    for args in (["report", bad], ["baseline", "check", bad], ["baseline", "update", bad, "-o", tmp_path / "k"]):
        r = conform(*args)
        assert r.returncode == 2 and str(bad) in r.stderr and problem in r.stderr, (args, r.stderr)
        assert "Traceback" not in r.stderr


# --------------------------------------------------------------------------- #
# fault 12: names cannot forge or hide terminal output
# --------------------------------------------------------------------------- #

def test_control_characters_in_file_and_function_names_are_escaped_in_text_output(tmp_path):
    name = "e\x1b[2Jvil\nPASS        forged.mlir"
    (tmp_path / name).write_text(PASSING.replace("@ok", '@"bad\\1B[31mred\\0Aline"').replace("[1, 2]>", "[1, 3]>", 1))
    known = tmp_path / "known.txt"
    known.write_text("nothing.mlir::listed | a baseline, so the gate prints its regressions\n")
    r = conform("run", tmp_path, "--baseline", known)
    assert r.returncode == 1
    assert "\x1b" not in r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert not any(ln.startswith("PASS") for ln in lines)
    escaped = "e\\x1b[2Jvil\\nPASS        forged.mlir::bad\\x1b[31mred\\nline"
    # the FAIL line, the failure group's smallest example and the gate's REGRESSION line
    assert sum(escaped in ln for ln in lines) == 3
    assert all(ln.startswith(("FAIL ", " ", "gate ")) or not ln.strip() or " tests in " in ln
               or " non-passing results in " in ln for ln in lines), lines
