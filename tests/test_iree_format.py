"""IREE's test format: constants, barriers, check ops, RUN-line programs, and
the "will it run" listing of unsupported ops."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import stablehlo_conform

from stablehlo_conform import iree_format
from stablehlo_conform import types as T
from stablehlo_conform.harness.programs import iree_run
from stablehlo_conform.harness.records.result import Result
from stablehlo_conform.harness.suite.cases import Options, run_file

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "testsuite" / "iree_format"
DATA = ROOT / "tests" / "data" / "iree_format"
CONFORM = [sys.executable, "-m", "stablehlo_conform.cli"]


def _records(path: Path) -> dict[str, Result]:
    return {r.function or r.id: r for kind, r in run_file(str(path), Options()) if kind == "result"}


def _conform(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CONFORM, *args], capture_output=True, text=True, cwd=ROOT, timeout=300)


def test_rewrite_keeps_line_numbers_and_uses_registered_forms():
    src = (SUITE / "checks.mlir").read_text() + (SUITE / "constants.mlir").read_text()
    out = iree_format.rewrite(src)
    assert out.count("\n") == src.count("\n")
    code = "\n".join(ln for ln in out.splitlines() if not ln.lstrip().startswith("//"))
    assert "util.unfoldable_constant" not in code and "flow.tensor.dynamic_constant" not in code
    assert "stablehlo.optimization_barrier %__iree" in out
    assert "stablehlo.dynamic_reshape %__iree" in out and "-> tensor<?xf32>" in out
    assert '"check.iree_expect_almost_eq_const"(%y) {value = dense<[1.0005e6, 4.001e12, 9.05]> : tensor<3xf32>, ' \
           'atol = 0.1 : f64, rtol = 0.001 : f64} : (tensor<3xf32>) -> ()' in out
    # StableHLO's check syntax is left to the check-dialect rewrite
    assert "check.expect_eq_const %y, dense<[1.0, -3.0]> : tensor<2xf32>" in out


def test_project_testsuite_passes(tmp_path):
    r = _conform("run", str(SUITE), "--json", str(tmp_path / "r.json"), "-q")
    doc = json.loads((tmp_path / "r.json").read_text())
    assert r.returncode == 0, r.stdout
    names = {x["function"] for x in doc["results"]}
    assert {"expect_eq_const", "expect_almost_eq_opposite_signs", "expect_all_true", "both_check_syntaxes",
            "dynamic_constant", "dynamic_constant_size", "dynamic_constant_2d", "optimization_barrier", "main",
            "dynamic_abs", "roots",
            "select_scalar"} <= names
    assert all(x["status"] == "pass" for x in doc["results"])
    assert sum(x["checks"] for x in doc["results"] if x["function"] == "both_check_syntaxes") == 4


FAILING = {
    "eq_const_fails": "actual 2, expected 5",
    "eq_signed_zero_fails": "actual -0.0, expected 0.0",
    "eq_fails": "actual 2.0, expected 2.5",
    "almost_eq_const_fails": "actual 2.0, expected 2.00099",
    "almost_eq_rtol_fails": "actual 1000.0, expected 1002.0",
    "almost_eq_nan_fails": "actual nan, expected 1.0",
    "almost_eq_inf_fails": "expected inf",
    "true_fails": "expected a non-zero value, got 0",
    "false_fails": "expected zero, got 4",
    "all_true_fails": "first at index [2]: actual 0, expected 1",
    "dynamic_constant_fails": "actual 2.0, expected 3.0",
}


def test_tensor_programs_run_on_xla(tmp_path):
    """The rewritten forms are registered ops another backend compiles; IREE's
    checks are then evaluated on its results with IREE's semantics."""
    r = _conform("run", str(SUITE), "--backend", "xla", "--json", str(tmp_path / "x.json"), "-q")
    doc = json.loads((tmp_path / "x.json").read_text())
    status = {x["function"]: x["status"] for x in doc["results"]}
    for name in ("expect_eq_bitwise_nan", "expect_almost_eq_const_atol_rtol", "expect_almost_eq_opposite_signs",
                 "expect_all_true", "both_check_syntaxes", "unfoldable_tensor", "dynamic_constant",
                 "dynamic_constant_2d", "dynamic_constant_into_static_result", "main", "dynamic_abs"):
        assert status[name] == "pass", (name, doc["results"])
    assert set(status.values()) <= {"pass", "unsupported"}, r.stdout


def test_failing_iree_checks_fail_with_both_values():
    recs = _records(DATA / "failing.mlir")
    for name, shown in FAILING.items():
        assert recs[name].status == "fail", (name, recs[name])
        assert shown in recs[name].message, (name, recs[name].message)
        assert "(IREE" in recs[name].message
    assert "failing.mlir:6:3" in recs["eq_const_fails"].message  # the check's own line


