"""Independent products of one generated block computed at once on the process's threads
(``engine.codegen._Plan._groups``, ``_group``): the results are the step-by-step engine's bit
for bit, and the same on one thread and on two; a failing product gives the error the
step-by-step run gives; ``one_blas_thread`` entered from several threads at once leaves BLAS
on one thread while any is inside and restores the setting after the last."""

from __future__ import annotations

import threading
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from stablehlo_conform import frontend, load
from stablehlo_conform.engine import Engine, codegen
from stablehlo_conform.errors import ConformError
from stablehlo_conform.harness.programs.recipe import read_recipe
from stablehlo_conform.kernels import _blas_threads, _parallel, _split_gemm, linalg
from test_engine import _assert_generated_matches_stepwise, _outputs
from test_zoo_generated import zoo_stepwise

BF16 = ml_dtypes.bfloat16


def _module(fn, *args):
    import jax

    (mod,) = frontend.load_text(jax.jit(fn).lower(*args).as_text())
    return mod


@pytest.fixture
def groups(monkeypatch):
    """Two threads, threads always paying, and the sizes of the groups run."""
    sizes: list[int] = []
    group = codegen._group

    def counting(macs, *calls):
        sizes.append(len(calls))
        return group(macs, *calls)

    monkeypatch.setattr(codegen, "_group", counting)
    monkeypatch.setattr(_parallel, "PAYING_SPEEDUP", 0.0)
    monkeypatch.setattr(_parallel, "_paying", [0, _parallel.BACK_OFF])
    monkeypatch.setattr(_parallel, "PRODUCTS", [0, _parallel.BACK_OFF])
    before = _parallel.threads()
    _parallel.set_threads(2)
    yield sizes
    _parallel.set_threads(before)


def _attention(x, wq, wk, wv, wo):
    import jax

    q, k, v = x @ wq, x @ wk, x @ wv
    p = jax.nn.softmax(q @ k.T / 16.0, axis=-1)
    return (p @ v) @ wo


def _attention_args(dt, rng):
    x = rng.standard_normal((128, 256)).astype(dt)
    ws = [(0.06 * rng.standard_normal((256, 256))).astype(dt) for _ in range(4)]
    return (x, *ws)


def _lstm(h, c, xs, w, u):
    import jax
    import jax.numpy as jnp
    from jax import lax

    def step(i, hc):
        h, c = hc
        g = xs[i] @ w + h @ u
        a, b, o, z = jnp.split(g, 4, axis=-1)
        c = jax.nn.sigmoid(a) * c + jax.nn.sigmoid(b) * jnp.tanh(z)
        return jax.nn.sigmoid(o) * jnp.tanh(c), c

    return lax.fori_loop(0, xs.shape[0], step, (h, c))


def _lstm_args(rng):
    return (rng.standard_normal((64, 128)).astype(np.float32), rng.standard_normal((64, 128)).astype(np.float32),
            rng.standard_normal((6, 64, 128)).astype(np.float32),
            (0.1 * rng.standard_normal((128, 512))).astype(np.float32),
            (0.1 * rng.standard_normal((128, 512))).astype(np.float32))


def _threads_agree(fn, args) -> None:
    """The generated blocks' results on one thread and on two, bit for bit."""
    out = []
    for n in (1, 2):
        _parallel.set_threads(n)
        mod = _module(fn, *args)
        for _ in range(3):
            got = _outputs(Engine(mod), "main", args)
        out.append(got)
    assert out[0] == out[1]


@pytest.mark.parametrize("dt", [np.float32, BF16], ids=["f32", "bf16"])
def test_attention_projections_run_at_once_bit_for_bit(groups, dt):
    args = _attention_args(dt, np.random.default_rng(0))
    assert _assert_generated_matches_stepwise(_module(_attention, *args), "main", args)
    assert 3 in groups  # q, k and v together
    _threads_agree(_attention, args)


def test_a_group_runs_its_last_products_alone_where_that_is_sooner():
    """Three products of one size on two threads: two at once, then the third alone (cut on
    both threads, its time taken as half); unequal sizes that a thread's queue balances, sizes
    too small to cut, and counts that fill every thread stay all at once."""
    big, small = 1 << 27, 1 << 20
    assert codegen._alone((big, big, big), 2) == 1
    assert codegen._alone((big,) * 5, 2) == 1
    assert codegen._alone((big,) * 4, 2) == 0
    assert codegen._alone((big, big), 2) == 0
    assert codegen._alone((4 * big, big, big), 2) == 0  # one thread: 4, the other: 1 + 1
    assert codegen._alone((small, small, small), 2) == 0
    assert codegen._alone((big, big, big), 3) == 0


