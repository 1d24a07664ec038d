"""JUnit XML reports, valid against the common Jenkins/Ant JUnit schema
(``junit-10.xsd``: ``testsuites`` > ``testsuite`` > ``testcase`` >
``skipped`` / ``error`` / ``failure`` / ``system-out``).

Layout: ``<testsuites>`` holding one ``<testsuite>`` per run (backend), with
``<properties>``, one ``<testcase>`` per test, ``<system-out>`` and
``<system-err>``. A testcase has ``classname`` = the op family (e.g.
``stablehlo.add``), ``name`` = the test id, ``time`` = seconds.

Status mapping (the JUnit view agrees with the gate):

- ``pass``: an empty testcase;
- ``fail``: ``<failure type="fail" message="...">`` whose message is the
  first line of the check message (first differing index, actual and
  expected values, ULP distance) and whose text holds the whole message and
  where the test lives;
- ``unsupported``: ``<failure type="unsupported">``: a test the backend
  cannot run is a failure unless the baseline lists it;
- ``error``, ``crash``, ``timeout``: ``<error type="<status>">``;
- any non-passing test the baseline lists: ``<skipped message="expected
  failure (baseline): <reason>">`` (the original status and message go to
  the testcase's ``<system-out>``), so a report of a passing gate has no
  failures and no errors.
"""

from __future__ import annotations

import re
import socket
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from ..records.gate import Baseline
from ..records.result import Status, describe_failure
from . import incomplete_note

_ILLEGAL_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
MESSAGE_LIMIT = 1000


def _clean(text: object) -> str:
    return _ILLEGAL_XML.sub("\ufffd", str(text))


def _details(rec: dict) -> str:
    f = describe_failure(rec)
    lines = [f"test: {f.id}", f"status: {f.status}"]
    if f.where:
        lines.append(f"location: {f.where}")
    if f.backend:
        lines.append(f"backend: {f.backend}")
    if f.ops:
        lines.append(f"ops: {', '.join(f.ops)}")
    if f.dtypes:
        lines.append(f"element types: {', '.join(f.dtypes)}")
    if f.body:
        lines += ["", f.body]
    return "\n".join(lines)


def testcase(rec: dict, baseline: Baseline | None = None) -> ET.Element:
    """The ``<testcase>`` element of one result record."""
    tc = ET.Element("testcase", {
        "classname": _clean(rec.get("family") or "other"),
        "name": _clean(rec["id"]),
        "time": f"{float(rec.get('duration') or 0.0):.6f}",
    })
    status = rec["status"]
    entry = baseline.match(rec) if baseline is not None else None
    msg = _clean(describe_failure(rec).headline(MESSAGE_LIMIT) or status)
    if status == "pass":
        if entry is not None:
            out = ET.SubElement(tc, "system-out")
            out.text = _clean(f"newly passing: the baseline lists this test ({entry.reason})")
        return tc
    if entry is not None:
        reason = entry.reason or "listed in the baseline"
        ET.SubElement(tc, "skipped", {"message": _clean(f"expected failure (baseline): {reason}"[:MESSAGE_LIMIT])})
        out = ET.SubElement(tc, "system-out")
        out.text = _clean(_details(rec))
        return tc
    known = Status.of(status)  # a status of another tool's record gets a failure
    tag = known.junit if known is not None and known.junit else "failure"
    el = ET.SubElement(tc, tag, {"message": msg, "type": status})
    el.text = _clean(_details(rec))
    return tc


def testsuite(results: Sequence[dict], backend: str, baseline: Baseline | None = None,
              suite_id: int = 0, properties: dict[str, str] | None = None,
              wall_time: float | None = None, timestamp: float | None = None) -> ET.Element:
    cases = [testcase(r, baseline) for r in results]
    failures = sum(1 for c in cases if c.find("failure") is not None)
    errors = sum(1 for c in cases if c.find("error") is not None)
    skipped = sum(1 for c in cases if c.find("skipped") is not None)
    total_time = wall_time if wall_time is not None else sum(float(r.get("duration") or 0) for r in results)
    ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(timestamp if timestamp is not None else time.time()))
    suite = ET.Element("testsuite", {
        "name": _clean(f"stablehlo-conform.{backend}"),
        "tests": str(len(cases)),
        "failures": str(failures),
        "errors": str(errors),
        "skipped": str(skipped),
        "time": f"{total_time:.3f}",
        "timestamp": ts,
        "hostname": _clean(socket.gethostname() or "localhost"),
        "id": str(suite_id),
        "package": "stablehlo-conform",
    })
    props = ET.SubElement(suite, "properties")
    for k, v in {"backend": backend, **(properties or {})}.items():
        ET.SubElement(props, "property", {"name": _clean(k), "value": _clean(v)})
    suite.extend(cases)
    out = ET.SubElement(suite, "system-out")
    out.text = _clean(f"{len(cases)} tests, {failures} failures, {errors} errors, {skipped} skipped")
    ET.SubElement(suite, "system-err")
    return suite


def junit_tree(runs: Sequence[dict], baseline: Baseline | None = None) -> ET.ElementTree:
    """``runs``: documents as written by ``conform run --json`` (``results``,
    ``backend``, optional ``paths`` and ``wall_time``)."""
    root = ET.Element("testsuites", {"name": "stablehlo-conform"})
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    t = 0.0
    for i, run in enumerate(runs):
        props = {}
        if run.get("paths"):
            props["paths"] = " ".join(map(str, run["paths"]))
        if baseline is not None and baseline.source:
            props["baseline"] = baseline.source
        note = incomplete_note(run)
        if note:
            props.update(complete="false", not_run_tests=str((run.get("not_run") or {}).get("tests", "")),
                         not_loaded_files=str((run.get("not_run") or {}).get("files", "")))
        suite = testsuite(run["results"], run.get("backend") or "numpy", baseline, i, props,
                          run.get("wall_time"))
        if note:  # a run that did not finish is an error of its own, so no CI reads it as green
            tc = ET.Element("testcase", {"classname": "stablehlo-conform", "name": "<run incomplete>",
                                         "time": "0.000000"})
            ET.SubElement(tc, "error", {"message": _clean(note), "type": "incomplete"}).text = _clean(note)
            suite.insert(len(suite) - 2, tc)  # before system-out and system-err
            for k in ("tests", "errors"):
                suite.set(k, str(int(suite.get(k)) + 1))
        root.append(suite)
        for k in totals:
            totals[k] += int(suite.get(k))
        t += float(suite.get("time"))
    for k in ("tests", "failures", "errors"):  # the schema has no "skipped" here
        root.set(k, str(totals[k]))
    root.set("time", f"{t:.3f}")
    ET.indent(root, space=" ")
    return ET.ElementTree(root)


def write_junit(path: str | Path, runs: Sequence[dict], baseline: Baseline | None = None) -> None:
    tree = junit_tree(runs, baseline)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    tree.write(str(path), encoding="utf-8", xml_declaration=True)
