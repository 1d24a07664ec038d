"""Blocks as generated functions: the engine runs a block that has run step by step as one
Python function doing the same steps (see :func:`_generate`)."""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import types as T
from ..kernels import _parallel, _split_gemm
from ..kernels.context import OpContext
from ..kernels.control_flow import while_ as _while_kernel
from ..kernels.indexing import update_in_place
from ..kernels.registry import Registry
from ..opinfo import FastPath
from ..program import Block, Op, Region, walk_ops
from . import chains as _chains
from .steps import (_BR, _CALL, _COND_BR, _KERNEL, _RETURN, _SWITCH, _expectations, _folded_results, _late,
                    _locate, _result_bytes, _run_kernel, _unsupported)


# ops that read their operands from the slot dictionary themselves
_SLOT_READERS = frozenset({"cf.cond_br", "cf.switch"})


def _generate(region: Region, index: int, steps: tuple, lanes: bool, registry: Registry,
              steps_of: Callable[[Block], tuple], funcs: dict | None = None) -> Callable:
    """One function running block ``index`` of ``region``, generated and compiled.

    It does what :meth:`Engine._run_ops` does for these ``steps`` (folding
    on, no trace) with all that is known before running resolved: values
    read and written only by the generated code are local variables (the
    others go through the slot dictionary), results of folded ops are
    constants, each kernel is called directly with its context, and its
    results are checked against the declared types inline (the full check of
    :meth:`Engine._validate` runs where the inline one does not pass). The
    engine's deadline, memory budget and profile are read when the function
    starts. Returns ``make(engine) -> run(env, args)``; ``run`` returns
    ``(-1, results)`` at a return and ``(block, args)`` at a branch.

    Without lanes, two more things (see :class:`_Plan`): an op whose kernel
    declares a fast path (:class:`~stablehlo_conform.opinfo.FastPath`) for
    its types calls that instead of the kernel (no context, no dispatch, no
    result check: the fast path returns what the kernel returns), and a
    ``stablehlo.while`` whose condition and body are single blocks runs as a
    Python loop over their ops in this same function (its kernel calls the
    regions through :meth:`Engine.run_region` at every iteration). Large
    products of a block that do not depend on each other run at once on the
    process's threads (:meth:`_Plan._groups`), and so do chains of element-wise
    ops (:meth:`_Plan._chains`): those from the block's :data:`CHAINS_AFTER`-th
    engine on, in a plan of their own (a program's first run, its cold run,
    neither plans chains nor compiles their code, which a block run once would
    not repay).
    """
    make = _Plan(region, index, steps, lanes, registry, steps_of, funcs or {}, chains=False).compile()
    if lanes or _parallel.threads() < 2:
        return make
    made: list = []  # the engines made so far, and the plan with chains once made

    def later(eng):
        if len(made) < CHAINS_AFTER:
            made.append(None)
            return make(eng)
        if len(made) == CHAINS_AFTER:
            made.append(_Plan(region, index, steps, lanes, registry, steps_of, funcs or {}, chains=True).compile())
        return made[-1](eng)

    return later


# the engines a block runs in before one runs it with chains (see _generate)
CHAINS_AFTER = 1


# the built-in while kernel, which an inlined loop stands for
_WHILE = "stablehlo.while"
# loops inlined in one another at most this deep (each is a ``while`` block of the generated
# function, inside its ``def``, ``try`` and ``with``; Python refuses more than 20 nested blocks)
MAX_INLINED_NESTING = 8


