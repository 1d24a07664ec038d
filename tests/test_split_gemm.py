"""A 2-D product cut into pieces on several threads (``kernels/_split_gemm.py``) gives the whole
BLAS call's bits, on the zoo's product shapes and layouts, with IEEE special values in the
operands; a cut is kept only after a trial found every bit equal, trials run once per kind of
product, and the whole call runs where no cut is kept. Compared as bit patterns.

The oracle is ``np.dot`` of the same operands on one BLAS thread: what the kernel computed
before products were cut.
"""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from stablehlo_conform import load
from stablehlo_conform.engine import Engine
from stablehlo_conform.harness.programs.recipe import build_inputs, read_recipe
from stablehlo_conform.kernels import _parallel, _split_gemm, linalg
from stablehlo_conform.kernels._blas_threads import one_blas_thread
from test_engine import _outputs

ZOO = Path(__file__).resolve().parents[1] / "testsuite" / "models"

# (m, k, n, layout of the right operand): 2-D products of the zoo's models that are cut on
# an AVX-512 machine (vit_b16, whisper_tiny, bert_base, llama_*, mmdit_small, t5_small,
# gpt2_small) and some that are not
SHAPES = [
    (197, 768, 768, "C"), (197, 768, 3072, "C"), (197, 3072, 768, "C"),
    (750, 384, 384, "F"), (750, 384, 1536, "F"), (750, 1536, 384, "F"),
    (128, 768, 3072, "F"), (128, 3072, 768, "F"),
    (64, 512, 1408, "C"), (64, 1408, 512, "C"), (64, 512, 512, "C"),
    (256, 384, 384, "C"), (256, 1536, 384, "C"), (64, 2048, 512, "F"),
    (64, 768, 2304, "C"), (256, 256, 256, "C"),
]


@pytest.fixture
def two_threads(monkeypatch):
    """Two threads and a fresh record of kept cuts, for the test."""
    before = _parallel.threads()
    _parallel.set_threads(2)
    monkeypatch.setattr(_split_gemm, "_kinds", {})
    yield
    _parallel.set_threads(before)


def _bits(x: np.ndarray) -> bytes:
    x = np.ascontiguousarray(x)
    return x.dtype.str.encode() + repr(x.shape).encode() + x.view(np.uint8).tobytes()


def _operands(m, k, n, layout, rng, dtype=np.float32, specials=True):
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n) if layout == "C" else (n, k)).astype(dtype)
    if specials:
        info = ml_dtypes.finfo(dtype)
        vals = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, info.smallest_subnormal, info.tiny], dtype)
        for x in (a, b):
            flat = x.reshape(-1)
            flat[rng.integers(0, flat.size, 8)] = rng.choice(vals, 8)
    return a, (b if layout == "C" else b.T)


@pytest.mark.parametrize("m,k,n,layout", SHAPES)
def test_a_kept_cut_gives_the_whole_calls_bits(two_threads, m, k, n, layout):
    rng = np.random.default_rng(m * 7 + n)
    with one_blas_thread(), np.errstate(all="ignore"):
        for trial in range(3):  # the first call tries the cuts; the later ones use the kept one
            a, b = _operands(m, k, n, layout, rng, specials=trial > 0)
            whole = np.dot(a, b)
            cut = _split_gemm.split_product(a, b)
            assert cut is None or _bits(cut) == _bits(whole)
            # the product through the kernel's own function, whichever path it takes
            assert _bits(linalg._blas(a, b)) == _bits(whole)
    assert len(_split_gemm._kinds) == (m * k * n >= _split_gemm.MIN_MACS)  # tried once, where large enough


def test_some_zoo_products_are_cut(two_threads, monkeypatch):
    """Some cut of the zoo's products gives the whole call's bits (else the module would be dead
    weight); which ones depends on the library and the CPU, so only that some do. Timing is
    left out here (every cut giving the bits is kept)."""
    monkeypatch.setattr(_split_gemm, "FASTER", float("inf"))
    rng = np.random.default_rng(0)
    cut = 0
    with one_blas_thread():
        for m, k, n, layout in SHAPES[:6]:
            a, b = _operands(m, k, n, layout, rng, specials=False)
            cut += _split_gemm.split_product(a, b) is not None
    if not cut:
        pytest.skip("no cut of the zoo's products gives the whole call's bits on this machine's BLAS")
    assert cut >= 1


