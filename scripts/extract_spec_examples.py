#!/usr/bin/env python3
"""Turn the examples of the StableHLO specification into conformance tests.

Usage::

    scripts/extract_spec_examples.py [SPEC_PATH] [--rfc PATH ...] [--out testsuite/spec]

Every fenced ``mlir`` block of the spec's "Ops" chapter (and of the "Proposed
Specification" chapter of each RFC) is split into examples: an op statement
with the ``// %name: value`` comments around it. Each example becomes one
zero-argument test function ``@<op>_example_<n>`` in ``<out>/<op>.mlir``:

* inputs (values the statements use but do not define) become
  ``stablehlo.constant`` ops of the type the example's op signature gives them
  (quantized inputs: a constant of the storage type + ``bitcast_convert``;
  tuples: ``stablehlo.tuple`` of constants; tokens: ``stablehlo.after_all``);
* the example's statements are copied verbatim;
* each ``// %result: value`` comment becomes ``check.expect_eq_const`` (integers,
  booleans, quantized storage) or ``check.expect_almost_eq_const`` (floats,
  complex);
* examples on a process grid (``%x@(replica, partition)``) run the statements
  in a private function under ``interpreter.run_parallel``, like the official
  interpreter tests; ``infeed_queue[i]`` comments become its ``infeed``.

Values use the spec's notation (nested brackets, ``true``/``false``, complex as
``(re, im)``, hex bit patterns, ``inf``/``nan``) and are translated into MLIR
dense literals (non-finite floats as hex bit patterns). Examples that cannot
become a test are listed with the reason in ``<out>/INDEX.md``, next to every
generated test. A small table of errata corrects typos of the spec text (each
correction is printed in the index). The output is deterministic.

See spec.md#ops.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SPEC = REPO / ".." / "shared" / "stablehlo" / "docs" / "spec.md"
DEFAULT_SEEDS = REPO / ".." / "shared" / "seeds"
RFC_TITLE = re.compile(r"^# \[RFC\].*\btan", re.I | re.M)

# --------------------------------------------------------------------------- #
# Errata and examples that cannot be tests
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class Erratum:
    source: str  # file name of the source document
    op: str
    old: str  # exact text of the example, replaced by `new`
    new: str
    reason: str


ERRATA: tuple[Erratum, ...] = (
    Erratum(
        "spec.md", "all_reduce",
        '"stablehlo.all_reduce"(%operand0, %operand0)',
        '"stablehlo.all_reduce"(%operand0, %operand1)',
        "the op is applied to %operand0 twice, but the example gives %operand1 values "
        "and expects %result1 = their sum: the second operand is %operand1",
    ),
    Erratum(
        "spec.md", "collective_broadcast", "(tensor1x2xi64>)", "(tensor<1x2xi64>)",
        "type typo `tensor1x2xi64>` in the op signature",
    ),
    Erratum(
        "spec.md", "cholesky", "} : (tensor<3x3xf32>) -> tensor<3x3xf64>",
        "} : (tensor<3x3xf32>) -> tensor<3x3xf32>",
        "result type f64 contradicts (C1) baseline_type(a) = baseline_type(result): result is f32",
    ),
    Erratum(
        "spec.md", "divide", "// %result: [5.66666651, -5.66666651, -5.66666651, 5.66666651]",
        "// %result: [5.7, -5.7, -5.7, 5.7]",
        "the expected values are 17/3 (5.66666651), but the inputs are 17.1 and 3.0: "
        "17.1 / 3.0 = 5.7 (the value the official interpreter test of divide expects)",
    ),
    Erratum(
        "spec.md", "dynamic_conv", "input_spatial_dimensions = [0, 1],", "input_spatial_dimensions = [1, 2],",
        "input_spatial_dimensions = [0, 1] repeats the batch dimension 0 (constraint: the input "
        "dimension numbers are unique); the layout is [b, 0, 1, f], spatial dimensions [1, 2]",
    ),
    Erratum(
        "spec.md", "is_finite", "(tensor<7xf64)", "(tensor<7xf64>)",
        "type typo `tensor<7xf64)` in the op signature",
    ),
    Erratum(
        "spec.md", "negate", "// %operand: (2.5, 0.0)", "// %operand: [(2.5, 0.0)]",
        "complex operand of type tensor<1xcomplex<f32>> written as a scalar (2.5, 0.0)",
    ),
    Erratum(
        "spec.md", "negate", "// %result: [-2.5, -0.0]", "// %result: [(-2.5, -0.0)]",
        "complex result of type tensor<1xcomplex<f32>> written as the list [-2.5, -0.0] "
        "of its components",
    ),
    Erratum(
        "spec.md", "while", "// %init_i: 1", "// %init_i: 0",
        "with %init_i = 1 the loop runs 9 times (%results1 = 9); the expected 10 and 10 need "
        "%init_i = 0, as in the official interpreter test of while",
    ),
    Erratum(
        "spec.md", "power",
        "(tensor<6xf64>, tensor<6xf64>) -> tensor<6xf64>",
        "(tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>",
        "the expected values are those of f32 (10000^10 = 1e40 overflows to inf only in f32; "
        "0.333333343 is 1/3 rounded to f32): the element type is f32, not f64",
    ),
)

# Examples that are never generated, with the reason: (source, op, n-th example
# of that op in that source (1-based)) -> reason.
NOT_TESTABLE: dict[tuple[str, str, int], str] = {
    ("spec.md", "tan", 1): (
        "expected values do not follow from the inputs: in f64 tan(1.57079632) = 1.4717e8 and "
        "tan(4.71238898) = 2.5995e9, while the example lists 1.63312e+16 and 5.44375e+15 "
        "(tan of the f64 values nearest pi/2 and 3pi/2), rounded to 6 digits"
    ),
    ("spec.md", "collective_reduce", 1): (
        "the op has no `computation` region (the expected sums need one, and a region cannot "
        "be reconstructed faithfully) and the text does not parse (no comma after "
        "`has_dynamic_root = false`, type typo `tensor1x2xi64>`)"
    ),
    ("spec.md", "collective_reduce", 2): (
        "the op has no `computation` region (the expected sums need one, and a region cannot "
        "be reconstructed faithfully) and the text does not parse (no comma after "
        "`has_dynamic_root = true`, type typo `tensor1x2xi64>`)"
    ),
}

_QUANT_TYPES = (
    "the bindings (jaxlib) register no quant dialect: `!quant.uniform` types parse only as opaque "
    "types, which stablehlo ops reject (\"must be ranked tensor of per-tensor integer quantized or "
    "per-axis integer quantized values\"), so the translated test (storage constant + "
    "bitcast_convert, as in the official interpreter tests) cannot parse"
)
NOT_TESTABLE.update({
    ("spec.md", "uniform_dequantize", 1): _QUANT_TYPES,
    ("spec.md", "uniform_quantize", 1): _QUANT_TYPES,
    ("spec.md", "uniform_quantize", 2): _QUANT_TYPES,
})

IMPLEMENTATION_DEFINED = {
    "rng": "implementation-defined results (spec.md#rng: the random values are implementation-defined)",
    "rng_bit_generator": "implementation-defined results (spec.md#rng_bit_generator: output and "
    "output_state depend on the implementation-defined bit generator)",
}

# --------------------------------------------------------------------------- #
# Types
# --------------------------------------------------------------------------- #


class Skip(Exception):
    """An example that cannot become a test; the message is the reason."""


FLOAT_FORMATS = {
    "f16": ("float16", 16), "bf16": ("bfloat16", 16), "f32": ("float32", 32), "f64": ("float64", 64),
    "f8E4M3FN": ("float8_e4m3fn", 8), "f8E5M2": ("float8_e5m2", 8), "f8E4M3FNUZ": ("float8_e4m3fnuz", 8),
    "f8E5M2FNUZ": ("float8_e5m2fnuz", 8), "f8E4M3B11FNUZ": ("float8_e4m3b11fnuz", 8),
    "f8E4M3": ("float8_e4m3", 8), "f8E3M4": ("float8_e3m4", 8),
}


@dataclass(frozen=True)
class Elem:
    kind: str  # bool, int, uint, float, complex, quant
    bits: int
    text: str
    storage: str = ""  # quant: storage element type text (e.g. i8)

    @property
    def component(self) -> "Elem":
        """Element type of the parts of a complex type."""
        inner = self.text[len("complex<"):-1]
        return parse_elem(inner)


@dataclass(frozen=True)
class Ty:
    kind: str  # tensor, tuple, token, other
    text: str
    shape: tuple[int, ...] = ()
    elem: Elem | None = None
    items: tuple["Ty", ...] = ()


def code_chars(text: str, i: int = 0):
    """(index, character) of each character of ``text`` from ``i`` on that stands
    outside a string literal; quotes and the arrow ``->`` are left out."""
    in_str = False
    while i < len(text):
        ch = text[i]
        if ch == '"':
            in_str = not in_str
        elif not in_str:
            if text.startswith("->", i):
                i += 2
                continue
            yield i, ch
        i += 1


def split_top(s: str, sep: str = ",") -> list[str]:
    """Split at top-level separators (outside <>, (), [], {} and strings)."""
    out, depth, start = [], 0, 0
    for i, ch in code_chars(s):
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        elif ch == sep and depth == 0:
            out.append(s[start:i].strip())
            start = i + 1
    if s[start:].strip():
        out.append(s[start:].strip())
    return out


def parse_elem(t: str) -> Elem:
    t = t.strip()
    if t == "i1":
        return Elem("bool", 1, t)
    m = re.fullmatch(r"(si|ui|i)(\d+)", t)
    if m:
        return Elem("uint" if m.group(1) == "ui" else "int", int(m.group(2)), t)
    if t in FLOAT_FORMATS:
        return Elem("float", FLOAT_FORMATS[t][1], t)
    m = re.fullmatch(r"complex<(f32|f64)>", t)
    if m:
        return Elem("complex", 2 * int(m.group(1)[1:]), t)
    m = re.fullmatch(r"!quant\.uniform<([iu])(\d+)(?:<[^>]*>)?:.*>", t, re.S)
    if m:
        storage = ("ui" if m.group(1) == "u" else "i") + m.group(2)
        return Elem("quant", int(m.group(2)), t, storage)
    raise Skip(f"element type {t} is not supported by the generator")


def parse_type(t: str) -> Ty:
    t = t.strip()
    if t == "!stablehlo.token":
        return Ty("token", t)
    if t.startswith("tuple<") and t.endswith(">"):
        inner = t[len("tuple<"):-1]
        return Ty("tuple", t, items=tuple(parse_type(x) for x in split_top(inner)))
    m = re.fullmatch(r"tensor<(.*)>", t, re.S)
    if m:
        body = m.group(1)
        dims = []
        while True:
            dm = re.match(r"(\d+|\?)x", body)
            if not dm or body.startswith(("!", "complex")):
                break
            if dm.group(1) == "?":
                raise Skip(f"dynamic shape in {t}")
            dims.append(int(dm.group(1)))
            body = body[dm.end():]
        return Ty("tensor", t, tuple(dims), parse_elem(body))
    return Ty("other", t)


# --------------------------------------------------------------------------- #
# Values in the spec's notation -> MLIR literals
# --------------------------------------------------------------------------- #

_VAL_TOKEN = re.compile(
    r"\s*(?:(?P<p>[\[\](),])|(?P<hex>0[xX][0-9a-fA-F]+)"
    r"|(?P<num>[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
    r"|(?P<word>[+-]?[A-Za-z_][A-Za-z_0-9]*))"
)


def tokenize_value(text: str) -> list[str]:
    toks, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _VAL_TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise Skip(f"cannot read value {text!r}")
        toks.append(m.group(m.lastgroup))
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return toks


def read_value(text: str):
    """Nested lists ([...]), tuples ((...)) and scalar tokens."""
    toks = tokenize_value(text)
    pos = 0

    def item():
        nonlocal pos
        if pos >= len(toks):
            raise Skip(f"truncated value {text!r}")
        tok = toks[pos]
        if tok in "[(":
            close = "]" if tok == "[" else ")"
            pos += 1
            elems = []
            while toks[pos] != close:
                elems.append(item())
                if toks[pos] == ",":
                    pos += 1
                elif toks[pos] != close:
                    raise Skip(f"cannot read value {text!r}")
            pos += 1
            return elems if tok == "[" else tuple(elems)
        if tok in "]),":
            raise Skip(f"cannot read value {text!r}")
        pos += 1
        return tok

    v = item()
    if pos != len(toks):
        raise Skip(f"trailing text in value {text!r}")
    return v


def _float_bits(value: float, elem_text: str) -> str:
    import ml_dtypes
    import numpy as np

    name, bits = FLOAT_FORMATS[elem_text]
    dtype = np.dtype(getattr(np, name)) if hasattr(np, name) else np.dtype(getattr(ml_dtypes, name))
    arr = np.array(value, dtype=np.float64).astype(dtype)
    if np.isnan(value) != np.isnan(arr.astype(np.float64)) or (
        np.isinf(value) and not np.isinf(arr.astype(np.float64))
    ):
        raise Skip(f"{value} is not representable in {elem_text}")
    uint = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[bits]
    return f"0x{int(arr.view(uint)):0{bits // 4}X}"


def float_literal(tok: str, elem: Elem) -> str:
    if not isinstance(tok, str):
        raise Skip(f"expected a {elem.text} number, got {tok!r}")
    low = tok.lower()
    if low.startswith("0x"):
        if len(low) - 2 > elem.bits // 4:
            raise Skip(f"hex value {tok} is wider than {elem.text}")
        return "0x" + tok[2:].upper()
    if low.lstrip("+-") in ("inf", "infinity", "nan"):
        neg = low.startswith("-")
        val = float("nan") if "nan" in low else float("inf")
        if neg and "nan" in low:
            bits = _float_bits(val, elem.text)
            sign = 1 << (elem.bits - 1)
            return f"0x{int(bits, 16) | sign:0{elem.bits // 4}X}"
        return _float_bits(-val if neg else val, elem.text)
    if not re.fullmatch(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", tok):
        raise Skip(f"{tok!r} is not a {elem.text} number")
    tok = tok.lstrip("+")
    mant, _, exp = tok.partition("e") if "e" in tok else tok.partition("E")
    if mant.startswith(".") or mant.startswith("-."):
        mant = mant.replace(".", "0.", 1)
    if "." not in mant:
        mant += ".0"
    elif mant.endswith("."):
        mant += "0"
    return mant + (f"e{exp}" if exp else "")


def int_literal(tok: str, elem: Elem) -> str:
    if not isinstance(tok, str):
        raise Skip(f"expected an integer, got {tok!r}")
    low = tok.lower()
    if low.startswith("0x"):
        v = int(low, 16)
    elif re.fullmatch(r"[+-]?\d+", tok):
        v = int(tok)
    else:
        raise Skip(f"{tok!r} is not an integer of type {elem.text}")
    bits = elem.bits
    lo, hi = (0, (1 << bits) - 1) if elem.kind == "uint" else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    if not lo <= v <= hi:
        raise Skip(f"{tok} is out of range for {elem.text}")
    return str(v)


def scalar_literal(tok, elem: Elem) -> str:
    if elem.kind == "bool":
        if isinstance(tok, str) and tok.lower() in ("true", "false"):
            return tok.lower()
        raise Skip(f"{tok!r} is not a boolean")
    if elem.kind in ("int", "uint"):
        return int_literal(tok, elem)
    if elem.kind == "quant":
        return int_literal(tok, parse_elem(elem.storage))
    if elem.kind == "float":
        return float_literal(tok, elem)
    if elem.kind == "complex":
        if not (isinstance(tok, tuple) and len(tok) == 2):
            raise Skip(f"{tok!r} is not a complex number (re, im)")
        comp = elem.component
        return f"({float_literal(tok[0], comp)}, {float_literal(tok[1], comp)})"
    raise Skip(f"no literal for {elem.text}")


def dense_body(value, ty: Ty) -> str:
    """The text inside ``dense<...>`` for a value of tensor type ``ty``."""
    if ty.kind != "tensor" or ty.elem is None:
        raise Skip(f"value of non-tensor type {ty.text}")

    def walk(v, dims: tuple[int, ...]) -> str:
        if not dims:
            if isinstance(v, list):
                raise Skip(f"value shape does not match {ty.text}")
            return scalar_literal(v, ty.elem)
        if not isinstance(v, list) or len(v) != dims[0]:
            raise Skip(f"value shape does not match {ty.text}")
        return "[" + ", ".join(walk(x, dims[1:]) for x in v) + "]"

    return walk(value, ty.shape)


def _all_hex(v) -> bool:
    if isinstance(v, (list, tuple)):
        return all(_all_hex(x) for x in v)
    return isinstance(v, str) and v.lower().startswith("0x")


def storage_type(ty: Ty) -> str:
    """Tensor type of the storage of a quantized tensor type."""
    dims = "".join(f"{d}x" for d in ty.shape)
    return f"tensor<{dims}{ty.elem.storage}>"


# --------------------------------------------------------------------------- #
# Reading the documents
# --------------------------------------------------------------------------- #


@dataclass
class Block:
    source: str  # file name
    path: Path
    line: int  # line of the first line inside the fence
    lines: list[str]
    op: str | None  # op the block documents, None outside op sections
    section: str


def read_blocks(path: Path, chapter: str) -> list[Block]:
    """Fenced ``mlir`` blocks with the op section they belong to. Op sections are
    the ``### name`` headings of the chapter ``## <chapter>``; other headings inside
    that chapter belong to the op section before them."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    in_chapter = False
    op: str | None = None
    section = ""
    i = 0
    while i < len(lines):
        ln = lines[i]
        if ln.startswith("## "):
            in_chapter = ln[3:].strip() == chapter
            op = None
            section = ln[3:].strip()
        elif ln.startswith("### "):
            section = ln[4:].strip()
            if in_chapter and re.fullmatch(r"[a-z][a-z0-9_]*", section):
                op = section
            elif not in_chapter:
                op = None
        if ln.strip() == "```mlir":
            j = i + 1
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            blocks.append(Block(path.name, path, i + 2, lines[i + 1 : j], op if in_chapter else None,
                                section))
            i = j
        i += 1
    return blocks


