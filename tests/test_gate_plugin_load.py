"""The PJRT plugin load check and the clients of a run (issue 39): a plugin
that hangs in ``GetPjrtApi`` or ``initialize()`` costs the load deadline once
(then exit 2), SIGINT / SIGTERM during the check end in 130 / 143; a plugin
that starts slower than ``--timeout`` runs its tests (the client's start is
charged to the load deadline, not to a test); the check's client is gone
before the workers start theirs (a plugin allowing one client per machine, as
libtpu's lockfile does, runs); an absurd grid or device count is refused
before any child starts; a device the client lacks is one usage error.

The plugins are real: a C library compiled here, ``jax_plugins`` modules
written here that register the real XLA CPU plugin of the package index
(fixture ``plugin``) after sleeping or taking a lock file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_pjrt import THREE, _statuses, conform, shared_library
from test_pjrt_devices import _one_test, _plugin_env

# GetPjrtApi that never returns: it appends its process id to $HANG_MARK, then waits forever
HANGING_LIBRARY = r"""#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void *GetPjrtApi(void) {
    const char *mark = getenv("HANG_MARK");
    FILE *f = mark ? fopen(mark, "a") : 0;
    if (f) { fprintf(f, "%d\n", (int)getpid()); fclose(f); }
    for (;;) pause();
    return 0;
}
"""

HANGING_MODULE = '''import os
import time


def initialize():
    with open(os.environ["HANG_MARK"], "a") as f:
        f.write(f"{os.getpid()}\\n")
    while True:
        time.sleep(60)
'''

# a plugin that takes seconds to start (as a GPU plugin finding its devices), then registers the real one
SLOW_MODULE = '''import time

from jax._src import xla_bridge


def initialize():
    time.sleep({seconds})
    xla_bridge.register_plugin("slow_cpu", library_path={library!r})
'''

# one client per machine, as libtpu: initialize() takes a lock file for the life of the process
LOCKED_MODULE = '''import fcntl
import os

from jax._src import xla_bridge

_held = []


def initialize():
    fd = os.open(os.environ["PLUGIN_LOCK"], os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise RuntimeError("the device is in use by another process (its lock file is held)") from None
    _held.append(fd)
    with open(os.environ["PLUGIN_LOCK"] + ".log", "a") as f:
        f.write(f"{{os.getpid()}}\\n")
    xla_bridge.register_plugin("locked_cpu", library_path={library!r})
'''

GRIDS = """module attributes {mhlo.num_replicas = 4294967296 : i64} {
  func.func @absurd_grid() {
    %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
    %1 = stablehlo.add %0, %0 : tensor<2xf32>
    check.expect_eq_const %1, dense<[2.0, 4.0]> : tensor<2xf32>
    func.return
  }
}

// -----

module attributes {mhlo.num_replicas = 2 : i64} {
  func.func @two_replicas() {
    %0 = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
    %1 = stablehlo.add %0, %0 : tensor<2xi32>
    check.expect_eq_const %1, dense<[2, 4]> : tensor<2xi32>
    func.return
  }
}

// -----

