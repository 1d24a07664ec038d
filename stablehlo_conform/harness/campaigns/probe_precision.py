"""What a backend really does for each precision of an f32 dot (``conform probe-precision``).

For every ``precision_config`` level (spec.md "dot_general": DEFAULT, HIGH,
HIGHEST) and for a few ``algorithm`` attributes, crafted one-op programs run
on the backend:

- *products*: an outer product (``Mx1 @ 1xN``) of f32 operands in [1, 2)
  with full significands. The largest relative error of a product against
  the exact one names the most accurate algorithm whose input error covers
  it (:func:`.precision.classify_error`: f32, bf16_6x, tf32_3x, bf16_3x,
  tf32, bf16); products all below the exact ones (with positive operands)
  reveal rounding toward zero instead of to nearest;
- *accumulation*: rows ``[1, 2^-k] . [1, 1]`` for k = 1..30: the largest k
  whose ``2^-k`` survives gives the accumulation's significant bits as the
  result shows them (operands and products are exact in every format);
- *subnormals*: ``2^-70 * 2^-70`` (a subnormal result) and
  ``2^-130 * 2^10`` (a subnormal operand): flushed to zero or kept.

Each level is checked against what the profile declares for it
(:data:`.precision.DEFAULT_LEVELS` without one): a level less accurate than
declared fails. An ``algorithm`` the backend runs must be that algorithm:
a less accurate result is a silent fallback (spec.md: "If a given algorithm
is not supported, an error should be raised as opposed to falling back to
an alternative"), and fails; rejecting it is allowed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ... import frontend
from ...errors import ConformError
from ...oracle import precision as P
from ..records.options import RunOptions

M = N = 64
ACC_ROWS = 30

# algorithms probed through the ``algorithm`` attribute: (name in NAMED, precision type, components, products)
# (as the verifier knows them: one component per operand, the split implied by the products)
ALGORITHMS = (("f32", "f32", 1, 1), ("tf32", "tf32", 1, 1), ("bf16", "bf16", 1, 1), ("bf16_3x", "bf16", 1, 3),
              ("tf32_3x", "tf32", 1, 3), ("bf16_6x", "bf16", 1, 6))


@dataclass
class ProbeRow:
    """What one level (or algorithm) of one backend did."""

    what: str  # DEFAULT | HIGH | HIGHEST | algorithm NAME
    status: str = "ok"  # ok | other (more accurate than an algorithm asked) | EXCEEDS | FALLBACK | rejected | error
    observed: str = ""  # the algorithm the products fit
    max_error: float | None = None  # largest relative product error
    rounding: str = ""  # nearest | toward zero
    accumulation_bits: int | None = None
    subnormals: str = ""  # kept | results flushed | operands flushed | both flushed
    expected: str = ""  # declared (a level) or asked (an algorithm)
    note: str = ""
    messages: list[str] = field(default_factory=list)


def _dot_text(m: int, k: int, n: int, attrs: str) -> str:
    lt, rt, ot = f"tensor<{m}x{k}xf32>", f"tensor<{k}x{n}xf32>", f"tensor<{m}x{n}xf32>"
    return (f"func.func @main(%a: {lt}, %b: {rt}) -> {ot} {{\n"
            f"  %0 = \"stablehlo.dot_general\"(%a, %b) {{dot_dimension_numbers = #stablehlo.dot<"
            f"lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>{attrs}}} : ({lt}, {rt}) -> {ot}\n"
            f"  func.return %0 : {ot}\n}}\n")


def level_attrs(level: str) -> str:
    return f", precision_config = [#stablehlo<precision {level}>, #stablehlo<precision {level}>]"


def algorithm_attrs(ptype: str, components: int, products: int) -> str:
    return (f", algorithm = #stablehlo.dot_algorithm<lhs_precision_type = {ptype}, rhs_precision_type = {ptype}, "
            f"accumulation_type = f32, lhs_component_count = {components}, rhs_component_count = {components}, "
            f"num_primitive_operations = {products}, allow_imprecise_accumulation = false>")


def probe_inputs(seed: int = 0) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The operands of the three probes."""
    rng = np.random.default_rng(seed)
    a = (1 + rng.random((M, 1))).astype(np.float32)
    b = (1 + rng.random((1, N))).astype(np.float32)
    k = np.arange(1, ACC_ROWS + 1, dtype=np.float64)
    acc_l = np.stack([np.ones(ACC_ROWS), np.exp2(-k)], axis=1).astype(np.float32)
    acc_r = np.ones((2, 1), np.float32)
    sub_l = np.array([[2.0 ** -70], [2.0 ** -130]], np.float32)
    sub_r = np.array([[2.0 ** -70, 2.0 ** 10]], np.float32)
    return {"products": (a, b), "accumulation": (acc_l, acc_r), "subnormals": (sub_l, sub_r)}


