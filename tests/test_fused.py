"""Generated blocks with fast paths and inlined loops give the step-by-step path's results,
bit for bit (see ``engine.codegen`` and ``opinfo.FastPath``)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from stablehlo_conform import frontend
from stablehlo_conform.engine import Engine
from stablehlo_conform.engine.codegen import _Plan
from stablehlo_conform.kernels.registry import load_all

from test_engine import _assert_generated_matches_stepwise, _outputs

TYPES = {
    "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64,
    "i1": np.bool_, "i4": ml_dtypes.int4, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "ui8": np.uint8, "ui32": np.uint32, "ui64": np.uint64,
    "complex<f32>": np.complex64, "complex<f64>": np.complex128,
}
N = 48


def _values(name: str, seed: int) -> np.ndarray:
    """Special values of the type first (zeros of both signs, infinities, NaN, extremes,
    ties), then random ones."""
    dt = np.dtype(TYPES[name])
    rng = np.random.default_rng(seed)
    if dt == np.bool_:
        return rng.integers(0, 2, N).astype(bool)
    if dt.kind in "iu" or name == "i4":
        info = ml_dtypes.iinfo(dt) if name == "i4" else np.iinfo(dt)
        special = [0, 1, -1, 2, 3, -7, info.min, info.max, info.min + 1, info.max - 1]
        special = [v for v in special if info.min <= v <= info.max]
        hi = min(int(info.max), 2**62)
        rand = [int(v) for v in rng.integers(int(info.min), hi, N - len(special), dtype=np.int64)]
        if dt == np.uint64:
            rand = [v * 3 for v in rand]  # above 2**63 too
        return np.array(special + rand, dtype=object).astype(dt)
    info = ml_dtypes.finfo(dt) if dt.kind == "V" else np.finfo(dt.type(0).real.dtype)
    special = [0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, np.inf, -np.inf, np.nan, float(info.max),
               -float(info.max), float(info.tiny), float(info.smallest_subnormal), 1e-3, 20.0, -0.75]
    rand = list(rng.standard_normal(N - len(special)) * 4)
    real = np.array(special + rand, dtype=np.float64)
    if dt.kind == "c":
        with np.errstate(invalid="ignore"):  # 1j * inf has a NaN real part, as intended
            return (real + 1j * np.roll(real, 5)).astype(dt)
    return real.astype(dt)


def _module(text):
    (mod,) = frontend.load_text(text)
    return mod


def _fast_ops(mod, entry: str = "main") -> int:
    """How many ops of ``entry``'s first block the generated function runs through fast paths."""
    registry = load_all()
    eng = Engine(mod, registry)
    region = mod.funcs[entry].body
    plan = _Plan(region, 0, eng._steps(region.blocks[0]), False, registry, eng._steps)
    return len(plan.fast)


def _outcome(eng: Engine, entry: str, args):
    try:
        return _outputs(eng, entry, args)
    except Exception as e:  # the same error either way
        return type(e).__name__, str(e)


def _check(text: str, args, entry: str = "main") -> int | None:
    """Assert generated == step by step (bit for bit or the same error, operands untouched);
    returns the number of fast ops used (None: the step-by-step run fails, so no block is
    generated)."""
    mod = _module(text)
    before = [np.array(a, copy=True) for a in args]
    stepwise = Engine(mod)
    stepwise.generate_blocks = False
    expect = _outcome(stepwise, entry, args)
    generated = False
    for _ in range(4):
        eng = Engine(mod)
        assert _outcome(eng, entry, args) == expect
        generated = generated or bool(eng._runners)
    if isinstance(expect[0], str):
        return None
    assert generated
    for a, b in zip(args, before):
        assert a.tobytes() == b.tobytes(), "a generated block wrote into an argument"
    return _fast_ops(mod, entry)


UNARY = ("abs negate sqrt ceil floor round_nearest_even round_nearest_afz tanh exponential log sine cosine "
         "tan logistic rsqrt cbrt sign not popcnt count_leading_zeros exponential_minus_one log_plus_one").split()
BINARY = "add subtract multiply divide remainder maximum minimum power and or xor atan2 shift_left".split()