def test_every_function_named_when_one_does_not_parse():
    recs = _records(DATA / "failing.mlir")
    assert len(recs) == 13
    assert recs["does_not_parse"].status == "error"
    assert "failing.mlir:76:8" in recs["does_not_parse"].message
    assert recs["does_not_parse"].id.endswith("failing.mlir::does_not_parse")
    bad = recs["unknown_dialect"]
    assert bad.status == "unsupported"
    assert bad.message.splitlines()[0] == "unsupported dialect ops: annot.hint, mydialect.frob"


def _run_semantics(tmp_path: Path, checks: str, ty: str = "tensor<2xf32>") -> dict[str, Result]:
    body = "\n".join(
        f"func.func @{name}() {{\n  %a = stablehlo.constant dense<{a}> : {ty}\n"
        f"  %e = stablehlo.constant dense<{e}> : {ty}\n  {op}\n  return\n}}"
        for name, a, e, op in checks)
    p = tmp_path / "sem.mlir"
    p.write_text(body)
    return _records(p)


def test_iree_semantics_differ_from_stablehlo_where_they_should(tmp_path):
    t = "tensor<2xf32>"
    recs = _run_semantics(tmp_path, [
        # opposite signs within atol: IREE accepts, StableHLO rejects
        ("iree_sign", "[-2.0e-5, 1.0]", "[2.0e-5, 1.0]", f"check.expect_almost_eq(%a, %e) : {t}"),
        ("shlo_sign", "[-2.0e-5, 1.0]", "[2.0e-5, 1.0]", f"check.expect_almost_eq %a, %e : {t}"),
        # relative tolerance exists only in IREE's check
        ("iree_rtol", "[1000.0, 1.0]", "[1000.5, 1.0]", f"check.expect_almost_eq(%a, %e, atol 0.0, rtol 1.0e-3) : {t}"),
        ("shlo_abs", "[1000.0, 1.0]", "[1000.5, 1.0]", f"check.expect_almost_eq %a, %e : {t}"),
        # bitwise equality: signed zeros differ for IREE, not for StableHLO's expect_eq
        ("iree_zero", "[-0.0, 1.0]", "[0.0, 1.0]", f"check.expect_eq(%a, %e) : {t}"),
        ("shlo_zero", "[-0.0, 1.0]", "[0.0, 1.0]", f"check.expect_eq %a, %e : {t}"),
        # NaN payloads: bitwise for IREE's expect_eq, any NaN for its almost_eq
        ("iree_payload", "[0x7FC00001, 1.0]", "[0x7FC00000, 1.0]", f"check.expect_eq(%a, %e) : {t}"),
        ("iree_payload_almost", "[0x7FC00001, 1.0]", "[0x7FC00000, 1.0]", f"check.expect_almost_eq(%a, %e) : {t}"),
    ])
    status = {k: v.status for k, v in recs.items()}
    assert status == {"iree_sign": "pass", "shlo_sign": "fail", "iree_rtol": "pass", "shlo_abs": "fail",
                      "iree_zero": "fail", "shlo_zero": "pass", "iree_payload": "fail",
                      "iree_payload_almost": "pass"}


def test_almost_equal_predicate():
    from stablehlo_conform.kernels.iree_check import almost_equal

    a = np.array([1.0, np.nan, np.inf, np.inf, 10.0, 10.0, -1e-5], np.float32)
    e = np.array([1.0, np.nan, np.inf, 1e38, 10.5, 10.02, 1e-5], np.float32)
    got = almost_equal(a, e, 1e-4, 0.0)
    assert got.tolist() == [True, True, True, False, False, False, True]
    assert almost_equal(a[4:6], e[4:6], 0.0, 0.05).tolist() == [True, True]


# --------------------------------------------------------------------------- #
# RUN lines, --input, printed output, FileCheck
# --------------------------------------------------------------------------- #


def test_run_lines_and_functions():
    runs = iree_run.find_runs((SUITE / "run_module.mlir").read_text())
    assert [(r.functions, r.inputs, r.prefixes) for r in runs] == [
        (("dynamic_abs",), ("2x2xf32=[[1.0, -2.0], [-3.0, 4.0]]",), ("ABS",)),
        (("select_scalar",), ("1", "4xi8=7", "4xi8"), ("SEL",)),
    ]
    (r,) = iree_run.find_runs((SUITE / "run_mlir.mlir").read_text())
    assert r.functions == () and r.inputs == ("2x3xf32=[1 -2 3][4 -5.5 6]", "f32=0.5")
    assert iree_run.find_runs("// RUN: not iree-run-mlir %s\n") == []
    (r,) = iree_run.find_runs((SUITE / "run_mlir_all_functions.mlir").read_text())  # two RUN lines, one run
    assert r.functions == () and r.inputs == ("4xf32=[1 4 9 16]",)


def test_checks_of_every_chunk_are_matched(tmp_path):
    src = (SUITE / "run_mlir_all_functions.mlir").read_text()
    assert "[9 16]" in src
    p = tmp_path / "wrong.mlir"
    p.write_text(src.replace("[9 16]", "[9 17]"))
    (rec,) = _records(p).values()
    assert rec.status == "fail" and rec.function == "roots"
    assert "[9 17]' not found in output; output from line 4:\nEXEC @reshaped" in rec.message
    assert "2x2xf32=[1 4][9 16]" in rec.message


