"""Fast paths against the general ones, bit for bit.

- ``reduce_window`` running folds (what ``jnp.cumsum``/``cumprod``/``cummax``/
  ``cummin`` lower to on CPU) by a prefix scan, against the window fold and
  against the general path that runs the body region on lanes; and the
  official cumulative tests, whose windows take the prefix scan.
- the rounding-midpoint test on f64 bit patterns against the one by scaling;
  element-wise float ops by blocks against the whole operand.
- f16/f32/f64 ``maximum``/``minimum`` by NumPy's ufuncs (zeros ordered by a
  sign-bit test) against the general choice, also inside reduce and
  reduce_window; ``compare``, ``abs`` and float -> integer ``convert``
  without widening.
"""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest

from stablehlo_conform import frontend
from stablehlo_conform.engine import Engine
from stablehlo_conform import numeric as _numeric
from stablehlo_conform.kernels import elementwise, linalg, reduction

from kernel_util import SUITE, assert_suite_file_passes, one
from test_engine import _assert_generated_matches_stepwise
from test_reduction import general_only, reduce_text, window_text


def _prefix_attrs(shape, axis, reverse=False):
    wd = [n if d == axis else 1 for d, n in enumerate(shape)]
    pad = [((0, n - 1) if reverse else (n - 1, 0)) if d == axis else (0, 0) for d, n in enumerate(shape)]
    return (f"window_dimensions = array<i64: {', '.join(map(str, wd))}>, "
            f"padding = dense<{[list(p) for p in pad]}> : tensor<{len(shape)}x2xi64>")


def _data(dtype, shape, rng):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, int(info.max) + 1, shape, dtype=np.int64).astype(dtype)
    x = rng.standard_normal(shape) * 3
    if dtype.kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    x = x.astype(dtype)
    flat = x.reshape(-1)
    flat[:: 7] = np.nan  # special values: NaN, signed zeros, infinities
    flat[3:: 11] = -0.0
    flat[5:: 13] = np.inf
    flat[6:: 17] = -np.inf
    return x


EL = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": ml_dtypes.bfloat16,
      "i8": np.int8, "i32": np.int32, "ui16": np.uint16, "i64": np.int64, "complex<f32>": np.complex64,
      "i1": np.bool_}
INIT = {"add": "0", "mul": "1", "max": "3", "min": "1"}


def _cases():
    for el in EL:
        kinds = ["add", "mul", "max", "min"]
        if el == "i1":
            kinds = ["add", "mul"]
        if el.startswith("complex"):
            kinds = ["add", "mul"]
        for kind in kinds:
            yield el, kind


@pytest.mark.parametrize("el,kind", list(_cases()))
@pytest.mark.parametrize("shape,axis", [((5, 37), 1), ((37, 3), 0), ((64,), 0)])
def test_prefix_scan_matches_window_fold_and_general_path(el, kind, shape, axis, monkeypatch):
    rng = np.random.default_rng(len(el) * 31 + len(kind) + axis)
    x = _data(EL[el], shape, rng)
    init = INIT[kind]
    if el == "i1":
        init = "false" if kind == "add" else "true"
    elif el.startswith("complex"):
        init = f"({init}.0, 0.0)"
    elif el[0] in "fb":
        init = init + ".0"
    text = window_text(shape, el, shape, kind, init, _prefix_attrs(shape, axis))
    (mod,) = frontend.load_text(text)
    rw = next(o for o in mod.funcs["main"].body.blocks[0].ops if o.name == "stablehlo.reduce_window")
    wd, ws, bd, wdl, pad = reduction._window_attrs(_Attrs(rw), len(shape))
    assert reduction.prefix_axis(shape, wd, ws, bd, wdl, pad) == axis
    scan = one(text, x)
    with monkeypatch.context() as m:
        m.setattr(reduction, "prefix_axis", lambda *a: None)
        fold = one(text, x)
    with monkeypatch.context() as m:
        general_only(m)
        general = one(text, x)
    assert scan.dtype == fold.dtype == general.dtype == x.dtype
    assert _bits(scan) == _bits(fold) == _bits(general)


def _bits(x: np.ndarray) -> bytes:
    """The bytes of ``x`` with every NaN made the same NaN: which input NaN a
    sum of two NaNs keeps (its sign and payload) is left open by IEEE 754 and
    differs between NumPy's loops."""
    x = np.array(x)
    if x.dtype.kind == "c":
        re, im = x.real.copy(), x.imag.copy()
        re[np.isnan(re)] = np.nan
        im[np.isnan(im)] = np.nan
        return re.tobytes() + im.tobytes()
    if x.dtype.kind == "f" or x.dtype == ml_dtypes.bfloat16:
        x[np.isnan(x)] = np.nan
    return x.tobytes()


