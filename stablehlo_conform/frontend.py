"""The one module that imports the official MLIR / StableHLO Python bindings.

It reads ``.mlir`` text, MLIR bytecode and StableHLO portable artifacts,
splits text on ``// -----`` (like ``-split-input-file``), rewrites the check
dialect's custom syntax into generic op form (the ``check`` dialect is not
registered in the bindings' context), parses and verifies with the bindings,
and lowers each module into :mod:`stablehlo_conform.program` objects.

To use another provider of the bindings (a standalone ``mlir`` wheel with the
StableHLO dialect), change the imports in :func:`_bindings`.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import iree_format
from . import types as T
from .deep import HANDOFF_DEPTH, in_deep_thread, run_deep
from .errors import ParseError
from .program import (AttrRecord, AxisRef, Block, Func, Loc, Mesh, MeshAxesGroups, Module, Op, OpaqueAttr, Region,
                      SymbolRef, TensorSharding)

BYTECODE_MAGIC = b"ML\xefR"
SPLIT_MARK = "// -----"

_lock = threading.Lock()
_state: dict[str, Any] = {}


def _bindings():
    """Import the bindings once and build the shared context."""
    if "ir" in _state:
        return _state
    with _lock:
        if "ir" in _state:
            return _state
        from jaxlib.mlir import ir
        from jaxlib.mlir._mlir_libs import _jax_mlir_ext, _stablehlo
        from jaxlib.mlir.dialects import chlo, stablehlo

        _state.update(ir=ir, stablehlo=stablehlo, chlo=chlo, sh=_stablehlo, ext=_jax_mlir_ext)
        _state["provider"] = "jaxlib"
        _state["sdy"] = _sdy_module()
        _state["ctx"] = new_context()
        _state["attr_classes"] = [
            getattr(stablehlo, n)
            for n in (
                "GatherDimensionNumbers",
                "ScatterDimensionNumbers",
                "ConvDimensionNumbers",
                "DotDimensionNumbers",
                "ComparisonDirectionAttr",
                "ComparisonTypeAttr",
                "PrecisionAttr",
                "FftTypeAttr",
                "RngDistributionAttr",
                "RngAlgorithmAttr",
                "TransposeAttr",
                "ChannelHandle",
                "OutputOperandAlias",
                "DotAlgorithm",
                "ResultAccuracyAttr",
                "ResultAccuracyModeAttr",
            )
            if hasattr(stablehlo, n)
        ]
    return _state


def _string_attr(a) -> str | bytes:
    """A string attribute's value; its bytes when it is not valid UTF-8 (kernel
    payloads in ``backend_config``), which the bindings cannot hand out as str."""
    try:
        return a.value
    except (RuntimeError, UnicodeDecodeError):
        return bytes(a.value_bytes)


def _isa(a, cls) -> bool:
    """``isinstance`` across binding versions (old ones need ``cls.isinstance``)."""
    if isinstance(a, cls):
        return True
    check = getattr(cls, "isinstance", None)
    return bool(check(a)) if check is not None else False


def new_context():
    """A context with every dialect the bindings provide (stablehlo, chlo,
    func, arith, math, tensor, shape, cf, quant, vhlo, ...) plus the
    interpreter dialect; unregistered dialects (``check``) are allowed."""
    st = _state
    ir = st["ir"]
    reg = ir.DialectRegistry()
    st["ext"].register_dialects(reg)
    ctx = ir.Context()
    ctx.append_dialect_registry(reg)
    ctx.load_all_available_dialects()
    st["stablehlo"].register_dialect(ctx)
    st["chlo"].register_dialect(ctx)
    st["sh"].register_interpreter_dialect(ctx)
    _register_sdy(ctx)
    ctx.allow_unregistered_dialects = True
    return ctx


def _sdy_module():
    try:
        from jaxlib.mlir._mlir_libs import _sdy
    except ImportError:  # pragma: no cover - older bindings
        return None
    return _sdy


def _register_sdy(ctx) -> None:
    """Shardy (``sdy``): meshes, sharding attributes and manual computations
    of programs exported with a mesh (also needed to read portable artifacts
    carrying them); bindings without it parse such programs as unregistered
    ops."""
    sdy = _sdy_module()
    if sdy is not None:
        sdy.register_dialect(ctx)


_iree_state: dict[str, Any] = {}


def _iree_bindings() -> dict[str, Any] | None:
    """IREE's compiler bindings (``iree-base-compiler``), a second provider
    whose context registers the ``quant`` dialect the StableHLO verifier of
    jaxlib does not accept; None when they are not installed."""
    if "ir" in _iree_state:
        return _iree_state
    if _iree_state.get("missing"):
        return None
    with _lock:
        if "ir" in _iree_state:
            return _iree_state
        try:
            from iree.compiler import ir
        except Exception:
            _iree_state["missing"] = True
            return None
        ctx = ir.Context()
        ctx.allow_unregistered_dialects = True
        _iree_state.update(ir=ir, ctx=ctx, attr_classes=[], provider="iree", foreign=_jaxlib_attr)
    return _iree_state


def _jaxlib_attr(text: str, path: str) -> Any:
    """Decode a dialect attribute another provider handed out as text by
    parsing it with jaxlib's bindings (stablehlo attributes carry no types
    the jaxlib context rejects)."""
    st = _bindings()
    try:
        with st["ctx"]:
            a = st["ir"].Attribute.parse(text)
            return _Lowerer(path).attr(a)
    except Exception:
        return OpaqueAttr(text)


# check ops are renamed for IREE's context, which registers a check dialect of its own
_IREE_CHECK = "conform."
_IREE_CHECK_RE = re.compile(r'"check\.(?=[a-z_]+")')


def _is_iree_module(mod) -> bool:
    return type(mod).__module__.startswith("iree.")


def provider_version() -> str:
    st = _bindings()
    try:
        return f"{st['provider']} (StableHLO {st['sh'].get_current_version()})"
    except Exception:  # pragma: no cover - older bindings
        return st["provider"]


# --------------------------------------------------------------------------- #
# Reading and splitting
# --------------------------------------------------------------------------- #


@dataclass
class Chunk:
    path: str
    line: int  # 1-based line where the chunk starts
    text: str | None = None
    data: bytes | None = None
    # what is parsed: ``text`` with its large literals cut out and check sugar rewritten
    source: str | None = None
    # the large hex literals cut out: name -> (start, end) of their digits in ``text``
    literals: dict[str, tuple[int, int]] = field(default_factory=dict)


def read_chunks(path: str | Path, split: bool = True) -> list[Chunk]:
    p = Path(path)
    raw = p.read_bytes()
    if raw.startswith(BYTECODE_MAGIC):
        return [Chunk(str(p), 1, data=raw)]
    text = raw.decode("utf-8", errors="replace")
    del raw
    return split_text(text, str(p), split)


def _split_marks(text: str):
    """(start, end) of every ``// -----`` line (``end`` before its newline),
    found with ``str.find`` (a regex scan visits every character slowly)."""
    i = text.find(SPLIT_MARK)
    while i >= 0:
        eol = text.find("\n", i)
        eol = len(text) if eol < 0 else eol
        if (i == 0 or text[i - 1] == "\n") and not text[i + len(SPLIT_MARK):eol].strip(" \t"):
            yield i, eol
        i = text.find(SPLIT_MARK, eol)


def split_text(text: str, path: str = "<string>", split: bool = True) -> list[Chunk]:
    if not split:
        return [Chunk(path, 1, text=text)]
    chunks = []
    pos = 0
    line = 1
    for start, end in _split_marks(text):
        piece = text[pos:start]
        chunks.append(Chunk(path, line, text=piece))
        line += piece.count("\n") + 1
        pos = end + 1
    chunks.append(Chunk(path, line, text=text[pos:]))
    return [c for c in chunks if c.text and _has_code(c.text)]


_CODE_LINE_RE = re.compile(r"^[ \t\r\f\v]*(?!//)\S", re.M)


def _has_code(text: str) -> bool:
    """Whether some line holds more than blanks and a ``//`` comment."""
    return _CODE_LINE_RE.search(text) is not None


