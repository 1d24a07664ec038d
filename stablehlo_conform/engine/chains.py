"""Chains of element-wise ops computed block by block on the process's threads.

A real model's activation is dozens of element-wise ops on one large tensor one after the
other: an exact GELU exported through ``erf`` is about 60 ``multiply``, ``add``, ``select``,
``compare`` and one ``exponential`` on the FFN's ``128 x 3072`` activations. One op at a time,
each is a pass over memory too short to pay for handing half of it to another thread (see
``codegen.SPLIT_MIN``). As a chain, each block of the operands goes through every op of the
chain on one thread, the blocks on :func:`~..kernels._parallel.threads` threads at once: the
hand-off is paid once for the whole chain (on 2 cores, bert_base's GELU chain takes about 1.8 ms
against 3 ms op by op).

A chain (:func:`find`) is a run of ops of one block that are element-wise (spec.md
"Elementwise operations": each result element a function of the operands' elements at its
index), each with a fast path that computes a block of its operands as of the whole operands
(the fast paths ``codegen._in_pieces`` runs in pieces: a ufunc, or the fast path of an op of
``codegen.ELEMENTWISE``), together with reductions over trailing axes of the chain's own values
(spec.md#reduce: a softmax's maximum and sum, a normalisation's mean and variance) and
broadcasts of their rows back (spec.md#broadcast_in_dim). All its values share the leading
axes of the chain's ``frame``, and its blocks cut those axes only: a block holds whole rows,
each reduced by the same calls as in the whole reduction. Each block of the chain is the same
calls on the operands' blocks at the same index, so each element is computed as in the whole
calls, bit for bit, but for which NaN a result of two NaN operands keeps: IEEE 754 leaves that
open and NumPy's loops choose by the shapes they are given (the kernels and the fast paths
differ there too). Ops between them that read none of the chain's values (folded constants,
views, a reduction, an element-wise op of a smaller shape) are computed where they are, before
the chain runs: ops are pure, so one that reads none of the chain's values computes the same
before or after it (where one of them fails, the block runs step by step from the start, which
raises the error of the first failing op in program order). Each chain keeps its own record
of whether threads paid (:func:`~..kernels._parallel.paying`).

The layout of a result can matter to an op reading it (a BLAS product's bits, a reduction's
order: ``docs/benchmarks.md``), and a chain's results computed block by block are new
C-ordered arrays. So a chain runs in blocks only for operands of strides with which its ops
one by one gave C-ordered results (:class:`Chain`): the first run with such strides computes them
one by one, as without chains, and records it. A NumPy call's result layout is a function of its
operands' shapes and strides, never of their values.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .. import types as T
from ..kernels import _parallel
from ..kernels.reduction import rows_reduce
from ..kernels.shape import rows_broadcast
from ..opinfo import FastPath

# the least elements of a chain's largest value, and the least element-ops (the elements each of
# its ops reads or writes, summed): below, the hand-off to another thread costs about what the
# second core saves (measured on 2 cores: bert_base's GELU, about 60 ops on 128 x 3072 f32
# elements, takes 1.8 ms in 2 blocks on 2 threads against 3 ms op by op; layer norms and softmaxes
# of 100k-200k elements as chains measured no faster in alternating runs)
LEAST_ELEMENTS = 1 << 15
LEAST_WORK = 1 << 21
BLOCK = 3 << 16  # elements of a block, about (at least one block per thread, at most four)
MOST_SIGNATURES = 64  # operand strides a chain remembers


class Chain:
    """One chain of a generated block: ``body(operands, index, sizes)`` computes the chain's
    outputs on the operands' elements at ``index`` (one slice for each axis of the chain's
    ``frame``, the leading axes every value of the chain shares; ``sizes``: the slices' sizes).
    Where it does not run in blocks, the generated block computes the chain's ops one by one
    and the chain learns from their results (:meth:`learn`). ``rows``: the operands the chain
    reduces by rows, whose blocks reduce as the whole does only where they are C-ordered (a
    block of whole rows of a C-ordered array is C-ordered: each row then reduced by the same
    calls)."""

    def __init__(self, body, frame: tuple, shapes: tuple, dtypes: tuple, rows: tuple = ()):
        self._body, self.frame, self.shapes, self.dtypes = body, frame, shapes, dtypes
        self.rows = rows  # the operands reduced by rows: in blocks only where they are C-ordered
        self.size = math.prod(frame)
        self.seen: dict[tuple, bool] = {}  # operand strides -> whether the ops one by one gave C order
        self.whole = False  # a fast path that computed no block of its result: one by one from now on
        self.index: dict[int, list] = {}
        self.paying = [0, _parallel.BACK_OFF]  # this chain's own record of whether threads paid

    def in_blocks(self, ins: tuple) -> bool:
        """Whether the chain runs in blocks on these operands: more than one thread (not inside
        another op's piece), operands of strides with which its ops one by one gave C-ordered
        results, the ones it reduces by rows C-ordered, and threads paying for this chain."""
        n = _parallel.threads()
        if n < 2 or self.whole or _parallel.inside():
            return False
        key = self.signature(ins)
        return (key is not None and self.seen.get(key, False) and all(ins[i].flags.c_contiguous for i in self.rows)
                and _parallel.paying(self.paying))

    @staticmethod
    def signature(ins: tuple) -> tuple | None:
        for x in ins:
            if x.__class__ is not np.ndarray:
                return None
        return tuple(x.strides for x in ins)

    def learn(self, ins: tuple, outs: tuple) -> None:
        """Record whether ``outs``, the chain's outputs computed op by op on ``ins``, are all
        C-ordered arrays of their types (the layout of a NumPy result is a function of its
        operands' shapes and strides: it holds for every call with these strides)."""
        key = self.signature(ins)
        if key is None or key in self.seen or len(self.seen) >= MOST_SIGNATURES:
            return
        self.seen[key] = all(o.__class__ is np.ndarray and o.shape == shape and o.dtype == dt
                             and o.flags.c_contiguous for o, shape, dt in zip(outs, self.shapes, self.dtypes))

    def blocks(self, n: int) -> list:
        idx = self.index.get(n)
        if idx is None:
            parts = n * max(1, min(4, round(self.work / (n * BLOCK))))
            idx = self.index[n] = [tuple(slice(i, i + 1) if isinstance(i, int) else i for i in b)
                                   for b in _parallel.blocks(self.frame, parts)]
        return idx

    @property
    def body(self):
        """The function, compiled the first time the chain runs in blocks where it was given as
        ``(source, namespace)`` (its first runs compute its ops one by one: a model's first run
        compiles none of its chains)."""
        if self._body.__class__ is tuple:
            src, ns = self._body
            exec(compile(src, "<chain>", "exec"), ns)
            self._body = ns["body"]
        return self._body

    @property
    def work(self) -> int:
        return max(math.prod(s) for s in self.shapes) if self.shapes else self.size


class _NotElementwise(Exception):
    """A fast path returned no block of the result's type for a block of its operands."""


def _block(body, ins: tuple, outs: tuple, index: tuple) -> None:
    sizes = tuple(s.stop - s.start for s in index)
    for o, r in zip(outs, body(ins, index, sizes)):
        if r.__class__ is not np.ndarray or r.shape != o[index].shape or r.dtype != o.dtype:
            raise _NotElementwise()
        o[index] = r


def run(chain: Chain, ins: tuple) -> tuple:
    """The chain's outputs computed in blocks on the process's threads (where
    :meth:`Chain.in_blocks` allows: the caller computes its ops one by one elsewhere). A fast
    path that computes no block of its result (:class:`_NotElementwise`) is raised, and the
    chain's ops are computed one by one from then on."""
    outs = tuple(np.empty(shape, dt) for shape, dt in zip(chain.shapes, chain.dtypes))
    try:
        _parallel.run([functools.partial(_block, chain.body, ins, outs, s)
                       for s in chain.blocks(_parallel.threads())], chain.paying)
    except _NotElementwise:
        chain.whole = True
        raise
    return outs


def member(op, fp: FastPath | None, elementwise: frozenset) -> tuple | None:
    """The result shape of an element-wise op a chain may hold (see the module docstring), else
    None."""
    if fp is None or fp.view or not (fp.out or op.name in elementwise) or len(op.result_types) != 1:
        return None
    ty = op.result_types[0]
    if not isinstance(ty, T.TensorType) or not ty.is_static or not ty.shape:
        return None
    shape = tuple(ty.shape)
    if any(not isinstance(t, T.TensorType) or tuple(t.shape) != shape for t in op.operand_types):
        return None
    return shape


def by_rows(op, fp: FastPath | None) -> tuple[int, object] | None:
    """``(k, call)`` of a ``reduce`` over trailing axes (:func:`.reduction.rows_reduce`) or a
    ``broadcast_in_dim`` keeping the leading axes (:func:`.shape.rows_broadcast`), which a
    chain computes on blocks of whole rows of its first ``k`` axes; else None."""
    if fp is None or len(op.result_types) != 1:
        return None
    if op.name == "stablehlo.reduce":
        return rows_reduce(op)
    if op.name == "stablehlo.broadcast_in_dim" and fp.view:
        return rows_broadcast(op)
    return None


def _prefix(a: tuple, b: tuple) -> tuple:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def _frame_of(op, fp, elementwise) -> tuple | None:
    """The leading axes (their sizes) a chain's blocks may cut for this op, or None where it is
    no op of a chain."""
    s = member(op, fp, elementwise)
    if s is not None:
        return s
    rows = by_rows(op, fp)
    if rows is None:
        return None
    return tuple(op.operand_types[0].shape)[:rows[0]]


def find(steps: tuple, limit: int, kinds: tuple, fast: dict, elementwise: frozenset) -> list[tuple[list[int], tuple]]:
    """The chains of ``steps[:limit]`` (one block's steps: ``(op, kind, name, fn, operands,
    results, quant, fold)``), each ``(positions, frame)``: the positions of its ops in order and
    the leading axes its blocks cut. A chain is a run of element-wise ops of :func:`member`, of
    reductions over trailing axes and broadcasts back (:func:`by_rows`: a normalisation's
    statistics, a softmax's maximum and sum) whose shapes share the frame's leading axes, of at
    least :data:`LEAST_ELEMENTS` elements and :data:`LEAST_WORK` element-ops (a reduction only
    of a new array of the chain's, whose blocks of rows are C-ordered as the whole is, or of an
    operand of the chain, which :class:`Chain` runs in blocks only where it is C-ordered).
    Between them may come folded steps and ops with a fast path that read no value computed in
    the run: those are computed where they are, before the chain (ops are pure: one that reads
    none of the chain's values computes the same before or after it).
    ``kinds``: the kernel kind of step (``steps._KERNEL``)."""
    (kernel,) = kinds
    chains: list[tuple[list[int], tuple]] = []
    run_: list[int] = []
    inside: set[int] = set()
    fresh: set[int] = set()
    state = {"frame": (), "work": 0, "size": 0}

    def close() -> None:
        if len(run_) > 1 and state["size"] >= LEAST_ELEMENTS and state["work"] >= LEAST_WORK:
            chains.append((list(run_), state["frame"]))
        run_.clear()
        inside.clear()
        fresh.clear()
        state.update(frame=(), work=0, size=0)

    def add(j: int, op, fp, frame: tuple) -> None:
        size = max(math.prod(t.shape) for t in (*op.operand_types, *op.result_types) if t.shape)
        run_.append(j)
        inside.update(op.results)
        if fp.out or fp.fresh:
            fresh.update(op.results)
        state.update(frame=frame, work=state["work"] + size, size=max(state["size"], size))

    for j, (op, kind, name, fn, operands, results, quant, fold) in enumerate(steps[:limit]):
        if kind != kernel or fn is None or quant is not False:
            close()
            continue
        if fold:
            continue
        fp = fast.get(id(op))
        if fp is None:
            close()
            continue
        own = _frame_of(op, fp, elementwise)
        apart = inside.isdisjoint(operands)
        if own is not None and op.name == "stablehlo.reduce" and operands[0] in inside and operands[0] not in fresh:
            own = None  # a reduction of a view the chain makes: its rows need not be C-ordered
        if own is not None and run_:
            frame = _prefix(state["frame"], own)
            if frame and math.prod(frame) > 1:
                add(j, op, fp, frame)
                continue
        if apart and run_ and (own is None or math.prod(own) < state["size"]):
            continue  # computed where it is, before the chain
        close()
        if own is not None and (member(op, fp, elementwise) is not None or op.name == "stablehlo.reduce"):
            add(j, op, fp, own)
    close()
    return chains
