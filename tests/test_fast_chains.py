"""Chains of element-wise ops, and of reductions of whole rows and their broadcasts, computed
block by block on threads (``engine.chains``): the op-by-op results bit for bit, with the same
strides (which NaN a result of two NaN operands keeps is left open by IEEE 754 and differs
between NumPy's loops, as between the kernels and the fast paths: NaNs compare as one NaN); in
blocks only where the ops one by one give C-ordered results; a failing op or a fast path that
computes no block falls back to the ops one by one."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from stablehlo_conform import frontend
from stablehlo_conform.engine import Engine, chains, codegen
from stablehlo_conform.errors import KernelError
from stablehlo_conform.kernels import _parallel
from test_fast_threads import _canonical, _raw, _specials, _t

BF16 = np.dtype(ml_dtypes.bfloat16)


@pytest.fixture
def small_chains(monkeypatch):
    """Chains of any size, cut into blocks of about 97 elements (block edges inside rows where a
    chain has no reduction), run on threads even where threads do not pay; yields the chains
    found, whether each run was to be in blocks, and the blocks computed (a run in blocks that
    failed has its ops one by one instead)."""
    monkeypatch.setattr(chains, "LEAST_ELEMENTS", 1)
    monkeypatch.setattr(chains, "LEAST_WORK", 1)
    monkeypatch.setattr(chains, "BLOCK", 97)
    monkeypatch.setattr(_parallel, "PAYING_SPEEDUP", 0.0)
    monkeypatch.setattr(_parallel, "_paying", [0, _parallel.BACK_OFF])
    found, in_blocks, computed = [], [], []
    find, in_blocks_of = chains.find, chains.Chain.in_blocks

    def finding(*a):
        out = find(*a)
        found.extend(out)
        return out

    def counting(self, ins):
        ok = in_blocks_of(self, ins)
        in_blocks.append(ok)
        return ok

    def block(*a):
        out = compute(*a)
        computed.append(a[-1])
        return out

    compute = chains._block
    monkeypatch.setattr(chains, "find", finding)
    monkeypatch.setattr(chains.Chain, "in_blocks", counting)
    monkeypatch.setattr(chains, "_block", block)
    before = _parallel.threads()
    yield found, in_blocks, computed
    _parallel.set_threads(before)


def _runs(text: str, args, threads: int, times: int = 3) -> list:
    """The outputs of ``times`` runs of ``text`` through generated blocks on ``threads`` threads
    (after the runs that generate them: the plan of a block is made once, for the threads of
    its time)."""
    (mod,) = frontend.load_text(text)
    _parallel.set_threads(threads)
    for _ in range(6):
        eng = Engine(mod)
        eng.call("main", args)
        if eng._runners:
            break
    else:
        raise AssertionError("no block was generated")
    return [list(Engine(mod).call("main", args)) for _ in range(times)]


def _same(run: list, other: list) -> bool:
    """Types, shapes, strides and bits of two runs' outputs equal (NaNs as one NaN)."""
    return [_raw(o)[:3] + _canonical(o)[2:] for o in run] == [_raw(o)[:3] + _canonical(o)[2:] for o in other]


def _stepwise(mod, args) -> list:
    eng = Engine(mod)
    eng.generate_blocks = False
    return [_canonical(o) for o in eng.call("main", args)]


