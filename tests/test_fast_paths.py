"""Fast paths against the general ones, bit for bit.

- ``reduce_window`` running folds (what ``jnp.cumsum``/``cumprod``/``cummax``/
  ``cummin`` lower to on CPU) by a prefix scan, against the window fold and
  against the general path that runs the body region on lanes; and the
  official cumulative tests, whose windows take the prefix scan.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from stablehlo_conform import frontend
from stablehlo_conform.engine import Engine
from stablehlo_conform.kernels import linalg, reduction

from kernel_util import SUITE, assert_suite_file_passes, one
from test_reduction import general_only, window_text


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
