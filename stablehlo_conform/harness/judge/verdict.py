"""Verdicts: when a check fails, who is right — the backend or the golden value?

A failing self-checking test is run again on the NumPy engine with a trace
that records, for every op, its operand and result values (only on failure,
or when the program carries ``result_accuracy``). For each check, the value
it looks at is followed back to the ops that computed it:

- no rounding op on the way (integer, data-movement, exact float ops): the
  exact value is what the NumPy kernels compute;
- one rounding op producing the checked value: its correctly rounded result
  (``oracle.exact`` for element-wise math, arbitrary precision) or, for other
  ops (``dot_general``, ``convolution``, reductions, ``fft``, ...), the op
  evaluated in float64 / complex128 on the recorded operands and rounded once;
- several rounding ops (a decomposed function): the whole test evaluated in
  float64 / complex128 and rounded once.

The checked value is then held to the op's accuracy class
(:mod:`...oracle.classes`). A tolerance-allowing check (``expect_close``,
``expect_almost_eq``) passes an element that is within its own tolerance
*or* within the class of the expected value (the two sides may each be off
by the class bound); a ``result_accuracy = TOLERANCE`` on the producing op
replaces the check's tolerance by the attribute's inequality. For every
element that still fails, the verdict is

- ``backend wrong``: the backend's value is outside the class of the exact
  value;
- ``golden wrong``: the backend is within the class, the expected value is
  not (the evidence gives its ULP distance from the exact value);
- ``both within bounds``: both are within the class (the check is stricter
  than the class);
- ``spec silent``: the op's values are implementation-defined (``rng``,
  ``rng_bit_generator``: any checked value computed from them, of any type,
  once what the spec does fix is found to hold; else ``backend wrong``), or
  the two differ only in the sign of a zero produced by a rounding op;

and the test's verdict is the first of these that any element has.
``no reference`` says that the exact value could not be computed (a float64
program that is not element-wise math, or a program using
``bitcast_convert``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from ... import types as T
from ...compare import _almost_equal, is_float_dtype, ulp_distance
from ...engine import Engine, OpContext
from ...errors import ConformError
from ...kernels import iree_check
from ...kernels import random as rng_kernels
from ...kernels.check import DEFAULT_MAX_ULP, DEFAULT_TOLERANCE  # the check ops' own defaults
from ...kernels.registry import load_all
from ...oracle import classes as C
from ...program import Block, Module, Op, Region, walk_ops
from ..backends import get_backend
from ..backends.checks import check_ops, is_check
from ..backends.numpy_backend import NumpyBackend
from ..records.options import RunOptions, run_options

BACKEND_WRONG = "backend wrong"
GOLDEN_WRONG = "golden wrong"
SPEC_SILENT = "spec silent"
BOTH_WITHIN = "both within bounds"
NO_REFERENCE = "no reference"
ORDER = (BACKEND_WRONG, GOLDEN_WRONG, SPEC_SILENT, BOTH_WITHIN, NO_REFERENCE)

MAX_EXAMPLES = 3
MPMATH_MAX_ELEMENTS = 20000  # larger element-wise results are judged in float64
NEVER = np.iinfo(np.uint64).max
UNWIDENABLE_OPS = frozenset({"stablehlo.bitcast_convert", "arith.bitcast", "stablehlo.rng_bit_generator"})


# --------------------------------------------------------------------------- #
# Recording
# --------------------------------------------------------------------------- #


def _is_check(op: Op) -> bool:
    return is_check(op)


class Recorder:
    """An engine trace: every op's operands and results, the producer of
    every result array (by identity), and the check ops in run order."""

    def __init__(self) -> None:
        self.keep: list[tuple] = []  # keeps arrays alive so ids stay unique
        self.producer: dict[int, tuple[Op, list, int]] = {}
        self.checks: list[tuple[Op, list]] = []
        self.other_failures: list[str] = []  # failures not of check ops (cf.assert, ...)

    def __call__(self, op: Op, args: Sequence, results: tuple) -> None:
        self.keep.append((args, results))
        if _is_check(op):
            self.checks.append((op, list(args)))
            return
        if op.name == "func.call":
            return  # the callee's ops produced these values
        for j, r in enumerate(results):
            self.producer.setdefault(id(r), (op, list(args), j))


def record(module: Module, func_name: str, registry=None, opts: RunOptions | None = None) -> Recorder:
    import time

    opts = run_options(opts)
    eng = Engine(module, registry if registry is not None else load_all(),
                 deadline=(time.monotonic() + opts.timeout) if opts.timeout else None,
                 max_bytes=opts.max_bytes)
    rec = Recorder()
    eng.trace = rec
    eng.call(func_name, ())
    check_locs = {str(op.loc) for op, _a in rec.checks}
    rec.other_failures = [msg for ok, msg, loc in eng.checks if not ok and loc not in check_locs]
    return rec


# --------------------------------------------------------------------------- #
# Wide evaluation (float64 / complex128)
# --------------------------------------------------------------------------- #


_WIDE = {"f16": "f64", "bf16": "f64", "f32": "f64", "tf32": "f64", "complex<f32>": "complex<f64>"}


def _wide_element(el):
    name = str(el)
    if name in _WIDE:
        return T.element_type(_WIDE[name])
    if getattr(el, "is_float", False) and not getattr(el, "quantized", False) and el.bits < 64:
        return T.element_type("f64")  # the f4/f6/f8 family
    return el


def widen_type(t):
    if isinstance(t, T.TensorType):
        return T.TensorType(t.shape, _wide_element(t.element))
    return t


def widen_value(a: Any) -> Any:
    if not isinstance(a, np.ndarray):
        return a
    if a.dtype == np.complex64:
        return a.astype(np.complex128)
    if is_float_dtype(a.dtype) and a.dtype.kind != "c" and a.dtype != np.float64:
        return a.astype(np.float64)
    return a


def _widen_attr(v: Any) -> Any:
    return widen_value(v) if isinstance(v, np.ndarray) else v


def widen_region(r: Region) -> Region:
    return Region(tuple(Block(b.args, tuple(widen_type(t) for t in b.arg_types),
                              tuple(widen_op(o) for o in b.ops)) for b in r.blocks))


def widen_op(op: Op) -> Op:
    return dataclasses.replace(
        op, operand_types=tuple(widen_type(t) for t in op.operand_types),
        result_types=tuple(widen_type(t) for t in op.result_types),
        attrs={k: _widen_attr(v) for k, v in op.attrs.items()},
        regions=tuple(widen_region(r) for r in op.regions))


def widenable(module: Module) -> bool:
    for f in module.funcs.values():
        for op in walk_ops(f.body):
            if op.name in UNWIDENABLE_OPS:
                return False
            for t in (*op.operand_types, *op.result_types):
                if isinstance(t, T.TensorType) and t.element.quantized:
                    return False
    return True


def widen_module(module: Module) -> Module:
    funcs = {n: dataclasses.replace(f, param_types=tuple(widen_type(t) for t in f.param_types),
                                    result_types=tuple(widen_type(t) for t in f.result_types),
                                    body=widen_region(f.body))
             for n, f in module.funcs.items()}
    return dataclasses.replace(module, funcs=funcs)


def run_op(module: Module, op: Op, args: Sequence, j: int = 0, wide: bool = False) -> np.ndarray:
    """Result ``j`` of ``op`` on ``args`` by the NumPy kernel; with ``wide``,
    evaluated in float64 / complex128 on widened operands."""
    reg = load_all()
    fn = reg.lookup(op.name)
    if fn is None:
        raise ConformError(f"no kernel for {op.name}")
    if wide:
        op, args = widen_op(op), [widen_value(a) for a in args]
    return np.asarray(fn(OpContext(op, Engine(module, reg)), *args)[j])


def run_op_wide(module: Module, op: Op, args: Sequence, j: int = 0) -> np.ndarray:
    return run_op(module, op, args, j, wide=True)


def _narrow(wide: np.ndarray, dtype: np.dtype) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(wide).astype(dtype)


# --------------------------------------------------------------------------- #
# Following a checked value back to the ops that computed it
# --------------------------------------------------------------------------- #


def rounding_ops(rec: Recorder, value: Any, profile, limit: int = 5000) -> list[tuple[Op, list, int]]:
    """Ops whose class is not exact on the way from the inputs to ``value``
    (the producer of ``value`` first)."""
    out: list[tuple[Op, list, int]] = []
    seen_ops: set[int] = set()
    seen: set[int] = set()
    stack = [value]
    while stack and len(seen) < limit:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        ev = rec.producer.get(id(v))
        if ev is None:
            continue
        op, args, _j = ev
        if C.class_of(op, profile).kind != C.EXACT and id(op) not in seen_ops:
            seen_ops.add(id(op))
            out.append(ev)
        stack.extend(a for a in args if isinstance(a, np.ndarray))
    return out


def _exact_module():
    from ...oracle import exact  # here: mpmath's start-up only when a reference is computed

    return exact


def magnitude(module: Module, op: Op, args: Sequence, ref: np.ndarray, cls: C.AccuracyClass,
              j: int = 0) -> np.ndarray | None:
    """The ``sum |a_i b_i|`` of an accumulating op, per result element."""
    if cls.kind != C.ACCUMULATE or cls.reduction == "product":
        return None
    name = op.name
    if name == "stablehlo.fft":
        x = np.abs(widen_value(args[0]))
        n_axes = len(np.asarray(op.attrs.get("fft_length", ())).reshape(-1))
        kind = str(op.attrs.get("fft_type", "FFT"))
        s = x.sum(axis=tuple(range(x.ndim - n_axes, x.ndim)), keepdims=True)
        if kind in ("IFFT", "IRFFT"):
            s = s * (2.0 if kind == "IRFFT" else 1.0) / max(1, cls.k)
        return np.broadcast_to(s, ref.shape)
    if name == "stablehlo.triangular_solve":
        return _solve_magnitude(op, args, ref)

    def absolute(a):
        if not isinstance(a, np.ndarray) or not is_float_dtype(a.dtype):
            return a
        w = np.abs(widen_value(a))
        return w.astype(np.complex128) if a.dtype.kind == "c" else w

    return np.abs(run_op_wide(module, op, [absolute(a) for a in args], j))


def _solve_magnitude(op: Op, args: Sequence, ref: np.ndarray) -> np.ndarray:
    """Forward error bound of a triangular solve (backward stable):
    ``|X - X^| <= gamma_n |op(A)^-1| |op(A)| |X^|`` (left side; mirrored for
    the right side)."""
    a = widen_value(args[0]).astype(np.complex128 if args[0].dtype.kind == "c" else np.float64)
    lower = bool(op.attrs.get("lower"))
    tri = np.tril(a) if lower else np.triu(a)
    if bool(op.attrs.get("unit_diagonal")):
        n = tri.shape[-1]
        tri = tri.copy()
        tri[..., np.arange(n), np.arange(n)] = 1
    ta = str(op.attrs.get("transpose_a", "NO_TRANSPOSE"))
    if ta == "TRANSPOSE":
        tri = np.swapaxes(tri, -1, -2)
    elif ta == "ADJOINT":
        tri = np.conj(np.swapaxes(tri, -1, -2))
    inv = np.abs(np.linalg.inv(tri))
    at = np.abs(tri)
    x = np.abs(ref.astype(np.complex128 if ref.dtype.kind == "c" else np.float64))
    if bool(op.attrs.get("left_side")):
        return inv @ (at @ x)
    return (x @ at) @ inv


@dataclasses.dataclass
class Reference:
    value: np.ndarray | None  # exact result rounded to the checked type
    method: str  # mpmath | exact | float64 | float64 program | none
    cls: C.AccuracyClass
    ops: list[str]
    magnitude: np.ndarray | None = None
    why: str = ""
    silent: np.ndarray | None = None  # elements whose value the spec leaves open
    factor: float = 1.0  # 2: the reference is itself only within the class bound


class Oracle:
    """Exact references for the checked values of one traced test run."""

    def __init__(self, module: Module, func_name: str, rec: Recorder, profile: C.Profile | None = None,
                 opts: RunOptions | None = None):
        self.module = module
        self.func_name = func_name
        self.rec = rec
        self.profile = profile
        self.opts = opts
        self._wide: Recorder | None | bool = False

    def wide_run(self) -> Recorder | None:
        if self._wide is False:
            self._wide = None
            if widenable(self.module):
                try:
                    self._wide = record(widen_module(self.module), self.func_name, opts=self.opts)
                except ConformError:
                    self._wide = None
        return self._wide  # type: ignore[return-value]

    def demands_accuracy(self, k: int, value: np.ndarray) -> bool:
        """True when the op producing the ``k``-th checked value carries a
        ``result_accuracy`` other than DEFAULT."""
        ev = self.rec.producer.get(id(value))
        return ev is not None and C.result_accuracy_class(ev[0]) is not None

    def reference(self, k: int, value: np.ndarray) -> Reference:
        """The reference for the value the ``k``-th check looks at."""
        ops = rounding_ops(self.rec, value, self.profile)
        names = [op.name for op, _a, _j in ops]
        dtype = value.dtype
        if not ops:
            ev = self.rec.producer.get(id(value))
            cls = C.class_of(ev[0], self.profile) if ev is not None else C.AccuracyClass(C.EXACT)
            return Reference(value, "exact", cls, [ev[0].name] if ev else [])
        classes = [C.class_of(op, self.profile) for op, _a, _j in ops]
        cls = C.chain_class(classes)
        direct = self.rec.producer.get(id(value))
        if len(ops) == 1 and direct is not None and direct[0] is ops[0][0]:
            op, args, j = ops[0]
            return op_reference(self.module, op, args, j, value, cls)
        if dtype in (np.float64, np.complex128):
            return Reference(None, "none", cls, names, why="no reference wider than float64 for a chain of ops")
        wide = self.wide_run()
        if wide is None or k >= len(wide.checks) or not wide.checks[k][1]:
            return Reference(None, "none", cls, names, why="the program cannot be evaluated in float64")
        ref = _narrow(wide.checks[k][1][0], dtype)
        if ref.shape != value.shape:
            return Reference(None, "none", cls, names, why="float64 program gave another shape")
        return Reference(ref, "float64 program", cls, names)


def op_reference(module: Module, op: Op, args: Sequence, j: int, like: np.ndarray,
                 cls: C.AccuracyClass) -> Reference:
    """The exact result ``j`` of one op on ``args``, rounded to the type of
    ``like``: arbitrary precision (``oracle.exact``) for element-wise math,
    the NumPy kernel for exact ops, else float64 / complex128 arithmetic."""
    names = [op.name]
    dtype = like.dtype
    if cls.kind == C.IMPLEMENTATION:
        return Reference(None, "none", cls, names, why="implementation-defined values")
    exact = _exact_module()
    if exact is not None and op.name in exact.DEFINED_OPS and len(op.results) == 1 and \
            like.size <= MPMATH_MAX_ELEMENTS and (dtype.kind != "c" or op.name in exact.COMPLEX_OPS):
        try:
            ref = np.asarray(exact.correctly_rounded(op.name, list(args), dtype))
            if ref.shape == like.shape and ref.dtype == dtype:
                silent = np.broadcast_to(np.asarray(exact.spec_silent(op.name, list(args), dtype), bool), ref.shape)
                return Reference(ref, "mpmath", cls, names, silent=silent)
        except Exception:  # no arbitrary-precision definition for these operands
            pass
    if cls.kind == C.EXACT:
        try:
            return Reference(run_op(module, op, args, j), "exact", cls, names)
        except Exception as e:
            return Reference(None, "none", cls, names, why=f"kernel failed: {e}")
    if dtype not in (np.float64, np.complex128):
        try:
            ref = _narrow(run_op_wide(module, op, args, j), dtype)
            mag = magnitude(module, op, args, ref, cls, j)
            return Reference(ref, "float64", cls, names, mag)
        except Exception as e:
            return Reference(None, "none", cls, names, why=f"float64 evaluation failed: {e}")
    if cls.kind == C.ACCUMULATE:
        # float64 has no wider type here: the kernel's own float64 result, itself
        # within the bound, judges the others within twice the bound
        try:
            ref = run_op(module, op, args, j)
            mag = magnitude(module, op, args, ref, cls, j)
            return Reference(ref, "float64 (same precision)", cls, names, mag, factor=2.0)
        except Exception as e:
            return Reference(None, "none", cls, names, why=f"float64 evaluation failed: {e}")
    return Reference(None, "none", cls, names, why="no reference wider than float64 for this op")


def judge_op(module: Module, op: Op, args: Sequence, values: dict[str, Sequence], profile=None) -> dict[str, Any]:
    """Backends disagree on one op (``values``: label -> its results): which
    of them are within the op's class of the exact result."""
    cls = C.class_of(op, profile)
    backends: dict[str, dict[str, Any]] = {}
    why = ""
    method = "none"
    for j in range(len(op.result_types)):
        got = {lb: np.asarray(v[j]) for lb, v in values.items() if v is not None and j < len(v)}
        if not got:
            continue
        like = next(iter(got.values()))
        ref = op_reference(module, op, args, j, like, cls)
        method, why = ref.method, ref.why or why
        for lb, v in got.items():
            _note(backends, lb, v, ref)
    return _backends_verdict(op.name, cls, backends, method, why)


