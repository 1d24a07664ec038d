"""Element-wise fast paths run in blocks on several threads (``engine.codegen._in_pieces``,
``kernels._parallel``): the results are the single-threaded ones bit for bit (NaN payloads
included), with the same strides; the pool survives ``fork``; ``conform run -j N`` workers get
their share of the cores."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import ml_dtypes
import numpy as np
import pytest

from stablehlo_conform import frontend
from stablehlo_conform.engine import Engine, codegen
from stablehlo_conform.harness.suite import runner
from stablehlo_conform.kernels import _parallel
from stablehlo_conform.kernels.registry import load_all

BF16 = np.dtype(ml_dtypes.bfloat16)
F8 = np.dtype(ml_dtypes.float8_e4m3fn)


@pytest.fixture
def small_blocks(monkeypatch):
    """Every element-wise fast path of a generated block split, into many small blocks (block
    boundaries inside rows), and a count of the splits run on threads."""
    monkeypatch.setattr(codegen, "SPLIT_MIN", 1)
    monkeypatch.setattr(codegen, "SPLIT_MIN_UFUNC", 1)
    monkeypatch.setattr(codegen, "BLOCKS_PER_THREAD", 13)
    monkeypatch.setattr(_parallel, "PAYING_SPEEDUP", 0.0)  # split even where threads do not pay
    monkeypatch.setattr(_parallel, "_paying", [0, _parallel.BACK_OFF])
    calls = []
    run = _parallel.run

    def counting(pieces):
        calls.append(len(pieces))
        return run(pieces)

    monkeypatch.setattr(_parallel, "run", counting)
    before = _parallel.threads()
    yield calls
    _parallel.set_threads(before)


def _raw(x) -> tuple:
    x = np.asarray(x)
    return x.dtype.str, x.shape, x.strides if x.ndim else (), x.tobytes()


def _canonical(x) -> tuple:
    """Bits with every NaN made one NaN (as tests/test_fast_paths.py's ``_bits``: the kernels
    and NumPy's loops may keep different NaN payloads)."""
    x = np.array(x)
    if x.dtype.kind == "f" or x.dtype in (BF16, F8):
        w = x.astype(np.float64)
        x = x.copy()
        x[np.isnan(w)] = np.nan
    return x.dtype.str, x.shape, x.tobytes()


def _generated(mod, args, threads: int) -> list:
    _parallel.set_threads(threads)
    for _ in range(6):  # blocks are generated after their first runs
        eng = Engine(mod)
        out = eng.call("main", args)
        if eng._runners:
            return list(out)
    raise AssertionError("no block was generated")


def _check(text: str, args, threads: int, calls: list) -> None:
    """Generated with ``threads`` threads == generated on one thread, raw bits and strides;
    == step by step, bits (NaN canonical)."""
    (mod,) = frontend.load_text(text)
    stepwise = Engine(mod)
    stepwise.generate_blocks = False
    expect = [_canonical(o) for o in stepwise.call("main", args)]
    one = _generated(mod, args, 1)
    assert not calls, "one thread splits nothing"
    many = _generated(mod, args, threads)
    assert calls, "the element-wise ops ran in pieces"
    assert [_raw(o) for o in many] == [_raw(o) for o in one]
    assert [_canonical(o) for o in many] == expect


def _specials(dt, shape, rng) -> np.ndarray:
    """Random values of ``dt`` with NaN, infinities, signed zeros, subnormals and extremes."""
    dt = np.dtype(dt)
    n = int(np.prod(shape))
    if dt.kind in "iu":
        info = np.iinfo(dt)
        x = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
        x[: 6] = [info.min, info.max, 0, -1 if dt.kind == "i" else 1, 1, info.min + 1]
        return x.reshape(shape)
    x = (rng.standard_normal(n) * 4).astype(np.float32).astype(dt)
    tiny = np.finfo(np.float32).smallest_subnormal if dt == np.float32 else 0
    spec = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e30, 88.8, -104.0, tiny, 1.0],
                    np.float64)
    with np.errstate(all="ignore"):
        x[: spec.size] = spec.astype(np.float32).astype(dt)
    rng.shuffle(x)
    return x.reshape(shape)


def _t(shape, et):
    return f"tensor<{'x'.join(map(str, shape))}x{et}>" if shape else f"tensor<{et}>"