# --------------------------------------------------------------------------- #
# Statements
# --------------------------------------------------------------------------- #


def code_part(line: str) -> str:
    """A line without its ``//`` comment (outside strings)."""
    for i, _ in code_chars(line):
        if line.startswith("//", i):
            return line[:i]
    return line


def depth_of(text: str) -> int:
    """Brackets opened minus brackets closed (outside strings, ``->`` ignored)."""
    return sum(1 if ch in "<([{" else -1 for _, ch in code_chars(text) if ch in "<([{>)]}")


@dataclass
class Stmt:
    lines: list[str]  # verbatim
    line: int  # line in the source document

    @property
    def code(self) -> str:
        return " ".join(code_part(x).strip() for x in self.lines if code_part(x).strip())


_DEFS = re.compile(r"^\s*((?:%[\w$.\-]+(?::\d+)?\s*,\s*)*%[\w$.\-]+(?::\d+)?)\s*=(?!=)")


def stmt_defs(code: str) -> list[tuple[str, int]]:
    """(name, result count) defined by a statement: ``%r:2 = ...`` -> [("r", 2)]."""
    m = _DEFS.match(code)
    if not m:
        return []
    out = []
    for part in m.group(1).split(","):
        part = part.strip().lstrip("%")
        name, _, n = part.partition(":")
        out.append((name, int(n) if n else 1))
    return out