# --------------------------------------------------------------------------- #
# check dialect sugar -> generic form
# --------------------------------------------------------------------------- #

_CHECK_PROPS_RE = re.compile(
    r'^(?P<head>[ \t]*"check\.[a-z_]+"\([^)\n]*\)[ \t]*)<\{(?P<props>.*)\}>(?P<tail>[ \t]*:[ \t]*\(.*)$', re.M)
_CHECK_HEAD = re.compile(r"(?P<indent>\s*)check\.(?P<op>[a-z_]+)\s+")
_CHECK_START = re.compile(r"^[ \t]*check\.[a-z_]+[ \t]+%", re.M)


def _strip_comment(line: str) -> str:
    if "//" not in line:
        return line.rstrip()
    in_str = False
    for i, ch in enumerate(line):
        if ch == '"':
            in_str = not in_str
        elif not in_str and line.startswith("//", i):
            return line[:i].rstrip()
    return line.rstrip()


def _depth(text: str, depth: int = 0, in_str: bool = False) -> tuple[int, bool]:
    """Bracket depth and string state after ``text``, starting from
    ``(depth, in_str)`` (so a statement's depth is counted piece by piece)."""
    for ch in text:
        if ch == '"':
            in_str = not in_str
        elif not in_str:
            if ch in "<([{":
                depth += 1
            elif ch in ">)]}":
                depth -= 1
    return depth, in_str


def _split_type_suffix(rest: str) -> tuple[str, str]:
    """Split ``'<args> : <types>'`` at the last top-level ' : '."""
    depth = 0
    in_str = False
    cut = -1
    for i, ch in enumerate(rest):
        if ch == '"':
            in_str = not in_str
        if in_str:
            continue
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        elif ch == ":" and depth == 0:
            cut = i
    if cut < 0:
        raise ValueError("no type")
    return rest[:cut].strip(), rest[cut + 1 :].strip()


def _rewrite_check_stmt(stmt: str) -> str:
    m = _CHECK_HEAD.match(stmt)
    if not m:
        return stmt
    op = m.group("op")
    rest = stmt[m.end():].strip()
    trailing = ""
    if rest.endswith("}"):
        # a trailing attribute dictionary: '... : tensor<f64> {tolerance = 0.1 : f64}'
        depth = 0
        for i in range(len(rest) - 1, -1, -1):
            ch = rest[i]
            if ch in ">)]}":
                depth += 1
            elif ch in "<([{":
                depth -= 1
                if depth == 0 and ch == "{":
                    trailing = rest[i + 1 : -1].strip()
                    rest = rest[:i].strip()
                    break
    try:
        args, types = _split_type_suffix(rest)
    except ValueError:
        return stmt
    parts = T.split_top_level(args)
    operands = [p for p in parts if p.startswith("%")]
    extras = [p for p in parts if not p.startswith("%")]
    attrs = []
    type_list = T.split_top_level(types)
    for e in extras:
        if e.startswith("dense<") or e.startswith("dense_resource<"):
            attrs.append(f"value = {e} : {type_list[0]}")
        elif "=" in e:
            k, v = (s.strip() for s in e.split("=", 1))
            attrs.append(f"{k} = {v}")
    if trailing:
        attrs.append(trailing)
    if len(type_list) < len(operands):
        type_list = type_list + [type_list[-1]] * (len(operands) - len(type_list))
    attr_text = " {" + ", ".join(attrs) + "}" if attrs else ""
    return (
        f'{m.group("indent")}"check.{op}"({", ".join(operands)}){attr_text} : '
        f'({", ".join(type_list[: len(operands)])}) -> ()'
    )


class UnclosedCheck(ValueError):
    """A check statement whose brackets are still open at the end of the text."""

    def __init__(self, text: str, start: int):
        self.line = text.count("\n", 0, start) + 1
        m = _CHECK_HEAD.match(text, start)
        self.col = len(m.group("indent")) + 1 if m else 1
        self.op = f"check.{m.group('op')}" if m else "check"
        super().__init__(f"{self.line}:{self.col}: {self.op}: a bracket of this statement is never closed")


def _check_starts(text: str):
    """Start of every line that opens a check statement: ``str.find`` for
    ``check.``, then its line is matched once and the search goes on from
    the next line (every character is looked at a bounded number of times)."""
    i = text.find("check.")
    while i >= 0:
        line_start = text.rfind("\n", 0, i) + 1
        if not text[line_start:i].strip(" \t") and _CHECK_START.match(text, line_start):
            yield line_start
        eol = text.find("\n", i)
        if eol < 0:
            return
        i = text.find("check.", eol)


def rewrite_check_sugar(text: str) -> str:
    """Rewrite ``check.*`` custom syntax (possibly spanning several lines)
    into generic form; line numbers are preserved.

    Linear in the size of ``text``: only the lines of check statements are
    visited, a statement's bracket depth is carried from line to line (an
    unterminated statement runs to the end of the text once), and the text
    between statements is copied in slices. A text without check sugar is
    returned as is."""
    if "check." not in text:
        return text
    if '"check.' in text and "<{" in text:
        # properties of generic check ops -> attributes (unregistered ops
        # keep no readable properties)
        text = _CHECK_PROPS_RE.sub(r"\g<head>{\g<props>}\g<tail>", text)
    out: list[str] = []
    pos = 0  # text[:pos] is done
    n = len(text)
    for start in _check_starts(text):
        if start < pos:  # inside a statement already rewritten
            continue
        out.append(text[pos:start])
        end = text.find("\n", start)
        end = n if end < 0 else end
        pieces = [_strip_comment(text[start:end])]
        depth, in_str = _depth(pieces[0])
        lines = 0
        while (depth > 0 or pieces[-1].endswith(",")) and end < n:
            nxt = text.find("\n", end + 1)
            nxt = n if nxt < 0 else nxt
            piece = _strip_comment(text[end + 1:nxt]).strip()
            depth, in_str = _depth(piece, depth, in_str)
            pieces.append(piece)
            lines += 1
            end = nxt
        if depth > 0:  # ran to the end of the text
            raise UnclosedCheck(text, start)
        out.append(_rewrite_check_stmt(" ".join(pieces)))
        out.append("\n" * lines)
        pos = end
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def _sugar_free(text: str) -> str:
    """``text`` with IREE's test constructs and the check dialect's custom
    syntax in forms the bindings' context parses."""
    return rewrite_check_sugar(iree_format.rewrite(text))


