"""Sharded programs (Shardy): parsing, global semantics, XLA on several devices.

The exported programs are made here: ``sharded_exports.py`` runs in a child
process with 8 forced CPU devices, exports ``shard_map`` programs (psum,
all_gather, ppermute, all_to_all, psum_scatter, axis_index, partial manual
axes), sharding constraints and sharded arguments on a 4x2 mesh, and records
what ``jax.jit`` computes on the 8 devices. The NumPy engine must give the
same values, the unsharded twin of each program the same values again, the
portable artifact the same program as the text, and ``conform diff`` against
XLA CPU (compiled for 8 devices) must agree.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from stablehlo_conform import evaluate, frontend, load
from stablehlo_conform.cli import main as cli_main
from stablehlo_conform.errors import ConformError
from stablehlo_conform.harness.backends import xla as xla_backend
from stablehlo_conform.harness.judge.diff import compare_values, diff_program
from stablehlo_conform.kernels import sharding as S
from stablehlo_conform.program import AxisRef, Mesh, MeshAxesGroups, TensorSharding, walk_ops

GEN = Path(__file__).with_name("sharded_exports.py")
_SRC = GEN.read_text()
NAMES = re.findall(r'^    "(\w+)": \(', _SRC, re.M)
TWINS = [n for n in NAMES if f"def {n}_twin(" in _SRC]


@pytest.fixture(scope="module")
def exports(tmp_path_factory) -> Path:
    pytest.importorskip("jax")
    out = tmp_path_factory.mktemp("sharded")
    env = dict(os.environ)
    env.pop("XLA_FLAGS", None)
    proc = subprocess.run([sys.executable, str(GEN), str(out)], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [c["name"] for c in json.loads((out / "cases.json").read_text())] == NAMES
    return out


def _case(exports: Path, name: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    z = np.load(exports / f"{name}.npz")
    args = [z[k] for k in sorted((k for k in z.files if k.startswith("arg")), key=lambda k: int(k[3:]))]
    outs = [z[k] for k in sorted((k for k in z.files if k.startswith("out")), key=lambda k: int(k[3:]))]
    return args, outs


def _assert_same(got, want, what: str) -> None:
    assert len(got) == len(want), what
    for i, (g, w) in enumerate(zip(got, want)):
        g = np.asarray(g)
        assert g.shape == w.shape and g.dtype == w.dtype, f"{what} #{i}: {g.dtype}{g.shape} vs {w.dtype}{w.shape}"
        c = compare_values(g, w)
        assert c["status"] == "ok", f"{what} #{i}: {c['message']}"


def _ops(module) -> dict[str, list[str]]:
    return {name: [op.name for op in walk_ops(f.body)] for name, f in module.funcs.items()}


# --------------------------------------------------------------------------- #
# Exported programs
# --------------------------------------------------------------------------- #


def test_cases_cover_the_collectives_and_shardings(exports):
    text = "".join((exports / f"{n}.mlir").read_text() for n in NAMES)
    for construct in ("sdy.mesh", "sdy.manual_computation", "sdy.return", "sdy.sharding_constraint",
                      "#sdy.sharding<", "stablehlo.all_reduce", "stablehlo.all_gather",
                      "stablehlo.collective_permute", "stablehlo.all_to_all", "stablehlo.reduce_scatter",
                      "stablehlo.partition_id", "replica_group_mesh_axes", 'manual_axes={"x"}',
                      '["x"=4, "y"=2]'):
        assert construct in text, construct


@pytest.mark.parametrize("name", NAMES)
def test_export_equals_jax_jit(exports, name):
    args, outs = _case(exports, name)
    module = load(exports / f"{name}.mlir")[0]
    assert module.meshes, "the sdy.mesh symbols are lowered"
    assert [f.name for f in module.funcs.values()] == ["main"] and not module.tests()
    _assert_same(evaluate(module, *args), outs, f"{name} vs jax.jit")


@pytest.mark.parametrize("name", TWINS)
def test_unsharded_twin_gives_the_same_values(exports, name):
    args, outs = _case(exports, name)
    twin = load(exports / f"{name}.twin.mlir")[0]
    assert "sdy." not in twin.text and not twin.meshes
    _assert_same(evaluate(twin, *args), [np.asarray(v) for v in evaluate(exports / f"{name}.mlir", *args)],
                 f"{name}: twin vs sharded")
    _assert_same(evaluate(twin, *args), outs, f"{name}: twin vs jax.jit")


@pytest.mark.parametrize("name", NAMES)
def test_portable_artifact_loads_like_its_text(exports, name):
    args, outs = _case(exports, name)
    text = load(exports / f"{name}.mlir")[0]
    art = frontend.load_bytes((exports / f"{name}.bin").read_bytes(), name)
    assert _ops(art) == _ops(text)
    assert art.meshes == text.meshes
    _assert_same(evaluate(art, *args), outs, f"{name} (portable artifact) vs jax.jit")


def test_diff_against_xla_on_eight_devices(exports):
    report = []
    for name in NAMES:
        args, _ = _case(exports, name)
        module = load(exports / f"{name}.mlir")[0]
        r = diff_program(module, "main", ["numpy", "xla"], args)
        report.append((name, r["status"], r["runs"]["xla"]["message"][:300]))
    assert all(status == "agree" for _, status, _ in report), report


def test_cli_diff_and_eval_of_a_sharded_program(exports, tmp_path):
    name = "mixed"
    args, outs = _case(exports, name)
    np.savez(tmp_path / "in.npz", arg0=args[0])
    runner = CliRunner()
    r = runner.invoke(cli_main, ["diff", str(exports / f"{name}.mlir"), "--backends", "numpy,xla",
                                 "--inputs", str(tmp_path / "in.npz")])
    assert r.exit_code == 0, r.output
    assert "backends agree" in r.output
    r = runner.invoke(cli_main, ["eval", str(exports / f"{name}.bin"), "--inputs", str(tmp_path / "in.npz"),
                                 "-o", str(tmp_path / "out.npz")])
    assert r.exit_code == 0, r.output
    _assert_same([np.load(tmp_path / "out.npz")["out0"]], outs, "conform eval")


# --------------------------------------------------------------------------- #
# A hand-written program: explicit device ids, mesh-axes replica groups
# --------------------------------------------------------------------------- #

HAND = """
module @hand attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["a"=2, "b"=2], device_ids=[3, 2, 1, 0]>
  func.func public @main(%arg0: tensor<4x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>},
                         %arg1: tensor<2x4xi32> {mhlo.sharding = "{replicated}", mhlo.frontend_attributes = {k = "v"}})
      -> (tensor<4x2xf32>, tensor<2x2xf32>, tensor<2x4xi32>) {
    %c = sdy.sharding_constraint %arg0 <@mesh, [{"a", "b"}, {}]> : tensor<4x2xf32>
    %0:2 = sdy.manual_computation(%c) in_shardings=[<@mesh, [{"a", "b"}, {}]>]
        out_shardings=[<@mesh, [{"a", "b"}, {}]>, <@mesh, [{"b"}, {}]>] manual_axes={"a", "b"} (%x: tensor<1x2xf32>) {
      %id = stablehlo.partition_id : tensor<ui32>
      %f = stablehlo.convert %id : (tensor<ui32>) -> tensor<f32>
      %h = stablehlo.constant dense<100.0> : tensor<f32>
      %m = stablehlo.multiply %f, %h : tensor<f32>
      %b = stablehlo.broadcast_in_dim %m, dims = [] : (tensor<f32>) -> tensor<1x2xf32>
      %r0 = stablehlo.add %x, %b : tensor<1x2xf32>
      %r1 = "stablehlo.all_reduce"(%x) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>,
          replica_groups = #stablehlo.replica_group_mesh_axes<mesh = @mesh, axes = [#stablehlo.axis_ref<name = "a">]>,
          use_global_device_ids}> ({
      ^bb0(%p: tensor<f32>, %q: tensor<f32>):
        %s = stablehlo.add %p, %q : tensor<f32>
        stablehlo.return %s : tensor<f32>
      }) : (tensor<1x2xf32>) -> tensor<1x2xf32>
      sdy.return %r0, %r1 : tensor<1x2xf32>, tensor<1x2xf32>
    } : (tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<2x2xf32>)
    %n = sdy.reshard %arg1 <@mesh, [{}, {"b"}]> : tensor<2x4xi32>
    return %0#0, %0#1, %n : tensor<4x2xf32>, tensor<2x2xf32>, tensor<2x4xi32>
  }
}
"""


def test_hand_written_program_follows_the_mesh_device_order():
    module = load(HAND)[0]
    assert module.meshes == {"mesh": Mesh((("a", 2), ("b", 2)), (3, 2, 1, 0))}
    attrs = module.funcs["main"].attrs["arg_attrs"]
    assert attrs[0]["sdy.sharding"] == TensorSharding("mesh", ((AxisRef("a"),), ()))
    assert attrs[1]["mhlo.sharding"] == "{replicated}" and attrs[1]["mhlo.frontend_attributes"] == {"k": "v"}
    a = np.arange(8, dtype=np.float32).reshape(4, 2)
    n = np.arange(8, dtype=np.int32).reshape(2, 4)
    out0, out1, out2 = evaluate(module, a, n)
    # mesh position k holds row k and runs as device 3 - k (partition_id)
    np.testing.assert_array_equal(out0, a + (3 - np.arange(4, dtype=np.float32))[:, None] * 100)
    # all_reduce over "a": positions (0, b) and (1, b); replicated over "a"
    np.testing.assert_array_equal(out1, a[:2] + a[2:])
    np.testing.assert_array_equal(out2, n)


def test_hand_written_program_on_xla_with_four_devices():
    module = load(HAND)[0]
    a = np.arange(8, dtype=np.float32).reshape(4, 2) - 2.5
    n = np.arange(8, dtype=np.int32).reshape(2, 4)
    r = diff_program(module, "main", ["numpy", "xla"], [a, n])
    assert r["status"] == "agree", r


def test_nested_manual_computation_without_axes_runs_each_device_alone():
    text = HAND.replace("%r0 = stablehlo.add %x, %b : tensor<1x2xf32>", """%r = stablehlo.add %x, %b : tensor<1x2xf32>
      %r0 = sdy.manual_computation(%r)
        in_shardings=[<@mesh, [{}, {}]>] out_shardings=[<@mesh, [{}, {}]>] manual_axes={} (%y: tensor<1x2xf32>) {
        %z = stablehlo.negate %y : tensor<1x2xf32>
        sdy.return %z : tensor<1x2xf32>
      } : (tensor<1x2xf32>) -> tensor<1x2xf32>""")
    a = np.arange(8, dtype=np.float32).reshape(4, 2)
    out0, out1, _ = evaluate(load(text)[0], a, np.zeros((2, 4), np.int32))
    np.testing.assert_array_equal(out0, -(a + (3 - np.arange(4, dtype=np.float32))[:, None] * 100))
    np.testing.assert_array_equal(out1, a[:2] + a[2:])


def test_shard_that_does_not_divide_is_an_error():
    text = HAND.replace('device_ids=[3, 2, 1, 0]>', 'device_ids=[3, 2, 1, 0]>\n  sdy.mesh @odd = <["a"=3]>')
    module = load(text)[0]
    mesh = module.meshes["odd"]
    with pytest.raises(ConformError, match="does not split into 3 shards"):
        S.split(mesh, np.zeros((4, 2)), TensorSharding("odd", ((AxisRef("a"),), ())), frozenset("a"), "t")


# --------------------------------------------------------------------------- #
# Mesh geometry
# --------------------------------------------------------------------------- #


def test_mesh_groups_of_axes_and_sub_axes():
    mesh = Mesh((("x", 4), ("y", 2)))
    assert S.mesh_groups(None, MeshAxesGroups(mesh, (AxisRef("x"),))) == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert S.mesh_groups(None, MeshAxesGroups(mesh, (AxisRef("y"),))) == [[0, 1], [2, 3], [4, 5], [6, 7]]
    # the order of the listed axes orders each group
    assert S.mesh_groups(None, MeshAxesGroups(mesh, (AxisRef("y"), AxisRef("x")))) == [[0, 2, 4, 6, 1, 3, 5, 7]]
    # "x":(1)2 is the major half of x, "x":(2)2 the minor one
    assert S.mesh_groups(None, MeshAxesGroups(mesh, (AxisRef("x", 1, 2),))) == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert S.mesh_groups(None, MeshAxesGroups(mesh, (AxisRef("x", 2, 2),))) == [[0, 2], [1, 3], [4, 6], [5, 7]]
    explicit = Mesh((("x", 2), ("y", 2)), (3, 1, 2, 0))
    assert S.mesh_groups(None, MeshAxesGroups(explicit, (AxisRef("x"),))) == [[3, 2], [1, 0]]
    with pytest.raises(ConformError, match="no mesh @nope"):
        S.mesh_groups(None, MeshAxesGroups("nope", (AxisRef("x"),)))


def test_split_and_assemble_round_trip_with_replicated_axes():
    mesh = Mesh((("x", 4), ("y", 2)))
    value = np.arange(48).reshape(8, 6)
    manual = frozenset({"x", "y"})
    s = TensorSharding(mesh, ((AxisRef("x"),), (AxisRef("y"),)))
    shards = S.split(mesh, value, s, manual, "t")
    assert [p.shape for p in shards] == [(2, 3)] * 8
    np.testing.assert_array_equal(shards[3], value[2:4, 3:6])  # position (1, 1)
    np.testing.assert_array_equal(S.assemble(mesh, shards, s, manual, value.shape, value.dtype, "t"), value)
    # replicated over y: the y=0 positions are read
    rows = TensorSharding(mesh, ((AxisRef("x"),), ()))
    pieces = [np.full((2, 6), i) for i in range(8)]
    got = S.assemble(mesh, pieces, rows, manual, (8, 6), np.int64, "t")
    np.testing.assert_array_equal(got[::2, 0], [0, 2, 4, 6])
    # sub-axes split a dimension in mixed radix, the major one first
    # (position (x, y) holds shard 2 * y + x % 2 of 4)
    sub = TensorSharding(mesh, ((AxisRef("y"), AxisRef("x", 2, 2)),))
    parts = S.split(mesh, np.arange(8), sub, manual, "t")
    assert [p.tolist() for p in parts] == [[0, 1], [4, 5], [2, 3], [6, 7]] * 2


def test_xla_flags_helpers():
    assert xla_backend.grid_of_text(
        'module @m attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 2 : i32} {\n}') == (2, 8)
    assert xla_backend.grid_of_text("module {\n}") == (1, 1)
    assert xla_backend.forced_devices("--foo --xla_force_host_platform_device_count=4") == 4
    assert xla_backend.forced_devices(None) == 1
    assert xla_backend.with_device_count("--foo --xla_force_host_platform_device_count=4", 8) == \
        "--foo --xla_force_host_platform_device_count=8"


# --------------------------------------------------------------------------- #
# JAX's backward-compatibility data: portable artifacts carrying sdy
# --------------------------------------------------------------------------- #


def _back_compat_programs() -> list[tuple[str, dict]]:
    try:
        pkg = importlib.import_module("jax._src.internal_test_util.export_back_compat_test_data")
    except ImportError:
        return []
    found = []

    def walk(d, prefix):
        for k, v in d.items():
            if isinstance(v, dict) and "mlir_module_serialized" in v:
                found.append((prefix + str(k), v))
            elif isinstance(v, dict) and not str(k).startswith("__"):
                walk(v, prefix + str(k) + ".")

    for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
        try:
            mod = importlib.import_module(info.name)
        except Exception:
            continue
        walk(vars(mod), info.name.rsplit(".", 1)[-1] + ".")
    return found


def test_back_compat_artifacts_with_sdy_load_like_their_text():
    programs = [(n, d) for n, d in _back_compat_programs() if "sdy" in d.get("mlir_module_text", "")]
    if not programs:
        pytest.skip("jax ships no export_back_compat_test_data with sdy")
    failures = []
    for name, data in programs:
        try:
            text = frontend.load_text(data["mlir_module_text"], name)[0]
            art = frontend.load_bytes(data["mlir_module_serialized"], name)
        except Exception as e:  # reported below, all at once
            failures.append(f"{name}: {type(e).__name__}: {str(e)[:200]}")
            continue
        if _ops(art) != _ops(text) or art.meshes != text.meshes:
            failures.append(f"{name}: the artifact's program differs from its text")
    assert not failures, f"{len(failures)} of {len(programs)}:\n" + "\n".join(failures)
    assert len(programs) >= 45


def test_back_compat_shardy_program_gives_its_expected_outputs():
    programs = dict(_back_compat_programs())
    data = programs.get("shardy_sharding_ops_with_different_meshes.data_2025_06_30")
    if data is None:
        pytest.skip("jax ships no shardy_sharding_ops_with_different_meshes data")
    for module in (frontend.load_text(data["mlir_module_text"])[0], frontend.load_bytes(data["mlir_module_serialized"])):
        _assert_same(evaluate(module, *data["inputs"]), list(data["expected_outputs"]), "shardy back-compat data")


def test_inline_meshes_and_mesh_axes_groups_on_a_process_grid():
    from stablehlo_conform.engine import run_spmd

    assert frontend.parse_attribute('#sdy.sharding<mesh<["a"=2], device_ids=[1, 0]>, [{"a"}]>') == TensorSharding(
        Mesh((("a", 2),), (1, 0)), ((AxisRef("a"),),))
    groups = ('#stablehlo.replica_group_mesh_axes<mesh = #stablehlo.mesh<axes = [#stablehlo.mesh_axis<name = "x", '
              'size = 2>, #stablehlo.mesh_axis<name = "y", size = 2>], device_ids = dense<[3, 2, 1, 0]> : '
              'tensor<4xi64>>, axes = [#stablehlo.axis_ref<name = "x">]>')
    assert frontend.parse_attribute(groups) == MeshAxesGroups(Mesh((("x", 2), ("y", 2)), (3, 2, 1, 0)),
                                                              (AxisRef("x"),))
    text = f"""
    func.func public @main() -> tensor<2xui32> {{
      %id = stablehlo.partition_id : tensor<ui32>
      %v = stablehlo.reshape %id : (tensor<ui32>) -> tensor<1xui32>
      %g = "stablehlo.all_gather"(%v) <{{all_gather_dim = 0 : i64, channel_handle = #stablehlo.channel_handle<handle = 1,
          type = 0>, replica_groups = {groups}, use_global_device_ids}}> : (tensor<1xui32>) -> tensor<2xui32>
      return %g : tensor<2xui32>
    }}"""
    out = run_spmd(load(text)[0], "main", num_partitions=4)
    # positions (0, y) and (1, y) are devices [3, 1] (y = 0) and [2, 0] (y = 1)
    assert {pid: r[0].tolist() for pid, r in out.items()} == {
        (0, 0): [2, 0], (0, 1): [3, 1], (0, 2): [2, 0], (0, 3): [3, 1]}


def test_native_wrapper_gives_whole_values_to_every_device():
    from stablehlo_conform.harness.backends.base import replicated_attr

    module = load(HAND.replace("  sdy.mesh @mesh =", "  sdy.mesh @one = <[], device_ids=[0]>\n  sdy.mesh @mesh ="))[0]
    attr = replicated_attr(module)
    assert attr(module.funcs["main"].param_types[0]) == "{sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}"
    gspmd = load("module attributes {mhlo.num_partitions = 2 : i32} {\n  func.func @main() {\n    return\n  }\n}")[0]
    assert replicated_attr(gspmd)(None) == '{mhlo.sharding = "{replicated}"}'
    assert replicated_attr(load("func.func @main() {\n  return\n}")[0]) is None


def test_assemble_a_dynamic_result_from_its_shards():
    mesh = Mesh((("x", 2), ("y", 2)))
    s = TensorSharding(mesh, ((AxisRef("y"),), ()))
    pieces = [np.full((3, 2), i % 2, np.float32) for i in range(4)]
    got = S.assemble(mesh, pieces, s, frozenset({"x", "y"}), (None, 2), np.dtype(np.float32), "t")
    np.testing.assert_array_equal(got, np.repeat([[0.0], [1.0]], 3, axis=0) * np.ones((1, 2)))


def test_shards_that_do_not_fit_the_body_fail_to_verify():
    from stablehlo_conform.errors import ParseError

    text = HAND.replace('in_shardings=[<@mesh, [{"a", "b"}, {}]>]', 'in_shardings=[<@mesh, [{"a"}, {}]>]')
    with pytest.raises(ParseError, match=r"^<string>:8:12: error: 'sdy.manual_computation' op .*Expected local "
                                         r"shape 'tensor<2x2xf32>', actual local shape 'tensor<1x2xf32>'"):
        load(text)
