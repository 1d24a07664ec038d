"""``conform fuzz``: seeded random programs run on several backends,
every disagreement reduced and bundled.

Exit codes: 0 every program agreed, 1 a disagreement, crash or error was
found, 2 usage error, 130 / 143 interrupted by SIGINT / SIGTERM (the results
of the programs that ran are written, marked incomplete).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..harness.backends import BackendUnavailable, check_name, display_name
from ..harness.campaigns.cluster import ClusterError, executor
from ..harness.records import jsonout
from ..harness.records.guard import Interrupted, ignore_interrupts, interruptible, write_atomic
from ..harness.records.shard import ShardError, parse_shard
from ..harness.reports import incomplete_note
from .common import SECONDS, SEED, outputs_ready


@click.command()
@click.option("--seed", type=SEED, default=0, show_default=True,
              help="Campaign seed (program i of a seed never changes).")
@click.option("--count", type=click.IntRange(1), default=100, show_default=True,
              help="Programs in the campaign (all shards).")
@click.option("--backends", default="numpy,xla", show_default=True,
              help="Comma-separated backends; the first is the baseline the others are compared with.")
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False),
              help="Folder for the repro bundles (one per disagreement or crash) and results.json; "
                   "without it nothing is reduced or bundled.")
@click.option("--shard", "shard", metavar="K/N", help="Run only programs i with i mod N == K-1.")
@click.option("--budget", type=SECONDS, default=30.0, show_default=True,
              help="Seconds the reducer may spend on each disagreement or crash.")
@click.option("--timeout", type=SECONDS, default=60.0, show_default=True,
              help="Seconds per program and backend (0: none).")
@click.option("--no-reduce", is_flag=True, help="Bundle nothing: only find and group disagreements.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False),
              help="Write the results (default with -o: DIR/results.json); 'conform report' merges shards.")
@click.option("--quiet", "-q", is_flag=True, help="Only the summary.")
@click.option("--cluster", metavar="tcp://HOST:PORT",
              help="Run the programs on the workers of this Dask scheduler (each starts the backends itself); "
                   "the bundles come back into -o.")
def fuzz(seed, count, backends, out_dir, shard, budget, timeout, no_reduce, json_path, quiet, cluster):
    """Generate COUNT random valid StableHLO programs from SEED, run each on
    BACKENDS, compare their results and reduce every disagreement or crash
    to a repro bundle in the output folder."""
    from ..harness.campaigns.fuzz import groups, run_campaign  # loads mpmath: kept here for start-up time

    try:
        sh = parse_shard(shard)
    except ShardError as e:
        raise click.UsageError(str(e)) from None
    names = [b.strip() for b in backends.split(",") if b.strip()]
    if len(names) < 2:
        raise click.UsageError("--backends needs at least two backends to compare")
    for n in names:
        try:
            check_name(n)
        except BackendUnavailable as e:
            raise click.UsageError(str(e)) from None
    if out_dir:
        json_path = json_path or str(Path(out_dir) / "results.json")
    outputs_ready({"--json": json_path}, folders={"-o": out_dir})
    log = (lambda _s: None) if quiet else (lambda s: click.echo(s))
    pool = None
    if cluster:
        try:
            pool = executor(cluster)
        except ClusterError as e:
            raise click.UsageError(str(e)) from None
    interrupted = None
    with interruptible():
        try:
            doc = run_campaign(seed, count, names, out_dir, sh, budget, timeout or None, reduce=not no_reduce,
                               log=log, stop=(Interrupted,), pool=pool)
        except Interrupted as e:  # not inside a program: nothing ran yet
            interrupted = e
            doc = None
        except ClusterError as e:
            click.echo(f"error: {e}", err=True)
            sys.exit(1)
        finally:
            if pool is not None:
                pool.close()
    ignore_interrupts()  # from here on the results are written whatever arrives
    if doc is None:
        sys.exit(interrupted.exit_code)
    for line in summary_lines(doc, groups(doc["results"])):
        click.echo(line)
    if not doc["complete"]:
        click.echo(incomplete_note(doc))
    if json_path:
        try:
            write_atomic(json_path, jsonout.dumps(doc, indent=1, default=str))
            click.echo(f"results: {json_path}")
        except OSError as e:
            click.echo(f"LOST OUTPUT --json {json_path}: not written ({e.strerror or e})", err=True)
            sys.exit(1)
    if doc.get("interrupted"):
        sys.exit(128 + doc["interrupted_signum"])
    s = doc["summary"]
    sys.exit(0 if s["pass"] == s["total"] else 1)


def summary_lines(doc: dict, grouped) -> list[str]:
    s, f = doc["summary"], doc["fuzz"]
    sh = doc.get("shard")
    where = f" (shard {sh['index']}/{sh['count']})" if sh else ""
    t = f["seconds"]
    lines = ["", f"seed {f['seed']}{where}: {s['total']} programs on {', '.join(map(display_name, f['backends']))} in "
             f"{doc['wall_time']:.1f} s (generate {t['generate']:.1f} s, run {t['run']:.1f} s, "
             f"reduce {t['reduce']:.1f} s)",
             f"  {s['pass']} agree, {s['fail']} disagree, {s['crash'] + s['timeout']} crash or time out, "
             f"{s['error'] + s['unsupported']} fail to run on a backend"]
    bundles = sum(1 for r in doc["results"] if r.get("bundle"))
    if bundles:
        lines.append(f"  {bundles} reduced and bundled")
    if grouped:
        lines.append(f"\n{'count':>5}  {'status':<11} {'ops (reduced)':<50} element types")
        for (status, ops, types), recs in grouped:
            example = min(recs, key=lambda r: r.get("ops_after", 10**9))
            lines.append(f"{len(recs):>5}  {status:<11} {ops:<50} {types}   e.g. {example['id']}"
                         + (f" -> {example['bundle']}" if example.get("bundle") else ""))
    return lines


COMMANDS = [fuzz]