# --------------------------------------------------------------------------- #
# Parsing
# --------------------------------------------------------------------------- #


# A chunk's text is parsed on its own; the parser names it "-", and its line
# numbers are shifted by the line the chunk starts on to give the file's own.
_LOC_RE = re.compile(r'"([^"]*)":(\d+):(\d+)')
_PARSED_BUFFER = "-"


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


def load_text(text: str, path: str = "<string>", split: bool = False) -> list[Module]:
    return [lower_module(parse_chunk(c), c) for c in split_text(text, path, split)]


def load_file(path: str | Path, split: bool = True) -> list[Module]:
    return [lower_module(parse_chunk(c), c) for c in read_chunks(path, split)]


def load_bytes(data: bytes, path: str = "<bytes>") -> Module:
    c = Chunk(path, 1, data=data)
    return lower_module(parse_chunk(c), c)


def serialize_portable_artifact(text: str, target: str | None = None) -> bytes:
    st = _bindings()
    version = target or st["sh"].get_current_version()
    return st["sh"].serialize_portable_artifact_str(text, version)


def stablehlo_version() -> tuple[int, int, int]:
    """The StableHLO version of the bindings (what they serialize by default)."""
    return version_tuple(_bindings()["sh"].get_current_version())


def version_tuple(text: str) -> tuple[int, int, int]:
    return tuple(int(x) for x in str(text).split(".")[:3])  # type: ignore[return-value]


def needed_stablehlo_version(text: str, above: tuple[int, ...]) -> tuple[tuple[int, int, int] | None, str]:
    """The oldest StableHLO version (``above`` or newer, up to the bindings'
    own) that module ``text`` serializes to as a portable artifact, and the
    MLIR diagnostic of serializing it at ``above`` (empty when that works).

    Each minor version is tried in turn; None when none works (the program
    does not serialize at all)."""
    st = _bindings()
    ir = st["ir"]
    current = version_tuple(st["sh"].get_current_version())
    diags: list[str] = []

    def handler(d) -> bool:
        diags.append(str(d.message) + "".join(f" ({n.message})" for n in getattr(d, "notes", []) or []))
        return True

    def serializes(v: tuple[int, ...]) -> bool:
        try:
            st["sh"].serialize_portable_artifact(mod, ".".join(map(str, v)))
            return True
        except Exception as e:  # the bindings raise with "failed to serialize" only
            if not diags:
                diags.append(str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__)
            return False

    with st["ctx"]:
        mod = ir.Module.parse(text)
        handle = st["ctx"].attach_diagnostic_handler(handler)
        try:
            if serializes(tuple(above)):
                return tuple(above)[:3], ""  # type: ignore[return-value]
            first = diags[0] if diags else ""
            for minor in range(above[1] + 1 if above[0] == current[0] else 0, current[1] + 1):
                if serializes((current[0], minor, 0)):
                    return (current[0], minor, 0), first
            return None, first
        finally:
            handle.detach()


def to_bytecode(text: str) -> bytes:
    import io

    st = _bindings()
    with st["ctx"]:
        mod = st["ir"].Module.parse(_sugar_free(text))
        buf = io.BytesIO()
        mod.operation.write_bytecode(buf)
        return buf.getvalue()


def registered_ops(dialect: str) -> list[str]:
    """Op names the bindings' Python module declares for a dialect."""
    st = _bindings()
    mod = {"stablehlo": st["stablehlo"], "chlo": st["chlo"]}.get(dialect)
    if mod is None:
        import importlib

        try:
            mod = importlib.import_module(f"jaxlib.mlir.dialects.{dialect}")
        except ImportError:
            return []  # the bindings ship no Python module listing this dialect's ops
    names = set()
    for v in vars(mod).values():
        n = getattr(v, "OPERATION_NAME", None)
        if isinstance(n, str) and n.startswith(dialect + "."):
            names.add(n)
    return sorted(names)


def known_dialect(name: str) -> bool:
    """Whether the bindings' context knows dialect ``name``."""
    st = _bindings()
    try:
        st["ctx"].dialects[name]
        return True
    except Exception:
        return False


def op_names(chunk: Chunk) -> list[tuple[str, str | None]]:
    """``(op name, custom-call target or None)`` of every op of a chunk,
    parsed and verified but not lowered (a quick look at what it needs)."""
    mod = parse_chunk(chunk)
    out: list[tuple[str, str | None]] = []

    def walk(op) -> None:
        for r in op.regions:
            for b in r.blocks:
                for o in b.operations:
                    o = o.operation
                    target = None
                    if o.name == "stablehlo.custom_call" and "call_target_name" in o.attributes:
                        target = str(o.attributes["call_target_name"]).strip('"')
                    out.append((o.name, target))
                    walk(o)

    walk(mod.operation)
    return out


# --------------------------------------------------------------------------- #
# Lowering to program objects
# --------------------------------------------------------------------------- #