def test_failing_run_program_shows_output():
    (rec,) = _records(DATA / "run_fails.mlir").values()
    assert rec.status == "fail"
    assert "CHECK: '3xi32=2 4 7' not found" in rec.message and "3xi32=2 4 6" in rec.message


@pytest.mark.parametrize("spec,ty,expected", [
    ("2x3xf32=1 2 3 4 5 6", "tensor<2x3xf32>", np.arange(1, 7, dtype=np.float32).reshape(2, 3)),
    ("2x3xf32=[1 2 3][4 5 6]", "tensor<2x3xf32>", np.arange(1, 7, dtype=np.float32).reshape(2, 3)),
    ("2x3xf32=[[1, 2, 3], [4, 5, 6]]", "tensor<?x3xf32>", np.arange(1, 7, dtype=np.float32).reshape(2, 3)),
    ("2x2xi32=7", "tensor<2x2xi32>", np.full((2, 2), 7, np.int32)),
    ("3xi8", "tensor<3xi8>", np.zeros(3, np.int8)),
    ("f32=1.5", "tensor<f32>", np.array(1.5, np.float32)),
    ("-3", "i32", np.array(-3, np.int32)),
    ("2xi1=1 0", "tensor<2xi1>", np.array([True, False])),
    ("2xf32=nan -inf", "tensor<2xf32>", np.array([np.nan, -np.inf], np.float32)),
])
def test_parse_input(spec, ty, expected):
    got = iree_run.parse_input(spec, T.parse_type_text(ty))
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("spec,ty", [("2x3xf32=1 2", "tensor<2x3xf32>"), ("3xf32=1 2 3", "tensor<4xf32>"),
                                     ("3xi32=1 2 3", "tensor<3xf32>")])
def test_parse_input_rejects(spec, ty):
    from stablehlo_conform.errors import InputError

    with pytest.raises(InputError, match="--input="):
        iree_run.parse_input(spec, T.parse_type_text(ty))


def test_filecheck_directives():
    out = "EXEC @f\nresult[0]: hal.buffer_view\n2x2xi8=[1 2][3 4]\nresult[1]: i32=5"
    ok = [("LABEL", "EXEC @f"), ("NEXT", "result[0]:"), ("SAME", "hal.buffer_view"),
          ("NEXT", "2x2xi8={{\\[}}1 2][3 {{[0-9]}}]"), ("NOT", "result[2]"), ("", "i32=5")]
    assert iree_run.filecheck(out, tuple(ok)) is None
    assert "CHECK-NEXT" in iree_run.filecheck(out, (("", "EXEC @f"), ("NEXT", "2x2xi8")))
    assert "CHECK-NOT" in iree_run.filecheck(out, (("NOT", "hal"), ("", "i32=5")))
    assert "not found" in iree_run.filecheck(out, (("", "i32=5"), ("", "EXEC")))


PRINT_PROGRAM = """
func.func @f() -> (tensor<2x3xf32>, tensor<f32>, tensor<3xui8>, tensor<2xi64>, tensor<2xbf16>, tensor<3xi1>,
                   tensor<4xf32>, tensor<0xf32>, tensor<2x0xf32>, tensor<2x2x2xi8>, tensor<2xf16>, tensor<2xf64>,
                   tensor<2xcomplex<f32>>, i32, f32) {
  %a = stablehlo.constant dense<[[1.0, -2.5, 3.25], [4.0e-7, 5.0e20, 123456.789]]> : tensor<2x3xf32>
  %b = stablehlo.constant dense<0.1> : tensor<f32>
  %c = stablehlo.constant dense<[1, 200, 255]> : tensor<3xui8>
  %d = stablehlo.constant dense<[-9000000000, 5]> : tensor<2xi64>
  %e = stablehlo.constant dense<[0.1, -3.0]> : tensor<2xbf16>
  %f = stablehlo.constant dense<[true, false, true]> : tensor<3xi1>
  %g = stablehlo.constant dense<[-0.0, 0xFF800000, 0x7FC00000, 0x7F800000]> : tensor<4xf32>
  %h = stablehlo.constant dense<> : tensor<0xf32>
  %i = stablehlo.constant dense<> : tensor<2x0xf32>
  %j = stablehlo.constant dense<[[[1, 2], [3, 4]], [[5, 6], [7, -8]]]> : tensor<2x2x2xi8>
  %k = stablehlo.constant dense<[0.1, 1.5]> : tensor<2xf16>
  %l = stablehlo.constant dense<[0.1, 123456789.125]> : tensor<2xf64>
  %m = stablehlo.constant dense<[(1.0, 2.0), (3.5, -4.0)]> : tensor<2xcomplex<f32>>
  %n = arith.constant -7 : i32
  %o = arith.constant 2.5 : f32
  return %a, %b, %c, %d, %e, %f, %g, %h, %i, %j, %k, %l, %m, %n, %o : tensor<2x3xf32>, tensor<f32>, tensor<3xui8>,
      tensor<2xi64>, tensor<2xbf16>, tensor<3xi1>, tensor<4xf32>, tensor<0xf32>, tensor<2x0xf32>, tensor<2x2x2xi8>,
      tensor<2xf16>, tensor<2xf64>, tensor<2xcomplex<f32>>, i32, f32
}
"""


