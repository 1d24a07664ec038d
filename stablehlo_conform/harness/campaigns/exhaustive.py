"""Exhaustive accuracy: every input of an op on a type (``conform accuracy --exhaustive``).

The space of a cell is every bit pattern of the type for a unary op (2^32 for f32), every pair of
bit patterns for a binary op on a type of at most 16 bits (2^32 for f16/bf16: index ``i`` is the
pair ``(i >> bits, i & (2^bits - 1))``). ``--range LO:HI`` measures the indices ``[LO, HI)`` of it
(as llvm-libc's ``test_full_range(start, stop)``). The space is cut into chunks of
``2^chunk_bits`` indices; each chunk is one task (:mod:`.cluster`): its inputs are made from
``(lo, hi)`` where it runs, the op runs on the backend as one program over the whole chunk, and
the results are judged:

- against the **correctly rounded** value, bit for bit (signed zeros included, any NaN equal to
  any NaN): the oracle's kernel for the op on that type, which rounds once from f64 and sends the
  inputs its midpoint screen cannot clear to arbitrary precision (``kernels/float_math.py``);
- a result that is not correctly rounded gets its error in ULPs of the exact value, which the
  oracle computes in f64 for those inputs only (2^-29 ULP of f32 from exact, far below what the
  error reports). Every correctly rounded result is within 0.5 ULP, so the maximum over the
  others is the cell's exact maximum; a cell whose every result is correctly rounded says so.

Inputs whose value the spec leaves open (:func:`...oracle.exact.spec_silent`) are not measured.
A chunk gives the inputs measured, those correctly rounded, non-finite errors, the maximum ULP
error with its worst inputs (:data:`WORST` of them) and a histogram of the errors
(:data:`BINS`); chunks merge into the cell by sums, maxima and the union of worst inputs, so a
cell is the same however its chunks were split between workers, machines or runs.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ... import types as T
from ...numeric import float_from_bits, significand_and_emin, wide
from ...oracle import exact as X
from ..records.jsonout import number
from .accuracy import _same_bits, backend_failure, dtype_of, op_arity, result_type, run_on_backend

CHUNK_BITS = 24
WORST = 8  # worst inputs kept per chunk and per cell
# upper edges of the error histogram, in ULPs; an error above the last is counted in ">2^20", a
# non-finite one (NaN or infinity where the value is finite, or the reverse) in "inf"
EDGES = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 64.0, 256.0, 1024.0, 2.0**20)
BINS = tuple(f"<={e:g}" for e in EDGES[:-1]) + ("<=2^20", ">2^20", "inf")


class SpaceError(ValueError):
    """An op and type whose space cannot be measured exhaustively, or a bad range."""


def space_size(op: str, type_name: str) -> int:
    """The number of inputs of ``op`` on ``type_name`` (every value, or every pair)."""
    if type_name.startswith("complex"):
        raise SpaceError(f"{type_name}: complex types are not measured exhaustively")
    bits = T.ElementType(type_name).bits
    arity = op_arity(op)
    if arity == 1 and bits <= 32:
        return 1 << bits
    if arity == 2 and bits <= 16:
        return 1 << (2 * bits)
    raise SpaceError(f"{op} on {type_name}: {arity} argument(s) of {bits} bits is 2^{arity * bits} inputs; "
                     "exhaustive runs take unary ops on types of at most 32 bits, binary ops on at most 16")


def parse_range(text: str | None, size: int) -> tuple[int, int]:
    """``LO:HI`` (decimal or 0x hex, either side may be empty) within ``[0, size]``."""
    if not text:
        return 0, size
    lo_t, sep, hi_t = text.partition(":")
    try:
        lo = int(lo_t, 0) if lo_t.strip() else 0
        hi = int(hi_t, 0) if hi_t.strip() else size
    except ValueError:
        raise SpaceError(f"--range {text!r}: expected LO:HI, integers (0x... for hex)") from None
    if not sep or not 0 <= lo < hi <= size:
        raise SpaceError(f"--range {text!r}: need 0 <= LO < HI <= {size:#x}")
    return lo, hi


def chunks(lo: int, hi: int, chunk_bits: int = CHUNK_BITS) -> list[tuple[int, int]]:
    """``[lo, hi)`` cut at the multiples of ``2^chunk_bits`` (the same chunks whatever the range)."""
    step = 1 << chunk_bits
    out = []
    a = lo
    while a < hi:
        b = min(hi, (a // step + 1) * step)
        out.append((a, b))
        a = b
    return out


def chunk_inputs(op: str, type_name: str, lo: int, hi: int) -> list[np.ndarray]:
    """The arguments of indices ``[lo, hi)``."""
    dt = dtype_of(type_name)
    bits = T.ElementType(type_name).bits
    idx = np.arange(lo, hi, dtype=np.uint64)
    if op_arity(op) == 1:
        return [float_from_bits(idx, dt)]
    mask = np.uint64((1 << bits) - 1)
    return [float_from_bits(idx >> np.uint64(bits), dt), float_from_bits(idx & mask, dt)]


@dataclass
class Chunk:
    """What one chunk (or, merged, a range of them) measured."""

    backend: str
    op: str
    type: str
    lo: int
    hi: int
    status: str = "ok"  # ok | error | unsupported | timeout | crash
    message: str = ""
    n: int = 0  # inputs measured
    silent: int = 0  # inputs the spec leaves open
    correctly_rounded: int = 0
    nonfinite_errors: int = 0
    max_ulp: float = 0.0  # over the results not correctly rounded (0: every result correctly rounded)
    worst: list = field(default_factory=list)  # [{"index", "args", "actual", "correctly_rounded", "ulp"}]
    hist: dict = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def not_correctly_rounded(self) -> int:
        return self.n - self.correctly_rounded

    def to_json(self) -> dict[str, Any]:
        return {"kind": "chunk", **asdict(self)}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Chunk:
        """The chunk of a line :meth:`to_json` wrote (an infinite ULP error
        is written ``"inf"``, see :mod:`..records.jsonout`)."""
        c = cls(**{k: v for k, v in d.items() if k != "kind"})
        c.max_ulp = float(number(c.max_ulp))
        c.worst = [{**w, "ulp": float(number(w["ulp"]))} if isinstance(w, dict) and "ulp" in w else w
                   for w in c.worst]
        return c


def _ulps(actual: np.ndarray, exact: np.ndarray, dt: np.dtype) -> np.ndarray:
    """``|actual - exact|`` in ULPs of ``exact`` in ``dt`` (inf where one of them is not finite)."""
    p, emin = significand_and_emin(dt)
    a, e = wide(actual), wide(exact)
    with np.errstate(all="ignore"):
        _m, ex = np.frexp(np.abs(e))
        ulp = np.ldexp(1.0, np.maximum(ex.astype(np.int64) - 1, emin) - (p - 1))
        err = np.abs(a - e) / ulp
    both = np.isfinite(a) & np.isfinite(e)
    return np.where(both, err, np.inf)


def measure_chunk(backend: str, op: str, type_name: str, lo: int, hi: int) -> dict[str, Any]:
    """One chunk on ``backend`` (runs in a worker, local or on a cluster): its :class:`Chunk` as JSON."""
    with np.errstate(all="ignore"):  # every bit pattern: signalling NaNs, overflows, ...
        return _measure_chunk(backend, op, type_name, lo, hi)


def _measure_chunk(backend: str, op: str, type_name: str, lo: int, hi: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    c = Chunk(backend, op, type_name, lo, hi)
    args = chunk_inputs(op, type_name, lo, hi)
    rtype = result_type(op, type_name)
    rdt = dtype_of(rtype)
    try:
        actual = run_on_backend(backend, op, type_name, args)
    except Exception as e:
        c.status, c.message = backend_failure(e, 300)
        c.seconds = round(time.perf_counter() - t0, 3)
        return c.to_json()
    cr = actual if backend == "numpy" else run_on_backend("numpy", op, type_name, args)  # the oracle
    silent = X.spec_silent(op, args, rdt)
    same = _same_bits(actual, cr)
    measured = ~silent
    c.silent = int(silent.sum())
    c.n = int(measured.sum())
    c.correctly_rounded = int((same & measured).sum())
    hist = np.zeros(len(BINS), np.int64)
    hist[0] = c.correctly_rounded
    wrong = np.flatnonzero(~same & measured)
    if wrong.size:
        sub = [a[wrong] for a in args]
        exact = run_on_backend("numpy", op, "f64", [wide(a) for a in sub])
        err = _ulps(actual[wrong], exact, rdt)
        nan_ok = np.isnan(wide(actual[wrong])) & np.isnan(wide(exact))
        err = np.where(nan_ok, 0.0, err)
        c.nonfinite_errors = int(np.isinf(err).sum())
        finite = err[np.isfinite(err)]
        hist[:len(EDGES)] += np.bincount(np.searchsorted(EDGES, finite, side="left"), minlength=len(EDGES) + 1)[
            :len(EDGES)]
        hist[len(EDGES)] = int((finite > EDGES[-1]).sum())
        hist[-1] = c.nonfinite_errors
        c.max_ulp = float(err.max())
        order = np.argsort(-err, kind="stable")[:WORST]
        c.worst = [{"index": int(lo + wrong[j]), "args": [_value(a[j]) for a in sub],
                    "actual": _value(actual[wrong[j]]), "correctly_rounded": _value(cr[wrong[j]]),
                    "ulp": float(err[j])} for j in order]
    c.hist = {b: int(h) for b, h in zip(BINS, hist) if h}
    c.seconds = round(time.perf_counter() - t0, 3)
    return c.to_json()


def _value(v) -> str:
    return repr(float(wide(np.asarray(v))))


def merge(parts: list[Chunk], lo: int, hi: int) -> Chunk:
    """The cell ``[lo, hi)`` of its chunks (sums, maxima, the worst inputs of all)."""
    first = parts[0] if parts else None
    out = Chunk(first.backend if first else "", first.op if first else "", first.type if first else "", lo, hi)
    bad = [p for p in parts if p.status != "ok"]
    if bad:
        out.status, out.message = bad[0].status, bad[0].message
    hist: dict[str, int] = {}
    worst: list = []
    for p in parts:
        out.n += p.n
        out.silent += p.silent
        out.correctly_rounded += p.correctly_rounded
        out.nonfinite_errors += p.nonfinite_errors
        out.max_ulp = max(out.max_ulp, p.max_ulp)
        out.seconds += p.seconds
        worst += p.worst
        for k, v in p.hist.items():
            hist[k] = hist.get(k, 0) + v
    out.hist = {b: hist[b] for b in BINS if b in hist}
    out.worst = sorted(worst, key=lambda w: (-w["ulp"], w["index"]))[:WORST]
    out.seconds = round(out.seconds, 3)
    return out


def summary_lines(cell: Chunk, total: int, wall: float, complete: bool) -> list[str]:
    """The text a run prints for a cell."""
    span = f"[{cell.lo:#x}, {cell.hi:#x})"
    head = f"{cell.backend} {cell.op} {cell.type} {span}: {cell.hi - cell.lo:,} inputs"
    if cell.status != "ok":
        return [f"{head}: {cell.status}: {cell.message}"]
    lines = [head + ("" if complete else f" (INCOMPLETE: {total:,} of them measured)")]
    if not total:
        return lines
    lines.append(f"  measured {cell.n:,}, not measured (the spec leaves them open) {cell.silent:,}")
    ncr = cell.not_correctly_rounded
    share = cell.correctly_rounded / cell.n if cell.n else 1.0
    if ncr == 0:
        lines.append("  every result correctly rounded (max error <= 0.5 ULP)")
    else:
        lines.append(f"  max ULP error {cell.max_ulp:.6g}; not correctly rounded {ncr:,} "
                     f"({100 * (1 - share):.4g}%); non-finite errors {cell.nonfinite_errors:,}")
        lines.append("  errors (ULP): " + ", ".join(f"{k}: {v:,}" for k, v in cell.hist.items()))
        for w in cell.worst[:3]:
            lines.append(f"  worst: input {w['index']:#x} {', '.join(w['args'])} -> {w['actual']} "
                         f"(correctly rounded {w['correctly_rounded']}, {w['ulp']:.6g} ULP)")
    lines.append(f"  {wall:.1f} s wall, {cell.seconds:.1f} s in chunks")
    return lines
