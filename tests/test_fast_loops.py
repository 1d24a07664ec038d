"""Loops of generated blocks: calls inlined in loop bodies, ``dynamic_update_slice`` writing
into a loop's own buffer, large blocks generated before their first run, values released
after their last reader. Each result is compared bit for bit with the step-by-step engine
(the kernels), and the caller's arrays are checked unchanged."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stablehlo_conform import frontend
from stablehlo_conform import engine
from stablehlo_conform.engine import Engine
from stablehlo_conform.engine import codegen
from stablehlo_conform.errors import KernelError
from stablehlo_conform.kernels.registry import Registry, load_all

ROWS, COLS = 8, 4
REAL_BYTES, REAL_PER_OP = engine.PREGENERATE_BYTES, engine.PREGENERATE_BYTES_PER_OP


def _module(text):
    (mod,) = frontend.load_text(text)
    return mod


def _bits(out):
    return [np.asarray(o).tobytes() + str((np.asarray(o).shape, np.asarray(o).dtype)).encode() for o in out]


@pytest.fixture
def in_place(monkeypatch):
    """The dynamic_update_slice ops the generated code writes in place (their locations)."""
    seen: list[str] = []
    real = codegen.update_in_place

    def spy(op):
        seen.append(str(op.loc))
        return real(op)

    monkeypatch.setattr(codegen, "update_in_place", spy)
    return seen


def _check(text, args, runs=4):
    """Generated runs equal the step-by-step run bit for bit, and leave ``args`` unchanged;
    returns whether generated code ran."""
    mod = _module(text)
    keep = [np.array(a, copy=True) for a in args]
    stepwise = Engine(mod)
    stepwise.generate_blocks = False
    expect = _bits(stepwise.call("main", args))
    generated = False
    for _ in range(runs):
        eng = Engine(mod)
        assert _bits(eng.call("main", args)) == expect
        generated = generated or bool(eng._runners)
        for a, k in zip(args, keep):
            assert np.asarray(a).tobytes() == k.tobytes(), "an argument was written to"
    return generated


def _args(seed=0):
    rng = np.random.default_rng(seed)
    buf = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    xs = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    xs[0, :] = [np.nan, np.inf, -0.0, np.float32(1e-45)]
    return buf, xs


# a loop over 5 steps writing row 3i-2 of %b (clamped: -2 -> 0, 10 -> 7; rows 2, 3, 5, 6 keep
# the buffer's first values) with row i of %xs plus the step's number; extra / ret / after vary
# what reads what
LOOP = """
func.func @main(%buf: tensor<8x4xf32>, %xs: tensor<8x4xf32>) -> ({results}) {{
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %c1 = stablehlo.constant dense<1> : tensor<i32>
  %c2 = stablehlo.constant dense<2> : tensor<i32>
  %c3 = stablehlo.constant dense<3> : tensor<i32>
  %n = stablehlo.constant dense<5> : tensor<i32>
  %z = stablehlo.constant dense<0.5> : tensor<f32>
  %zb = stablehlo.broadcast_in_dim %z, dims = [] : (tensor<f32>) -> tensor<8x4xf32>
  %0:2 = stablehlo.while(%i = %c0, %b = {init}) : tensor<i32>, tensor<8x4xf32>
  cond {{
    %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }} do {{
    %row = stablehlo.dynamic_slice %xs, %i, %c0, sizes = [1, 4] : (tensor<8x4xf32>, tensor<i32>, tensor<i32>) -> tensor<1x4xf32>
    %fi = stablehlo.convert %i : (tensor<i32>) -> tensor<f32>
    %fb = stablehlo.broadcast_in_dim %fi, dims = [] : (tensor<f32>) -> tensor<1x4xf32>
    %upd = stablehlo.add %row, %fb : tensor<1x4xf32>
    %i3 = stablehlo.multiply %i, %c3 : tensor<i32>
    %j = stablehlo.subtract %i3, %c2 : tensor<i32>
    %nb = {update}
    {extra}
    %i2 = stablehlo.add %i, %c1 : tensor<i32>
    stablehlo.return %i2, {ret} : tensor<i32>, tensor<8x4xf32>
  }}
  {after}
}}
"""
DUS = ("stablehlo.dynamic_update_slice %b, %upd, %j, %c0 : (tensor<8x4xf32>, tensor<1x4xf32>, tensor<i32>, "
       "tensor<i32>) -> tensor<8x4xf32>")
CALLED = """
func.func private @put(%a: tensor<8x4xf32>, %u: tensor<1x4xf32>, %k: tensor<i32>) -> tensor<8x4xf32> {
  %c = stablehlo.constant dense<0> : tensor<i32>
  %r = stablehlo.dynamic_update_slice %a, %u, %k, %c : (tensor<8x4xf32>, tensor<1x4xf32>, tensor<i32>, tensor<i32>) -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}