class _Lowerer:
    def __init__(self, path: str, st: dict[str, Any] | None = None, line_offset: int = 0,
                 chunk: Chunk | None = None):
        self.path = path
        self.line_offset = line_offset
        self.chunk = chunk  # for the large literals kept out of the parser
        self.level = 0  # regions being lowered
        self.ids: dict[Any, int] = {}
        self.types: dict[str, Any] = {}
        st = _state if st is None else st
        self.ctx = st["ctx"]
        self.ir = st["ir"]
        self.attr_classes = st["attr_classes"]
        self.foreign = st.get("foreign")
        self.sdy = st.get("sdy")
        self.sh = st.get("sh")

    # values -------------------------------------------------------------
    def vid(self, value) -> int:
        key = value
        i = self.ids.get(key)
        if i is None:
            i = len(self.ids)
            self.ids[key] = i
        return i

    # types --------------------------------------------------------------
    def type(self, t) -> Any:
        key = str(t)
        got = self.types.get(key)
        if got is not None:
            return got
        ir = self.ir
        if _isa(t, ir.RankedTensorType):
            rt = ir.RankedTensorType(t)
            shape = tuple(None if rt.is_dynamic_dim(i) else int(rt.shape[i]) for i in range(rt.rank))
            et = T.parse_element_text(str(rt.element_type))
            got = T.TensorType(shape, et)
        elif _isa(t, ir.VectorType):
            vt = ir.VectorType(t)
            got = T.TensorType(tuple(int(d) for d in vt.shape), T.parse_element_text(str(vt.element_type)))
        elif _isa(t, ir.TupleType):
            tt = ir.TupleType(t)
            got = T.TupleType(tuple(self.type(tt.get_type(i)) for i in range(tt.num_types)))
        elif key == "!stablehlo.token":
            got = T.TokenType()
        else:
            got = T.parse_element_text(key)
        self.types[key] = got
        return got

    # locations ----------------------------------------------------------
    def loc(self, location) -> Loc:
        lc = _line_col(str(location), self.line_offset)
        return Loc(self.path, *lc) if lc else Loc(self.path)

    # attributes ---------------------------------------------------------
    def attr(self, a, type_hint=None) -> Any:
        ir = self.ir
        if _isa(a, ir.BoolAttr):
            return bool(ir.BoolAttr(a).value)
        if _isa(a, ir.IntegerAttr):
            return int(ir.IntegerAttr(a).value)
        if _isa(a, ir.FloatAttr):
            return float(ir.FloatAttr(a).value)
        if _isa(a, ir.StringAttr):
            return _string_attr(ir.StringAttr(a))
        if _isa(a, ir.UnitAttr):
            return True
        for cls_name in ("DenseI64ArrayAttr", "DenseI32ArrayAttr", "DenseI16ArrayAttr",
                         "DenseI8ArrayAttr", "DenseBoolArrayAttr", "DenseF32ArrayAttr",
                         "DenseF64ArrayAttr"):
            cls = getattr(ir, cls_name, None)
            if cls is not None and _isa(a, cls):
                return tuple(cls(a))
        if _isa(a, ir.DenseElementsAttr):
            return self.dense(ir.DenseElementsAttr(a))
        if _isa(a, ir.ArrayAttr):
            return tuple(self.attr(x) for x in ir.ArrayAttr(a))
        if _isa(a, ir.DictAttr):
            d = ir.DictAttr(a)
            return {d[i].name: self.attr(d[i].attr) for i in range(len(d))}
        if _isa(a, ir.FlatSymbolRefAttr):
            return SymbolRef(ir.FlatSymbolRefAttr(a).value)
        if _isa(a, ir.SymbolRefAttr):
            return SymbolRef(str(a).lstrip("@").split("::")[-1].lstrip("@"))
        if _isa(a, ir.TypeAttr):
            tv = ir.TypeAttr(a).value
            if _isa(tv, ir.FunctionType):
                ft = ir.FunctionType(tv)
                return (tuple(self.type(x) for x in ft.inputs), tuple(self.type(x) for x in ft.results))
            return self.type(tv)
        for cls in self.attr_classes:
            if _isa(a, cls):
                return self.record(cls, cls(a))
        if self.sdy is not None:
            got = self.sharding_attr(a)
            if got is not None:
                return got
        text = str(a)
        if self.chunk is not None and self.chunk.literals and text.startswith("dense_resource<" + _LITERAL_NAME):
            return self.literal(text)
        if self.foreign is not None:
            return self.foreign(text, self.path)
        return OpaqueAttr(text)

    # sharding (Shardy and StableHLO meshes) ---------------------------
    def sharding_attr(self, a) -> Any:
        """Meshes, tensor shardings, manual axes and mesh-axes replica
        groups as :mod:`program` objects; None for other attributes."""
        sdy, sh = self.sdy, self.sh
        if _isa(a, sdy.TensorShardingAttr):
            t = sdy.TensorShardingAttr(a)
            dims = tuple(tuple(self.axis_ref(x) for x in sdy.DimensionShardingAttr(d).axes)
                         for d in t.dimension_shardings)
            return TensorSharding(self.mesh(t.mesh_or_ref), dims,
                                  tuple(self.axis_ref(x) for x in t.replicated_axes),
                                  tuple(self.axis_ref(x) for x in t.unreduced_axes))
        if _isa(a, sdy.TensorShardingPerValueAttr):
            return tuple(self.attr(x) for x in sdy.TensorShardingPerValueAttr(a).shardings)
        if _isa(a, sdy.ManualAxesAttr):
            m = sdy.ManualAxesAttr(a)
            return tuple(m[i] for i in range(len(m)))
        if _isa(a, sdy.MeshAttr) or _isa(a, sh.MeshAttr):
            return self.mesh(a)
        if _isa(a, sh.ReplicaGroupMeshAxesAttr):
            r = sh.ReplicaGroupMeshAxesAttr(a)
            return MeshAxesGroups(self.mesh(r.mesh), tuple(self.axis_ref(x) for x in self.ir.ArrayAttr(r.axes)))
        return None

    def mesh(self, m) -> str | Mesh:
        """A mesh attribute, or the name of the mesh symbol it refers to."""
        ir, sdy, sh = self.ir, self.sdy, self.sh
        if _isa(m, ir.FlatSymbolRefAttr):
            return ir.FlatSymbolRefAttr(m).value
        if _isa(m, sdy.MeshAttr):
            ma = sdy.MeshAttr(m)
            axes = [sdy.MeshAxisAttr(x) for x in ma.axes]
            ids = ma.device_ids
        else:
            ma = sh.MeshAttr(m)
            axes = [sh.MeshAxisAttr(x) for x in ir.ArrayAttr(ma.axes)]
            ids = ma.device_ids
            ids = self.attr(ids) if ids is not None else ()
        ids = np.ravel(np.asarray(ids if ids is not None else (), dtype=np.int64))
        return Mesh(tuple((str(x.name), int(x.size)) for x in axes), tuple(int(i) for i in ids))

    def axis_ref(self, x) -> AxisRef:
        sdy, sh = self.sdy, self.sh
        r = sdy.AxisRefAttr(x) if _isa(x, sdy.AxisRefAttr) else sh.AxisRefAttr(x)
        info = r.sub_axis_info
        if info is None:
            return AxisRef(str(r.name))
        si = sdy.SubAxisInfoAttr(info) if _isa(info, sdy.SubAxisInfoAttr) else sh.SubAxisInfoAttr(info)
        return AxisRef(str(r.name), int(si.pre_size), int(si.size))

    _SKIP = {"context", "type", "typeid", "static_typeid", "dump", "get", "isinstance",
             "maybe_downcast", "parse", "get_named", "owner", "location"}

    def record(self, cls, x) -> Any:
        names = [n for n in dir(x) if not n.startswith("_") and n not in self._SKIP]
        if names == ["value"] or cls.__name__.endswith("Attr") and "value" in names and len(names) <= 2:
            return str(x.value)
        fields = []
        for n in names:
            try:
                v = getattr(x, n)
            except Exception:
                continue
            if callable(v):
                continue
            fields.append((n, self.plain(v)))
        return AttrRecord(cls.__name__, tuple(fields))

    def plain(self, v) -> Any:
        if isinstance(v, (list, tuple)):
            return tuple(self.plain(x) for x in v)
        if isinstance(v, (int, float, str, bool)) or v is None:
            return v
        if isinstance(v, self.ir.Attribute):
            return self.attr(v)
        if isinstance(v, self.ir.Type):
            return self.type(v)
        return str(v)

    def dense(self, a) -> np.ndarray:
        ttype = self.type(a.type)
        if a.is_splat and ttype.num_elements() != 1:  # one value printed; a read-only view of the declared shape
            return self.dense_from_text(str(a), ttype)
        _check_budget(ttype)
        try:
            arr = np.array(a)
            if arr.dtype == ttype.dtype or (ttype.element.name == "index"):
                if arr.shape != tuple(ttype.shape):
                    arr = np.broadcast_to(arr, ttype.shape).copy()
                return arr.astype(ttype.dtype, copy=False)
        except Exception:
            pass
        text = str(a)
        return self.dense_from_text(text, ttype)

    def literal(self, ref: str) -> np.ndarray:
        """A large hex literal, decoded from the chunk's source text."""
        m = _LITERAL_REF_RE.match(ref)
        span = self.chunk.literals.get(m.group(1)) if m else None
        if span is None:
            raise _ConstantError(f"cannot decode attribute {ref[:80]}")
        ttype = T.parse_type_text(m.group(2))
        start, end = span
        if (end - start) // 2 != ttype.element.dtype.itemsize:  # not a splat
            _check_budget(ttype)
        try:
            return T.decode_hex_storage(_hex_to_bytes(self.chunk.text, start, end), ttype)
        except ValueError as e:
            raise _ConstantError(str(e)) from None

    def dense_from_text(self, text: str, ttype) -> np.ndarray:
        m = re.match(r"\s*dense<(.*)>\s*:\s*(tensor<.*>)\s*$", text, re.S)
        if not m:
            raise ParseError(f"{self.path}: cannot decode attribute {text[:80]}")
        return T.decode_dense_literal(m.group(1), ttype)

    def op_attrs(self, op) -> dict[str, Any]:
        out: dict[str, Any] = {}
        attrs = op.attributes
        n = len(attrs)
        short = full = None
        for i in range(n):
            name = attrs[i].name
            try:
                a = attrs[name]
            except TypeError:
                # element types the bindings cannot hand out (e.g. complex):
                # decode the attribute from the op's printed generic form,
                # printed first with every non-splat literal elided, so its
                # type meets the memory budget before its values are printed
                if short is None:
                    short = op.get_asm(print_generic_op_form=True, skip_regions=True, large_elements_limit=1)
                elided = re.search(re.escape(name) + r" = dense_resource<__elided__> : (tensor<[^{}]*?>)(?=[,}])",
                                   short)
                if elided is None:
                    out[name] = self._attr_from_generic(short, name)
                    continue
                _check_budget(T.parse_type_text(elided.group(1)))
                if full is None:
                    full = op.get_asm(print_generic_op_form=True, skip_regions=True)
                out[name] = self._attr_from_generic(full, name)
                continue
            out[name] = self.attr(a)
        return out

    def _attr_from_generic(self, generic: str, name: str) -> Any:
        m = re.search(re.escape(name) + r" = (dense<[^>]*>) : (tensor<[^{}]*?>)(?=[,}])", generic)
        if not m:
            raise ParseError(f"{self.path}: cannot decode attribute {name}")
        ttype = T.parse_type_text(m.group(2))
        return self.dense_from_text(f"{m.group(1)} : {m.group(2)}", ttype)

    # structure ----------------------------------------------------------
    def region(self, r) -> Region:
        if self.level >= HANDOFF_DEPTH and not in_deep_thread():
            return run_deep(self._region_in_context, r)
        self.level += 1
        try:
            return self._region(r)
        finally:
            self.level -= 1

    def _region_in_context(self, r) -> Region:
        with self.ctx:  # the bindings' current context is per thread
            return self.region(r)

    def _region(self, r) -> Region:
        blocks = list(r.blocks)
        index = {b: i for i, b in enumerate(blocks)}
        out = []
        for b in blocks:
            args = tuple(self.vid(a) for a in b.arguments)
            arg_types = tuple(self.type(a.type) for a in b.arguments)
            # list comprehensions (not generators) on the recursive path: no C frame per level
            ops = tuple([self.op(o, index) for o in b.operations])
            out.append(Block(args, arg_types, ops))
        return Region(tuple(out))

    def op(self, o, block_index=None) -> Op:
        o = o.operation
        name = o.name
        if self.foreign is not None and name.startswith(_IREE_CHECK):
            name = "check." + name[len(_IREE_CHECK):]
        try:
            attrs = self.op_attrs(o)
        except _ConstantError as e:
            raise ParseError(f"{self.loc(o.location)}: error: {name}: {e}") from None
        succ: tuple[int, ...] = ()
        if block_index is not None and len(o.successors):
            succ = tuple(block_index.get(s, -1) for s in o.successors)
        return Op(
            name=name,
            operands=tuple(self.vid(v) for v in o.operands),
            results=tuple(self.vid(v) for v in o.results),
            operand_types=tuple(self.type(v.type) for v in o.operands),
            result_types=tuple(self.type(v.type) for v in o.results),
            attrs=attrs,
            regions=tuple([self.region(r) for r in o.regions]),
            loc=self.loc(o.location),
            successors=succ,
        )

    def module(self, mod_op, chunk_line: int) -> Module:
        mod_op = mod_op.operation
        attrs = self.op_attrs(mod_op)
        funcs: dict[str, Func] = {}
        nested: dict[str, Module] = {}
        meshes: dict[str, Mesh] = {}
        for o in mod_op.regions[0].blocks[0].operations:
            o = o.operation
            if o.name == "func.func":
                fa = self.op_attrs(o)
                params, results = fa.get("function_type", ((), ()))
                name = fa["sym_name"]
                body = self.region(o.regions[0]) if len(o.regions[0].blocks) else Region(())
                funcs[name] = Func(
                    name=name,
                    param_types=params,
                    result_types=results,
                    body=body,
                    visibility=fa.get("sym_visibility", "public"),
                    loc=self.loc(o.location),
                    attrs=fa,
                )
            elif o.name == "builtin.module":
                sub = self.module(o, chunk_line)
                nested[sub.name or f"module{len(nested)}"] = sub
            elif o.name == "sdy.mesh":
                ma = self.op_attrs(o)
                meshes[ma["sym_name"]] = ma["mesh"]
        return Module(
            funcs=funcs,
            attrs=attrs,
            name=attrs.get("sym_name"),
            source=self.path,
            line=chunk_line,
            nested=nested,
            meshes=meshes,
        )