func.func @after() {
  %0 = stablehlo.constant dense<[3, 4]> : tensor<2xi32>
  %1 = stablehlo.multiply %0, %0 : tensor<2xi32>
  check.expect_eq_const %1, dense<[9, 16]> : tensor<2xi32>
  func.return
}
"""

CLI = [sys.executable, "-m", "stablehlo_conform.cli"]


def _hanging(kind: str, tmp_path: Path) -> tuple[str, dict[str, str]]:
    """(backend name, environment) of a plugin hanging in ``kind``:
    ``GetPjrtApi`` (a library by path) or ``initialize`` (a module by name)."""
    mark = str(tmp_path / "hang.pids")
    if kind == "GetPjrtApi":
        so = shared_library(tmp_path / "hang_plugin.so", HANGING_LIBRARY)
        return f"pjrt:{so}", dict(os.environ, HANG_MARK=mark)
    return "pjrt:hang_gpu", dict(_plugin_env(tmp_path, "hang_gpu", HANGING_MODULE), HANG_MARK=mark)


def _error_lines(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.lower().startswith("error:")]


@pytest.mark.parametrize("kind, deadline", [("GetPjrtApi", ("--timeout", "3")),
                                            ("initialize", ("--timeout", "60", "--load-timeout", "3"))])
def test_a_hanging_plugin_costs_the_load_deadline_once_then_exit_2(kind, deadline, tmp_path):
    """run (deadline: --load-timeout, by default --timeout) and plugin-report
    (its --timeout): one try of at most the deadline, then a usage error
    saying so; nothing run, no child left (b6ed491: a fixed 300 s)."""
    name, env = _hanging(kind, tmp_path)
    f = _one_test(tmp_path)
    out = tmp_path / "r.json"
    mark = Path(env["HANG_MARK"])
    for args in (("run", f, "--backend", name, "--json", out, *deadline),
                 ("plugin-report", name, f, "--versions", "0", "--timeout", "3", "-o", tmp_path / "report")):
        mark.unlink(missing_ok=True)
        t0 = time.monotonic()
        r = conform(*args, env=env, timeout=90)
        took = time.monotonic() - t0
        assert r.returncode == 2, (args[0], r.stdout, r.stderr)
        error = _error_lines(r.stderr)
        assert len(error) == 1 and "did not start within 3 s" in error[0], (args[0], r.stderr)
        assert took < 3 + 40, (args[0], took)  # the deadline and start-up on a loaded machine
        pids = mark.read_text().split()
        assert len(pids) == 1, pids  # once: the plugin was loaded by one process, one time
        _assert_gone(int(pids[0]))
        assert "Traceback" not in r.stderr and "PASS" not in r.stdout
    assert not out.exists() and not (tmp_path / "report").exists()


def _assert_gone(pid: int, within: float = 15.0) -> None:
    """The process ``pid`` ends within ``within`` seconds."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(")")[-1].split()[0] == "Z":
                    return  # a zombie holds nothing
        except FileNotFoundError:
            return
        time.sleep(0.2)
    raise AssertionError(f"process {pid} outlived the command")


@pytest.mark.parametrize("command, signum, code", [("run", signal.SIGINT, 130), ("run", signal.SIGTERM, 143),
                                                   ("eval", signal.SIGINT, 130)])
def test_an_interrupt_during_the_load_check_exits_128_plus_the_signal(command, signum, code, tmp_path):
    """Ctrl-C (SIGINT to the whole process group, as a terminal sends it)
    or SIGTERM while the check waits on a hanging plugin: exit 130 / 143
    at once, no "Aborted!", no traceback, the plugin's process gone
    (b6ed491: "Aborted!" and 1 for SIGINT, death by the signal for SIGTERM)."""
    name, env = _hanging("GetPjrtApi", tmp_path)
    mark = Path(env["HANG_MARK"])
    f = str(_one_test(tmp_path))
    args = ["run", f, "--timeout", "120"] if command == "run" else ["eval", f, "--entry", "ok_first"]
    p = subprocess.Popen([*CLI, *args, "--backend", name],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         start_new_session=True)
    try:
        end = time.monotonic() + 60
        while not (mark.exists() and mark.read_text().strip()) and time.monotonic() < end and p.poll() is None:
            time.sleep(0.1)
        assert mark.exists(), p.communicate(timeout=5)
        if signum == signal.SIGINT:
            os.killpg(p.pid, signum)
        else:
            os.kill(p.pid, signum)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == code, (p.returncode, out, err)
    assert "Aborted!" not in err and "Traceback" not in err, err
    _assert_gone(int(mark.read_text().split()[0]))


def test_an_absurd_cpu_device_count_is_refused_before_a_child_starts(plugin, tmp_path):
    """``cpu_device_count=100000`` (b6ed491: a child of 10 GB for 305 s) is
    one usage error naming the limit, in seconds."""
    f = _one_test(tmp_path)
    t0 = time.monotonic()
    r = conform("run", f, "--backend", f"pjrt:{plugin}", "--pjrt-option", "cpu_device_count=100000", timeout=90)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "cpu_device_count=100000" in r.stderr and "limit of 1024" in r.stderr, r.stderr
    assert time.monotonic() - t0 < 40 and "PASS" not in r.stdout


def test_a_plugin_starting_slower_than_the_timeout_runs_its_tests(plugin, tmp_path):
    """A plugin taking 3 s to start under ``--timeout 2``: its client's
    start (the worker's first, and again after a test crashed the plugin)
    is charged to the load deadline, the tests pass (b6ed491: every test
    timed out, each start inside a test's timeout)."""
    env = _plugin_env(tmp_path, "slow_cpu", SLOW_MODULE.format(seconds=3, library=str(plugin)))
    f = tmp_path / "three.mlir"
    f.write_text(THREE)
    out = tmp_path / "r.json"
    r = conform("run", f, "--backend", "pjrt:slow_cpu", "--timeout", "2", "--load-timeout", "60", "--json", out,
                env=env, timeout=300)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert _statuses(out) == {f"{f}::ok_first": "pass", f"{f}::huge_iota": "crash", f"{f}::ok_last": "pass"}


