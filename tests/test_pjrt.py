"""PJRT plugins as backends: a real third-party plugin from the package index
(``lammps-jax-pjrt-cpu``, an XLA CPU plugin built from another jax release),
a plugin that aborts, plugins found by name, versions, devices and options."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from stablehlo_conform import frontend
from stablehlo_conform.harness.backends import BackendUnavailable, get_backend
from stablehlo_conform.harness.backends.pjrt import parse_name, typed_option, with_options
from stablehlo_conform.harness.suite.cases import Options

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / ".." / "shared" / "stablehlo-suite"

THREE = """func.func @ok_first() {
  %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %1 = stablehlo.add %0, %0 : tensor<2xf32>
  check.expect_eq_const %1, dense<[2.0, 4.0]> : tensor<2xf32>
  func.return
}

// -----

func.func @huge_iota() {
  %0 = stablehlo.iota dim = 0 : tensor<1099511627776xi64>
  %z = stablehlo.constant dense<0> : tensor<i64>
  %1 = stablehlo.reduce(%0 init: %z) applies stablehlo.add across dimensions = [0] : (tensor<1099511627776xi64>, tensor<i64>) -> tensor<i64>
  check.expect_eq_const %1, dense<0> : tensor<i64>
  func.return
}

// -----

func.func @ok_last() {
  %0 = stablehlo.constant dense<[3, 4]> : tensor<2xi32>
  %1 = stablehlo.multiply %0, %0 : tensor<2xi32>
  check.expect_eq_const %1, dense<[9, 16]> : tensor<2xi32>
  func.return
}
"""

# exponential with a result_accuracy attribute: StableHLO 1.9 and later
ACCURACY = """func.func @exp_accuracy() {
  %0 = stablehlo.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %1 = "stablehlo.exponential"(%0) {result_accuracy = #stablehlo.result_accuracy<atol = 0.0, rtol = 0.0, ulps = 1, mode = #stablehlo.result_accuracy_mode<TOLERANCE>>} : (tensor<2xf32>) -> tensor<2xf32>
  check.expect_almost_eq_const %1, dense<[1.0, 2.71828175]> : tensor<2xf32>
  func.return
}
"""


def shared_library(so: Path, c_source: str) -> Path:
    """``c_source`` compiled into the shared library ``so`` (the test skips without a C compiler)."""
    src = so.with_suffix(".c")
    src.write_text(c_source)
    try:
        subprocess.run(["cc", "-shared", "-fPIC", "-o", str(so), str(src)], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.skip(f"no C compiler: {e}")
    return so


def conform(*args, env=None, timeout=600):
    return subprocess.run([sys.executable, "-m", "stablehlo_conform.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=env)


def _statuses(path: Path) -> dict[str, str]:
    return {r["id"]: r["status"] for r in json.loads(path.read_text())["results"]}


# --------------------------------------------------------------------------- #
# Names and options (no plugin needed)
# --------------------------------------------------------------------------- #


def test_names_carry_options_device_and_version():
    name = with_options("pjrt:/opt/p.so", ("cpu_device_count=2", "mode=fast"), 1)
    assert name == "pjrt:/opt/p.so?cpu_device_count=2&mode=fast&device=1"
    spec = parse_name(name + "&stablehlo=1.9")
    assert (spec.target, spec.device, spec.stablehlo) == ("/opt/p.so", 1, "1.9.0")
    assert dict(spec.options) == {"cpu_device_count": "2", "mode": "fast"}
    assert spec.is_path and not parse_name("pjrt:tt").is_path
    assert [typed_option(v) for v in ("true", "7", "-2.5", "[1, 2]", '"8"', "abc")] == \
        [True, 7, -2.5, [1, 2], "8", "abc"]
    for bad in ("pjrt:", "pjrt:/p.so?device=x", "pjrt:/p.so?novalue", "pjrt:/p.so?stablehlo=new"):
        with pytest.raises(BackendUnavailable):
            parse_name(bad)


def test_missing_plugin_is_a_usage_error(tmp_path):
    f = tmp_path / "t.mlir"
    f.write_text(THREE.split("// -----")[0])
    for name in ("pjrt:/no/such/plugin.so", "pjrt:no_such_plugin"):
        r = conform("run", f, "--backend", name)
        assert r.returncode == 2, r.stderr
        assert "no PJRT plugin" in r.stderr
    r = conform("run", f, "--backend", "xla", "--pjrt-option", "a=1")
    assert r.returncode == 2 and "need a pjrt: backend" in r.stderr
    r = conform("diff", f, "--backends", "numpy,pjrt:/no/such/plugin.so")
    assert r.returncode == 2 and "no PJRT plugin library at /no/such/plugin.so" in r.stderr


def test_aborting_plugin_is_a_usage_error_with_its_stderr(tmp_path):
    """A plugin library whose GetPjrtApi writes to stderr and aborts does not
    load: one usage error (exit 2) carrying that line and the signal, before
    any test runs, and no records."""
    so = shared_library(tmp_path / "abort_plugin.so",
                        '#include <stdio.h>\n#include <stdlib.h>\n'
                        'void *GetPjrtApi(void) {\n'
                        '  fprintf(stderr, "abort_plugin: refusing to start\\n");\n'
                        '  fflush(stderr);\n  abort();\n}\n')
    f = tmp_path / "three.mlir"
    f.write_text(THREE.replace("1099511627776", "8"))
    out = tmp_path / "r.json"
    r = conform("run", f, "--backend", f"pjrt:{so}", "--json", out, "--timeout", "120")
    assert r.returncode == 2, r.stderr
    assert "pjrt:abort_plugin does not load" in r.stderr
    assert "killed by signal SIGABRT" in r.stderr and "abort_plugin: refusing to start" in r.stderr
    assert not out.exists() and "PASS" not in r.stdout and "CRASH" not in r.stdout


# --------------------------------------------------------------------------- #
# The real plugin
# --------------------------------------------------------------------------- #


def test_plugin_runs_programs_with_options_and_device(plugin):
    text = """func.func @main(%a: tensor<3xbf16>, %b: tensor<3xcomplex<f32>>) -> (tensor<3xbf16>, tensor<3xcomplex<f32>>) {
      %0 = stablehlo.add %a, %a : tensor<3xbf16>
      %1 = stablehlo.multiply %b, %b : tensor<3xcomplex<f32>>
      return %0, %1 : tensor<3xbf16>, tensor<3xcomplex<f32>>
    }"""
    mod = frontend.load_text(text)[0]
    import ml_dtypes

    a = np.array([1.5, -2, 0.25], ml_dtypes.bfloat16)
    b = np.array([1 + 2j, 3j, -1], np.complex64)
    be = get_backend(f"pjrt:{plugin}?cpu_device_count=2&device=1")
    x, y = be.run_function(mod, "main", [a, b], Options(timeout=120))
    assert x.dtype == a.dtype and list(x.astype(np.float32)) == [3.0, -4.0, 0.5]
    np.testing.assert_array_equal(y, b * b)
    info = be._child.call("describe", timeout=120)
    assert info["devices"] == 2 and info["platform"] == "cpu"
    assert info["stablehlo_current"] == "1.20.0" and info["window_stated"]
    with pytest.raises(Exception, match="device 5 does not exist"):
        get_backend(f"pjrt:{plugin}?device=5").run_function(mod, "main", [a, b], Options(timeout=120))


def test_plugin_crash_ends_one_test_and_the_run_goes_on(plugin, tmp_path):
    f = tmp_path / "three.mlir"
    f.write_text(THREE)
    out = tmp_path / "r.json"
    r = conform("run", f, "--backend", f"pjrt:{plugin}", "--json", out, "--timeout", "120")
    assert r.returncode == 1, r.stderr
    st = _statuses(out)
    assert st == {f"{f}::ok_first": "pass", f"{f}::huge_iota": "crash", f"{f}::ok_last": "pass"}
    crash = next(x for x in json.loads(out.read_text())["results"] if x["status"] == "crash")
    assert "killed by signal SIGFPE" in crash["message"]


def test_newer_stablehlo_than_accepted_is_unsupported_with_the_version(plugin, tmp_path):
    f = tmp_path / "acc.mlir"
    f.write_text(ACCURACY)
    out = tmp_path / "r.json"
    r = conform("run", f, "--backend", f"pjrt:{plugin}?stablehlo=1.8", "--json", out)
    assert r.returncode == 1
    (rec,) = json.loads(out.read_text())["results"]
    assert rec["status"] == "unsupported"
    assert "needs StableHLO 1.9; sent as StableHLO 1.8.0" in rec["message"]
    assert "vhlo.exponential_v2" in rec["message"]  # the MLIR diagnostic is kept
    r = conform("run", f, "--backend", f"pjrt:{plugin}?stablehlo=1.9", "--json", out)
    assert r.returncode == 0, r.stdout
    r = conform("run", f, "--backend", f"pjrt:{plugin}", "--json", out)
    assert r.returncode == 0, r.stdout


def test_plugins_found_by_name_and_listed(plugin, tmp_path):
    """``pjrt:NAME`` through ``PJRT_NAMES_AND_LIBRARY_PATHS`` and through a
    ``jax_plugins`` namespace module; ``conform backends`` describes both."""
    ns = tmp_path / "site" / "jax_plugins" / "lammps_cpu"
    ns.mkdir(parents=True)
    (ns / "__init__.py").write_text(
        "from jax._src import xla_bridge\n\n\ndef initialize():\n"
        f"    xla_bridge.register_plugin('lammps_cpu', library_path={str(plugin)!r},"
        " options={'cpu_device_count': 3})\n")
    env = dict(os.environ, PYTHONPATH=f"{tmp_path / 'site'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
               PJRT_NAMES_AND_LIBRARY_PATHS=f"envcpu:{plugin}")
    r = conform("backends", env=env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    for name, devices in (("pjrt:envcpu", 4), ("pjrt:lammps_cpu", 3)):
        row = next(ln for ln in lines if ln.startswith(name + " loads"))
        assert f"{devices} x cpu" in row and "StableHLO 0.9-1.20" in row, row
        assert str(plugin) in r.stdout
    f = tmp_path / "t.mlir"
    f.write_text(THREE.split("// -----")[0])
    r = conform("run", f, "--backend", "pjrt:lammps_cpu", env=env)
    assert r.returncode == 0 and "1 pass" in r.stdout, r.stdout + r.stderr


PLANTED = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %big = stablehlo.constant dense<1.0e+30> : tensor<4xf32>
  %a = stablehlo.add %x, %big : tensor<4xf32>
  %tiny = stablehlo.constant dense<1.0e-40> : tensor<4xf32>
  %r = stablehlo.multiply %a, %tiny : tensor<4xf32>
  func.return %r : tensor<4xf32>
}
"""


def test_diff_localises_a_planted_difference_on_the_plugin(plugin, tmp_path):
    """The plugin reads subnormal operands as zero (XLA CPU's mode): the
    planted product of about 1e30 and a subnormal constant is 1e-10 on numpy
    and 0 on the plugin, so the multiply at line 5 is the first to differ."""
    f = tmp_path / "planted.mlir"
    f.write_text(PLANTED)
    out = tmp_path / "d.json"
    r = conform("diff", f, "--backends", f"numpy,pjrt:{plugin}", "--json", out)
    assert r.returncode == 1, r.stdout + r.stderr
    rep = json.loads(out.read_text())
    assert rep["status"] == "disagree"
    assert ":5:" in rep["first_divergence"]["loc"] and rep["first_divergence"]["op"] == "stablehlo.multiply"
    assert "first diverging op: stablehlo.multiply" in r.stdout


def test_plugin_matches_xla_on_official_files(plugin, tmp_path):
    """A sample of the official suites: every test ends the same on the
    plugin as on the built-in xla backend."""
    files = [SUITE / "interpret" / n for n in ("add.mlir", "convert.mlir", "dot_general.mlir", "sort.mlir")]
    files += sorted((SUITE / "testdata").glob("cosine_*.mlir"))[:4]
    if not all(f.is_file() for f in files):
        pytest.skip("../shared/stablehlo-suite is absent")
    res = {}
    for name in ("xla", f"pjrt:{plugin}"):
        out = tmp_path / f"{len(res)}.json"
        conform("run", *files, "--backend", name, "--json", out, "-j", "2")
        res[name] = _statuses(out)
    a, b = res.values()
    assert len(a) > 50 and a == b
    assert sum(s == "pass" for s in b.values()) > 0.8 * len(b)


def test_plugin_report_has_the_suites_the_window_and_three_outputs(plugin, tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "three.mlir").write_text(THREE.replace("1099511627776", "8").replace(
        "dense<0> : tensor<i64>\n  func", "dense<28> : tensor<i64>\n  func"))
    (suite / "acc.mlir").write_text(ACCURACY)
    out = tmp_path / "report"
    r = conform("plugin-report", f"pjrt:{plugin}", suite, "--sample", suite / "acc.mlir", "--versions", "3",
                "-o", out)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((out / "report.json").read_text())
    assert doc["client"]["stablehlo_current"] == "1.20.0" and doc["client"]["devices"] == 4
    assert doc["suites"][0]["summary"]["pass"] == 4 and len(doc["results"]) == 4
    assert doc["by_family"]["stablehlo.iota"] == {"total": 1, "pass": 1}
    window = {w["version"]: w for w in doc["window"]}
    assert list(window) == ["0.9.0", "1.9.0", "1.20.0"]
    assert window["0.9.0"]["summary"]["unsupported"] == 1
    assert "needs StableHLO 1.9" in window["0.9.0"]["not_pass"][0]["message"]
    assert window["1.9.0"]["summary"]["pass"] == window["1.20.0"]["summary"]["pass"] == 1
    assert "Version window" in (out / "report.html").read_text()
    import xml.etree.ElementTree as ET

    assert ET.parse(out / "junit.xml").getroot().get("tests") == "4"
    assert "StableHLO 0.9.0" in r.stdout and r.stdout.splitlines()[1].startswith("  verdict   PASSED")


MESH = """module attributes {mhlo.num_replicas = 2 : i32, mhlo.num_partitions = 1 : i32} {
  func.func public @main(%a: tensor<4xf32>) -> tensor<4xf32> {
    %0 = "stablehlo.all_reduce"(%a) ({
      ^bb0(%x: tensor<f32>, %y: tensor<f32>):
        %s = stablehlo.add %x, %y : tensor<f32>
        stablehlo.return %s : tensor<f32>
    }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, channel_handle = #stablehlo.channel_handle<handle = 0, type = 0>} : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
"""


def test_programs_of_several_processes_run_on_a_device_mesh(plugin):
    mod = frontend.load_text(MESH)[0]
    a = np.array([1.0, -2.5, 3.0, 0.5], np.float32)
    (out,) = get_backend(f"pjrt:{plugin}").run_function(mod, "main", [a], Options(timeout=120))
    np.testing.assert_array_equal(out, 2 * a)  # both replicas hold a: the sum over the group is 2a
    from stablehlo_conform.errors import UnsupportedOp

    with pytest.raises(UnsupportedOp, match=r"needs 2 devices \(2 replicas x 1 partitions\); the client has 1"):
        get_backend(f"pjrt:{plugin}?cpu_device_count=1").run_function(mod, "main", [a], Options(timeout=120))


def test_pytest_plugin_and_eval_take_a_pjrt_backend(plugin, tmp_path):
    f = tmp_path / "test_three.mlir"
    f.write_text(THREE)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "stablehlo_conform", str(f), "-p", "no:xdist",
                        f"--conform-backend=pjrt:{plugin}", "--conform-timeout=120"],
                       capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert "1 failed, 2 passed" in r.stdout, r.stdout[-2000:]
    assert "SIGFPE" in r.stdout
    m = tmp_path / "mesh.mlir"
    m.write_text(MESH.replace("mhlo.num_replicas = 2", "mhlo.num_replicas = 1").replace("[[0, 1]]", "[[0]]")
                 .replace("1x2xi64", "1x1xi64"))
    r = conform("eval", m, "--random", "--print", "--backend", f"pjrt:{plugin}?device=2")
    assert r.returncode == 0 and "out0: tensor<4xf32>" in r.stdout, r.stderr


