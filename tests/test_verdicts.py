"""Accuracy classes, result_accuracy and verdicts (stablehlo_conform.oracle)."""

from __future__ import annotations

import json
from pathlib import Path
import subprocess
import sys

import numpy as np
import pytest

from stablehlo_conform import frontend
from stablehlo_conform.harness.backends.numpy_backend import NumpyBackend
from stablehlo_conform.harness.suite.cases import Options, judge, run_file
from stablehlo_conform.kernels.registry import load_all
from stablehlo_conform.oracle import classes as C
from stablehlo_conform.harness.records.result import Outcome, Result, new_result
from stablehlo_conform.program import walk_ops

X = np.array([1.0, 2.5, 10.0], np.float32)
EXP = np.exp(X.astype(np.float64)).astype(np.float32)  # correctly rounded for these inputs


def lit(a: np.ndarray) -> str:
    return "[" + ", ".join(repr(float(v)) for v in a) + "]"


def up(a: np.ndarray, n: int) -> np.ndarray:
    """``a`` moved ``n`` ULP towards +inf."""
    a = np.array(a, np.float32)
    for _ in range(n):
        a = np.nextafter(a, np.float32(np.inf))
    return a


def exp_program(expected: np.ndarray, attr: str = "", max_ulp: int | None = None) -> str:
    """exp of ``X`` checked against ``expected`` by ``expect_almost_eq_const``
    (absolute 1e-4) or, with ``max_ulp``, by ``expect_close``."""
    check = (f"check.expect_almost_eq_const %r, dense<{lit(expected)}> : tensor<3xf32>" if max_ulp is None else
             f"%e = stablehlo.constant dense<{lit(expected)}> : tensor<3xf32>\n"
             f"  check.expect_close %r, %e, max_ulp_difference = {max_ulp} : tensor<3xf32>, tensor<3xf32>")
    return f"""func.func @exp_test() {{
  %x = stablehlo.constant dense<{lit(X)}> : tensor<3xf32>
  %r = "stablehlo.exponential"(%x) {attr} : (tensor<3xf32>) -> tensor<3xf32>
  {check}
  func.return
}}
"""


def run_text(tmp_path, text: str, name: str = "t.mlir", **options) -> Result:
    p = tmp_path / name
    p.write_text(text)
    recs = [ev[1] for ev in run_file(str(p), Options(**options)) if ev[0] == "result"]
    assert len(recs) == 1, recs
    return recs[0]


def op_named(text: str, name: str):
    (mod,) = frontend.load_text(text)
    return next(op for f in mod.funcs.values() for op in walk_ops(f.body) if op.name == name)


# --------------------------------------------------------------------------- #
# classes
# --------------------------------------------------------------------------- #

DOT = """func.func @main(%a: tensor<2x5xf32>, %b: tensor<5x3xf32>) -> tensor<2x3xf32> {
  %r = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x5xf32>, tensor<5x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}
"""
REDUCE = """func.func @main(%a: tensor<4x6xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [1] : (tensor<4x6xf32>, tensor<f32>) -> tensor<4xf32>
  %m = stablehlo.reduce(%a init: %z) applies stablehlo.maximum across dimensions = [1] : (tensor<4x6xf32>, tensor<f32>) -> tensor<4xf32>
  func.return %s, %m : tensor<4xf32>, tensor<4xf32>
}
"""


def test_classes_of_ops():
    dot = C.class_of(op_named(DOT, "stablehlo.dot_general"))  # no precision_config: DEFAULT
    assert (dot.kind, dot.k, dot.precision) == (C.ACCUMULATE, 5, "DEFAULT")
    assert [n for n, _e in dot.algorithms] == ["f32", "bf16_6x", "tf32_3x", "bf16_3x", "tf32", "bf16"]
    (mod,) = frontend.load_text(REDUCE)
    add, mx = [op for op in walk_ops(mod.funcs["main"].body) if op.name == "stablehlo.reduce"]
    assert C.class_of(add).kind == C.ACCUMULATE and C.class_of(add).k == 7  # six terms and the init value
    assert C.class_of(mx).kind == C.EXACT
    exp = op_named(exp_program(EXP), "stablehlo.exponential")
    assert C.class_of(exp) == C.AccuracyClass(C.ULP, 1)
    iadd = op_named("""func.func @main(%a: tensor<2xi32>) -> tensor<2xi32> {
  %r = stablehlo.add %a, %a : tensor<2xi32>
  func.return %r : tensor<2xi32>
}""", "stablehlo.add")
    assert C.class_of(iadd).kind == C.EXACT
    tr = op_named("""func.func @main(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %r = stablehlo.transpose %a, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return %r : tensor<3x2xf32>
}""", "stablehlo.transpose")
    assert C.class_of(tr).kind == C.EXACT