class _Attrs:
    """The ``attr`` accessor of an op (what the kernel's OpContext offers)."""

    def __init__(self, op):
        self.op = op

    def attr(self, name, default=None):
        return self.op.attrs.get(name, default)


@pytest.mark.parametrize("shape,attrs", [
    ((6,), _prefix_attrs((6,), 0, reverse=True)),  # reverse cumsum: a suffix window, not a prefix
    ((6, 4), "window_dimensions = array<i64: 6, 2>, padding = dense<[[5, 0], [1, 0]]> : tensor<2x2xi64>"),
    ((6,), "window_dimensions = array<i64: 3>, padding = dense<[[2, 0]]> : tensor<1x2xi64>"),
])
def test_windows_that_are_not_prefix_folds_are_not_taken_for_them(shape, attrs):
    (mod,) = frontend.load_text(window_text(shape, "f32", shape, "add", "0.0", attrs))
    rw = next(o for o in mod.funcs["main"].body.blocks[0].ops if o.name == "stablehlo.reduce_window")
    wd, ws, bd, wdl, pad = reduction._window_attrs(_Attrs(rw), len(shape))
    assert reduction.prefix_axis(shape, wd, ws, bd, wdl, pad) is None


def test_prefix_scan_rounds_every_step_in_bf16():
    x = np.array([256, 1, 1, 1, 1, 1], dtype=ml_dtypes.bfloat16)
    out = one(window_text((6,), "bf16", (6,), "add", "0.0", _prefix_attrs((6,), 0)), x)
    assert out.astype(np.float32).tolist() == [256] * 6


def test_prefix_scan_starts_from_the_init_value():
    # (init + x0) for a non-identity init, and +0.0 + -0.0 = +0.0 first
    x = np.array([-0.0, 1.0, 2.0], np.float32)
    out = one(window_text((3,), "f32", (3,), "add", "0.0", _prefix_attrs((3,), 0)), x)
    assert np.signbit(out[0]) == np.False_
    out = one(window_text((3,), "f32", (3,), "add", "10.0", _prefix_attrs((3,), 0)), x)
    assert out.tolist() == [10.0, 11.0, 13.0]


# cumlogsumexp has a body of several ops, complex cumprod no fast path (a
# complex product rounds differently in NumPy's ufunc and in XLA's fold):
# neither is a prefix scan
CUMULATIVE = sorted(p.name for p in (SUITE / "testdata").glob("cum*.mlir")
                    if not p.name.startswith(("cumlogsumexp", "cumprod_complex"))
                    ) if (SUITE / "testdata").is_dir() else []


@pytest.mark.skipif(not CUMULATIVE, reason="../shared/stablehlo-suite is absent")
@pytest.mark.parametrize("name", CUMULATIVE)
def test_official_cumulative_tests_pass_through_the_prefix_scan(name):
    path = SUITE / "testdata" / name
    prefix = 0
    for mod in frontend.load_file(path, split=True):
        for f in mod.funcs.values():
            for o in f.body.blocks[0].ops:
                if o.name == "stablehlo.reduce_window":
                    shape = o.operand_types[0].shape
                    attrs = reduction._window_attrs(_Attrs(o), len(shape))
                    prefix += reduction.prefix_axis(shape, *attrs) is not None
    assert prefix
    assert_suite_file_passes(path)


# ----------------------------------------------------------------------------- integer products


@pytest.mark.parametrize("dt", [np.int8, np.uint8])
@pytest.mark.parametrize("k", [1, 7, 1023])
def test_small_integer_products_in_f32_are_exact(dt, k):
    # extreme values: every product at the bound of the type
    rng = np.random.default_rng(k)
    info = np.iinfo(dt)
    a = rng.choice([info.min, info.max, 0, 1, -1 if info.min else 2], (5, k)).astype(dt)
    b = rng.integers(info.min, int(info.max) + 1, (k, 6)).astype(dt)
    a[0] = info.min
    b[:, 0] = info.min if info.min else info.max
    exact = np.matmul(a.astype(np.int64), b.astype(np.int64))
    got = linalg.dot_general_arrays(a, b, (), (), (1,), (0,), np.int32)
    assert got.dtype == np.int32 and np.array_equal(got, exact.astype(np.int32))
    got64 = linalg.dot_general_arrays(a, b, (), (), (1,), (0,), np.int64)
    assert np.array_equal(got64, exact)