class _Plan:
    """What :func:`_generate` emits, and the emitting.

    Values: ``v<id>`` locals for values defined in the generated code (the
    block's arguments, results of its ops and of the ops of inlined loops),
    ``F<id>`` constants for folded results, ``env[<id>]`` otherwise; a local
    read by anything outside the generated code (ops of nested regions run
    by their kernels, other blocks, ``cf.cond_br`` / ``cf.switch``) is also
    written to the slot dictionary.

    Fast paths add three kinds of value: a rank-0 result of a fast path or a
    rank-0 argument of an inlined block may be a NumPy scalar (``_A``
    makes it a 0-d array wherever a kernel, the slot dictionary or the
    caller reads it); a broadcast declared ``view`` stays a read-only view
    where every reader takes ``views`` (else its kernel runs); and an
    element-wise ufunc writes its result (``out=``) into an operand of its
    type and shape whose buffer it owns: the result of another ufunc (or of a
    fast path declared ``fresh``) of the same block, read only by ufuncs of
    that block, this op the last.
    """

    def __init__(self, region, index, steps, lanes, registry, steps_of, funcs=None, chains: bool = True):
        self.chains = chains  # whether the plan makes chains of element-wise ops (see _chains)
        self._in_chain = False  # while a chain's ops are emitted one by one (no chain inside one)
        self.funcs = funcs or {}  # the module's functions: calls in loops run inline (see _call_steps)
        self.calls: dict[int, tuple] = {}  # id(func.call op) -> (callee block, its steps)
        self.region = region
        self.block = region.blocks[index]
        self.steps = steps
        self.lanes = lanes
        self.registry = registry
        self.steps_of = steps_of
        self.loops: dict[int, tuple] = {}  # id(while op) -> (cond steps, body steps)
        self.own: set[int] = set()  # ids of the ops the generated code runs itself
        self.defined: set[int] = set(self.block.args)
        self.fast: dict[int, FastPath] = {}  # id(op) -> its fast path
        self.folded_views: dict[int, FastPath] = {}  # id(folded op) -> its fast path giving a view
        self.scalar: set[int] = set()  # values that may be NumPy scalars
        self._inline(self.block, steps)
        self.slots = self._slots()
        self._choose_fast()
        self.split = self._split()
        self.reuse = self._reuse()
        self.dead = self._dead()
        self.inplace, self.owned = self._in_place()

    # planning ---------------------------------------------------------
    def _inline(self, block: Block, steps: tuple, in_loop: bool = False, depth: int = 0) -> None:
        """Mark the ops of ``block`` as run by the generated code, and find its loops to inline
        (and, in their bodies, the calls to inline): loops nested at most
        :data:`MAX_INLINED_NESTING` deep (Python compiles at most 20 nested blocks; a deeper
        loop runs through its kernel)."""
        for op, kind, name, fn, operands, results, quant, fold in steps:
            self.own.add(id(op))
            self.defined.update(results)
            if in_loop and kind == _CALL:
                callee = self._call_steps(op)
                if callee is not None:
                    self.calls[id(op)] = callee
                    b = callee[0]
                    self.defined.update(b.args)
                    self.scalar.update(v for v, ty in zip(b.args, b.arg_types) if _rank0(ty))
                    self.scalar.update(v for v, ty in zip(results, op.result_types) if _rank0(ty))
                    self._inline(b, callee[1], True, depth)
            if (not self.lanes and kind == _KERNEL and name == _WHILE and fn is _while_kernel and quant is False
                    and depth < MAX_INLINED_NESTING):
                inner = self._loop_steps(op)
                if inner is not None:
                    self.loops[id(op)] = inner
                    for b, s in zip((r.blocks[0] for r in op.regions), inner):
                        self.defined.update(b.args)
                        self.scalar.update(v for v, ty in zip(b.args, b.arg_types) if _rank0(ty))
                        self._inline(b, s, True, depth + 1)
                    self.scalar.update(v for v, ty in zip(results, op.result_types) if _rank0(ty))

    def _loop_steps(self, op: Op) -> tuple | None:
        """The steps of a while's condition and body when the loop can run inline: single
        blocks ending in a return, every op with a kernel, folded results computed."""
        if len(op.regions) != 2 or any(len(r.blocks) != 1 for r in op.regions):
            return None
        out = []
        for r in op.regions:
            steps = self.steps_of(r.blocks[0])
            if not steps or steps[-1][1] != _RETURN:
                return None
            for o, kind, name, fn, operands, results, quant, fold in steps[:-1]:
                if kind not in (_KERNEL, _CALL) or (kind == _KERNEL and fn is None):
                    return None
                if fold and _folded_results(o, self.registry) is None:
                    return None
            out.append(steps)
        if len(out[0][-1][4]) != 1 or len(out[1][-1][4]) != len(op.operands):
            return None
        return tuple(out)

    def _call_steps(self, op: Op) -> tuple | None:
        """``(block, steps)`` of the function a ``func.call`` in an inlined loop calls, where the
        call can run inline: a single block of kernels without regions (no calls, no loops),
        ending in a return, its folded results computed, called nowhere else in this generated
        code (its values are locals of their own). The call then costs no engine call per
        iteration, and a ``dynamic_update_slice`` in it can write into the loop's buffer (see
        :meth:`_in_place`); the ops are those the call runs, in its order."""
        func = self.funcs.get(getattr(op.attrs.get("callee"), "name", None))
        if func is None or len(func.body.blocks) != 1:
            return None
        block = func.body.blocks[0]
        if any(id(step[0]) in self.own for step in self.steps_of(block)):
            return None
        steps = self.steps_of(block)
        if not steps or steps[-1][1] != _RETURN or len(block.args) != len(op.operands):
            return None
        for o, kind, name, fn, operands, results, quant, fold in steps[:-1]:
            if kind != _KERNEL or fn is None or o.regions or quant is not False:
                return None
            if fold and _folded_results(o, self.registry) is None:
                return None
        if len(steps[-1][4]) != len(op.results):
            return None
        return block, steps

    def _slots(self) -> set[int]:
        """Values of the generated code that something else reads from the slot dictionary."""
        used: set[int] = set()
        for op in walk_ops(self.region):
            if id(op) not in self.own or op.name in _SLOT_READERS:
                used.update(op.operands)
        return self.defined & used

    def _all_steps(self) -> list:
        """(block, position, step) of every step the generated code runs, in order (listed once:
        the loops and calls to inline are known, and the planning reads it many times)."""
        listed = self.__dict__.get("_listed")
        if listed is None:
            listed = self._listed = list(self._walk_steps())
        return listed

    def _walk_steps(self):
        def walk(block, steps):
            for pos, step in enumerate(steps):
                yield block, pos, step
                inner = self.loops.get(id(step[0]))
                if inner is not None:
                    for r, s in zip(step[0].regions, inner):
                        yield from walk(r.blocks[0], s)
                callee = self.calls.get(id(step[0]))
                if callee is not None:
                    yield from walk(*callee)
        return walk(self.block, self.steps)

    def _choose_fast(self) -> None:
        if self.lanes:
            return
        readers: dict[int, list] = {}
        for block, pos, (op, kind, name, fn, operands, results, quant, fold) in self._all_steps():
            for v in operands:
                readers.setdefault(v, []).append(op)
            if kind != _KERNEL or fn is None or quant is not False or id(op) in self.loops:
                continue
            info = self.registry.info(name)
            factory = info.fast if info is not None and info.kernel is fn else None
            if factory is None:
                continue
            try:
                fp = factory(op)
            except Exception:  # the kernel reports what the fast path would not take
                fp = None
            if fp is not None and not fold:
                self.fast[id(op)] = fp
            elif fp is not None and fp.view:
                self.folded_views[id(op)] = fp
        # a view stays a view only where every reader takes views (a folded one too: its value is
        # then its fast path's view of its folded operand, not its kernel's copy: a folded
        # broadcast of a scalar, read by many ops, then takes no memory of its size)
        for fast in (self.fast, self.folded_views):
            for op in [step[0] for _, _, step in self._all_steps() if id(step[0]) in fast]:
                if not fast[id(op)].view:
                    continue
                (r,) = op.results
                if r in self.slots or not all(
                        (g := self.fast.get(id(o))) is not None and g.views for o in readers.get(r, ())):
                    del fast[id(op)]
        self.readers = readers
        for _, _, (op, *_rest) in self._all_steps():
            if id(op) in self.fast and _rank0(op.result_types[0]):
                self.scalar.add(op.results[0])

    def _split(self) -> dict[int, Callable]:
        """id(op) -> its fast path run in pieces on the process's threads (:func:`_in_pieces`):
        the fast paths of element-wise ops (a ufunc, ``out``, or the fast path of an op of
        :data:`ELEMENTWISE`) whose operands all have the result's shape, on results of at least
        :data:`SPLIT_MIN_UFUNC` (ufuncs: a pass over memory) or :data:`SPLIT_MIN` elements
        (the others compute in a wider type, through tables or the kernel's own function), or the
        fast path's own ``split_min`` where smaller (the correctly rounded transcendentals)."""
        out: dict[int, Callable] = {}
        for _, _, (op, *_rest) in self._all_steps():
            fp = self.fast.get(id(op))
            shape = _chains.member(op, fp, ELEMENTWISE)  # an element-wise op whose operands have its shape
            if shape is None:
                continue
            least = SPLIT_MIN_UFUNC if fp.out else SPLIT_MIN
            least = min(least, fp.split_min or least)
            if math.prod(shape) < least:
                continue
            out[id(op)] = _in_pieces(fp, shape, op.result_types[0].dtype)
        return out

    def _reuse(self) -> dict[int, int]:
        """id(op) -> the operand whose buffer the op's ufunc writes its result into."""
        out: dict[int, int] = {}
        if self.lanes:
            return out
        owner: dict[int, tuple] = {}  # value -> (block, position) of the ufunc defining it
        last: dict[int, tuple] = {}  # value -> (block, position) of its last reader
        for block, pos, (op, *_rest) in self._all_steps():
            for v in op.operands:
                last[v] = (id(block), pos)
            fp = self.fast.get(id(op))
            if fp is not None and (fp.out or fp.fresh) and not _rank0(op.result_types[0]):
                owner[op.results[0]] = (id(block), pos)
        taken: set[int] = set()
        for block, pos, (op, *_rest) in self._all_steps():
            fp = self.fast.get(id(op))
            if fp is None or not fp.out or _rank0(op.result_types[0]):
                continue
            ty = op.result_types[0]
            for v, vty in zip(op.operands, op.operand_types):
                if (v in taken or v in self.slots or owner.get(v, (None,))[0] != id(block)
                        or last.get(v) != (id(block), pos) or vty != ty):
                    continue
                if all((g := self.fast.get(id(o))) is not None and g.out for o in self.readers[v]):
                    out[id(op)] = v
                    taken.add(v)
                    break
        return out

    def _dead(self) -> dict[int, tuple[int, ...]]:
        """id(op) of the block's own steps -> the locals to release after it: the values of the
        generated code whose last reader it is (a read inside an inlined loop counts as a read
        by the loop), and after a loop the values defined inside it. Without this a block keeps
        every value it computed until it returns: a large model's first run then touches
        gigabytes of fresh pages (the slot dictionary of a step-by-step run keeps them too)."""
        last: dict[int, int] = {}
        inner: dict[int, set[int]] = {}
        top = None
        for block, _pos, (op, *_rest) in self._all_steps():
            if block is self.block:
                top = id(op)
            else:
                inner.setdefault(top, set()).update(block.args)
                inner[top].update(op.results)
            for v in op.operands:
                last[v] = top
        out: dict[int, set[int]] = {k: set(vs) for k, vs in inner.items()}
        for v, at in last.items():
            if v in self.defined:
                out.setdefault(at, set()).add(v)
        return {k: tuple(sorted(vs)) for k, vs in out.items()}

    def _in_place(self) -> tuple[dict[int, Callable], dict[int, set[int]]]:
        """The ``dynamic_update_slice`` ops (spec.md#dynamic_update_slice) that write into their
        operand's buffer (id(op) -> :func:`~..kernels.indexing.update_in_place`), and per inlined
        loop the carried values whose buffer is the loop's own (id(loop) -> positions: copied
        once as the loop starts, the kernel's copy of the operand, never the caller's array or a
        constant).

        Chosen where the update takes a loop's carried value ``k`` and gives the body's ``k``-th
        result, through inlined calls (:meth:`_call_steps`) passing them along, each of these
        values read once (by the next op of the chain: nothing else reads the buffer before or
        after the update, no view of it exists), none read from the slot dictionary, and the
        condition not reading ``k``: the buffer then holds only the last iteration's value, and
        writing the update into it gives the bits the kernel's copy holds. Scans that stack
        their outputs (``lax.scan``: a ``dynamic_update_slice`` per step) then cost the update,
        not a copy of the whole stack per iteration.
        """
        inplace: dict[int, Callable] = {}
        owned: dict[int, set[int]] = {}
        if self.lanes:
            return inplace, owned
        arg_of: dict[int, tuple] = {}  # value -> (op owning the block, which block, position)
        ret_of: dict[int, tuple] = {}  # id(return op) -> (op owning the block, which block)
        for block, _pos, (op, kind, *_rest) in self._all_steps():
            for which, b in self._inlined_blocks(op):
                arg_of.update((v, (op, which, j)) for j, v in enumerate(b.args))
                last = b.ops[-1] if b.ops else None
                if last is not None:
                    ret_of[id(last)] = (op, which)

        def sole(v):
            rs = self.readers.get(v, ())
            return rs[0] if len(rs) == 1 and v not in self.slots else None

        for _b, _pos, (op, *_rest) in self._all_steps():
            fp = self.fast.get(id(op))
            if op.name != "stablehlo.dynamic_update_slice" or fp is None or not fp.fresh:
                continue
            r = op.results[0]  # forward: to the body's return
            while (x := sole(r)) is not None and id(x) in ret_of and ret_of[id(x)][1] == "call":
                r = ret_of[id(x)][0].results[x.operands.index(r)]
            if x is None or ret_of.get(id(x), (None, None))[1] != "body":
                continue
            loop = ret_of[id(x)][0]
            k = x.operands.index(r)
            b, reader = op.operands[0], op  # backward: to the body's argument k
            while sole(b) is reader and b in arg_of and arg_of[b][1] == "call":
                reader = arg_of[b][0]
                b = reader.operands[arg_of[b][2]]
            cond, body = (rg.blocks[0] for rg in loop.regions)
            if (sole(b) is not reader or arg_of.get(b) != (loop, "body", k) or cond.args[k] in self.readers
                    or cond.args[k] in self.slots):
                continue
            inplace[id(op)] = update_in_place(op)
            owned.setdefault(id(loop), set()).add(k)
        return inplace, owned

    def _inlined_blocks(self, op: Op):
        """(``"cond"`` / ``"body"`` / ``"call"``, block) of the blocks ``op`` runs inline."""
        if id(op) in self.loops:
            return tuple(zip(("cond", "body"), (rg.blocks[0] for rg in op.regions)))
        if id(op) in self.calls:
            return (("call", self.calls[id(op)][0]),)
        return ()

    def _groups(self, steps: tuple) -> tuple[dict[int, list[int]], set[int], dict[int, int]]:
        """Products of ``steps`` (one block) computed at once on the process's threads
        (:func:`_group`): ``(anchors, members, held)``, ``anchors``: position -> the positions
        of a group's products (in program order), emitted just before the step at that
        position; ``members``: the positions of every product of a group; ``held``: value ->
        anchor, operands of a product computed later than its own position (kept until then).

        A product is a ``dot_general`` (spec.md#dot_general) with a fast path, of at least
        :data:`GROUP_MIN_MACS` multiply-adds: at least tens of microseconds of one BLAS call,
        which pays for handing it to another thread. A product can run anywhere from the
        step after its operands' last definition in the block (``ready``) to the first step
        reading one of its results, in its nested regions included (``first``): ops are pure,
        so computing it there gives the same values, and every other op keeps its order. A
        group is the products whose ranges share a position (no path through the block's ops
        can then join two of them), chosen greedily by the earliest ``first``. Each product is
        the same call as on its own (the same BLAS call on one BLAS thread), so the results are
        the same bit for bit. Only in the plain variants without lanes, where
        :func:`~..kernels._parallel.threads` is above 1 (the ``full`` variant runs step by step,
        and takes over a run where a product of a group fails: the error is then the one of the
        first op failing in program order)."""
        if self.lanes or self.full or _parallel.threads() < 2:
            return {}, set(), {}
        limit, defined, first = len(steps), {}, {}
        for j, (op, kind, name, fn, operands, results, *_rest) in enumerate(steps):
            if limit == len(steps) and (kind not in (_KERNEL, _CALL) or (kind == _KERNEL and fn is None)):
                limit = j  # the terminator, or an op without a kernel: groups come before it
            for v in _uses(op):
                first.setdefault(v, j)
            defined.update((v, j) for v in results)
        spans = []
        for j, (op, kind, name, fn, operands, results, quant, fold) in enumerate(steps[:limit]):
            if (kind != _KERNEL or fold or name != "stablehlo.dot_general" or id(op) not in self.fast
                    or id(op) in self.reuse or id(op) in self.inplace or id(op) in self.split
                    or _macs(op) < GROUP_MIN_MACS):
                continue
            ready = max((defined.get(v, -1) + 1 for v in operands), default=0)
            spans.append((min((first.get(v, limit) for v in results), default=limit), ready, j))
        anchors: dict[int, list[int]] = {}
        taken: set[int] = set()
        for end, _ready, j in sorted(spans):
            if j in taken:
                continue
            group = [j]
            for _e, _r, m in sorted((s for s in spans if s[2] not in taken and s[1] <= end <= s[0]),
                                    key=lambda s: s[2]):
                if m != j and not any(_reads(steps[m], steps[k]) or _reads(steps[k], steps[m]) for k in group):
                    group.append(m)  # (a product reading another's result at the anchor stays out)
            group.sort()
            if len(group) > 1 and end not in anchors:
                anchors[end] = group
                taken.update(group)
        held: dict[int, int] = {}
        for a, group in anchors.items():
            for m in group:
                if m < a:
                    for v in steps[m][4]:
                        held[v] = max(held.get(v, a), a)
        return anchors, taken, held

    def _chains(self, steps: tuple, held: dict, groups: dict) -> tuple[dict[int, list[int]], set[int]]:
        """Chains of element-wise ops of ``steps`` (one block) computed block by block on the
        process's threads (:mod:`.chains`): ``(chained, members)``, ``chained``: position ->
        the positions of a chain's ops, emitted just before the step after its last op;
        ``members``: the positions of every op of a chain. The operands of a chain's ops are
        added to ``held`` (kept until the chain has run). Where :meth:`_groups` forms groups:
        only in the plain variants without lanes, on more than one thread. No chain is made
        where a group of products (``groups``: anchor -> positions) runs before the chain's end
        and reads one of the chain's values (it would run before the chain computes them)."""
        if not self.chains or self.lanes or self.full or _parallel.threads() < 2 or self._in_chain:
            return {}, set()
        limit = next((j for j, step in enumerate(steps)
                      if step[1] not in (_KERNEL, _CALL) or (step[1] == _KERNEL and step[3] is None)), len(steps))
        fast = {k: fp for k, fp in self.fast.items() if k not in self.loops and k not in self.inplace}
        chained: dict[int, tuple[list[int], tuple]] = {}
        members: set[int] = set()
        for chain, frame in _chains.find(steps, limit, (_KERNEL,), fast, ELEMENTWISE):
            at = chain[-1] + 1
            made = {v for m in chain for v in steps[m][5]}
            if any(chain[0] <= a < at and any(made.intersection(steps[m][4]) for m in group)
                   for a, group in groups.items()):
                continue
            chained[at] = chain, frame
            members.update(chain)
            read = {v for m in chain for v in steps[m][4]}
            for v in read:
                held[v] = max(held.get(v, at), at)
            for j in range(chain[0], at):  # an op computed before the chain writes into none of its operands
                if j not in chain and self.reuse.get(id(steps[j][0])) in read:
                    del self.reuse[id(steps[j][0])]
        return chained, members

    def _emit_chain(self, chain: list, frame: tuple, release, code: list[str]) -> None:
        """A chain (:meth:`_chains`): where :meth:`.chains.Chain.in_blocks` allows, one call of
        a function of the block of its operands at an index of the leading axes ``frame``
        (:class:`.chains.Chain`), computing each element-wise op's fast path on the blocks of
        its operands, and each reduction and broadcast of whole rows by its block's form
        (:func:`.chains.by_rows`); else its ops one by one, as without chains, whose results'
        layouts the chain learns from. Its results read after it (its outputs) bound and
        stored, then the values held for it released. Inside the function, a value is freed
        once read last, and a ufunc writes its result into an operand of its type computed in
        the chain, read last there and new (the result of a ufunc or of a fast path declared
        ``fresh``), as :meth:`_reuse` does in the block."""
        ops = {id(step[0]) for step in chain}
        same = self._same_in_chain(chain)
        inputs: list[int] = []
        computed: dict[int, np.dtype] = {}  # value -> its type, where a new array of the chain's
        made: set[int] = set()
        last: dict[int, int] = {}
        ranks: dict[int, int] = {}
        for k, (op, kind, name, fn, operands, results, quant, fold) in enumerate(chain):
            for v, t in zip(operands, op.operand_types):
                if v not in made and v not in inputs:
                    inputs.append(v)
                    ranks[v] = len(t.shape)
            if results[0] not in same:  # an op computed in the chain's function reads them
                last.update((same.get(v, v), k) for v in operands if v in made)
            made.update(results)
            fp = self.fast[id(op)]
            if fp.out or fp.fresh:
                computed[results[0]] = op.result_types[0].dtype
        outs = [v for v in made if v in self.slots or any(id(o) not in ops for o in self.readers.get(v, ()))]
        outs.sort(key=[step[5][0] for step in chain].index)
        kept = {same.get(v, v) for v in outs}  # the arrays the chain returns: never written into
        ns: dict[str, Any] = {}
        lines = [f"    {''.join(f'w{k}, ' for k in range(len(inputs)))}= ins"]
        for k, (op, kind, name, fn, operands, results, quant, fold) in enumerate(chain):
            if results[0] in same:  # computed already, by an earlier op of the chain
                continue
            fp = self.fast[id(op)]
            operands = tuple(same.get(v, v) for v in operands)
            args = "".join(f"u{v}, " if v in made else f"w{inputs.index(v)}{'[s]' if ranks[v] else ''}, "
                           for v in operands)
            rows = None if _chains.member(op, fp, ELEMENTWISE) else _chains.by_rows(op, fp)
            ns[f"f{k}"] = fp.call if rows is None else rows[1]
            into = next((v for v in operands if fp.out and last.get(v) == k and v not in kept
                         and computed.get(v) == op.result_types[0].dtype), None)
            extra = "z" if op.name == "stablehlo.broadcast_in_dim" and rows is not None else (
                "" if into is None else f"out=u{into}")
            lines.append(f"    u{results[0]} = f{k}({args}{extra})")
            dead = [f"u{v}" for v in dict.fromkeys(operands) if last.get(v) == k and v not in kept and v != into]
            if dead:
                lines.append(f"    {' = '.join(dead + ['None'])}")
        src = "\n".join(["def body(ins, s, z):", *lines,
                         f"    return ({''.join(f'u{same.get(v, v)}, ' for v in outs)})"])
        types = {step[5][0]: step[0].result_types[0] for step in chain}
        key = f"K{len(self.ns)}"
        reduced = tuple(inputs.index(step[4][0]) for step in chain
                        if step[0].name == "stablehlo.reduce" and step[4][0] not in made)
        self.ns[key] = _chains.Chain((src, ns), frame, tuple(tuple(types[v].shape) for v in outs),
                                     tuple(types[v].dtype for v in outs), reduced)
        bound = "".join(f"v{v}, " for v in outs)
        code += [f"_in = ({self.refs(inputs, raw=True)})", f"if {key}.in_blocks(_in):",
                 f"    {bound}= _chain({key}, _in)" if outs else f"    _chain({key}, _in)", "else:"]
        inner: list[str] = []
        self._in_chain = True
        try:
            self._emit(tuple(chain), inner, "chain")
        finally:
            self._in_chain = False
        code += [f"    {line}" for line in inner] + [f"    {key}.learn(_in, ({bound}))", "_in = None", "_pend = False"]
        self.store(outs, code)
        release = [v for v in release if v not in self.consts]
        if release:
            code.append(" = ".join([f"v{v}" for v in release] + ["None"]))

    def _same_in_chain(self, chain: list) -> dict[int, int]:
        """Results of a chain's ops (element-wise ops, reductions of rows and their broadcasts:
        pure) that an earlier op of the chain computes already: the same op, attributes and
        result type on the same operands (after these replacements) -> that op's result. In the
        chain's function the later op is not computed again and its readers read the earlier
        result (layernorm_gelu's row means broadcast twice and ``x - mean`` computed twice, an
        erf-GELU's ``x * x`` and ``abs(x)``, as exported). Run one by one, the chain computes
        both, as without chains: the same calls on the same values, so the same bits."""
        same: dict[int, int] = {}
        first: dict[tuple, int] = {}
        for op, _kind, _name, _fn, operands, results, _quant, _fold in chain:
            if len(results) != 1:
                continue
            key = (op.name, repr(sorted(op.attrs.items())), tuple(str(t) for t in op.result_types),
                   tuple(same.get(v, v) for v in operands))
            if key in first:
                same[results[0]] = first[key]
            else:
                first[key] = results[0]
        return same

    def _emit_group(self, group: list, release, code: list[str]) -> None:
        """The products of a group (:meth:`_groups`) computed at once, the largest first (the
        threads each take the next one when free: the work is then spread evenly), their results
        bound and stored, then the values held for them released."""
        calls = []
        group = sorted(group, key=lambda step: -_macs(step[0]))
        for op, kind, name, fn, operands, results, quant, fold in group:
            fp = self.fast[id(op)]
            key = f"P{len(self.ns)}"
            self.ns[key] = fp.call
            calls.append(f"({key}, ({self.refs(operands, raw=fp.out or fp.scalars)}))")
        outs = [op_results[0] for _op, _k, _n, _f, _o, op_results, *_r in group]
        sizes = f"M{len(self.ns)}"
        self.ns[sizes] = tuple(_macs(step[0]) for step in group)
        code.append(f"{''.join(f'v{v}, ' for v in outs)}= _group({sizes}, {', '.join(calls)})")
        self.store(outs, code)
        release = [v for v in release if v not in self.consts]
        if release:
            code.append(" = ".join([f"v{v}" for v in release] + ["None"]))

    # emitting ---------------------------------------------------------
    def compile(self) -> Callable:
        """The function's source, compiled: ``plain`` (without a profile, under a budget no op
        reaches: the deadline is checked before each op that computes and at each iteration of
        an inlined loop); where a run has a profile or a smaller memory budget, ``full`` (every
        op checks the deadline and the memory budget and counts itself in the profile), the
        same steps, generated and compiled the first time a run needs it (it is most of the
        source, and most runs never need it). The plain steps come in two variants, each
        compiled the first time a run needs it: ``timed`` for an engine with a deadline, and
        ``untimed`` without the deadline's checks (which are half the source, and as much of
        the time compiling it, where a first run generates a large block), handing a run over
        to ``timed`` where the engine has been given a deadline since."""
        self.ns: dict[str, Any] = {
            "nd": np.ndarray, "Ctx": OpContext, "_mono": time.monotonic, "_clock": time.perf_counter,
            "_late": _late, "_unsupported": _unsupported, "_run_kernel": _run_kernel, "_A": np.asarray,
            "_ignore": np.errstate, "_own": _own, "_group": _group, "_Ungrouped": _Ungrouped,
            "_chain": _chain}
        self.consts: set[int] = set()
        self.make: dict[str, None] = {}  # lines of make(), in order
        self.located: dict[int, tuple[Op, int]] = {}
        located = self.located

        def fail(i: int, e: Exception) -> None:
            if i in located:
                _locate(*located[i], e)

        self.ns["_fail"] = fail
        budget = max((_result_bytes(step[0]) for _, _, step in self._all_steps()), default=0)
        full_make: list[Callable] = []

        def make_full() -> Callable:
            if not full_make:
                full_make.append(self._compile_variant(True, "make_full"))
            return full_make[0]

        self.ns["_make_full"] = make_full
        switch = [f"if prof is not None or (max_bytes is not None and max_bytes < {budget}):",
                  "    if not full: full.append(_make_full()(eng))", "    return full[0](env, args)"]
        to_timed = ["if deadline is not None:", "    if not timed: timed.append(_make_timed()(eng))",
                    "    return timed[0](env, args)"]
        variants: dict[bool, Callable] = {}

        def variant(timed: bool) -> Callable:
            if timed not in variants:
                self.timed = timed
                variants[timed] = self._compile_variant(
                    False, "make" if timed else "make_untimed", switch + ([] if timed else to_timed))
            return variants[timed]

        self.ns["_make_timed"] = lambda: variant(True)

        def make(eng) -> Callable:
            return variant(eng.deadline is not None)(eng)

        return make

    def _compile_variant(self, full: bool, name: str, switch: list | tuple = ()) -> Callable:
        """``name(eng) -> run(env, args)``: the block's steps, ``full`` or plain (see
        :meth:`compile`); ``switch``: lines run first (the plain variant hands a run that needs
        the full one over to it)."""
        self.full = full
        self.n = 0
        code: list[str] = []
        self._emit(self.steps, code, "top")
        if self.fast:  # ufuncs compute as the kernels do, which ignore floating-point errors
            code = ['with _ignore(all="ignore"):'] + [f"    {line}" for line in code]
        block = self.block
        head: list[str] = []
        if block.args:
            head.append(f"{', '.join(f'v{v}' for v in block.args)}, = args")
            head.extend(f"env[{v}] = v{v}" for v in block.args if v in self.slots)
        src = "\n".join(
            [f"def {name}(eng):"] + [f"    {line}" for line in self.make] + ["    full, timed = [], []",
                                                                            "    def run(env, args):",
             "        deadline, max_bytes, prof = eng.deadline, eng.max_bytes, eng.profile"]
            + [f"        {line}" for line in switch] + ["        _i, _checked, _pend = -1, len(eng.checks), False",
                                                         "        try:"]
            + [f"            {line}" for line in head + code]
            # a product of a group or a chain failed, or an op computed before a chain whose first
            # ops precede it (``_pend``): step by step from the start, without the checks recorded
            # so far (the error is then the one of the first failing op in program order)
            + ["        except _Ungrouped:", "            del eng.checks[_checked:]",
               "        except Exception as e:", "            if not _pend:", "                _fail(_i, e)",
               "                raise", "            del eng.checks[_checked:]",
               "        if not full: full.append(_make_full()(eng))", "        return full[0](env, args)",
               "    return run"])
        exec(compile(src, f"<block {block.ops[0].loc if block.ops else '?'}>", "exec"), self.ns)
        return self.ns[name]

    def ref(self, v: int, raw: bool = False) -> str:
        """The expression of value ``v``; ``raw``: for a fast path (a NumPy scalar may stay one)."""
        if v in self.consts:
            return f"F{v}"
        if v not in self.defined:
            return f"env[{v}]"
        return f"v{v}" if raw or v not in self.scalar else f"_A(v{v})"

    def refs(self, vs, raw: bool = False) -> str:
        return "".join(self.ref(v, raw) + ", " for v in vs)

    def store(self, vs, code: list[str]) -> None:
        """Write the values of ``vs`` read from the slot dictionary there."""
        code.extend(f"env[{v}] = {self.ref(v)}" for v in vs if v in self.slots)

    def bind(self, vs, expr: str, code: list[str]) -> None:
        if len(vs) == 1:
            (v,) = vs
            code.append(f"v{v} = {expr}[0]")
        else:
            code.append(f"{', '.join(f'v{v}' for v in vs)}, = {expr}")
        self.store(vs, code)

    def _emit(self, steps: tuple, code: list[str], mode: str, carry: tuple = ()) -> None:
        """Code for ``steps``; at the terminator: ``top`` returns or branches, ``cond`` leaves
        the loop when false, ``body`` assigns ``carry`` (the condition's arguments); ``chain``:
        the ops of a chain one by one (no terminator; values released as in ``top``)."""
        lanes, full = self.lanes, self.full
        late = "if deadline is not None and _mono() > deadline: _late(o{})"
        timed = full or self.timed
        if mode != "body" and not full and steps and timed:
            code.append(late.format(self.n))  # once per run of the block, per iteration of a loop
        dead: tuple = ()
        anchors, members, held = self._groups(steps)
        chained, in_chains = self._chains(steps, held, anchors)
        members = members | in_chains
        firsts = {chain[0] for chain, _frame in chained.values()}
        pending: dict[int, list[int]] = {}  # anchor -> the values to release after its group
        for j, (op, kind, name, fn, operands, results, quant, foldable) in enumerate(steps):
            dead = _hold(dead, held, j, pending)
            if dead:  # the values the step before read last (None: bound or not, as loops leave them)
                code.append(" = ".join([f"v{v}" for v in dead] + ["None"]))
            if j in chained:
                chain, frame = chained[j]
                self._emit_chain([steps[m] for m in chain], frame, () if j in anchors else pending.pop(j, ()), code)
            if j in anchors:
                self._emit_group([steps[m] for m in anchors[j]], pending.pop(j, ()), code)
            dead = (tuple(v for v in self.dead.get(id(op), ()) if v not in self.consts)
                    if mode in ("top", "chain") else ())
            i = self.n
            self.n += 1
            self.ns[f"o{i}"] = op
            if full:
                code.append(late.format(i))
            if kind == _RETURN:
                if mode == "cond":
                    code += [f"if not {self.ref(operands[0], raw=True)}:", "    break"]
                elif mode in ("body", "call"):  # a call inline: ``carry`` are the call's results
                    _assign(carry, self.refs(operands, raw=True), code)
                    self.store(carry, code)
                else:
                    code.append(f"return -1, ({self.refs(operands)})")
                break
            if kind == _BR:
                code.append(f"return {op.successors[0]}, ({self.refs(operands)})")
                break
            if kind in (_COND_BR, _SWITCH):
                self.located[i] = (op, kind)
                code += [f"_i = {i}",
                         f"_, s, a = eng.{'_cond_br' if kind == _COND_BR else '_switch'}(o{i}, env)",
                         "return s, a"]
                break
            if not full and not foldable and timed:
                code.append(late.format(i))
            if j in members:  # computed with its group (see _groups) or its chain (see _chains)
                if j in firsts:
                    code.append("_pend = True")
                continue
            callee = self.calls.get(id(op)) if kind == _CALL else None
            if callee is not None:
                _assign(callee[0].args, self.refs(operands, raw=True), code)
                self._emit(callee[1], code, "call", results)
                continue
            if kind == _CALL:
                self.located[i] = (op, kind)
                code += [f"_i = {i}",
                         f"r = eng.call({op.attrs['callee'].name!r}, [{self.refs(operands)}], lanes={lanes})"]
                self.bind(results, "r", code)
                continue
            if fn is None:
                code.append(f"_unsupported(o{i})")
                break
            if full and _result_bytes(op) > 0:
                code.append(f"if max_bytes is not None and {_result_bytes(op)} > max_bytes: eng._guard_memory(o{i})")
            if foldable:
                if full:
                    code.append(f"if prof is not None: prof.setdefault({name!r}, [0, 0.0])[0] += 1")
                values = op._folded[1]
                view = self.folded_views.get(id(op))
                if view is not None and all(f"F{v}" in self.ns for v in operands):
                    # the fast path's view of the folded operand (see _choose_fast)
                    values = (view.call(*(self.ns[f"F{v}"] for v in operands)),)
                for v, value in zip(results, values):
                    self.ns[f"F{v}"] = value
                    self.consts.add(v)
                    if v in self.slots:
                        code.append(f"env[{v}] = F{v}")
                continue
            self.located[i] = (op, _KERNEL)
            loop = self.loops.get(id(op))
            t = f"t{i}" if loop is not None else "t0"  # the loop's own ops time themselves
            code.append(f"_i = {i}")
            if full:
                code.append(f"{t} = 0.0 if prof is None else _clock()")
            fp = self.fast.get(id(op))
            if loop is not None:
                self._emit_loop(op, loop, code)
            elif fp is not None:
                form = _scalar_form(op, fp)
                if form is not None:
                    code.append(f"v{results[0]} = " + form.format(*(self.ref(v, raw=True) for v in operands)))
                else:
                    self.ns[f"X{i}"] = self.inplace.get(id(op)) or self.split.get(id(op), fp.call)
                    into = self.reuse.get(id(op))
                    args = self.refs(operands, raw=fp.out or fp.scalars) + (f"out=v{into}" if into is not None else "")
                    code.append(f"v{results[0]} = X{i}({args})")
                self.store(results, code)
            else:
                self._emit_kernel(i, op, fn, operands, results, quant, code)
            if full:
                code += ["if prof is not None:", f"    p = prof.setdefault({name!r}, [0, 0.0])", "    p[0] += 1",
                         f"    p[1] += _clock() - {t}"]
        else:
            if mode == "top":
                code.append("return -1, ()")
            elif mode == "chain" and dead:  # the values the chain's last op read last
                code.append(" = ".join([f"v{v}" for v in dead] + ["None"]))

    def _emit_kernel(self, i, op, fn, operands, results, quant, code) -> None:
        lanes = self.lanes
        self.ns[f"k{i}"] = fn
        self.make[f"c{i} = Ctx(o{i}, eng)"] = None
        if quant is False or (quant and getattr(fn, "quantization_aware", False)):
            code.append(f"r = k{i}(c{i}, {self.refs(operands)})")
        else:
            code.append(f"r = _run_kernel(eng, o{i}, k{i}, c{i}, {quant}, [{self.refs(operands)}])")
        checks = [f"r.__class__ is tuple and len(r) == {len(results)}"]
        for j, (dt, shape) in enumerate(_expectations(op)):
            if dt is None:
                checks = ["False"]
                break
            self.ns[f"D{i}_{j}"], self.ns[f"S{i}_{j}"] = dt, shape
            checks.append(f"(x := r[{j}]).__class__ is nd and (x.dtype is D{i}_{j} or x.dtype == D{i}_{j})"
                          + ("" if lanes else f" and x.shape == S{i}_{j}"))
        code.append(f"if not ({' and '.join(checks)}): r = eng._validate(o{i}, r, {lanes})")
        if results:
            self.bind(results, "r", code)

    def _emit_loop(self, op: Op, loop: tuple, code: list[str]) -> None:
        """``stablehlo.while`` (spec.md#while) as a Python loop: the condition's arguments
        carry the values from one iteration to the next."""
        (cond, body) = (r.blocks[0] for r in op.regions)
        carry = tuple(cond.args)
        _assign(carry, self.refs(op.operands, raw=True), code)
        for k in sorted(self.owned.get(id(op), ())):  # a buffer the loop updates in place: its own
            code.append(f"v{carry[k]} = _own(v{carry[k]})")
        self.store(carry, code)
        code.append("while True:")
        inner: list[str] = []
        self._emit(loop[0], inner, "cond")
        _assign(body.args, "".join(f"v{v}, " for v in carry), inner)
        self.store(body.args, inner)
        self._emit(loop[1], inner, "body", carry)
        code.extend(f"    {line}" for line in inner)
        _assign(op.results, "".join(f"v{v}, " for v in carry), code)
        self.store(op.results, code)


