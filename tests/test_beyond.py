"""Ops beyond the spec: legacy StableHLO ops and the arith/math/tensor/shape/
func/cf companions, through the testsuite/beyond programs and focused checks
(exhaustive i8 arithmetic against Python integers, legacy ops against XLA)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stablehlo_conform import evaluate
from stablehlo_conform.harness.records.result import Result
from stablehlo_conform.harness.suite.cases import Options, run_file

from kernel_util import ty as _ttype

ROOT = Path(__file__).resolve().parents[1]
BEYOND = ROOT / "testsuite" / "beyond"
FILES = sorted(BEYOND.glob("*.mlir"))


def records(path) -> list[Result]:
    return [ev[1] for ev in run_file(str(path), Options()) if ev[0] == "result"]


def run_text(tmp_path, text: str) -> list[Result]:
    p = tmp_path / "prog.mlir"
    p.write_text(text)
    return records(p)


# the suite -------------------------------------------------------------------


def test_suite_has_programs():
    assert len(FILES) >= 8


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_beyond_program(path):
    recs = records(path)
    assert recs, f"no tests in {path}"
    bad = [(r.id, r.status, r.message) for r in recs if r.status != "pass"]
    assert not bad
    assert all(r.checks > 0 for r in recs)


def test_cond_br_factorial_detects_wrong_value(tmp_path):
    text = (BEYOND / "control.mlir").read_text().replace("dense<[3628800]>", "dense<[3628801]>")
    recs = {r.function: r for r in run_text(tmp_path, text)}
    assert recs["factorial_cond_br_loop"].status == "fail"
    assert recs["factorial_recursive_call"].status == "pass"


# companions: failures are reported, not swallowed ------------------------------


def test_cf_assert_false_fails_with_message(tmp_path):
    recs = run_text(tmp_path, """
func.func @t() {
  %a = arith.constant 5 : index
  %b = arith.constant 4 : index
  %lt = arith.cmpi slt, %a, %b : index
  cf.assert %lt, "five is not below four"
  func.return
}
""")
    assert recs[0].status == "fail"
    assert "five is not below four" in recs[0].message


def test_failing_shape_constraint_fails(tmp_path):
    recs = run_text(tmp_path, """
func.func @t() {
  %a = shape.const_shape [2, 3] : tensor<2xindex>
  %b = shape.const_shape [4] : tensor<1xindex>
  %w = shape.cstr_broadcastable %a, %b : tensor<2xindex>, tensor<1xindex>
  %r = shape.assuming %w -> (tensor<2xindex>) {
    shape.assuming_yield %a : tensor<2xindex>
  }
  check.expect_eq_const %r, dense<[2, 3]> : tensor<2xindex>
  func.return
}
""")
    assert recs[0].status == "fail"
    assert "broadcastable" in recs[0].message


def test_extract_out_of_bounds_is_an_error(tmp_path):
    recs = run_text(tmp_path, """
