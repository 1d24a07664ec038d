"""``custom_call`` targets of XLA and JAX exports beyond the linear algebra
ones (spec.md#custom_call).

- ``shape_assertion`` (JAX's shape-polymorphism guard): when the predicate is
  false, an error saying that the program's own assertion failed, with the
  assertion's ``error_message`` (its ``{0}``, ``{1}``, ... filled with the
  remaining operands) and how many predicate elements are false. A runtime
  that ignores the custom call (IREE does) runs on; the program says it
  must not.
- Sharding annotations (``Sharding``, ``annotate_device_placement``,
  ``MoveToHost``/``MoveToDevice``, ``xla.sdy.FuncResultSharding``) are
  identities on values. ``SPMDFullToShardShape`` / ``SPMDShardToFullShape``
  are identities where the shard is the whole array (one device); a shape
  change needs the partitioned program: unsupported.
- ``mhlo.<op>`` targets (ops an exporter spelled as custom calls, attributes in
  ``mhlo.attributes``) run the kernel of ``chlo.<op>`` or ``stablehlo.<op>``.
- TPU-era XLA targets: ``Qr`` (``?geqrf`` as a tuple), ``LuDecomposition``
  (``?getrf``: factors, 0-based pivots, permutation).
- ``ApproxTopK`` / ``stablehlo.dynamic_approx_top_k`` (exact top-k in the
  comparator's order), ``stablehlo.dynamic_top_k``,
  ``stablehlo.dynamic_rng_bit_generator`` and ``stablehlo.dynamic_reduce_window``
  (the ops with shapes or window attributes given as operands).
- Targets carrying a compiled kernel (Pallas on Mosaic TPU/GPU, Triton) are
  unsupported, naming the target: only their own runtime can run them.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..errors import ConformError
from .custom_call import custom_prefix, custom_target
from .lapack import _batched, _lapack, _prefix, pivots_to_permutation
from .registry import KERNELS
from .sorting import top_k
from .sorting import merge_sort_perm
from .. import types as T
from .random import rng_bit_generator
from .reduction import reduce_window


class ShapeAssertionError(ConformError):
    """A ``shape_assertion`` whose predicate is false."""


@custom_target("shape_assertion")
def shape_assertion(op, pred, *values):
    pred = np.asarray(pred)
    if bool(np.all(pred)):
        return ()
    msg = op.attr("error_message", "shape assertion failed")
    if isinstance(msg, bytes):
        msg = msg.decode("utf-8", "replace")
    try:
        msg = msg.format(*(np.asarray(v).item() for v in values))
    except (IndexError, KeyError, ValueError):
        pass
    false = f" ({int(np.count_nonzero(~pred.astype(bool)))} of {pred.size} predicate elements false)" \
        if pred.size > 1 else ""
    raise ShapeAssertionError(f"the program's assertion failed: stablehlo.custom_call @shape_assertion at "
                              f"{op.loc}{false}: {msg}")


@custom_target("Sharding", "annotate_device_placement", "MoveToHost", "MoveToDevice", "xla.sdy.FuncResultSharding")
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
    lu, piv = _batched(2, lambda mat: fn(mat)[:2], x)
    perm = pivots_to_permutation(piv, x.shape[-2])
    return ((lu, piv.astype(np.int32), perm.astype(np.int32)),)


@custom_prefix("mhlo.")
def mhlo_target(op, *operands):
    """``mhlo.<name>``: the kernel of ``chlo.<name>`` or ``stablehlo.<name>``
    with the attributes of ``mhlo.attributes``."""
    target = op.attr("call_target_name")
    name = target.split(".", 1)[1]
    attrs = dict(op.attrs.get("mhlo.attributes") or {})
    if name == "topk":  # mhlo.topk: chlo.top_k, or the smallest when largest = false
        name = "top_k"
        if attrs.pop("largest", True) is False:
            raise op.unsupported(f"custom_call target {target!r} with largest = false")
    for dialect in ("chlo", "stablehlo"):
        fn = KERNELS.lookup(f"{dialect}.{name}")
        if fn is not None:
            return fn(_inner(op, f"{dialect}.{name}", attrs), *operands)
    raise op.unsupported(f"custom_call target {target!r}")


# --------------------------------------------------------------------------- #
# stablehlo.dynamic_* targets (ops with dynamic shapes spelled as custom calls)
# --------------------------------------------------------------------------- #


def _inner(op, name: str, attrs: dict, **changes):
    """``op`` as the op ``name`` with ``attrs`` (to run another kernel)."""
    inner = dataclasses.replace(op.op, name=name, attrs=attrs, **changes)
    return type(op)(inner, op.engine)


def _called(op) -> str:
    calls = op.attr("called_computations") or ()
    return calls[0].name if calls else ""


@custom_target("stablehlo.dynamic_top_k")
def dynamic_top_k(op, operand, k):
    """``chlo.top_k`` with ``k`` an operand."""
    return top_k(_inner(op, "chlo.top_k", {"k": int(np.asarray(k))}), operand)


@custom_target("ApproxTopK", "stablehlo.dynamic_approx_top_k")
def approx_top_k(op, *operands):
    """XLA's ``ApproxTopK``: the ``k`` first elements along ``reduction_dim``
    in the order of the comparator (``called_computations``), with the other
    operands permuted alike. Computed exactly (recall 1, which meets any
    ``recall_target``; XLA CPU's fallback is exact too). The dynamic form
    takes ``k`` after the init values and the result shapes as operands."""
    cfg = {**op.attrs, **(op.attr("mhlo.backend_config") or {})}
    n = op.num_results
    inputs = [np.asarray(x) for x in operands[:n]]
    dim = int(cfg.get("reduction_dim", -1)) % inputs[0].ndim
    if op.attr("call_target_name") == "stablehlo.dynamic_approx_top_k":
        k = int(np.asarray(operands[2 * n]))
    else:
        k = int(cfg.get("top_k", op.result_shape(0)[dim]))
    moved = [np.moveaxis(x, dim, -1) for x in inputs]
    shape = moved[0].shape
    flat = [m.reshape(-1, shape[-1]) for m in moved]
    rows = np.arange(flat[0].shape[0])[:, None]
    fname = _called(op)

    def less(ia, ib):
        args = []
        for f in flat:
            args += [f[rows, ia], f[rows, ib]]
        r = op.engine.call(fname, args, lanes=True)[0]
        return np.broadcast_to(np.asarray(r).astype(bool), ia.shape)

    perm = merge_sort_perm(less, flat[0].shape[0], shape[-1])[:, :k]
    outs = []
    for i, f in enumerate(flat):
        s = np.take_along_axis(f, perm, axis=1).reshape(shape[:-1] + (perm.shape[1],))
        outs.append(np.ascontiguousarray(np.moveaxis(s, -1, dim)).astype(op.result_dtype(i), copy=False))
    return tuple(outs)


@custom_target("stablehlo.dynamic_rng_bit_generator")
def dynamic_rng_bit_generator(op, state, shape):
    """``stablehlo.rng_bit_generator`` with the output shape an operand."""
    dims = tuple(int(v) for v in np.asarray(shape).ravel())
    out_t = T.TensorType(dims, op.result_type(1).element)
    inner = _inner(op, "stablehlo.rng_bit_generator", dict(op.attrs),
                   result_types=(op.result_type(0), out_t))
    return rng_bit_generator(inner, state)


@custom_target("stablehlo.dynamic_reduce_window")
def dynamic_reduce_window(op, *operands):
    """``stablehlo.reduce_window`` with the window attributes as operands
    (``window_dimensions, window_strides, base_dilations, window_dilations,
    padding``) after the inputs and init values, and the reducer a function
    (``called_computations``)."""
    n = (len(operands) - 5) // 2
    wd, ws, bd, wdl, pad = (np.asarray(v).astype(np.int64) for v in operands[2 * n:])
    attrs = {"window_dimensions": tuple(wd), "window_strides": tuple(ws), "base_dilations": tuple(bd),
             "window_dilations": tuple(wdl), "padding": pad.reshape(-1, 2)}
    body = op.engine.func(_called(op)).body
    inner = _inner(op, "stablehlo.reduce_window", attrs, regions=(body,),
                   operand_types=op.op.operand_types[: 2 * n])
    return reduce_window(inner, *operands[: 2 * n])
