"""Engine: control flow, calls, scoping, tuples, result checking, registry."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stablehlo_conform import frontend
from stablehlo_conform.engine import Engine
from stablehlo_conform.errors import KernelError, ResourceError, Timeout, UnsupportedOp
from stablehlo_conform.kernels.registry import KERNELS, Registry, load_all


def _module(text):
    (mod,) = frontend.load_text(text)
    return mod


def _add(op, a, b):
    return (np.asarray(a + b, dtype=op.result_dtype(0)),)


def _cmp_lt(op, a, b):
    return (np.asarray(a < b),)


BASE = Registry({"stablehlo.add": _add, "stablehlo.compare": _cmp_lt}, parent=load_all())

WHILE = """
func.func @count(%n: tensor<i64>) -> tensor<i64> {
  %zero = stablehlo.constant dense<0> : tensor<i64>
  %one = stablehlo.constant dense<1> : tensor<i64>
  %r:2 = stablehlo.while(%i = %zero, %acc = %zero) : tensor<i64>, tensor<i64>
    cond {
      %c = stablehlo.compare LT, %i, %n : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %i2 = stablehlo.add %i, %one : tensor<i64>
      %a2 = stablehlo.add %acc, %i2 : tensor<i64>
      stablehlo.return %i2, %a2 : tensor<i64>, tensor<i64>
    }
  func.return %r#1 : tensor<i64>
}
"""


def test_while_reads_values_from_enclosing_scope():
    eng = Engine(_module(WHILE), BASE)
    (out,) = eng.call("count", (np.array(4, np.int64),))
    assert int(out) == 1 + 2 + 3 + 4


def test_if_case_call_and_tuples():
    text = """
func.func @pick(%p: tensor<i1>, %x: tensor<i32>) -> tensor<i32> {
  %r = "stablehlo.if"(%p) ({
    %a = stablehlo.add %x, %x : tensor<i32>
    stablehlo.return %a : tensor<i32>
  }, {
    stablehlo.return %x : tensor<i32>
  }) : (tensor<i1>) -> tensor<i32>
  func.return %r : tensor<i32>
}
func.func @sel(%i: tensor<i32>) -> tensor<i32> {
  %c0 = stablehlo.constant dense<10> : tensor<i32>
  %c1 = stablehlo.constant dense<20> : tensor<i32>
  %r = "stablehlo.case"(%i) ({
    stablehlo.return %c0 : tensor<i32>
  }, {
    stablehlo.return %c1 : tensor<i32>
  }) : (tensor<i32>) -> tensor<i32>
  func.return %r : tensor<i32>
}
func.func @tup(%x: tensor<i32>) -> tensor<i32> {
  %t = stablehlo.tuple %x, %x : tuple<tensor<i32>, tensor<i32>>
  %e = stablehlo.get_tuple_element %t[1] : (tuple<tensor<i32>, tensor<i32>>) -> tensor<i32>
  %c = func.call @pick(%e, %e) : (tensor<i32>, tensor<i32>) -> tensor<i32>
  func.return %e : tensor<i32>
}
"""
    mod = _module(text.replace("func.call @pick(%e, %e)", "func.call @sel(%e)").replace(
        "(tensor<i32>, tensor<i32>) -> tensor<i32>\n  func.return %e", "(tensor<i32>) -> tensor<i32>\n  func.return %c"))
    eng = Engine(mod, BASE)
    assert int(eng.call("pick", (np.array(True), np.array(3, np.int32)))[0]) == 6
    assert int(eng.call("pick", (np.array(False), np.array(3, np.int32)))[0]) == 3
    assert int(eng.call("sel", (np.array(1, np.int32),))[0]) == 20
    # out-of-range index runs the last branch (spec.md#case)
    assert int(eng.call("sel", (np.array(7, np.int32),))[0]) == 20
    assert int(eng.call("sel", (np.array(-1, np.int32),))[0]) == 20
    assert int(eng.call("tup", (np.array(0, np.int32),))[0]) == 10


def test_map_runs_body_on_all_elements_at_once():
    text = """