def relative_error(v: np.ndarray, ref: np.ndarray, magnitude: np.ndarray | None) -> float | None:
    """The largest ``|v - ref| / sum(|a_i b_i|)`` of an accumulating op (None without magnitudes)."""
    if magnitude is None or not is_float_dtype(v.dtype):
        return None
    wide = np.complex128 if v.dtype.kind == "c" else np.float64
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        err = np.abs(v.astype(wide) - ref.astype(wide))
        mag = np.abs(np.asarray(magnitude, np.float64))
        r = np.where(err == 0, 0.0, err / np.where(mag > 0, mag, np.inf))
    r = r[np.isfinite(r)]
    return float(r.max()) if r.size else 0.0


def _note(backends: dict, lb: str, v: np.ndarray, ref: Reference) -> None:
    """Record whether backend ``lb``'s value ``v`` is within the class of ``ref``
    (for a dot: the most accurate allowed algorithm it is within)."""
    if ref.value is None or v.shape != ref.value.shape or v.dtype != ref.value.dtype:
        return
    fit = C.fit(v, ref.value, ref.cls, ref.magnitude, ref.factor)
    b = backends.setdefault(lb, {"within": True})
    b["within"] &= fit is not None
    if is_float_dtype(v.dtype):  # floats: how many ULPs from the exact value
        d, was = _max_ulp(ulp_distance(v, ref.value)), b.get("max_ulp_from_exact", 0)
        b["max_ulp_from_exact"] = None if d is None or was is None else max(was, d)
    else:  # integers and booleans are exact or not: how many elements differ
        b["elements_differ"] = b.get("elements_differ", 0) + int(np.count_nonzero(v != ref.value))
        b["elements"] = b.get("elements", 0) + int(v.size)
    if ref.cls.source == "result_accuracy":
        b["judgement"] = ref.cls.judgement("" if b["within"] else None)
    if ref.cls.algorithms:
        names = [n for n, _e in ref.cls.algorithms]
        was = b.get("fit", names[0])
        b["fit"] = None if fit is None or was is None else max(was, fit, key=names.index)
        b["judgement"] = ref.cls.judgement(b["fit"])
        rel = relative_error(v, ref.value, ref.magnitude)
        if rel is not None:
            b["error_of_magnitude"] = max(rel, b.get("error_of_magnitude", 0.0))