def test_integer_products_past_the_f32_bound_wrap_like_int64():
    a = np.full((2, 1024), -128, np.int8)  # 128 * 128 * 1024 = 2**24: not exact in f32
    b = np.full((1024, 3), -128, np.int8)
    b[0, 0] = 127
    got = linalg.dot_general_arrays(a, b, (), (), (1,), (0,), np.int16)
    exact = np.matmul(a.astype(np.int64), b.astype(np.int64))
    assert np.array_equal(got, exact.astype(np.int16))  # wrapped modulo 2**16


# ----------------------------------------------------------------------------- engine: ops folded on constants


def _traced(mod, fold: bool, entry: str, args=()):
    """Every op's results, with folding on or off."""
    seen = []
    eng = Engine(mod)
    eng.fold_constants = fold
    eng.trace = lambda op, a, results: seen.append((op.name, [_bits(np.asarray(r)) for r in results
                                                               if isinstance(r, np.ndarray)]))
    out = eng.call(entry, args)
    # sorted: the processes of interpreter.run_parallel trace from their own threads
    return sorted(seen), [_bits(np.asarray(o)) for o in out], eng.checks


def _assert_same_with_and_without_folding(mod, entry, args=()):
    folded = _traced(mod, True, entry, args)
    again = _traced(mod, True, entry, args)  # the second run reuses the folded results
    general = _traced(mod, False, entry, args)
    assert folded == again == general


def test_folded_loop_body_matches_the_general_path():
    import jax
    from jax import lax
    import jax.numpy as jnp

    def rnn(h, xs, w):
        return lax.fori_loop(0, xs.shape[0], lambda i, h: jnp.tanh(h @ w + xs[i]), h)

    rng = np.random.default_rng(0)
    args = (rng.standard_normal((1, 8)).astype(np.float32), rng.standard_normal((6, 1, 8)).astype(np.float32),
            (0.3 * rng.standard_normal((8, 8))).astype(np.float32))
    (mod,) = frontend.load_text(jax.jit(rnn).lower(*args).as_text())
    body = [b for f in mod.funcs.values() for o in f.body.blocks[0].ops if o.name == "stablehlo.while"
            for b in (o.regions[1].blocks[0],)]
    eng = Engine(mod)
    steps = eng._steps(body[0])
    # the index arithmetic of xs[i] on constants (compare, select, add) is folded
    assert {s[2] for s in steps if s[-1]} >= {"stablehlo.constant", "stablehlo.compare", "stablehlo.select"}
    _assert_same_with_and_without_folding(mod, "main", args)


INTERPRET = sorted((SUITE / "interpret").glob("*.mlir")) if (SUITE / "interpret").is_dir() else []


@pytest.mark.skipif(not INTERPRET, reason="../shared/stablehlo-suite is absent")
def test_official_interpreter_tests_give_the_same_values_with_and_without_folding():
    folded_ops = 0
    for path in INTERPRET:
        for mod in frontend.load_file(path, split=True):
            for f in mod.tests():
                try:
                    _traced(mod, False, f.name)
                except Exception:  # tests the engine does not run (unsupported) are not compared
                    continue
                _assert_same_with_and_without_folding(mod, f.name)
                folded_ops += sum(s[-1] for s in Engine(mod)._steps(f.body.blocks[0]))
    assert folded_ops > 100


# ----------------------------------------------------------------------------- rounding midpoints


NARROW_FLOATS = [np.float32, np.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2,
                 ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e5m2fnuz, ml_dtypes.float8_e8m0fnu,
                 ml_dtypes.float6_e3m2fn, ml_dtypes.float6_e2m3fn, ml_dtypes.float4_e2m1fn]


def _around_midpoints(dt, rng) -> np.ndarray:
    """f64 values at and up to 9 f64 ULPs around rounding midpoints of ``dt``
    at every f64 exponent (normal and subnormal range of ``dt``, below and
    above it), the halves of the smallest subnormal, zeros, f64 subnormals,
    infinities, NaNs and random bit patterns; every value also negated."""
    p, emin = _numeric.significand_and_emin(np.dtype(dt))
    exps = np.arange(-1074, 1024)
    base = np.ldexp(1.0 + rng.integers(0, 1 << (p - 1), exps.size) / float(1 << (p - 1)), exps)
    ulp = np.ldexp(1.0, np.maximum(exps, emin) - (p - 1))
    centres = [base + ulp / 2, ulp / 2, 1.5 * ulp, np.ldexp(1.0, exps) - ulp / 4]
    steps = np.arange(-9, 10, dtype=np.int64)
    near = [(c.view(np.int64)[:, None] + steps).reshape(-1).view(np.float64) for c in centres]
    special = np.array([0.0, np.inf, np.nan, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308])
    noise = rng.integers(0, 2**63, 20000, dtype=np.int64).view(np.float64)
    v = np.concatenate(near + [special, noise])
    return np.concatenate([v, -v])