func.func @m(%x: tensor<2x2xi32>) -> tensor<2x2xi32> {
  %r = "stablehlo.map"(%x, %x) ({
    ^bb0(%a: tensor<i32>, %b: tensor<i32>):
      %s = stablehlo.add %a, %b : tensor<i32>
      stablehlo.return %s : tensor<i32>
  }) {dimensions = array<i64: 0, 1>} : (tensor<2x2xi32>, tensor<2x2xi32>) -> tensor<2x2xi32>
  func.return %r : tensor<2x2xi32>
}"""
    calls = []

    def counting_add(op, a, b):
        calls.append(np.shape(a))
        return _add(op, a, b)

    eng = Engine(_module(text), BASE.with_overrides({"stablehlo.add": counting_add}))
    (out,) = eng.call("m", (np.arange(4, dtype=np.int32).reshape(2, 2),))
    assert out.tolist() == [[0, 2], [4, 6]]
    assert calls == [(2, 2)]


def test_wrong_kernel_result_is_reported_as_kernel_bug():
    def bad_add(op, a, b):
        return (np.asarray(a + b, dtype=np.float64),)

    eng = Engine(_module(WHILE), BASE.with_overrides({"stablehlo.add": bad_add}))
    with pytest.raises(KernelError) as e:
        eng.call("count", (np.array(2, np.int64),))
    assert "kernel bug" in str(e.value) and "stablehlo.add" in str(e.value)


def test_kernel_exception_names_op_and_location():
    def boom(op, a, b):
        raise ValueError("nope")

    eng = Engine(_module(WHILE), BASE.with_overrides({"stablehlo.add": boom}))
    with pytest.raises(KernelError) as e:
        eng.call("count", (np.array(2, np.int64),))
    assert "<string>:" in str(e.value) and "ValueError: nope" in str(e.value)


def test_missing_kernel_is_unsupported():
    eng = Engine(_module(WHILE), Registry({}, parent=Registry({"stablehlo.constant": KERNELS.lookup("stablehlo.constant")})))
    with pytest.raises(UnsupportedOp) as e:
        eng.call("count", (np.array(2, np.int64),))
    assert str(e.value).startswith("unsupported: stablehlo.") and e.value.status == "unsupported"


def test_deadline_stops_an_infinite_while():
    text = """
func.func @spin() -> tensor<i64> {
  %zero = stablehlo.constant dense<0> : tensor<i64>
  %t = stablehlo.constant dense<true> : tensor<i1>
  %r = stablehlo.while(%i = %zero) : tensor<i64>
    cond { stablehlo.return %t : tensor<i1> }
    do { stablehlo.return %i : tensor<i64> }
  func.return %r : tensor<i64>
}"""
    import time

    eng = Engine(_module(text), BASE, deadline=time.monotonic() + 0.3)
    with pytest.raises(Timeout):
        eng.call("spin", ())


def test_memory_guard_refuses_before_allocating():
    text = """
func.func @big() -> tensor<100000x100000xf32> {
  %0 = stablehlo.constant dense<0.0> : tensor<f32>
  %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<100000x100000xf32>
  func.return %1 : tensor<100000x100000xf32>
}"""
    called = []
    reg = BASE.with_overrides({"stablehlo.broadcast_in_dim": lambda op, x: called.append(1)})
    eng = Engine(_module(text), reg, max_bytes=2**30)
    with pytest.raises(ResourceError) as e:
        eng.call("big", ())
    assert "memory budget" in str(e.value) and not called


def test_registry_overrides_do_not_touch_the_table():
    before = KERNELS.lookup("stablehlo.constant")
    reg = KERNELS.with_overrides({"stablehlo.constant": lambda op: ()})
    assert reg.lookup("stablehlo.constant") is not before
    assert KERNELS.lookup("stablehlo.constant") is before
    assert "stablehlo.constant" in load_all().names()
    with pytest.raises(ValueError):
        KERNELS.register("stablehlo.constant", lambda op: ())


FACT = """
func.func @fact(%n: tensor<i64>) -> tensor<i64> {
  %one = stablehlo.constant dense<1> : tensor<i64>
  cf.br ^loop(%n, %one : tensor<i64>, tensor<i64>)
^loop(%i: tensor<i64>, %acc: tensor<i64>):
  %done = stablehlo.compare LT, %i, %one : (tensor<i64>, tensor<i64>) -> tensor<i1>
  %d = tensor.extract %done[] : tensor<i1>
  cf.cond_br %d, ^exit(%acc : tensor<i64>), ^body
^body:
  %acc2 = stablehlo.multiply %acc, %i : tensor<i64>
  %m = stablehlo.constant dense<-1> : tensor<i64>
  %i2 = stablehlo.add %i, %m : tensor<i64>
  cf.br ^loop(%i2, %acc2 : tensor<i64>, tensor<i64>)
^exit(%r: tensor<i64>):
  func.return %r : tensor<i64>
}"""


def test_cf_branches_with_block_arguments():
    reg = BASE.with_overrides({
        "stablehlo.multiply": lambda op, a, b: (np.asarray(a * b, dtype=op.result_dtype(0)),),
        "tensor.extract": lambda op, t, *idx: (np.asarray(t)[()],),
    })
    eng = Engine(_module(FACT), reg)
    (out,) = eng.call("fact", (np.array(5, np.int64),))
    assert int(out) == 120


def test_cf_switch_picks_case_or_default():
    text = """
