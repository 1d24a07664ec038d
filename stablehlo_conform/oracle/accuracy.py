"""Accuracy of a backend's element-wise float math against the exact values (``conform accuracy``).

For every op of :data:`.exact.DEFINED_OPS` and every float element type, the op runs on a backend
as one tiny StableHLO program whose single tensor holds all the inputs; each result is compared
with the correctly rounded exact value (:mod:`.exact`), giving the maximum ULP error, the share of
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

Elements whose value the spec leaves open (:func:`.exact.spec_silent`), and the rare inputs whose
exact value takes mpmath more than ``EVAL_SECONDS`` (``polygamma`` of a huge order, ...), are not
measured; they are counted as ``silent``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from types import SimpleNamespace

import numpy as np

from .. import types as T
from ..kernels._numeric import float_from_bits, kind_of, significand_and_emin, wide
from . import exact as X

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
    from .. import frontend

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
    parts.append(np.where(rng.random(rest) < 0.5, -1.0, 1.0) * np.exp2(e))
    with np.errstate(all="ignore"):
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
    """Run ``op`` on ``backend`` (a backend name or a :class:`~..harness.backends.Backend`)."""
    from .. import load
    from ..harness.backends import get_backend

    (module,) = load(program_text(op, type_name, args[0].size))
    b = get_backend(backend) if isinstance(backend, str) else backend
    (out,) = b.run_function(module, "main", list(args), SimpleNamespace(timeout=BACKEND_SECONDS))
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


def measure_cell(backend, op: str, type_name: str, args: Sequence[np.ndarray], exact_vals: np.ndarray,
                 errors_of: Callable[[np.ndarray], np.ndarray]) -> Cell:
    cell = Cell(backend_name(backend), op, type_name, exhaustive=exhaustive(type_name, op))
    try:
        actual = run_on_backend(backend, op, type_name, args)
    except Exception as e:  # a backend that rejects the op or type is a finding, not a crash
        status = getattr(e, "status", "error")
        cell.status = status if status in ("unsupported", "timeout", "crash") else "error"
        cell.message = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
        return cell
    err = errors_of(actual)
    measured = ~np.isnan(err)
    cell.silent = int((~measured).sum())
    cell.n = int(measured.sum())
    same = _same_bits(actual, exact_vals) & measured
    cell.correctly_rounded = int(same.sum())
    e = np.where(measured, err, -1.0)
    cell.nonfinite_errors = int(np.isinf(e).sum())
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

        def errors_of(actual):
            return X.ulp_error(actual, op, args, rdt)

        cells = [measure_cell(b, op, type_name, args, exact_vals, errors_of) for b in backends]
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
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as ex:
            for job, res in zip(todo, ex.map(_task, todo)):
                done(job, res)
    return sorted(results, key=lambda c: (names.index(c.backend), ALL_TYPES.index(c.type), c.op))


# --------------------------------------------------------------------------- #
# the report
# --------------------------------------------------------------------------- #


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


def render_markdown(cells: Sequence[Cell], meta: dict) -> str:
    """The tables: per backend, one row per op and one column per type."""
    lines = ["# Accuracy of element-wise float math", "",
             "Generated by `" + meta.get("command", "conform accuracy") + "`"
             + (f" in {meta['seconds'] / 60:.0f} minutes" if "seconds" in meta else "") + ".", "",
             "Each cell: **CR** when every result is the correctly rounded value (round to nearest even of",
             "the exact value, computed with mpmath; signed zeros included), otherwise the maximum error in",
             "ULPs of the exact value and, in parentheses, the share of correctly rounded results. `inf`",
             "means a NaN or infinity where the value is finite (or the reverse); `error`/`unsupported`: the",
             "backend rejected the program. Unary ops on 4- to 16-bit types and binary ops on 4- to 8-bit",
             f"types are exhaustive (every value or pair); other cells use {meta.get('samples', DEFAULT_SAMPLES)}",
             "seeded samples plus edge values (see `stablehlo_conform/oracle/accuracy.py`). Inputs whose",
             "value the spec leaves open (poles of digamma, complex infinities, ...) are not counted.", ""]
    backends = list(dict.fromkeys(c.backend for c in cells))
    types = [t for t in ALL_TYPES if any(c.type == t for c in cells)]
    missing = [(t, op) for t in types for op in ops_for(t) if not any(c.type == t and c.op == op for c in cells)]
    if missing:
        lines += [f"**Incomplete:** {len(missing)} op/type cells are not measured yet (blank below); "
                  "re-running the command with `--jsonl` on the same file measures only those.", ""]
    short = {t: t.replace("complex<", "c").replace(">", "") for t in types}
    for b in backends:
        mine = [c for c in cells if c.backend == b]
        ops = sorted(dict.fromkeys(c.op for c in mine))
        by = {(c.op, c.type): c for c in mine}
        lines += [f"## {b}", "", "| op | " + " | ".join(short[t] for t in types) + " |",
                  "|---|" + "---|" * len(types)]
        for op in ops:
            row = [cell_text(by[(op, t)]) if (op, t) in by else "" for t in types]
            lines.append(f"| `{op.replace('stablehlo.', '')}` | " + " | ".join(row) + " |")
        lines.append("")
        bad = [c for c in mine if c.status == "ok" and c.worst and c.max_ulp > 0.5]
        if bad:
            lines += [f"### {b}: worst case per cell above 0.5 ULP", "",
                      "| op | type | ULP | arguments | result | correctly rounded |", "|---|---|---|---|---|---|"]
            for c in sorted(bad, key=lambda c: (c.op, ALL_TYPES.index(c.type))):
                w = c.worst
                mu = _ulp_text(c.max_ulp)
                lines.append(f"| `{c.op.replace('stablehlo.', '')}` | {c.type} | {mu} | {', '.join(w['args'])} | "
                             f"{w['actual']} | {w['correctly_rounded']} |")
            lines.append("")
        errs = [c for c in mine if c.status != "ok"]
        if errs:
            lines += [f"### {b}: cells not measured", ""]
            for c in errs:
                lines.append(f"- `{c.op}` {c.type}: {c.status}: {c.message}")
            lines.append("")
    return "\n".join(lines)


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
