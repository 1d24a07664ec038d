"""The engine: runs program functions on NumPy values.

One dispatch loop. Values live in a flat slot dictionary per function call
(value ids are unique within a module, so nested regions write their block
arguments and results into the same dictionary and can read values defined
above them). Region bodies become Python callables handed to kernels.

A block that has run step by step (which computes the results of ops folded
on constants) runs after that as one generated Python function doing the
same steps: kernels called directly, block-private values in local
variables, folded results as constants, result types checked inline. Loops
of small ops then cost little more than their kernels (:mod:`.codegen`: fast
paths in place of kernels, while loops inlined). A trace, or
``generate_blocks = False``, keeps every block step by step. What the loop and
the generated functions share about a step is in :mod:`.steps`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import types as T
from ..deep import HANDOFF_DEPTH, in_deep_thread, run_deep
from ..errors import ConformError, KernelError, ResourceError
from ..kernels._blas_threads import one_blas_thread
from ..kernels.context import OpContext
from ..kernels.quantized import passes_storage
from ..kernels.registry import Registry, load_all
from ..process_grid import ProcessGrid, ProcessId, ProcessInfo, child_engine, grid_size_of
from ..program import Block, Func, Module, Op, Region
from .codegen import _generate
from .steps import (_BR, _CALL, _CODES, _COND_BR, _KERNEL, _RETURN, _SWITCH, FOLDABLE, MAX_DEPTH, TERMINATORS,
                    DepthExceeded, _expectations, _folded_results, _late, _locate, _result_bytes, _run_kernel,
                    _unsupported)

__all__ = ["Engine", "FOLDABLE", "MAX_DEPTH", "TERMINATORS", "DepthExceeded", "OpContext", "run_function",
           "run_spmd"]

# a block runs step by step once per this many of its ops before it is generated (generating
# costs 30 to 50 microseconds an op, without the deadline's checks where the engine has none;
# a generated run of a zoo model saves 10 to 80 microseconds an op, nothing on a few: blocks
# of up to this many ops are generated after their first run, which computes the folds)
OPS_PER_STEPWISE_RUN = 2048
# a block whose results take at least PREGENERATE_BYTES + PREGENERATE_BYTES_PER_OP bytes an op
# is generated before its first run (see Engine._fold_ahead), and so is a block running a loop:
# a step-by-step run misses the fast paths (and the loops' in-place updates) and keeps every
# value until the block returns, touching that many fresh pages on the first run of a process
# (about 0.3 ms a MiB, more than generating: about a millisecond and 20 to 50 microseconds an
# op). Measured on the zoo: a gain on vit_b16, whisper_tiny and gpt2_int8; on blocks with less
# memory an op, even or a loss (efficientnet_b0: tens of milliseconds; attention at batch 16: a
# millisecond), as a process's later runs find those pages touched already
PREGENERATE_BYTES = 32 << 20
PREGENERATE_BYTES_PER_OP = 256 << 10


class Engine:
    """Executes the functions of one module."""

    def __init__(
        self,
        module: Module,
        registry: Registry | None = None,
        *,
        deadline: float | None = None,
        max_bytes: int | None = None,
        profile: dict | None = None,
        probe_dir: str | None = None,
        process: Any = None,
        io: Any = None,
    ):
        self.module = module
        self.registry = registry if registry is not None else load_all()
        self.deadline = deadline
        self.max_bytes = max_bytes
        self.profile = profile
        self.probe_dir = probe_dir
        self.process = process  # collectives: the process this engine runs as
        self.io = io  # infeed/outfeed queues, printed output sink
        self.checks: list[tuple[bool, str, str]] = []
        self.current_env: dict[int, Any] = {}
        self.depth = 0
        self.trace: Callable[[Op, Sequence, tuple], None] | None = None
        self.state: dict[str, Any] = {}  # per-run state for kernels (probes, rng, ...)
        self.fold_constants = True  # reuse the results of FOLDABLE ops on constants
        # run blocks after their first runs as generated functions (see _generate);
        # False: always step by step (as with a trace or without folding)
        self.generate_blocks = True
        self._runners: dict[tuple, tuple[Block, Callable]] = {}

    # calls -----------------------------------------------------------
    def func(self, name: str) -> Func:
        f = self.module.funcs.get(name)
        if f is None:
            raise ConformError(f"no function @{name} in module")
        return f

    def call(self, name: str, args: Sequence[Any], lanes: bool = False) -> tuple:
        f = self.func(name)
        if len(args) != len(f.param_types):
            raise ConformError(f"@{name} takes {len(f.param_types)} arguments, got {len(args)}")
        saved = self.current_env
        try:
            env: dict[int, Any] = {}
            if self.depth == 0:
                with one_blas_thread():
                    return self.run_region(f.body, tuple(args), env, lanes=lanes)
            return self.run_region(f.body, tuple(args), env, lanes=lanes)
        finally:
            self.current_env = saved

    # regions ---------------------------------------------------------
    def run_region(self, region: Region, args: Sequence[Any], env: dict, lanes: bool = False) -> tuple:
        if self.depth >= HANDOFF_DEPTH and not in_deep_thread():
            # deep: the rest of the recursion on a thread with room for MAX_DEPTH levels
            return run_deep(self.run_region, region, args, env, lanes)
        saved = self.current_env
        self.current_env = env
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise DepthExceeded()
            block_index = 0
            blocks = region.blocks
            generated = self.generate_blocks and self.trace is None and self.fold_constants
            while True:
                block = blocks[block_index]
                if generated and len(args) == len(block.args):
                    hit = self._runners.get((id(block), lanes))
                    run = hit[1] if hit is not None and hit[0] is block else self._runner(region, block_index, lanes)
                    if run is not None:
                        block_index, args = run(env, args)
                        if block_index < 0:
                            return args
                        continue
                for vid, a in zip(block.args, args):
                    env[vid] = a
                out = self._run_ops(self._steps(block), env, lanes)
                block._runs = block.__dict__.get("_runs", 0) + 1
                if out[0] == "return":
                    return out[1]
                block_index, args = out[1], out[2]
        finally:
            self.current_env = saved
            self.depth -= 1

    def _runner(self, region: Region, index: int, lanes: bool) -> Callable | None:
        """Block ``index`` of ``region`` as a generated function bound to this
        engine (see :func:`_generate`), or None while the block is to run step
        by step: its first runs (which compute the folded results), as many
        as it takes for the time saved to pay for generating the function
        (:data:`OPS_PER_STEPWISE_RUN` ops per run)."""
        block = region.blocks[index]
        registry = self.registry
        if block.__dict__.get("_runs", 0) * OPS_PER_STEPWISE_RUN <= len(block.ops):
            if lanes or block.__dict__.get("_runs", 0) or not self._fold_ahead(block):
                return None
        steps = self._steps(block)
        if not all(_folded_results(op, registry) for op, *_, fold in steps if fold):
            return None
        cache = block.__dict__.get("_generated")
        if cache is None or cache[0] is not registry:
            cache = block._generated = (registry, {})
        make = cache[1].get(lanes)
        if make is None:
            make = cache[1][lanes] = _generate(region, index, steps, lanes, registry, self._steps, self.module.funcs)
        run = make(self)
        self._runners[id(block), lanes] = (block, run)
        return run

    def _fold_ahead(self, block: Block) -> bool:
        """Whether ``block`` is to be generated before its first run: it runs a loop, or its
        results take :data:`PREGENERATE_BYTES` and :data:`PREGENERATE_BYTES_PER_OP` bytes an op;
        and its folded results are computed now (:meth:`_fold_block`), with those of the loops
        and functions it may run inline (the blocks of its ``stablehlo.while`` ops and of the
        functions it calls, theirs in turn), which their first runs would compute (a block
        whose folds are not computed is not inlined). False, leaving the block to run step by
        step, where one of its own folds would pass the deadline or the memory budget or
        raises: the step-by-step run reports that where it happens."""
        ahead = block.__dict__.get("_ahead")
        if ahead is None:
            ahead = block._ahead = any(op.name == "stablehlo.while" for op in block.ops) or sum(
                _result_bytes(op) for op in block.ops) >= PREGENERATE_BYTES + PREGENERATE_BYTES_PER_OP * len(block.ops)
        if not ahead or not self._fold_block(block):
            return False
        seen = {id(block)}
        todo = [block]
        while todo:
            for op in todo.pop().ops:
                inner = [r.blocks[0] for r in op.regions if len(r.blocks) == 1 and op.name == "stablehlo.while"]
                callee = getattr(op.attrs.get("callee"), "name", "") if op.name == "func.call" else ""
                f = self.module.funcs.get(callee)
                inner += [f.body.blocks[0]] if f is not None and len(f.body.blocks) == 1 else []
                for b in inner:
                    if id(b) not in seen:
                        seen.add(id(b))
                        self._fold_block(b)
                        todo.append(b)
        return True

    def _fold_block(self, block: Block) -> bool:
        """Compute the folded results of ``block`` as its first step-by-step run computes them
        (in order, each op's kernel on the folded results before it); False where one would
        pass the deadline or the memory budget or raises (those after it are left)."""
        registry = self.registry
        env: dict[int, Any] = {}
        for op, _code, _name, fn, operands, result_ids, quant, fold in self._steps(block):
            if not fold:
                continue
            results = _folded_results(op, registry)
            if results is None:
                if (self.deadline is not None and time.monotonic() > self.deadline) or (
                        self.max_bytes is not None and _result_bytes(op) > self.max_bytes):
                    return False
                try:
                    results = self._validate(op, _run_kernel(self, op, fn, OpContext(op, self), quant,
                                                             [env[v] for v in operands]), False)
                except Exception:  # noqa: BLE001 - raised again where the step-by-step run reaches it
                    return False
                op._folded = (registry, results)
            env.update(zip(result_ids, results))
        return True

    def _steps(self, block: Block) -> tuple:
        """The block's ops as pre-bound steps, built once per block and registry:
        ``(op, code, name, kernel, operands, results, quantized, foldable)``.

        ``code`` is 0 for a kernel, else the control-flow op it is. A missing
        kernel stays None and is reported when the op is reached. ``foldable``:
        a pure op (``FOLDABLE``) whose operands are all constants or foldable
        results of the same block; its results are computed by its kernel the
        first time and reused after that (loop bodies recompute index
        arithmetic on constants at every iteration otherwise).
        """
        registry = self.registry
        cached = block.__dict__.get("_steps")
        if cached is not None and cached[0] is registry:
            return cached[1]
        steps = []
        known: set[int] = set()
        for op in block.ops:
            name = op.name
            code = _CODES.get(name, _KERNEL)
            info = registry.info(name)
            if info is not None and info.terminator:
                code = _RETURN
            fn = info.kernel if code == _KERNEL and info is not None else None
            try:
                quant = not passes_storage(op)
            except Exception:  # reported when the op runs
                quant = None
            fold = (code == _KERNEL and fn is not None and quant is False and info.folds
                    and not op.regions and all(v in known for v in op.operands))
            if fold:
                known.update(op.results)
            steps.append((op, code, name, fn, op.operands, op.results, quant, fold))
        steps = tuple(steps)
        block._steps = (registry, steps)
        return steps

    def _run_ops(self, steps: tuple, env: dict, lanes: bool):
        registry = self.registry
        deadline = self.deadline
        profile = self.profile
        trace = self.trace
        max_bytes = self.max_bytes
        fold_constants = self.fold_constants
        for op, code, name, fn, operands, result_ids, quant, fold in steps:
            if deadline is not None and time.monotonic() > deadline:
                _late(op)
            if code == _RETURN:
                return ("return", tuple(env[v] for v in operands))
            if code == _BR:
                return ("branch", op.successors[0], tuple(env[v] for v in operands))
            if code == _COND_BR:
                return self._cond_br(op, env)
            if code == _SWITCH:
                return self._switch(op, env)
            args = [env[v] for v in operands]
            if code == _CALL:
                try:
                    results = self.call(op.attrs["callee"].name, args, lanes=lanes)
                except Exception as e:
                    _locate(op, _CALL, e)
                    raise
            else:
                if fn is None:
                    _unsupported(op)
                if max_bytes is not None:
                    self._guard_memory(op)
                folded = _folded_results(op, registry) if fold and fold_constants else None
                if folded is not None:
                    results = folded
                    if profile is not None:
                        profile.setdefault(name, [0, 0.0])[0] += 1
                else:
                    t0 = time.perf_counter() if profile is not None else 0.0
                    try:
                        results = _run_kernel(self, op, fn, OpContext(op, self), quant, args)
                    except Exception as e:
                        _locate(op, _KERNEL, e)
                        raise
                    if profile is not None:
                        rec = profile.setdefault(name, [0, 0.0])
                        rec[0] += 1
                        rec[1] += time.perf_counter() - t0
                    results = self._validate(op, results, lanes)
                    if fold and fold_constants:
                        op._folded = (registry, results)
            if trace is not None:
                trace(op, args, results)
            for vid, v in zip(result_ids, results):
                env[vid] = v
        return ("return", ())

    def _cond_br(self, op: Op, env: dict):
        cond = env[op.operands[0]]
        sizes = op.attrs.get("operandSegmentSizes") or op.attrs.get("operand_segment_sizes")
        rest = [env[v] for v in op.operands[1:]]
        if sizes is not None:
            n_true = int(sizes[1])
            t_args, f_args = rest[:n_true], rest[n_true:]
        else:
            t_args, f_args = rest, []
        if bool(np.asarray(cond).reshape(-1)[0]):
            return ("branch", op.successors[0], tuple(t_args))
        return ("branch", op.successors[1], tuple(f_args))

    def _switch(self, op: Op, env: dict):
        """``cf.switch``: successor 0 is the default, then one per case value."""
        flag = int(np.asarray(env[op.operands[0]]).reshape(-1)[0])
        seg = op.attrs.get("operandSegmentSizes") or (1, len(op.operands) - 1, 0)
        rest = [env[v] for v in op.operands[1:]]
        default_args, case_args = rest[: int(seg[1])], rest[int(seg[1]):]
        values = [int(x) for x in np.asarray(op.attrs.get("case_values", np.zeros(0))).reshape(-1)]
        sizes = [int(x) for x in op.attrs.get("case_operand_segments", ())] or [0] * len(values)
        starts = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        for i, v in enumerate(values):
            if v == flag:
                return ("branch", op.successors[i + 1], tuple(case_args[starts[i] : starts[i + 1]]))
        return ("branch", op.successors[0], tuple(default_args))

    def _validate(self, op: Op, results: Any, lanes: bool) -> tuple:
        expect = _expectations(op)
        if type(results) is tuple and len(results) == len(expect):
            for v, (dt, shape) in zip(results, expect):
                if dt is None or type(v) is not np.ndarray or v.dtype != dt or (
                        not lanes and v.shape != shape):
                    break
            else:
                return results  # the common case: static tensors of the declared types
        if not isinstance(results, (tuple, list)):
            raise KernelError(op.name, str(op.loc), f"kernel bug: returned {type(results).__name__}, not a tuple")
        if len(results) != len(op.results):
            raise KernelError(op.name, str(op.loc),
                              f"kernel bug: {len(results)} results, op declares {len(op.results)}")
        for i, (v, ty) in enumerate(zip(results, op.result_types)):
            if lanes and isinstance(ty, (T.TensorType, T.ElementType)):
                if not isinstance(v, np.ndarray) or v.dtype != ty.dtype:
                    got = v.dtype if isinstance(v, np.ndarray) else type(v).__name__
                    raise KernelError(op.name, str(op.loc),
                                      f"kernel bug: result #{i} is {got}, op declares {ty}")
                continue
            why = T.value_matches_type(v, ty)
            if why is not None:
                raise KernelError(op.name, str(op.loc), f"kernel bug: result #{i}: {why} (declared {ty})")
        return tuple(results)

    def _guard_memory(self, op: Op) -> None:
        total = _result_bytes(op)
        if total > self.max_bytes:
            raise ResourceError(
                f"{op.name} at {op.loc} would allocate {total / 2**20:.1f} MiB, "
                f"over the memory budget of {self.max_bytes / 2**20:.1f} MiB"
            )

    # checks ----------------------------------------------------------
    def record_check(self, ok: bool, message: str, op: Op) -> None:
        self.checks.append((ok, message, str(op.loc)))


def run_function(module: Module, name: str, args: Sequence[Any] = (), **kw: Any) -> tuple:
    return Engine(module, **kw).call(name, args)


def run_spmd(module: Any, func_name: str, args: Sequence[Any] = (), *, num_replicas: int | None = None,
             num_partitions: int | None = None, registry: Any = None, deadline: float | None = None,
             io: Any = None) -> dict[ProcessId, tuple]:
    """Run ``func_name`` on every process of a grid with the same ``args``
    (the grid size defaults to the module's ``mhlo.num_replicas`` /
    ``mhlo.num_partitions``); returns each process's results."""
    r0, p0 = grid_size_of(module)
    grid = ProcessGrid(num_replicas or r0, num_partitions or p0, deadline=deadline,
                       infeed=list(getattr(io, "infeed", None) or ()))
    parent = Engine(module, registry, deadline=deadline, io=io)

    def job(info: ProcessInfo) -> tuple:
        return child_engine(parent, info).call(func_name, tuple(args))

    return grid.run({pid: job for pid in grid.process_ids()})
