"""Backend names as text output shows them: a ``pjrt:`` library path shortened to the plugin's name."""

from __future__ import annotations

import os
import re

LIBRARY_SUFFIX = re.compile(r"\.(?:so(?:\.[\d.]+)?|dylib|dll)$")


def split_target(text: str) -> tuple[str, str, str]:
    """``TARGET?QUERY`` -> (target, ``?`` or '', query). ``?`` starts the
    query (create options, device, StableHLO version), except inside a
    library path that exists: the longest part of ``text`` up to a ``?`` (or
    the whole) that is a file is the target, so a path holding ``?`` is
    named as it is (``pjrt:/opt/a?b.so?device=1``)."""
    cuts = [i for i, c in enumerate(text) if c == "?"]
    for i in [len(text)] + cuts[::-1]:
        if "?" in text[:i] and os.path.isfile(text[:i]):
            return text[:i], text[i:i + 1], text[i + 1:]
    return text.partition("?")


def display_name(name: str) -> str:
    """A backend's name as text output shows it: a ``pjrt:`` library path
    becomes the plugin's name (the Python package that holds the library,
    else the file's name without ``lib`` and its suffix); the query part
    (create options, device, StableHLO version) stays. Other names are
    returned unchanged."""
    if not name.startswith("pjrt:"):
        return name
    target, sep, query = split_target(name[len("pjrt:"):])
    if "/" not in target and not LIBRARY_SUFFIX.search(target):
        return name  # already a plugin's name
    folder, file = os.path.split(target)
    short = LIBRARY_SUFFIX.sub("", file)
    short = short[3:] if short.startswith("lib") and len(short) > 3 else short
    if folder and os.path.isfile(os.path.join(folder, "__init__.py")):
        short = os.path.basename(folder)
    return "pjrt:" + (short or target) + sep + query


def plugin_name(name: str) -> str:
    """:func:`display_name` without the query part (create options, device):
    the plugin's name alone."""
    if not name.startswith("pjrt:"):
        return name
    return display_name("pjrt:" + split_target(name[len("pjrt:"):])[0])


def shorten_names(text: str, names: "list[str] | tuple[str, ...] | set[str]") -> str:
    """``text`` with every backend name of ``names`` replaced by its
    :func:`display_name` (longest first, so one name inside another stays whole)."""
    for n in sorted(set(names), key=len, reverse=True):
        short = display_name(n)
        if short != n:
            text = text.replace(n, short)
            if n.startswith("pjrt:"):  # messages may name the library alone
                lib = split_target(n[len("pjrt:"):])[0]
                text = text.replace(lib, display_name("pjrt:" + lib)[len("pjrt:"):])
    return text
