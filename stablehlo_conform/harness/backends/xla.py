"""XLA's CPU compiler as a backend: the PJRT backend (:mod:`.pjrt`) over
jaxlib's built-in CPU client, so both share one code path.

Every element type NumPy/ml_dtypes knows crosses directly; f6 types are
refused (XLA aborts on them). Compiled executables are cached per program
text.

A program for several devices (``mhlo.num_replicas`` x ``mhlo.num_partitions``
above 1: sharded JAX exports) runs on that many CPU devices. XLA CPU has one
device unless ``XLA_FLAGS`` holds ``--xla_force_host_platform_device_count=N``
when jaxlib creates its client, so the backend's child process is started
(again) with that flag when a program needs more devices than it has.
"""

from __future__ import annotations

import os
import re
from typing import Any

from ...errors import UnsupportedOp
from ...process_grid import grid_limit_error
from .isolated import Isolated
from .pjrt import PjrtBackend, grid_of_text

DEVICE_FLAG = "--xla_force_host_platform_device_count"
_FLAG_RE = re.compile(re.escape(DEVICE_FLAG) + r"=(\d+)")


def forced_devices(flags: str | None) -> int:
    """The CPU device count ``XLA_FLAGS`` asks for (1 when it does not)."""
    m = _FLAG_RE.search(flags or "")
    return int(m.group(1)) if m else 1


def with_device_count(flags: str | None, n: int) -> str:
    """``XLA_FLAGS`` with the CPU device count set to ``n``."""
    flags = _FLAG_RE.sub("", flags or "").strip()
    return f"{flags} {DEVICE_FLAG}={n}".strip()


class XlaBackend(PjrtBackend):
    name = "xla"
    spec = "stablehlo_conform.harness.backends.xla:XlaBackend"

    def __init__(self) -> None:
        super().__init__(None)
        self._child_devices = forced_devices(os.environ.get("XLA_FLAGS"))

    def make_client(self) -> Any:
        """jaxlib's CPU client as JAX builds it, without loading plugins,
        with its LAPACK handlers ready."""
        from jax._src import xla_bridge

        client = xla_bridge.make_cpu_client()
        initialize_lapack()
        return client

    def child_env(self) -> dict[str, str]:
        return {}

    def _call(self, text, args, opts, default_isolate=None, method="execute"):
        """A program's call, in a child with as many CPU devices as its grid
        asks for: a grid over :data:`~...process_grid.MAX_PROCESSES` is
        refused before any child starts (that child would never start, and
        every later program would wait on it)."""
        r, p = grid_of_text(text)
        too_large = grid_limit_error(r, p)
        if too_large:
            raise UnsupportedOp(self.label, too_large)
        if r * p > self._child_devices:
            n = max(r * p, 8)
            if self._child is not None:
                self._child.close(kill=True)
            self._child = Isolated(self.spec, self.name, self.init,
                                   env={"XLA_FLAGS": with_device_count(os.environ.get("XLA_FLAGS"), n)})
            self._child_devices = n
        return super()._call(text, args, opts, default_isolate, method)


def initialize_lapack() -> None:
    """Fill in jaxlib's LAPACK custom-call handlers (``lapack_*_ffi``): jaxlib
    registers them at import but sets their LAPACK function pointers only
    when asked (JAX does it while lowering); compiling a program that calls
    them first would crash."""
    try:
        from jaxlib import lapack
    except ImportError:  # a jaxlib without CPU LAPACK handlers
        return
    lapack._lapack.initialize()
