"""Values that used to pass unchecked (issue 39): triage takes time linear in
a message (a huge name in a program cannot stall a run), every JSON the tool
writes is strict JSON (no bare ``Infinity``), a results file with a
non-finite number is refused, and bad option values (a ``-k`` that names
nothing, a negative seed, a negative timeout, a StableHLO version the
bindings do not know, a FIFO or a device as a profile) are usage errors
before any work. Real commands in real subprocesses throughout."""

from __future__ import annotations

import ast
import json
import math
import os
import resource
import time
from pathlib import Path

import pytest
from test_gate_commands import invoke
from test_gate_guarantees import conform

import stablehlo_conform
from stablehlo_conform import frontend

INF_TEST = """func.func @inf_test() {
  %0 = stablehlo.constant dense<[1.0e38, 2.0]> : tensor<2xf32>
  %1 = stablehlo.multiply %0, %0 : tensor<2xf32>
  check.expect_almost_eq_const %1, dense<[1.0, 4.0]> : tensor<2xf32>
  func.return
}
"""

PKG = Path(stablehlo_conform.__file__).resolve().parent

EXP = """func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.exponential %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
"""


def _refuse(token: str):
    raise ValueError(f"not JSON: bare {token}")


def strict_json(text: str):
    """``text`` read as strict JSON: ``Infinity``, ``-Infinity``, ``NaN`` refused
    (what a browser's ``JSON.parse``, jq or Go would do)."""
    return json.loads(text, parse_constant=_refuse)


def timed(*args, limit: float, timeout: float = 120):
    """``conform ARGS`` and its wall time; a run still going after ``timeout``
    seconds is killed and fails the test (the old quadratic triage sat
    minutes, deaf to SIGTERM)."""
    t0 = time.monotonic()
    try:
        r = conform(*args, timeout=timeout)
    except Exception as e:  # subprocess.TimeoutExpired: killed
        pytest.fail(f"conform {' '.join(map(str, args))} still running after {timeout} s: {e.__class__.__name__}")
    took = time.monotonic() - t0
    assert took < limit, f"took {took:.1f} s (bound {limit} s)"
    return r


# --------------------------------------------------------------------------- #
# triage in linear time
# --------------------------------------------------------------------------- #