def test_the_peel_follows_the_cut_threshold_in_force(monkeypatch):
    """The decision is remembered per threshold: a product below a raised
    ``_split_gemm.MIN_MACS`` is not cut, so it is no longer peeled, and it is again once the
    threshold is back."""
    big = 1 << 27
    assert codegen._alone((big, big, big), 2) == 1
    monkeypatch.setattr(_split_gemm, "MIN_MACS", 2 * big)
    assert codegen._alone((big, big, big), 2) == 0
    monkeypatch.undo()
    assert codegen._alone((big, big, big), 2) == 1


def test_a_group_of_three_large_projections_is_bit_for_bit(groups, monkeypatch):
    """q, k and v of 2**26 multiply-adds each: the third runs alone (where its kind's cut is
    kept, in pieces), the results the step-by-step engine's."""
    alone: list[int] = []
    real = codegen._alone

    def recording(macs, n):
        alone.append(real(macs, n))
        return alone[-1]

    monkeypatch.setattr(codegen, "_alone", recording)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((256, 512)).astype(np.float32)
    ws = [(0.05 * rng.standard_normal((512, 512))).astype(np.float32) for _ in range(4)]
    assert _assert_generated_matches_stepwise(_module(_attention, x, *ws), "main", (x, *ws))
    assert 3 in groups and 1 in alone


def test_lstm_step_products_in_a_loop_run_at_once_bit_for_bit(groups):
    args = _lstm_args(np.random.default_rng(1))
    assert _assert_generated_matches_stepwise(_module(_lstm, *args), "main", args)
    assert groups.count(2) >= 6  # input and recurrent product of each step
    _threads_agree(_lstm, args)


def test_small_products_and_one_thread_run_step_by_step(groups):
    rng = np.random.default_rng(2)
    args = tuple(a[:8, :32] if a.ndim == 2 and a.shape[0] == 128 else a[:32, :32] for a in _attention_args(np.float32, rng))
    assert _assert_generated_matches_stepwise(_module(_attention, *args), "main", args)
    assert not groups
    _parallel.set_threads(1)
    args = _attention_args(np.float32, rng)
    assert _assert_generated_matches_stepwise(_module(_attention, *args), "main", args)
    assert not groups


def _failing(x, w1, w3, y, w2):
    import jax.numpy as jnp

    a = x @ w1
    s = jnp.tanh(a)  # a's first reader: the group of a and b comes before it
    e = y @ w2  # fails first, step by step
    b = x @ w3  # fails; computed with a, before e
    return s, e, b


@pytest.mark.parametrize("alone", [0, 1, 2])
@pytest.mark.parametrize("small_fails", [True, False])
def test_a_failing_product_of_a_group_raises_the_stepwise_error(groups, monkeypatch, small_fails, alone):
    """Whether the failing product runs at once with the other (``alone`` 0), after it
    (1: the larger, failing one at once, the other alone) or both alone (2)."""
    monkeypatch.setattr(codegen, "_alone", lambda sizes, n: alone)
    rng = np.random.default_rng(3)
    args = (rng.standard_normal((128, 256)).astype(BF16), rng.standard_normal((256, 256)).astype(BF16),
            rng.standard_normal((256, 384)).astype(BF16), rng.standard_normal((4, 8)).astype(BF16),
            rng.standard_normal((8, 4)).astype(BF16))
    real, armed = linalg.dot_general_arrays, []

    def failing(lhs, rhs, *rest):
        if armed and (rhs.shape == (256, 384) or (small_fails and rhs.shape == (8, 4))):
            raise ValueError(f"product {rhs.shape} fails")
        return real(lhs, rhs, *rest)

    monkeypatch.setattr(linalg, "dot_general_arrays", failing)
    mod = _module(_failing, *args)
    for _ in range(3):  # the block is generated after its first runs
        Engine(mod).call("main", args)
    assert 2 in groups
    armed.append(True)
    messages = []
    for generate in (False, True, True):
        eng = Engine(mod)
        eng.generate_blocks = generate
        with pytest.raises((ConformError, ValueError)) as info:
            eng.call("main", args)
        messages.append(str(info.value))
    assert len(set(messages)) == 1, messages
    assert ("(8, 4)" if small_fails else "(256, 384)") in messages[0]
    assert groups.count(2) >= 3


