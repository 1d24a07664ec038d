"""``conform triage``: non-passing results grouped by signature (one group, usually one bug)."""

from __future__ import annotations

import sys

import click

from ..harness.records import jsonout
from ..harness.records.guard import write_atomic
from ..harness.records.triage import triage_json, triage_lines, triage_runs
from ..harness.reports import ReportError, load_results
from .common import InputFile, outputs_ready


@click.command()
@click.argument("results", nargs=-1, required=True, type=InputFile())
@click.option("--json", "json_path", type=click.Path(dir_okay=False),
              help="Write the groups as JSON (a list 'groups', one entry per signature).")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1), help="Groups shown in the text.")
def triage(results, json_path, limit):
    """Group the non-passing results of RESULTS (files written by 'conform run --json' or
    '--jsonl', one per backend) by signature: stage, op, element type and normalised message.

    Each group shows its count, the backends that share it and its smallest example.
    Exit code 0 (nothing failed) or 1 (some group), 2 on unreadable input.
    """
    outputs_ready({"--json": json_path}, inputs=results)
    try:
        docs = [load_results(p) for p in results]
    except ReportError as e:
        raise click.UsageError(str(e)) from None
    groups = triage_runs(docs)
    for line in triage_lines(groups, limit):
        click.echo(line)
    if json_path:
        write_atomic(json_path, jsonout.dumps(triage_json(groups), indent=1))
    sys.exit(1 if groups else 0)


COMMANDS = [triage]
