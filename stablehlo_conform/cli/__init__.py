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

# command -> the module of this package that holds it (in its COMMANDS); a command's module is
# imported when the command is asked for, so reading results (report, baseline, triage) loads
# no frontend, engine or backend
COMMAND_MODULES = {
    "run": "run", "eval": "eval", "diff": "eval", "reduce": "reduce", "fuzz": "fuzz", "report": "report",
    "baseline": "report", "triage": "triage", "ops": "info", "backends": "info", "plugin-report": "plugin",
    "accuracy": "accuracy", "probe-precision": "probe",
}


class _Group(click.Group):
    """The commands' group: SIGINT / SIGTERM that a command leaves to it
    (a plugin's load check before any work) end the command with 130 / 143
    and one line, not click's "Aborted!" and 1 nor a traceback. Commands are
    loaded from their module on first use (:data:`COMMAND_MODULES`)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands) | set(COMMAND_MODULES))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands and name in COMMAND_MODULES:
            for cmd in importlib.import_module(f"{__name__}.{COMMAND_MODULES[name]}").COMMANDS:
                self.add_command(cmd)
        return self.commands.get(name)

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

