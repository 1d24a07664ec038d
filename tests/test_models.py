"""Models judged as whole programs: recipes, the float64 shadow, the model
rule (hand-computed), and the zoo's small models on real backends, with
planted bugs that must be found and named."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from stablehlo_conform import load
from stablehlo_conform.frontend import load_text
from stablehlo_conform.harness.judge import model as M
from stablehlo_conform.harness.records.options import RunOptions
from stablehlo_conform.oracle import classes as C
from stablehlo_conform.harness.programs import recipe as R
from stablehlo_conform.harness.backends.numpy_backend import NumpyBackend
from stablehlo_conform.harness.programs.shadow import NoShadow, shadow_module, wide_value
from stablehlo_conform.program import walk_ops
from planted_models import PlantedConv, PlantedExp

ROOT = Path(__file__).resolve().parents[1]
ZOO = ROOT / "testsuite" / "models"
CONFORM = [sys.executable, "-m", "stablehlo_conform.cli"]


def _recipe(tmp: Path, args: list[dict], name: str = "m") -> Path:
    p = tmp / f"{name}.recipe.json"
    p.write_text(json.dumps({"format": R.FORMAT, "name": name, "program": f"{name}.mlir", "seed": 0, "args": args}))
    return p


# --------------------------------------------------------------------------- recipes


def test_recipe_builds_each_distribution_in_its_type(tmp_path):
    p = _recipe(tmp_path, [
        {"name": "w", "shape": [256, 64], "dtype": "f32", "dist": "normal", "mean": 1.0, "std": 0.5},
        {"name": "x", "shape": [4000], "dtype": "bf16", "dist": "uniform", "low": 2.0, "high": 3.0},
        {"name": "ids", "shape": [3000], "dtype": "i32", "dist": "randint", "low": 5, "high": 9},
        {"name": "mask", "shape": [2, 3], "dtype": "i1", "dist": "const", "value": 1},
        {"name": "q", "shape": [1000], "dtype": "i4", "dist": "randint", "low": -8, "high": 8},
        {"name": "f8", "shape": [1000], "dtype": "f8E4M3FN", "dist": "normal", "mean": 0, "std": 2},
    ])
    r = R.read_recipe(p)
    w, x, ids, mask, q, f8 = R.build_inputs(r)
    assert w.dtype == np.float32 and abs(w.mean() - 1.0) < 0.02 and abs(w.std() - 0.5) < 0.02
    assert x.dtype == ml_dtypes.bfloat16 and 2.0 <= float(x.astype(np.float32).min())
    assert float(x.astype(np.float32).max()) <= 3.0
    assert ids.dtype == np.int32 and set(np.unique(ids)) == {5, 6, 7, 8}
    assert mask.dtype == np.bool_ and mask.all() and mask.shape == (2, 3)
    assert q.dtype == ml_dtypes.int4 and q.astype(np.int8).min() == -8 and q.astype(np.int8).max() == 7
    assert f8.dtype == ml_dtypes.float8_e4m3fn and np.isfinite(f8.astype(np.float32)).all()
    # the same recipe and seed give the same arrays; each argument has its own stream
    again = R.build_inputs(r)
    assert all(np.array_equal(a.view(np.uint8), b.view(np.uint8)) for a, b in zip([w, x, ids], again))
    other = R.build_inputs(r, seed=1)
    assert not np.array_equal(w, other[0])
    r2 = R.read_recipe(_recipe(tmp_path, [{"name": "x", "shape": [4000], "dtype": "bf16", "dist": "uniform",
                                           "low": 2.0, "high": 3.0}], "n"))
    # the same distribution at another position draws other values
    assert not np.array_equal(R.build_inputs(r2)[0].view(np.uint16), x.view(np.uint16))


@pytest.mark.parametrize("arg, words", [
    ({"shape": [2], "dtype": "f32", "dist": "gamma"}, "unknown distribution 'gamma'"),
    ({"shape": [2], "dtype": "f32", "dist": "normal", "mean": 0}, "KeyError"),
    ({"shape": [2], "dtype": "i32", "dist": "randint", "low": 3, "high": 3}, "empty integer range"),
    ({"shape": [2], "dtype": "f33", "dist": "const", "value": 0}, "argument 0"),
    ({"shape": [-1], "dtype": "f32", "dist": "const", "value": 0}, "negative dimension"),
])
def test_bad_recipes_are_named(tmp_path, arg, words):
    p = _recipe(tmp_path, [arg])
    with pytest.raises(R.RecipeError) as e:
        R.read_recipe(p)
    assert str(p) in str(e.value) and words in str(e.value)


def test_recipe_must_fit_the_program(tmp_path):
    m = load_text("func.func @main(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {\n  return %a : tensor<2x3xf32>\n}")[0]
    r = R.read_recipe(_recipe(tmp_path, [{"shape": [3, 2], "dtype": "f32", "dist": "const", "value": 1}]))
    with pytest.raises(R.RecipeError, match=r"f32\[3, 2\], the program's parameter is tensor<2x3xf32>"):
        R.check_fits(r, m.funcs["main"].param_types)


# --------------------------------------------------------------------------- the float64 shadow

BF16_PROGRAM = """
func.func @main(%a: tensor<3xbf16>, %b: tensor<3xf32>) -> (tensor<bf16>, tensor<3xbf16>) {
  %c = stablehlo.constant dense<0.1> : tensor<3xbf16>
  %bb = stablehlo.convert %b : (tensor<3xf32>) -> tensor<3xbf16>
  %s = stablehlo.add %a, %bb : tensor<3xbf16>
  %t = stablehlo.add %s, %c : tensor<3xbf16>
  %z = stablehlo.constant dense<0.0> : tensor<bf16>
  %r = stablehlo.reduce(%t init: %z) applies stablehlo.add across dimensions = [0]
       : (tensor<3xbf16>, tensor<bf16>) -> tensor<bf16>
  return %r, %t : tensor<bf16>, tensor<3xbf16>
}
"""


def test_shadow_computes_the_program_in_float64():
    m = load_text(BF16_PROGRAM)[0]
    a = np.array([256, 1, -3], ml_dtypes.bfloat16)
    b = np.array([1, 2**-10, 0.5], np.float32)
    o = NumpyBackend().run_function(m, "main", [a, b])
    w = shadow_module(m)
    assert [str(t) for t in w.funcs["main"].param_types] == ["tensor<3xf64>", "tensor<3xf64>"]
    s = NumpyBackend().run_function(w, "main", [wide_value(a), wide_value(b)])
    c = float(ml_dtypes.bfloat16(0.1))  # the constant as the program wrote it: 0.10009765625
    # bf16: 256 + 1 rounds to 256 (ties to even), 2**-10 is lost beside 1; f64 keeps them
    assert s[1].dtype == np.float64
    assert s[1].tolist() == [257 + c, 1 + 2**-10 + c, -2.5 + c]
    assert o[1].astype(np.float64).tolist() == [256.0, float(ml_dtypes.bfloat16(1 + c)), float(ml_dtypes.bfloat16(-2.5 + c))]
    assert s[0] == sum(s[1].tolist())


def test_shadow_refuses_ops_that_read_float_bits():
    m = load_text("func.func @main(%a: tensor<2xf32>) -> tensor<2xi32> {\n"
                  "  %0 = stablehlo.bitcast_convert %a : (tensor<2xf32>) -> tensor<2xi32>\n"
                  "  return %0 : tensor<2xi32>\n}")[0]
    with pytest.raises(NoShadow, match="bitcast_convert at .* reads the bits of a float"):
        shadow_module(m)


# --------------------------------------------------------------------------- the model rule


def test_model_rule_hand_computed():
    s = np.array([3.0, 4.0])  # ||s|| = 5
    o = np.array([3.0, 4.5], np.float32)  # e_O = 0.5 / 5 = 0.1
    u = 2.0**-24
    (e,) = M.output_errors([np.array([3.0, 5.0], np.float32)], [o], [s], ["tensor<2xf32>"])
    assert e.oracle == pytest.approx(0.1) and e.backend == pytest.approx(0.2)
    assert e.bound == pytest.approx(3 * 0.1 + u) and e.within
    (e,) = M.output_errors([np.array([3.0, 6.0], np.float32)], [o], [s], ["tensor<2xf32>"])
    assert e.backend == pytest.approx(0.4) and not e.within
    (e,) = M.output_errors([np.array([3.0, np.nan], np.float32)], [o], [s], ["tensor<2xf32>"])
    assert e.backend == float("inf") and not e.within
    # an oracle that is exact leaves one rounding of the output type
    (e,) = M.output_errors([np.float32([3, 4 + 4 * 2**-23])], [np.float32([3, 4])], [s], ["tensor<2xf32>"])
    assert e.oracle == 0 and e.bound == u and e.backend == pytest.approx(4 * 2**-23 / 5) and not e.within
    # integers are exact
    (e,) = M.output_errors([np.array([1, 2])], [np.array([1, 3])], [np.array([1, 3])], ["tensor<2xi64>"])
    assert e.exact and not e.within


def test_degenerate_references_are_errors_of_the_model():
    assert "2 of 3 values not finite" in M.reference_problem([np.float32([1, np.nan, np.inf])], ["t"])
    assert "is constant (0 everywhere)" in M.reference_problem([np.zeros((2, 2), np.float32)], ["t"])
    assert M.reference_problem([np.float32([1, 2]), np.zeros(1, np.float32)], ["t", "u"]) is None


# --------------------------------------------------------------------------- the zoo's small models

SMALL = ("mobilenet_v1", "llama_f32", "dlrm_small")  # a CNN, a decoder LLM, a recommender
needs_zoo = pytest.mark.skipif(not all((ZOO / f"{n}.mlirbc").is_file() for n in SMALL), reason="zoo not built")


def _zoo(name: str):
    rec = R.read_recipe(ZOO / f"{name}.recipe.json")
    return load(str(rec.program_path))[0], rec


def _uses(module, op: str) -> bool:
    return any(o.name == op for f in module.funcs.values() for o in walk_ops(f.body))


@needs_zoo
@pytest.mark.parametrize("backend", [PlantedExp, PlantedConv])
def test_a_planted_bug_fails_exactly_the_models_that_use_its_op(backend):
    b = backend()
    op = "stablehlo.exponential" if backend is PlantedExp else "stablehlo.convolution"
    used = {}
    for name in SMALL:
        mod, rec = _zoo(name)
        used[name] = _uses(mod, op)
        v = M.run_model(mod, rec, b)
        if used[name]:
            assert v.outcome == "op" and not v.ok, (name, v.summary())
            assert v.first_op["op"] == op and v.first_op["status"] == "mismatch"
            # placed in the program, and by the framework's op path and the Python line that built it
            assert v.first_op["loc"].startswith(f"{rec.program_path} (jit(fn)/") and op in v.summary()
            assert ".py:" in v.first_op["loc"] and v.first_op["loc"] in v.summary()
            assert v.worst.backend > 100 * v.worst.bound
        else:
            assert v.outcome == "within" and v.ok, (name, v.summary())
            assert v.worst.backend == v.worst.oracle  # the planted op never ran: the oracle's own values
    assert any(used.values()) and not all(used.values())  # the set tells the planted bug's models apart


@needs_zoo
def test_zoo_models_pass_on_xla_with_metric_and_bound(tmp_path):
    pytest.importorskip("jax")
    out = tmp_path / "r.json"
    p = subprocess.run(CONFORM + ["run", *[str(ZOO / f"{n}.mlirbc") for n in SMALL], "--backend", "xla",
                                  "--json", str(out)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert p.returncode == 0, p.stdout + p.stderr
    recs = json.loads(out.read_text())["results"]
    assert [r["status"] for r in recs] == ["pass"] * len(SMALL)
    for r in recs:
        assert r["kind"] == "model" and r["family"] == "model" and r["backend"] == "xla"
        m = r["model"]
        assert m["metric"] == M.METRIC and m["outcome"] == "within" and m["factor"] == M.FACTOR
        for o in m["outputs"]:
            assert 0 < o["oracle"] < 1e-5 and o["backend"] <= o["bound"]
            assert o["bound"] == pytest.approx(M.FACTOR * o["oracle"] + 2.0**-24)
        assert "rel-L2 to fp64" in r["message"] and "oracle's" in r["message"] and "bound" in r["message"]


def _planted_env(tmp: Path) -> dict:
    """An environment in which ``planted-exp`` and ``planted-conv`` are installed backends."""
    import os

    site = tmp / "site"
    info = site / "conform_planted-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: conform-planted\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("[stablehlo_conform.backends]\nplanted-exp = planted_models:PlantedExp\n"
                                           "planted-conv = planted_models:PlantedConv\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(ROOT / "tests"), env.get("PYTHONPATH", "")])
    return env


@needs_zoo
def test_conform_run_names_the_planted_op_and_diff_agrees_with_run(tmp_path):
    env = _planted_env(tmp_path)
    out = tmp_path / "r.json"
    files = [str(ZOO / f"{n}.mlirbc") for n in SMALL]
    p = subprocess.run(CONFORM + ["run", *files, "--backend", "planted-exp", "--json", str(out), "-j", "2"],
                       capture_output=True, text=True, timeout=600, cwd=ROOT, env=env)
    assert p.returncode == 1, p.stdout + p.stderr
    by = {Path(r["file"]).stem: r for r in json.loads(out.read_text())["results"]}
    assert by["llama_f32"]["status"] == "fail" and by["llama_f32"]["model"]["first_op"]["op"] == "stablehlo.exponential"
    assert "first op outside its bound: stablehlo.exponential at " in by["llama_f32"]["message"]
    assert by["mobilenet_v1"]["status"] == "pass" and by["dlrm_small"]["status"] == "pass"
    # conform diff of the same model and backends gives the same verdict, naming the same op
    d = subprocess.run(CONFORM + ["diff", files[1], "--backends", "numpy,planted-exp", "--json", str(tmp_path / "d.json")],
                       capture_output=True, text=True, timeout=600, cwd=ROOT, env=env)
    assert d.returncode == 1 and "result: backends disagree" in d.stdout, d.stdout + d.stderr
    rep = json.loads((tmp_path / "d.json").read_text())
    assert rep["first_divergence"]["op"] == "stablehlo.exponential"
    assert rep["first_divergence"]["loc"] == by["llama_f32"]["model"]["first_op"]["loc"]
    d = subprocess.run(CONFORM + ["diff", files[0], "--backends", "numpy,planted-exp"],
                       capture_output=True, text=True, timeout=600, cwd=ROOT, env=env)
    assert d.returncode == 0 and "result: backends agree" in d.stdout, d.stdout + d.stderr


@needs_zoo
def test_a_degenerate_model_is_an_error_in_words(tmp_path):
    """The recipe of a model whose every weight is zero: its output is
    constant, and the run says so instead of passing."""
    src = ZOO / "dlrm_small.mlirbc"
    (tmp_path / "dead.mlirbc").write_bytes(src.read_bytes())
    rec = json.loads((ZOO / "dlrm_small.recipe.json").read_text())
    for a in rec["args"]:
        if a["dtype"].startswith(("f", "bf")):
            a.update(dist="const", value=0.0)
    rec["program"] = "dead.mlirbc"
    (tmp_path / "dead.recipe.json").write_text(json.dumps(rec))
    out = tmp_path / "r.json"
    p = subprocess.run(CONFORM + ["run", str(tmp_path / "dead.mlirbc"), "--json", str(out)],
                       capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert p.returncode == 1
    (r,) = json.loads(out.read_text())["results"]
    assert r["status"] == "error" and "model error: reference output #0" in r["message"]
    assert "is constant" in r["message"]


@needs_zoo
def test_tf32_under_default_precision_is_accumulated_not_wrong():
    """A GPU-style backend that multiplies f32 convolution operands in TF32
    where ``precision_config`` is DEFAULT (as the spec allows) is far outside
    the model's bound, and every op is within its own: the model passes as
    ``accumulated``."""
    from precision_backends import Tf32Default

    mod, rec = _zoo("mobilenet_v1")
    v = M.run_model(mod, rec, Tf32Default())
    assert v.outcome == "accumulated" and v.ok and v.first_op is None
    assert v.worst.backend > 100 * v.worst.bound
    assert v.summary().startswith("accumulated: no single op exceeds its bound")


def test_a_runs_accuracy_profile_reaches_the_per_op_judgement(tmp_path):
    """The per-op runs of a model judge ops by the accuracy profile the run names, as diff does."""
    prof = tmp_path / "p.json"
    prof.write_text(json.dumps({"ops": {"stablehlo.exponential": {"f32": 7}}}))
    run = RunOptions(timeout=5.0, max_ops=3, accuracy_profile=C.Profile.load(prof))
    local = M.localising_options(run)
    assert local.timeout == 5.0 and local.max_ops >= 10**6
    assert local.accuracy_profile.lookup("stablehlo.exponential", "f32") == 7
    assert run.max_ops == 3  # the run's own options are left as they were
    assert M.localising_options(None).accuracy_profile is None