def take_statement(lines: list[tuple[int, str]], i: int) -> Stmt:
    """The statement starting at ``lines[i]`` (line number, text): it goes on while
    brackets are open, the text ends with ``=``/``,``/``(``, or the next code line
    starts with ``:``/``->`` (a signature on its own line). Comment lines inside
    a statement are kept."""
    n, ln = lines[i]
    text = code_part(ln).strip()
    depth = depth_of(text)
    j = i
    while True:
        nxt = j + 1
        while nxt < len(lines) and not code_part(lines[nxt][1]).strip():
            nxt += 1
        if nxt >= len(lines):
            break
        following = code_part(lines[nxt][1]).strip()
        if not (depth > 0 or text.endswith(("=", ",", "(")) or following.startswith((":", "->"))):
            break
        j = nxt
        text += " " + following
        depth += depth_of(following)
    return Stmt([x for _, x in lines[i : j + 1]], n)


def _match(text: str, pos: int) -> int:
    """Index of the bracket closing the one at ``pos`` (``->`` ignored)."""
    depth = 0
    for i, ch in code_chars(text, pos):
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
            if depth == 0:
                return i
    return len(text) - 1


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i].isspace():
        i += 1
    return i


def _read_type(text: str, i: int) -> tuple[str, int]:
    """A type (or parenthesized type list) starting at ``i``."""
    i = _skip_ws(text, i)
    if i < len(text) and text[i] == "(":
        j = _match(text, i)
        return text[i : j + 1], j + 1
    j, depth = i, 0
    while j < len(text):
        ch = text[j]
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0 and (ch.isspace() or ch in ",)}"):
            break
        j += 1
    return text[i:j], j


