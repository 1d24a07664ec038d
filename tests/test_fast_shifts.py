"""The shifts' native path (``bitwise.shift_native``: NumPy's shifts on the operand type's own
bit patterns) against the general one on uint64 patterns (``bitwise.shift_general``), bit for
bit: every i8/ui8 value by every amount in [-1, 9] (so every in-range amount, the first ones out
of range and a negative one), random wider operands with amounts in range, at and past the
width, negative and huge; broadcast and rank-0 operands; and through the engine's fast path.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from stablehlo_conform import frontend
from stablehlo_conform.engine import Engine
from stablehlo_conform.kernels import bitwise

KINDS = ["left", "logical", "arithmetic"]
OPS = {"left": "shift_left", "logical": "shift_right_logical", "arithmetic": "shift_right_arithmetic"}


def _same(fast, general, dt):
    fast, general = np.asarray(fast), np.asarray(general)
    assert fast.dtype == general.dtype == np.dtype(dt) and fast.shape == general.shape
    assert fast.tobytes() == general.tobytes()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dt", [np.int8, np.uint8])
def test_every_8_bit_value_by_every_amount(kind, dt):
    info = np.iinfo(dt)
    values = np.arange(int(info.min), int(info.max) + 1)
    amounts = np.arange(-1, 10) if info.min else np.append(np.arange(0, 10), 255)  # 255: -1's pattern
    a, s = (x.astype(dt) for x in np.meshgrid(values, amounts, indexing="ij"))
    _same(bitwise.shift_native(kind, a, s), bitwise.shift_general(kind, dt, a, s), dt)
    for amount in amounts:  # one amount for all, as a broadcast view and as a full array
        sv = np.broadcast_to(np.asarray(amount, dt), a.shape[:1])
        _same(bitwise.shift_native(kind, a[:, 0], sv), bitwise.shift_general(kind, dt, a[:, 0], sv), dt)


def _patterns(values, dt) -> np.ndarray:
    """Python integers as ``dt`` values, modulo 2**bits (two's complement)."""
    bits = np.dtype(dt).itemsize * 8
    u = np.array([int(v) % 2 ** bits for v in values], dtype=np.uint64)
    return u.astype(np.dtype(f"u{bits // 8}")).view(dt)


def _random(dt, n, rng) -> np.ndarray:
    """``n`` random bit patterns of ``dt``."""
    return _patterns(rng.integers(0, 2 ** 64, n, dtype=np.uint64), dt)


def _wide_amounts(dt, n, rng) -> np.ndarray:
    """In-range amounts, then the edges of the range (negative ones, the width, the type's
    extremes), then random patterns (almost all huge or negative)."""
    bits = np.dtype(dt).itemsize * 8
    special = _patterns([0, 1, bits - 1, bits, bits + 1, 2 * bits, 2 ** (bits - 1) - 1, 2 ** (bits - 1),
                         -1, -bits, -(bits - 1), 2 ** bits - 2], dt)
    in_range = rng.integers(0, bits, n).astype(dt)
    return np.concatenate([in_range, rng.choice(special, n), _random(dt, n, rng)])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dt", [np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64])
def test_wider_types_with_amounts_in_and_out_of_range(kind, dt):
    rng = np.random.default_rng(np.dtype(dt).itemsize * 3 + KINDS.index(kind))
    bits = np.dtype(dt).itemsize * 8
    s = _wide_amounts(dt, 3000, rng)
    a = _random(dt, s.size, rng)
    a[:8] = _patterns([2 ** (bits - 1), 2 ** (bits - 1) - 1, 0, 1, -1, 2 ** (bits - 2), 3, -3], dt)
    _same(bitwise.shift_native(kind, a, s), bitwise.shift_general(kind, dt, a, s), dt)
    in_range = s[:1000]
    _same(bitwise.shift_native(kind, a[:1000], in_range), bitwise.shift_general(kind, dt, a[:1000], in_range), dt)
    for amount in np.unique(s[1000:2000]):
        sv = np.broadcast_to(np.asarray(amount, dt), (40, 75))
        av = a.reshape(120, 75)[::3]
        _same(bitwise.shift_native(kind, av, sv), bitwise.shift_general(kind, dt, av, sv), dt)


@pytest.mark.parametrize("kind", KINDS)
def test_rank_0_broadcast_and_empty_operands(kind):
    dt = np.int8
    a = np.arange(-128, 128, dtype=dt).reshape(16, 16)
    cases = [(np.asarray(np.int8(-77)), np.asarray(np.int8(3))), (np.asarray(np.int8(-77)), np.asarray(np.int8(9))),
             (a, np.broadcast_to(np.arange(-4, 12, dtype=dt)[:, None], (16, 16))),
             (np.broadcast_to(a[0], (16, 16)), np.broadcast_to(np.arange(16, dtype=dt), (16, 16))),
             (a[::2, ::3], np.full((8, 6), 5, dt)), (np.zeros((0, 3), dt), np.zeros((0, 3), dt))]
    for x, s in cases:
        _same(bitwise.shift_native(kind, x, s), bitwise.shift_general(kind, dt, x, s), dt)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("el,amount", [("i8", 4), ("i8", 8), ("i8", -1), ("ui8", 7), ("ui8", 200),
                                       ("i32", 31), ("i32", 40), ("ui64", 63), ("i4", 2), ("i4", 5)])
def test_engine_fast_path_matches_the_kernel(kind, el, amount):
    """A broadcast constant amount (as the int4 unpacking of quantized models has it), through the
    engine step by step and through its generated block, against the general path."""
    text = f"""
    func.func @main(%a: tensor<4x64x{el}>) -> tensor<4x64x{el}> {{
      %c = stablehlo.constant dense<{amount}> : tensor<{el}>
      %s = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<{el}>) -> tensor<4x64x{el}>
      %r = stablehlo.{OPS[kind]} %a, %s : tensor<4x64x{el}>
      return %r : tensor<4x64x{el}>
    }}"""
    (mod,) = frontend.load_text(text)
    dt = {"i8": np.int8, "ui8": np.uint8, "i32": np.int32, "ui64": np.uint64, "i4": ml_dtypes.int4}[el]
    if el == "i4":
        a = np.arange(256).reshape(4, 64) % 16 - 8
    else:
        a = _random(dt, 256, np.random.default_rng(1)).reshape(4, 64)
    a = a.astype(dt)
    want = bitwise.shift_general(kind, dt, a, np.full(a.shape, amount).astype(dt))
    eng = Engine(mod)
    for _ in range(3):  # step by step, then as a generated block (with the fast path)
        (got,) = eng.call("main", [a])
        _same(got, want, dt)
