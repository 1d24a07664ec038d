"""The kernel registry: op name -> NumPy kernel (and the op's other facts).

A kernel is ``fn(op, *operands) -> tuple`` where ``op`` is an
:class:`~stablehlo_conform.kernels.context.OpContext` (decoded attributes, types,
regions as callables) and the operands are NumPy arrays (tuples, tokens).
The registry itself, with each op's :class:`~stablehlo_conform.opinfo.OpInfo`,
is :mod:`stablehlo_conform.opinfo`; this module loads the kernels into it.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable

from ..opinfo import OPS, Kernel, OpInfo, Registry, register_op

__all__ = ["KERNELS", "Kernel", "OpInfo", "Registry", "kernel", "kernel_of", "load_all", "register_op"]

KERNELS = OPS
_loaded = False


def kernel(*names: str, **facts) -> Callable[[Kernel], Kernel]:
    """Register ``fn`` as the kernel of each op name given (with ``facts``, see
    :func:`~stablehlo_conform.opinfo.register_op`)."""

    def deco(fn: Kernel) -> Kernel:
        for n in names:
            KERNELS.register(n, fn)
            if facts:
                KERNELS.declare(n, **facts)
        return fn

    return deco


def kernel_of(k: Kernel, *names: str, label: str | None = None, doc: str | None = None, **facts) -> Kernel:
    """Register ``k``, a kernel built by a helper (one closure per op or per function), as
    the kernel of each op name given, with ``facts`` (as :func:`kernel`); ``k`` is named
    ``label`` (default: the first op name with ``.`` as ``_``) and documented ``doc`` where
    given. Returns ``k``."""
    k.__name__ = label if label is not None else names[0].replace(".", "_")
    if doc is not None:
        k.__doc__ = doc
    return kernel(*names, **facts)(k)


def load_all() -> Registry:
    """Import every kernel module of this package (once) and return KERNELS."""
    global _loaded
    if not _loaded:
        pkg_name = __name__.rsplit(".", 1)[0]
        pkg = importlib.import_module(pkg_name)
        for info in pkgutil.iter_modules(pkg.__path__):
            if info.name not in ("registry", "context") and not info.name.startswith("_"):
                importlib.import_module(f"{pkg_name}.{info.name}")
        _loaded = True
    return KERNELS