def test_one_blas_thread_from_threads_at_once_keeps_one_thread_and_restores(monkeypatch):
    setting = [4]
    seen: list[int] = []
    monkeypatch.setattr(_blas_threads, "_controls", (lambda: setting[0], lambda n: setting.__setitem__(0, n)))
    monkeypatch.setattr(_blas_threads, "_held", 0)
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()

    def first():
        with _blas_threads.one_blas_thread():
            a_in.set()
            b_in.wait(5)
        a_out.set()

    def second():
        a_in.wait(5)
        with _blas_threads.one_blas_thread():
            b_in.set()
            a_out.wait(5)  # the first left: BLAS must still run on one thread
            seen.append(setting[0])

    ts = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(10)
    assert seen == [1]
    assert setting[0] == 4 and _blas_threads._held == 0


ZOO = Path(__file__).resolve().parents[1] / "testsuite" / "models"
GROUPED_MODELS = ("bert_base", "bert_base_bf16", "llama_bf16", "llama_f32", "t5_small", "vit_b16", "whisper_tiny")


@pytest.mark.parametrize("name", GROUPED_MODELS)
def test_zoo_models_with_products_at_once_match_the_stepwise_path(groups, name):
    """The zoo's models with independent products (attention projections, SwiGLU gate and up
    projections): generated blocks computing them at once on two threads (threads paying or
    not) give the step-by-step results bit for bit, as on one thread."""
    if not (ZOO / f"{name}.recipe.json").exists():
        pytest.skip(f"{name} is not in the zoo")
    mod, args, expect = zoo_stepwise(name)
    for _ in range(4):
        assert _outputs(Engine(mod), "main", args) == expect
    assert groups, "no products ran at once"
    _parallel.set_threads(1)
    (mod,) = load(str(read_recipe(ZOO / f"{name}.recipe.json").program_path))  # generated anew
    for _ in range(4):
        assert _outputs(Engine(mod), "main", args) == expect


CHECKED_GROUP = """
func.func @main(%x: tensor<128x256xbf16>, %w1: tensor<256x256xbf16>, %w3: tensor<256x384xbf16>)
    -> (tensor<128x256xbf16>, tensor<128x384xbf16>) {
  %c = stablehlo.constant dense<1.0> : tensor<f32>
  stablehlo.custom_call @check.expect_eq(%c, %c) {has_side_effect = true} : (tensor<f32>, tensor<f32>) -> ()
  %a = stablehlo.dot_general %x, %w1, contracting_dims = [1] x [0] : (tensor<128x256xbf16>, tensor<256x256xbf16>) -> tensor<128x256xbf16>
  %s = stablehlo.tanh %a : tensor<128x256xbf16>
  %b = stablehlo.dot_general %x, %w3, contracting_dims = [1] x [0] : (tensor<128x256xbf16>, tensor<256x384xbf16>) -> tensor<128x384xbf16>
  return %s, %b : tensor<128x256xbf16>, tensor<128x384xbf16>
}
"""


def test_a_failing_group_leaves_the_checks_of_the_step_by_step_run(groups, monkeypatch):
    """A check recorded before a group whose product fails is recorded once, as step by step
    (the block's step-by-step rerun starts without the checks of the generated attempt)."""
    rng = np.random.default_rng(4)
    args = (rng.standard_normal((128, 256)).astype(BF16), rng.standard_normal((256, 256)).astype(BF16),
            rng.standard_normal((256, 384)).astype(BF16))
    real, armed = linalg.dot_general_arrays, []

    def failing(lhs, rhs, *rest):
        if armed and rhs.shape == (256, 384):
            raise ValueError("the product fails")
        return real(lhs, rhs, *rest)

    monkeypatch.setattr(linalg, "dot_general_arrays", failing)
    (mod,) = frontend.load_text(CHECKED_GROUP)
    for _ in range(3):
        Engine(mod).call("main", args)
    assert 2 in groups
    armed.append(True)
    checks = []
    for generate in (False, True):
        eng = Engine(mod)
        eng.generate_blocks = generate
        with pytest.raises((ConformError, ValueError), match="the product fails"):
            eng.call("main", args)
        checks.append(list(eng.checks))
    assert len(checks[0]) == 1 and checks[1] == checks[0]