F32_CHAIN = """
func.func @main(%x: {T}, %y: {T}, %b: {V}, %s: tensor<f32>) -> ({T}, {T}, {B}, {T}, tensor<f32>, {T}) {{
  %bb = stablehlo.broadcast_in_dim %b, dims = [{D}] : ({V}) -> {T}
  %sb = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> {T}
  %0 = stablehlo.add %x, %bb : {T}
  %1 = stablehlo.multiply %0, %sb : {T}
  %2 = stablehlo.exponential %1 : {T}
  %3 = stablehlo.tanh %2 : {T}
  %4 = stablehlo.divide %3, %y : {T}
  %5 = stablehlo.subtract %4, %x : {T}
  %c = stablehlo.compare GT, %5, %y : ({T}, {T}) -> {B}
  %6 = stablehlo.select %c, %5, %bb : {B}, {T}
  %7 = stablehlo.negate %6 : {T}
  %8 = stablehlo.maximum %7, %sb : {T}
  %9 = stablehlo.logistic %8 : {T}
  %10 = stablehlo.sqrt %9 : {T}
  %ss = stablehlo.multiply %s, %s : tensor<f32>
  %11 = stablehlo.select %c, %sb, %10 : {B}, {T}
  return %10, %2, %c, %8, %ss, %11 : {T}, {T}, {B}, {T}, tensor<f32>, {T}
}}
"""


@pytest.mark.parametrize("shape", [(6, 7, 50), (2100,), (1, 3, 700), (5, 1, 1, 421)])
@pytest.mark.parametrize("threads", [2, 3])
def test_a_chain_of_f32_element_wise_ops_on_threads_is_the_single_threaded_one(small_blocks, shape, threads):
    rng = np.random.default_rng(sum(shape) + threads)
    text = F32_CHAIN.format(T=_t(shape, "f32"), V=_t(shape[-1:], "f32"), B=_t(shape, "i1"), D=len(shape) - 1)
    args = (_specials(np.float32, shape, rng), _specials(np.float32, shape, rng),
            _specials(np.float32, shape[-1:], rng), np.array(0.75, np.float32))
    _check(text, args, threads, small_blocks)


NARROW = """
func.func @main(%x: {T}, %y: {T}) -> ({T}, {T}, {T}, {T}, {B}, {F}) {{
  %0 = stablehlo.add %x, %y : {T}
  %1 = stablehlo.multiply %0, %y : {T}
  %2 = stablehlo.exponential %x : {T}
  %3 = stablehlo.tanh %1 : {T}
  %4 = stablehlo.divide %3, %x : {T}
  %c = stablehlo.compare LT, %4, %y : ({T}, {T}) -> {B}
  %f = stablehlo.convert %4 : ({T}) -> {F}
  return %1, %2, %3, %4, %c, %f : {T}, {T}, {T}, {T}, {B}, {F}
}}
"""


@pytest.mark.parametrize("et,dt,shape", [("bf16", BF16, (4, 5000)), ("f16", np.float16, (3, 7, 1000)),
                                         ("f8E4M3FN", F8, (20000,)), ("f64", np.float64, (9, 333))])
def test_narrow_and_wide_floats_on_threads_are_the_single_threaded_ones(small_blocks, et, dt, shape):
    """bf16 and f8 (rounded through f32, tables), f16 (computed in f64 and rounded once, in
    screened blocks), f64."""
    rng = np.random.default_rng(len(shape))
    text = NARROW.format(T=_t(shape, et), B=_t(shape, "i1"), F=_t(shape, "f32" if et != "f32" else "f64"))
    _check(text, (_specials(dt, shape, rng), _specials(dt, shape, rng)), 2, small_blocks)


INTS = """
func.func @main(%x: {T}, %y: {T}, %k: {V}) -> ({T}, {T}, {T}, {B}, {T}) {{
  %kb = stablehlo.broadcast_in_dim %k, dims = [0] : ({V}) -> {T}
  %0 = stablehlo.add %x, %y : {T}
  %1 = stablehlo.multiply %0, %kb : {T}
  %2 = stablehlo.shift_right_arithmetic %1, %kb : {T}
  %3 = stablehlo.and %2, %x : {T}
  %c = stablehlo.compare GE, %3, %y : ({T}, {T}) -> {B}
  %4 = stablehlo.select %c, %3, %kb : {B}, {T}
  %5 = stablehlo.divide %4, %kb : {T}
  return %1, %2, %4, %c, %5 : {T}, {T}, {T}, {B}, {T}
}}
"""


