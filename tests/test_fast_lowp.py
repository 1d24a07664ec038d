"""Fast paths of the low-precision and quantized models' element-wise and data-movement ops
against their kernels, bit for bit.

- ``transpose``: the tiled copy (``kernels.shape.transpose_copy``) against NumPy's transpose
  for every permutation of random shapes of ranks 0 to 4 and every item size, and through the
  engine's generated blocks against the kernel step by step.
- bf16 in f32 (``kernels._fast.in_f32``) of broadcast operands (their distinct values widened
  once, the result broadcast back) against the same operands materialised and against the f64
  rounded-once kernel function, for every bf16 value against edge partners.
- 8-bit floats as f32 two at a time (``kernels._fast.f32_values``): every pair of byte patterns
  of every 8-bit float type against ``ml_dtypes``' own conversion.
- ``select``'s bit blend (``kernels.elementwise.where``) against ``np.where`` for every item size,
  NaN payloads included.
- ``reduce`` by a simple body: the fast path (``kernels.reduction._fast_reduce``) through the
  generated blocks against the kernel step by step, for every body kind and several types,
  special values included.
- ``power`` by an exponent of one value (``kernels.elementwise._fast_power``): every f16 value
  and f32 bit patterns, short significands (cubes on midpoints), specials and normal values
  against the kernel's function, for the exponents with a chain and others.
- ``gather`` of whole rows (``kernels.indexing._fast_gather``) through the engine against the
  kernel, indices clamped at both ends, several index types and index vector positions.
- the rounded-once transcendentals (``kernels.float_math.rounded_once_fast``): on f32, blocks
  the screen stops (zeros, tiny values, near-midpoint values) in masked-softmax-like data; on
  f16, the table of every value; through the engine and against the kernel's function.
- all of these in pieces on several threads (``engine.codegen._in_pieces``).
"""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

from stablehlo_conform import frontend
from stablehlo_conform import types as T
from stablehlo_conform.engine import Engine
from stablehlo_conform.kernels import _fast, _parallel, elementwise, reduction, shape
from stablehlo_conform.kernels.registry import load_all
from stablehlo_conform.numeric import wide
from stablehlo_conform.program import walk_ops

BF16 = np.dtype(ml_dtypes.bfloat16)
BYTE_FLOATS = [np.dtype(getattr(ml_dtypes, n)) for n in (
    "float8_e3m4", "float8_e4m3", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e4m3b11fnuz", "float8_e5m2",
    "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn")]
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _bits(x) -> np.ndarray:
    x = np.asarray(x)
    return x.view(UINT[x.dtype.itemsize]) if x.dtype.itemsize in UINT and x.dtype != np.bool_ else x


def _same(got, want) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    bad = np.flatnonzero(_bits(got).reshape(-1) != _bits(want).reshape(-1))
    assert bad.size == 0, f"{bad.size} elements differ, first at {bad[:5]}"


def _stepwise_and_generated(text: str, args) -> tuple[list, list]:
    """The results of ``main`` step by step (kernels) and through generated blocks (fast paths)."""
    (mod,) = frontend.load_text(text)
    step = Engine(mod)
    step.generate_blocks = False
    want = step.call("main", list(args))
    for _ in range(3):  # blocks are generated after their first runs
        eng = Engine(mod)
        got = eng.call("main", list(args))
    assert eng._runners
    return list(want), list(got)


def _fast_of(text: str, name: str):
    """The fast path the kernel of the op ``name`` in ``text`` declares for it."""
    (mod,) = frontend.load_text(text)
    (op,) = [o for f in mod.funcs.values() for o in walk_ops(f.body) if o.name == name]
    return load_all().info(name).fast(op)


def _ty(shape, el) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + el + ">"


def _special_floats(dt, shape, rng) -> np.ndarray:
    x = (rng.standard_normal(shape) * 3).astype(dt)
    flat = x.reshape(-1)
    if np.dtype(dt).kind in "fV":
        flat[::7] = np.nan
        flat[3::11] = -0.0
        flat[4::13] = 0.0
        flat[5::17] = np.inf
        flat[6::19] = -np.inf
    return x


# --------------------------------------------------------------------------- #
# transpose
# --------------------------------------------------------------------------- #

@pytest.mark.parametrize("dt", [np.bool_, np.int8, BF16, np.float32, np.float64, np.complex128],
                         ids=lambda d: np.dtype(d).name)
