"""Backends that multiply f32 dot / convolution operands in TF32, as GPUs do.

``Tf32Default`` rounds f32 operands of ``dot_general``, ``dot`` and
``convolution`` to TF32 (11 significant bits, nearest even) when the op's
``precision_config`` is DEFAULT (what the spec allows: the levels are the
implementation's to define) or its ``algorithm`` names tf32 operands; ``Tf32Always`` does it at every level, HIGHEST
included (which the spec does not allow: HIGHEST is the most accurate),
whatever ``algorithm`` asks (a silent fallback).
Both are the NumPy engine with kernel overrides.
"""

from __future__ import annotations

import numpy as np

from stablehlo_conform.harness.backends.numpy_backend import NumpyBackend
from stablehlo_conform.kernels.registry import load_all
from stablehlo_conform.oracle.precision import from_attribute, level_of, tf32_round

DOT_KERNELS = ("stablehlo.dot_general", "stablehlo.dot", "stablehlo.convolution")


def _tf32(levels: tuple[str, ...], honour_algorithm: bool = True):
    base = load_all()

    def wrap(name):
        inner = base.lookup(name)

        def kernel(op, lhs, rhs, *rest):
            alg = from_attribute(op.attrs.get("algorithm")) if honour_algorithm else None
            if (alg.lhs_bits == 11 and alg.primitive_operations == 1) if alg is not None else level_of(op) in levels:
                lhs, rhs = (tf32_round(a) if a.dtype == np.float32 else a for a in (lhs, rhs))
            return inner(op, lhs, rhs, *rest)

        return kernel

    return base.with_overrides({name: wrap(name) for name in DOT_KERNELS})


class Tf32Default(NumpyBackend):
    name = "tf32-default"

    def __init__(self):
        super().__init__(registry=_tf32(("DEFAULT",)))


class Tf32Always(NumpyBackend):
    name = "tf32-always"

    def __init__(self):
        super().__init__(registry=_tf32(("DEFAULT", "HIGH", "HIGHEST"), honour_algorithm=False))


ENTRY_POINTS = "[stablehlo_conform.backends]\ntf32-default = precision_backends:Tf32Default\n" \
               "tf32-always = precision_backends:Tf32Always\n"