def _iree_tool(name: str) -> str | None:
    here = Path(sys.executable).parent / name
    return str(here) if here.exists() else shutil.which(name)


@pytest.mark.skipif(_iree_tool("iree-run-module") is None or _iree_tool("iree-compile") is None,
                    reason="IREE's tools (iree-base-compiler, iree-base-runtime) are not installed")
def test_printed_output_matches_iree_run_module(tmp_path):
    from stablehlo_conform import evaluate

    src = tmp_path / "p.mlir"
    src.write_text(PRINT_PROGRAM)
    vmfb = tmp_path / "p.vmfb"
    subprocess.run([_iree_tool("iree-compile"), "--iree-input-type=stablehlo", "--iree-hal-target-device=local",
                    "--iree-hal-local-target-device-backends=llvm-cpu", "--iree-llvmcpu-target-cpu=generic",
                    "--iree-input-demote-f64-to-f32=false", str(src), "-o", str(vmfb)],
                   check=True, capture_output=True, timeout=300)
    real = subprocess.run([_iree_tool("iree-run-module"), "--device=local-task", f"--module={vmfb}", "--function=f"],
                          check=True, capture_output=True, text=True, timeout=120).stdout
    values = evaluate(PRINT_PROGRAM, entry="f")
    types = stablehlo_conform.load(PRINT_PROGRAM)[0].funcs["f"].result_types
    ours = iree_run.format_output("f", values, types)
    assert ours.strip() == real.strip()


# --------------------------------------------------------------------------- #
# Will it run
# --------------------------------------------------------------------------- #


UNSUPPORTED_PROGRAM = """func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.custom_call @vendor_fused_kernel(%a) : (tensor<2xf32>) -> tensor<2xf32>
  %1 = "foo.bar"(%0) : (tensor<2xf32>) -> tensor<2xf32>
  return %1 : tensor<2xf32>
}
"""


def test_ops_will_it_run(tmp_path):
    (tmp_path / "uns.mlir").write_text(UNSUPPORTED_PROGRAM)
    r = _conform("ops", str(SUITE))
    assert r.returncode == 0, r.stdout
    assert "6 files: 6 will run, 0 need unsupported ops, 0 do not load" in r.stdout
    assert f"OK          {SUITE / 'checks.mlir'}: 10 tests" in r.stdout
    r = _conform("ops", str(tmp_path), str(DATA / "failing.mlir"))
    assert r.returncode == 1
    assert f"UNSUPPORTED {tmp_path / 'uns.mlir'}: stablehlo.custom_call @vendor_fused_kernel, foo.bar" in r.stdout
    assert "UNSUPPORTED " + str(DATA / "failing.mlir") + "::unknown_dialect: unsupported dialect ops: " \
           "annot.hint, mydialect.frob" in r.stdout
    assert "ERROR       " + str(DATA / "failing.mlir") + "::does_not_parse" in r.stdout
    # without arguments: the registered ops, as before
    r = _conform("ops", "--missing")
    assert r.returncode == 0 and "ops have a kernel" in r.stdout


def test_eval_and_run_by_op_name_unsupported_ops_first(tmp_path):
    p = tmp_path / "uns.mlir"
    p.write_text(UNSUPPORTED_PROGRAM)
    r = _conform("eval", str(p), "--random")
    assert r.returncode == 1
    lines = r.stderr.splitlines()
    assert lines[0] == "unsupported: stablehlo.custom_call @vendor_fused_kernel, foo.bar"
    r = _conform("run", str(p), "--by-op")
    assert r.stdout.splitlines()[0] == f"{p}: unsupported: stablehlo.custom_call @vendor_fused_kernel, foo.bar"
    # the test's own record names every unsupported op in one line
    assert "also unsupported here: foo.bar" in r.stdout


def test_function_pieces_keep_helpers():
    text = """module {
func.func @helper() -> tensor<i32> {
  %c = stablehlo.constant dense<1> : tensor<i32>
  return %c : tensor<i32>
}
func.func @t1() {
  %x = call @helper() : () -> tensor<i32>
  return
}
func.func @t2() {
  return
}
}"""
    pieces = dict(iree_format.function_pieces(text))
    assert sorted(pieces) == ["t1", "t2"]  # @helper is called: not a test
    assert "@helper()" in pieces["t2"] and "@t1" not in pieces["t2"]
    assert all(p.count("\n") == text.count("\n") for p in pieces.values())


