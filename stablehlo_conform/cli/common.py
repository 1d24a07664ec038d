"""What every command shares: input files and numbers checked as options are
parsed, outputs prepared before any work, backends checked by name and by
loading, interrupts ending in 130 / 143 (see :mod:`..harness.guard`)."""

from __future__ import annotations

import math
import sys
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path

import click

from ..harness.records.guard import GuardError, Interrupted, OutputPlan, check_input, prepare_outputs


class InputFile(click.Path):
    """An existing regular file, found so from its ``stat`` (a FIFO or a
    device is never opened) and, with ``bounded``, within the size bound of
    inputs read whole."""

    def __init__(self, bounded: bool = True):
        super().__init__(exists=True, dir_okay=False)
        self.bounded = bounded

    def convert(self, value, param, ctx):
        value = super().convert(value, param, ctx)
        try:
            check_input(value, bounded=self.bounded)
        except GuardError as e:
            self.fail(str(e), param, ctx)
        return value


class Seconds(click.ParamType):
    """A finite number of seconds, 0 or more."""

    name = "seconds"

    def convert(self, value, param, ctx):
        try:
            x = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not math.isfinite(x) or x < 0:
            self.fail(f"{value!r}: give a finite number of seconds, 0 or more", param, ctx)
        return x


class Mebibytes(Seconds):
    """A finite size in MiB, 0 or more."""

    name = "mib"

    def convert(self, value, param, ctx):
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter:
            self.fail(f"{value!r}: give a finite size in MiB, 0 or more", param, ctx)


class Seed(click.ParamType):
    """A seed of the random inputs: an integer, 0 or more (numpy's
    ``default_rng``, which every seed reaches, takes no negative one)."""

    name = "seed"

    def convert(self, value, param, ctx):
        if isinstance(value, int) and not isinstance(value, bool):
            x = value
        else:
            try:
                x = int(str(value), 10)
            except ValueError:
                self.fail(f"{value!r} is not an integer", param, ctx)
        if x < 0:
            self.fail(f"{value!r}: give a seed of 0 or more (numpy's generators take no negative seed)", param, ctx)
        return x


SECONDS = Seconds()
MIB = Mebibytes()
SEED = Seed()


def outputs_ready(outputs: Mapping[str, str | None], keep: str | None = None,
                  folders: Mapping[str, str | None] | None = None, *, inputs: Iterable[str | Path | None] = (),
                  streams: Collection[str] = (), fills: Collection[str] = ()) -> OutputPlan:
    """:func:`~..harness.guard.prepare_outputs` (the one planner of every
    command's outputs: it knows the command's ``inputs``, locks its
    ``streams``), a usage error when it fails. The locks are held until the
    command ends (its click context closes)."""
    try:
        plan = prepare_outputs(outputs, keep, folders, inputs=inputs, streams=streams, fills=fills)
    except GuardError as e:
        raise click.UsageError(str(e)) from None
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.call_on_close(plan.release)
    return plan


def regex_option(pattern: str | None, option: str) -> str | None:
    """``pattern`` unless it is not a regular expression (a usage error)."""
    import re

    if pattern is not None:
        try:
            re.compile(pattern)
        except re.error as e:
            raise click.UsageError(f"{option} {pattern!r}: not a regular expression: {e}") from None
    return pattern


def exit_interrupted(e: Interrupted, note: str | None = None) -> None:
    """End an interrupted command: ``note`` (what it left undone) printed,
    exit ``128 + signal``."""
    if note:
        click.echo(note)
    sys.exit(e.exit_code)