def _unary_text(op: str, t: str) -> str:
    return f"""func.func @main(%a: tensor<{N}x{t}>) -> tensor<{N}x{t}> {{
  %r = "stablehlo.{op}"(%a) : (tensor<{N}x{t}>) -> tensor<{N}x{t}>
  func.return %r : tensor<{N}x{t}>
}}"""


def _binary_text(op: str, t: str) -> str:
    return f"""func.func @main(%a: tensor<{N}x{t}>, %b: tensor<{N}x{t}>) -> tensor<{N}x{t}> {{
  %r = "stablehlo.{op}"(%a, %b) : (tensor<{N}x{t}>, tensor<{N}x{t}>) -> tensor<{N}x{t}>
  func.return %r : tensor<{N}x{t}>
}}"""


def _run_all(cases) -> tuple[int, int]:
    """(cases compared, cases run through fast paths); a case may fail only as unsupported."""
    compared = fast = 0
    for text, args in cases:
        try:
            _module(text)
        except Exception:  # a type the op does not take (the verifier says so)
            continue
        used = _check(text, args)
        if used is None:
            error = _outcome(Engine(_module(text)), "main", args)
            assert error[0] == "UnsupportedOp", error
            continue
        fast += used > 0
        compared += 1
    return compared, fast


def test_element_wise_fast_paths_match_the_kernels_on_every_type():
    unary = [(_unary_text(op, t), (_values(t, 1),)) for op in UNARY for t in TYPES]
    binary = [(_binary_text(op, t), (_values(t, 2), np.roll(_values(t, 3), 7))) for op in BINARY for t in TYPES]
    compared, fast = _run_all(unary + binary)
    assert compared > 200 and fast == compared


def test_rank_0_chains_match_the_kernels():
    """Rank-0 values between fast paths may be NumPy scalars; every op reading one gets what
    the kernel would."""
    cases = []
    for t in ("f16", "bf16", "f32", "f64", "i8", "i32", "ui64", "complex<f32>"):
        for op in UNARY + BINARY:
            second = "%s, %s" % ("%s", "%b") if op in BINARY else "%s"
            ty = ", ".join([f"tensor<{t}>"] * (2 if op in BINARY else 1))
            text = f"""func.func @main(%a: tensor<{t}>, %b: tensor<{t}>) -> tensor<{t}> {{
  %s = "stablehlo.add"(%a, %b) : (tensor<{t}>, tensor<{t}>) -> tensor<{t}>
  %r = "stablehlo.{op}"({second}) : ({ty}) -> tensor<{t}>
  func.return %r : tensor<{t}>
}}"""
            for k in range(0, N, 7):
                cases.append((text, (_values(t, 12)[k].reshape(()), _values(t, 13)[k].reshape(()))))
        for direction in ("EQ", "NE", "GE", "GT", "LE", "LT"):
            text = f"""func.func @main(%a: tensor<{t}>, %b: tensor<{t}>) -> tensor<{t}> {{
  %s = "stablehlo.subtract"(%a, %b) : (tensor<{t}>, tensor<{t}>) -> tensor<{t}>
  %p = stablehlo.compare {direction}, %s, %b : (tensor<{t}>, tensor<{t}>) -> tensor<i1>
  %r = stablehlo.select %p, %s, %a : tensor<i1>, tensor<{t}>
  func.return %r : tensor<{t}>
}}"""
            for k in range(0, N, 5):
                cases.append((text, (_values(t, 15)[k].reshape(()), _values(t, 16)[k].reshape(()))))
    compared, fast = _run_all(cases)
    assert compared > 500 and fast == compared