def test_an_element_type_the_plugin_cannot_take_is_unsupported_naming_it(plugin):
    from stablehlo_conform.errors import UnsupportedOp

    mod = frontend.load_text("""func.func @main(%a: tensor<2xcomplex<f64>>) -> tensor<2xcomplex<f64>> {
      %0 = stablehlo.cbrt %a : tensor<2xcomplex<f64>>
      return %0 : tensor<2xcomplex<f64>>
    }""")[0]
    with pytest.raises(UnsupportedOp, match="element type C128"):
        get_backend(f"pjrt:{plugin}").run_function(mod, "main", [np.ones(2, np.complex128)], Options(timeout=120))
    import ml_dtypes

    mod = frontend.load_text("""func.func @main(%a: tensor<2xf6E2M3FN>) -> tensor<2xf6E2M3FN> {
      return %a : tensor<2xf6E2M3FN>
    }""")[0]
    with pytest.raises(UnsupportedOp, match="f6E2M3FN values cannot be passed"):
        get_backend(f"pjrt:{plugin}").run_function(mod, "main", [np.zeros(2, ml_dtypes.float6_e2m3fn)])


def test_accuracy_table_of_the_plugin(plugin, tmp_path):
    # a vendor's own table: every bf16 value through the plugin's exponential, and f32 samples
    out = tmp_path / "cells.json"
    r = conform("accuracy", "--backend", f"pjrt:{plugin}", "--op", "exponential", "--type", "bf16",
                "--type", "f32", "--samples", "2000", "--json", out, "-o", tmp_path / "t.md")
    assert r.returncode == 0, r.stderr
    assert "Warning" not in r.stderr
    cells = {c["type"]: c for c in json.loads(out.read_text())["cells"]}
    bf16 = cells["bf16"]
    assert bf16["backend"] == f"pjrt:{plugin}" and bf16["status"] == "ok" and bf16["exhaustive"]
    assert bf16["n"] + bf16["silent"] == 2 ** 16 and bf16["max_ulp"] is not None
    assert cells["f32"]["status"] == "ok" and cells["f32"]["n"] >= 2000
    table = (tmp_path / "t.md").read_text()
    # headed by the plugin's name (the package holding the library), not the library's path
    assert "## pjrt:lammps_jax_pjrt_cpu\n" in table and "| `exponential` |" in table
    assert f"## pjrt:{plugin}" not in table
