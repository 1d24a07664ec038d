"""``stablehlo.custom_call`` (spec.md#custom_call): a registry of named targets.

A target is ``fn(op, *operands) -> tuple`` registered with
:func:`custom_target` (or, for a family of names, :func:`custom_prefix`).
``backend_config`` arrives decoded: a string (bytes when not UTF-8) for
``api_version`` 1-3, a dictionary for the typed FFI (``api_version = 4``).
An unknown target makes the test ``unsupported``.
"""

from __future__ import annotations

from collections.abc import Callable

from .registry import kernel

TARGETS: dict[str, Callable[..., tuple]] = {}
PREFIXES: dict[str, Callable[..., tuple]] = {}  # targets named by a prefix (``mhlo.``)


def custom_target(*names: str):
    def deco(fn):
        for n in names:
            TARGETS[n] = fn
        return fn

    return deco


def custom_prefix(prefix: str):
    def deco(fn):
        PREFIXES[prefix] = fn
        return fn

    return deco


def target_kernel(target: str) -> Callable[..., tuple] | None:
    fn = TARGETS.get(target)
    if fn is None:
        fn = next((f for p, f in PREFIXES.items() if target.startswith(p)), None)
    return fn


@kernel("stablehlo.custom_call")
def custom_call(op, *operands):
    target = op.attr("call_target_name")
    fn = target_kernel(target)
    if fn is None:
        raise op.unsupported(f"custom_call target {target!r}")
    return tuple(fn(op, *operands))