@pytest.mark.parametrize("et,dt", [("i32", np.int32), ("i8", np.int8), ("ui16", np.uint16), ("i64", np.int64)])
def test_integer_ops_with_broadcast_operands_on_threads_are_the_single_threaded_ones(small_blocks, et, dt):
    shape = (37, 111)
    rng = np.random.default_rng(7)
    k = rng.integers(1, 6, shape[0]).astype(dt)  # no division by zero: the kernel's rule is tested elsewhere
    text = INTS.format(T=_t(shape, et), V=_t(shape[:1], et), B=_t(shape, "i1"))
    _check(text, (_specials(dt, shape, rng), _specials(dt, shape, rng), k), 2, small_blocks)


def test_a_broadcast_predicate_and_rank0_values_stay_as_without_threads(small_blocks):
    """A select whose predicate is a broadcast view (not in C order: the whole call), and a
    block mixing rank-0 and tensor element-wise ops."""
    shape = (64, 96)
    text = f"""
func.func @main(%p: tensor<96xi1>, %x: {_t(shape, "f32")}, %y: {_t(shape, "f32")}, %s: tensor<f32>)
    -> ({_t(shape, "f32")}, tensor<f32>, {_t(shape, "f32")}) {{
  %pb = stablehlo.broadcast_in_dim %p, dims = [1] : (tensor<96xi1>) -> {_t(shape, "i1")}
  %0 = stablehlo.select %pb, %x, %y : {_t(shape, "i1")}, {_t(shape, "f32")}
  %1 = stablehlo.add %s, %s : tensor<f32>
  %2 = stablehlo.exponential %1 : tensor<f32>
  %b = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<f32>) -> {_t(shape, "f32")}
  %3 = stablehlo.multiply %0, %b : {_t(shape, "f32")}
  return %0, %2, %3 : {_t(shape, "f32")}, tensor<f32>, {_t(shape, "f32")}
}}
"""
    rng = np.random.default_rng(3)
    args = (rng.random(96) < 0.5, _specials(np.float32, shape, rng), _specials(np.float32, shape, rng),
            np.array(1.5, np.float32))
    _check(text, args, 2, small_blocks)


def test_a_transposed_operand_keeps_the_layout_of_the_whole_call():
    """Where an operand is not in C order, the whole ufunc's result may not be either: the
    pieces are used only where it is (else a BLAS product reading it could see other strides)."""
    fp = codegen.FastPath(np.exp, views=True, out=True)
    x = np.random.default_rng(0).standard_normal((300, 200)).astype(np.float32).T
    before = _parallel.threads()
    try:
        _parallel.set_threads(2)
        r = codegen._in_pieces(fp, x.shape, np.dtype(np.float32))(x)
    finally:
        _parallel.set_threads(before)
    w = np.exp(x)
    assert r.strides == w.strides and r.tobytes() == w.tobytes()


def test_blocks_cover_every_element_once_in_about_equal_parts():
    for shape in [(1, 1500, 384), (6, 1500, 1500), (3, 1000), (7,), (2, 3, 5), (1, 1, 1), (4, 197, 3072), (0, 5), ()]:
        for parts in (1, 2, 3, 8, 100):
            seen = np.zeros(shape, np.int64)
            idx = _parallel.blocks(shape, parts)
            for s in idx:
                seen[s] += 1
            assert (seen == 1).all(), (shape, parts)
            sizes = [seen[s].size for s in idx]
            if seen.size >= parts:
                assert len(idx) >= parts and max(sizes) <= 2 * min(sizes) + 1, (shape, parts, sizes)