def test_npy_input_and_separate_flag_values(tmp_path):
    np.save(tmp_path / "x.npy", np.array([[1.0, -2.0]], np.float32))
    (tmp_path / "p.mlir").write_text(
        "// RUN: iree-run-module --module=- --function main --input @x.npy --input i32=3 | FileCheck %s\n"
        "func.func @main(%x: tensor<1x2xf32>, %n: tensor<i32>) -> (tensor<1x2xf32>, tensor<i32>) {\n"
        "  %a = stablehlo.abs %x : tensor<1x2xf32>\n"
        "  %m = stablehlo.multiply %n, %n : tensor<i32>\n"
        "  return %a, %m : tensor<1x2xf32>, tensor<i32>\n}\n"
        "// CHECK: 1x2xf32=[1 2]\n// CHECK: i32=9\n")
    (rec,) = _records(tmp_path / "p.mlir").values()
    assert rec.status == "pass", rec.message
    assert rec.checks == 2


# --------------------------------------------------------------------------- #
# IREE's tests as they are: statements over lines, older spellings, rng, globals
# --------------------------------------------------------------------------- #

SPANNING = """func.func @dynamic_next_line() {
  %x = flow.tensor.dynamic_constant
    dense<[[1.0, -2.0], [3.0, 4.5]]> : tensor<2x2xf32>
      -> tensor<?x?xf32>
  %a = stablehlo.abs %x : tensor<?x?xf32>
  %s = tensor.cast %a : tensor<?x?xf32> to tensor<2x2xf32>
  check.expect_almost_eq_const(%s, dense<[[1.0, 2.0], [3.0, 4.5]]> : tensor<2x2xf32>) : tensor<2x2xf32>
  return
}

func.func @unfoldable_over_lines() {
  %c = util.unfoldable_constant dense<

      [[7, 8, 9],
       [10, 11, 12]]>
    :
    tensor<2x3xi32>
  %r = stablehlo.reverse %c, dims = [1] : tensor<2x3xi32>
  check.expect_eq_const(%r, dense<[[9, 8, 7], [12, 11, 10]]> : tensor<2x3xi32>) : tensor<2x3xi32>
  return
}

func.func @wrong_after_spanning_constant() {
  %c = util.unfoldable_constant dense<[2.0,
                                       3.0]> : tensor<2xf32>
  check.expect_eq_const(%c, dense<[2.0, 5.0]> : tensor<2xf32>) : tensor<2xf32>
  return
}
"""


def test_constants_whose_statement_spans_lines(tmp_path):
    out = iree_format.rewrite(SPANNING)
    assert out.count("\n") == SPANNING.count("\n")
    assert "flow.tensor" not in out and "util.unfoldable" not in out
    assert "-> tensor<?x?xf32>" in out.splitlines()[1]  # the whole statement on its first line
    p = tmp_path / "spanning.mlir"
    p.write_text(SPANNING)
    recs = _records(p)
    assert recs["dynamic_next_line"].status == "pass", recs["dynamic_next_line"]
    assert recs["unfoldable_over_lines"].status == "pass", recs["unfoldable_over_lines"]
    bad = recs["wrong_after_spanning_constant"]
    assert bad.status == "fail" and "actual 3.0, expected 5.0" in bad.message
    assert "spanning.mlir:26:3" in bad.message  # the check's own line, after a two-line constant


OLDER_SPELLINGS = """func.func @positional_tolerance() {
  %x = util.unfoldable_constant dense<[1.0, 2.0]> : tensor<2xf32>
  %y = stablehlo.sqrt %x : tensor<2xf32>
  check.expect_almost_eq_const(%y, dense<[1.0, 1.414]> : tensor<2xf32>, 1.0e-3) : tensor<2xf32>
  return
}

func.func @positional_tolerance_too_tight() {
  %x = util.unfoldable_constant dense<[1.0, 2.0]> : tensor<2xf32>
  %y = stablehlo.sqrt %x : tensor<2xf32>
  check.expect_almost_eq_const(%y, dense<[1.0, 1.414]> : tensor<2xf32>, 1.0e-4) : tensor<2xf32>
  return
}

func.func @dense_attributes() {
  %x = util.unfoldable_constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %z = util.unfoldable_constant dense<0> : tensor<i32>
  %s = "stablehlo.reduce"(%x, %z) ({
  ^bb0(%a: tensor<i32>, %b: tensor<i32>):
    %t = stablehlo.add %a, %b : tensor<i32>
    "stablehlo.return"(%t) : (tensor<i32>) -> ()
  }) {dimensions = dense<1> : tensor<1xi64>} : (tensor<2x3xi32>, tensor<i32>) -> tensor<2xi32>
  check.expect_eq_const(%s, dense<[6, 15]> : tensor<2xi32>) : tensor<2xi32>
  %t = "stablehlo.transpose"(%x) {permutation = dense<[1, 0]> : tensor<2xi64>} : (tensor<2x3xi32>) -> tensor<3x2xi32>
  %l = "stablehlo.slice"(%t) {start_indices = dense<[1, 0]> : tensor<2xi64>,
      limit_indices = dense<[3, 2]> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>
  } : (tensor<3x2xi32>) -> tensor<2x2xi32>
  check.expect_eq_const(%l, dense<[[2, 5], [3, 6]]> : tensor<2x2xi32>) : tensor<2x2xi32>
  %p = "stablehlo.pad"(%x, %z) {edge_padding_low = dense<[0, 1]> : tensor<2xi64>,
      edge_padding_high = dense<0> : tensor<2xi64>, interior_padding = dense<0> : tensor<2xi64>
  } : (tensor<2x3xi32>, tensor<i32>) -> tensor<2x4xi32>
  check.expect_eq_const(%p, dense<[[0, 1, 2, 3], [0, 4, 5, 6]]> : tensor<2x4xi32>) : tensor<2x4xi32>
  return
}
"""


