"""A vendor's first hour (issue 39): what ``plugin-report`` prints (the
verdict first, a bounded list), a ``--compare`` record that does not
contradict itself on booleans and integers, the pages' cells (bounded,
whole repro commands, unsupported not coloured as wrong; checked in headless
Chromium where it is installed) and a clean install and test run (the SPDX
license string, RuntimeWarning an error in the tests)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import numpy as np
import pytest

import stablehlo_conform
from kernel_util import one
from stablehlo_conform.harness.reports.plugin_html import page_summary, render_plugin_page, summary_line

ROOT = Path(__file__).resolve().parents[1]
INTERPRET = (ROOT / ".." / "shared" / "stablehlo-suite" / "interpret").resolve()
# 12 ops with a wrong expected value: 12 groups of wrong values, more than the console lists
OPS = ("add", "subtract", "multiply", "maximum", "minimum", "and", "or", "xor", "shift_left", "remainder",
       "divide", "power")
REPEATS = 30  # one more bug seen 30 times: one group, not 30 lines
WORST = 10  # the failure groups the console lists (plugin_report.WORST)


def conform(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "stablehlo_conform.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


def _wrong_test(name: str, op: str) -> str:
    return (f"func.func @{name}() {{\n"
            "  %0 = stablehlo.constant dense<[3, 5]> : tensor<2xi32>\n"
            f"  %1 = stablehlo.{op} %0, %0 : tensor<2xi32>\n"
            "  check.expect_eq_const %1, dense<[100, 100]> : tensor<2xi32>\n"
            "  func.return\n}\n")


def _suite(folder: Path) -> Path:
    """A small folder: 12 ops with a wrong golden value, one of them 30
    times, and the official add/all_gather tests (whose all_gather test
    fails three checks on the plugin: a long message)."""
    folder.mkdir()
    tests = [_wrong_test(f"wrong_{op}", op) for op in OPS]
    tests += [_wrong_test(f"again_{i}", "add") for i in range(REPEATS)]
    (folder / "wrong.mlir").write_text("\n// -----\n\n".join(tests))
    for name in ("add.mlir", "all_gather.mlir"):
        shutil.copy(INTERPRET / name, folder / name)
    return folder


@pytest.fixture(scope="module")
def report(plugin, tmp_path_factory):
    """One plugin-report on the real plugin: (process, its JSON document, the output folder)."""
    if not INTERPRET.is_dir():
        pytest.skip("../shared/stablehlo-suite is absent")
    tmp = tmp_path_factory.mktemp("first_hour")
    out = tmp / "report"
    r = conform("plugin-report", f"pjrt:{plugin}", _suite(tmp / "suite"), "--versions", "0", "-j", "2", "-o", out)
    assert (out / "report.json").is_file(), r.stdout + r.stderr
    return r, json.loads((out / "report.json").read_text()), out


# --------------------------------------------------------------------------- #
# 1. plugin-report's console: the verdict first, the long lists in the files
# --------------------------------------------------------------------------- #


def test_plugin_report_leads_with_the_verdict_and_prints_a_bounded_list(report):
    r, doc, out = report
    lines = r.stdout.splitlines()
    assert r.returncode == 1, r.stdout + r.stderr  # wrong values fail the command
    assert lines[0].startswith("PJRT client pjrt:")
    # the verdict, as the exit code has it, with the page's counts, on the second line
    assert lines[1].startswith("  verdict   FAILED: ") and summary_line(page_summary(doc["results"])) in lines[1]
    head = "\n".join(lines[:5])
    assert f"{len(doc['results'])} tests" in head
    assert str(out / "report.html") in head and str(out / "report.json") in head  # where the files are
    # every result is in the files; the console lists at most WORST groups, worst first
    bad = [x for x in doc["results"] if x["status"] != "pass"]
    assert len(bad) > len(OPS) + REPEATS - 1 and len(doc["results"]) > 50
    assert len(lines) <= 12 + 2 * WORST + 8, r.stdout
    listed = [ln for ln in lines if re.match(r"\s+\d+ x ", ln)]
    assert len(listed) == WORST and all(" x wrong value · " in ln for ln in listed)
    assert listed[0].lstrip().startswith(f"{REPEATS + 1} x wrong value · stablehlo.add · i32")
    assert re.search(r"\.\.\. \d+ more groups \(\d+ results\): in the reports", r.stdout)
    assert "op family" not in r.stdout and "element type  pass rate" not in r.stdout  # the rates: in the page


# --------------------------------------------------------------------------- #
# 2. --compare on booleans: one story in the record, no ULPs
# --------------------------------------------------------------------------- #


def _keys(obj) -> list[str]:
    """Every key of a JSON value, nested ones too."""
    if isinstance(obj, dict):
        return [k for k, v in obj.items() for k in (k, *_keys(v))]
    if isinstance(obj, list):
        return [k for v in obj for k in _keys(v)]
    return []


def test_compare_on_booleans_names_the_wrong_backend_everywhere_and_counts_no_ulps(tmp_path):
    if not INTERPRET.is_dir():
        pytest.skip("../shared/stablehlo-suite is absent")
    # XLA adds booleans modulo 2 (true + true = false); the spec says logical or
    r = conform("run", INTERPRET / "add.mlir", "-k", "add_op_test_i1", "--compare", "numpy,xla",
                "--json", tmp_path / "r.json")
    doc = json.loads((tmp_path / "r.json").read_text())
    (rec,) = doc["results"]
    v = rec["compare_verdict"]
    assert rec["status"] == "fail" and v["verdict"] == "backend wrong" and v["wrong"] == ["xla"], rec
    assert rec["compare"]["numpy"] == "ok" and rec["compare"]["xla"].startswith("fail: "), rec["compare"]
    for b, judged in v["backends"].items():  # the verdict and the compare field agree on each backend
        assert judged["within"] == (rec["compare"][b] == "ok"), (b, judged, rec["compare"])
    assert v["backends"]["xla"]["elements_differ"] == 1 and v["backends"]["numpy"]["elements_differ"] == 0
    assert not [k for k in _keys(rec) if "ulp" in k.lower()], rec
    assert "ULP" not in rec["message"] and "xla 1/4 elements differ from exact" in rec["message"]
    (group,) = doc["triage"]["groups"]
    assert group["backends"] == ["xla"] and "backends: xla;" in r.stdout
    # the backend's own check: the verdict counts elements, not ULPs
    r = conform("run", INTERPRET / "add.mlir", "-k", "add_op_test_i1", "--backend", "xla",
                "--json", tmp_path / "x.json")
    (rec,) = json.loads((tmp_path / "x.json").read_text())["results"]
    (check,) = rec["verdict"]["checks"]
    assert check["verdict"] == "backend wrong" and check["backend_differs"] == 1 and check["golden_differs"] == 0
    assert not [k for k in _keys(rec) if "ulp" in k.lower()] and "ULP" not in rec["message"], rec


# --------------------------------------------------------------------------- #
# 3. The pages: bounded cells, whole repro commands, unsupported is not red
# --------------------------------------------------------------------------- #

MULTI = ("/s/all_gather.mlir:68:5: check.expect_eq_const: 8/16 elements differ; first at index [0, 2]: actual 5, "
         "expected 1; /s/all_gather.mlir:70:5: check.expect_eq_const: 8/16 elements differ; first at index [0, 2]: "
         "actual 5, expected 1; /s/all_gather.mlir:72:5: check.expect_eq_const: 8/16 elements differ; first at "
         "index [0, 2]: actual 5, expected 1 (+1 more)")
LONG_DIR = "/very/long/folder/of/a/vendor/checkout/" + "/".join(f"level{i}" for i in range(12))
LONG_ERROR = "pjrt:/opt/v/libacme.so: compile failed: " + " ".join(f"note{i}: something about operand {i}"
                                                                   for i in range(80))


def _page_doc() -> dict:
    """A plugin-report document: the all_gather wrong value, a long error, a pass."""
    def rec(tid, status, family, dtype, message=""):
        return {"id": f"{LONG_DIR}/{tid}", "file": f"{LONG_DIR}/{tid.split('::')[0]}", "status": status,
                "family": family, "dtypes": [dtype], "message": message, "backend": "pjrt:/opt/v/libacme.so"}
    results = [rec("all_gather.mlir::main#3", "fail", "stablehlo.all_gather", "i64", MULTI),
               rec("sort.mlir::s", "error", "stablehlo.sort", "f32", LONG_ERROR),
               rec("add.mlir::a", "pass", "stablehlo.add", "f32")]
    client = {"loads": True, "platform": "cpu", "platform_version": "", "devices": 1, "device_kinds": ["cpu"],
              "stablehlo_minimum": "1.0.0", "stablehlo_current": "1.9.0", "window_stated": True,
              "library": "/opt/v/libacme.so"}
    return {"backend": "pjrt:/opt/v/libacme.so", "client": client, "window": [], "results": results,
            "suites": [{"suite": LONG_DIR, "summary": {}, "results": results, "wall_time": 1.0}]}


def _expected_cells(page: str) -> list[str]:
    """The 'expected' cell of each wrong-value row (the 4th cell)."""
    rows = re.findall(r'<tr class="wrong-row" data-status="fail">(.*?)</tr>', page, re.S)
    return [re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)[3] for row in rows]


def test_plugin_page_cells_hold_one_checks_values_in_bounded_boxes():
    page = render_plugin_page(_page_doc())
    (expected,) = _expected_cells(page)
    assert expected == '<div class="clip">1</div>'  # the first check's expected value, not the message
    assert re.search(r"div\.clip\{max-height:[\d.]+em;overflow:auto", page)
    cmd_css = re.search(r"code\.cmd\{[^}]*\}", page).group(0)
    assert "max-height" not in cmd_css and "overflow:hidden" not in cmd_css and "pre-wrap" in cmd_css
    assert '<td class="msg"><div class="clip">' in page  # the long error too


def test_plugin_page_on_the_real_plugin_shows_the_all_gather_values_not_the_message(report):
    _r, _doc, out = report
    page = (out / "report.html").read_text()
    rows = re.findall(r'<tr class="wrong-row" data-status="fail">(.*?)</tr>', page, re.S)
    (row,) = [x for x in rows if "all_gather.mlir::" in x]
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
    assert cells[2] == '<div class="clip">5</div>' and cells[3] == '<div class="clip">1</div>', cells


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def _dom(tmp: Path, page: Path) -> str:
    """The page's DOM after its scripts ran, in headless Chromium at 1400 x 1000."""
    if _chromium() is None:
        pytest.skip("Chromium is not installed; install it with: apt-get install -y chromium")
    args = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
            f"--user-data-dir={tmp / 'profile'}", "--window-size=1400,1000", "--dump-dom"]
    r = subprocess.run([_chromium(), *args, page.resolve().as_uri()], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


MEASURE = """<script>
window.addEventListener('load', function(){
  var b = document.body, rows = [], cut = 0;
  document.querySelectorAll('#wrong-table tr.wrong-row, #errors-table tbody tr').forEach(function(tr){
    rows.push(Math.round(tr.getBoundingClientRect().height)); });
  var cmds = document.querySelectorAll('code.cmd');
  cmds.forEach(function(c){
    if (c.scrollHeight > c.clientHeight + 1 || c.scrollWidth > c.clientWidth + 1) cut++; });
  b.setAttribute('data-row-heights', rows.join(','));
  b.setAttribute('data-cmds', String(cmds.length));
  b.setAttribute('data-cmds-cut', String(cut));
});
</script></body>"""


def test_plugin_page_rows_are_bounded_and_repro_commands_whole_in_chromium(tmp_path):
    page = tmp_path / "page.html"
    page.write_text(render_plugin_page(_page_doc()).replace("</body>", MEASURE, 1))
    dom = _dom(tmp_path, page)
    heights = [int(h) for h in re.search(r'data-row-heights="([\d,]+)"', dom).group(1).split(",")]
    assert len(heights) == 2 and max(heights) < 260, heights  # a long message scrolls in its cell
    assert int(re.search(r'data-cmds="(\d+)"', dom).group(1)) == 2
    assert re.search(r'data-cmds-cut="(\d+)"', dom).group(1) == "0"  # each command shown whole, wrapped


UNSUPPORTED = """func.func @cc_f32() {
  %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %1 = stablehlo.custom_call @no_such_target(%0) : (tensor<2xf32>) -> tensor<2xf32>
  check.expect_eq_const %1, dense<[2.0, 4.0]> : tensor<2xf32>
  func.return
}

// -----

""" + _wrong_test("add_i32", "add")


def test_run_html_gives_unsupported_cells_their_own_neutral_class(tmp_path):
    prog = tmp_path / "u.mlir"
    prog.write_text(UNSUPPORTED)
    r = conform("run", prog, "--html", tmp_path / "r.html", "-j", "1")
    assert r.returncode == 1 and "1 fail, 1 unsupported" in r.stdout, r.stdout + r.stderr
    page = (tmp_path / "r.html").read_text()
    assert "td.cell.unsupported{background:#cfd8dc" in page
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("</body>", """<script>window.addEventListener('load', function(){
  document.querySelectorAll('td.cell[data-dtype]').forEach(function(td){
    td.setAttribute('data-bg', getComputedStyle(td).backgroundColor); });
});</script></body>""", 1))
    dom = _dom(tmp_path, probe)
    cells = {d: (cls, bg) for cls, d, bg in re.findall(
        r'<td class="(cell[^"]*)" data-op="[^"]+" data-dtype="(f32|i32)"[^>]*data-bg="([^"]+)"', dom)}
    assert cells["f32"] == ("cell unsupported", "rgb(207, 216, 220)"), cells  # grey: coverage, not wrong
    assert cells["i32"][0] == "cell" and cells["i32"][1] not in ("rgb(207, 216, 220)",), cells
    red = re.match(r"rgb\((\d+), (\d+), (\d+)\)", cells["i32"][1])
    assert red and int(red.group(1)) > int(red.group(2)) + 60  # the wrong value: red


