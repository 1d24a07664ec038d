"""``conform run``: every test of files and folders, streamed to reports and the gate.

Exit codes: 0 every selected test passed (or the gate passed), 1 some test did
not, 2 usage error.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import click

STATUSES = ("pass", "fail", "error", "unsupported", "crash", "timeout")


class _Progress:
    def __init__(self, total_files: int, enabled: bool):
        self.total = total_files
        self.enabled = enabled
        self.counts: Counter = Counter()
        self.files_done = 0
        self.last = 0.0

    def update(self, rec: dict) -> None:
        self.counts[rec["status"]] += 1
        if self.enabled and time.monotonic() - self.last > 0.2:
            self.last = time.monotonic()
            parts = " ".join(f"{s}={self.counts[s]}" for s in STATUSES if self.counts[s])
            sys.stderr.write(f"\r\x1b[K{sum(self.counts.values())} tests  {parts}")
            sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def _print_result_line(rec: dict) -> None:
    if rec["status"] == "pass":
        return
    msg = (rec.get("message") or "").strip()
    first, *rest = msg.splitlines() or [""]
    click.echo(f"{rec['status'].upper():<11} {rec['id']}: {first}")
    for line in rest[:6]:
        click.echo(f"            {line}")


def summarize(results: list[dict]) -> dict:
    counts = Counter(r["status"] for r in results)
    return {"total": len(results), **{s: counts.get(s, 0) for s in STATUSES}}


def by_op_table(results: list[dict]) -> list[tuple[str, dict]]:
    table: dict[str, Counter] = defaultdict(Counter)
    for r in results:
        table[r.get("family") or "other"][r["status"]] += 1
    return sorted(table.items())


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("-k", "pattern", help="Only tests whose id contains PATTERN (or matches a glob).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="Write all results as JSON.")
@click.option("--jsonl", "jsonl_path", type=click.Path(dir_okay=False),
              help="Stream results as JSON lines while running.")
@click.option("--jobs", "-j", default=1, show_default=True, type=click.IntRange(1, 256),
              help="Worker processes.")
@click.option("--timeout", default=60.0, show_default=True, type=float, help="Seconds per test (0: none).")
@click.option("--backend", default="numpy", show_default=True, help="Backend that runs the tests.")
@click.option("--by-op", is_flag=True, help="Print a pass table per op family.")
@click.option("--max-memory", type=float, default=None,
              help="Memory budget per op result, in MiB (default: a quarter of RAM).")
@click.option("--compare", "compare", default="",
              help="Comma-separated backends to run each test on and compare, e.g. numpy,reference,xla.")
@click.option("--resume", is_flag=True,
              help="With --jsonl: keep the results already in that file and run only the rest.")
@click.option("--quiet", "-q", is_flag=True, help="Only the summary.")
@click.option("--baseline", "baseline_path", type=click.Path(exists=True, dir_okay=False),
              help="Expected failures (JSON from 'conform baseline update', or 'id | reason' lines): "
                   "fail only on regressions.")
@click.option("--min-pass-rate", "min_pass_rate", multiple=True, metavar="[FAMILY=]RATE",
              help="Gate on the pass rate of op families, e.g. stablehlo.add=0.9 (repeatable) or 0.95 for all.")
@click.option("--junit-xml", "junit_path", type=click.Path(dir_okay=False), help="Write a JUnit XML report.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), help="Write a self-contained HTML report.")
@click.option("--repro-dir", type=click.Path(file_okay=False), expose_value=False, is_eager=False,
              callback=lambda ctx, _p, v: ctx.meta.__setitem__("repro_dir", v),
              help="Write a repro bundle for every test that failed, crashed or timed out into DIR/<test id>.")
def run(paths, pattern, json_path, jsonl_path, jobs, timeout, backend, by_op, max_memory, compare, resume,
        quiet, baseline_path, min_pass_rate, junit_path, html_path):
    """Run every test in PATHS (files or folders, recursive).

    Exit code 0 when the gate passes (by default: every test passed; with
    --baseline: no regression; with --min-pass-rate: every op family at its
    rate; with both: both), 1 when it fails, 2 on a usage error.
    """
    from ..harness.cases import Options, discover, matches
    from ..harness.gate import Baseline, GateError, parse_min_pass_rates
    from ..harness.runner import Runner

    try:
        baseline = Baseline.load(baseline_path) if baseline_path else None
        min_rates = parse_min_pass_rates(min_pass_rate)
    except GateError as e:
        raise click.UsageError(str(e)) from None

    missing = [p for p in paths if not Path(p).exists()]
    if missing:
        raise click.UsageError(f"no such file or directory: {', '.join(missing)}")
    files = discover(list(paths))
    if not files:
        raise click.UsageError("no .mlir / bytecode files found")
    opts = Options(backend=backend, timeout=timeout or None, max_bytes=_memory_budget(max_memory), pattern=pattern,
                   compare=tuple(b.strip() for b in compare.split(",") if b.strip()))
    if backend != "numpy":
        from ..harness.backends import BackendUnavailable, available

        if backend not in available():
            raise click.UsageError(f"unknown backend {backend!r}; available: {', '.join(sorted(available()))}")
        del BackendUnavailable
    if resume and not jsonl_path:
        raise click.UsageError("--resume needs --jsonl FILE (the stream to continue)")
    progress = _Progress(len(files), sys.stderr.isatty() and not quiet)
    selected: list[dict] = []
    done: set[str] = set()
    if resume and Path(jsonl_path).exists():
        for line in Path(jsonl_path).read_text().splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short when the previous run was killed
            if rec.get("id") not in done:
                done.add(rec["id"])
                selected.append(rec)
        if selected:
            click.echo(f"resuming: {len(selected)} results kept from {jsonl_path}")
    stream = open(jsonl_path, "a" if resume else "w") if jsonl_path else None
    if stream and resume and stream.tell() > 0 and not Path(jsonl_path).read_bytes().endswith(b"\n"):
        stream.write("\n")  # end the line a killed run left half written

    def on_result(rec: dict) -> None:
        if not matches(rec["id"], pattern) and not rec["id"].endswith(">"):
            return
        if pattern and rec["id"].endswith(">") and rec["status"] == "pass":
            return
        selected.append(rec)
        progress.update(rec)
        if stream:
            stream.write(json.dumps(rec) + "\n")
            stream.flush()
        if not quiet:
            progress.close() if progress.enabled else None
            known = baseline.match(rec["id"]) if baseline is not None and rec["status"] != "pass" else None
            if known is not None:
                click.echo(f"{'KNOWN':<11} {rec['id']}: {rec['status']} (baseline: {known.reason or 'listed'})")
            else:
                _print_result_line(rec)

    t0 = time.monotonic()
    try:
        Runner(opts, jobs=jobs, on_result=on_result).run(files, skip=done)
    except KeyboardInterrupt:
        click.echo("interrupted: results so far are kept", err=True)
    finally:
        progress.close()
        if stream:
            stream.close()
    wall = time.monotonic() - t0
    summary = summarize(selected)
    if by_op:
        click.echo(f"\n{'op family':<40} {'pass':>6} {'fail':>6} {'other':>6}")
        for fam, c in by_op_table(selected):
            other = sum(c.values()) - c["pass"] - c["fail"]
            click.echo(f"{fam:<40} {c['pass']:>6} {c['fail']:>6} {other:>6}")
    parts = ", ".join(f"{summary[s]} {s}" for s in STATUSES if summary[s])
    click.echo(f"\n{summary['total']} tests in {len(files)} files ({wall:.1f} s): {parts or 'nothing ran'}")
    doc = {"summary": summary, "backend": backend, "paths": list(paths), "wall_time": round(wall, 3),
           "results": selected}
    if json_path:
        Path(json_path).write_text(json.dumps(doc, indent=1))
    _write_repro_bundles(selected, opts)
    sys.exit(_finish_run(doc, baseline, baseline_path, min_rates, junit_path, html_path))


def _finish_run(doc, baseline, baseline_path, min_rates, junit_path, html_path) -> int:
    """Reports and the gate of ``conform run``; returns the exit code."""
    from ..harness.gate import evaluate_gate
    from ..harness.reports.text import gate_lines

    if junit_path:
        from ..harness.reports.junit import write_junit

        write_junit(junit_path, [doc], baseline)
        click.echo(f"JUnit XML: {junit_path}")
    if html_path:
        from ..harness.reports.html import write_html

        write_html(html_path, [doc], baseline)
        click.echo(f"HTML report: {html_path}")
    gate = evaluate_gate(doc["results"], baseline, min_rates)
    if baseline is not None or min_rates:
        click.echo("")
        for line in gate_lines(gate, baseline_path):
            click.echo(line)
    return gate.exit_code


def _write_repro_bundles(results: list[dict], opts) -> None:
    folder = click.get_current_context().meta.get("repro_dir")
    if folder:
        from ..harness.bundle import write_run_bundles

        made = write_run_bundles(folder, results, opts.backend, opts.compare, opts.timeout)
        click.echo(f"repro bundles: {len(made)} in {folder}")


def _memory_budget(mib: float | None) -> int | None:
    if mib is not None:
        return int(mib * 2**20) if mib > 0 else None
    try:
        import os

        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        return total // 4
    except (ValueError, OSError, AttributeError):  # pragma: no cover
        return None


COMMANDS = [run]