def test_older_spellings_of_tolerance_and_attributes(tmp_path):
    out = iree_format.rewrite(OLDER_SPELLINGS)
    assert out.count("\n") == OLDER_SPELLINGS.count("\n")
    assert "atol = 0.001 : f64" in out and "dimensions = array<i64: 1>" in out
    assert "strides = array<i64: 1, 1>" in out and "limit_indices = array<i64: 3, 2>" in out
    p = tmp_path / "older.mlir"
    p.write_text(OLDER_SPELLINGS)
    recs = _records(p)
    assert recs["positional_tolerance"].status == "pass", recs["positional_tolerance"]
    tight = recs["positional_tolerance_too_tight"]
    assert tight.status == "fail" and "atol=0.0001" in tight.message
    assert recs["dense_attributes"].status == "pass", recs["dense_attributes"]
    assert recs["dense_attributes"].checks == 3


@pytest.mark.parametrize("line, expected", [
    ("  {dimensions = dense<[0, 2]> : tensor<2xi64>}", "  {dimensions = array<i64: 0, 2>}"),
    ("window_strides = dense<1> : tensor<3xi64>,", "window_strides = array<i64: 1, 1, 1>,"),
    ("broadcast_dimensions = dense<[]> : tensor<0xi64>", "broadcast_dimensions = array<i64>"),
    # 2-D attributes are still dense elements; other names and comments are left alone
    ("padding = dense<[[1, 1], [0, 1]]> : tensor<2x2xi64>", "padding = dense<[[1, 1], [0, 1]]> : tensor<2x2xi64>"),
    ("value = dense<[1, 2]> : tensor<2xi64>", "value = dense<[1, 2]> : tensor<2xi64>"),
    ("x // strides = dense<1> : tensor<2xi64>", "x // strides = dense<1> : tensor<2xi64>"),
    ("strides = dense<[1, 2]> : tensor<3xi64>", "strides = dense<[1, 2]> : tensor<3xi64>"),  # wrong count: kept
])
def test_upgrade_array_attrs(line, expected):
    assert iree_format.upgrade_array_attrs(line) == expected


def _bits_of(alg: str, state: str, st: str, out: str) -> np.ndarray:
    from stablehlo_conform import frontend
    from stablehlo_conform.engine import Engine
    from stablehlo_conform.kernels.registry import load_all

    text = (f"func.func @main() -> ({st}, {out}) {{\n  %s = stablehlo.constant dense<{state}> : {st}\n"
            f"  %0:2 = \"stablehlo.rng_bit_generator\"(%s) {{rng_algorithm = #stablehlo<rng_algorithm {alg}>}}"
            f" : ({st}) -> ({st}, {out})\n  return %0#0, %0#1 : {st}, {out}\n}}\n")
    (mod,) = frontend.load_text(text)
    return Engine(mod, load_all()).call("main", ())


@pytest.mark.parametrize("alg", ["THREE_FRY", "PHILOX"])
def test_rng_bit_generator_with_a_32_bit_state(alg):
    """A tensor<4xi32> state is [key low, key high, counter high, counter low]:
    the same bits as the ui64 state [key, counter] (THREE_FRY's blocks then
    give their two words in turn, the layout of its 64-bit outputs)."""
    key, counter = (7 << 32) | 5, (9 << 32) | 11
    s64, o64 = _bits_of(alg, f"[{key}, {counter}]", "tensor<2xui64>", "tensor<3xui64>")
    s32, o32 = _bits_of(alg, "[5, 7, 9, 11]", "tensor<4xi32>", "tensor<6xi32>")
    words = np.asarray(o64).view(np.uint32)
    assert np.asarray(o32).view(np.uint32).tolist() == words.tolist()
    blocks = 3 if alg == "THREE_FRY" else 2  # 6 words: 3 two-word blocks / 2 four-word blocks
    assert np.asarray(s32).tolist() == [5, 7, 9, 11 + blocks]
    assert np.asarray(s64).tolist() == [key, counter + (3 if alg == "THREE_FRY" else 2)]


def test_rng_uniform_follows_the_index_hash():
    from stablehlo_conform.kernels.random import uniform_lcg

    a, b = np.float32(-2.0), np.float32(6.0)
    v = uniform_lcg((2, 3), a, b)
    for i in range(2):
        for j in range(3):
            h = (((i * 1103515245 + 12345) % 2**32 + j) * 1103515245 + 12345) % 2**32
            want = np.float32(h) * (np.float32(8.0) * np.float32(2.3283064e-10)) + a
            assert v[i, j] == want
    assert ((v >= a) & (v < b)).all()


