"""Native backends: the reference interpreter and XLA CPU (wire types,
check stripping, crash isolation), and IREE's clean absence."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from stablehlo_conform import evaluate, load
from stablehlo_conform.errors import UnsupportedOp
from stablehlo_conform.harness.backends import available, get_backend
from stablehlo_conform.harness.backends.base import BackendCrash, BackendUnavailable
from stablehlo_conform.harness.backends.wire import wire_for
from stablehlo_conform.harness.suite.cases import Options
from stablehlo_conform.harness.records.result import Outcome, Status

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / ".." / "shared" / "stablehlo-suite"
CONFORM = [sys.executable, "-m", "stablehlo_conform.cli"]

TESTS = """
func.func @exotic() {
  %0 = stablehlo.constant dense<[1.5, -2.0]> : tensor<2xbf16>
  %1 = stablehlo.add %0, %0 : tensor<2xbf16>
  check.expect_eq_const %1, dense<[3.0, -4.0]> : tensor<2xbf16>
  %2 = stablehlo.constant dense<[7, -8]> : tensor<2xi4>
  %3 = stablehlo.negate %2 : tensor<2xi4>
  check.expect_eq_const %3, dense<[-7, -8]> : tensor<2xi4>
  %4 = stablehlo.constant dense<[(1.0, 2.0)]> : tensor<1xcomplex<f32>>
  %5 = stablehlo.multiply %4, %4 : tensor<1xcomplex<f32>>
  check.expect_almost_eq_const %5, dense<[(-3.0, 4.0)]> : tensor<1xcomplex<f32>>
  %6 = stablehlo.constant dense<250> : tensor<ui8>
  %7 = stablehlo.add %6, %6 : tensor<ui8>
  check.expect_eq_const %7, dense<244> : tensor<ui8>
  func.return
}

// -----

func.func @wrong() {
  %0 = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  %1 = stablehlo.add %0, %0 : tensor<2xi32>
  check.expect_eq_const %1, dense<[2, 5]> : tensor<2xi32>
  func.return
}
"""

PROGRAM = """
func.func @main(%a: tensor<2xbf16>, %b: tensor<2xcomplex<f32>>, %c: tensor<3xi4>, %d: tensor<f8E4M3FN>,
                %e: tensor<2xui16>, %f: tensor<2xi1>)
    -> (tensor<2xbf16>, tensor<2xcomplex<f32>>, tensor<3xi4>, tensor<f8E4M3FN>, tensor<2xui16>, tensor<2xi1>) {
  %0 = stablehlo.multiply %a, %a : tensor<2xbf16>
  %1 = stablehlo.add %b, %b : tensor<2xcomplex<f32>>
  %2 = stablehlo.negate %c : tensor<3xi4>
  %3 = stablehlo.add %d, %d : tensor<f8E4M3FN>
  %4 = stablehlo.add %e, %e : tensor<2xui16>
  %5 = stablehlo.not %f : tensor<2xi1>
  return %0, %1, %2, %3, %4, %5 : tensor<2xbf16>, tensor<2xcomplex<f32>>, tensor<3xi4>, tensor<f8E4M3FN>, tensor<2xui16>, tensor<2xi1>
}
"""

ARGS = [
    np.array([1.5, -3.0], ml_dtypes.bfloat16),
    np.array([1 + 2j, -0.5j], np.complex64),
    np.array([7, -8, 0], ml_dtypes.int4),
    np.array(1.5, ml_dtypes.float8_e4m3fn),
    np.array([40000, 7], np.uint16),
    np.array([True, False]),
]
EXPECTED = [
    np.array([2.25, 9.0], ml_dtypes.bfloat16),
    np.array([2 + 4j, -1j], np.complex64),
    np.array([-7, -8, 0], ml_dtypes.int4),
    np.array(3.0, ml_dtypes.float8_e4m3fn),
    np.array([14464, 14], np.uint16),
    np.array([False, True]),
]


def test_builtin_backends_listed():
    names = available()
    for n in ("numpy", "reference", "xla", "iree"):
        assert names[n] == "builtin"


@pytest.mark.parametrize("backend", ["reference", "xla"])
def test_tests_with_exotic_types_pass_and_wrong_values_fail(backend):
    mods = load(TESTS, split=True)
    be = get_backend(backend)
    ok = be.run_test(mods[0], mods[0].funcs["exotic"], Options(backend=backend))
    assert ok == Outcome(Status.PASS, checks=4, message="")
    bad = be.run_test(mods[1], mods[1].funcs["wrong"], Options(backend=backend))
    assert bad.status == "fail" and "actual 4, expected 5" in bad.message


@pytest.mark.parametrize("backend", ["numpy", "reference", "xla"])
def test_run_function_passes_every_element_type(backend):
    mod = load(PROGRAM)[0]
    opts = Options(isolate=False)
    got = get_backend(backend).run_function(mod, "main", ARGS, opts)
    for g, e in zip(got, EXPECTED):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_array_equal(g.astype(np.complex128), e.astype(np.complex128))


def test_evaluate_api_with_isolated_backend():
    out = evaluate(PROGRAM, *ARGS, backend="reference")
    assert out[4].tolist() == [14464, 14]


def test_reference_abort_becomes_crash_with_stderr():
    text = """
