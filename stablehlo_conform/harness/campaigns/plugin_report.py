"""The whole picture of one PJRT client: ``conform plugin-report``.

The client is described (platform, devices, PJRT C API, accepted StableHLO
versions), the suites are run on it, and a sample of programs is run once per
StableHLO version of its window, serialized as a portable artifact of that
version, so a vendor sees which versions their plugin really takes. The
result is one JSON document (every record of every run) that the text, HTML
and JUnit outputs are made from.
"""

from __future__ import annotations

import signal
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ... import frontend
from ..backends import display_name, get_backend, shorten_names
from ..backends.pjrt import PjrtSpec, parse_name, reusable_name
from ..records import jsonout
from ..records.result import STATUSES, Result
from ..records.triage import kind, triage
from ..reports.junit import write_junit
from ..reports.plugin_html import _without_location, page_summary, reason, render_plugin_page, summary_line

ROOT = Path(__file__).resolve().parents[3]


def default_suites() -> list[Path]:
    """The project's testsuite and the official suites beside the project."""
    shared = ROOT.parent / "shared" / "stablehlo-suite"
    return [p for p in (ROOT / "testsuite", shared / "interpret", shared / "testdata") if p.is_dir()]


def default_sample() -> list[Path]:
    """Programs run at every version of the window: the spec's examples."""
    p = ROOT / "testsuite" / "spec"
    return [p] if p.is_dir() else []


def window_versions(low: str, high: str, count: int) -> list[str]:
    """Up to ``count`` StableHLO versions from ``low`` to ``high`` (both
    kept, the rest evenly spaced) that the bindings can serialize to."""
    lo, hi = frontend.version_tuple(low), frontend.version_tuple(high)
    hi = min(hi, frontend.stablehlo_version())
    candidates = [(1, m, 0) for m in range(100)]  # 0.x versions: only the stated minimum
    probe = "module {\n  func.func public @main() {\n    func.return\n  }\n}\n"
    ok = []
    for v in [lo, *candidates, hi]:  # each minor version, and the ends as stated
        if lo <= v <= hi and v not in ok:
            try:
                frontend.serialize_portable_artifact(probe, ".".join(map(str, v)))
                ok.append(v)
            except Exception:  # not a version the bindings know
                continue
    ok.sort()
    if len(ok) > count > 1:
        step = (len(ok) - 1) / (count - 1)
        ok = sorted({ok[round(i * step)] for i in range(count)})
    return [".".join(map(str, v)) for v in ok]


def _run(paths: Sequence[Path], backend: str, jobs: int, timeout: float | None,
         on_result: Callable[[Result], None] | None = None,
         stop: tuple[type[BaseException], ...] = (), files: list[str] | None = None) -> dict[str, Any]:
    """One run of ``paths`` (``files``: their files, when already found); an
    exception of a type in ``stop`` (an interrupt, with its ``signum``) ends
    it with the results so far, marked incomplete (stopped before its first
    file: every file not run)."""
    from ..suite.cases import Options, discover  # loads mpmath: kept here for start-up time
    from ..suite.runner import Runner  # loads mpmath: kept here for start-up time

    files = discover([str(p) for p in paths]) if files is None else files
    t0 = time.monotonic()
    # the load deadline (each worker's client start, each file) is --timeout, as in conform run
    runner = Runner(Options(backend=backend, timeout=timeout, load_timeout=timeout), jobs=jobs, on_result=on_result)
    stopped = None
    try:
        done = runner.run(files)
    except stop as e:
        stopped, done = e, list(runner.results)
    results = [r.to_json() for r in done]  # the records the page and the JSON hold
    counts = Counter(r["status"] for r in results)
    out = {"backend": backend, "paths": [str(p) for p in paths], "wall_time": round(time.monotonic() - t0, 3),
           "summary": {"total": len(results), **{s: counts.get(s, 0) for s in STATUSES}}, "results": results}
    if stopped is not None:
        started = runner.unfinished or results  # the runner had taken the files
        out.update(complete=False, interrupted=_stop_name(stopped),
                   not_run=runner.not_run() if started else {"tests": 0, "files": len(files)})
    return out


def _stop_name(e: BaseException) -> str:
    """What stopped a run: the signal's name (an interrupt), else the exception's type."""
    signum = getattr(e, "signum", None)
    return signal.Signals(signum).name if signum else type(e).__name__