# Python's operators on NumPy scalars of these types compute what these ufuncs compute
# (NumPy's scalar arithmetic and comparisons), without a ufunc call
_OPERATORS = {np.add: "({0} + {1})", np.subtract: "({0} - {1})", np.multiply: "({0} * {1})",
              np.divide: "({0} / {1})", np.negative: "(-{0})", np.equal: "({0} == {1})",
              np.not_equal: "({0} != {1})", np.less: "({0} < {1})", np.less_equal: "({0} <= {1})",
              np.greater: "({0} > {1})", np.greater_equal: "({0} >= {1})"}
_OPERATOR_TYPES = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.int8, np.int16, np.int32, np.int64,
                                                  np.uint8, np.uint16, np.uint32, np.uint64, np.bool_))


def _scalar_form(op: Op, fp: FastPath) -> str | None:
    """The expression computing ``op``'s fast path on rank-0 operands (its ``scalar`` form,
    or Python's operator for a ufunc on integers, f32 or f64), where result and operands are
    rank 0."""
    if not (_rank0(op.result_types[0]) and all(_rank0(t) for t in op.operand_types)):
        return None
    if fp.scalar is not None:
        return fp.scalar
    form = _OPERATORS.get(fp.call) if fp.out else None
    if form is None or any(t.dtype not in _OPERATOR_TYPES for t in op.operand_types):
        return None
    return form


