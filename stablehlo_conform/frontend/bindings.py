"""The bindings and their MLIR contexts: jaxlib's (StableHLO, CHLO, Shardy and the check
dialect's generic form) and, for ``!quant.uniform`` programs, IREE's compiler bindings.

Part of :mod:`stablehlo_conform.frontend`, the one package that imports the bindings.
"""

from __future__ import annotations

import re
import threading
from typing import Any


_lock = threading.Lock()
_state: dict[str, Any] = {}


def _bindings():
    """Import the bindings once and build the shared context."""
    if "ir" in _state:
        return _state
    with _lock:
        if "ir" in _state:
            return _state
        from jaxlib.mlir import ir
        # the dialects' native modules (registration, attribute classes): the bindings import the
        # Python modules of op classes (jaxlib.mlir.dialects.*) themselves for the ops a program has
        from jaxlib.mlir._mlir_libs import _chlo, _jax_mlir_ext, _stablehlo

        _state.update(ir=ir, chlo=_chlo, sh=_stablehlo, ext=_jax_mlir_ext)
        _state["provider"] = "jaxlib"
        _state["sdy"] = _sdy_module()
        _state["ctx"] = new_context()
        _state["attr_classes"] = [
            getattr(_stablehlo, n)
            for n in (
                "GatherDimensionNumbers",
                "ScatterDimensionNumbers",
                "ConvDimensionNumbers",
                "DotDimensionNumbers",
                "ComparisonDirectionAttr",
                "ComparisonTypeAttr",
                "PrecisionAttr",
                "FftTypeAttr",
                "RngDistributionAttr",
                "RngAlgorithmAttr",
                "TransposeAttr",
                "ChannelHandle",
                "OutputOperandAlias",
                "DotAlgorithm",
                "ResultAccuracyAttr",
                "ResultAccuracyModeAttr",
            )
            if hasattr(_stablehlo, n)
        ]
    return _state


def _string_attr(a) -> str | bytes:
    """A string attribute's value; its bytes when it is not valid UTF-8 (kernel
    payloads in ``backend_config``), which the bindings cannot hand out as str."""
    try:
        return a.value
    except (RuntimeError, UnicodeDecodeError):
        return bytes(a.value_bytes)


def _isa(a, cls) -> bool:
    """``isinstance`` across binding versions (old ones need ``cls.isinstance``)."""
    if isinstance(a, cls):
        return True
    check = getattr(cls, "isinstance", None)
    return bool(check(a)) if check is not None else False


def new_context():
    """A context with every dialect the bindings provide (stablehlo, chlo,
    func, arith, math, tensor, shape, cf, quant, vhlo, ...) plus the
    interpreter dialect; unregistered dialects (``check``) are allowed."""
    st = _state
    ir = st["ir"]
    reg = ir.DialectRegistry()
    st["ext"].register_dialects(reg)
    ctx = ir.Context()
    ctx.append_dialect_registry(reg)
    ctx.load_all_available_dialects()
    st["sh"].register_dialect(ctx)
    st["chlo"].register_dialect(ctx)
    st["sh"].register_interpreter_dialect(ctx)
    _register_sdy(ctx)
    ctx.allow_unregistered_dialects = True
    return ctx


def _sdy_module():
    try:
        from jaxlib.mlir._mlir_libs import _sdy
    except ImportError:  # pragma: no cover - older bindings
        return None
    return _sdy


def _register_sdy(ctx) -> None:
    """Shardy (``sdy``): meshes, sharding attributes and manual computations
    of programs exported with a mesh (also needed to read portable artifacts
    carrying them); bindings without it parse such programs as unregistered
    ops."""
    sdy = _sdy_module()
    if sdy is not None:
        sdy.register_dialect(ctx)


_iree_state: dict[str, Any] = {}


def _iree_bindings() -> dict[str, Any] | None:
    """IREE's compiler bindings (``iree-base-compiler``), a second provider
    whose context registers the ``quant`` dialect the StableHLO verifier of
    jaxlib does not accept; None when they are not installed."""
    if "ir" in _iree_state:
        return _iree_state
    if _iree_state.get("missing"):
        return None
    with _lock:
        if "ir" in _iree_state:
            return _iree_state
        try:
            from iree.compiler import ir
        except Exception:
            _iree_state["missing"] = True
            return None
        ctx = ir.Context()
        ctx.allow_unregistered_dialects = True
        # foreign: the lowering decodes attributes of this context with jaxlib's parser (lower._jaxlib_attr)
        _iree_state.update(ir=ir, ctx=ctx, attr_classes=[], provider="iree", foreign=True)
    return _iree_state


# check ops are renamed for IREE's context, which registers a check dialect of its own
_IREE_CHECK = "conform."
_IREE_CHECK_RE = re.compile(r'"check\.(?=[a-z_]+")')


def _is_iree_module(mod) -> bool:
    return type(mod).__module__.startswith("iree.")


def provider_version() -> str:
    st = _bindings()
    try:
        return f"{st['provider']} (StableHLO {st['sh'].get_current_version()})"
    except Exception:  # pragma: no cover - older bindings
        return st["provider"]
