"""The fast path of ``scatter`` of whole rows (``indexing._fast_scatter``: an embedding's
gradient, ``table.at[ids].add(rows)``) against the kernel, bit for bit: every body it takes, float
and integer types of every width, index types, repeated rows (the order of their updates decides
the float bits), indices outside the operand, several scatter dimensions, operands of rank 2 and
3; the shapes it leaves to the kernel; and a JAX export of the pattern.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from stablehlo_conform import frontend
from stablehlo_conform.engine import Engine
from stablehlo_conform.kernels import indexing

from test_engine import _assert_generated_matches_stepwise
from test_indexing import BODIES as KERNEL_BODIES

BODIES = {**KERNEL_BODIES, "keep": "stablehlo.return %a : {t}"}
NP = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "bf16": ml_dtypes.bfloat16,
      "i32": np.int32, "i8": np.int8, "ui8": np.uint8, "i64": np.int64, "ui64": np.uint64}


def _t(shape, el):
    return f"tensor<{'x'.join(map(str, shape))}x{el}>" if shape else f"tensor<{el}>"


def _program(body, el, operand, indices, updates, idx_el="i32", ivd=None, window=None, inserted=(0,),
             to_operand=(0,)):
    """A ``scatter`` of ``updates`` into ``operand`` at ``indices`` (types of those shapes)."""
    nb = len(updates) - (len(operand) - len(inserted))
    window = tuple(range(nb, len(updates))) if window is None else window
    ivd = len(indices) - 1 if ivd is None else ivd
    t = _t((), el)
    return f"""
func.func @main(%x: {_t(operand, el)}, %i: {_t(indices, idx_el)}, %u: {_t(updates, el)}) -> {_t(operand, el)} {{
  %0 = "stablehlo.scatter"(%x, %i, %u) ({{
    ^bb0(%a: {t}, %b: {t}):
      {BODIES[body].format(t=t)}
  }}) {{
    scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = {list(window)},
        inserted_window_dims = {list(inserted)}, scatter_dims_to_operand_dims = {list(to_operand)},
        index_vector_dim = {ivd}>
  }} : ({_t(operand, el)}, {_t(indices, idx_el)}, {_t(updates, el)}) -> {_t(operand, el)}
  func.return %0 : {_t(operand, el)}
}}"""


def _scatter_op(text):
    (mod,) = frontend.load_text(text)
    return mod, next(o for o in mod.funcs["main"].body.blocks[0].ops if o.name == "stablehlo.scatter")


def _values(el, shape, rng):
    dt = np.dtype(NP[el])
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, int(info.max) + 1, shape, dtype=np.int64).astype(dt)
    x = (rng.standard_normal(shape) * 2.0 ** rng.integers(-6, 12, shape)).astype(dt)  # f16 holds them
    flat = x.reshape(-1)
    flat[::17] = np.nan
    flat[3::19] = -0.0
    flat[5::23] = np.inf
    return x


def _rows(n, batch, idx_el, rng):
    """Row indices with repeats (a row given up to five updates) and some outside ``[0, n)``."""
    ids = rng.integers(0, max(1, n // 3), batch)  # few distinct rows: repeats
    flat = ids.reshape(-1)
    flat[::7] = n  # one past the end
    if np.dtype(NP[idx_el]).kind == "i":
        flat[1::11] = -1
    return ids.astype(NP[idx_el])


CASES = [  # body, element type, operand shape, scatter batch shape, index type
    ("add", "f32", (30, 16), (40,), "i32"),
    ("replace", "f16", (12, 5), (3, 9), "i64"),
    ("add", "bf16", (10, 4, 3), (25,), "i32"),
    ("add", "f64", (9, 8), (30,), "ui8"),
    ("add", "i32", (20, 7), (33,), "ui64"),
    ("add", "i8", (6, 10), (4, 5), "i32"),
    ("multiply", "f32", (8, 12), (20,), "i32"),
    ("multiply", "ui8", (8, 12), (20,), "i32"),
    ("maximum", "i64", (9, 4), (18,), "i32"),
    ("minimum", "i32", (9, 4, 2), (18,), "i32"),
    ("replace", "f32", (15, 6), (2, 20), "i32"),
    ("replace", "bf16", (15, 6), (30,), "i64"),
    ("keep", "f32", (5, 3), (8,), "i32"),
    ("add", "f32", (30,), (50,), "i32"),  # rank 1: each window one element (a segment sum)
    ("add", "i32", (7, 2), (2, 3, 4), "i64"),
]


@pytest.mark.parametrize("body, el, operand, batch, idx_el", CASES)
def test_fast_scatter_of_rows_gives_the_kernels_bits(body, el, operand, batch, idx_el):
    rng = np.random.default_rng(len(batch) * 100 + operand[0])
    indices, updates = batch + (1,), batch + operand[1:]
    mod, op = _scatter_op(_program(body, el, operand, indices, updates, idx_el))
    assert indexing._fast_scatter(op) is not None
    x = _values(el, operand, rng)
    ids = _rows(operand[0], batch, idx_el, rng).reshape(indices)
    u = _values(el, updates, rng)
    before = x.copy()
    assert _assert_generated_matches_stepwise(mod, "main", (x, ids, u))
    assert x.tobytes() == before.tobytes()  # the operand is never written


@pytest.mark.parametrize("el, ut, first, second", [
    ("f32", np.uint32, 0x7FC00001, 0xFFC00002), ("f64", np.uint64, 0x7FF8000000000001, 0xFFF8000000000002),
    ("bf16", np.uint16, 0x7FC1, 0xFFC2)])
@pytest.mark.parametrize("body", ["add", "multiply"])
def test_fast_scatter_keeps_the_kernels_nan_where_both_operands_are_nan(body, el, ut, first, second):
    """NaNs of two payloads and signs, one in the operand and one in the update of the same
    element: the kernel's ``ufunc.at`` keeps the operand's on f32 and f64 (ml_dtypes' bf16
    arithmetic gives its one NaN), and the fast path gives the kernel's bits."""
    mod, op = _scatter_op(_program(body, el, (6, 4), (5, 1), (5, 4)))
    assert indexing._fast_scatter(op) is not None
    x = np.full((6, 4), first, ut).view(NP[el])
    u = np.full((5, 4), second, ut).view(NP[el])
    ids = np.array([[0], [2], [2], [5], [1]], np.int32)
    assert _assert_generated_matches_stepwise(mod, "main", (x, ids, u))
    (out,) = Engine(mod).call("main", [x, ids, u])
    if el != "bf16":
        assert (out.view(ut) == first).all()