func.func @t() {
  %t = arith.constant dense<[1, 2]> : tensor<2xi32>
  %i = arith.constant 2 : index
  %v = tensor.extract %t[%i] : tensor<2xi32>
  %r = tensor.from_elements %v : tensor<1xi32>
  check.expect_eq_const %r, dense<[0]> : tensor<1xi32>
  func.return
}
""")
    assert recs[0].status == "error"
    assert "out of bounds" in recs[0].message


# exhaustive i8 arithmetic against Python integers -----------------------------

I8_PROGRAM = """
func.func @main(%a: tensor<65536xi8>, %b: tensor<65536xi8>) -> (tensor<65536xi8>, tensor<65536xi8>,
    tensor<65536xi8>, tensor<65536xi8>, tensor<65536xi8>, tensor<65536xi8>, tensor<65536xi8>) {
  %0 = arith.divsi %a, %b : tensor<65536xi8>
  %1 = arith.remsi %a, %b : tensor<65536xi8>
  %2 = arith.floordivsi %a, %b : tensor<65536xi8>
  %3 = arith.ceildivsi %a, %b : tensor<65536xi8>
  %4 = arith.divui %a, %b : tensor<65536xi8>
  %5 = arith.remui %a, %b : tensor<65536xi8>
  %6 = arith.muli %a, %b : tensor<65536xi8>
  func.return %0, %1, %2, %3, %4, %5, %6 : tensor<65536xi8>, tensor<65536xi8>, tensor<65536xi8>,
      tensor<65536xi8>, tensor<65536xi8>, tensor<65536xi8>, tensor<65536xi8>
}
"""


def _wrap8(v: int) -> int:
    return (v + 128) % 256 - 128


def test_i8_division_family_exhaustive():
    vals = np.arange(-128, 128, dtype=np.int8)
    a = np.repeat(vals, 256)
    b = np.tile(vals, 256)
    outs = evaluate(I8_PROGRAM, a, b)
    got = [o.astype(int).tolist() for o in outs]
    for k, (x, y) in enumerate(zip(a.tolist(), b.tolist())):
        if y == 0:
            continue
        ux, uy = x & 0xFF, y & 0xFF
        q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
        r = x - q * y
        fl = x // y
        ce = -((-x) // y)
        want = [_wrap8(q), _wrap8(r), _wrap8(fl), _wrap8(ce),
                _wrap8(ux // uy), _wrap8(ux % uy), _wrap8(x * y)]
        have = [g[k] for g in got]
        assert have == want, (x, y, have, want)


def test_cmpf_on_every_bf16_pair_of_specials():
    specials = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan], dtype=np.float32)
    a = np.repeat(specials, 7).astype(np.float32)
    b = np.tile(specials, 7).astype(np.float32)
    preds = ["oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult", "ule", "une", "uno"]
    lines = "\n".join(f"  %r{i} = arith.cmpf {p}, %a, %b : tensor<49xf32>" for i, p in enumerate(preds))
    rets = ", ".join(f"%r{i}" for i in range(len(preds)))
    types = ", ".join(["tensor<49xi1>"] * len(preds))
    prog = (f"func.func @main(%a: tensor<49xf32>, %b: tensor<49xf32>) -> ({types}) {{\n{lines}\n"
            f"  func.return {rets} : {types}\n}}\n")
    outs = evaluate(prog, a, b)
    uno = np.isnan(a) | np.isnan(b)
    ref = {"eq": a == b, "gt": a > b, "ge": a >= b, "lt": a < b, "le": a <= b, "ne": a != b}
    for p, got in zip(preds, outs):
        if p == "ord":
            want = ~uno
        elif p == "uno":
            want = uno
        elif p == "one":
            want = ~uno & (a != b)
        elif p == "une":
            want = a != b
        elif p[0] == "o":
            want = ~uno & ref[p[1:]]
        else:
            want = uno | ref[p[1:]]
        np.testing.assert_array_equal(got, want, err_msg=p)


def test_arith_scalar_results_are_0d_arrays():
    prog = """
func.func @main(%a: tensor<i32>) -> tensor<1xindex> {
  %x = tensor.extract %a[] : tensor<i32>
  %i = arith.index_cast %x : i32 to index
  %c = arith.constant 3 : index
  %m = arith.muli %i, %c : index
  %t = tensor.from_elements %m : tensor<1xindex>
  func.return %t : tensor<1xindex>
}
"""
    (out,) = evaluate(prog, np.array(-7, dtype=np.int32))
    assert out.dtype == np.int64 and out.tolist() == [-21]


def test_truncf_f64_to_bf16_rounds_once():
    # ties and near-ties that double rounding through f32 would get wrong
    vals = np.array([1 + 2**-8, 1 + 2**-8 + 2**-40, 1 + 2**-8 - 2**-40, 1 + 3 * 2**-8], dtype=np.float64)
    prog = """
