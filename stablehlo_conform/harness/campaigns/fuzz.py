"""A differential fuzz campaign (``conform fuzz``).

Programs come from :func:`.fuzzgen.generate`; each runs on every backend in a
child process per backend (:class:`.reduce.IsolatedBackends`: a crash or a
hang ends that program, not the campaign), the backends' results are compared
with :func:`.reduce.compare_outcomes` (the comparison of ``conform diff``
and ``conform reduce``; outputs that differ are judged op by op as ``conform
diff`` does, :func:`.diff.judge_isolated`), and every disagreement or crash is shrunk by
:func:`.reduce.reduce_program` and written as a repro bundle.

Every program ends as one record in the style of ``conform run --json``
(``id`` ``fuzz/<seed>/<index>``, ``status`` pass / fail (backends disagree)
/ crash / timeout / error / unsupported, ``message``, ``family`` (the last op
of the program, of the reduced program once reduced), ``dtypes``), so
``conform report`` and ``conform triage`` read a campaign's results like a
run's, and the shards of a campaign merge like a run's.
"""

from __future__ import annotations

import re
import signal
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..judge.diff import judge_isolated, judged
from ..programs.inputs import save_npz
from ..records.result import NOT_RUN, STATUSES, Status
from ..records.shard import indices, shard_info
from .bundle import write_bundle
from .fuzzgen import Program, generate
from .reduce import IsolatedBackends, Property, compare_outcomes, reduce_program

_OP = re.compile(r"\b((?:stablehlo|chlo)\.[a-z_]+)")
_ETYPE = re.compile(r"tensor<(?:[0-9?]+x)*([a-zA-Z0-9]+(?:<[a-z0-9]+>)?)>")
_QUIET_OPS = {"stablehlo.constant", "stablehlo.return"}


def program_signature(text: str) -> tuple[str, str]:
    """(ops, element types) of a program: the sorted op names it uses
    (constants and returns aside) and the element types it mentions."""
    ops = sorted({m for m in _OP.findall(text) if m not in _QUIET_OPS})
    types = sorted(set(_ETYPE.findall(text)))
    return ",".join(ops) or "-", ",".join(types) or "-"


def classify(outcomes: dict[str, dict], backends: Sequence[str],
             judge: Callable[[], dict] | None = None) -> tuple[str, str, str | None]:
    """``(status, message, backend)`` of one program's outcomes: a crash or
    timeout of a backend first, then an error, then a disagreement. ``judge``
    (the report of :func:`.diff.judge_isolated`) has the last word on outputs
    that differ: every op within its accuracy class (a dot's allowed precision
    included) makes them agree."""
    for status in NOT_RUN:  # worst first
        for b in backends:
            o = outcomes[b]
            if o["status"] == status:
                return status, f"{b}: {o['message'].strip()[:2000]}", b
    bad = [c for c in compare_outcomes(outcomes, backends) if c["status"] != "ok"]
    if bad:
        c = bad[0]
        message = f"{c['backend']} vs {c['against']}, result {c['index']}: {c['message']}"
        rep = judged(judge)
        if rep is not None and rep["status"] == "agree":
            return "pass", f"{message}\nverdict: {rep.get('verdict', 'agree')}", None
        if rep is not None and rep.get("verdict"):
            message += f"\nverdict: {rep['verdict']}"
        return "fail", message, c["backend"]
    return "pass", "", None


def _reduce_and_bundle(prog: Program, status: str, backend: str | None, backends: Sequence[str], out_dir: Path,
                       budget: float, log: Callable[[str], None]) -> dict[str, Any]:
    prop = Property("disagree") if status == "fail" else Property("crash", target=backend)
    try:
        red = reduce_program(prog.text, prog.inputs, backends, prop, budget_s=budget, seed=prog.seed)
    except Exception as e:  # the reducer failing is reported, not fatal to the campaign
        log(f"  reduce failed: {type(e).__name__}: {e}")
        return {"reduced": False, "reduce_error": f"{type(e).__name__}: {e}"}
    folder = out_dir / f"seed{prog.seed}-{prog.index:06d}"
    notes = [f"Found by `conform fuzz --seed {prog.seed}`: program {prog.index} ({prog.kind}, "
             f"{', '.join(prog.element_types)}{', special values on purpose' if prog.special else ''}), "
             f"reduced from {red.ops_before} to {red.ops_after} ops in {red.seconds:.1f} s "
             f"({'property held' if red.holds else 'property did NOT hold on the isolated re-run'}"
             f"{', stopped by the time budget' if red.stopped_by_budget else ''}).",
             "The generated program and its inputs are `original.mlir` and `original.npz`."]
    write_bundle(folder, red.text, red.inputs, backends, red.outcomes,
                 title=f"fuzz seed {prog.seed} program {prog.index}: {prop.describe(list(backends))}", notes=notes)
    (folder / "original.mlir").write_text(prog.text)
    save_npz(folder / "original.npz", {f"arg{i}": np.asarray(a) for i, a in enumerate(prog.inputs)})
    ops, types = program_signature(red.text)
    last = [m for m in _OP.findall(red.text) if m not in _QUIET_OPS]
    return {"reduced": True, "family": last[-1] if last else "-", "bundle": str(folder),
            "ops_before": red.ops_before, "ops_after": red.ops_after,
            "reduced_ops": ops, "reduced_types": types, "reduce_seconds": round(red.seconds, 2),
            "still_holds": red.holds}