func.func @main(%a: tensor<2xi32>) -> tensor<2xi32> {
  %0 = chlo.mulhi %a, %a : tensor<2xi32>, tensor<2xi32> -> tensor<2xi32>
  return %0 : tensor<2xi32>
}"""
    mod = load(text)[0]
    be = get_backend("reference")
    with pytest.raises(BackendCrash) as info:
        be.run_function(mod, "main", [np.array([1, 2], np.int32)], Options(timeout=60))
    msg = str(info.value)
    assert "SIGABRT" in msg and "Unsupported op" in msg and info.value.status == "crash"
    # the next call starts a fresh child
    ok = load("func.func @main(%a: tensor<2xi32>) -> tensor<2xi32> {\n return %a : tensor<2xi32>\n}")[0]
    out = be.run_function(ok, "main", [np.array([3, 4], np.int32)], Options(timeout=60))
    assert out[0].tolist() == [3, 4]


def test_f6_is_unsupported():
    from stablehlo_conform import types as T

    with pytest.raises(UnsupportedOp):
        wire_for(T.TensorType((2,), T.element_type("f6E2M3FN")), None, "xla")


def test_an_op_outside_stablehlo_is_unsupported_on_xla_in_words():
    text = """func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = math.ceil %x : tensor<3xf32>
  return %0 : tensor<3xf32>
}"""
    mod = load(text)[0]
    with pytest.raises(UnsupportedOp) as e:
        get_backend("xla").run_function(mod, "main", [np.ones(3, np.float32)], Options(isolate=False))
    assert ("the math dialect (not StableHLO) is not registered in the client's compiler; the program's first "
            "op of it: math.ceil") in str(e.value)
    assert "Dialect `math' not found" not in str(e.value)


DYNAMIC = """
func.func @main(%n: tensor<i64>, %a: tensor<?xbf16>) -> tensor<?xbf16> {
  %0 = stablehlo.convert %n : (tensor<i64>) -> tensor<i32>
  %1 = stablehlo.reshape %0 : (tensor<i32>) -> tensor<1xi32>
  %2 = stablehlo.dynamic_iota %1, dim = 0 : (tensor<1xi32>) -> tensor<?xbf16>
  %3 = stablehlo.add %a, %2 : tensor<?xbf16>
  return %3 : tensor<?xbf16>
}"""


@pytest.mark.parametrize("backend", ["reference", "xla"])
def test_dynamic_shapes_are_refined_from_the_arguments(backend):
    mod = load(DYNAMIC)[0]
    a = np.array([0.5, 1.5, 2.5], ml_dtypes.bfloat16)
    (out,) = get_backend(backend).run_function(mod, "main", [np.array(3), a], Options(isolate=False))
    assert out.dtype == a.dtype and out.tolist() == [0.5, 2.5, 4.5]


def test_iree_reports_unavailable_cleanly():
    try:
        import iree.runtime  # noqa: F401
        pytest.skip("IREE is installed")
    except ImportError:
        pass
    mod = load(PROGRAM)[0]
    with pytest.raises(BackendUnavailable, match="iree"):
        get_backend("iree").run_function(mod, "main", ARGS)


IREE_PROGRAM = """
func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>, %i: tensor<4xi32>) -> (tensor<2x2xf32>, tensor<4xi32>) {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %1 = stablehlo.multiply %i, %i : tensor<4xi32>
  return %0, %1 : tensor<2x2xf32>, tensor<4xi32>
}"""


def test_iree_runs_a_program_like_numpy():
    pytest.importorskip("iree.runtime", reason="IREE runtime is not installed (extra [iree])")
    pytest.importorskip("iree.compiler", reason="IREE compiler is not installed (extra [iree])")
    mod = load(IREE_PROGRAM)[0]
    args = [np.arange(6, dtype=np.float32).reshape(2, 3), np.ones((3, 2), np.float32),
            np.array([1, -2, 3, 40000], np.int32)]
    got = get_backend("iree").run_function(mod, "main", args)
    want = get_backend("numpy").run_function(mod, "main", args)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
    assert want[0].tolist() == [[3.0, 3.0], [12.0, 12.0]]


def _conform(*args, timeout=300):
    return subprocess.run(CONFORM + list(args), cwd=ROOT, capture_output=True, text=True, timeout=timeout)


CRASHING = """
func.func @survives() {
  %0 = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  check.expect_eq_const %0, dense<[1, 2]> : tensor<2xi32>
  func.return
}

// -----

func.func @aborts() {
  %0 = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  %1 = chlo.mulhi %0, %0 : tensor<2xi32>, tensor<2xi32> -> tensor<2xi32>
  check.expect_eq_const %1, dense<[0, 0]> : tensor<2xi32>
  func.return
}

// -----

func.func @after_the_crash() {
  %0 = stablehlo.constant dense<3> : tensor<i32>
  check.expect_eq_const %0, dense<3> : tensor<i32>
  func.return
}
"""


@pytest.mark.skipif(not SUITE.exists(), reason="stablehlo-suite not present")
def test_conform_run_reference_and_xla_on_suite_subset(tmp_path):
    crashing = tmp_path / "crashing.mlir"
    crashing.write_text(CRASHING)
    files = [str(SUITE / "testdata" / f"abs_{t}_20_20.mlir") for t in ("bfloat16", "complex128", "int8")]
    r = _conform("run", "--backend", "reference", *files, str(crashing))
    last = r.stdout.strip().splitlines()[-1]
    assert "6 tests" in last and "5 pass" in last and "1 crash" in last, r.stdout
    assert ("CRASH       " + str(crashing) + "::aborts: reference crashed: killed by signal SIGABRT; "
            "stderr: LLVM ERROR: Unsupported op: %0 = chlo.mulhi") in r.stdout
    r = _conform("run", "-q", "--backend", "xla", *files)
    assert "3 pass" in r.stdout.strip().splitlines()[-1]


@pytest.mark.skipif(not SUITE.exists(), reason="stablehlo-suite not present")
def test_run_compare_reports_backend_disagreement():
    r = _conform("run", "--compare", "numpy,reference,xla", "-k", "add_op_test_i1",
                 str(SUITE / "interpret" / "add.mlir"))
    assert "backends disagree: xla vs numpy" in r.stdout
