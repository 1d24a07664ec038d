"""``conform reduce`` and repro bundles, with backends carrying planted bugs.

The planted backends are installed the way a vendor plugin is: a module and
an entry-point ``dist-info`` on ``PYTHONPATH``, run through real ``conform``
subprocesses.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from stablehlo_conform import frontend
from stablehlo_conform.errors import ParseError
from stablehlo_conform.harness.programs.inputs import load_npz

CONFORM = [sys.executable, "-m", "stablehlo_conform.cli"]

BACKENDS = '''
"""Two backends with planted bugs: exponential off by 3 ULP on f32 inside a
while body only (loopexp), and cosine aborting the process (abortcos)."""
import os

import numpy as np

from stablehlo_conform.harness.backends.numpy_backend import NumpyBackend
from stablehlo_conform.kernels.registry import load_all

REF = load_all()
_in_while = [0]


def while_(op, *args):
    _in_while[0] += 1
    try:
        return REF.lookup("stablehlo.while")(op, *args)
    finally:
        _in_while[0] -= 1


def exponential(op, x):
    (out,) = REF.lookup("stablehlo.exponential")(op, x)
    out = np.asarray(out)
    if _in_while[0] and out.dtype == np.float32:
        out = np.where(np.isfinite(out), (out.view(np.int32) + np.int32(3)).view(np.float32), out)
    return (out,)


def cosine(op, x):
    os.abort()


class LoopExp(NumpyBackend):
    name = "loopexp"

    def __init__(self):
        super().__init__(registry=REF.with_overrides({"stablehlo.while": while_,
                                                      "stablehlo.exponential": exponential}))


class AbortCos(NumpyBackend):
    name = "abortcos"

    def __init__(self):
        super().__init__(registry=REF.with_overrides({"stablehlo.cosine": cosine}))
'''

T = "tensor<8x16xf32>"


def mlp_program(layers: int = 22) -> str:
    """A JAX-like program: an MLP of ``layers`` layers, a while loop over the
    activations (exponential inside), and a tail of element-wise ops."""
    body = []
    h = "%x"
    for i in range(layers):
        body += [
            f"%d{i} = stablehlo.dot_general {h}, %w, contracting_dims = [1] x [0] : "
            f"({T}, tensor<16x16xf32>) -> {T}",
            f"%s{i} = stablehlo.constant dense<0.25> : {T}",
            f"%m{i} = stablehlo.multiply %d{i}, %s{i} : {T}",
            f"%bb{i} = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<16xf32>) -> {T}",
            f"%a{i} = stablehlo.add %m{i}, %bb{i} : {T}",
            f"%t{i} = stablehlo.tanh %a{i} : {T}",
            f"%n{i} = stablehlo.negate %t{i} : {T}",
            f"%r{i} = stablehlo.maximum %t{i}, %n{i} : {T}",
            f"%q{i} = stablehlo.subtract %t{i}, %r{i} : {T}",
            f"%h{i} = stablehlo.add %q{i}, %t{i} : {T}",
        ]
        h = f"%h{i}"
    body += [
        "%c0 = stablehlo.constant dense<0> : tensor<i32>",
        f"%acc0 = stablehlo.constant dense<0.0> : {T}",
        f"%loop:3 = stablehlo.while(%i = %c0, %v = {h}, %acc = %acc0) : tensor<i32>, {T}, {T}",
        "  cond {",
        "  %lim = stablehlo.constant dense<4> : tensor<i32>",
        "  %lt = stablehlo.compare LT, %i, %lim : (tensor<i32>, tensor<i32>) -> tensor<i1>",
        "  stablehlo.return %lt : tensor<i1>",
        "} do {",
        "  %one = stablehlo.constant dense<1> : tensor<i32>",
        "  %i1 = stablehlo.add %i, %one : tensor<i32>",
        f"  %e = stablehlo.exponential %v : {T}",
        f"  %half = stablehlo.constant dense<0.5> : {T}",
        f"  %vn = stablehlo.multiply %e, %half : {T}",
        f"  %acc1 = stablehlo.add %acc, %e : {T}",
        f"  stablehlo.return %i1, %vn, %acc1 : tensor<i32>, {T}, {T}",
        "}",
    ]
    tail = "%loop#1"
    for i in range(10):
        body += [f"%u{i} = stablehlo.multiply {tail}, %x : {T}",
                 f"%z{i} = stablehlo.add %u{i}, {tail} : {T}"]
        tail = f"%z{i}"
    body.append(f"%side = stablehlo.cosine {h} : {T}")
    body.append(f"return {tail}, %loop#2, %side : {T}, {T}, {T}")
    lines = "\n    ".join(body)
    return (f"func.func @main(%x: {T}, %w: tensor<16x16xf32>, %b: tensor<16xf32>) -> ({T}, {T}, {T}) {{\n"
            f"    {lines}\n}}\n")


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    site = tmp_path_factory.mktemp("site")
    (site / "planted_reduce.py").write_text(BACKENDS)
    info = site / "planted_reduce-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: planted-reduce\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[stablehlo_conform.backends]\nloopexp = planted_reduce:LoopExp\nabortcos = planted_reduce:AbortCos\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
    return env


def conform(args, cwd, env, timeout=300):
    return subprocess.run(CONFORM + [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def readme_commands(folder: Path) -> list[str]:
    text = (folder / "README.md").read_text()
    block = re.search(r"```sh\n(.*?)```", text, re.S).group(1)
    return [ln for ln in block.splitlines() if ln.strip()]


def test_planted_while_exponential_bug_reduced_to_a_few_ops(plugin, tmp_path):
    prog = tmp_path / "mlp.mlir"
    prog.write_text(mlp_program())
    assert frontend.count_ops(prog.read_text()) >= 200
    # the bug shows in the whole program
    p = conform(["diff", prog, "--backends", "numpy,loopexp", "--localise", "never"], tmp_path, plugin)
    assert p.returncode == 1 and "MISMATCH" in p.stdout, p.stdout + p.stderr
    out = tmp_path / "bundle"
    p = conform(["reduce", prog, "--backends", "numpy,loopexp", "-o", out, "--budget", "60", "-q"],
                tmp_path, plugin)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "stopped by the time budget" not in p.stdout, p.stdout
    reduced = (out / "program.mlir").read_text()
    n = frontend.count_ops(reduced)  # terminators are not counted
    assert n <= 5, reduced
    assert "stablehlo.while" in reduced and "stablehlo.exponential" in reduced
    assert f"-> {n} ops (terminators not counted)" in p.stdout
    # the bundle: inputs fit the program, each backend's values, README with the outcome
    func = frontend.load_text(reduced)[0].funcs["main"]
    inputs = load_npz(out / "inputs.npz")
    assert [tuple(a.shape) for a in inputs.values()] == [tuple(t.shape) for t in func.param_types]
    assert set(os.listdir(out / "values")) == {"numpy.npz", "loopexp.npz"}
    a, b = load_npz(out / "values" / "numpy.npz")["out0"], load_npz(out / "values" / "loopexp.npz")["out0"]
    assert not np.array_equal(a, b)
    readme = (out / "README.md").read_text()
    assert "DIFFERS" in readme and "first at index" in readme and "max ULP" in readme
    doc = json.loads((out / "bundle.json").read_text())
    assert doc["outcomes"] == {"numpy": {"status": "ok", "message": ""}, "loopexp": {"status": "ok", "message": ""}}
    # the README's commands reproduce it from a fresh shell in a clean folder
    fresh = tmp_path / "fresh"
    shutil.copytree(out, fresh)
    cmds = readme_commands(fresh)
    assert cmds[0] == "conform diff program.mlir --inputs inputs.npz --backends numpy,loopexp"
    p = subprocess.run(["bash", "-c", cmds[0]], cwd=fresh, env=plugin, capture_output=True, text=True, timeout=300)
    assert p.returncode == 1 and "MISMATCH" in p.stdout and "result: backends disagree" in p.stdout, p.stdout
    # the same program on the healthy backend alone agrees with itself: the bug is the backend's
    p = subprocess.run(["bash", "-c", cmds[0].replace("loopexp", "numpy")], cwd=fresh, env=plugin,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout


def crash_program() -> str:
    ops = []
    v = "%x"
    for i in range(12):
        name = ["sine", "tanh", "negate", "abs"][i % 4]
        ops.append(f"%a{i} = stablehlo.{name} {v} : tensor<4xf32>")
        ops.append(f"%b{i} = stablehlo.add %a{i}, %y : tensor<4xf32>")
        v = f"%b{i}"
        if i == 6:
            ops.append(f"%cos = stablehlo.cosine {v} : tensor<4xf32>")
            ops.append(f"%mix = stablehlo.multiply %cos, {v} : tensor<4xf32>")
            v = "%mix"
    body = "\n    ".join(ops)
    return textwrap.dedent(f"""\
        func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {{
            {body}
            return {v}, %b2 : tensor<4xf32>, tensor<4xf32>
        }}
        """).replace("\n            ", "\n    ")


def test_planted_crash_reduced_to_the_op_alone(plugin, tmp_path):
    prog = tmp_path / "crash.mlir"
    prog.write_text(crash_program())
    assert frontend.count_ops(prog.read_text()) == 26
    out = tmp_path / "bundle"
    p = conform(["reduce", prog, "--backends", "numpy,abortcos", "--property", "crash", "-o", out, "-q"],
                tmp_path, plugin)
    assert p.returncode == 0, p.stdout + p.stderr
    reduced = frontend.load_text((out / "program.mlir").read_text())[0]
    ops = [op.name for op in reduced.funcs["main"].body.blocks[0].ops]
    assert ops == ["stablehlo.cosine", "func.return"]
    doc = json.loads((out / "bundle.json").read_text())
    assert doc["outcomes"]["abortcos"]["status"] == "crash"
    assert "SIGABRT" in doc["outcomes"]["abortcos"]["message"]
    assert doc["outcomes"]["numpy"]["status"] == "ok"
    readme = (out / "README.md").read_text()
    assert "**abortcos**: crash" in readme and "SIGABRT" in readme
    # the README's eval command on the crashing backend dies the same way from a fresh shell
    cmd = next(c for c in readme_commands(out) if "--backend abortcos" in c)
    p = subprocess.run(["bash", "-c", cmd], cwd=out, env=plugin, capture_output=True, text=True, timeout=300)
    assert p.returncode in (-6, 128 + 6)  # SIGABRT (bash may exec the command itself)


def test_property_that_does_not_hold_exits_1(plugin, tmp_path):
    prog = tmp_path / "crash.mlir"
    prog.write_text(crash_program())
    p = conform(["reduce", prog, "--backends", "numpy,loopexp", "-o", tmp_path / "b"], tmp_path, plugin)
    assert p.returncode == 1 and "does not hold" in p.stdout, p.stdout + p.stderr
    assert not (tmp_path / "b").exists()


def test_diff_repro_dir_bundles_the_program_and_the_first_diverging_op(plugin, tmp_path):
    prog = tmp_path / "loop.mlir"
    prog.write_text(mlp_program(layers=2))
    p = conform(["diff", prog, "--backends", "numpy,loopexp", "--repro-dir", tmp_path / "repro"], tmp_path, plugin)
    assert p.returncode == 1 and "repro bundle:" in p.stdout, p.stdout + p.stderr
    whole, alone = tmp_path / "repro" / "loop", tmp_path / "repro" / "loop.op"
    assert frontend.count_ops((whole / "program.mlir").read_text()) == frontend.count_ops(prog.read_text())
    assert "First diverging op: `stablehlo.while`" in (whole / "README.md").read_text()
    op = frontend.load_text((alone / "program.mlir").read_text())[0].funcs["main"]
    assert [o.name for o in op.body.blocks[0].ops] == ["stablehlo.while", "func.return"]
    for folder in (whole, alone):
        cmd = readme_commands(folder)[0]
        r = subprocess.run(["bash", "-c", cmd], cwd=folder, env=plugin, capture_output=True, text=True, timeout=300)
        assert r.returncode == 1 and "MISMATCH" in r.stdout, (folder, r.stdout)


SUITE = """
func.func @add_ok() {
  %a = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %r = stablehlo.add %a, %a : tensor<2xf32>
  check.expect_eq_const %r, dense<[2.0, 4.0]> : tensor<2xf32>
  func.return
}