# the element-wise ops of spec.md (each result element a function of the operands' elements at
# its index): their fast paths compute each element of a block of their operands as of the
# whole operands (as the kernels do)
ELEMENTWISE = frozenset("stablehlo." + n for n in (
    "abs add and atan2 cbrt ceil clamp compare complex convert cosine count_leading_zeros divide "
    "exponential exponential_minus_one floor imag is_finite log log_plus_one logistic maximum "
    "minimum multiply negate not or popcnt power real reduce_precision remainder round_nearest_afz "
    "round_nearest_even rsqrt select shift_left shift_right_arithmetic shift_right_logical sign "
    "sine sqrt subtract tan tanh xor").split()) | {"mhlo.convert"}

# least result elements of an element-wise fast path run in pieces on several threads. Measured
# on 2 cores (idle): a pass over 1M f32 elements (multiply, 4 MiB an operand) or a 1M-element
# exp gains nothing (the hand-off and the shared cache eat the second core: whole models ran
# 20 to 35% slower with pieces from 128k elements), a 4M-element multiply or exp 1.5x to 1.9x
SPLIT_MIN_UFUNC = 1 << 22
SPLIT_MIN = 1 << 22
# blocks per thread: a thread slowed by other work on its core leaves its blocks to the others
BLOCKS_PER_THREAD = 4