@pytest.mark.parametrize("dt", NARROW_FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("ulps", [0, 1, 4, 9])
def test_midpoint_bit_test_matches_the_scaled_one(dt, ulps):
    r = _around_midpoints(dt, np.random.default_rng(ulps))
    fast = _numeric.near_midpoint(r, dt, ulps)
    general = _numeric.near_midpoint_general(r, dt, ulps)
    assert fast.dtype == np.bool_ and fast.shape == r.shape
    assert np.array_equal(fast, general)
    assert fast.sum() > 1000  # the values do reach midpoints
    for shape in [(), (0,), (3, 0, 2)]:  # rank 0 and empty keep their shape
        x = np.full(shape, 1.0 + 2.0**-24)
        assert np.array_equal(_numeric.near_midpoint(x, dt, ulps), _numeric.near_midpoint_general(x, dt, ulps))


def test_midpoints_by_hand():
    near = _numeric.near_midpoint
    f64_ulp = 2.0**-52
    assert near(np.array(1 + 2.0**-24), np.float32)  # halfway between 1 and 1 + 2**-23
    assert near(np.array(1 + 2.0**-24 + 4 * f64_ulp), np.float32, 4)
    assert not near(np.array(1 + 2.0**-24 + 5 * f64_ulp), np.float32, 4)
    assert near(np.array(2.0**128 - 2.0**103), np.float32)  # the overflow threshold
    assert near(np.array(2.0**-150), np.float32)  # half the smallest subnormal
    assert near(np.array(3 * 2.0**-150), np.float32)  # between the two smallest subnormals
    assert not near(np.array(2.0**-149), np.float32)
    assert not near(np.array([np.nan, np.inf, 0.0, -0.0]), np.float32).any()
    assert near(np.array(1 + 2.0**-8), ml_dtypes.bfloat16)


def _adversarial_floats(dt, n, rng):
    """Values of ``dt`` with signed zeros, infinities, quiet and signaling NaNs
    of either sign and several payloads, subnormals, extremes and ordinary
    values, the same values negated and values that differ only in sign."""
    dt = np.dtype(dt)
    ut = np.dtype(f"u{dt.itemsize}")
    info = np.finfo(dt)
    nbits, m = 8 * dt.itemsize, int(info.nmant)
    sign, exp_all = 1 << (nbits - 1), ((1 << (nbits - 1 - m)) - 1) << m
    nans = np.array([exp_all | (1 << (m - 1)), exp_all | (1 << (m - 1)) | 5, exp_all | 1, exp_all | 3],
                    dtype=ut)
    nans = np.concatenate([nans, nans | ut.type(sign)]).view(dt)
    pool = np.concatenate([np.array([0.0, np.inf, 1.0, 0.5, info.max, info.tiny, info.smallest_subnormal,
                                     3 * info.smallest_subnormal, 127.5, 128.0, 255.5], dtype=dt), nans])
    pool = np.concatenate([pool, -pool, (rng.standard_normal(64) * 100).astype(dt)])
    return rng.choice(pool, n)


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_native_maximum_minimum_match_the_general_path(dt, op, monkeypatch):
    rng = np.random.default_rng(7)
    a = _adversarial_floats(dt, 4000, rng)
    b = _adversarial_floats(dt, 4000, rng)
    b[::5] = -a[::5]  # pairs differing only in sign: +0/-0, +NaN/-NaN, x/-x
    fn = getattr(elementwise, op)
    cases = [(a, b), (b, a), (a, np.zeros((), dt)), (-np.zeros((), dt), a), (a[:3], b[:3]),
             (np.asarray(a[0]), np.asarray(b[0])), (a.reshape(40, 100), np.broadcast_to(b[:100], (40, 100)))]
    for x, y in cases:
        fast = fn(np.dtype(dt), x, y)
        with monkeypatch.context() as mp:
            mp.setattr(elementwise, "native_float_pair", lambda *_: False)
            general = fn(np.dtype(dt), x, y)
        assert fast.dtype == general.dtype == np.dtype(dt) and fast.shape == general.shape
        assert np.asarray(fast).tobytes() == np.asarray(general).tobytes()


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
def test_relu_like_maximum_and_minimum_order_zeros_by_hand(dt):
    """A zero of the wrong sign is fixed only where the other operand holds the other zero; a
    ``-0`` maximum of ``-0`` and a negative value (``+0`` minimum of ``+0`` and a positive one)
    stays, and so does NumPy's choice wherever no zero is involved."""
    from stablehlo_conform.numeric import ieee_maximum, ieee_minimum

    dt = np.dtype(dt)
    x = np.array([-0.0, 0.0, -1.0, 2.0, np.nan, -0.0, 0.0], dt)
    pos = np.broadcast_to(np.zeros((), dt), x.shape)
    neg = np.broadcast_to(-np.zeros((), dt), x.shape)
    ut = np.dtype(f"u{dt.itemsize}")

    def bits(v):
        return np.asarray(v, dt).view(ut).tolist()

    assert bits(ieee_maximum(x, pos)) == bits([0.0, 0.0, 0.0, 2.0, np.nan, 0.0, 0.0])
    assert bits(ieee_maximum(x, neg)) == bits([-0.0, 0.0, -0.0, 2.0, np.nan, -0.0, 0.0])
    assert bits(ieee_minimum(x, neg)) == bits([-0.0, -0.0, -1.0, -0.0, np.nan, -0.0, -0.0])
    assert bits(ieee_minimum(x, pos)) == bits([-0.0, 0.0, -1.0, 0.0, np.nan, -0.0, 0.0])
    y = np.array([-1.0, 3.0, -0.0, 0.0], dt)
    assert bits(ieee_maximum(np.array([-0.0, 0.0, -2.0, 5.0], dt), y)) == bits([-0.0, 3.0, -0.0, 5.0])
    assert bits(ieee_minimum(np.array([0.0, 1.0, 0.0, -0.0], dt), y)) == bits([-1.0, 1.0, -0.0, -0.0])
    assert bits(ieee_maximum(np.asarray(dt.type(-0.0)), np.asarray(dt.type(0.0)))) == bits(0.0)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("name,high", [("ieee_maximum_number", True), ("ieee_minimum_number", False)])
def test_maximum_and_minimum_number_order_zeros_and_drop_nan(dt, name, high):
    from stablehlo_conform.kernels import arith

    rng = np.random.default_rng(3)
    a = _adversarial_floats(dt, 3000, rng)
    b = _adversarial_floats(dt, 3000, rng)
    b[::4] = -a[::4]
    got = getattr(arith, name)(a, b)
    # hand-written: NumPy's fmax/fmin, then a +0/-0 pair made +0 (max) or -0 (min)
    want = np.fmax(a, b) if high else np.fmin(a, b)
    pair = (a == 0) & (b == 0) & (np.signbit(a) != np.signbit(b))
    want = np.where(pair, np.zeros((), dt) if high else -np.zeros((), dt), want)
    ut = np.dtype(f"u{np.dtype(dt).itemsize}")
    assert np.array_equal(got.view(ut), want.view(ut))


@pytest.mark.parametrize("kind", ["max", "min"])
@pytest.mark.parametrize("el", ["f32", "f64"])
def test_max_min_folds_with_zeros_of_both_signs_match_the_general_path(kind, el, monkeypatch):
    # rows of zeros of both signs and negative (max) or positive (min) values:
    # the ordering of zeros decides results, and init is a zero too
    rng = np.random.default_rng(11)
    dt = EL[el]
    other = -1.0 if kind == "max" else 1.0
    x = rng.choice(np.array([0.0, -0.0, other, 2 * other], dt), (6, 40))
    x[0] = -0.0
    x[1] = 0.0
    for init in ("0.0", "-0.0"):
        reduce_t = reduce_text((6, 40), el, (1,), kind, init)
        scan_t = window_text((6, 40), el, (6, 40), kind, init, _prefix_attrs((6, 40), 1))
        for text in (reduce_t, scan_t):
            fast = one(text, x)
            with monkeypatch.context() as mp:
                general_only(mp)
                mp.setattr(elementwise, "native_float_pair", lambda *_: False)
                general = one(text, x)
            assert fast.tobytes() == general.tobytes()


@pytest.mark.parametrize("kind", ["max", "min"])
@pytest.mark.parametrize("el", ["f32", "f64"])
def test_pooling_folds_in_place_where_zeros_have_one_sign(kind, el, monkeypatch):
    """A 2x2 max/min pool without padding: where input and init hold zeros of one sign at
    most, the fold runs NumPy's ufunc in place (no zero can come out wrong); where both signs
    meet, the zero-ordering fold. Both give the general path's bits: NaN payloads, infinities
    and signed zeros included."""
    rng = np.random.default_rng(17)
    dt = EL[el]
    ut = np.dtype(f"u{np.dtype(dt).itemsize}")
    attrs = ("window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>, "
             "padding = dense<0> : tensor<4x2xi64>")
    plain: list[bool] = []
    real = reduction._mixed_zeros

    def recording(*xs):
        plain.append(not real(*xs))
        return not plain[-1]

    monkeypatch.setattr(reduction, "_mixed_zeros", recording)
    base = rng.standard_normal((2, 8, 8, 3)).astype(dt)
    nan = np.array([0x7FC00001 if el == "f32" else 0x7FF8000000000005], ut).view(dt)[0]
    base.reshape(-1)[::9] = nan
    base.reshape(-1)[4::23] = np.inf
    cases = []
    for zeros in ([0.0], [-0.0], [0.0, -0.0], []):
        x = base.copy()
        for k, z in enumerate(zeros):
            x.reshape(-1)[k + 1::3] = z  # whole windows of zeros, and zeros beside other values
        cases.append((zeros, x))
    for init in ("0.0", "-0.0", "0xFF800000" if el == "f32" else "0xFFF0000000000000"):
        for zeros, x in cases:
            text = window_text((2, 8, 8, 3), el, (2, 4, 4, 3), kind, init, attrs)
            plain.clear()
            fast = one(text, x)
            took = list(plain)
            with monkeypatch.context() as mp:
                general_only(mp)
                general = one(text, x)
            assert fast.tobytes() == general.tobytes(), (zeros, init)
            signs = {np.signbit(z) for z in zeros} | ({init.startswith("-")} if init in ("0.0", "-0.0") else set())
            assert took == [len(signs) < 2], (zeros, init, took)


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
def test_native_float_compare_matches_the_widened_one(dt, monkeypatch):
    from stablehlo_conform.kernels import comparison

    rng = np.random.default_rng(9)
    a = _adversarial_floats(dt, 3000, rng)
    b = _adversarial_floats(dt, 3000, rng)
    b[::3] = -a[::3]
    b[1::3] = a[1::3]
    for direction in comparison.DIRECTIONS:
        for x, y in ((a, b), (a, np.zeros((), dt)), (np.asarray(a[0]), np.asarray(b[0]))):
            fast = comparison.compare_values(x, y, direction, "FLOAT")
            with monkeypatch.context() as mp:
                mp.setattr(comparison, "native_float_pair", lambda *_: False)
                general = comparison.compare_values(x, y, direction, "FLOAT")
            assert np.shape(fast) == np.shape(general) and np.array_equal(fast, general)


# ----------------------------------------------------------------------------- element-wise float ops


def test_blocked_float_op_matches_the_whole_operand(monkeypatch):
    # 1 + 2**-12 squared is an f32 rounding midpoint (the oracle decides it):
    # some in every block, and blocks of an odd size
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(4099) * 4).astype(np.float32)
    x[::97] = np.float32(1 + 2.0**-12)
    x[1::89] = -0.0
    x[2::101] = np.nan
    x[3::103] = np.float32(1e-45)
    two = np.full_like(x, 2.0)
    whole_tanh = elementwise.float_fn(np.tanh, np.float32, x, op="stablehlo.tanh")
    whole_pow = elementwise.float_fn(np.power, np.float32, x, two, op="stablehlo.power")
    whole_bf16 = elementwise.float_fn(np.exp, ml_dtypes.bfloat16, x.astype(ml_dtypes.bfloat16),
                                      op="stablehlo.exponential")
    monkeypatch.setattr(elementwise, "FLOAT_BLOCK", 61)
    assert elementwise.float_fn(np.tanh, np.float32, x, op="stablehlo.tanh").tobytes() == whole_tanh.tobytes()
    pw = elementwise.float_fn(np.power, np.float32, x, two, op="stablehlo.power")
    assert pw.tobytes() == whole_pow.tobytes()
    assert pw[0] == np.float32(1 + 2.0**-11)  # the midpoint rounded to even, exactly
    bf = elementwise.float_fn(np.exp, ml_dtypes.bfloat16, x.astype(ml_dtypes.bfloat16), op="stablehlo.exponential")
    assert bf.tobytes() == whole_bf16.tobytes()
    # operands of different shapes are taken whole
    r = elementwise.float_fn(np.power, np.float32, x, np.float32(2.0), op="stablehlo.power")
    assert r.tobytes() == whole_pow.tobytes()


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
def test_native_abs_matches_the_widened_one(dt):
    x = _adversarial_floats(dt, 3000, np.random.default_rng(2))
    ut = np.dtype(f"u{np.dtype(dt).itemsize}")
    quiet_bit = ut.type(1 << (np.finfo(dt).nmant - 1))
    signaling = np.isnan(x) & ((x.view(ut) & quiet_bit) == 0)
    fast = elementwise.abs_(np.dtype(dt), x)
    general = elementwise.float_fn(np.abs, np.dtype(dt), x)
    assert fast.dtype == np.dtype(dt)
    assert np.array_equal(fast.view(ut)[~signaling], general.view(ut)[~signaling])
    # a signaling NaN keeps its payload: abs clears the sign bit only (IEEE 754
    # abs); widening to f64 quiets it
    sign = ut.type(1 << (8 * np.dtype(dt).itemsize - 1))
    assert signaling.any() and np.array_equal(fast.view(ut)[signaling], x.view(ut)[signaling] & ~sign)