IMPL = """func.func @normal_values() {
  %mu = util.unfoldable_constant dense<0.0> : tensor<f32>
  %sigma = util.unfoldable_constant dense<1.0> : tensor<f32>
  %shape = util.unfoldable_constant dense<[2, 3]> : tensor<2xi64>
  %r = stablehlo.rng %mu, %sigma, %shape, distribution = NORMAL : (tensor<f32>, tensor<f32>, tensor<2xi64>) -> tensor<2x3xf32>
  check.expect_almost_eq_const(%r, dense<[[0.25, -1.5, 0.5], [2.0, 0.0, -0.75]]> : tensor<2x3xf32>) : tensor<2x3xf32>
  return
}

func.func @bits_of_another_backend() {
  %s = util.unfoldable_constant dense<[3, 4]> : tensor<2xui64>
  %0:2 = "stablehlo.rng_bit_generator"(%s) {rng_algorithm = #stablehlo<rng_algorithm PHILOX>}
      : (tensor<2xui64>) -> (tensor<2xui64>, tensor<4xi32>)
  %1 = stablehlo.add %0#1, %0#1 : tensor<4xi32>
  check.expect_eq_const(%1, dense<[2, 4, 6, 8]> : tensor<4xi32>) : tensor<4xi32>
  return
}
"""


def test_implementation_defined_values_get_their_verdict(tmp_path):
    p = tmp_path / "impl.mlir"
    p.write_text(IMPL)
    recs = _records(p)
    normal = recs["normal_values"]
    assert normal.status == "fail" and normal.verdict["verdict"] == "spec silent"
    assert "implementation-defined: the spec leaves rng results to the backend; shape, type and finiteness " \
           "checked" in normal.message
    assert normal.verdict["checks"][0]["accuracy"]["kind"] == "implementation-defined"
    bits = recs["bits_of_another_backend"]  # an integer value computed from the bits
    assert bits.status == "fail" and bits.verdict["verdict"] == "spec silent"
    assert "determinism for the state checked" in bits.message
    assert bits.verdict["checks"][0]["ops"] == ["stablehlo.rng_bit_generator"]


BESIDE = """func.func @passing_rng_check_beside_a_failing_one() {
  %a = util.unfoldable_constant dense<0.0> : tensor<f32>
  %b = util.unfoldable_constant dense<1.0> : tensor<f32>
  %shape = util.unfoldable_constant dense<[2]> : tensor<1xi64>
  %r = stablehlo.rng %a, %b, %shape, distribution = UNIFORM : (tensor<f32>, tensor<f32>, tensor<1xi64>) -> tensor<2xf32>
  check.expect_almost_eq_const(%r, dense<[0.0, 0.2569]> : tensor<2xf32>, 1.0e-3) : tensor<2xf32>
  %one = stablehlo.constant dense<1.0> : tensor<2xf32>
  %lt = stablehlo.compare LT, %r, %one, FLOAT : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
  %i = stablehlo.convert %lt : (tensor<2xi1>) -> tensor<2xi32>
  check.expect_all_true(%i) : tensor<2xi32>
  %c = util.unfoldable_constant dense<[2, 3]> : tensor<2xi32>
  check.expect_eq_const(%c, dense<[2, 4]> : tensor<2xi32>) : tensor<2xi32>
  return
}
"""


def test_only_failing_checks_of_rng_values_get_the_verdict(tmp_path):
    p = tmp_path / "beside.mlir"
    p.write_text(BESIDE)
    (rec,) = _records(p).values()
    assert rec.status == "fail" and rec.checks == 3
    assert rec.verdict["verdict"] != "spec silent" and "implementation-defined" not in rec.message
    assert not any(c["accuracy"]["kind"] == "implementation-defined" for c in rec.verdict["checks"])
    assert "actual 3, expected 4" in rec.message


def test_what_the_spec_fixes_of_rng_results():
    from stablehlo_conform.kernels.random import spec_fixed_problems

    a, b, shape = np.float32(0.0), np.float32(1.0), np.array([3], np.int64)
    uniform = {"rng_distribution": "UNIFORM"}
    assert spec_fixed_problems("stablehlo.rng", uniform, [a, b, shape], 0, np.array([0.0, 0.5, 0.99], np.float32)) \
        == []
    (p,) = spec_fixed_problems("stablehlo.rng", uniform, [a, b, shape], 0, np.array([0.0, 1.0, 0.5], np.float32))
    assert "1 of 3 values outside [a, b)" in p and "at [1]" in p
    (p,) = spec_fixed_problems("stablehlo.rng", uniform, [a, b, shape], 0, np.zeros(4, np.float32))
    assert "is not the shape operand [3]" in p
    normal = {"rng_distribution": "NORMAL"}
    assert spec_fixed_problems("stablehlo.rng", normal, [a, b, shape], 0, np.array([9.0, -9.0, 0.0], np.float32)) \
        == []
    (p,) = spec_fixed_problems("stablehlo.rng", normal, [a, b, shape], 0, np.array([0.0, np.nan, 1], np.float32))
    assert "not finite" in p
    state = np.array([1, 2], np.uint64)
    assert spec_fixed_problems("stablehlo.rng_bit_generator", {}, [state], 0, np.array([1, 9], np.uint64)) == []
    (p,) = spec_fixed_problems("stablehlo.rng_bit_generator", {}, [state], 0, np.array([1, 9, 0], np.uint64))
    assert "(C1)" in p