def build(backend: str, suites: Sequence[Path], sample: Sequence[Path], versions: int, jobs: int,
          timeout: float | None, log: Callable[[str], None] = lambda s: None,
          stop: tuple[type[BaseException], ...] = ()) -> dict[str, Any]:
    """Describe the client, run every suite, then the sample at each version.
    An exception of a type in ``stop`` ends the work early: the document holds
    what ran, marked incomplete (``complete``, ``interrupted``, ``not_run``)."""
    be = get_backend(backend)
    info = be.info()
    doc: dict[str, Any] = {"backend": backend, "client": info, "suites": [], "window": []}
    if not info.get("loads"):
        return doc
    for i, suite in enumerate(suites):
        log(f"running {suite} ...")
        run = _run([suite], backend, jobs, timeout, stop=stop)
        run["suite"] = str(suite)
        doc["suites"].append(run)
        log(f"  {_summary_text(run['summary'])}")
        if run.get("complete") is False:
            from ..suite.cases import discover  # loads mpmath: kept here for start-up time

            later = sum(len(discover([str(s)])) for s in suites[i + 1:])
            doc.update(complete=False, interrupted=run["interrupted"],
                       not_run={"tests": run["not_run"]["tests"], "files": run["not_run"]["files"] + later})
            sample = []  # the version window is not run either
            break
    if sample and versions and backend.startswith("pjrt:"):  # the built-in client takes its own version only
        _run_window(doc, sample, versions, jobs, timeout, log, stop)
    doc["results"] = [r for run in doc["suites"] for r in run["results"]]  # what conform report/baseline read
    doc["by_family"] = _rates(doc["suites"], lambda r: [r.get("family") or "other"])
    doc["by_dtype"] = _rates(doc["suites"], lambda r: list(dict.fromkeys(r.get("dtypes") or ["-"])))
    return doc


def _run_window(doc: dict[str, Any], sample: Sequence[Path], versions: int, jobs: int, timeout: float | None,
                log: Callable[[str], None], stop: tuple[type[BaseException], ...]) -> None:
    """The sample run at each version of the window of ``doc``'s ``pjrt:``
    client, into ``doc["window"]``. An exception of a type in ``stop`` ends
    the phase: the versions that ran stay, the one it stopped holds what ran
    (``complete`` false), and ``doc`` is marked incomplete, the sample's
    files of the versions not run counted in ``not_run``."""
    from ..suite.cases import discover  # loads mpmath: kept here for start-up time

    spec, info = parse_name(doc["backend"]), doc["client"]
    todo: list[str] = []
    files: list[str] = []
    try:
        files = discover([str(p) for p in sample])
        todo = window_versions(info["stablehlo_minimum"], info["stablehlo_current"], versions)
        for i, v in enumerate(todo):
            try:  # announced, the version gets its entry whatever stops it
                log(f"StableHLO {v}: running the sample ...")
                run = _run(sample, PjrtSpec(spec.target, spec.options, spec.device, v).name(), jobs, timeout,
                           stop=stop, files=files)
            except stop as e:  # before its runner began: nothing of it ran
                run = {"summary": {"total": 0, **dict.fromkeys(STATUSES, 0)}, "wall_time": 0.0, "results": [],
                       "complete": False, "interrupted": _stop_name(e), "not_run": {"tests": 0, "files": len(files)}}
            entry = {"version": v, "summary": run["summary"], "wall_time": run["wall_time"],
                     "not_pass": [_brief(r) for r in run["results"] if r["status"] != "pass"]}
            doc["window"].append(entry)
            if run.get("complete") is False:
                entry["complete"] = False
                later = len(files) * (len(todo) - i - 1)
                doc.update(complete=False, interrupted=run["interrupted"],
                           not_run={"tests": run["not_run"]["tests"], "files": run["not_run"]["files"] + later})
            log(f"  {_summary_text(run['summary'])}")
            if doc.get("complete") is False:
                return
    except stop as e:  # between two versions (or before the first): what is left is known, or not
        if doc.get("complete") is False:
            return  # a second interrupt: the first said what was left
        later = len(files) * (len(todo) - len(doc["window"]))
        doc.update(complete=False, interrupted=_stop_name(e), not_run={"tests": 0, "files": later} if todo else {})


def _brief(rec: dict) -> dict:
    message = shorten_names(rec.get("message") or "", [str(rec.get("backend") or "")] if rec.get("backend") else [])
    return {"id": rec["id"], "status": rec["status"], "message": message[:500]}


def _rates(runs: list[dict], keys: Callable[[dict], list[str]]) -> dict[str, dict[str, int]]:
    table: dict[str, Counter] = defaultdict(Counter)
    for run in runs:
        for rec in run["results"]:
            for k in keys(rec):
                table[k]["total"] += 1
                table[k]["pass"] += rec["status"] == "pass"
    return {k: dict(v) for k, v in sorted(table.items())}


def _summary_text(s: dict) -> str:
    parts = ", ".join(f"{s[k]} {k}" for k in STATUSES if s.get(k))
    return f"{s['total']} tests: {parts or 'nothing ran'}"


WORST = 10  # the failure groups the console lists; the reports hold every result