def test_run_returns_results_in_order_and_raises_the_first_pieces_error():
    before = _parallel.threads()
    try:
        _parallel.set_threads(2)
        assert _parallel.run([lambda i=i: i * i for i in range(50)]) == [i * i for i in range(50)]

        def piece(i):
            if i in (3, 30):
                raise ValueError(i)
            return i

        with pytest.raises(ValueError, match="^3$"):
            _parallel.run([lambda i=i: piece(i) for i in range(50)])
        # nested: the inner pieces run one after the other in the piece's thread
        assert _parallel.run([lambda: _parallel.run([lambda: 1, lambda: 2])] * 4) == [[1, 2]] * 4
        # a piece runs under the caller's floating-point error state (NumPy's errstate)
        with np.errstate(all="raise"):
            modes = _parallel.run([np.geterr] * 8)
        assert all(m["divide"] == "raise" for m in modes)
    finally:
        _parallel.set_threads(before)


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_the_pool_works_in_a_child_started_by_fork():
    before = _parallel.threads()
    try:
        _parallel.set_threads(2)
        _parallel.start()
        assert _parallel.run([lambda: threading.current_thread().name] * 20)
        pid = os.fork()
        if pid == 0:  # the child: a pool of its own, the same results
            code = 1
            try:
                x = np.arange(100_000, dtype=np.float32)
                fp = codegen.FastPath(np.sqrt, views=True, out=True)
                r = codegen._in_pieces(fp, x.shape, x.dtype)(x)
                names = set(_parallel.run([lambda: threading.current_thread().name] * 64))
                code = 0 if r.tobytes() == np.sqrt(x).tobytes() and len(names) >= 1 else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        _parallel.set_threads(before)


def test_start_makes_the_threads_before_a_tests_budget():
    before = _parallel.threads()
    try:
        _parallel.set_threads(3)
        _parallel.start()
        assert sum(t.name.startswith("conform-op") for t in threading.enumerate()) >= 2
    finally:
        _parallel.set_threads(before)


def test_each_run_worker_gets_its_share_of_the_cores(monkeypatch):
    monkeypatch.delenv("CONFORM_THREADS", raising=False)
    monkeypatch.setattr(_parallel, "cores", lambda: 8)
    assert [_parallel.share(j) for j in (1, 2, 3, 8, 16)] == [8, 4, 2, 1, 1]
    monkeypatch.setenv("CONFORM_THREADS", "5")
    assert _parallel.share(4) == 5
    monkeypatch.delenv("CONFORM_THREADS")

    spawned = []

    class Ctx:  # records the worker's arguments instead of starting it
        Pipe = staticmethod(lambda: (None, type("C", (), {"close": lambda self: None})()))

        @staticmethod
        def Process(target, daemon, args):
            spawned.append(args)
            return type("P", (), {"start": lambda self: None})()

    for jobs, want in ((1, 8), (2, 4), (4, 2), (9, 1)):
        r = runner.Runner(None, jobs=jobs)
        r.ctx = Ctx
        r._spawn()
        assert spawned[-1][-1] == want


