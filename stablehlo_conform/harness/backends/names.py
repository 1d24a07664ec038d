"""Backend names as text output shows them: a ``pjrt:`` library path shortened to the plugin's name."""

from __future__ import annotations

import os
import re

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
