"""conform diff: programs exported from JAX agree on numpy and XLA, and a
wrong kernel is localised to its op."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from stablehlo_conform import load
from stablehlo_conform.harness.judge import diff
from stablehlo_conform.harness.programs import inputs
from stablehlo_conform.harness.backends.numpy_backend import NumpyBackend
from stablehlo_conform.kernels.registry import load_all

jax = pytest.importorskip("jax")
jnp = jax.numpy
ROOT = Path(__file__).resolve().parents[1]
F32 = np.float32


def _export(f, *shapes):
    return jax.jit(f).lower(*[np.zeros(s, F32) for s in shapes]).as_text()


def mlp(x, w1, b1, w2):
    return jnp.tanh(jax.nn.relu(x @ w1 + b1) @ w2)


def cnn(x, k):
    y = jax.lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    y = jax.nn.relu(y)
    y = jax.lax.reduce_window(y, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    return y.mean(axis=(1, 2))


def attention(q, k, v):
    s = q @ k.T / np.sqrt(F32(q.shape[-1]))
    return jax.nn.softmax(s, axis=-1) @ v


def loop(x):
    return jax.lax.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, jnp.sin(c[1]) * 1.5 + c[1]), (0, x))[1]


PROGRAMS = {
    "mlp": (mlp, [(4, 8), (8, 16), (16,), (16, 3)]),
    "cnn": (cnn, [(1, 6, 6, 2), (3, 3, 2, 4)]),
    "attention": (attention, [(5, 8), (6, 8), (6, 4)]),
    "loop": (loop, [(3,)]),
}


@pytest.fixture(scope="module")
def programs():
    return {name: load(_export(f, *shapes))[0] for name, (f, shapes) in PROGRAMS.items()}


XLA = diff.diff_options(isolate=False)


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_jax_programs_agree_on_numpy_and_xla(programs, name):
    m = programs[name]
    f = diff.entry_of(m, None)
    args = inputs.random_inputs(f, seed=1)
    rep = diff.diff_program(m, f.name, ["numpy", "xla"], args, XLA)
    assert rep["status"] == "agree", diff.format_report(rep)
    assert rep["ops"] == [] and rep["first_divergence"] is None
    # the outputs match what JAX itself computes
    fn, _ = PROGRAMS[name]
    want = np.asarray(jax.jit(fn)(*args))
    got = diff.make_runners(["numpy"])[0].run(m, f.name, args, None)[0]
    assert diff.compare_values(got, want)["status"] == "ok"


def _bad_exp(op, x):
    return (np.asarray(np.exp(x * x.dtype.type(1.01)), dtype=x.dtype),)


def test_wrong_kernel_is_localised(programs):
    m = programs["attention"]
    f = diff.entry_of(m, None)
    args = inputs.random_inputs(f, seed=0)
    wrong = NumpyBackend(registry=load_all().with_overrides({"stablehlo.exponential": _bad_exp}))
    rep = diff.diff_program(m, f.name, [wrong, "xla"], args, XLA)
    assert rep["status"] == "disagree"
    first = rep["first_divergence"]
    assert first["op"] == "stablehlo.exponential" and first["status"] == "mismatch"
    assert first["max_ulp"] > 1000 and 1e-5 < first["max_abs"] < 0.1
    bad = [o["op"] for o in rep["ops"] if o["status"] == "mismatch"]
    assert bad == ["stablehlo.exponential"]
    assert any(o["op"] == "stablehlo.dot_general" and o["status"] == "ok" for o in rep["ops"])
    lines = diff.format_report(rep)
    assert any("stablehlo.exponential" in ln and "first divergence" in ln for ln in lines)


def test_localise_always_covers_loop_bodies(programs):
    m = programs["loop"]
    f = diff.entry_of(m, None)
    rep = diff.diff_program(m, f.name, ["numpy", "xla"], inputs.random_inputs(f, 0),
                            diff.diff_options(isolate=False, localise="always"))
    ops = [o["op"] for o in rep["ops"]]
    assert ops.count("stablehlo.sine") == 2  # two iterations per op are compared
    assert "stablehlo.while" in ops
    assert all(o["status"] in ("ok", "skipped") for o in rep["ops"])


def test_compare_values_tolerances():
    cv = diff.compare_values
    assert cv(np.array([1, 2], np.int32), np.array([1, 3], np.int32))["status"] == "mismatch"
    assert cv(np.array([np.nan, 1.0], F32), np.array([np.nan, 1.0], F32))["status"] == "ok"
    one = np.array([1.0], F32)
    assert cv(np.nextafter(one, F32(2)), one)["max_ulp"] == 1
    assert cv(one * F32(1.001), one)["status"] == "mismatch"
    # small elements of a large tensor: relative to the largest magnitude
    a = np.array([100.0, 1e-3], F32)
    b = np.array([100.0, 1e-3 + 2e-6], F32)
    assert cv(a, b)["status"] == "ok"
    assert cv(np.array([True]), np.array([False]))["status"] == "mismatch"


def test_one_op_text_builds_a_runnable_module(programs):
    from stablehlo_conform import frontend

    m = programs["mlp"]
    ops = [op for fn in m.funcs.values() for op in __import__("stablehlo_conform").program.walk_ops(fn.body)]
    texts = frontend.op_texts(m.text)
    i = next(i for i, op in enumerate(ops) if op.name == "stablehlo.dot_general")
    text = diff.one_op_text(ops[i], texts[i])
    one = load(text)[0]
    x, w = np.ones((4, 8), F32), np.full((8, 16), 0.5, F32)
    out = NumpyBackend().run_function(one, "main", [x, w])
    np.testing.assert_array_equal(out[0], np.full((4, 16), 4.0, F32))


def test_random_inputs_keep_indices_in_bounds():
    text = """
func.func @main(%x: tensor<5xf32>, %i: tensor<i32>) -> tensor<2xf32> {
  %0 = stablehlo.dynamic_slice %x, %i, sizes = [2] : (tensor<5xf32>, tensor<i32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}"""
    f = load(text)[0].funcs["main"]
    assert inputs.index_params(f) == {1}
    for seed in range(20):
        x, i = inputs.random_inputs(f, seed)
        assert x.dtype == F32 and x.shape == (5,) and 0 <= int(i) <= 3


def test_cli_diff_json(tmp_path, programs):
    path = tmp_path / "attention.mlir"
    path.write_text(programs["attention"].text)
    out = tmp_path / "report.json"
    r = subprocess.run([sys.executable, "-m", "stablehlo_conform.cli", "diff", str(path), "--backends",
                        "numpy,xla", "--seed", "3", "--json", str(out)], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "result: backends agree" in r.stdout
    rep = json.loads(out.read_text())
    assert rep["backends"] == ["numpy", "xla"] and rep["seed"] == 3
    assert [o["status"] for o in rep["outputs"]] == ["ok"]
