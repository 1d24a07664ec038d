"""XLA's CPU compiler (through jaxlib's client) as a backend.

Every element type NumPy/ml_dtypes knows crosses directly; f6 types are
refused (XLA aborts on them). Compiled executables are cached per program
text.

A program for several devices (``mhlo.num_replicas`` x ``mhlo.num_partitions``
above 1: sharded JAX exports) is compiled for that many CPU devices with
SPMD partitioning (Shardy when it carries ``sdy``), its arguments given whole
to every device and its results read from the first. XLA CPU has one device
unless ``XLA_FLAGS`` holds ``--xla_force_host_platform_device_count=N`` when
jaxlib creates its client, so the backend's child process is started (again)
with that flag when a program needs more devices than it has.
"""

from __future__ import annotations

import os
import re

import numpy as np

from ...errors import UnsupportedOp
from .base import BackendError, BackendUnavailable, Isolated, NativeBackend

DEVICE_FLAG = "--xla_force_host_platform_device_count"
_GRID_RE = re.compile(r"mhlo\.num_(replicas|partitions)\s*=\s*(\d+)")
_FLAG_RE = re.compile(re.escape(DEVICE_FLAG) + r"=(\d+)")


def grid_of_text(text: str) -> tuple[int, int]:
    """``(num_replicas, num_partitions)`` from a printed module's attributes."""
    head = next((ln for ln in text.splitlines() if ln.startswith("module")), "")
    found = dict((k, int(v)) for k, v in _GRID_RE.findall(head))
    return max(1, found.get("replicas", 1)), max(1, found.get("partitions", 1))


def forced_devices(flags: str | None) -> int:
    """The CPU device count ``XLA_FLAGS`` asks for (1 when it does not)."""
    m = _FLAG_RE.search(flags or "")
    return int(m.group(1)) if m else 1


def with_device_count(flags: str | None, n: int) -> str:
    """``XLA_FLAGS`` with the CPU device count set to ``n``."""
    flags = _FLAG_RE.sub("", flags or "").strip()
    return f"{flags} {DEVICE_FLAG}={n}".strip()


class XlaBackend(NativeBackend):
    name = "xla"
    native = None
    isolate = True
    spec = "stablehlo_conform.harness.backends.xla:XlaBackend"

    def __init__(self) -> None:
        super().__init__()
        self._client = None
        self._cache: dict[str, object] = {}
        self._child_devices = forced_devices(os.environ.get("XLA_FLAGS"))

    def check_available(self) -> None:
        try:
            import jax  # noqa: F401
        except ImportError as e:  # pragma: no cover
            raise BackendUnavailable(f"xla backend needs jax/jaxlib: {e}") from None

    def _call(self, text, args, opts, default_isolate=None):
        r, p = grid_of_text(text)
        if r * p > self._child_devices:
            n = max(r * p, 8)
            if self._child is not None:
                self._child.close(kill=True)
            self._child = Isolated(self.spec, self.name,
                                   env={"XLA_FLAGS": with_device_count(os.environ.get("XLA_FLAGS"), n)})
            self._child_devices = n
        return super()._call(text, args, opts, default_isolate)

    def _backend(self, devices: int = 1):
        if self._client is None:
            from jax._src import xla_bridge

            flags = os.environ.get("XLA_FLAGS")
            if devices > forced_devices(flags) and not xla_bridge.backends_are_initialized():
                os.environ["XLA_FLAGS"] = with_device_count(flags, devices)
            self._client = xla_bridge.get_backend("cpu")
            initialize_lapack()
        return self._client

    def _compile(self, be, text: str, replicas: int, partitions: int):
        from jax._src.lib import xla_client as xc

        n = replicas * partitions
        devices = be.devices()
        if n == 1:
            return be.compile_and_load(text, xc.DeviceList(tuple(devices[:1])), xc.CompileOptions())
        if len(devices) < n:
            raise BackendError(f"xla: the program runs on {n} devices ({replicas} replicas x {partitions} "
                               f"partitions) but XLA CPU has {len(devices)}; set XLA_FLAGS={DEVICE_FLAG}={n} "
                               "before jax starts")
        from jax._src import compiler

        ids = np.array([d.id for d in devices[:n]]).reshape(replicas, partitions)
        options = compiler.get_compile_options(replicas, partitions, device_assignment=ids)
        options.executable_build_options.use_shardy_partitioner = "sdy." in text
        return be.compile_and_load(text, xc.DeviceList(tuple(devices[:n])), options)

    def execute(self, text: str, args: list[np.ndarray]) -> list[np.ndarray]:
        import jax

        r, p = grid_of_text(text)
        be = self._backend(r * p)
        exe = self._cache.get(text)
        if exe is None:
            try:
                exe = self._compile(be, text, r, p)
            except BackendError:
                raise
            except Exception as e:
                msg = str(e).strip()
                if "UNIMPLEMENTED" in msg or "not supported" in msg.lower() or "unsupported" in msg.lower():
                    raise UnsupportedOp("xla", msg.splitlines()[0][:300]) from None
                raise BackendError(f"xla: compile failed: {msg[:500]}") from None
            if len(self._cache) > 256:
                self._cache.clear()
            self._cache[text] = exe
        try:
            where = be.devices()[0]
            if r * p > 1:  # whole on every device
                from jax.sharding import Mesh, NamedSharding, PartitionSpec

                where = NamedSharding(Mesh(np.array(be.devices()[:r * p]), ("devices",)), PartitionSpec())
            with jax.enable_x64(True):
                bufs = [jax.device_put(np.asarray(a), where) for a in args]
            out = exe.execute_sharded(bufs)
            return [np.asarray(x[0]) for x in out.disassemble_into_single_device_arrays()]
        except Exception as e:
            raise BackendError(f"xla: execution failed: {str(e).strip()[:500]}") from None


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