def test_profile_overrides_the_default_bound(tmp_path):
    p = tmp_path / "vendor.toml"
    p.write_text('[ops."stablehlo.exponential"]\nf32 = 4\n"*" = 2\n[ops."stablehlo.add"]\nf32 = "exact"\n')
    prof = C.Profile.load(p)
    exp = op_named(exp_program(EXP), "stablehlo.exponential")
    assert C.class_of(exp, prof) == C.AccuracyClass(C.ULP, 4, source="profile")
    assert prof.lookup("stablehlo.exponential", "bf16") == 2
    j = tmp_path / "vendor.json"
    j.write_text(json.dumps({"ops": {"stablehlo.exponential": 3}}))
    assert C.class_of(exp, C.Profile.load(j)).ulps == 3
    bad = tmp_path / "bad.toml"
    bad.write_text('[ops."stablehlo.exponential"]\nf32 = -1\n')
    with pytest.raises(C.ProfileError):
        C.Profile.load(bad)


def test_gamma_and_accumulation_bound():
    u = 2.0 ** -24
    assert C.gamma(4, u) == pytest.approx(4 * u / (1 - 4 * u), rel=1e-15)
    assert C.gamma(2 ** 24, u) == float("inf")
    cls = C.AccuracyClass(C.ACCUMULATE, k=3)
    ref = np.array([1.0], np.float32)
    b = C.accumulation_bound(cls, ref, np.array([2e8 + 1]))
    assert b[0] == pytest.approx(3 * u / (1 - 3 * u) * (2e8 + 1) + 2.0 ** -23, rel=1e-12)


def test_result_accuracy_inequality_by_hand():
    e = np.array([100.0, 100.0, 0.0, 0.0], np.float32)
    a = np.array([100.5, 101.5, 0.05, 0.2], np.float32)
    # max(|e| * max(rtol, ulps * eps), atol) with rtol 0.01, atol 0.1: 1.0, 1.0, 0.1, 0.1
    assert C.result_accuracy_ok(a, e, atol=0.1, rtol=0.01, ulps=0).tolist() == [True, False, True, False]
    eps = 2.0 ** -23
    one = np.array([1.0], np.float32)
    assert C.result_accuracy_ok(up(one, 2), one, 0.0, 0.0, 2).tolist() == [True]
    assert C.result_accuracy_ok(up(one, 3), one, 0.0, 0.0, 2).tolist() == [False]
    assert float(up(one, 2)[0]) - 1.0 == 2 * eps


# --------------------------------------------------------------------------- #
# result_accuracy in programs
# --------------------------------------------------------------------------- #

TOL = ('{result_accuracy = #stablehlo.result_accuracy<atol = 0.000000e+00, rtol = 0.000000e+00, ulps = 2, '
       'mode = #stablehlo.result_accuracy_mode<TOLERANCE>>}')


@pytest.mark.parametrize("shift,status", [(2, "pass"), (3, "fail")])
def test_result_accuracy_tolerance_decides(tmp_path, shift, status):
    # exp(1) = 2.718 = 1.36 * 2^1: 2 ULP are within |e| * 2 eps, 3 ULP are not; the
    # check's own ULP budget (10) would accept both
    expected = EXP.copy()
    expected[0] = up(EXP[0], shift)
    rec = run_text(tmp_path, exp_program(expected, TOL, max_ulp=10))
    assert rec.status == status, rec
    if status == "fail":
        assert "result_accuracy" in rec.message
        assert rec.verdict["checks"][0]["elements"] == 1


def test_result_accuracy_highest_asks_for_correct_rounding(tmp_path):
    highest = '{result_accuracy = #stablehlo.result_accuracy<mode = #stablehlo.result_accuracy_mode<HIGHEST>>}'
    assert run_text(tmp_path, exp_program(EXP, highest), "a.mlir").status == "pass"
    off = EXP.copy()
    off[2] = up(EXP[2], 1)
    rec = run_text(tmp_path, exp_program(off, highest, max_ulp=3), "b.mlir")
    assert rec.status == "fail" and rec.verdict["verdict"] == "golden wrong"


