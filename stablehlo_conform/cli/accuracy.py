"""``conform accuracy``: max ULP error and share of correctly rounded results of a backend's
element-wise float math, per op and element type, against the exact values.

Exit codes: 0 the tables were written, 2 usage error, 130 / 143 interrupted by
SIGINT / SIGTERM (the cells measured are kept in ``--jsonl`` and the tables of
what was measured are written, marked incomplete).
"""

from __future__ import annotations

import json
import os
import sys
import time

import click

from ..harness.records import jsonout
from ..harness.records.guard import Interrupted, ignore_interrupts, interruptible, interrupts_held, write_atomic
from ..harness.records.stream import StreamError, read_lines, repair
from ..types import ElementType
from .backend_option import usable_backend
from .common import SEED, outputs_ready


def _resolve_ops(names):
    from ..oracle import DEFINED_OPS  # loads mpmath: kept here for start-up time

    out = []
    for n in names:
        full = [o for o in sorted(DEFINED_OPS) if o == n or o.split(".", 1)[1] == n]
        if not full:
            raise click.BadParameter(f"{n!r} is not an op with an exact definition "
                                     f"(one of: {', '.join(sorted(DEFINED_OPS))})", param_hint="--op")
        out += full
    return out


@click.command()
@click.option("--backend", "backends", multiple=True, default=("numpy",), show_default=True,
              help="Backend to measure (repeat for several; the exact values are computed once).")
@click.option("--op", "ops", multiple=True, help="Only these ops (e.g. exponential, chlo.erf_inv); repeatable.")
@click.option("--type", "types", multiple=True,
              help="Only these element types (e.g. bf16, f32, complex<f32>); default: every float and "
                   "complex type.")
@click.option("--samples", default=None, type=click.IntRange(1), show_default="100000",
              help="Seeded samples per op for the types not measured exhaustively.")
@click.option("--seed", default=0, show_default=True, type=SEED)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the Markdown tables here.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="Write every cell as JSON here.")
@click.option("--jsonl", "jsonl_path", type=click.Path(dir_okay=False),
              help="Append every cell to this file as soon as it is measured, and a record of the run "
                   "(its wall time) at its end; cells already in it are not measured again (a long run "
                   "can be resumed).")
@click.option("--render-only", is_flag=True,
              help="With --jsonl: write the tables of the cells already in it, measuring nothing.")
@click.option("--write-defaults", "defaults_path", type=click.Path(dir_okay=False),
              help="Write the default ULP bounds derived from the measured cells here (the format of "
                   "stablehlo_conform/oracle/ulp_defaults.json; entries of ops not measured are kept "
                   "from the file, or from the packaged defaults when it does not exist).")
@click.option("-j", "--jobs", default=1, show_default=True, type=click.IntRange(1),
              help="Worker processes (each measures whole cells).")
@click.option("-q", "--quiet", is_flag=True, help="No progress lines on stderr.")
@click.option("--exhaustive", is_flag=True,
              help="Every input: every value of the type for a unary op (2^32 for f32), every pair for a "
                   "binary op on a 16-bit type, in chunks; with --range, part of that space.")
@click.option("--range", "range_", metavar="LO:HI",
              help="With --exhaustive: only the inputs [LO, HI) (bit patterns, or pair indices a<<bits|b; "
                   "decimal or 0x hex).")
@click.option("--cluster", metavar="tcp://HOST:PORT",
              help="With --exhaustive: run the chunks on the workers of this Dask scheduler (each loads the "
                   "backend itself) instead of -j local processes.")
@click.option("--chunk-bits", default=24, show_default=True, type=click.IntRange(8, 28),
              help="With --exhaustive: 2^N inputs per chunk (one backend run each).")
