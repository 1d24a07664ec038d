"""Source chunks: files and text split on ``// -----`` (as ``-split-input-file`` splits them),
bytecode recognised by its magic number.

Part of :mod:`stablehlo_conform.frontend`, the one package that imports the bindings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path




BYTECODE_MAGIC = b"ML\xefR"
SPLIT_MARK = "// -----"
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