def test_transpose_copy_is_numpys_transpose_for_every_permutation(dt, monkeypatch):
    monkeypatch.setattr(shape, "TILED_TRANSPOSE_MIN", 1)  # every array tiled where it can be
    monkeypatch.setattr(shape, "TILED_MATRIX_MIN", (1, 1, 1))
    monkeypatch.setattr(shape, "RUN_COPY_MIN", 1)  # every trailing run moved as one element
    monkeypatch.setattr(shape, "TILE_SPAN_BYTES", 24)  # tiles smaller than the arrays
    monkeypatch.setattr(shape, "TILE_LINE_BYTES", 8)
    rng = np.random.default_rng(3)
    for rank in range(5):
        for _ in range(12):
            shp = tuple(int(v) for v in rng.integers(1, 8, size=rank))
            x = rng.integers(0, 1 << 16, size=shp).astype(dt)
            for perm in itertools.permutations(range(rank)):
                got = shape.transpose_copy(x, perm)
                assert got.flags.c_contiguous
                _same(got, np.array(np.transpose(x, perm), order="C"))
                _same(shape.transpose_copy(x[..., ::-1] if rank else x, perm),
                      np.array(np.transpose(x[..., ::-1] if rank else x, perm), order="C"))


@pytest.mark.parametrize("dt", [np.int8, BF16, np.float32, np.complex128], ids=lambda d: np.dtype(d).name)
def test_a_large_matrix_transpose_copied_in_pieces_on_threads_is_numpys(dt, monkeypatch):
    """Large matrices are tiled in pieces of whole tile columns on the threads: every element
    copied once, a batch of matrices too, and one thread (or a small matrix) copies whole."""
    monkeypatch.setattr(shape, "TILED_TRANSPOSE_MIN", 1)
    monkeypatch.setattr(shape, "TILED_MATRIX_MIN", (1, 1, 1))
    monkeypatch.setattr(shape, "RUN_COPY_MIN", 1)
    monkeypatch.setattr(shape, "TILED_PIECES_MIN", 1 << 10)
    monkeypatch.setattr(shape, "TILE_SPAN_BYTES", 96)  # several tiles a piece
    monkeypatch.setattr(_parallel, "PAYING_SPEEDUP", 0.0)
    monkeypatch.setattr(_parallel, "_paying", [0, _parallel.BACK_OFF])
    copied = []
    tiles = shape._copy_tiles

    def copy(dst, src):
        copied.append(dst.size)
        tiles(dst, src)

    monkeypatch.setattr(shape, "_copy_tiles", copy)
    before = _parallel.threads()
    rng = np.random.default_rng(5)
    try:
        for n, shp, perm in ((2, (301, 67), (1, 0)), (2, (3, 130, 47), (0, 2, 1)), (1, (301, 67), (1, 0)),
                             (2, (40, 25), (1, 0))):
            _parallel.set_threads(n)
            copied.clear()
            x = rng.integers(0, 1 << 16, size=shp).astype(dt)
            _same(shape.transpose_copy(x, perm), np.array(np.transpose(x, perm), order="C"))
            assert sum(copied) == x.size
            matrices = x.size // (shp[-1] * shp[-2])
            in_pieces = n > 1 and shp[-1] * shp[-2] >= shape.TILED_PIECES_MIN
            assert len(copied) > matrices if in_pieces else len(copied) == matrices
    finally:
        _parallel.set_threads(before)


@pytest.mark.parametrize("dt", [np.int8, np.float32, np.complex128], ids=lambda d: np.dtype(d).name)
def test_move_reduced_last_is_numpys_transposed_reshape(dt, monkeypatch):
    monkeypatch.setattr(shape, "RUN_COPY_MIN", 1)
    monkeypatch.setattr(shape, "TILED_TRANSPOSE_MIN", 1)
    monkeypatch.setattr(shape, "TILED_MATRIX_MIN", (1, 1, 1))
    rng = np.random.default_rng(6)
    for rank in range(1, 6):
        for _ in range(10):
            shp = tuple(int(v) for v in rng.integers(1, 6, size=rank))
            x = rng.integers(-50, 50, shp).astype(dt)
            for k in range(rank + 1):
                for dims in itertools.combinations(range(rank), k):
                    out, got = reduction._move_reduced_last(x, dims)
                    keep = [d for d in range(rank) if d not in dims]
                    want = np.transpose(x, keep + list(dims)).reshape(out + (-1,))
                    _same(got, want)
                    # NumPy's layout: a view where it makes one (ufunc.reduce's order follows it)
                    assert _layout(got) == _layout(want) and np.shares_memory(got, x) == np.shares_memory(want, x)


def _layout(x: np.ndarray) -> tuple:
    """The strides of the axes of more than one element (the others are never stepped)."""
    return tuple(s for s, n in zip(x.strides, x.shape) if n > 1)


def test_merged_permutation_merges_runs_and_drops_unit_axes():
    assert shape.merged_permutation((1, 12, 64, 64), (0, 3, 1, 2)) == ((768, 64), (1, 0))
    assert shape.merged_permutation((50257, 768), (1, 0)) == ((50257, 768), (1, 0))
    assert shape.merged_permutation((2, 3, 4), (0, 1, 2)) == ((24,), (0,))
    assert shape.merged_permutation((2, 3, 4, 5), (0, 3, 2, 1)) == ((2, 3, 4, 5), (0, 3, 2, 1))


