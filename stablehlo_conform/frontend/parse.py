"""Parsing and verifying a chunk with the bindings: diagnostics with ``file:line:col``, source
nesting, large literals and the memory budget of constants, IREE's bindings for quantized chunks.

Part of :mod:`stablehlo_conform.frontend`, the one package that imports the bindings.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import re

import numpy as np

from .. import types as T
from ..deep import HANDOFF_DEPTH, run_deep
from ..errors import ParseError
from .chunks import Chunk
from .sugar import UnclosedCheck, _sugar_free
from .bindings import _IREE_CHECK, _IREE_CHECK_RE, _bindings, _iree_bindings, _iree_state, _state


# --------------------------------------------------------------------------- #
# Parsing
# --------------------------------------------------------------------------- #


# A chunk's text is parsed on its own; the parser names it "-", and its line
# numbers are shifted by the line the chunk starts on to give the file's own.
_LOC_RE = re.compile(r'"([^"]*)":(\d+):(\d+)')
_PARSED_BUFFER = "-"


_NAME_RE = re.compile(r'^loc\("([^"]+)"')


def source_of(loc: str) -> str:
    """The source a location names outside the program's text: the op's name
    (an exporter's NameLoc) and the first ``file:line`` of another file (its
    base name), e.g. ``jit(fn)/Llama/layers_0/exp at flax_zoo.py:223``; empty
    when the location is the program's own text or says nothing."""
    m = _LOC_RE.search(loc)
    if m and m.group(1) == _PARSED_BUFFER:
        return ""
    foreign = f"{m.group(1).rsplit('/', 1)[-1]}:{m.group(2)}" if m else ""
    n = _NAME_RE.match(loc)
    name = n.group(1) if n and not (m and n.start(1) - 1 == m.start()) else ""
    return " at ".join(x for x in (name, foreign) if x)


def _line_col(loc: str, line_offset: int) -> tuple[int, int] | None:
    m = _LOC_RE.search(loc)
    if not m:
        return None
    line = int(m.group(2)) + (line_offset if m.group(1) == _PARSED_BUFFER else 0)
    return line, int(m.group(3))


def _format_diag(d, path: str, line_offset: int = 0) -> str:
    lc = _line_col(str(d.location), line_offset)
    where = f"{path}:{lc[0]}:{lc[1]}" if lc else path
    msg = f"{where}: error: {d.message}"
    for note in getattr(d, "notes", []) or []:
        msg += "\n  " + _format_diag(note, path, line_offset).replace(": error: ", ": note: ", 1)
    return msg


