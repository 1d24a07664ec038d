"""What the engine knows of one step (one op of a block): its kind, its kernel call through
the quantization routing, where an exception it raises is reported, the types its results
must have, what its results take of the memory budget, its folded results. Shared by the
engine's dispatch loop (:mod:`stablehlo_conform.engine`) and its generated blocks
(:mod:`.codegen`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import types as T
from ..errors import ConformError, KernelError, ResourceError, Timeout, UnsupportedOp
from ..kernels.context import OpContext
from ..kernels.quantized import dequantize_op_quantize, passes_storage
from ..kernels.registry import Registry, load_all
from ..opinfo import OPS
from ..program import Op

# nested function calls and regions one evaluation may be inside of; deeper is
# taken for a runaway recursion and ends with the location of the op that went
# past it (the engine runs on a thread with a stack big enough for this depth)
MAX_DEPTH = 10_000


class DepthExceeded(ConformError):
    """More than :data:`MAX_DEPTH` nested calls and regions."""

    def __init__(self) -> None:
        super().__init__(f"more than {MAX_DEPTH} nested calls and regions (a runaway recursion?)")
        self.located = False

    def at(self, op: Op) -> "DepthExceeded":
        """Name the innermost op that went past the limit (once)."""
        if not self.located:
            self.located = True
            self.args = (f"{op.loc}: error: {op.name}: {self.args[0]}",)
        return self


# A built-in op's facts are declared with its kernel (stablehlo_conform/kernels): every kernel
# module is loaded before the engine reads them, so that the engine's views below, and the
# oracle's views read by whatever runs the engine (the harness's judges), see every op.
load_all()

TERMINATORS = OPS.where(terminator=True)
"""Ops that end a region or function (read from the op registry)."""


_KERNEL, _RETURN, _BR, _COND_BR, _SWITCH, _CALL = range(6)
_CODES = {"cf.br": _BR, "cf.cond_br": _COND_BR, "cf.switch": _SWITCH, "func.call": _CALL}

# Ops whose results depend on nothing but their operands and attributes (no
# regions, checks, state, tokens or printed output): computed once where every
# operand is a constant (see Engine._steps); declared ``folds`` in the registry.
FOLDABLE = OPS.where(folds=True)

LOADED_CONSTANTS = OPS.where(constant=True)
"""Ops whose result is a constant loaded with the program (declared ``constant``)."""


def _folded_results(op: Op, registry: Registry) -> tuple | None:
    """The results of folded ``op`` computed with ``registry``'s kernels, if
    computed yet."""
    folded = op.__dict__.get("_folded")
    return folded[1] if folded is not None and folded[0] is registry else None


def _result_bytes(op: Op) -> int:
    """Bytes the static tensor results of ``op`` take (cached on the op)."""
    total = op.__dict__.get("_result_bytes")
    if total is None:
        # a constant's value exists already (checked against the budget when
        # loaded; a splat is a view): running the op allocates nothing
        total = op._result_bytes = 0 if op.name in LOADED_CONSTANTS else sum(
            (ty.num_elements() or 0) * ty.dtype.itemsize
            for ty in op.result_types if isinstance(ty, T.TensorType) and ty.is_static)
    return total


def _run_kernel(engine: Any, op: Op, fn: Callable, ctx: OpContext, quant: bool | None, args) -> Any:
    """``fn`` on ``args``, through ``dequantize_op_quantize`` where the op has
    quantized types its kernel does not handle itself (spec.md#dequantize_op_quantize)."""
    if quant is None:
        quant = not passes_storage(op)
    if quant and not getattr(fn, "quantization_aware", False):
        return dequantize_op_quantize(engine, op, fn, args)
    return fn(ctx, *args)


def _locate(op: Op, code: int, e: Exception) -> None:
    """Raise what exception ``e`` of a kernel or call of ``op`` becomes; return
    when it is to propagate as it is."""
    if isinstance(e, DepthExceeded):
        raise e.at(op) from None
    if isinstance(e, ConformError):
        return
    if isinstance(e, RecursionError):  # the thread's stack ran out before MAX_DEPTH
        raise KernelError(op.name, str(op.loc), "recursion too deep") from None
    if code != _KERNEL:
        return
    if isinstance(e, MemoryError):
        raise ResourceError(f"{op.name} at {op.loc}: out of memory") from None
    # a kernel bug or an unsupported case
    raise KernelError(op.name, str(op.loc), f"{type(e).__name__}: {e}") from e


def _late(op: Op) -> None:
    raise Timeout(f"timed out at {op.name} ({op.loc})")


def _unsupported(op: Op) -> None:
    raise UnsupportedOp(op.name, loc=str(op.loc))


def _expectations(op: Op) -> tuple:
    """Per result: (dtype, shape) for a static tensor type, else (None, None)
    (checked the long way); cached on the op."""
    expect = op.__dict__.get("_expect")
    if expect is not None:
        return expect
    out = []
    for ty in op.result_types:
        if isinstance(ty, T.TensorType) and ty.is_static and not ty.element.quantized:
            out.append((ty.dtype, tuple(ty.shape)))
        else:
            out.append((None, None))
    expect = op._expect = tuple(out)
    return expect
