"""Models judged as whole programs, with a bound derived from their precision.

A model (a program with a recipe, :mod:`.recipe`) runs on three engines: the
backend under test, the oracle (this package's NumPy engine, at the
program's own precision) and the oracle on the program's float64 shadow
(:mod:`..programs.shadow`), the arbiter. For every float output the relative L2
distance to the arbiter, ``||x - s|| / ||s||``, is measured for the backend
(``e_B``) and for the oracle (``e_O``). The backend is within the model's
bound when

    e_B <= FACTOR * e_O + u

where ``u`` is the unit roundoff of the output's element type (one rounding
of the result: the floor for a program the oracle computes exactly). The
bound comes from the program alone: its precision sets ``e_O`` (f32 models
land near 1e-7, bf16 near 1e-2), no tolerance is set per model.
``docs/models.md`` derives ``FACTOR``. Integer and boolean outputs are exact.

The oracle's reference must mean something: an output that is not finite or
has no spread (a constant) is an error of the model, in words.

When a backend is outside the bound, the model is localised: every op runs
alone on the oracle and on the backend with the operands the oracle traced
(:func:`.diff.localise`), and the first op outside its own bound (its
accuracy class, :mod:`...oracle.classes`) is named with its location. When
every op is within its bound and some differ, the outcome is
``accumulated``: the difference grew over many ops, none of which the spec
calls wrong, and the model passes, saying so. When no op run alone differs
at all, the difference comes from the program as a whole (a fusion, a
layout): the model fails.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...compare import _float_info, is_float_dtype
from ...errors import ConformError
from ...program import Module
from ..backends.numpy_backend import NumpyBackend
from ..programs.recipe import Recipe, build_inputs, check_fits
from ..programs.shadow import shadow_module, wide_value
from ..records.options import RunOptions, run_options
from .diff import Labelled, _localise, _safe_run, diff_options, make_runners

FACTOR = 3.0
METRIC = "rel-L2 to the float64 shadow"
OUTCOMES = ("within", "accumulated", "op", "whole", "unlocalised")


class ModelError(ConformError):
    """The model cannot be judged: its reference is not finite or has no spread."""


def unit_roundoff(dtype: np.dtype) -> float:
    """Half the distance from 1 to the next float of ``dtype`` (0 for integers)."""
    return float(_float_info(np.dtype(dtype)).eps) / 2 if is_float_dtype(np.dtype(dtype)) else 0.0


def rel_l2(x: np.ndarray, s: np.ndarray) -> float:
    """``||x - s|| / ||s||`` in float64; infinite where ``x`` is not finite."""
    xw = np.asarray(x).astype(np.float64)
    sw = np.asarray(s).astype(np.float64)
    if not np.isfinite(xw).all():
        return float("inf")
    ref = float(np.linalg.norm(sw))
    d = float(np.linalg.norm(xw - sw))
    return d / ref if ref else (0.0 if d == 0 else float("inf"))


@dataclass(frozen=True)
class OutputError:
    """One output of one backend: its distance to the arbiter, the oracle's, and the bound."""

    index: int
    type: str
    backend: float
    oracle: float
    bound: float
    exact: bool = False  # an integer or boolean output: equal to the oracle's or not

    @property
    def within(self) -> bool:
        return self.backend <= self.bound

    def describe(self) -> str:
        if self.exact:
            return f"output #{self.index} {self.type}: " + ("equal to the oracle's" if self.within else
                                                            "differs from the oracle's (exact)")
        return (f"output #{self.index} {self.type}: rel-L2 to fp64 {self.backend:.3g}, oracle's {self.oracle:.3g}, "
                f"bound {self.bound:.3g}")

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "type": self.type, "backend": self.backend, "oracle": self.oracle,
                "bound": self.bound, "within": self.within, **({"exact": True} if self.exact else {})}


def output_errors(got: Sequence[Any], oracle: Sequence[Any], shadow: Sequence[Any], types: Sequence[Any]
                  ) -> list[OutputError]:
    """The model rule for every output (see the module's text)."""
    out = []
    for i, (b, o, s, t) in enumerate(zip(got, oracle, shadow, types)):
        o = np.asarray(o)
        b = np.asarray(b)
        if not is_float_dtype(o.dtype):
            same = b.shape == o.shape and bool(np.array_equal(b, o))
            out.append(OutputError(i, str(t), 0.0 if same else float("inf"), 0.0, 0.0, exact=True))
            continue
        if b.shape != o.shape:
            out.append(OutputError(i, str(t), float("inf"), rel_l2(o, s), 0.0))
            continue
        e_o = rel_l2(o, s)
        out.append(OutputError(i, str(t), rel_l2(b, s), e_o, FACTOR * e_o + unit_roundoff(o.dtype)))
    return out


