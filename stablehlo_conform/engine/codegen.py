"""Blocks as generated functions: the engine runs a block that has run step by step as one
Python function doing the same steps (see :func:`_generate`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import types as T
from ..kernels.context import OpContext
from ..kernels.control_flow import while_ as _while_kernel
from ..kernels.registry import Registry
from ..opinfo import FastPath
from ..program import Block, Op, Region, walk_ops
from .steps import (_BR, _CALL, _COND_BR, _KERNEL, _RETURN, _SWITCH, _expectations, _folded_results, _late,
                    _locate, _result_bytes, _run_kernel, _unsupported)


# ops that read their operands from the slot dictionary themselves
_SLOT_READERS = frozenset({"cf.cond_br", "cf.switch"})


def _generate(region: Region, index: int, steps: tuple, lanes: bool, registry: Registry,
              steps_of: Callable[[Block], tuple]) -> Callable:
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
    regions through :meth:`Engine.run_region` at every iteration).
    """
    plan = _Plan(region, index, steps, lanes, registry, steps_of)
    return plan.compile()


# the built-in while kernel, which an inlined loop stands for
_WHILE = "stablehlo.while"


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

    def __init__(self, region, index, steps, lanes, registry, steps_of):
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
        self.scalar: set[int] = set()  # values that may be NumPy scalars
        self._inline(self.block, steps)
        self.slots = self._slots()
        self._choose_fast()
        self.reuse = self._reuse()

    # planning ---------------------------------------------------------
    def _inline(self, block: Block, steps: tuple) -> None:
        """Mark the ops of ``block`` as run by the generated code, and find its loops to inline."""
        for op, kind, name, fn, operands, results, quant, fold in steps:
            self.own.add(id(op))
            self.defined.update(results)
            if not self.lanes and kind == _KERNEL and name == _WHILE and fn is _while_kernel and quant is False:
                inner = self._loop_steps(op)
                if inner is not None:
                    self.loops[id(op)] = inner
                    for b, s in zip((r.blocks[0] for r in op.regions), inner):
                        self.defined.update(b.args)
                        self.scalar.update(v for v, ty in zip(b.args, b.arg_types) if _rank0(ty))
                        self._inline(b, s)
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

    def _slots(self) -> set[int]:
        """Values of the generated code that something else reads from the slot dictionary."""
        used: set[int] = set()
        for op in walk_ops(self.region):
            if id(op) not in self.own or op.name in _SLOT_READERS:
                used.update(op.operands)
        return self.defined & used

    def _all_steps(self):
        """(block, position, step) of every step the generated code runs, in order."""
        def walk(block, steps):
            for pos, step in enumerate(steps):
                yield block, pos, step
                inner = self.loops.get(id(step[0]))
                if inner is not None:
                    for r, s in zip(step[0].regions, inner):
                        yield from walk(r.blocks[0], s)
        return walk(self.block, self.steps)

    def _choose_fast(self) -> None:
        if self.lanes:
            return
        readers: dict[int, list] = {}
        for block, pos, (op, kind, name, fn, operands, results, quant, fold) in self._all_steps():
            for v in operands:
                readers.setdefault(v, []).append(op)
            if kind != _KERNEL or fn is None or fold or quant is not False or id(op) in self.loops:
                continue
            info = self.registry.info(name)
            factory = info.fast if info is not None and info.kernel is fn else None
            if factory is None:
                continue
            try:
                fp = factory(op)
            except Exception:  # the kernel reports what the fast path would not take
                fp = None
            if fp is not None:
                self.fast[id(op)] = fp
        # a view stays a view only where every reader takes views
        for _, _, (op, *_rest) in list(self._all_steps()):
            fp = self.fast.get(id(op))
            if fp is None or not fp.view:
                continue
            (r,) = op.results
            if r in self.slots or not all(
                    (g := self.fast.get(id(o))) is not None and g.views for o in readers.get(r, ())):
                del self.fast[id(op)]
        self.readers = readers
        for _, _, (op, *_rest) in self._all_steps():
            if id(op) in self.fast and _rank0(op.result_types[0]):
                self.scalar.add(op.results[0])

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

    # emitting ---------------------------------------------------------
    def compile(self) -> Callable:
        """The function's source, compiled: ``plain`` (without a profile, under a budget no op
        reaches: the deadline is checked before each op that computes and at each iteration of
        an inlined loop); where a run has a profile or a smaller memory budget, ``full`` (every
        op checks the deadline and the memory budget and counts itself in the profile), the
        same steps, generated and compiled the first time a run needs it (it is most of the
        source, and most runs never need it)."""
        self.ns: dict[str, Any] = {
            "nd": np.ndarray, "Ctx": OpContext, "_mono": time.monotonic, "_clock": time.perf_counter,
            "_late": _late, "_unsupported": _unsupported, "_run_kernel": _run_kernel, "_A": np.asarray,
            "_ignore": np.errstate}
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
        return self._compile_variant(False, "make", switch)

    def _compile_variant(self, full: bool, name: str, switch: tuple = ()) -> Callable:
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
            [f"def {name}(eng):"] + [f"    {line}" for line in self.make] + ["    full = []", "    def run(env, args):",
             "        deadline, max_bytes, prof = eng.deadline, eng.max_bytes, eng.profile"]
            + [f"        {line}" for line in switch] + ["        _i = -1", "        try:"]
            + [f"            {line}" for line in head + code]
            + ["        except Exception as e:", "            _fail(_i, e)", "            raise",
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
        the loop when false, ``body`` assigns ``carry`` (the condition's arguments)."""
        lanes, full = self.lanes, self.full
        late = "if deadline is not None and _mono() > deadline: _late(o{})"
        if mode != "body" and not full and steps:
            code.append(late.format(self.n))  # once per run of the block, per iteration of a loop
        for op, kind, name, fn, operands, results, quant, foldable in steps:
            i = self.n
            self.n += 1
            self.ns[f"o{i}"] = op
            if full:
                code.append(late.format(i))
            if kind == _RETURN:
                if mode == "cond":
                    code += [f"if not {self.ref(operands[0], raw=True)}:", "    break"]
                elif mode == "body":
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
            if not full and not foldable:
                code.append(late.format(i))
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
                for v, value in zip(results, op._folded[1]):
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
                    self.ns[f"X{i}"] = fp.call
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


def _assign(targets, exprs: str, code: list[str]) -> None:
    """``v<t>, ... = exprs`` (nothing for no targets)."""
    if targets:
        code.append(f"{''.join(f'v{v}, ' for v in targets)}= {exprs}")


def _rank0(ty) -> bool:
    return isinstance(ty, T.TensorType) and ty.is_static and len(ty.shape) == 0