# --------------------------------------------------------------------------- #
# verdicts
# --------------------------------------------------------------------------- #


def test_planted_wrong_golden_is_golden_wrong(tmp_path):
    golden = EXP.copy()
    golden[2] = up(EXP[2], 7)
    rec = run_text(tmp_path, exp_program(golden))
    assert rec.status == "fail"
    v = rec.verdict
    assert v["verdict"] == "golden wrong"
    (c,) = v["checks"]
    assert c["golden_ulp"] == 7 and c["backend_ulp"] == 0 and c["reference"] == "mpmath"
    assert c["examples"][0]["index"] == [2] and c["examples"][0]["exact"] == float(EXP[2])
    assert "verdict: golden wrong" in rec.message


def test_golden_within_the_class_passes(tmp_path):
    golden = EXP.copy()
    golden[2] = up(EXP[2], 1)  # exp(10) = 22026.465: 1 ULP is 0.002, over the check's 1e-4
    rec = run_text(tmp_path, exp_program(golden))
    assert rec.status == "pass" and "accuracy classes" in rec.accuracy["note"]
    (c,) = rec.accuracy["checks"]
    assert c["golden_ulp"] == 1 and c["backend_ulp"] == 0 and c["verdict"] == "both within bounds"


def planted_exp_registry(n: int):
    base = load_all()
    orig = base.lookup("stablehlo.exponential")

    def planted(op, x):
        (r,) = orig(op, x)
        return (up(r, n) if r.dtype == np.float32 else r,)

    return base.with_overrides({"stablehlo.exponential": planted})


def test_planted_wrong_kernel_is_backend_wrong(tmp_path):
    text = exp_program(EXP)
    (mod,) = frontend.load_text(text, str(tmp_path / "t.mlir"))
    (func,) = mod.tests()
    backend = NumpyBackend(planted_exp_registry(3))
    r = Outcome.of(backend.run_test(mod, func, Options())).apply(new_result("t.mlir", "t.mlir::exp_test", "exp_test", 1))
    assert r.status == "fail"
    judged = judge(mod, func, Options(), r, backend)
    assert r.status == "fail" and r.verdict is None  # the result judged is left as it was
    rec = judged.to_json()
    assert rec["status"] == "fail"
    assert rec["verdict"]["verdict"] == "backend wrong"
    c = rec["verdict"]["checks"][0]
    assert c["backend_ulp"] == 3 and c["golden_ulp"] == 0


def test_one_ulp_kernel_error_within_the_class_passes(tmp_path):
    (mod,) = frontend.load_text(exp_program(EXP), str(tmp_path / "t.mlir"))
    (func,) = mod.tests()
    backend = NumpyBackend(planted_exp_registry(1))
    r = Outcome.of(backend.run_test(mod, func, Options())).apply(new_result("t.mlir", "t.mlir::exp_test", "exp_test", 1))
    assert r.status == "fail"  # by the check's absolute 1e-4 at exp(10)
    judged = judge(mod, func, Options(), r, backend)
    assert judged.status == "pass" and judged.message == "" and judged.accuracy["checks"]


def dot_program(golden: float, precision: str = "HIGHEST") -> str:
    return f"""func.func @dot_test() {{
  %a = stablehlo.constant dense<[[1.0e+08, 1.0, -1.0e+08]]> : tensor<1x3xf32>
  %b = stablehlo.constant dense<[1.0, 1.0, 1.0]> : tensor<3xf32>
  %r = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0], precision = [{precision}, {precision}] : (tensor<1x3xf32>, tensor<3xf32>) -> tensor<1xf32>
  check.expect_almost_eq_const %r, dense<[{golden!r}]> : tensor<1xf32>
  func.return
}}
"""


def test_dot_general_bound_grows_with_the_operands(tmp_path):
    # exact value 1; sum |a_i b_i| = 2e8 + 1, gamma_3 = 1.8e-7: bound 35.8 (+1 ULP of the result)
    assert run_text(tmp_path, dot_program(31.0), "near.mlir").status == "pass"
    rec = run_text(tmp_path, dot_program(100.0), "far.mlir")
    assert rec.status == "fail"
    c = rec.verdict["checks"][0]
    assert rec.verdict["verdict"] == "golden wrong" and c["accuracy"] == {
        "kind": "accumulate", "source": "default", "k": 3, "reduction": "sum", "precision": "HIGHEST",
        "allowed": ["f32"], "input_error": 0.0, "bound": "HIGHEST (f32)"}
    assert c["reference"] == "float64" and c["examples"][0]["exact"] == 1.0
    assert "(HIGHEST (f32), reference float64)" in rec.verdict["summary"]