def lower_module(mod, chunk: Chunk) -> Module:
    """Program objects of a parsed chunk (the lowering recurses per nested
    region; deep regions are lowered on a thread with a large stack)."""
    st = _iree_state if _is_iree_module(mod) else _bindings()
    with st["ctx"]:
        low = _Lowerer(chunk.path, st, chunk.line - 1 if chunk.data is None else 0, chunk)
        m = low.module(mod.operation, chunk.line)
        # the chunk's own text (no copy): its users rewrite check sugar as they parse it
        m.text = str(mod) if chunk.data is not None else (chunk.text or "")
        return m


def parse_attribute(text: str, path: str = "<args>"):
    """Parse an attribute written in MLIR syntax (e.g. the ``--args`` list of
    a RUN line) and decode it like op attributes."""
    st = _bindings()
    with st["ctx"]:
        try:
            a = st["ir"].Attribute.parse(text)
        except Exception as e:
            raise ParseError(f"{path}: error: cannot parse attribute {text[:80]!r}: {e}") from None
        return _Lowerer(path).attr(a)



# --------------------------------------------------------------------------- #
# Programs for other backends (reference interpreter, XLA, ...)
# --------------------------------------------------------------------------- #

ENTRY_ALIAS = "__conform_entry"


def _is_check_op(o) -> bool:
    if o.name.startswith("check."):
        return True
    if o.name == "stablehlo.custom_call" and "call_target_name" in o.attributes:
        target = _state["ir"].StringAttr(o.attributes["call_target_name"]).value
        return target.startswith("check.")
    return False