@pytest.mark.parametrize("el,dt", [("f32", np.float32), ("i8", np.int8), ("bf16", BF16), ("f64", np.float64)])
@pytest.mark.parametrize("shp,perm", [((300, 257), (1, 0)), ((3, 70, 400), (0, 2, 1)), ((1, 8, 64, 256), (0, 3, 1, 2)),
                                      ((1, 12, 64, 90), (0, 3, 1, 2)), ((2, 40, 30, 50), (2, 0, 3, 1))])
def test_engine_transpose_fast_path_matches_the_kernel(el, dt, shp, perm):
    rng = np.random.default_rng(5)
    x = _special_floats(dt, shp, rng) if el != "i8" else rng.integers(-128, 128, shp).astype(dt)
    out = tuple(shp[p] for p in perm)
    text = f"""
    func.func @main(%a: {_ty(shp, el)}) -> {_ty(out, el)} {{
      %r = stablehlo.transpose %a, dims = {list(perm)} : ({_ty(shp, el)}) -> {_ty(out, el)}
      return %r : {_ty(out, el)}
    }}"""
    assert _fast_of(text, "stablehlo.transpose") is not None
    (want,), (got,) = _stepwise_and_generated(text, [x])
    _same(got, want)
    _same(got, np.array(np.transpose(x, perm), order="C"))


# --------------------------------------------------------------------------- #
# bf16 in f32 with broadcast operands
# --------------------------------------------------------------------------- #

def _bf16_partners() -> np.ndarray:
    special = np.array([0x0000, 0x7F80, 0x7FC0, 0x7FC1, 0x7F81, 0x7FFF, 0x0001, 0x0002, 0x007F, 0x0080, 0x00FF,
                        0x7F7F, 0x7F7E, 0x3F80, 0x3F81, 0x3FFF, 0x4000, 0x3F00, 0x3FC0, 0x4B00, 0x0100, 0x5F80],
                       dtype=np.uint16)
    v = np.concatenate([special, np.random.default_rng(11).integers(0, 1 << 15, 42, dtype=np.uint16)])
    return np.concatenate([v, v | np.uint16(0x8000)]).view(BF16)  # 128 values


BF16_BINARY = [np.add, np.subtract, np.multiply, np.divide, np.fmod]


@pytest.mark.parametrize("uf", BF16_BINARY, ids=lambda f: f.__name__)
def test_in_f32_of_broadcast_operands_is_that_of_the_materialised_ones(uf):
    every = np.arange(1 << 16, dtype=np.uint16).view(BF16).reshape(512, 128)  # every bf16 value
    p = _bf16_partners()
    cases = [
        (every, np.broadcast_to(p, every.shape)),  # a row broadcast down
        (np.broadcast_to(p[:, None][:, :1].reshape(-1)[:1], every.shape), every),  # one value everywhere
        (every[:128], np.broadcast_to(p[:, None], (128, 128))),  # a column broadcast across
        (np.broadcast_to(p, (4, 128)), np.broadcast_to(p[::-1], (4, 128))),  # both broadcast alike
        (np.broadcast_to(p[:, None], (128, 128)), np.broadcast_to(p, (128, 128))),  # an outer product
    ]
    for a, b in cases:
        got = _fast.in_f32(uf, BF16, a, b)
        _same(got, _fast.in_f32(uf, BF16, np.array(a), np.array(b)))
        with np.errstate(all="ignore"):
            _same(got, elementwise.float_fn(uf, BF16, np.array(a), np.array(b)))
        assert got.flags.c_contiguous and got.flags.writeable


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide"])
def test_engine_bf16_broadcast_operands_match_the_kernel(op):
    rng = np.random.default_rng(2)
    a = _special_floats(BF16, (8, 3, 700), rng)
    b = _special_floats(BF16, (700,), rng)
    c = _special_floats(BF16, (8, 1), rng)
    t3 = _ty((8, 3, 700), "bf16")
    text = f"""
    func.func @main(%a: {t3}, %b: tensor<700xbf16>, %c: tensor<8x1xbf16>) -> {t3} {{
      %bb = stablehlo.broadcast_in_dim %b, dims = [2] : (tensor<700xbf16>) -> {t3}
      %cc = stablehlo.broadcast_in_dim %c, dims = [0, 1] : (tensor<8x1xbf16>) -> {t3}
      %x = stablehlo.{op} %a, %bb : {t3}
      %y = stablehlo.{op} %cc, %x : {t3}
      %z = stablehlo.{op} %bb, %cc : {t3}
      %r = stablehlo.add %y, %z : {t3}
      return %r : {t3}
    }}"""
    (want,), (got,) = _stepwise_and_generated(text, [a, b, c])
    _same(got, want)


# --------------------------------------------------------------------------- #
# 8-bit floats as f32, two at a time
# --------------------------------------------------------------------------- #

