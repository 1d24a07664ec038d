"""conform eval: JAX-exported programs on .npz inputs, outputs checked
against XLA; input validation; profiles; lossless .npz for every dtype."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from stablehlo_conform import evaluate, frontend
from stablehlo_conform.harness.programs.inputs import load_npz, save_npz

jax = pytest.importorskip("jax")
jnp = jax.numpy
ROOT = Path(__file__).resolve().parents[1]
F32 = np.float32


def conform(*args):
    return subprocess.run([sys.executable, "-m", "stablehlo_conform.cli", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def mlp(x, w1, b1, w2):
    return jax.nn.softmax(jax.nn.relu(x @ w1 + b1) @ w2, axis=-1)


def fori(x):
    return jax.lax.fori_loop(0, 6, lambda i, v: v * 0.5 + jnp.cos(v) * i, x)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("eval")
    rng = np.random.default_rng(0)
    shapes = [(64, 256), (256, 256), (256,), (256, 10)]
    mlp_args = [(rng.standard_normal(s) / np.sqrt(s[0])).astype(F32) for s in shapes]
    (d / "mlp.mlir").write_text(jax.jit(mlp).lower(*mlp_args).as_text())
    save_npz(d / "mlp_in.npz", {f"arg{i}": a for i, a in enumerate(mlp_args)})
    x = rng.standard_normal((5,)).astype(F32)
    (d / "fori.mlir").write_text(jax.jit(fori).lower(x).as_text())
    np.savez(d / "fori_in.npz", x)  # NumPy's own naming (arr_0)
    return d, mlp_args, x


def test_eval_mlp_matches_xla(files):
    d, args, _ = files
    r = conform("eval", d / "mlp.mlir", "--inputs", d / "mlp_in.npz", "-o", d / "mlp_out.npz")
    assert r.returncode == 0, r.stderr
    out = load_npz(d / "mlp_out.npz")
    assert list(out) == ["out0"]
    want = np.asarray(jax.jit(mlp)(*args))
    np.testing.assert_allclose(out["out0"], want, rtol=1e-5, atol=1e-6)
    assert out["out0"].dtype == F32 and out["out0"].shape == (64, 10)


def test_eval_fori_loop_matches_xla_on_numpy_and_xla_backends(files):
    d, _, x = files
    want = np.asarray(jax.jit(fori)(x))
    for backend in ("numpy", "xla"):
        r = conform("eval", d / "fori.mlir", "--inputs", d / "fori_in.npz", "--backend", backend,
                    "-o", d / f"fori_{backend}.npz", "--print")
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith("out0: tensor<5xf32> =")
        np.testing.assert_allclose(load_npz(d / f"fori_{backend}.npz")["out0"], want, rtol=1e-5, atol=1e-6)


def test_profile_lists_every_op_with_its_calls_by_time(files):
    d, _, _ = files
    r = conform("eval", d / "mlp.mlir", "--inputs", d / "mlp_in.npz", "--profile",
                "--profile-json", d / "prof.json", "-o", d / "unused.npz")
    assert r.returncode == 0, r.stderr
    rows = [ln.split() for ln in r.stdout.split("share\n", 1)[1].splitlines() if ln.strip()]
    prof = json.loads((d / "prof.json").read_text())
    assert prof["ops"]["stablehlo.dot_general"]["count"] == 2
    # the table is the JSON's ops, slowest first (wall times themselves depend on the machine's load)
    table = {row[0]: int(row[1]) for row in rows}
    assert "stablehlo.dot_general" in table and table["stablehlo.dot_general"] == 2
    assert all(table[k] == prof["ops"][k]["count"] for k in table)
    ms = [float(row[2]) for row in rows]
    assert ms == sorted(ms, reverse=True) and all(v["seconds"] > 0 for v in prof["ops"].values())


def test_wrong_inputs_name_the_argument(files, tmp_path):
    d, args, _ = files
    bad = {f"arg{i}": a for i, a in enumerate(args)}
    bad["arg2"] = args[2].astype(np.float64)
    save_npz(tmp_path / "dtype.npz", bad)
    r = conform("eval", d / "mlp.mlir", "--inputs", tmp_path / "dtype.npz")
    assert r.returncode == 2 and "arg2 of @main: element type f64 does not match tensor<256xf32>" in r.stderr
    bad["arg2"] = args[2]
    bad["arg1"] = args[1][:10]
    save_npz(tmp_path / "shape.npz", bad)
    r = conform("eval", d / "mlp.mlir", "--inputs", tmp_path / "shape.npz")
    assert r.returncode == 2
    assert "arg1 of @main: shape [10, 256] does not match tensor<256x256xf32>" in r.stderr
    del bad["arg3"]
    save_npz(tmp_path / "missing.npz", bad)
    r = conform("eval", d / "mlp.mlir", "--inputs", tmp_path / "missing.npz")
    assert r.returncode == 2 and "missing input for arg3" in r.stderr
    r = conform("eval", d / "mlp.mlir")
    assert r.returncode == 2 and "--inputs" in r.stderr


def test_bytecode_and_portable_artifact(files, tmp_path):
    d, _, x = files
    text = (d / "fori.mlir").read_text()
    (tmp_path / "fori.mlirbc").write_bytes(frontend.to_bytecode(text))
    (tmp_path / "fori.vhlo").write_bytes(frontend.serialize_portable_artifact(text))
    want = np.asarray(jax.jit(fori)(x))
    for name in ("fori.mlirbc", "fori.vhlo"):
        r = conform("eval", tmp_path / name, "--inputs", d / "fori_in.npz", "-o", tmp_path / "o.npz")
        assert r.returncode == 0, r.stderr
        np.testing.assert_allclose(load_npz(tmp_path / "o.npz")["out0"], want, rtol=1e-5, atol=1e-6)


def test_random_inputs_are_seeded(files):
    from stablehlo_conform import load
    from stablehlo_conform.harness.programs.inputs import random_inputs

    d, _, _ = files
    f = load(d / "fori.mlir")[0].funcs["main"]
    assert random_inputs(f, 7)[0].tobytes() == random_inputs(f, 7)[0].tobytes()
    assert random_inputs(f, 7)[0].tobytes() != random_inputs(f, 8)[0].tobytes()
    r = conform("eval", d / "fori.mlir", "--random", "--seed", "7", "--print")
    assert r.returncode == 0 and r.stdout.startswith("out0: tensor<5xf32> =")


def test_npz_round_trip_of_exotic_dtypes(tmp_path):
    arrays = {
        "bf16": np.array([1.5, -0.0, np.inf], ml_dtypes.bfloat16),
        "f8": np.array([[0.5, -448.0]], ml_dtypes.float8_e4m3fn),
        "f4": np.array([1.5, -6.0], ml_dtypes.float4_e2m1fn),
        "i4": np.array([-8, 7], ml_dtypes.int4),
        "ui2": np.array([3, 0], ml_dtypes.uint2),
        "scalar_bf16": np.array(2.5, ml_dtypes.bfloat16),
        "c64": np.array([1 + 2j], np.complex64),
        "b": np.array([True, False]),
        "u64": np.array([2**64 - 1], np.uint64),
    }
    save_npz(tmp_path / "x.npz", arrays)
    back = load_npz(tmp_path / "x.npz")
    assert list(back) == list(arrays)
    for k, a in arrays.items():
        assert back[k].dtype == a.dtype and back[k].shape == a.shape, k
        assert back[k].tobytes() == a.tobytes(), k


def test_evaluate_api_on_backends(files):
    d, _, x = files
    want = np.asarray(jax.jit(fori)(x))
    for backend in ("numpy", "xla", "reference"):
        (got,) = evaluate(d / "fori.mlir", x, backend=backend)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


FEED = """func.func @main(%x: tensor<2xi64>) -> (tensor<2xi64>, tensor<ui32>) {
  %t = stablehlo.after_all : !stablehlo.token
  %v:2 = "stablehlo.infeed"(%t) : (!stablehlo.token) -> (tensor<2xi64>, !stablehlo.token)
  %s = stablehlo.add %x, %v#0 : tensor<2xi64>
  %o = "stablehlo.outfeed"(%s, %v#1) : (tensor<2xi64>, !stablehlo.token) -> !stablehlo.token
  %r = stablehlo.replica_id : tensor<ui32>
  func.return %s, %r : tensor<2xi64>, tensor<ui32>
}
"""


def test_eval_infeed_outfeed_and_process_grid(tmp_path):
    prog = tmp_path / "feed.mlir"
    prog.write_text(FEED)
    np.savez(tmp_path / "in.npz", arg0=np.array([1, 2]))
    np.savez(tmp_path / "feed.npz", np.array([10, 20]), np.array([30, 40]))
    r = conform("eval", prog, "--inputs", tmp_path / "in.npz", "--infeed", tmp_path / "feed.npz",
                "--outfeed", tmp_path / "of.npz", "-o", tmp_path / "out.npz")
    assert r.returncode == 0, r.stderr
    with np.load(tmp_path / "of.npz") as of:
        assert of["outfeed0"].tolist() == [11, 22]
    with np.load(tmp_path / "out.npz") as out:
        assert out["out0"].tolist() == [11, 22] and int(out["out1"]) == 0
    r = conform("eval", prog, "--inputs", tmp_path / "in.npz", "--infeed", tmp_path / "feed.npz",
                "--num-replicas", "2", "-o", tmp_path / "grid.npz")
    assert r.returncode == 0, r.stderr
    with np.load(tmp_path / "grid.npz") as g:
        assert sorted(g.files) == ["r0p0_out0", "r0p0_out1", "r1p0_out0", "r1p0_out1"]
        assert [int(g["r0p0_out1"]), int(g["r1p0_out1"])] == [0, 1]
        sums = sorted([g["r0p0_out0"].tolist(), g["r1p0_out0"].tolist()])
        assert sums == [[11, 22], [31, 42]]  # each process took one infeed entry
    r = conform("eval", prog, "--inputs", tmp_path / "in.npz", "--num-replicas", "2", "--backend", "xla")
    assert r.returncode == 2


def test_unsupported_target_is_named_once_with_its_location(tmp_path):
    p = tmp_path / "u.mlir"
    p.write_text("func.func @main() -> tensor<2xf32> {\n"
                 "  %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>\n"
                 "  %1 = stablehlo.custom_call @no_such_target(%0) : (tensor<2xf32>) -> tensor<2xf32>\n"
                 "  return %1 : tensor<2xf32>\n}\n")
    r = conform("eval", p)
    assert r.returncode == 1
    err = r.stderr.splitlines()[-1]
    assert err.startswith("error: unsupported: stablehlo.custom_call")
    assert "unsupported: unsupported" not in r.stderr
    assert "no_such_target" in err and err.endswith(f"{p}:3:8")


def test_shape_polymorphic_programs_take_the_one_random_input_generator():
    """A shape-polymorphic program's generated inputs are ``inputs.random_array``'s (one
    generator for eval, diff, fuzz and program tests): ``?`` dims of the size asked,
    dimension variables that size, integer tensors small and non-negative (in bounds as
    indices)."""
    from stablehlo_conform.harness.programs import arguments as programs, inputs

    text = """func.func public @main(%n: tensor<i64>, %x: tensor<?x3xf32>, %i: tensor<2x?xi32>) -> tensor<?x3xf32> {
  %0 = stablehlo.add %x, %x : tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}"""
    (mod,) = frontend.load_text(text)
    f = mod.funcs["main"]
    n, x, i = programs.generated_inputs(f, seed=5, size=6)
    rng = np.random.default_rng(5)
    want_x = inputs.random_array(f.param_types[1], rng, index=True, dynamic=6)
    want_i = inputs.random_array(f.param_types[2], rng, index=True, dynamic=6)
    assert int(n) == 6 and x.shape == (6, 3) and i.shape == (2, 6)
    assert x.tobytes() == want_x.tobytes() and i.tobytes() == want_i.tobytes()
    assert i.min() >= 0 and i.max() <= 3 and programs.random_array is inputs.random_array
