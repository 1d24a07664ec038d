"""What ``precision_config`` and ``algorithm`` allow a dot product (spec.md "dot_general").

The spec names three levels, ``DEFAULT`` ("Fastest calculation, but least
accurate approximation to the original number"), ``HIGH`` and ``HIGHEST``
("Slowest calculation, but most accurate approximation"), and leaves their
meaning to the implementation; a ``DotAlgorithm`` "defines the main
properties of the algorithm used to implement the dot operation, which also
defines the precision".

Here every way of computing the products of a dot is an :class:`Algorithm`:
the precision the operands are rounded to (significant bits), how many
components each operand is split into and how many of the component
products are computed, and the accumulation type. Its *input error* is the
relative error of one product ``a_i b_i`` it allows (operands rounded or
truncated, the component products it leaves out), so that a result element
computed by it satisfies::

    |y - exact| <= (input error + gamma_K(u_acc)) * sum_i |a_i b_i|  (+ one rounding of y)

A level allows every named algorithm at least as accurate as the one a
vendor declares for it (``precision`` table of an accuracy profile, e.g.
``{DEFAULT = "tf32", HIGH = "bf16_3x", HIGHEST = "f32"}``); without a
profile :data:`DEFAULT_LEVELS` applies: ``DEFAULT`` admits TF32 and bf16
operands, ``HIGH`` bf16_3x, ``HIGHEST`` the operands' own type. The levels
govern f32 operands (and the parts of complex<f32>); operands of other types
are multiplied at their own precision. An ``algorithm`` attribute allows
exactly that algorithm.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from .. import types as T

LEVELS = ("DEFAULT", "HIGH", "HIGHEST")

# significant bits (implicit bit included) of the precision types a DotAlgorithm may name
SIGNIFICANT_BITS = {
    "f64": 53, "f32": 24, "tf32": 11, "f16": 11, "bf16": 8,
    "f8E5M2": 3, "f8E4M3FN": 4, "f8E4M3": 4, "f8E4M3FNUZ": 4, "f8E4M3B11FNUZ": 4, "f8E5M2FNUZ": 3,
    "f8E3M4": 5, "f6E2M3FN": 4, "f6E3M2FN": 3, "f4E2M1FN": 2,
}


@dataclass(frozen=True)
class Algorithm:
    """One way of computing the products and sums of a dot (spec.md "DotAlgorithm")."""

    name: str
    lhs_bits: int
    rhs_bits: int
    lhs_components: int = 1
    rhs_components: int = 1
    primitive_operations: int = 1
    accumulation_bits: int = 0  # 0: the result type's
    imprecise_accumulation: bool = False

    def input_error(self, lhs_bits: int = 24, rhs_bits: int = 24) -> float:
        """Relative error of one product of operands with ``lhs_bits`` / ``rhs_bits``
        significant bits: each operand rounded to the algorithm's precision of
        ``p`` bits (to nearest or toward zero: ``2^(1-p)``), or split into
        components of it (each the nearest to what the others leave: ``2^-p``
        per component), the component products with the largest index sums
        left out."""
        rl = _residual(lhs_bits, self.lhs_bits, self.lhs_components)
        rr = _residual(rhs_bits, self.rhs_bits, self.rhs_components)
        represented = (1 + rl ** self.lhs_components) * (1 + rr ** self.rhs_components) - 1 \
            if (rl or rr) else 0.0
        pairs = sorted(((i + j, i, j) for i in range(self.lhs_components) for j in range(self.rhs_components)))
        dropped = 0.0
        for _s, i, j in pairs[self.primitive_operations:]:
            dropped += (rl ** i if rl else float(i == 0)) * (rr ** j if rr else float(j == 0)) * (1 + rl) * (1 + rr)
        return represented + dropped

    def accumulation_u(self, result_u: float) -> float:
        """Unit roundoff of the accumulation (an imprecise accumulation: at most
        that of the operands' precision type)."""
        u = 2.0 ** -self.accumulation_bits if self.accumulation_bits else result_u
        if self.imprecise_accumulation:
            u = max(u, 2.0 ** -min(self.lhs_bits, self.rhs_bits))
        return u


def _residual(operand_bits: int, precision_bits: int, components: int) -> float:
    """Relative error of one component (0 when the operand type fits the precision)."""
    if operand_bits <= precision_bits:
        return 0.0
    return 2.0 ** (1 - precision_bits) if components == 1 else 2.0 ** -precision_bits


# named algorithms, from the least to the most accurate
NAMED: dict[str, Algorithm] = {a.name: a for a in (
    Algorithm("bf16", 8, 8),
    Algorithm("tf32", 11, 11),
    Algorithm("bf16_3x", 8, 8, 2, 2, 3),
    Algorithm("tf32_3x", 11, 11, 2, 2, 3),
    Algorithm("bf16_6x", 8, 8, 3, 3, 6),
    Algorithm("f32", 24, 24),
    Algorithm("f64", 53, 53),
)}

DEFAULT_LEVELS = {"DEFAULT": "bf16", "HIGH": "bf16_3x", "HIGHEST": "f32"}
"""What each level allows without a profile: DEFAULT admits TF32 and bf16 operands."""


class PrecisionError(ValueError):
    """A ``precision`` table that cannot be used (a usage error)."""


def check_levels(table: Any, source: str) -> dict[str, str]:
    """Validate a profile's ``precision`` table: level -> a name of :data:`NAMED`."""
    if not isinstance(table, dict):
        raise PrecisionError(f"{source}: 'precision' is a table: level -> algorithm ({', '.join(NAMED)})")
    out: dict[str, str] = {}
    for level, name in table.items():
        if str(level).upper() not in LEVELS:
            raise PrecisionError(f"{source}: precision level {level!r} is not one of {', '.join(LEVELS)}")
        if str(name) not in NAMED:
            raise PrecisionError(f"{source}: precision {level} = {name!r}: not one of {', '.join(NAMED)}")
        out[str(level).upper()] = str(name)
    return out


def _bits_of(element: Any) -> int:
    name = str(element)
    if name.startswith("complex<"):
        name = name[len("complex<"):-1]
    return SIGNIFICANT_BITS.get(name, 53 if name == "f64" else 24)


def from_attribute(alg: Any) -> Algorithm | None:
    """The :class:`Algorithm` of a ``#stablehlo.dot_algorithm`` attribute
    (None for an empty one, which defers to ``precision_config``)."""
    get = alg.get if hasattr(alg, "get") else None
    if get is None:
        return None
    lhs, rhs = get("lhs_precision_type"), get("rhs_precision_type")
    if lhs is None or rhs is None:
        return None
    acc = get("accumulation_type")
    lc = int(get("lhs_component_count", 1) or 1)
    rc = int(get("rhs_component_count", 1) or 1)
    n = int(get("num_primitive_operations", 1) or 1)
    imprecise = bool(get("allow_imprecise_accumulation", False))
    if lc == rc == 1 and n > 1:  # one component named, the split implied: n products of ceil(sqrt(n)) parts
        lc = rc = math.isqrt(n - 1) + 1
    name = f"{lhs} x {rhs} -> {acc}" + (f" ({lc}x{rc} components, {n} products)" if n > 1 or lc > 1 or rc > 1
                                        else "") + (", imprecise accumulation" if imprecise else "")
    return Algorithm(name, _bits_of(lhs), _bits_of(rhs), lc, rc, n, _bits_of(acc) if acc is not None else 0,
                     imprecise)


@lru_cache(maxsize=64)
def allowed(level: str, declared: str, lhs_bits: int, rhs_bits: int) -> tuple[tuple[str, float], ...]:
    """(name, input error) of every named algorithm a level declared as
    ``declared`` allows for operands of these widths, the most accurate first
    (algorithms of equal error collapse to the first name)."""
    limit = NAMED[declared].input_error(lhs_bits, rhs_bits)
    out: dict[float, str] = {}
    for name, alg in NAMED.items():
        e = alg.input_error(lhs_bits, rhs_bits)
        if e <= limit and e not in out:
            out[e] = name
    return tuple(sorted(((n, e) for e, n in out.items()), key=lambda t: t[1]))


def level_of(op: Any) -> str:
    """The op's ``precision_config`` level (the less accurate of the two operands')."""
    pc = op.attrs.get("precision_config")
    if pc is None:
        return "DEFAULT"
    names = [str(p).upper() for p in (pc if isinstance(pc, (list, tuple)) else (pc,))]
    names = [n.rsplit(" ", 1)[-1].strip(">") for n in names]
    known = [n for n in names if n in LEVELS]
    return min(known, key=LEVELS.index) if known else "DEFAULT"


def ragged_contracting(op: Any) -> tuple[int, ...]:
    """``lhs_contracting_dimensions`` of a ``chlo.ragged_dot`` (a record, or its text)."""
    dn = op.attrs.get("ragged_dot_dimension_numbers")
    if hasattr(dn, "get") and not isinstance(dn, str):
        return tuple(int(v) for v in (dn.get("lhs_contracting_dimensions", ()) or ()))
    m = re.search(r"lhs_contracting_dimensions\s*=\s*\[([^\]]*)\]", str(dn))
    return tuple(int(v) for v in m.group(1).replace(" ", "").split(",") if v) if m else ()


def _element_name(op: Any) -> str:
    t = op.operand_types[0] if op.operand_types else None
    return str(getattr(t, "element", "operand type"))


def operand_bits(op: Any) -> tuple[int, int]:
    bits = []
    for t in op.operand_types[:2]:
        bits.append(_bits_of(t.element) if isinstance(t, T.TensorType) else 24)
    while len(bits) < 2:
        bits.append(24)
    return bits[0], bits[1]


def dot_precision(op: Any, levels: dict[str, str] | None = None) -> tuple[str, tuple[tuple[str, float], ...], float]:
    """(what the op asks for, the allowed algorithms as (name, input error)
    with the most accurate first, the accumulation unit roundoff or 0 for
    the result type's) of a dot or convolution."""
    lb, rb = operand_bits(op)
    alg = from_attribute(op.attrs.get("algorithm"))
    if alg is not None:
        u = alg.accumulation_u(0.0)
        return "algorithm", ((alg.name, alg.input_error(lb, rb)),), u
    level = level_of(op)
    if lb != 24 or rb != 24:  # the levels govern f32 operands
        return level, ((_element_name(op), 0.0),), 0.0
    declared = (levels or {}).get(level) or DEFAULT_LEVELS[level]
    return level, allowed(level, declared, lb, rb), 0.0


def classify_error(err: float) -> str:
    """The most accurate named algorithm whose input error (f32 operands)
    covers an observed relative product error ``err``; ``worse than bf16``
    beyond them all."""
    for name, alg in reversed(NAMED.items()):
        if name == "f64":
            continue
        if err <= alg.input_error() + 2.0 ** -24:  # the product's own rounding to f32
            return name
    return "worse than bf16"


def tf32_round(x: np.ndarray, truncate: bool = False) -> np.ndarray:
    """f32 values rounded (to nearest even, or toward zero) to TF32's 11 significant bits."""
    return round_bits(x, 11, truncate)


def round_bits(x: np.ndarray, bits: int, truncate: bool = False) -> np.ndarray:
    """f32 values rounded to ``bits`` significant bits (nearest even or toward
    zero), keeping f32's exponent range."""
    a = np.ascontiguousarray(np.asarray(x, np.float32))
    u = a.view(np.uint32).astype(np.uint64)
    drop = 24 - bits
    if drop <= 0:
        return a.copy()
    mask = np.uint64((1 << drop) - 1)
    if not truncate:
        half = np.uint64(1 << (drop - 1))
        lsb = (u >> np.uint64(drop)) & np.uint64(1)
        u = u + half - np.uint64(1) + lsb
    u = u & ~mask & np.uint64(0xFFFFFFFF)
    out = u.astype(np.uint32).view(np.float32).reshape(a.shape)
    finite = np.isfinite(a)
    return np.where(finite, out, a)
