"""IREE's lit-style programs: ``// RUN: iree-run-mlir ... | FileCheck %s``.

A file whose RUN lines call ``iree-run-mlir`` or ``iree-run-module`` is run
the way those tools run it, and its ``CHECK`` lines are matched against the
output printed the way they print it:

- ``--function=NAME`` picks the function; without it, the functions the
  check lines name (``CHECK-LABEL: EXEC @NAME``) run in that order, each from
  the chunk that defines it, else ``@main`` (or the first public function).
  RUN lines that differ only in device or compiler flags are one run.
- ``--input=SPEC`` (also the older ``--function_input=`` and
  ``--input_values=`` with one value a line) gives the arguments in order. ``SPEC`` is
  ``[DxDx...x]TYPE=VALUES`` (``2x3xf32=1 2 3 4 5 6``, ``2x3xf32=[1 2 3][4 5 6]``,
  ``2x3xf32=[[1, 2, 3], [4, 5, 6]]``: separators are blanks, commas and
  brackets; one value fills the whole tensor; no value gives zeros),
  ``TYPE=VALUE`` for a 0-d tensor, a plain value for a scalar argument, or
  ``@file.npy`` (relative to the program).
- Output, as the tools print it: ``EXEC @NAME``, then per result
  ``result[i]: hal.buffer_view`` and ``2x3xf32=[1 2 3][4 5 6]`` (innermost
  dimension blank-separated, outer ones in brackets; floats as C's ``%G``,
  integers in decimal, ``i1`` and other types as hex bytes per element), or
  ``result[i]: i32=5`` for a scalar result.
- FileCheck (:mod:`.filecheck`): ``CHECK``, ``CHECK-LABEL``, ``CHECK-NEXT``,
  ``CHECK-SAME`` and ``CHECK-NOT`` with ``{{regex}}`` blocks; runs of blanks match any
  blanks; ``--check-prefix(es)=`` selects the prefixes. RUN lines starting with
  ``not`` (expected failures of the tool) are not run.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ... import types as T
from ...errors import ConformError, InputError
from ...program import Func, Module
from .filecheck import check_lines, filecheck

TOOLS = ("iree-run-mlir", "iree-run-module")
_RUN_RE = re.compile(r"^\s*//\s*RUN:\s?(.*)$")
_SHAPE_RE = re.compile(r"^(?:(?:\d+|\?)x)*[a-z][a-z0-9]*$")


@dataclass
class IreeRun:
    """One RUN line's invocation of IREE's runner."""

    command: str
    functions: tuple[str, ...]  # explicit --function, else empty
    inputs: tuple[str, ...]
    prefixes: tuple[str, ...]
    line: int


@dataclass
class IreeCase:
    """A program test: the functions one RUN line runs and its CHECK lines."""

    func: Func  # the first function run (names the test)
    funcs: tuple[tuple[Module, Func], ...]  # every function run, with its module
    run: IreeRun
    checks: tuple[tuple[str, str], ...]
    base: str  # the program's folder (for @file.npy inputs)
    kind: str = "iree"

    def execute(self, backend, _mod: Module, opts) -> dict:
        """Run every function of the case; a partial result record."""
        parts = []
        for mod, f in self.funcs:
            args = arguments(f, self.run.inputs, self.base)
            outputs = backend.run_function(mod, f.name, args, opts)
            parts.append(format_output(f.name, outputs, f.result_types))
        output = "\n".join(parts)
        why = filecheck(output, self.checks)
        if why:
            return {"status": "fail", "message": why, "checks": len(self.checks)}
        return {"status": "pass", "message": "", "checks": len(self.checks)}


# --------------------------------------------------------------------------- #
# RUN and CHECK lines
# --------------------------------------------------------------------------- #


def run_lines(source: str) -> list[tuple[int, str]]:
    """``(line, command)`` of every RUN line, continuations (``\\``) joined."""
    out: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for i, line in enumerate(source.splitlines(), 1):
        m = _RUN_RE.match(line)
        if m is None:
            continue
        text = m.group(1).rstrip()
        start, prev = pending or (i, "")
        if text.endswith("\\"):
            pending = (start, prev + text[:-1] + " ")
            continue
        pending = None
        out.append((start, prev + text))
    return out


def find_runs(source: str) -> list[IreeRun]:
    """The invocations of IREE's runner in ``source``'s RUN lines."""
    if "iree-run-" not in source:
        return []
    runs = []
    for line, command in run_lines(source):
        for stage in command.split("|"):
            try:
                words = shlex.split(stage)
            except ValueError:
                words = stage.split()
            if not words or words[0].lstrip("(") not in TOOLS:
                continue  # another tool, or `not iree-run-...` (the tool is expected to fail)
            functions: list[str] = []
            inputs: list[str] = []
            for k, w in enumerate(words):
                flag, eq, value = w.partition("=")
                if not eq and k + 1 < len(words) and not words[k + 1].startswith("-"):
                    value = words[k + 1]
                flag = flag.lstrip("-").replace("-", "_")
                if flag == "function" and value:
                    functions.append(value)
                elif flag in ("input", "function_input") and value:
                    inputs.append(value)
                elif flag == "input_values" and value:  # an older spelling: one value a line
                    inputs += [v for v in value.replace("\\n", "\n").splitlines() if v.strip()]
            run = IreeRun(command, tuple(f.lstrip("@") for f in functions), tuple(inputs), _prefixes(command), line)
            if not any((r.functions, r.inputs, r.prefixes) == (run.functions, run.inputs, run.prefixes)
                       for r in runs):  # the same run for another device: once
                runs.append(run)
    return runs


def _prefixes(command: str) -> tuple[str, ...]:
    m = re.search(r"--check-prefix(?:es)?[= ]([\w,\-]+)", command)
    return tuple(m.group(1).split(",")) if m else ("CHECK",)


# --------------------------------------------------------------------------- #
# Cases of a file
# --------------------------------------------------------------------------- #


def find_cases(path: str, source: str, modules: list[Module]) -> list[tuple[Module, IreeCase]]:
    """One case per RUN line calling IREE's runner (empty when there is none)."""
    out: list[tuple[Module, IreeCase]] = []
    for run in find_runs(source):
        checks = check_lines(source, run.prefixes)
        names = list(run.functions) or list(dict.fromkeys(
            m.group(1) for _d, p in checks if (m := re.match(r"\s*EXEC @([\w$.\-]+)", p))))
        funcs = _functions(modules, names)
        if not funcs:
            raise ConformError(f"{path}:{run.line}: no function to run for RUN line "
                               f"({', '.join('@' + n for n in names) or 'no @main and no public function'})")
        out.append((funcs[0][0], IreeCase(funcs[0][1], tuple(funcs), run, checks, str(Path(path).parent))))
    return out