def _describe_backend(lb: str, b: dict) -> str:
    if "fit" in b:
        rel = b.get("error_of_magnitude")
        return f"{lb} {b['judgement']}" + (f" (max |error| = {rel:.3g} x sum|a_i b_i|)" if rel is not None else "")
    parts = [b["judgement"]] if "judgement" in b else []
    if "max_ulp_from_exact" in b:
        parts.append(f"{_fmt(b['max_ulp_from_exact'])} ULP from exact")
    if "elements_differ" in b:
        parts.append(f"{b['elements_differ']}/{b['elements']} elements differ from exact" if b["elements_differ"]
                     else "equal to exact")
    return f"{lb} " + ", ".join(parts)


def _backends_verdict(what: str, cls: C.AccuracyClass, backends: dict, method: str, why: str) -> dict[str, Any]:
    wrong = [lb for lb, b in backends.items() if not b["within"]]
    if cls.kind == C.IMPLEMENTATION:
        verdict = SPEC_SILENT
    elif not backends:
        verdict = NO_REFERENCE
    else:
        verdict = BACKEND_WRONG if wrong else BOTH_WITHIN
    detail = ", ".join(_describe_backend(lb, b) for lb, b in backends.items())
    summary = f"{verdict}" + (f" ({', '.join(wrong)})" if wrong else "") + \
        f": {what} ({cls.describe()}, reference {method})" + (f"; {detail}" if detail else "") + \
        (f"; {why}" if why and not backends else "")
    return {"verdict": verdict, "summary": summary, "wrong": wrong, "backends": backends,
            "accuracy": cls.to_json(), "reference": method}


