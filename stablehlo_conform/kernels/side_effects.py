"""Side-effecting ops: tokens, point-to-point channels and the streams.

See spec.md#after_all, #send, #recv, #infeed, #outfeed and
spec.md#point-to-point-communication / #streaming-communication.

Channels: a ``send`` without ``source_target_pairs`` (a host transfer) puts
its values on channel ``channel_id``; the next ``recv`` of that channel, in
any process, takes them (first in, first out). With ``source_target_pairs``
the values go from each source process to its target process (ids are
replica ids when the grid has one partition, partition ids otherwise); a
process that is no pair's target receives zeros. A ``recv`` nobody sends to
ends with a clear error instead of waiting forever (see
:mod:`..process_grid`).

Infeed reads, in order, the values of the ``infeed`` functions given to
``interpreter.run_parallel`` (or the ``infeed`` sequence of the engine's
``io``); outfeed appends ``(process_id, values)`` to
``engine.state["outfeed"]`` (and to ``io.outfeed`` when there is one).
"""

from __future__ import annotations

import numpy as np

from .. import types as T
from ..errors import ConformError
from ..process_grid import fmt_pid, process_of
from ..program import SymbolRef
from ..opinfo import STORAGE
from .registry import kernel
from .collectives import _groups, channel_id


@kernel("stablehlo.after_all", "mhlo.after_all")
def after_all(op, *tokens):
    """See spec.md#after_all: only orders effects; produces a token."""
    return (T.TOKEN,)


@kernel("stablehlo.create_token", "mhlo.create_token")
def create_token(op, *_):
    """Deprecated spelling of ``after_all()`` (spec.md#deprecated-operations)."""
    return (T.TOKEN,)


def _pairs(op, info):
    """``source_target_pairs`` as process id pairs, or None."""
    pairs = _groups(op, "source_target_pairs")
    if not pairs:
        return None
    grid = info.grid
    out = []
    for pair in pairs:
        if len(pair) != 2:
            raise ConformError(f"{op.name} at {op.loc}: source_target_pairs rows must have 2 ids")
        if grid.num_partitions == 1:
            src, dst = (pair[0], 0), (pair[1], 0)
        else:
            src, dst = (info.replica_id, pair[0]), (info.replica_id, pair[1])
        for pid in (src, dst):
            if not (0 <= pid[0] < grid.num_replicas and 0 <= pid[1] < grid.num_partitions):
                raise ConformError(f"{op.name} at {op.loc}: source_target_pairs name process "
                                   f"{fmt_pid(pid)} outside the process grid")
        out.append((src, dst))
    return out


@kernel("stablehlo.send", quantized=STORAGE)
def send(op, *operands):
    """See spec.md#send."""
    info = process_of(op.engine)
    values = tuple(np.array(v, copy=True) for v in operands[:-1])
    cid = channel_id(op)
    what = f"{op.name} at {op.loc}"
    pairs = _pairs(op, info)
    if pairs is None:
        info.grid.send(info.id, ("channel", cid), values, what)
    else:
        for src, dst in pairs:
            if src == info.id:
                info.grid.send(info.id, ("channel", cid, dst), values, what)
    return (T.TOKEN,)


@kernel("stablehlo.recv", quantized=STORAGE)
def recv(op, *tokens):
    """See spec.md#recv."""
    info = process_of(op.engine)
    cid = channel_id(op)
    what = f"{op.name} (channel {cid}) at {op.loc}"
    n = op.num_results - 1
    pairs = _pairs(op, info)
    if pairs is None:
        _, values = info.grid.recv(info.id, ("channel", cid), what, f"on channel {cid}")
    else:
        sources = [src for src, dst in pairs if dst == info.id]
        if not sources:
            return tuple(np.zeros(op.result_shape(i), op.result_dtype(i)) for i in range(n)) + (T.TOKEN,)
        _, values = info.grid.recv(info.id, ("channel", cid, info.id), what,
                                   f"on channel {cid} to process {fmt_pid(info.id)} "
                                   f"(expected from process {fmt_pid(sources[0])})")
    return _payload(op, values, n) + (T.TOKEN,)


def _payload(op, values, n: int) -> tuple:
    values = tuple(values)
    if len(values) != n:
        raise ConformError(f"{op.name} at {op.loc}: received {len(values)} values, op produces {n}")
    out = []
    for i, v in enumerate(values):
        ty = op.result_type(i)
        if isinstance(ty, T.TokenType):
            out.append(T.TOKEN)
            continue
        a = np.asarray(v)
        if a.dtype != ty.dtype:
            a = a.astype(ty.dtype)
        if ty.is_static and a.shape != tuple(ty.shape):
            raise ConformError(f"{op.name} at {op.loc}: received a value of shape {a.shape}, "
                               f"op produces {ty}")
        out.append(a)
    return tuple(out)


@kernel("stablehlo.infeed", quantized=STORAGE)
def infeed(op, *tokens):
    """See spec.md#infeed: the next entry of the infeed queue."""
    info = process_of(op.engine)
    n = op.num_results - 1
    item = info.grid.next_infeed()
    if item is None:
        raise ConformError(f"{op.name} at {op.loc}: the infeed of process {fmt_pid(info.id)} is empty")
    if isinstance(item, SymbolRef):
        item = op.call(item.name)
    elif isinstance(item, str):
        item = op.call(item)
    elif not isinstance(item, (tuple, list)):
        item = (item,)
    return _payload(op, item, n) + (T.TOKEN,)


@kernel("stablehlo.outfeed", quantized=STORAGE)
def outfeed(op, *operands):
    """See spec.md#outfeed: records the values, produces a token."""
    info = process_of(op.engine)
    values = tuple(np.array(v, copy=True) for v in operands[:-1])
    with info.grid.cond:
        info.grid.outfeed.append((info.id, values))
        op.engine.state.setdefault("outfeed", []).append((info.id, values))
    sink = getattr(op.engine.io, "outfeed", None)
    if sink is not None and hasattr(sink, "append"):
        with info.grid.io_lock:
            sink.append(values)
    return (T.TOKEN,)
