"""Backends with one planted bug, for the model tests (and for ``conform run
--backend planted-exp`` through an entry point the tests write)."""

from __future__ import annotations

import numpy as np

from stablehlo_conform.harness.backends.numpy_backend import NumpyBackend
from stablehlo_conform.kernels.registry import load_all

BASE = load_all()


def bad_exp(op, x):
    """``exponential`` 5% too large for negative inputs."""
    (r,) = BASE.lookup("stablehlo.exponential")(op, x)
    r = np.asarray(r)
    return (np.where(np.asarray(x) < 0, (r.astype(np.float64) * 1.05).astype(r.dtype), r),)


def bad_conv(op, *operands):
    """``convolution`` whose last output row (the dimension before the last
    two of an NHWC result) is off by 5% of the result's largest value."""
    (r,) = BASE.lookup("stablehlo.convolution")(op, *operands)
    r = np.array(r)
    big = float(np.abs(r.astype(np.float64)).max())
    r[..., -1, :, :] = (r[..., -1, :, :].astype(np.float64) + 0.05 * big).astype(r.dtype)
    return (r,)


class PlantedExp(NumpyBackend):
    name = "planted-exp"

    def __init__(self):
        super().__init__(registry=BASE.with_overrides({"stablehlo.exponential": bad_exp}))


class PlantedConv(NumpyBackend):
    name = "planted-conv"

    def __init__(self):
        super().__init__(registry=BASE.with_overrides({"stablehlo.convolution": bad_conv}))
