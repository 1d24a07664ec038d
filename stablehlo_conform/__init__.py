"""stablehlo-conform: StableHLO conformance testing with NumPy kernels.

Public API (imports are lazy so that ``conform`` starts fast):

- :func:`load` — parse a file or text into program modules.
- :func:`evaluate` — run a program on NumPy arrays.
"""

from __future__ import annotations

__version__ = "0.1.0"


def load(path_or_text, split: bool = False):
    """Parse a file path (text, bytecode or portable artifact) or MLIR text."""
    from pathlib import Path

    from . import frontend  # lazy: `import stablehlo_conform` stays light (see above)

    if isinstance(path_or_text, bytes):
        return [frontend.load_bytes(path_or_text)]
    p = Path(str(path_or_text))
    if "\n" not in str(path_or_text) and p.exists():
        return frontend.load_file(p, split=split)
    return frontend.load_text(str(path_or_text), split=split)


def evaluate(program, *arrays, backend: str = "numpy", entry: str = "main"):
    """Run ``entry`` of ``program`` (a path, MLIR text, bytes or a loaded
    module) on ``arrays``; returns a tuple of NumPy arrays."""
    from .harness.backends import get_backend  # lazy (see above)
    from .program import Module  # lazy (see above)

    module = program if isinstance(program, Module) else load(program)[0]
    if entry not in module.funcs and len(module.funcs) == 1:
        entry = next(iter(module.funcs))
    return tuple(get_backend(backend).run_function(module, entry, arrays))