func.func @main(%a: tensor<4xf64>) -> tensor<4xbf16> {
  %r = arith.truncf %a : tensor<4xf64> to tensor<4xbf16>
  func.return %r : tensor<4xbf16>
}
"""
    (out,) = evaluate(prog, vals)
    assert out.astype(np.float64).tolist() == [1.0, 1.0078125, 1.0, 1.015625]


# legacy ops against XLA ---------------------------------------------------------


@pytest.fixture(scope="module")
def xla():
    jax = pytest.importorskip("jax")
    try:
        from jax._src import xla_bridge
        from jax._src.lib import xla_client as xc

        be = xla_bridge.get_backend("cpu")
    except Exception as e:  # pragma: no cover - jaxlib layout differs
        pytest.skip(f"no XLA CPU client: {e}")

    def run(text: str, *args):
        exe = be.compile_and_load(text, xc.DeviceList(tuple(be.devices()[:1])), xc.CompileOptions())
        with jax.enable_x64(True):
            bufs = [jax.device_put(np.asarray(a), be.devices()[0]) for a in args]
        out = exe.execute_sharded(bufs)
        return [np.asarray(x[0]) for x in out.disassemble_into_single_device_arrays()]

    return run


def _program(body: str, arg_types: list[str], result_type: str) -> str:
    params = ", ".join(f"%arg{i}: {t}" for i, t in enumerate(arg_types))
    return (f"func.func @main({params}) -> {result_type} {{\n  %r = {body}\n"
            f"  func.return %r : {result_type}\n}}\n")


RNG = np.random.default_rng(7)

EINSUM_CASES = [
    ("ab,bc->ac", (3, 4), (4, 5), "f32"),
    ("bij,bjk->bik", (2, 3, 4), (2, 4, 2), "f32"),
    ("ij,kj->ik", (3, 4), (2, 4), "i32"),
    ("i,j->ij", (3,), (4,), "i8"),
    ("abc,cd->abd", (2, 2, 3), (3, 2), "f64"),
]
_NP = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i8": np.int8}


def _rand(shape, ty):
    if ty.startswith("f"):
        return RNG.standard_normal(shape).astype(_NP[ty])
    return RNG.integers(-100, 100, shape).astype(_NP[ty])


@pytest.mark.parametrize("cfg,ls,rs,ty", EINSUM_CASES)
def test_einsum_matches_xla(xla, cfg, ls, rs, ty):
    lhs, rhs = _rand(ls, ty), _rand(rs, ty)
    out_shape = np.einsum(cfg, lhs.astype(np.float64), rhs.astype(np.float64)).shape
    lt, rt, ot = _ttype(ls, ty), _ttype(rs, ty), _ttype(out_shape, ty)
    text = _program(f'"stablehlo.einsum"(%arg0, %arg1) {{einsum_config = "{cfg}"}} : ({lt}, {rt}) -> {ot}',
                    [lt, rt], ot)
    (ours,) = evaluate(text, lhs, rhs)
    (ref,) = xla(text, lhs, rhs)
    if ty.startswith("f"):
        np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(ours, ref)


@pytest.mark.parametrize("dims", [(4, 2, 1), (3, 0, 0), (2, 1, 1), (3, 2, 2), (5, 1, 0)])
def test_torch_index_select_matches_xla(xla, dims):
    n_idx, dim, bd = dims
    x = RNG.integers(-50, 50, (2, 3, 4)).astype(np.int32)
    if bd == 0:
        idx = RNG.integers(0, x.shape[dim], (n_idx,)).astype(np.int32)
    else:
        idx = RNG.integers(0, x.shape[dim], x.shape[:bd] + (n_idx,)).astype(np.int32)
    out_shape = x.shape[:dim] + idx.shape[bd:] + x.shape[dim + 1:]
    xt, it, ot = _ttype(x.shape, "i32"), _ttype(idx.shape, "i32"), _ttype(out_shape, "i32")
    text = _program(f'"stablehlo.torch_index_select"(%arg0, %arg1) {{dim = {dim} : i64, '
                    f'batch_dims = {bd} : i64}} : ({xt}, {it}) -> {ot}', [xt, it], ot)
    (ours,) = evaluate(text, x, idx)
    (ref,) = xla(text, x, idx)
    np.testing.assert_array_equal(ours, ref)


@pytest.mark.parametrize("ls,rs", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)), ((2, 3), (3, 4))])
def test_dot_matches_xla(xla, ls, rs):
    lhs, rhs = _rand(ls, "f32"), _rand(rs, "f32")
    out_shape = np.dot(lhs, rhs).shape
    lt, rt, ot = _ttype(ls, "f32"), _ttype(rs, "f32"), _ttype(out_shape, "f32")
    text = _program(f'"stablehlo.dot"(%arg0, %arg1) : ({lt}, {rt}) -> {ot}', [lt, rt], ot)
    (ours,) = evaluate(text, lhs, rhs)
    (ref,) = xla(text, lhs, rhs)
    np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-5)


def test_broadcast_and_cross_replica_sum_match_xla(xla):
    x = _rand((2, 3), "f32")
    text = _program('"stablehlo.broadcast"(%arg0) {broadcast_sizes = array<i64: 4, 1>} : '
                    '(tensor<2x3xf32>) -> tensor<4x1x2x3xf32>', ["tensor<2x3xf32>"], "tensor<4x1x2x3xf32>")
    np.testing.assert_array_equal(evaluate(text, x)[0], xla(text, x)[0])
    text = _program('"stablehlo.cross-replica-sum"(%arg0) {replica_groups = dense<[[0]]> : tensor<1x1xi64>} : '
                    '(tensor<2x3xf32>) -> tensor<2x3xf32>', ["tensor<2x3xf32>"], "tensor<2x3xf32>")
    np.testing.assert_array_equal(evaluate(text, x)[0], xla(text, x)[0])


def test_dot_mixed_precision_matches_xla(xla):
    lhs = RNG.integers(-128, 128, (4, 8)).astype(np.int8)
    rhs = RNG.integers(-128, 128, (8, 3)).astype(np.int8)
    text = _program('"stablehlo.dot"(%arg0, %arg1) : (tensor<4x8xi8>, tensor<8x3xi8>) -> tensor<4x3xi32>',
                    ["tensor<4x8xi8>", "tensor<8x3xi8>"], "tensor<4x3xi32>")
    (ours,) = evaluate(text, lhs, rhs)
    (ref,) = xla(text, lhs, rhs)
    np.testing.assert_array_equal(ours, ref)
    np.testing.assert_array_equal(ours, lhs.astype(np.int32) @ rhs.astype(np.int32))