def _in_pieces(fp: FastPath, shape: tuple, dt: np.dtype) -> Callable:
    """``fp.call`` computing its result block by block (:func:`~..kernels._parallel.blocks`),
    the blocks on :func:`~..kernels._parallel.threads` threads at once: each block is the same
    call on the operands' blocks at the same index (an element-wise op: each element as the
    call on the whole operands computes it, bit for bit). On one thread, where an operand is
    not an array of the result's shape, or while threads do not pay (the other cores busy with
    other work, :func:`~..kernels._parallel.paying`), ``fp.call`` itself.

    The result has the layout the call on the whole operands gives it: ``out`` where given;
    else a new C-ordered array, used only where the whole call's result is C-ordered too (a
    ufunc of one operand in C order, or of two operands either in C order: NumPy's choice of
    output layout; any other call where every operand is in C order or a broadcast scalar,
    strides all 0, which NumPy's choice of layout leaves out, and one is in C order): an op that
    reads it (a BLAS product) then sees the same strides (``tests/test_fast_threads.py``)."""
    call, ufunc = fp.call, fp.out
    memo: dict[int, list] = {}

    def pieces(*xs, out=None):
        n = _parallel.threads()
        if (n < 2 or whole or any(x.__class__ is not np.ndarray or x.shape != shape for x in xs)
                or not _parallel.paying()):
            return call(*xs) if out is None else call(*xs, out=out)
        if out is None:
            c = [x.flags.c_contiguous for x in xs]
            if not (any(c) and (ufunc and len(xs) <= 2 or all(k or not any(x.strides) for k, x in zip(c, xs)))):
                return call(*xs)
            out = np.empty(shape, dt)
        idx = memo.get(n)
        if idx is None:
            idx = memo[n] = _parallel.blocks(shape, n * BLOCKS_PER_THREAD)
        if ufunc:
            _parallel.run([lambda s=s: call(*(x[s] for x in xs), out=out[s]) for s in idx])
            return out
        try:
            _parallel.run([lambda s=s: _into(out[s], call(*(x[s] for x in xs))) for s in idx])
        except Exception:  # noqa: BLE001 - a call made for the whole shape only (or one that
            whole.append(True)  # raises): from now on the whole call, as without threads
            return call(*xs)  # (the blocks wrote only `out`)
        return out

    whole: list = []
    return pieces