def test_f16_arithmetic_scatter_takes_the_kernel():
    """NumPy's f16 ``add`` keeps the second NaN of two, its ``ufunc.at`` the first: f16 ``add``
    and ``multiply`` stay with the kernel; ``replace`` copies bits and takes the fast path."""
    for body, fast in (("add", False), ("multiply", False), ("replace", True)):
        _mod, op = _scatter_op(_program(body, "f16", (6, 4), (5, 1), (5, 4)))
        assert (indexing._fast_scatter(op) is not None) == fast, body
    a = np.full(8, 0x7E01, np.uint16).view(np.float16)
    b = np.full(8, 0xFE02, np.uint16).view(np.float16)
    at = a.copy()
    np.add.at(at, np.arange(8), b)
    assert at.view(np.uint16)[0] == 0x7E01 and np.add(a, b).view(np.uint16)[0] == 0xFE02


def test_fast_scatter_takes_an_implicit_index_vector():
    rng = np.random.default_rng(3)
    text = _program("add", "f32", (12, 4), (20,), (20, 4), ivd=1)
    mod, op = _scatter_op(text)
    assert indexing._fast_scatter(op) is not None
    assert _assert_generated_matches_stepwise(
        mod, "main", (_values("f32", (12, 4), rng), _rows(12, (20,), "i32", rng), _values("f32", (20, 4), rng)))


def test_repeated_rows_add_in_the_updates_order_by_hand():
    """Row 1 gets 1e8, then 1, then -1e8: in f32 ``(1e8 + 1) - 1e8`` is 0 (1e8 + 1 rounds to
    1e8), in any other order 1 or more; row 3 gets 0.5; index 4 and -1 are skipped."""
    text = _program("add", "f32", (4, 2), (6, 1), (6, 2))
    (mod,) = frontend.load_text(text)
    x = np.zeros((4, 2), np.float32)
    ids = np.array([[1], [3], [1], [4], [-1], [1]], np.int32)
    u = np.array([[1e8, 1e8], [0.5, 0.5], [1, 1], [7, 7], [9, 9], [-1e8, -1e8]], np.float32)
    eng = None
    for _ in range(4):  # step by step, then generated (the fast path)
        eng = Engine(mod)
        (out,) = eng.call("main", [x, ids, u])
        assert out.tolist() == [[0, 0], [0, 0], [0, 0], [0.5, 0.5]]
    assert eng._runners


def test_scatter_gives_ieee_results_without_floating_point_errors():
    """The kernel (step by step) and the fast path compute ``inf * 0`` as NaN and an f16 sum past
    65504 as inf, silently (spec.md "Floating-point types"), also where warnings are errors (as
    in this test suite): the kernel raised ``RuntimeWarning`` from ``ufunc.at`` before."""
    for body, el, x, u, want in (("multiply", "f32", [[np.inf, 2]], [[0, 3]], [[np.nan, 6]]),
                                 ("add", "f16", [[60000, -1]], [[60000, 1]], [[np.inf, 0]])):
        (mod,) = frontend.load_text(_program(body, el, (1, 2), (1, 1), (1, 2)))
        args = (np.array(x, NP[el]), np.zeros((1, 1), np.int32), np.array(u, NP[el]))
        for _ in range(4):  # step by step, then generated (the fast path)
            (out,) = Engine(mod).call("main", args)
            np.testing.assert_array_equal(out, np.array(want, NP[el]))


@pytest.mark.parametrize("what, text", [
    ("float maximum orders signed zeros", _program("maximum", "f32", (6, 3), (5, 1), (5, 3))),
    ("a window of part of a row", _program("add", "f32", (6, 3), (5, 1), (5, 2))),
    ("an index into dimension 1", _program("add", "f32", (6, 3), (5, 1), (5, 6), window=(1,), inserted=(1,),
                                           to_operand=(1,))),
    ("two index components", _program("add", "f32", (6, 3), (5, 2), (5,), window=(), inserted=(0, 1),
                                      to_operand=(0, 1))),
])
def test_fast_scatter_leaves_other_shapes_to_the_kernel(what, text):
    _mod, op = _scatter_op(text)
    assert indexing._fast_scatter(op) is None, what


def test_jax_embedding_gradient_generated_matches_stepwise():
    import jax

    def grad_rows(table, ids, upd):
        return table.at[ids].add(upd), table.at[ids].set(upd)

    rng = np.random.default_rng(9)
    args = (rng.standard_normal((50, 8)).astype(np.float32), rng.integers(-3, 55, 40).astype(np.int32),
            rng.standard_normal((40, 8)).astype(np.float32))
    (mod,) = frontend.load_text(jax.jit(grad_rows).lower(*args).as_text())
    ops = [o for o in mod.funcs["main"].body.blocks[0].ops if o.name == "stablehlo.scatter"]
    assert len(ops) == 2 and all(indexing._fast_scatter(o) is not None for o in ops)
    assert _assert_generated_matches_stepwise(mod, "main", args)