def _functions(modules: list[Module], names: list[str]) -> list[tuple[Module, Func]]:
    """The named functions (each from the chunk that defines it), else
    ``@main`` or the first public function."""
    if names:
        where = {n: m for m in reversed(modules) for n in m.funcs}
        if any(n not in where for n in names):
            return []
        return [(where[n], where[n].funcs[n]) for n in names]
    for mod in modules:
        public = [f for f in mod.funcs.values() if f.visibility != "private"]
        entry = mod.funcs.get("main") or (public[0] if public else None)
        if entry is not None:
            return [(mod, entry)]
    return []


# --------------------------------------------------------------------------- #
# --input values
# --------------------------------------------------------------------------- #


def arguments(func: Func, specs: tuple[str, ...], base: str = ".") -> list[np.ndarray]:
    """The arguments of ``func`` from ``--input`` specs, checked against its types."""
    if len(specs) != len(func.param_types):
        raise InputError(f"@{func.name} takes {len(func.param_types)} arguments, "
                         f"the RUN line gives {len(specs)} --input")
    return [parse_input(s, t, base) for s, t in zip(specs, func.param_types)]


def parse_input(spec: str, ty, base: str = ".") -> np.ndarray:
    """One ``--input`` value for a parameter of type ``ty``."""
    if spec.startswith("@"):
        value = np.load(Path(base) / spec[1:])
        return _checked(value, ty, spec)
    head, sep, values = spec.partition("=")
    if not sep and not _SHAPE_RE.match(head):  # a plain scalar value
        head, values = "", spec
    if head:
        *dims, elem = head.split("x")
        if any(d == "?" for d in dims):
            raise InputError(f"--input={spec}: a dynamic dimension needs a size")
        et = T.parse_element_text(elem)
        shape = tuple(int(d) for d in dims)
    elif isinstance(ty, T.TensorType):
        et, shape = ty.element, ty.shape
    else:
        et, shape = ty, ()
    if not isinstance(et, T.ElementType):
        raise InputError(f"--input={spec}: unknown element type")
    tokens = [t for t in re.split(r"[\s,\[\]]+", values) if t]
    n = math.prod(shape)
    if len(tokens) not in (0, 1, n):
        raise InputError(f"--input={spec}: {len(tokens)} values for {n} elements")
    try:
        flat = np.array([_number(t, et) for t in tokens] or [0], dtype=object)
        arr = np.array(flat.tolist(), dtype=np.complex128 if et.kind == "complex" else None).astype(et.dtype)
    except (ValueError, TypeError, OverflowError) as e:
        raise InputError(f"--input={spec}: {e}") from None
    arr = np.broadcast_to(arr, (n,)).reshape(shape) if len(tokens) <= 1 else arr.reshape(shape)
    return _checked(arr.copy(), ty, spec)


