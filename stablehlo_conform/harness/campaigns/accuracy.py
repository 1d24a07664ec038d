"""Accuracy of a backend's element-wise float math against the exact values (``conform accuracy``).

For every op of :data:`...oracle.exact.DEFINED_OPS` and every float element type, the op runs on a backend
as one tiny StableHLO program whose single tensor holds all the inputs; each result is compared
with the correctly rounded exact value (:mod:`...oracle.exact`), giving the maximum ULP error, the share of
correctly rounded results (bit for bit, signed zeros included, any NaN equal to any NaN) and the
worst input.

Inputs (:func:`inputs_for`):

- unary ops on 4- to 16-bit types: every value of the type (exhaustive);
- binary ops on 4- to 8-bit types: every pair of values (exhaustive), except the slow special
  functions ``igamma``, ``igammac``, ``polygamma`` and ``zeta``, which get the samples below;
- everything else (binary ops on 16-bit types, f32, f64, complex): ``samples`` seeded random
  inputs per op and type (a quarter random bit patterns, which reach every exponent, NaN and the
  infinities; a quarter uniform in [-4, 4]; a quarter uniform in [-100, 100]; a quarter of random
  sign with a magnitude uniform in exponent over the whole range, subnormals included), plus the
  edge values (+-0, the extreme subnormals and normals, +-inf, NaN, +-1, +-1/2, +-2, poles at
  the non-positive integers, the branch points +-1). Binary ops also get every pair of edge
  values; complex arguments get every pair of edge values as (real, imaginary) parts, which
  covers the branch cuts on both sides of their signed zeros. The special functions ``igamma``,
  ``igammac``, ``polygamma`` and ``zeta`` get a tenth of the samples, with magnitudes in
  [2**-20, 2**10] (plus every pair of edge values), where their arbitrary-precision evaluation
  stays fast.

Elements whose value the spec leaves open (:func:`...oracle.exact.spec_silent`), and the rare inputs whose
exact value takes mpmath more than ``EVAL_SECONDS`` (``polygamma`` of a huge order, ...), are not
measured; they are counted as ``silent``.

Each :class:`Cell` records its wall time (``seconds``) and the largest distance of a result from
the correctly rounded one in steps of the type (``max_steps``, what comparisons bound). A JSON
Lines file of cells (``--jsonl``) also gets one record per run (:func:`run_record`), so that a
table measured over several runs states its total honestly: the sum of the per-cell times, and
the wall time of every run.

The report (:func:`render_markdown`) has, per backend, a table of the 4- to 8-bit types and one of
the 16-, 32-, 64-bit and complex types; an op the type cannot take is ``n/a`` with its reason
(:func:`not_applicable`), a cell not measured yet ``not run``. Every cell of the numpy backend that
is not correctly rounded is listed with its reason from ``accuracy_notes.json``.

The default ULP bounds of the ``ulp`` accuracy class (``ulp_defaults.json``, :mod:`...oracle.classes`) are
derived from the cells by :func:`ulp_defaults` (the rule: :data:`DEFAULTS_RULE`).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from ... import frontend
from ... import types as T
from ...compare import ulp_distance
from ...numeric import float_from_bits, kind_of, significand_and_emin, wide
from ...oracle import exact as X
from ...oracle.classes import EXACT_OPS, measured_bound
from ..backends import get_backend
from ..records import jsonout
from ..records.names import display_name, shorten_names
from ..records.options import RunOptions
from .cluster import init_worker, kill_workers

# element types measured, narrowest first
FLOAT_TYPES = ("f4E2M1FN", "f6E2M3FN", "f6E3M2FN", "f8E3M4", "f8E4M3", "f8E4M3FN", "f8E4M3FNUZ",
               "f8E4M3B11FNUZ", "f8E5M2", "f8E5M2FNUZ", "f8E8M0FNU", "bf16", "f16", "f32", "f64")
COMPLEX_TYPES = ("complex<f32>", "complex<f64>")
ALL_TYPES = FLOAT_TYPES + COMPLEX_TYPES

SLOW_BINARY = frozenset({"chlo.igamma", "chlo.igammac", "chlo.polygamma", "chlo.zeta"})
DEFAULT_SAMPLES = 100_000
SLOW_DIVISOR = 10  # the slow special functions get a tenth of the samples
EVAL_SECONDS = 2.0  # an input whose exact value takes longer is not measured (counted as silent)
BACKEND_SECONDS = 120.0  # a backend run of one cell over this time ends the cell as `timeout`


def op_arity(op: str) -> int:
    if op in X._OPS:
        return X._OPS[op].arity
    return 2 if op == "stablehlo.remainder" else 1


@lru_cache(maxsize=None)
def _registered() -> frozenset[str]:
    return frozenset(frontend.registered_ops("stablehlo")) | frozenset(frontend.registered_ops("chlo"))


def ops_for(type_name: str) -> list[str]:
    """The ops measured on ``type_name``: those with an exact definition that the bindings know
    (``chlo.bessel_i0e`` has a kernel for older programs but is no longer a CHLO op)."""
    cplx = type_name.startswith("complex")
    reg = _registered()
    return sorted(o for o in (X.COMPLEX_OPS if cplx else X.DEFINED_OPS) if not reg or o in reg)


def dtype_of(type_name: str) -> np.dtype:
    return T.ElementType(type_name).dtype


def result_type(op: str, type_name: str) -> str:
    if op == "stablehlo.abs" and type_name.startswith("complex"):
        return type_name[len("complex<"):-1]
    return type_name


def _bits(type_name: str) -> int:
    return T.ElementType(type_name).bits


def exhaustive(type_name: str, op: str) -> bool:
    """Whether ``op`` on ``type_name`` is measured on every value (pair)."""
    if type_name.startswith("complex"):
        return False
    b = _bits(type_name)
    if op_arity(op) == 1:
        return b <= 16
    return b <= 8 and op not in SLOW_BINARY


def all_values(dt: np.dtype) -> np.ndarray:
    """Every value of a float type of at most 16 bits (every bit pattern)."""
    nbits = T.ElementType(T.name_of_dtype(dt)).bits
    return float_from_bits(np.arange(1 << nbits, dtype=np.uint64), dt)


def edge_values(dt: np.dtype, op: str = "") -> np.ndarray:
    """+-0, extreme subnormals and normals, +-inf, NaN, small integers and halves, poles."""
    p, emin = significand_and_emin(dt)
    big = float(X.format_of(dt).max)
    tiny = math.ldexp(1.0, emin - (p - 1))
    vals = [0.0, tiny, math.ldexp(1.0, emin) - tiny, math.ldexp(1.0, emin), big, math.inf, math.nan,
            1.0, 0.5, 2.0, 3.0, 1.0 - math.ldexp(1.0, -p), 1.0 + math.ldexp(1.0, 1 - p), 0.25, 10.0, 88.72284,
            89.41599, 709.7827, 1.5707964, 3.1415927, -1.5734985, -2.4570825, 1.4616321]
    vals += [-v for v in vals]
    vals += [-1.0 * k for k in range(3, 11)]
    with np.errstate(all="ignore"):
        arr = np.array(vals, dtype=np.float64).astype(np.float32 if dt.itemsize <= 2 else np.float64).astype(dt)
    bits = T.to_bits(arr)
    _, first = np.unique(bits, return_index=True)  # by bit pattern: keeps both zeros
    return arr[np.sort(first)]


def _random_real(dt: np.dtype, n: int, rng: np.random.Generator, slow: bool) -> np.ndarray:
    p, emin = significand_and_emin(dt)
    fmt = X.format_of(dt)
    emax = int(math.floor(math.log2(fmt.max)))
    if slow:
        mags = np.exp2(rng.uniform(-20, 10, n))
        signs = np.where(rng.random(n) < 0.2, -1.0, 1.0)
        return (mags * signs).astype(dt)
    q = n // 4
    nbits = T.ElementType(T.name_of_dtype(dt)).bits
    raw = rng.integers(0, 1 << min(nbits, 63), size=q, dtype=np.uint64)
    if nbits == 64:
        raw |= rng.integers(0, 2, size=q, dtype=np.uint64) << np.uint64(63)
    with np.errstate(all="ignore"):
        parts = [float_from_bits(raw, dt).astype(np.float64)]
    parts.append(rng.uniform(-4, 4, q))
    parts.append(rng.uniform(-100, 100, q))
    rest = n - 3 * q
    e = rng.uniform(emin - p, emax + 1, rest)
    with np.errstate(all="ignore"):  # the top of the exponent range overflows f64 to inf (kept)
        parts.append(np.where(rng.random(rest) < 0.5, -1.0, 1.0) * np.exp2(e))
        return np.concatenate(parts).astype(dt)


def inputs_for(op: str, type_name: str, samples: int = DEFAULT_SAMPLES, seed: int = 0) -> list[np.ndarray]:
    """The argument arrays (1-D, one element per case) ``op`` is measured on (see module docs)."""
    dt = dtype_of(type_name)
    arity = op_arity(op)
    rng = np.random.default_rng([seed, sum(op.encode()), sum(type_name.encode())])
    slow = op in SLOW_BINARY
    if slow:
        samples = max(1, samples // SLOW_DIVISOR)
    if kind_of(dt) == "complex":
        part = np.dtype(np.float32 if dt == np.dtype(np.complex64) else np.float64)
        edges = edge_values(part)
        er, ei = np.meshgrid(edges, edges)
        edge_z = np.empty(er.size, dt)
        edge_z.real, edge_z.imag = er.ravel(), ei.ravel()

        def one() -> np.ndarray:
            z = np.empty(samples, dt)
            z.real = _random_real(part, samples, rng, False)
            z.imag = _random_real(part, samples, rng, False)
            return np.concatenate([edge_z, z])

        args = [one() for _ in range(arity)]
        return _same_length(args, rng)
    if exhaustive(type_name, op):
        vals = all_values(dt)
        if arity == 1:
            return [vals]
        a, b = np.meshgrid(vals, vals, indexing="ij")
        return [a.ravel(), b.ravel()]
    edges = edge_values(dt, op)
    if arity == 1:
        return [np.concatenate([edges, _random_real(dt, samples, rng, slow)])]
    ea, eb = np.meshgrid(edges, edges, indexing="ij")
    a = np.concatenate([ea.ravel(), _random_real(dt, samples, rng, slow)])
    b = np.concatenate([eb.ravel(), _random_real(dt, samples, rng, slow)])
    return [a, b]


def _same_length(args, rng):
    n = max(a.size for a in args)
    return [a if a.size == n else np.resize(a, n) for a in args]


# --------------------------------------------------------------------------- #
# running an op on a backend
# --------------------------------------------------------------------------- #


def program_text(op: str, type_name: str, n: int) -> str:
    """A StableHLO program applying ``op`` to ``n`` elements (one tensor per argument)."""
    arity = op_arity(op)
    t = f"tensor<{n}x{type_name}>"
    r = f"tensor<{n}x{result_type(op, type_name)}>"
    params = ", ".join(f"%a{i}: {t}" for i in range(arity))
    names = ", ".join(f"%a{i}" for i in range(arity))
    ins = ", ".join([t] * arity)
    return (f"func.func @main({params}) -> {r} {{\n"
            f"  %r = \"{op}\"({names}) : ({ins}) -> {r}\n"
            f"  return %r : {r}\n}}\n")


def backend_name(backend) -> str:
    return backend if isinstance(backend, str) else getattr(backend, "name", type(backend).__name__)


def run_on_backend(backend, op: str, type_name: str, args: Sequence[np.ndarray]) -> np.ndarray:
    """Run ``op`` on ``backend`` (a backend name or a :class:`~..backends.Backend`)."""
    (module,) = frontend.load(program_text(op, type_name, args[0].size))
    b = get_backend(backend) if isinstance(backend, str) else backend
    (out,) = b.run_function(module, "main", list(args), RunOptions(timeout=BACKEND_SECONDS))
    return np.asarray(out).reshape(args[0].shape)


# --------------------------------------------------------------------------- #
# measuring
# --------------------------------------------------------------------------- #


@dataclass
class Cell:
    """The accuracy of one op on one element type on one backend."""

    backend: str
    op: str
    type: str
    status: str = "ok"            # ok | error | unsupported
    message: str = ""
    n: int = 0                    # elements measured
    silent: int = 0               # elements the spec leaves open (not measured)
    exhaustive: bool = False
    max_ulp: float = 0.0
    correctly_rounded: int = 0    # elements equal to the correctly rounded value
    nonfinite_errors: int = 0     # NaN or inf where it should not be (error inf)
    worst: dict = field(default_factory=dict)
    # the largest distance in steps of the type (``compare.ulp_distance``, what the comparisons of
    # the ``ulp`` class bound) between a result and the correctly rounded one; None: not recorded
    max_steps: int | None = None
    # wall time of the cell in its worker: its backend run and comparison, plus an equal share of
    # the inputs' exact values (computed once for every backend); None: not recorded
    seconds: float | None = None

    @property
    def share(self) -> float:
        return self.correctly_rounded / self.n if self.n else 1.0


def _same_bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    wa, wb = wide(a), wide(b)
    if wa.dtype.kind == "c":
        return _same_bits(wa.real, wb.real) & _same_bits(wa.imag, wb.imag)
    return ((wa == wb) & (np.signbit(wa) == np.signbit(wb))) | (np.isnan(wa) & np.isnan(wb))


def _fmt_value(v) -> str:
    v = complex(v) if np.iscomplexobj(v) else float(v)
    return repr(v)


def backend_failure(e: Exception, limit: int = 200) -> tuple[str, str]:
    """``(status, message)`` of a backend that rejected a cell's program: a finding, not a crash
    (``unsupported``, ``timeout`` or ``crash`` as the backend said, else ``error``)."""
    status = getattr(e, "status", "error")
    return (status if status in ("unsupported", "timeout", "crash") else "error",
            (str(e).strip().splitlines() or [type(e).__name__])[0][:limit])


def measure_cell(backend, op: str, type_name: str, args: Sequence[np.ndarray], exact_vals: np.ndarray,
                 errors_of: Callable[[np.ndarray], np.ndarray]) -> Cell:
    cell = Cell(backend_name(backend), op, type_name, exhaustive=exhaustive(type_name, op))
    try:
        actual = run_on_backend(backend, op, type_name, args)
    except Exception as e:
        cell.status, cell.message = backend_failure(e)
        return cell
    err = errors_of(actual)
    measured = ~np.isnan(err)
    cell.silent = int((~measured).sum())
    cell.n = int(measured.sum())
    same = _same_bits(actual, exact_vals) & measured
    cell.correctly_rounded = int(same.sum())
    e = np.where(measured, err, -1.0)
    cell.nonfinite_errors = int(np.isinf(e).sum())
    steps = ulp_distance(np.asarray(actual), np.asarray(exact_vals))
    cell.max_steps = int(np.max(np.where(measured, steps, np.uint64(0)))) if cell.n else 0
    if cell.n:
        i = int(np.argmax(e))
        cell.max_ulp = float(e[i])
        if not same[i] or cell.max_ulp > 0.5:
            cell.worst = {"args": [_fmt_value(a[i]) for a in args], "actual": _fmt_value(actual[i]),
                          "correctly_rounded": _fmt_value(exact_vals[i]), "ulp": cell.max_ulp}
    return cell


def measure_op(backends: Sequence, op: str, type_name: str, samples: int = DEFAULT_SAMPLES,
               seed: int = 0) -> tuple[list[Cell], int, float]:
    """The cells of one op on one type, for every backend: ``(cells, inputs, seconds)``."""
    t0 = time.perf_counter()
    X.EVAL_SECONDS = EVAL_SECONDS
    args = inputs_for(op, type_name, samples, seed)
    rdt = dtype_of(result_type(op, type_name))
    try:
        exact_vals = X.correctly_rounded(op, args, rdt)
        shared = (time.perf_counter() - t0) / max(1, len(backends))

        def errors_of(actual):
            return X.ulp_error(actual, op, args, rdt)

        cells = []
        for b in backends:
            t1 = time.perf_counter()
            cells.append(measure_cell(b, op, type_name, args, exact_vals, errors_of))
            cells[-1].seconds = round(shared + time.perf_counter() - t1, 3)
    finally:
        X.clear_cache()  # the values of one cell are not needed again; memory stays bounded
    return cells, int(args[0].size), time.perf_counter() - t0


def _task(job):
    return measure_op(*job)


def measure(backends: Sequence, ops: Iterable[str] | None = None, types: Iterable[str] | None = None,
            samples: int = DEFAULT_SAMPLES, seed: int = 0,
            progress: Callable[[str], None] | None = None, jobs: int = 1,
            known: Sequence[Cell] = (), on_cells: Callable[[list[Cell]], None] | None = None,
            measure_missing: bool = True) -> list[Cell]:
    """One :class:`Cell` per backend, op and type (the exact values of a cell are computed once for
    all backends); ``jobs`` worker processes share the cells out. Cells in ``known`` are not
    measured again; ``on_cells`` gets the cells of each op and type as soon as they are done."""
    have = {(c.backend, c.op, c.type) for c in known}
    names = [backend_name(b) for b in backends]
    todo = []
    for tname in list(types or ALL_TYPES):
        wanted = ops_for(tname) if ops is None else [o for o in ops if o in ops_for(tname)]
        todo += [(list(backends), op, tname, samples, seed) for op in wanted
                 if not all((b, op, tname) in have for b in names)]
    wanted_cells = {(b, j[1], j[2]) for j in todo for b in names} | {
        (b, op, t) for t in list(types or ALL_TYPES) for op in (ops_for(t) if ops is None else ops) for b in names}
    results = [c for c in known if (c.backend, c.op, c.type) in wanted_cells]

    def done(job, res):
        cells, n, secs = res
        results.extend(cells)
        if on_cells is not None:
            on_cells(cells)
        if progress is not None:
            progress(f"{job[2]:<14} {job[1]:<36} {n:>8} inputs {secs:6.1f}s")

    # unary cells first, then binary ones, the slow special functions last (types in order within each)
    todo.sort(key=lambda j: (op_arity(j[1]) > 1, j[1] in SLOW_BINARY))
    if not measure_missing:
        todo = []
    if jobs <= 1 or len(todo) <= 1:
        for job in todo:
            done(job, measure_op(*job))
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        # cells are started in the order above and streamed as each one ends
        # the workers die with this process (also when it is killed) and are killed when it is interrupted
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork"), initializer=init_worker,
                                 initargs=(os.getpid(),)) as ex:
            try:
                futures = {ex.submit(_task, job): job for job in todo}
                for fut in as_completed(futures):
                    done(futures[fut], fut.result())
            except BaseException:  # interrupted (also while starting): the cells not finished are dropped
                kill_workers(ex)
                ex.shutdown(wait=False, cancel_futures=True)
                raise
    return sorted(results, key=lambda c: (names.index(c.backend), ALL_TYPES.index(c.type), c.op))


# --------------------------------------------------------------------------- #
# the cells on disk: a JSON Lines file of cells and run records
# --------------------------------------------------------------------------- #


def cell_dict(c: Cell) -> dict:
    d = asdict(c)
    if math.isinf(d["max_ulp"]):
        d["max_ulp"] = "inf"
    return d


def cell_from_dict(d: dict) -> Cell:
    d = dict(d)
    d["max_ulp"] = float(d["max_ulp"])
    return Cell(**d)


def cells_json(cells: Sequence[Cell], meta: dict) -> dict:
    return {"meta": meta, "cells": [cell_dict(c) for c in cells]}


def run_record(command: str, jobs: int, wall_seconds: float, cells: Sequence[Cell], finished: bool) -> dict:
    """One invocation that measured ``cells``: a line ``{"run": {...}}`` of the JSON Lines file,
    next to the cells (it gives the rendered table its wall time)."""
    return {"run": {"command": command, "jobs": jobs, "wall_seconds": round(wall_seconds, 1), "cells": len(cells),
                    "cell_seconds": round(sum(c.seconds or 0.0 for c in cells), 1), "finished": finished}}


def read_jsonl(path: str) -> tuple[list[Cell], list[dict]]:
    """The cells and the run records of a JSON Lines file written with ``--jsonl``."""
    cells, runs = [], []
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            d = json.loads(line)
            if "run" in d:
                runs.append(d["run"])
            else:
                cells.append(cell_from_dict(d))
    return cells, runs


# --------------------------------------------------------------------------- #
# the report
# --------------------------------------------------------------------------- #

NOTES_FILE = Path(__file__).resolve().parents[2] / "oracle" / "accuracy_notes.json"
NOTED_BACKEND = "numpy"  # the backend whose cells that are not correctly rounded must each have a reason

# why an op has no cell on complex types (shown as n/a)
NOT_COMPLEX = {
    "stablehlo.atan2": "spec.md names a complex atan2 without defining it",
    "stablehlo.remainder": "spec.md leaves complex remainder TBD",
    "stablehlo.ceil": "defined on floating-point types only (spec.md)",
    "stablehlo.floor": "defined on floating-point types only (spec.md)",
    "stablehlo.round_nearest_afz": "defined on floating-point types only (spec.md)",
    "stablehlo.round_nearest_even": "defined on floating-point types only (spec.md)",
    "chlo.bessel_i1e": "the bindings accept complex operands, but the scaling by exp(-|x|) is defined for "
                       "real x only",
}
CHLO_REAL_ONLY = "the CHLO op takes floating-point operands only"


def not_applicable(op: str, type_name: str) -> str | None:
    """Why ``op`` is not measured on ``type_name`` (None: it is)."""
    if op in ops_for(type_name):
        return None
    if type_name.startswith("complex"):
        return NOT_COMPLEX.get(op, CHLO_REAL_ONLY if op.startswith("chlo.") else "no complex definition")
    return "no exact definition"


def load_notes(path: str | Path = NOTES_FILE) -> dict[str, dict[str, str]]:
    """op -> element type -> why the :data:`NOTED_BACKEND` kernel is not correctly rounded there."""
    return json.loads(Path(path).read_text())["notes"]


def _ulp_text(u: float) -> str:
    if math.isinf(u):
        return "inf"
    return f"{u:.4f}" if u < 1 else f"{u:.3g}"


def cell_text(c: Cell) -> str:
    if c.status != "ok":
        return c.status
    if c.n == 0:
        return "-"
    if c.correctly_rounded == c.n:
        return "CR"
    mu = _ulp_text(c.max_ulp)
    pct = 100.0 * c.share
    pct_s = f"{pct:.2f}" if pct < 99.995 else ">99.99"
    return f"{mu} ({pct_s}%)"


def _op_name(op: str) -> str:
    return op.replace("stablehlo.", "")


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} minutes"


def timing_text(cells: Sequence[Cell], runs: Sequence[dict]) -> list[str]:
    """The run time of the table: the sum of the per-cell times (honest for a table measured over
    several runs) and the wall time of each run that measured its cells."""
    timed = [c for c in cells if c.seconds is not None]
    total = sum(c.seconds for c in timed)
    line = f"**Run time:** the {len(timed)} cells took {_minutes(total)} in total (the sum of the per-cell times"
    line += f"; {len(cells) - len(timed)} cells measured without a recorded time are not in it)" \
        if len(timed) < len(cells) else ")"
    measured = [r for r in runs if r.get("cells")]
    if measured:
        parts = [f"{_minutes(r['wall_seconds'])} of wall time with `-j {r['jobs']}` for {r['cells']} cells"
                 + ("" if r.get("finished", True) else " (interrupted)") for r in measured]
        line += "; " + ("the run that measured them took " if len(parts) == 1 else
                        f"they were measured in {len(parts)} runs: ") + ", ".join(parts)
    else:
        line += "; the wall time of the run was not recorded"
    return [line + ".", ""]


def _type_table(types: Sequence[str], ops: Sequence[str], by: dict) -> list[str]:
    lines = ["| op | " + " | ".join(types) + " |", "|---|" + "---|" * len(types)]
    for op in ops:
        row = []
        for t in types:
            c = by.get((op, t))
            row.append(cell_text(c) if c is not None else ("n/a" if not_applicable(op, t) else "not run"))
        lines.append(f"| `{_op_name(op)}` | " + " | ".join(row) + " |")
    return lines + [""]


def _narrow(type_name: str) -> bool:
    return not type_name.startswith("complex") and _bits(type_name) <= 8


def render_markdown(cells: Sequence[Cell], meta: dict, notes: dict | None = None,
                    runs: Sequence[dict] = ()) -> str:
    """The report: per backend, a table of the 4- to 8-bit types and one of the 16-bit, 32-bit,
    64-bit and complex types (one row per op, one column per type); the cells of
    :data:`NOTED_BACKEND` that are not correctly rounded, each with its reason from ``notes``
    (op -> type -> reason; "unexplained" without one); the worst cases of the other backends; the
    run time (:func:`timing_text`, from ``runs``, the run records) and its breakdown per type."""
    notes = load_notes() if notes is None else notes
    samples = meta.get("samples", DEFAULT_SAMPLES)
    lines = ["# Accuracy of element-wise float math", "",
             "Generated by `" + meta.get("command", "conform accuracy") + "`.", "",
             "Each cell: **CR** when every result is the correctly rounded value (round to nearest even of",
             "the exact value, computed with mpmath; signed zeros included), otherwise the maximum error in",
             "ULPs of the exact value and, in parentheses, the share of correctly rounded results. `inf`",
             "means a NaN or infinity where the value is finite (or the reverse); `error`/`unsupported`: the",
             "backend rejected the program; `n/a`: the op is not defined on the type (see the notes under the",
             "table). Unary ops on 4- to 16-bit types and binary ops on 4- to 8-bit types are exhaustive",
             f"(every value or pair); other cells use {samples} seeded samples plus edge values (a tenth of",
             "them for the slow special functions; see `stablehlo_conform/harness/campaigns/accuracy.py`). Complex",
             "results are measured part by part, each part in its own ULP. Inputs whose value the spec",
             "leaves open (poles of digamma, complex infinities, ...) are not counted.", ""]
    lines += timing_text(cells, runs)
    backends = list(dict.fromkeys(c.backend for c in cells))
    types = [t for t in ALL_TYPES if any(c.type == t for c in cells)]
    present = {(c.op, c.type) for c in cells}
    missing = [(t, op) for t in types for op in ops_for(t) if (op, t) not in present]
    if missing:
        lines += [f"**Incomplete:** {len(missing)} op/type cells are not measured yet (`not run` below); "
                  "re-running the command with `--jsonl` on the same file measures only those.", ""]
    groups = [("4- to 8-bit types", [t for t in types if _narrow(t)]),
              ("16-, 32-, 64-bit and complex types", [t for t in types if not _narrow(t)])]
    for b in backends:
        mine = [c for c in cells if c.backend == b]
        by = {(c.op, c.type): c for c in mine}
        shown = display_name(b)  # a plugin by its name, not its library's path
        lines += [f"## {shown}", ""]
        for title, group in groups:
            ops = sorted({op for t in group for op in ops_for(t)} | {c.op for c in mine if c.type in group})
            if group and ops:
                lines += [f"### {shown}: {title}", ""] + _type_table(group, ops, by)
        lines += _not_applicable_notes(types)
        if b == NOTED_BACKEND:
            lines += _bounds_section(b, mine, notes)
        else:
            lines += _worst_section(shown, mine)
        errs = [c for c in mine if c.status != "ok"]
        if errs:
            lines += [f"### {shown}: cells not measured", ""]
            lines += [f"- `{c.op}` {c.type}: {c.status}: {shorten_names(c.message, [b])}" for c in errs] + [""]
    lines += ["## Default ULP bounds", "",
              "`stablehlo_conform/oracle/ulp_defaults.json`, the bounds comparisons allow by default, is derived "
              "from these cells by `--write-defaults`: " + DEFAULTS_RULE, ""]
    lines += _time_per_type(cells, types)
    return "\n".join(lines)


def _not_applicable_notes(types: Sequence[str]) -> list[str]:
    why: dict[str, list[str]] = {}
    for t in types:
        for op in sorted(X.DEFINED_OPS & _all_measured_ops(types)):
            r = not_applicable(op, t)
            if r is not None and op not in why.get(r, []):
                why.setdefault(r, []).append(op)
    if not why:
        return []
    return ["n/a: " + "; ".join(f"{', '.join(f'`{_op_name(o)}`' for o in ops)}: {r}" for r, ops in why.items())
            + ".", ""]


def _all_measured_ops(types: Sequence[str]) -> set[str]:
    return {op for t in types for op in ops_for(t)}


def _worst_args(c: Cell) -> tuple[str, str, str]:
    w = c.worst
    if not w:
        return "-", "-", "-"
    return ", ".join(w["args"]), w["actual"], w["correctly_rounded"]


def _bounds_section(b: str, mine: Sequence[Cell], notes: dict) -> list[str]:
    bad = [c for c in mine if c.status == "ok" and c.correctly_rounded < c.n]
    if not bad:
        return [f"### {b}: every measured cell is correctly rounded", ""]
    unexplained = sum(1 for c in bad if not notes.get(c.op, {}).get(c.type))
    lines = [f"### {b}: cells not correctly rounded", "",
             f"{len(bad)} cells, {unexplained} of them unexplained. The reasons are kept in "
             "`stablehlo_conform/oracle/accuracy_notes.json`; the worst input is the one of largest error.", "",
             "| op | type | max ULP | correctly rounded | worst input | result | correctly rounded value | reason |",
             "|---|---|---|---|---|---|---|---|"]
    for c in sorted(bad, key=lambda c: (c.op, ALL_TYPES.index(c.type))):
        args, actual, cr = _worst_args(c)
        reason = notes.get(c.op, {}).get(c.type) or "**unexplained**"
        lines.append(f"| `{_op_name(c.op)}` | {c.type} | {_ulp_text(c.max_ulp)} | {100.0 * c.share:.2f}% | {args} | "
                     f"{actual} | {cr} | {reason} |")
    return lines + [""]


def _worst_section(b: str, mine: Sequence[Cell]) -> list[str]:
    bad = [c for c in mine if c.status == "ok" and c.worst and c.max_ulp > 0.5]
    if not bad:
        return []
    lines = [f"### {b}: worst case per cell above 0.5 ULP", "",
             "| op | type | ULP | arguments | result | correctly rounded |", "|---|---|---|---|---|---|"]
    for c in sorted(bad, key=lambda c: (c.op, ALL_TYPES.index(c.type))):
        args, actual, cr = _worst_args(c)
        lines.append(f"| `{_op_name(c.op)}` | {c.type} | {_ulp_text(c.max_ulp)} | {args} | {actual} | {cr} |")
    return lines + [""]


def _time_per_type(cells: Sequence[Cell], types: Sequence[str]) -> list[str]:
    timed = [c for c in cells if c.seconds is not None]
    if not timed:
        return []
    lines = ["## Run time per type", "", "Sum of the per-cell times (every backend), in minutes.", "",
             "| type | cells | minutes |", "|---|---|---|"]
    for t in types:
        mine = [c for c in timed if c.type == t]
        lines.append(f"| {t} | {len(mine)} | {sum(c.seconds for c in mine) / 60:.1f} |")
    return lines + [""]


# --------------------------------------------------------------------------- #
# the ULP defaults derived from the table
# --------------------------------------------------------------------------- #

STEP_CAP = 64
"""A cell whose bound exceeds this many ULPs, or :func:`step_cap` of its type, or whose error is not
finite, is flagged, not used."""


def step_cap(type_name: str) -> int:
    """The flagging cap of a type: 64 ULPs, or ``2**(p + 1)`` for a type of ``p`` significand bits
    where that is less (four binades of steps: the value is off by a factor of about 16)."""
    p, _ = significand_and_emin(dtype_of(type_name.replace("complex<", "").rstrip(">")))
    return min(STEP_CAP, 2 ** (p + 1))

# ops IEEE 754-2019 section 5.4.1 requires correctly rounded (chlo.square is a multiplication)
IEEE_EXACT_REAL = frozenset({"stablehlo.add", "stablehlo.subtract", "stablehlo.multiply", "stablehlo.divide",
                             "stablehlo.sqrt", "chlo.square"})
IEEE_EXACT_COMPLEX = frozenset({"stablehlo.add", "stablehlo.subtract"})  # part by part

DEFAULTS_RULE = (
    "Per op and element type: the largest distance in ULPs from the correctly rounded result measured over "
    "the backends of the accuracy table (docs/accuracy.md), and at least 0 for the ops IEEE 754 requires "
    "correctly rounded (add, subtract, multiply, divide, sqrt, chlo.square on real types; add and subtract "
    "on complex types, part by part) or 1 for every other op (StableHLO gives no accuracy guarantee, "
    f"spec.md 'Accuracy'). A backend's cell beyond {STEP_CAP} ULPs (or, for a type of p significand bits, "
    "beyond 2**(p + 1): four binades, a factor of about 16) or with a non-finite error (a NaN or "
    "infinity where the value is finite) is flagged and not used; where every backend is flagged the table "
    "gives no bound and the previous entry stands (the floor for an op without one), as it does for the types "
    "a partial table does not measure. '*' of an op is its most common bound (the larger on a tie), types are "
    "listed where they differ; chlo.broadcast_X takes the bounds of X; ops the table does not measure keep their "
    "entry.")


DEFAULTS_ABOUT = (
    "Default ULP bounds of element-wise float ops: op -> {element type or '*': max ULP distance from the "
    "correctly rounded result}. Complex types are bounded normwise (|err| <= ulps * eps * |exact|) or per "
    "component. Overridden per op and type by an accuracy profile (--accuracy-profile). Regenerated from the "
    "measured accuracy table by `conform accuracy --jsonl docs/accuracy.jsonl --render-only --write-defaults "
    "FILE` (see 'rule'); 'flagged' lists the measured cells left out.")


def floor_bound(op: str, type_name: str) -> int:
    """The least default bound of ``op`` on ``type_name`` (see :data:`DEFAULTS_RULE`)."""
    exact = IEEE_EXACT_COMPLEX if type_name.startswith("complex") else IEEE_EXACT_REAL
    return 0 if op in exact else 1


def ulp_defaults(cells: Sequence[Cell], base: dict, source: str = "") -> dict:
    """``ulp_defaults.json`` (the bounds of the ``ulp`` accuracy class, :mod:`...oracle.classes`) derived from
    the measured ``cells`` by :data:`DEFAULTS_RULE`; ``base`` is the current file (its entries for
    ops the table does not measure are kept, as is its ``*`` row)."""
    per: dict[tuple[str, str], list[int]] = {}
    flagged: list[str] = []
    for c in cells:
        if c.status != "ok" or c.op in EXACT_OPS:
            continue
        bounds = per.setdefault((c.op, c.type), [])
        b = measured_bound(cell_dict(c))
        if b is None or b > step_cap(c.type):
            flagged.append(f"{c.op} {c.type} {c.backend}: " + ("non-finite error" if b is None else f"{b} ULPs"))
            continue
        bounds.append(b)
    ops = dict(base.get("ops", {}))

    def previous(op: str, t: str) -> int:
        row = ops.get(op)
        return floor_bound(op, t) if row is None else row.get(t, row.get("*", floor_bound(op, t)))

    rows: dict[str, dict[str, int]] = {}
    for (op, t), bounds in per.items():
        rows.setdefault(op, {})[t] = max([floor_bound(op, t)] + bounds) if bounds else previous(op, t)
    for op, row in rows.items():  # the types a partial table does not measure keep their bound
        row.update({t: previous(op, t) for t in ALL_TYPES if t not in row and op in ops_for(t)})
    for op, by_type in rows.items():
        ops[op] = _compact(by_type)
    for name in list(ops):
        if name.startswith("chlo.broadcast_"):
            short = name[len("chlo.broadcast_"):]
            src = next((o for o in ("stablehlo." + short, "chlo." + short) if o in rows), None)
            if src is not None:
                ops[name] = dict(ops[src])
    wild = ops.pop("*", {"*": 4})
    ordered = {op: ops[op] for op in sorted(ops, key=lambda o: (o.startswith("chlo.broadcast_"), o))}
    ordered["*"] = wild
    return {"about": DEFAULTS_ABOUT, "rule": DEFAULTS_RULE, "source": source,
            "flagged": sorted(flagged), "ops": ordered}


def _compact(by_type: dict[str, int]) -> dict[str, int]:
    counts: dict[int, int] = {}
    for v in by_type.values():
        counts[v] = counts.get(v, 0) + 1
    star = max(counts, key=lambda v: (counts[v], v))
    row = {"*": star}
    row.update({t: v for t, v in sorted(by_type.items(), key=lambda kv: ALL_TYPES.index(kv[0])) if v != star})
    return row


def defaults_text(doc: dict) -> str:
    """``doc`` as JSON with one op per line (readable diffs)."""
    head = {k: v for k, v in doc.items() if k != "ops"}
    lines = ["{"] + [f"  {jsonout.dumps(k)}: {jsonout.dumps(v)}," for k, v in head.items()] + ['  "ops": {']
    ops = list(doc["ops"].items())
    lines += [f"    {jsonout.dumps(op)}: {jsonout.dumps(row)}" + ("," if i < len(ops) - 1 else "")
              for i, (op, row) in enumerate(ops)]
    return "\n".join(lines + ["  }", "}"]) + "\n"
