"""The one JSON writer: every JSON file, stream line and page data the tool
writes goes through :func:`dumps`, so it is strict JSON that any reader
takes (a browser's ``JSON.parse``, ``jq``, Go, Rust).

Python's :mod:`json` writes a non-finite float as the bare token ``Infinity``
or ``NaN``, which is not JSON. Here such a float (an infinite result value
in a verdict, an error that is infinite) is written as the string ``"inf"``,
``"-inf"`` or ``"nan"``: the spelling the tool already writes for an unbounded
ULP distance (``"max_ulp": "inf"``), which Python's ``float()`` reads back
(:func:`number`). The writer then refuses any non-finite number left
(``allow_nan=False``): nothing reaches a file as ``Infinity``.
"""

from __future__ import annotations

import json
import math
from typing import Any

# how a non-finite float is written
_SPELLING = {math.inf: "inf", -math.inf: "-inf"}


def _finite(obj: Any) -> Any:
    """``obj`` with every non-finite float (also inside lists, tuples and
    dicts) replaced by its string."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else _SPELLING.get(obj, "nan")
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def dumps(obj: Any, **kwargs: Any) -> str:
    """``json.dumps(obj, **kwargs)`` as strict JSON: non-finite floats
    written as ``"inf"``, ``"-inf"``, ``"nan"`` (``allow_nan`` is always
    False). The common document, without any, is written in one pass."""
    kwargs["allow_nan"] = False
    try:
        return json.dumps(obj, **kwargs)
    except ValueError as e:
        if "Out of range float values" not in str(e):
            raise
    return json.dumps(_finite(obj), **kwargs)


def number(value: Any) -> Any:
    """A number as :func:`dumps` wrote it, read back: ``"inf"``, ``"-inf"``,
    ``"nan"`` as floats; anything else unchanged."""
    if isinstance(value, str) and value in ("inf", "-inf", "nan"):
        return float(value)
    return value


__all__ = ["dumps", "number"]
