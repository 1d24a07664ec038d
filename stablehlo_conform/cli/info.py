"""``conform ops`` and ``conform backends``: what this installation covers."""

from __future__ import annotations

import os
import sys

import click

from .. import frontend
from ..engine import TERMINATORS
from ..errors import ConformError
from ..harness.backends import LOAD_SECONDS, BackendUnavailable, available, display_name, get_backend
from ..harness.backends.pjrt import PREFIX, PjrtBackend, locate, parse_name
from ..harness.records import jsonout
from ..harness.records.guard import write_atomic
from ..harness.suite.cases import file_report
from ..kernels.registry import load_all
from .common import SECONDS, outputs_ready


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

    from ..harness.suite.cases import discover  # loads mpmath: kept here for start-up time

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
@click.option("--load-timeout", "load_timeout", type=SECONDS, default=LOAD_SECONDS, show_default=True,
              help="Seconds each client may take to load and start (0: no limit).")
def backends(names, json_path, load_timeout):
    """List the installed backends and describe their PJRT clients (every
    discovered plugin and the built-in xla client); with NAMES (pjrt:PATH,
    pjrt:NAME or xla), describe only those.

    Exit code 2 when a client named in NAMES does not load (as in every
    command), 130 / 143 when interrupted."""
    outputs_ready({"--json": json_path})
    if names:
        pjrt = list(dict.fromkeys(names))
    else:
        where = available()
        for name, src in sorted(where.items()):
            click.echo(f"{name:<12} {src}")
        pjrt = [n for n in sorted(where) if n == "xla" or n.startswith(PREFIX)]
        click.echo("\nPJRT clients:")
    described = []
    for name in pjrt:
        info = _describe(name, load_timeout or None)
        described.append(info)
        click.echo(_pjrt_line(info))
    click.echo(f"\nprograms are parsed with {frontend.provider_version()}")
    if json_path:
        write_atomic(json_path, jsonout.dumps(described, indent=1))
    # a client named on the command line that does not load is a usage error, as in every command
    sys.exit(2 if names and any(not d.get("loads") for d in described) else 0)


def _describe(name: str, load_timeout: float | None) -> dict:
    """The client ``name`` as :meth:`PjrtBackend.describe` says it, loaded
    within the load deadline (the load check of every command; SIGINT /
    SIGTERM during it end the command, 130 / 143), or why it does not load:
    ``error`` is the reason alone and ``library`` the library or module the
    name stands for."""
    try:
        be = get_backend(name)
        if not isinstance(be, PjrtBackend):
            raise BackendUnavailable(f"{name} is not a PJRT client")
        be.check_loads(load_timeout)
        return be.info()
    except ConformError as e:
        return {"name": name, "loads": False, "error": _reason(str(e), name), "library": _library(name)}
    except Exception as e:  # an installed backend that does not even import
        return {"name": name, "loads": False, "error": f"{type(e).__name__}: {e}", "library": ""}


def _reason(text: str, name: str) -> str:
    """A load failure's message without the backend's name in front (the
    line says it): the reason once."""
    for label in (display_name(name), name):
        for head in (f"{label} does not load: ", f"{label}: "):
            if text.startswith(head):
                return text[len(head):]
    return text


def _library(name: str) -> str:
    """The library (or plugin module) a ``pjrt:`` name stands for: the path
    given, made absolute, or where the installed plugin of that name is."""
    try:
        spec = parse_name(name)
    except ConformError:
        return ""
    if spec.is_path:
        return os.path.abspath(spec.target)
    return (locate(spec.target) or ("", ""))[1]


def _pjrt_line(info: dict) -> str:
    if not info.get("loads"):
        reason, library = info.get("error", ""), info.get("library", "")
        at = f" ({library})" if library and library not in reason else ""
        return f"{display_name(info['name'])}{at} does not load: {reason}"
    stated = "" if info["window_stated"] else " (not stated; default window)"
    api = f"PJRT C API {info['pjrt_c_api']}" if info.get("pjrt_c_api") else "built-in client"
    low, cur = (".".join(v.split(".")[:2]) for v in (info["stablehlo_minimum"], info["stablehlo_current"]))
    platform = info["platform"] + ("" if info["platform_version"] in ("", info["platform"])
                                   else f" {info['platform_version']}")
    return (f"{display_name(info['name'])} loads: platform {platform}, {api}, "
            f"{info['devices']} x {'/'.join(info['device_kinds'])}, StableHLO {low}-{cur}{stated}\n"
            f"    library {info['library']}")


COMMANDS = [ops, backends]