@pytest.mark.parametrize("dt", BYTE_FLOATS, ids=lambda d: d.name)
def test_f32_values_of_byte_pairs_is_ml_dtypes_conversion(dt):
    pairs = np.arange(1 << 16, dtype=np.uint16).view(np.uint8).view(dt).reshape(256, 512)  # every pair
    assert pairs.size >= _fast.PAIR_TABLE_MIN
    got = _fast.f32_values(pairs)
    with np.errstate(invalid="ignore"):
        want = pairs.astype(np.float32)
    _same(got, want)
    _same(_fast.f32_values(pairs[:, 1:]), want[:, 1:])  # odd rows and a view: one byte at a time
    _same(_fast.f32_values(pairs[:, :255].copy()), want[:, :255])  # odd size


@pytest.mark.parametrize("dt", [np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.float8_e5m2)],
                         ids=lambda d: d.name)
def test_engine_byte_float_convert_matches_the_kernel(dt):
    x = np.tile(np.arange(256, dtype=np.uint8), 512).view(dt).reshape(256, 512)
    name = T.name_of_dtype(dt)
    text = f"""
    func.func @main(%a: tensor<256x512x{name}>) -> tensor<256x512xf32> {{
      %r = stablehlo.convert %a : (tensor<256x512x{name}>) -> tensor<256x512xf32>
      return %r : tensor<256x512xf32>
    }}"""
    (want,), (got,) = _stepwise_and_generated(text, [x])
    _same(got, want)


# --------------------------------------------------------------------------- #
# select
# --------------------------------------------------------------------------- #

@pytest.mark.parametrize("dt", [np.int8, np.float16, BF16, np.float32, np.float64, np.int64],
                         ids=lambda d: np.dtype(d).name)
def test_where_blends_the_bits_np_where_picks(dt):
    rng = np.random.default_rng(4)
    n = elementwise.BLEND_MIN * 3 + 5
    ut = UINT[np.dtype(dt).itemsize]
    a = rng.integers(0, np.iinfo(ut).max, n, dtype=ut, endpoint=True).view(dt)  # NaN payloads included
    b = rng.integers(0, np.iinfo(ut).max, n, dtype=ut, endpoint=True).view(dt)
    for pred in (rng.random(n) < 0.5, np.zeros(n, bool), np.ones(n, bool), np.arange(n) % 3 == 0):
        _same(elementwise.where(pred, a, b), np.where(pred, a, b))
        _same(elementwise.where(pred, a[::-1], np.broadcast_to(b[:1], (n,))), np.where(pred, a[::-1], b[0]))


# --------------------------------------------------------------------------- #
# reduce
# --------------------------------------------------------------------------- #

@pytest.mark.parametrize("shp,dims", [((1, 16, 16, 32, 2), (1, 2, 4)), ((1, 8, 8, 32, 16), (1, 2, 4)),
                                      ((2, 32, 16, 8, 3), (1, 2, 4)), ((1, 7, 7, 2048), (1, 2)), ((4, 9, 300), (0, 1))])
def test_engine_reduce_of_leading_axes_matches_the_kernel(shp, dims):
    """A group norm's reduce (NumPy's reshape copies) and a global pool's (a strided view, which
    ``np.add.reduce`` adds in another order than a contiguous row): as NumPy's own reshape."""
    x = _special_floats(np.float32, shp, np.random.default_rng(sum(shp)))
    x[np.isnan(x) | np.isinf(x)] = 1.5  # sums of finite values, whose order shows in the bits
    keep = [d for d in range(len(shp)) if d not in dims]
    out = tuple(shp[d] for d in keep)
    ti, to = _ty(shp, "f32"), _ty(out, "f32")
    text = f"""
    func.func @main(%a: {ti}) -> {to} {{
      %z = stablehlo.constant dense<0.0> : tensor<f32>
      %r = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = {list(dims)} : ({ti}, tensor<f32>) -> {to}
      return %r : {to}
    }}"""
    (want,), (got,) = _stepwise_and_generated(text, [x])
    _same(got, want)
    flat = np.transpose(x, keep + list(dims)).reshape(out + (-1,))
    _same(got, np.float32(0) + np.add.reduce(flat, axis=-1))  # the order of NumPy's layout


REDUCE_TYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": BF16, "i32": np.int32,
                "i8": np.int8, "ui16": np.uint16}
INIT = {"add": "0", "multiply": "1", "maximum": "-2", "minimum": "2"}


@pytest.mark.parametrize("el", list(REDUCE_TYPES))
@pytest.mark.parametrize("kind", list(INIT))
@pytest.mark.parametrize("shp,dims", [((3, 5, 40), (2,)), ((3, 5, 40), (1, 2)), ((6, 50, 7), (1,)),
                                      ((4, 20), (1,)), ((2, 3, 9), (0, 2)), ((64,), (0,))])
