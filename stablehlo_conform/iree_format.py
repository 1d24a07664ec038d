"""IREE's test format, rewritten into forms the bindings' context registers.

IREE's end-to-end tests are zero-argument functions built from a few ops of
IREE's own dialects, none of which jaxlib's context knows:

- ``util.unfoldable_constant ATTR : T`` — a constant the compiler may not
  fold. A tensor becomes ``stablehlo.constant`` followed by
  ``stablehlo.optimization_barrier`` (still a constant's value, but one no
  backend may fold into its users); a scalar becomes ``arith.constant``.
- ``flow.tensor.dynamic_constant ATTR : T -> D`` — a static constant seen
  through a dynamic type: the same constant and barrier, then
  ``stablehlo.dynamic_reshape`` to ``D`` with the constant's shape (which
  backends that need static shapes can refine).
- ``util.optimization_barrier %a, ... : T, ...`` — ``stablehlo.optimization_barrier``
  when every operand is a tensor, else the generic form of the same op (an
  identity kernel).
- ``ml_program.global [private] [mutable] @g(VALUE : T) : T`` (a module
  global, as IREE's tests use them): a private function ``@g`` returning the
  initial value; ``ml_program.global_load[_const] @g : T`` and
  ``ml_program.global_store @g = %v : T`` become generic ops naming ``@g``
  (kernels in :mod:`stablehlo_conform.kernels.iree_check`: the first load
  calls ``@g``, a store replaces the value for the rest of the run).
- IREE's ``check`` ops, whose syntax puts operands in parentheses:
  ``check.expect_eq(%a, %b) : T``, ``check.expect_eq_const(%a, dense<..> : T) : T``,
  ``check.expect_almost_eq[_const](..., atol A, rtol R) : T``,
  ``check.expect_true(%s) : i32``, ``check.expect_false``, ``check.expect_all_true``.
  They become generic ``"check.iree_<name>"`` ops (atol/rtol as attributes),
  names distinct from the StableHLO check ops because IREE's semantics differ
  (see :mod:`stablehlo_conform.kernels.iree_check`). The older positional
  tolerance, ``check.expect_almost_eq_const(%a, dense<..> : T, 1.0e-3) : T``,
  is IREE's absolute tolerance and becomes ``atol``.
- Attributes in the spelling of StableHLO before they became ``array<i64>``
  (``dimensions = dense<1> : tensor<1xi64>``, ``window_strides = dense<1> :
  tensor<2xi64>``, ...; see :data:`ARRAY_ATTRS`): the same values as
  ``array<i64: ...>``, the form the bindings' StableHLO verifies. IREE's
  older tests are written that way; 2-D attributes (``padding``) are still
  dense elements and are left alone.

Every rewrite keeps line numbers: a statement spanning several lines is
replaced on its first line, the others are left empty, and the extra ops of
a rewrite share that line. A constant's statement may span lines anywhere
(``flow.tensor.dynamic_constant`` alone on its line, the attribute on the
next; the type after a line break): it ends where its brackets close and its
type (and, for a dynamic constant, ``-> D``) is complete. This module is
plain text processing.

It also splits a module into its functions (:func:`function_spans`), so
that a file of many tests in one module, as IREE writes them, can name every
test when one of them does not parse.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from .types import split_top_level

# The patterns, compiled on first use (:func:`_pattern`): most texts hold no IREE construct,
# and compiling them all takes about 2 ms of a process's first program.
_PATTERNS = {
    "stmt": r"^(?P<indent>\s*)(?P<lhs>%[\w$.#:]+(?:\s*,\s*%[\w$.#:]+)*\s*=\s*)?"
            r"(?P<op>check\.expect_[a-z_]+(?=\s*[<(])|util\.unfoldable_constant\b|flow\.tensor\.dynamic_constant\b"
            r"|util\.optimization_barrier\b|ml_program\.global(?:_load(?:_const)?|_store)?\b)(?P<rest>.*)$",
    "global": r"^(?:(?:private|public|nested)\s+)?(?:mutable\s+)?@(?P<name>[\w$.\-]+)\s*"
              r"\((?P<init>.*)\)\s*:\s*(?P<ty>tensor<.*>)\s*$",
    "func": r"^\s*func\.func\s+(?:(?P<vis>public|private|nested)\s+)?@(?P<name>[\w$.\-]+)\s*\((?P<args>\)?)",
    "float": r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$",
    "new_stmt": r"^\s*(?:%[\w$.#:]+(?:\s*,\s*%[\w$.#:]+)*\s*=|return\b|func\.|\}|\^)",
}
CONSTANT_OPS = ("util.unfoldable_constant", "flow.tensor.dynamic_constant")
# attributes of StableHLO ops that are ``array<i64>`` now and were 1-D ``dense`` i64 tensors before
ARRAY_ATTRS = ("broadcast_dimensions", "broadcast_sizes", "dimensions", "permutation", "start_indices",
               "limit_indices", "strides", "slice_sizes", "edge_padding_low", "edge_padding_high",
               "interior_padding", "window_strides", "window_dimensions", "window_dilations", "base_dilations",
               "lhs_dilation", "rhs_dilation", "fft_length")
_PATTERNS["dense_array"] = (r"\b(?P<name>" + "|".join(ARRAY_ATTRS) + r")\s*=\s*dense<(?P<value>[^<>]*)>\s*:\s*"
                            r"tensor<(?P<n>\d+)xi64>")


@functools.cache
def _pattern(name: str) -> re.Pattern:
    return re.compile(_PATTERNS[name])


IREE_CHECKS = ("expect_eq", "expect_eq_const", "expect_almost_eq", "expect_almost_eq_const",
               "expect_true", "expect_false", "expect_all_true")
PREFIX = "check.iree_"
TEMP = "%__iree"


def _code(line: str) -> str:
    """``line`` without its ``//`` comment (outside string literals)."""
    in_str = False
    for i, ch in enumerate(line):
        if ch == '"' and (i == 0 or line[i - 1] != "\\"):
            in_str = not in_str
        elif not in_str and ch == "/" and line.startswith("//", i):
            return line[:i]
    return line


