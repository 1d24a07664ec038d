"""``conform eval`` (run one program on inputs) and ``conform diff`` (run it
on several backends and locate the first op where they disagree).

Exit codes: 0 success (``diff``: the backends agree), 1 the program failed
to run (``diff``: the backends disagree, or one of them did not run), 2
usage, input or program errors (or a backend that is not installed or does
not load).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

# XLA's C++ runtime logs informational lines to stderr when a client starts;
# the level is read once, when jaxlib loads (also in worker processes, which
# inherit the environment), so it is set before anything imports jaxlib.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

from .. import frontend
from ..compare import is_float_dtype
from ..errors import ConformError, InputError, ParseError
from ..harness.backends import BackendUnavailable, check_name, get_backend
from ..harness.campaigns.bundle import diff_bundle
from ..harness.programs import inputs as I
from ..harness.programs import recipe as R
from ..harness.programs.support import unsupported_ops
from ..harness.records import jsonout
from ..harness.records.guard import GuardError, atomic_path, prepare_outputs, write_atomic
from ..harness.records.options import RunIO, RunOptions
from .backend_option import usable_backend
from .common import SECONDS, SEED, InputFile


def _fail(message: str, code: int = 2) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def _load(path: str):
    try:
        mods = frontend.load(path)
    except ParseError as e:
        from ..harness.programs.support import describe_parse_error  # loads the kernels: kept here for start-up time

        _fail(describe_parse_error(e, Path(path).read_text(errors="replace"))[1])
    except ConformError as e:
        _fail(str(e))
    if not mods:
        _fail(f"{path}: no module found")
    return mods[0]


def _outputs(outputs: dict, program: str, folders: dict | None = None, inputs=()) -> None:
    """Every output usable before ``program`` runs, none of them the
    program, its recipe or one of the other ``inputs`` (see
    :mod:`..harness.guard`)."""
    try:
        prepare_outputs(outputs, folders=folders, inputs=[program, R.recipe_path(program), *inputs])
    except GuardError as e:
        _fail(str(e))


def _save_npz(path: str, arrays: dict) -> None:
    with atomic_path(path) as tmp:
        I.save_npz(tmp, arrays)


def _print_unsupported(module) -> None:
    """The ops and custom-call targets the numpy engine cannot evaluate, in one line."""
    missing = unsupported_ops([module])
    if missing:
        click.echo(f"unsupported: {', '.join(missing)}", err=True)


def _entry(module, entry):
    from ..harness.judge.diff import entry_of  # loads mpmath: kept here for start-up time

    try:
        return entry_of(module, entry)
    except ConformError as e:
        _fail(str(e))


def _inputs(func, inputs_path, use_random: bool, seed: int, required: bool = True):
    try:
        if inputs_path:
            return I.match_inputs(func, I.load_npz(inputs_path))
        if use_random or not func.param_types:
            return I.random_inputs(func, seed)
    except InputError as e:
        _fail(str(e))
    if required:
        types = ", ".join(str(t) for t in func.param_types)
        _fail(f"@{func.name} takes {len(func.param_types)} arguments ({types}): "
              "give --inputs FILE.npz or --random")
    return None


def _recipe(program: str, func):
    """The model recipe beside ``program`` (None when it has none), checked against ``func``."""
    path = R.recipe_path(program)
    if path is None:
        return None
    try:
        recipe = R.read_recipe(path)
        R.check_fits(recipe, func.param_types)
    except InputError as e:
        _fail(str(e))
    return recipe


def _recipe_inputs(recipe, seed: int):
    return R.build_inputs(recipe, seed if seed else None)


def _format_array(name: str, ttype, a) -> str:
    import numpy as np

    a = np.asarray(a)
    if a.dtype.kind == "V":  # ml_dtypes (bf16, f8, int4, ...): print their values
        a = a.astype(np.float64 if is_float_dtype(a.dtype) else np.int64)
    return f"{name}: {ttype} =\n{np.array2string(a, threshold=200, max_line_width=100)}"


@click.command("eval")
@click.argument("program", type=InputFile(bounded=False))
@click.option("--inputs", "inputs_path", type=InputFile(bounded=False),
              help=".npz with one array per argument (arg0, arg1, ... or argument names).")
@click.option("--random", "use_random", is_flag=True,
              help="Seeded random inputs per argument type (a model's default: its recipe's inputs).")
@click.option("--seed", default=0, show_default=True, type=SEED)
@click.option("--entry", default=None, help="Function to run (default: main, or the only public one).")
@click.option("--backend", default="numpy", show_default=True,
              help="numpy, reference, xla, iree, pjrt:PATH.so, pjrt:NAME or an installed plugin.")
@click.option("--output", "-o", "output", type=click.Path(dir_okay=False),
              help="Write results to .npz as out0, out1, ...")
@click.option("--print", "print_", is_flag=True, help="Print the results.")
@click.option("--profile", is_flag=True, help="Per-op wall time and call counts (numpy backend).")
@click.option("--profile-json", type=click.Path(dir_okay=False), help="Write the profile as JSON.")
@click.option("--top", default=15, show_default=True, type=click.IntRange(1), help="Ops shown by --profile.")
@click.option("--timeout", default=0.0, type=SECONDS, help="Seconds (0: none).")
@click.option("--num-replicas", type=click.IntRange(1), default=None,
              help="Process grid (numpy backend; default: the module's mhlo.num_replicas).")
@click.option("--num-partitions", type=click.IntRange(1), default=None,
              help="Process grid (numpy backend; default: the module's mhlo.num_partitions).")
@click.option("--infeed", "infeed_path", type=InputFile(bounded=False),
              help=".npz whose arrays (in order) are the infeed queue, one array per infeed op.")
@click.option("--outfeed", "outfeed_path", type=click.Path(dir_okay=False),
              help="Write the values given to outfeed ops to .npz (outfeed0, outfeed1, ...).")
def eval_cmd(program, inputs_path, use_random, seed, entry, backend, output, print_, profile, profile_json,
             top, timeout, num_replicas, num_partitions, infeed_path, outfeed_path):
    """Run PROGRAM (text, bytecode or portable artifact) on inputs."""
    import time

    if inputs_path and use_random:
        _fail("give either --inputs or --random")
    _outputs({"--output": output, "--profile-json": profile_json, "--outfeed": outfeed_path}, program,
             inputs=[inputs_path, infeed_path])
    try:
        check_name(backend)
    except BackendUnavailable as e:
        _fail(str(e))
    module = _load(program)
    if backend == "numpy":
        _print_unsupported(module)
    func = _entry(module, entry)
    recipe = None if (inputs_path or use_random) else _recipe(program, func)
    args = _recipe_inputs(recipe, seed) if recipe is not None else _inputs(func, inputs_path, use_random, seed)
    grid = (num_replicas or 1) * (num_partitions or 1) > 1
    if (grid or infeed_path or outfeed_path) and backend != "numpy":
        _fail("--num-replicas/--num-partitions/--infeed/--outfeed need the numpy backend")
    io_ = None
    if infeed_path or outfeed_path or grid:
        try:
            feed = list(I.load_npz(infeed_path).values()) if infeed_path else []
        except InputError as e:
            _fail(str(e))
        io_ = RunIO(infeed=feed)
    opts = RunOptions(backend=backend, timeout=timeout or None, num_replicas=num_replicas,
                      num_partitions=num_partitions, io=io_)
    prof: dict | None = {} if (profile or profile_json) else None
    t0 = time.perf_counter()
    try:
        if prof is not None:
            if backend != "numpy":
                click.echo(f"note: --profile measures the numpy engine, not {backend}", err=True)
            from ..harness.backends.numpy_backend import NumpyBackend  # the engine: kept here for start-up time

            nb = get_backend("numpy") if backend == "numpy" else NumpyBackend()
            eng = nb.engine(module, opts)
            eng.profile = prof
            t0 = time.perf_counter()
            results = eng.call(func.name, tuple(args))
            if backend != "numpy":
                results = get_backend(backend).run_function(module, func.name, args, opts)
        else:
            results = get_backend(backend).run_function(module, func.name, args, opts)
    except BackendUnavailable as e:
        _fail(str(e))
    except InputError as e:
        _fail(str(e))
    except ConformError as e:  # "error: <why>" once: _fail says "error:", another status is said after it
        text = str(e).removeprefix("error: ")
        _fail(text if e.status == "error" or text.startswith(f"{e.status}:") else f"{e.status}: {text}", 1)
    wall = time.perf_counter() - t0
    results = tuple(results)
    per_process = (io_.processes if io_ is not None else None) or {(0, 0): results}
    multi = len(per_process) > 1

    def key(pid, i):  # out0, or r0p1_out0 on a grid of several processes
        return f"r{pid[0]}p{pid[1]}_out{i}" if multi else f"out{i}"

    if output:
        _save_npz(output, {key(pid, i): r for pid, res in sorted(per_process.items())
                           for i, r in enumerate(res)})
    if print_ or not output:
        for pid, res in sorted(per_process.items()):
            for i, (r, t) in enumerate(zip(res, func.result_types)):
                click.echo(_format_array(key(pid, i), t, r))
    if outfeed_path and io_ is not None:
        flat = [v for values in io_.outfeed for v in values]
        _save_npz(outfeed_path, {f"outfeed{i}": v for i, v in enumerate(flat)})
    if prof is not None:
        total = sum(v[1] for v in prof.values())
        rows = sorted(prof.items(), key=lambda kv: -kv[1][1])
        click.echo(f"\nprofile ({wall * 1e3:.1f} ms wall, {total * 1e3:.1f} ms in kernels):")
        click.echo(f"{'op':<36} {'calls':>8} {'total ms':>10} {'share':>7}")
        for name, (count, secs) in rows[:top]:
            share = 100 * secs / total if total else 0.0
            click.echo(f"{name:<36} {count:>8} {secs * 1e3:>10.3f} {share:>6.1f}%")
        if profile_json:
            doc = {"wall_seconds": wall, "kernel_seconds": total,
                   "ops": {k: {"count": v[0], "seconds": v[1]} for k, v in rows}}
            write_atomic(profile_json, jsonout.dumps(doc, indent=1))


@click.command("diff")
@click.argument("program", type=InputFile(bounded=False))
@click.option("--backends", default="numpy,xla", show_default=True,
              help="Comma-separated backends; the first is the baseline.")
@click.option("--inputs", "inputs_path", type=InputFile(bounded=False),
              help=".npz with one array per argument (default: seeded random inputs).")
@click.option("--seed", default=0, show_default=True, type=SEED)
@click.option("--entry", default=None)
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="Write the report as JSON.")
@click.option("--localise", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
              help="Run every op alone on every backend: on mismatch (auto), always or never.")
@click.option("--max-ops", default=None, type=click.IntRange(1),
              help="Op runs compared when localising (default: 300; a model's: all).")
@click.option("--timeout", default=120.0, show_default=True, type=SECONDS, help="Seconds per backend call (0: none).")
@click.option("--repro-dir", type=click.Path(file_okay=False),
              help="When the backends disagree or one crashes: write a repro bundle into DIR/<program>.")
@click.option("--accuracy-profile", "accuracy_profile", type=InputFile(),
              help="ULP bounds per op and element type (TOML or JSON) overriding the default accuracy classes.")
def diff_cmd(program, backends, inputs_path, seed, entry, json_path, localise, max_ops, timeout, repro_dir,
             accuracy_profile):
    """Run PROGRAM on several backends with the same inputs and compare.

    A model (a program with NAME.recipe.json beside it) runs on its recipe's
    inputs, and every backend is judged by the model rule (docs/models.md)."""
    # loads mpmath: kept here for start-up time
    from ..harness.judge.diff import diff_options, diff_program, format_report
    from ..harness.judge.model import diff_model  # the engine: kept here for start-up time

    names = [b.strip() for b in backends.split(",") if b.strip()]
    if len(names) < 2:
        _fail("--backends needs at least two backends")
    _outputs({"--json": json_path}, program, folders={"--repro-dir": repro_dir},
             inputs=[inputs_path, accuracy_profile])
    for n in names:
        usable_backend(n, "--backends")
    module = _load(program)
    func = _entry(module, entry)
    recipe = _recipe(program, func)
    args = _inputs(func, inputs_path, True, seed) if recipe is None or inputs_path else _recipe_inputs(recipe, seed)
    profile = None
    if accuracy_profile:
        from ..oracle.classes import accuracy_profile_option  # loads mpmath: kept here for start-up time

        profile = accuracy_profile_option(accuracy_profile, click.UsageError)
    opts = diff_options(timeout=timeout or None, localise=localise,
                       max_ops=max_ops or (10**9 if recipe is not None else 300), accuracy_profile=profile)
    try:
        run = diff_model if recipe is not None else diff_program
        report = run(module, func.name, names, args, opts)
    except ConformError as e:
        _fail(str(e))
    report["program"] = program
    report["seed"] = None if inputs_path else seed
    for line in format_report(report):
        click.echo(line)
    if json_path:
        write_atomic(json_path, jsonout.dumps(report, indent=1, default=str))
    if repro_dir and report["status"] != "agree":
        click.echo(f"repro bundle: {diff_bundle(repro_dir, program, module, func.name, args, names, report, timeout)}")
    sys.exit(0 if report["status"] == "agree" else 1)


COMMANDS = [eval_cmd, diff_cmd]
