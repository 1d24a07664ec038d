"""The kernel registry: op name -> NumPy kernel.

A kernel is ``fn(op, *operands) -> tuple`` where ``op`` is the engine's
:class:`~stablehlo_conform.engine.OpContext` (decoded attributes, types,
regions as callables) and the operands are NumPy arrays (tuples, tokens).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping

Kernel = Callable[..., tuple]


class Registry:
    """A mapping of op names to kernels with layered overrides."""

    def __init__(self, table: Mapping[str, Kernel] | None = None, parent: "Registry | None" = None):
        self._table: dict[str, Kernel] = dict(table or {})
        self._parent = parent

    def register(self, name: str, fn: Kernel, replace: bool = False) -> None:
        if name in self._table and not replace:
            raise ValueError(f"kernel for {name} registered twice")
        self._table[name] = fn

    def lookup(self, name: str) -> Kernel | None:
        fn = self._table.get(name)
        if fn is None and self._parent is not None:
            return self._parent.lookup(name)
        return fn

    def __contains__(self, name: str) -> bool:
        return self.lookup(name) is not None

    def names(self) -> list[str]:
        names = set(self._table)
        if self._parent is not None:
            names |= set(self._parent.names())
        return sorted(names)

    def with_overrides(self, overrides: Mapping[str, Kernel]) -> "Registry":
        """A new registry that answers ``overrides`` first, then this one."""
        return Registry(overrides, parent=self)


KERNELS = Registry()
_loaded = False


def kernel(*names: str) -> Callable[[Kernel], Kernel]:
    """Register ``fn`` as the kernel of each op name given."""

    def deco(fn: Kernel) -> Kernel:
        for n in names:
            KERNELS.register(n, fn)
        return fn

    return deco


def load_all() -> Registry:
    """Import every kernel module of this package (once) and return KERNELS."""
    global _loaded
    if not _loaded:
        from .. import kernels as pkg

        for info in pkgutil.iter_modules(pkg.__path__):
            if info.name not in ("registry",) and not info.name.startswith("_"):
                importlib.import_module(f"{pkg.__name__}.{info.name}")
        _loaded = True
    return KERNELS