def prepare_entry(text: str, entry: str, strip_checks: bool = False, keep: frozenset[str] | None = None,
                  grid: tuple[int, int] | None = None) -> tuple[str, list[tuple[str, int]]]:
    """Module text (no locations) with function ``entry`` renamed to
    ``__conform_entry`` (and any other ``@main`` to ``__conform_main``) so a
    wrapper ``@main`` can be added. With ``strip_checks`` every check op is
    removed; those in the entry function's body become its results (their
    operands, in order) and ``(name, operand count)`` of each is returned.
    ``keep``: the functions to keep (the others are erased); ``grid``:
    ``(replicas, partitions)`` written as the module's ``mhlo.num_replicas``
    and ``mhlo.num_partitions`` (spec.md#parallel-execution)."""
    st = _bindings()
    ir = st["ir"]
    checks: list[tuple[str, int]] = []
    with st["ctx"], ir.Location.unknown():
        mod = ir.Module.parse(_sugar_free(text))
        body = mod.body
        funcs = {ir.StringAttr(o.attributes["sym_name"]).value: o.operation
                 for o in body.operations if o.operation.name == "func.func"}
        if entry not in funcs:
            raise ParseError(f"no function @{entry} in module")
        if keep is not None:
            for name in [n for n in funcs if n not in keep and n != entry]:
                funcs.pop(name).erase()
        if grid is not None:
            i32 = ir.IntegerType.get_signless(32)
            mod.operation.attributes["mhlo.num_replicas"] = ir.IntegerAttr.get(i32, grid[0])
            mod.operation.attributes["mhlo.num_partitions"] = ir.IntegerAttr.get(i32, grid[1])
        renames = [(entry, ENTRY_ALIAS)]
        if "main" in funcs and entry != "main":
            renames.append(("main", "__conform_main"))
        for old, new in renames:
            ir.SymbolTable.replace_all_symbol_uses(old, new, mod.operation)
            ir.SymbolTable.set_symbol_name(funcs[old], new)
        if strip_checks:
            fop = funcs[entry]
            block = fop.regions[0].blocks[0]
            values = []
            doomed = []
            for o in block.operations:
                o = o.operation
                if _is_check_op(o):
                    checks.append((o.name if o.name != "stablehlo.custom_call" else
                                   ir.StringAttr(o.attributes["call_target_name"]).value, len(o.operands)))
                    values.extend(o.operands)
                    doomed.append(o)
            for f in funcs.values():
                def walk(op):
                    for r in op.regions:
                        for b in r.blocks:
                            for inner in b.operations:
                                inner = inner.operation
                                if _is_check_op(inner) and inner not in doomed:
                                    doomed.append(inner)
                                walk(inner)
                walk(f)
            for o in doomed:
                o.erase()
            ret = list(block.operations)[-1].operation
            with ir.InsertionPoint(ret):
                ir.Operation.create("func.return", operands=values)
            ret.erase()
            ftype = ir.FunctionType(ir.TypeAttr(fop.attributes["function_type"]).value)
            fop.attributes["function_type"] = ir.TypeAttr.get(
                ir.FunctionType.get(list(ftype.inputs), [v.type for v in values]))
            if "res_attrs" in fop.attributes:
                del fop.attributes["res_attrs"]
        return mod.operation.get_asm(enable_debug_info=False), checks


def eval_reference(text: str, args: list[np.ndarray]) -> list[np.ndarray]:
    """Run ``@main`` of ``text`` on the official reference interpreter.

    Only element types the bindings exchange through the buffer protocol may
    cross (bool, standard integers and f16/f32/f64); the interpreter may
    abort the process, so call this in a child process."""
    st = _bindings()
    ir = st["ir"]
    with st["ctx"]:
        mod = ir.Module.parse(text)
        attrs = []
        for a in args:
            a = np.require(np.asarray(a), requirements="C")
            attrs.append(ir.DenseElementsAttr.get(a, signless=a.dtype.kind != "u"))
        outs = st["sh"].eval_module(mod, attrs)
        result = []
        for o in outs:
            ttype = _Lowerer("<result>").type(o.type)
            arr = np.array(o)
            if arr.shape != tuple(ttype.shape):
                arr = np.broadcast_to(arr, ttype.shape).copy()
            result.append(arr.astype(ttype.dtype, copy=False))
        return result


def op_texts(text: str) -> list[str]:
    """Generic-form text (no locations) of every op of every function, in
    the order :func:`lower_module` lowers them (pre-order)."""
    st = _bindings()
    ir = st["ir"]
    out: list[str] = []
    with st["ctx"]:
        mod = ir.Module.parse(_sugar_free(text))

        def walk(op):
            for r in op.regions:
                for b in r.blocks:
                    for inner in b.operations:
                        inner = inner.operation
                        out.append(inner.get_asm(print_generic_op_form=True, enable_debug_info=False))
                        walk(inner)

        for o in mod.body.operations:
            if o.operation.name == "func.func":
                walk(o.operation)
    return out


def refine_shapes(text: str) -> str:
    """Specialise a module whose ``@main`` has static argument types:
    inline, drop unused functions and refine every shape (StableHLO's
    ``stablehlo-refine-shapes`` and ``stablehlo-canonicalize-dynamism``
    passes). Returns the module text without locations."""
    st = _bindings()
    ir = st["ir"]
    if not st.get("passes"):
        st["sh"].register_stablehlo_passes()
        st["passes"] = True
    from jaxlib.mlir import passmanager

    with st["ctx"]:
        mod = ir.Module.parse(text)
        for o in mod.body.operations:
            o = o.operation
            if o.name == "func.func" and ir.StringAttr(o.attributes["sym_name"]).value != "main":
                o.attributes["sym_visibility"] = ir.StringAttr.get("private")
        pm = passmanager.PassManager.parse(
            "builtin.module(inline,symbol-dce,stablehlo-refine-shapes,"
            "func.func(stablehlo-canonicalize-dynamism),stablehlo-refine-shapes,canonicalize)")
        pm.run(mod.operation)
        return mod.operation.get_asm(enable_debug_info=False)


# --------------------------------------------------------------------------- #
# Editing programs (the reducer): text in, text out, verified by the bindings
# --------------------------------------------------------------------------- #

_TERMINATOR_SUFFIXES = (".return", ".yield")
# ops never deleted as dead code: they act on something other than their results
_EFFECTFUL = frozenset({"stablehlo.custom_call", "stablehlo.outfeed", "stablehlo.send", "stablehlo.infeed",
                        "stablehlo.recv", "interpreter.print", "interpreter.probe"})


def _is_terminator_name(name: str) -> bool:
    return name.endswith(_TERMINATOR_SUFFIXES) or name.startswith("cf.")


def _entry_ops(fop) -> list:
    """Every op nested in function op ``fop``, pre-order (the order of
    :func:`stablehlo_conform.program.walk_ops`)."""
    out: list = []

    def walk(op):
        for r in op.regions:
            for b in r.blocks:
                for inner in b.operations:
                    inner = inner.operation
                    out.append(inner)
                    walk(inner)

    walk(fop)
    return out


