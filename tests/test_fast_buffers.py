"""How the fast paths hand operands to NumPy's loops, against the plain calls, bit for bit.

- ``_fast.ufunc_path``: an element-wise ufunc on a broadcast operand whose rows are long
  (a normalisation's ``(n, 1)`` means, its ``(d,)`` scale) is called with NumPy's ufunc buffer
  below twice the row (each row then goes to the loop in place, not through the buffer); the
  buffer size is the caller's again after the call, also where the call raises.
- ``float_math._widened``: a transcendental ufunc computed on f32 values in f64 through the
  ufunc's own widening (``dtype=``), chunk by chunk, gives the f64 values of the widened array.
"""

from __future__ import annotations

import numpy as np
import pytest

from stablehlo_conform import frontend
from stablehlo_conform.kernels import _fast, float_math

from test_engine import _assert_generated_matches_stepwise

ROWS, ROW = 48, 768  # 36,864 elements: at least UNBUFFERED_MIN


def _bits(dt, shape, seed) -> np.ndarray:
    """Random bit patterns of ``dt``: NaNs of both signs, infinities, zeros and subnormals
    among the float values."""
    n = int(np.prod(shape))
    raw = np.random.default_rng(seed).integers(0, 256, n * np.dtype(dt).itemsize, dtype=np.uint8)
    return raw.view(dt).reshape(shape)


def _operands(dt):
    """A block, and the operands a normalisation's ops read beside it: the row of means
    broadcast along each row, the scale broadcast over the rows, a scalar broadcast to the whole
    shape, the block itself, and a transposed view."""
    x = _bits(dt, (ROWS, ROW), 1)
    return x, {
        "rows": np.broadcast_to(_bits(dt, (ROWS, 1), 2), x.shape),
        "scale": np.broadcast_to(_bits(dt, (ROW,), 3), x.shape),
        "scalar": np.broadcast_to(_bits(dt, (), 4), x.shape),
        "contiguous": _bits(dt, x.shape, 5),
        "transposed": _bits(dt, (ROW, ROWS), 6).T,
    }


class _Recorder:
    """A stand-in for a ufunc that records NumPy's buffer size at each call."""

    def __init__(self, uf):
        self.uf, self.sizes = uf, []

    def __call__(self, *xs, out=None):
        self.sizes.append(np.getbufsize())
        return self.uf(*xs, out=out)


@pytest.mark.parametrize("dt", [np.float32, np.float16, np.float64, np.int32, np.uint8])
@pytest.mark.parametrize("uf", [np.add, np.subtract, np.multiply, np.divide, np.less, np.not_equal])
def test_ufunc_path_gives_the_plain_calls_bits(uf, dt):
    x, others = _operands(dt)
    fp = _fast.ufunc_path(uf, x.shape)
    assert fp.out and fp.views
    with np.errstate(all="ignore"):
        for name, y in others.items():
            for a, b in ((x, y), (y, x)):
                want = uf(a, b)
                got = fp.call(a, b)
                assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), name
                into = np.empty_like(want)
                assert fp.call(a, b, out=into) is into and into.tobytes() == want.tobytes(), name
    assert np.getbufsize() == 8192


def test_ufunc_path_sets_the_buffer_below_two_rows_for_broadcast_rows_only():
    x, others = _operands(np.float32)
    rec = _Recorder(np.subtract)
    fp = _fast.ufunc_path(rec, x.shape)
    default = np.getbufsize()
    with np.errstate(all="ignore"):
        for name in ("rows", "scale", "transposed", "scalar", "contiguous"):
            fp.call(x, others[name])
            fp.call(others[name], x)
    long_rows, merged = rec.sizes[:6], rec.sizes[6:]
    assert all(s == ROW and s % 16 == 0 for s in long_rows)  # below twice the row, a multiple of 16
    assert merged == [default] * 4  # every axis merges: NumPy's own buffer size
    assert np.getbufsize() == default
    # a row that is no multiple of 16 (whisper's 1500 frames): the buffer is the multiple below
    rec.sizes.clear()
    odd = np.ones((30, 1500), np.float32)
    _fast.ufunc_path(rec, odd.shape).call(odd, np.broadcast_to(np.ones((30, 1), np.float32), odd.shape))
    assert rec.sizes == [1488]
    # rows of 256 or fewer elements, and small results, keep NumPy's buffer (and the ufunc itself)
    assert _fast.ufunc_path(np.add, (4096, 256)).call is np.add
    assert _fast.ufunc_path(np.add, (16, 768)).call is np.add
    assert _fast.ufunc_path(np.add, (1 << 16,)).call is np.add