def test_a_worker_sets_its_thread_count_and_starts_its_threads():
    """``_worker_main`` in a fresh interpreter, told 3 threads: it runs 3 at once."""
    code = """
import threading
from stablehlo_conform.harness.suite import runner
from stablehlo_conform.kernels import _parallel
class Conn:
    def recv(self): return None
    def send(self, m): pass
runner._worker_main(Conn(), None, None, False, 3)
print(_parallel.threads(), sum(t.name.startswith("conform-op") for t in threading.enumerate()))
"""
    env = {k: v for k, v in os.environ.items() if k != "CONFORM_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["3", "2"]


def test_conform_threads_sets_the_default():
    code = "from stablehlo_conform.kernels import _parallel; print(_parallel.threads(), _parallel.share(64))"
    env = dict(os.environ, CONFORM_THREADS="7")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert out.stdout.split() == ["7", "7"], out.stderr


def test_small_ops_are_not_split():
    """Below the thresholds a fast path is called whole (no thread hand-off)."""
    shape = (100, 100)
    text = f"""
func.func @main(%x: {_t(shape, "f32")}) -> {_t(shape, "f32")} {{
  %0 = stablehlo.exponential %x : {_t(shape, "f32")}
  %1 = stablehlo.add %0, %x : {_t(shape, "f32")}
  return %1 : {_t(shape, "f32")}
}}
"""
    (mod,) = frontend.load_text(text)
    steps = Engine(mod)._steps(mod.funcs["main"].body.blocks[0])
    plan = codegen._Plan(mod.funcs["main"].body, 0, steps, False, load_all(), Engine(mod)._steps)
    assert plan.fast and not plan.split


def test_a_correctly_rounded_transcendental_is_split_from_a_million_elements():
    """``exponential`` and ``tanh`` (about 1.5 ns an element, float_math.SPLIT_MIN) are computed
    in blocks on threads from 2**20 elements, where a ufunc (``add``) waits for 2**22."""
    from stablehlo_conform.kernels import float_math
    shape = (1024, float_math.SPLIT_MIN // 1024)
    t = _t(shape, "f32")
    text = f"""
func.func @main(%x: {t}) -> {t} {{
  %0 = stablehlo.exponential %x : {t}
  %1 = stablehlo.tanh %0 : {t}
  %2 = stablehlo.add %1, %x : {t}
  return %2 : {t}
}}
"""
    (mod,) = frontend.load_text(text)
    steps = Engine(mod)._steps(mod.funcs["main"].body.blocks[0])
    plan = codegen._Plan(mod.funcs["main"].body, 0, steps, False, load_all(), Engine(mod)._steps)
    split = {op.name for op in mod.funcs["main"].body.blocks[0].ops if id(op) in plan.split}
    assert split == {"stablehlo.exponential", "stablehlo.tanh"}
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    stepwise = Engine(mod)
    stepwise.generate_blocks = False
    expect = _raw(stepwise.call("main", (x,))[0])
    before = _parallel.threads()
    _parallel.set_threads(2)
    try:
        for _ in range(12):  # until the block is generated
            eng = Engine(mod)
            assert _raw(eng.call("main", (x,))[0]) == expect
            if eng._runners:
                break
        assert eng._runners
    finally:
        _parallel.set_threads(before)


@pytest.mark.parametrize("name", ["logistic", "cosine", "exponential", "tanh"])
def test_every_f16_on_threads_the_oracle_near_midpoints_included(small_blocks, name):
    """All 2**16 f16 patterns, four times over (so blocks on several threads reach the exact
    evaluation of elements near a rounding midpoint at once: mpmath's precision is one setting
    of the process, ``oracle.exact._MPMATH``)."""
    x = np.tile(np.arange(1 << 16, dtype=np.uint16).view(np.float16), 4).reshape(16, 1 << 14)
    t = _t(x.shape, "f16")
    text = f"""
func.func @main(%x: {t}) -> {t} {{
  %0 = stablehlo.{name} %x : {t}
  return %0 : {t}
}}
"""
    _check(text, (x,), 3, small_blocks)


@pytest.mark.parametrize("e", [3.0, 2.0, 0.5, 1.7])
@pytest.mark.parametrize("et,dt", [("f32", np.float32), ("f16", np.float16)])
def test_power_by_a_broadcast_exponent_on_threads(small_blocks, e, et, dt):
    """GELU's ``x ** 3``: the exponent a broadcast scalar (strides 0), the base in C order."""
    shape = (12, 4096)
    t = _t(shape, et)
    text = f"""
func.func @main(%x: {t}, %e: tensor<{et}>) -> {t} {{
  %b = stablehlo.broadcast_in_dim %e, dims = [] : (tensor<{et}>) -> {t}
  %0 = stablehlo.power %x, %b : {t}
  return %0 : {t}
}}
"""
    rng = np.random.default_rng(int(e * 10))
    _check(text, (_specials(dt, shape, rng), np.array(e, dt)), 2, small_blocks)


def test_threads_back_off_while_they_do_not_pay(monkeypatch):
    """A run whose pieces took as long at once as one after the other (the other cores busy):
    the next BACK_OFF ops run whole, then one tries threads again."""
    b = _parallel.BACK_OFF
    monkeypatch.setattr(_parallel, "_paying", [0, b])
    _parallel._measured(1.0)
    assert [_parallel.paying() for _ in range(b + 2)] == [False] * b + [True] * 2
    _parallel._measured(1.0)  # the try did not pay either: twice as long
    assert [_parallel.paying() for _ in range(2 * b + 1)] == [False] * (2 * b) + [True]
    _parallel._measured(1.9)
    assert _parallel.paying()
    _parallel._measured(1.0)  # after a run that paid, the back-off starts short again
    assert [_parallel.paying() for _ in range(b + 1)] == [False] * b + [True]
    _parallel._measured(0.5)
    x = np.arange(1 << 12, dtype=np.float32)
    before = _parallel.threads()
    calls = []
    monkeypatch.setattr(_parallel, "run", lambda pieces: calls.append(1))
    try:
        _parallel.set_threads(2)
        r = codegen._in_pieces(codegen.FastPath(np.sqrt, views=True, out=True), x.shape, x.dtype)(x)
    finally:
        _parallel.set_threads(before)
    assert not calls and r.tobytes() == np.sqrt(x).tobytes()


def test_a_run_that_does_not_pay_is_recorded_where_it_was_asked(monkeypatch):
    """``run`` itself records its speedup in the record it was given: pieces that wait instead
    of computing (no CPU time) make the next ``paying`` of that record, and only of it, say
    False."""
    import time

    b = _parallel.BACK_OFF
    monkeypatch.setattr(_parallel, "_paying", [0, b])
    products = [0, b]
    before = _parallel.threads()
    try:
        _parallel.set_threads(2)
        _parallel.run([lambda: time.sleep(0.01), lambda: time.sleep(0.01)], products)
    finally:
        _parallel.set_threads(before)
    assert products == [b, 2 * b] and not _parallel.paying(products)
    assert _parallel.paying()  # the default record was not touched


BIG_CHAIN = """func.func @big_chain() {
  %i = stablehlo.iota dim = 1 : tensor<4x524288xf32>
  %0 = stablehlo.optimization_barrier %i : tensor<4x524288xf32>
  %s = stablehlo.constant dense<1.0e-6> : tensor<4x524288xf32>
  %1 = stablehlo.multiply %0, %s : tensor<4x524288xf32>
  %2 = stablehlo.exponential %1 : tensor<4x524288xf32>
  %3 = stablehlo.tanh %2 : tensor<4x524288xf32>
  %4 = stablehlo.add %3, %1 : tensor<4x524288xf32>
  %5 = stablehlo.subtract %4, %1 : tensor<4x524288xf32>
  %6 = stablehlo.multiply %5, %3 : tensor<4x524288xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %m = stablehlo.reduce(%6 init: %z) applies stablehlo.maximum across dimensions = [0, 1]
      : (tensor<4x524288xf32>, tensor<f32>) -> tensor<f32>
  check.expect_almost_eq_const %m, dense<0.87245315> : tensor<f32>
  func.return
}
"""


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_run_worker_computes_big_element_wise_ops_under_a_memory_budget(tmp_path, jobs):
    """``conform run -j N --max-memory``: the worker's threads (started before the budget) run
    the pieces of 2M-element ops (where they pay, see ``_parallel.paying``); the test passes
    and the next one too."""
    import json

    p = tmp_path / "big.mlir"
    p.write_text(BIG_CHAIN + "\n// -----\n\n" + """func.func @ok() {
  %0 = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  check.expect_eq_const %0, dense<[1, 2]> : tensor<2xi32>
  func.return
}
""")
    out = tmp_path / "r.json"
    env = {k: v for k, v in os.environ.items() if k != "CONFORM_THREADS"}
    r = subprocess.run([sys.executable, "-m", "stablehlo_conform.cli", "run", str(p), "-j", jobs, "--max-memory",
                        "96", "--json", str(out)], capture_output=True, text=True, timeout=300, env=env,
                       cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    recs = json.loads(out.read_text())["results"]
    assert [(x["id"].rsplit("::", 1)[1], x["status"]) for x in recs] == [("big_chain", "pass"), ("ok", "pass")], (
        recs, r.stderr[-2000:])


def test_threads_that_cannot_start_leave_the_work_to_the_caller(monkeypatch):
    """Under a memory budget a thread's stack may be refused: ``start`` returns, and ``run``
    (and so a split op) does every piece in its caller."""
    def refuse(self):
        raise RuntimeError("can't start new thread")

    before = _parallel.threads()
    _parallel._forget_pool()  # a pool with no thread yet
    monkeypatch.setattr(threading.Thread, "start", refuse)
    try:
        _parallel.set_threads(3)
        _parallel.start()
        assert _parallel.run([lambda i=i: i + 1 for i in range(9)]) == list(range(1, 10))
        x = np.linspace(-3, 3, 1 << 12, dtype=np.float32)
        r = codegen._in_pieces(codegen.FastPath(np.tanh, views=True, out=True), x.shape, x.dtype)(x)
        assert r.tobytes() == np.tanh(x).tobytes()
    finally:
        monkeypatch.undo()
        _parallel._forget_pool()
        _parallel.set_threads(before)
