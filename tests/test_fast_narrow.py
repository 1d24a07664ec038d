"""bf16 and the f8/f6/f4 types in f32, and tables of 8- and 16-bit operands, against the general
paths, bit for bit.

- ``+ - * /``, ``fmod``, ``sqrt``, sign changes and rounding to integers computed in f32 and
  rounded once (``kernels._fast.in_f32``) against ``elementwise.float_fn`` (f64, rounded once):
  every pair of operands of every 8-bit float type (every value pair of the f6/f4 types), every
  bf16 value of the unary ones, every bf16 value against adversarial partners for the binary
  ones (all 2**32 bf16 pairs with ``CONFORM_EVERY_BF16_PAIR=1``: a few minutes per op).
- ``maximum``/``minimum`` and ``compare`` on f32 values against the f64 ones.
- the tables of ``fast``'s element-wise factory (8-bit binary ops, 8- and 16-bit unary ops,
  ``convert`` included) through the engine against its kernels, NaN payloads included.
"""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest

from stablehlo_conform import frontend
from stablehlo_conform import types as T
from stablehlo_conform.engine import Engine
from stablehlo_conform.kernels import _fast, comparison, elementwise
from stablehlo_conform.numeric import wide

BF16 = np.dtype(ml_dtypes.bfloat16)
E8M0 = np.dtype(ml_dtypes.float8_e8m0fnu)
BYTE_FLOATS = [np.dtype(getattr(ml_dtypes, n)) for n in (
    "float8_e3m4", "float8_e4m3", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e4m3b11fnuz", "float8_e5m2",
    "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn")]
BINARY = [np.add, np.subtract, np.multiply, np.divide, np.fmod]
UNARY = [np.sqrt, np.negative, np.abs, np.ceil, np.floor, np.rint]
assert set(BINARY + UNARY) == _fast.ROUNDED_IN_F32


def _name(dt) -> str:
    return np.dtype(dt).name


def _codes(dt) -> np.ndarray:
    """Every value of ``dt`` (every bit pattern of its width)."""
    dt = np.dtype(dt)
    bits = 16 if dt.itemsize == 2 else T.ElementType(T.name_of_dtype(dt)).bits
    return np.arange(1 << bits, dtype=np.uint16 if bits == 16 else np.uint8).view(dt)


