"""``conform ops`` and ``conform backends``: what this installation covers."""

from __future__ import annotations

import click


@click.command()
@click.option("--dialect", "dialects", multiple=True, default=("stablehlo", "chlo"), show_default=True)
@click.option("--missing", is_flag=True, help="Only ops without a kernel.")
def ops(dialects, missing):
    """List the ops the bindings register, with kernel yes/no."""
    from .. import frontend
    from ..engine import TERMINATORS
    from ..kernels.registry import load_all

    reg = load_all()
    total = have = 0
    for d in dialects:
        names = frontend.registered_ops(d)
        if not names:
            click.echo(f"({d}: the bindings list no ops for this dialect)")
        for n in names:
            if n in TERMINATORS or n in ("func.call", "func.func", "cf.br", "cf.cond_br"):
                ok, how = True, "engine"
            else:
                ok = n in reg
                how = "yes" if ok else "no"
            total += 1
            have += ok
            if missing and ok:
                continue
            click.echo(f"{n:<45} {how}")
    click.echo(f"\n{have}/{total} ops have a kernel")


@click.command()
def backends():
    """List the backends that are installed."""
    from .. import frontend
    from ..harness.backends import available

    for name, where in sorted(available().items()):
        click.echo(f"{name:<12} {where}")
    click.echo(f"\nprograms are parsed with {frontend.provider_version()}")


COMMANDS = [ops, backends]
