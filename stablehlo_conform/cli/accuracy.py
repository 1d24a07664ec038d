"""``conform accuracy``: max ULP error and share of correctly rounded results of a backend's
element-wise float math, per op and element type, against the exact values."""

from __future__ import annotations

import json
import os
import sys
import time

import click


def _resolve_ops(names):
    from ..oracle import DEFINED_OPS

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
@click.option("--type", "types", multiple=True, help="Only these element types (e.g. bf16, f32, complex<f32>).")
@click.option("--samples", default=None, type=click.IntRange(1), show_default="100000",
              help="Seeded samples per op for the types not measured exhaustively.")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the Markdown tables here.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="Write every cell as JSON here.")
@click.option("--jsonl", "jsonl_path", type=click.Path(dir_okay=False),
              help="Append every cell to this file as soon as it is measured; cells already in it are "
                   "not measured again (a long run can be resumed).")
@click.option("--render-only", is_flag=True,
              help="With --jsonl: write the tables of the cells already in it, measuring nothing.")
@click.option("-j", "--jobs", default=1, show_default=True, type=click.IntRange(1),
              help="Worker processes (each measures whole cells).")
@click.option("-q", "--quiet", is_flag=True, help="No progress lines on stderr.")
def accuracy(backends, ops, types, samples, seed, output, json_path, jsonl_path, render_only, jobs, quiet):
    """Measure element-wise float math against arbitrary-precision values.

    Unary ops run on every value of each 4- to 16-bit type, binary ops on every pair of 4- to
    8-bit values; f32, f64, complex and binary 16-bit cells use seeded samples plus edge values.
    Prints (or writes with -o) one table per backend: CR where every result is correctly rounded,
    else the max ULP error and the share of correctly rounded results.
    """
    from ..oracle import accuracy as A
    from ..types import ElementType

    for t in types:
        if t not in A.ALL_TYPES:
            raise click.BadParameter(f"{t!r} (one of: {', '.join(A.ALL_TYPES)})", param_hint="--type")
        ElementType(t)
    samples = samples or A.DEFAULT_SAMPLES
    start = time.perf_counter()

    def progress(line):
        if not quiet:
            click.echo(line, err=True)

    known, sink = [], None
    if jsonl_path:
        if os.path.exists(jsonl_path):
            with open(jsonl_path) as f:
                known = [A.cell_from_dict(json.loads(line)) for line in f if line.strip()]
        sink = open(jsonl_path, "a")

    def on_cells(cells):
        if sink is not None:
            for c in cells:
                sink.write(json.dumps(A.cell_dict(c)) + "\n")
            sink.flush()

    if render_only and not jsonl_path:
        raise click.UsageError("--render-only needs --jsonl")
    try:
        cells = A.measure(backends, _resolve_ops(ops) if ops else None, types or None, samples, seed, progress,
                          jobs, known, on_cells, measure_missing=not render_only)
    finally:
        if sink is not None:
            sink.close()
    argv = " ".join(a if " " not in a and "<" not in a else repr(a) for a in sys.argv[1:])
    meta = {"command": f"conform {argv}".strip(), "samples": samples, "seed": seed,
            "backends": list(backends), "seconds": round(time.perf_counter() - start, 1)}
    if render_only:
        del meta["seconds"]
        meta["command"] = meta["command"].replace(" --render-only", "")
    text = A.render_markdown(cells, meta)
    if output:
        with open(output, "w") as f:
            f.write(text + "\n")
        took = f", {meta['seconds'] / 60:.1f} minutes" if "seconds" in meta else ""
        click.echo(f"wrote {output} ({len(cells)} cells{took})")
    else:
        click.echo(text)
    if json_path:
        with open(json_path, "w") as f:
            json.dump(A.cells_json(cells, meta), f, indent=1)


COMMANDS = [accuracy]