@pytest.mark.parametrize("t", ["f16", "bf16", "f32", "f64", "i8", "i32", "ui32", "ui64", "i4", "complex<f32>"])
def test_compare_select_convert_match_the_kernels(t):
    cases = []
    for direction in ("EQ", "NE", "GE", "GT", "LE", "LT"):
        for ctype in ("", ", TOTALORDER", ", FLOAT", ", SIGNED", ", UNSIGNED"):
            text = f"""func.func @main(%a: tensor<{N}x{t}>, %b: tensor<{N}x{t}>) -> tensor<{N}x{t}> {{
  %p = stablehlo.compare {direction}, %a, %b{ctype} : (tensor<{N}x{t}>, tensor<{N}x{t}>) -> tensor<{N}xi1>
  %r = stablehlo.select %p, %a, %b : tensor<{N}xi1>, tensor<{N}x{t}>
  func.return %r : tensor<{N}x{t}>
}}"""
            cases.append((text, (_values(t, 4), np.roll(_values(t, 4), 3))))
    for to in TYPES:
        text = f"""func.func @main(%a: tensor<{N}x{t}>) -> tensor<{N}x{to}> {{
  %r = stablehlo.convert %a : (tensor<{N}x{t}>) -> tensor<{N}x{to}>
  func.return %r : tensor<{N}x{to}>
}}"""
        cases.append((text, (_values(t, 5),)))
    compared, fast = _run_all(cases)
    assert compared >= 6 + len(TYPES) and fast == compared


def test_shape_ops_and_dots_match_the_kernels():
    f32 = np.random.default_rng(6).standard_normal((3, 4, 5)).astype(np.float32)
    text = """func.func @main(%x: tensor<3x4x5xf32>, %v: tensor<5xf32>, %i: tensor<i64>, %j: tensor<i64>,
                     %w: tensor<5x6xf32>, %k: tensor<ui32>) -> (tensor<3x4x6xf32>, tensor<2x2x3xf32>, tensor<4x3xf32>) {
  %b0 = stablehlo.broadcast_in_dim %v, dims = [1] : (tensor<5xf32>) -> tensor<1x5xf32>
  %b = stablehlo.broadcast_in_dim %b0, dims = [1, 2] : (tensor<1x5xf32>) -> tensor<3x4x5xf32>
  %s = stablehlo.add %x, %b : tensor<3x4x5xf32>
  %t = stablehlo.broadcast_in_dim %s, dims = [0, 1, 2] : (tensor<3x4x5xf32>) -> tensor<3x4x5xf32>
  %u = stablehlo.multiply %t, %s : tensor<3x4x5xf32>
  %d = stablehlo.dot_general %u, %w, contracting_dims = [2] x [0] : (tensor<3x4x5xf32>, tensor<5x6xf32>) -> tensor<3x4x6xf32>
  %e0 = stablehlo.dynamic_slice %x, %i, %j, %i, sizes = [2, 2, 3] : (tensor<3x4x5xf32>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<2x2x3xf32>
  %e1 = stablehlo.dynamic_slice %x, %k, %k, %k, sizes = [2, 2, 3] : (tensor<3x4x5xf32>, tensor<ui32>, tensor<ui32>, tensor<ui32>) -> tensor<2x2x3xf32>
  %e = stablehlo.subtract %e0, %e1 : tensor<2x2x3xf32>
  %c0 = stablehlo.broadcast_in_dim %e, dims = [1, 0, 2] : (tensor<2x2x3xf32>) -> tensor<2x2x3xf32>
  %e2 = stablehlo.slice %e [0:2, 0:1, 1:2] : (tensor<2x2x3xf32>) -> tensor<2x1x1xf32>
  %c1 = stablehlo.broadcast_in_dim %e2, dims = [0, 1, 2] : (tensor<2x1x1xf32>) -> tensor<2x2x3xf32>
  %c = stablehlo.add %c0, %c1 : tensor<2x2x3xf32>
  %m = stablehlo.reshape %u : (tensor<3x4x5xf32>) -> tensor<60xf32>
  %n = stablehlo.slice %m [0:12] : (tensor<60xf32>) -> tensor<12xf32>
  %o = stablehlo.reshape %n : (tensor<12xf32>) -> tensor<4x3xf32>
  %tt = stablehlo.transpose %o, dims = [0, 1] : (tensor<4x3xf32>) -> tensor<4x3xf32>
  func.return %d, %c, %tt : tensor<3x4x6xf32>, tensor<2x2x3xf32>, tensor<4x3xf32>
}"""
    v = np.arange(5, dtype=np.float32)
    w = np.random.default_rng(7).standard_normal((5, 6)).astype(np.float32)
    for i, j, k in ((1, 1, 1), (-5, 9, 2**31 + 3), (2, -1, 0)):
        args = (f32, v, np.array(i, np.int64), np.array(j, np.int64), w, np.array(k, np.uint32))
        assert _check(text, args) >= 11