# an exact GELU as exporters write it (bf16 around an f32 erf), with splat constants, a bias
# broadcast along rows, an intermediate result returned, a reduction reading an argument in the
# middle of the chain (computed before it) and one reading the chain's result (after it)
GELU = """
func.func @main(%x: {T}, %b: {V}, %y: {F}) -> ({T}, {F}, tensor<{R}xf32>, tensor<{R}xf32>) {{
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %half = stablehlo.constant dense<0.5> : {T}
  %c1 = stablehlo.constant dense<-0.7071> : {T}
  %k = stablehlo.constant dense<1.1283791> : {F}
  %one = stablehlo.constant dense<1.0> : {F}
  %bb = stablehlo.broadcast_in_dim %b, dims = [1] : ({V}) -> {T}
  %0 = stablehlo.add %x, %bb : {T}
  %1 = stablehlo.multiply %0, %half : {T}
  %2 = stablehlo.negate %0 : {T}
  %3 = stablehlo.multiply %2, %c1 : {T}
  %4 = stablehlo.convert %3 : ({T}) -> {F}
  %r = stablehlo.reduce(%y init: %zero) applies stablehlo.add across dimensions = [1] : ({F}, tensor<f32>) -> tensor<{R}xf32>
  %5 = stablehlo.multiply %4, %4 : {F}
  %6 = stablehlo.negate %5 : {F}
  %7 = stablehlo.exponential %6 : {F}
  %8 = stablehlo.multiply %7, %k : {F}
  %9 = stablehlo.abs %4 : {F}
  %c = stablehlo.compare LT, %9, %one : ({F}, {F}) -> {B}
  %10 = stablehlo.tanh %4 : {F}
  %11 = stablehlo.select %c, %10, %8 : {B}, {F}
  %12 = stablehlo.subtract %one, %11 : {F}
  %13 = stablehlo.divide %12, %y : {F}
  %14 = stablehlo.convert %12 : ({F}) -> {T}
  %15 = stablehlo.multiply %1, %14 : {T}
  %s = stablehlo.reduce(%13 init: %zero) applies stablehlo.add across dimensions = [1] : ({F}, tensor<f32>) -> tensor<{R}xf32>
  return %15, %13, %r, %s : {T}, {F}, tensor<{R}xf32>, tensor<{R}xf32>
}}
"""


@pytest.mark.parametrize("rows,cols", [(12, 301), (1, 2048), (37, 64)])
@pytest.mark.parametrize("threads", [2, 3])
def test_a_gelu_chain_in_blocks_on_threads_is_the_op_by_op_one(small_chains, rows, cols, threads):
    found, in_blocks, computed = small_chains
    shape = (rows, cols)
    text = GELU.format(T=_t(shape, "bf16"), V=_t(shape[1:], "bf16"), F=_t(shape, "f32"), B=_t(shape, "i1"), R=rows)
    rng = np.random.default_rng(rows * cols + threads)
    args = (_specials(BF16, shape, rng), _specials(BF16, shape[1:], rng), _specials(np.float32, shape, rng))
    (mod,) = frontend.load_text(text)
    expect = _stepwise(mod, args)
    one = _runs(text, args, 1)
    assert not found, "no chain on one thread"
    many = _runs(text, args, threads)
    # every element-wise op and, where there are rows to cut, both reductions row by row (of
    # the chain's own result, and of an argument, which is C-ordered)
    assert [(len(c), f) for c, f in found] == [(19, (rows,)) if rows > 1 else (17, shape)]
    assert in_blocks[0] is False and all(in_blocks[1:]), "the ops one by one first, then blocks"
    assert len(computed) > 3 * threads
    for run in many:
        assert _same(run, one[0])
        assert [_canonical(o) for o in run] == expect


def test_a_reduction_of_whole_rows_and_its_broadcast_join_the_chain(small_chains):
    found, _, computed = small_chains
    shape = (16, 64)
    t = _t(shape, "f32")
    text = f"""
func.func @main(%x: {t}) -> ({t}, tensor<16xf32>) {{
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.exponential %x : {t}
  %1 = stablehlo.multiply %0, %x : {t}
  %r = stablehlo.reduce(%1 init: %zero) applies stablehlo.add across dimensions = [1] : ({t}, tensor<f32>) -> tensor<16xf32>
  %b = stablehlo.broadcast_in_dim %r, dims = [0] : (tensor<16xf32>) -> {t}
  %2 = stablehlo.subtract %1, %b : {t}
  %3 = stablehlo.tanh %2 : {t}
  return %3, %r : {t}, tensor<16xf32>
}}
"""
    (mod,) = frontend.load_text(text)
    args = (_specials(np.float32, shape, np.random.default_rng(1)),)
    expect = _stepwise(mod, args)
    for run in _runs(text, args, 2):
        assert [_canonical(o) for o in run] == expect
    assert [(len(c), f) for c, f in found] == [(6, (16,))], "the reduction and its broadcast computed row by row"
    assert computed