def test_ufunc_path_restores_the_buffer_size_where_the_call_raises():
    def fails(*xs, out=None):
        raise FloatingPointError("raised inside the call")

    x, others = _operands(np.float32)
    fp = _fast.ufunc_path(fails, x.shape)
    before = np.getbufsize()
    with pytest.raises(FloatingPointError):
        fp.call(x, others["rows"])
    assert np.getbufsize() == before


def test_layer_norm_with_long_rows_generated_matches_stepwise():
    """A layer norm over rows of 768 (means and scale broadcast: the unbuffered calls, in the
    generated block's chain and op by op), step by step and generated, bit for bit."""
    t, r = f"tensor<{ROWS}x{ROW}xf32>", f"tensor<{ROWS}xf32>"
    text = f"""
    func.func @main(%x: {t}, %g: tensor<{ROW}xf32>) -> {t} {{
      %z = stablehlo.constant dense<0.0> : tensor<f32>
      %n = stablehlo.constant dense<{float(ROW)}> : {r}
      %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [1] : ({t}, tensor<f32>) -> {r}
      %m = stablehlo.divide %s, %n : {r}
      %mb = stablehlo.broadcast_in_dim %m, dims = [0] : ({r}) -> {t}
      %d = stablehlo.subtract %x, %mb : {t}
      %q = stablehlo.multiply %d, %d : {t}
      %v = stablehlo.reduce(%q init: %z) applies stablehlo.add across dimensions = [1] : ({t}, tensor<f32>) -> {r}
      %vb = stablehlo.broadcast_in_dim %v, dims = [0] : ({r}) -> {t}
      %y = stablehlo.divide %d, %vb : {t}
      %gb = stablehlo.broadcast_in_dim %g, dims = [1] : (tensor<{ROW}xf32>) -> {t}
      %o = stablehlo.multiply %y, %gb : {t}
      %c = stablehlo.compare LT, %o, %gb : ({t}, {t}) -> tensor<{ROWS}x{ROW}xi1>
      %w = stablehlo.select %c, %o, %d : tensor<{ROWS}x{ROW}xi1>, {t}
      return %w : {t}
    }}"""
    (mod,) = frontend.load_text(text)
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((ROWS, ROW)) * 3).astype(np.float32)
    x[::7, ::5] = np.nan
    g = rng.standard_normal(ROW).astype(np.float32)
    assert _assert_generated_matches_stepwise(mod, "main", (x, g))


@pytest.mark.parametrize("f", [np.tanh, np.exp, np.log, np.sin, np.cos, np.tan])
def test_widened_ufunc_gives_the_widened_arrays_values(f):
    # more values than NumPy's buffer holds (8192), in an odd count: chunks and a short last one
    x = _bits(np.float32, (20011,), 8)
    x[:6] = [0.0, -0.0, np.inf, -np.inf, 1e-45, 88.7]
    with np.errstate(all="ignore"):
        want = f(x.astype(np.float64))
        got = float_math._widened(f)(x)
    assert got.dtype == np.float64 and got.tobytes() == want.tobytes()


def test_widened_other_functions_widen_the_array_first():
    seen = []

    def f(w):
        seen.append(w.dtype)
        return w * 2

    x = np.arange(5, dtype=np.float32)
    assert float_math._widened(f)(x).tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]
    assert seen == [np.float64]