LOOP = """func.func @main(%h: tensor<1x8xf32>, %xs: tensor<6x1x4xf32>, %w: tensor<8x8xf32>, %u: tensor<4x8xf32>,
                 %n: tensor<i32>) -> (tensor<1x8xf32>, tensor<i32>, tensor<i32>) {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %r:3 = stablehlo.while(%i = %zero, %acc = %h, %k = %n) : tensor<i32>, tensor<1x8xf32>, tensor<i32>
    cond {
      %c = stablehlo.compare LT, %i, %k, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %a = stablehlo.dot_general %acc, %w, contracting_dims = [1] x [0] : (tensor<1x8xf32>, tensor<8x8xf32>) -> tensor<1x8xf32>
      %x = stablehlo.dynamic_slice %xs, %i, %zero, %zero, sizes = [1, 1, 4] : (tensor<6x1x4xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x1x4xf32>
      %y = stablehlo.reshape %x : (tensor<1x1x4xf32>) -> tensor<1x4xf32>
      %b = stablehlo.dot_general %y, %u, contracting_dims = [1] x [0] : (tensor<1x4xf32>, tensor<4x8xf32>) -> tensor<1x8xf32>
      %s = stablehlo.add %a, %b : tensor<1x8xf32>
      %t = stablehlo.tanh %s : tensor<1x8xf32>
      %inner:2 = stablehlo.while(%j = %zero, %v = %t) : tensor<i32>, tensor<1x8xf32>
        cond {
          %c2 = stablehlo.compare LT, %j, %i, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
          stablehlo.return %c2 : tensor<i1>
        } do {
          %v2 = stablehlo.multiply %v, %v : tensor<1x8xf32>
          %j2 = stablehlo.add %j, %one : tensor<i32>
          stablehlo.return %j2, %v2 : tensor<i32>, tensor<1x8xf32>
        }
      %i2 = stablehlo.add %i, %one : tensor<i32>
      stablehlo.return %i2, %inner#1, %k : tensor<i32>, tensor<1x8xf32>, tensor<i32>
    }
  func.return %r#1, %r#0, %one : tensor<1x8xf32>, tensor<i32>, tensor<i32>
}"""


@pytest.mark.parametrize("n", [0, 1, 6, 9])
def test_inlined_loops_match_the_stepwise_path(n):
    rng = np.random.default_rng(8)
    args = (rng.standard_normal((1, 8)).astype(np.float32), rng.standard_normal((6, 1, 4)).astype(np.float32),
            (0.3 * rng.standard_normal((8, 8))).astype(np.float32),
            (0.3 * rng.standard_normal((4, 8))).astype(np.float32), np.array(n, np.int32))
    mod = _module(LOOP)
    assert _assert_generated_matches_stepwise(mod, "main", args)
    h, i, one = Engine(mod).call("main", args)
    assert type(i) is np.ndarray and i.shape == () and int(i) == n  # a loop's rank-0 result leaves as an array
    registry = load_all()
    eng = Engine(mod, registry)
    region = mod.funcs["main"].body
    plan = _Plan(region, 0, eng._steps(region.blocks[0]), False, registry, eng._steps)
    assert len(plan.loops) == 2 or n == 0  # both loops inline once their bodies ran


