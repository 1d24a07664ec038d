"""Shared fixtures: paths to the official suites (skipped when absent) and a real third-party
PJRT plugin from the package index (``lammps-jax-pjrt-cpu``, an XLA CPU plugin built from another
jax release; skipped when it cannot be installed)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SUITE = (ROOT / ".." / "shared" / "stablehlo-suite").resolve()
WHEEL = "lammps-jax-pjrt-cpu==0.11.2"
SO_NAME = "pjrt_c_api_cpu_plugin.so"


@pytest.fixture
def suite() -> Path:
    if not SUITE.is_dir():
        pytest.skip("../shared/stablehlo-suite is absent")
    return SUITE


@pytest.fixture
def interpret(suite: Path) -> Path:
    return suite / "interpret"


@pytest.fixture
def testdata(suite: Path) -> Path:
    return suite / "testdata"


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "stablehlo-conform" / WHEEL.replace("==", "-")


def _install_plugin() -> Path | None:
    """The plugin library: from the installed package, else installed once
    with ``pip install --no-deps --target`` into a cache (its metadata pins
    an older jax, so a plain install would downgrade the bindings)."""
    spec = importlib.util.find_spec("lammps_jax_pjrt_cpu")
    if spec is not None and spec.origin:
        so = Path(spec.origin).parent / SO_NAME
        if so.is_file():
            return so
    target = _cache_dir()
    so = target / "lammps_jax_pjrt_cpu" / SO_NAME
    target.parent.mkdir(parents=True, exist_ok=True)
    import fcntl

    with open(target.parent / ".lock", "w") as lock:  # xdist workers install it once
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not so.is_file():
            tmp = target.with_name(target.name + f".tmp{os.getpid()}")
            try:
                subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile",
                                "--disable-pip-version-check", "--target", str(tmp), WHEEL],
                               capture_output=True, timeout=900, check=True)
                tmp.rename(target)
            except (subprocess.SubprocessError, OSError):
                return None
    return so if so.is_file() else None


@pytest.fixture(scope="session")
def plugin() -> Path:
    so = _install_plugin()
    if so is None:
        pytest.skip(f"{WHEEL} cannot be installed here")
    return so