def analyse(outputs: dict[str, np.ndarray], inputs: dict[str, tuple[np.ndarray, np.ndarray]], row: ProbeRow) -> None:
    """Fill ``row`` from the backend's results of the three probes."""
    a, b = inputs["products"]
    exact = a.astype(np.float64) @ b.astype(np.float64)
    y = np.asarray(outputs["products"], np.float64)
    err = (y - exact) / exact
    row.max_error = float(np.max(np.abs(err)))
    row.observed = P.classify_error(row.max_error)
    inexact = err != 0
    row.rounding = "exact" if not inexact.any() else \
        "toward zero" if bool(np.all(err[inexact] < 0)) and row.max_error > 2.0 ** -24 else "nearest"
    acc = np.asarray(outputs["accumulation"], np.float64).reshape(-1)
    kept = [k for k in range(1, ACC_ROWS + 1) if acc[k - 1] != 1.0]
    row.accumulation_bits = (max(kept) + 1) if kept else 1
    s = np.asarray(outputs["subnormals"], np.float64)
    flushed = (bool(s[0, 0] == 0.0), bool(s[1, 1] == 0.0))  # a subnormal result, a subnormal operand
    row.subnormals = {(False, False): "kept", (True, False): "results flushed",
                      (False, True): "operands flushed", (True, True): "both flushed"}[flushed]


def _run(backend: Any, text: str, args: tuple[np.ndarray, np.ndarray], opts: RunOptions | None) -> np.ndarray:
    module = frontend.load_text(text, "<probe>")[0]
    return np.asarray(backend.run_function(module, "main", list(args), opts)[0])


def _order(name: str) -> int:
    names = [n for n in P.NAMED if n != "f64"]
    return names.index(name) if name in names else -1


def probe(backend: Any, levels: dict[str, str] | None = None, opts: RunOptions | None = None,
          algorithms: bool = True) -> list[ProbeRow]:
    """One :class:`ProbeRow` per level (checked against ``levels``, the declared
    algorithm per level) and, with ``algorithms``, per probed algorithm."""
    declared = dict(P.DEFAULT_LEVELS, **(levels or {}))
    inputs = probe_inputs()
    shapes = {"products": (M, 1, N), "accumulation": (ACC_ROWS, 2, 1), "subnormals": (2, 1, 2)}
    cases = [(lv, level_attrs(lv), declared[lv]) for lv in P.LEVELS]
    if algorithms:
        cases += [(f"algorithm {name}", algorithm_attrs(pt, c, n), name) for name, pt, c, n in ALGORITHMS]
    rows = []
    for what, attrs, expected in cases:
        row = ProbeRow(what, expected=expected)
        rows.append(row)
        try:
            outputs = {p: _run(backend, _dot_text(*shapes[p], attrs), inputs[p], opts) for p in shapes}
        except ConformError as e:
            row.status = "rejected" if what.startswith("algorithm") else "error"
            row.note = str(e).splitlines()[0][:160] if str(e) else type(e).__name__
            continue
        except Exception as e:  # a backend bug: reported, not raised
            row.status = "error"
            row.note = f"{type(e).__name__}: {e}"[:160]
            continue
        analyse(outputs, inputs, row)
        got, want = _order(row.observed), _order(expected)
        if what.startswith("algorithm"):
            if got < want:
                row.status, row.note = "FALLBACK", "less accurate than the algorithm asked: a silent fallback"
            elif got > want:
                row.status = "other"
                row.note = "more accurate than asked, so not the algorithm named; not a failure"
        elif got < want:
            row.status, row.note = "EXCEEDS", f"less accurate than the {expected} declared for {what}"
    return rows


def failed(rows: list[ProbeRow]) -> bool:
    return any(r.status in ("EXCEEDS", "FALLBACK", "error") for r in rows)


def format_rows(backend: str, rows: list[ProbeRow], source: str) -> list[str]:
    head = f"{'precision':<20} {'products':<16} {'max rel err':>11}  {'rounding':<11} {'accum':>6}  " \
           f"{'subnormals':<16} {'expected':<9} status"
    lines = [f"backend: {backend}   f32 operands, declared levels: {source}", head]
    for r in rows:
        err = "-" if r.max_error is None else f"{r.max_error:.3g}"
        acc = "-" if r.accumulation_bits is None else f"{r.accumulation_bits}b"
        lines.append(f"{r.what:<20} {r.observed or '-':<16} {err:>11}  {r.rounding or '-':<11} {acc:>6}  "
                     f"{r.subnormals or '-':<16} {r.expected:<9} {r.status}" + (f"  ({r.note})" if r.note else ""))
    return lines


def to_json(backend: str, rows: list[ProbeRow], declared: dict[str, str]) -> dict[str, Any]:
    return {"backend": backend, "declared": declared, "failed": failed(rows), "rows": [asdict(r) for r in rows]}
