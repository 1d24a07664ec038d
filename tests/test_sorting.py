"""``stablehlo.sort`` key-extraction fast path (spec.md#sort, spec.md#compare).

Comparators of the form ``compare LT|GT (f(a_k), f(b_k))`` (as JAX emits for
``jnp.sort`` on floats: -0 -> +0, NaN canonicalised, then a TOTALORDER
compare) are sorted by computing the keys once and a stable argsort;
lexicographic comparators (``or(lt0, and(eq0, lt1))``, ``select(eq0, lt1,
lt0)``) by one stable argsort per key. Each case checks that the fast path is taken (the merge sort is made to fail) and
that it gives exactly the general merge path's result, bit for bit.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from kernel_util import run

from stablehlo_conform.kernels import sorting

NAN_BITS = {"f32": "0x7FC00000", "bf16": "0x7FC0", "f64": "0x7FF8000000000000", "f16": "0x7E00"}
DTYPES = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "f64": np.float64, "f16": np.float16,
          "i32": np.int32, "ui8": np.uint8, "i1": np.bool_}


def jax_key(arg: str, t: str, tag: str) -> tuple[str, str]:
    """JAX's float key: ``-0 -> +0`` and every NaN to the canonical NaN."""
    text = f"""
      %z{tag} = stablehlo.constant dense<0.000000e+00> : tensor<{t}>
      %e{tag} = stablehlo.compare EQ, {arg}, %z{tag}, FLOAT : (tensor<{t}>, tensor<{t}>) -> tensor<i1>
      %s{tag} = stablehlo.select %e{tag}, %z{tag}, {arg} : tensor<i1>, tensor<{t}>
      %n{tag} = stablehlo.compare NE, {arg}, {arg}, FLOAT : (tensor<{t}>, tensor<{t}>) -> tensor<i1>
      %q{tag} = stablehlo.constant dense<{NAN_BITS[t]}> : tensor<{t}>
      %k{tag} = stablehlo.select %n{tag}, %q{tag}, %s{tag} : tensor<i1>, tensor<{t}>"""
    return text, f"%k{tag}"


def negate_key(arg: str, t: str, tag: str) -> tuple[str, str]:
    return f"\n      %k{tag} = stablehlo.negate {arg} : tensor<{t}>", f"%k{tag}"


def plain_key(arg: str, t: str, tag: str) -> tuple[str, str]:
    return "", arg


def sort_program(types, shape, dim, key_operand, direction, ctype, stable=True,
                 lhs_key=jax_key, rhs_key=jax_key) -> str:
    dims = "x".join(map(str, shape))
    tens = [f"tensor<{dims}x{t}>" for t in types]
    params = ", ".join(f"%x{i}: {tt}" for i, tt in enumerate(tens))
    bargs = []
    for i, t in enumerate(types):
        bargs += [f"%a{i}: tensor<{t}>", f"%b{i}: tensor<{t}>"]
    t = types[key_operand]
    lt, lv = lhs_key(f"%a{key_operand}", t, "l")
    rt, rv = rhs_key(f"%b{key_operand}", t, "r")
    ct = f", {ctype}" if ctype else ""
    ops = ", ".join(f"%x{i}" for i in range(len(types)))
    results = ", ".join(f"%0#{i}" for i in range(len(types)))
    return f"""
func.func @main({params}) -> ({", ".join(tens)}) {{
  %0:{len(types)} = "stablehlo.sort"({ops}) ({{
    ^bb0({", ".join(bargs)}):{lt}{rt}
      %p = stablehlo.compare {direction}, {lv}, {rv}{ct} : (tensor<{t}>, tensor<{t}>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
  }}) {{dimension = {dim} : i64, is_stable = {"true" if stable else "false"}}} : ({", ".join(tens)}) -> ({", ".join(tens)})
  func.return {results} : {", ".join(tens)}
}}
"""


def special_floats(rng, shape, dtype, nan=True) -> np.ndarray:
    """Random values with duplicates, +-0, +-inf and (optionally) NaNs of both signs."""
    x = rng.integers(-3, 4, shape).astype(np.float64) * 0.5
    r = rng.random(shape)
    x[r < 0.1] = -0.0
    x[(r >= 0.1) & (r < 0.2)] = 0.0
    x[(r >= 0.2) & (r < 0.25)] = np.inf
    x[(r >= 0.25) & (r < 0.3)] = -np.inf
    x = x.astype(dtype)
    if nan:
        x[(r >= 0.3) & (r < 0.35)] = np.asarray(np.nan, dtype)
        x[(r >= 0.35) & (r < 0.4)] = -np.asarray(np.nan, dtype)
    return x


def values_for(t: str, rng, shape, nan=True) -> np.ndarray:
    dt = DTYPES[t]
    if t in NAN_BITS:
        return special_floats(rng, shape, dt, nan)
    if t == "i1":
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(0, 5, shape).astype(dt) if t == "ui8" else rng.integers(-4, 5, shape).astype(dt)


def general_path(monkeypatch, text, args):
    with monkeypatch.context() as m:
        m.setattr(sorting, "_key_plan", lambda op: None)
        return run(text, *args)


