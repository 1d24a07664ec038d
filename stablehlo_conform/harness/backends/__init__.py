"""Backends: something that runs a program and returns NumPy outputs.

Built in: ``numpy`` (this package's engine), ``reference`` (the official
StableHLO interpreter), ``xla`` (XLA CPU through jaxlib), ``iree`` (when
the ``[iree]`` extra is installed) and ``pjrt:PATH`` / ``pjrt:NAME`` (any
PJRT plugin, see :mod:`.pjrt`). Other backends register under the
entry-point group ``stablehlo_conform.backends``.
"""

from __future__ import annotations

import os
import re
from typing import Any

from .base import Backend, BackendCrash, BackendUnavailable

_BUILTIN = {
    "numpy": "stablehlo_conform.harness.backends.numpy_backend:NumpyBackend",
    "reference": "stablehlo_conform.harness.backends.reference:ReferenceBackend",
    "xla": "stablehlo_conform.harness.backends.xla:XlaBackend",
    "iree": "stablehlo_conform.harness.backends.iree:IreeBackend",
}
_cache: dict[str, Backend] = {}


def _load(spec: str) -> Any:
    import importlib

    mod, _, attr = spec.partition(":")
    return getattr(importlib.import_module(mod), attr)


def available() -> dict[str, str]:
    """Backend name -> where it comes from (builtin or an installed plugin)."""
    from .pjrt import PREFIX, discover

    out = {name: "builtin" for name in _BUILTIN}
    for name, (how, where) in sorted(discover().items()):
        out[PREFIX + name] = f"PJRT plugin ({how}: {where})"
    try:
        from importlib.metadata import entry_points

        for ep in entry_points(group="stablehlo_conform.backends"):
            out.setdefault(ep.name, f"plugin {ep.value}")
    except Exception:  # pragma: no cover
        pass
    return out


def check_name(name: str) -> None:
    """Raise :class:`BackendUnavailable` (with what exists) unless ``name``
    names a backend: a built-in one, an installed plugin or ``pjrt:...``
    with an existing library or an installed PJRT plugin's name that loads
    and creates its client (the plugin's own message when it does not)."""
    if name.startswith("pjrt:"):
        from .pjrt import check_target, parse_name

        check_target(parse_name(name))
        get_backend(name).check_loads()
    elif name not in available():
        raise BackendUnavailable(f"unknown backend {name!r}; available: {', '.join(sorted(available()))}, "
                                 "pjrt:/path/to/plugin.so")


_LIBRARY = re.compile(r"\.(?:so(?:\.[\d.]+)?|dylib|dll)$")


def display_name(name: str) -> str:
    """A backend's name as text output shows it: a ``pjrt:`` library path
    becomes the plugin's name (the Python package that holds the library,
    else the file's name without ``lib`` and its suffix); the query part
    (create options, device, StableHLO version) stays. Other names are
    returned unchanged."""
    if not name.startswith("pjrt:"):
        return name
    target, sep, query = name[len("pjrt:"):].partition("?")
    if "/" not in target and not _LIBRARY.search(target):
        return name  # already a plugin's name
    folder, file = os.path.split(target)
    short = _LIBRARY.sub("", file)
    short = short[3:] if short.startswith("lib") and len(short) > 3 else short
    if folder and os.path.isfile(os.path.join(folder, "__init__.py")):
        short = os.path.basename(folder)
    return "pjrt:" + (short or target) + sep + query


def shorten_names(text: str, names: "list[str] | tuple[str, ...] | set[str]") -> str:
    """``text`` with every backend name of ``names`` replaced by its
    :func:`display_name` (longest first, so one name inside another stays whole)."""
    for n in sorted(set(names), key=len, reverse=True):
        short = display_name(n)
        if short != n:
            text = text.replace(n, short)
            if n.startswith("pjrt:"):  # messages may name the library alone
                lib = n[len("pjrt:"):].partition("?")[0]
                text = text.replace(lib, short[len("pjrt:"):].partition("?")[0])
    return text


def get_backend(name: str) -> Backend:
    b = _cache.get(name)
    if b is not None:
        return b
    if name.startswith("pjrt:"):
        from .pjrt import PjrtBackend

        b = _cache[name] = PjrtBackend(name)
        return b
    if name in _BUILTIN:
        cls = _load(_BUILTIN[name])
    else:
        from importlib.metadata import entry_points

        eps = [ep for ep in entry_points(group="stablehlo_conform.backends") if ep.name == name]
        if not eps:
            raise BackendUnavailable(f"unknown backend {name!r} (available: {', '.join(sorted(available()))})")
        cls = eps[0].load()
    b = cls() if isinstance(cls, type) else cls
    _cache[name] = b
    return b


__all__ = ["Backend", "BackendCrash", "BackendUnavailable", "available", "check_name", "display_name",
           "get_backend", "shorten_names"]
