"""stablehlo-conform: StableHLO conformance testing with NumPy kernels.

Public API (imports are lazy so that ``conform`` starts fast):

- :func:`load` — parse a file or text into program modules (:func:`.frontend.load`).
- :func:`evaluate` — run a program on NumPy arrays (:func:`.harness.backends.evaluate`).

This module is the top of the package: nothing inside the package imports it
(the version lives in :mod:`.version`).
"""

from __future__ import annotations

from .version import __version__

__all__ = ["__version__", "evaluate", "load"]


def load(path_or_text, split: bool = False):
    """Parse a file path (text, bytecode or portable artifact) or MLIR text."""
    from .frontend import load as load_program  # lazy: `import stablehlo_conform` stays light

    return load_program(path_or_text, split=split)


def evaluate(program, *arrays, backend: str = "numpy", entry: str = "main"):
    """Run ``entry`` of ``program`` (a path, MLIR text, bytes or a loaded
    module) on ``arrays``; returns a tuple of NumPy arrays."""
    from .harness.backends import evaluate as run  # lazy: `import stablehlo_conform` stays light

    return run(program, *arrays, backend=backend, entry=entry)
