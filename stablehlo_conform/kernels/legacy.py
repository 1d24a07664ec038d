"""StableHLO ops outside the specification, and ``func``/``cf``/``scf``
companions.

StableHLO keeps a few ops without a spec section for compatibility with
older producers (spec status "no" in status.md): ``broadcast``, ``dot``,
``einsum``, ``unary_einsum``, ``torch_index_select``, ``cross-replica-sum``.
Their semantics follow XLA's operation semantics and the MHLO definitions:

* ``broadcast``: ``result[i..., j...] = operand[j...]`` with the leading dims
  of sizes ``broadcast_sizes`` (XLA ``Broadcast``).
* ``dot``: vector-vector, matrix-vector and matrix-matrix products (XLA
  ``Dot``).
* ``einsum``: Einstein summation with an ``"ab,bc->ac"`` style
  ``einsum_config``; ``unary_einsum`` the one-operand form (``"ab->a"``).
* ``torch_index_select``: PyTorch's ``index_select`` generalised with
  leading batch dimensions shared by operand and index.
* ``cross-replica-sum``: ``all_reduce`` with addition over
  ``replica_groups`` (spec.md#all_reduce); with a single process it is the
  identity.

Products accumulate in the result element type's arithmetic: integers wrap
modulo 2^N, i1 is OR of ANDs, floats accumulate in f64 (complex in
complex128) and are rounded once to the result type.

Companions: ``func.constant``/``func.call_indirect`` (a function value is
its symbol), ``cf.assert`` (a false condition fails the test with its
message), and ``scf.if``/``for``/``while``/``index_switch``/
``execute_region`` with the MLIR SCF dialect's semantics.
"""

from __future__ import annotations

import numpy as np

from .. import types as T
from ..opinfo import DOT, EXACT
from .registry import kernel
from .arith import wrap
from .arith import to_float
from ..errors import ConformError
from . import collectives as C
from .arith import as_signed, as_unsigned, bits_of


def _check_plain(op) -> None:
    for ty in tuple(op.operand_types) + tuple(op.result_types):
        if isinstance(ty, T.TensorType) and not isinstance(ty.element, T.ElementType):
            raise op.unsupported(f"element type {ty.element}")


def contract(op, subscripts: str, *operands) -> np.ndarray:
    """``np.einsum`` evaluated in the result element type's arithmetic."""
    _check_plain(op)
    el = op.result_element(0)
    dt = op.result_dtype(0)
    kind = el.kind
    if kind == "bool":
        xs = [np.asarray(x).astype(np.int64) != 0 for x in operands]
        r = np.einsum(subscripts, *[x.astype(np.int64) for x in xs]) != 0
        return np.asarray(r, dtype=np.bool_)
    if kind in ("int", "uint"):
        with np.errstate(all="ignore"):
            xs = [np.asarray(x).astype(np.int64) for x in operands]
            r = np.einsum(subscripts, *xs)
        return wrap(np.asarray(r, dtype=np.int64), el)
    work = np.complex128 if kind == "complex" else np.float64
    xs = [np.asarray(x).astype(work) for x in operands]
    with np.errstate(all="ignore"):
        r = np.einsum(subscripts, *xs, optimize=len(xs) > 1)
        if kind == "complex":
            return np.asarray(np.asarray(r).astype(dt), dtype=dt)

    return to_float(r, dt)


@kernel("stablehlo.broadcast", accuracy=EXACT)
def broadcast(op, x):
    """XLA Broadcast: prepends dimensions of sizes ``broadcast_sizes``."""
    sizes = tuple(int(s) for s in op.attr("broadcast_sizes", ()))
    arr = np.asarray(x)
    return (np.broadcast_to(arr, sizes + arr.shape).copy(),)


_DOT_SUBSCRIPTS = {(1, 1): "i,i->", (2, 1): "ij,j->i", (1, 2): "i,ij->j", (2, 2): "ij,jk->ik"}