def run_program(seed: int, i: int, backends: Sequence[str], runners: IsolatedBackends, out: Path | None,
                budget: float, timeout: float | None, reduce: bool, log: Callable[[str], None],
                timing: dict[str, float], stop: tuple[type[BaseException], ...] = ()) -> dict[str, Any]:
    """The record of program ``i`` of ``seed``: generated, run on every backend, classified and,
    when it fails, reduced and bundled into ``out``. An exception of a type in ``stop`` raised
    while reducing is raised again once the record says so (``record.interrupted``)."""
    t = time.monotonic()
    try:
        prog = generate(seed, i)
    except Exception as e:
        return {"id": f"fuzz/{seed}/{i}", "status": "error", "family": "generator",
                "message": f"generator: {e}", "backend": ",".join(backends)}
    t1 = time.monotonic()
    timing["generate"] += t1 - t
    outcomes = runners.outcomes(prog.text, prog.inputs)
    timing["run"] += time.monotonic() - t1
    status, message, culprit = classify(
        outcomes, backends, lambda: judge_isolated(prog.text, prog.inputs, runners, timeout=timeout))
    ops, types = program_signature(prog.text)
    rec: dict[str, Any] = {"id": prog.id, "status": status, "message": message, "kind": prog.kind,
                           "family": (prog.ops or ["stablehlo.convert"])[-1], "dtypes": prog.element_types,
                           "ops": ops, "backend": ",".join(backends), "special_inputs": prog.special}
    if status != "pass":
        log(f"{prog.id} {status.upper()} ({prog.kind}, {', '.join(prog.element_types)}): "
            f"{message.splitlines()[0][:160] if message else ''}")
    if Status(status).reproducible and out is not None and reduce:
        t2 = time.monotonic()
        try:
            rec.update(_reduce_and_bundle(prog, status if status == "fail" else "crash", culprit, backends,
                                          out, budget, log))
        except stop as e:
            rec.update(reduced=False, reduce_error=f"interrupted by {_signal_name(e)}")
            raise Stopped(rec, e) from e
        finally:
            timing["reduce"] += time.monotonic() - t2
        if rec.get("reduced"):
            log(f"  reduced {rec['ops_before']} -> {rec['ops_after']} ops ({rec['reduced_ops']}; "
                f"{rec['reduced_types']}) in {rec['reduce_seconds']} s: {rec['bundle']}")
    return rec


class Stopped(BaseException):
    """An interrupt while a program was reduced: its record so far, and the interrupt."""

    def __init__(self, record: dict[str, Any], cause: BaseException):
        super().__init__(cause)
        self.record = record
        self.cause = cause


_RUNNERS: dict[tuple, IsolatedBackends] = {}  # a cluster worker's backends, started once per process


def cluster_program(seed: int, i: int, backends: tuple[str, ...], budget: float, timeout: float | None,
                    reduce: bool) -> tuple[dict[str, Any], dict[str, float], dict[str, bytes], list[str]]:
    """:func:`run_program` as a task of a cluster worker: the record, the time spent, the files of
    its bundle (paths relative to the output folder) and the lines it logged. The worker keeps
    its backends' child processes for the next program."""
    import shutil
    import tempfile

    key = (tuple(backends), timeout)
    runners = _RUNNERS.get(key)
    if runners is None:
        runners = _RUNNERS[key] = IsolatedBackends(list(backends), timeout)
    timing = {"generate": 0.0, "run": 0.0, "reduce": 0.0}
    lines: list[str] = []
    tmp = Path(tempfile.mkdtemp(prefix="conform-fuzz-"))
    try:
        rec = run_program(seed, i, list(backends), runners, tmp, budget, timeout, reduce, lines.append, timing)
        files = {}
        if rec.get("bundle"):
            folder = Path(rec["bundle"])
            rec["bundle"] = folder.name
            files = {str(f.relative_to(tmp)): f.read_bytes() for f in sorted(folder.rglob("*")) if f.is_file()}
        return rec, timing, files, [ln.replace(str(tmp), "<output>") for ln in lines]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _run_on_cluster(pool: Any, seed: int, planned: Sequence[int], backends: Sequence[str], out: Path | None,
                    budget: float, timeout: float | None, reduce: bool, log: Callable[[str], None],
                    timing: dict[str, float], results: list[dict]) -> None:
    """The programs of ``planned`` on the workers of ``pool`` (:mod:`.cluster`); bundles written
    into ``out`` here, records in ``results`` as they arrive."""
    tasks = [(seed, i, tuple(backends), budget, timeout, reduce and out is not None) for i in planned]
    for _k, (rec, spent, files, lines) in pool.run(cluster_program, tasks):
        for k, v in spent.items():
            timing[k] += v
        if files and out is not None:
            for rel, data in files.items():
                f = out / rel
                f.parent.mkdir(parents=True, exist_ok=True)
                f.write_bytes(data)
            rec["bundle"] = str(out / rec["bundle"])
        for line in lines:
            log(line.replace("<output>", str(out)))
        results.append(rec)


