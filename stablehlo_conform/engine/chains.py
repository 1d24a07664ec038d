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
``codegen.ELEMENTWISE``), all results and operands of one shape. Each block of the chain is the
same calls on the operands' blocks at the same index, so each element is computed as in the
whole calls, bit for bit. Ops between them that read none of the chain's values (folded
constants, views, a reduction, an element-wise op of a smaller shape) are computed where they
are, before the chain runs: ops are pure, so one that reads none of the chain's values computes
the same before or after it (where one of them fails, the block runs step by step from the
start, which raises the error of the first failing op in program order).

The layout of a result can matter to an op reading it (a BLAS product's bits, a reduction's
order: ``docs/benchmarks.md``), and a chain's results computed block by block are new
C-ordered arrays. So a chain runs in blocks only for operands of strides with which the whole
calls gave C-ordered results (:class:`Chain`): the first run with such strides is the whole
calls, and records it. A NumPy call's result layout is a function of its operands' shapes and
strides, never of their values.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .. import types as T
from ..kernels import _parallel
from ..opinfo import FastPath

# the least result elements of a chain, and the least element-ops (elements times ops): below,
# the hand-off to another thread costs about what the second core saves (measured on 2 cores:
# a chain of about 60 ops on 128 x 3072 f32 elements takes 3.5 ms in blocks on 2 threads
# against 6.2 ms op by op)
LEAST_ELEMENTS = 1 << 15
LEAST_WORK = 1 << 21
BLOCK = 3 << 16  # elements of a block, about (at least one block per thread, at most four)
MOST_SIGNATURES = 64  # operand strides a chain remembers


class Chain:
    """One chain of a generated block: ``body(operands, index)`` computes the chain's outputs
    on the operands' elements at ``index`` (``...``: all of them, the whole calls)."""

    def __init__(self, body, shape: tuple, dtypes: tuple):
        self.body, self.shape, self.dtypes = body, shape, dtypes
        self.size = math.prod(shape)
        self.seen: dict[tuple, bool] = {}  # operand strides -> whether the whole calls gave C order
        self.whole = False  # a fast path that computed no block of its result: whole calls from now on
        self.index: dict[int, list] = {}

    def in_blocks(self, ins: tuple) -> bool:
        n = _parallel.threads()
        if n < 2 or self.whole or _parallel.inside():
            return False
        key = self.signature(ins)
        return key is not None and self.seen.get(key, False) and _parallel.paying()

    def signature(self, ins: tuple) -> tuple | None:
        shape = self.shape
        for x in ins:
            if x.__class__ is not np.ndarray or x.shape != shape:
                return None
        return tuple(x.strides for x in ins)

    def learn(self, ins: tuple, outs: tuple) -> None:
        key = self.signature(ins)
        if key is None or key in self.seen or len(self.seen) >= MOST_SIGNATURES:
            return
        self.seen[key] = all(o.__class__ is np.ndarray and o.shape == self.shape and o.dtype == dt
                             and o.flags.c_contiguous for o, dt in zip(outs, self.dtypes))

    def blocks(self, n: int) -> list:
        idx = self.index.get(n)
        if idx is None:
            parts = n * max(1, min(4, round(self.size / (n * BLOCK))))
            idx = self.index[n] = _parallel.blocks(self.shape, parts)
        return idx


class _NotElementwise(Exception):
    """A fast path returned no block of the result's type for a block of its operands."""


def _block(body, ins: tuple, outs: tuple, index) -> None:
    for o, r in zip(outs, body(ins, index)):
        if r.__class__ is not np.ndarray or r.shape != o[index].shape or r.dtype != o.dtype:
            raise _NotElementwise()
        o[index] = r


def run(chain: Chain, ins: tuple) -> tuple:
    """The chain's outputs: computed in blocks on the process's threads where its operands'
    strides allow (see :class:`Chain`), else the whole calls (recording what they give)."""
    if chain.in_blocks(ins):
        outs = tuple(np.empty(chain.shape, dt) for dt in chain.dtypes)
        try:
            _parallel.run([functools.partial(_block, chain.body, ins, outs, s)
                           for s in chain.blocks(_parallel.threads())])
            return outs
        except _NotElementwise:
            chain.whole = True
    outs = chain.body(ins, ...)
    chain.learn(ins, outs)
    return outs


def member(op, fp: FastPath | None, elementwise: frozenset) -> tuple | None:
    """The result shape of an op a chain may hold (see the module docstring), else None."""
    if fp is None or fp.view or not (fp.out or op.name in elementwise) or len(op.result_types) != 1:
        return None
    ty = op.result_types[0]
    if not isinstance(ty, T.TensorType) or not ty.is_static or not ty.shape:
        return None
    shape = tuple(ty.shape)
    if any(not isinstance(t, T.TensorType) or tuple(t.shape) != shape for t in op.operand_types):
        return None
    return shape


def find(steps: tuple, limit: int, kinds: tuple, fast: dict, elementwise: frozenset) -> list[list[int]]:
    """The chains of ``steps[:limit]`` (one block's steps: ``(op, kind, name, fn, operands,
    results, quant, fold)``), each the positions of its ops in order: runs of ops of
    :func:`member` of one shape, of at least :data:`LEAST_ELEMENTS` elements and
    :data:`LEAST_WORK` element-ops. Between them may come folded steps and ops with a fast path
    that read no value computed in the run (a view, a reduction, an element-wise op of a smaller
    shape): those are computed where they are, before the chain (ops are pure: an op reading
    none of the chain's values computes the same before or after it). ``kinds``: the kernel
    kind of step (``steps._KERNEL``)."""
    (kernel,) = kinds
    chains: list[list[int]] = []
    run_: list[int] = []
    inside: set[int] = set()
    shape = None

    def close() -> None:
        if len(run_) > 1:
            size = math.prod(shape)
            if size >= LEAST_ELEMENTS and size * len(run_) >= LEAST_WORK:
                chains.append(list(run_))
        run_.clear()
        inside.clear()

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
        s = member(op, fp, elementwise)
        apart = inside.isdisjoint(operands)
        if s is not None and s == shape and run_:
            run_.append(j)
            inside.update(results)
            continue
        if apart and run_ and (s is None or math.prod(s) < math.prod(shape)):
            continue  # computed where it is, before the chain
        close()
        if s is not None:
            shape = s
            run_.append(j)
            inside.update(results)
    close()
    return chains
