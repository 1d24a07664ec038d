"""``stablehlo.custom_call`` (spec.md#custom_call): a registry of named targets.

A target is ``fn(op, *operands) -> tuple`` registered with
:func:`custom_target` (or, for a family of names, :func:`custom_prefix`).
``backend_config`` arrives decoded: a string (bytes when not UTF-8) for
``api_version`` 1-3, a dictionary for the typed FFI (``api_version = 4``).
An unknown target makes the test ``unsupported``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from ..opinfo import STORAGE
from .registry import kernel

_TARGETS: dict[str, Callable[..., tuple]] = {}
_PREFIXES: dict[str, Callable[..., tuple]] = {}
TARGETS: Mapping[str, Callable[..., tuple]] = MappingProxyType(_TARGETS)
"""Target name -> function, read-only: targets are added by :func:`custom_target` only."""
PREFIXES: Mapping[str, Callable[..., tuple]] = MappingProxyType(_PREFIXES)
"""Targets named by a prefix (``mhlo.``), read-only: added by :func:`custom_prefix` only."""


def _refuse_twice(table: Mapping, what: str, name: str, fn: Callable[..., tuple]) -> None:
    """Refuse ``name`` where it already has another function in ``table`` (as the kernel
    registry refuses a second kernel for an op)."""
    old = table.get(name)
    if old is not None and old is not fn:
        raise ValueError(f"custom_call {what} {name!r} registered twice ({old.__qualname__}, {fn.__qualname__})")


def custom_target(*names: str):
    """Register ``fn(op, *operands) -> tuple`` as the target of each of ``names``; a name
    registered to another function is refused (and then none of ``names`` is added)."""
    def deco(fn):
        for n in names:
            _refuse_twice(_TARGETS, "target", n, fn)
        _TARGETS.update(dict.fromkeys(names, fn))
        return fn

    return deco


def custom_prefix(prefix: str):
    """Register ``fn`` for every target whose name starts with ``prefix`` and that has no
    target of its own; a prefix registered to another function is refused."""
    def deco(fn):
        _refuse_twice(_PREFIXES, "prefix", prefix, fn)
        _PREFIXES[prefix] = fn
        return fn

    return deco


def target_kernel(target: str) -> Callable[..., tuple] | None:
    fn = TARGETS.get(target)
    if fn is None:
        fn = next((f for p, f in PREFIXES.items() if target.startswith(p)), None)
    return fn


@kernel("stablehlo.custom_call", quantized=STORAGE)
def custom_call(op, *operands):
    target = op.attr("call_target_name")
    fn = target_kernel(target)
    if fn is None:
        raise op.unsupported(f"custom_call target {target!r}")
    return tuple(fn(op, *operands))