# ----------------------------------------------------------------------------- convert float -> integer


@pytest.mark.parametrize("src", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("dst", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32])
def test_clipped_float_to_int_matches_the_general_path(src, dst, monkeypatch):
    from stablehlo_conform.kernels import conversion

    src, dst = np.dtype(src), np.dtype(dst)
    if not conversion._clips_exactly(src, dst):
        assert np.iinfo(dst).bits >= 16 and src.itemsize <= 4  # the limits are not exact in src
        return
    rng = np.random.default_rng(src.itemsize * 10 + dst.itemsize)
    lo, hi = conversion.int_limits(dst)
    edges = [b + d for b in (lo, hi, 0) for d in (-1.5, -1, -0.75, -0.5, -0.25, 0, 0.25, 0.5, 0.75, 1, 1.5)]
    x = np.concatenate([np.array(edges).astype(src), _adversarial_floats(src, 3000, rng),
                        (rng.standard_normal(3000) * 1.3 * max(-lo, hi)).astype(src)])
    for v in (x, x[:1].reshape(()), x[:0]):
        fast = conversion.float_to_int(v, dst)
        with monkeypatch.context() as mp:
            mp.setattr(conversion, "_clips_exactly", lambda *_: False)
            general = conversion.float_to_int(v, dst)
        assert fast.dtype == general.dtype == dst and fast.shape == general.shape
        assert np.array_equal(fast, general)