# Blocks ('{', '(', '[') nested deeper than this in a program's text are
# refused before parsing: the parser, the verifier and the lowering recurse
# once per level.
MAX_NESTING = 1000
_NEST_TOKEN_RE = re.compile(r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"|//[^\n]*|[{}()\[\]]')


def check_nesting(text: str, path: str, line_offset: int = 0) -> int:
    """The deepest bracket nesting of ``text``; :class:`ParseError` at the
    first bracket nested deeper than :data:`MAX_NESTING` (strings and
    comments skipped; linear time)."""
    depth = deepest = 0
    for m in _NEST_TOKEN_RE.finditer(text):
        ch = m.group()
        if ch in "{([":
            depth += 1
            deepest = max(deepest, depth)
            if depth > MAX_NESTING:
                pos = m.start()
                line = text.count("\n", 0, pos) + 1 + line_offset
                col = pos - text.rfind("\n", 0, pos)
                raise ParseError(f"{path}:{line}:{col}: error: blocks nested deeper than {MAX_NESTING} levels")
        elif ch in "})]":
            depth -= 1
    return deepest


def chunk_source(chunk: Chunk) -> str:
    """The text of a chunk as it is parsed, made once: large hex literals
    cut out (see :data:`LARGE_LITERAL`), then check sugar rewritten, so
    that neither step copies a large literal."""
    if chunk.source is None:
        text, chunk.literals = _extract_literals(chunk.text or "")
        chunk.source = _sugar_free(text)
    return chunk.source


def parse_chunk(chunk: Chunk):
    """Parse and verify one chunk; returns the bindings' module. Deeply
    nested text (and bytecode, whose nesting is unknown) is parsed on a
    thread with a large stack: the parser recurses per nesting level."""
    if chunk.data is None:
        try:
            text = chunk_source(chunk)
        except UnclosedCheck as e:
            raise ParseError(f"{chunk.path}:{e.line + chunk.line - 1}:{e.col}: error: {e.op}: "
                             "a bracket of this statement is never closed") from None
        if check_nesting(text, chunk.path, chunk.line - 1) < 2 * HANDOFF_DEPTH:
            return _parse_chunk(chunk)
    return run_deep(_parse_chunk, chunk)


# --------------------------------------------------------------------------- #
# Memory: the budget of loading, large literals
# --------------------------------------------------------------------------- #

_budget: contextvars.ContextVar[int | None] = contextvars.ContextVar("conform_load_budget", default=None)


@contextlib.contextmanager
def memory_budget(max_bytes: int | None):
    """Within the block, a dense constant whose declared size is over
    ``max_bytes`` is refused while loading, before it is materialised (an
    error naming its ``file:line:col`` and size). Splats are never
    materialised: they load as read-only broadcast views."""
    token = _budget.set(max_bytes)
    try:
        yield
    finally:
        _budget.reset(token)


class _ConstantError(Exception):
    """A constant that cannot be loaded; the op lowering it adds its location."""


def _check_budget(ttype) -> None:
    budget = _budget.get()
    n = ttype.num_elements() if isinstance(ttype, T.TensorType) else None
    if budget is None or n is None:
        return
    size = n * ttype.dtype.itemsize
    if size > budget:
        raise _ConstantError(f"constant of type {ttype} needs {size / 2**20:.1f} MiB, "
                             f"over the memory budget of {budget / 2**20:.1f} MiB")


# Hex literals of at least this many digits never reach the parser: the text
# it parses holds ``dense_resource<__conform_literal_N>`` in their place (same
# type; line numbers unchanged) and the lowering decodes the digits straight
# from the source into an array of the element type, block by block -- the
# parser would keep its own copy of the data for the life of the process.
LARGE_LITERAL = 1 << 16
_HEX_OPEN = 'dense<"0x'
_LITERAL_NAME = "__conform_literal_"
_LITERAL_REF_RE = re.compile(r"dense_resource<(" + _LITERAL_NAME + r"\d+)>\s*:\s*(tensor<.*>)$", re.S)
_HEX_BLOCK = 1 << 24  # hex digits decoded at a time
_literal_ids = itertools.count()


def _extract_literals(text: str) -> tuple[str, dict[str, tuple[int, int]]]:
    """``text`` with every large one-line ``dense<"0x...">`` replaced by a
    named resource, and where each one's digits are."""
    if len(text) < LARGE_LITERAL:
        return text, {}
    parts: list[str] = []
    table: dict[str, tuple[int, int]] = {}
    pos = 0
    i = text.find(_HEX_OPEN)
    while i >= 0:
        start = i + len(_HEX_OPEN)
        end = text.find('"', start)
        if end < 0:
            break
        if end - start >= LARGE_LITERAL and text.startswith(">", end + 1) and text.find("\n", start, end) < 0:
            name = f"{_LITERAL_NAME}{next(_literal_ids)}"  # resource names are the context's: never reused
            parts += [text[pos:i], f"dense_resource<{name}>"]
            table[name] = (start, end)
            pos = end + 2
        i = text.find(_HEX_OPEN, end)
    if not table:
        return text, {}
    parts.append(text[pos:])
    return "".join(parts), table


def _hex_to_bytes(text: str, start: int, end: int) -> np.ndarray:
    """The bytes of the hex digits ``text[start:end]`` as a writable uint8
    array, decoded a block at a time (no copy of the whole text)."""
    if (end - start) % 2:
        raise _ConstantError("hex literal with an odd number of digits")
    out = np.empty((end - start) // 2, dtype=np.uint8)
    for i in range(start, end, _HEX_BLOCK):
        j = min(i + _HEX_BLOCK, end)
        try:
            block = bytes.fromhex(text[i:j])
        except ValueError as e:
            raise _ConstantError(f"bad hex literal: {e}") from None
        o = (i - start) // 2
        out[o : o + len(block)] = np.frombuffer(block, dtype=np.uint8)
    return out


def _parse_chunk(chunk: Chunk):
    st = _bindings()
    ir = st["ir"]
    ctx = st["ctx"]
    with ctx:
        try:
            if chunk.data is not None:
                mod = _parse_binary(chunk.data, ctx)
            else:
                mod = ir.Module.parse(chunk_source(chunk))
            return _verified(mod, chunk.path)
        except ir.MLIRError as e:
            diags = _diagnostics(e, chunk.path, chunk.line - 1)
            if chunk.text is not None and "!quant." in chunk.text and _iree_bindings() is not None:
                try:
                    return _parse_iree(chunk)
                except ParseError:
                    # IREE's diagnostics when jaxlib's were about quantized types
                    if "quant" in diags[0]:
                        raise
            raise ParseError(diags[0], diags) from None


def _parse_iree(chunk: Chunk):
    """Parse and verify a chunk with quantized types in IREE's context."""
    st = _iree_state
    ir = st["ir"]
    text = _IREE_CHECK_RE.sub('"' + _IREE_CHECK, chunk_source(chunk))
    with st["ctx"]:
        try:
            return _verified(ir.Module.parse(text), chunk.path)
        except ir.MLIRError as e:
            diags = _diagnostics(e, chunk.path, chunk.line - 1)
            raise ParseError(diags[0], diags) from None


def _verified(mod, path: str):
    if not mod.operation.verify():
        raise ParseError(f"{path}: error: verification failed")
    return mod


def _diagnostics(error, path: str, line_offset: int = 0) -> list[str]:
    """``file:line:col: error: message`` lines of a bindings' MLIRError."""
    diags = [_format_diag(d, path, line_offset) for d in error.error_diagnostics]
    return diags or [f"{path}: error: {error}"]


def _parse_binary(data: bytes, ctx):
    st = _state
    ir = st["ir"]
    first_error = None
    try:
        mod = ir.Module.parse(data)
        if "vhlo." not in mod.operation.get_asm(large_elements_limit=1, skip_regions=False)[:200000]:
            return mod
    except ir.MLIRError as e:
        first_error = e
    try:
        return st["sh"].deserialize_portable_artifact(ctx, data)
    except Exception as e:  # not a portable artifact either
        if first_error is not None:
            raise first_error from None
        raise ParseError(f"cannot deserialize portable artifact: {e}") from None
