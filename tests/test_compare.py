"""Comparison: ULP distance and the check ops' tolerance rules."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from stablehlo_conform.compare import compare, ulp_distance


def test_ulp_distance_adjacent_and_across_zero():
    one = np.array([1.0], np.float32)
    nxt = np.nextafter(one, np.float32(2))
    assert ulp_distance(one, nxt).tolist() == [1]
    assert ulp_distance(np.array([0.0], np.float32), np.array([-0.0], np.float32)).tolist() == [0]
    b = np.array([1.0, np.nan], ml_dtypes.bfloat16)
    c = np.array([1.0078125, np.nan], ml_dtypes.bfloat16)  # next bf16 after 1.0
    assert ulp_distance(b, c).tolist() == [1, 0]


def test_nan_matches_nan_only():
    a = np.array([np.nan, 1.0])
    assert compare(a, a.copy()) is None
    m = compare(np.array([np.nan]), np.array([1.0]), max_ulp=10**9)
    assert m is not None and m.count == 1


def test_almost_eq_is_absolute_and_sign_aware():
    a = np.array([1.00005, 2.0, 1e-5, np.inf])
    assert compare(a, np.array([1.0, 2.0, 1e-5, np.inf]), atol=1e-4) is None
    m = compare(np.array([5e-5]), np.array([-5e-5]), atol=1e-4)
    assert m is not None  # within 1e-4 but of opposite sign
    assert compare(np.array([-4.37e-8]), np.array([0.0]), atol=1e-4) is None  # zero matches either sign
    m = compare(np.array([2374.0001], np.float32), np.array([2374.0005], np.float32), atol=1e-4)
    assert m is not None and m.index == (0,)


def test_complex_components_are_checked_separately():
    a = np.array([1 + 1j], np.complex64)
    assert compare(a, np.array([1.00005 + 0.99995j], np.complex64), atol=1e-4) is None
    assert compare(a, np.array([1 - 1j], np.complex64), atol=1e-4) is not None


def test_mismatch_reports_first_index_values_and_ulps():
    a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    b = a.copy()
    b[1, 0] = np.nextafter(np.float32(3.0), np.float32(4.0))
    m = compare(a, b, max_ulp=0)
    assert m.index == (1, 0) and m.ulp == 1 and m.count == 1
    assert "first at index [1, 0]" in m.describe() and "(1 ULP)" in m.describe()