def _pairs(dt) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of values of ``dt``: two arrays of shape (n, n)."""
    c = _codes(dt)
    return np.broadcast_to(c[:, None], (c.size, c.size)).copy(), np.broadcast_to(c[None, :], (c.size, c.size)).copy()


def _same(fast, general, dt=None):
    fast, general = np.asarray(fast), np.asarray(general)
    assert fast.dtype == general.dtype and fast.shape == general.shape
    if dt is not None:
        assert fast.dtype == np.dtype(dt)
    bad = np.flatnonzero(np.frombuffer(fast.tobytes(), np.uint8) != np.frombuffer(general.tobytes(), np.uint8))
    assert bad.size == 0, f"{bad.size} bytes differ, first at byte {bad[:5]}"


def _bf16_partners() -> np.ndarray:
    """bf16 values that reach the edges: signed zeros, infinities, quiet and signaling NaNs of
    both signs, the subnormal and normal extremes, values around 1 and 2, operands whose
    products and quotients overflow, underflow into and through the subnormals, land on
    midpoints, and random values of every exponent."""
    special = np.array([0x0000, 0x7F80, 0x7FC0, 0x7FC1, 0x7F81, 0x7FFF, 0x0001, 0x0002, 0x0003, 0x007F,
                        0x0080, 0x0081, 0x00FF, 0x7F7F, 0x7F7E, 0x3F80, 0x3F81, 0x3FFF, 0x4000, 0x4040,
                        0x3F00, 0x3FC0, 0x3FA0, 0x4B00, 0x4B7F, 0x3400, 0x0100, 0x1F80, 0x5F80, 0x7E80],
                       dtype=np.uint16)
    rng = np.random.default_rng(7)
    rand = rng.integers(0, 1 << 15, 96, dtype=np.uint16)
    v = np.concatenate([special, rand])
    return np.concatenate([v, v | np.uint16(0x8000)]).view(BF16)


@pytest.mark.parametrize("dt", BYTE_FLOATS, ids=_name)
@pytest.mark.parametrize("f", BINARY, ids=lambda f: f.__name__)
def test_every_byte_float_pair_in_f32_matches_f64_rounded_once(dt, f):
    a, b = _pairs(dt)
    if not _fast.rounds_in_f32(dt):
        assert dt == E8M0  # ml_dtypes rounds (2**-127, 2**-126) up: its values stay in f64
        return
    _same(_fast.in_f32(f, dt, a, b), elementwise.float_fn(f, dt, a, b), dt)
    _same(elementwise.exact_float_fn(f, dt, a, b), elementwise.float_fn(f, dt, a, b), dt)


@pytest.mark.parametrize("dt", [*[d for d in BYTE_FLOATS if d != E8M0], BF16], ids=_name)
@pytest.mark.parametrize("f", UNARY, ids=lambda f: f.__name__)
def test_every_value_of_a_unary_op_in_f32_matches_f64_rounded_once(dt, f):
    x = _codes(dt)
    _same(_fast.in_f32(f, dt, x), elementwise.float_fn(f, dt, x), dt)
    _same(_fast.in_f32(f, dt, x[5]), elementwise.float_fn(f, dt, x[5]), dt)  # rank 0


@pytest.mark.parametrize("f", BINARY, ids=lambda f: f.__name__)
def test_every_bf16_value_against_adversarial_partners(f):
    x = _codes(BF16)
    p = _bf16_partners()
    a = np.broadcast_to(x[:, None], (x.size, p.size))
    b = np.broadcast_to(p[None, :], (x.size, p.size))
    for lhs, rhs in ((a, b), (b, a)):
        _same(_fast.in_f32(f, BF16, lhs, rhs), elementwise.float_fn(f, BF16, lhs, rhs), BF16)


@pytest.mark.skipif(os.environ.get("CONFORM_EVERY_BF16_PAIR") != "1", reason="set CONFORM_EVERY_BF16_PAIR=1")
@pytest.mark.parametrize("f", BINARY[:4], ids=lambda f: f.__name__)
def test_every_bf16_pair(f):
    x = _codes(BF16)
    for hi in range(0, x.size, 128):
        a = np.repeat(x[hi:hi + 128], x.size)
        b = np.tile(x, 128)
        _same(_fast.in_f32(f, BF16, a, b), elementwise.float_fn(f, BF16, a, b), BF16)


@pytest.mark.parametrize("dt", [BF16, *BYTE_FLOATS], ids=_name)
def test_f32_values_are_the_conversion(dt):
    x = _codes(dt)
    with np.errstate(invalid="ignore"):
        want = x.astype(np.float32)
    _same(_fast.f32_values(x), want)
    _same(_fast.f32_values(x[3]), want[3])
    _same(_fast.f32_values(np.broadcast_to(x[7], (3, 4))), np.broadcast_to(want[7], (3, 4)))
    with np.errstate(invalid="ignore"):
        assert wide(x).tobytes() == want.astype(np.float64).tobytes()


@pytest.mark.parametrize("dt", [*BYTE_FLOATS, BF16], ids=_name)
def test_maximum_minimum_and_compare_on_f32_values_match_f64(dt):
    if dt == BF16:
        c, p = _codes(BF16), _bf16_partners()
        a, b = np.broadcast_to(c[:, None], (c.size, p.size)), np.broadcast_to(p[None, :], (c.size, p.size))
    else:
        a, b = _pairs(dt)
    wa, wb = wide(a), wide(b)
    want_max = np.isnan(wa) | ((wa > wb) & ~np.isnan(wb)) | ((wa == wb) & ~np.signbit(wa))
    want_min = np.isnan(wa) | ((wa < wb) & ~np.isnan(wb)) | ((wa == wb) & np.signbit(wa))
    _same(elementwise.maximum(dt, a, b), np.where(want_max, a, b), dt)
    _same(elementwise.minimum(dt, a, b), np.where(want_min, a, b), dt)
    for d in comparison.DIRECTIONS:
        _same(comparison.compare_values(a, b, d, None), comparison._apply_direction(wa, wb, d))


def _run_twice(text, args):
    """The engine's results step by step (kernels), then through its generated block."""
    (mod,) = frontend.load_text(text)
    eng = Engine(mod)
    return [eng.call("main", list(args)) for _ in range(3)]