def test_engine_reduce_fast_path_matches_the_kernel(el, kind, shp, dims):
    dt = np.dtype(REDUCE_TYPES[el])
    rng = np.random.default_rng(len(el) + 7 * len(kind) + sum(shp))
    if dt.kind in "iu":
        info = np.iinfo(dt)
        x = rng.integers(info.min, int(info.max) + 1, shp, dtype=np.int64).astype(dt)
        init = INIT[kind].lstrip("-") if dt.kind == "u" else INIT[kind]
    else:
        x = _special_floats(dt, shp, rng)
        if kind == "multiply":
            x = np.where(np.abs(wide(x)) > 2, x, np.ones((), dt) * 1.25).astype(dt)  # products stay finite
        init = INIT[kind] + ".0"
    out = tuple(n for d, n in enumerate(shp) if d not in dims)
    ti, to, ts = _ty(shp, el), _ty(out, el), _ty((), el)
    text = f"""
    func.func @main(%a: {ti}) -> {to} {{
      %z = stablehlo.constant dense<{init}> : {ts}
      %r = stablehlo.reduce(%a init: %z) applies stablehlo.{kind} across dimensions = {list(dims)} : ({ti}, {ts}) -> {to}
      return %r : {to}
    }}"""
    assert _fast_of(text, "stablehlo.reduce") is not None
    (want,), (got,) = _stepwise_and_generated(text, [x])
    _same(got, want)


def test_reduce_max_orders_zeros_only_where_a_result_is_zero():
    x = np.array([[-0.0, 0.0, -1.0], [0.0, -0.0, -2.0], [1.0, -0.0, 0.0], [-0.0, -0.0, -3.0]], np.float32)
    got = reduction.reduce_last("max", np.maximum, x)
    _same(got, np.array([0.0, 0.0, 1.0, -0.0], np.float32))
    got = reduction.reduce_last("min", np.minimum, -x)
    _same(got, np.array([-0.0, -0.0, -1.0, 0.0], np.float32))


# --------------------------------------------------------------------------- #
# power by a broadcast exponent of 2, 3 or 4
# --------------------------------------------------------------------------- #

def _power_fast(dt, n):
    el = T.name_of_dtype(np.dtype(dt))
    text = f"""
    func.func @main(%a: tensor<{n}x{el}>, %b: tensor<{n}x{el}>) -> tensor<{n}x{el}> {{
      %r = stablehlo.power %a, %b : tensor<{n}x{el}>
      return %r : tensor<{n}x{el}>
    }}"""
    fp = _fast_of(text, "stablehlo.power")
    assert fp is not None and fp.views
    return fp.call


def _power_kernel(dt, a, b):
    with np.errstate(all="ignore"):
        return elementwise.power(np.dtype(dt), a, np.ascontiguousarray(b))


@pytest.mark.parametrize("e", [2.0, 3.0, 4.0, 0.5, -1.0])
def test_f16_power_fast_path_is_the_kernel_for_every_value(e):
    x = np.arange(1 << 16, dtype=np.uint16).view(np.float16)  # every f16 value, NaN payloads included
    b = np.broadcast_to(np.float16(e), x.shape)
    _same(_power_fast(np.float16, x.size)(x, b), _power_kernel(np.float16, x, b))


def _f32_power_operands() -> np.ndarray:
    """Random f32 bit patterns (every exponent, NaN payloads of both signs), values of every
    binade with short significands (squares and cubes on and near rounding midpoints), normal
    values, and the specials: signed zeros, infinities, subnormals, extremes."""
    rng = np.random.default_rng(9)
    raw = rng.integers(0, 1 << 32, 1 << 18, dtype=np.uint64).astype(np.uint32).view(np.float32)
    short = (rng.integers(1, 1 << 13, 1 << 16) * 2.0 ** rng.integers(-160, 115, 1 << 16)).astype(np.float32)
    normal = (rng.standard_normal(1 << 17) * 3).astype(np.float32)
    special = np.array([0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001,
                        0xFFBFFFFF, 0x00000001, 0x807FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x3F800000,
                        0x3F800001, 0x5F800000, 0x1F800000], dtype=np.uint32).view(np.float32)
    return np.concatenate([raw, -short, short, normal, np.tile(special, 1000)])


@pytest.mark.parametrize("e", [2.0, 3.0, 4.0, -2.0])
def test_f32_power_fast_path_is_the_kernel(e):
    x = _f32_power_operands()
    b = np.broadcast_to(np.float32(e), x.shape)
    fast = _power_fast(np.float32, x.size)
    _same(fast(x, b), _power_kernel(np.float32, x, b))
    normal = x[-(1 << 17) - 17000:-17000]  # blocks the screen clears: the chain's own values
    nb = b[:normal.size]
    _same(_power_fast(np.float32, normal.size)(normal, nb), _power_kernel(np.float32, normal, nb))


def _power_by_libm(dt, a, b):
    """``power`` as the kernel computed it with ``np.power`` in f64 for every exponent (within
    about an f64 ULP of the exact power; elements near a rounding midpoint resolved exactly)."""
    from stablehlo_conform.numeric import positive_underflow

    def f(x, y):
        return positive_underflow(np.power(x, y), (x > 0) & (x < np.inf) & np.isfinite(y))
    with np.errstate(all="ignore"):
        return elementwise.float_fn(f, np.dtype(dt), a, np.ascontiguousarray(b), op="stablehlo.power")