OUTSIDE = """func.func @asserts_false() {
  %x = util.unfoldable_constant dense<[1.0, 2.0]> : tensor<2xf32>
  %y = util.unfoldable_constant dense<[1.0, 3.0]> : tensor<2xf32>
  %eq = stablehlo.compare EQ, %x, %y, NOTYPE : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
  stablehlo.custom_call @shape_assertion(%eq) {error_message = "sizes differ", has_side_effect = true} : (tensor<2xi1>) -> ()
  check.expect_almost_eq_const(%x, dense<[1.0, 2.0]> : tensor<2xf32>) : tensor<2xf32>
  return
}

func.func @built_with_linalg() {
  %init = tensor.empty() : tensor<4xi32>
  %i = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      outs(%init : tensor<4xi32>) {
      ^bb0(%o: i32):
        %k = linalg.index 0 : index
        %c = arith.index_cast %k : index to i32
        linalg.yield %c : i32
      } -> tensor<4xi32>
  check.expect_eq_const(%i, dense<[0, 1, 2, 3]> : tensor<4xi32>) : tensor<4xi32>
  return
}
"""


def test_failed_assertion_and_dialects_outside_stablehlo(tmp_path):
    p = tmp_path / "outside.mlir"
    p.write_text(OUTSIDE)
    recs = _records(p)
    a = recs["asserts_false"]
    assert a.status == "error"
    assert a.message.startswith("the program's assertion failed: stablehlo.custom_call @shape_assertion at ")
    assert "outside.mlir:5:3 (1 of 2 predicate elements false): sizes differ" in a.message
    g = recs["built_with_linalg"]
    assert g.status == "unsupported"
    assert g.message.splitlines()[0] == ("unsupported dialect ops: linalg.generic, linalg.index, linalg.yield "
                                           "(linalg is MLIR's structured-ops dialect, not StableHLO: no kernel "
                                           "evaluates it)")


GLOBALS = """// RUN: iree-run-mlir --Xcompiler,iree-input-type=stablehlo --function=peek %s | FileCheck %s --check-prefix=PEEK
// RUN: iree-run-mlir --Xcompiler,iree-input-type=stablehlo --function=bump %s | FileCheck %s --check-prefix=BUMP

module {
  ml_program.global private mutable @total(dense<[1, 10]> : tensor<2xi32>): tensor<2xi32>

  // PEEK: EXEC @peek
  func.func @peek() -> tensor<2xi32> {
    %0 = ml_program.global_load @total : tensor<2xi32>
    return %0 : tensor<2xi32>
  }
  // PEEK: 2xi32=1 10

  // BUMP: EXEC @bump
  func.func @bump() -> tensor<2xi32> {
    %0 = ml_program.global_load @total : tensor<2xi32>
    %1 = stablehlo.add %0, %0 : tensor<2xi32>
    ml_program.global_store @total = %1 : tensor<2xi32>
    %2 = ml_program.global_load @total : tensor<2xi32>
    %3 = stablehlo.add %2, %0 : tensor<2xi32>
    return %3 : tensor<2xi32>
  }
  // BUMP: 2xi32=3 30
}
"""


def test_ml_program_globals(tmp_path):
    out = iree_format.rewrite(GLOBALS)
    assert out.count("\n") == GLOBALS.count("\n") and "func.func private @total() -> tensor<2xi32>" in out
    p = tmp_path / "globals.mlir"
    p.write_text(GLOBALS)
    recs = list(_records(p).values())
    assert len(recs) == 2 and all(r.status == "pass" for r in recs), recs
    p.write_text(GLOBALS.replace("BUMP: 2xi32=3 30", "BUMP: 2xi32=2 20"))
    assert sorted(r.status for r in _records(p).values()) == ["fail", "pass"]


def test_iree_e2e_script_tallies_a_folder(tmp_path):
    (tmp_path / "a.mlir").write_text(SPANNING)
    (tmp_path / "b.mlir").write_text(IMPL)
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "iree_e2e.py"), str(tmp_path)], capture_output=True,
                       text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "5 test functions in 2 files (numpy): 2 pass, 2 implementation-defined (spec silent), 1 other"
    assert lines[1].startswith("  fail        ") and lines[1].split()[1].endswith("::wrong_after_spanning_constant:")
    assert lines[-1] == "4/5 pass or carry the implementation-defined verdict"
    bad = subprocess.run([sys.executable, str(ROOT / "scripts" / "iree_e2e.py"), str(tmp_path / "none")],
                         capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert bad.returncode == 2 and bad.stderr.strip() == f"error: not a folder: {tmp_path / 'none'}"