def _module_funcs(mod) -> dict[str, Any]:
    ir = _state["ir"]
    return {ir.StringAttr(o.operation.attributes["sym_name"]).value: o.operation
            for o in mod.body.operations if o.operation.name == "func.func"}


def _parse_for_edit(text: str, entry: str):
    st = _bindings()
    ir = st["ir"]
    mod = ir.Module.parse(_sugar_free(text))
    funcs = _module_funcs(mod)
    if entry not in funcs:
        raise ParseError(f"no function @{entry} in module")
    return mod, funcs[entry]


def op_inventory(text: str, entry: str = "main") -> list[dict[str, Any]]:
    """One record per op of function ``entry`` (nested ops included,
    pre-order): ``index``, ``name``, ``parent`` (index of the enclosing op,
    None at the top level), ``results`` and ``operands`` (type texts),
    ``used`` (some result has a use), ``terminator``, ``regions``."""
    st = _bindings()
    ir = st["ir"]
    with st["ctx"], ir.Location.unknown():
        mod, fop = _parse_for_edit(text, entry)
        ops = _entry_ops(fop)
        where = {o: i for i, o in enumerate(ops)}
        out = []
        for i, o in enumerate(ops):
            parent = o.parent
            out.append({
                "index": i, "name": o.name,
                "parent": where.get(parent) if parent is not None and parent != fop else None,
                "results": [str(r.type) for r in o.results],
                "operands": [str(v.type) for v in o.operands],
                "used": any(True for r in o.results for _ in r.uses),
                "terminator": _is_terminator_name(o.name), "regions": len(o.regions),
            })
        return out


def count_ops(text: str) -> int:
    """Ops of every function of a module, terminators not counted."""
    st = _bindings()
    ir = st["ir"]
    with st["ctx"], ir.Location.unknown():
        mod = ir.Module.parse(_sugar_free(text))
        return sum(1 for f in _module_funcs(mod).values() for o in _entry_ops(f)
                   if not _is_terminator_name(o.name))


def dense_attr(a: np.ndarray, type_text: str):
    """A DenseElementsAttr of ``a`` for a tensor type (in the current context)."""
    ir = _state["ir"]
    t = ir.Type.parse(type_text)
    a = np.require(np.asarray(a), requirements="C")
    if a.dtype.kind == "b":
        return ir.DenseElementsAttr.get(a.astype(np.bool_), type=t)
    if a.dtype.kind == "V":  # ml_dtypes: bf16 and f8 cross as their bit patterns, sub-byte types do not
        el = ir.ShapedType(t).element_type
        width = ir.FloatType(el).width if _isa(el, ir.FloatType) else 0
        if width != a.dtype.itemsize * 8 or width not in (8, 16):
            raise ParseError(f"values of type {type_text} cannot become a constant")
        return ir.DenseElementsAttr.get(a.view(np.uint8 if width == 8 else np.uint16), type=t)
    return ir.DenseElementsAttr.get(a, signless=a.dtype.kind != "u", type=t)


def _set_function_type(fop, block) -> None:
    ir = _state["ir"]
    ret = list(block.operations)[-1].operation
    fop.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(
        [a.type for a in block.arguments], [v.type for v in ret.operands]))
    for name in ("arg_attrs", "res_attrs"):
        if name in fop.attributes:
            del fop.attributes[name]


def _replace_return(block, values) -> None:
    ir = _state["ir"]
    ret = list(block.operations)[-1].operation
    with ir.InsertionPoint(ret):
        ir.Operation.create(ret.name, operands=list(values))
    ret.erase()


def _clone_region_body(body_block, before, mapping: dict) -> list:
    """Clone the ops of ``body_block`` (but its terminator) before op
    ``before``, block arguments and values mapped by ``mapping``; returns
    the terminator's operands, mapped."""
    ir = _state["ir"]
    ops = [o.operation for o in body_block.operations]
    for o in ops[:-1]:
        c = o.clone(ip=ir.InsertionPoint(before)).operation
        # operands of the clone and of every op nested in it
        todo = [c]
        while todo:
            x = todo.pop()
            for old, new in mapping.items():
                x.replace_uses_of_with(old, new)
            for r in x.regions:
                for b in r.blocks:
                    todo.extend(i.operation for i in b.operations)
        for r_old, r_new in zip(o.results, c.results):
            mapping[r_old] = r_new
    return [mapping.get(v, v) for v in ops[-1].operands]


def _dce(fop) -> None:
    """Erase ops (anywhere in ``fop``) none of whose results is used."""
    changed = True
    while changed:
        changed = False
        for o in reversed(_entry_ops(fop)):
            if _is_terminator_name(o.name) or o.name in _EFFECTFUL or not len(o.results):
                continue
            if any(True for r in o.results for _ in r.uses):
                continue
            o.erase()
            changed = True


def edit_module(text: str, edits: list[tuple], entry: str = "main") -> tuple[str, list[tuple]]:
    """Apply ``edits`` to function ``entry`` of a module, delete ops no
    result depends on and arguments nothing uses, verify, and return the
    module text with the provenance of each argument of the edited entry:
    ``("arg", i)`` (the entry's argument i before the edits) or ``("op", k,
    j)`` (result j of op k, an op that became an argument).

    Ops are named by their index in :func:`op_inventory` of ``text``.
    Edits: ``("keep_results", [i, ...])``; ``("results_of", k)`` (return op
    k's results instead); ``("to_arg", k)``; ``("to_const", k, [arrays])``;
    ``("to_operand", k, j)`` (op k's only result replaced by its operand
    j); ``("passthrough", k, j)`` (while op k's body returns its argument j
    unchanged); ``("drop_carried", k, j)`` (while op k without its
    loop-carried value j, which nothing uses); ``("unroll", k, n)`` (while op k replaced by n copies of its
    body); ``("inline",)`` (inline every ``func.call``); ``("prune",)`` (erase
    every function the entry does not reach through symbol references); ``("rename", old,
    new)``; ``("reshape", {old type text: new type text})`` (every value and
    splat constant of a type takes another). Raises :class:`ParseError` when
    the result does not verify.
    """
    st = _bindings()
    ir = st["ir"]
    with st["ctx"], ir.Location.unknown():
        mod, fop = _parse_for_edit(text, entry)
        ops = _entry_ops(fop)
        block = fop.regions[0].blocks[0]
        provenance: dict[Any, tuple] = {a: ("arg", i) for i, a in enumerate(block.arguments)}
        try:
            for e in edits:
                _apply_edit(mod, fop, block, ops, e, provenance)
            _dce(fop)
            for i in range(len(block.arguments) - 1, -1, -1):
                a = block.arguments[i]
                if not any(True for _ in a.uses):
                    block.erase_argument(i)
            _set_function_type(fop, block)
            if not mod.operation.verify():
                raise ParseError("the edited module does not verify")
        except ir.MLIRError as e:
            raise ParseError(_diagnostics(e, "<edit>")[0]) from None
        except (ValueError, TypeError, IndexError, RuntimeError) as e:
            raise ParseError(f"edit failed: {e}") from None
        args = [provenance.get(a, ("?",)) for a in block.arguments]
        return mod.operation.get_asm(enable_debug_info=False), args


