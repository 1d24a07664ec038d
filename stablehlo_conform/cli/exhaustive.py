"""``conform accuracy --exhaustive``: every input of an op on a type, on local workers or a Dask cluster.

Exit codes: 0 every chunk was measured, 2 usage error (an op and type whose space is too large, a
bad range, a cluster that cannot be reached), 130 / 143 interrupted (the chunks measured are in
``--jsonl``, and the summary of what was measured says INCOMPLETE).
"""

from __future__ import annotations

import os
import time

import click

from ..harness.campaigns import exhaustive as E
from ..harness.campaigns.cluster import ClusterError, Progress, executor
from ..harness.records import jsonout
from ..harness.records.guard import Interrupted, ignore_interrupts, interruptible, interrupts_held, write_atomic
from ..harness.records.stream import StreamError, read_lines, repair
from .backend_option import usable_backend
from .common import outputs_ready


def _known_chunks(path: str) -> list[E.Chunk]:
    """The chunks of a ``--jsonl`` file (a last line cut by a killed run is dropped)."""
    try:
        lines = read_lines(path, "--jsonl")
    except StreamError as e:
        raise click.UsageError(str(e)) from None
    out = []
    for lineno, d in lines.values:
        if isinstance(d, dict) and d.get("kind") == "chunk":
            try:
                out.append(E.Chunk.from_json(d))
            except TypeError as e:
                raise click.UsageError(f"{path}: line {lineno}: not a chunk record ({e})") from None
    if lines.cut:
        repair(path, lines)
        click.echo(f"{path}: a last line cut short (a killed run) was dropped", err=True)
    return out


def run_exhaustive(backends, ops, types, range_, cluster, chunk_bits, jobs, jsonl_path, json_path, output,
                   quiet) -> int:
    if not ops or not types:
        raise click.UsageError("--exhaustive needs --op and --type")
    cells = []
    for b in backends:
        usable_backend(b)
    for op in ops:
        for t in types:
            try:
                size = E.space_size(op, t)
                lo, hi = E.parse_range(range_, size)
            except E.SpaceError as e:
                raise click.UsageError(str(e)) from None
            cells += [(b, op, t, lo, hi) for b in backends]
    # the chunk file is locked (another run on it is refused) before it is read and repaired
    outputs_ready({"-o": output, "--json": json_path, "--jsonl": jsonl_path}, keep=jsonl_path, streams=("--jsonl",))
    known = _known_chunks(jsonl_path) if jsonl_path and os.path.lexists(jsonl_path) else []
    done = {(c.backend, c.op, c.type, c.lo, c.hi): c for c in known if c.status == "ok"}
    tasks = [(b, op, t, a, z) for b, op, t, lo, hi in cells for a, z in E.chunks(lo, hi, chunk_bits)
             if (b, op, t, a, z) not in done]
    total = sum(z - a for *_x, a, z in tasks)
    try:
        pool = executor(cluster, jobs)
    except ClusterError as e:
        raise click.UsageError(str(e)) from None
    if not quiet:
        where = f"the cluster at {cluster}" if cluster else f"{jobs} local worker{'s' if jobs > 1 else ''}"
        click.echo(f"{len(tasks)} chunks ({total:,} inputs) on {where}"
                   + (f"; {len(done)} chunks already in {jsonl_path}" if done else ""), err=True)
    sink = open(jsonl_path, "a") if jsonl_path else None
    progress = Progress(total, "inputs") if not quiet and total else None
    fresh: list[E.Chunk] = []
    interrupted: Interrupted | None = None
    failed = False  # the cluster lost a task on every try: what came back is kept, the run is not complete
    start = time.perf_counter()
    try:
        with interruptible():
            for _i, rec in pool.run(E.measure_chunk, tasks):
                c = E.Chunk.from_json(rec)
                with interrupts_held():  # a chunk in the tables is a chunk in the file
                    fresh.append(c)
                    if sink is not None:
                        sink.write(jsonout.dumps(c.to_json()) + "\n")
                        sink.flush()
                if progress is not None:
                    progress.update(c.hi - c.lo)
    except Interrupted as e:
        interrupted = e
    except ClusterError as e:
        click.echo(f"error: {e}", err=True)
        failed = True
    finally:
        ignore_interrupts()
        if progress is not None:
            progress.close()
        if sink is not None:
            sink.close()
        pool.close()
    wall = time.perf_counter() - start
    have = {**done, **{(c.backend, c.op, c.type, c.lo, c.hi): c for c in fresh}}
    lines, docs = [], []
    complete_all = interrupted is None and not failed
    for b, op, t, lo, hi in cells:
        parts = [have[(b, op, t, a, z)] for a, z in E.chunks(lo, hi, chunk_bits) if (b, op, t, a, z) in have]
        merged = E.merge(parts, lo, hi)
        merged.backend, merged.op, merged.type = b, op, t
        measured = sum(p.hi - p.lo for p in parts)
        complete = measured == hi - lo
        complete_all &= complete
        lines += E.summary_lines(merged, measured, wall, complete)
        docs.append({**merged.to_json(), "kind": "cell", "complete": complete, "chunks": len(parts),
                     "not_correctly_rounded": merged.not_correctly_rounded})
    text = "\n".join(lines)
    if interrupted is not None:
        text += f"\n\nINCOMPLETE: interrupted by {interrupted.name}; the chunks measured are kept" + (
            f" in {jsonl_path} (run the same command again to go on)" if jsonl_path else "")
    click.echo(text)
    if output:
        write_atomic(output, text + "\n")
    if json_path:
        write_atomic(json_path, jsonout.dumps({"complete": complete_all, "cells": docs, "wall_seconds": round(wall, 2),
                                            "cluster": cluster, "chunk_bits": chunk_bits}, indent=1))
    if interrupted is not None:
        return interrupted.exit_code
    return 0 if complete_all else 1
