"""The fast paths of ``slice``, ``concatenate`` (``kernels.shape``) and ``dynamic_update_slice``
(``kernels.indexing``) against their kernels, bit for bit: the factories' calls on C-ordered,
strided and broadcast operands (where declared ``views``), starts inside, at and past the
bounds and negative, of every start type; and whole programs (an LSTM-like loop of calls
included) through the engine step by step and through its generated blocks.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from stablehlo_conform import frontend
from stablehlo_conform.engine import Engine
from stablehlo_conform.kernels import indexing, shape
from stablehlo_conform.kernels.context import OpContext

BF16 = np.dtype(ml_dtypes.bfloat16)


def _same(fast, kernel):
    fast, kernel = np.asarray(fast), np.asarray(kernel)
    assert fast.dtype == kernel.dtype and fast.shape == kernel.shape
    assert fast.tobytes() == kernel.tobytes()


def _op(text: str, name: str):
    (mod,) = frontend.load_text(text)
    return next(o for o in mod.funcs["main"].body.blocks[0].ops if o.name == name)


def _data(dt, shape, seed=0) -> np.ndarray:
    """Random bit patterns of ``dt`` (NaNs, infinities and signed zeros among them for floats)."""
    n = int(np.prod(shape))
    bits = np.random.default_rng(seed).integers(0, 256, n * np.dtype(dt).itemsize, dtype=np.uint8)
    if np.dtype(dt) == np.bool_:
        return (bits[:n] & 1).astype(np.bool_).reshape(shape)
    return bits.view(dt).reshape(shape)


SLICES = [((4, 1024), [0, 256], [4, 512], [1, 1]), ((4, 1024), [0, 0], [4, 1024], [1, 1]),
          ((4, 1024), [1, 0], [3, 1024], [1, 1]), ((6, 7, 5), [1, 2, 0], [6, 7, 5], [2, 3, 2]),
          ((6, 7, 5), [2, 0, 0], [2, 7, 5], [1, 1, 1]), ((9,), [8], [9], [1])]


@pytest.mark.parametrize("el,dt", [("f32", np.float32), ("bf16", BF16), ("i8", np.int8), ("i1", np.bool_)])
@pytest.mark.parametrize("dims,start,limit,strides", SLICES)
def test_slice_fast_path_matches_the_kernel(el, dt, dims, start, limit, strides):
    res = [len(range(s, e, st)) for s, e, st in zip(start, limit, strides)]
    t = "x".join(map(str, dims)) + "x" + el
    r = "x".join(map(str, res)) + "x" + el
    op = _op(f"""func.func @main(%a: tensor<{t}>) -> tensor<{r}> {{
      %r = stablehlo.slice %a [{', '.join(f'{s}:{e}:{st}' for s, e, st in zip(start, limit, strides))}]
        : (tensor<{t}>) -> tensor<{r}>
      return %r : tensor<{r}>
    }}""", "stablehlo.slice")
    fp = shape._fast_slice(op)
    assert fp is not None and not fp.view and not fp.views
    x = _data(dt, dims)
    for operand in (x, x.reshape(-1).reshape(dims)):  # an array and a C-ordered view
        got = fp.call(operand)
        _same(got, shape.slice_(OpContext(op, None), operand)[0])
        assert got.flags.c_contiguous


@pytest.mark.parametrize("el,dt", [("f32", np.float32), ("bf16", BF16), ("ui16", np.uint16), ("i1", np.bool_)])
def test_concatenate_fast_path_matches_the_kernel(el, dt):
    op = _op(f"""func.func @main(%a: tensor<4x3x{el}>, %b: tensor<4x5x{el}>, %c: tensor<4x0x{el}>) -> tensor<4x8x{el}> {{
      %r = stablehlo.concatenate %a, %b, %c, dim = 1
        : (tensor<4x3x{el}>, tensor<4x5x{el}>, tensor<4x0x{el}>) -> tensor<4x8x{el}>
      return %r : tensor<4x8x{el}>
    }}""", "stablehlo.concatenate")
    fp = shape._fast_concatenate(op)
    assert fp is not None and fp.views and fp.fresh
    a, b, c = _data(dt, (4, 3), 1), _data(dt, (4, 5), 2), _data(dt, (4, 0), 3)
    wide = _data(dt, (8, 10), 4)
    for xs in ((a, b, c), (wide[::2, 1:4], np.broadcast_to(b[:1], (4, 5)), c), (a.T.copy().T, b, c)):
        got = fp.call(*xs)
        _same(got, shape.concatenate(OpContext(op, None), *xs)[0])
        assert got.flags.c_contiguous and not any(np.shares_memory(got, x) for x in xs)


START_TYPES = [("i32", np.int32), ("i8", np.int8), ("ui8", np.uint8), ("i64", np.int64), ("ui32", np.uint32)]


@pytest.mark.parametrize("st,sdt", START_TYPES)
@pytest.mark.parametrize("el,dt", [("f32", np.float32), ("bf16", BF16), ("i1", np.bool_)])
def test_dynamic_update_slice_fast_path_matches_the_kernel(st, sdt, el, dt):
    op = _op(f"""func.func @main(%a: tensor<8x4x6x{el}>, %u: tensor<1x4x3x{el}>, %i: tensor<{st}>, %j: tensor<{st}>,
                                 %k: tensor<{st}>) -> tensor<8x4x6x{el}> {{
      %r = stablehlo.dynamic_update_slice %a, %u, %i, %j, %k
        : (tensor<8x4x6x{el}>, tensor<1x4x3x{el}>, tensor<{st}>, tensor<{st}>, tensor<{st}>) -> tensor<8x4x6x{el}>
      return %r : tensor<8x4x6x{el}>
    }}""", "stablehlo.dynamic_update_slice")
    fp = indexing._fast_dynamic_update_slice(op)
    assert fp is not None and fp.views and fp.scalars and fp.fresh
    info = np.iinfo(sdt)
    values = sorted({0, 1, 2, 3, 5, 7, 8, 9, 100, int(info.max), int(info.min), -1 if info.min else 255})
    a, u = _data(dt, (8, 4, 6), 5), _data(dt, (1, 4, 3), 6)
    operands = [(a, u), (np.broadcast_to(a[:1], a.shape), np.broadcast_to(u[:, :1], u.shape)),
                (_data(dt, (16, 4, 6), 7)[::2], u)]
    for i in values:
        for k in values:
            if not info.min <= i <= info.max or not info.min <= k <= info.max:
                continue
            starts = (sdt(i), sdt(1), sdt(k))
            for x, up in operands:
                want = indexing.dynamic_update_slice(OpContext(op, None), x, up, *map(np.asarray, starts))[0]
                _same(fp.call(x, up, *starts), want)  # NumPy scalars
                _same(fp.call(x, up, *map(np.asarray, starts)), want)  # 0-d arrays
                assert not np.shares_memory(fp.call(x, up, *starts), x)


def test_wide_unsigned_starts_and_rank_0_operands_take_the_kernel():
    op = _op("""func.func @main(%a: tensor<8xf32>, %u: tensor<2xf32>, %i: tensor<ui64>) -> tensor<8xf32> {
      %r = stablehlo.dynamic_update_slice %a, %u, %i : (tensor<8xf32>, tensor<2xf32>, tensor<ui64>) -> tensor<8xf32>
      return %r : tensor<8xf32>
    }""", "stablehlo.dynamic_update_slice")
    assert indexing._fast_dynamic_update_slice(op) is None
    op = _op("""func.func @main(%a: tensor<f32>, %u: tensor<f32>) -> tensor<f32> {
      %r = stablehlo.dynamic_update_slice %a, %u : (tensor<f32>, tensor<f32>) -> tensor<f32>
      return %r : tensor<f32>
    }""", "stablehlo.dynamic_update_slice")
    assert indexing._fast_dynamic_update_slice(op) is None


LOOP = """
func.func @main(%xs: tensor<8x4x16xf32>, %w: tensor<48x128xf32>) -> tensor<8x4x32xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %c1 = stablehlo.constant dense<1> : tensor<i32>
  %n = stablehlo.constant dense<8> : tensor<i32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %h0 = stablehlo.broadcast_in_dim %z, dims = [] : (tensor<f32>) -> tensor<4x32xf32>
  %o0 = stablehlo.broadcast_in_dim %z, dims = [] : (tensor<f32>) -> tensor<8x4x32xf32>
  %r:3 = stablehlo.while(%i = %c0, %h = %h0, %o = %o0) : tensor<i32>, tensor<4x32xf32>, tensor<8x4x32xf32>
  cond {
    %lt = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  } do {
    %x = func.call @index(%xs, %i) : (tensor<8x4x16xf32>, tensor<i32>) -> tensor<4x16xf32>
    %h2 = func.call @cell(%w, %h, %x) : (tensor<48x128xf32>, tensor<4x32xf32>, tensor<4x16xf32>) -> tensor<4x32xf32>
    %o2 = func.call @update(%o, %h2, %i) : (tensor<8x4x32xf32>, tensor<4x32xf32>, tensor<i32>) -> tensor<8x4x32xf32>
    %i2 = stablehlo.add %i, %c1 : tensor<i32>
    stablehlo.return %i2, %h2, %o2 : tensor<i32>, tensor<4x32xf32>, tensor<8x4x32xf32>
  }
  return %r#2 : tensor<8x4x32xf32>
}
func.func private @index(%xs: tensor<8x4x16xf32>, %i: tensor<i32>) -> tensor<4x16xf32> {
  %c = stablehlo.constant dense<0> : tensor<i32>
  %s = stablehlo.dynamic_slice %xs, %i, %c, %c, sizes = [1, 4, 16]
    : (tensor<8x4x16xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x4x16xf32>
  %r = stablehlo.reshape %s : (tensor<1x4x16xf32>) -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}
func.func private @cell(%w: tensor<48x128xf32>, %h: tensor<4x32xf32>, %x: tensor<4x16xf32>) -> tensor<4x32xf32> {
  %cat = stablehlo.concatenate %x, %h, dim = 1 : (tensor<4x16xf32>, tensor<4x32xf32>) -> tensor<4x48xf32>
  %g = stablehlo.dot_general %cat, %w, contracting_dims = [1] x [0]
    : (tensor<4x48xf32>, tensor<48x128xf32>) -> tensor<4x128xf32>
  %a = stablehlo.slice %g [0:4, 0:32] : (tensor<4x128xf32>) -> tensor<4x32xf32>
  %b = stablehlo.slice %g [0:4, 32:64] : (tensor<4x128xf32>) -> tensor<4x32xf32>
  %c = stablehlo.slice %g [0:4, 64:96] : (tensor<4x128xf32>) -> tensor<4x32xf32>
  %d = stablehlo.slice %g [0:4, 96:128:2] : (tensor<4x128xf32>) -> tensor<4x16xf32>
  %e = stablehlo.slice %g [1:2, 0:128] : (tensor<4x128xf32>) -> tensor<1x128xf32>
  %ta = stablehlo.tanh %a : tensor<4x32xf32>
  %nb = stablehlo.negate %b : tensor<4x32xf32>
  %m = stablehlo.multiply %ta, %nb : tensor<4x32xf32>
  %s = stablehlo.add %m, %c : tensor<4x32xf32>
  %dd = stablehlo.concatenate %d, %d, dim = 1 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x32xf32>
  %e2 = stablehlo.slice %e [0:1, 0:32] : (tensor<1x128xf32>) -> tensor<1x32xf32>
  %eb = stablehlo.broadcast_in_dim %e2, dims = [0, 1] : (tensor<1x32xf32>) -> tensor<4x32xf32>
  %s2 = stablehlo.add %s, %dd : tensor<4x32xf32>
  %r = stablehlo.subtract %s2, %eb : tensor<4x32xf32>
  return %r : tensor<4x32xf32>
}
func.func private @update(%o: tensor<8x4x32xf32>, %h: tensor<4x32xf32>, %i: tensor<i32>) -> tensor<8x4x32xf32> {
  %c = stablehlo.constant dense<0> : tensor<i32>
  %u = stablehlo.broadcast_in_dim %h, dims = [1, 2] : (tensor<4x32xf32>) -> tensor<1x4x32xf32>
  %r = stablehlo.dynamic_update_slice %o, %u, %i, %c, %c
    : (tensor<8x4x32xf32>, tensor<1x4x32xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<8x4x32xf32>
  return %r : tensor<8x4x32xf32>
}
"""


def test_loop_of_calls_matches_the_step_by_step_engine():
    """A loop like an LSTM's (slices of a product, concatenations, the stacked output updated
    through a call) through generated blocks, against the engine step by step."""
    (mod,) = frontend.load_text(LOOP)
    rng = np.random.default_rng(3)
    xs = rng.standard_normal((8, 4, 16)).astype(np.float32)
    w = (rng.standard_normal((48, 128)) / 4).astype(np.float32)
    general = Engine(mod)
    general.generate_blocks = False
    (want,) = general.call("main", [xs, w])
    eng = Engine(mod)
    for _ in range(4):  # step by step, then as generated blocks (with the fast paths)
        (got,) = eng.call("main", [xs, w])
        _same(got, want)
    assert eng._runners  # blocks were generated


def test_folded_broadcasts_read_by_ufuncs_are_views_and_keep_the_bits():
    """A broadcast of a constant is folded once; where every reader takes views (ufuncs), the
    generated block holds the broadcast fast path's read-only view of the folded operand, not
    the kernel's copy of the whole shape (a scalar broadcast to a 6 MB tensor is read by every
    op that multiplies by it); where a reader takes none (the reduce fast path: ``np.add.reduce``
    of a stride-0 view adds in another order; ``maximum``, whose NumPy loop is slower on it), the
    kernel's C-ordered copy. The outputs are the step-by-step ones, bit for bit."""
    t = "tensor<64x300xf32>"
    text = f"""
    func.func @main(%a: {t}) -> ({t}, tensor<64xf32>) {{
      %c = stablehlo.constant dense<0.1> : tensor<f32>
      %e = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<f32>) -> {t}
      %v = stablehlo.constant dense<[{', '.join(str(1.5 + i / 7) for i in range(300))}]> : tensor<300xf32>
      %g = stablehlo.broadcast_in_dim %v, dims = [1] : (tensor<300xf32>) -> {t}
      %k = stablehlo.constant dense<0.3> : tensor<f32>
      %h = stablehlo.broadcast_in_dim %k, dims = [] : (tensor<f32>) -> {t}
      %r = stablehlo.multiply %a, %e : {t}
      %s = stablehlo.add %r, %g : {t}
      %z = stablehlo.constant dense<0.0> : tensor<f32>
      %m = stablehlo.reduce(%h init: %z) applies stablehlo.add across dimensions = [1] : ({t}, tensor<f32>) -> tensor<64xf32>
      %j = stablehlo.broadcast_in_dim %z, dims = [] : (tensor<f32>) -> {t}
      %q = stablehlo.maximum %s, %j : {t}
      return %q, %m : {t}, tensor<64xf32>
    }}"""
    (mod,) = frontend.load_text(text)
    x = _data(np.float32, (64, 300), seed=3)
    step = Engine(mod)
    step.generate_blocks = False
    want = step.call("main", [x])
    for _ in range(3):  # blocks are generated after their first runs
        eng = Engine(mod)
        got = eng.call("main", [x])
    (run,) = [hit[1] for hit in eng._runners.values()]
    folded = {k: v for k, v in run.__globals__.items() if k.startswith("F") and np.ndim(v) == 2}
    views = sorted(v.strides for v in folded.values() if not v.flags.owndata)
    copies = [v for v in folded.values() if v.flags.owndata]
    assert views == [(0, 0), (0, 4)]  # %e and %g, read by ufuncs
    # %h (read by a reduce) and %j (by maximum: NumPy's loop is vectorised for contiguous operands)
    assert sorted(float(c[0, 0]) for c in copies) == [0.0, np.float32(0.3)]
    assert all(c.flags.c_contiguous for c in copies)
    assert all(not v.flags.writeable for v in folded.values() if not v.flags.owndata)
    for g, w in zip(got, want):
        _same(g, w)
