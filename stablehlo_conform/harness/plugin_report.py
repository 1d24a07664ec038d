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
from .backends import display_name, get_backend, shorten_names
from .backends.pjrt import PjrtSpec, parse_name
from .reports.plugin_html import page_summary, render_plugin_page, summary_line
from .triage import KIND_ORDER, kind, signature
from .. import frontend
from .reports.junit import write_junit

ROOT = Path(__file__).resolve().parents[2]
STATUSES = ("pass", "fail", "error", "unsupported", "crash", "timeout")


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
         on_result: Callable[[dict], None] | None = None,
         stop: tuple[type[BaseException], ...] = ()) -> dict[str, Any]:
    """One run; an exception of a type in ``stop`` (an interrupt, with its
    ``signum``) ends it with the results so far, marked incomplete."""
    from .cases import Options, discover  # loads mpmath: kept here for start-up time
    from .runner import Runner  # loads mpmath: kept here for start-up time

    files = discover([str(p) for p in paths])
    t0 = time.monotonic()
    runner = Runner(Options(backend=backend, timeout=timeout), jobs=jobs, on_result=on_result)
    stopped = None
    try:
        results = runner.run(files)
    except stop as e:
        stopped, results = e, list(runner.results)
    counts = Counter(r["status"] for r in results)
    out = {"backend": backend, "paths": [str(p) for p in paths], "wall_time": round(time.monotonic() - t0, 3),
           "summary": {"total": len(results), **{s: counts.get(s, 0) for s in STATUSES}}, "results": results}
    if stopped is not None:
        signum = getattr(stopped, "signum", None)
        out.update(complete=False, interrupted=signal.Signals(signum).name if signum else type(stopped).__name__,
                   not_run=runner.not_run())
    return out


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
            from .cases import discover  # loads mpmath: kept here for start-up time

            later = sum(len(discover([str(s)])) for s in suites[i + 1:])
            doc.update(complete=False, interrupted=run["interrupted"],
                       not_run={"tests": run["not_run"]["tests"], "files": run["not_run"]["files"] + later})
            sample = []  # the version window is not run either
            break
    if sample and versions:
        spec = parse_name(backend) if backend.startswith("pjrt:") else None
        for v in window_versions(info["stablehlo_minimum"], info["stablehlo_current"], versions):
            name = (PjrtSpec(spec.target, spec.options, spec.device, v).name() if spec is not None
                    else None)
            if name is None:
                break  # the built-in client takes the bindings' own version only
            log(f"StableHLO {v}: running the sample ...")
            run = _run(sample, name, jobs, timeout)
            doc["window"].append({"version": v, "summary": run["summary"], "wall_time": run["wall_time"],
                                  "not_pass": [_brief(r) for r in run["results"] if r["status"] != "pass"]})
            log(f"  {_summary_text(run['summary'])}")
    doc["results"] = [r for run in doc["suites"] for r in run["results"]]  # what conform report/baseline read
    doc["by_family"] = _rates(doc["suites"], lambda r: [r.get("family") or "other"])
    doc["by_dtype"] = _rates(doc["suites"], lambda r: list(dict.fromkeys(r.get("dtypes") or ["-"])))
    return doc


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


def _rate(c: dict) -> str:
    return f"{c['pass']}/{c['total']} {100 * c['pass'] / c['total']:.1f}%" if c.get("total") else "-"


def text_lines(doc: dict, details: bool = True, baseline: Any = None) -> list[str]:
    """The report as text; ``details``: with the rates and every non-passing
    test (wrong values first, then crashes, errors, unsupported)."""
    info = doc["client"]
    backend = doc["backend"]
    out = [f"PJRT client {display_name(backend)}"]
    if not info.get("loads"):
        return out + [f"  does not load: {info.get('error', '')}"]
    platform = info["platform"] + ("" if info["platform_version"] in ("", info["platform"])
                                   else f" {info['platform_version']}")
    out += [f"  library   {info['library']}",
            f"  platform  {platform}; PJRT C API {info.get('pjrt_c_api') or '-'}",
            f"  devices   {info['devices']} x {'/'.join(info['device_kinds'])}",
            f"  StableHLO {info['stablehlo_minimum']} to {info['stablehlo_current']}"
            + ("" if info["window_stated"] else " (not stated by the client: default window)"), ""]
    for run in doc["suites"]:
        out.append(f"{run['suite']}: {_summary_text(run['summary'])} ({run['wall_time']:.1f} s)")
    results = [r for run in doc["suites"] for r in run["results"]]
    summary = page_summary(results, baseline)
    out += ["", summary_line(summary) + f", {summary['errors']} errors"
            + (f" ({len(summary['new'])} not in the baseline)" if baseline is not None else "")]
    if details:
        for title, key in (("op family", "by_family"), ("element type", "by_dtype")):
            rows = doc.get(key) or {}
            if rows:
                w = max(len(k) for k in rows)
                out += ["", f"{title:<{w}}  pass rate"] + [f"{k:<{w}}  {_rate(c)}" for k, c in rows.items()]
    if doc["window"]:
        out += ["", "version window (the sample serialized as a portable artifact of each version):"]
        for w in doc["window"]:
            out.append(f"  StableHLO {w['version']:<8} {_summary_text(w['summary'])}")
    bad = [r for r in results if r["status"] != "pass"]
    if bad and details:
        def order(r: dict) -> int:
            sig = signature(r)
            return KIND_ORDER.index(kind(sig.stage)) if sig is not None else len(KIND_ORDER)

        out += ["", f"not passing ({len(bad)}, wrong values first):"]
        for r in sorted(bad, key=order):
            first = shorten_names(r.get("message") or "", [backend]).strip().splitlines()[:1]
            out.append(f"  {r['status'].upper():<11} {r['id']}: {first[0][:300] if first else ''}")
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
        import json

        Path(json_path).write_text(json.dumps(doc, indent=1, default=str))
    if html_path:
        Path(html_path).parent.mkdir(parents=True, exist_ok=True)
        Path(html_path).write_text(render_plugin_page(doc, baseline), encoding="utf-8")
    if junit_path:
        write_junit(junit_path, doc["suites"], baseline)