_DEFS_BEFORE = re.compile(r"(%[\w$.\-]+(?::\d+)?(?:\s*,\s*%[\w$.\-]+(?::\d+)?)*)\s*=\s*$")
_CUSTOM = re.compile(
    r"^\s*(?:(?P<defs>%[\w$.\-]+(?::\d+)?(?:\s*,\s*%[\w$.\-]+(?::\d+)?)*)\s*=\s*)?"
    r"(?P<op>[a-z_][a-z0-9_]*\.[a-z0-9_]+)\b(?P<rest>.*)$"
)


def _flat_defs(defs_text: str) -> list[str]:
    out = []
    for part in defs_text.split(","):
        name, _, n = part.strip().lstrip("%").partition(":")
        out.extend([name] if not n or int(n) == 1 else [f"{name}#{k}" for k in range(int(n))])
    return out


def _types_of(text: str) -> list[str]:
    text = text.strip()
    if text.startswith("(") and text.endswith(")") and _match(text, 0) == len(text) - 1:
        return split_top(text[1:-1])
    return [text]


def analyse(code: str) -> tuple[dict[str, str], set[str], list[str]]:
    """(types of values, names defined, names used in order) of example code
    (comments stripped). Generic ops anywhere (also inside regions) give the
    types of their operands and results from their signature; custom-form
    statements (one per line) from their trailing types; block arguments
    from their declaration."""
    types: dict[str, str] = {}
    defined: set[str] = set()
    for m in re.finditer(r'"([a-z_][a-z0-9_]*\.[a-z0-9_.]+)"\s*\(', code):
        open_ = m.end() - 1
        close = _match(code, open_)
        operands = [x.strip() for x in split_top(code[open_ + 1 : close])]
        p = _skip_ws(code, close + 1)
        if code.startswith("<{", p):
            p = _skip_ws(code, _match(code, p) + 1)
        if code.startswith("(", p) and code[_skip_ws(code, p + 1)] == "{":
            p = _skip_ws(code, _match(code, p) + 1)
        if code.startswith("{", p):
            p = _skip_ws(code, _match(code, p) + 1)
        if not code.startswith(":", p):
            continue
        ins, q = _read_type(code, p + 1)
        q = _skip_ws(code, q)
        outs = ""
        if code.startswith("->", q):
            outs, _ = _read_type(code, q + 2)
        operand_types = _types_of(ins) if ins.startswith("(") else []
        result_types = [] if outs in ("", "()") else _types_of(outs)
        for name, ty in zip(operands, operand_types):
            if re.fullmatch(r"%[\w$.\-]+", name):
                types.setdefault(name[1:], ty)
        dm = _DEFS_BEFORE.search(code[: m.start()])
        if dm:
            for name, ty in zip(_flat_defs(dm.group(1)), result_types):
                types.setdefault(name, ty)
    for ln in code.split("\n"):
        cm = _CUSTOM.match(ln)
        if not cm:
            continue
        parts = split_top(cm.group("rest"), ":")
        if len(parts) < 2:
            continue
        tys = split_top(parts[-1])
        operands = [x for x in split_top(":".join(parts[:-1])) if re.fullmatch(r"%[\w$.\-]+", x)]
        results = _flat_defs(cm.group("defs")) if cm.group("defs") else []
        if len(tys) == 1 and "->" not in tys[0]:
            for x in operands:
                types.setdefault(x[1:], tys[0])
            for x in results:
                types.setdefault(x, tys[0])
        elif "->" not in parts[-1]:
            for x, t in zip(operands, tys):
                types.setdefault(x[1:], t)
    for m in re.finditer(r"(%[\w$.\-]+(?::\d+)?(?:\s*,\s*%[\w$.\-]+(?::\d+)?)*)\s*=(?!=)", code):
        for name in _flat_defs(m.group(1)):
            defined.add(name.split("#")[0])
    for m in re.finditer(r"\^\w+\(([^)]*)\)", code):
        for arg in split_top(m.group(1)):
            name, _, ty = arg.partition(":")
            name = name.strip().lstrip("%")
            defined.add(name)
            types.setdefault(name, ty.strip())
    uses = list(dict.fromkeys(m.group(1) for m in re.finditer(r"%([\w$.\-]+)", code)))
    return types, defined, uses