@kernel("stablehlo.dot", accuracy=DOT)
def dot(op, lhs, rhs):
    """XLA Dot on rank-1/rank-2 operands: ``dot_general`` contracting lhs's
    last dimension with rhs's first (spec.md#dot_general)."""
    key = (np.ndim(lhs), np.ndim(rhs))
    sub = _DOT_SUBSCRIPTS.get(key)
    if sub is None:
        raise op.unsupported(f"dot of ranks {key}")
    return (contract(op, sub, lhs, rhs),)


def _einsum_config(op) -> str:
    cfg = op.attr("einsum_config")
    if not isinstance(cfg, str):
        raise op.unsupported("einsum_config missing")
    return cfg.replace(" ", "")


@kernel("stablehlo.einsum")
def einsum(op, lhs, rhs):
    cfg = _einsum_config(op)
    if "->" not in cfg:
        raise op.unsupported(f"einsum_config {cfg!r} without '->'")
    return (contract(op, cfg, lhs, rhs),)


@kernel("stablehlo.unary_einsum")
def unary_einsum(op, x):
    cfg = _einsum_config(op).lstrip(",")
    if "->" not in cfg:
        raise op.unsupported(f"einsum_config {cfg!r} without '->'")
    return (contract(op, cfg, x),)


@kernel("stablehlo.torch_index_select", accuracy=EXACT)
def torch_index_select(op, operand, index):
    """``result[b..., p..., k..., q...] = operand[b..., p..., index[b..., k...], q...]``

    ``b`` ranges over the first ``batch_dims`` dimensions (shared by operand
    and index), ``p`` over the operand dimensions before ``dim``, ``k`` over
    the remaining index dimensions, ``q`` over the operand dimensions after
    ``dim``. Negative ``dim``/``batch_dims`` count from the end. Indices
    outside ``[0, operand.shape[dim])`` are an error.
    """
    x = np.asarray(operand)
    idx = np.asarray(index).astype(np.int64)
    dim = int(op.attr("dim", 0))
    bd = int(op.attr("batch_dims", 0))
    if dim < 0:
        dim += x.ndim
    if bd < 0:
        bd += idx.ndim
    if not (0 <= bd <= dim < x.ndim and bd <= idx.ndim):
        raise op.unsupported(f"dim={dim} batch_dims={bd} for ranks {x.ndim}, {idx.ndim}")
    if idx.size and (idx.min() < 0 or idx.max() >= x.shape[dim]):
        raise ConformError(f"{op.name} at {op.loc}: index out of range [0, {x.shape[dim]})")
    n_pre = dim - bd
    n_k = idx.ndim - bd
    n_post = x.ndim - dim - 1
    rank = bd + n_pre + n_k + n_post

    def place(size: int, pos: int) -> np.ndarray:
        shape = [1] * rank
        shape[pos] = size
        return np.arange(size, dtype=np.int64).reshape(shape)

    keys = []
    for d in range(bd):
        keys.append(place(x.shape[d], d))
    for d in range(bd, dim):
        keys.append(place(x.shape[d], d))
    ishape = list(idx.shape[:bd]) + [1] * n_pre + list(idx.shape[bd:]) + [1] * n_post
    keys.append(idx.reshape(ishape))
    for j, d in enumerate(range(dim + 1, x.ndim)):
        keys.append(place(x.shape[d], bd + n_pre + n_k + j))
    out = x[tuple(keys)]
    return (np.asarray(out, dtype=op.result_dtype(0)).reshape(out.shape),)


