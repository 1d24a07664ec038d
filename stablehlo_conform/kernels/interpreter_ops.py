"""The ``interpreter`` dialect of the official tests: run_parallel, probe, print.

``interpreter.run_parallel`` runs one program per process of a
``len(programs) x len(programs[0])`` grid (replicas x partitions), each in
its own thread and engine (spec.md#parallel-execution); its operands are the
programs' arguments and its results the programs' results, both in
row-major process order. ``interpreter.probe`` records a value for
``check.expect_serialized_eq`` (and writes it to the probe directory).
``interpreter.print`` prints a value.
"""

from __future__ import annotations

import os
import re
import sys
import threading

import numpy as np

from .. import types as T
from ..errors import ConformError
from ..process_grid import ProcessGrid, child_engine
from ..program import SymbolRef
from ..opinfo import STORAGE
from .registry import kernel

_probe_lock = threading.Lock()
_print_lock = threading.Lock()


@kernel("interpreter.run_parallel", quantized=STORAGE)
def run_parallel(op, *inputs):
    """Runs ``programs[r][p]`` as process ``(r, p)``; see the module docstring."""
    eng = op.engine
    programs = op.attr("programs")
    if not programs or not all(isinstance(row, (tuple, list)) and row for row in programs):
        raise ConformError(f"{op.name} at {op.loc}: programs must be a non-empty 2-D array of symbols")
    nparts = len(programs[0])
    if any(len(row) != nparts for row in programs):
        raise ConformError(f"{op.name} at {op.loc}: programs rows differ in length")
    if getattr(eng, "process", None) is not None and getattr(eng.process, "grid", None) is not None \
            and eng.process.grid.num_processes > 1:
        raise op.unsupported("run_parallel inside a process of another run_parallel")
    names = [[_symbol(op, s) for s in row] for row in programs]
    jobs_args: dict[tuple[int, int], tuple] = {}
    pos = 0
    for r, row in enumerate(names):
        for p, name in enumerate(row):
            f = eng.func(name)
            k = len(f.param_types)
            if pos + k > len(inputs):
                raise ConformError(f"{op.name} at {op.loc}: {len(inputs)} operands, programs take more")
            jobs_args[(r, p)] = tuple(inputs[pos:pos + k])
            pos += k
    if pos != len(inputs):
        raise ConformError(f"{op.name} at {op.loc}: {len(inputs)} operands, programs take {pos}")
    infeed = [_symbol(op, s) for s in (op.attr("infeed") or ())]
    grid = ProcessGrid(len(names), nparts, deadline=eng.deadline,
                       infeed=[SymbolRef(n) for n in infeed])

    def job_for(name: str, args: tuple):
        def job(info):
            return child_engine(eng, info).call(name, args)
        return job

    results = grid.run({pid: job_for(names[pid[0]][pid[1]], args) for pid, args in jobs_args.items()})
    out: list = []
    for pid in sorted(results):
        out.extend(results[pid])
    return tuple(out)


def _symbol(op, s) -> str:
    if isinstance(s, SymbolRef):
        return s.name
    if isinstance(s, str):
        return s.lstrip("@")
    raise ConformError(f"{op.name} at {op.loc}: expected a symbol reference, got {s!r}")