def judge_backends(module: Module, func, opts: RunOptions | None, values: dict[str, Sequence]) -> dict[str, Any]:
    """Backends disagree on a test's checked values (``values``: label ->
    the first operand of each check op of the test function, in program
    order): which of them are within the class of the exact values."""
    opts = run_options(opts)
    rec = record(module, func.name, None, opts)
    oracle = Oracle(module, func.name, rec, opts.accuracy_profile, opts)
    where = {id(op): i for i, op in enumerate(check_ops(func))}
    backends: dict[str, dict[str, Any]] = {}
    cls, method, why, what = C.AccuracyClass(C.EXACT), "exact", "", "the checked values"
    for k, (op, args) in enumerate(rec.checks):
        i = where.get(id(op))
        if i is None or not args:
            continue
        value = np.asarray(args[0])
        if is_float_dtype(value.dtype):
            ref = oracle.reference(k, value)
        else:
            ref = Reference(value, "exact", C.AccuracyClass(C.EXACT), [])
        if ref.cls.kind != C.EXACT or ref.value is None:
            cls, method, why = ref.cls, ref.method, ref.why or why
            what = ", ".join(ref.ops[:3]) or what
        for lb, vals in values.items():
            if i < len(vals):
                _note(backends, lb, np.asarray(vals[i]), ref)
    return _backends_verdict(what, cls, backends, method, why)