func.func @cos_crash() {
  %a = stablehlo.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %r = stablehlo.cosine %a : tensor<2xf32>
  check.expect_almost_eq_const %r, dense<[1.0, 0.540302277]> : tensor<2xf32>
  func.return
}

func.func @neg_wrong() {
  %a = stablehlo.constant dense<[3, 4]> : tensor<2xi32>
  %r = stablehlo.negate %a : tensor<2xi32>
  check.expect_eq_const %r, dense<[-3, 4]> : tensor<2xi32>
  func.return
}
"""


def test_run_repro_dir_bundles_each_failure_and_crash(plugin, tmp_path):
    (tmp_path / "suite.mlir").write_text(SUITE)
    p = conform(["run", "suite.mlir", "--backend", "abortcos", "--repro-dir", "repro"], tmp_path, plugin)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "repro bundles: 2 in repro" in p.stdout
    repro = tmp_path / "repro"
    assert sorted(os.listdir(repro)) == ["suite.mlir_cos_crash", "suite.mlir_neg_wrong"]
    crash = json.loads((repro / "suite.mlir_cos_crash" / "bundle.json").read_text())
    assert crash["outcomes"]["abortcos"]["status"] == "crash" and crash["outcomes"]["numpy"]["status"] == "ok"
    assert "SIGABRT" in (repro / "suite.mlir_cos_crash" / "README.md").read_text()
    wrong = repro / "suite.mlir_neg_wrong"
    assert load_npz(wrong / "expected.npz")["out0"].tolist() == [-3, 4]
    assert load_npz(wrong / "values" / "abortcos.npz")["out0"].tolist() == [-3, -4]
    readme = (wrong / "README.md").read_text()
    assert "out0 vs expected: DIFFERS" in readme and "first at index [1]" in readme
    # the README's command runs the test's values on the backend from a fresh shell
    cmd = next(c for c in readme_commands(wrong) if "--backend abortcos" in c)
    r = subprocess.run(["bash", "-c", cmd], cwd=wrong, env=plugin, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "[-3 -4]" in r.stdout, r.stdout + r.stderr


# the editing API and the other properties ------------------------------------------------

LOOP = """
func.func private @twice(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %0 = stablehlo.multiply %x, %y : tensor<4xf32>
  %w:2 = stablehlo.while(%i = %c0, %v = %0) : tensor<i32>, tensor<4xf32>
   cond {
    %n = stablehlo.constant dense<3> : tensor<i32>
    %c = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i32>
    %i1 = stablehlo.add %i, %one : tensor<i32>
    %e = stablehlo.sine %v : tensor<4xf32>
    stablehlo.return %i1, %e : tensor<i32>, tensor<4xf32>
  }
  %1 = func.call @twice(%w#1) : (tensor<4xf32>) -> tensor<4xf32>
  return %1, %0 : tensor<4xf32>, tensor<4xf32>
}
"""


def _names(text):
    return [r["name"] for r in frontend.op_inventory(text) if not r["terminator"]]


def _run(text, *args):
    from stablehlo_conform import evaluate

    return evaluate(frontend.load_text(text)[0], *args)


def test_edits_keep_the_program_valid_and_their_meaning_where_they_should():
    x = np.linspace(-1, 1, 4, dtype=np.float32)
    y = np.full(4, 0.5, np.float32)
    want = _run(LOOP, x, y)
    inv = frontend.op_inventory(LOOP)
    idx = {r["name"]: r["index"] for r in inv}
    assert frontend.count_ops(LOOP) == 10  # terminators not counted, the callee's add included
    # inlining and unrolling the loop three times keep the values
    text, prov = frontend.edit_module(LOOP, [("inline",)])
    assert "func.call" not in text and "@twice" not in text and prov == [("arg", 0), ("arg", 1)]
    np.testing.assert_array_equal(_run(text, x, y)[0], want[0])
    text, _ = frontend.edit_module(LOOP, [("unroll", idx["stablehlo.while"], 3)])
    assert "stablehlo.while" not in text and _names(text).count("stablehlo.sine") == 3
    np.testing.assert_array_equal(_run(text, x, y)[0], want[0])
    # an op made an argument: the recorded value joins the inputs, unused arguments go
    text, prov = frontend.edit_module(LOOP, [("to_arg", idx["stablehlo.multiply"]), ("keep_results", [0])])
    assert prov == [("op", idx["stablehlo.multiply"], 0)] and "stablehlo.multiply" not in text
    np.testing.assert_array_equal(_run(text, x * y)[0], want[0])
    # the earliest results, an op replaced by its operand, a loop value passing through
    text, _ = frontend.edit_module(LOOP, [("results_of", idx["stablehlo.multiply"])])
    assert _names(text) == ["stablehlo.multiply"]
    text, _ = frontend.edit_module(LOOP, [("to_operand", idx["stablehlo.sine"], 0)])
    assert "stablehlo.sine" not in text
    text, _ = frontend.edit_module(LOOP, [("passthrough", idx["stablehlo.while"], 1)])
    assert "stablehlo.sine" not in text
    # shapes shrink where the ops allow it
    text, _ = frontend.edit_module(LOOP, [("inline",), ("reshape", {"tensor<4xf32>": "tensor<1xf32>"})])
    np.testing.assert_array_equal(_run(text, x[:1], y[:1])[0], want[0][:1])
    # an edit that breaks the program is refused by the verifier
    with pytest.raises(ParseError):
        frontend.edit_module(LOOP, [("reshape", {"tensor<i32>": "tensor<2xi32>"})])
    with pytest.raises(ParseError):
        frontend.edit_module(LOOP, [("results_of", idx["stablehlo.sine"])])  # not in the function's own body


def test_script_property_reduces_to_one_op_with_shrunk_shapes_deterministically(plugin, tmp_path):
    prog = tmp_path / "crash.mlir"
    prog.write_text(crash_program())
    texts = []
    for k in range(2):
        out = tmp_path / f"b{k}"
        p = conform(["reduce", prog, "--script", "grep -q stablehlo.cosine", "--backends", "numpy",
                     "-o", out, "-q", "--seed", "3"], tmp_path, plugin)
        assert p.returncode == 0, p.stdout + p.stderr
        texts.append((out / "program.mlir").read_text())
        inputs = load_npz(out / "inputs.npz")
        assert [a.shape for a in inputs.values()] == [(1,)]
        assert json.loads((out / "bundle.json").read_text())["outcomes"]["numpy"]["status"] == "ok"
    assert texts[0] == texts[1]
    assert _names(texts[0]) == ["stablehlo.cosine"] and "tensor<1xf32>" in texts[0]


REJECTS = '''
from stablehlo_conform.harness.backends.numpy_backend import NumpyBackend
from stablehlo_conform.kernels.registry import load_all

REF = load_all()


def tanh(op, x):
    raise ValueError("cannot lower tanh: no vector unit for this width")


class Rejects(NumpyBackend):
    name = "rejects"

    def __init__(self):
        super().__init__(registry=REF.with_overrides({"stablehlo.tanh": tanh}))
'''


def test_compile_error_property_keeps_the_op_with_the_message(plugin, tmp_path, monkeypatch):
    from stablehlo_conform.harness.campaigns.reduce import Property, reduce_program

    site = tmp_path / "site"
    (site / "rejects-0.1.dist-info").mkdir(parents=True)
    (site / "rejects_backend.py").write_text(REJECTS)
    (site / "rejects-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: rejects\nVersion: 0.1\n")
    (site / "rejects-0.1.dist-info" / "entry_points.txt").write_text(
        "[stablehlo_conform.backends]\nrejects = rejects_backend:Rejects\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    prop = Property(kind="compile-error", match="no vector unit")
    red = reduce_program(crash_program(), None, ["numpy", "rejects"], prop, budget_s=120, seed=0)
    assert red.holds and red.ops_before == 26
    assert _names(red.text) == ["stablehlo.tanh"]
    assert red.outcomes["rejects"]["status"] == "error" and "no vector unit" in red.outcomes["rejects"]["message"]
    # the same program with another message does not hold the property
    red = reduce_program(crash_program(), None, ["numpy", "rejects"],
                         Property(kind="compile-error", match="out of registers"), budget_s=60)
    assert not red.holds and red.text == crash_program()


def test_self_checking_test_is_reduced_without_its_checks(plugin, tmp_path):
    (tmp_path / "suite.mlir").write_text(SUITE)
    out = tmp_path / "b"
    p = conform(["reduce", "suite.mlir", "--entry", "cos_crash", "--backends", "numpy,abortcos",
                 "--property", "crash", "-o", out, "-q"], tmp_path, plugin)
    assert p.returncode == 0, p.stdout + p.stderr
    text = (out / "program.mlir").read_text()
    assert "check." not in text and _names(text) == ["stablehlo.cosine"]
    assert json.loads((out / "bundle.json").read_text())["outcomes"]["abortcos"]["status"] == "crash"


def test_constants_of_every_standard_and_16_or_8_bit_float_type():
    import ml_dtypes

    t = """func.func @main(%x: tensor<3xbf16>, %y: tensor<3xui8>, %z: tensor<2xf8E4M3FN>) ->
        (tensor<3xi1>, tensor<3xbf16>, tensor<3xui8>, tensor<2xf8E4M3FN>) {
      %a = stablehlo.add %x, %x : tensor<3xbf16>
      %b = stablehlo.add %y, %y : tensor<3xui8>
      %c = stablehlo.compare LT, %a, %x : (tensor<3xbf16>, tensor<3xbf16>) -> tensor<3xi1>
      %d = stablehlo.add %z, %z : tensor<2xf8E4M3FN>
      return %c, %a, %b, %d : tensor<3xi1>, tensor<3xbf16>, tensor<3xui8>, tensor<2xf8E4M3FN>
    }"""
    values = [np.array([1, 2.5, -3], ml_dtypes.bfloat16), np.array([250, 2, 3], np.uint8),
              np.array([True, False, True]), np.array([0.5, -2], ml_dtypes.float8_e4m3fn)]
    text, prov = frontend.edit_module(t, [("to_const", k, [v]) for k, v in enumerate(values)])
    assert prov == [] and _names(text) == ["stablehlo.constant"] * 4
    got = _run(text)
    for g, want in zip(got, [values[2], values[0], values[1], values[3]]):
        assert g.dtype == want.dtype and g.tolist() == want.tolist()


def test_a_loop_carried_value_nothing_uses_is_dropped():
    text = """func.func @main(%n: tensor<i32>, %x: tensor<4xf32>, %acc: tensor<4xf32>) -> tensor<4xf32> {
      %c0 = stablehlo.constant dense<0> : tensor<i32>
      %w:3 = stablehlo.while(%i = %c0, %v = %x, %a = %acc) : tensor<i32>, tensor<4xf32>, tensor<4xf32>
       cond {
        %c = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
        stablehlo.return %c : tensor<i1>
      } do {
        %one = stablehlo.constant dense<1> : tensor<i32>
        %i1 = stablehlo.add %i, %one : tensor<i32>
        %e = stablehlo.sine %v : tensor<4xf32>
        stablehlo.return %i1, %e, %a : tensor<i32>, tensor<4xf32>, tensor<4xf32>
      }
      return %w#1 : tensor<4xf32>
    }"""
    x = np.linspace(-1, 1, 4, dtype=np.float32)
    n = np.array(3, np.int32)
    for j in (0, 1):  # the condition reads the counter, the result is value 1
        with pytest.raises(ParseError):
            frontend.edit_module(text, [("drop_carried", 1, j)])
    dropped, prov = frontend.edit_module(text, [("drop_carried", 1, 2)])
    assert prov == [("arg", 0), ("arg", 1)] and "tensor<i32>, tensor<4xf32>, tensor<4xf32>" not in dropped
    assert _names(dropped) == _names(text)
    np.testing.assert_array_equal(_run(dropped, n, x)[0], _run(text, n, x, x)[0])