def test_element_wise_chain_writes_into_dead_buffers_only():
    text = """func.func @main(%a: tensor<64x32xf32>, %b: tensor<32xf32>) -> (tensor<64x32xf32>, tensor<64x32xf32>, tensor<2048xf32>, tensor<64x32xf32>) {
  %bb = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<32xf32>) -> tensor<64x32xf32>
  %0 = stablehlo.subtract %a, %bb : tensor<64x32xf32>
  %1 = stablehlo.multiply %0, %0 : tensor<64x32xf32>
  %2 = stablehlo.add %1, %a : tensor<64x32xf32>
  %3 = stablehlo.sqrt %2 : tensor<64x32xf32>
  %4 = stablehlo.divide %3, %bb : tensor<64x32xf32>
  %5 = stablehlo.negate %4 : tensor<64x32xf32>
  %6 = stablehlo.tanh %5 : tensor<64x32xf32>
  %7 = stablehlo.add %6, %3 : tensor<64x32xf32>
  %8 = stablehlo.convert %5 : tensor<64x32xf32>
  %9 = stablehlo.reshape %8 : (tensor<64x32xf32>) -> tensor<2048xf32>
  %10 = stablehlo.abs %5 : tensor<64x32xf32>
  func.return %7, %3, %9, %10 : tensor<64x32xf32>, tensor<64x32xf32>, tensor<2048xf32>, tensor<64x32xf32>
}"""
    rng = np.random.default_rng(9)
    args = (rng.standard_normal((64, 32)).astype(np.float32), rng.standard_normal(32).astype(np.float32))
    assert _check(text, args) == 12
    mod = _module(text)
    registry = load_all()
    eng = Engine(mod, registry)
    region = mod.funcs["main"].body
    plan = _Plan(region, 0, eng._steps(region.blocks[0]), False, registry, eng._steps)
    ops = region.blocks[0].ops
    by_name = {op.name + str(i): plan.reuse.get(id(op)) for i, op in enumerate(ops)}
    # %0 -> %1 -> %2 chain into one buffer; %3 is returned, so %4 and %7 may not overwrite it;
    # %5 writes into %4's buffer; tanh's result is new, so %7 writes into it; %bb is a view;
    # %8 and %9 alias %5, so %10 may not overwrite it
    assert by_name["stablehlo.multiply2"] is not None and by_name["stablehlo.add3"] is not None
    assert by_name["stablehlo.divide5"] is None and by_name["stablehlo.negate6"] is not None
    assert by_name["stablehlo.add8"] == ops[7].results[0] and by_name["stablehlo.abs11"] is None


@pytest.mark.parametrize("op", ["tanh", "exponential", "log", "logistic", "sine"])
def test_rounded_once_fast_path_in_blocks_matches_the_kernel(op):
    """A large f32 operand goes block by block; a block holding values the quick midpoint test
    cannot clear (zeros, tiny magnitudes) takes the kernel's function for that block."""
    rng = np.random.default_rng(14)
    x = (rng.standard_normal((3, 20011)) * 3).astype(np.float32)
    x[1, 5:9] = [0.0, -0.0, 1e-40, -1e-39]
    x[2, -3:] = [np.inf, -np.inf, np.nan]
    # inputs whose log or sine in f64 lies within 4 f64 ULPs of a rounding midpoint of f32
    # (found by a search over f32 inputs with near_midpoint): rounding the f64 value could
    # round the other way than the exact value there
    near = np.array([1010908474, 1092063211, 1036998039, 1056146191, 1121207592], np.uint32).view(np.float32)
    x[0, 100:105] = near
    x[2, 19000:19005] = near
    text = f"""func.func @main(%a: tensor<3x20011xf32>) -> tensor<3x20011xf32> {{
  %r = "stablehlo.{op}"(%a) : (tensor<3x20011xf32>) -> tensor<3x20011xf32>
  func.return %r : tensor<3x20011xf32>
}}"""
    assert _check(text, (x,)) == 1


@pytest.mark.parametrize("t", ["f16", "f32", "f64", "i32", "ui8"])
def test_maximum_minimum_against_a_broadcast_match_the_kernels(t):
    """IEEE maximum/minimum (NaN first, -0 < +0) with one operand a broadcast of a rank-0 value.
    Their fast paths take no views (NumPy's loops for them are slower on a broadcast view than
    on its copy), so the broadcast runs its kernel and the two ops their fast paths."""
    text = f"""func.func @main(%a: tensor<{N}x{t}>, %c: tensor<{t}>) -> (tensor<{N}x{t}>, tensor<{N}x{t}>) {{
  %b = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<{t}>) -> tensor<{N}x{t}>
  %hi = stablehlo.maximum %a, %b : tensor<{N}x{t}>
  %lo = stablehlo.minimum %b, %a : tensor<{N}x{t}>
  func.return %hi, %lo : tensor<{N}x{t}>, tensor<{N}x{t}>
}}"""
    for k in range(12):
        assert _check(text, (_values(t, 17), _values(t, 18)[k].reshape(()))) == 2
