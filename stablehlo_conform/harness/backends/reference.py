"""The official StableHLO reference interpreter (``eval_module`` of the
bindings) as a backend.

It exchanges only bool, standard integers and f16/f32/f64 through the
bindings, so other element types travel as bit patterns or real and
imaginary parts (see :mod:`.base`). It aborts its process on unsupported
ops, integer division by zero, complex FFT and more, so by default it runs
in a child process.
"""

from __future__ import annotations

import numpy as np

from ... import frontend
from .base import BackendError
from .native import NativeBackend
from .wire import BASIC


class ReferenceBackend(NativeBackend):
    name = "reference"
    native = BASIC
    isolate = True
    spec = "stablehlo_conform.harness.backends.reference:ReferenceBackend"

    def execute(self, text: str, args: list[np.ndarray]) -> list[np.ndarray]:
        try:
            return frontend.eval_reference(text, list(args))
        except Exception as e:
            msg = str(e).strip() or type(e).__name__
            raise BackendError(f"reference interpreter: {msg}") from None
