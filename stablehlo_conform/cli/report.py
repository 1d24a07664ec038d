"""``conform report`` and ``conform baseline``: reports and CI gates from
the results a run wrote with ``--json`` (or streamed with ``--jsonl``).

Exit codes: 0 success (for ``baseline check``: the gate passes), 1 the gate
fails, 2 usage error (missing or unreadable files, bad options).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..harness.records import jsonout
from ..harness.records.gate import Baseline, GateError, evaluate_gate, parse_min_pass_rates, update_baseline
from ..harness.records.guard import atomic_path, write_atomic
from ..harness.records.shard import merge_shards
from ..harness.reports import ReportError, incomplete_note, load_results
from ..harness.reports.html import write_html
from ..harness.reports.junit import write_junit
from ..harness.reports.text import family_table, gate_lines, printable
from .common import InputFile, outputs_ready


def _load_runs(paths):
    """The runs of PATHS, the shards of one run merged into one (see
    :func:`~stablehlo_conform.harness.records.shard.merge_shards`; a merged run with a
    shard missing is incomplete)."""
    try:
        runs, notes = merge_shards([load_results(p) for p in paths])
    except ReportError as e:
        raise click.UsageError(str(e)) from None
    for note in notes:
        click.echo(note)
    return runs


def _load_baseline(path):
    if not path:
        return None
    try:
        return Baseline.load(path)
    except GateError as e:
        raise click.UsageError(str(e)) from None


@click.command()
@click.argument("results", nargs=-1, required=True, type=InputFile())
@click.option("--html", "html_path", type=click.Path(dir_okay=False),
              help="Write one self-contained HTML page (op x element type x backend matrix, failure details).")
@click.option("--junit-xml", "junit_path", type=click.Path(dir_okay=False),
              help="Write a JUnit XML report (one testsuite per results file).")
@click.option("--baseline", "baseline_path", type=InputFile(),
              help="Mark the tests this baseline lists as known failures.")
@click.option("--title", default="", help="Title of the HTML page.")
@click.option("--quiet", "-q", is_flag=True, help="Do not print the pass table.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False),
              help="Write the (merged) results as one JSON document.")
def report(results, html_path, junit_path, baseline_path, title, quiet, json_path):
    """Reports from RESULTS (files written by 'conform run --json' or
    'conform fuzz'), e.g. one per backend: a pass table per op family and
    backend, and optionally an HTML page and JUnit XML. Shards of one run
    ('--shard K/N') are merged into one run; a missing shard makes the merged
    run incomplete and every report says so."""
    outputs_ready({"--html": html_path, "--junit-xml": junit_path, "--json": json_path},
                  inputs=[*results, baseline_path])
    runs = _load_runs(results)
    baseline = _load_baseline(baseline_path)
    if json_path:
        doc = runs[0] if len(runs) == 1 else {"runs": runs}
        write_atomic(json_path, jsonout.dumps(doc, indent=1, default=str))
        click.echo(f"JSON: {json_path}")
    if not quiet:
        for line in family_table(runs):
            click.echo(line)
    _say_incomplete(runs)
    if html_path:
        with atomic_path(html_path) as tmp:
            write_html(tmp, runs, baseline, title)
        click.echo(f"HTML report: {html_path}")
    if junit_path:
        with atomic_path(junit_path) as tmp:
            write_junit(tmp, runs, baseline)
        click.echo(f"JUnit XML: {junit_path}")


@click.group()
def baseline():
    """Baselines: the tests a backend is known to fail, with reasons."""


@baseline.command("update")
@click.argument("results", nargs=-1, required=True, type=InputFile())
@click.option("-o", "--output", "output", required=True, type=click.Path(dir_okay=False),
              help="Baseline file to write (JSON). If it exists, its reasons are kept.")
@click.option("--from", "previous", type=InputFile(),
              help="Take existing entries and reasons from this baseline instead of OUTPUT.")
@click.option("--prune", is_flag=True, help="Drop entries whose tests are not in RESULTS.")
@click.option("--accept-golden-wrong", "accept_golden_wrong", is_flag=True,
              help="Add new entries only for failures whose verdict is 'golden wrong', with the evidence attached.")
def baseline_update(results, output, previous, prune, accept_golden_wrong):
    """Write a baseline listing every non-passing test of RESULTS.

    Entries already in the baseline keep their reason; new entries get the
    failure message as reason; entries of tests that pass now are removed.
    """
    outputs_ready({"-o": output}, inputs=results)  # the baseline it updates (OUTPUT, --from) aside
    runs = _load_runs(results)
    if prune and _say_incomplete(runs):
        raise click.UsageError("--prune would drop the entries of every test the unfinished run did not reach")
    src = previous or (output if Path(output).exists() else None)
    existing = _load_baseline(src)
    recs = [r for run in runs for r in run["results"]]
    backends = sorted({run["backend"] for run in runs})
    new, stats = update_baseline(recs, existing, backend=",".join(backends) if backends else None, prune=prune,
                                 accept_golden_wrong=accept_golden_wrong)
    new.save(output)
    click.echo(f"{output}: {len(new)} expected failures ({len(stats.added)} added, {len(stats.kept)} kept, "
               f"{len(stats.removed)} removed as passing, {len(stats.not_run)} "
               f"{'dropped as' if prune else 'kept though'} not run)")
    for tid in stats.removed[:50]:
        click.echo(f"  removed (passes now): {printable(tid)}")
    if accept_golden_wrong and stats.left_out:
        click.echo(f"{len(stats.left_out)} new failures left out (verdict not 'golden wrong'):")
        for tid in stats.left_out[:50]:
            click.echo(f"  left out: {printable(tid)}")


@baseline.command("check")
@click.argument("results", nargs=-1, required=True, type=InputFile())
@click.option("--baseline", "baseline_path", type=InputFile(),
              help="Expected failures: fail only on regressions.")
@click.option("--min-pass-rate", "min_pass_rate", multiple=True, metavar="[FAMILY=]RATE",
              help="Minimum pass rate per op family (repeatable) or for all.")
def baseline_check(results, baseline_path, min_pass_rate):
    """Gate a finished run (RESULTS from 'conform run --json') as
    'conform run --baseline ... --min-pass-rate ...' would: exit 0 if it
    passes, 1 if not."""
    runs = _load_runs(results)
    bl = _load_baseline(baseline_path)
    try:
        rates = parse_min_pass_rates(min_pass_rate)
    except GateError as e:
        raise click.UsageError(str(e)) from None
    gate = evaluate_gate([r for run in runs for r in run["results"]], bl, rates)
    for line in gate_lines(gate, baseline_path):
        click.echo(line)
    # a gate over a run that did not finish is not green
    sys.exit(1 if _say_incomplete(runs) else gate.exit_code)


def _say_incomplete(runs) -> bool:
    """Print what every run that did not finish left undone; True if any."""
    notes = [(run.get("source"), incomplete_note(run)) for run in runs]
    for source, note in notes:
        if note:
            click.echo(f"{source}: {note}")
    return any(n for _s, n in notes)


COMMANDS = [report, baseline]
