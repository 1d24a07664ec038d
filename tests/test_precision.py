"""What precision_config and algorithm allow a dot: accuracy classes, verdicts, diff and probe-precision.

The backends under test (``precision_backends``) multiply f32 dot / convolution operands in TF32:
``tf32-default`` at DEFAULT only (allowed), ``tf32-always`` at every level (HIGHEST is not allowed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from precision_backends import ENTRY_POINTS, Tf32Always, Tf32Default
from stablehlo_conform import frontend, load
from stablehlo_conform.harness import backends as B
from stablehlo_conform.harness.judge import diff
from stablehlo_conform.harness.programs import inputs
from stablehlo_conform.harness.records.result import Result
from stablehlo_conform.harness.suite.cases import Options, run_file
from stablehlo_conform.harness.campaigns.probe_precision import probe
from stablehlo_conform.oracle import classes as C
from stablehlo_conform.oracle import precision as P
from stablehlo_conform.harness.judge.verdict import judge_test
from stablehlo_conform.program import walk_ops

jax = pytest.importorskip("jax")
jnp = jax.numpy
F32 = np.float32
TESTS = Path(__file__).resolve().parent
U = 2.0 ** -24


def dot_op(precision: str = "", attrs: str = "", k: int = 2, ty: str = "f32"):
    pc = f", precision = [{precision}, {precision}]" if precision else ""
    lt, rt, ot = f"tensor<1x{k}x{ty}>", f"tensor<{k}x{ty}>", f"tensor<1x{ty}>"
    text = (f"func.func @main(%a: {lt}, %b: {rt}) -> {ot} {{\n"
            f"  %r = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0]{pc} : ({lt}, {rt}) -> {ot}\n"
            f"  func.return %r : {ot}\n}}\n")
    if attrs:
        text = (f"func.func @main(%a: {lt}, %b: {rt}) -> {ot} {{\n"
                f"  %r = \"stablehlo.dot_general\"(%a, %b) {{dot_dimension_numbers = #stablehlo.dot<"
                f"lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>, {attrs}}} : ({lt}, {rt}) -> {ot}\n"
                f"  func.return %r : {ot}\n}}\n")
    (mod,) = frontend.load_text(text)
    return next(op for op in walk_ops(mod.funcs["main"].body) if op.name == "stablehlo.dot_general")


def alg(ptype: str, n: int = 1) -> str:
    return (f"algorithm = #stablehlo.dot_algorithm<lhs_precision_type = {ptype}, rhs_precision_type = {ptype}, "
            f"accumulation_type = f32, lhs_component_count = 1, rhs_component_count = 1, "
            f"num_primitive_operations = {n}, allow_imprecise_accumulation = false>")


# --------------------------------------------------------------------------- #
# The bound, by hand
# --------------------------------------------------------------------------- #


def test_input_errors_by_hand():
    # one operand rounded to p bits (either way): 2^(1-p); a product of two: (1 + 2^(1-p))^2 - 1
    assert P.NAMED["bf16"].input_error() == 2.0 ** -6 + 2.0 ** -14
    assert P.NAMED["tf32"].input_error() == 2.0 ** -9 + 2.0 ** -20
    assert P.NAMED["f32"].input_error() == 0.0
    # bf16_3x: two components (each nearest: 2^-8 of what is left), so 2^-16 per operand; the
    # lo*lo product left out: 2^-16 (1 + 2^-8)^2
    assert P.NAMED["bf16_3x"].input_error() == pytest.approx(2.0 ** -15 + 2.0 ** -32 + 2.0 ** -16 * (1 + 2.0 ** -8) ** 2,
                                                             rel=1e-15)
    # operands already in the precision type lose nothing
    assert P.NAMED["tf32"].input_error(8, 8) == 0.0
    names = [n for n, _e in P.allowed("DEFAULT", "bf16", 24, 24)]
    assert names == ["f32", "bf16_6x", "tf32_3x", "bf16_3x", "tf32", "bf16"]
    assert [n for n, _e in P.allowed("HIGH", "bf16_3x", 24, 24)] == ["f32", "bf16_6x", "tf32_3x", "bf16_3x"]
    assert P.allowed("HIGHEST", "f32", 24, 24) == (("f32", 0.0),)


def test_cancelling_dot_is_judged_against_the_sum_of_magnitudes():
    # [1 + 2^-12, -1] . [1, 1]: exact 2^-12, sum |a_i b_i| = 2 + 2^-12. TF32 operands round 1 + 2^-12
    # to 1, giving 0: an error of 2^-12, about 10^9 ULP of the result, but 1.2e-4 of the magnitude.
    mag = np.array([2 + 2.0 ** -12])
    exact = np.array([2.0 ** -12], F32)
    tf32_result = np.array([0.0], F32)
    default, highest = C.class_of(dot_op("DEFAULT")), C.class_of(dot_op("HIGHEST"))
    assert default.k == highest.k == 2
    # HIGHEST: gamma_2 (2 + 2^-12) + one ULP of 2^-12 (2^-35) = 2.38e-7: TF32's 2^-12 exceeds it
    g2 = 2 * U / (1 - 2 * U)
    assert C.accumulation_bound(highest, exact, mag)[0] == pytest.approx(g2 * (2 + 2.0 ** -12) + 2.0 ** -35,
                                                                        rel=1e-12)
    assert C.fit(tf32_result, exact, highest, mag) is None
    assert highest.judgement(None) == "exceeds HIGHEST (f32)"
    # DEFAULT: bf16_3x allows (4.59e-5 + gamma_2) * 2.0002 = 9.2e-5 < 2^-12; tf32 (1.95e-3 + gamma_2) * 2.0002
    assert C.accumulation_bound(default, exact, mag, P.NAMED["bf16_3x"].input_error())[0] < 2.0 ** -12
    assert C.accumulation_bound(default, exact, mag, P.NAMED["tf32"].input_error())[0] == pytest.approx(
        (2.0 ** -9 + 2.0 ** -20 + g2) * (2 + 2.0 ** -12) + 2.0 ** -35, rel=1e-12)
    assert C.fit(tf32_result, exact, default, mag) == "tf32"
    assert default.judgement("tf32") == "within DEFAULT precision (tf32)"
    assert C.fit(exact, exact, highest, mag) == "f32"
    # a result off by more than bf16 allows: outside every algorithm DEFAULT may use
    assert C.fit(np.array([0.05], F32), exact, default, mag) is None
    assert default.judgement(None) == "exceeds every algorithm DEFAULT may use (bf16)"


def test_large_cancellation_bound_under_a_vendor_profile():
    # [1e8, 1, -1e8] . [1, 1, 1]: exact 1, sum |a_i b_i| = 2e8 + 1; DEFAULT declared tf32
    prof = C.Profile.from_dict({"precision": {"DEFAULT": "tf32", "HIGH": "bf16_3x", "HIGHEST": "f32"}})
    cls = C.class_of(dot_op("DEFAULT", k=3), prof)
    assert [n for n, _e in cls.algorithms] == ["f32", "bf16_6x", "tf32_3x", "bf16_3x", "tf32"]
    assert cls.source == "profile" and cls.bound_name() == "DEFAULT precision (tf32)"
    g3 = 3 * U / (1 - 3 * U)
    b = C.accumulation_bound(cls, np.array([1.0], F32), np.array([2e8 + 1]))[0]
    assert b == pytest.approx((2.0 ** -9 + 2.0 ** -20 + g3) * (2e8 + 1) + 2.0 ** -23, rel=1e-12)  # 390851.5
    assert 390851 < b < 390852
    with pytest.raises(C.ProfileError, match="LOW"):
        C.Profile.from_dict({"precision": {"LOW": "tf32"}})
    with pytest.raises(C.ProfileError, match="fp19"):
        C.Profile.from_dict({"precision": {"DEFAULT": "fp19"}})


def test_algorithm_attribute_means_exactly_that_algorithm():
    cls = C.class_of(dot_op(attrs=alg("tf32")))
    assert cls.precision == "algorithm" and cls.acc_u == U
    assert cls.algorithms == (("tf32 x tf32 -> f32", 2.0 ** -9 + 2.0 ** -20),)
    assert cls.judgement(None) == "exceeds algorithm tf32 x tf32 -> f32"
    six = C.class_of(dot_op(attrs=alg("bf16", 6)))  # bf16_6x: three bf16 parts, six products
    assert six.algorithms[0][1] == pytest.approx(P.NAMED["bf16_6x"].input_error(), rel=1e-15)
    # the levels govern f32 operands; bf16 operands are multiplied at their own precision
    assert C.class_of(dot_op("DEFAULT", ty="bf16")).algorithms == (("bf16", 0.0),)


def test_complex128_maximum_gets_a_verdict():
    text = """func.func @main() {
  %a = stablehlo.constant dense<[(1.0, 2.0), (3.0, -1.0)]> : tensor<2xcomplex<f64>>
  %b = stablehlo.constant dense<[(1.0, 3.0), (2.0, 5.0)]> : tensor<2xcomplex<f64>>
  %m = stablehlo.maximum %a, %b : tensor<2xcomplex<f64>>
  check.expect_eq_const %m, dense<[(1.0, 3.0), (2.0, 5.0)]> : tensor<2xcomplex<f64>>
  func.return
}"""
    (mod,) = frontend.load_text(text)
    out = judge_test(mod, mod.funcs["main"])
    # lexicographic: (3, -1) > (2, 5); the golden value says otherwise
    assert out["verdict"]["verdict"] == "golden wrong", out["verdict"]


# --------------------------------------------------------------------------- #
# Programs exported from JAX, on a TF32 backend
# --------------------------------------------------------------------------- #


def programs_at(level: str) -> dict[str, tuple]:
    prec = getattr(jax.lax.Precision, level)

    def matmul(a, b):
        return jnp.tanh(jnp.matmul(a, b, precision=prec))

    def attention(q, k, v):
        s = jnp.matmul(q, k.T, precision=prec) / np.sqrt(F32(q.shape[-1]))
        return jnp.matmul(jax.nn.softmax(s, axis=-1), v, precision=prec)

    def conv(x, k):
        y = jax.lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                         precision=prec)
        return jax.nn.relu(y).mean(axis=(1, 2))

    def rnn(x, w, u):
        def step(h, xt):
            h = jnp.tanh(jnp.matmul(xt, w, precision=prec) + jnp.matmul(h, u, precision=prec))
            return h, h

        return jax.lax.scan(step, jnp.zeros((x.shape[1], w.shape[1]), F32), x)[0]

    return {"matmul": (matmul, [(16, 64), (64, 8)]), "attention": (attention, [(8, 32), (12, 32), (12, 16)]),
            "conv": (conv, [(2, 8, 8, 4), (3, 3, 4, 8)]), "rnn": (rnn, [(5, 4, 8), (8, 16), (16, 16)])}


def export(level: str, name: str) -> str:
    f, shapes = programs_at(level)[name]
    text = jax.jit(f).lower(*[np.zeros(s, F32) for s in shapes]).as_text()
    assert f"precision = [{level}, {level}]" in text or f"precision {level}>" in text
    return text


OPTS = diff.diff_options(isolate=False)


@pytest.mark.parametrize("name", ["matmul", "attention", "conv", "rnn"])
def test_tf32_at_default_conforms_at_both_levels(name):
    for level in ("DEFAULT", "HIGHEST"):
        (m,) = load(export(level, name))
        f = diff.entry_of(m, None)
        rep = diff.diff_program(m, f.name, ["numpy", Tf32Default()], inputs.random_inputs(f, seed=1), OPTS)
        lines = diff.format_report(rep)
        assert rep["status"] == "agree", lines
        if level == "HIGHEST":  # the same kernels: equal bits
            assert rep["ops"] == [] and all(o["max_ulp"] == 0 for o in rep["outputs"])
            continue
        # the outputs differ beyond the f32 budget; every op is within its bound: one judgement
        assert all(o["status"] == "ok" and "no single op exceeds its bound" in o["note"] for o in rep["outputs"])
        assert rep["outputs"][0]["max_ulp"] > 4
        dots = [o for o in rep["ops"] if o["op"] in C.DOT_OPS and o["differs"]]  # (a zero state multiplies exactly)
        assert dots and all(o["status"] == "ok" for o in dots)
        assert all(o["judgement"].startswith("tf32-default within DEFAULT precision (") for o in dots)
        if name == "rnn":  # the loop cannot run alone (its body calls a function): judged by its body's ops
            (loop,) = [o for o in rep["ops"] if o["op"] == "stablehlo.while"]
            assert loop["status"] == "ok" and "ops of its body" in loop["judgement"]
        assert all(o["status"] in ("ok", "skipped") for o in rep["ops"])
        assert rep["verdict"].startswith(f"agree: accumulated over {len({(o['op'], o['loc']) for o in dots})} op")
        assert any("ok: accumulated over" in ln for ln in lines) and lines[-1].strip() == "result: backends agree"


@pytest.mark.parametrize("name", ["matmul", "attention", "conv", "rnn"])
def test_tf32_always_is_wrong_at_highest_only(name):
    (m,) = load(export("DEFAULT", name))
    f = diff.entry_of(m, None)
    args = inputs.random_inputs(f, seed=2)
    assert diff.diff_program(m, f.name, ["numpy", Tf32Always()], args, OPTS)["status"] == "agree"
    (m,) = load(export("HIGHEST", name))
    rep = diff.diff_program(m, f.name, ["numpy", Tf32Always()], args, OPTS)
    lines = diff.format_report(rep)
    assert rep["status"] == "disagree", lines
    first = rep["first_divergence"]
    assert first["op"] in C.DOT_OPS and first["status"] == "mismatch"
    assert first["verdict"]["verdict"] == "backend wrong" and first["verdict"]["wrong"] == ["tf32-always"]
    assert "tf32-always exceeds HIGHEST (f32)" in first["verdict"]["summary"]
    assert "numpy within HIGHEST (f32)" in first["verdict"]["summary"]
    assert rep["outputs"][0]["status"] == "mismatch" and "note" not in rep["outputs"][0]
    assert any("MISMATCH (tf32-always exceeds HIGHEST (f32))" in ln for ln in lines)


def test_xla_and_tf32_at_default_agree():
    (m,) = load(export("DEFAULT", "attention"))
    f = diff.entry_of(m, None)
    rep = diff.diff_program(m, f.name, ["xla", Tf32Default()], inputs.random_inputs(f, seed=3), OPTS)
    assert rep["status"] == "agree", diff.format_report(rep)


def dot_test(level: str) -> str:
    # [1 + 2^-12, -1] . [1, 1] = 2^-12 exactly; a TF32 backend gives 0 (outside the check's 1e-4)
    return f"""func.func @dot_test() {{
  %a = stablehlo.constant dense<[[1.000244140625, -1.0]]> : tensor<1x2xf32>
  %b = stablehlo.constant dense<[1.0, 1.0]> : tensor<2xf32>
  %r = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0], precision = [{level}, {level}] : (tensor<1x2xf32>, tensor<2xf32>) -> tensor<1xf32>
  check.expect_almost_eq_const %r, dense<[2.44140625e-04]> : tensor<1xf32>
  func.return
}}
"""


def run_on(tmp_path, text: str, backend) -> Result:
    p = tmp_path / "dot.mlir"
    p.write_text(text)
    B._cache[backend.name] = backend
    try:
        recs = [ev[1] for ev in run_file(str(p), Options(backend=backend.name)) if ev[0] == "result"]
    finally:
        B._cache.pop(backend.name)
    assert len(recs) == 1
    return recs[0]


def test_run_judges_self_checking_tests_by_the_allowed_precision(tmp_path):
    rec = run_on(tmp_path, dot_test("DEFAULT"), Tf32Default())
    assert rec.status == "pass", rec
    assert "passed within the ops' accuracy classes" in rec.accuracy["note"]
    rec = run_on(tmp_path, dot_test("HIGHEST"), Tf32Always())
    assert rec.status == "fail" and rec.verdict["verdict"] == "backend wrong"
    assert "backend exceeds HIGHEST (f32)" in rec.verdict["summary"]
    assert "(HIGHEST (f32), reference float64)" in rec.verdict["summary"]


# --------------------------------------------------------------------------- #
# probe-precision
# --------------------------------------------------------------------------- #


def test_probe_finds_tf32_at_default_only():
    rows = {r.what: r for r in probe(Tf32Default())}
    assert rows["DEFAULT"].observed == "tf32" and rows["DEFAULT"].rounding == "nearest"
    # TF32 rounding of two operands: at most (1 + 2^-11)^2 - 1
    assert 2.0 ** -12 < rows["DEFAULT"].max_error <= 2.0 ** -10 + 2.0 ** -22
    assert rows["HIGH"].observed == rows["HIGHEST"].observed == "f32"
    assert rows["algorithm tf32"].observed == "tf32" and rows["algorithm f32"].observed == "f32"
    assert all(r.accumulation_bits == 24 and r.subnormals == "kept" for r in rows.values() if r.observed)
    assert rows["algorithm bf16"].status == "other"  # computed in f32: not what was asked, not a failure
    assert all(r.status in ("ok", "other") for r in rows.values())
    # a vendor declaring f32 at DEFAULT is held to it
    strict = {r.what: r for r in probe(Tf32Default(), {"DEFAULT": "f32"}, algorithms=False)}
    assert strict["DEFAULT"].status == "EXCEEDS" and strict["HIGHEST"].status == "ok"


def test_probe_catches_a_silent_fallback():
    rows = {r.what: r for r in probe(Tf32Always())}
    assert rows["HIGHEST"].status == "EXCEEDS" and rows["HIGHEST"].observed == "tf32"
    assert rows["algorithm f32"].status == "FALLBACK"


def test_probe_toward_zero_and_narrow_accumulation():
    from stablehlo_conform.harness.backends.numpy_backend import NumpyBackend
    from stablehlo_conform.kernels.registry import load_all

    base = load_all()
    inner = base.lookup("stablehlo.dot_general")

    def truncating_bf16_sums(op, lhs, rhs):  # bf16 operands cut toward zero, sums kept to 12 bits
        y = inner(op, P.round_bits(lhs, 8, truncate=True), P.round_bits(rhs, 8, truncate=True))[0]
        return (P.round_bits(y, 12),)

    rows = {r.what: r for r in probe(NumpyBackend(base.with_overrides({"stablehlo.dot_general": truncating_bf16_sums})),
                                     algorithms=False)}
    assert rows["DEFAULT"].observed == "bf16" and rows["DEFAULT"].rounding == "toward zero"
    assert rows["DEFAULT"].accumulation_bits == 12
    assert rows["HIGHEST"].status == "EXCEEDS"


# --------------------------------------------------------------------------- #
# The command line, with the backends registered as plugins
# --------------------------------------------------------------------------- #


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    site = tmp_path_factory.mktemp("site")
    info = site / "precision_backends-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: precision-backends\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    path = [str(site), str(TESTS), str(TESTS.parent), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path)}


def conform(args, env, cwd):
    return subprocess.run([sys.executable, "-m", "stablehlo_conform.cli", *map(str, args)], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_cli_diff_and_probe(env, tmp_path):
    for level in ("DEFAULT", "HIGHEST"):
        (tmp_path / f"attention_{level}.mlir").write_text(export(level, "attention"))
    p = conform(["diff", "attention_DEFAULT.mlir", "--backends", "numpy,tf32-default"], env, tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "verdict: agree: accumulated over 2 ops; no single op exceeds its bound" in p.stdout
    p = conform(["diff", "attention_HIGHEST.mlir", "--backends", "numpy,tf32-always"], env, tmp_path)
    assert p.returncode == 1 and "exceeds HIGHEST (f32)" in p.stdout and "backends disagree" in p.stdout, p.stdout

    def levels(out: str) -> dict[str, str]:
        return {ln.split()[0]: ln.split()[1] for ln in out.splitlines() if ln.split()[:1] in (["DEFAULT"], ["HIGH"],
                                                                                              ["HIGHEST"])}

    for backend in ("numpy", "xla"):
        p = conform(["probe-precision", backend], env, tmp_path)
        assert p.returncode == 0, p.stdout + p.stderr
        assert levels(p.stdout) == {"DEFAULT": "f32", "HIGH": "f32", "HIGHEST": "f32"}, p.stdout
    p = conform(["probe-precision", "tf32-default"], env, tmp_path)
    assert p.returncode == 0 and levels(p.stdout) == {"DEFAULT": "tf32", "HIGH": "f32", "HIGHEST": "f32"}, p.stdout
    prof = tmp_path / "vendor.toml"
    prof.write_text('[precision]\nDEFAULT = "f32"\n')
    p = conform(["probe-precision", "tf32-default", "--accuracy-profile", prof, "--no-algorithms"], env, tmp_path)
    assert p.returncode == 1 and "EXCEEDS" in p.stdout, p.stdout
    # the same vendor's diff: TF32 at DEFAULT is now outside what it declared
    p = conform(["diff", "attention_DEFAULT.mlir", "--backends", "numpy,tf32-default", "--accuracy-profile", prof],
                env, tmp_path)
    assert p.returncode == 1 and "tf32-default exceeds DEFAULT precision (f32)" in p.stdout, p.stdout
    bad = tmp_path / "bad.toml"
    bad.write_text('[precision]\nDEFAULT = "fp19"\n')
    p = conform(["diff", "attention_DEFAULT.mlir", "--backends", "numpy,tf32-default", "--accuracy-profile", bad],
                env, tmp_path)
    assert p.returncode == 2 and "fp19" in p.stderr and "Traceback" not in p.stderr, p.stderr
    p = conform(["probe-precision", "no-such-backend"], env, tmp_path)
    assert p.returncode == 2 and "unknown backend" in p.stderr and "Traceback" not in p.stderr


# --------------------------------------------------------------------------- #
# result_accuracy, the same way
# --------------------------------------------------------------------------- #


def exp_with(attr: str) -> str:
    return f"""func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {{
  %r = "stablehlo.exponential"(%x) {{result_accuracy = #stablehlo.result_accuracy<{attr}>}} : (tensor<8xf32>) -> tensor<8xf32>
  func.return %r : tensor<8xf32>
}}
"""


def exp_off_by(n: int):
    from stablehlo_conform.harness.backends.numpy_backend import NumpyBackend
    from stablehlo_conform.kernels.registry import load_all

    def planted(op, x):
        y = np.exp(x.astype(np.float64)).astype(x.dtype)
        for _ in range(n):
            y = np.nextafter(y, np.float32(np.inf))
        return (y,)

    b = NumpyBackend(load_all().with_overrides({"stablehlo.exponential": planted}))
    b.name = f"exp+{n}"
    return b


@pytest.mark.parametrize("attr, off, status, judgement", [
    ("atol = 0.0, rtol = 0.0, ulps = 4, mode = #stablehlo.result_accuracy_mode<TOLERANCE>", 3, "agree", None),
    ("atol = 0.0, rtol = 0.0, ulps = 2, mode = #stablehlo.result_accuracy_mode<TOLERANCE>", 3, "disagree",
     "exp+3 exceeds result_accuracy TOLERANCE (atol=0, rtol=0, ulps=2)"),
    ("mode = #stablehlo.result_accuracy_mode<HIGHEST>", 1, "disagree",
     "exp+1 exceeds result_accuracy HIGHEST (correctly rounded)"),
])
def test_diff_holds_ops_to_their_result_accuracy(attr, off, status, judgement):
    # 1 and 3 ULP are within the f32 budget of 4: the outputs alone would agree
    (m,) = load(exp_with(attr))
    x = np.linspace(-3, 3, 8).astype(F32)
    rep = diff.diff_program(m, "main", ["numpy", exp_off_by(off)], [x], OPTS)
    assert rep["outputs"][0]["max_ulp"] <= 4
    assert rep["status"] == status, diff.format_report(rep)
    if judgement:
        assert judgement in rep["first_divergence"]["verdict"]["summary"]
        assert judgement in rep["verdict"]


def test_no_agreement_when_no_op_run_alone_explains_the_difference():
    # a backend whose loops go wrong as a whole; the loop calls a function so it cannot run alone,
    # and the ops of its body run alone agree: the difference is unexplained, the backends disagree
    from stablehlo_conform.harness.backends.numpy_backend import NumpyBackend
    from stablehlo_conform.kernels.registry import load_all

    base = load_all()

    def while_(op, *args):
        out = base.lookup("stablehlo.while")(op, *args)
        return tuple(o * o.dtype.type(1.001) if o.dtype == np.float32 else o for o in out)

    b = NumpyBackend(base.with_overrides({"stablehlo.while": while_}))
    b.name = "bad-loop"
    (m,) = load(export("DEFAULT", "rnn"))
    f = diff.entry_of(m, None)
    rep = diff.diff_program(m, f.name, ["numpy", b], inputs.random_inputs(f, seed=4), OPTS)
    assert rep["status"] == "disagree", diff.format_report(rep)
    assert rep["verdict"] == "disagree: no op run alone exceeds its bound, but stablehlo.while could not run alone"


def test_a_chain_of_ops_through_a_default_dot_allows_its_input_error():
    exp = C.AccuracyClass(C.ULP, 1)
    highest = C.chain_class([C.class_of(dot_op("HIGHEST")), exp])
    default = C.chain_class([C.class_of(dot_op("DEFAULT")), exp])
    assert highest.ulps == 2 + 1  # K ULP for the dot, 1 for exp
    assert default.ulps == 2 + 1 + (2.0 ** -6 + 2.0 ** -14) * 2.0 ** 23  # and bf16's input error, in ULP of f32


def test_fuzz_judges_differing_outputs_op_by_op(env, monkeypatch):
    # program 215 of seed 0 is an f32 convolution: TF32 at DEFAULT differs beyond the budget, within the bound
    from stablehlo_conform.harness.campaigns.fuzz import run_campaign
    from stablehlo_conform.harness.campaigns.fuzzgen import generate

    assert generate(0, 215).ops == ["stablehlo.convolution"] and generate(0, 215).element_types == ["f32"]
    monkeypatch.setenv("PYTHONPATH", env["PYTHONPATH"])  # the isolated children find the plugin backends
    doc = run_campaign(0, 216, ["numpy", "tf32-default"], None, shard=None, reduce=False)
    rec = doc["results"][215]
    assert rec["status"] == "pass", rec
    assert "verdict: agree: accumulated over 1 op; no single op exceeds its bound" in rec["message"]
    assert "within DEFAULT precision (tf32)" in rec["message"]


def test_ragged_dot_and_dot_follow_their_precision():
    ragged = """func.func @main(%a: tensor<5x4xf32>, %b: tensor<2x4x3xf32>, %g: tensor<2xi64>) -> tensor<5x3xf32> {
  %r = "chlo.ragged_dot"(%a, %b, %g) {
    ragged_dot_dimension_numbers = #chlo.ragged_dot<
      lhs_batching_dimensions = [], rhs_batching_dimensions = [],
      lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1],
      lhs_ragged_dimensions = [0], rhs_group_dimensions = [0]>,
    precision_config = [#chlo<precision HIGHEST>, #chlo<precision HIGHEST>]
  } : (tensor<5x4xf32>, tensor<2x4x3xf32>, tensor<2xi64>) -> tensor<5x3xf32>
  func.return %r : tensor<5x3xf32>
}"""
    (mod,) = frontend.load_text(ragged)
    (op,) = [o for o in walk_ops(mod.funcs["main"].body) if o.name == "chlo.ragged_dot"]
    cls = C.class_of(op)
    assert (cls.kind, cls.k, cls.precision, cls.algorithms) == (C.ACCUMULATE, 4, "HIGHEST", (("f32", 0.0),))
    dot = """func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %0 = "stablehlo.dot"(%a, %b) {precision_config = [#stablehlo<precision HIGH>, #stablehlo<precision HIGHEST>]} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}"""
    (mod,) = frontend.load_text(dot)
    (op,) = [o for o in walk_ops(mod.funcs["main"].body) if o.name == "stablehlo.dot"]
    cls = C.class_of(op)  # the less accurate of the two operands' levels
    assert (cls.k, cls.precision, cls.bound_name()) == (3, "HIGH", "HIGH precision (bf16_3x)")


def test_reduce_keeps_only_what_the_precision_does_not_allow(env, tmp_path):
    """``conform reduce`` judges a candidate as ``diff`` does: a TF32 dot at
    DEFAULT is no disagreement to shrink (exit 1, the property does not hold);
    TF32 at HIGHEST is, and the reduced program keeps a dot_general."""
    for level in ("DEFAULT", "HIGHEST"):
        (tmp_path / f"attention_{level}.mlir").write_text(export(level, "attention"))
    p = conform(["reduce", "attention_DEFAULT.mlir", "--backends", "numpy,tf32-default", "-o", "r1",
                 "--budget", "60"], env, tmp_path)
    assert p.returncode == 1 and "the property does not hold" in p.stdout, p.stdout + p.stderr
    p = conform(["reduce", "attention_HIGHEST.mlir", "--backends", "numpy,tf32-always", "-o", "r2",
                 "--budget", "60"], env, tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "stablehlo.dot_general" in (tmp_path / "r2" / "program.mlir").read_text()
