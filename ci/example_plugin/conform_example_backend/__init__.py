"""An example vendor backend for stablehlo-conform.

It is the built-in NumPy backend with one deliberately wrong kernel:
``stablehlo.add`` on ``i16`` tensors returns ``lhs + rhs + 1`` (wrapping
like the type does). Every other op and element type runs the reference
kernels, so a conformance run reports exactly the ``i16`` add tests as
failures; ``known_failures.json`` next to this package is the baseline
that lists them.

A real vendor backend subclasses
:class:`stablehlo_conform.harness.backends.base.Backend` and implements
``run_test`` (run a self-checking test function, return ``status``,
``message``, ``checks``) and ``run_function`` (run a function on NumPy
arrays), then registers the class under the entry-point group
``stablehlo_conform.backends`` (see pyproject.toml).
"""

from __future__ import annotations

import numpy as np

from stablehlo_conform.harness.backends.numpy_backend import NumpyBackend
from stablehlo_conform.kernels.registry import load_all

__all__ = ["ExampleBackend", "PLANTED_OP", "PLANTED_TYPE", "planted_add"]
__version__ = "0.1.0"

PLANTED_OP = "stablehlo.add"
PLANTED_TYPE = "i16"


def planted_add(op, lhs, rhs):
    """``stablehlo.add`` that is right for every element type but i16,
    where it adds one more (the bug this example backend plants)."""
    reference = load_all().lookup(PLANTED_OP)
    if reference is None:
        raise op.unsupported("the reference backend has no kernel for stablehlo.add")
    out = reference(op, lhs, rhs)
    if str(op.result_element(0)) != PLANTED_TYPE:
        return out
    (res,) = out
    res = np.asarray(res)
    with np.errstate(over="ignore"):
        wrong = np.asarray(res + np.ones_like(res), dtype=res.dtype)
    return (wrong,)


class ExampleBackend(NumpyBackend):
    """The NumPy backend with :func:`planted_add` in place of stablehlo.add."""

    name = "example"

    def __init__(self) -> None:
        super().__init__(registry=load_all().with_overrides({PLANTED_OP: planted_add}))
