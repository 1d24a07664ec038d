"""IREE (``iree-base-compiler`` + ``iree-base-runtime``, the ``[iree]``
extra) compiling StableHLO for its CPU target as a backend."""

from __future__ import annotations

import numpy as np

from .base import BackendError, BackendUnavailable
from .native import NativeBackend
from .wire import BASIC


class IreeBackend(NativeBackend):
    name = "iree"
    native = BASIC | {"bf16", "complex<f32>", "complex<f64>"}
    isolate = True
    spec = "stablehlo_conform.harness.backends.iree:IreeBackend"

    def check_available(self) -> None:
        try:
            import iree.compiler  # noqa: F401
            import iree.runtime  # noqa: F401
        except ImportError as e:
            raise BackendUnavailable(
                f"iree backend is not installed ({e.name or e}); "
                "install the extra: pip install 'stablehlo-conform[iree]'") from None

    def execute(self, text: str, args: list[np.ndarray]) -> list[np.ndarray]:
        self.check_available()
        import iree.compiler as ic
        import iree.runtime as rt

        try:
            vmfb = ic.compile_str(text, target_backends=["llvm-cpu"], input_type="stablehlo",
                                  extra_args=["--iree-llvmcpu-target-cpu=host",
                                              "--iree-input-demote-f64-to-f32=false"])
        except Exception as e:
            raise BackendError(f"iree: compile failed: {str(e).strip()[:500]}") from None
        try:
            out = rt.load_vm_flatbuffer(vmfb, driver="local-task").main(*args)
        except Exception as e:
            raise BackendError(f"iree: execution failed: {str(e).strip()[:500]}") from None
        if out is None:
            return []
        if not isinstance(out, (tuple, list)):
            out = [out]
        return [np.asarray(o.to_host() if hasattr(o, "to_host") else o) for o in out]
