"""The ``check`` dialect of the official tests, as ops and as custom calls.

``check.expect_eq[_const]``: exact (NaN equals NaN); ``expect_almost_eq[_const]``:
absolute tolerance (``tolerance`` attribute, default 1e-4);
``expect_close``: ULP distance within ``[min_ulp_difference,
max_ulp_difference]`` (default max 3, as for the testdata custom calls);
``expect_serialized_eq``: equal to the value an ``interpreter.probe`` recorded.
"""

from __future__ import annotations

import numpy as np

from ..compare import compare, ulp_distance, is_float_dtype
from .registry import kernel

DEFAULT_TOLERANCE = 1e-4
DEFAULT_MAX_ULP = 3


def _report(op, mismatch, what: str = "") -> None:
    ok = mismatch is None
    name = op.name
    if name == "stablehlo.custom_call":
        name += f" @{op.attr('call_target_name')}"
    msg = "ok" if ok else f"{name}{what}: {mismatch.describe()}"
    op.engine.record_check(ok, msg, op.op)


def _expected_like(actual: np.ndarray, expected) -> np.ndarray:
    expected = np.asarray(expected)
    if expected.shape != np.shape(actual):
        expected = np.broadcast_to(expected, np.shape(actual))
    return expected


def _eq(op, actual, expected):
    actual = np.asarray(actual)
    expected = _expected_like(actual, expected)
    _report(op, compare(actual, expected, max_ulp=0))
    return ()


def _almost_eq(op, actual, expected):
    actual = np.asarray(actual)
    expected = _expected_like(actual, expected)
    tol = float(op.attr("tolerance", DEFAULT_TOLERANCE))
    if is_float_dtype(actual.dtype):
        _report(op, compare(actual, expected, max_ulp=0, atol=tol))
    else:
        _report(op, compare(actual, expected, max_ulp=0))
    return ()


@kernel("check.expect_eq_const")
def expect_eq_const(op, actual):
    return _eq(op, actual, op.attr("value"))


@kernel("check.expect_eq")
def expect_eq(op, actual, expected):
    return _eq(op, actual, expected)


@kernel("check.expect_almost_eq_const")
def expect_almost_eq_const(op, actual):
    return _almost_eq(op, actual, op.attr("value"))


@kernel("check.expect_almost_eq")
def expect_almost_eq(op, actual, expected):
    return _almost_eq(op, actual, expected)


def _close(op, actual, expected, max_ulp: int, min_ulp: int = 0):
    actual = np.asarray(actual)
    expected = _expected_like(actual, expected)
    if not is_float_dtype(actual.dtype):
        _report(op, compare(actual, expected))
        return ()
    m = compare(actual, expected, max_ulp=max_ulp)
    if m is None and min_ulp > 0:
        d = ulp_distance(actual, expected)
        if int(d.max(initial=0)) < min_ulp:
            op.engine.record_check(False, f"{op.name}: ULP distance below min_ulp_difference={min_ulp}", op.op)
            return ()
    _report(op, m, f" (max_ulp_difference={max_ulp})")
    return ()


@kernel("check.expect_close")
def expect_close(op, actual, expected):
    return _close(op, actual, expected, int(op.attr("max_ulp_difference", DEFAULT_MAX_ULP)),
                  int(op.attr("min_ulp_difference", 0)))


@kernel("check.expect_serialized_eq")
def expect_serialized_eq(op, actual):
    probe_id = op.attr("probe_id")
    it = int(op.attr("iter", 0))
    recorded = op.engine.state.get("probes", {}).get(probe_id, [])
    if it >= len(recorded):
        op.engine.record_check(False, f"{op.name}: no value recorded for probe {probe_id!r} iteration {it}", op.op)
        return ()
    return _eq(op, actual, recorded[it])  # the operand is checked against the recorded value


# custom_call spellings used by the testdata programs -------------------------
from .custom_call import custom_target  # noqa: E402


@custom_target("check.expect_close")
def cc_expect_close(op, actual, expected):
    cfg = op.attr("backend_config")
    max_ulp = DEFAULT_MAX_ULP
    if isinstance(cfg, dict):
        max_ulp = int(cfg.get("max_ulp_difference", max_ulp))
    return _close(op, actual, expected, max_ulp)


@custom_target("check.expect_eq")
def cc_expect_eq(op, actual, expected):
    return _eq(op, actual, expected)


@custom_target("check.expect_almost_eq")
def cc_expect_almost_eq(op, actual, expected):
    return _almost_eq(op, actual, expected)


@custom_target("check.eq")
def cc_eq(op, actual, expected):
    actual = np.asarray(actual)
    m = compare(actual, _expected_like(actual, expected), max_ulp=0)
    _report(op, m)
    return (np.array(m is None),)
