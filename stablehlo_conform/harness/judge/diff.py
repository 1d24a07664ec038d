"""Differential runs: one program, several backends, the same inputs.

Every result is compared with a dtype-aware tolerance (exact for integers
and booleans; a ULP budget per float type, ``compare.DEFAULT_ULP``; NaN
equals NaN). When results disagree, the first diverging op is located: the
program runs on the NumPy engine with a trace recording every op's inputs and
outputs, then each op runs alone (a one-op module built from its generic
text) on every backend with the recorded inputs, and the per-op results are
compared.

One judgement decides the per-op table, the outputs and the result: an op
whose backends differ is judged against its exact result by its accuracy
class (:mod:`stablehlo_conform.oracle.classes`; for a dot or convolution the
precision its ``precision_config`` or ``algorithm`` allows), and its status
is ``ok`` when every backend is within the bound, ``mismatch`` when one
exceeds it. Outputs that differ beyond the type's budget while every op run
alone is within its bound agree: the difference accumulated over the ops
that made it, none of which exceeds its bound. An op that exceeds its bound
makes the backends disagree, whatever the outputs show.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import frontend
from ... import types as T
from ...compare import DEFAULT_ULP, _float_info, compare, is_float_dtype, ulp_distance
from ...engine import Engine
from ...errors import ConformError
from ...kernels.registry import load_all
from ...oracle import classes as C
from ...program import Func, Module, walk_ops
from ..backends import get_backend
from ..backends.checks import check_ops
from ..records.options import RunOptions
from .verdict import BACKEND_WRONG, BOTH_WITHIN, judge_backends, judge_op, magnitude, needs_oracle

CONTAINER_OPS = frozenset({"stablehlo.while", "stablehlo.if", "stablehlo.case", "func.call", "stablehlo.composite"})
"""Ops whose values come from the ops of their regions (or callee): judged there."""

LANES = "operands are lanes of a region body"  # the op that owns the region is compared as a whole

SKIP_OPS = frozenset({
    "stablehlo.constant", "arith.constant", "func.return", "stablehlo.return", "func.call",
    "chlo.return", "stablehlo.optimization_barrier",
})


def ulp_budget(element) -> int:
    """ULP budget of an element type for comparisons between backends."""
    name = str(element)
    if name in DEFAULT_ULP:
        return DEFAULT_ULP[name]
    return 1


def norm_tolerance(expected: np.ndarray, budget: int) -> float:
    """Absolute tolerance relative to the tensor's magnitude: ``budget``
    machine epsilons times the largest finite ``|expected|``. Results of
    sums (dot products, reductions, softmax) computed in another order
    differ by a few ULP of the largest terms, not of each (possibly tiny)
    element."""
    dt = expected.dtype
    part = np.float32 if dt == np.complex64 else np.float64 if dt == np.complex128 else dt
    with np.errstate(invalid="ignore", over="ignore"):
        mag = np.abs(expected.astype(np.complex128 if dt.kind == "c" else np.float64))
    mag = mag[np.isfinite(mag)]
    if not mag.size:
        return 0.0
    return float(budget * float(_float_info(np.dtype(part)).eps) * float(mag.max()))


def compare_values(a: Any, b: Any, ttype=None, accuracy=None, magnitude=None) -> dict[str, Any]:
    """Compare two results: ``status`` ok/mismatch, ``max_ulp``, ``max_abs``,
    ``message`` (first differing index and values). Integers and booleans
    must be equal; floats agree element by element within the type's ULP
    budget or within :func:`norm_tolerance` (NaN equals NaN, infinities
    only themselves); complex numbers per component. With ``accuracy`` (the
    :class:`~stablehlo_conform.oracle.classes.AccuracyClass` of the op that
    computed both), floats agree within twice the class bound instead
    (``magnitude``: the operands' magnitudes of an accumulating op)."""
    a = np.asarray(a)
    b = np.asarray(b)
    out: dict[str, Any] = {"status": "ok", "max_ulp": None, "max_abs": None, "message": ""}
    if a.shape != b.shape or a.dtype != b.dtype:
        out.update(status="mismatch", message=f"{a.dtype}{list(a.shape)} vs {b.dtype}{list(b.shape)}")
        return out
    if not is_float_dtype(a.dtype):
        m = compare(a, b, max_ulp=0)
        if a.size and a.dtype.kind in "iu":
            out["max_abs"] = float(np.abs(a.astype(np.float64) - b.astype(np.float64)).max())
        if m is not None:
            out.update(status="mismatch", message=m.describe())
        return out
    if not a.size:
        return out
    el = ttype.element if isinstance(ttype, T.TensorType) else T.name_of_dtype(a.dtype)
    budget = ulp_budget(el)
    never = np.iinfo(np.uint64).max
    ulp = ulp_distance(a, b)
    finite_ulp = ulp[ulp != never]
    out["max_ulp"] = "inf" if finite_ulp.size != ulp.size else int(finite_ulp.max())
    wide = np.complex128 if a.dtype.kind == "c" else np.float64
    with np.errstate(invalid="ignore", over="ignore"):
        aw, bw = a.astype(wide), b.astype(wide)
        diff = np.abs(aw - bw)
        both_finite = np.isfinite(aw) & np.isfinite(bw)
    shown = diff[both_finite]
    out["max_abs"] = float(shown.max()) if shown.size else 0.0
    ok = (ulp <= np.uint64(budget)) | (both_finite & (diff <= norm_tolerance(b, budget)))
    if accuracy is not None:
        out["accuracy"] = accuracy.describe()
        if accuracy.kind == C.IMPLEMENTATION:
            ok = np.ones(a.shape, bool)
        elif accuracy.kind != C.ACCUMULATE or magnitude is not None:
            ok = C.within(a, b, accuracy, magnitude, factor=2.0)
    if not ok.all():
        idx = tuple(int(i) for i in np.argwhere(~ok)[0])
        u = ulp[idx]
        out.update(status="mismatch", message=(
            f"{int(np.count_nonzero(~ok))}/{a.size} elements differ; first at index {list(idx)}: "
            f"{aw[idx].item()!r} vs {bw[idx].item()!r}" + (f" ({int(u)} ULP)" if u != never else "")))
    return out


def against_first(values: Mapping[str, Sequence | None], types: Sequence | None = None) -> list[dict[str, Any]]:
    """The one comparison of backends (``conform diff``, ``run --compare``, fuzz, the reducer
    and bundles): every value of every backend that ran (``values[label]`` not None) against
    the first backend's value of the same index (:func:`compare_values`, with the value's
    type where ``types`` gives one), backend by backend. Each record gets ``index`` (and
    ``type`` with ``types``), ``backend`` and ``against``. Nothing when the first backend did
    not run."""
    labels = list(values)
    if not labels or values[labels[0]] is None:
        return []
    base = labels[0]
    out: list[dict[str, Any]] = []
    for b in labels[1:]:
        got = values[b]
        if got is None:
            continue
        for i, (x, y) in enumerate(zip(got, values[base])):
            ttype = types[i] if types is not None and i < len(types) else None
            c = compare_values(x, y, ttype)
            c.update(index=i, **({"type": str(ttype)} if types is not None else {}), backend=b, against=base)
            out.append(c)
    return out


@dataclass
class Labelled:
    """A backend with a label (two backends may share a name)."""

    label: str
    backend: Any

    def run(self, module: Module, entry: str, args: Sequence[np.ndarray], opts: RunOptions | None) -> tuple:
        return tuple(self.backend.run_function(module, entry, list(args), opts))


def make_runners(backends: Sequence[Any]) -> list[Labelled]:
    out: list[Labelled] = []
    seen: dict[str, int] = {}
    for b in backends:
        obj = get_backend(b) if isinstance(b, str) else b
        name = getattr(obj, "name", type(obj).__name__)
        seen[name] = seen.get(name, 0) + 1
        out.append(Labelled(name if seen[name] == 1 else f"{name}#{seen[name]}", obj))
    return out


DIFF_SECONDS = 120.0  # the default timeout of one run of ``conform diff``


def diff_options(**changes: Any) -> RunOptions:
    """The run options of ``conform diff``: :class:`RunOptions` with its
    defaults (a timeout of :data:`DIFF_SECONDS`) and ``changes``."""
    return RunOptions(**{"timeout": DIFF_SECONDS, **changes})


def _safe_run(r: Labelled, module, entry, args, opts) -> tuple[str, Any]:
    try:
        return "ok", r.run(module, entry, args, opts)
    except ConformError as e:
        return e.status, str(e)
    except Exception as e:  # a backend bug: report it with the backend's name
        return "error", f"{r.label}: {type(e).__name__}: {e}"


def diff_program(module: Module, entry: str, backends: Sequence[Any], args: Sequence[np.ndarray],
                 opts: RunOptions | None = None) -> dict[str, Any]:
    """Run ``entry`` on every backend and compare every result with the
    first backend's. Returns a JSON-ready report: ``status`` is ``agree``,
    ``disagree`` (some result differs) or ``incomplete`` (a backend did not
    run, the others agree); ``outputs`` one comparison per result and
    backend; ``ops`` per-op comparisons when localising; ``first_divergence``
    the first op whose results differ or whose run crashed."""
    opts = opts or diff_options()
    runners = make_runners(backends)
    func = module.funcs[entry]
    report: dict[str, Any] = {
        "entry": entry, "backends": [r.label for r in runners],
        "inputs": [{"index": i, "type": str(t), "shape": list(np.shape(a)), "dtype": str(np.asarray(a).dtype)}
                   for i, (t, a) in enumerate(zip(func.param_types, args))],
        "runs": {}, "outputs": [], "ops": [], "first_divergence": None,
    }
    results: dict[str, Any] = {}
    for r in runners:
        status, value = _safe_run(r, module, entry, args, opts)
        report["runs"][r.label] = {"status": status, "message": "" if status == "ok" else value}
        results[r.label] = value if status == "ok" else None
    report["outputs"] = against_first(results, func.result_types)
    agree = all(v is not None for v in results.values()) and all(o["status"] == "ok" for o in report["outputs"])
    mismatch = any(o["status"] != "ok" for o in report["outputs"])
    failed = [label for label, run in report["runs"].items() if run["status"] != "ok"]
    report["status"] = "disagree" if mismatch else ("incomplete" if failed else "agree")
    # a program asking for result_accuracy is held to it op by op, whatever the budget says
    if opts.localise == "always" or (opts.localise == "auto" and (not agree or needs_oracle(module))):
        report["ops"], complete = _localise(module, entry, args, runners, opts)
        first = next((o for o in report["ops"] if o["status"] in ("mismatch", "crash")), None)
        report["first_divergence"] = first
        _one_judgement(report, complete and not failed)
    return report


class IsolatedRunner:
    """A backend of :func:`diff_program` whose every call runs in the backend's
    child process of an :class:`~.reduce.IsolatedBackends` (a crash ends the call)."""

    def __init__(self, runners: Any, name: str):
        self.runners = runners
        self.name = name

    def run_function(self, module: Module, func_name: str, args: Sequence[np.ndarray],
                     opts: RunOptions | None = None) -> tuple:
        o = self.runners.outcome(self.name, module.text, list(args), func_name)
        if o["status"] != "ok":
            e = ConformError(o["message"])
            e.status = o["status"]
            raise e
        return tuple(o["values"])


def judge_isolated(text: str, args: Sequence[np.ndarray], runners: Any, entry: str = "main",
                   timeout: float | None = 60.0) -> dict[str, Any]:
    """The report of :func:`diff_program` (one judgement of outputs and ops) for
    a program whose backends run isolated (``runners``: an ``IsolatedBackends``)."""
    module = frontend.load_text(text, "<program>")[0]
    backends = [IsolatedRunner(runners, b) for b in runners.backends]
    return diff_program(module, entry, backends, list(args), diff_options(timeout=timeout))


def judged(judge: Any) -> dict[str, Any] | None:
    """The report ``judge()`` gives (:func:`judge_isolated` on some
    program), or None when there is no judge or it could not judge: judging
    never changes what the outputs showed."""
    if judge is None:
        return None
    try:
        with np.errstate(all="ignore"):  # special values on purpose: the trace meets NaN and infinity
            return judge()
    except Exception:
        return None


def _one_judgement(report: dict[str, Any], complete: bool) -> None:
    """The result from the per-op judgements: an op outside its bound makes the
    backends disagree; outputs that differ while every op (all of them compared)
    is within its bound agree, the difference accumulated over the ops that made it."""
    wrong = [o for o in report["ops"] if o["status"] == "mismatch"]
    if wrong:
        report["status"] = "disagree"
        v = wrong[0].get("verdict")
        report["verdict"] = v["summary"] if v else f"{wrong[0]['op']} at {wrong[0]['loc']}: {wrong[0]['message']}"
        return
    if report["status"] != "disagree" or not complete or any(o["status"] == "crash" for o in report["ops"]):
        return
    differing = [o for o in report["ops"] if o.get("differs")]
    n = len({(o["op"], o["loc"]) for o in differing})
    alone = [o for o in report["ops"] if o["status"] == "skipped" and o["message"] != LANES]
    if not n or alone:  # what no op run alone shows may hide in one that could not run alone
        names = sorted({o["op"] for o in alone})
        report["verdict"] = ("disagree: no op run alone exceeds its bound, " +
                             (f"but {', '.join(names)} could not run alone" if names else
                              "and none differs: the difference comes from running the program as a whole"))
        return
    note = f"accumulated over {n} op{'s' if n != 1 else ''}; no single op exceeds its bound"
    bounds = sorted({f"{o['op']}: {o['judgement']}" for o in differing if o.get("judgement")})
    report["status"] = "agree"
    report["accumulated"] = note
    report["verdict"] = f"agree: {note}" + (f" ({'; '.join(bounds)})" if bounds else "")
    for o in report["outputs"]:
        if o["status"] == "mismatch":
            o.update(status="ok", note=note)


# --------------------------------------------------------------------------- #
# Per-op localisation
# --------------------------------------------------------------------------- #


def _trace(module: Module, entry: str, args: Sequence[np.ndarray], registry, opts) -> list[tuple]:
    eng = Engine(module, registry if registry is not None else load_all())
    events: list[tuple] = []

    def record(op, op_args, op_results):
        if op.name not in SKIP_OPS and not op.name.startswith("check."):
            events.append((op, list(op_args), tuple(op_results)))

    eng.trace = record
    try:
        eng.call(entry, tuple(args))
    except ConformError:
        pass  # ops traced so far are still worth comparing
    return events


_HEAD_RE = re.compile(r'^\s*(?:%[^"=]*=\s*)?"(?P<name>[\w.$-]+)"\(')


def one_op_text(op, generic: str) -> str | None:
    """A module whose ``@main`` takes the op's operands and returns its
    results, built from the op's generic text; None when the op cannot stand
    alone (non-tensor operands or results)."""
    m = _HEAD_RE.match(generic)
    if not m or m.group("name") != op.name:
        return None
    types = list(op.operand_types) + list(op.result_types)
    if not all(isinstance(t, T.TensorType) for t in types):
        return None
    close = generic.index(")", m.end())
    names = [f"%x{i}" for i in range(len(op.operands))]
    n = len(op.results)
    lhs = "" if n == 0 else ("%r = " if n == 1 else f"%r:{n} = ")
    body = f'{lhs}"{op.name}"({", ".join(names)}' + generic[close:]
    params = ", ".join(f"{nm}: {t}" for nm, t in zip(names, op.operand_types))
    rtypes = ", ".join(str(t) for t in op.result_types)
    rets = ["%r"] if n == 1 else [f"%r#{i}" for i in range(n)]
    ret = f"func.return {', '.join(rets)} : {rtypes}" if n else "func.return"
    body = body.replace("\n", "\n    ")
    return f"module {{\n  func.func @main({params}) -> ({rtypes}) {{\n    {body}\n    {ret}\n  }}\n}}\n"


def _shapes_fit(op, op_args) -> bool:
    for a, t in zip(op_args, op.operand_types):
        if not isinstance(t, T.TensorType) or not isinstance(a, np.ndarray):
            return False
        if len(a.shape) != len(t.shape) or any(d is not None and d != s for d, s in zip(t.shape, a.shape)):
            return False
    return True


def localise(module: Module, entry: str, args: Sequence[np.ndarray], runners: list[Labelled],
             opts: RunOptions) -> list[dict[str, Any]]:
    """Run every traced op alone on every backend; one record per op run."""
    return _localise(module, entry, args, runners, opts)[0]


def _localise(module: Module, entry: str, args: Sequence[np.ndarray], runners: list[Labelled],
              opts: RunOptions) -> tuple[list[dict[str, Any]], bool]:
    """:func:`localise`, and whether every traced op run was compared."""
    registry = None
    for r in runners:
        if getattr(r.backend, "name", "") == "numpy" and getattr(r.backend, "registry", None) is not None:
            registry = r.backend.registry
            break
    events = _trace(module, entry, args, registry, opts)
    texts = frontend.op_texts(module.text)
    order = [op for f in module.funcs.values() for op in walk_ops(f.body)]
    index = {id(op): i for i, op in enumerate(order)}
    loaded: dict[str, Module] = {}
    seen: dict[int, int] = {}
    out: list[dict[str, Any]] = []
    complete = True
    containers: list[tuple[Any, dict]] = []
    for op, op_args, _ in events:
        if len(out) >= opts.max_ops:
            complete = False
            break
        k = seen.get(id(op), 0)
        if k >= opts.per_op_limit:
            continue
        seen[id(op)] = k + 1
        rec: dict[str, Any] = {"op": op.name, "loc": str(op.loc), "run": k, "status": "ok",
                               "max_ulp": None, "max_abs": None, "message": ""}
        out.append(rec)
        if not _shapes_fit(op, op_args):
            rec.update(status="skipped", message=LANES)
            continue
        i = index.get(id(op))
        text = one_op_text(op, texts[i]) if i is not None and i < len(texts) else None
        if text is None:
            rec.update(status="skipped", message="op cannot run alone")
            if op.name in CONTAINER_OPS:
                containers.append((op, rec))
            continue
        mod = loaded.get(text)
        if mod is None:
            try:
                mod = loaded[text] = frontend.load_text(text, f"<{op.name}>")[0]
            except ConformError as e:
                rec.update(status="skipped", message=f"op cannot run alone: {str(e).splitlines()[0][:200]}")
                if op.name in CONTAINER_OPS:
                    containers.append((op, rec))
                continue
        got: dict[str, Any] = {}
        for r in runners:
            status, value = _safe_run(r, mod, "main", op_args, opts)
            got[r.label] = (status, value)
        base_status, base_value = got[runners[0].label]
        accuracy = _op_accuracy(module, op, op_args, base_value if base_status == "ok" else None, opts)
        worst: dict[str, Any] | None = None
        for r in runners[1:]:
            status, value = got[r.label]
            if status != "ok" or base_status != "ok":
                bad = r.label if status != "ok" else runners[0].label
                msg = value if status != "ok" else base_value
                rec.update(status=status if status != "ok" else base_status,
                           message=f"{bad}: {str(msg).splitlines()[0][:300]}")
                break
            for j, ttype in enumerate(op.result_types):
                cls, mag = accuracy[j] if accuracy else (None, None)
                c = compare_values(value[j], base_value[j], ttype, cls, mag)
                if worst is None or _worse(c, worst):
                    worst = dict(c, result=j, backend=r.label)
        if worst is not None and rec["status"] == "ok":
            rec.update(status=worst["status"], max_ulp=worst["max_ulp"], max_abs=worst["max_abs"],
                       message=(f"result #{worst['result']} ({worst['backend']} vs {runners[0].label}): "
                                f"{worst['message']}") if worst["status"] != "ok" else "")
            if worst.get("accuracy"):
                rec["accuracy"] = worst["accuracy"]
            rec["differs"] = worst["max_ulp"] not in (None, 0)
        if op.name in CONTAINER_OPS:
            if rec["status"] == "mismatch":
                containers.append((op, rec))
            continue
        cls = accuracy[0][0] if accuracy else None
        # an op whose program states its bound (precision, algorithm, result_accuracy) is judged
        # against the exact result as soon as its backends differ
        stated = cls is not None and (bool(cls.algorithms) or cls.source == "result_accuracy")
        if rec["status"] == "mismatch" or (rec.get("differs") and stated):
            v = rec["verdict"] = judge_op(module, op, op_args, {lb: v for lb, (st, v) in got.items() if st == "ok"},
                                          opts.accuracy_profile)
            judged = [f"{lb} {b['judgement']}" for lb, b in v["backends"].items()
                      if b.get("judgement") and lb != runners[0].label]
            if judged:
                rec["judgement"] = "; ".join(judged)
            if v["verdict"] == BOTH_WITHIN:
                rec["status"] = "ok"
            elif v["verdict"] == BACKEND_WRONG:
                rec["status"] = "mismatch"
                rec["message"] = rec["message"] or f"{', '.join(v['wrong'])} outside the op's bound"
            if rec["status"] == "ok":
                del rec["verdict"]
    _judge_containers(containers, out)
    return out, complete


def _judge_containers(containers: list[tuple[Any, dict]], out: list[dict[str, Any]]) -> None:
    """A loop, conditional or call whose results differ (or that cannot run
    alone) while the ops of its body were compared and differ within their
    bounds: the difference is theirs."""
    for op, rec in containers:
        inner = {(o.name, str(o.loc)) for r in op.regions for o in walk_ops(r)}
        body = [o for o in out if (o["op"], o["loc"]) in inner]
        if body and any(o.get("differs") for o in body) and all(o["status"] in ("ok", "skipped") for o in body):
            rec.update(status="ok", judgement="differences made by the ops of its body, each within its bound")


def _op_accuracy(module: Module, op, op_args, base_value, opts: RunOptions) -> list[tuple] | None:
    """Per result of ``op``: its accuracy class and (for accumulating ops)
    the operands' magnitudes; None when the classes cannot be used."""
    if base_value is None:
        return None
    cls = C.class_of(op, opts.accuracy_profile)
    out = []
    for j in range(len(op.result_types)):
        mag = None
        if cls.kind == C.ACCUMULATE:
            try:
                mag = magnitude(module, op, op_args, np.asarray(base_value[j]), cls, j)
            except Exception:  # no magnitude: the type's default budget applies
                mag = None
        out.append((cls, mag))
    return out


def _worse(a: dict, b: dict) -> bool:
    if (a["status"] != "ok") != (b["status"] != "ok"):
        return a["status"] != "ok"
    ua = float("inf") if a["max_ulp"] == "inf" else (a["max_ulp"] or 0)
    ub = float("inf") if b["max_ulp"] == "inf" else (b["max_ulp"] or 0)
    if ua != ub:
        return ua > ub
    return (a["max_abs"] or 0) > (b["max_abs"] or 0)


def format_report(report: dict[str, Any]) -> list[str]:
    """Human-readable lines of a :func:`diff_program` report."""
    lines = [f"backends: {', '.join(report['backends'])}   entry: @{report['entry']}"]
    for label, run in report["runs"].items():
        if run["status"] != "ok":
            lines.append(f"{label}: {run['status'].upper()}: {run['message']}")
    for o in report["outputs"]:
        if o.get("note"):
            lines.append(f"output {o['index']} {o['type']}: {o['backend']} vs {o['against']}: "
                         f"{_fmt_num(o)}  ok: {o['note']} ({o['message']})")
            continue
        lines.append(f"output {o['index']} {o['type']}: {o['backend']} vs {o['against']}: "
                     f"{_fmt_num(o)}  {o['status'].upper() if o['status'] != 'ok' else 'ok'}"
                     + (f"  {o['message']}" if o["message"] else ""))
    if report["ops"]:
        lines.append("")
        lines.append(f"{'op':<34} {'location':<34} {'max ULP':>8} {'max abs':>10}  status")
        first = report.get("first_divergence")
        for o in report["ops"]:
            mark = "  <- first divergence" if o is first else ""
            ulp = "-" if o["max_ulp"] is None else str(o["max_ulp"])
            ab = "-" if o["max_abs"] is None else f"{o['max_abs']:.3g}"
            status = o["status"] if o["status"] != "mismatch" else "MISMATCH"
            if o.get("judgement") and (o.get("differs") or o["op"] in CONTAINER_OPS):
                status += f" ({o['judgement']})"
            lines.append(f"{o['op']:<34} {_short(o['loc']):<34} {ulp:>8} {ab:>10}  {status}{mark}")
    if report.get("first_divergence"):
        fd = report["first_divergence"]
        lines.append(f"\nfirst diverging op: {fd['op']} at {fd['loc']}: {fd['message']}")
        if fd.get("verdict"):
            lines.append(f"verdict: {fd['verdict']['summary']}")
    elif report.get("verdict"):
        lines.append(f"\nverdict: {report['verdict']}")
    failed = [label for label, run in report["runs"].items() if run["status"] != "ok"]
    if report["status"] == "incomplete":
        lines.append(f"\nresult: {', '.join(failed)} did not run; the other backends agree")
    else:
        lines.append(f"\nresult: backends {report['status']}")
    return lines


def _fmt_num(o: dict) -> str:
    ulp = "-" if o.get("max_ulp") is None else o["max_ulp"]
    ab = "-" if o.get("max_abs") is None else f"{o['max_abs']:.3g}"
    return f"max ULP {ulp}, max abs {ab}"


def _short(loc: str) -> str:
    return loc if len(loc) <= 34 else "…" + loc[-33:]


def entry_of(module: Module, entry: str | None) -> Func:
    if entry and entry in module.funcs:
        return module.funcs[entry]
    if entry and entry != "main":
        raise ConformError(f"no function @{entry} in module (functions: {', '.join(module.funcs)})")
    if "main" in module.funcs:
        return module.funcs["main"]
    public = [f for f in module.funcs.values() if f.visibility != "private"]
    if len(public) == 1:
        return public[0]
    raise ConformError(f"no @main; choose an entry with --entry ({', '.join(module.funcs)})")


# --------------------------------------------------------------------------- #
# Comparing backends on self-checking tests (``conform run --compare``)
# --------------------------------------------------------------------------- #


def test_values(backend: Any, module: Module, func: Func, opts: RunOptions | None) -> list[np.ndarray]:
    """The values a test's checks look at (first operand of each check op of
    the test function's body), as computed by ``backend``."""
    if getattr(backend, "name", "") != "numpy" or not hasattr(backend, "engine"):
        return list(backend.test_values(module, func, opts))
    checks = check_ops(func)
    where = {id(op): i for i, op in enumerate(checks)}
    got: list[Any] = [None] * len(checks)
    eng = backend.engine(module, opts)

    def record(op, op_args, _results):
        i = where.get(id(op))
        if i is not None and got[i] is None and op_args:
            got[i] = op_args[0]

    eng.trace = record
    eng.call(func.name, ())
    return [v for v in got if v is not None]


def compare_test(module: Module, func: Func, names: Sequence[str], opts: RunOptions | None = None
                 ) -> dict[str, Any]:
    """Run a test on every backend of ``names`` (``--compare``) and compare the
    checked values with the first backend that ran: ``compare`` (backend ->
    ``ok`` or its error) and ``disagreements`` (messages). The accuracy
    classes have the last word: backends all within the class of the exact
    values agree (``compare_accuracy``), a backend outside it disagrees
    (``compare_verdict``)."""
    statuses: dict[str, str] = {}
    values: dict[str, list] = {}
    for name in names:
        try:
            values[name] = test_values(get_backend(name), module, func, opts)
            statuses[name] = "ok"
        except ConformError as e:
            statuses[name] = f"{e.status}: {str(e).splitlines()[0][:200]}"
        except Exception as e:
            statuses[name] = f"error: {type(e).__name__}: {e}"[:200]
    ran = [n for n in names if n in values]
    checks = check_ops(func)
    disagreements = [f"{c['backend']} vs {c['against']} at check #{c['index']} "
                     f"({checks[c['index']].loc if c['index'] < len(checks) else '?'}): {c['message']}"
                     for c in against_first({n: values[n] for n in ran}, [op.operand_types[0] for op in checks])
                     if c["status"] != "ok"]
    out: dict[str, Any] = {"compare": statuses, "disagreements": disagreements}
    if len(ran) > 1:
        # the accuracy classes decide: every backend within the class of the
        # exact values agrees; one outside it disagrees whatever the budget says
        try:
            verdict = judge_backends(module, func, opts, {n: values[n] for n in ran})
        except ConformError:
            verdict = None
        if verdict is not None and verdict["verdict"] == BOTH_WITHIN:
            out["disagreements"] = []
            out["compare_accuracy"] = verdict["summary"]
        elif verdict is not None and verdict["verdict"] == BACKEND_WRONG:
            if not disagreements:
                out["disagreements"] = [f"{', '.join(verdict['wrong'])} outside the accuracy class of the exact "
                                        f"values (within the type's ULP budget of {ran[0]})"]
            out["compare_verdict"] = verdict
        elif disagreements and verdict is not None:
            out["compare_verdict"] = verdict
    return out
