"""``conform plugin-report``: the whole picture of one PJRT plugin.

Exit codes: 0 the report was written and nothing is wrong (no wrong value,
crash, timeout or error that the --baseline does not list; unsupported
programs are coverage, not failures), 1 something is wrong or a report was
lost, 2 usage error (the plugin does not load), 130 / 143 interrupted by
SIGINT / SIGTERM (the reports of what ran are written, marked incomplete).
"""

from __future__ import annotations

import contextlib
import signal
import sys
from pathlib import Path

import click

from ..harness.campaigns import plugin_report as P
from ..harness.records.gate import Baseline, GateError
from ..harness.records.guard import Interrupted, atomic_path, ignore_interrupts, interruptible
from ..harness.reports import incomplete_note
from .common import SECONDS, InputFile, outputs_ready
from .run import backend_name


@click.command("plugin-report")
@click.argument("backend")
@click.argument("suites", nargs=-1, type=click.Path(exists=True))
@click.option("--pjrt-option", "pjrt_options", multiple=True, metavar="KEY=VALUE",
              help="Create option of the plugin's client (repeatable).")
@click.option("--pjrt-device", type=click.IntRange(0), default=None, help="Device index.")
@click.option("--sample", "sample", multiple=True, type=click.Path(exists=True),
              help="Programs run at every StableHLO version of the window (default: the project's spec examples).")
@click.option("--versions", default=6, show_default=True, type=click.IntRange(0),
              help="StableHLO versions of the window to run the sample at (0: none).")
@click.option("--output-dir", "-o", "out_dir", type=click.Path(file_okay=False),
              help="Write report.html, report.json and junit.xml here.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), help="Write the HTML page.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="Write every result as JSON.")
@click.option("--junit-xml", "junit_path", type=click.Path(dir_okay=False), help="Write JUnit XML.")
@click.option("--jobs", "-j", default=2, show_default=True, type=click.IntRange(1, 256), help="Worker processes.")
@click.option("--timeout", default=60.0, show_default=True, type=SECONDS, help="Seconds per test (0: none).")
@click.option("--quiet", "-q", is_flag=True, help="Only the client and the summaries.")
@click.option("--baseline", "baseline_path", type=InputFile(),
              help="Known failures (as for 'conform run'): wrong values, crashes and errors it lists do not fail "
                   "the command.")
def plugin_report(backend, suites, pjrt_options, pjrt_device, sample, versions, out_dir, html_path, json_path,
                  junit_path, jobs, timeout, quiet, baseline_path):
    """Run SUITES (default: the project's testsuite and the official suites
    beside it) on the PJRT client BACKEND (pjrt:PATH.so, pjrt:NAME or xla),
    and the sample at each StableHLO version of the client's window: pass
    rates per op family and element type, every non-pass with its reason.

    Exit code 1 when something is wrong: a wrong value, crash, timeout or
    error not listed in --baseline; 2 when the client does not load (a
    usage error, as in every command)."""
    backend = backend_name(backend, pjrt_options, pjrt_device, timeout or None)  # the load deadline: --timeout
    baseline = None
    if baseline_path:
        try:
            baseline = Baseline.load(baseline_path)
        except GateError as e:
            raise click.UsageError(str(e)) from None
    if not (backend.startswith("pjrt:") or backend == "xla"):
        raise click.UsageError("plugin-report takes a PJRT client: pjrt:PATH.so, pjrt:NAME or xla")
    paths = [Path(s) for s in suites] or P.default_suites()
    if not paths:
        raise click.UsageError("no suites given and none found beside the project")
    if out_dir:
        html_path = html_path or str(Path(out_dir) / "report.html")
        json_path = json_path or str(Path(out_dir) / "report.json")
        junit_path = junit_path or str(Path(out_dir) / "junit.xml")
    sample_paths = [Path(s) for s in sample] or P.default_sample()
    from ..harness.suite.cases import discover  # loads mpmath: kept here for start-up time

    programs = discover([str(p) for p in [*paths, *sample_paths]])  # no report is written over one
    outputs_ready({"--html": html_path, "--json": json_path, "--junit-xml": junit_path}, folders={"-o": out_dir},
                  inputs=[*programs, baseline_path])
    try:
        with interruptible():
            doc = P.build(backend, paths, sample_paths, versions, jobs, timeout or None,
                          log=lambda s: click.echo(s, err=True), stop=(Interrupted,))
    except Interrupted as e:  # before the first test: nothing to report
        sys.exit(e.exit_code)
    ignore_interrupts()  # from here on the reports are written whatever arrives
    outputs = {"HTML": html_path, "JSON": json_path, "JUnit XML": junit_path}
    for line in P.text_lines(doc, details=not quiet, baseline=baseline, outputs=outputs):
        click.echo(line)
    note = incomplete_note(doc)
    if note:
        click.echo(note)
    try:
        with contextlib.ExitStack() as stack:  # each report written whole, or not at all
            tmp = [stack.enter_context(atomic_path(p)) if p else None for p in (json_path, html_path, junit_path)]
            P.write_outputs(doc, *tmp, baseline)
    except OSError as e:
        click.echo(f"LOST OUTPUT: the reports were not written ({e.strerror or e})", err=True)
        sys.exit(1)
    for label, p in (("JSON", json_path), ("HTML", html_path), ("JUnit XML", junit_path)):
        if p:
            click.echo(f"{label}: {p}")
    if note and doc.get("interrupted"):
        sys.exit(128 + signal.Signals[doc["interrupted"]].value)
    sys.exit(P.exit_code(doc, baseline))


COMMANDS = [plugin_report]
