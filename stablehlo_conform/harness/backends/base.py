"""The Backend interface and the errors every backend raises.

A backend runs a function on NumPy arrays and runs a self-checking test. The
machinery native backends share lives beside it, one job per module:
:mod:`.native` (running MLIR text), :mod:`.isolated` (the child-process
protocol), :mod:`.wire` (wire-type conversion) and :mod:`.checks` (check
evaluation on the host). :mod:`.pjrt` runs any PJRT client through it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import ConformError
from ..records.options import RunOptions
from ..records.result import Outcome


class BackendUnavailable(ConformError):
    """The backend cannot run here (not installed, or cannot start)."""

    status = "error"


class BackendCrash(ConformError):
    """A native backend killed its process."""

    status = "crash"


class BackendError(ConformError):
    """A native backend rejected or failed to run a program."""

    status = "error"


class Backend:
    """Runs programs. Subclasses implement :meth:`run_function`.

    ``run_test`` runs a self-checking test function (no arguments) and
    returns an :class:`..result.Outcome` (backends written against the older
    interface return its fields as a dictionary: ``status``, ``message``,
    ``checks``; :meth:`..records.result.Outcome.of` reads both).
    ``test_values`` returns the values a test's checks look at (the first
    operand of each check op, in program order), for comparing backends.
    Each receives the run's :class:`..records.options.RunOptions` (frozen;
    None: the defaults).
    """

    name = "backend"

    @property
    def label(self) -> str:
        """The name in messages (a plugin's library path shortened)."""
        return self.name

    def run_function(self, module, func_name: str, args: Sequence[np.ndarray],
                     opts: RunOptions | None = None) -> tuple:
        raise NotImplementedError

    def run_test(self, module, func, opts: RunOptions | None) -> Outcome | dict[str, Any]:
        raise NotImplementedError

    def test_values(self, module, func, opts: RunOptions | None) -> list[np.ndarray]:
        raise NotImplementedError


# Names that lived here before the machinery moved into its own modules.
_MOVED = {
    "NativeBackend": "native", "Isolated": "isolated", "describe_exit": "isolated",
    "BASIC": "wire", "Wire": "wire", "wire_for": "wire", "encode": "wire", "decode": "wire",
    "wrapper_text": "wire", "splice": "wire", "replicated_attr": "wire",
    "check_ops": "checks", "is_check": "checks", "evaluate_checks": "checks", "check_outcome": "checks",
}


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        import importlib

        return getattr(importlib.import_module(f"{__package__}.{_MOVED[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
