"""``conform run``: every test of files and folders, streamed to reports and the gate.

Exit codes: 0 every selected test passed (or the gate passed), 1 some test did
not (or a report was lost), 2 usage error, 130 / 143 interrupted by SIGINT /
SIGTERM.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import click

from ..harness.backends import LOAD_SECONDS, BackendUnavailable, check_name, shorten_names
from ..harness.campaigns.bundle import write_run_bundles
from ..harness.programs.support import unsupported_lines
from ..harness.records import jsonout
from ..harness.records.gate import Baseline, GateError, evaluate_gate, parse_min_pass_rates
from ..harness.records.guard import (
    GuardError,
    Interrupted,
    atomic_path,
    check_input,
    ignore_interrupts,
    interruptible,
    write_atomic,
)
from ..harness.records.result import STATUSES, Result, Status, describe_failure
from ..harness.records.shard import ShardError, in_shard, parse_shard, shard_info, universe_hash
from ..harness.records.stream import StreamError, check_resumable, end_record, header_record, read_stream, repair
from ..harness.records.triage import triage, triage_json, triage_lines
from ..harness.reports import incomplete_note
from ..harness.reports.html import write_html
from ..harness.reports.junit import write_junit
from ..harness.reports.text import gate_lines, printable
from .backend_option import usable_backend
from .common import MIB, SECONDS, InputFile, outputs_ready


class _Progress:
    def __init__(self, total_files: int, enabled: bool):
        self.total = total_files
        self.enabled = enabled
        self.counts: Counter = Counter()
        self.files_done = 0
        self.last = 0.0

    def update(self, rec: Result) -> None:
        self.counts[rec.status.value] += 1
        if self.enabled and time.monotonic() - self.last > 0.2:
            self.last = time.monotonic()
            parts = " ".join(f"{s}={self.counts[s]}" for s in STATUSES if self.counts[s])
            sys.stderr.write(f"\r\x1b[K{sum(self.counts.values())} tests  {parts}")
            sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def _print_result_line(rec: Result) -> None:
    if rec.passed:
        return
    f = describe_failure(rec)
    msg = f.message
    if f.backend.startswith("pjrt:"):  # the plugin's name, not its library path
        msg = shorten_names(msg, [f.backend])
    if rec.file:  # a file name in a diagnostic must not start a line of its own
        msg = msg.replace(rec.file, printable(rec.file))
    first, *rest = msg.splitlines() or [""]
    click.echo(f"{f.status.upper():<11} {printable(f.id)}: {printable(first)}")
    for line in rest[:6]:
        click.echo(f"            {printable(line)}")


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
              help="Stream results as JSON lines while running (a header line first, an end line last).")
@click.option("--jobs", "-j", default=1, show_default=True, type=click.IntRange(1, 256),
              help="Worker processes.")
@click.option("--timeout", default=60.0, show_default=True, type=SECONDS, help="Seconds per test (0: none).")
@click.option("--load-timeout", "load_timeout", type=SECONDS, default=None,
              help="Seconds to load the backend's plugin (its client: checked before the run, then started by "
                   "each worker, never within a test's --timeout) and to read, parse and lower each file "
                   "(default: --timeout; 0: none).")
@click.option("--backend", default="numpy", show_default=True,
              help="Backend that runs the tests: numpy, reference, xla, iree, pjrt:PATH.so, pjrt:NAME, a plugin.")
@click.option("--pjrt-option", "pjrt_options", multiple=True, metavar="KEY=VALUE",
              help="Create option of a pjrt: backend's client (repeatable; typed: true/false, int, float, [1,2], "
                   "else string).")
@click.option("--pjrt-device", type=click.IntRange(0), default=None, help="Device index of a pjrt: backend.")
@click.option("--by-op", is_flag=True, help="Print a pass table per op family.")
@click.option("--max-memory", type=MIB, default=None,
              help="Memory budget in MiB: per constant and op result, and of what a test allocates beyond what "
                   "its worker held (kernel temporaries included; plus 64 MiB) (default: a quarter of RAM).")
@click.option("--compare", "compare", default="",
              help="Comma-separated backends to run each test on and compare, e.g. numpy,reference,xla.")
@click.option("--resume", is_flag=True,
              help="With --jsonl: keep the results already in that file and run only the rest "
                   "(the stream must come from a run with the same backend, paths and options).")
@click.option("--quiet", "-q", is_flag=True, help="Only the summary.")
@click.option("--baseline", "baseline_path", type=InputFile(),
              help="Expected failures (JSON from 'conform baseline update', or 'id | reason' lines): "
                   "fail only on regressions.")
@click.option("--min-pass-rate", "min_pass_rate", multiple=True, metavar="[FAMILY=]RATE",
              help="Gate on the pass rate of op families, e.g. stablehlo.add=0.9 (repeatable) or 0.95 for all.")
@click.option("--junit-xml", "junit_path", type=click.Path(dir_okay=False), help="Write a JUnit XML report.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), help="Write a self-contained HTML report.")
@click.option("--repro-dir", type=click.Path(file_okay=False), expose_value=False, is_eager=False,
              callback=lambda ctx, _p, v: ctx.meta.__setitem__("repro_dir", v),
              help="Write a repro bundle for every test that failed, crashed or timed out into DIR/<test id>.")
@click.option("--shard", "shard", metavar="K/N", callback=lambda _c, _p, v: _parse_shard(v),
              help="Run only shard K of N (a test's shard comes from its id); 'conform report' merges the shards.")
@click.option("--accuracy-profile", "accuracy_profile", type=InputFile(),
              help="ULP bounds per op and element type (TOML or JSON) overriding the default accuracy classes.")
def run(paths, pattern, json_path, jsonl_path, jobs, timeout, load_timeout, backend, pjrt_options, pjrt_device, by_op,
        max_memory, compare, resume, quiet, baseline_path, min_pass_rate, junit_path, html_path, accuracy_profile,
        shard):
    """Run every test in PATHS (files or folders, recursive).

    Exit code 0 when the gate passes (by default: every test passed; with
    --baseline: no regression; with --min-pass-rate: every op family at its
    rate; with both: both), 1 when it fails or a report could not be
    written, 2 on a usage error, 130 / 143 when interrupted by SIGINT /
    SIGTERM (the reports are written and marked incomplete).
    """
    # loads mpmath: kept here for start-up time
    from ..harness.suite.cases import Options, discover, matches, memory_budget_bytes
    from ..harness.suite.runner import Runner  # loads mpmath: kept here for start-up time

    try:
        baseline = Baseline.load(baseline_path) if baseline_path else None
        min_rates = parse_min_pass_rates(min_pass_rate)
    except GateError as e:
        raise click.UsageError(str(e)) from None

    missing = [p for p in paths if not Path(p).exists() and not Path(p).is_symlink()]
    if missing:
        raise click.UsageError(f"no such file or directory: {', '.join(missing)}")
    files = discover(list(paths))
    if not files:
        raise click.UsageError("no .mlir / bytecode files found")
    timeout = timeout or None
    load_timeout = timeout if load_timeout is None else (load_timeout or None)
    backend = backend_name(backend, pjrt_options, pjrt_device, load_timeout)
    compared = tuple(b.strip() for b in compare.split(",") if b.strip())
    if compare.strip() and not compared:
        raise click.UsageError(f"--compare {compare!r}: names no backend")
    # a backend that cannot run would leave every comparison undone
    compared = tuple(usable_backend(b, "--compare", load_timeout) for b in compared)
    profile = None
    if accuracy_profile:
        from ..oracle.classes import accuracy_profile_option  # loads mpmath: kept here for start-up time

        profile = accuracy_profile_option(accuracy_profile, click.UsageError)
    opts = Options(backend=backend, timeout=timeout, load_timeout=load_timeout,
                   max_bytes=memory_budget_bytes(max_memory), pattern=pattern, compare=compared, shard=shard,
                   accuracy_profile=profile)
    if resume and not jsonl_path:
        raise click.UsageError("--resume needs --jsonl FILE (the stream to continue)")
    if resume and os.path.lexists(jsonl_path):  # an input too: a regular file within the bound, never opened else
        try:
            check_input(jsonl_path, "--resume")
        except GuardError as e:
            raise click.UsageError(str(e)) from None
    # the stream is locked for the run; an output never names a program, the baseline or the profile
    repro_dir = click.get_current_context().meta.get("repro_dir")
    outputs_ready({"--json": json_path, "--jsonl": jsonl_path, "--junit-xml": junit_path, "--html": html_path},
                  keep=jsonl_path if resume else None, folders={"--repro-dir": repro_dir},
                  inputs=[*files, baseline_path, accuracy_profile], streams=("--jsonl",))
    settings = {"backend": backend, "compare": list(opts.compare), "timeout": timeout, "load_timeout": load_timeout,
                "max_bytes": opts.max_bytes, "pattern": pattern,
                "paths": sorted(str(Path(p).resolve()) for p in paths),
                "accuracy_profile": str(Path(accuracy_profile).resolve()) if accuracy_profile else None}
    settings["shard"] = _shard_info(shard, files, settings)
    progress = _Progress(len(files), sys.stderr.isatty() and not quiet)
    selected: list[dict] = []  # the records of the selected tests, as the files and reports hold them
    done: set[str] = set()
    has_header = False
    if resume and os.path.exists(jsonl_path):
        try:
            old = read_stream(jsonl_path)
            check_resumable(old, jsonl_path, settings)
        except StreamError as e:
            raise click.UsageError(str(e)) from None
        for rec in old.records:
            if rec["id"] not in done:
                done.add(rec["id"])
                selected.append(rec)
        repair(jsonl_path, old)  # a line cut by a killed run goes; the kept lines stay whole
        has_header = old.header is not None
        if selected:
            click.echo(f"resuming: {len(selected)} results kept from {jsonl_path}")
    lost: dict[str, str] = {}  # output -> what was lost and why
    stream = _Output(jsonl_path, "a" if resume else "w", lost) if jsonl_path else None
    if stream and not has_header:
        stream.write(header_record(settings))

    def on_result(rec: Result) -> None:
        if not in_shard(rec.id, shard):
            return
        if not matches(rec.id, pattern) and not rec.id.endswith(">"):
            return
        if pattern and rec.id.endswith(">") and rec.passed:
            return
        record = rec.to_json()  # the one record of this result, for the stream, the baseline and the reports
        selected.append(record)
        progress.update(rec)
        if stream:
            stream.write(record)
        if not quiet:
            progress.close() if progress.enabled else None
            known = baseline.match(record) if baseline is not None and not rec.passed else None
            if known is not None:
                click.echo(f"{'KNOWN':<11} {printable(rec.id)}: {rec.status} "
                           f"(baseline: {printable(known.reason or 'listed')})")
            else:
                _print_result_line(rec)

    if by_op:
        for line in unsupported_lines(files):
            click.echo(line)
    t0 = time.monotonic()
    runner = Runner(opts, jobs=jobs, on_result=on_result)
    interrupted, wall = None, None
    bundles = _ReproBundles(repro_dir)
    try:
        with interruptible():
            runner.run(files, skip=done)
            wall = time.monotonic() - t0
            progress.close()
            bundles.write(selected, opts)  # after the tests; an interrupt ends this phase too
    except Interrupted as e:
        interrupted = e.signum
    finally:
        progress.close()
    ignore_interrupts()  # from here on the reports are written whatever arrives
    wall = time.monotonic() - t0 if wall is None else wall
    not_run = {**runner.not_run(), **({"bundles": bundles.unwritten} if bundles.unwritten else {})}
    sig_name = signal.Signals(interrupted).name if interrupted else None
    if stream:
        stream.write(end_record(interrupted is None, sig_name, not_run))
        stream.close()
    if pattern and not selected and interrupted is None and not shard:  # a -k that names nothing: a typo
        raise click.UsageError(f"-k {pattern!r}: no test in {', '.join(paths)} has an id that contains it "
                               "or matches it as a glob")
    summary = summarize(selected)
    if by_op:
        click.echo(f"\n{'op family':<40} {'pass':>6} {'fail':>6} {'other':>6}")
        for fam, c in by_op_table(selected):
            other = sum(c.values()) - c["pass"] - c["fail"]
            click.echo(f"{fam:<40} {c['pass']:>6} {c['fail']:>6} {other:>6}")
    groups = triage(selected)
    if groups and not quiet:  # before the summary, which stays the last line
        click.echo("")
        for line in triage_lines(groups, limit=10):
            click.echo(printable(line))
    parts = ", ".join(f"{summary[s]} {s}" for s in STATUSES if summary[s])
    click.echo(f"\n{summary['total']} tests in {len(files)} files ({wall:.1f} s): {parts or 'nothing ran'}")
    doc = {"summary": summary, "backend": backend, "paths": list(paths), "wall_time": round(wall, 3),
           "complete": interrupted is None, "interrupted": sig_name, "not_run": not_run,
           "triage": triage_json(groups), "shard": settings["shard"], "results": selected}
    bundles.report()
    code = _finish_run(doc, baseline, baseline_path, min_rates, json_path, junit_path, html_path, lost)
    sys.exit(128 + interrupted if interrupted else code)


class _Output:
    """A report file written while the run goes on: a write that fails
    (full disk, ``/dev/full``) stops that output, not the run; ``lost``
    says what it lost."""

    def __init__(self, path: str, mode: str, lost: dict[str, str]):
        self.path = path
        self.lost = lost
        self.dropped = 0
        self.f = open(path, mode, encoding="utf-8")

    def write(self, obj: dict) -> None:
        if self.f is None:
            self.dropped += 1
            self.lost[self.path] = f"--jsonl {self.path}: {self.why}; {self.dropped} records not written"
            return
        try:
            self.f.write(jsonout.dumps(obj) + "\n")
            self.f.flush()
        except OSError as e:
            self.why = f"write failed ({e.strerror or e})"
            click.echo(f"warning: --jsonl {self.path}: {self.why}; the run goes on, results stay in the "
                       "other reports", err=True)
            f, self.f = self.f, None
            try:
                f.close()
            except OSError:
                pass
            self.write(obj)

    def close(self) -> None:
        if self.f is not None:
            try:
                self.f.close()
            except OSError as e:
                self.lost[self.path] = f"--jsonl {self.path}: closing failed ({e.strerror or e})"


def backend_name(backend: str, pjrt_options=(), pjrt_device=None, load_timeout: float | None = LOAD_SECONDS) -> str:
    """The backend's full name (``--pjrt-option``/``--pjrt-device`` folded
    into a ``pjrt:`` name); a usage error when it names no backend or its
    plugin does not load within ``load_timeout`` seconds."""
    try:
        if pjrt_options or pjrt_device is not None:
            if not backend.startswith("pjrt:"):
                raise BackendUnavailable("--pjrt-option/--pjrt-device need a pjrt: backend")
            from ..harness.backends.pjrt import with_options  # the engine: kept here for start-up time

            backend = with_options(backend, tuple(pjrt_options), pjrt_device)
        if backend != "numpy":
            check_name(backend, load_timeout)
    except BackendUnavailable as e:
        raise click.UsageError(str(e)) from None
    return backend


def _finish_run(doc, baseline, baseline_path, min_rates, json_path, junit_path, html_path, lost) -> int:
    """Reports and the gate of ``conform run``; returns the exit code (1
    when the gate fails or any report was lost)."""
    def attempt(opt: str, path: str, write) -> None:
        try:
            write()
        except OSError as e:
            lost[path] = f"{opt} {path}: not written ({e.strerror or e})"

    if json_path:
        attempt("--json", json_path, lambda: write_atomic(json_path, jsonout.dumps(doc, indent=1)))
    if junit_path:
        attempt("--junit-xml", junit_path, lambda: _written(junit_path, write_junit, [doc], baseline))
        if junit_path not in lost:
            click.echo(f"JUnit XML: {junit_path}")
    if html_path:
        attempt("--html", html_path, lambda: _written(html_path, write_html, [doc], baseline))
        if html_path not in lost:
            click.echo(f"HTML report: {html_path}")
    gate = evaluate_gate(doc["results"], baseline, min_rates)
    if baseline is not None or min_rates:
        click.echo("")
        for line in gate_lines(gate, baseline_path):
            click.echo(line)
    note = incomplete_note(doc)
    if note:
        click.echo(note)
    for why in lost.values():
        click.echo(f"LOST OUTPUT {why}", err=True)
    return 1 if lost else gate.exit_code


def _written(path: str, write, *args) -> None:
    """``write(path, *args)`` made atomic (see :func:`~..harness.guard.atomic_path`)."""
    with atomic_path(path) as tmp:
        write(tmp, *args)


class _ReproBundles:
    """The bundle phase of ``--repro-dir`` (after the tests): the bundles
    written, those an interrupt left unwritten, or the error that lost the
    folder."""

    def __init__(self, folder: str | None):
        self.folder = folder
        self.made: list[Path] = []
        self.wanted: int | None = None  # tests wanting a bundle, once the phase began
        self.finished = False
        self.error: str | None = None

    def write(self, results: list[dict], opts) -> None:
        """Write the bundles (each whole, see :func:`write_run_bundles`)."""
        if not self.folder:
            return
        self.wanted = sum(1 for r in results if Status(r["status"]).reproducible)
        try:
            write_run_bundles(self.folder, results, opts.backend, opts.compare, opts.timeout, made=self.made)
        except Exception as e:  # the run's own reports are still written
            self.error = f"{type(e).__name__}: {e}"
        self.finished = True

    @property
    def unwritten(self) -> int:
        """Bundles left unwritten by an interrupt of the phase (0: it was not interrupted)."""
        return 0 if self.wanted is None or self.finished else self.wanted - len(self.made)

    def report(self) -> None:
        """Say where the bundles are, or what was lost."""
        if self.error is not None:
            click.echo(f"LOST OUTPUT --repro-dir {printable(self.folder)}: {self.error}", err=True)
        elif self.wanted is not None:
            click.echo(f"repro bundles: {len(self.made)} in {printable(self.folder)}"
                       + (f" ({self.unwritten} not written: interrupted)" if self.unwritten else ""))


def _parse_shard(text):
    try:
        return parse_shard(text)
    except ShardError as e:
        raise click.BadParameter(str(e)) from None


def _shard_info(shard, files, settings) -> dict | None:
    """What the shards of one run share: the files (as given) and the
    settings the results depend on."""
    same = {k: settings[k] for k in ("backend", "compare", "pattern")}
    return shard_info(shard, universe_hash([str(f) for f in files], same), len(files))


COMMANDS = [run]