@pytest.mark.parametrize("e", [2.0, 3.0, 4.0])
@pytest.mark.parametrize("dt", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_power_kernel_by_multiplications_is_the_libm_power_correctly_rounded(dt, e):
    """The kernel computes a power by 2, 3 or 4 of a type of at most 24 significand bits by
    multiplications in f64 (elementwise.POWER_CHAINS): the same bits as ``np.power`` in f64 with
    the near-midpoint elements resolved exactly, on every f16 and bf16 value and on f32 bit
    patterns, short significands (powers on and near midpoints) and the specials."""
    if np.dtype(dt) == np.float32:
        x = _f32_power_operands()
    else:
        x = np.arange(1 << 16, dtype=np.uint16).view(np.dtype(dt))
    b = np.broadcast_to(np.asarray(e, dt), x.shape)
    _same(_power_kernel(dt, x, b), _power_by_libm(dt, x, b))


def test_power_kernel_cube_hand_computed():
    """1.1f cubed: 1.1f is 9227469 * 2**-23, so its cube is 9227469**3 * 2**-69
    = 785683774675146602709 * 2**-69 = 11165237.974... * 2**-23: it rounds up, to
    11165238 * 2**-23 (1.3310000896...)."""
    from fractions import Fraction
    x = np.float32(1.1)
    assert Fraction(float(x)) == Fraction(9227469, 2 ** 23)
    exact = Fraction(9227469 ** 3, 2 ** 69)
    assert 9227469 ** 3 == 785683774675146602709
    assert Fraction(11165237, 2 ** 23) + Fraction(1, 2 ** 24) < exact < Fraction(11165238, 2 ** 23)
    got = _power_kernel(np.float32, np.full(8, x), np.full(8, np.float32(3.0)))
    assert got.tolist() == [11165238 / 2 ** 23] * 8


def test_power_by_an_exponent_that_is_not_broadcast_is_the_kernel():
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(1 << 15) * 3).astype(np.float32)
    b = np.full(x.shape, 3.0, np.float32)
    b[::5] = 2.5
    _same(_power_fast(np.float32, x.size)(x, b), _power_kernel(np.float32, x, b))


@pytest.mark.parametrize("e", ["2.0", "3.0", "1.5"])
def test_engine_power_by_a_broadcast_constant_matches_the_kernel(e):
    rng = np.random.default_rng(8)
    x = _special_floats(np.float32, (4, 64, 300), rng)
    t = _ty((4, 64, 300), "f32")
    text = f"""
    func.func @main(%a: {t}) -> {t} {{
      %c = stablehlo.constant dense<{e}> : tensor<f32>
      %e = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<f32>) -> {t}
      %r = stablehlo.power %a, %e : {t}
      return %r : {t}
    }}"""
    (want,), (got,) = _stepwise_and_generated(text, [x])
    _same(got, want)


# --------------------------------------------------------------------------- #
# gather of whole rows
# --------------------------------------------------------------------------- #

GATHER_CASES = [  # operand shape, indices shape, index_vector_dim, index type
    ((50, 12), (1, 7, 1), 2, "i32"),
    ((50, 12), (7, 1), 1, "i64"),
    ((50, 3, 4), (2, 1, 5), 1, "ui32"),
    ((9,), (6, 1), 1, "i8"),
    ((9, 5), (1,), 0, "i32"),
    ((9, 5), (3, 4), 2, "i16"),  # the index vector dim past the last: every index one start
]
INDEX_TYPES = {"i32": np.int32, "i64": np.int64, "ui32": np.uint32, "i8": np.int8, "i16": np.int16}


@pytest.mark.parametrize("el,dt", [("f32", np.float32), ("bf16", BF16), ("i8", np.int8), ("i1", np.bool_)])
@pytest.mark.parametrize("oshape,ishape,ivd,it", GATHER_CASES)
def test_engine_row_gather_fast_path_matches_the_kernel(el, dt, oshape, ishape, ivd, it):
    rng = np.random.default_rng(sum(oshape) + sum(ishape))
    operand = rng.integers(-100, 100, oshape).astype(dt)
    info = np.iinfo(INDEX_TYPES[it])
    idx = rng.integers(max(info.min, -2 * oshape[0]), min(info.max, 2 * oshape[0]), ishape).astype(INDEX_TYPES[it])
    idx.reshape(-1)[:2] = [info.min, info.max][:idx.size]  # clamped at both ends
    batch = ishape[:ivd] + ishape[ivd + 1:] if ivd < len(ishape) else ishape
    rshape = batch + oshape[1:]
    offset = list(range(len(batch), len(rshape)))
    sizes = [1, *oshape[1:]]
    text = f"""
    func.func @main(%a: {_ty(oshape, el)}, %i: {_ty(ishape, it)}) -> {_ty(rshape, el)} {{
      %r = "stablehlo.gather"(%a, %i) {{
        dimension_numbers = #stablehlo.gather<offset_dims = {offset}, collapsed_slice_dims = [0],
          start_index_map = [0], index_vector_dim = {ivd}>,
        slice_sizes = array<i64: {', '.join(map(str, sizes))}>}} : ({_ty(oshape, el)}, {_ty(ishape, it)}) -> {_ty(rshape, el)}
      return %r : {_ty(rshape, el)}
    }}"""
    assert _fast_of(text, "stablehlo.gather") is not None
    (want,), (got,) = _stepwise_and_generated(text, [operand, idx])
    _same(got, want)


