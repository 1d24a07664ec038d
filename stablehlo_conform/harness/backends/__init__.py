"""Backends: something that runs a program and returns NumPy outputs.

Built in: ``numpy`` (this package's engine), ``reference`` (the official
StableHLO interpreter), ``xla`` (XLA CPU through jaxlib), ``iree`` (when
the ``[iree]`` extra is installed) and ``pjrt:PATH`` / ``pjrt:NAME`` (any
PJRT plugin, see :mod:`.pjrt`). Other backends register under the
entry-point group ``stablehlo_conform.backends``.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any

from ... import frontend
from ...program import Module
from ..records.names import display_name, shorten_names
from .base import Backend, BackendCrash, BackendUnavailable
from .native import LOAD_SECONDS
from .pjrt import PREFIX, PjrtBackend, check_stablehlo, check_target, discover, parse_name

_BUILTIN = {
    "numpy": "stablehlo_conform.harness.backends.numpy_backend:NumpyBackend",
    "reference": "stablehlo_conform.harness.backends.reference:ReferenceBackend",
    "xla": "stablehlo_conform.harness.backends.xla:XlaBackend",
    "iree": "stablehlo_conform.harness.backends.iree:IreeBackend",
}
_cache: dict[str, Backend] = {}


def _load(spec: str) -> Any:
    mod, _, attr = spec.partition(":")
    return getattr(importlib.import_module(mod), attr)


def available() -> dict[str, str]:
    """Backend name -> where it comes from (builtin or an installed plugin)."""
    out = {name: "builtin" for name in _BUILTIN}
    for name, (how, where) in sorted(discover().items()):
        out[PREFIX + name] = f"PJRT plugin ({how}: {where})"
    try:
        for ep in entry_points(group="stablehlo_conform.backends"):
            out.setdefault(ep.name, f"plugin {ep.value}")
    except Exception:  # pragma: no cover
        pass
    return out


def check_name(name: str, load_timeout: float | None = LOAD_SECONDS) -> None:
    """Raise :class:`BackendUnavailable` (with what exists) unless ``name``
    names a backend: a built-in one, an installed plugin or ``pjrt:...``
    with an existing library or an installed PJRT plugin's name that loads
    and creates its client within ``load_timeout`` seconds (the plugin's own
    message when it does not) and has the device the name asks for."""
    if name.startswith("pjrt:"):
        spec = parse_name(name)
        check_target(spec)
        check_stablehlo(spec)
        get_backend(name).check_loads(load_timeout)
    elif name not in available():
        raise BackendUnavailable(f"unknown backend {name!r}; available: {', '.join(sorted(available()))}, "
                                 "pjrt:/path/to/plugin.so")


def get_backend(name: str) -> Backend:
    b = _cache.get(name)
    if b is not None:
        return b
    if name.startswith("pjrt:"):
        b = _cache[name] = PjrtBackend(name)
        return b
    if name in _BUILTIN:
        cls = _load(_BUILTIN[name])
    else:
        eps = [ep for ep in entry_points(group="stablehlo_conform.backends") if ep.name == name]
        if not eps:
            raise BackendUnavailable(f"unknown backend {name!r} (available: {', '.join(sorted(available()))})")
        cls = eps[0].load()
    b = cls() if isinstance(cls, type) else cls
    _cache[name] = b
    return b


def evaluate(program, *arrays, backend: str = "numpy", entry: str = "main") -> tuple:
    """Run ``entry`` of ``program`` (a path, MLIR text, bytes or a loaded
    module) on ``arrays`` with a backend; returns a tuple of NumPy arrays."""
    if not isinstance(program, Module):
        program = frontend.load(program)[0]
    if entry not in program.funcs and len(program.funcs) == 1:
        entry = next(iter(program.funcs))
    return tuple(get_backend(backend).run_function(program, entry, arrays))


__all__ = ["LOAD_SECONDS", "Backend", "BackendCrash", "BackendUnavailable", "available", "check_name",
           "display_name", "evaluate", "get_backend", "shorten_names"]