def reference_problem(outputs: Sequence[Any], types: Sequence[Any]) -> str | None:
    """Why the oracle's outputs cannot serve as a model's reference, or None."""
    for i, (o, t) in enumerate(zip(outputs, types)):
        o = np.asarray(o)
        if not o.size:
            continue
        w = o.astype(np.complex128 if o.dtype.kind == "c" else np.float64)
        bad = int(np.count_nonzero(~np.isfinite(w)))
        if bad:
            return (f"reference output #{i} ({t}) has {bad} of {o.size} values not finite: the model's inputs "
                    "or weights make it meaningless (check the recipe's distributions)")
        if o.size > 1 and bool(np.all(w == w.flat[0])):
            return (f"reference output #{i} ({t}) is constant ({w.flat[0].real:g} everywhere): a model test needs "
                    "an output with spread (a zero-initialised layer? check the recipe)")
    return None


@dataclass(frozen=True)
class ModelVerdict:
    """What the model rule found for one backend: ``outcome`` (``within``, or,
    outside the bound, ``op`` (the first op outside its own bound),
    ``accumulated`` (no op is, and ops differ within their bounds), ``whole``
    (no op run alone differs at all: the program as a whole is wrong, a
    fusion say) or ``unlocalised`` (localising could not finish)), the
    per-output errors, the first op and a note."""

    backend: str
    outcome: str
    outputs: tuple[OutputError, ...]
    first_op: dict | None = None
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.outcome in ("within", "accumulated")

    @property
    def worst(self) -> OutputError:
        return max(self.outputs, key=lambda o: (not o.within, o.backend / o.bound if o.bound else o.backend))

    def summary(self) -> str:
        w = self.worst
        el = w.type.rsplit("x", 1)[-1].rstrip(">") if "x" in w.type else w.type
        head = w.describe() if w.exact else f"{w.describe()} ({FACTOR:g}x the oracle's + u({el}))"
        if self.outcome == "within":
            return f"within the model's bound: {head}"
        if self.outcome == "accumulated":
            return f"accumulated: no single op exceeds its bound (outside the model's bound: {head})"
        if self.outcome == "op":
            fo = self.first_op or {}
            return (f"outside the model's bound: {head}\nfirst op outside its bound: {fo.get('op')} at "
                    f"{fo.get('loc')}: {fo.get('message', '')}")
        if self.outcome == "whole":
            return f"outside the model's bound: {head}\n{self.note}"
        return f"outside the model's bound: {head}\nnot localised: {self.note}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"metric": METRIC, "factor": FACTOR, "backend": self.backend, "outcome": self.outcome,
                               "outputs": [o.to_json() for o in self.outputs]}
        if self.first_op is not None:
            out["first_op"] = {k: self.first_op.get(k) for k in ("op", "loc", "status", "message")}
        if self.note:
            out["note"] = self.note
        return out


@dataclass
class Reference:
    """The oracle's outputs and the arbiter's, for one program and inputs."""

    outputs: tuple
    shadow: tuple


def reference(module: Module, entry: str, args: Sequence[np.ndarray], opts: RunOptions | None = None) -> Reference:
    """Run the oracle and its float64 shadow; a :class:`ModelError` when the
    reference is not usable (:func:`reference_problem`)."""
    oracle = NumpyBackend()
    outs = tuple(oracle.run_function(module, entry, list(args), opts))
    types = module.funcs[entry].result_types
    why = reference_problem(outs, types)
    if why:
        raise ModelError(f"model error: {why}")
    wide = shadow_module(module)
    shadow = tuple(oracle.run_function(wide, entry, [wide_value(np.asarray(a)) for a in args], opts))
    why = reference_problem(shadow, wide.funcs[entry].result_types)
    if why:
        raise ModelError(f"model error: in the float64 shadow, {why}")
    return Reference(outs, shadow)


def localise_model(module: Module, entry: str, args: Sequence[np.ndarray], runner: Labelled, opts: RunOptions
                   ) -> tuple[str, dict | None, str]:
    """``(outcome, first op, note)`` for a backend outside the model's bound:
    every op run alone on the oracle and on ``runner`` (see the module's text)."""
    runners = [Labelled("oracle", NumpyBackend()), runner]
    ops, complete = _localise(module, entry, args, runners, opts)
    first = next((o for o in ops if o["status"] in ("mismatch", "crash", "timeout")), None)
    if first is not None:
        return "op", first, ""
    if not complete:
        return "unlocalised", None, f"stopped after {len(ops)} op runs (--max-ops)"
    failed = sorted({o["op"] for o in ops if o["status"] not in ("ok", "skipped")})
    if failed:
        return "unlocalised", None, f"{', '.join(failed)} did not run alone"
    differing = len({(o["op"], o["loc"]) for o in ops if o.get("differs")})
    if not differing:
        return "whole", None, (f"no op run alone differs from the oracle ({len(ops)} op runs): the difference "
                               "comes from running the program as a whole")
    return "accumulated", None, f"{differing} ops differ from the oracle, each within its bound ({len(ops)} op runs)"