# --------------------------------------------------------------------------- #
# 4. A clean install and test run
# --------------------------------------------------------------------------- #


def _pyproject() -> dict:
    """The pyproject.toml of the tree the package under test comes from."""
    return tomllib.loads((Path(stablehlo_conform.__file__).resolve().parents[1] / "pyproject.toml").read_text())


def test_license_is_an_spdx_string_with_a_setuptools_that_reads_it():
    """A license table makes setuptools warn on every install (deprecated
    since setuptools 77, which reads the SPDX string)."""
    p = _pyproject()
    assert p["project"]["license"] == "Apache-2.0"
    (req,) = [x for x in p["build-system"]["requires"] if x.startswith("setuptools")]
    assert tuple(int(x) for x in re.search(r">=\s*([\d.]+)", req).group(1).split(".")) >= (77,)
    assert not [c for c in p["project"].get("classifiers", []) if c.startswith("License ::")]


SCAN = """func.func @main(%x: tensor<4x{t}>) -> tensor<4x{t}> {{
  %init = stablehlo.constant dense<0.0> : tensor<{t}>
  %r = "stablehlo.reduce_window"(%x, %init) ({{
    ^bb0(%a: tensor<{t}>, %b: tensor<{t}>):
      %s = stablehlo.add %a, %b : tensor<{t}>
      stablehlo.return %s : tensor<{t}>
  }}) {{window_dimensions = array<i64: 4>, padding = dense<[[3, 0]]> : tensor<1x2xi64>}} : (tensor<4x{t}>, tensor<{t}>) -> tensor<4x{t}>
  func.return %r : tensor<4x{t}>
}}
"""
CONVERT = """func.func @main(%x: tensor<2xf32>) -> tensor<2xi8> {
  %r = stablehlo.convert %x : (tensor<2xf32>) -> tensor<2xi8>
  func.return %r : tensor<2xi8>
}
"""


@pytest.mark.parametrize("t, dt", [("f32", np.float32), ("f16", np.float16)])
def test_kernels_compute_ieee_specials_without_runtime_warnings(t, dt):
    """inf + -inf in a prefix sum (reduce_window) is NaN and a signaling NaN
    converts to 0: results the ops define, computed without a RuntimeWarning
    (the tests turn one into an error)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        scan = one(SCAN.format(t=t), np.array([np.inf, -np.inf, 1, 2], dt))
        snan = np.array([0x7F800001, 0x3F800000], np.uint32).view(np.float32)
        converted = one(CONVERT, snan)
    assert scan[0] == np.inf and np.isnan(scan[1:]).all()
    assert converted.tolist() == [0, 1]


def test_runtime_warnings_fail_the_tests():
    """The kernels silence the warnings of the operations whose results they
    mean (np.errstate); any other RuntimeWarning is an error in the tests."""
    filters = _pyproject()["tool"]["pytest"]["ini_options"].get("filterwarnings", [])
    assert "error::RuntimeWarning" in filters
