"""``conform ops`` and ``conform backends``: what this installation covers."""

from __future__ import annotations

import sys

import click
from ..engine import TERMINATORS
from ..harness.backends import available, display_name, get_backend
from ..harness.backends.pjrt import PjrtBackend
from ..harness.support import file_report
from ..kernels.registry import load_all
from .. import frontend


@click.command()
@click.argument("programs", nargs=-1, type=click.Path(exists=True))
@click.option("--dialect", "dialects", multiple=True, default=("stablehlo", "chlo"), show_default=True)
@click.option("--missing", is_flag=True, help="Only ops without a kernel.")
def ops(programs, dialects, missing):
    """List the ops the bindings register, with kernel yes/no; with PROGRAMS
    (files or folders), say for each program whether it will run: the ops,
    custom-call targets and dialects it needs that have no kernel (exit 1
    when some program will not run)."""
    if programs:
        _will_it_run(programs)
        return
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


def _will_it_run(programs) -> None:
    from collections import Counter

    from ..harness.cases import discover  # loads mpmath: kept here for start-up time

    files = discover(list(programs))
    counts: Counter = Counter()
    for f in files:
        rows = file_report(f)
        for where, status, detail in rows:
            click.echo(f"{status.upper():<12}{where}" + (f": {detail}" if detail else ""))
        counts[max((r[1] for r in rows), key=("ok", "unsupported", "error").index, default="error")] += 1
    click.echo(f"\n{len(files)} files: {counts['ok']} will run, {counts['unsupported']} need unsupported ops, "
               f"{counts['error']} do not load")
    sys.exit(0 if counts["ok"] == len(files) else 1)


@click.command()
@click.argument("names", nargs=-1)
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="Write the descriptions as JSON.")
def backends(names, json_path):
    """List the installed backends; describe PJRT clients (every discovered
    plugin, the built-in xla client, and any pjrt:... NAMES given).

    Exit code 1 when a client named in NAMES does not load."""
    where = available()
    for name, src in sorted(where.items()):
        click.echo(f"{name:<12} {src}")
    described = []
    pjrt = [n for n in sorted(where) if n == "xla" or n.startswith("pjrt:")] + [n for n in names if n not in where]
    if pjrt:
        click.echo("\nPJRT clients:")
    for name in pjrt:
        try:
            be = get_backend(name)
        except Exception as e:  # a name that is no backend at all
            info = {"name": name, "loads": False, "error": str(e)}
        else:
            info = be.info() if isinstance(be, PjrtBackend) else {"name": name, "loads": False,
                                                                  "error": "not a PJRT backend"}
        described.append(info)
        click.echo(_pjrt_line(info))
    click.echo(f"\nprograms are parsed with {frontend.provider_version()}")
    if json_path:
        import json
        from pathlib import Path

        Path(json_path).write_text(json.dumps(described, indent=1))
    # a client named on the command line that does not load fails the command
    sys.exit(1 if any(d["name"] in names and not d.get("loads") for d in described) else 0)


def _pjrt_line(info: dict) -> str:
    if not info.get("loads"):
        return f"{display_name(info['name'])} does not load: {info.get('error', '')}"
    stated = "" if info["window_stated"] else " (not stated; default window)"
    api = f"PJRT C API {info['pjrt_c_api']}" if info.get("pjrt_c_api") else "built-in client"
    low, cur = (".".join(v.split(".")[:2]) for v in (info["stablehlo_minimum"], info["stablehlo_current"]))
    platform = info["platform"] + ("" if info["platform_version"] in ("", info["platform"])
                                   else f" {info['platform_version']}")
    return (f"{display_name(info['name'])} loads: platform {platform}, {api}, "
            f"{info['devices']} x {'/'.join(info['device_kinds'])}, StableHLO {low}-{cur}{stated}\n"
            f"    library {info['library']}")


COMMANDS = [ops, backends]