def _cuts_off_by_one_ulp(monkeypatch) -> None:
    """Every cut's pieces give the whole call's bits but in their last element, one ULP up."""
    real = _split_gemm._run

    def off_by_one_ulp(a, b, cut):
        out = real(a, b, cut)
        out.reshape(-1)[-1] = np.nextafter(out.reshape(-1)[-1], np.inf)
        return out

    monkeypatch.setattr(_split_gemm, "_run", off_by_one_ulp)


def test_a_cut_differing_in_one_bit_is_not_kept(two_threads, monkeypatch):
    _cuts_off_by_one_ulp(monkeypatch)
    a, b = _operands(197, 768, 768, "C", np.random.default_rng(1), specials=False)
    with one_blas_thread():
        assert _split_gemm.split_product(a, b) is None
    assert list(_split_gemm._kinds.values()) == [None]


def test_trials_run_once_per_kind_of_product(two_threads, monkeypatch):
    tried = []
    real = _split_gemm._kept
    monkeypatch.setattr(_split_gemm, "_kept", lambda *args: tried.append(args[2]) or real(*args))
    rng = np.random.default_rng(2)
    with one_blas_thread():
        for _ in range(3):
            _split_gemm.split_product(*_operands(197, 768, 768, "C", rng, specials=False))
            _split_gemm.split_product(*_operands(197, 768, 768, "F", rng, specials=False))
    assert len(tried) == 2
    assert {layouts[1] for layouts in tried} == {"C", "F"}  # the right operand's layout


def test_a_trial_without_the_memory_for_its_operands_leaves_the_whole_call(two_threads, monkeypatch):
    def no_memory(shape, dtype, layout):
        raise MemoryError()

    monkeypatch.setattr(_split_gemm, "_like", no_memory)
    a, b = _operands(197, 768, 768, "C", np.random.default_rng(7), specials=False)
    with one_blas_thread():
        assert _split_gemm.split_product(a, b) is None
        assert _bits(linalg._blas(a, b)) == _bits(np.dot(a, b))
    assert _split_gemm._kinds == {}  # tried again where memory allows


def test_a_process_tries_at_most_most_kinds_kinds(two_threads, monkeypatch):
    monkeypatch.setattr(_split_gemm, "MOST_KINDS", 1)
    rng = np.random.default_rng(8)
    with one_blas_thread():
        _split_gemm.split_product(*_operands(197, 768, 768, "C", rng, specials=False))
        a, b = _operands(197, 768, 3072, "C", rng, specials=False)
        assert _split_gemm.split_product(a, b) is None
        assert _bits(linalg._blas(a, b)) == _bits(np.dot(a, b))
    assert len(_split_gemm._kinds) == 1


def test_exact_products_are_cut_without_comparing_bits(two_threads, monkeypatch):
    """An exact product's trial only times the most even cut (no trial operands are made)."""
    monkeypatch.setattr(_split_gemm, "_like", lambda *args: pytest.fail("an exact product's bits were tried"))
    monkeypatch.setattr(_split_gemm, "FASTER", float("inf"))
    rng = np.random.default_rng(3)
    a = rng.integers(-127, 128, (64, 768)).astype(np.float32)
    b = rng.integers(-127, 128, (768, 2304)).astype(np.float32)
    with one_blas_thread():
        for _ in range(2):
            cut = _split_gemm.split_product(a, b, exact=True)
            assert cut is not None
            assert _bits(cut) == _bits(np.dot(a, b))
    assert len(_split_gemm._kinds) == 1