def text_lines(doc: dict, details: bool = True, baseline: Any = None,
               outputs: dict[str, str | None] | None = None) -> list[str]:
    """The report as text, led by the verdict: the plugin, the verdict (as
    the exit code has it), the counts, where the reports are (``outputs``:
    label -> path), the client's facts, one line per suite and version; with
    ``details`` at most :data:`WORST` failure groups, worst first. The long
    lists (every result, the rates, the unsupported programs) stay in the
    reports."""
    info = doc["client"]
    backend = doc["backend"]
    out = [f"PJRT client {display_name(backend)}"]
    if not info.get("loads"):
        return out + [f"  verdict   FAILED: does not load: {info.get('error', '')}"]
    results = [r for run in doc["suites"] for r in run["results"]]
    s = page_summary(results, baseline)
    verdict = "FAILED" if exit_code(doc, baseline) else "PASSED"
    platform = info["platform"] + ("" if info["platform_version"] in ("", info["platform"])
                                   else f" {info['platform_version']}")
    out += [f"  verdict   {verdict}: {summary_line(s)}, {s['errors']} errors"
            + (f" ({len(s['new'])} not in the baseline)" if baseline is not None else ""),
            f"  tests     {_summary_text({'total': len(results), **Counter(r['status'] for r in results)})}",
            f"  reports   {_outputs_text(outputs or {})}",
            f"  library   {info['library']}",
            f"  platform  {platform}; PJRT C API {info.get('pjrt_c_api') or '-'}",
            f"  devices   {info['devices']} x {'/'.join(info['device_kinds'])}",
            f"  StableHLO {info['stablehlo_minimum']} to {info['stablehlo_current']}"
            + ("" if info["window_stated"] else " (not stated by the client: default window)"), ""]
    for run in doc["suites"]:
        out.append(f"{run['suite']}: {_summary_text(run['summary'])} ({run['wall_time']:.1f} s)")
    if doc["window"]:
        out += ["", "version window (the sample serialized as a portable artifact of each version):"]
        for w in doc["window"]:
            out.append(f"  StableHLO {w['version']:<8} {_summary_text(w['summary'])}"
                       + (" (interrupted)" if w.get("complete") is False else ""))
    if details:
        out += _worst_lines(results, backend)
    return out


def _outputs_text(outputs: dict[str, str | None]) -> str:
    written = [f"{label} {p}" for label, p in outputs.items() if p]
    return " · ".join(written) if written else \
        "none written (-o DIR: the HTML page, every result as JSON, JUnit XML)"


def _worst_lines(results: list[dict], backend: str) -> list[str]:
    """At most :data:`WORST` groups of wrong values, crashes and errors
    (worst first), and one line for the unsupported programs."""
    groups = triage(results)
    bad = [g for g in groups if kind(g.key[0]) != "unsupported"]
    unsupported = [g for g in groups if kind(g.key[0]) == "unsupported"]
    out = []
    if bad:
        out += ["", f"not passing: {sum(g.count for g in bad)} results in {len(bad)} groups, worst first"
                + (f" (the first {WORST})" if len(bad) > WORST else "") + ":"]
        for g in bad[:WORST]:
            sig, ex = g.signature, g.example
            out.append(f"  {g.count:>4} x {sig.stage} · {sig.op or '-'} · {sig.dtype or '-'}: "
                       f"{_without_location(reason(str(ex.get('message') or ''), backend))[:160]}")
            out.append(f"         e.g. {ex.get('id')}")
        if len(bad) > WORST:
            rest = bad[WORST:]
            out.append(f"  ... {len(rest)} more groups ({sum(g.count for g in rest)} results): in the reports")
    if unsupported:
        out += ["", f"unsupported: {sum(g.count for g in unsupported)} programs for {len(unsupported)} reasons "
                "(coverage; listed by reason in the HTML page)"]
    return out


def exit_code(doc: dict, baseline: Any = None) -> int:
    """1 when the client does not load, or some result is a wrong value, a
    crash (or timeout) or an error that ``baseline`` does not list; else 0."""
    if not doc["client"].get("loads"):
        return 1
    return 1 if page_summary(doc.get("results") or [], baseline)["new"] else 0


def write_outputs(doc: dict, json_path: str | None, html_path: str | None, junit_path: str | None,
                  baseline: Any = None) -> None:
    if json_path:

        Path(json_path).write_text(jsonout.dumps(doc, indent=1, default=str))
    if html_path:
        Path(html_path).parent.mkdir(parents=True, exist_ok=True)
        Path(html_path).write_text(render_plugin_page(doc, baseline, parser=frontend.provider_version(),
                                                         rerun_backend=reusable_name(doc["backend"])), encoding="utf-8")
    if junit_path:
        write_junit(junit_path, _junit_runs(doc), baseline)


def _junit_runs(doc: dict) -> list[dict]:
    """The runs of the suites and, when the version window was cut short
    (the suites whole), an empty run of the sample saying so: a CI that
    reads the JUnit XML sees the report incomplete."""
    runs = list(doc["suites"])
    if doc.get("complete") is False and all(r.get("complete", True) for r in runs):
        runs.append({"backend": doc["backend"], "paths": ["the version window's sample"], "results": [],
                     "complete": False, "interrupted": doc.get("interrupted"), "not_run": doc.get("not_run")})
    return runs