"""
CALL = "func.call @put(%b, %upd, %j) : (tensor<8x4xf32>, tensor<1x4xf32>, tensor<i32>) -> tensor<8x4xf32>"


def _loop(init="%buf", update=DUS, extra="", ret="%nb", after=None, results="tensor<8x4xf32>, tensor<8x4xf32>"):
    after = after or "return %0#1, %buf : tensor<8x4xf32>, tensor<8x4xf32>"
    text = LOOP.format(init=init, update=update, extra=extra, ret=ret, after=after, results=results)
    return text + (CALLED if "@put" in update else "")


@pytest.mark.parametrize("update", [DUS, CALL], ids=["direct", "through_a_call"])
def test_a_buffer_that_is_a_function_argument_is_copied_once_and_updated_in_place(in_place, update):
    assert _check(_loop(update=update), _args())
    assert in_place, "the update was not written in place"


def test_a_constant_buffer_is_never_written_to(in_place):
    # the folded constant is the loop's first buffer and a result of the function as well
    text = _loop(init="%zb", after="return %0#1, %zb : tensor<8x4xf32>, tensor<8x4xf32>")
    assert _check(text, _args())
    assert in_place


def test_a_buffer_read_after_the_update_is_copied(in_place):
    # the old buffer is read after the update: the kernel's copy is needed
    extra = "%old = stablehlo.add %b, %b : tensor<8x4xf32>\n    %nb2 = stablehlo.add %nb, %old : tensor<8x4xf32>"
    assert _check(_loop(extra=extra, ret="%nb2"), _args())
    assert not in_place


def test_a_result_read_by_another_op_of_the_iteration_is_copied(in_place):
    # the updated buffer is read twice (a slice of it may be a view): never in place
    extra = ("%s = stablehlo.slice %nb [0:1, 0:4] : (tensor<8x4xf32>) -> tensor<1x4xf32>\n"
             "    %nb2 = stablehlo.dynamic_update_slice %nb, %s, %c1, %c0 : (tensor<8x4xf32>, tensor<1x4xf32>, "
             "tensor<i32>, tensor<i32>) -> tensor<8x4xf32>")
    assert _check(_loop(extra=extra, ret="%nb2"), _args())
    assert in_place == [], in_place


TWICE = """
func.func @main(%buf: tensor<8x4xf32>, %xs: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %c1 = stablehlo.constant dense<1> : tensor<i32>
  %n = stablehlo.constant dense<5> : tensor<i32>
  %0:3 = stablehlo.while(%i = %c0, %b = %buf, %o = %buf) : tensor<i32>, tensor<8x4xf32>, tensor<8x4xf32>
  cond {
    %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %row = stablehlo.dynamic_slice %xs, %i, %c0, sizes = [1, 4] : (tensor<8x4xf32>, tensor<i32>, tensor<i32>) -> tensor<1x4xf32>
    %nb = stablehlo.dynamic_update_slice %b, %row, %i, %c0 : (tensor<8x4xf32>, tensor<1x4xf32>, tensor<i32>, tensor<i32>) -> tensor<8x4xf32>
    %i2 = stablehlo.add %i, %c1 : tensor<i32>
    stablehlo.return %i2, %nb, %nb : tensor<i32>, tensor<8x4xf32>, tensor<8x4xf32>
  }
  return %0#1, %0#2 : tensor<8x4xf32>, tensor<8x4xf32>
}
"""


def test_a_buffer_returned_twice_is_copied(in_place):
    # two carried values would share one buffer: the kernel's copies are needed
    assert _check(TWICE, _args())
    assert not in_place


def test_a_buffer_passed_out_of_the_loop_is_read_again_by_the_caller(in_place):
    # passed out of the loop and read again by the caller, twice, and into a second loop
    after = ("%1:2 = stablehlo.while(%i3 = %c0, %b3 = %0#1) : tensor<i32>, tensor<8x4xf32>\n"
             "  cond {\n"
             "    %p3 = stablehlo.compare LT, %i3, %c1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
             "    stablehlo.return %p3 : tensor<i1>\n"
             "  } do {\n"
             "    %nb3 = stablehlo.dynamic_update_slice %b3, %zb, %i3, %c0 : (tensor<8x4xf32>, tensor<8x4xf32>, "
             "tensor<i32>, tensor<i32>) -> tensor<8x4xf32>\n"
             "    %i4 = stablehlo.add %i3, %c1 : tensor<i32>\n"
             "    stablehlo.return %i4, %nb3 : tensor<i32>, tensor<8x4xf32>\n"
             "  }\n"
             "  %sum = stablehlo.add %0#1, %0#1 : tensor<8x4xf32>\n"
             "  return %sum, %1#1 : tensor<8x4xf32>, tensor<8x4xf32>")
    in_place.clear()
    assert _check(_loop(after=after), _args(1))
    assert len(set(in_place)) == 2


def test_a_buffer_the_condition_reads_is_copied(in_place):
    text = _loop().replace(
        "%p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>",
        "%e = stablehlo.slice %b [0:1, 0:1] : (tensor<8x4xf32>) -> tensor<1x1xf32>\n"
        "    %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>")
    assert _check(text, _args())
    assert not in_place


NESTED = """
func.func @main(%buf: tensor<6x5xf32>, %xs: tensor<6x5xf32>) -> (tensor<6x5xf32>, tensor<6x5xf32>) {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %c1 = stablehlo.constant dense<1> : tensor<i32>
  %n = stablehlo.constant dense<7> : tensor<i32>
  %m = stablehlo.constant dense<6> : tensor<i32>
  %0:2 = stablehlo.while(%i = %c0, %b = %buf) : tensor<i32>, tensor<6x5xf32>
  cond {
    %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %1:2 = stablehlo.while(%k = %c0, %d = %b) : tensor<i32>, tensor<6x5xf32>
    cond {
      %q = stablehlo.compare LT, %k, %m, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %q : tensor<i1>
    } do {
      %v = stablehlo.dynamic_slice %xs, %k, %i, sizes = [1, 1] : (tensor<6x5xf32>, tensor<i32>, tensor<i32>) -> tensor<1x1xf32>
      %w = stablehlo.dynamic_slice %d, %k, %i, sizes = [1, 1] : (tensor<6x5xf32>, tensor<i32>, tensor<i32>) -> tensor<1x1xf32>
      %s = stablehlo.multiply %v, %w : tensor<1x1xf32>
      %kk = stablehlo.add %k, %c1 : tensor<i32>
      %d2 = func.call @put(%d, %s, %k, %i) : (tensor<6x5xf32>, tensor<1x1xf32>, tensor<i32>, tensor<i32>) -> tensor<6x5xf32>
      stablehlo.return %kk, %d2 : tensor<i32>, tensor<6x5xf32>
    }
    %i2 = stablehlo.add %i, %c1 : tensor<i32>
    stablehlo.return %i2, %1#1 : tensor<i32>, tensor<6x5xf32>
  }
  return %0#1, %buf : tensor<6x5xf32>, tensor<6x5xf32>
}
func.func private @put(%a: tensor<6x5xf32>, %u: tensor<1x1xf32>, %r: tensor<i32>, %c: tensor<i32>) -> tensor<6x5xf32> {
  %x = stablehlo.dynamic_update_slice %a, %u, %r, %c : (tensor<6x5xf32>, tensor<1x1xf32>, tensor<i32>, tensor<i32>) -> tensor<6x5xf32>
  return %x : tensor<6x5xf32>
}
"""


def test_nested_loops_read_their_buffer_before_the_update(in_place):
    # the inner buffer is read (a 1x1 slice) before the update: copied; the outer one passed to
    # the inner loop: copied as the inner loop starts
    rng = np.random.default_rng(3)
    args = (rng.standard_normal((6, 5)).astype(np.float32), rng.standard_normal((6, 5)).astype(np.float32))
    assert _check(NESTED, args)
    assert not in_place


def test_nested_loops_write_in_place_where_the_buffer_is_theirs(in_place):
    text = NESTED.replace("%w = stablehlo.dynamic_slice %d, %k, %i,", "%w = stablehlo.dynamic_slice %xs, %i, %k,")
    rng = np.random.default_rng(4)
    args = (rng.standard_normal((6, 5)).astype(np.float32), rng.standard_normal((6, 5)).astype(np.float32))
    assert _check(text, args)
    assert in_place


def test_a_jax_scan_stacking_its_outputs_updates_in_place(in_place):
    import jax
    import jax.numpy as jnp
    from jax import lax

    def scan(h, xs, w, u):
        def step(h, x):
            h = jnp.tanh(h @ w + x @ u)
            return h, h
        return lax.scan(step, h, xs)

    rng = np.random.default_rng(5)
    args = (rng.standard_normal((16, 32)).astype(np.float32), rng.standard_normal((9, 16, 32)).astype(np.float32),
            (0.3 * rng.standard_normal((32, 32))).astype(np.float32),
            (0.3 * rng.standard_normal((32, 32))).astype(np.float32))
    assert _check(jax.jit(scan).lower(*args).as_text(), args)
    assert in_place


@pytest.mark.parametrize("dtype", ["bf16", "i8", "i1", "f64"])
def test_in_place_updates_of_other_element_types(in_place, dtype):
    np_dt = {"bf16": None, "i8": np.int8, "i1": np.bool_, "f64": np.float64}[dtype]
    import ml_dtypes

    np_dt = np_dt or ml_dtypes.bfloat16
    text = _loop(init="%zb", update=CALL, after="return %0#1, %zb : tensor<8x4xf32>, tensor<8x4xf32>").replace(
        "f32", dtype)
    text = text.replace("%z = stablehlo.constant dense<0.5>", "%z = stablehlo.constant dense<"
                        + {"i1": "true", "i8": "1"}.get(dtype, "1.5") + ">")
    if dtype == "i1":
        text = text.replace("%upd = stablehlo.add %row, %fb", "%upd = stablehlo.or %row, %fb")
    rng = np.random.default_rng(6)
    args = tuple((rng.standard_normal((ROWS, COLS)) * 50).astype(np_dt) for _ in range(2))
    assert _check(text, args)
    assert in_place


# --------------------------------------------------------------------------- #
# large blocks: generated before their first run; values released after their last reader
# --------------------------------------------------------------------------- #

BIG = """
func.func @main(%x: tensor<256x256xf32>, %w: tensor<256x256xf32>) -> (tensor<256x256xf32>, tensor<f32>) {
  %one = stablehlo.constant dense<1.0> : tensor<f32>
  %ones = stablehlo.broadcast_in_dim %one, dims = [] : (tensor<f32>) -> tensor<256x256xf32>
  %a = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  %b = stablehlo.add %a, %ones : tensor<256x256xf32>
  %c = stablehlo.tanh %b : tensor<256x256xf32>
  %d = stablehlo.multiply %c, %x : tensor<256x256xf32>
  %e = stablehlo.subtract %d, %a : tensor<256x256xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%e init: %z) applies stablehlo.add across dimensions = [0, 1] : (tensor<256x256xf32>, tensor<f32>) -> tensor<f32>
  %f = stablehlo.exponential %e : tensor<256x256xf32>
  return %f, %s : tensor<256x256xf32>, tensor<f32>
}
"""


def _big_args():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((256, 256)).astype(np.float32)
    x[0, :4] = [np.nan, np.inf, -np.inf, -0.0]
    return x, (0.1 * rng.standard_normal((256, 256))).astype(np.float32)


@pytest.fixture(autouse=True)
def _small_large_blocks(monkeypatch):
    """Blocks of BIG's size count as large (the rule's own figures ask for 32 MiB and more)."""
    monkeypatch.setattr(engine, "PREGENERATE_BYTES", 1 << 20)
    monkeypatch.setattr(engine, "PREGENERATE_BYTES_PER_OP", 64 << 10)


def test_the_zoo_s_large_models_are_large_blocks():
    from stablehlo_conform import load
    from stablehlo_conform.engine.steps import _result_bytes

    for name in ("vit_b16", "whisper_tiny", "gpt2_int8"):
        (mod,) = load(str(Path(__file__).resolve().parents[1] / "testsuite" / "models" / f"{name}.mlirbc"))
        block = mod.funcs["main"].body.blocks[0]
        total = sum(_result_bytes(op) for op in block.ops)
        assert total >= REAL_BYTES + REAL_PER_OP * len(block.ops), name


def test_a_large_block_is_generated_before_its_first_run_and_matches_the_stepwise_run():
    mod = _module(BIG)
    args = _big_args()
    stepwise = Engine(mod)
    stepwise.generate_blocks = False
    expect = _bits(stepwise.call("main", args))
    mod = _module(BIG)
    eng = Engine(mod)
    assert _bits(eng.call("main", args)) == expect
    assert eng._runners, "the first run went step by step"
    assert _check(BIG, args)


def test_a_small_block_still_runs_step_by_step_first():
    text = BIG.replace("256", "4")
    rng = np.random.default_rng(8)
    args = tuple(rng.standard_normal((4, 4)).astype(np.float32) for _ in range(2))
    eng = Engine(_module(text))
    eng.call("main", args)
    assert not eng._runners


def test_a_large_block_under_a_small_memory_budget_reports_it_as_the_stepwise_run_does():
    from stablehlo_conform.errors import ResourceError

    args = _big_args()
    errors = []
    for generate in (False, True):
        eng = Engine(_module(BIG), max_bytes=100_000)
        eng.generate_blocks = generate
        with pytest.raises(ResourceError) as e:
            eng.call("main", args)
        errors.append(str(e.value))
    assert errors[0] == errors[1]


def test_a_failing_folded_op_leaves_the_first_run_step_by_step(monkeypatch):
    # a folded op whose kernel raises: nothing is generated ahead, and the step-by-step run
    # reports the error at the op, as without the rule
    def broken(op, *operands):
        raise ValueError("broken broadcast")

    registry = Registry({"stablehlo.broadcast_in_dim": broken}, parent=load_all())
    errors = []
    for generate in (False, True):
        eng = Engine(_module(BIG), registry)
        eng.generate_blocks = generate
        with pytest.raises(KernelError) as e:
            eng.call("main", _big_args())
        errors.append(str(e.value))
        assert not eng._runners
    assert errors[0] == errors[1] and "broken broadcast" in errors[0]


def test_released_values_leave_results_unchanged_across_runs():
    args = _big_args()
    mod = _module(BIG)
    outs = [_bits(Engine(mod).call("main", args)) for _ in range(3)]
    assert outs[0] == outs[1] == outs[2]


def test_a_block_running_a_loop_is_generated_before_its_first_run(in_place):
    mod = _module(_loop(update=CALL))
    args = _args()
    stepwise = Engine(mod)
    stepwise.generate_blocks = False
    expect = _bits(stepwise.call("main", args))
    mod = _module(_loop(update=CALL))
    eng = Engine(mod)
    assert _bits(eng.call("main", args)) == expect
    assert eng._runners
    assert in_place, "the callee's folds were computed ahead and the call inlined"


SCALARS = """
func.func @main(%x: tensor<4xf32>, %s: tensor<f32>) -> (tensor<4xf32>, tensor<f32>, tensor<4xf32>) {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %c1 = stablehlo.constant dense<1> : tensor<i32>
  %n = stablehlo.constant dense<6> : tensor<i32>
  %0:3 = stablehlo.while(%i = %c0, %a = %x, %t = %s) : tensor<i32>, tensor<4xf32>, tensor<f32>
  cond {
    %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %t2 = func.call @scale(%t, %t) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %t3 = func.call @scale(%t2, %t) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %tb = stablehlo.broadcast_in_dim %t3, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %a2 = stablehlo.multiply %a, %tb : tensor<4xf32>
    %i2 = stablehlo.add %i, %c1 : tensor<i32>
    stablehlo.return %i2, %a2, %t3 : tensor<i32>, tensor<4xf32>, tensor<f32>
  }
  %once = func.call @scale(%s, %s) : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %ob = stablehlo.broadcast_in_dim %once, dims = [] : (tensor<f32>) -> tensor<4xf32>
  %r = stablehlo.tanh %0#1 : tensor<4xf32>
  return %r, %0#2, %ob : tensor<4xf32>, tensor<f32>, tensor<4xf32>
}
func.func private @scale(%u: tensor<f32>, %v: tensor<f32>) -> tensor<f32> {
  %h = stablehlo.constant dense<0.75> : tensor<f32>
  %m = stablehlo.multiply %u, %h : tensor<f32>
  %q = stablehlo.add %m, %v : tensor<f32>
  %r = stablehlo.sine %q : tensor<f32>
  return %r : tensor<f32>
}
"""


@pytest.mark.parametrize("s", [0.3, -0.0, np.inf, np.nan, 1e-45])
def test_calls_in_a_loop_with_scalar_arguments_and_results_match_the_stepwise_run(s):
    # the same function called twice in the body (inlined once) and once outside the loop
    x = np.array([1.5, -0.0, np.inf, 3e-39], np.float32)
    assert _check(SCALARS, (x, np.float32(s)))


def test_an_error_in_an_inlined_call_is_reported_as_the_stepwise_run_reports_it():
    def sine(op, x):  # fails on the third iteration
        if float(np.asarray(x)) > 0.9:
            raise ValueError("too big")
        return (np.sin(np.asarray(x, np.float64)).astype(np.float32),)

    registry = Registry({"stablehlo.sine": sine}, parent=load_all())
    x = np.ones(4, np.float32)
    messages = []
    for generate in (False, True, True, True):
        mod = _module(SCALARS)
        for _ in range(3 if generate else 1):
            eng = Engine(mod, registry)
            eng.generate_blocks = generate
            with pytest.raises(KernelError) as e:
                eng.call("main", (x, np.float32(0.3)))
            messages.append(str(e.value))
    assert len(set(messages)) == 1, messages
    assert "stablehlo.sine" in messages[0]


def test_a_deadline_given_after_the_untimed_block_was_generated_is_checked():
    import time

    from stablehlo_conform.errors import Timeout

    mod = _module(_loop(update=CALL))
    eng = Engine(mod)  # no deadline: the block's variant without the deadline's checks
    eng.call("main", _args())
    assert eng._runners
    messages = []
    for generate in (True, False):
        eng.generate_blocks = generate
        eng.deadline = time.monotonic() - 1
        with pytest.raises(Timeout) as e:
            eng.call("main", _args())
        messages.append(str(e.value))
    assert messages[0] == messages[1]
    fresh = Engine(mod, deadline=time.monotonic() - 1)  # a new engine with a deadline: the timed variant
    with pytest.raises(Timeout) as e:
        fresh.call("main", _args())
    assert str(e.value) == messages[0]


def _nested_counters(depth: int, trips: int = 2) -> str:
    """``depth`` loops nested in one another's bodies, each running ``trips`` times, the
    innermost adding one to a sum."""
    lines = ["func.func @main(%s0: tensor<i32>) -> tensor<i32> {", "  %c0 = stablehlo.constant dense<0> : tensor<i32>",
             f"  %two = stablehlo.constant dense<{trips}> : tensor<i32>", "  %one = stablehlo.constant dense<1> : tensor<i32>"]
    for i in range(depth):
        lines += [f"  %w{i}:2 = stablehlo.while(%it{i} = %c0, %s{i + 1} = %s{i}) : tensor<i32>, tensor<i32>", "  cond {",
                  f"  %p{i} = stablehlo.compare LT, %it{i}, %two : (tensor<i32>, tensor<i32>) -> tensor<i1>",
                  f"  stablehlo.return %p{i} : tensor<i1>", "  } do {"]
    lines.append(f"  %in = stablehlo.add %s{depth}, %one : tensor<i32>")
    inner = "%in"
    for i in reversed(range(depth)):
        lines += [f"  %n{i} = stablehlo.add %it{i}, %one : tensor<i32>",
                  f"  stablehlo.return %n{i}, {inner} : tensor<i32>, tensor<i32>", "  }"]
        inner = f"%w{i}#1"
    lines += [f"  func.return {inner} : tensor<i32>", "}"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("depth, trips", [(3, 2), (12, 2), (30, 1)])
def test_loops_nested_deeper_than_python_compiles_run_their_inner_loops_through_the_kernel(depth, trips):
    text = _nested_counters(depth, trips)
    assert _check(text, (np.array(5, np.int32),))
    assert int(Engine(_module(text)).call("main", (np.array(5, np.int32),))[0]) == 5 + trips ** depth