def test_dot_general_bound_at_default_admits_bf16_operands(tmp_path):
    # DEFAULT (no profile) allows bf16 operands: input error (1 + 2^-7)^2 - 1 = 0.01568603515625 per
    # product, bound (0.01568603515625 + gamma_3) * (2e8 + 1) = 3137243 (+1 ULP of the result); the check
    # compares two values each of which may be off by it: 6274486 apart at most
    assert run_text(tmp_path, dot_program(6.2e6, "DEFAULT"), "near.mlir").status == "pass"
    rec = run_text(tmp_path, dot_program(6.3e6, "DEFAULT"), "far.mlir")
    assert rec.status == "fail" and rec.verdict["verdict"] == "golden wrong"
    assert rec.verdict["checks"][0]["accuracy"]["bound"] == "DEFAULT precision (bf16)"


def test_integer_failure_blames_the_golden(tmp_path):
    text = """func.func @int_test() {
  %a = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  %r = stablehlo.add %a, %a : tensor<2xi32>
  check.expect_eq_const %r, dense<[2, 5]> : tensor<2xi32>
  func.return
}
"""
    rec = run_text(tmp_path, text)
    assert rec.status == "fail" and rec.verdict["verdict"] == "golden wrong"
    assert rec.verdict["checks"][0]["reference"] == "exact"


def test_rng_is_spec_silent(tmp_path):
    rec = run_text(tmp_path, RNG)
    assert rec.status == "fail" and rec.verdict["verdict"] == "spec silent"


def test_profile_option_of_conform_run(tmp_path):
    golden = EXP.copy()
    golden[2] = up(EXP[2], 7)
    prog = tmp_path / "p.mlir"
    prog.write_text(exp_program(golden))
    prof = tmp_path / "loose.toml"
    prof.write_text('[ops."stablehlo.exponential"]\nf32 = 8\n')
    cmd = [sys.executable, "-m", "stablehlo_conform.cli", "run", str(prog), "--json", str(tmp_path / "r.json")]
    strict = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert strict.returncode == 1 and "verdict: golden wrong" in strict.stdout
    loose = subprocess.run(cmd + ["--accuracy-profile", str(prof)], capture_output=True, text=True, timeout=300)
    assert loose.returncode == 0, loose.stdout + loose.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text("ops = 3\n")
    usage = subprocess.run(cmd + ["--accuracy-profile", str(bad)], capture_output=True, text=True, timeout=300)
    assert usage.returncode == 2 and "accuracy profile" in usage.stderr


RNG = """func.func @rng_test() {
  %lo = stablehlo.constant dense<0.0> : tensor<f32>
  %hi = stablehlo.constant dense<1.0> : tensor<f32>
  %shape = stablehlo.constant dense<[4]> : tensor<1xi64>
  %r = stablehlo.rng %lo, %hi, %shape, distribution = UNIFORM : (tensor<f32>, tensor<f32>, tensor<1xi64>) -> tensor<4xf32>
  check.expect_eq_const %r, dense<[2.0, 2.0, 2.0, 2.0]> : tensor<4xf32>
  func.return
}
"""