def _number(token: str, et):
    low = token.lower()
    if low in ("true", "false"):
        return low == "true"
    if et.kind in ("int", "uint", "bool"):
        return int(token, 16) if low.startswith(("0x", "-0x")) else int(token)
    return float(token)


def _checked(value: np.ndarray, ty, spec: str) -> np.ndarray:
    if isinstance(ty, T.TensorType):
        want = ty.shape
        if value.ndim != len(want) or any(d is not None and d != s for d, s in zip(want, value.shape)):
            raise InputError(f"--input={spec}: shape {list(value.shape)} does not fit {ty}")
        if value.dtype != ty.dtype:
            raise InputError(f"--input={spec}: element type {value.dtype} is not the argument's {ty}")
        return value
    return np.asarray(value).astype(ty.dtype).reshape(())


# --------------------------------------------------------------------------- #
# Printed results
# --------------------------------------------------------------------------- #


def type_name(et) -> str:
    """IREE's spelling of an element type (``complex<f32>`` is ``cf64``)."""
    name = str(et)
    m = re.fullmatch(r"complex<f(\d+)>", name)
    return f"cf{2 * int(m.group(1))}" if m else name


def element_strings(value: np.ndarray, et) -> list[str]:
    """Each element as IREE's tools print it."""
    flat = np.asarray(value).reshape(-1)
    kind = getattr(et, "kind", "")
    if kind == "float":
        return ["%G" % x for x in flat.astype(np.float64).tolist()]
    if kind in ("int", "uint"):
        return [str(x) for x in flat.astype(object if flat.dtype.kind == "V" else flat.dtype).tolist()]
    raw = np.ascontiguousarray(flat).view(np.uint8).reshape(flat.size, -1)
    return ["".join("%02X" % b for b in row) for row in raw.tolist()]


def _nest(items: list[str], shape: tuple[int, ...]) -> str:
    if not shape:
        return items[0]
    if len(shape) == 1:
        return " ".join(items)
    step = math.prod(shape[1:])
    return "".join("[" + _nest(items[i * step:(i + 1) * step], shape[1:]) + "]" for i in range(shape[0]))


def format_value(value, ty) -> str:
    et = ty.element if isinstance(ty, T.TensorType) else ty
    arr = np.asarray(value)
    head = "".join(f"{d}x" for d in arr.shape) + type_name(et)
    return f"{head}={_nest(element_strings(arr, et), arr.shape)}"


def format_output(name: str, values, types) -> str:
    """``EXEC @name`` and every result, as ``iree-run-module`` prints them."""
    lines = [f"EXEC @{name}"]
    for i, (v, t) in enumerate(zip(values, types)):
        if isinstance(t, T.TensorType):
            lines += [f"result[{i}]: hal.buffer_view", format_value(v, t)]
        else:
            lines.append(f"result[{i}]: {format_value(v, t)}")
    return "\n".join(lines)
