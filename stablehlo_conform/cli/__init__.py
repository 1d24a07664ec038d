"""The ``conform`` command line: one module per command, registered on one group.

Exit codes (every command): 0 success, 1 the checked property does not hold
(tests failed, backends disagree, the gate is red), 2 usage error.
"""

from __future__ import annotations

import importlib

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="stablehlo-conform")
def main() -> None:
    """StableHLO conformance: run test programs, compare backends."""


# Each module holds its commands in COMMANDS; the order is the help's order.
_COMMAND_MODULES = ("run", "eval", "reduce", "fuzz", "report", "triage", "info", "plugin", "accuracy", "probe")


def _register_commands() -> None:
    for modname in _COMMAND_MODULES:
        mod = importlib.import_module(f"{__name__}.{modname}")
        for cmd in mod.COMMANDS:
            main.add_command(cmd)


_register_commands()
