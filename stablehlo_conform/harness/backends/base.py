"""The Backend interface."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import ConformError


class BackendUnavailable(ConformError):
    """The backend cannot run here (not installed, or cannot start)."""

    status = "error"


class Backend:
    """Runs programs. Subclasses implement :meth:`run_function`.

    ``run_test`` runs a self-checking test function (no arguments) and
    returns a partial result record: ``status``, ``message``, ``checks``.
    """

    name = "backend"

    def run_function(self, module, func_name: str, args: Sequence[np.ndarray], opts: Any = None) -> tuple:
        raise NotImplementedError

    def run_test(self, module, func, opts) -> dict[str, Any]:
        raise NotImplementedError
