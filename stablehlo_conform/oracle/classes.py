"""Accuracy classes: how far from the exact result an op's result may be.

The spec gives no accuracy guarantees (spec.md "Accuracy"), so comparisons
follow one class per op, chosen here:

- ``exact``: integer, boolean, bitwise, comparison, conversion and
  data-movement ops, and float ops whose exact result is representable
  (``abs``, ``negate``, ``floor``, ``maximum``, ``remainder``, ...), and
  reductions whose body only selects (``max``, ``min``, ``and``, ``or``).
  Equal bits, NaN equal to NaN.
- ``ulp``: element-wise float math, at most N ULP from the correctly rounded
  result. N comes from ``ulp_defaults.json`` (data, regenerated from the
  measured accuracy table) and can be overridden per op and element type by
  an accuracy profile. Complex results are bounded per component or normwise
  (``|err| <= N * eps * |exact|``).
- ``accumulate``: ``dot_general``, ``dot``, ``convolution``,
  ``chlo.ragged_dot``, ``fft``, ``triangular_solve`` and reductions with an
  ``add`` or ``multiply`` body. The standard error analysis of a sum of K
  products in any order bounds the error by ``gamma_K * sum(|a_i b_i|)``
  with ``gamma_K = K u / (1 - K u)``, ``u`` the unit roundoff of the element
  type; the magnitude is computed from the operands (see :mod:`.verdict`),
  plus one rounding of the result. A dot or convolution adds the input
  error of the products its ``precision_config`` or ``algorithm`` allows
  (:mod:`.precision`): ``(input error + gamma_K) * sum(|a_i b_i|)``, and a
  verdict names the most accurate allowed algorithm a result is within.
- ``tolerance``: an op carrying ``result_accuracy = TOLERANCE`` is checked by
  ``|expected - actual| <= max(|expected| * max(rtol, ulps * eps), atol)``;
  ``HIGHEST`` asks for the correctly rounded result (0 ULP), ``DEFAULT`` for
  the op's class.
- ``implementation-defined``: ``rng`` and ``rng_bit_generator``: the spec
  leaves the values to the implementation.

An accuracy profile (TOML or JSON) overrides the ULP bounds::

    [ops."stablehlo.exponential"]
    f32 = 2          # element type as spelled in MLIR
    "*" = 1          # every other type
    [ops."chlo.erf_inv"]
    bf16 = "exact"   # must be correctly rounded and match bit for bit
    [precision]      # what the precision_config levels of f32 dots mean here
    DEFAULT = "tf32"
    HIGH = "bf16_3x"
    HIGHEST = "f32"
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from .. import opinfo as O
from .. import types as T
from ..compare import _float_info, is_float_dtype, ulp_distance
from . import precision as P

EXACT, ULP, ACCUMULATE, IMPLEMENTATION = O.EXACT, O.ULP, O.ACCUMULATE, O.IMPLEMENTATION
TOLERANCE = "tolerance"

# The sets below are live views of the op registry (stablehlo_conform/opinfo.py: ``accuracy``,
# ``reduces``, ``selects``).
EXACT_OPS = O.OPS.where(accuracy=O.EXACT)
"""Data movement, conversion (the spec fixes the rounding), exactly representable float results, bitwise."""

DOT_OPS = O.OPS.where(accuracy=O.DOT)
"""Ops whose products follow ``precision_config`` / ``algorithm`` (spec.md "dot_general")."""

ACCUMULATING_OPS = O.OPS.where(lambda i: i.accuracy in (O.DOT, O.ACCUMULATE))

# reductions: the body decides between exact (selecting) and accumulating
REDUCING_OPS = O.OPS.where(reduces=True)
SELECTING_BODY_OPS = O.OPS.where(selects=True)

IMPLEMENTATION_OPS = O.OPS.where(accuracy=O.IMPLEMENTATION)


@dataclass(frozen=True)
class AccuracyClass:
    """The accuracy an op's result is held to (see the module docstring).

    ``k``: accumulation length and ``reduction`` (``sum``/``product``) of an
    ``accumulate`` class; ``source``: where the bound comes from
    (``default``, ``profile``, ``result_accuracy``, ``chain``). A dot or
    convolution also carries ``precision`` (its level, or ``algorithm``),
    ``algorithms`` (the allowed ones as (name, input error), the most
    accurate first; the bound is the last's) and ``acc_u`` (the unit
    roundoff of the accumulation; 0: the result type's)."""

    kind: str
    ulps: float = 0
    atol: float = 0.0
    rtol: float = 0.0
    k: int = 0
    reduction: str = "sum"
    source: str = "default"
    precision: str = ""
    algorithms: tuple[tuple[str, float], ...] = ()
    acc_u: float = 0.0

    @property
    def input_error(self) -> float:
        return self.algorithms[-1][1] if self.algorithms else 0.0

    def bound_name(self) -> str:
        """``DEFAULT precision (bf16)``, ``HIGHEST (f32)``, ``algorithm tf32 x tf32 -> f32``,
        ``result_accuracy TOLERANCE (atol=0, rtol=0, ulps=2)``, ``result_accuracy HIGHEST
        (correctly rounded)``; ``""`` for a class the program does not ask for."""
        if self.source == "result_accuracy":
            if self.kind == TOLERANCE:
                return f"result_accuracy TOLERANCE (atol={self.atol:g}, rtol={self.rtol:g}, ulps={self.ulps:g})"
            return "result_accuracy HIGHEST (correctly rounded)"
        if not self.algorithms:
            return ""
        loosest = self.algorithms[-1][0]
        if self.precision == "algorithm":
            return f"algorithm {loosest}"
        return f"{self.precision} precision ({loosest})" if self.precision != "HIGHEST" else f"HIGHEST ({loosest})"

    def judgement(self, fit: str | None) -> str:
        """What a result within the bound of algorithm ``fit`` (None: outside every
        allowed one) is: ``within DEFAULT precision (tf32)``, ``exceeds HIGHEST (f32)``,
        ``exceeds every algorithm DEFAULT may use (bf16)``."""
        if not self.algorithms:
            name = self.bound_name() or self.describe()
            return f"within {name}" if fit is not None else f"exceeds {name}"
        if fit is not None:
            if self.precision == "algorithm":
                return f"within algorithm {fit}"
            return f"within {self.precision} precision ({fit})" if self.precision != "HIGHEST" \
                else f"within HIGHEST ({fit})"
        if self.precision == "algorithm" or len(self.algorithms) == 1:
            return f"exceeds {self.bound_name()}"
        return f"exceeds every algorithm {self.precision} may use ({self.algorithms[-1][0]})"

    def describe(self) -> str:
        if self.kind == ULP:
            return f"ulp<={self.ulps:g}" + (f" ({self.source})" if self.source != "default" else "")
        if self.kind == ACCUMULATE and self.algorithms:
            return f"{self.bound_name()}, K={self.k}"
        if self.kind == ACCUMULATE:
            return f"accumulate K={self.k} ({self.reduction})"
        if self.kind == TOLERANCE:
            return f"result_accuracy atol={self.atol:g} rtol={self.rtol:g} ulps={self.ulps:g}"
        return self.kind

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind, "source": self.source}
        if self.kind in (ULP, TOLERANCE):
            d["ulps"] = self.ulps
        if self.kind == TOLERANCE:
            d.update(atol=self.atol, rtol=self.rtol)
        if self.kind == ACCUMULATE:
            d.update(k=self.k, reduction=self.reduction)
        if self.algorithms:
            d.update(precision=self.precision, allowed=[n for n, _e in self.algorithms],
                     input_error=self.input_error, bound=self.bound_name())
        elif self.source == "result_accuracy":
            d["bound"] = self.bound_name()
        return d