def _apply_edit(mod, fop, block, ops, e, provenance) -> None:
    ir = _state["ir"]
    kind = e[0]
    if kind == "keep_results":
        ret = list(block.operations)[-1].operation
        values = list(ret.operands)
        _replace_return(block, [values[i] for i in e[1]])
    elif kind == "results_of":
        if ops[e[1]].parent != fop:
            raise ValueError("only an op of the function's own body can give its results")
        _replace_return(block, list(ops[e[1]].results))
    elif kind == "to_arg":
        o = ops[e[1]]
        for j, r in enumerate(o.results):
            a = block.add_argument(r.type, ir.Location.unknown())
            provenance[a] = ("op", e[1], j)
            r.replace_all_uses_with(a)
        o.erase()
    elif kind == "to_const":
        o = ops[e[1]]
        with ir.InsertionPoint(o):
            for r, v in zip(o.results, e[2]):
                c = ir.Operation.create("stablehlo.constant", results=[r.type],
                                        attributes={"value": dense_attr(v, str(r.type))})
                r.replace_all_uses_with(c.results[0])
        o.erase()
    elif kind == "to_operand":
        o = ops[e[1]]
        o.results[0].replace_all_uses_with(o.operands[e[2]])
        o.erase()
    elif kind == "passthrough":
        body = ops[e[1]].regions[1].blocks[0]
        ret = list(body.operations)[-1].operation
        values = list(ret.operands)
        values[e[2]] = body.arguments[e[2]]
        _replace_return(body, values)
    elif kind == "drop_carried":
        _drop_carried(ops[e[1]], e[2])
    elif kind == "unroll":
        o = ops[e[1]]
        values = list(o.operands)
        body = o.regions[1].blocks[0]
        for _ in range(e[2]):
            values = _clone_region_body(body, o, dict(zip(body.arguments, values)))
        for r, v in zip(o.results, values):
            r.replace_all_uses_with(v)
        o.erase()
    elif kind == "inline":
        _inline_calls(mod, fop)
    elif kind == "prune":
        _prune_functions(mod, fop)
    elif kind == "rename":
        funcs = _module_funcs(mod)
        ir.SymbolTable.replace_all_symbol_uses(e[1], e[2], mod.operation)
        ir.SymbolTable.set_symbol_name(funcs[e[1]], e[2])
    elif kind == "reshape":
        _retype(fop, block, e[1])
    else:
        raise ValueError(f"unknown edit {kind!r}")


def _drop_carried(o, j: int) -> None:
    """Rebuild while op ``o`` without its loop-carried value ``j``, which
    nothing may use: not its result, not the condition, and in the body
    only the terminator, at position ``j``."""
    ir = _state["ir"]
    cond, body = (r.blocks[0] for r in o.regions)
    body_ret = list(body.operations)[-1].operation
    uses = [u.owner for u in body.arguments[j].uses]
    if (any(True for _ in o.results[j].uses) or any(True for _ in cond.arguments[j].uses)
            or any(u != body_ret for u in uses)):
        raise ValueError(f"loop-carried value {j} is in use")
    keep = [i for i in range(len(o.operands)) if i != j]
    new = ir.Operation.create(o.name, results=[o.results[i].type for i in keep],
                              operands=[o.operands[i] for i in keep], regions=2, ip=ir.InsertionPoint(o))
    values = list(body_ret.operands)
    _replace_return(body, [values[i] for i in keep])
    for old_block, region in zip((cond, body), new.regions):
        block = ir.Block.create_at_start(region, [old_block.arguments[i].type for i in keep])
        for n, i in enumerate(keep):
            old_block.arguments[i].replace_all_uses_with(block.arguments[n])
        for inner in [x.operation for x in old_block.operations]:
            block.append(inner)
    for n, i in enumerate(keep):
        o.results[i].replace_all_uses_with(new.results[n])
    o.erase()


def _inline_calls(mod, fop) -> None:
    """Replace every ``func.call`` in ``fop`` by the callee's body (calls
    brought in by a body too, up to a depth), then erase functions nothing
    references any more."""
    ir = _state["ir"]
    funcs = _module_funcs(mod)
    for _ in range(32):
        calls = [o for o in _entry_ops(fop) if o.name == "func.call"]
        if not calls:
            break
        for c in calls:
            callee = funcs[ir.FlatSymbolRefAttr(c.attributes["callee"]).value]
            body = callee.regions[0].blocks[0]
            values = _clone_region_body(body, c, dict(zip(body.arguments, c.operands)))
            for r, v in zip(c.results, values):
                r.replace_all_uses_with(v)
            c.erase()
    entry = ir.StringAttr(fop.attributes["sym_name"]).value
    changed = True
    while changed:
        changed = False
        tops = [o.operation for o in mod.body.operations]
        for f in tops:
            if f.name != "func.func" or ir.StringAttr(f.attributes["sym_name"]).value == entry:
                continue
            ref = "@" + ir.StringAttr(f.attributes["sym_name"]).value
            if not any(re.search(re.escape(ref) + r"\b", str(o)) for o in tops if o != f):
                f.erase()
                changed = True
                break


def _prune_functions(mod, fop) -> None:
    """Erase every ``func.func`` that ``fop`` does not reference, directly
    or through the functions it references (calls, composites, reducers)."""
    ir = _state["ir"]
    funcs = _module_funcs(mod)
    entry = ir.StringAttr(fop.attributes["sym_name"]).value
    keep, todo = {entry}, [entry]
    while todo:
        text = str(funcs[todo.pop()])
        for name in funcs:
            if name not in keep and re.search("@" + re.escape(name) + r"(?![\w.$-])", text):
                keep.add(name)
                todo.append(name)
    for name, f in funcs.items():
        if name not in keep:
            f.erase()


def _retype(fop, block, mapping: dict[str, str]) -> None:
    """Give every value of a type in ``mapping`` the mapped type; splat
    constants follow (other constants make the edit fail)."""
    ir = _state["ir"]
    new = {k: ir.Type.parse(v) for k, v in mapping.items()}

    def fix(v) -> None:
        t = new.get(str(v.type))
        if t is not None:
            v.set_type(t)

    for a in block.arguments:
        fix(a)
    for o in _entry_ops(fop):
        for r in o.regions:
            for b in r.blocks:
                for a in b.arguments:
                    fix(a)
        for r in o.results:
            t = new.get(str(r.type))
            if t is None:
                continue
            if o.name == "stablehlo.constant":
                old = ir.DenseElementsAttr(o.attributes["value"])
                if not old.is_splat:
                    raise ValueError("a constant that is not a splat cannot change its shape")
                o.attributes["value"] = ir.DenseElementsAttr.get_splat(t, old.get_splat_value())
            r.set_type(t)


def load(path_or_text, split: bool = False) -> list:
    """Parse a file path (text, bytecode or portable artifact), MLIR text or
    bytes into program modules."""
    if isinstance(path_or_text, bytes):
        return [load_bytes(path_or_text)]
    p = Path(str(path_or_text))
    if "\n" not in str(path_or_text) and p.exists():
        return load_file(p, split=split)
    return load_text(str(path_or_text), split=split)
