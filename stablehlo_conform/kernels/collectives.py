"""Collective ops and the process position ops.

See spec.md#all_gather, #all_reduce, #all_to_all, #reduce_scatter,
#collective_permute, #collective_broadcast, #collective_reduce, #replica_id,
#partition_id, and spec.md#collective-ops for the process group strategies.
Every process computes its own results from the values the members of its
process group contribute to one rendezvous (:mod:`..process_grid`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ConformError
from ..process_grid import CollectiveMismatch, ProcessInfo, fmt_pid, process_of
from ..program import MeshAxesGroups
from ..opinfo import EXACT, STORAGE
from .registry import kernel
from .sharding import mesh_groups


# attributes -------------------------------------------------------------------
def channel_id(op) -> int:
    ch = op.attr("channel_handle")
    if ch is None:
        return 0
    if hasattr(ch, "get"):
        return int(ch.get("handle", 0))
    return int(ch)


def _groups(op, name: str = "replica_groups") -> list[list[int]] | None:
    """The ``replica_groups`` (or ``source_target_pairs``) constant as lists,
    without the ``-1`` padding of ragged groups (groups given as mesh axes
    resolved against the module's meshes); None when empty."""
    g = op.attr(name)
    if g is None:
        return None
    if isinstance(g, MeshAxesGroups):
        return mesh_groups(op.engine.module, g, f"{op.name} at {op.loc}")
    if not isinstance(g, (np.ndarray, list, tuple)):
        raise op.unsupported(f"{name} given as {type(g).__name__} ({g})")
    arr = np.asarray(g, dtype=np.int64)
    if arr.size == 0:
        return None
    if arr.ndim == 1:
        arr = arr.reshape(1, -1)
    return [[int(x) for x in row if x >= 0] for row in arr]


def _strategy(op, with_global_ids: bool) -> str:
    """The process group strategy of spec.md#collective-ops for this op."""
    cid = channel_id(op)
    if not with_global_ids:
        return "cross_partition" if cid > 0 else "cross_replica"
    use_global = bool(op.attr("use_global_device_ids", False))
    if use_global:
        if cid <= 0:
            raise ConformError(f"{op.name} at {op.loc}: use_global_device_ids requires channel_id > 0")
        return "flattened_ids"
    return "cross_replica_and_partition" if cid > 0 else "cross_replica"


def _process_groups(op, info: ProcessInfo, mode: str, groups: list[list[int]] | None) -> list[list[tuple]]:
    grid = info.grid
    if groups is None:
        # no groups given: one group of every id
        if mode == "cross_partition":
            groups = [list(range(grid.num_partitions))]
        elif mode == "flattened_ids":
            groups = [list(range(grid.num_processes))]
        else:
            groups = [list(range(grid.num_replicas))]
    try:
        return grid.process_groups(mode, groups)
    except ConformError as e:
        raise ConformError(f"{op.name} at {op.loc}: {e}") from None


def _my_group(op, info: ProcessInfo, mode: str, groups) -> list[tuple] | None:
    for g in _process_groups(op, info, mode, groups):
        if info.id in g:
            return g
    return None


def _what(op) -> str:
    return f"{op.name} at {op.loc}"


def _meet(op, info: ProcessInfo, group: list[tuple], values: Any) -> list[Any]:
    """Exchange ``values`` within ``group``; the members' values in group order."""
    g = tuple(group)
    cid = channel_id(op)
    seq = info.next_seq(("collective", cid, g))
    key = ("collective", cid, g, seq)
    got = info.grid.exchange(info.id, key, g, (op.name, values), _what(op))
    names = {pid: name for pid, (name, _) in got.items()}
    if len(set(names.values())) > 1:
        other = next(pid for pid in g if names[pid] != op.name)
        where = info.grid.where.get(other, names[other])
        raise CollectiveMismatch(
            f"collective mismatch: {_what(op)} in process {fmt_pid(info.id)} met "
            f"{where} in process {fmt_pid(other)} (same process group {list(g)})")
    return [got[pid][1] for pid in g]


def _need_group(op, info: ProcessInfo, group) -> list[tuple]:
    if group is None:
        raise ConformError(f"{op.name} at {op.loc}: process {fmt_pid(info.id)} is in no process group")
    return group


def _zeros(op, i: int) -> np.ndarray:
    ty = op.result_type(i)
    return np.zeros(ty.shape, dtype=ty.dtype)


def _reduce(op, values: list[np.ndarray], i: int) -> np.ndarray:
    """Left fold of ``computation`` over ``values`` (converted to the
    computation's element type), as spec.md#all_reduce's schedule allows."""
    dtype = op.result_dtype(i)
    body = op.region(0, lanes=True)
    acc = np.asarray(values[0]).astype(dtype, copy=True)
    shape = acc.shape
    for v in values[1:]:
        out = body(acc, np.asarray(v).astype(dtype, copy=False))
        acc = np.asarray(out[0])
        if acc.dtype != dtype:
            acc = acc.astype(dtype)
        if acc.shape != shape:
            acc = np.broadcast_to(acc, shape).copy()
    return acc


# position ---------------------------------------------------------------------
@kernel("stablehlo.replica_id")
def replica_id(op):
    """See spec.md#replica_id."""
    return (np.asarray(process_of(op.engine).replica_id, dtype=op.result_dtype(0)),)


@kernel("stablehlo.partition_id")
def partition_id(op):
    """See spec.md#partition_id."""
    return (np.asarray(process_of(op.engine).partition_id, dtype=op.result_dtype(0)),)


# collectives ------------------------------------------------------------------
def _meet_global_group(op, operands):
    """For the ops with ``use_global_device_ids``: this process, its group
    (an error when it is in none) and what every member of it passed."""
    info = process_of(op.engine)
    group = _need_group(op, info, _my_group(op, info, _strategy(op, True), _groups(op)))
    return info, group, _meet(op, info, group, operands)


@kernel("stablehlo.all_gather", quantized=STORAGE, accuracy=EXACT)
def all_gather(op, *operands):
    """See spec.md#all_gather."""
    info, group, parts = _meet_global_group(op, operands)
    dim = int(op.attr("all_gather_dim"))
    return tuple(
        np.concatenate([p[i] for p in parts], axis=dim).astype(op.result_dtype(i), copy=False)
        for i in range(len(operands)))


@kernel("stablehlo.all_reduce", quantized=STORAGE, reduces=True)
def all_reduce(op, *operands):
    """See spec.md#all_reduce."""
    info, group, parts = _meet_global_group(op, operands)
    return tuple(_reduce(op, [p[i] for p in parts], i) for i in range(len(operands)))


@kernel("stablehlo.reduce_scatter", quantized=STORAGE, reduces=True)
def reduce_scatter(op, *operands):
    """See spec.md#reduce_scatter."""
    info, group, parts = _meet_global_group(op, operands)
    dim = int(op.attr("scatter_dimension"))
    me = group.index(info.id)
    out = []
    for i in range(len(operands)):
        reduced = _reduce(op, [p[i] for p in parts], i)
        if reduced.shape[dim] % len(group):
            raise ConformError(f"{op.name} at {op.loc}: dimension {dim} of size {reduced.shape[dim]} "
                               f"does not split into {len(group)} parts")
        out.append(np.ascontiguousarray(np.split(reduced, len(group), axis=dim)[me]))
    return tuple(out)


@kernel("stablehlo.all_to_all", quantized=STORAGE, accuracy=EXACT)
def all_to_all(op, *operands):
    """See spec.md#all_to_all."""
    info = process_of(op.engine)
    group = _need_group(op, info, _my_group(op, info, _strategy(op, False), _groups(op)))
    split_dim = int(op.attr("split_dimension"))
    concat_dim = int(op.attr("concat_dimension"))
    count = int(op.attr("split_count"))
    if count != len(group):
        raise ConformError(f"{op.name} at {op.loc}: split_count {count} differs from the process group "
                           f"size {len(group)}")
    parts = _meet(op, info, group, operands)
    me = group.index(info.id)
    out = []
    for i in range(len(operands)):
        pieces = [np.split(np.asarray(p[i]), count, axis=split_dim)[me] for p in parts]
        out.append(np.concatenate(pieces, axis=concat_dim).astype(op.result_dtype(i), copy=False))
    return tuple(out)


@kernel("stablehlo.collective_permute", quantized=STORAGE, accuracy=EXACT)
def collective_permute(op, operand):
    """See spec.md#collective_permute."""
    info = process_of(op.engine)
    pairs = _groups(op, "source_target_pairs") or []
    mode = _strategy(op, False)
    pgroups = _process_groups(op, info, mode, pairs) if pairs else []
    involved = sorted({pid for g in pgroups for pid in g})
    if info.id not in involved:
        return (_zeros(op, 0),)
    values = _meet(op, info, involved, (operand,))
    by_pid = dict(zip(involved, values))
    for g in pgroups:
        if len(g) == 2 and g[1] == info.id:
            return (np.array(by_pid[g[0]][0], dtype=op.result_dtype(0), copy=True),)
    return (_zeros(op, 0),)


def _rooted_exchange(op, info: ProcessInfo, operands):
    """The process group of a rooted collective, each result's root (an index
    into the group: from the trailing operand with ``has_dynamic_root``, else
    0) and what every group member passed; None when the process is in no
    group."""
    dynamic = bool(op.attr("has_dynamic_root", False))
    n = op.num_results
    group = _my_group(op, info, _strategy(op, False), _groups(op))
    if group is None:
        return None
    if dynamic:
        roots = np.asarray(operands[n]).reshape(-1).astype(np.int64)
        if roots.size < n:
            raise ConformError(f"{op.name} at {op.loc}: {roots.size} roots for {n} results")
    else:
        roots = np.zeros(n, dtype=np.int64)
    return group, roots, _meet(op, info, group, operands[:n])


def _root(op, roots, j: int, group) -> int:
    """Result ``j``'s root, checked to lie inside the group."""
    r = int(roots[j])
    if not 0 <= r < len(group):
        raise ConformError(f"{op.name} at {op.loc}: root {r} outside the process group {group}")
    return r


@kernel("stablehlo.collective_broadcast", quantized=STORAGE, accuracy=EXACT)
def collective_broadcast(op, *operands):
    """See spec.md#collective_broadcast."""
    info = process_of(op.engine)
    n = op.num_results
    exchange = _rooted_exchange(op, info, operands)
    if exchange is None:
        return tuple(_zeros(op, j) for j in range(n))
    group, roots, parts = exchange
    out = []
    for j in range(n):
        r = _root(op, roots, j, group)
        out.append(np.array(parts[r][j], dtype=op.result_dtype(j), copy=True))
    return tuple(out)


@kernel("stablehlo.collective_reduce")
def collective_reduce(op, *operands):
    """See spec.md#collective_reduce: the reduction lands on the root
    process of each group, every other process gets zeros."""
    info = process_of(op.engine)
    n = op.num_results
    exchange = _rooted_exchange(op, info, operands)
    if exchange is None:
        return tuple(_zeros(op, j) for j in range(n))
    group, roots, parts = exchange
    me = group.index(info.id)
    out = []
    for j in range(n):
        r = _root(op, roots, j, group)
        out.append(_reduce(op, [p[j] for p in parts], j) if r == me else _zeros(op, j))
    return tuple(out)