# --------------------------------------------------------------------------- #
# Judging checks
# --------------------------------------------------------------------------- #


def check_rule(op: Op) -> tuple[str, float]:
    """(``eq`` | ``almost`` | ``close`` | ``other``, tolerance) of a check op."""
    name = op.name
    if name == "stablehlo.custom_call":
        name = str(op.attrs.get("call_target_name", ""))
    short = name.split(".", 1)[1] if "." in name else name
    if short in ("expect_almost_eq", "expect_almost_eq_const"):
        return "almost", float(op.attrs.get("tolerance", DEFAULT_TOLERANCE))
    if short == "expect_close":
        cfg = op.attrs.get("backend_config")
        n = op.attrs.get("max_ulp_difference", DEFAULT_MAX_ULP)
        if isinstance(cfg, dict):
            n = cfg.get("max_ulp_difference", n)
        return "close", float(n)
    if short in ("expect_eq", "expect_eq_const", "eq"):
        return "eq", 0.0
    return "other", 0.0


def _expected_of(op: Op, args: list, actual: np.ndarray) -> np.ndarray | None:
    exp = args[1] if len(args) > 1 else op.attrs.get("value")
    if exp is None:
        return None
    exp = np.asarray(exp)
    if exp.shape != actual.shape:
        try:
            exp = np.broadcast_to(exp, actual.shape)
        except ValueError:
            return None
    return exp