def fast_path(monkeypatch, text, args):
    def no_merge(*a, **k):
        raise AssertionError("the general merge path was taken")

    with monkeypatch.context() as m:
        m.setattr(sorting, "merge_sort_perm", no_merge)
        return run(text, *args)


def assert_same_bits(fast, slow):
    assert len(fast) == len(slow)
    for a, b in zip(fast, slow):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("t", ["f32", "bf16", "f64"])
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("direction", ["LT", "GT"])
@pytest.mark.parametrize("stable", [True, False])
def test_jax_float_key_fast_path_matches_general(monkeypatch, t, dim, direction, stable):
    rng = np.random.default_rng([len(t), dim, direction == "GT", stable])
    shape = (9, 41)
    x = values_for(t, rng, shape)
    text = sort_program([t], shape, dim, 0, direction, "TOTALORDER", stable)
    slow = general_path(monkeypatch, text, [x])
    fast = fast_path(monkeypatch, text, [x])
    assert_same_bits(fast, slow)
    # -0 and +0 are one key, all NaNs one key above +inf: ties keep input order.
    s = np.moveaxis(fast[0], dim, -1).astype(np.float64)
    assert not np.isnan(s[..., :1]).any() if direction == "LT" else np.isnan(s[..., :1]).any()


@pytest.mark.parametrize("key_operand", [0, 1])
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("direction", ["LT", "GT"])
def test_multi_operand_key_operand(monkeypatch, key_operand, dim, direction):
    rng = np.random.default_rng(7 + key_operand + 2 * dim)
    shape = (13, 10)
    types = ["f32", "i32"] if key_operand == 0 else ["i32", "bf16"]
    args = [values_for(types[0], rng, shape), values_for(types[1], rng, shape)]
    text = sort_program(types, shape, dim, key_operand, direction, "TOTALORDER")
    assert_same_bits(fast_path(monkeypatch, text, args), general_path(monkeypatch, text, args))


_SIGNED_TYPES = [("f32", "TOTALORDER"), ("f64", None), ("bf16", "FLOAT"), ("f16", "TOTALORDER"),
                 ("i32", "SIGNED"), ("i32", None)]


# negating an unsigned or boolean key is no key: those types get the plain key only
@pytest.mark.parametrize("t,ctype,key", [(t, c, k) for t, c in _SIGNED_TYPES for k in ("plain", "negate")]
                         + [("ui8", "UNSIGNED", "plain"), ("i1", None, "plain")])
def test_compare_types(monkeypatch, t, ctype, key):
    key = plain_key if key == "plain" else negate_key
    rng = np.random.default_rng(3)
    shape = (5, 33)
    x = values_for(t, rng, shape, nan=ctype == "TOTALORDER")
    v = np.arange(x.size, dtype=np.int32).reshape(shape)
    text = sort_program([t, "i32"], shape, 1, 0, "GT", ctype, lhs_key=key, rhs_key=key)
    assert_same_bits(fast_path(monkeypatch, text, [x, v]), general_path(monkeypatch, text, [x, v]))