def nesting(text: str) -> int:
    """Bracket depth change over ``text`` (``->`` is not a bracket)."""
    depth = 0
    in_str = False
    prev = ""
    for ch in text:
        if ch == '"' and prev != "\\":
            in_str = not in_str
        elif not in_str:
            if ch in "<([{":
                depth += 1
            elif ch in ")]}" or (ch == ">" and prev != "-"):
                depth -= 1
        prev = ch
    return depth


def _last_colon(text: str) -> int:
    """Index of the last ``:`` at bracket depth 0, or -1."""
    depth = 0
    cut = -1
    prev = ""
    for i, ch in enumerate(text):
        if ch in "<([{":
            depth += 1
        elif ch in ")]}" or (ch == ">" and prev != "-"):
            depth -= 1
        elif ch == ":" and depth == 0:
            cut = i
        prev = ch
    return cut


def _closing(text: str, start: int) -> int:
    """Index of the bracket closing the one at ``start``."""
    depth = 0
    prev = ""
    for i in range(start, len(text)):
        ch = text[i]
        if ch in "<([{":
            depth += 1
        elif ch in ")]}" or (ch == ">" and prev != "-"):
            depth -= 1
            if depth == 0:
                return i
        prev = ch
    return -1


class _Rewriter:
    def __init__(self) -> None:
        self.count = 0

    def temp(self) -> str:
        self.count += 1
        return f"{TEMP}{self.count}"

    def statement(self, m: re.Match) -> str | None:
        op, rest, lhs = m.group("op"), m.group("rest").strip(), (m.group("lhs") or "").strip()
        if op.startswith("check."):
            return self.check(op[len("check."):], rest)
        if op.startswith("ml_program."):
            return self.ml_program(op, lhs, rest)
        if not lhs:
            return None
        if op == "util.optimization_barrier":
            return self.barrier(lhs, rest)
        return self.constant(op, lhs, rest)

    def check(self, name: str, rest: str) -> str | None:
        if name not in IREE_CHECKS:
            return None
        if rest.startswith("<"):  # an explicit device: check.expect_eq<%device>(...)
            end = _closing(rest, 0)
            rest = rest[end + 1:].lstrip()
        if not rest.startswith("("):
            return None
        end = _closing(rest, 0)
        inner, tail = rest[1:end], rest[end + 1:].strip()
        attrs: list[str] = []
        if tail.startswith("{"):
            close = _closing(tail, 0)
            extra = tail[1:close].strip()
            if extra:
                attrs.append(extra)
            tail = tail[close + 1:].strip()
        if not tail.startswith(":"):
            return None
        ty = tail[1:].strip()
        operands = []
        for part in split_top_level(inner):
            word = part.split(None, 1)
            if part.startswith("%"):
                operands.append(part)
            elif len(word) == 2 and word[0] in ("atol", "rtol"):
                attrs.append(f"{word[0]} = {_float_attr(word[1])} : f64")
            elif name.startswith("expect_almost_eq") and _pattern("float").match(part):
                attrs.append(f"atol = {_float_attr(part)} : f64")  # the older positional (absolute) tolerance
            else:
                attrs.append(f"value = {part}")
        attr_text = " {" + ", ".join(attrs) + "}" if attrs else ""
        types = ", ".join([ty] * len(operands))
        return f'"{PREFIX}{name}"({", ".join(operands)}){attr_text} : ({types}) -> ()'

    def constant(self, op: str, lhs: str, rest: str) -> str | None:
        dynamic = None
        if op == "flow.tensor.dynamic_constant":
            arrow = rest.rfind("->")
            if arrow < 0:
                return None
            rest, dynamic = rest[:arrow].strip(), rest[arrow + 2:].strip()
        cut = _last_colon(rest)
        if cut < 0:
            return None
        value, ty = rest[:cut].strip(), re.sub(r"^tensor\s+<", "tensor<", rest[cut + 1:].strip())
        if not ty.startswith("tensor<"):
            return None if dynamic else f"{lhs} arith.constant {value} : {ty}"
        c, b = self.temp(), self.temp()
        out = f"{c} = stablehlo.constant {value} : {ty}  "
        if dynamic is None:
            return out + f"{lhs} stablehlo.optimization_barrier {c} : {ty}"
        dims = re.findall(r"(\d+)x", ty[len("tensor<"):])
        shape = f"dense<[{', '.join(dims)}]> : tensor<{len(dims)}xi64>"
        s = self.temp()
        return out + (f"{b} = stablehlo.optimization_barrier {c} : {ty}  {s} = stablehlo.constant {shape}  "
                      f"{lhs} stablehlo.dynamic_reshape {b}, {s} : ({ty}, tensor<{len(dims)}xi64>) -> {dynamic}")

    def ml_program(self, op: str, lhs: str, rest: str) -> str | None:
        if op == "ml_program.global":
            m = _pattern("global").match(rest)
            if m is None or lhs or _last_colon(m.group("init")) < 0:
                return None
            v, ty = self.temp(), m.group("ty")
            return (f"func.func private @{m.group('name')}() -> {ty} {{ {v} = stablehlo.constant {m.group('init')}  "
                    f"func.return {v} : {ty} }}")
        if op == "ml_program.global_store":
            m = re.match(r"^@(?P<name>[\w$.\-]+)\s*=\s*(?P<value>%[\w$.#:]+)\s*:\s*(?P<ty>.+)$", rest)
            if m is None or lhs:
                return None
            return (f'"ml_program.global_store"({m.group("value")}) {{global = @{m.group("name")}}} : '
                    f'({m.group("ty")}) -> ()')
        m = re.match(r"^@(?P<name>[\w$.\-]+)\s*:\s*(?P<ty>.+)$", rest)
        if m is None or not lhs:
            return None
        return f'{lhs} "{op}"() {{global = @{m.group("name")}}} : () -> {m.group("ty")}'

    def barrier(self, lhs: str, rest: str) -> str | None:
        cut = _last_colon(rest)
        if cut < 0:
            return None
        operands, types = rest[:cut].strip(), split_top_level(rest[cut + 1:])
        if all(t.startswith("tensor<") for t in types):
            return f"{lhs} stablehlo.optimization_barrier {operands} : {', '.join(types)}"
        sig = ", ".join(types)
        return f'{lhs} "util.optimization_barrier"({operands}) : ({sig}) -> ({sig})'