def _binary_text(op, el, shape):
    ty = f"tensor<{'x'.join(map(str, shape))}x{el}>"
    res = ty.replace(el, "i1") if op.startswith("compare") else ty
    body = (f"stablehlo.compare {op.split()[1]}, %a, %b : ({ty}, {ty}) -> {res}" if op.startswith("compare")
            else f"stablehlo.{op} %a, %b : {ty}")
    return f"""
    func.func @main(%a: {ty}, %b: {ty}) -> {res} {{
      %r = {body}
      return %r : {res}
    }}"""


def _tiled_pairs(dt) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of values of ``dt``, repeated up to at least 2**14 of them (a table's least)."""
    a, b = _pairs(dt)
    reps = max(1, -(-(1 << 14) // a.size))
    return np.tile(a, (reps, 1)), np.tile(b, (reps, 1))


@pytest.mark.parametrize("dt", BYTE_FLOATS, ids=_name)
@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide", "remainder", "power", "atan2", "maximum",
                                "minimum", "compare LT", "compare EQ"])
def test_engine_byte_float_tables_match_the_kernels(dt, op):
    a, b = _tiled_pairs(dt)
    text = _binary_text(op, T.name_of_dtype(dt), a.shape)
    try:
        step, *fast = _run_twice(text, (a, b))
    except Exception as e:  # noqa: BLE001 - an op the kernel does not take on this type
        pytest.skip(f"{op} on {T.name_of_dtype(dt)}: {type(e).__name__}")
    for got in fast:
        _same(got[0], step[0])


UNARY_OPS = ["exponential", "tanh", "logistic", "rsqrt", "log", "sqrt", "negate", "abs", "sine", "sign",
             "round_nearest_afz"]


@pytest.mark.parametrize("dt", [BF16, *BYTE_FLOATS], ids=_name)
@pytest.mark.parametrize("op", UNARY_OPS)
def test_engine_unary_tables_match_the_kernels(dt, op):
    x = _codes(dt)
    x = np.tile(x, max(1, -(-(1 << 14) // x.size))).reshape(-1, 64)  # a table's least size
    ty = f"tensor<{x.shape[0]}x64x{T.name_of_dtype(dt)}>"
    text = f"""
    func.func @main(%a: {ty}) -> {ty} {{
      %r = stablehlo.{op} %a : {ty}
      return %r : {ty}
    }}"""
    step, *fast = _run_twice(text, (x,))
    for got in fast:
        _same(got[0], step[0], dt)


@pytest.mark.parametrize("src", [BF16, *BYTE_FLOATS], ids=_name)
@pytest.mark.parametrize("dst", ["f32", "bf16", "f16", "f8E4M3FN", "f8E8M0FNU", "i8", "f64"])
def test_engine_converts_from_narrow_floats_match_the_kernel(src, dst):
    x = _codes(src)
    x = np.tile(x, max(1, -(-(1 << 14) // x.size))).reshape(-1, 64)
    el = T.name_of_dtype(src)
    text = f"""
    func.func @main(%a: tensor<{x.shape[0]}x64x{el}>) -> tensor<{x.shape[0]}x64x{dst}> {{
      %r = stablehlo.convert %a : (tensor<{x.shape[0]}x64x{el}>) -> tensor<{x.shape[0]}x64x{dst}>
      return %r : tensor<{x.shape[0]}x64x{dst}>
    }}"""
    step, *fast = _run_twice(text, (x,))
    for got in fast:
        _same(got[0], step[0])


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide", "maximum", "minimum", "compare GE"])
def test_engine_bf16_binary_ops_match_the_kernels(op):
    c, p = _codes(BF16), _bf16_partners()
    a = np.broadcast_to(c[:, None], (c.size, p.size)).copy()
    b = np.broadcast_to(p[None, :], (c.size, p.size)).copy()
    step, *fast = _run_twice(_binary_text(op, "bf16", a.shape), (a, b))
    for got in fast:
        _same(got[0], step[0])
    if op in ("add", "subtract", "multiply", "divide"):  # and the kernel is f64 rounded once
        f = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide}[op]
        _same(step[0], elementwise.float_fn(f, BF16, a, b), BF16)


def test_tables_are_taken_from_their_least_size_only():
    """Small operands run the kernel itself (a table costs a quarter of that many calls)."""
    f8 = np.dtype(ml_dtypes.float8_e4m3fn)
    assert _fast._table_path(elementwise.add, (f8, f8), f8, (127, 128)) is None
    assert _fast._table_path(elementwise.add, (f8, f8), f8, (128, 128)) is not None
    assert _fast._table_path(elementwise.negate, (BF16,), BF16, ((1 << 14) - 1,)) is None
    assert _fast._table_path(elementwise.negate, (f8,), f8, (64,)) is not None
    assert _fast._table_path(elementwise.add, (BF16, BF16), BF16, (1 << 20,)) is None  # 2**32 entries
    assert _fast._table_path(elementwise.add, (np.dtype(np.int8),) * 2, np.dtype(np.int8), (1 << 20,)) is None


@pytest.mark.parametrize("op,el", [("rsqrt", "bf16"), ("exponential", "bf16"), ("log", "bf16"),
                                   ("tanh", "f8E4M3FN"), ("add", "f8E5M2")])
def test_small_narrow_ops_read_the_table_once_their_calls_pay_for_it(op, el, monkeypatch):
    """An element-wise op too small for a table (a layer norm's ``rsqrt`` of one value per row)
    calls its kernel function until the ops of its kind have computed ``TABLE_MIN`` elements,
    then reads the table: every bit pattern (NaNs, infinities, zeros, subnormals, negatives)
    gives the step-by-step kernel's bits on both sides of the switch."""
    dt = np.dtype(getattr(ml_dtypes, {"bf16": "bfloat16", "f8E4M3FN": "float8_e4m3fn", "f8E5M2": "float8_e5m2"}[el]))
    codes = _codes(dt)
    size = 96
    rng = np.random.default_rng(11)
    unary = op != "add"
    ty = f"tensor<{size}x{el}>"
    text = (f"""func.func @main(%a: {ty}) -> {ty} {{
      %r = stablehlo.{op} %a : {ty}
      return %r : {ty}
    }}""" if unary else _binary_text(op, el, (size,)))
    entries = codes.size ** (1 if unary else 2)
    least = 1 << 9
    monkeypatch.setitem(_fast.TABLE_MIN, entries, least)
    built = []
    table = _fast._table

    def spy(*a):
        built.append(a)
        return table(*a)

    monkeypatch.setattr(_fast, "_table", spy)
    monkeypatch.setattr(_fast, "_direct", {})  # no element of this kind computed yet
    (mod,) = frontend.load_text(text)
    step = Engine(mod)
    step.generate_blocks = False
    fast = Engine(mod)
    calls = -(-least // size)
    first = None  # the first call that read the table
    for i in range(calls + 6):
        args = [rng.choice(codes, size) for _ in range(1 if unary else 2)]
        if i == calls + 5:
            args[0][:4] = codes[[0, codes.size // 2, codes.size - 1, 1]]  # +0, -0, a NaN of each sign
        want = step.call("main", args)
        got = fast.call("main", args)
        _same(got[0], want[0], dt)
        if built and first is None:
            first = i
    assert first == calls and len(fast._runners) == 1  # generated from the first call on


def test_small_ops_of_one_kind_count_their_elements_together(monkeypatch):
    """Each layer's norm is an op of its own: the elements of every op of one kernel function and
    types count towards the table they share (two ``rsqrt`` of 64 elements a run: the table
    from the third run on, where 256 elements pay for it)."""
    monkeypatch.setitem(_fast.TABLE_MIN, 1 << 16, 256)
    monkeypatch.setattr(_fast, "_direct", {})
    reads = []
    read = _fast._read

    def spy(table, xs):
        reads.append(xs[0].size)
        return read(table, xs)

    monkeypatch.setattr(_fast, "_read", spy)
    ty = "tensor<64xbf16>"
    (mod,) = frontend.load_text(f"""func.func @main(%a: {ty}, %b: {ty}) -> ({ty}, {ty}) {{
      %r = stablehlo.rsqrt %a : {ty}
      %s = stablehlo.rsqrt %b : {ty}
      return %r, %s : {ty}, {ty}
    }}""")
    codes = _codes(BF16)
    rng = np.random.default_rng(2)
    step = Engine(mod)
    step.generate_blocks = False
    fast = Engine(mod)
    for i in range(4):
        args = [rng.choice(codes, 64), rng.choice(codes, 64)]
        want, got = step.call("main", args), fast.call("main", args)
        for g, w in zip(got, want):
            _same(g, w, BF16)
        assert len(reads) == (0 if i < 2 else 2 * (i - 1))


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16, BF16, np.dtype(ml_dtypes.float8_e4m3fn),
                                np.int8, np.uint16, np.int64, np.bool_, np.complex64, np.complex128])
def test_select_blends_bits_as_where_copies_them(dt):
    """Every bit pattern (signaling NaNs of every payload included) on either side of a random
    predicate, strided and broadcast operands, and a predicate whose bytes are not 0 or 1."""
    dt = np.dtype(dt)
    rng = np.random.default_rng(3)
    n = 1 << 14
    a = rng.integers(0, 256, n * dt.itemsize, dtype=np.uint8).view(dt) if dt != np.bool_ else rng.random(n) < .5
    b = rng.integers(0, 256, n * dt.itemsize, dtype=np.uint8).view(dt) if dt != np.bool_ else rng.random(n) < .5
    pred = rng.random(n) < 0.5
    odd = rng.integers(0, 4, n, dtype=np.uint8).view(np.bool_)
    cases = [(pred, a, b), (odd, a, b), (pred[::2], a[::2], b[1::2]), (pred, np.broadcast_to(a[3], (n,)), b),
             (pred.reshape(128, 128), a.reshape(128, 128), b.reshape(128, 128).T), (pred[:100], a[:100], b[:100]),
             (np.True_, a, b), (pred[5], a[5], b[5])]
    for p, x, y in cases:
        _same(elementwise.where(p, x, y), np.where(p, x, y))
    step, *fast = _run_twice(f"""
    func.func @main(%p: tensor<{n}xi1>, %a: tensor<{n}xf32>, %b: tensor<{n}xf32>) -> tensor<{n}xf32> {{
      %r = stablehlo.select %p, %a, %b : tensor<{n}xi1>, tensor<{n}xf32>
      return %r : tensor<{n}xf32>
    }}""", (pred, *(rng.integers(0, 1 << 32, n, dtype=np.uint32).view(np.float32) for _ in "ab")))
    for got in fast:
        _same(got[0], step[0])