# --------------------------------------------------------------------------- #
# Examples
# --------------------------------------------------------------------------- #

_VALUE_COMMENT = re.compile(
    r"^\s*//\s*(?P<pct>%?)\s*(?P<name>[A-Za-z_][\w$.\-]*|\d+)(?P<idx>#\d+)?"
    r"(?:@\(\s*(?P<r>\d+)\s*,\s*(?P<p>\d+)\s*\))?\s*[:=]\s*(?P<value>.*)$"
)
_QUEUE_COMMENT = re.compile(r"^\s*//\s*infeed_queue\[(?P<i>\d+)\]\s*:\s*(?P<value>.*)$")


@dataclass
class ValueComment:
    name: str
    idx: str
    process: tuple[int, int] | None
    value: str
    line: int
    has_pct: bool


@dataclass
class Example:
    block: Block
    op: str
    stmts: list[Stmt] = field(default_factory=list)
    comments: list[ValueComment] = field(default_factory=list)
    config: dict[str, int] = field(default_factory=dict)
    queues: list[tuple[int, str]] = field(default_factory=list)
    defined: set[str] = field(default_factory=set)
    line: int = 0
    errata: list[str] = field(default_factory=list)
    index: int = 0  # n-th example of its op in its source


def _comment_value(lines: list[tuple[int, str]], k: int, first: str) -> tuple[str, int]:
    """A value starting on comment line k, continued on following comment lines
    while its brackets are open; trailing ``// ...`` remarks are dropped."""
    value = code_part(first).strip()
    j = k
    while depth_of(value) > 0 and j + 1 < len(lines) and lines[j + 1][1].strip().startswith("//"):
        j += 1
        cont = lines[j][1].strip()[2:]
        value += " " + code_part(cont).strip()
    return value, j


def split_examples(block: Block, errata: list[Erratum]) -> list[Example]:
    joined = "\n".join(block.lines)
    applied: list[Erratum] = []
    for e in errata:
        if e.source == block.source and e.op == block.op and e.old in joined:
            joined = joined.replace(e.old, e.new)
            applied.append(e)
    text_lines = joined.split("\n")
    fixed_at: list[tuple[int, str]] = []  # (line, description) of each correction
    for e in applied:
        msg = f"{e.reason} (corrected `{e.old.strip()}` to `{e.new.strip()}`)"
        fixed_at += [(block.line + k, msg) for k, ln in enumerate(text_lines) if e.new in ln]
    numbered = [(block.line + k, ln) for k, ln in enumerate(text_lines)]
    # items: statements and comment lines, in order
    items: list[tuple[str, object]] = []
    k = 0
    while k < len(numbered):
        n, ln = numbered[k]
        s = ln.strip()
        if not s:
            k += 1
            continue
        if s.startswith("//"):
            qm = _QUEUE_COMMENT.match(ln)
            vm = _VALUE_COMMENT.match(ln)
            if qm:
                value, k = _comment_value(numbered, k, qm.group("value"))
                items.append(("queue", (int(qm.group("i")), value)))
            elif vm:
                value, k = _comment_value(numbered, k, vm.group("value"))
                proc = (int(vm.group("r")), int(vm.group("p"))) if vm.group("r") else None
                items.append(("value", ValueComment(vm.group("name"), vm.group("idx") or "", proc, value,
                                                    n, bool(vm.group("pct")))))
            k += 1
            continue
        st = take_statement(numbered, k)
        items.append(("stmt", st))
        k += len(st.lines)
    examples: list[Example] = []
    cur = Example(block, block.op or "")
    pending: list[tuple[str, object]] = []

    def attach(ex: Example, its):
        for kind, obj in its:
            if kind == "value":
                c = obj
                if c.name in ("num_replicas", "num_partitions") and not c.has_pct:
                    try:
                        ex.config[c.name] = int(c.value)
                    except ValueError:
                        pass
                else:
                    ex.comments.append(c)
            elif kind == "queue":
                ex.queues.append(obj)

    for kind, obj in items:
        if kind == "stmt":
            st = obj
            names = {d for d, _ in stmt_defs(st.code)}
            if cur.stmts and names & cur.defined:
                examples.append(cur)
                cur = Example(block, block.op or "")
            attach(cur, pending)
            pending = []
            cur.stmts.append(st)
            cur.defined |= names
            if not cur.line:
                cur.line = st.line
        elif kind == "value" and cur.stmts and resolve(obj.name + obj.idx, cur) is not None:
            attach(cur, [(kind, obj)])
        else:
            pending.append((kind, obj))
    attach(cur, pending)
    if cur.stmts or cur.comments:
        examples.append(cur)
    for ex in examples:
        covered = {c.line for c in ex.comments}
        for st in ex.stmts:
            covered.update(range(st.line, st.line + len(st.lines)))
        ex.errata = list(dict.fromkeys(msg for ln, msg in fixed_at if ln in covered))
        if not ex.line:
            ex.line = block.line
    return examples