def _float_attr(text: str) -> str:
    """A float literal MLIR accepts as an f64 attribute (``1`` -> ``1.0``)."""
    text = text.strip()
    try:
        r = repr(float(text))
    except ValueError:
        return text
    if "e" in r and "." not in r:
        mantissa, exponent = r.split("e")
        r = f"{mantissa}.0e{exponent}"
    return r


def _incomplete(op: str, stmt: str) -> bool:
    """True for a constant's statement whose type (for a dynamic constant:
    ``-> D``) is still to come on a later line."""
    if op not in CONSTANT_OPS:
        return False
    rest = stmt.split(op, 1)[1]
    if op == "flow.tensor.dynamic_constant":
        arrow = rest.rfind("->")
        if arrow < 0 or not rest[arrow + 2:].strip():
            return True
        rest = rest[:arrow]
    cut = _last_colon(rest)
    return cut < 0 or not rest[:cut].strip() or not rest[cut + 1:].strip()


def _array_attr(m: re.Match) -> str:
    value, n = m.group("value").strip(), int(m.group("n"))
    if value.startswith("["):
        items = [v.strip() for v in value[1:-1].split(",") if v.strip()]
    else:
        items = [value] * n if value else []
    if len(items) != n:
        return m.group(0)
    return f"{m.group('name')} = array<i64" + (f": {', '.join(items)}>" if items else ">")


