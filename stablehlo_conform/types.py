"""Element types, tensor types and their NumPy counterparts.

See spec.md#types. Every element type of the spec maps to one NumPy dtype
without loss: ``ml_dtypes`` supplies bf16, the f4/f6/f8 family and the
sub-byte integers. Quantized element types keep their storage dtype plus the
quantization parameters (spec.md#quantized-element-types).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

# name -> (numpy dtype, kind, bit width)
_ELEMENT_TABLE: dict[str, tuple[np.dtype, str, int]] = {
    "i1": (np.dtype(np.bool_), "bool", 1),
    "i2": (np.dtype(ml_dtypes.int2), "int", 2),
    "i4": (np.dtype(ml_dtypes.int4), "int", 4),
    "i8": (np.dtype(np.int8), "int", 8),
    "i16": (np.dtype(np.int16), "int", 16),
    "i32": (np.dtype(np.int32), "int", 32),
    "i64": (np.dtype(np.int64), "int", 64),
    "ui2": (np.dtype(ml_dtypes.uint2), "uint", 2),
    "ui4": (np.dtype(ml_dtypes.uint4), "uint", 4),
    "ui8": (np.dtype(np.uint8), "uint", 8),
    "ui16": (np.dtype(np.uint16), "uint", 16),
    "ui32": (np.dtype(np.uint32), "uint", 32),
    "ui64": (np.dtype(np.uint64), "uint", 64),
    "index": (np.dtype(np.int64), "int", 64),
    "f4E2M1FN": (np.dtype(ml_dtypes.float4_e2m1fn), "float", 4),
    "f6E2M3FN": (np.dtype(ml_dtypes.float6_e2m3fn), "float", 6),
    "f6E3M2FN": (np.dtype(ml_dtypes.float6_e3m2fn), "float", 6),
    "f8E3M4": (np.dtype(ml_dtypes.float8_e3m4), "float", 8),
    "f8E4M3": (np.dtype(ml_dtypes.float8_e4m3), "float", 8),
    "f8E4M3FN": (np.dtype(ml_dtypes.float8_e4m3fn), "float", 8),
    "f8E4M3FNUZ": (np.dtype(ml_dtypes.float8_e4m3fnuz), "float", 8),
    "f8E4M3B11FNUZ": (np.dtype(ml_dtypes.float8_e4m3b11fnuz), "float", 8),
    "f8E5M2": (np.dtype(ml_dtypes.float8_e5m2), "float", 8),
    "f8E5M2FNUZ": (np.dtype(ml_dtypes.float8_e5m2fnuz), "float", 8),
    "f8E8M0FNU": (np.dtype(ml_dtypes.float8_e8m0fnu), "float", 8),
    "bf16": (np.dtype(ml_dtypes.bfloat16), "float", 16),
    "f16": (np.dtype(np.float16), "float", 16),
    "f32": (np.dtype(np.float32), "float", 32),
    "f64": (np.dtype(np.float64), "float", 64),
    "complex<f32>": (np.dtype(np.complex64), "complex", 64),
    "complex<f64>": (np.dtype(np.complex128), "complex", 128),
}
# Aliases spelled by MLIR for signless/signed integers.
for _w in (2, 4, 8, 16, 32, 64):
    _ELEMENT_TABLE[f"si{_w}"] = _ELEMENT_TABLE[f"i{_w}"]

_DTYPE_TO_NAME: dict[np.dtype, str] = {}
for _name, (_dt, _k, _b) in _ELEMENT_TABLE.items():
    if _name not in ("index",) and not _name.startswith("si"):
        _DTYPE_TO_NAME.setdefault(_dt, _name)

# Unsigned integer dtype with the same byte size: the bit pattern container.
_BITS_CONTAINER = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


@dataclass(frozen=True)
class ElementType:
    """A non-quantized element type (spec.md#types)."""

    name: str

    @property
    def dtype(self) -> np.dtype:
        return _ELEMENT_TABLE[self.name][0]

    @property
    def kind(self) -> str:
        """One of ``bool``, ``int``, ``uint``, ``float``, ``complex``."""
        return _ELEMENT_TABLE[self.name][1]

    @property
    def bits(self) -> int:
        return _ELEMENT_TABLE[self.name][2]

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_complex(self) -> bool:
        return self.kind == "complex"

    @property
    def is_integer(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def quantized(self) -> bool:
        return False

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class QuantizedType:
    """``!quant.uniform`` element type (spec.md#quantized-element-types).

    ``scales``/``zero_points`` have one entry per tensor, or one per slice along
    ``axis`` for per-axis quantization.
    """

    storage: ElementType
    expressed: ElementType
    scales: tuple[float, ...]
    zero_points: tuple[int, ...]
    axis: int | None = None
    storage_min: int | None = None
    storage_max: int | None = None
    text: str = ""

    @property
    def dtype(self) -> np.dtype:
        return self.storage.dtype

    @property
    def kind(self) -> str:
        return "quant"

    @property
    def name(self) -> str:
        return self.text or f"!quant.uniform<{self.storage}:{self.expressed}>"

    @property
    def quantized(self) -> bool:
        return True

    @property
    def is_float(self) -> bool:
        return False

    @property
    def is_complex(self) -> bool:
        return False

    @property
    def is_integer(self) -> bool:
        return False

    @property
    def is_bool(self) -> bool:
        return False

    @property
    def bits(self) -> int:
        return self.storage.bits

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class TensorType:
    """``tensor<d0 x d1 x ... x E>``; ``None`` in ``shape`` is a dynamic dim."""

    shape: tuple[int | None, ...]
    element: ElementType | QuantizedType

    @property
    def dtype(self) -> np.dtype:
        return self.element.dtype

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        return all(d is not None for d in self.shape)

    def num_elements(self) -> int | None:
        if not self.is_static:
            return None
        return int(np.prod(self.shape, dtype=np.int64))

    def __str__(self) -> str:
        dims = "".join(("?" if d is None else str(d)) + "x" for d in self.shape)
        return f"tensor<{dims}{self.element}>"


@dataclass(frozen=True)
class TokenType:
    def __str__(self) -> str:
        return "!stablehlo.token"


@dataclass(frozen=True)
class TupleType:
    types: tuple = field(default_factory=tuple)

    def __str__(self) -> str:
        return "tuple<" + ", ".join(str(t) for t in self.types) + ">"


@dataclass(frozen=True)
class OpaqueType:
    """A type the engine does not model (kept by its text)."""

    text: str

    def __str__(self) -> str:
        return self.text


class Token:
    """The single value of type ``!stablehlo.token``."""

    _instance: Token | None = None

    def __new__(cls) -> Token:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "token"


TOKEN = Token()


def element_type(name: str) -> ElementType:
    if name not in _ELEMENT_TABLE:
        raise KeyError(f"unknown element type {name!r}")
    return ElementType(name)


def known_element_names() -> list[str]:
    return [n for n in _ELEMENT_TABLE if not n.startswith("si")]


def name_of_dtype(dtype: np.dtype) -> str:
    """The MLIR element type name of a NumPy dtype (e.g. ``f32``)."""
    return _DTYPE_TO_NAME[np.dtype(dtype)]


def bits_container(dtype: np.dtype) -> type:
    """Unsigned NumPy integer type with the same item size as ``dtype``."""
    return _BITS_CONTAINER[np.dtype(dtype).itemsize]


def to_bits(arr: np.ndarray) -> np.ndarray:
    """Reinterpret an array's items as unsigned integers of the same size
    (same shape, rank 0 included)."""
    return np.ascontiguousarray(arr).view(bits_container(arr.dtype)).reshape(np.shape(arr))


def from_bits(bits: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return np.ascontiguousarray(bits).astype(bits_container(dtype)).view(dtype).reshape(np.shape(bits))


# --------------------------------------------------------------------------- #
# Decoding of printed dense literals.
#
# The Python bindings expose the contents of a DenseElementsAttr through the
# buffer protocol only for the standard NumPy types. For bf16, the f4/f6/f8
# family, sub-byte integers and complex numbers the values are recovered from
# the attribute's printed form, which MLIR prints in one of two shapes:
# ``dense<"0xHEX">`` (raw little-endian storage, one element per storage unit)
# or a (nested) list of literals, where floats may be written as hex bit
# patterns and complex numbers as ``(re,im)`` pairs.
# --------------------------------------------------------------------------- #

_TOKEN_RE = re.compile(
    r"\s*(?:(?P<open>[\[(])|(?P<close>[\])])|(?P<comma>,)|"
    r"(?P<hex>[-+]?0x[0-9A-Fa-f]+)|(?P<bool>true|false)|"
    r"(?P<num>[-+]?(?:inf|nan|[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)))"
)


def _tokens(text: str):
    pos = 0
    n = len(text)
    while pos < n:
        m = _TOKEN_RE.match(text, pos)
        if not m:
            if text[pos:].strip() == "":
                return
            raise ValueError(f"cannot decode dense literal near {text[pos:pos + 30]!r}")
        pos = m.end()
        yield m.lastgroup, m.group(m.lastgroup)


def _literal_tree(text: str):
    """Nested Python lists of ('hex'|'num'|'bool', text) leaves."""
    stack: list[list] = [[]]
    for kind, tok in _tokens(text):
        if kind == "open":
            stack.append([])
        elif kind == "close":
            if len(stack) == 1:
                raise ValueError(f"unbalanced dense literal {text[:60]!r}")
            done = stack.pop()
            stack[-1].append(done)
        elif kind == "comma":
            continue
        else:
            stack[-1].append((kind, tok))
    if len(stack) != 1 or len(stack[0]) != 1:
        raise ValueError(f"unbalanced dense literal {text[:60]!r}")
    return stack[0][0]


def _flatten(tree, out: list) -> None:
    if isinstance(tree, list):
        for t in tree:
            _flatten(t, out)
    else:
        out.append(tree)


def _scalar_value(kind: str, tok: str, et: ElementType):
    if kind == "bool":
        return tok == "true"
    if kind == "hex":
        neg = tok.startswith("-")
        v = int(tok.lstrip("+-"), 16)
        return ("bits", v) if et.kind in ("float", "complex") else (-v if neg else v)
    if et.kind in ("float", "complex"):
        return float(tok)
    if "." in tok or "e" in tok.lower():
        return int(float(tok))
    return int(tok)


def _component_type(et: ElementType) -> ElementType:
    return ElementType("f32" if et.name == "complex<f32>" else "f64")


def _values_to_array(vals: list, et: ElementType) -> np.ndarray:
    """Turn decoded scalar values into an array of ``et`` (exact)."""
    dt = et.dtype
    if et.kind == "bool":
        return np.array([bool(v) for v in vals], dtype=np.bool_)
    if et.kind in ("int", "uint"):
        arr = np.array(vals, dtype=object)
        bits = et.bits
        mask = (1 << bits) - 1
        wrapped = [int(v) & mask for v in arr]
        if et.kind == "int":
            wrapped = [w - (1 << bits) if w >= 1 << (bits - 1) else w for w in wrapped]
        wide = np.array(wrapped, dtype=np.int64 if et.kind == "int" else np.uint64)
        return wide.astype(dt)
    # floats: bit patterns are placed exactly; decimals rounded once from f64.
    out = np.empty(len(vals), dtype=dt)
    if any(isinstance(v, tuple) for v in vals):
        cont = bits_container(dt)
        for i, v in enumerate(vals):
            if isinstance(v, tuple):
                out[i : i + 1] = np.array([v[1]], dtype=cont).view(dt)
            else:
                out[i] = np.float64(v).astype(dt)
        return out
    with np.errstate(over="ignore"):  # a decimal beyond the type's range is inf
        return np.array(vals, dtype=np.float64).astype(dt)


def decode_dense_literal(body: str, ttype: TensorType) -> np.ndarray:
    """Decode the text between ``dense<`` and ``>`` for a static tensor type."""
    et = ttype.element
    storage = et.storage if isinstance(et, QuantizedType) else et
    shape = tuple(int(d) for d in ttype.shape)
    n = int(np.prod(shape, dtype=np.int64))
    body = body.strip()
    if body == "":
        if n != 0:
            raise ValueError(f"empty literal for {ttype}")
        return np.zeros(shape, dtype=storage.dtype)
    if body.startswith('"'):
        return decode_hex_storage(np.frombuffer(bytearray.fromhex(body.strip('"')[2:]), dtype=np.uint8), ttype)
    tree = _literal_tree(body)
    if storage.kind == "complex":
        comp = _component_type(storage)
        # complex leaves are two-element lists (from the '(re,im)' pairs)
        def flat_pairs(t, out):
            if isinstance(t, list) and len(t) == 2 and all(isinstance(x, tuple) for x in t):
                out.append(t)
            elif isinstance(t, list):
                for x in t:
                    flat_pairs(x, out)
            else:
                raise ValueError("complex literal without (re, im) pair")
        pairs: list = []
        flat_pairs(tree, pairs)
        re_ = _values_to_array([_scalar_value(k, v, comp) for k, v in (p[0] for p in pairs)], comp)
        im_ = _values_to_array([_scalar_value(k, v, comp) for k, v in (p[1] for p in pairs)], comp)
        arr = np.empty(re_.shape, dtype=storage.dtype)
        arr.real = re_
        arr.imag = im_
    else:
        leaves: list = []
        _flatten(tree, leaves)
        arr = _values_to_array([_scalar_value(k, v, storage) for k, v in leaves], storage)
    if arr.size == 1 and n != 1:
        return splat(arr, shape)
    if arr.size != n:
        raise ValueError(f"literal has {arr.size} elements, type {ttype} needs {n}")
    return arr.reshape(shape)


def splat(one: np.ndarray, shape: tuple) -> np.ndarray:
    """A one-element array seen with ``shape``: a read-only broadcast view
    (nothing of the size of ``shape`` is allocated)."""
    return np.broadcast_to(one.reshape(()), shape)


def decode_hex_storage(raw: np.ndarray, ttype: TensorType) -> np.ndarray:
    """The array a ``dense<"0x...">`` literal holds, from its bytes (uint8,
    writable): raw little-endian storage, one element per storage unit
    (sub-byte types and i1 one per byte); one element alone is a splat.
    Types of whole bytes are views of ``raw``, not copies."""
    et = ttype.element
    storage = et.storage if isinstance(et, QuantizedType) else et
    shape = tuple(int(d) for d in ttype.shape)
    n = int(np.prod(shape, dtype=np.int64))
    dt = storage.dtype
    if storage.kind == "bool":
        arr = raw.astype(np.bool_)
    elif storage.bits < 8:
        if storage.kind == "int":
            shift = 8 - storage.bits
            arr = ((raw.astype(np.int8) << shift) >> shift).astype(dt)
        else:
            arr = (raw & ((1 << storage.bits) - 1)).astype(dt)
    else:
        if raw.size % dt.itemsize:
            raise ValueError(f"hex literal of {raw.size} bytes does not hold whole {storage} elements")
        arr = raw.view(dt)
    if arr.size == 1 and n != 1:
        return splat(arr, shape)
    if arr.size != n:
        raise ValueError(f"hex literal has {arr.size} elements, type {ttype} needs {n}")
    return arr.reshape(shape)


def parse_type_text(text: str):
    """Parse the *printed* form of a type produced by the bindings.

    Only used on strings the MLIR printer wrote (``str(ir.Type)``), never on
    user input: the bindings have already parsed and verified the program.
    """
    t = text.strip()
    if t == "!stablehlo.token":
        return TokenType()
    if t.startswith("tuple<"):
        inner = t[len("tuple<") : -1]
        return TupleType(tuple(parse_type_text(p) for p in split_top_level(inner)) if inner else ())
    if t.startswith("tensor<"):
        inner = t[len("tensor<") : -1]
        # the element type is after the last 'x' that is outside <>
        dims: list[int | None] = []
        i = 0
        while True:
            m = re.match(r"(\?|[0-9]+)x", inner[i:])
            if not m:
                break
            d = m.group(1)
            dims.append(None if d == "?" else int(d))
            i += m.end()
        elem_text = inner[i:]
        # drop an encoding such as ', #stablehlo.bounds<...>'
        parts = split_top_level(elem_text)
        return TensorType(tuple(dims), parse_element_text(parts[0]))
    # a bare element type (e.g. an 'index' or 'f32' scalar of arith)
    return parse_element_text(t)


def split_top_level(s: str) -> list[str]:
    out, depth, cur = [], 0, []
    for ch in s:
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if cur and "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


_QUANT_RE = re.compile(
    r"!quant\.uniform<(?P<storage>ui?[0-9]+|i[0-9]+)(?:<(?P<smin>-?[0-9]+):(?P<smax>-?[0-9]+)>)?"
    r":(?P<expressed>[a-zA-Z0-9]+)(?::(?P<axis>[0-9]+))?,\s*(?P<params>.*)>$"
)


def parse_element_text(t: str):
    t = t.strip()
    if t in _ELEMENT_TABLE:
        return ElementType(t)
    if t.startswith("!quant.uniform"):
        m = _QUANT_RE.match(t)
        if not m:
            return OpaqueType(t)
        storage_name = m.group("storage")
        if storage_name.startswith("u") and not storage_name.startswith("ui"):
            storage_name = "ui" + storage_name[1:]  # the quant dialect spells unsigned storage u8
        params = m.group("params").strip()
        if params.startswith("{"):
            params = params[1:-1]
        scales, zps = [], []
        for p in split_top_level(params):
            if ":" in p:
                s, z = p.split(":")
            else:
                s, z = p, "0"
            scales.append(float(s))
            zps.append(int(z))
        st = ElementType(storage_name)
        info = np.iinfo(np.int64)
        del info
        return QuantizedType(
            storage=st,
            expressed=ElementType(m.group("expressed")),
            scales=tuple(scales),
            zero_points=tuple(zps),
            axis=int(m.group("axis")) if m.group("axis") is not None else None,
            storage_min=int(m.group("smin")) if m.group("smin") is not None else None,
            storage_max=int(m.group("smax")) if m.group("smax") is not None else None,
            text=t,
        )
    return OpaqueType(t)


def value_matches_type(value, ty) -> str | None:
    """None if ``value`` is a valid runtime value of ``ty``, else a reason."""
    if isinstance(ty, TensorType):
        if not isinstance(value, np.ndarray):
            return f"expected a tensor, got {type(value).__name__}"
        if value.ndim != ty.rank:
            return f"rank {value.ndim} != {ty.rank}"
        for got, want in zip(value.shape, ty.shape):
            if want is not None and got != want:
                return f"shape {value.shape} != {tuple(ty.shape)}"
        if value.dtype != ty.dtype:
            return f"element type {value.dtype} != {ty.element} ({ty.dtype})"
        return None
    if isinstance(ty, TokenType):
        return None if value is TOKEN else f"expected a token, got {type(value).__name__}"
    if isinstance(ty, TupleType):
        if not isinstance(value, tuple) or len(value) != len(ty.types):
            return "expected a tuple of %d" % len(ty.types)
        for v, t in zip(value, ty.types):
            r = value_matches_type(v, t)
            if r:
                return r
        return None
    if isinstance(ty, ElementType):
        if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype == ty.dtype:
            return None
        if isinstance(value, np.generic) and value.dtype == ty.dtype:
            return None
        return f"expected a scalar {ty}"
    return None