def accuracy(backends, ops, types, samples, seed, output, json_path, jsonl_path, render_only, defaults_path,
             jobs, quiet, exhaustive, range_, cluster, chunk_bits):
    """Measure element-wise float math against arbitrary-precision values.

    Unary ops run on every value of each 4- to 16-bit type, binary ops on every pair of 4- to
    8-bit values; f32, f64, complex and binary 16-bit cells use seeded samples plus edge values.
    Prints (or writes with -o) the tables per backend: CR where every result is correctly rounded,
    else the max ULP error and the share of correctly rounded results; then the run time (the
    sum of the per-cell times, and the wall time of the runs that measured them).
    """
    from ..harness.campaigns import accuracy as A  # loads mpmath: kept here for start-up time

    if exhaustive:
        from .exhaustive import run_exhaustive  # loads the harness: kept here for start-up time

        sys.exit(run_exhaustive(backends, _resolve_ops(ops) if ops else [], types, range_, cluster, chunk_bits,
                                jobs, jsonl_path, json_path, output, quiet))
    if range_ or cluster:
        raise click.UsageError("--range and --cluster go with --exhaustive")
    for t in types:
        if t not in A.ALL_TYPES:
            raise click.BadParameter(f"{t!r} (one of: {', '.join(A.ALL_TYPES)})", param_hint="--type")
        ElementType(t)
    if render_only and not jsonl_path:
        raise click.UsageError("--render-only needs --jsonl")
    for b in backends:
        usable_backend(b)
    # the cell file is locked (another run on it is refused) before it is read and repaired
    outputs_ready({"-o": output, "--json": json_path, "--jsonl": jsonl_path, "--write-defaults": defaults_path},
                  keep=jsonl_path, streams=("--jsonl",))
    known, runs = _read_jsonl(A, jsonl_path) if jsonl_path and os.path.lexists(jsonl_path) else ([], [])
    samples = samples or A.DEFAULT_SAMPLES
    start = time.perf_counter()
    argv = " ".join(a if " " not in a and "<" not in a else repr(a) for a in sys.argv[1:])
    command = f"conform {argv}".strip().replace(" --render-only", "")

    def progress(line):
        if not quiet:
            click.echo(line, err=True)

    sink, fresh = None, []
    if jsonl_path:
        sink = open(jsonl_path, "a")

    def on_cells(cells):
        # held: a signal between counting the cells and writing them left the run record
        # counting cells the file does not have
        with interrupts_held():
            fresh.extend(cells)
            if sink is not None:
                for c in cells:
                    sink.write(jsonout.dumps(A.cell_dict(c)) + "\n")
                sink.flush()

    finished = False
    interrupted: Interrupted | None = None
    full_ops = _resolve_ops(ops) if ops else None
    try:
        with interruptible():
            cells = A.measure(backends, full_ops, types or None, samples, seed, progress, jobs, known, on_cells,
                              measure_missing=not render_only)
        finished = True
    except Interrupted as e:  # the cells measured so far are reported
        interrupted = e
        cells = [c for c in [*known, *fresh] if c.backend in backends and (full_ops is None or c.op in full_ops)
                 and (not types or c.type in types)]
    finally:
        ignore_interrupts()  # from here on what was measured is written whatever arrives
        if fresh:  # the wall time of this run, also when it is interrupted
            record = A.run_record(command, jobs, time.perf_counter() - start, fresh, finished)
            runs.append(record["run"])
            if sink is not None:
                sink.write(jsonout.dumps(record) + "\n")
        if sink is not None:
            sink.close()
    meta = {"command": command, "samples": samples, "seed": seed, "backends": list(backends), "runs": runs}
    text = A.render_markdown(cells, meta, runs=runs)
    if interrupted is not None:
        note = (f"INCOMPLETE: interrupted by {interrupted.name} after {len(fresh)} cells of this run; "
                "the cells not measured are missing")
        meta.update(complete=False, interrupted=interrupted.name)
        text += f"\n\n{note}"
        click.echo(note, err=True)
    if output:
        write_atomic(output, text + "\n")
        total = sum(c.seconds or 0.0 for c in cells)
        click.echo(f"wrote {output} ({len(cells)} cells, {total / 60:.1f} minutes of cell time)")
    else:
        click.echo(text)
    if json_path:
        write_atomic(json_path, jsonout.dumps(A.cells_json(cells, meta), indent=1))
    if defaults_path and interrupted is None:
        _write_defaults(A, cells, defaults_path, command)
    elif defaults_path:
        click.echo(f"{defaults_path} not written: bounds from an interrupted measurement would be partial", err=True)
    if interrupted is not None:
        sys.exit(interrupted.exit_code)


def _read_jsonl(A, path):
    """The cells and run records of a ``--jsonl`` file: a regular file within
    the bound of inputs; a last line cut by a killed run is cut off the file
    (as ``conform run --resume`` does); any other bad line is a usage error."""
    try:
        lines = read_lines(path, "--jsonl")
    except StreamError as e:
        raise click.UsageError(str(e)) from None
    cells, runs = [], []
    for lineno, d in lines.values:
        try:
            if not isinstance(d, dict):
                raise TypeError(f"a line must be a JSON object, not {type(d).__name__}")
            if "run" in d:
                if not isinstance(d["run"], dict):
                    raise TypeError("'run' must be an object")
                runs.append(d["run"])
            else:
                cells.append(A.cell_from_dict(d))
        except (TypeError, ValueError, KeyError) as e:
            raise click.UsageError(f"{path}: line {lineno}: not a cell or run record of 'conform accuracy' ({e})") \
                from None
    if lines.cut:
        repair(path, lines)
        click.echo(f"{path}: a last line cut short (a killed run) was dropped", err=True)
    return cells, runs


def _write_defaults(A, cells, path, command):
    from ..oracle.classes import DEFAULTS_FILE  # loads mpmath: kept here for start-up time

    base = path if os.path.exists(path) else DEFAULTS_FILE
    with open(base) as f:
        doc = A.ulp_defaults(cells, json.load(f), source=command)
    write_atomic(path, A.defaults_text(doc))
    click.echo(f"wrote {path} ({len(doc['ops'])} ops, {len(doc['flagged'])} cells flagged)")


COMMANDS = [accuracy]