class _NotElementwise(Exception):
    """A fast path's call on a block returned no block of the result's type."""


def _into(dst: np.ndarray, r) -> None:
    if r.__class__ is not np.ndarray or r.shape != dst.shape or r.dtype != dst.dtype:
        raise _NotElementwise()
    dst[...] = r


# the least multiply-adds of a product computed at once with others (see _Plan._groups): about
# 20 microseconds of one f32 BLAS call; below, handing it to another thread costs about what
# it saves (measured: three 1M-multiply-add products take about as long on 2 threads as on one)
GROUP_MIN_MACS = 1 << 20


class _Ungrouped(Exception):
    """A product of a group failed: the block's run is handed to its step-by-step variant."""


def _group(sizes: tuple, *calls) -> list:
    """``[f(*args) for f, args in calls]``: the products of a group (:meth:`_Plan._groups`,
    largest first, ``sizes`` their multiply-adds), at once on
    :func:`~..kernels._parallel.threads` threads while threads pay for products
    (:func:`~..kernels._parallel.paying` of :data:`~..kernels._parallel.PRODUCTS`), else one
    after the other; where :func:`_alone` says so, the last products one after the other once
    the others are done, each then free to run in the pieces of its own cut
    (:mod:`~..kernels._split_gemm`: the bits of one call). Where one fails,
    :class:`_Ungrouped` (the block then runs step by step, which raises the error the first
    failing op in program order raises)."""
    try:
        n = _parallel.threads()
        if n > 1 and _parallel.paying(_parallel.PRODUCTS):
            k = len(calls) - _alone(sizes, n)
            done = _parallel.run([functools.partial(f, *args) for f, args in calls[:k]], _parallel.PRODUCTS)
            return done + [f(*args) for f, args in calls[k:]]
        return [f(*args) for f, args in calls]
    except Exception as e:
        raise _Ungrouped() from e