def test_operands_not_in_c_order_keep_the_ops_one_by_one_and_their_layout(small_chains):
    """A chain whose ops one by one give a result in Fortran order (its operand is): never run in
    blocks for those strides, so a product reading it sees the strides it would without chains."""
    _, in_blocks, computed = small_chains
    shape = (64, 48)
    t = _t(shape, "f32")
    text = f"""
func.func @main(%x: {t}, %w: tensor<48x32xf32>) -> ({t}, tensor<64x32xf32>) {{
  %0 = stablehlo.negate %x : {t}
  %1 = stablehlo.multiply %0, %x : {t}
  %2 = stablehlo.add %1, %0 : {t}
  %3 = stablehlo.dot_general %2, %w, contracting_dims = [1] x [0] : ({t}, tensor<48x32xf32>) -> tensor<64x32xf32>
  return %2, %3 : {t}, tensor<64x32xf32>
}}
"""
    (mod,) = frontend.load_text(text)
    rng = np.random.default_rng(2)
    x = np.asfortranarray(rng.standard_normal(shape).astype(np.float32))
    args = (x, rng.standard_normal((48, 32)).astype(np.float32))
    one = _runs(text, args, 1)
    many = _runs(text, args, 2)
    assert in_blocks and not any(in_blocks) and not computed
    for run in many:
        assert _same(run, one[0])
    assert not many[0][0].flags.c_contiguous  # the layout of the ops one by one, kept
    in_blocks.clear()
    c_args = (np.ascontiguousarray(x), args[1])
    for run in _runs(text, c_args, 2):
        assert _same(run, _runs(text, c_args, 1)[0])
    assert any(in_blocks) and computed


def _exp_times_x() -> tuple:
    """A chain of two ops: its text, arguments and step-by-step outputs."""
    t = _t((8, 100), "f32")
    text = f"""
func.func @main(%x: {t}) -> {t} {{
  %0 = stablehlo.exponential %x : {t}
  %1 = stablehlo.multiply %0, %x : {t}
  return %1 : {t}
}}
"""
    (mod,) = frontend.load_text(text)
    args = (_specials(np.float32, (8, 100), np.random.default_rng(3)),)
    return text, args, _stepwise(mod, args)


def test_a_failing_chain_hands_the_run_to_the_step_by_step_block(small_chains, monkeypatch):
    text, args, expect = _exp_times_x()
    failed = []

    def failing(chain, ins):
        failed.append(chain)
        raise RuntimeError("a chain's op failed")

    monkeypatch.setattr(chains, "run", failing)
    for run in _runs(text, args, 2):
        assert [_canonical(o) for o in run] == expect
    assert failed


def test_a_fast_path_that_computes_no_block_makes_the_chain_whole(monkeypatch):
    """A call whose result is not a block of the result's shape (not element-wise after all):
    raised, and the ops one by one from then on."""
    monkeypatch.setattr(_parallel, "PAYING_SPEEDUP", 0.0)
    x = np.arange(4000, dtype=np.float32).reshape(40, 100)

    def body(ins, s, sizes):
        return (np.cumsum(ins[0][s]),)  # flat: not of the block's shape

    chain = chains.Chain(body, x.shape, (x.shape,), (np.dtype(np.float32),))
    before = _parallel.threads()
    try:
        _parallel.set_threads(2)
        chain.learn((x,), (np.cumsum(x).reshape(x.shape),))  # the ops one by one gave C order
        assert chain.in_blocks((x,))
        with pytest.raises(chains._NotElementwise):
            chains.run(chain, (x,))
    finally:
        _parallel.set_threads(before)
    assert chain.whole and not chain.in_blocks((x,))


def test_a_chain_that_computes_no_block_hands_its_run_over_and_runs_its_ops_one_by_one(small_chains, monkeypatch):
    found, in_blocks, computed = small_chains
    text, args, expect = _exp_times_x()
    block = chains._block

    def not_elementwise(*a):
        raise chains._NotElementwise()

    monkeypatch.setattr(chains, "_block", not_elementwise)
    for run in _runs(text, args, 2):
        assert [_canonical(o) for o in run] == expect
    assert in_blocks == [False, True, False], "learned, tried in blocks once, then one by one"
    monkeypatch.setattr(chains, "_block", block)