# probe ------------------------------------------------------------------------
def _sanitize(probe_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", probe_id) or "probe"


@kernel("interpreter.probe", quantized=STORAGE)
def probe(op, value):
    """Records ``value`` under ``probe_id`` (one entry per execution)."""
    eng = op.engine
    probe_id = str(op.attr("probe_id"))
    with _probe_lock:
        recorded = eng.state.setdefault("probes", {}).setdefault(probe_id, [])
        recorded.append(np.array(value, copy=True))
        n = len(recorded) - 1
        if eng.probe_dir:
            _write_probe(eng.probe_dir, probe_id, n, value, op.operand_type(0))
    return (value,)


def _write_probe(directory: str, probe_id: str, n: int, value, ty) -> None:
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{_sanitize(probe_id)}_{n}.npy")
    arr = np.asarray(value)
    if arr.dtype.kind not in "biufc" or type(arr.dtype).__module__.startswith("ml_dtypes") \
            or arr.dtype.name.startswith(("bfloat16", "float8", "float4", "float6", "int4", "uint4",
                                          "int2", "uint2")):
        arr = T.to_bits(arr)  # the element type is in index.csv
    np.save(path, arr)
    with open(os.path.join(directory, "index.csv"), "a", encoding="utf-8") as f:
        f.write(f"{probe_id},{ty},{path}\n")


# print ------------------------------------------------------------------------
def _element_text(v, kind: str) -> str:
    if kind == "bool":
        return "true" if bool(v) else "false"
    if kind in ("int", "uint"):
        return str(int(v))
    if kind == "complex":
        return f"[{float(v.real):e}, {float(v.imag):e}]"
    return f"{float(v):e}"


def _nested(a: np.ndarray, kind: str, indent: int) -> str:
    if a.ndim == 1:
        return "[" + ", ".join(_element_text(x, kind) for x in a) + "]"
    if a.shape[0] == 0:
        return "[]"
    pad = " " * (indent + 2)
    inner = ",\n".join(pad + _nested(sub, kind, indent + 2) for sub in a)
    return "[\n" + inner + "\n" + " " * indent + "]"


def format_value(value, ty) -> str:
    """A value in the reference interpreter's text form: ``tensor<2xi32> {
    [0, 1] }`` over several lines."""
    if isinstance(value, T.Token) or isinstance(ty, T.TokenType):
        return "!stablehlo.token"
    if isinstance(value, tuple):
        types = getattr(ty, "types", (None,) * len(value))
        return "(" + ", ".join(format_value(v, t) for v, t in zip(value, types)) + ")"
    a = np.asarray(value)
    el = getattr(ty, "element", None)
    kind = getattr(el, "kind", None)
    if kind is None:
        kind = {"b": "bool", "i": "int", "u": "uint", "c": "complex"}.get(a.dtype.kind, "float")
    if kind in ("int", "uint") and a.dtype.kind not in "iub":
        a = a.astype(np.int64)
    name = str(ty) if ty is not None else f"tensor<{a.dtype}>"
    if a.ndim == 0:
        return f"{name} {{{_element_text(a[()], kind)}}}"
    return f"{name} {{\n  {_nested(a, kind, 2)}\n}}"


_names_cache: dict[int, tuple] = {}


def _ssa_names(module) -> dict[int, str]:
    """Value id -> the name MLIR's printer gives it (``%0``, ``%1#1``,
    ``%arg0``): one result counter and one argument counter per function;
    a region's own ops first, then its nested regions, last pushed first."""
    cached = _names_cache.get(id(module))
    if cached is not None and cached[0] is module:
        return cached[1]
    names: dict[int, str] = {}
    for f in module.funcs.values():
        next_val = next_arg = 0
        stack = [f.body]
        while stack:
            region = stack.pop()
            for block in region.blocks:
                for vid in block.args:
                    names[vid] = f"%arg{next_arg}"
                    next_arg += 1
                for o in block.ops:
                    if o.results:
                        for i, vid in enumerate(o.results):
                            names[vid] = f"%{next_val}" if len(o.results) == 1 else f"%{next_val}#{i}"
                        next_val += 1
                    stack.extend(o.regions)
    _names_cache[id(module)] = (module, names)
    return names


@kernel("interpreter.print", quantized=STORAGE)
def print_(op, *values):
    """Prints each operand as ``%name = <value>`` to ``engine.io`` (when it
    can ``write``) or stdout."""
    eng = op.engine
    names = _ssa_names(eng.module)
    text = "".join(f"{names.get(vid, '%?')} = " + format_value(v, op.operand_type(i)) + "\n"
                   for i, (vid, v) in enumerate(zip(op.op.operands, values)))
    sink = eng.io if eng.io is not None and hasattr(eng.io, "write") else sys.stdout
    with _print_lock:
        sink.write(text)
        if hasattr(sink, "flush"):
            sink.flush()
    return ()