func.func @sw(%x: i32) -> i32 {
  cf.switch %x : i32, [
    default: ^d(%x : i32),
    1: ^one,
    7: ^seven(%x, %x : i32, i32)
  ]
^d(%a: i32):
  func.return %a : i32
^one:
  %c = arith.constant 100 : i32
  func.return %c : i32
^seven(%p: i32, %q: i32):
  %c7 = arith.constant 700 : i32
  func.return %c7 : i32
}"""
    eng = Engine(_module(text), BASE)
    assert int(eng.call("sw", (np.int32(1),))[0]) == 100
    assert int(eng.call("sw", (np.int32(7),))[0]) == 700
    assert int(eng.call("sw", (np.int32(3),))[0]) == 3


def test_async_start_done_run_the_body():
    text = """
func.func @a(%x: tensor<4xi32>) -> tensor<2xi32> {
  %f = "stablehlo.async_start"(%x) ({
  ^bb0(%y: tensor<4xi32>):
    %s = "stablehlo.slice"(%y) {start_indices = array<i64: 1>, limit_indices = array<i64: 3>,
                                strides = array<i64: 1>} : (tensor<4xi32>) -> tensor<2xi32>
    "stablehlo.return"(%s) : (tensor<2xi32>) -> ()
  }) : (tensor<4xi32>) -> !stablehlo.future<tensor<2xi32>>
  %r = "stablehlo.async_done"(%f) : (!stablehlo.future<tensor<2xi32>>) -> tensor<2xi32>
  func.return %r : tensor<2xi32>
}"""
    eng = Engine(_module(text), BASE)
    assert eng.call("a", (np.arange(4, dtype=np.int32),))[0].tolist() == [1, 2]


# ----------------------------------------------------------------------------- generated block functions

def _outputs(eng: Engine, entry: str, args=()):
    from test_fast_paths import _bits

    out = eng.call(entry, args)
    return [_bits(np.asarray(o)) if isinstance(o, np.ndarray) else repr(o) for o in out], eng.checks


def _assert_generated_matches_stepwise(mod, entry: str, args=(), registry=None) -> bool:
    """Results and checks of ``entry`` run step by step and through generated
    block functions, bit for bit; True when generated functions ran."""
    stepwise = Engine(mod, registry)
    stepwise.generate_blocks = False
    expect = _outputs(stepwise, entry, args)
    generated = False
    for _ in range(4):  # blocks are generated after their first runs
        eng = Engine(mod, registry)
        assert _outputs(eng, entry, args) == expect
        generated = generated or bool(eng._runners)
    return generated


def test_generated_blocks_match_the_stepwise_path_on_a_jax_rnn():
    import jax
    import jax.numpy as jnp
    from jax import lax

    def rnn(h, xs, w, u):
        return lax.fori_loop(0, xs.shape[0], lambda i, h: jnp.tanh(h @ w + xs[i] @ u), h)

    rng = np.random.default_rng(1)
    args = (rng.standard_normal((1, 16)).astype(np.float32), rng.standard_normal((9, 1, 8)).astype(np.float32),
            (0.3 * rng.standard_normal((16, 16))).astype(np.float32),
            (0.3 * rng.standard_normal((8, 16))).astype(np.float32))
    mod = _module(jax.jit(rnn).lower(*args).as_text())
    assert _assert_generated_matches_stepwise(mod, "main", args)


SUITE_DIR = Path(__file__).resolve().parents[1] / ".." / "shared" / "stablehlo-suite"
SUITE_FILES = sorted((SUITE_DIR / "interpret").glob("*.mlir")) + sorted(
    p for p in (SUITE_DIR / "testdata").glob("*.mlir") if "stablehlo.while" in p.read_text())


@pytest.mark.skipif(not SUITE_FILES, reason="../shared/stablehlo-suite is absent")
def test_generated_blocks_match_the_stepwise_path_on_the_official_tests():
    compared = generated = 0
    for path in SUITE_FILES:
        for mod in frontend.load_file(path, split=True):
            for f in mod.tests():
                try:
                    Engine(mod).call(f.name, ())
                except Exception:  # tests the engine does not run (unsupported) are not compared
                    continue
                compared += 1
                generated += _assert_generated_matches_stepwise(mod, f.name)
    assert compared > 500 and generated > 500


# WHILE with a loop body whose values are read by a nested region
NESTED = WHILE.replace("      %a2 = stablehlo.add %acc, %i2 : tensor<i64>\n", """\
      %big = stablehlo.compare LT, %one, %i : (tensor<i64>, tensor<i64>) -> tensor<i1>
      %a2 = "stablehlo.if"(%big) ({
        %t = stablehlo.add %acc, %i2 : tensor<i64>
        stablehlo.return %t : tensor<i64>
      }, {
        stablehlo.return %acc : tensor<i64>
      }) : (tensor<i1>) -> tensor<i64>
