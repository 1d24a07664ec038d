"""The check dialect's custom syntax rewritten into generic op form, in plain text (the bindings
do not register the ``check`` dialect); line numbers kept.

Part of :mod:`stablehlo_conform.frontend`, the one package that imports the bindings.
"""

from __future__ import annotations

import re


from .. import iree_format
from .. import types as T


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