# ----------------------------------------------------------------------------- heap


def test_heap_thresholds_are_set_once_on_glibc():
    import platform

    from stablehlo_conform.kernels import _heap

    first = _heap.keep_freed_memory()
    assert _heap.keep_freed_memory() is first
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        assert first is True


def _resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="no /proc/self/statm")
def test_freed_arrays_below_the_trim_threshold_stay_in_the_process():
    """160 MiB of 4 MiB arrays, touched and freed, stay resident (glibc's own 64 MiB would give
    about 96 MiB back to the kernel at once)."""
    import platform

    from stablehlo_conform.kernels import _heap

    if not (platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"):
        pytest.skip("glibc's thresholds only")
    assert _heap.keep_freed_memory() and _heap.TRIM_THRESHOLD >= 256 << 20
    arrays = [np.ones(1 << 20, np.float32) for _ in range(40)]
    held = _resident_bytes()
    del arrays
    assert _resident_bytes() > held - (32 << 20)


@pytest.mark.parametrize("dt", [np.float32, np.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e5m2])
def test_may_be_near_midpoint_is_false_only_where_no_element_is_near_one(dt):
    """The quick test of float_fn answers False only where near_midpoint marks nothing; it
    answers False on values that are not near a midpoint."""
    from stablehlo_conform.numeric import may_be_near_midpoint, near_midpoint

    dt = np.dtype(dt)
    rng = np.random.default_rng(11)
    # f64 values exactly on, one and five f64 ULPs from a midpoint of dt: the midpoint of
    # two neighbours of dt is their f64 mean (exact: dt has at most 24 significand bits)
    lo = rng.standard_normal(64).astype(dt).astype(np.float64)
    hi = np.nextafter(lo.astype(dt), np.asarray(np.inf, dt)).astype(np.float64)
    mid = (lo + hi) / 2
    for r in (mid, np.nextafter(mid, np.inf), mid + 5 * np.spacing(mid)):
        mask = near_midpoint(r, dt)
        assert not mask.any() or may_be_near_midpoint(r, dt)
    assert near_midpoint(mid, dt).all() and may_be_near_midpoint(mid, dt)
    # values a quarter of a ULP of dt away from every midpoint, then one special element
    far = (3 * lo + hi) / 4
    assert not near_midpoint(far, dt).any() and not may_be_near_midpoint(far, dt)
    for special in (0.0, 1e-300, -np.inf, np.nan):
        r = far.copy()
        r[7] = special
        assert not near_midpoint(r, dt).any()
        # zeros and magnitudes below the normal range take the long way; infinities and NaN
        # are never near a midpoint
        assert may_be_near_midpoint(r, dt) == (abs(special) < 1)


@pytest.mark.parametrize("dt", [np.float32, np.float16])
def test_rounded_screen_clears_only_what_the_midpoint_screen_clears(dt):
    """The screen reading the rounded values answers True wherever near_midpoint marks an
    element (and wherever the f64-only screen answers True); False on values far from every
    midpoint, whatever their signs; True on a zero or a magnitude below the normal range
    (the long way), and on a value rounded to the least normal number exactly (a case the
    f64-only screen clears: this screen errs on the long side only)."""
    from stablehlo_conform.numeric import midpoint_screen, near_midpoint, rounded_screen

    dt = np.dtype(dt)
    screen, quick = rounded_screen(dt), midpoint_screen(dt)

    def both(r):
        ours = screen(r.copy(), r.astype(dt))
        assert ours >= quick(r)  # never clears what the f64-only screen does not
        return ours

    rng = np.random.default_rng(12)
    lo = rng.standard_normal(64).astype(dt).astype(np.float64)
    hi = np.nextafter(lo.astype(dt), np.asarray(np.inf, dt)).astype(np.float64)
    mid = (lo + hi) / 2
    for r in (mid, np.nextafter(mid, np.inf), mid + 3 * np.spacing(mid), mid - 4 * np.spacing(mid)):
        assert near_midpoint(r, dt).any() and both(r)
    far = (3 * lo + hi) / 4
    assert not near_midpoint(far, dt).any()
    assert not both(far) and not both(np.abs(far)) and not both(-np.abs(far))
    tiny = float(np.finfo(dt).tiny)
    for special, long_way in ((0.0, True), (-0.0, True), (1e-300, True), (-tiny / 3, True), (tiny, True),
                              (np.inf, False), (-np.inf, False), (np.nan, False), (2 * tiny, False)):
        r = np.abs(far)
        r[7] = special
        assert not near_midpoint(r, dt).any()
        assert both(r) == long_way, special
    # the least normal number itself: the f64-only screen clears it, this one does not
    r = np.abs(far)
    r[7] = tiny
    assert not quick(r) and screen(r.copy(), r.astype(dt))


def test_rounded_once_functions_of_empty_and_rank_0_tensors():
    """exp and tanh of f32/f16 tensors with no element, and of rank 0, generated as step by
    step (an empty block has no least element to screen)."""
    for t in ("f32", "f16"):
        for shape, dims in (("0x3x", (0, 3)), ("", ())):
            ty = f"tensor<{shape}{t}>"
            text = f"""func.func @main(%x: {ty}) -> {ty} {{
  %0 = stablehlo.exponential %x : {ty}
  %1 = stablehlo.tanh %0 : {ty}
  return %1 : {ty}
}}"""
            x = np.full(dims, -0.75, np.float32 if t == "f32" else np.float16)
            (mod,) = frontend.load_text(text)
            assert _assert_generated_matches_stepwise(mod, "main", (x,))


def test_rounded_screen_writes_over_its_f64_operand_only():
    from stablehlo_conform.numeric import rounded_screen

    r = np.array([0.3, 0.7, 1.9])
    rounded = r.astype(np.float32)
    kept = rounded.copy()
    assert rounded_screen(np.dtype(np.float32))(r, rounded) is False
    assert np.array_equal(rounded.view(np.uint32), kept.view(np.uint32))
    assert not np.array_equal(r, [0.3, 0.7, 1.9])  # the bit test ran in r's buffer
    assert rounded_screen(np.dtype(np.float64)) is None and rounded_screen(np.dtype(ml_dtypes.bfloat16)) is None


def test_may_be_near_midpoint_takes_rank_0_and_strided_values():
    from stablehlo_conform.numeric import may_be_near_midpoint, near_midpoint

    f32 = np.dtype(np.float32)
    mid = (1.0 + float(np.nextafter(np.float32(1), np.float32(2)))) / 2
    for r in (np.array(mid), np.array(0.3), np.array([[0.3, mid], [0.7, 0.1]])[:, 1], np.array([0.3, 0.7])[::2]):
        assert may_be_near_midpoint(r, f32) >= bool(near_midpoint(r, f32).any())
    assert may_be_near_midpoint(np.array(mid), f32) and not may_be_near_midpoint(np.array(0.3), f32)
