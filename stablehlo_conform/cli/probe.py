"""``conform probe-precision``: what a backend does for each precision of an f32 dot."""

from __future__ import annotations

import sys

import click

from ..harness.backends import get_backend
from ..harness.records import jsonout
from ..harness.records.guard import write_atomic
from .backend_option import usable_backend
from .common import SECONDS, InputFile, outputs_ready


@click.command("probe-precision")
@click.argument("backend")
@click.option("--accuracy-profile", "accuracy_profile", type=InputFile(),
              help="Profile whose [precision] table declares the algorithm of each level "
                   "(default: DEFAULT=bf16, HIGH=bf16_3x, HIGHEST=f32).")
@click.option("--algorithms/--no-algorithms", default=True, show_default=True,
              help="Also probe dot_general with algorithm attributes (f32, tf32, bf16, bf16_3x, bf16_6x).")
@click.option("--timeout", default=120.0, show_default=True, type=SECONDS,
              help="Seconds per backend call (0: none).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="Write the table as JSON.")
def probe_precision(backend, accuracy_profile, algorithms, timeout, json_path):
    """Run crafted f32 dot products on BACKEND and print, per precision_config level
    (and per algorithm attribute), the algorithm its products fit (f32, bf16_6x, tf32_3x,
    bf16_3x, tf32, bf16), round to nearest or toward zero, the accumulation's bits and
    whether subnormals are flushed.

    Exit code 0 when every level is at least as accurate as declared and no algorithm
    silently falls back to a less accurate one, 1 otherwise, 2 on a usage error.
    """
    # loads mpmath: kept here for start-up time
    from ..harness.campaigns.probe_precision import failed, format_rows, probe, to_json
    from ..harness.judge.diff import diff_options  # loads mpmath: kept here for start-up time
    from ..oracle import classes as C  # loads mpmath: kept here for start-up time
    from ..oracle.precision import DEFAULT_LEVELS  # loads mpmath: kept here for start-up time

    outputs_ready({"--json": json_path}, inputs=[accuracy_profile])
    b = get_backend(usable_backend(backend, "BACKEND"))
    levels: dict[str, str] = {}
    source = "default (" + ", ".join(f"{k}={v}" for k, v in DEFAULT_LEVELS.items()) + ")"
    if accuracy_profile:
        try:
            levels = C.Profile.load(accuracy_profile).precision
        except C.ProfileError as e:
            raise click.UsageError(str(e)) from None
        source = f"{accuracy_profile} (" + ", ".join(f"{k}={v}" for k, v in dict(DEFAULT_LEVELS, **levels).items()) \
            + ")"
    rows = probe(b, levels, diff_options(timeout=timeout or None), algorithms)
    for line in format_rows(backend, rows, source):
        click.echo(line)
    if json_path:
        write_atomic(json_path, jsonout.dumps(to_json(backend, rows, dict(DEFAULT_LEVELS, **levels)), indent=1))
    sys.exit(1 if failed(rows) else 0)


COMMANDS = [probe_precision]
