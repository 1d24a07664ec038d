"""``scipy.special`` imported on first use, so that starting ``conform``
does not pay for it (a third of a second) when no special function runs."""

from __future__ import annotations

from typing import Any


class _LazySpecial:
    def __getattr__(self, name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            import scipy.special

            return getattr(scipy.special, name)(*args, **kwargs)

        call.__name__ = name
        return call


special = _LazySpecial()