def _chain(chain: _chains.Chain, ins: tuple) -> tuple:
    """A chain's outputs (:func:`.chains.run`); where one of its ops fails, :class:`_Ungrouped`
    (the block then runs step by step, which raises the error of the first failing op)."""
    try:
        return _chains.run(chain, ins)
    except Exception as e:
        raise _Ungrouped() from e


def _alone(sizes: tuple, n: int) -> int:
    """:func:`_alone_at` with the current :data:`~..kernels._split_gemm.MIN_MACS`."""
    return _alone_at(sizes, n, _split_gemm.MIN_MACS)


@functools.lru_cache(maxsize=1024)
def _alone_at(sizes: tuple, n: int, least: int) -> int:
    """How many of a group's last products (``sizes``: multiply-adds, largest first) run after
    the others, on their own (0: all at once): where the products come in a number that is
    no multiple of ``n`` threads, the last ones would run while threads stand idle (three
    products of one size on two threads: two rounds of one call). Run alone, a product of at
    least ``least`` multiply-adds (the products' cut threshold) may be cut on every thread: its time taken
    as its size over ``n``. Chosen where that time, added to the others' at once (each thread
    taking the next product when free), is below the time of all at once."""
    def at_once(xs: tuple) -> int:
        loads = [0] * n
        for x in xs:
            loads[loads.index(min(loads))] += x
        return max(loads)

    best, alone = at_once(sizes), 0
    for m in range(1, len(sizes)):
        rest = sizes[len(sizes) - m:]
        if min(rest) < least:
            break
        took = at_once(sizes[:len(sizes) - m]) + sum(rest) / n
        if took < best:
            best, alone = took, m
    return alone