def test_triage_of_megabyte_messages_takes_seconds(tmp_path):
    """Messages of 1 MB whose lines used to cost the normalisation regexes
    quadratic time (a long name, a path-like run, unclosed ``loc(``, many
    assertions without ' failed') triage in seconds, one group each."""
    mb = 1 << 20
    messages = {
        "error": "error: custom_call target '" + "t" * mb + "' unknown",
        "run": "error: " + "a/" * (mb // 2),
        "verify": "error: 'stablehlo.add' op " + "x.y-" * (mb // 4),
        "compile": "compile failed: " + "loc(" * (mb // 4),
        "crash": "SIGABRT\n" + "Assertion " * (mb // 10),
    }
    results = [{"id": f"f.mlir::{k}", "status": "crash" if k == "crash" else "error", "message": m}
               for k, m in messages.items()]
    src = tmp_path / "results.json"
    src.write_text(json.dumps({"backend": "numpy", "results": results}))
    r = timed("triage", src, "--json", tmp_path / "t.json", limit=30)
    assert r.returncode == 1, r.stderr
    groups = strict_json((tmp_path / "t.json").read_text())["groups"]
    assert sum(g["count"] for g in groups) == len(messages)
    assert all(len(g["message"]) <= 200 for g in groups)


def test_a_run_with_a_huge_custom_call_target_finishes(tmp_path):
    """A program naming a 300 KB custom_call target: the run ends seconds
    after its test (it sat minutes in triage), its record and one group."""
    prog = tmp_path / "big.mlir"
    prog.write_text(INF_TEST.replace("@inf_test", "@big_target").replace(
        "%1 = stablehlo.multiply %0, %0 : tensor<2xf32>",
        "%1 = stablehlo.custom_call @" + "t" * 300_000 + "(%0) : (tensor<2xf32>) -> tensor<2xf32>"))
    out = tmp_path / "out.json"
    r = timed("run", prog, "--json", out, limit=60)
    assert r.returncode == 1, r.stderr[-2000:]
    doc = strict_json(out.read_text())
    assert [x["status"] for x in doc["results"]] == ["unsupported"]
    assert len(doc["triage"]["groups"]) == 1


# --------------------------------------------------------------------------- #
# one JSON writer: strict JSON everywhere
# --------------------------------------------------------------------------- #


def test_json_outputs_of_a_run_with_infinite_values_are_strict_json(tmp_path):
    """A check that fails on an infinite value: --json, --jsonl, triage's and
    report's --json and the HTML page's data are strict JSON; the infinite
    values read as the string "inf", and the tool reads its own files back."""
    prog = tmp_path / "inf.mlir"
    prog.write_text(INF_TEST)
    out, stream, page = tmp_path / "out.json", tmp_path / "out.jsonl", tmp_path / "page.html"
    r = conform("run", prog, "--json", out, "--jsonl", stream, "--html", page)
    assert r.returncode == 1, r.stderr
    doc = strict_json(out.read_text())
    example = doc["results"][0]["verdict"]["checks"][0]["examples"][0]
    assert example["actual"] == "inf" and math.isinf(float(example["actual"]))
    lines = [strict_json(ln) for ln in stream.read_text().splitlines()]
    assert lines[1]["verdict"] == doc["results"][0]["verdict"]
    tri, rep = tmp_path / "tri.json", tmp_path / "rep.json"
    assert conform("triage", stream, "--json", tri).returncode == 1
    strict_json(tri.read_text())
    r = conform("report", out, "--json", rep, "--html", tmp_path / "rep.html")
    assert r.returncode == 0, r.stderr
    assert strict_json(rep.read_text())["results"][0]["verdict"]["checks"][0]["examples"][0]["actual"] == "inf"
    for html in (page, tmp_path / "rep.html"):
        text = html.read_text()
        data = text.split('<script type="application/json" id="conform-data">', 1)[1].split("</script>", 1)[0]
        strict_json(data)


def test_an_infinite_ulp_error_survives_a_round_trip_through_a_stream_line():
    """The readers of lines that hold numbers read "inf" back as the number
    (an exhaustive chunk's worst case, resumed from its stream)."""
    # here, not at the top: the tree before the fix has neither module (the file's other tests run there)
    from stablehlo_conform.harness.campaigns.exhaustive import Chunk
    from stablehlo_conform.harness.records.jsonout import dumps

    c = Chunk("numpy", "stablehlo.exponential", "f8E4M3FN", 0, 16, n=16, max_ulp=math.inf,
              worst=[{"index": 3, "args": ["1.0"], "actual": "inf", "correctly_rounded": "2.0", "ulp": math.inf}])
    text = dumps(c.to_json())
    back = Chunk.from_json(strict_json(text))
    assert back == c


# --------------------------------------------------------------------------- #
# report: a non-finite number in a results file is refused
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("form", ["json", "jsonl"])
def test_report_refuses_a_nan_duration_naming_file_and_field(tmp_path, form):
    rec = {"id": "a.mlir::t", "status": "pass", "message": "", "duration": math.nan}
    src = tmp_path / f"nan.{form}"
    if form == "json":
        src.write_text(json.dumps({"backend": "numpy", "results": [rec]}))  # Python writes the bare NaN
    else:
        head = {"kind": "header", "format": "stablehlo-conform-stream", "version": 1, "settings": {"backend": "numpy"}}
        src.write_text("\n".join(json.dumps(x) for x in (head, rec, {"kind": "end", "complete": True})) + "\n")
    page = tmp_path / "page.html"
    r = conform("report", src, "--html", page)
    assert r.returncode == 2, r.stdout + r.stderr
    assert str(src.name) in r.stderr and "'duration'" in r.stderr and "finite" in r.stderr
    assert not page.exists()


# --------------------------------------------------------------------------- #
# bad values: usage errors before any work
# --------------------------------------------------------------------------- #


def test_a_k_pattern_that_names_no_test_is_a_usage_error(tmp_path):
    prog = tmp_path / "inf.mlir"
    prog.write_text(INF_TEST)
    r = conform("run", prog, "-k", "(")
    assert r.returncode == 2 and "-k '('" in r.stderr, r.stdout + r.stderr
    assert conform("run", prog, "-k", "inf_t").returncode == 1  # a pattern that names the test runs it


def test_reduce_match_that_is_no_regular_expression_is_a_usage_error(tmp_path):
    prog = tmp_path / "e.mlir"
    prog.write_text(EXP)
    r = conform("reduce", prog, "--property", "compile-error", "--match", "(", "--backends", "numpy,reference",
                "-o", tmp_path / "r.mlir")
    assert r.returncode == 2 and "--match '('" in r.stderr, r.stderr


@pytest.mark.parametrize("command", [
    ("eval", "{prog}", "--random"),
    ("diff", "{prog}", "--backends", "numpy,reference"),
    ("reduce", "{prog}", "--backends", "numpy,reference", "-o", "{tmp}/r.mlir"),
    ("accuracy", "--op", "exponential", "--type", "f32", "--samples", "10"),
    ("fuzz", "--count", "1", "--backends", "numpy,reference", "--no-reduce"),
], ids=lambda c: c[0])
def test_a_negative_seed_is_a_usage_error(tmp_path, command):
    """numpy's generators take no negative seed: it used to end in a traceback."""
    prog = tmp_path / "e.mlir"
    prog.write_text(EXP)
    r = invoke(*[a.format(prog=prog, tmp=tmp_path) for a in command], "--seed", "-1")  # no traceback
    assert r.exit_code == 2 and "--seed" in r.output and "0 or more" in r.output, r.output


@pytest.mark.parametrize("value", ["-1", "nan", "inf"])
def test_probe_precision_timeout_must_be_finite_and_not_negative(value):
    r = invoke("probe-precision", "numpy", "--timeout", value)
    assert r.exit_code == 2 and "--timeout" in r.output, r.output


def _memory_cap():  # a reader of /dev/zero must not take the machine's memory
    resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_probe_precision_accuracy_profile_is_an_input_file(tmp_path, kind):
    """A FIFO used to hang the command, /dev/zero to be read until memory ran out."""
    import subprocess
    import sys

    if kind == "fifo":
        path = tmp_path / "profile.toml"
        os.mkfifo(path)
    else:
        path = Path("/dev/zero")
    try:
        r = subprocess.run([sys.executable, "-m", "stablehlo_conform.cli", "probe-precision", "numpy",
                            "--accuracy-profile", str(path)], capture_output=True, text=True, timeout=60,
                           preexec_fn=_memory_cap)
    except subprocess.TimeoutExpired:
        pytest.fail("probe-precision --accuracy-profile still reading after 60 s")
    assert r.returncode == 2 and "--accuracy-profile" in r.stderr and "not a regular file" in r.stderr, r.stderr


@pytest.mark.parametrize("command", ["run", "plugin-report"])
def test_a_stablehlo_version_the_bindings_do_not_know_is_a_usage_error(tmp_path, plugin, command):
    """``?stablehlo=99.0`` made every program unsupported (plugin-report:
    exit 0, "coverage 0.0%"): now one usage error naming the versions taken."""
    prog = tmp_path / "inf.mlir"
    prog.write_text(INF_TEST)
    args = (["run", prog, "--backend", f"pjrt:{plugin}?stablehlo=99.0"] if command == "run"
            else ["plugin-report", f"pjrt:{plugin}?stablehlo=99.0", prog, "--versions", "0", "-o", tmp_path / "rep"])
    r = conform(*args, timeout=300)
    assert r.returncode == 2, r.stdout[-2000:] + r.stderr
    current = ".".join(map(str, frontend.stablehlo_version()))
    assert "stablehlo=99.0" in r.stderr and current in r.stderr and "0.9.0" in r.stderr, r.stderr
    assert "coverage" not in r.stdout


def test_every_json_the_package_writes_goes_through_the_one_writer():
    """No module but the writer calls ``json.dump``/``json.dumps`` (which write
    ``Infinity``); the settings hash of a shard is no output and may."""
    allowed = {PKG / "harness" / "records" / "jsonout.py", PKG / "harness" / "records" / "shard.py"}
    found = []
    for path in sorted(PKG.rglob("*.py")):
        if path in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Attribute) and node.attr in ("dump", "dumps")
                    and isinstance(node.value, ast.Name) and node.value.id == "json"):
                found.append(f"{path.relative_to(PKG)}:{node.lineno}")
    assert not found, f"JSON written around stablehlo_conform.harness.records.jsonout: {found}"
