"""``custom_call`` targets of XLA and JAX exports beyond the linear algebra
ones (spec.md#custom_call).

- ``shape_assertion`` (JAX's shape-polymorphism guard): an error carrying the
  assertion's ``error_message`` (its ``{0}``, ``{1}``, ... filled with the
  remaining operands) when the predicate is false.
- Sharding annotations (``Sharding``, ``annotate_device_placement``,
  ``MoveToHost``/``MoveToDevice``, ``xla.sdy.FuncResultSharding``) are
  identities on values. ``SPMDFullToShardShape`` / ``SPMDShardToFullShape``
  are identities where the shard is the whole array (one device); a shape
  change needs the partitioned program: unsupported.
- ``mhlo.<op>`` targets (ops an exporter spelled as custom calls, attributes in
  ``mhlo.attributes``) run the kernel of ``chlo.<op>`` or ``stablehlo.<op>``.
- TPU-era XLA targets: ``Qr`` (``?geqrf`` as a tuple), ``LuDecomposition``
  (``?getrf``: factors, 0-based pivots, permutation).
- Targets carrying a compiled kernel (Pallas on Mosaic TPU/GPU, Triton) are
  unsupported, naming the target: only their own runtime can run them.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..errors import ConformError
from .custom_call import custom_prefix, custom_target
from .lapack import _batched, _lapack, _prefix
from .registry import KERNELS


class ShapeAssertionError(ConformError):
    """A ``shape_assertion`` whose predicate is false."""


@custom_target("shape_assertion")
def shape_assertion(op, pred, *values):
    if bool(np.all(np.asarray(pred))):
        return ()
    msg = op.attr("error_message", "shape assertion failed")
    if isinstance(msg, bytes):
        msg = msg.decode("utf-8", "replace")
    try:
        msg = msg.format(*(np.asarray(v).item() for v in values))
    except (IndexError, KeyError, ValueError):
        pass
    raise ShapeAssertionError(f"shape_assertion failed at {op.loc}: {msg}")


@custom_target("Sharding", "annotate_device_placement", "MoveToHost", "MoveToDevice",
               "xla.sdy.FuncResultSharding", "xla.sdy.ShardingGroup", "LayoutConstraint")
def identity(op, *operands):
    """Annotations: the operands, unchanged."""
    return tuple(operands)


@custom_target("SPMDFullToShardShape", "SPMDShardToFullShape", "xla.sdy.GlobalToLocalShape",
               "xla.sdy.LocalToGlobalShape")
def spmd_shape(op, x):
    if tuple(np.shape(x)) != tuple(op.result_shape(0)):
        raise op.unsupported(f"custom_call target {op.attr('call_target_name')!r} changing the shape "
                             f"{np.shape(x)} -> {op.result_shape(0)} (a partitioned program)")
    return (x,)


_KERNEL_TARGETS = ("tpu_custom_call", "mosaic_gpu", "mosaic_gpu_v2", "__gpu$xla.gpu.triton",
                   "triton_kernel_call", "__cpu$xla.cpu.triton")


@custom_target(*_KERNEL_TARGETS)
def compiled_kernel(op, *operands):
    t = op.attr("call_target_name")
    raise op.unsupported(f"custom_call target {t!r} carries a compiled Pallas/Mosaic/Triton kernel")


@custom_target("Qr")
def qr_tuple(op, a):
    """XLA's ``Qr``: ``(a, taus)`` of LAPACK ``?geqrf``, as a tuple."""
    fn = _lapack(_prefix(op, "Qr", a), "geqrf")
    qr, tau = _batched(2, lambda m: fn(m)[:2], np.asarray(a))
    return ((qr, tau),)


@custom_target("LuDecomposition")
def lu_tuple(op, a):
    """XLA's ``LuDecomposition``: ``(lu, pivots, permutation)`` of LAPACK
    ``?getrf`` with 0-based pivots, as a tuple."""
    fn = _lapack(_prefix(op, "LuDecomposition", a), "getrf")
    x = np.asarray(a)
    m = x.shape[-2]

    def one(mat):
        lu, piv, _info = fn(mat)
        perm = np.arange(m)
        for i, j in enumerate(piv):
            perm[[i, j]] = perm[[j, i]]
        return lu, piv.astype(np.int32), perm.astype(np.int32)

    return (_batched(2, one, x),)


@custom_prefix("mhlo.")
def mhlo_target(op, *operands):
    """``mhlo.<name>``: the kernel of ``chlo.<name>`` or ``stablehlo.<name>``
    with the attributes of ``mhlo.attributes``."""
    target = op.attr("call_target_name")
    name = target.split(".", 1)[1]
    for dialect in ("chlo", "stablehlo"):
        fn = KERNELS.lookup(f"{dialect}.{name}")
        if fn is not None:
            attrs = dict(op.attrs.get("mhlo.attributes") or {})
            inner = dataclasses.replace(op.op, name=f"{dialect}.{name}", attrs=attrs)
            return fn(type(op)(inner, op.engine), *operands)
    raise op.unsupported(f"custom_call target {target!r}")