def test_float_compare_with_nan_falls_back(monkeypatch):
    rng = np.random.default_rng(5)
    x = values_for("f32", rng, (4, 20), nan=True)
    text = sort_program(["f32"], (4, 20), 1, 0, "LT", "FLOAT", lhs_key=plain_key, rhs_key=plain_key)
    calls = []
    real = sorting.merge_sort_perm

    def spy(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(sorting, "merge_sort_perm", spy)
    out = run(text, x)
    assert calls, "FLOAT keys with NaN must take the general path"
    assert_same_bits(out, general_path(monkeypatch, text, [x]))


def test_different_keys_fall_back(monkeypatch):
    """lhs = -a, rhs = b is not one key: the general path runs (and gives
    whatever the comparator defines)."""
    x = np.array([[3, 1, 2, 2]], np.int32)
    text = sort_program(["i32"], (1, 4), 1, 0, "LT", "SIGNED", lhs_key=negate_key, rhs_key=plain_key)
    plan = []
    real = sorting._keys

    def spy(op, p, arr):
        k = real(op, p, arr)
        plan.append(k)
        return k

    monkeypatch.setattr(sorting, "_keys", spy)
    out = run(text, x)
    assert plan == [None]
    assert_same_bits(out, general_path(monkeypatch, text, [x]))


def test_jax_sort_by_hand(monkeypatch):
    nan = np.float32(np.nan)
    x = np.array([[1.0, -0.0, nan, 0.0, -np.inf, -nan, -1.0, 0.0]], np.float32)
    text = sort_program(["f32", "i32"], (1, 8), 1, 0, "LT", "TOTALORDER")
    idx = np.arange(8, dtype=np.int32)[None]
    s, i = fast_path(monkeypatch, text, [x, idx])
    # keys: -0 == +0 (ties in input order), both NaNs canonical and last.
    assert i.tolist() == [[4, 6, 1, 3, 7, 0, 2, 5]]
    assert np.signbit(s[0, 2]) and not np.signbit(s[0, 3])
    assert np.signbit(s[0, 7])  # the value is moved, not the key: -NaN stays -NaN


LEX_OR = """
func.func @main(%x: tensor<{shape}xi32>, %y: tensor<{shape}xf32>, %z: tensor<{shape}xi32>) -> (tensor<{shape}xi32>, tensor<{shape}xf32>, tensor<{shape}xi32>) {{
  %0:3 = "stablehlo.sort"(%x, %y, %z) ({{
    ^bb0(%a0: tensor<i32>, %b0: tensor<i32>, %a1: tensor<f32>, %b1: tensor<f32>, %a2: tensor<i32>, %b2: tensor<i32>):{kl}{kr}
      %lt1 = stablehlo.compare {d1}, %kl, %kr, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %lt0 = stablehlo.compare {d0}, %a0, %b0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %eq0 = stablehlo.compare EQ, {eq_l}, {eq_r}, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %and = stablehlo.and %eq0, %lt1 : tensor<i1>
      %or = stablehlo.or %lt0, %and : tensor<i1>
      stablehlo.return %or : tensor<i1>
  }}) {{dimension = {dim} : i64, is_stable = true}} : (tensor<{shape}xi32>, tensor<{shape}xf32>, tensor<{shape}xi32>) -> (tensor<{shape}xi32>, tensor<{shape}xf32>, tensor<{shape}xi32>)
  func.return %0#0, %0#1, %0#2 : tensor<{shape}xi32>, tensor<{shape}xf32>, tensor<{shape}xi32>
}}"""


def lex_args(shape, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-2, 3, shape).astype(np.int32)
    y = values_for("f32", rng, shape)
    z = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    return [x, y, z]


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("d0,d1", [("LT", "LT"), ("GT", "LT"), ("LT", "GT")])
def test_lexicographic_or_and_fast_path(monkeypatch, dim, d0, d1):
    """JAX's two-key sort: int key, then the canonicalised float key."""
    kl, kv = jax_key("%a1", "f32", "l")
    kr, kw = jax_key("%b1", "f32", "r")
    text = LEX_OR.format(shape="7x23", dim=dim, d0=d0, d1=d1, eq_l="%b0", eq_r="%a0",
                         kl=kl.replace(kv, "%kl"), kr=kr.replace(kw, "%kr"))
    args = lex_args((7, 23), dim + 3 * len(d0 + d1))
    assert_same_bits(fast_path(monkeypatch, text, args), general_path(monkeypatch, text, args))


def test_lexicographic_eq_of_other_values_falls_back(monkeypatch):
    """``or(lt(x), and(eq(z), lt(y)))`` is not lexicographic in one key pair."""
    kl, kv = jax_key("%a1", "f32", "l")
    kr, kw = jax_key("%b1", "f32", "r")
    text = LEX_OR.format(shape="7x23", dim=1, d0="LT", d1="LT", eq_l="%a2", eq_r="%b2",
                         kl=kl.replace(kv, "%kl"), kr=kr.replace(kw, "%kr"))
    calls = []
    real = sorting.merge_sort_perm

    def spy(*a, **k):
        calls.append(1)
        return real(*a, **k)

    args = lex_args((7, 23), 11)
    monkeypatch.setattr(sorting, "merge_sort_perm", spy)
    out = run(text, *args)
    assert calls
    # z is distinct, so the comparator is x ascending and ties kept in order
    for r in range(7):
        np.testing.assert_array_equal(out[2][r], args[2][r][np.argsort(args[0][r], kind="stable")])


LEX_SELECT = """
func.func @main(%x: tensor<6xi32>, %y: tensor<6xi32>) -> (tensor<6xi32>, tensor<6xi32>) {
  %0:2 = "stablehlo.sort"(%x, %y) ({
    ^bb0(%a: tensor<i32>, %b: tensor<i32>, %c: tensor<i32>, %d: tensor<i32>):
      %e = stablehlo.compare EQ, %a, %b, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %l1 = stablehlo.compare GT, %c, %d, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %l0 = stablehlo.compare LT, %a, %b, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %r = stablehlo.select %e, %l1, %l0 : tensor<i1>, tensor<i1>
      stablehlo.return %r : tensor<i1>
  }) {dimension = 0 : i64, is_stable = true} : (tensor<6xi32>, tensor<6xi32>) -> (tensor<6xi32>, tensor<6xi32>)
  func.return %0#0, %0#1 : tensor<6xi32>, tensor<6xi32>
}"""


def test_lexicographic_select_by_hand(monkeypatch):
    x = np.array([2, 1, 2, 1, 0, 2], np.int32)
    y = np.array([5, 4, 3, 9, 1, 3], np.int32)
    sx, sy = fast_path(monkeypatch, LEX_SELECT, [x, y])
    assert sx.tolist() == [0, 1, 1, 2, 2, 2] and sy.tolist() == [1, 9, 4, 5, 3, 3]
    assert_same_bits((sx, sy), general_path(monkeypatch, LEX_SELECT, [x, y]))