def test_baseline_accepts_golden_wrong_with_evidence(tmp_path):
    golden = EXP.copy()
    golden[2] = up(EXP[2], 7)
    (tmp_path / "a_exp.mlir").write_text(exp_program(golden))
    (tmp_path / "b_rng.mlir").write_text(RNG)
    cli = [sys.executable, "-m", "stablehlo_conform.cli"]
    r = subprocess.run(cli + ["run", str(tmp_path), "--json", str(tmp_path / "r.json")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 1
    verdicts = {Path(x["id"]).name: x["verdict"]["verdict"] for x in json.loads((tmp_path / "r.json").read_text())["results"]}
    assert verdicts == {"a_exp.mlir::exp_test": "golden wrong", "b_rng.mlir::rng_test": "spec silent"}
    u = subprocess.run(cli + ["baseline", "update", str(tmp_path / "r.json"), "-o", str(tmp_path / "b.json"),
                              "--accept-golden-wrong"], capture_output=True, text=True, timeout=300)
    assert u.returncode == 0 and "left out" in u.stdout, u.stdout + u.stderr
    entries = json.loads((tmp_path / "b.json").read_text())["expected_failures"]
    ((tid, entry),) = entries.items()
    assert tid.endswith("a_exp.mlir::exp_test") and entry["reason"].startswith("golden wrong")
    assert entry["evidence"]["checks"][0]["golden_ulp"] == 7
    g = subprocess.run(cli + ["run", str(tmp_path), "--baseline", str(tmp_path / "b.json")],
                       capture_output=True, text=True, timeout=300)
    assert g.returncode == 1 and "KNOWN" in g.stdout and "REGRESSION" in g.stdout and "rng_test" in g.stdout


# --------------------------------------------------------------------------- #
# backends that disagree
# --------------------------------------------------------------------------- #

PROGRAM = """func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %e = stablehlo.exponential %x : tensor<3xf32>
  %r = stablehlo.add %e, %x : tensor<3xf32>
  func.return %r : tensor<3xf32>
}
"""


def test_diff_names_the_wrong_backend():
    from stablehlo_conform.harness.judge.diff import diff_program, format_report

    (mod,) = frontend.load_text(PROGRAM)
    report = diff_program(mod, "main", [NumpyBackend(), NumpyBackend(planted_exp_registry(6))], [X])
    assert report["status"] == "disagree"
    first = report["first_divergence"]
    assert first["op"] == "stablehlo.exponential" and first["accuracy"] == "ulp<=1"
    v = first["verdict"]
    assert v["verdict"] == "backend wrong" and v["wrong"] == ["numpy#2"] and v["reference"] == "mpmath"
    assert v["backends"] == {"numpy": {"within": True, "max_ulp_from_exact": 0},
                             "numpy#2": {"within": False, "max_ulp_from_exact": 6}}
    assert any(line.startswith("verdict: backend wrong (numpy#2)") for line in format_report(report))


def test_disagreeing_checked_values_are_judged(tmp_path):
    from stablehlo_conform.harness.judge.diff import test_values
    from stablehlo_conform.harness.judge.verdict import judge_backends

    (mod,) = frontend.load_text(exp_program(EXP))
    (func,) = mod.tests()
    values = {"numpy": test_values(NumpyBackend(), mod, func, Options()),
              "vendor": test_values(NumpyBackend(planted_exp_registry(2)), mod, func, Options())}
    v = judge_backends(mod, func, Options(), values)
    assert v["verdict"] == "backend wrong" and v["wrong"] == ["vendor"]
    assert v["backends"]["vendor"]["max_ulp_from_exact"] == 2


# --------------------------------------------------------------------------- #
# the official testdata
# --------------------------------------------------------------------------- #

TESTDATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "stablehlo-suite" / "testdata"


def suite_record(name: str, backend=None) -> dict:
    path = TESTDATA / f"{name}.mlir"
    if not path.exists():
        pytest.skip("../shared/stablehlo-suite is absent")
    (mod,) = frontend.load_file(path)
    (func,) = mod.tests()
    backend = backend or NumpyBackend()
    r = Outcome.of(backend.run_test(mod, func, Options())).apply(new_result(str(path), f"{path}::main", "main", 1))
    if r.status == "fail":
        r = judge(mod, func, Options(), r, backend)
    return r.to_json()


def test_planted_exp_kernel_on_the_official_testdata():
    rec = suite_record("exp_float32_20_20", NumpyBackend(planted_exp_registry(3)))
    assert rec["status"] == "fail" and rec["verdict"]["verdict"] == "backend wrong"
    c = rec["verdict"]["checks"][0]
    assert c["backend_ulp"] == 3 and c["reference"] == "mpmath"


def test_known_failure_pow_complex64_is_golden_wrong():
    rec = suite_record("pow_complex64_20_30_complex64_20_30")
    assert rec["status"] == "fail" and rec["verdict"]["verdict"] == "golden wrong"
    (c,) = rec["verdict"]["checks"]
    assert c["reference"] == "mpmath" and c["backend_ulp"] == 0 and c["golden_ulp"] == 41


@pytest.mark.parametrize("name,reference", [
    ("conv_general_dilated_float32_2_3_9_float32_12_1_3", "float64"),
    ("cos_complex64_20_20", "float64 program"),
    ("cosh_complex64_20_20_chlo", "mpmath"),
    ("cumprod_complex64_8_9", "float64"),
    ("triangular_solve_float32_2_8_8_float32_2_10_8", "float64"),
])
def test_known_failures_within_the_accuracy_classes(name, reference):
    rec = suite_record(name)
    assert rec["status"] == "pass", rec.get("verdict")
    assert all(c["reference"] == reference and c["verdict"] == "both within bounds"
               for c in rec["accuracy"]["checks"])


def test_verdict_in_junit_and_html(tmp_path):
    from stablehlo_conform.harness.reports.html import render_html
    from stablehlo_conform.harness.reports.junit import junit_tree

    golden = EXP.copy()
    golden[2] = up(EXP[2], 7)
    rec = run_text(tmp_path, exp_program(golden))
    doc = {"backend": "numpy", "results": [rec.to_json()]}
    tc = junit_tree([doc]).getroot().find(".//testcase")
    assert "verdict: golden wrong" in tc.find("failure").text
    assert "verdict: golden wrong" in render_html([doc])


def test_compare_disagreement_by_class(tmp_path):
    from stablehlo_conform.harness.judge.diff import compare_test
    from stablehlo_conform.harness import backends as B

    (mod,) = frontend.load_text(exp_program(EXP))
    (func,) = mod.tests()
    B._cache["planted-exp-2"] = NumpyBackend(planted_exp_registry(2))  # 2 ULP: within the 4-ULP budget
    try:
        out = compare_test(mod, func, ("numpy", "planted-exp-2"), Options())
    finally:
        B._cache.pop("planted-exp-2")
    assert out["disagreements"] and "planted-exp-2 outside the accuracy class" in out["disagreements"][0]
    assert out["compare_verdict"]["verdict"] == "backend wrong"


def test_profile_option_of_the_pytest_plugin(tmp_path):
    golden = EXP.copy()
    golden[2] = up(EXP[2], 7)
    (tmp_path / "p.mlir").write_text(exp_program(golden))
    (tmp_path / "loose.toml").write_text('[ops."stablehlo.exponential"]\nf32 = 8\n')
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "stablehlo_conform", "-q",
           str(tmp_path / "p.mlir")]
    strict = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert strict.returncode == 1 and "verdict: golden wrong" in strict.stdout, strict.stdout[-2000:]
    loose = subprocess.run(cmd + ["--conform-accuracy-profile", str(tmp_path / "loose.toml")],
                           capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert loose.returncode == 0, loose.stdout[-2000:]


def test_a_failure_that_is_no_value_check_says_so(tmp_path):
    rec = run_text(tmp_path, """func.func @t() {
  %a = arith.constant 5 : index
  %b = arith.constant 4 : index
  %lt = arith.cmpi slt, %a, %b : index
  cf.assert %lt, "five is not below four"
  func.return
}
""")
    assert rec.status == "fail" and rec.verdict["verdict"] == "no reference"


def test_profile_from_a_measured_accuracy_table(tmp_path):
    cli = [sys.executable, "-m", "stablehlo_conform.cli"]
    r = subprocess.run(cli + ["accuracy", "--op", "exponential", "--type", "f8E4M3FN", "-q",
                              "--json", str(tmp_path / "t.json")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    table = json.loads((tmp_path / "t.json").read_text())
    # the numpy kernel is correctly rounded on every f8E4M3FN value: max error 0.5 ULP, bound 0
    assert table["cells"][0]["max_ulp"] == 0.5
    script = Path(__file__).resolve().parents[1] / "scripts" / "accuracy_profile.py"
    s = subprocess.run([sys.executable, str(script), str(tmp_path / "t.json"), "-o", str(tmp_path / "p.json")],
                       capture_output=True, text=True, timeout=300)
    assert s.returncode == 0, s.stderr
    prof = C.Profile.load(tmp_path / "p.json")
    assert prof.ops == {"stablehlo.exponential": {"f8E4M3FN": 0}}
    # a cell measured 1.4 ULP from the exact value, without the recorded distance in steps, is at
    # most 1 ULP from the correctly rounded one; with it recorded, the recorded distance is the bound
    cell = dict(table["cells"][0], max_ulp=1.4, type="f32", correctly_rounded=200)
    del cell["max_steps"]
    doc, left = C.profile_from_table({"cells": [cell, dict(cell, type="bf16", max_ulp="inf"),
                                                dict(cell, type="f16", max_steps=2)]})
    assert doc["ops"] == {"stablehlo.exponential": {"f32": 1, "f16": 2}} and len(left) == 1