@pytest.mark.parametrize("case", ["one thread", "small", "short contraction", "strided", "f16", "inside a piece"])
def test_the_whole_call_runs_where_no_cut_may_be_used(two_threads, case):
    rng = np.random.default_rng(4)
    a, b = _operands(197, 768, 768, "C", rng, specials=False)
    if case == "one thread":
        _parallel.set_threads(1)
    elif case == "small":
        a, b = a[:16, :64], b[:64, :64].copy()
    elif case == "short contraction":
        a, b = np.ascontiguousarray(a[:, :32]), np.ascontiguousarray(np.tile(b[:32], (1, 40)))
    elif case == "strided":
        a = a[:, ::2]
        b = b[::2]
    elif case == "f16":
        a, b = a.astype(np.float16), b.astype(np.float16)
    with one_blas_thread():
        if case == "inside a piece":
            res = _parallel.run([lambda: _split_gemm.split_product(a, b), lambda: None])[0]
        else:
            res = _split_gemm.split_product(a, b)
    assert res is None
    assert _split_gemm._kinds == {}


@pytest.mark.parametrize("m,k,n,layout", [(197, 768, 768, "C"), (128, 768, 3072, "F"), (64, 512, 1408, "C")])
def test_the_address_of_an_operand_does_not_change_a_product(m, k, n, layout):
    """A product's kind leaves out the operands' addresses: OpenBLAS copies both operands into
    its own packed buffers before its kernels read them. Checked here on every offset of 4 to 60
    bytes from a 64-byte boundary of either operand."""
    rng = np.random.default_rng(5)
    a, b = _operands(m, k, n, layout, rng, specials=False)

    def at(x, offset):
        buf = np.empty(x.size + 16, x.dtype)
        start = ((offset - buf.ctypes.data) % 64) // x.itemsize
        flat = buf[start:start + x.size]
        if x.flags.c_contiguous:
            y = flat.reshape(x.shape)
        else:
            y = flat.reshape(x.shape[::-1]).T
        y[...] = x
        return y

    with one_blas_thread():
        whole = _bits(np.dot(a, b))
        for off in range(4, 64, 12):
            assert _bits(np.dot(at(a, off), b)) == whole
            assert _bits(np.dot(a, at(b, 64 - off))) == whole


@pytest.mark.parametrize("m,k,n", [(196, 2304, 256), (49, 4608, 512), (3136, 64, 256)])
def test_a_product_written_into_an_array_of_the_caller_has_the_same_bits(m, k, n):
    """A convolution's block product writes into its rows of the result (``np.dot(..., out=)``);
    the trials compare cuts with the call making its own array: the two are the same call."""
    a, b = _operands(m, k, n, "F", np.random.default_rng(6), specials=False)
    out = np.empty((m + 3, n), np.float32)[3:]
    with one_blas_thread():
        np.dot(a, b, out=out)
        assert _bits(out) == _bits(np.dot(a, b))


@pytest.mark.parametrize("name", ["whisper_tiny", "mmdit_small"])
def test_a_zoo_model_gives_its_one_thread_bits_with_cut_products(two_threads, name):
    recipe = read_recipe(ZOO / f"{name}.recipe.json")
    (mod,) = load(str(recipe.program_path))
    args = tuple(build_inputs(recipe))
    _parallel.set_threads(1)
    expect = _outputs(Engine(mod), "main", args)
    _parallel.set_threads(2)
    for _ in range(3):
        assert _outputs(Engine(mod), "main", args) == expect
    assert _split_gemm._kinds, "no product of the model was tried"


NHWC = dict(input_batch_dimension=0, input_feature_dimension=3, input_spatial_dimensions=(1, 2),
            kernel_input_feature_dimension=2, kernel_output_feature_dimension=3, kernel_spatial_dimensions=(0, 1),
            output_batch_dimension=0, output_feature_dimension=3, output_spatial_dimensions=(1, 2))