def test_the_load_checks_client_is_gone_before_the_workers_start_theirs(plugin, tmp_path):
    """A plugin allowing one client per machine (a lock file held for the
    life of the process, as libtpu's): ``run -j 1`` and ``plugin-report
    -j 1`` pass, each client taking the lock after the one before let it go
    (b6ed491: the check kept its client for the whole run, every test of
    the worker failed on the held lock)."""
    lock = tmp_path / "device.lock"
    env = dict(_plugin_env(tmp_path, "locked_cpu", LOCKED_MODULE.format(library=str(plugin))),
               PLUGIN_LOCK=str(lock))
    f = tmp_path / "two.mlir"
    f.write_text(THREE.split("// -----")[0] + "// -----" + THREE.split("// -----")[2])
    out = tmp_path / "r.json"
    r = conform("run", f, "--backend", "pjrt:locked_cpu", "-j", "1", "--json", out, env=env, timeout=300)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert set(_statuses(out).values()) == {"pass"} and len(_statuses(out)) == 2
    clients = Path(str(lock) + ".log").read_text().split()
    assert len(clients) == 2  # the check's, then the worker's
    r = conform("plugin-report", "pjrt:locked_cpu", f, "--versions", "0", "-j", "1", "--json", out, env=env,
                timeout=300)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert [x["status"] for x in json.loads(out.read_text())["results"]] == ["pass", "pass"]


def test_an_absurd_grid_is_refused_and_the_next_tests_of_the_worker_run(tmp_path):
    """``mhlo.num_replicas = 4294967296`` on xla: that test is unsupported
    naming the grid and the limit, before any child starts; a 2-replica
    grid and a one-device test after it in the same worker pass (b6ed491:
    the child restarted with that device count, every later test crashed)."""
    f = tmp_path / "grids.mlir"
    f.write_text(GRIDS)
    out = tmp_path / "r.json"
    r = conform("run", f, "--backend", "xla", "-j", "1", "--json", out, timeout=300)
    assert r.returncode == 1, (r.stdout, r.stderr)
    recs = {x["id"].rsplit("::", 1)[1]: x for x in json.loads(out.read_text())["results"]}
    assert {k: v["status"] for k, v in recs.items()} == {"absurd_grid": "unsupported", "two_replicas": "pass",
                                                          "after": "pass"}
    why = recs["absurd_grid"]["message"]
    assert "4294967296 replicas" in why and "limit of 1024" in why, why


def test_a_device_the_client_lacks_is_one_usage_error_up_front(plugin, tmp_path):
    """``--pjrt-device 9`` on a client of 4 devices: exit 2 naming the
    device count before any test, in run and plugin-report; ``?device=9``
    in eval: one "error:" prefix (b6ed491: one error record per test, exit
    1; eval printed "error: error: ...")."""
    f = _one_test(tmp_path)
    out = tmp_path / "r.json"
    for args in (("run", f, "--backend", f"pjrt:{plugin}", "--pjrt-device", "9", "--json", out),
                 ("plugin-report", f"pjrt:{plugin}", f, "--pjrt-device", "9", "--versions", "0", "--json", out),
                 ("eval", f, "--entry", "ok_first", "--backend", f"pjrt:{plugin}?device=9")):
        r = conform(*args, timeout=120)
        assert r.returncode == 2, (args[0], r.stdout, r.stderr)
        text = r.stdout + r.stderr
        assert "device 9 does not exist" in text and "4 devices" in text, (args[0], text)
        assert "error: error" not in text.lower() and text.lower().count("error:") == 1, (args[0], text)
        assert "PASS" not in r.stdout and not out.exists()


def test_eval_says_error_once_for_a_program_the_backend_rejects(tmp_path):
    """A program the backend refuses at run time (xla: a custom call with no
    implementation): one "error:" prefix, exit 1 (b6ed491: "error: error: ...")."""
    f = tmp_path / "unknown_target.mlir"
    f.write_text("func.func @main() -> tensor<2xf32> {\n"
                 "  %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>\n"
                 "  %1 = stablehlo.custom_call @no_such_target(%0) : (tensor<2xf32>) -> tensor<2xf32>\n"
                 "  func.return %1 : tensor<2xf32>\n}\n")
    r = conform("eval", f, "--backend", "xla", timeout=120)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert _error_lines(r.stderr) == [ln for ln in r.stderr.splitlines() if ln.strip()], r.stderr
    assert r.stderr.startswith("error: xla: compile failed") and "error: error" not in r.stderr, r.stderr
