"""The ``conform`` command line: one module per command, registered on one group.

Exit codes (every command): 0 success, 1 the checked property does not hold
(tests failed, backends disagree, the gate is red), 2 usage error (a backend
that is not installed or does not load is one, in every command).
"""

from __future__ import annotations

import importlib
import sys

import click

from ..harness.records.guard import Interrupted


class _Group(click.Group):
    """The commands' group: SIGINT / SIGTERM that a command leaves to it
    (a plugin's load check before any work) end the command with 130 / 143
    and one line, not click's "Aborted!" and 1 nor a traceback."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except Interrupted as e:
            click.echo(f"interrupted ({e.name})", err=True)
            sys.exit(e.exit_code)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="stablehlo-conform")
def main() -> None:
    """StableHLO conformance: run test programs, compare backends.

    Exit codes (every command): 0 success, 1 the checked property does not
    hold (tests failed, backends disagree, the gate is red), 2 usage error (a
    backend that is not installed or does not load is one), 130 / 143
    interrupted by SIGINT / SIGTERM."""


# Each module holds its commands in COMMANDS; the order is the help's order.
_COMMAND_MODULES = ("run", "eval", "reduce", "fuzz", "report", "triage", "info", "plugin", "accuracy", "probe")


def _register_commands() -> None:
    for modname in _COMMAND_MODULES:
        mod = importlib.import_module(f"{__name__}.{modname}")
        for cmd in mod.COMMANDS:
            main.add_command(cmd)


_register_commands()
