"""``stablehlo.composite`` (spec.md#composite): runs its decomposition."""

from __future__ import annotations

from ..opinfo import STORAGE
from .registry import kernel


@kernel("stablehlo.composite", quantized=STORAGE)
def composite(op, *inputs):
    """See spec.md#composite: the result is the ``decomposition`` function
    applied to the inputs (``name``/``composite_attributes`` carry no
    semantics of their own)."""
    target = op.attr("decomposition")
    name = getattr(target, "name", None) or str(target).lstrip("@")
    return tuple(op.call(name, *inputs))