def run_campaign(seed: int, count: int, backends: Sequence[str], out_dir: str | Path | None,
                 shard: tuple[int, int] | None = None, budget: float = 30.0, timeout: float | None = 60.0,
                 reduce: bool = True, log: Callable[[str], None] = lambda _s: None,
                 stop: tuple[type[BaseException], ...] = (), pool: Any = None) -> dict[str, Any]:
    """Run programs ``indices(count, shard)`` of ``seed``; returns the
    results document (``results``, ``summary``, ``fuzz``, ``shard``).

    With ``pool`` (a cluster's executor, :mod:`.cluster`) the programs run on
    its workers, each with its own backends; the records are the same as a
    local run's, in the same order.

    An exception of a type in ``stop`` that has a ``signum`` (an interrupt)
    ends the campaign early: the document holds the programs that ran (one
    whose reduction was cut short keeps its result, unbundled) and says so
    (``complete`` false, ``interrupted``, ``not_run``)."""
    backends = list(backends)
    out = Path(out_dir) if out_dir else None
    t0 = time.monotonic()
    results: list[dict] = []
    runners = None
    timing = {"generate": 0.0, "run": 0.0, "reduce": 0.0}
    planned = indices(count, shard)
    stopped: BaseException | None = None
    try:
        if pool is not None:
            _run_on_cluster(pool, seed, planned, backends, out, budget, timeout, reduce, log, timing, results)
        else:
            runners = IsolatedBackends(backends, timeout)
            for i in planned:
                try:
                    results.append(run_program(seed, i, backends, runners, out, budget, timeout, reduce, log,
                                               timing, stop))
                except Stopped as e:
                    results.append(e.record)
                    raise e.cause from None
    except stop as e:
        stopped = e
    finally:
        if runners is not None:
            runners.close()
    order = {f"fuzz/{seed}/{i}": k for k, i in enumerate(planned)}
    results.sort(key=lambda r: order.get(r["id"], len(order)))
    wall = time.monotonic() - t0
    universe = f"fuzz seed={seed} count={count}"
    extra: dict[str, Any] = {}
    if stopped is not None:
        extra = {"interrupted": _signal_name(stopped), "interrupted_signum": getattr(stopped, "signum", 0),
                 "not_run": {"tests": len(planned) - len(results), "files": 0}}
    return {"backend": ",".join(backends), "complete": stopped is None, **extra, "results": results,
            "summary": summarize(results), "wall_time": round(wall, 2),
            "fuzz": {"seed": seed, "count": count, "backends": backends, "budget": budget,
                     "seconds": {k: round(v, 2) for k, v in timing.items()}},
            "shard": shard_info(shard, universe, count)}


def _signal_name(e: BaseException) -> str:
    signum = getattr(e, "signum", None)
    return signal.Signals(signum).name if signum else type(e).__name__


def summarize(results: Sequence[dict]) -> dict[str, Any]:
    c = Counter(r["status"] for r in results)
    return {"total": len(results), **{s: c.get(s, 0) for s in STATUSES}}


def groups(results: Sequence[dict]) -> list[tuple[tuple[str, str, str], list[dict]]]:
    """Non-passing programs grouped by (status, ops, element types) of their
    reduced program (of the program itself when it was not reduced)."""
    out: dict[tuple[str, str, str], list[dict]] = {}
    for r in results:
        if r["status"] == "pass":
            continue
        key = (r["status"], r.get("reduced_ops") or r.get("ops", "-"),
               r.get("reduced_types") or ",".join(r.get("dtypes") or []))
        out.setdefault(key, []).append(r)
    return sorted(out.items(), key=lambda kv: (-len(kv[1]), kv[0]))
