"""Kernel fuzzing: random ops, shapes, element types and values, run on the
numpy engine and on XLA CPU (in process), compared element by element.
Single ops under hypothesis (shrinking, a bounded number of examples); whole
programs and campaigns are ``conform fuzz`` (``harness/campaigns/fuzzgen.py``, whose op
and type names this module shares; see tests/test_fuzz_cli.py).

Values stay in ranges where XLA's flushing of subnormals and its
transcendental approximations cannot matter, so any difference is a bug of
one of the two backends. Bounded for CI: a fixed number of examples.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stablehlo_conform import load
from stablehlo_conform.compare import compare
from stablehlo_conform.harness.backends import get_backend
from stablehlo_conform.harness.campaigns import fuzzgen
from stablehlo_conform.harness.suite.cases import Options
from stablehlo_conform.harness.campaigns.fuzzgen import dtype_of
from stablehlo_conform.harness.campaigns.fuzzgen import tensor as _tensor

INT_TYPES = {t: dtype_of(t) for t in ("i8", "i16", "i32", "i64", "ui8", "ui32")}
FLOAT_TYPES = {t: dtype_of(t) for t in ("f32", "f64", "f16")}
BINARY_ANY, BINARY_INT, COMPARISONS = list(fuzzgen.BINARY_ANY), list(fuzzgen.BINARY_INT), list(fuzzgen.COMPARISONS)
UNARY_FLOAT = ["negate", "abs", "floor", "ceil", "round_nearest_even", "round_nearest_afz", "sign",
               "sqrt", "exponential", "tanh", "sine", "cosine"]

fuzz = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _xla():
    pytest.importorskip("jax")
    try:
        return get_backend("xla")
    except Exception as e:  # pragma: no cover
        pytest.skip(f"XLA CPU not available: {e}")


@st.composite
def programs(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=0, max_size=3)))
    kind = draw(st.sampled_from(["int_binary", "float_binary", "float_unary", "compare", "convert"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    if kind == "int_binary":
        et = draw(st.sampled_from(sorted(INT_TYPES)))
        op = draw(st.sampled_from(BINARY_ANY + BINARY_INT))
        dt = np.dtype(INT_TYPES[et])
        info = np.iinfo(dt)
        a = rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)
        b = rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)
        if op.startswith("shift"):
            b = rng.integers(0, dt.itemsize * 8 + 2, shape).astype(dt)
        t = _tensor(shape, et)
        body = f"%0 = stablehlo.{op} %a, %b : {t}"
        return body, [a, b], [t, t], t
    if kind == "compare":
        et = draw(st.sampled_from(sorted(INT_TYPES) + sorted(FLOAT_TYPES)))
        direction = draw(st.sampled_from(COMPARISONS))
        dt = np.dtype(INT_TYPES.get(et) or FLOAT_TYPES[et])
        a = (rng.integers(-3, 4, shape) if dt.kind in "iu" else rng.integers(-3, 4, shape) * 0.5).astype(dt)
        b = (rng.integers(-3, 4, shape) if dt.kind in "iu" else rng.integers(-3, 4, shape) * 0.5).astype(dt)
        if dt.kind == "u":
            a, b = np.abs(a.astype(np.int64)).astype(dt), np.abs(b.astype(np.int64)).astype(dt)
        t = _tensor(shape, et)
        body = f"%0 = stablehlo.compare {direction}, %a, %b : ({t}, {t}) -> {_tensor(shape, 'i1')}"
        return body, [a, b], [t, t], _tensor(shape, "i1")
    if kind == "convert":
        src = draw(st.sampled_from(sorted(FLOAT_TYPES)))
        dst = draw(st.sampled_from(sorted(INT_TYPES) + sorted(FLOAT_TYPES)))
        a = (rng.uniform(-100, 100, shape)).astype(FLOAT_TYPES[src])
        if dst.startswith("ui"):
            a = np.abs(a)
        body = f"%0 = stablehlo.convert %a : ({_tensor(shape, src)}) -> {_tensor(shape, dst)}"
        return body, [a], [_tensor(shape, src)], _tensor(shape, dst)
    et = draw(st.sampled_from(sorted(FLOAT_TYPES)))
    dt = FLOAT_TYPES[et]
    t = _tensor(shape, et)
    if kind == "float_binary":
        op = draw(st.sampled_from(BINARY_ANY + ["divide"]))
        a = rng.uniform(-10, 10, shape).astype(dt)
        b = rng.uniform(0.5, 10, shape).astype(dt) * rng.choice([-1, 1], shape).astype(dt)
        return f"%0 = stablehlo.{op} %a, %b : {t}", [a, b], [t, t], t
    op = draw(st.sampled_from(UNARY_FLOAT))
    a = rng.uniform(0.1 if op == "sqrt" else -4, 4, shape).astype(dt)
    return f"%0 = stablehlo.{op} %a : {t}", [a], [t], t


@fuzz
@given(programs())
def test_numpy_engine_agrees_with_xla(prog):
    body, args, arg_types, result_type = prog
    names = ["%a", "%b"][: len(args)]
    params = ", ".join(f"{n}: {t}" for n, t in zip(names, arg_types))
    text = f"func.func @main({params}) -> {result_type} {{\n  {body}\n  func.return %0 : {result_type}\n}}"
    (mod,) = load(text)
    ours = get_backend("numpy").run_function(mod, "main", args)
    theirs = _xla().run_function(mod, "main", args, Options(isolate=False))
    exact = "float" not in str(ours[0].dtype) or "exponential" not in body and "tanh" not in body and (
        "sine" not in body and "cosine" not in body)
    m = compare(np.asarray(ours[0]), np.asarray(theirs[0]), max_ulp=0 if exact else 4)
    assert m is None, f"{body}\n{m.describe()}"


@fuzz
@given(st.sampled_from(["bf16", "f16", "f8E4M3FN", "f8E5M2", "i4", "ui4", "i8", "i32"]),
       st.integers(0, 2**31 - 1))
def test_convert_round_trip_through_f64_is_exact(et, seed):
    """Every value of a narrow type survives a trip through f64 unchanged."""
    from stablehlo_conform import types as T

    dt = T.element_type(et).dtype
    rng = np.random.default_rng(seed)
    if T.element_type(et).is_float:
        a = T.from_bits(rng.integers(0, 2 ** (8 * dt.itemsize), 16).astype(np.uint64), dt)
        with np.errstate(invalid="ignore"):  # ml_dtypes flags a NaN as an invalid cast
            a = a[np.isfinite(a.astype(np.float64))]
    else:
        lo, hi = (-8, 7) if et == "i4" else (0, 15) if et == "ui4" else (-100, 100)
        a = rng.integers(lo, hi, 16).astype(dt)
    n = a.shape[0]
    t1, t2 = _tensor((n,), et), _tensor((n,), "f64")
    text = f"""func.func @main(%a: {t1}) -> {t1} {{
  %0 = stablehlo.convert %a : ({t1}) -> {t2}
  %1 = stablehlo.convert %0 : ({t2}) -> {t1}
  func.return %1 : {t1}
}}"""
    (mod,) = load(text)
    (out,) = get_backend("numpy").run_function(mod, "main", [a])
    assert compare(out, a, exact_bits=True) is None