def upgrade_array_attrs(line: str) -> str:
    """``NAME = dense<[..]> : tensor<Nxi64>`` as ``NAME = array<i64: ..>``
    for the attributes of :data:`ARRAY_ATTRS` (code only, not comments)."""
    code = _code(line)
    if "dense<" not in code:
        return line
    return _pattern("dense_array").sub(_array_attr, code) + line[len(code):]


def rewrite(text: str) -> str:
    """IREE's test constructs of ``text`` in forms jaxlib's context parses;
    text without them is returned unchanged. Line numbers are preserved."""
    if "check.expect_" not in text and "util." not in text and "flow." not in text and "ml_program." not in text:
        return text
    lines = [upgrade_array_attrs(ln) for ln in text.split("\n")]
    out: list[str] = []
    rw = _Rewriter()
    i = 0
    while i < len(lines):
        code = _code(lines[i])
        m = _pattern("stmt").match(code)
        if m is None:
            out.append(lines[i])
            i += 1
            continue
        stmt, j = code.rstrip(), i
        while j + 1 < len(lines):
            depth = nesting(stmt)
            if depth <= 0 and not (_incomplete(m.group("op"), stmt) and not _pattern("new_stmt").match(lines[j + 1])):
                break
            j += 1
            stmt += " " + _code(lines[j]).strip()
        new = rw.statement(_pattern("stmt").match(stmt))
        if new is None:
            out.append(lines[i])
            i += 1
            continue
        out.append(m.group("indent") + new)
        out.extend([""] * (j - i))
        i = j + 1
    return "\n".join(out)


# --------------------------------------------------------------------------- #
# Functions of a module, as text
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class FuncSpan:
    name: str
    first: int  # 0-based line of ``func.func``
    last: int  # 0-based line of its closing brace
    is_test: bool  # public and without arguments


def function_spans(text: str) -> list[FuncSpan]:
    """The ``func.func`` definitions of ``text`` with the lines they span."""
    spans: list[FuncSpan] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = _pattern("func").match(lines[i])
        if m is None:
            i += 1
            continue
        depth, j, opened = 0, i, False
        while j < len(lines):
            code = _code(lines[j])
            depth += nesting(code)
            opened = opened or "{" in code
            if opened and depth <= 0:
                break
            j += 1
        is_test = m.group("vis") != "private" and bool(m.group("args"))
        spans.append(FuncSpan(m.group("name"), i, min(j, len(lines) - 1), is_test))
        i = j + 1
    return spans


def function_pieces(text: str) -> list[tuple[str, str]]:
    """One ``(name, text)`` per test function of ``text``: the module with
    every *other* test function's lines emptied (helpers and the module
    around them kept), so each test parses or fails on its own. Empty when
    ``text`` holds fewer than two test functions."""
    spans = function_spans(text)
    # a zero-argument function another one calls is a helper, not a test
    tests = [s for s in spans if s.is_test and len(re.findall(rf"@{re.escape(s.name)}(?![\w$.\-])", text)) == 1]
    if len(tests) < 2:
        return []
    lines = text.split("\n")
    pieces = []
    for keep in tests:
        piece = list(lines)
        for s in tests:
            if s is not keep:
                piece[s.first:s.last + 1] = [""] * (s.last - s.first + 1)
        pieces.append((keep.name, "\n".join(piece)))
    return pieces
