"""IREE's test ops (see :mod:`stablehlo_conform.iree_format` for how they are read).

IREE's ``check`` dialect is not StableHLO's, and where the two disagree
IREE's tests are judged by IREE's definitions (its check module's runtime
semantics), not by the StableHLO ones of :mod:`.check`:

- ``expect_eq[_const]``: bitwise equality of the contents (a NaN equals only
  a NaN of the same bit pattern, ``-0.0`` differs from ``+0.0``).
- ``expect_almost_eq[_const]``: per element ``a == e`` or both NaN or
  ``isfinite(e) and |a - e| <= atol + rtol * |e|`` (``atol`` default 1e-4,
  ``rtol`` default 0), computed in f64 from the exact values. StableHLO's
  ``expect_almost_eq`` has one absolute tolerance and also rejects a value
  whose sign differs from the expected one; IREE's accepts it when within
  ``atol``, and relative tolerance exists only here. IREE's verifier allows
  only float tensors; for other element types the comparison is exact
  (complex: per component).
- ``expect_true`` / ``expect_false``: a scalar integer is non-zero / zero.
- ``expect_all_true``: every element of an integer tensor is non-zero.

It also holds the kernels of the module globals of ``ml_program`` (loads and
stores of a global's value within one run) that IREE's tests use.

Each failure names IREE's op, shows the first differing index with both
values and the count of differing elements.
"""

from __future__ import annotations

import numpy as np

from .. import types as T
from ..compare import compare, is_float_dtype, mismatch_at
from .registry import kernel, kernel_of

DEFAULT_ATOL = 1e-4
DEFAULT_RTOL = 0.0


def _label(op, extra: str = "") -> str:
    return f"{op.name.replace('check.iree_', 'check.')} (IREE{extra})"


def _record(op, mismatch, extra: str = "") -> tuple:
    ok = mismatch is None
    op.engine.record_check(ok, "ok" if ok else f"{_label(op, extra)}: {mismatch.describe()}", op.op)
    return ()


def _expected(actual: np.ndarray, expected) -> np.ndarray:
    expected = np.asarray(expected)
    if expected.shape != actual.shape and expected.size == 1:
        expected = np.broadcast_to(expected, actual.shape)
    return expected


def _bitwise(op, actual, expected) -> tuple:
    actual = np.asarray(actual)
    return _record(op, compare(actual, _expected(actual, expected), exact_bits=True))


def almost_equal(actual: np.ndarray, expected: np.ndarray, atol: float, rtol: float) -> np.ndarray:
    """IREE's element-wise ``expect_almost_eq`` predicate on float arrays."""
    a = np.asarray(actual).astype(np.float64)
    e = np.asarray(expected).astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        within = np.isfinite(e) & (np.abs(a - e) <= atol + rtol * np.abs(e))
        return (a == e) | (np.isnan(a) & np.isnan(e)) | within


def _almost(op, actual, expected) -> tuple:
    actual = np.asarray(actual)
    expected = _expected(actual, expected)
    atol = float(op.attr("atol", DEFAULT_ATOL))
    rtol = float(op.attr("rtol", DEFAULT_RTOL))
    extra = f", atol={atol:g}, rtol={rtol:g}"
    if actual.shape != expected.shape or actual.dtype != expected.dtype or not is_float_dtype(actual.dtype):
        return _record(op, compare(actual, expected), extra)
    if actual.dtype.kind == "c":
        ok = almost_equal(actual.real, expected.real, atol, rtol) & almost_equal(
            actual.imag, expected.imag, atol, rtol)
    else:
        ok = almost_equal(actual, expected, atol, rtol)
    return _record(op, mismatch_at(actual, expected, ~ok), extra)


def failing_elements(name: str, attrs, actual: np.ndarray, expected: np.ndarray) -> np.ndarray | None:
    """Element mask of what IREE's check op ``name`` (``check.iree_...``)
    rejects, with the op's ``attrs``; None for other ops or shapes/types
    that differ (the whole check fails)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    if expected.shape != actual.shape and expected.size == 1:
        expected = np.broadcast_to(expected, actual.shape)
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        return None
    short = name.removeprefix("check.iree_").removesuffix("_const")
    if short == "expect_eq":
        return compare_bits_differ(actual, expected)
    if short != "expect_almost_eq":
        return None
    if not is_float_dtype(actual.dtype):
        return actual != expected
    atol = float(attrs.get("atol", DEFAULT_ATOL))
    rtol = float(attrs.get("rtol", DEFAULT_RTOL))
    if actual.dtype.kind == "c":
        return ~(almost_equal(actual.real, expected.real, atol, rtol) & almost_equal(actual.imag, expected.imag,
                                                                                      atol, rtol))
    return ~almost_equal(actual, expected, atol, rtol)


def compare_bits_differ(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Element mask: the bit patterns differ (``expect_eq``'s rule)."""
    if is_float_dtype(actual.dtype):
        return T.to_bits(actual) != T.to_bits(expected)
    return actual != expected


def _register(name: str, check) -> None:
    """``check.iree_<name>`` (two operands) and ``check.iree_<name>_const``
    (one operand and a ``value`` attribute)."""
    kernel_of(lambda op, actual, expected: check(op, actual, expected), f"check.iree_{name}")
    kernel_of(lambda op, actual: check(op, actual, op.attr("value")), f"check.iree_{name}_const")


_register("expect_eq", _bitwise)
_register("expect_almost_eq", _almost)


def _truth(op, value, want: bool) -> tuple:
    v = np.asarray(value)
    got = bool(np.any(v != 0))
    ok = got == want
    what = "a non-zero value" if want else "zero"
    msg = "ok" if ok else f"{_label(op)}: expected {what}, got {v.reshape(-1)[0].item()!r}"
    op.engine.record_check(ok, msg, op.op)
    return ()


kernel("check.iree_expect_true")(lambda op, value: _truth(op, value, True))
kernel("check.iree_expect_false")(lambda op, value: _truth(op, value, False))


@kernel("check.iree_expect_all_true")
def expect_all_true(op, value):
    v = np.asarray(value)
    return _record(op, mismatch_at(v, np.ones_like(v), v == 0), "; expected every element non-zero")


# IREE's ops in generic form (the rewrite in iree_format handles their custom syntax)
@kernel("util.unfoldable_constant", "flow.tensor.dynamic_constant")
def unfoldable_constant(op):
    """A constant (``value`` attribute) in the result's element type."""
    value = np.asarray(op.attr("value"))
    return (np.array(value, dtype=op.result_dtype(0)).reshape(value.shape),)


@kernel("util.optimization_barrier")
def optimization_barrier(op, *operands):
    """The identity on any values (IREE's barrier also takes scalars)."""
    return tuple(operands)


def _global_name(op) -> str:
    g = op.attr("global")
    return getattr(g, "name", str(g).lstrip("@"))


@kernel("ml_program.global_load", "ml_program.global_load_const")
def global_load(op):
    """A module global's value: the last one stored in this run, else the
    initial value (the function of the same name, see iree_format)."""
    store = op.engine.state.setdefault("ml_program.globals", {})
    name = _global_name(op)
    if name not in store:
        store[name] = np.asarray(op.call(name)[0])
    return (store[name],)


@kernel("ml_program.global_store")
def global_store(op, value):
    """Replace a module global's value for the rest of the run."""
    op.engine.state.setdefault("ml_program.globals", {})[_global_name(op)] = np.asarray(value)
    return ()
