"""PJRT plugins as JAX loads them, plugins that do not load, and programs of
several devices: the official tests' ``interpreter.run_parallel`` grids run
on a plugin's devices, and every device's results are checked.

The plugin is the real XLA CPU plugin from the package index (fixture
``plugin`` of :mod:`test_pjrt`); a ``jax_plugins`` module written here
registers it the way the CUDA and ROCm plugins register theirs: it hands the
PJRT C API capsule ``register_plugin`` returns to native code and fails when
that is ``None``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from stablehlo_conform import frontend
from stablehlo_conform.errors import CheckFailure
from stablehlo_conform.harness.backends.pjrt import PjrtBackend
from stablehlo_conform.harness.suite.cases import Options

from test_pjrt import MESH, SUITE, THREE, _statuses, conform, shared_library

INTERPRET = SUITE / "interpret"

COLLECTIVES = ("all_gather", "all_reduce", "all_to_all", "collective_broadcast", "collective_permute",
               "collective_reduce", "partition_id", "reduce_scatter", "replica_id", "send_recv")

# initialize() as a GPU plugin's: the capsule goes to native code (here ctypes reads the PJRT C API
# version out of the PJRT_Api struct it points to), None is a TypeError as in the CUDA plugin's extension
CAPSULE_MODULE = '''import ctypes
import json
import os

from jax._src import xla_bridge


def _options():
    return {{"cpu_device_count": 8}}


def initialize():
    c_api = xla_bridge.register_plugin("capsule_cpu", priority=500, library_path={library!r}, options=_options)
    if c_api is None:
        raise TypeError("register_custom_call_target(): incompatible function arguments: NoneType")
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    api = get(c_api, b"pjrt_c_api")
    # PJRT_Api: struct_size, extension_start, then PJRT_Api_Version (struct_size, extension_start, major, minor)
    major, minor = ctypes.cast(api + 32, ctypes.POINTER(ctypes.c_int * 2)).contents
    with open(os.environ["CAPSULE_SEEN"], "w") as f:
        json.dump({{"version": f"{{major}}.{{minor}}",
                   "preallocate": os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE")}}, f)
'''

FAILING_MODULE = '''def initialize():
    raise RuntimeError("no CUDA-capable device is detected")
'''


def _plugin_env(tmp_path: Path, name: str, source: str) -> dict[str, str]:
    pkg = tmp_path / "site" / "jax_plugins" / name
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text(source)
    env = dict(os.environ, PYTHONPATH=f"{tmp_path / 'site'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
               CAPSULE_SEEN=str(tmp_path / "seen.json"))
    env.pop("XLA_PYTHON_CLIENT_PREALLOCATE", None)
    return env


def _one_test(tmp_path: Path) -> Path:
    f = tmp_path / "t.mlir"
    f.write_text(THREE.split("// -----")[0])
    return f


def test_a_plugin_module_handing_its_capsule_to_native_code_loads_as_jax_loads_it(plugin, tmp_path):
    """The module's initialize() gets the real C API capsule; its create
    options (a callable) reach the client; the capsule is that of the
    library the client runs on; the child does not preallocate."""
    if not INTERPRET.is_dir():
        pytest.skip("../shared/stablehlo-suite is absent")
    env = _plugin_env(tmp_path, "capsule_cpu", CAPSULE_MODULE.format(library=str(plugin)))
    r = conform("backends", env=env)
    assert r.returncode == 0, r.stderr
    row = next(ln for ln in r.stdout.splitlines() if ln.startswith("pjrt:capsule_cpu loads"))
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert f"PJRT C API {seen['version']}," in row and "8 x cpu" in row, (row, seen)
    assert seen["preallocate"] == "false"
    files = [INTERPRET / f"{n}.mlir" for n in ("add", "maximum", "dot_general", "while", "sort", "convert")]
    res = {}
    for name in ("xla", "pjrt:capsule_cpu"):
        out = tmp_path / f"{len(res)}.json"
        r = conform("run", *files, "--backend", name, "--json", out, env=env)
        assert r.returncode in (0, 1), r.stderr
        res[name] = _statuses(out)
    a, b = res.values()
    assert len(a) > 40 and a == b
    assert sum(s == "pass" for s in b.values()) > 0.9 * len(b)


@pytest.mark.parametrize("kind", ["text file", "null api", "no GetPjrtApi", "failing initialize"])
def test_a_plugin_that_does_not_load_is_one_usage_error_in_every_command(kind, plugin, tmp_path):
    """exit 2, the plugin's own message naming the plugin (not its path),
    nothing run and no records written: in run, eval, diff, plugin-report
    and the pytest plugin."""
    env = None
    if kind == "text file":
        so = tmp_path / "vendor_plugin.so"
        so.write_text("not a library")
        name, why = f"pjrt:{so}", "file too short"
    elif kind == "no GetPjrtApi":
        so = shared_library(tmp_path / "vendor_plugin.so", "int vendor_version(void) { return 3; }\n")
        name, why = f"pjrt:{so}", "GetPjrtApi not found"
    elif kind == "null api":
        so = shared_library(tmp_path / "vendor_plugin.so", "void *GetPjrtApi(void) { return 0; }\n")
        name, why = f"pjrt:{so}", "crashed"
    else:
        env = _plugin_env(tmp_path, "vendor_gpu", FAILING_MODULE)
        name, why = "pjrt:vendor_gpu", "no CUDA-capable device is detected"
    label = "pjrt:vendor_plugin" if kind != "failing initialize" else "pjrt:vendor_gpu"
    f = _one_test(tmp_path)
    inputs = tmp_path / "in.npz"
    out = tmp_path / "r.json"
    commands = [
        ("run", f, "--backend", name, "--json", out),
        ("eval", f, "--entry", "ok_first", "--backend", name),
        ("diff", f, "--entry", "ok_first", "--backends", f"numpy,{name}"),
        ("plugin-report", name, f, "-o", tmp_path / "report"),
    ]
    for args in commands:
        r = conform(*args, env=env)
        assert r.returncode == 2, (args[0], r.stdout, r.stderr)
        error = [ln for ln in r.stderr.splitlines() if ln.lower().startswith("error:")]
        assert len(error) == 1 and f"{label} does not load" in error[0] and why in error[0], (args[0], r.stderr)
        assert "Traceback" not in r.stderr and "PASS" not in r.stdout
    assert not out.exists() and not (tmp_path / "report").exists() and not inputs.exists()
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(f),
                        "--conform-backend", name], capture_output=True, text=True, env=env, cwd=tmp_path,
                       timeout=600)
    assert r.returncode == 4 and f"{label} does not load" in r.stdout + r.stderr, r.stdout + r.stderr


def test_interpret_collectives_run_on_the_plugins_devices(plugin, tmp_path):
    """Every ``interpreter.run_parallel`` grid of the official collective
    tests runs on the plugin's devices (one per process). What does not pass
    says why in words: XLA CPU's own unimplemented collectives, the
    processes that run different programs, the grid larger than the client."""
    if not INTERPRET.is_dir():
        pytest.skip("../shared/stablehlo-suite is absent")
    files = [INTERPRET / f"{n}.mlir" for n in COLLECTIVES]
    out = tmp_path / "r.json"
    r = conform("run", *files, "--backend", f"pjrt:{plugin}?cpu_device_count=8", "--json", out, "-j", "2")
    assert r.returncode == 1, r.stderr
    results = json.loads(out.read_text())["results"]
    assert len(results) == 35
    by = {x["id"].split("/")[-1]: x for x in results}
    passed = sorted(k for k, x in by.items() if x["status"] == "pass")
    for test in ("all_reduce.mlir::main", "all_gather.mlir::main", "all_to_all.mlir::main",
                 "collective_permute.mlir::main", "partition_id.mlir::main", "replica_id.mlir::main",
                 "reduce_scatter.mlir::main"):
        assert test in passed, (test, by[test])
    assert len(passed) >= 20
    for x in results:
        assert "unregistered dialect" not in x.get("message", ""), x
        if x["status"] == "unsupported":
            assert ("is not supported by XLA:CPU" in x["message"]
                    or "runs different programs (@recv, @send) on its processes" in x["message"]
                    or "runs different programs (@recv0, @recv1, @send0, @send1)" in x["message"]), x
    # the numpy engine passes them all: the differences are the plugin's
    out2 = tmp_path / "n.json"
    conform("run", *files, "--json", out2)
    assert all(s == "pass" for s in _statuses(out2).values())
    # a grid larger than the client is unsupported, in words
    conform("run", INTERPRET / "all_reduce.mlir", "--backend", f"pjrt:{plugin}?cpu_device_count=2", "--json", out)
    results = json.loads(out.read_text())["results"]
    unsupported = [x for x in results if x["status"] == "unsupported"]
    assert len(unsupported) == 1 and all(x["status"] == "pass" for x in results if x not in unsupported)
    assert "needs 3 devices (3 replicas x 1 partitions); the client has 2" in unsupported[0]["message"]


class _SecondDeviceDiffers(PjrtBackend):
    """The real plugin, with device 1's copy of every result changed in one
    element after the run (what a device with a bad collective or a bad
    memory would return)."""

    def _launch(self, exe, use, per_device):
        out = super()._launch(exe, use, per_device)
        if len(out) > 1:
            bad = np.array(out[1][0], copy=True)
            bad.reshape(-1)[2] += 1
            out[1] = [bad, *out[1][1:]]
        return out


def test_every_devices_results_are_checked(plugin):
    mod = frontend.load_text(MESH)[0]
    a = np.array([1.0, -2.5, 3.0, 0.5], np.float32)
    opts = Options(timeout=120, isolate=False)
    (out,) = PjrtBackend(f"pjrt:{plugin}?cpu_device_count=2").run_function(mod, "main", [a], opts)
    np.testing.assert_array_equal(out, 2 * a)
    with pytest.raises(CheckFailure, match=r"device 1 returned another result #0 than device 0 \(at \[2\]: "
                                           r"7\.0 against 6\.0\)"):
        _SecondDeviceDiffers(f"pjrt:{plugin}?cpu_device_count=2").run_function(mod, "main", [a], opts)
