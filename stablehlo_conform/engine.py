"""The engine: runs program functions on NumPy values.

One dispatch loop. Values live in a flat slot dictionary per function call
(value ids are unique within a module, so nested regions write their block
arguments and results into the same dictionary and can read values defined
above them). Region bodies become Python callables handed to kernels.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import types as T
from .deep import HANDOFF_DEPTH, in_deep_thread, run_deep
from .errors import ConformError, KernelError, ResourceError, Timeout, UnsupportedOp
from .kernels.quantized import dequantize_op_quantize, passes_storage
from .kernels._blas_threads import one_blas_thread
from .kernels.registry import Registry, load_all
from .program import Block, Func, Module, Op, Region

# nested function calls and regions one evaluation may be inside of; deeper is
# taken for a runaway recursion and ends with the location of the op that went
# past it (the engine runs on a thread with a stack big enough for this depth)
MAX_DEPTH = 10_000


class DepthExceeded(ConformError):
    """More than :data:`MAX_DEPTH` nested calls and regions."""

    def __init__(self) -> None:
        super().__init__(f"more than {MAX_DEPTH} nested calls and regions (a runaway recursion?)")
        self.located = False

    def at(self, op: Op) -> "DepthExceeded":
        """Name the innermost op that went past the limit (once)."""
        if not self.located:
            self.located = True
            self.args = (f"{op.loc}: error: {op.name}: {self.args[0]}",)
        return self


LOADED_CONSTANTS = frozenset({"stablehlo.constant", "arith.constant", "mhlo.constant", "chlo.constant"})
TERMINATORS = frozenset({"func.return", "stablehlo.return", "chlo.return", "mhlo.return",
                         "scf.yield", "tensor.yield", "shape.assuming_yield", "sdy.return"})


_KERNEL, _RETURN, _BR, _COND_BR, _SWITCH, _CALL = range(6)
_CODES = {"cf.br": _BR, "cf.cond_br": _COND_BR, "cf.switch": _SWITCH, "func.call": _CALL}

# Ops whose results depend on nothing but their operands and attributes (no
# regions, checks, state, tokens or printed output): computed once where every
# operand is a constant (see Engine._steps).
FOLDABLE = frozenset(
    [*LOADED_CONSTANTS, "stablehlo.iota"]
    + ["stablehlo." + n for n in (
        "add subtract multiply divide remainder maximum minimum negate abs sign not and or xor "
        "compare select clamp convert bitcast_convert broadcast_in_dim reshape transpose slice "
        "concatenate pad reverse shift_left shift_right_logical shift_right_arithmetic").split()])


class OpContext:
    """What a kernel sees of its op: attributes, types, regions, engine."""

    __slots__ = ("op", "engine")

    def __init__(self, op: Op, engine: "Engine"):
        self.op = op
        self.engine = engine

    # attributes and types --------------------------------------------
    @property
    def name(self) -> str:
        return self.op.name

    @property
    def attrs(self) -> dict[str, Any]:
        return self.op.attrs

    def attr(self, name: str, default: Any = None) -> Any:
        return self.op.attrs.get(name, default)

    @property
    def loc(self):
        return self.op.loc

    @property
    def result_types(self) -> tuple:
        return self.op.result_types

    @property
    def operand_types(self) -> tuple:
        return self.op.operand_types

    def result_type(self, i: int = 0):
        return self.op.result_types[i]

    def operand_type(self, i: int = 0):
        return self.op.operand_types[i]

    def result_dtype(self, i: int = 0) -> np.dtype:
        return self.op.result_types[i].dtype

    def result_element(self, i: int = 0):
        return self.op.result_types[i].element

    def result_shape(self, i: int = 0) -> tuple:
        return self.op.result_types[i].shape

    @property
    def num_results(self) -> int:
        return len(self.op.results)

    # regions ---------------------------------------------------------
    def region(self, i: int = 0, lanes: bool = False) -> Callable[..., tuple]:
        """Region ``i`` as a callable ``f(*block_args) -> tuple``.

        With ``lanes=True`` the body may be fed arrays of any shape in place of
        its rank-0 arguments (element-wise evaluation of many bodies at once);
        result shapes are then not checked against the declared types.
        """
        reg = self.op.regions[i]
        eng = self.engine
        env = eng.current_env

        def run(*args: Any) -> tuple:
            return eng.run_region(reg, args, env, lanes=lanes)

        return run

    @property
    def num_regions(self) -> int:
        return len(self.op.regions)

    def region_ops(self, i: int = 0) -> list[str]:
        """Op names of region ``i``'s first block (for fast-path detection)."""
        return [o.name for o in self.op.regions[i].blocks[0].ops]

    def call(self, fname: str, *args: Any) -> tuple:
        return self.engine.call(fname, args)

    def unsupported(self, detail: str) -> UnsupportedOp:
        return UnsupportedOp(self.op.name, detail, str(self.op.loc))


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
            while True:
                block = blocks[block_index]
                for vid, a in zip(block.args, args):
                    env[vid] = a
                out = self._run_ops(self._steps(block), env, lanes)
                if out[0] == "return":
                    return out[1]
                block_index, args = out[1], out[2]
        finally:
            self.current_env = saved
            self.depth -= 1

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
            if name in TERMINATORS:
                code = _RETURN
            fn = registry.lookup(name) if code == _KERNEL else None
            try:
                quant = not passes_storage(op)
            except Exception:  # reported when the op runs
                quant = None
            fold = (code == _KERNEL and fn is not None and quant is False and name in FOLDABLE
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
                raise Timeout(f"timed out at {name} ({op.loc})")
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
                except DepthExceeded as e:
                    raise e.at(op) from None
                except RecursionError:  # the thread's stack ran out before MAX_DEPTH
                    raise KernelError(name, str(op.loc), "recursion too deep") from None
            else:
                if fn is None:
                    raise UnsupportedOp(name, loc=str(op.loc))
                if max_bytes is not None:
                    self._guard_memory(op)
                folded = op.__dict__.get("_folded") if fold and fold_constants else None
                if folded is not None and folded[0] is registry:
                    results = folded[1]
                    if profile is not None:
                        profile.setdefault(name, [0, 0.0])[0] += 1
                else:
                    t0 = time.perf_counter() if profile is not None else 0.0
                    try:
                        if quant is None:
                            quant = not passes_storage(op)
                        if quant and not getattr(fn, "quantization_aware", False):
                            results = dequantize_op_quantize(self, op, fn, args)
                        else:
                            results = fn(OpContext(op, self), *args)
                    except DepthExceeded as e:
                        raise e.at(op) from None
                    except ConformError:
                        raise
                    except RecursionError:
                        raise KernelError(name, str(op.loc), "recursion too deep") from None
                    except MemoryError:
                        raise ResourceError(f"{name} at {op.loc}: out of memory") from None
                    except Exception as e:  # a kernel bug or an unsupported case
                        raise KernelError(name, str(op.loc), f"{type(e).__name__}: {e}") from e
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
        expect = op.__dict__.get("_expect")
        if expect is None:
            expect = op._expect = _expectations(op)
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
        total = op.__dict__.get("_result_bytes")
        if total is None:
            # a constant's value exists already (checked against the budget when
            # loaded; a splat is a view): running the op allocates nothing
            total = op._result_bytes = 0 if op.name in LOADED_CONSTANTS else sum(
                (ty.num_elements() or 0) * ty.dtype.itemsize
                for ty in op.result_types if isinstance(ty, T.TensorType) and ty.is_static)
        if total > self.max_bytes:
            raise ResourceError(
                f"{op.name} at {op.loc} would allocate {total / 2**20:.1f} MiB, "
                f"over the memory budget of {self.max_bytes / 2**20:.1f} MiB"
            )

    # checks ----------------------------------------------------------
    def record_check(self, ok: bool, message: str, op: Op) -> None:
        self.checks.append((ok, message, str(op.loc)))


def _expectations(op: Op) -> tuple:
    """Per result: (dtype, shape) for a static tensor type, else (None, None)
    (checked the long way)."""
    out = []
    for ty in op.result_types:
        if isinstance(ty, T.TensorType) and ty.is_static and not ty.element.quantized:
            out.append((ty.dtype, tuple(ty.shape)))
        else:
            out.append((None, None))
    return tuple(out)


def run_function(module: Module, name: str, args: Sequence[Any] = (), **kw: Any) -> tuple:
    return Engine(module, **kw).call(name, args)