def test_gather_of_partial_rows_has_no_row_fast_path():
    text = """
    func.func @main(%a: tensor<50x12xf32>, %i: tensor<7x1xi32>) -> tensor<7x5xf32> {
      %r = "stablehlo.gather"(%a, %i) {
        dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0],
          start_index_map = [0], index_vector_dim = 1>,
        slice_sizes = array<i64: 1, 5>} : (tensor<50x12xf32>, tensor<7x1xi32>) -> tensor<7x5xf32>
      return %r : tensor<7x5xf32>
    }"""
    assert _fast_of(text, "stablehlo.gather") is None


# --------------------------------------------------------------------------- #
# the fast paths above in pieces on several threads (engine.codegen._in_pieces)
# --------------------------------------------------------------------------- #

def test_engine_element_wise_fast_paths_in_pieces_match_the_kernels(monkeypatch):
    from stablehlo_conform.engine import codegen
    from stablehlo_conform.kernels import _parallel

    monkeypatch.setattr(_parallel, "_threads", 3)
    monkeypatch.setattr(codegen, "SPLIT_MIN", 1 << 17)  # pieces from this test's size on
    monkeypatch.setattr(codegen, "SPLIT_MIN_UFUNC", 1 << 17)
    if hasattr(_parallel, "paying"):  # threads whatever the load of the other cores
        monkeypatch.setattr(_parallel, "paying", lambda *a: True)
    runs = []
    run = _parallel.run
    monkeypatch.setattr(_parallel, "run", lambda pieces, *a: runs.append(len(pieces)) or run(pieces, *a))
    rng = np.random.default_rng(12)
    shp = (4, 128, 400)  # above the engine's least size for pieces
    a = _special_floats(np.float32, shp, rng)
    h = _special_floats(BF16, shp, rng)
    r = _special_floats(BF16, (400,), rng)
    q = np.tile(np.arange(256, dtype=np.uint8), a.size // 256).view(ml_dtypes.float8_e4m3fn).reshape(shp)
    t, tb, t8 = _ty(shp, "f32"), _ty(shp, "bf16"), _ty(shp, "f8E4M3FN")
    text = f"""
    func.func @main(%a: {t}, %h: {tb}, %r: tensor<400xbf16>, %q: {t8}) -> ({t}, {tb}, {t}, {t}) {{
      %c = stablehlo.constant dense<3.0> : tensor<f32>
      %e = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<f32>) -> {t}
      %p = stablehlo.power %a, %e : {t}
      %s = stablehlo.power %a, %a : {t}
      %rb = stablehlo.broadcast_in_dim %r, dims = [2] : (tensor<400xbf16>) -> {tb}
      %m = stablehlo.multiply %h, %rb : {tb}
      %z = stablehlo.constant dense<0.0> : tensor<f32>
      %zb = stablehlo.broadcast_in_dim %z, dims = [] : (tensor<f32>) -> {t}
      %k = stablehlo.compare GT, %a, %zb : ({t}, {t}) -> {_ty(shp, "i1")}
      %w = stablehlo.select %k, %p, %s : {_ty(shp, "i1")}, {t}
      %f = stablehlo.convert %q : ({t8}) -> {t}
      return %p, %m, %w, %f : {t}, {tb}, {t}, {t}
    }}"""
    want, got = _stepwise_and_generated(text, [a, h, r, q])
    assert len(runs) >= 5 and min(runs) > 1  # the ops ran in pieces
    for g, w in zip(got, want):
        _same(g, w)


# --------------------------------------------------------------------------- #
# rounded-once transcendentals: a block the screen stops keeps its fast values
# --------------------------------------------------------------------------- #

UNARY_SCREENED = ["exponential", "tanh", "logistic", "log", "sine", "exponential_minus_one", "rsqrt", "cbrt"]


def _unary_text(op, el, shape):
    t = _ty(shape, el)
    return f"""
    func.func @main(%a: {t}) -> {t} {{
      %r = stablehlo.{op} %a : {t}
      return %r : {t}
    }}"""


@pytest.mark.parametrize("op", UNARY_SCREENED)
def test_f16_fast_path_is_the_kernel_for_every_value(op):
    """An f16 transcendental reads the table of the kernel's function (not the f32 screen)."""
    x = np.arange(1 << 16, dtype=np.uint16).view(np.float16).reshape(16, 4096)  # every f16 value
    text = _unary_text(op, "f16", x.shape)
    fast = _fast_of(text, f"stablehlo.{op}")
    assert fast.views and fast.fresh and not fast.split_min  # the table path, not the screened one
    with np.errstate(all="ignore"):
        _same(fast.call(x), _kernel_function(op)(np.dtype(np.float16), x))


def _kernel_function(op):
    """The kernel's function ``g(dt, x)`` of ``stablehlo.<op>``."""
    from stablehlo_conform.kernels import float_math

    return getattr(float_math, op)


def _softmax_like(rng, n) -> np.ndarray:
    """Scores with masked entries (-inf, huge negatives: exp gives 0 and subnormals), values near
    0 (tiny results of tanh, sine), random bit patterns (NaN payloads, infinities) and normals."""
    x = (rng.standard_normal(n) * 4).astype(np.float32)
    x[::97] = -np.inf
    x[5::101] = -103.5
    x[7::89] = rng.uniform(-110, -87, x[7::89].size)
    x[11::83] = (rng.standard_normal(x[11::83].size) * 1e-39).astype(np.float32)
    x[13::79] = 0.0
    x[17::73] = -0.0
    x[19::71] = rng.integers(0, 1 << 32, x[19::71].size, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return x


@pytest.mark.parametrize("op", UNARY_SCREENED)
def test_f32_screened_fast_path_keeps_the_kernels_values_in_stopped_blocks(op):
    x = _softmax_like(np.random.default_rng(21), 3 * (1 << 14) + 77).reshape(-1, 1)
    text = _unary_text(op, "f32", x.shape)
    with np.errstate(all="ignore"):
        _same(_fast_of(text, f"stablehlo.{op}").call(x), _kernel_function(op)(np.dtype(np.float32), x))


def test_screened_out_fixes_only_the_marked_elements(monkeypatch):
    from stablehlo_conform.kernels import float_math

    calls = []
    x = _softmax_like(np.random.default_rng(3), 1 << 14)
    g = _kernel_function("exponential")

    def counting(dt, xs):
        calls.append(xs.size)
        return g(dt, xs)

    with np.errstate(all="ignore"):
        r = np.exp(x.astype(np.float64))
        _same(float_math.screened_out(counting, np.dtype(np.float32), x, r), g(np.dtype(np.float32), x))
    assert sum(calls) < 16  # the elements near a midpoint, not the block


@pytest.mark.parametrize("op", ["exponential", "tanh"])
def test_engine_masked_softmax_exponential_matches_the_kernel(op):
    x = _softmax_like(np.random.default_rng(5), 6 * 64 * 64).reshape(1, 6, 64, 64)
    (want,), (got,) = _stepwise_and_generated(_unary_text(op, "f32", x.shape), [x])
    _same(got, want)


@pytest.mark.parametrize("dims", [(1,), (0,), (0, 1)])
def test_engine_reduce_of_a_broadcast_matches_the_kernel(dims):
    """The reduce fast path takes no views: a broadcast operand reaches it materialised, as the
    kernel gets it (``np.add.reduce`` of a stride-0 view adds in another order)."""
    x = (np.random.default_rng(4).standard_normal(3000) * 100).astype(np.float32)
    out = [s for d, s in enumerate((40, 3000)) if d not in dims]
    to = _ty(out, "f32")
    text = f"""
    func.func @main(%a: tensor<3000xf32>) -> {to} {{
      %b = stablehlo.broadcast_in_dim %a, dims = [1] : (tensor<3000xf32>) -> tensor<40x3000xf32>
      %z = stablehlo.constant dense<0.0> : tensor<f32>
      %r = stablehlo.reduce(%b init: %z) applies stablehlo.add across dimensions = {list(dims)} : (tensor<40x3000xf32>, tensor<f32>) -> {to}
      return %r : {to}
    }}"""
    (want,), (got,) = _stepwise_and_generated(text, [x])
    _same(got, want)


@pytest.mark.parametrize("dt", [np.float32, np.float16, BF16], ids=lambda d: np.dtype(d).name)
def test_near_midpoint_bit_test_is_the_general_one_zeros_included(dt):
    from stablehlo_conform.numeric import near_midpoint, near_midpoint_general

    rng = np.random.default_rng(13)
    raw = rng.integers(0, 1 << 63, 1 << 16, dtype=np.int64).view(np.float64)  # every f64 exponent
    mid = (rng.standard_normal(1 << 12) * 10).astype(dt).astype(np.float64)
    ulp = np.spacing(mid.astype(dt)).astype(np.float64)
    near = np.concatenate([mid + ulp / 2 + k * np.spacing(mid) for k in range(-6, 7)])  # on and near midpoints
    special = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 2.0 ** -126, 2.0 ** -149,
                        2.0 ** -150, 2.0 ** -24, 2.0 ** -25, 65504.0, 65520.0, 3.4028235e38, 3.4028236e38])
    r = np.concatenate([raw, -raw, near, special, np.zeros(100), -np.zeros(100)])
    with np.errstate(all="ignore"):
        _same(near_midpoint(r, np.dtype(dt)), near_midpoint_general(r, np.dtype(dt)))