def resolve(name: str, ex: Example) -> str | None:
    """The SSA spelling (without %) of a result named in a comment, or None."""
    defs: dict[str, int] = {}
    for st in ex.stmts:
        for d, n in stmt_defs(st.code):
            defs[d] = n
    base, _, idx = name.partition("#")
    if base in defs:
        if defs[base] == 1 and not idx:
            return base
        if idx and int(idx) < defs[base]:
            return f"{base}#{idx}"
        return None
    m = re.fullmatch(r"(.*?)(\d+)", base)
    if m and not idx and m.group(1) in defs and defs[m.group(1)] > 1 and int(m.group(2)) < defs[m.group(1)]:
        return f"{m.group(1)}#{m.group(2)}"
    return None


# --------------------------------------------------------------------------- #
# Building tests
# --------------------------------------------------------------------------- #


@dataclass
class Result:
    example: Example
    test: str  # function name
    text: str | None = None  # MLIR text of the test (None: not generated)
    reason: str = ""
    note: str = ""


def constant_lines(name: str, value_text: str, ty: Ty, indent: str = "  ") -> list[str]:
    """Lines defining %name with the value (spec notation) of type ty."""
    if ty.kind == "token":
        if value_text.strip() not in ("!stablehlo.token", "token"):
            raise Skip(f"%{name}: cannot read token value {value_text!r}")
        return [f"{indent}%{name} = stablehlo.after_all : !stablehlo.token"]
    if ty.kind == "tuple":
        v = read_value(value_text)
        return _tuple_lines(name, v, ty, indent)
    if ty.kind != "tensor":
        raise Skip(f"%{name} has type {ty.text}, which is not a runtime value a test can build")
    v = read_value(value_text)
    return _tensor_lines(name, v, ty, indent)


def _tensor_lines(name: str, v, ty: Ty, indent: str) -> list[str]:
    if ty.kind != "tensor":
        raise Skip(f"%{name} has type {ty.text}, which is not a runtime value a test can build")
    body = dense_body(v, ty)
    if ty.elem.kind == "quant":
        st = storage_type(ty)
        return [
            f"{indent}%{name}.storage = stablehlo.constant dense<{body}> : {st}",
            f'{indent}%{name} = "stablehlo.bitcast_convert"(%{name}.storage) : ({st}) -> {ty.text}',
        ]
    return [f"{indent}%{name} = stablehlo.constant dense<{body}> : {ty.text}"]


def _tuple_lines(name: str, v, ty: Ty, indent: str) -> list[str]:
    if not isinstance(v, tuple) or len(v) != len(ty.items):
        raise Skip(f"%{name}: value does not match {ty.text}")
    lines: list[str] = []
    parts = []
    for k, (x, t) in enumerate(zip(v, ty.items)):
        sub = f"{name}.{k}"
        if t.kind == "tuple":
            lines += _tuple_lines(sub, x, t, indent)
        else:
            lines += _tensor_lines(sub, x, t, indent)
        parts.append(f"%{sub}")
    lines.append(f'{indent}%{name} = "stablehlo.tuple"({", ".join(parts)}) : '
                 f'({", ".join(t.text for t in ty.items)}) -> {ty.text}')
    return lines


def check_lines(ref: str, value_text: str, ty: Ty, tag: str, indent: str = "  ") -> list[str]:
    """Checks that %ref equals the value (spec notation) of type ty."""
    if ty.kind != "tensor":
        raise Skip(f"expected value of %{ref} has type {ty.text}, which the check ops cannot compare")
    v = read_value(value_text)
    body = dense_body(v, ty)
    kind = ty.elem.kind
    if kind == "quant":
        st = storage_type(ty)
        return [
            f'{indent}%{tag} = "stablehlo.bitcast_convert"(%{ref}) : ({ty.text}) -> {st}',
            f"{indent}check.expect_eq_const %{tag}, dense<{body}> : {st}",
        ]
    check = "expect_almost_eq_const" if kind in ("float", "complex") else "expect_eq_const"
    if kind == "float" and _all_hex(v):
        check = "expect_eq_const"  # bit patterns: the example states exact values
    return [f"{indent}check.{check} %{ref}, dense<{body}> : {ty.text}"]


def example_types(ex: Example) -> tuple[dict[str, str], set[str], list[str]]:
    code = "\n".join(code_part(ln) for st in ex.stmts for ln in st.lines)
    return analyse(code)


def build(ex: Example, test: str) -> tuple[str, str]:
    """(MLIR text, note) of the test for an example; raises Skip."""
    if not ex.stmts:
        raise Skip("no op statement")
    codes = "\n".join(ln for st in ex.stmts for ln in st.lines)
    if "memref" in codes or any("memref" in c.value for c in ex.comments):
        raise Skip("uses memref (buffer) values, which are not StableHLO runtime values")
    types, defined, uses = example_types(ex)
    parallel = bool(ex.config or ex.queues or any(c.process for c in ex.comments))
    free = list(dict.fromkeys(u for u in uses if u.split("#")[0] not in defined))
    # classify comments
    inputs: dict[str, list[ValueComment]] = {}
    outputs: list[tuple[str, ValueComment]] = []
    for c in ex.comments:
        if not c.has_pct and c.name not in types and resolve(c.name + c.idx, ex) is None:
            continue  # prose such as "Logical values: ..."
        res = resolve(c.name + c.idx, ex)
        if res is not None:
            outputs.append((res, c))
        elif c.name in free and not c.idx:
            inputs.setdefault(c.name, []).append(c)
        elif c.name in defined:
            continue  # a value the example also builds itself (documentation only)
        else:
            raise Skip(f"value comment for %{c.name}{c.idx} matches no value of the example")
    if not parallel:
        for name, cs in inputs.items():
            if len({c.value for c in cs}) > 1:
                raise Skip(f"the example gives %{name} several different values")
    missing = [f for f in free if f not in inputs]
    if missing:
        raise Skip("no value given for input " + ", ".join(f"%{m}" for m in missing))
    for name in free:
        if name not in types:
            raise Skip(f"type of %{name} not found in the example")
    result_tys = {}
    for res, c in outputs:
        if res not in types:
            raise Skip(f"type of %{res} not found in the example")
        result_tys[res] = parse_type(types[res])
    if not outputs:
        results = [d for st in ex.stmts for d, _ in stmt_defs(st.code)]
        tys = [types.get(r) for r in results]
        if not results or not all(t == "!stablehlo.token" for t in tys):
            raise Skip("no expected values in the example")
        note = "the result is a token: the test checks that the op runs"
    else:
        note = ""
    if parallel:
        return _build_parallel(ex, test, types, free, inputs, outputs, result_tys), note
    lines = [f"func.func @{test}() {{"]
    for name in free:
        ty = parse_type(types[name])
        lines += constant_lines(name, inputs[name][0].value, ty)
    for st in ex.stmts:
        lines += _indent_stmt(st)
    for k, (res, c) in enumerate(outputs):
        lines += check_lines(res, c.value, result_tys[res], f"check.{k}")
    lines.append("  func.return")
    lines.append("}")
    return "\n".join(lines), note