def test_only_large_runs_of_element_wise_ops_are_chains():
    """Below :data:`chains.LEAST_ELEMENTS` elements or :data:`chains.LEAST_WORK` element-ops, the
    hand-off to another thread costs about what it saves: no chain."""
    def program(rows, ops):
        t = _t((rows, 1024), "f32")
        body = "\n".join(f"  %{i + 1} = stablehlo.multiply %{i}, %{i} : {t}" for i in range(ops))
        return f"func.func @main(%0: {t}) -> {t} {{\n{body}\n  return %{ops} : {t}\n}}"

    def chains_of(text):
        (mod,) = frontend.load_text(text)
        eng, body = Engine(mod), mod.funcs["main"].body
        steps = eng._steps(body.blocks[0])
        plan = codegen._Plan(body, 0, steps, False, eng.registry, eng._steps)
        return chains.find(steps, len(steps) - 1, (codegen._KERNEL,), plan.fast, codegen.ELEMENTWISE)

    small = chains.LEAST_ELEMENTS // 1024
    assert chains_of(program(small // 2, 200)) == []
    few = chains.LEAST_WORK // (small * 1024)
    assert chains_of(program(small, few - 1)) == []
    assert chains_of(program(small, few)) == [(list(range(few)), (small, 1024))]


def test_an_op_computed_before_its_chain_that_fails_hands_the_run_to_the_step_by_step_block(
        small_chains, monkeypatch):
    """A reduction (of columns: no row of a chain's blocks) computed before a chain whose first
    ops precede it (ops are pure): where it fails, the run goes step by step from the start, which raises the error of the first failing
    op in program order (here the same op: the error the step-by-step run raises)."""
    shape = (16, 64)
    t = _t(shape, "f32")
    text = f"""
func.func @main(%x: {t}) -> ({t}, tensor<64xf32>) {{
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.exponential %x : {t}
  %r = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [0] : ({t}, tensor<f32>) -> tensor<64xf32>
  %1 = stablehlo.multiply %0, %x : {t}
  return %1, %r : {t}, tensor<64xf32>
}}
"""
    calls = []
    choose = codegen._Plan._choose_fast

    def failing_reduce(self):
        choose(self)
        for key, fp in list(self.fast.items()):
            if fp.call.__name__ != "failing" and any(s[0].name == "stablehlo.reduce" and id(s[0]) == key
                                                     for _, _, s in self._all_steps()):
                def failing(*xs):
                    calls.append(len(xs))
                    raise RuntimeError("the reduction failed")
                self.fast[key] = fp._replace(call=failing)

    monkeypatch.setattr(codegen._Plan, "_choose_fast", failing_reduce)
    (mod,) = frontend.load_text(text)
    args = (_specials(np.float32, shape, np.random.default_rng(4)),)
    _parallel.set_threads(2)
    for _ in range(6):  # the step-by-step runs compute the reduction by its kernel
        eng = Engine(mod)
        try:
            eng.call("main", args)
        except KernelError:
            pass
        if eng._runners:
            break
    calls.clear()
    with pytest.raises(KernelError, match=r"stablehlo.reduce at <string>:5:\d+: RuntimeError: the reduction failed"):
        Engine(mod).call("main", args)  # the block's second engine: planned with chains
    found, _, computed = small_chains
    assert [(len(c), f) for c, f in found] == [(2, shape)]  # the reduction apart
    assert len(calls) == 2, "raised in the plain block, then again step by step"


# a softmax over the last axis (its maximum and sum of whole rows broadcast back), then a
# normalisation of the result (mean and variance over the last axis, a root of the rows)
SOFTMAX_NORM = """
func.func @main(%x: {T}, %g: {T}) -> ({T}, {T}, {R}) {{
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %n = stablehlo.constant dense<{N}.0> : {R}
  %eps = stablehlo.constant dense<1.0e-5> : {R}
  %0 = stablehlo.multiply %x, %g : {T}
  %m = stablehlo.reduce(%0 init: %ninf) applies stablehlo.maximum across dimensions = [{A}] : ({T}, tensor<f32>) -> {R}
  %mb = stablehlo.broadcast_in_dim %m, dims = [{D}] : ({R}) -> {T}
  %1 = stablehlo.subtract %0, %mb : {T}
  %2 = stablehlo.exponential %1 : {T}
  %s = stablehlo.reduce(%2 init: %zero) applies stablehlo.add across dimensions = [{A}] : ({T}, tensor<f32>) -> {R}
  %sb = stablehlo.broadcast_in_dim %s, dims = [{D}] : ({R}) -> {T}
  %3 = stablehlo.divide %2, %sb : {T}
  %t = stablehlo.reduce(%3 init: %zero) applies stablehlo.add across dimensions = [{A}] : ({T}, tensor<f32>) -> {R}
  %mean = stablehlo.divide %t, %n : {R}
  %meanb = stablehlo.broadcast_in_dim %mean, dims = [{D}] : ({R}) -> {T}
  %4 = stablehlo.subtract %3, %meanb : {T}
  %5 = stablehlo.multiply %4, %4 : {T}
  %v = stablehlo.reduce(%5 init: %zero) applies stablehlo.add across dimensions = [{A}] : ({T}, tensor<f32>) -> {R}
  %var = stablehlo.divide %v, %n : {R}
  %ve = stablehlo.add %var, %eps : {R}
  %r = stablehlo.rsqrt %ve : {R}
  %rb = stablehlo.broadcast_in_dim %r, dims = [{D}] : ({R}) -> {T}
  %6 = stablehlo.multiply %4, %rb : {T}
  return %6, %3, %m : {T}, {T}, {R}
}}
"""


@pytest.mark.parametrize("shape", [(2, 3, 37, 50), (64, 300), (5, 1, 2000)])
@pytest.mark.parametrize("threads", [2, 3])
def test_a_softmax_and_a_normalisation_in_blocks_of_rows_are_the_op_by_op_ones(small_chains, shape, threads):
    """Reductions of whole rows (a maximum with NaN and signed zeros among the values: its zero
    and NaN results come from the rows' own elements) and their broadcasts back, in one chain."""
    found, in_blocks, computed = small_chains
    rows = shape[:-1]
    text = SOFTMAX_NORM.format(T=_t(shape, "f32"), R=_t(rows, "f32"), A=len(shape) - 1, N=shape[-1],
                               D=", ".join(map(str, range(len(rows)))))
    rng = np.random.default_rng(len(shape) + threads)
    x = _specials(np.float32, shape, rng)
    x.reshape(-1, shape[-1])[::7] = rng.choice([0.0, -0.0], shape[-1]).astype(np.float32)  # rows of zeros
    args = (x, _specials(np.float32, shape, rng))
    (mod,) = frontend.load_text(text)
    expect = _stepwise(mod, args)
    one = _runs(text, args, 1)
    many = _runs(text, args, threads)
    assert [(len(c), f) for c, f in found] == [(19, rows)]  # every op
    assert in_blocks[0] is False and all(in_blocks[1:]) and computed
    for run in many:
        assert _same(run, one[0])
        assert [_canonical(o) for o in run] == expect


ROW_REDUCE = """
func.func @main(%x: {T}, %y: {T}) -> ({T}, {R}) {{
  %init = stablehlo.constant dense<{I}> : tensor<{E}>
  %0 = stablehlo.multiply %x, %y : {T}
  %r = stablehlo.reduce(%0 init: %init) applies stablehlo.{K} across dimensions = [{A}] : ({T}, tensor<{E}>) -> {R}
  %b = stablehlo.broadcast_in_dim %r, dims = [{D}] : ({R}) -> {T}
  %1 = stablehlo.subtract %0, %b : {T}
  return %1, %r : {T}, {R}
}}
"""


@pytest.mark.parametrize("et,dt", [("bf16", BF16), ("f16", np.float16), ("f32", np.float32), ("f64", np.float64),
                                   ("i32", np.int32)])
@pytest.mark.parametrize("body,init", [("add", "0"), ("maximum", "-100"), ("minimum", "100"), ("multiply", "1")])
def test_each_reduction_of_whole_rows_in_a_chain_is_the_op_by_op_one(small_chains, et, dt, body, init):
    """A reduction of the chain's own values, of every float width and an integer type, short
    rows (a sequential fold) and long ones (``ufunc.reduce``)."""
    found, in_blocks, computed = small_chains
    for shape in [(6, 7, 20), (9, 4000)]:
        found.clear()
        rows = shape[:-1]
        text = ROW_REDUCE.format(T=_t(shape, et), R=_t(rows, et), E=et, K=body, A=len(shape) - 1,
                                 I=init if et == "i32" else f"{init}.0", D=", ".join(map(str, range(len(rows)))))
        rng = np.random.default_rng(len(shape))
        x, y = _specials(dt, shape, rng), _specials(dt, shape, rng)
        if dt != np.int32:
            x.reshape(-1, shape[-1])[::5] = rng.choice([0.0, -0.0], shape[-1]).astype(dt)
        (mod,) = frontend.load_text(text)
        expect = _stepwise(mod, (x, y))
        one = _runs(text, (x, y), 1)
        for run in _runs(text, (x, y), 2):
            assert _same(run, one[0]) and [_canonical(o) for o in run] == expect
        assert [(len(c), f) for c, f in found] == [(4, rows)]
        assert computed
        computed.clear()


def test_a_reduction_of_an_operand_not_in_c_order_keeps_the_ops_one_by_one(small_chains):
    """A chain reducing rows of an operand runs in blocks only where the operand is C-ordered
    (a block of its rows is then C-ordered too, each row reduced as in the whole call)."""
    _, in_blocks, computed = small_chains
    shape = (48, 300)
    t = _t(shape, "f32")
    text = f"""
func.func @main(%x: {t}) -> {t} {{
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %r = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [1] : ({t}, tensor<f32>) -> tensor<48xf32>
  %b = stablehlo.broadcast_in_dim %r, dims = [0] : (tensor<48xf32>) -> {t}
  %0 = stablehlo.subtract %x, %b : {t}
  %1 = stablehlo.exponential %0 : {t}
  return %1 : {t}
}}
"""
    x = _specials(np.float32, shape, np.random.default_rng(5))
    for arg, blocks in ((np.asfortranarray(x), False), (x, True)):
        in_blocks.clear()
        computed.clear()
        (mod,) = frontend.load_text(text)
        expect = _stepwise(mod, (arg,))
        for run in _runs(text, (arg,), 2):
            assert [_canonical(o) for o in run] == expect
        assert any(in_blocks) is blocks and bool(computed) is blocks


def test_no_chain_where_a_group_of_products_before_its_end_reads_its_values(small_chains, monkeypatch):
    """Two products run at once (a group) where the first one's result is read: inside a chain
    that computes what the second one reads. The chain is not made (it would run after the
    group), and the block runs to its end without handing its run over."""
    t, w = _t((64, 256), "f32"), "tensor<256x256xf32>"
    text = f"""
func.func @main(%x: {t}, %y: {t}, %w1: {w}, %w2: {w}) -> ({t}, {t}) {{
  %e = stablehlo.exponential %x : {t}
  %q = stablehlo.dot_general %y, %w1, contracting_dims = [1] x [0] : ({t}, {w}) -> {t}
  %a = stablehlo.add %e, %q : {t}
  %m = stablehlo.multiply %a, %a : {t}
  %p = stablehlo.dot_general %e, %w2, contracting_dims = [1] x [0] : ({t}, {w}) -> {t}
  return %m, %p : {t}, {t}
}}
"""
    rng = np.random.default_rng(6)
    args = tuple(rng.standard_normal(s).astype(np.float32) for s in [(64, 256), (64, 256), (256, 256), (256, 256)])
    (mod,) = frontend.load_text(text)
    expect = _stepwise(mod, args)
    made = []
    compile_variant = codegen._Plan._compile_variant
    monkeypatch.setattr(codegen._Plan, "_compile_variant",
                        lambda self, full, *a: made.append(full) or compile_variant(self, full, *a))
    for run in _runs(text, args, 2):
        assert [_canonical(o) for o in run] == expect
    assert made and not any(made), "the step-by-step variant was never needed"


def test_a_blocks_first_engine_plans_no_chain_and_the_next_one_does(small_chains):
    """A program's first run (its cold run) neither plans chains nor compiles their code: a
    block run once would not repay them."""
    found, in_blocks, computed = small_chains
    text, args, expect = _exp_times_x()
    (mod,) = frontend.load_text(text)
    _parallel.set_threads(2)
    for _ in range(6):
        eng = Engine(mod)
        assert [_canonical(o) for o in eng.call("main", args)] == expect
        if eng._runners:
            break
    assert eng._runners and not found and not in_blocks
    for _ in range(3):
        assert [_canonical(o) for o in Engine(mod).call("main", args)] == expect
    assert [len(c) for c, _f in found] == [2] and in_blocks == [False, True, True] and computed


def test_ops_repeated_in_a_chain_are_computed_once_there_with_the_op_by_op_bits(small_chains, monkeypatch):
    """An op the chain already computed (the same op and attributes on the same operands, as
    exporters repeat them: a layer norm's row means broadcast twice and ``x - mean`` computed
    twice, an erf-GELU's ``abs(x)``) is computed once in the chain's function; its readers read
    the first result, which no op writes into while they still read it (the ``multiply`` of
    ``d1`` by itself is not in place: ``d2``, the same array, is read after it), and a repeat
    that is an output of the chain (``a2``) returns the first result, which the last ``add``,
    its last reader in the chain, does not write into either. The outputs are the step-by-step
    ones, bit for bit."""
    found, in_blocks, computed = small_chains
    made = []
    init = chains.Chain.__init__

    def recording(self, body, *a, **k):
        if body.__class__ is tuple:
            made.append(body)
        init(self, body, *a, **k)

    monkeypatch.setattr(chains.Chain, "__init__", recording)
    shape = (16, 64)
    t, r = _t(shape, "f32"), "tensor<16xf32>"
    text = f"""
func.func @main(%x: {t}) -> ({t}, {t}) {{
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %one = stablehlo.constant dense<1.0> : {t}
  %s = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [1] : ({t}, tensor<f32>) -> {r}
  %b1 = stablehlo.broadcast_in_dim %s, dims = [0] : ({r}) -> {t}
  %d1 = stablehlo.subtract %x, %b1 : {t}
  %q = stablehlo.multiply %d1, %d1 : {t}
  %b2 = stablehlo.broadcast_in_dim %s, dims = [0] : ({r}) -> {t}
  %d2 = stablehlo.subtract %x, %b2 : {t}
  %p = stablehlo.multiply %d2, %q : {t}
  %a1 = stablehlo.abs %x : {t}
  %a2 = stablehlo.abs %x : {t}
  %c = stablehlo.compare LT, %a2, %one : ({t}, {t}) -> {_t(shape, "i1")}
  %o = stablehlo.select %c, %p, %x : {_t(shape, "i1")}, {t}
  %f = stablehlo.add %o, %a1 : {t}
  return %f, %a2 : {t}, {t}
}}"""
    rng = np.random.default_rng(4)
    args = (_specials(np.float32, shape, rng),)
    (mod,) = frontend.load_text(text)
    expect = _stepwise(mod, args)
    runs = _runs(text, args, 2)
    assert len(found) == 1 and all(in_blocks[1:]) and computed
    for run in runs:
        assert [_canonical(o) for o in run] == expect
    (src, ns), = made
    calls = [line.split("= ", 1)[1].split("(")[0] for line in src.splitlines() if "= f" in line and "(" in line]
    names = [getattr(ns[c], "__name__", "") for c in calls]
    assert names.count("subtract") == 1 and names.count("absolute") == 1  # each computed once
    assert len(calls) == 9  # reduce, broadcast, subtract, 2 multiplies, abs, compare, select, add