def own_ok(rule: str, tol: float, actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Element mask of the check's own rule."""
    if not is_float_dtype(actual.dtype):
        return actual == expected
    if rule == "almost":
        if actual.dtype.kind == "c":
            return _almost_equal(actual.real, expected.real, tol) & _almost_equal(actual.imag, expected.imag, tol)
        return _almost_equal(actual, expected, tol)
    return ulp_distance(actual, expected) <= np.uint64(int(tol))


def _num(x: Any) -> Any:
    x = np.asarray(x)
    if x.dtype.kind == "c":
        return [float(x.real), float(x.imag)]
    if is_float_dtype(x.dtype):
        return float(x.astype(np.float64))
    return x.item()


def _max_ulp(d: np.ndarray) -> int | None:
    f = d[d != NEVER]
    return int(f.max()) if f.size else None


def implementation_why(op: Op) -> str:
    """What a ``spec silent`` verdict on ``op``'s values says was checked."""
    if op.name == "stablehlo.rng":
        what = "shape, type and finiteness" if "NORMAL" in str(op.attrs.get("rng_distribution", "")) else \
            "shape, type and range"
        return f"implementation-defined: the spec leaves rng results to the backend; {what} checked"
    if op.name == "stablehlo.rng_bit_generator":
        return ("implementation-defined: the spec leaves the bits of rng_bit_generator to the backend; shape, "
                "type, output state and determinism for the state checked")
    return "implementation-defined values"


def _failing_elements(op: Op, actual: np.ndarray, expected: np.ndarray) -> np.ndarray | None:
    """Element mask of what a check op rejects (IREE's by IREE's rules);
    None when the check is not element-wise or the shapes/types differ."""
    if op.name.startswith("check.iree_"):
        return iree_check.failing_elements(op.name, op.attrs, actual, expected)
    rule, tol = check_rule(op)
    if rule == "other" or actual.shape != expected.shape or actual.dtype != expected.dtype:
        return None
    return ~np.asarray(own_ok(rule, tol, actual, expected), bool)


def judge_implementation_defined(oracle: Oracle, op: Op, actual: np.ndarray, expected: np.ndarray,
                                 ref_value: np.ndarray) -> dict[str, Any] | None:
    """A failing check of a value computed from ops whose values the spec
    leaves to the implementation (spec.md#rng, spec.md#rng_bit_generator):
    ``spec silent`` when what the spec does fix holds (the program's shape
    and type; for the op's own result: the shape operand, ``[a, b)`` of
    ``UNIFORM``, the output state's type, the same bits for the same state),
    else ``backend wrong`` naming what does not. None when the value does
    not depend on such an op or the check passes."""
    impl = [ev for ev in rounding_ops(oracle.rec, ref_value, oracle.profile)
            if C.class_of(ev[0], oracle.profile).kind == C.IMPLEMENTATION]
    if not impl:
        return None
    bad = _failing_elements(op, actual, expected)
    if bad is None or not bad.any():  # passes, or not a check of elements this can tell
        return None
    rng_op, args, j = impl[0]
    problems: list[str] = []
    if actual.shape != ref_value.shape or actual.dtype != ref_value.dtype:
        problems.append(f"the checked value is {actual.dtype}{list(actual.shape)}, the program says "
                        f"{ref_value.dtype}{list(ref_value.shape)}")
    elif oracle.rec.producer.get(id(ref_value), (None,))[0] is rng_op:
        problems += rng_kernels.spec_fixed_problems(rng_op.name, rng_op.attrs, args, j, actual)
        if rng_op.name == "stablehlo.rng_bit_generator":
            again = [run_op(oracle.module, rng_op, args, j) for _ in range(2)]
            if any(T.to_bits(a).tobytes() != T.to_bits(ref_value).tobytes() for a in again):
                problems.append("the same initial state gave other bits (the spec demands a deterministic "
                                "function of the state)")
    verdict = BACKEND_WRONG if problems else SPEC_SILENT
    n = int(bad.sum())
    return {"loc": str(op.loc), "check": check_rule(op)[0], "passed": False, "elements": n,
            "total": int(actual.size), "ops": [o.name for o, _a, _j in impl][:8],
            "accuracy": C.AccuracyClass(C.IMPLEMENTATION).to_json(), "reference": "none", "verdict": verdict,
            "why": "; ".join(problems) if problems else implementation_why(rng_op),
            "counts": {verdict: n}}


def judge_check(oracle: Oracle, k: int, op: Op, actual: np.ndarray, expected: np.ndarray,
                ref_value: np.ndarray) -> dict[str, Any] | None:
    """None when the check passes by its own rule, else the evidence and the
    verdict of the elements that fail it (``passed``: the accuracy class
    accepts them all)."""
    ev = judge_implementation_defined(oracle, op, actual, expected, ref_value)
    if ev is not None:
        return ev
    rule, tol = check_rule(op)
    if rule == "other" or actual.shape != expected.shape or actual.dtype != expected.dtype:
        return None
    own = ok = own_ok(rule, tol, actual, expected)
    if own.all() and not (rule != "eq" and oracle.demands_accuracy(k, ref_value)):
        return None
    ref = oracle.reference(k, ref_value) if is_float_dtype(actual.dtype) else None
    cls = ref.cls if ref is not None else C.AccuracyClass(C.EXACT)
    if rule != "eq" and ref is not None:
        if cls.source == "result_accuracy":  # the program's own demand replaces the check's tolerance
            ok = C.within(actual, expected, cls)
        elif cls.kind != C.IMPLEMENTATION:
            # the two sides may each be off by the class bound; the backend,
            # when the exact value is known, by no more than the bound
            by_class = C.within(actual, expected, cls, ref.magnitude, factor=2.0)
            if ref.value is not None:
                by_class &= C.within(actual, ref.value, cls, ref.magnitude, ref.factor)
            ok = ok | by_class
    failing = ~np.asarray(ok, bool)
    if not failing.any() and own.all():
        return None
    bad = failing if failing.any() else ~np.asarray(own, bool)  # the elements described
    ev: dict[str, Any] = {"loc": str(op.loc), "check": rule, "passed": not failing.any(),
                          "elements": int(bad.sum()), "total": int(bad.size)}
    if ref is None:  # integers and booleans: the NumPy kernels are exact
        ref = Reference(ref_value, "exact", C.AccuracyClass(C.EXACT), [])
    ev.update(ops=ref.ops[:8], accuracy=ref.cls.to_json(), reference=ref.method)
    if ref.value is None:
        verdict = SPEC_SILENT if ref.cls.kind == C.IMPLEMENTATION else NO_REFERENCE
        ev.update(verdict=verdict, why=ref.why, counts={verdict: int(bad.sum())})
        return ev
    exact = ref.value
    b_ok = C.within(actual, exact, ref.cls, ref.magnitude, ref.factor)
    g_ok = C.within(expected, exact, ref.cls, ref.magnitude, ref.factor)
    silent = C._zero_sign_differs(actual, expected) if is_float_dtype(actual.dtype) and \
        ref.cls.kind != C.EXACT else np.zeros(actual.shape, bool)
    if ref.silent is not None:
        silent = silent | ref.silent
    per = np.where(silent, 2, np.where(~b_ok, 0, np.where(~g_ok, 1, 3)))
    per_bad = per[bad]
    counts = {ORDER[i]: int(np.count_nonzero(per_bad == i)) for i in range(4) if np.any(per_bad == i)}
    verdict = ORDER[int(per_bad.min())]
    ev.update(verdict=verdict, counts=counts)
    floats = is_float_dtype(actual.dtype)
    if floats:  # how far each side is, in ULPs of the type
        d_g, d_b = ulp_distance(expected, exact), ulp_distance(actual, exact)
        ev.update(golden_ulp=_max_ulp(d_g[bad]), backend_ulp=_max_ulp(d_b[bad]))
    else:  # integers and booleans have no ULPs: each side equals the exact value or not
        ev.update(golden_differs=int(np.count_nonzero((expected != exact)[bad])),
                  backend_differs=int(np.count_nonzero((actual != exact)[bad])))
    if ref.cls.algorithms or ref.cls.source == "result_accuracy":  # the bound the program asked for
        ev["judgement"] = ref.cls.judgement(C.fit(actual, exact, ref.cls, ref.magnitude, ref.factor))
    examples = []
    worst = np.argwhere(bad & (per == per_bad.min()))
    for idx in worst[:MAX_EXAMPLES]:
        i = tuple(int(x) for x in idx)
        example = {"index": list(i), "expected": _num(expected[i]), "actual": _num(actual[i]), "exact": _num(exact[i])}
        if floats:
            example.update(golden_ulp=None if d_g[i] == NEVER else int(d_g[i]),
                           backend_ulp=None if d_b[i] == NEVER else int(d_b[i]))
        examples.append({**example, "verdict": ORDER[int(per[i])]})
    ev["examples"] = examples
    return ev


def summarize(checks: list[dict]) -> dict[str, Any]:
    verdict = min((c["verdict"] for c in checks), key=ORDER.index)
    first = next(c for c in checks if c["verdict"] == verdict)
    ops = ", ".join(first.get("ops", [])[:3]) or "the checked value"
    parts = [f"{verdict}: {ops} ({first['accuracy'].get('bound') or first['accuracy'].get('kind')}"
             + (f" <= {first['accuracy']['ulps']:g} ULP" if first["accuracy"].get("kind") == C.ULP else "")
             + f", reference {first['reference']})"]
    if first.get("judgement"):
        parts.append(f"backend {first['judgement']}")
    if first.get("golden_ulp") is not None or first.get("backend_ulp") is not None:
        parts.append(f"golden {_fmt(first.get('golden_ulp'))} ULP from exact, "
                     f"backend {_fmt(first.get('backend_ulp'))} ULP")
    elif "backend_differs" in first:  # integers and booleans
        parts.append(f"golden {_differs(first['golden_differs'])}, backend {_differs(first['backend_differs'])}")
    if first.get("why"):
        parts.append(first["why"])
    parts.append(f"{first['elements']}/{first['total']} elements at {first['loc']}")
    return {"verdict": verdict, "summary": "; ".join(parts), "checks": checks}


def _differs(n: int) -> str:
    """How an integer or boolean side compares with the exact values (they have no ULPs)."""
    return f"differs from exact on {n} element{'s' if n != 1 else ''}" if n else "equal to exact"


def _fmt(x) -> str:
    return "inf" if x is None else str(x)


# --------------------------------------------------------------------------- #
# Tests
# --------------------------------------------------------------------------- #


def needs_oracle(module: Module) -> bool:
    """True when some op of ``module`` carries a ``result_accuracy`` that
    is not DEFAULT (such tests are judged even when their checks pass)."""
    cached = module.__dict__.get("_carries_accuracy")
    if cached is None:
        cached = any(C.result_accuracy_class(op) is not None
                     for f in module.funcs.values() for op in walk_ops(f.body))
        module.__dict__["_carries_accuracy"] = cached
    return cached


def _backend_values(backend: Any, module: Module, func, opts: RunOptions | None) -> dict[int, np.ndarray] | None:
    """id(check op) -> the value the backend computed for it (None: the
    NumPy trace's own values)."""
    if isinstance(backend, NumpyBackend):
        if backend.registry is None:
            return None
        rec = record(module, func.name, backend.registry, opts)
        return {id(op): np.asarray(args[0]) for op, args in rec.checks if args}
    if hasattr(backend, "_test_run"):
        checks, grouped = backend._test_run(module, func, opts)
        return {id(op): np.asarray(g[0]) for op, g in zip(checks, grouped) if g}
    values = backend.test_values(module, func, opts)
    return {id(op): np.asarray(v) for op, v in zip(check_ops(func), values)}


# checked values larger than this are not judged (the verdict says no reference)
MAX_JUDGED_ELEMENTS = 1 << 22


def judge_test(module: Module, func, opts: RunOptions | None = None, backend: Any = None) -> dict[str, Any]:
    """Re-run a test with recording and judge every check: ``passed`` (all
    checks pass by their rule or the accuracy class) and ``verdict`` (None
    or the summary of :func:`summarize`)."""
    opts = run_options(opts)
    rec = record(module, func.name, None, opts)
    actual_of = _backend_values(backend, module, func, opts) if backend is not None else None
    oracle = Oracle(module, func.name, rec, opts.accuracy_profile, opts)
    judged: list[dict] = []
    unjudged = 0  # checks the oracle cannot judge (a probe, another check dialect's op, ...)
    for k, (op, args) in enumerate(rec.checks):
        if not args:
            unjudged += 1
            continue
        ref_value = np.asarray(args[0])
        actual = ref_value if actual_of is None else actual_of.get(id(op))
        if actual is None or actual.size > MAX_JUDGED_ELEMENTS:  # judging costs far more than checking
            unjudged += 1
            continue
        expected = _expected_of(op, args, actual)
        ev = None if expected is None else judge_check(oracle, k, op, actual, expected, ref_value)
        if ev is None:
            unjudged += 1
        else:
            judged.append(ev)
    failing = [ev for ev in judged if not ev["passed"]]
    # a test passes by the classes only when every one of its checks was judged
    passed = not failing and not unjudged and not (actual_of is None and rec.other_failures)
    return {"passed": passed, "verdict": summarize(failing) if failing else None,
            "relaxed": [ev for ev in judged if ev["passed"]]}


@dataclasses.dataclass(frozen=True)
class Judgement:
    """What the accuracy classes say of a test: its status and message, the
    ``verdict`` of a failure, the ``accuracy`` note of a test they pass."""

    status: str
    message: str
    verdict: dict | None = None
    accuracy: dict | None = None


def judge_record(module: Module, func, opts: RunOptions | None, status: str, message: str,
                 backend: Any = None) -> Judgement | None:
    """Judge a failing (or ``result_accuracy``-carrying) test whose checks
    gave ``status`` and ``message``: its status by the accuracy classes, and
    a ``verdict`` for a failure. None when nothing changes."""
    if backend is None:
        backend = get_backend(run_options(opts).backend)
    try:
        out = judge_test(module, func, opts, backend)
    except Exception as e:  # an oracle failure never changes the outcome
        if status == "fail":
            return Judgement(status, message, verdict={
                "verdict": NO_REFERENCE, "summary": f"{NO_REFERENCE}: {type(e).__name__}: {e}"[:300], "checks": []})
        return None
    if out["passed"]:
        if status == "fail":
            return Judgement("pass", "", accuracy={
                "note": "passed within the ops' accuracy classes; by the checks' own tolerances: "
                        + (message or "").splitlines()[0][:300],
                "checks": out["relaxed"]})
        return None
    v = out["verdict"]
    if v is None:  # a failure that is not a check's (cf.assert, ...): nothing to judge
        if status == "fail":
            return Judgement(status, message, verdict={"verdict": NO_REFERENCE, "checks": [],
                                                       "summary": f"{NO_REFERENCE}: the failure is not a value check"})
        return None
    if status == "pass":
        c = v["checks"][0]
        message = (f"{c['loc']}: {c['elements']}/{c['total']} elements outside the program's "
                   f"result_accuracy ({c['accuracy']})")
    message = (message or "").rstrip() + f"\nverdict: {v['summary']}"
    return Judgement("fail" if status == "pass" else status, message, verdict=v)