def _indent_stmt(st: Stmt, indent: str = "  ") -> list[str]:
    base = min(len(ln) - len(ln.lstrip()) for ln in st.lines if ln.strip())
    return [indent + ln[base:].rstrip() if ln.strip() else "" for ln in st.lines]


def _build_parallel(ex, test, types, free, inputs, outputs, result_tys) -> str:
    nr = ex.config.get("num_replicas", 1)
    np_ = ex.config.get("num_partitions", 1)
    procs = [(r, p) for r in range(nr) for p in range(np_)]
    out_names = list(dict.fromkeys(res for res, _ in outputs))
    body = f"{test}_process"
    in_tys = [types[n] for n in free]
    out_tys = [types[n] for n in out_names]
    lines = []
    args = ", ".join(f"%{n}: {t}" for n, t in zip(free, in_tys))
    outs = ", ".join(out_tys)
    lines.append(f"func.func private @{body}({args}) -> ({outs}) {{")
    for st in ex.stmts:
        lines += _indent_stmt(st)
    lines.append(f"  func.return {', '.join('%' + n for n in out_names)} : {outs}")
    lines.append("}")
    queue_funcs = []
    for i, value in sorted(ex.queues):
        qname = f"{test}_infeed_queue{i}"
        queue_funcs.append(qname)
    # infeed queues: typed like the infeed results, in order
    if ex.queues:
        infeed_tys = []
        for st in ex.stmts:
            if '"stablehlo.infeed"' in st.code:
                for d, n in stmt_defs(st.code):
                    key = f"{d}#0" if n > 1 else d
                    infeed_tys.append(types[key])
        if len(infeed_tys) < len(ex.queues):
            raise Skip("infeed queue values without matching infeed results")
        for (i, value), qname, qt in zip(sorted(ex.queues), queue_funcs, infeed_tys):
            ty = parse_type(qt)
            lines.append(f"func.func private @{qname}() -> {qt} {{")
            lines += constant_lines("value", value, ty)
            lines.append(f"  func.return %value : {qt}")
            lines.append("}")
    lines.append(f"func.func @{test}() {{")
    operands, operand_tys = [], []
    for r, p in procs:
        for n in free:
            vals = [c for c in inputs[n] if c.process in ((r, p), None)]
            exact = [c for c in vals if c.process == (r, p)]
            pick = (exact or vals)
            if not pick:
                raise Skip(f"no value of %{n} for process ({r}, {p})")
            sub = f"{n}.p{r}_{p}"
            lines += constant_lines(sub, pick[0].value, parse_type(types[n]))
            operands.append(f"%{sub}")
            operand_tys.append(types[n])
    n_res = len(procs) * len(out_names)
    res_tys = [t for _ in procs for t in out_tys]
    lhs = "%results" if n_res == 1 else f"%results:{n_res}"
    attrs = "programs = [" + ", ".join("[" + ", ".join(f"@{body}" for _ in range(np_)) + "]"
                                       for _ in range(nr)) + "]"
    if queue_funcs:
        attrs = "infeed = [" + ", ".join(f"@{q}" for q in queue_funcs) + "], " + attrs
    lines.append(f'  {lhs} = "interpreter.run_parallel"({", ".join(operands)}) {{{attrs}}} : '
                 f'({", ".join(operand_tys)}) -> ({", ".join(res_tys)})')
    checked = 0
    for res, c in outputs:
        targets = procs if c.process is None else [c.process]
        for proc in targets:
            if proc not in procs:
                raise Skip(f"%{res} given for process {proc} outside the grid")
            k = procs.index(proc) * len(out_names) + out_names.index(res)
            ref = "results" if n_res == 1 else f"results#{k}"
            lines += check_lines(ref, c.value, result_tys[res], f"check.{checked}")
            checked += 1
    lines.append("  func.return")
    lines.append("}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- #
# Driver
# --------------------------------------------------------------------------- #


def find_rfcs(seeds: Path) -> list[Path]:
    """RFC documents among the seeds that add tan / typed-FFI custom_call /
    multi-operand collectives."""
    out = []
    if seeds.is_dir():
        for p in sorted(seeds.iterdir()):
            if p.is_file():
                head = p.read_text(encoding="utf-8", errors="replace")[:2000]
                if RFC_TITLE.search(head):
                    out.append(p)
    return out


def collect(spec: Path, rfcs: list[Path]) -> tuple[list[Example], list[Block]]:
    examples: list[Example] = []
    others: list[Block] = []
    docs = [(spec, "Ops")] + [(r, "Proposed Specification") for r in rfcs]
    for path, chapter in docs:
        counts: dict[str, int] = {}
        for b in read_blocks(path, chapter):
            if b.op is None:
                others.append(b)
                continue
            for ex in split_examples(b, list(ERRATA)):
                ex.op = b.op
                counts[b.op] = counts.get(b.op, 0) + 1
                ex.index = counts[b.op]
                examples.append(ex)
    return examples, others


def generate(spec: Path, rfcs: list[Path]) -> tuple[dict[str, str], list[Result], list[Block]]:
    """The generated files (name -> text), one result per example, and the
    ``mlir`` blocks outside op sections. Needs no bindings."""
    examples, others = collect(spec, rfcs)
    numbering: dict[str, int] = {}
    results: list[Result] = []
    for ex in examples:
        numbering[ex.op] = numbering.get(ex.op, 0) + 1
        test = f"{ex.op}_example_{numbering[ex.op]}"
        res = Result(ex, test)
        key = (ex.block.source, ex.op, ex.index)
        try:
            if key in NOT_TESTABLE:
                raise Skip(NOT_TESTABLE[key])
            if ex.op in IMPLEMENTATION_DEFINED:
                raise Skip(IMPLEMENTATION_DEFINED[ex.op])
            res.text, res.note = build(ex, test)
        except Skip as e:
            res.reason = str(e)
        results.append(res)
    files: dict[str, str] = {}
    by_op: dict[str, list[Result]] = {}
    for r in results:
        if r.text is not None:
            by_op.setdefault(r.example.op, []).append(r)
    for op in sorted(by_op):
        chunks = []
        for r in by_op[op]:
            ex = r.example
            head = [f"// {r.test}: stablehlo.{op}, {ex.block.source}:{ex.line}"]
            head += [f"// erratum: {e}" for e in ex.errata]
            if r.note:
                head.append(f"// note: {r.note}")
            chunks.append("\n".join(head) + "\n" + r.text + "\n")
        header = (
            f"// Conformance tests from the examples of stablehlo.{op} in the StableHLO specification.\n"
            "// Generated by scripts/extract_spec_examples.py; do not edit (see INDEX.md).\n\n"
        )
        files[f"{op}.mlir"] = header + "\n// -----\n\n".join(chunks)
    files["INDEX.md"] = index_text(results, others, spec, rfcs)
    return files, results, others


def verify(results: list[Result]) -> list[str]:
    """Parse and verify every generated test with the bindings; returns the
    diagnostics of the tests that do not verify."""
    sys.path.insert(0, str(REPO))
    from stablehlo_conform import frontend
    from stablehlo_conform.errors import ParseError

    problems = []
    for r in results:
        if r.text is None:
            continue
        try:
            frontend.parse_chunk(frontend.Chunk(r.test, 1, text=r.text))
        except ParseError as e:
            diags = getattr(e, "diagnostics", None) or [str(e)]
            problems.append(f"{r.test} ({r.example.block.source}:{r.example.line}): {diags[0]}")
    return problems


def _md(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def index_text(results: list[Result], others: list[Block], spec: Path, rfcs: list[Path]) -> str:
    gen = [r for r in results if r.text is not None]
    skipped = [r for r in results if r.text is None]
    sources = [spec.name] + [p.name for p in rfcs]
    out = [
        "# Spec example tests",
        "",
        "Generated by `scripts/extract_spec_examples.py` from "
        + ", ".join(f"`{s}`" for s in sources)
        + "; do not edit.",
        "",
        f"- examples found: {len(results)}",
        f"- tests generated: {len(gen)}",
        f"- not generated: {len(skipped)}",
        f"- generated from corrected example text: {sum(bool(r.example.errata) for r in gen)}",
        "",
        "## Every example",
        "",
        "| # | op | source | test | status |",
        "|---|----|--------|------|--------|",
    ]
    for k, r in enumerate(results, 1):
        ex = r.example
        if r.text is not None:
            status = "generated"
            extra = [f"erratum: {e}" for e in ex.errata] + ([f"note: {r.note}"] if r.note else [])
            if extra:
                status += " (" + "; ".join(extra) + ")"
            test = f"`{ex.op}.mlir::{r.test}`"
        else:
            status = "not generated: " + r.reason
            test = f"({r.test})"
        out.append(f"| {k} | {ex.op} | {ex.block.source}:{ex.line} | {test} | {_md(status)} |")
    out += ["", "## Generated from corrected example text", ""]
    for r in gen:
        for e in r.example.errata:
            out.append(f"- {r.test} ({r.example.block.source}:{r.example.line}): {_md(e)}")
    out += ["", "## Not generated, by reason", ""]
    reasons: dict[str, list[str]] = {}
    for r in skipped:
        reasons.setdefault(_reason_group(r.reason), []).append(r.test)
    for reason in sorted(reasons):
        out.append(f"- {reason}: {', '.join(reasons[reason])}")
    out += ["", "## Other `mlir` blocks (illustrations outside op sections, not op examples)", ""]
    for b in others:
        out.append(f"- {b.source}:{b.line} ({_md(b.section)})")
    return "\n".join(out) + "\n"


def _reason_group(reason: str) -> str:
    for prefix in ("no value given for input", "no expected values", "implementation-defined",
                   "uses memref", "the translated example does not verify", "no op statement"):
        if reason.startswith(prefix):
            return prefix
    return reason


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("spec", nargs="?", default=str(DEFAULT_SPEC), help="path of spec.md")
    ap.add_argument("--rfc", action="extend", nargs="+", default=None, metavar="PATH",
                    help="RFC document adding ops/examples (default: found among ../shared/seeds)")
    ap.add_argument("--out", default=str(REPO / "testsuite" / "spec"), help="output folder")
    ap.add_argument("--no-verify", action="store_true", help="do not parse the tests with the bindings")
    args = ap.parse_args(argv)
    spec = Path(args.spec)
    rfcs = [Path(p) for p in args.rfc] if args.rfc is not None else find_rfcs(DEFAULT_SEEDS)
    files, results, _ = generate(spec, rfcs)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.mlir"):
        if old.name not in files:
            old.unlink()
    for name, text in sorted(files.items()):
        (out / name).write_text(text, encoding="utf-8")
    gen = sum(r.text is not None for r in results)
    print(f"{len(results)} examples, {gen} tests generated, {len(results) - gen} not generated -> {out}")
    if not args.no_verify:
        problems = verify(results)
        for p in problems:
            print(f"does not verify: {p}", file=sys.stderr)
        if problems:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
