"""JUnit XML and text reports of a run."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from stablehlo_conform.cli import main
from stablehlo_conform.harness.records.gate import Baseline, BaselineEntry
from stablehlo_conform.harness.reports import ReportError, load_results
from stablehlo_conform.harness.reports.junit import junit_tree, write_junit
from stablehlo_conform.harness.reports.text import family_table

ROOT = Path(__file__).resolve().parents[1]
CASES = "tests/data/report_cases.mlir"
XSD = ROOT / "tests" / "data" / "junit.xsd"

# what the common JUnit schema allows (see tests/data/junit.xsd)
ALLOWED = {
    "testsuites": ({"name", "time", "tests", "failures", "disabled", "errors"}, ["testsuite"]),
    "testsuite": ({"name", "tests", "failures", "errors", "time", "disabled", "skipped", "timestamp",
                   "hostname", "id", "package"}, ["properties", "testcase", "system-out", "system-err"]),
    "properties": (set(), ["property"]),
    "property": ({"name", "value"}, []),
    "testcase": ({"name", "assertions", "time", "classname", "status"},
                 ["skipped", "error", "failure", "system-out", "system-err"]),
    "failure": ({"type", "message"}, []),
    "error": ({"type", "message"}, []),
    "skipped": ({"type", "message"}, []),
    "system-out": (set(), []),
    "system-err": (set(), []),
}


def check_structure(el: ET.Element) -> None:
    """Element names, attributes and child order as the schema has them."""
    attrs, children = ALLOWED[el.tag]
    assert set(el.attrib) <= attrs, (el.tag, set(el.attrib) - attrs)
    order = [children.index(c.tag) for c in el]
    assert order == sorted(order), (el.tag, [c.tag for c in el])
    if el.tag == "testsuite":
        assert {"name", "tests"} <= set(el.attrib)
        assert sum(c.tag == "properties" for c in el) <= 1
    if el.tag == "testcase":
        assert "name" in el.attrib
        assert sum(c.tag == "skipped" for c in el) <= 1
    for c in el:
        check_structure(c)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("reports")
    p = subprocess.run([sys.executable, "-m", "stablehlo_conform.cli", "run", CASES, "-q",
                        "--json", str(tmp / "r.json"), "--junit-xml", str(tmp / "r.xml")],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    return tmp, p


def test_run_writes_one_testcase_per_test(run):
    tmp, p = run
    assert p.returncode == 1
    assert f"JUnit XML: {tmp / 'r.xml'}" in p.stdout
    doc = json.loads((tmp / "r.json").read_text())
    root = ET.parse(tmp / "r.xml").getroot()
    check_structure(root)
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    cases = suite.findall("testcase")
    ids = [r["id"] for r in doc["results"]]
    assert [c.get("name") for c in cases] == ids
    assert len(set(ids)) == len(ids) == 4
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("4", "2", "1", "0")
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("4", "2", "1")
    props = {pr.get("name"): pr.get("value") for pr in suite.find("properties")}
    assert props == {"backend": "numpy", "paths": CASES}
    by_name = {c.get("name").rsplit("::", 1)[1]: c for c in cases}
    # op family as classname
    assert by_name["add_f32_pass"].get("classname") == "stablehlo.add"
    assert by_name["<chunk@33>"].get("classname") == "other"
    assert list(by_name["add_f32_pass"]) == []
    # a check failure: first differing index, both values, ULP distance
    (fail,) = list(by_name["add_f32_one_ulp_off"])
    assert fail.tag == "failure" and fail.get("type") == "fail"
    assert "first at index [1]: actual 3.0, expected 3.000000238418579 (1 ULP)" in fail.get("message")
    assert f"location: {CASES}:15" in fail.text and "element types: f32" in fail.text
    # unsupported is a failure (not a skip) unless a baseline lists it
    (uns,) = list(by_name["unknown_custom_call"])
    assert uns.tag == "failure" and uns.get("type") == "unsupported"
    assert uns.get("message").startswith("unsupported: stablehlo.custom_call")
    # a program that does not parse is an error
    (err,) = list(by_name["<chunk@33>"])
    assert err.tag == "error" and err.get("type") == "error"
    assert "expects different type than prior uses" in err.get("message")


@pytest.mark.skipif(shutil.which("xmllint") is None,
                    reason="xmllint not installed (apt-get install -y libxml2-utils)")
def test_junit_validates_against_the_schema(run, tmp_path):
    tmp, _p = run
    p = subprocess.run(["xmllint", "--noout", "--schema", str(XSD), str(tmp / "r.xml")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    # with a baseline (skipped elements) and two suites
    doc = load_results(tmp / "r.json")
    b = Baseline()
    b.add(BaselineEntry(f"{CASES}::add_f32_one_ulp_off", "expectation is one ULP off on purpose"))
    write_junit(tmp_path / "b.xml", [doc, dict(doc, backend="other")], b)
    p = subprocess.run(["xmllint", "--noout", "--schema", str(XSD), str(tmp_path / "b.xml")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def test_baselined_failures_are_skipped(run):
    tmp, _p = run
    doc = load_results(tmp / "r.json")
    b = Baseline(source="known.json")
    b.add(BaselineEntry(f"{CASES}::add_f32_one_ulp_off", "expectation is one ULP off on purpose"))
    b.add(BaselineEntry(f"{CASES}::unknown_custom_call", "no such target"))
    b.add(BaselineEntry(f"{CASES}::add_f32_pass", "was broken once"))
    root = junit_tree([doc], b).getroot()
    check_structure(root)
    suite = root.find("testsuite")
    assert (suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("0", "1", "2")
    cases = {c.get("name").rsplit("::", 1)[1]: c for c in suite.findall("testcase")}
    sk = cases["add_f32_one_ulp_off"].find("skipped")
    assert sk.get("message") == "expected failure (baseline): expectation is one ULP off on purpose"
    assert "(1 ULP)" in cases["add_f32_one_ulp_off"].find("system-out").text
    assert "newly passing" in cases["add_f32_pass"].find("system-out").text
    assert {p.get("name"): p.get("value") for p in suite.find("properties")}["baseline"] == "known.json"


def test_junit_survives_control_characters_and_markup(tmp_path):
    doc = {"backend": "b", "results": [
        {"id": "x.mlir::f<&>", "status": "fail", "family": "stablehlo.add",
         "message": "bad \x01 byte </failure> & \"quotes\"", "duration": 0.5}]}
    write_junit(tmp_path / "x.xml", [doc])
    root = ET.parse(tmp_path / "x.xml").getroot()
    f = root.find("testsuite/testcase/failure")
    assert root.find("testsuite/testcase").get("name") == "x.mlir::f<&>"
    assert f.get("message") == "bad \ufffd byte </failure> & \"quotes\""


def test_report_command_and_family_table(run, tmp_path):
    tmp, _p = run
    doc = json.loads((tmp / "r.json").read_text())
    other = dict(doc, backend="vendor",
                 results=[dict(r, status="pass", backend="vendor") for r in doc["results"]])
    (tmp_path / "v.json").write_text(json.dumps(other))
    r = CliRunner().invoke(main, ["report", str(tmp / "r.json"), str(tmp_path / "v.json"),
                                  "--junit-xml", str(tmp_path / "both.xml")])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0].split() == ["op", "family", "numpy", "vendor"]
    row = {ln.split()[0]: ln.split()[1:] for ln in lines[2:] if ln and not ln.startswith("-")}
    assert row["stablehlo.add"] == ["1/2", "50.0%", "2/2", "100.0%"]
    assert row["stablehlo.custom_call"] == ["0/1", "0.0%", "1/1", "100.0%"]
    assert row["other"] == ["0/1", "0.0%", "1/1", "100.0%"]  # the file that does not parse
    assert row["total"] == ["1/4", "25.0%", "4/4", "100.0%"]
    suites = ET.parse(tmp_path / "both.xml").getroot().findall("testsuite")
    assert [s.get("name") for s in suites] == ["stablehlo-conform.numpy", "stablehlo-conform.vendor"]
    assert [s.get("failures") for s in suites] == ["2", "0"]
    assert CliRunner().invoke(main, ["report", str(tmp_path / "nope.json")]).exit_code == 2


def test_load_results_formats(tmp_path):
    recs = [{"id": "a.mlir::f", "status": "pass", "backend": "x"}, {"id": "a.mlir::g", "status": "fail",
                                                                     "backend": "x"}]
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    doc = load_results(tmp_path / "r.jsonl")
    assert doc["backend"] == "x" and [r["id"] for r in doc["results"]] == ["a.mlir::f", "a.mlir::g"]
    (tmp_path / "bad.json").write_text('{"summary": {}}')
    with pytest.raises(ReportError):
        load_results(tmp_path / "bad.json")
    assert family_table([doc])[-1].split() == ["total", "1/2", "50.0%"]


def test_family_table_keeps_two_runs_of_one_backend_apart():
    """Two results files of one backend (two suites, or a run before and after a change) are two
    columns: each column counts its own file's results, never the two summed."""
    def rec(i, fam, status):
        return {"id": f"t{i}", "family": fam, "status": status}

    first = {"backend": "numpy", "results": [rec(0, "stablehlo.add", "pass"), rec(1, "stablehlo.add", "fail")]}
    second = {"backend": "numpy", "results": [rec(2, "stablehlo.add", "pass"), rec(3, "stablehlo.sort", "pass")]}
    lines = family_table([first, second])
    rows = {ln.split()[0]: ln.split()[1:] for ln in lines[2:] if not ln.startswith("-")}
    assert rows["stablehlo.add"] == ["1/2", "50.0%", "1/1", "100.0%"]
    assert rows["stablehlo.sort"] == ["-", "1/1", "100.0%"]
    assert rows["total"] == ["1/2", "50.0%", "2/2", "100.0%"]
