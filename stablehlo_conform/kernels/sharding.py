"""Shardy (``sdy``) ops, evaluated with the global (unsharded) semantics.

A program exported with a mesh describes one computation on global values;
its shardings say where the pieces of each value live, never what the value
is. So sharding constraints, reshards and the sharding attributes are
identities on values, and only ``sdy.manual_computation`` (a ``shard_map``)
computes per device: its body runs once per device of the mesh on that
device's shards (split by ``in_shardings``), collectives inside the body meet
across the devices through a process grid (:mod:`..process_grid`), and the
per-device results are put together again by ``out_shardings``.

Devices of a mesh are numbered in row-major order of the mesh axes, or by its
``device_ids``; a device id ``d`` is the process ``(d // P, d % P)`` of the
module's ``mhlo.num_replicas x mhlo.num_partitions`` grid (``P`` partitions),
which is what ``partition_id`` returns inside the body. Replica groups given as
mesh axes (``#stablehlo.replica_group_mesh_axes``, spec.md#collective-ops)
are one group per position on the other axes, ordered along the listed axes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import ConformError
from ..process_grid import ProcessGrid, child_engine, grid_size_of, process_of
from ..program import AxisRef, Mesh, MeshAxesGroups, TensorSharding
from .registry import kernel


# meshes -------------------------------------------------------------------------
def resolve_mesh(module: Any, mesh: str | Mesh, where: str = "") -> Mesh:
    """The mesh an attribute names (a ``sdy.mesh`` symbol) or carries inline."""
    if isinstance(mesh, Mesh):
        return mesh
    found = (getattr(module, "meshes", None) or {}).get(mesh)
    if found is None:
        raise ConformError(f"{where}: no mesh @{mesh} in the module" if where else f"no mesh @{mesh} in the module")
    return found


def mesh_device_ids(mesh: Mesh) -> np.ndarray:
    """Device id at each mesh position (row-major over the axes)."""
    n = int(np.prod([s for _, s in mesh.axes], dtype=np.int64))
    if mesh.device_ids:
        ids = np.asarray(mesh.device_ids, dtype=np.int64)
        if ids.size != n:
            raise ConformError(f"mesh {_fmt_mesh(mesh)} has {n} positions but {ids.size} device ids")
        return ids
    return np.arange(n, dtype=np.int64)


def _fmt_mesh(mesh: Mesh) -> str:
    return "[" + ", ".join(f"{name}={size}" for name, size in mesh.axes) + "]"


def _coords(mesh: Mesh) -> np.ndarray:
    """``(devices, axes)`` coordinates of every mesh position."""
    sizes = [s for _, s in mesh.axes]
    if not sizes:
        return np.zeros((1, 0), dtype=np.int64)
    grids = np.indices(sizes, dtype=np.int64).reshape(len(sizes), -1)
    return grids.T


def _axis_index(mesh: Mesh, ref: AxisRef) -> int:
    for k, (name, _) in enumerate(mesh.axes):
        if name == ref.name:
            return k
    raise ConformError(f"axis {ref.name!r} is not an axis of mesh {_fmt_mesh(mesh)}")


def ref_size(mesh: Mesh, ref: AxisRef) -> int:
    full = mesh.axes[_axis_index(mesh, ref)][1]
    if ref.size is None:
        return full
    if full % (ref.pre_size * ref.size):
        raise ConformError(f"sub-axis {ref.name}:({ref.pre_size}){ref.size} does not divide axis "
                           f"{ref.name} of size {full}")
    return ref.size


def _stride(mesh: Mesh, ref: AxisRef) -> int:
    """How many steps of the full axis one step of ``ref`` is: the product of
    the sub-axis sizes after it (the minor part)."""
    full = mesh.axes[_axis_index(mesh, ref)][1]
    return 1 if ref.size is None else full // (ref.pre_size * ref.size)


def ref_coord(mesh: Mesh, coords: np.ndarray, ref: AxisRef) -> np.ndarray:
    """Every position's coordinate along an axis or sub-axis."""
    c = coords[:, _axis_index(mesh, ref)]
    return (c // _stride(mesh, ref)) % ref_size(mesh, ref)


def _rest(mesh: Mesh, coords: np.ndarray, refs: Sequence[AxisRef]) -> np.ndarray:
    """Coordinates with the digits of ``refs`` taken out: positions with
    equal rests differ only along ``refs``."""
    rest = coords.copy()
    for ref in refs:
        k = _axis_index(mesh, ref)
        rest[:, k] -= ref_coord(mesh, coords, ref) * _stride(mesh, ref)
    return rest


def _position(mesh: Mesh, coords: np.ndarray, refs: Sequence[AxisRef]) -> np.ndarray:
    """Mixed-radix index along ``refs`` (the first one major)."""
    pos = np.zeros(len(coords), dtype=np.int64)
    for ref in refs:
        pos = pos * ref_size(mesh, ref) + ref_coord(mesh, coords, ref)
    return pos


def mesh_groups(module: Any, groups: MeshAxesGroups, where: str = "") -> list[list[int]]:
    """Replica groups (device ids) of ``#stablehlo.replica_group_mesh_axes``:
    one group per position on the axes not listed, ordered along the listed
    axes (the first one major). See spec.md#collective-ops."""
    mesh = resolve_mesh(module, groups.mesh, where)
    coords = _coords(mesh)
    ids = mesh_device_ids(mesh)
    rest = _rest(mesh, coords, groups.axes)
    pos = _position(mesh, coords, groups.axes)
    out: dict[tuple, list[tuple[int, int]]] = {}
    for i, key in enumerate(map(tuple, rest)):
        out.setdefault(key, []).append((int(pos[i]), int(ids[i])))
    return [[d for _, d in sorted(members)] for _, members in sorted(out.items())]


# splitting and assembling values --------------------------------------------------
def _dim_refs(sharding: TensorSharding, manual: frozenset[str], rank: int) -> list[tuple[AxisRef, ...]]:
    dims = list(sharding.dims) + [()] * (rank - len(sharding.dims))
    return [tuple(r for r in refs if r.name in manual) for refs in dims[:rank]]


def _slices(mesh: Mesh, coords: np.ndarray, refs_per_dim, shape: Sequence[int], what: str) -> list[list[slice]]:
    """Per mesh position, the slice of a global value of ``shape`` it holds."""
    per_dim = []
    for d, refs in enumerate(refs_per_dim):
        count = int(np.prod([ref_size(mesh, r) for r in refs], dtype=np.int64)) if refs else 1
        if shape[d] % count:
            raise ConformError(f"{what}: dimension {d} of size {shape[d]} does not split into {count} shards")
        step = shape[d] // count
        start = _position(mesh, coords, refs) * step
        per_dim.append([slice(int(s), int(s) + step) for s in start])
    return [[per_dim[d][i] for d in range(len(shape))] for i in range(len(coords))]


def split(mesh: Mesh, value: np.ndarray, sharding: TensorSharding, manual: frozenset[str],
          what: str) -> list[np.ndarray]:
    """Each mesh position's shard of a global value along the manual axes."""
    value = np.asarray(value)
    coords = _coords(mesh)
    refs = _dim_refs(sharding, manual, value.ndim)
    return [np.ascontiguousarray(value[tuple(s)]) for s in _slices(mesh, coords, refs, value.shape, what)]


def assemble(mesh: Mesh, shards: Sequence[np.ndarray], sharding: TensorSharding, manual: frozenset[str],
             shape: Sequence[int | None], dtype: np.dtype, what: str, positions: Sequence[int] | None = None,
             columns: Sequence[int] | None = None) -> np.ndarray:
    """The global value whose shards the mesh positions hold (``shards[k]``
    from position ``positions[k]``; default every position). Along an axis
    the sharding does not split over, the value is replicated: the position
    at coordinate 0 of that axis is the one read (only the axes ``columns``
    index are looked at, default all). Dynamic sizes (None in ``shape``) are
    the shards' sizes times the shard counts."""
    coords = _coords(mesh)
    positions = list(range(len(coords))) if positions is None else list(positions)
    refs = _dim_refs(sharding, manual, len(shape))
    if any(d is None for d in shape):  # a dynamic result: the shards tell its size
        local = np.shape(shards[0])
        shape = [local[d] * int(np.prod([ref_size(mesh, r) for r in refs[d]], dtype=np.int64)) if n is None else n
                 for d, n in enumerate(shape)]
    rest = _rest(mesh, coords, [r for rs in refs for r in rs])
    if columns is not None:
        rest = rest[:, list(columns)]
    writer = ~np.any(rest, axis=1)
    slices = _slices(mesh, coords, refs, shape, what)
    out = np.zeros(tuple(shape), dtype=dtype)
    for piece, i in zip(shards, positions):
        if writer[i]:
            piece = np.asarray(piece)
            target = out[tuple(slices[i])]
            if piece.shape != target.shape:
                raise ConformError(f"{what}: device shard of shape {list(piece.shape)} does not fit "
                                   f"{list(target.shape)} of the global shape {list(shape)}")
            out[tuple(slices[i])] = piece
    return out


# ops ----------------------------------------------------------------------------
@kernel("sdy.sharding_constraint", "sdy.reshard", "sdy.propagation_barrier", "sdy.data_flow_edge",
        "sdy.all_gather", "sdy.all_slice", "sdy.all_to_all", "sdy.collective_permute")
def identity(op, *operands):
    """The global value is unchanged: these ops only say (or change) where
    its shards live."""
    return tuple(operands)


@kernel("sdy.sharding_group")
def sharding_group(op, *operands):
    """Asks for operands to share a sharding; no value."""
    return ()


@kernel("sdy.constant")
def constant(op):
    """Like spec.md#constant (a constant Shardy may not deduplicate)."""
    return (np.array(op.attr("value"), dtype=op.result_dtype(0), copy=True),)


@kernel("sdy.named_computation")
def named_computation(op, *operands):
    """A named call of its body on the operands."""
    return tuple(op.region(0)(*operands))


@kernel("sdy.manual_computation")
def manual_computation(op, *operands):
    """The body once per device of the mesh on that device's shards (split
    along the manual axes by ``in_shardings``), collectives meeting across
    the devices; results reassembled by ``out_shardings``. Nested in the
    body of another one (over other axes), each device runs the inner body
    on its own shard and the devices that differ only along the inner manual
    axes exchange their results to reassemble them."""
    eng = op.engine
    what = f"{op.name} at {op.loc}"
    manual = frozenset(op.attr("manual_axes", ()) or ())
    ins = tuple(op.attr("in_shardings", ()) or ())
    outs = tuple(op.attr("out_shardings", ()) or ())
    if len(ins) != len(operands) or len(outs) != op.num_results:
        raise ConformError(f"{what}: {len(ins)} in_shardings for {len(operands)} operands, "
                           f"{len(outs)} out_shardings for {op.num_results} results")
    shardings = ins + outs
    if not shardings:
        raise op.unsupported("a manual computation without operands or results (no mesh named)")
    mesh = resolve_mesh(eng.module, shardings[0].mesh, what)
    if any(resolve_mesh(eng.module, s.mesh, what) != mesh for s in shardings[1:]):
        raise op.unsupported("a manual computation whose shardings use different meshes")
    per_device = [split(mesh, v, s, manual, f"{what}: operand #{i}") for i, (v, s) in enumerate(zip(operands, ins))]
    body = op.op.regions[0]
    for i, (shards, ty) in enumerate(zip(per_device, body.blocks[0].arg_types)):
        want = getattr(ty, "shape", None)
        got = np.shape(shards[0]) if shards else ()
        if want is not None and (len(want) != len(got) or any(w not in (None, g) for w, g in zip(want, got))):
            raise ConformError(f"{what}: operand #{i} splits into shards of shape {list(got)} but the body "
                               f"takes {ty}")
    outer = getattr(eng, "manual_axes", None)
    if outer is not None:
        return _nested(op, mesh, manual, outer, per_device, outs, what)
    return _on_every_device(op, mesh, manual, per_device, outs, what)


def _on_every_device(op, mesh: Mesh, manual: frozenset[str], per_device, outs, what: str) -> tuple:
    eng = op.engine
    ids = mesh_device_ids(mesh)
    replicas, partitions = grid_size_of(eng.module)
    if int(ids.max(initial=0)) >= replicas * partitions:
        replicas, partitions = 1, int(ids.max(initial=0)) + 1
    grid = ProcessGrid(replicas, partitions, deadline=eng.deadline)
    body = op.op.regions[0]
    env = eng.current_env

    def job_for(position: int):
        def job(info) -> tuple:
            child = child_engine(eng, info, forward_trace=False)
            child.manual_axes = manual
            return child.run_region(body, tuple(v[position] for v in per_device), dict(env))
        return job

    jobs = {(int(d) // partitions, int(d) % partitions): job_for(i) for i, d in enumerate(ids)}
    if len(jobs) != len(ids):
        raise ConformError(f"{what}: mesh {_fmt_mesh(mesh)} names a device twice")
    results = grid.run(jobs)
    order = [(int(d) // partitions, int(d) % partitions) for d in ids]
    out = []
    for j, s in enumerate(outs):
        ty = op.result_type(j)
        shards = [results[pid][j] for pid in order]
        out.append(assemble(mesh, shards, s, manual, ty.shape, ty.dtype, f"{what}: result #{j}"))
    return tuple(out)


def _nested(op, mesh: Mesh, manual: frozenset[str], outer: frozenset[str], per_device, outs, what: str) -> tuple:
    eng = op.engine
    if manual & outer:
        raise op.unsupported(f"a manual computation over axes {sorted(manual & outer)} that are already manual")
    info = process_of(eng)
    partitions = info.grid.num_partitions
    ids = mesh_device_ids(mesh)
    found = np.nonzero(ids == info.replica_id * partitions + info.partition_id)[0]
    if not found.size:
        raise ConformError(f"{what}: process {info.id} is no device of mesh {_fmt_mesh(mesh)}")
    me = int(found[0])
    eng.manual_axes = outer | manual
    try:
        local = eng.run_region(op.op.regions[0], tuple(v[me] for v in per_device), dict(eng.current_env))
    finally:
        eng.manual_axes = outer
    coords = _coords(mesh)
    inner = [k for k, (name, _) in enumerate(mesh.axes) if name in manual]
    others = [k for k in range(len(mesh.axes)) if k not in inner]
    positions = [j for j in range(len(coords)) if (coords[j, others] == coords[me, others]).all()]
    group = tuple((int(ids[j]) // partitions, int(ids[j]) % partitions) for j in positions)
    key = ("sdy.manual_computation", id(op.op), group)
    got = info.grid.exchange(info.id, key + (info.next_seq(key),), group, tuple(local), what)
    out = []
    for j, s in enumerate(outs):
        ty = op.result_type(j)
        out.append(assemble(mesh, [got[pid][j] for pid in group], s, manual, ty.shape, ty.dtype,
                            f"{what}: result #{j}", positions, inner))
    return tuple(out)
