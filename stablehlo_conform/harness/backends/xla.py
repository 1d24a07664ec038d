"""XLA's CPU compiler (through jaxlib's client) as a backend.

Every element type NumPy/ml_dtypes knows crosses directly; f6 types are
refused (XLA aborts on them). Compiled executables are cached per program
text.
"""

from __future__ import annotations

import numpy as np

from ...errors import UnsupportedOp
from .base import BackendError, BackendUnavailable
from .native import NativeBackend


class XlaBackend(NativeBackend):
    name = "xla"
    native = None
    isolate = True
    spec = "stablehlo_conform.harness.backends.xla:XlaBackend"

    def __init__(self) -> None:
        super().__init__()
        self._client = None
        self._cache: dict[str, object] = {}

    def check_available(self) -> None:
        try:
            import jax  # noqa: F401
        except ImportError as e:  # pragma: no cover
            raise BackendUnavailable(f"xla backend needs jax/jaxlib: {e}") from None

    def _backend(self):
        if self._client is None:
            from jax._src import xla_bridge

            self._client = xla_bridge.get_backend("cpu")
        return self._client

    def execute(self, text: str, args: list[np.ndarray]) -> list[np.ndarray]:
        import jax
        from jax._src.lib import xla_client as xc

        be = self._backend()
        exe = self._cache.get(text)
        if exe is None:
            try:
                exe = be.compile_and_load(text, xc.DeviceList(tuple(be.devices()[:1])), xc.CompileOptions())
            except Exception as e:
                msg = str(e).strip()
                if "UNIMPLEMENTED" in msg or "not supported" in msg.lower() or "unsupported" in msg.lower():
                    raise UnsupportedOp("xla", msg.splitlines()[0][:300]) from None
                raise BackendError(f"xla: compile failed: {msg[:500]}") from None
            if len(self._cache) > 256:
                self._cache.clear()
            self._cache[text] = exe
        try:
            with jax.enable_x64(True):
                bufs = [jax.device_put(np.asarray(a), be.devices()[0]) for a in args]
            out = exe.execute_sharded(bufs)
            return [np.asarray(x[0]) for x in out.disassemble_into_single_device_arrays()]
        except Exception as e:
            raise BackendError(f"xla: execution failed: {str(e).strip()[:500]}") from None