""")


def test_generated_loop_body_hands_its_values_to_nested_regions():
    mod = _module(NESTED)
    assert _assert_generated_matches_stepwise(mod, "count", (np.array(7, np.int64),), BASE)
    assert int(Engine(mod, BASE).call("count", (np.array(7, np.int64),))[0]) == 3 + 4 + 5 + 6 + 7


def test_generated_cf_blocks_match_the_stepwise_path():
    mod = _module(FACT)
    assert _assert_generated_matches_stepwise(mod, "fact", (np.array(6, np.int64),))
    assert int(Engine(mod).call("fact", (np.array(6, np.int64),))[0]) == 720


def _turns_bad_after(calls: int, bad):
    """An add that is right for ``calls`` calls, then ``bad(op, a, b)``."""
    seen = []

    def add(op, a, b):
        seen.append(1)
        return bad(op, a, b) if len(seen) > calls else _add(op, a, b)

    return add


def test_generated_block_reports_a_wrong_kernel_result_as_kernel_bug():
    bad = _turns_bad_after(6, lambda op, a, b: (np.asarray(a + b, dtype=np.int32),))
    eng = Engine(_module(WHILE), BASE.with_overrides({"stablehlo.add": bad}))
    with pytest.raises(KernelError) as e:
        eng.call("count", (np.array(9, np.int64),))
    assert eng._runners, "the loop body ran as a generated function"
    assert "kernel bug" in str(e.value) and "stablehlo.add" in str(e.value) and "<string>:" in str(e.value)


def test_generated_block_names_a_failing_kernel_and_its_location():
    def boom(op, a, b):
        raise ValueError("late")

    eng = Engine(_module(WHILE), BASE.with_overrides({"stablehlo.add": _turns_bad_after(6, boom)}))
    with pytest.raises(KernelError) as e:
        eng.call("count", (np.array(9, np.int64),))
    assert eng._runners
    assert "stablehlo.add at <string>:" in str(e.value) and "ValueError: late" in str(e.value)
    assert isinstance(e.value.__cause__, ValueError)


def test_generated_blocks_count_calls_in_the_profile_as_the_stepwise_path():
    mod = _module(NESTED)
    counts = []
    for generate in (False, True, True):
        eng = Engine(mod, BASE, profile={})
        eng.generate_blocks = generate
        eng.call("count", (np.array(6, np.int64),))
        counts.append({name: rec[0] for name, rec in eng.profile.items()})
        assert all(rec[1] >= 0.0 for rec in eng.profile.values())
    assert eng._runners and counts[0] == counts[1] == counts[2]
    assert counts[0]["stablehlo.constant"] == 2 and counts[0]["stablehlo.add"] == 6 + 4


def test_generated_block_keeps_the_memory_budget():
    text = """
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %x, %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}"""
    mod = _module(text)
    x = np.ones(4, np.float32)
    for _ in range(3):
        Engine(mod, max_bytes=1024).call("f", (x,))
    eng = Engine(mod, max_bytes=8)
    with pytest.raises(ResourceError) as e:
        eng.call("f", (x,))
    assert eng._runners and "memory budget" in str(e.value)


def test_generated_block_keeps_the_deadline():
    import time

    eng = Engine(_module(WHILE), BASE, deadline=time.monotonic() + 3600)
    eng.call("count", (np.array(5, np.int64),))  # the loop body is generated
    assert eng._runners
    eng.deadline = time.monotonic() - 1
    with pytest.raises(Timeout):
        eng.call("count", (np.array(5, np.int64),))