@kernel("stablehlo.cross-replica-sum")
def cross_replica_sum(op, x):
    """Sum over ``replica_groups`` (spec.md#all_reduce with addition, cross
    replica); the identity with one process or singleton groups."""
    groups = np.asarray(op.attr("replica_groups", np.zeros((0,), np.int64)))
    singleton = groups.size == 0 or groups.ndim < 2 or groups.shape[-1] <= 1
    if op.engine.process is None or singleton:
        return (np.array(x, copy=True),)

    needed = ("process_of", "_need_group", "_my_group", "_groups", "_meet")
    if not all(hasattr(C, n) for n in needed):
        raise op.unsupported("cross-replica-sum across several processes")
    info = C.process_of(op.engine)
    group = C._need_group(op, info, C._my_group(op, info, "cross_replica", C._groups(op)))
    parts = C._meet(op, info, group, (x,))
    acc = np.array(parts[0][0], copy=True)
    with np.errstate(all="ignore"):
        for p in parts[1:]:
            acc = np.logical_or(acc, p[0]) if acc.dtype == np.bool_ else (acc + p[0]).astype(acc.dtype)
    return (np.asarray(acc, dtype=op.result_dtype(0)),)


# func / cf companions ---------------------------------------------------------


@kernel("func.constant")
def func_constant(op):
    """A function value: the callee's symbol."""
    return (op.attr("value"),)


@kernel("func.call_indirect")
def call_indirect(op, callee, *args):
    name = getattr(callee, "name", None)
    if not isinstance(name, str):
        raise op.unsupported(f"callee value {callee!r}")
    return tuple(op.call(name, *args))


@kernel("cf.assert")
def cf_assert(op, cond):
    """A false condition fails the test with the assertion's message."""
    if not bool(np.asarray(cond).reshape(-1).all()):
        op.engine.record_check(False, f"cf.assert: {op.attr('msg', '')}", op.op)
    return ()


# scf companions ---------------------------------------------------------------
#
# ``scf.condition`` ends the "before" region of ``scf.while`` and is not one of
# the engine's terminators: its kernel records the condition and the values
# it forwards, and ``scf.while`` reads them as soon as the region returns.

_CONDITION = "scf.condition"


def _scf_run(op, i: int, *args) -> tuple:
    if not op.op.regions[i].blocks:
        return ()
    return tuple(op.region(i)(*args))


@kernel("scf.if")
def scf_if(op, cond):
    """Runs the "then" region when ``cond`` holds, else the "else" region."""
    return _scf_run(op, 0 if bool(np.asarray(cond)) else 1)


@kernel("scf.execute_region")
def scf_execute_region(op):
    return _scf_run(op, 0)


@kernel("scf.index_switch")
def scf_index_switch(op, arg):
    """Region 0 is the default; regions 1.. match ``cases`` in order."""
    v = int(np.asarray(arg))
    cases = [int(c) for c in (op.attr("cases") or ())]
    region = cases.index(v) + 1 if v in cases else 0
    return _scf_run(op, region)


@kernel("scf.for")
def scf_for(op, lb, ub, step, *inits):
    """``for iv = lb; iv < ub; iv += step`` carrying ``inits`` (signed
    comparison, or unsigned with the ``unsignedCmp`` attribute)."""
    ity = op.operand_type(0)
    bits = bits_of(ity)
    conv = as_unsigned if op.attr("unsignedCmp", False) else as_signed
    lo, hi, st = (int(conv(v, bits)) for v in (lb, ub, step))
    if st <= 0:
        raise ConformError(f"{op.name} at {op.loc}: step {st} is not positive")
    body = op.region(0)
    values = tuple(inits)
    dt = ity.dtype
    for iv in range(lo, hi, st):
        values = tuple(body(np.asarray(iv, dtype=np.int64).astype(dt), *values))
    return values


@kernel("scf.condition")
def scf_condition(op, cond, *args):
    op.engine.state[_CONDITION] = (bool(np.asarray(cond)), tuple(args))
    return ()


@kernel("scf.while")
def scf_while(op, *inits):
    """Runs "before" (ending in ``scf.condition``), then "after" while the
    condition holds; the forwarded values are the results on exit."""
    before, after = op.region(0), op.region(1)
    values = tuple(inits)
    state = op.engine.state
    while True:
        state.pop(_CONDITION, None)
        before(*values)
        got = state.pop(_CONDITION, None)
        if got is None:
            raise op.unsupported("before region without scf.condition")
        holds, forwarded = got
        if not holds:
            return forwarded
        values = tuple(after(*forwarded))
