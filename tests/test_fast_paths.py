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
from stablehlo_conform.kernels import reduction

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
