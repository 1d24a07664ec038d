"""Backend names: :class:`BackendName`, the one parse of what ``--backend`` names, and the
name text output shows (a ``pjrt:`` library path shortened to the plugin's name)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

LIBRARY_SUFFIX = re.compile(r"\.(?:so(?:\.[\d.]+)?|dylib|dll)$")
PJRT = "pjrt:"


@dataclass(frozen=True)
class BackendName:
    """What a backend name says: ``numpy``, ``xla``, a plugin's entry point, or
    ``pjrt:TARGET[?QUERY]`` (``TARGET`` a library path or an installed PJRT plugin's name,
    ``QUERY`` its ``key=value&...`` create options, device and StableHLO version).

    ``?`` starts the query, except inside a library path that exists: the longest part of the
    name up to a ``?`` (or the whole) that is a file is the target, so a path holding ``?`` is
    named as it is (``pjrt:/opt/a?b.so?device=1``)."""

    text: str  # the name as given
    target: str  # a pjrt: name's library path or plugin name; else the whole name
    query: str = ""  # a pjrt: name's query, without its ``?``
    has_query: bool = False  # a ``?`` was given (possibly with an empty query)

    @classmethod
    def parse(cls, text: str) -> BackendName:
        if not text.startswith(PJRT):
            return cls(text, text)
        rest = text[len(PJRT):]
        cuts = [i for i, c in enumerate(rest) if c == "?"]
        for i in [len(rest)] + cuts[::-1]:
            if "?" in rest[:i] and os.path.isfile(rest[:i]):
                return cls(text, rest[:i], rest[i + 1:], i < len(rest))
        target, sep, query = rest.partition("?")
        return cls(text, target, query, bool(sep))

    @property
    def is_pjrt(self) -> bool:
        return self.text.startswith(PJRT)

    @property
    def is_path(self) -> bool:
        """A pjrt: target that names a library file rather than an installed plugin."""
        return "/" in self.target or bool(LIBRARY_SUFFIX.search(self.target))

    @property
    def display(self) -> str:
        """The name as text output shows it: a ``pjrt:`` library path becomes the plugin's
        name (the Python package that holds the library, else the file's name without
        ``lib`` and its suffix); the query stays. Other names are shown as given."""
        if not self.is_pjrt or not self.is_path:
            return self.text
        folder, file = os.path.split(self.target)
        short = LIBRARY_SUFFIX.sub("", file)
        short = short[3:] if short.startswith("lib") and len(short) > 3 else short
        if folder and os.path.isfile(os.path.join(folder, "__init__.py")):
            short = os.path.basename(folder)
        return PJRT + (short or self.target) + ("?" if self.has_query else "") + self.query

    @property
    def plugin(self) -> str:
        """:attr:`display` without the query (create options, device): the plugin's name alone."""
        if not self.is_pjrt:
            return self.text
        return BackendName.parse(PJRT + self.target).display

    def __str__(self) -> str:
        return self.text


def display_name(name: str) -> str:
    """``name``'s :attr:`BackendName.display`."""
    return BackendName.parse(name).display


def plugin_name(name: str) -> str:
    """``name``'s :attr:`BackendName.plugin`."""
    return BackendName.parse(name).plugin


def shorten_names(text: str, names: "list[str] | tuple[str, ...] | set[str]") -> str:
    """``text`` with every backend name of ``names`` replaced by its
    :func:`display_name` (longest first, so one name inside another stays whole)."""
    for n in sorted(set(names), key=len, reverse=True):
        parsed = BackendName.parse(n)
        short = parsed.display
        if short != n:
            text = text.replace(n, short)
            if parsed.is_pjrt:  # messages may name the library alone
                text = text.replace(parsed.target, display_name(PJRT + parsed.target)[len(PJRT):])
    return text