# --------------------------------------------------------------------------- #
# ULP tables: defaults and vendor profiles
# --------------------------------------------------------------------------- #


DEFAULTS_FILE = Path(__file__).with_name("ulp_defaults.json")


@lru_cache(maxsize=1)
def default_ulps() -> dict[str, dict[str, Any]]:
    """op -> {element type or ``*``: ULP bound} from ``ulp_defaults.json``."""
    return json.loads(DEFAULTS_FILE.read_text())["ops"]


class ProfileError(ValueError):
    """An accuracy profile that cannot be used (a usage error)."""


@dataclass
class Profile:
    """Per-op, per-element-type overrides of the ULP bounds, and what the
    ``precision_config`` levels of f32 dots mean (``precision``: level ->
    a name of :data:`.precision.NAMED`)."""

    ops: dict[str, dict[str, Any]] = field(default_factory=dict)
    source: str = ""
    precision: dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path) -> "Profile":
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as e:
            raise ProfileError(f"cannot read accuracy profile {path}: {e}") from None
        try:
            doc = json.loads(text) if p.suffix == ".json" or text.lstrip().startswith("{") else tomllib.loads(text)
        except (json.JSONDecodeError, tomllib.TOMLDecodeError) as e:
            raise ProfileError(f"{path}: not a valid accuracy profile: {e}") from None
        return cls.from_dict(doc, str(p))

    @classmethod
    def from_dict(cls, doc: Any, source: str = "<profile>") -> "Profile":
        if not isinstance(doc, dict) or not isinstance(doc.get("ops", {}), dict):
            raise ProfileError(f"{source}: an accuracy profile has an 'ops' table: op -> {{type: ulps}}")
        ops: dict[str, dict[str, Any]] = {}
        for op, v in doc.get("ops", {}).items():
            if not isinstance(v, dict):
                v = {"*": v}
            for ty, bound in v.items():
                if bound != EXACT and (isinstance(bound, bool) or not isinstance(bound, (int, float)) or bound < 0):
                    raise ProfileError(f"{source}: {op} {ty}: a bound is a ULP count >= 0 or \"exact\", "
                                       f"not {bound!r}")
            ops[str(op)] = {str(k): b for k, b in v.items()}
        try:
            levels = P.check_levels(doc["precision"], source) if "precision" in doc else {}
        except P.PrecisionError as e:
            raise ProfileError(str(e)) from None
        return cls(ops, source, levels)

    def lookup(self, op: str, element: str) -> Any:
        table = self.ops.get(op)
        if table is None:
            return None
        return table.get(element, table.get("*"))


