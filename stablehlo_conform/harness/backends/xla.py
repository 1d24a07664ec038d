"""XLA's CPU compiler as a backend: the PJRT backend (:mod:`.pjrt`) over
jaxlib's built-in CPU client, so both share one code path.

Every element type NumPy/ml_dtypes knows crosses directly; f6 types are
refused (XLA aborts on them). Compiled executables are cached per program
text.
"""

from __future__ import annotations

from typing import Any

from .pjrt import PjrtBackend


class XlaBackend(PjrtBackend):
    name = "xla"
    spec = "stablehlo_conform.harness.backends.xla:XlaBackend"

    def __init__(self) -> None:
        super().__init__(None)

    def make_client(self) -> Any:
        """jaxlib's CPU client as JAX builds it, without loading plugins."""
        from jax._src import xla_bridge

        return xla_bridge.make_cpu_client()