@pytest.mark.parametrize("hw,cin,cout,k", [(7, 512, 512, 3), (14, 256, 256, 3), (14, 512, 1024, 1), (28, 256, 512, 1)])
def test_a_convolution_of_one_block_gives_its_one_thread_bits(two_threads, hw, cin, cout, k):
    """resnet50's convolutions whose im2col product is one block (``linalg._one_block``): cut
    where a cut gives the call's bits, else one call; either way the one-thread bits."""
    from types import SimpleNamespace
    rng = np.random.default_rng(hw * cin + k)
    x, _ = _operands(hw * hw, cin, 1, "C", rng)
    x = x.reshape(1, hw, hw, cin)
    w = rng.standard_normal((k, k, cin, cout)).astype(np.float32)
    pad = ((k // 2, k // 2), (k // 2, k // 2))

    def conv():
        with one_blas_thread(), np.errstate(all="ignore"):
            return linalg.convolution_arrays(x, w, strides=(1, 1), pad=pad, lhs_dil=None, rhs_dil=None, reversal=None,
                                             dn=SimpleNamespace(**NHWC), fgc=1, bgc=1, out_dtype=x.dtype)
    _parallel.set_threads(1)
    expect = _bits(conv())
    _parallel.set_threads(2)
    for _ in range(2):
        assert _bits(conv()) == expect
    assert _split_gemm._kinds, "the convolution's product was not tried"


def _conv_nhwc(x, w, stride=1):
    from types import SimpleNamespace
    k = w.shape[0]
    pad = ((k // 2, k // 2), (k // 2, k // 2))
    with one_blas_thread(), np.errstate(all="ignore"):
        return linalg.convolution_arrays(x, w, strides=(stride, stride), pad=pad, lhs_dil=None, rhs_dil=None,
                                         reversal=None, dn=SimpleNamespace(**NHWC), fgc=1, bgc=1, out_dtype=x.dtype)


@pytest.fixture
def fresh_orders(monkeypatch):
    """A fresh record of the layouts tried (``_split_gemm.same_in_c_order``)."""
    monkeypatch.setattr(_split_gemm, "_orders", {})
    return _split_gemm._orders


# (batch, spatial size, input features, output features, kernel size, stride): resnet50's
# convolutions of one block and of several, a 1x1 one on a 1x1 map (one-row products), a
# strided one
CONVS = [(1, 7, 512, 512, 3, 1), (1, 14, 256, 1024, 1, 1), (1, 56, 64, 64, 3, 1), (2, 28, 128, 128, 3, 1),
         (1, 1, 1024, 1000, 1, 1), (1, 56, 256, 512, 1, 2)]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("n,hw,cin,cout,k,stride", CONVS)
def test_a_kernel_read_in_place_gives_the_transposed_copys_bits(fresh_orders, monkeypatch, threads,
                                                                n, hw, cin, cout, k, stride):
    """The im2col products read the kernel's C-ordered view only where the trial found every
    bit of the product with its transposed copy: the convolution's bits are the copy's, on
    one thread and on two (blocks, cuts), with IEEE specials in the input."""
    rng = np.random.default_rng(hw * cin + cout + k)
    xs = [_operands(n * hw * hw, cin, 1, "C", rng, specials=specials)[0].reshape(n, hw, hw, cin)
          for specials in (False, True)]  # (a NaN in a one-row product makes every element NaN)
    w = rng.standard_normal((k, k, cin, cout)).astype(np.float32)
    before = _parallel.threads()
    _parallel.set_threads(threads)
    try:
        got = [_bits(_conv_nhwc(x, w, stride)) for x in xs]  # the first call tries, the second uses
        with monkeypatch.context() as mp:
            mp.setattr(linalg, "same_in_c_order", lambda rows, b: False)
            copied = [_bits(_conv_nhwc(x, w, stride)) for x in xs]
    finally:
        _parallel.set_threads(before)
    assert got == copied
    assert fresh_orders, "the kernel's layout was not tried"
    assert all(shape == (k * k * cin, cout) for _rows, shape, _dt in fresh_orders)


def test_a_layout_differing_in_one_bit_keeps_the_copy(fresh_orders, monkeypatch):
    """A trial whose two products differ in one bit records the kind as one to copy, and the
    convolution then multiplies by the transposed copy (``c_order_copy``)."""
    real = np.asfortranarray

    def off_by_one_ulp(b):
        f = real(b).copy(order="F")
        f[0, 0] = np.nextafter(f[0, 0], np.inf)
        return f

    monkeypatch.setattr(_split_gemm.np, "asfortranarray", off_by_one_ulp)
    copies = []
    monkeypatch.setattr(linalg, "c_order_copy", lambda a, _c=linalg.c_order_copy: copies.append(a.shape) or _c(a))
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 7, 7, 64)).astype(np.float32)
    w = rng.standard_normal((3, 3, 64, 32)).astype(np.float32)
    _conv_nhwc(x, w)
    assert list(fresh_orders.values()) == [False] and copies == [(32, 576)]


def test_layout_trials_run_once_per_kind_and_stop_at_the_bounds(fresh_orders, monkeypatch):
    dots = []
    real = np.dot
    monkeypatch.setattr(_split_gemm.np, "dot", lambda a, b, *r: dots.append(a.shape) or real(a, b, *r))
    b = np.zeros((64, 48), np.float32)
    with one_blas_thread():
        first = _split_gemm.same_in_c_order({32, 16}, b)
        assert _split_gemm.same_in_c_order({16, 32}, b) == first
        assert sorted(dots) == [(16, 64), (16, 64), (32, 64), (32, 64)]  # two products per kind, once
        monkeypatch.setattr(_split_gemm, "MOST_TRIED", 64 * 48 + 8 * 64 - 1)
        assert not _split_gemm.same_in_c_order({8}, b)  # too large to try: the copy
        monkeypatch.setattr(_split_gemm, "MOST_KINDS", len(fresh_orders))
        assert not _split_gemm.same_in_c_order({4}, b)  # no more kinds: the copy
    assert len(fresh_orders) == 2


# products of a few rows and a large right operand: a recurrent cell's steps (lstm_seq), a
# small batch through a layer, f32 and f64
FEW_ROW_SHAPES = [(4, 320, 1024, "C"), (4, 512, 1024, "C"), (16, 512, 1024, "F"), (1, 768, 3072, "C"),
                  (32, 256, 2048, "C")]


@pytest.fixture
def fresh_widths(monkeypatch):
    monkeypatch.setattr(_split_gemm, "_widths", {})


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,k,n,layout", FEW_ROW_SHAPES)
def test_kept_column_blocks_give_the_whole_calls_bits(fresh_widths, monkeypatch, m, k, n, layout, dtype):
    """Every width giving the whole call's bits is kept here (timing left out), so the blocks run
    wherever they can; through the kernel's own function too, whichever path it takes."""
    monkeypatch.setattr(_split_gemm, "FASTER", float("inf"))
    rng = np.random.default_rng(m * 11 + k)
    with one_blas_thread(), np.errstate(all="ignore"):
        for trial in range(3):
            a, b = _operands(m, k, n, layout, rng, dtype=dtype, specials=trial > 0)
            whole = np.dot(a, b)
            blocks = _split_gemm.blocked_product(a, b)
            assert blocks is None or _bits(blocks) == _bits(whole)
            assert _bits(linalg._dot(a, b)) == _bits(whole)
            out = np.full((m, n), 7, dtype)
            assert linalg._dot(a, b, out=out) is out and _bits(out) == _bits(whole)
    assert len(_split_gemm._widths) == 1  # tried once


def test_column_blocks_differing_in_one_bit_or_slower_are_not_kept(fresh_widths, monkeypatch):
    real = _split_gemm._columns

    def off_by_one_ulp(a, b, width):
        out = real(a, b, width)
        out[0, 0] = np.nextafter(out[0, 0], np.inf)
        return out

    a, b = _operands(4, 512, 1024, "C", np.random.default_rng(3), specials=False)
    monkeypatch.setattr(_split_gemm, "FASTER", float("inf"))
    monkeypatch.setattr(_split_gemm, "_columns", off_by_one_ulp)
    with one_blas_thread():
        assert _split_gemm.blocked_product(a, b) is None
    assert list(_split_gemm._widths.values()) == [None]
    monkeypatch.setattr(_split_gemm, "_widths", {})
    monkeypatch.setattr(_split_gemm, "_columns", real)
    monkeypatch.setattr(_split_gemm, "FASTER", 0.0)  # no block can take no time
    with one_blas_thread():
        assert _split_gemm.blocked_product(a, b) is None
    assert list(_split_gemm._widths.values()) == [None]


def test_the_fastest_width_giving_the_bits_is_kept(fresh_widths, monkeypatch):
    """Trial times made up: 64 columns fastest but off by a bit, 128 next: 128 is kept."""
    times = {None: 1.0, 64: 0.1, 128: 0.3, 256: 0.5}
    real = _split_gemm._columns
    width_of = {}

    def columns(a, b, width):
        out = real(a, b, width)
        width_of[id(out)] = width
        if width == 64:
            out[0, 0] = np.nextafter(out[0, 0], np.inf)
        return out

    def timed(call):
        out = call()
        return out, times[width_of.get(id(out))]

    monkeypatch.setattr(_split_gemm, "_columns", columns)
    monkeypatch.setattr(_split_gemm, "_timed", timed)
    a, b = _operands(4, 512, 1024, "C", np.random.default_rng(4), specials=False)
    with one_blas_thread():
        _split_gemm.blocked_product(a, b)
    assert list(_split_gemm._widths.values()) == [128]


@pytest.mark.parametrize("m,k,n", [(33, 512, 1024), (0, 512, 1024), (4, 512, 64), (4, 32, 4096), (4, 64, 256)])
def test_products_outside_the_blocks_bounds_are_not_tried(fresh_widths, m, k, n):
    """More rows than FEW_ROWS or none, too few columns, too short a contraction, too small a
    right operand: the whole call, untried."""
    a, b = _operands(m, k, n, "C", np.random.default_rng(5), specials=False)
    with one_blas_thread():
        assert _split_gemm.blocked_product(a, b) is None
    assert _split_gemm._widths == {}


NARROW = [ml_dtypes.bfloat16, np.float16, ml_dtypes.float8_e4m3fn]


@pytest.mark.parametrize("dtype", NARROW, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("m,k,n,layout", [(128, 768, 768, "F"), (128, 768, 3072, "F"), (128, 3072, 768, "F"),
                                          (197, 768, 768, "C"), (750, 384, 1536, "F")])
def test_a_narrow_product_widened_and_rounded_in_its_pieces_gives_the_whole_products_bits(
        two_threads, monkeypatch, dtype, m, k, n, layout):
    """Every cut giving the widened product's bits is kept here (timing left out), so the pieces
    run wherever a cut does; the oracle widens both operands whole, makes the whole f32 call
    and rounds it (the kernel's computation before pieces); specials in the operands, into
    the type's own result and into f32."""
    monkeypatch.setattr(_split_gemm, "FASTER", float("inf"))
    rng = np.random.default_rng(m + n + k)
    cut = 0
    with one_blas_thread(), np.errstate(all="ignore"):
        for trial in range(3):
            a, b = _operands(m, k, n, layout, rng, specials=trial > 0)
            a, b = a.astype(dtype), b.astype(dtype)
            wide = np.dot(a.astype(np.float32), b.astype(np.float32))
            for out in (np.dtype(dtype), np.dtype(np.float32)):
                pieces = _split_gemm.split_narrow_product(a, b, np.dtype(np.float32), out)
                assert pieces is None or _bits(pieces) == _bits(wide.astype(out))
                cut += pieces is not None
                kernel = linalg.dot_general_arrays(a[None], b, (), (), (2,), (0,), out)
                assert _bits(kernel) == _bits(wide.astype(out)[None])
    # the widened product's kind, tried once and shared with split_product
    assert list(_split_gemm._kinds) == [((m, k), (k, n), np.dtype(np.float32), "C", layout, 2, False)]
    if not cut:
        pytest.skip("no cut of this product keeps its bits on this machine's BLAS")


def test_narrow_products_follow_the_widened_products_record(two_threads, monkeypatch):
    """Where no cut of the widened product keeps its bits, the narrow one is not cut either."""
    _cuts_off_by_one_ulp(monkeypatch)
    monkeypatch.setattr(_split_gemm, "FASTER", float("inf"))
    a, b = (x.astype(ml_dtypes.bfloat16) for x in _operands(128, 768, 768, "F", np.random.default_rng(6), specials=False))
    with one_blas_thread():
        assert _split_gemm.split_narrow_product(a, b, np.dtype(np.float32), a.dtype) is None
        assert _split_gemm.split_product(a.astype(np.float32), b.astype(np.float32)) is None
    assert list(_split_gemm._kinds.values()) == [None]


def _timed_cuts(monkeypatch, cut_times: list) -> list:
    """Trials and timings whose whole calls take 1 and whose cuts take the next of
    ``cut_times`` (or 1 once they run out); returns the list of the cuts' timings."""
    run, seen = _split_gemm._run, []

    def cut(*args):
        seen.append(True)
        return run(*args)

    def timed(call):
        seen.clear()
        out = call()
        if not seen:
            return out, 1.0
        took = cut_times.pop(0) if cut_times else 1.0
        timings.append(took)
        return out, took

    timings: list = []
    monkeypatch.setattr(_split_gemm, "_run", cut)
    monkeypatch.setattr(_split_gemm, "_timed", timed)
    return timings


def test_a_cut_slow_at_its_trial_is_timed_again_later_and_kept_once_fast(two_threads, monkeypatch):
    """A trial's time is one moment of the machine's: a cut that gave the bits but not the time
    is timed again after RETRY_AFTER calls of its kind, then twice as many, at most RETRIES
    times; kept from the first time it is fast, the whole call until then."""
    monkeypatch.setattr(_split_gemm, "RETRY_AFTER", 3)
    a, b = _operands(128, 768, 768, "F", np.random.default_rng(8), specials=False)
    with one_blas_thread():
        timings = _timed_cuts(monkeypatch, [])
        assert _split_gemm.split_product(a, b) is None  # the trial: every cut slow
        (record,) = _split_gemm._kinds.values()
        if record is None:
            pytest.skip("no cut of this product keeps its bits on this machine's BLAS")
        timings.clear()
        slow_then_fast = [1.0, 0.5]
        timings = _timed_cuts(monkeypatch, slow_then_fast)
        cut_from = [i for i in range(11) if _split_gemm.split_product(a, b) is not None]
        assert _bits(_split_gemm.split_product(a, b)) == _bits(np.dot(a, b))
    # timed again at the kind's 3rd call (the trial's the first: the 2nd after it, slow), then
    # at its 9th (the 8th after it: fast), the cut from then on
    assert cut_from == list(range(7, 11))
    assert timings == [1.0, 0.5] and _split_gemm._kinds == {next(iter(_split_gemm._kinds)): record.cut}


def test_a_cut_that_stays_slow_is_timed_again_at_most_retries_times(two_threads, monkeypatch):
    monkeypatch.setattr(_split_gemm, "RETRY_AFTER", 2)
    a, b = _operands(128, 768, 768, "F", np.random.default_rng(9), specials=False)
    with one_blas_thread():
        timings = _timed_cuts(monkeypatch, [])
        assert _split_gemm.split_product(a, b) is None
        (record,) = _split_gemm._kinds.values()
        if record is None:
            pytest.skip("no cut of this product keeps its bits on this machine's BLAS")
        timings.clear()
        assert all(_split_gemm.split_product(a, b) is None for _ in range(200))
    assert isinstance(record, _split_gemm._Slow) and record.tries == 0
    assert len(timings) == _split_gemm.RETRIES  # timed again after 2, 4, 8 and 16 more calls, then never
