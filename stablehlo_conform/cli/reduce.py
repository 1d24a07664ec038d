"""``conform reduce``: shrink a program while a property holds, and bundle it.

Exit codes: 0 the program was reduced and bundled, 1 the property does not
hold on the program given (nothing to reduce), 2 usage, input or program
errors, 130 / 143 interrupted by SIGINT / SIGTERM (the smallest program found
so far is bundled, its notes say the reduction was interrupted).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from .. import frontend
from ..errors import ConformError, InputError
from ..harness.backends import BackendUnavailable, check_name, display_name, shorten_names
from ..harness.campaigns.bundle import expected_values, write_bundle
from ..harness.campaigns.reduce import ENTRY, Property, entry_program, reduce_program
from ..harness.programs import inputs as I
from ..harness.records.guard import Interrupted, atomic_folder, ignore_interrupts, interruptible
from .common import SECONDS, SEED, InputFile, outputs_ready, regex_option
from .eval import _entry, _fail, _load

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")


@click.command("reduce")
@click.argument("program", type=InputFile(bounded=False))
@click.option("--backends", default="numpy,xla", show_default=True,
              help="Comma-separated backends; the first is the baseline, the last the one under suspicion (B).")
@click.option("--property", "prop", type=click.Choice(["disagree", "crash", "compile-error"]), default="disagree",
              show_default=True, help="What must keep holding: the backends disagree beyond tolerance, B crashes "
                                      "or times out, B fails with a message matching --match.")
@click.option("--match", "match", default=None, help="Regular expression for --property compile-error.")
@click.option("--script", "script", default=None,
              help="Instead of a property: a shell command given the candidate's path (inputs next to it as "
                   "candidate.npz); exit 0 means interesting.")
@click.option("-o", "--output", "output", required=True, type=click.Path(file_okay=False),
              help="Folder for the repro bundle of the reduced program.")
@click.option("--inputs", "inputs_path", type=InputFile(bounded=False),
              help=".npz with one array per argument (default: seeded random inputs).")
@click.option("--seed", default=0, show_default=True, type=SEED, help="Seed of the random inputs.")
@click.option("--entry", default=None,
              help="Function to reduce (default: main, or the only public one); NAME#N: the N-th function NAME "
                   "of a file of several modules, as test ids name it.")
@click.option("--budget", default=120.0, show_default=True, type=SECONDS, help="Seconds for the whole reduction.")
@click.option("--timeout", default=None, type=SECONDS,
              help="Seconds per candidate and backend "
                   "(default: 20x the original's warm run, at least 3x its first run and 2).")
@click.option("--quiet", "-q", is_flag=True, help="Only the summary.")
def reduce_cmd(program, backends, prop, match, script, output, inputs_path, seed, entry, budget, timeout, quiet):
    """Shrink PROGRAM while a property holds; write the smallest program found
    as a repro bundle in OUTPUT."""
    names = [b.strip() for b in backends.split(",") if b.strip()]
    for n in names:
        try:
            check_name(n)
        except BackendUnavailable as e:
            _fail(str(e))
    if prop == "compile-error" and not match:
        _fail("--property compile-error needs --match REGEX")
    regex_option(match, "--match")
    # the bundle's files replace those of the same name in OUTPUT: it holds no input
    outputs_ready({}, folders={"-o": output}, inputs=[program, inputs_path], fills=("-o",))
    if prop == "disagree" and not script and len(names) < 2:
        _fail("--backends needs at least two backends to disagree")
    module, entry = _module_of(program, entry)
    func = _entry(module, entry)
    try:
        text, is_test = entry_program(module.text, func.name)
    except ConformError as e:
        _fail(str(e))
    main = frontend.load_text(text, program)[0].funcs[ENTRY]
    try:
        args = I.match_inputs(main, I.load_npz(inputs_path)) if inputs_path else I.random_inputs(main, seed)
    except InputError as e:
        _fail(str(e))
    expected = expected_values(module.text, func.name) if is_test else None
    the_prop = Property(kind="script" if script else prop, match=match, script=script)
    log = None if quiet else (lambda s: click.echo(f"  {s}", err=True))
    try:
        with interruptible():
            red = reduce_program(text, args, names, the_prop, budget_s=budget, seed=seed, timeout=timeout, log=log,
                                 stop=(Interrupted,))
    except ConformError as e:
        _fail(str(e))
    except Interrupted as e:  # before the search began: nothing reduced yet
        sys.exit(e.exit_code)
    ignore_interrupts()  # from here on the bundle is written whatever arrives
    stopped = red.interrupted if isinstance(red.interrupted, Interrupted) else None
    if not red.holds:
        click.echo(f"the property does not hold on {program}: {red.property}")
        for b, o in red.outcomes.items():
            first = shorten_names(o["message"], names).splitlines()[0][:200] if o["message"] else ""
            click.echo(f"  {display_name(b)}: " + (first if first.startswith(o["status"]) else
                                                   o["status"] + (f": {first}" if first else "")))
        sys.exit(1)
    if expected is not None and red.text != text:
        expected = None  # the reduced program no longer returns what the checks looked at
    notes = [f"Reduced by `conform reduce` from `{program}` ({'test' if is_test else 'entry'} @{func.name}): "
             f"{red.ops_before} ops -> {red.ops_after} ops (terminators not counted), "
             f"{red.steps} edits kept of {red.candidates} candidates in {red.seconds:.1f} s"
             + (" (stopped by the time budget)" if red.stopped_by_budget else "")
             + (f" (INCOMPLETE: interrupted by {stopped.name}; the smallest program found so far)" if stopped else "")
             + ".", f"Property: {red.property}."]
    with atomic_folder(output) as tmp:
        write_bundle(tmp, red.text, red.inputs, names, red.outcomes, expected=expected,
                     title=f"{Path(program).name}: {red.property}", notes=notes)
    click.echo(f"reduced {program}: {red.ops_before} ops -> {red.ops_after} ops (terminators not counted) "
               f"in {red.seconds:.1f} s, {red.candidates} candidates"
               + (", stopped by the time budget" if red.stopped_by_budget else "")
               + (f", INCOMPLETE: interrupted by {stopped.name}" if stopped else ""))
    click.echo(f"repro bundle: {output}")
    if stopped:
        sys.exit(stopped.exit_code)


def _module_of(program: str, entry: str | None):
    """The module holding ``entry`` (``NAME`` or ``NAME#N``, the N-th
    function of that name in a file of several modules) and the name."""
    if not entry:
        return _load(program), entry
    name, _, nth = entry.partition("#")
    try:
        mods = frontend.load(program, split=True)
    except ConformError:
        return _load(program), name  # says why the file does not load
    having = [m for m in mods if name in m.funcs]
    n = int(nth) if nth.isdigit() else 1
    if nth and not nth.isdigit() or n < 1:
        _fail(f"--entry {entry}: want NAME or NAME#N (N = 1, 2, ...)")
    if len(having) < n:
        _fail(f"no function @{entry} in {program}" + (f" ({len(having)} functions @{name})" if having else ""))
    return having[n - 1], name


COMMANDS = [reduce_cmd]
