"""The vendor's view: the plugin page of ``conform plugin-report`` (wrong
values first, StableHLO/CHLO programs only, checked in headless Chromium),
its exit codes, plugin names in text, triage order, and every command on a
``pjrt:`` backend (``reduce`` above all, on every failing interpret test)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from stablehlo_conform import frontend
from stablehlo_conform.cli import main
from stablehlo_conform.harness.backends import display_name, shorten_names
from stablehlo_conform.harness.records.gate import Baseline, BaselineEntry
from stablehlo_conform.harness.campaigns.reduce import Property, entry_program, reduce_program
from stablehlo_conform.harness.reports.plugin_html import (
    matrix,
    page_summary,
    render_plugin_page,
    summary_line,
    wrong_value,
)
from stablehlo_conform.harness.records.triage import signature, triage

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / ".." / "shared" / "stablehlo-suite"
ARTIFACTS = ROOT / "artifacts"


def conform(*args, timeout=900):
    return subprocess.run([sys.executable, "-m", "stablehlo_conform.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def _browser(tmp: Path, url: str, *what: str) -> subprocess.CompletedProcess:
    args = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
            f"--user-data-dir={tmp / 'profile'}", "--window-size=1400,1000"]
    return subprocess.run([_chromium(), *args, *what, url], capture_output=True, text=True, timeout=120)


# --------------------------------------------------------------------------- #
# Names, signatures, order (no plugin needed)
# --------------------------------------------------------------------------- #


def test_plugin_paths_read_as_the_plugins_name(tmp_path):
    pkg = tmp_path / "site" / "acme_pjrt"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    lib = pkg / "pjrt_c_api_cpu_plugin.so"
    assert display_name(f"pjrt:{lib}") == "pjrt:acme_pjrt"  # the package that holds the library
    assert display_name(f"pjrt:{lib}?stablehlo=1.9.0") == "pjrt:acme_pjrt?stablehlo=1.9.0"
    assert display_name("pjrt:/opt/vendor/libtpu.so?device=1") == "pjrt:tpu?device=1"
    assert display_name("pjrt:tpu") == "pjrt:tpu" and display_name("xla") == "xla"
    text = f"unsupported: pjrt:{lib} (compile failed in {lib})"
    assert shorten_names(text, [f"pjrt:{lib}"]) == "unsupported: pjrt:acme_pjrt (compile failed in acme_pjrt)"


def _rec(tid, status, family, dtype, message="", backend="pjrt:/opt/v/libacme.so"):
    return {"id": f"/s/{tid}", "file": f"/s/{tid.split('::')[0]}", "status": status, "family": family,
            "dtypes": [dtype] if dtype else [], "message": message, "backend": backend}


WRONG = ("/s/pow.mlir:11:5: stablehlo.custom_call @check.expect_almost_eq: 100/600 elements differ; first at "
         "index [0, 0]: actual (36.3-481.7j), expected (36.4-481.7j) (60 ULP); max 18716 ULP, max abs diff 2.4\n"
         "verdict: backend wrong: stablehlo.power (ulp <= 4 ULP, reference mpmath); golden 136 ULP from exact, "
         "backend 261 ULP; 51/600 elements at /s/pow.mlir:11:5")


def _records():
    recs = [_rec(f"u.mlir::u{i}", "unsupported", "stablehlo.all_gather", "i64",
                 "unsupported: pjrt:/opt/v/libacme.so (interpreter.run_parallel at u.mlir:3:4: not StableHLO)")
            for i in range(5)]
    recs += [_rec(f"e.mlir::e{i}", "error", "stablehlo.bitcast_convert", "i1",
                  "pjrt:/opt/v/libacme.so: compile failed: UNKNOWN: -:5:5: error: Last dimension differs")
             for i in range(3)]
    recs += [_rec("c.mlir::c", "crash", "stablehlo.sort", "f32", "backend crashed (SIGSEGV)"),
             _rec("pow.mlir::main", "fail", "stablehlo.power", "complex<f32>", WRONG),
             _rec("max.mlir::m", "fail", "stablehlo.maximum", "complex<f64>",
                  "/s/max.mlir:3:3: check.expect_eq_const: 1/4 elements differ; first at index [2]: actual 1.5j, "
                  "expected 2.5j"),
             _rec("add.mlir::a", "pass", "stablehlo.add", "f32"), _rec("add.mlir::b", "pass", "stablehlo.add", "i1"),
             _rec("arith.mlir::x", "unsupported", "arith.addi", "i8", "unsupported: pjrt:/opt/v/libacme.so (arith)"),
             _rec("math.mlir::y", "pass", "math.ceil", "f32")]
    return recs


def test_triage_lists_wrong_values_first_and_keeps_the_checks_name():
    groups = triage(_records())
    stages = [g.signature.stage for g in groups]
    assert stages == ["wrong value", "wrong value", "crash", "compile", "unsupported", "unsupported"]
    assert [g.count for g in groups][-2:] == [5, 1]  # within a kind: the largest group first
    pow_sig = signature(_records()[9])
    assert "@check.expect_almost_eq" in pow_sig.message and "@f" not in pow_sig.message
    unsupported = signature(_records()[0])
    assert "libacme" not in unsupported.message and "/opt" not in unsupported.message
    assert unsupported.message.startswith("unsupported: pjrt:acme (interpreter.run_parallel at <path>")
    assert groups[0].backends == ["pjrt:acme"]


def test_wrong_value_message_gives_both_values_and_the_bound():
    w = wrong_value(WRONG)
    assert (w["actual"], w["expected"], w["ulp"], w["max_ulp"]) == ("(36.3-481.7j)", "(36.4-481.7j)", "60", "18716")
    assert w["bound"] == "ulp <= 4 ULP" and w["differ"] == "100/600" and w["check"] == "check.expect_almost_eq"
    assert w["verdict"].startswith("backend wrong: stablehlo.power") and "/s/pow.mlir" not in w["verdict"]
    exact = wrong_value(_records()[10]["message"])
    assert (exact["actual"], exact["expected"], exact["bound"]) == ("1.5j", "2.5j", "exact")


def test_summary_matrix_and_page_leave_companion_dialects_out():
    recs = _records()
    s = page_summary(recs)
    # 13 StableHLO programs: 5 unsupported -> 8 ran
    assert (s["plugin_programs"], s["companion"], s["ran"]) == (13, 2, 8)
    assert summary_line(s) == "2 wrong values in 2 ops, 1 crash, coverage 61.5%"
    assert len(s["new"]) == 2 + 1 + 3  # wrong values, the crash and the errors fail the gate
    rows, cols, cells = matrix(recs)
    assert not [r for r in rows if r.startswith(("arith.", "math."))]
    assert rows[:3] == ["stablehlo.maximum", "stablehlo.power", "stablehlo.sort"]  # wrong and crash first
    # wrong values first, then crashes, errors; the rest in type order
    assert cols == ["complex<f32>", "complex<f64>", "f32", "i1", "i64"]
    assert cells[("stablehlo.add", "f32")] == {"pass": 1}
    bl = Baseline()
    for r in recs:
        if r["status"] in ("fail", "crash", "error"):
            bl.add(BaselineEntry(r["id"], "known"))
    assert page_summary(recs, bl)["new"] == []
    doc = {"backend": "pjrt:/opt/v/libacme.so", "client": {"loads": True, "platform": "cpu", "device_kinds": ["cpu"]},
           "suites": [{"suite": "/s", "results": recs}], "window": [], "results": recs}
    page = render_plugin_page(doc)
    order = [page.index(f'id="{k}"') for k in ("summary", "wrong", "errors", "matrix", "coverage")]
    assert order == sorted(order)
    assert 'data-family="arith.addi"' not in page and 'data-family="math.ceil"' not in page
    assert "2 programs of companion dialects" in page
    assert "<title>pjrt:acme: StableHLO conformance</title>" in page and "/opt/v/libacme.so" in page
    assert len(re.findall(r'<tr class="wrong-row"', page)) == 3


def test_page_of_a_plugin_that_does_not_load_says_so():
    doc = {"backend": "pjrt:/x/liba.so", "suites": [], "window": [],
           "client": {"name": "pjrt:/x/liba.so", "loads": False, "error": "crash: the plugin aborted (SIGABRT)"}}
    page = render_plugin_page(doc)
    assert 'id="summary">does not load: crash: the plugin aborted (SIGABRT)</p>' in page


NESTED_GRID = """func.func @process(%x: tensor<2xi64>) -> tensor<2xi64> {
  func.return %x : tensor<2xi64>
}
func.func private @grid(%x: tensor<2xi64>) -> (tensor<2xi64>, tensor<2xi64>) {
  %r:2 = "interpreter.run_parallel"(%x, %x) {programs = [[@process], [@process]]} : (tensor<2xi64>, tensor<2xi64>) -> (tensor<2xi64>, tensor<2xi64>)
  func.return %r#0, %r#1 : tensor<2xi64>, tensor<2xi64>
}
func.func @nested_grid() {
  %c = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  %r:2 = func.call @grid(%c) : (tensor<2xi64>) -> (tensor<2xi64>, tensor<2xi64>)
  check.expect_eq_const %r#1, dense<[1, 2]> : tensor<2xi64>
  func.return
}
"""


def test_unsupported_programs_say_what_and_why(tmp_path):
    quantized = SUITE / "interpret" / "quantized_ops.mlir"
    if not quantized.is_file():
        pytest.skip("../shared/stablehlo-suite is absent")
    nested = tmp_path / "nested_grid.mlir"
    nested.write_text(NESTED_GRID)
    out = tmp_path / "r.json"
    conform("run", ROOT / "testsuite" / "spec" / "all_gather.mlir", nested, quantized, "--backend", "xla",
            "--json", out)
    results = json.loads(out.read_text())["results"]
    msgs = {r["id"].rsplit("/", 1)[-1]: r["message"] for r in results if r["status"] == "unsupported"}
    # a grid in the test's own body runs on the client's devices; one inside another function cannot
    assert {r["id"].rsplit("/", 1)[-1]: r["status"] for r in results}["all_gather.mlir::all_gather_example_1"] \
        == "pass"
    gather = msgs["nested_grid.mlir::nested_grid"]
    assert "interpreter.run_parallel at " in gather and "grid of processes" in gather
    assert "unregistered dialect" not in gather
    q = msgs["quantized_ops.mlir::uniform_quantize"]
    # the bindings' own error, not the note after it
    assert "'stablehlo.uniform_quantize' op" in q and "note:" not in q and "see current operation" not in q


# --------------------------------------------------------------------------- #
# reduce: --entry, complex types, pjrt names
# --------------------------------------------------------------------------- #

TESTS = """func.func private @twice(%x: tensor<2xi32>) -> tensor<2xi32> {
  %0 = stablehlo.add %x, %x : tensor<2xi32>
  func.return %0 : tensor<2xi32>
}
func.func @first() {
  %0 = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  %1 = func.call @twice(%0) : (tensor<2xi32>) -> tensor<2xi32>
  check.expect_eq_const %1, dense<[2, 4]> : tensor<2xi32>
  func.return
}
func.func @second() {
  %0 = stablehlo.constant dense<[3, 4]> : tensor<2xi32>
  %1 = stablehlo.multiply %0, %0 : tensor<2xi32>
  check.expect_eq_const %1, dense<[9, 16]> : tensor<2xi32>
  func.return
}
"""


def test_entry_program_keeps_only_the_entry_and_its_callees():
    text, is_test = entry_program(TESTS, "first")
    assert is_test and set(frontend.load_text(text)[0].funcs) == {"main", "twice"}
    text, _ = entry_program(TESTS, "second")
    assert set(frontend.load_text(text)[0].funcs) == {"main"}
    assert frontend.count_ops(text) == 2


COMPLEX = """func.func @main(%a: tensor<4xcomplex<f32>>, %b: tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>> {
  %0 = stablehlo.add %a, %b : tensor<4xcomplex<f32>>
  %1 = stablehlo.multiply %0, %a : tensor<4xcomplex<f32>>
  %2 = stablehlo.maximum %a, %b : tensor<4xcomplex<f32>>
  %3 = stablehlo.add %1, %2 : tensor<4xcomplex<f32>>
  %4 = stablehlo.negate %3 : tensor<4xcomplex<f32>>
  %5 = stablehlo.subtract %4, %0 : tensor<4xcomplex<f32>>
  return %5 : tensor<4xcomplex<f32>>
}
"""
# equal real parts: maximum compares the imaginary parts
A = np.array([1 + 1j, 2 + 3j, 0 + 1.5j, 4], np.complex64)
B = np.array([1 + 2j, 2 + 1j, 0 + 2.5j, 3], np.complex64)


def test_shapes_of_complex_values_shrink():
    red = reduce_program(COMPLEX, [A, B], ["numpy"], Property(kind="script", script="true"), budget_s=60)
    assert red.holds and red.ops_after < red.ops_before
    assert "tensor<1xcomplex<f32>>" in red.text  # the element type survived the new shape


def test_commands_take_pjrt_names(tmp_path):
    prog = tmp_path / "p.mlir"
    prog.write_text(COMPLEX)
    missing = "pjrt:/nonexistent/libacme.so"
    for args in (["reduce", str(prog), "--backends", f"numpy,{missing}", "-o", str(tmp_path / "o")],
                 ["fuzz", "--backends", f"numpy,{missing}", "--count", "1"],
                 ["accuracy", "--backend", missing, "--op", "exponential", "--type", "f32"]):
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 2, (args, r.output)
        assert "/nonexistent/libacme.so" in r.output and "unknown backend" not in r.output
    r = CliRunner().invoke(main, ["backends", missing])
    assert r.exit_code == 2 and "pjrt:acme does not load" in r.output  # a usage error, as in every command


def test_reduce_on_a_pjrt_backend_shrinks_a_planted_disagreement(plugin, tmp_path):  # noqa: F811
    prog = tmp_path / "planted.mlir"
    prog.write_text(COMPLEX)
    np.savez(tmp_path / "in.npz", arg0=A, arg1=B)
    r = conform("reduce", prog, "--inputs", tmp_path / "in.npz", "--backends", f"numpy,pjrt:{plugin}",
                "-o", tmp_path / "bundle", "--budget", "120", "-q")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "6 ops -> 1 ops" in r.stdout
    reduced = (tmp_path / "bundle" / "program.mlir").read_text()
    assert "stablehlo.maximum" in reduced and "stablehlo.multiply" not in reduced


def test_reduce_entry_on_every_failing_interpret_test_of_xla(tmp_path):
    interpret = SUITE / "interpret"
    if not interpret.is_dir():
        pytest.skip("../shared/stablehlo-suite is absent")
    out = tmp_path / "xla.json"
    conform("run", interpret, "--backend", "xla", "-j", "2", "--json", out, "-q")
    failing = [r for r in json.loads(out.read_text())["results"]
               if r["status"] in ("fail", "error", "crash", "timeout") and not r["id"].endswith(">")]
    assert failing, "the xla backend fails no interpret test: nothing to reduce"
    codes = {}
    for i, rec in enumerate(failing):
        entry = rec["id"].rpartition("::")[2]
        r = conform("reduce", rec["file"], "--entry", entry, "--backends", "numpy,xla", "-o", tmp_path / f"b{i}",
                    "--budget", "5", "--timeout", "20", "-q")
        assert "Traceback" not in r.stderr + r.stdout, (rec["id"], r.stderr[-3000:])
        assert r.returncode in (0, 1, 2), (rec["id"], r.returncode)
        codes[rec["id"]] = r.returncode
    assert 0 in codes.values(), codes  # some failure reproduces as a disagreement and is bundled


# --------------------------------------------------------------------------- #
# The page on the real plugin, in a browser
# --------------------------------------------------------------------------- #

MEASURE = """<script>
window.addEventListener('load', function(){
  var b = document.body, heads = document.querySelectorAll('#matrix thead th.failing');
  var right = 0; heads.forEach(function(h){ right = Math.max(right, h.getBoundingClientRect().right); });
  b.setAttribute('data-failing-right', String(Math.round(right)));
  b.setAttribute('data-failing-heads', String(heads.length));
  b.setAttribute('data-page-width', String(document.documentElement.scrollWidth));
  b.setAttribute('data-wrong-top', String(Math.round(document.getElementById('wrong').getBoundingClientRect().top)));
});
</script></body>"""


def test_plugin_page_on_the_real_plugin(plugin, tmp_path):  # noqa: F811
    interpret = SUITE / "interpret"
    files = [interpret / f for f in ("add.mlir", "maximum.mlir", "minimum.mlir", "bitcast_convert.mlir")]
    files += [ROOT / "testsuite" / "beyond" / "math.mlir", ROOT / "testsuite" / "beyond" / "arith_int.mlir"]
    if not all(f.is_file() for f in files):
        pytest.skip("../shared/stablehlo-suite is absent")
    out = tmp_path / "report"
    r = conform("plugin-report", f"pjrt:{plugin}", *files, "--versions", "0", "-j", "2", "-o", out, "-q")
    doc = json.loads((out / "report.json").read_text())
    fails = [x for x in doc["results"] if x["status"] == "fail"]
    assert fails and r.returncode == 1, r.stdout + r.stderr  # wrong values fail the command
    assert {"stablehlo.maximum", "stablehlo.minimum"} <= {x["family"] for x in fails}
    assert summary_line(page_summary(doc["results"])) in r.stdout
    assert str(plugin) not in r.stdout.replace(f"library   {plugin}", "")  # the path once, in its own line
    companion = [x for x in doc["results"] if x["family"].startswith(("math.", "arith."))]
    assert companion  # math and arith programs ran, and the page leaves them out
    page = out / "report.html"
    text = page.read_text()
    assert len(re.findall(r'<tr class="wrong-row" data-status="fail"', text)) == len(fails)
    if _chromium() is None:
        pytest.skip("Chromium is not installed; install it with: apt-get install -y chromium")
    probe = tmp_path / "probe.html"
    probe.write_text(text.replace("</body>", MEASURE, 1))
    dom = _browser(tmp_path, probe.resolve().as_uri(), "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    attrs = dict(re.findall(r'data-(failing-right|failing-heads|page-width|wrong-top)="(\d+)"', html))
    assert int(attrs["failing-heads"]) >= 2  # complex<f32>, complex<f64>, i1 ...
    assert int(attrs["failing-right"]) <= 1400 and int(attrs["page-width"]) <= 1400  # at a 1400 px window
    assert int(attrs["wrong-top"]) < 1000  # the wrong values are on the first screen
    families = re.findall(r'<tr data-family="([^"]+)"', html)
    assert families and not [f for f in families if "." in f and not f.startswith(("stablehlo.", "chlo."))]
    assert families[0] in ("stablehlo.add", "stablehlo.maximum", "stablehlo.minimum")  # a wrong value first
    kinds = set(re.findall(r'data-kind="(\w+)"', html))
    assert {"wrong", "pass"} <= kinds
    shot = tmp_path / "plugin_page.png"
    p = _browser(tmp_path, page.resolve().as_uri(), f"--screenshot={shot}")
    assert p.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", p.stderr[-2000:]
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copy(shot, ARTIFACTS / "plugin_page.png")
    # the known wrong values, listed in a baseline, no longer fail the command
    known = tmp_path / "known.json"
    u = conform("baseline", "update", out / "report.json", "-o", known)
    assert u.returncode == 0, u.stderr
    r2 = conform("plugin-report", f"pjrt:{plugin}", *files, "--versions", "0", "-j", "2", "--baseline", known,
                 "--html", tmp_path / "again.html", "-q")
    assert r2.returncode == 0, r2.stdout + r2.stderr
    assert "0 not in the baseline" in r2.stdout and ">known<" in (tmp_path / "again.html").read_text()