def measured_bound(cell: dict) -> int | None:
    """The ULP bound (distance from the correctly rounded result, as :func:`within` counts it) that
    covers every result of one measured cell of ``conform accuracy`` (a cell as JSON): 0 when every
    result was correctly rounded, else the largest distance recorded (``max_steps``), else, for
    cells written before that was recorded, ``floor(max_ulp + 0.5)`` (the error is measured from
    the exact value, the correctly rounded result is within 0.5 of it). None for a cell that did
    not run or has a non-finite error (a NaN or infinity where the value is finite): no bound."""
    m = cell.get("max_ulp")
    if cell.get("status") != "ok" or not isinstance(m, (int, float)) or m != m or m == float("inf"):
        return None
    if cell.get("n") is not None and cell.get("correctly_rounded") == cell.get("n"):
        return 0
    steps = cell.get("max_steps")
    if isinstance(steps, int) and not isinstance(steps, bool):
        return steps
    return int(np.floor(float(m) + 0.5))


def profile_from_table(doc: dict, backend: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """An accuracy profile (``{"ops": {op: {type: ULP}}}``) from the JSON of
    ``conform accuracy --json``: per measured cell of ``backend`` (default:
    the table's only backend) the smallest ULP distance from the correctly
    rounded result that covers its max error (:func:`measured_bound`).
    Returns the profile and the cells left out (not run, or
    a non-finite error: no bound)."""
    cells = doc.get("cells", []) if isinstance(doc, dict) else []
    names = sorted({c.get("backend") for c in cells})
    if backend is None:
        if len(names) != 1:
            raise ProfileError(f"the table measures {', '.join(map(str, names)) or 'no backend'}: name one")
        backend = names[0]
    ops: dict[str, dict[str, Any]] = {}
    left_out: list[str] = []
    for c in cells:
        if c.get("backend") != backend:
            continue
        bound = measured_bound(c)
        if bound is None:
            left_out.append(f"{c.get('op')} {c.get('type')}: {c.get('status')} "
                            f"{c.get('message') or c.get('max_ulp')}".strip())
            continue
        ops.setdefault(str(c["op"]), {})[str(c["type"])] = bound
    if not ops and not left_out:
        raise ProfileError(f"no cell of backend {backend!r} in the table")
    return {"about": f"ULP bounds of backend {backend} measured by: {doc.get('meta', {}).get('command', '')}",
            "ops": ops}, left_out


def accuracy_profile_option(path: str, usage_error: type[Exception]) -> Profile:
    """The profile of ``--accuracy-profile PATH``, parsed (its ``source`` the
    absolute path); a ``usage_error`` when it cannot be used."""
    try:
        return Profile.load(Path(path).resolve())
    except ProfileError as e:
        raise usage_error(str(e)) from None


def ulp_bound(op: str, element: str, profile: Profile | None = None) -> tuple[Any, str]:
    """(bound, source): the profile's entry, else the default table's."""
    if profile is not None:
        b = profile.lookup(op, element)
        if b is not None:
            return b, "profile"
    table = default_ulps()
    row = table.get(op) or None
    if row is None:
        info = O.OPS.info(op)
        if info is not None and info.ulps is not None:
            return info.ulps, "default"
        row = table["*"]
    return row.get(element, row.get("*", table["*"]["*"])), "default"


# --------------------------------------------------------------------------- #
# The class of an op
# --------------------------------------------------------------------------- #


def _element(op) -> str:
    for t in tuple(op.result_types) + tuple(op.operand_types):
        if isinstance(t, T.TensorType):
            return str(t.element)
    return ""


def _is_float_result(op) -> bool:
    for t in op.result_types:
        if isinstance(t, T.TensorType) and (t.element.is_float or t.element.is_complex):
            return True
    return False


def _body_ops(op) -> list[str]:
    if not op.regions or not op.regions[0].blocks:
        return []
    return [o.name for o in op.regions[0].blocks[0].ops]


def accumulation_length(op) -> int:
    """K: the number of terms each result element sums (or multiplies)."""
    name = op.name
    shape = [tuple(t.shape) if isinstance(t, T.TensorType) else () for t in op.operand_types]
    if name == "chlo.ragged_dot":
        contracting = list(P.ragged_contracting(op))
        return int(np.prod([shape[0][d] for d in contracting])) if contracting else 1
    if name in ("stablehlo.dot_general", "stablehlo.dot"):
        dims = op.attrs.get("dot_dimension_numbers")
        contracting = list(getattr(dims, "lhs_contracting_dimensions", ()) or ()) if dims is not None else []
        if name == "stablehlo.dot" or dims is None:
            contracting = [len(shape[0]) - 1] if shape[0] else []
        return int(np.prod([shape[0][d] for d in contracting])) if contracting else 1
    if name in ("stablehlo.convolution", "stablehlo.dynamic_conv"):
        dims = op.attrs.get("dimension_numbers")
        out_dim = getattr(dims, "kernel_output_feature_dimension", None) if dims is not None else None
        rhs = shape[1]
        if out_dim is None or not rhs:
            return int(np.prod(rhs)) if rhs else 1
        return max(1, int(np.prod(rhs)) // max(1, rhs[int(out_dim)]))
    if name == "stablehlo.reduce":
        dims = [int(d) for d in np.asarray(op.attrs.get("dimensions", ())).reshape(-1)]
        return 1 + int(np.prod([shape[0][d] for d in dims])) if dims else 1
    if name == "stablehlo.reduce_window":
        window = np.asarray(op.attrs.get("window_dimensions", ())).reshape(-1)
        return 1 + int(np.prod(window)) if window.size else 1
    if name == "stablehlo.fft":
        return int(np.prod(np.asarray(op.attrs.get("fft_length", (1,))).reshape(-1)))
    if name == "stablehlo.triangular_solve":
        return int(shape[0][-1]) if shape and shape[0] else 1
    return 1


def result_accuracy_class(op) -> AccuracyClass | None:
    """The class an op's ``result_accuracy`` attribute asks for, if any."""
    ra = op.attrs.get("result_accuracy")
    if ra is None:
        return None
    get = ra.get if hasattr(ra, "get") else (lambda k, d=None: d)
    mode = str(get("mode", "DEFAULT")).upper()
    if mode == "TOLERANCE":
        return AccuracyClass(TOLERANCE, ulps=float(get("ulps", 0) or 0), atol=float(get("atol", 0.0) or 0.0),
                             rtol=float(get("rtol", 0.0) or 0.0), source="result_accuracy")
    if mode == "HIGHEST":
        return AccuracyClass(ULP, 0, source="result_accuracy")
    return None


def class_of(op, profile: Profile | None = None) -> AccuracyClass:
    """The accuracy class of ``op`` (a :class:`~stablehlo_conform.program.Op`)."""
    name = op.name
    ra = result_accuracy_class(op)
    if ra is not None:
        return ra
    element = _element(op)
    if name in IMPLEMENTATION_OPS:
        return AccuracyClass(IMPLEMENTATION)
    if profile is not None and profile.lookup(name, element) is not None:
        b = profile.lookup(name, element)
        return AccuracyClass(EXACT, source="profile") if b == EXACT else AccuracyClass(ULP, b, source="profile")
    if name in EXACT_OPS or not _is_float_result(op):
        return AccuracyClass(EXACT)
    if name in REDUCING_OPS:
        body = _body_ops(op)
        if all(b in SELECTING_BODY_OPS for b in body):
            return AccuracyClass(EXACT)
        if name not in ACCUMULATING_OPS:  # scatter, collectives: no per-element term count here
            b, src = ulp_bound(name, element, profile)
            return AccuracyClass(ULP, b, source=src)
        reduction = "product" if "stablehlo.multiply" in body else "sum"
        return AccuracyClass(ACCUMULATE, k=accumulation_length(op), reduction=reduction)
    if name in DOT_OPS:
        level, algorithms, acc_u = P.dot_precision(op, profile.precision if profile is not None else None)
        src = "profile" if profile is not None and level in profile.precision else "default"
        return AccuracyClass(ACCUMULATE, k=accumulation_length(op), precision=level, algorithms=algorithms,
                             acc_u=acc_u, source=src)
    if name in ACCUMULATING_OPS:
        return AccuracyClass(ACCUMULATE, k=accumulation_length(op))
    b, src = ulp_bound(name, element, profile)
    if b == EXACT:
        return AccuracyClass(EXACT, source=src)
    return AccuracyClass(ULP, b, source=src)


def chain_class(classes: list[AccuracyClass]) -> AccuracyClass:
    """The class of a value computed by several rounding ops in a row: their
    ULP bounds add up (each counted as at least 1 ULP, an accumulating op as
    K ULP, a dot op also its allowed input error in ULP of f32, the type the
    precision levels govern). A heuristic, not a bound: cancellation between
    the ops can make the error of the whole larger in ULP of the result."""
    if len(classes) == 1:
        return classes[0]
    if any(c.kind == IMPLEMENTATION for c in classes):
        return AccuracyClass(IMPLEMENTATION, source="chain")
    total = sum(max(1.0, c.ulps) for c in classes if c.kind in (ULP, TOLERANCE))
    total += sum(max(1, c.k) + c.input_error * 2.0 ** 23 for c in classes if c.kind == ACCUMULATE)
    return AccuracyClass(ULP, total, source="chain")


def with_ulps(cls: AccuracyClass, ulps: float) -> AccuracyClass:
    return replace(cls, ulps=ulps)


# --------------------------------------------------------------------------- #
# Bounds
# --------------------------------------------------------------------------- #


def _part_dtype(dt: np.dtype) -> np.dtype:
    if dt == np.complex64:
        return np.dtype(np.float32)
    if dt == np.complex128:
        return np.dtype(np.float64)
    return dt


def eps_of(dt: np.dtype) -> float:
    return float(_float_info(_part_dtype(np.dtype(dt))).eps)


def unit_roundoff(dt: np.dtype) -> float:
    return eps_of(dt) / 2


def gamma(k: int, u: float) -> float:
    """``gamma_k = k u / (1 - k u)`` (inf when ``k u >= 1``)."""
    ku = k * u
    return ku / (1 - ku) if ku < 1 else float("inf")


def spacing(ref: np.ndarray) -> np.ndarray:
    """One ULP of each (finite) element of ``ref``, in float64."""
    part = _part_dtype(ref.dtype)
    info = _float_info(part)
    with np.errstate(invalid="ignore", over="ignore"):
        mag = np.abs(ref.astype(np.complex128 if ref.dtype.kind == "c" else np.float64))
        mag = np.where(np.isfinite(mag), mag, 0.0)
        e = np.floor(np.log2(np.maximum(mag, float(info.smallest_normal))))
    return np.exp2(e) * float(info.eps)


def accumulation_bound(cls: AccuracyClass, ref: np.ndarray, magnitude: np.ndarray | None,
                       input_error: float | None = None) -> np.ndarray:
    """Absolute error bound (float64 array) of an ``accumulate`` result
    around the exact ``ref`` (already rounded to the result type):
    ``(input error + gamma_K) * magnitude`` (for products ``gamma_{cK} * |ref|``
    with c = 1 for real and 2 sqrt 2 for complex factors) plus one ULP of the
    result. ``input_error``: that of one allowed algorithm (default: the
    loosest the class allows; 0 outside dots)."""
    u = cls.acc_u or unit_roundoff(ref.dtype)
    e_in = cls.input_error if input_error is None else input_error
    wide = ref.astype(np.complex128 if ref.dtype.kind == "c" else np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        if cls.reduction == "product" or magnitude is None:
            k = max(1, cls.k - 1)
            g = gamma(2 * k, u) * np.sqrt(2) if ref.dtype.kind == "c" else gamma(k, u)
            b = g * np.abs(wide)
        else:
            b = (e_in + gamma(max(1, cls.k), u)) * np.abs(np.asarray(magnitude, np.float64))
    return b + spacing(ref)


def _nan_equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
    b = b.astype(np.complex128 if b.dtype.kind == "c" else np.float64)
    with np.errstate(invalid="ignore"):
        if a.dtype.kind == "c":
            return _nan_equal(a.real, b.real) & _nan_equal(a.imag, b.imag)
        return (a == b) | (np.isnan(a) & np.isnan(b))


def result_accuracy_ok(actual: np.ndarray, expected: np.ndarray, atol: float, rtol: float,
                       ulps: float) -> np.ndarray:
    """``|expected - actual| <= max(|expected| * max(rtol, ulps * eps), atol)``
    element-wise (NaN matches NaN, an infinity only itself)."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    eps = eps_of(expected.dtype)
    wide = np.complex128 if expected.dtype.kind == "c" else np.float64
    a = actual.astype(wide)
    e = expected.astype(wide)
    with np.errstate(invalid="ignore", over="ignore"):
        tol = np.maximum(np.abs(e) * max(rtol, ulps * eps), atol)
        close = np.abs(e - a) <= tol
    return close | _nan_equal(actual, expected)


def within(actual: np.ndarray, ref: np.ndarray, cls: AccuracyClass, magnitude: np.ndarray | None = None,
           factor: float = 1.0) -> np.ndarray:
    """Element mask: ``actual`` is within ``cls`` of ``ref``. ``ref`` is the
    exact result rounded to the type (``factor`` 1), or another approximate
    result (``factor`` 2: both sides may be off by the bound)."""
    actual = np.asarray(actual)
    ref = np.asarray(ref)
    if not is_float_dtype(ref.dtype):
        return actual == ref
    if cls.kind in (EXACT, IMPLEMENTATION):
        return _same_bits(actual, ref) | _nan_equal(actual, ref) & ~_zero_sign_differs(actual, ref)
    if cls.kind == TOLERANCE:
        return result_accuracy_ok(actual, ref, cls.atol * factor, cls.rtol * factor, cls.ulps * factor)
    if cls.kind == ACCUMULATE:
        return _within_accumulation(actual, ref, cls, magnitude, factor)
    n = cls.ulps * factor
    ok = ulp_distance(actual, ref) <= np.uint64(int(n))
    if ref.dtype.kind == "c":
        eps = eps_of(ref.dtype)
        with np.errstate(invalid="ignore", over="ignore"):
            norm = np.abs(actual.astype(np.complex128) - ref.astype(np.complex128)) <= \
                max(n, 1.0) * eps * np.abs(ref.astype(np.complex128))
        ok |= norm
    return ok


def _within_accumulation(actual: np.ndarray, ref: np.ndarray, cls: AccuracyClass, magnitude: np.ndarray | None,
                         factor: float, input_error: float | None = None) -> np.ndarray:
    bound = accumulation_bound(cls, ref, magnitude, input_error) * factor
    wide = np.complex128 if ref.dtype.kind == "c" else np.float64
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.abs(actual.astype(wide) - ref.astype(wide)) <= bound
    return close | _nan_equal(actual, ref)


def fit(actual: np.ndarray, ref: np.ndarray, cls: AccuracyClass, magnitude: np.ndarray | None = None,
        factor: float = 1.0) -> str | None:
    """The most accurate algorithm a dot's class allows whose bound holds
    ``actual`` around ``ref`` (None: none does). For other classes: ``""``
    when :func:`within` holds, else None."""
    actual = np.asarray(actual)
    ref = np.asarray(ref)
    if cls.kind != ACCUMULATE or not cls.algorithms or magnitude is None or not is_float_dtype(ref.dtype):
        return "" if bool(np.all(within(actual, ref, cls, magnitude, factor))) else None
    for name, e in cls.algorithms:
        if bool(np.all(_within_accumulation(actual, ref, cls, magnitude, factor, e))):
            return name
    return None


def _same_bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "c":  # per component (no integer type holds a complex128)
        return _same_bits(a.real, b.real) & _same_bits(a.imag, b.imag)
    return T.to_bits(a) == T.to_bits(b)


def _zero_sign_differs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "c":
        return _zero_sign_differs(a.real, b.real) | _zero_sign_differs(a.imag, b.imag)
    a64 = a.astype(np.float64)
    b64 = b.astype(np.float64)
    return (a64 == 0) & (b64 == 0) & (np.signbit(a64) != np.signbit(b64))