def _hold(dead: tuple, held: dict, j: int, pending: dict) -> tuple:
    """The values of ``dead`` to release before step ``j``: those a group emitted at ``j``
    or later still reads go to ``pending`` (released after the group)."""
    out = []
    for v in dead:
        if held.get(v, -1) >= j:
            pending.setdefault(held[v], []).append(v)
        else:
            out.append(v)
    return tuple(out)


def _reads(step: tuple, other: tuple) -> bool:
    """Whether the op of ``step`` reads a result of the op of ``other``."""
    return not set(step[4]).isdisjoint(other[5])


def _uses(op: Op) -> set[int]:
    """The values ``op`` reads, in its nested regions included."""
    out = set(op.operands)
    for r in op.regions:
        for o in walk_ops(r):
            out.update(o.operands)
    return out


def _macs(op: Op) -> int:
    """The multiply-adds of a ``dot_general`` of static shapes (0 where not static)."""
    lt, rt = op.operand_types
    if not all(isinstance(t, T.TensorType) and t.is_static for t in (lt, rt, op.result_types[0])):
        return 0
    dn = op.attr("dot_dimension_numbers")
    contracting = dn.get("lhs_contracting_dimensions", ())
    return math.prod(op.result_types[0].shape) * math.prod(lt.shape[int(d)] for d in contracting)


def _own(x) -> np.ndarray:
    """A C-ordered copy of ``x``: the buffer an inlined loop updates in place (see
    :meth:`_Plan._in_place`), as the kernel's copy of the operand."""
    return np.array(x, order="C")


def _assign(targets, exprs: str, code: list[str]) -> None:
    """``v<t>, ... = exprs`` (nothing for no targets)."""
    if targets:
        code.append(f"{''.join(f'v{v}, ' for v in targets)}= {exprs}")


def _rank0(ty) -> bool:
    return isinstance(ty, T.TensorType) and ty.is_static and len(ty.shape) == 0