def judge_backend(module: Module, entry: str, args: Sequence[np.ndarray], runner: Labelled, got: Sequence[Any],
                  ref: Reference, opts: RunOptions, localise: bool = True) -> ModelVerdict:
    """The model rule for one backend's outputs ``got``, localised when outside the bound."""
    errors = tuple(output_errors(got, ref.outputs, ref.shadow, module.funcs[entry].result_types))
    if all(e.within for e in errors):
        return ModelVerdict(runner.label, "within", errors)
    if not localise:
        return ModelVerdict(runner.label, "unlocalised", errors, note="localising was not asked for")
    outcome, first, note = localise_model(module, entry, args, runner, opts)
    return ModelVerdict(runner.label, outcome, errors, first, note)


def localising_options(opts: RunOptions | None) -> RunOptions:
    """The per-op runs' options for a model run by ``conform run`` (``opts``: its run options, or
    None): the run's timeout per op, every op of the model (a model has thousands), and the
    accuracy profile the run names. A new object: ``opts`` is left as it is."""
    opts = run_options(opts)
    return RunOptions(timeout=opts.timeout, max_ops=10**9, accuracy_profile=opts.accuracy_profile)


def inputs_for(module: Module, entry: str, recipe: Recipe, seed: int | None = None) -> list[np.ndarray]:
    """The recipe's arrays, checked against the entry's parameters."""
    check_fits(recipe, module.funcs[entry].param_types)
    return build_inputs(recipe, seed)


def is_oracle(backend: Any) -> bool:
    """The plain NumPy engine (no overridden kernel): the oracle itself."""
    return isinstance(backend, NumpyBackend) and type(backend) is NumpyBackend and backend.registry is None


def run_model(module: Module, recipe: Recipe, backend: Any, opts: RunOptions | None = None, seed: int | None = None
              ) -> ModelVerdict:
    """A model as a test (``conform run``): inputs from its recipe, the
    reference, the backend's outputs judged by the model rule."""
    entry = recipe.entry
    args = inputs_for(module, entry, recipe, seed)
    ref = reference(module, entry, args, opts)
    runner = Labelled(getattr(backend, "name", type(backend).__name__), backend)
    got = ref.outputs if is_oracle(backend) else tuple(backend.run_function(module, entry, args, opts))
    return judge_backend(module, entry, args, runner, got, ref, localising_options(opts))


def diff_model(module: Module, entry: str, backends: Sequence[Any], args: Sequence[np.ndarray],
               opts: RunOptions | None = None) -> dict[str, Any]:
    """``conform diff`` of a model: the report :func:`.diff.diff_program`
    writes, each backend's outputs judged by the model rule (against the
    arbiter, not against each other), localised only when outside the bound."""
    opts = opts or diff_options()
    runners = make_runners(backends)
    func = module.funcs[entry]
    report: dict[str, Any] = {
        "entry": entry, "backends": [r.label for r in runners], "model": True,
        "inputs": [{"index": i, "type": str(t), "shape": list(np.shape(a)), "dtype": str(np.asarray(a).dtype)}
                   for i, (t, a) in enumerate(zip(func.param_types, args))],
        "runs": {}, "outputs": [], "ops": [], "first_divergence": None, "verdicts": {},
    }
    ref = reference(module, entry, args, opts)
    results: dict[str, Any] = {}
    for r in runners:
        if is_oracle(r.backend):
            status, value = "ok", ref.outputs
        else:
            status, value = _safe_run(r, module, entry, args, opts)
        report["runs"][r.label] = {"status": status, "message": "" if status == "ok" else value}
        results[r.label] = value if status == "ok" else None
    verdicts = []
    for r in runners:
        if results[r.label] is None:
            continue
        v = judge_backend(module, entry, args, r, results[r.label], ref, opts, opts.localise != "never")
        verdicts.append(v)
        report["verdicts"][r.label] = v.to_json()
        for e in v.outputs:
            o = np.asarray(results[r.label][e.index])
            base = np.asarray(ref.shadow[e.index])
            max_abs = (float(np.max(np.abs(o.astype(np.float64) - base.astype(np.float64))))
                       if o.size and o.shape == base.shape else None)
            report["outputs"].append({
                "index": e.index, "type": e.type, "backend": r.label, "against": "float64 shadow",
                "status": "ok" if (e.within or v.outcome == "accumulated") else "mismatch",
                "max_ulp": None, "max_abs": max_abs, "message": e.describe().split(": ", 1)[1],
                **({"note": "accumulated: no single op exceeds its bound"} if not e.within and v.ok else {})})
        if v.first_op is not None and report["first_divergence"] is None:
            report["first_divergence"] = v.first_op
    failed = [label for label, run in report["runs"].items() if run["status"] != "ok"]
    wrong = [v for v in verdicts if not v.ok]
    report["status"] = "disagree" if wrong else ("incomplete" if failed else "agree")
    shown = wrong[0] if wrong else (max(verdicts, key=lambda v: v.worst.backend) if verdicts else None)
    if shown is not None:
        report["verdict"] = f"{shown.backend}: {shown.summary()}"
    return report
