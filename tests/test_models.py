"""Models judged as whole programs: recipes, the float64 shadow, the model
rule (hand-computed), and the zoo's small models on real backends, with
planted bugs that must be found and named."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from stablehlo_conform.frontend import load_text
from stablehlo_conform.harness import model as M
from stablehlo_conform.harness import recipe as R
from stablehlo_conform.harness.backends.numpy_backend import NumpyBackend
from stablehlo_conform.harness.shadow import NoShadow, shadow_module, wide_value

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
