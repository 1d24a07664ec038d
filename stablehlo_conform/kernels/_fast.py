"""Fast paths: what a kernel declares it computes, for one op of static plain types, with a
single NumPy call or a few (see :class:`stablehlo_conform.opinfo.FastPath`).

The engine's generated blocks (``engine.codegen``) call a fast path in place of the
kernel: no context, no dispatch on element types, no result check. A fast path returns what
the kernel returns for the same operands, bit for bit (``tests/test_fast_paths.py`` and
``tests/test_engine.py`` compare them); its factory returns None wherever it would not.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import numpy as np

from .. import types as T
from ..errors import UnsupportedOp
from ..opinfo import FastPath
from ..numeric import E8M0, F32, NATIVE_FLOATS, is_float, is_subbyte_int, out, significand_and_emin


def plain_types(op) -> tuple[tuple[np.dtype, ...], np.dtype, tuple[int, ...]] | None:
    """``(operand dtypes, result dtype, result shape)`` of an op with one result whose
    operands and result are all static tensors of non-quantized element types; else None."""
    if len(op.result_types) != 1:
        return None
    types = (*op.operand_types, op.result_types[0])
    for ty in types:
        if not isinstance(ty, T.TensorType) or not ty.is_static or ty.element.quantized:
            return None
    return tuple(ty.dtype for ty in op.operand_types), op.result_types[0].dtype, tuple(op.result_types[0].shape)


def native_family(dt: np.dtype) -> str | None:
    """``"float"`` for f16/f32/f64, ``"int"`` for integer types of 8 bits or more, else None:
    the element types NumPy's own ufuncs compute as the kernels do."""
    if dt in NATIVE_FLOATS:
        return "float"
    if dt.kind in "iu" and not is_subbyte_int(dt):
        return "int"
    return None


def ufunc_path(uf: np.ufunc, shape: tuple[int, ...]) -> FastPath:
    """The NumPy ufunc ``uf`` (one of the kernels' ``native`` ufuncs: IEEE-754's correctly
    rounded arithmetic, comparisons, integer ops; each element's value the same whichever of
    NumPy's loops computes it) as the fast path of an element-wise op of result ``shape``; on
    results of at least :data:`UNBUFFERED_MIN` elements in rows of at least :data:`ROW_MIN`,
    called where an operand is not C-contiguous (a broadcast view: a normalisation's row of
    means, ``(n, 1)`` broadcast along each row, or its ``(d,)`` scale broadcast over the rows)
    with NumPy's ufunc buffer (``np.setbufsize``) below twice the row, and the size it had
    after.

    NumPy's iterator cannot merge the axes of such an operand, and with its default buffer
    of 8192 elements it copies the operands of rows shorter than half of that into its buffer
    before each call of the loop; with a buffer shorter than two rows it calls the loop on
    each row in place: a subtract of a ``(256, 768)`` f32 block and its ``(256, 1)`` means
    took 34.6 against 18.5 us, a multiply by a ``(768,)`` scale 27.6 against 19.8 us (a
    C-contiguous pair: 14 us). Rows of 256 or fewer elements gain nothing (the loop's calls
    cost what the copies do), so they keep the default. Only the iteration changes: each
    element is computed by the same loop function of the same two values, so the bits are the
    same (the buffer size changes the order of a reduction's sums where it casts, so it is set
    around this element-wise call only)."""
    if len(shape) < 2 or shape[-1] < ROW_MIN or int(np.prod(shape)) < UNBUFFERED_MIN:
        return FastPath(uf, views=True, out=True)
    row, set_size = shape[-1] & ~15, np.setbufsize  # NumPy takes multiples of 16

    def call(*xs, out=None):
        for x in xs:
            if not x.flags.c_contiguous and any(x.strides):  # a broadcast scalar's axes all merge
                break
        else:
            return uf(*xs, out=out)
        old = set_size(row)
        try:
            return uf(*xs, out=out)
        finally:
            set_size(old)

    return FastPath(call, views=True, out=True)


# the shortest rows, and the fewest result elements, from which ufunc_path calls a ufunc on a
# broadcast operand unbuffered (setting the buffer size and back costs about 1.7 us)
ROW_MIN = 512
UNBUFFERED_MIN = 1 << 15


# --------------------------------------------------------------------------- #
# narrow floats (bf16, f8, f6, f4) in f32
# --------------------------------------------------------------------------- #

ROUNDED_IN_F32 = frozenset({np.add, np.subtract, np.multiply, np.divide, np.sqrt, np.fmod, np.negative,
                            np.abs, np.ceil, np.floor, np.rint})
"""The ufuncs :func:`in_f32` computes as the kernels do in f64: IEEE-754's correctly rounded
``+ - * / sqrt`` and the ops whose results are exact (``fmod``, sign changes, rounding to
integers)."""


@lru_cache(maxsize=None)
def rounds_in_f32(dt: np.dtype) -> bool:
    """Whether ``dt`` is a float type narrower than NumPy's for which :func:`in_f32` holds: at
    most 11 significand bits (bf16, the f8/f6/f4 types), its exponent range within f32's, and
    ``ml_dtypes``' f32 -> ``dt`` rounding to nearest even (not ``f8E8M0FNU``, see
    :func:`stablehlo_conform.numeric.round_to_e8m0`)."""
    dt = np.dtype(dt)
    if dt in NATIVE_FLOATS or dt == E8M0 or not is_float(dt):
        return False
    p, emin = significand_and_emin(dt)
    return p <= 11 and emin >= -126


def in_f32(uf, dt: np.dtype, *xs) -> np.ndarray:
    """``uf`` (one of :data:`ROUNDED_IN_F32`) of operands of a type ``dt`` of
    :func:`rounds_in_f32`, computed in f32 and rounded once into ``dt``: the value the kernels
    compute in f64 and round once (spec.md "Floating-point types": results rounded to nearest
    even), bit for bit.

    f32 holds every value of ``dt`` exactly. For ``+ - * /`` and ``sqrt`` with ``p <= 11``
    significand bits, ``24 >= 2p + 2``: rounding the exact result to nearest even in f32 and
    then in ``dt`` gives the exact result rounded once (Figueroa, "When is double rounding
    innocuous?", SIGNUM 1995); the other ufuncs' results are exact in f32. Overflow, NaN,
    infinities, signed zeros and subnormals come out as in the kernel: checked on every pair of
    operands of every 8-bit type and every unary operand of bf16 and on all 2**32 bf16 pairs of
    ``+ - * /`` (``tests/test_fast_narrow.py``)."""
    xs = [np.asarray(x) for x in xs]
    ws = [distinct(x).astype(F32) for x in xs]
    with np.errstate(all="ignore"):
        into = ws[0] if ws[0].ndim and all(w.shape == ws[0].shape for w in ws) else None
        r = np.asarray(uf(*ws, out=into)).astype(dt)
    shape = np.broadcast_shapes(*(x.shape for x in xs))
    return r if r.shape == shape else np.array(np.broadcast_to(r, shape), order="C")


def distinct(x: np.ndarray) -> np.ndarray:
    """A broadcast view's distinct elements: ``x`` with each axis of stride 0 cut to its first
    index (size 1), which broadcasts back to ``x`` itself; ``x`` where it has no such axis. An
    element-wise function of the cut operands, broadcast to ``x``'s shape, is the function of
    ``x``: its values computed once each (``ml_dtypes``' casts of a stride-0 view run several
    times slower than of the values)."""
    if not x.ndim or x.size == 0 or 0 not in x.strides:
        return x
    return x[tuple(slice(0, 1) if s == 0 else slice(None) for s in x.strides)]


@lru_cache(maxsize=None)
def _f32_of_bytes(dt: np.dtype) -> np.ndarray:
    """The f32 value of each byte pattern of the 8-bit float type ``dt`` (``ml_dtypes``' own
    conversion)."""
    with np.errstate(invalid="ignore"):
        return np.arange(256, dtype=np.uint8).view(dt).astype(F32)


PAIR_TABLE_MIN = 1 << 16
"""Elements from which :func:`f32_values` reads an 8-bit array two elements at a time."""


@lru_cache(maxsize=None)
def _f32_of_byte_pairs(dt: np.dtype) -> np.ndarray:
    """:func:`_f32_of_bytes` of two consecutive elements at once: entry ``i`` (a ``uint64``) holds
    the f32 values of the two bytes of the ``uint16`` ``i`` in their memory order."""
    pairs = np.arange(1 << 16, dtype=np.uint16).view(np.uint8).reshape(-1, 2)
    return np.take(_f32_of_bytes(dt), pairs).view(np.uint64).reshape(-1)


def f32_values(x) -> np.ndarray:
    """The values of a float array of a type narrower than f32 (bf16, f8, ...), as f32:
    exactly ``x.astype(f32)`` (8-bit types through a table of that conversion, read two
    elements at a time from a C-ordered array of an even number of at least
    :data:`PAIR_TABLE_MIN` elements: the same values, half as many look-ups); an f16, f32 or
    f64 array itself."""
    x = np.asarray(x)
    if x.dtype in NATIVE_FLOATS:
        return x
    if x.dtype.itemsize == 1 and x.ndim:
        if x.size >= PAIR_TABLE_MIN and not x.size % 2 and x.flags.c_contiguous:
            codes = x.reshape(-1).view(np.uint8).view(np.uint16)
            return np.take(_f32_of_byte_pairs(x.dtype), codes).view(F32).reshape(x.shape)
        return np.take(_f32_of_bytes(x.dtype), x.view(np.uint8))
    with np.errstate(invalid="ignore"):
        return x.astype(F32)


# --------------------------------------------------------------------------- #
# tables of 8- and 16-bit operands
# --------------------------------------------------------------------------- #

TABLE_MIN = {256: 1 << 6, 1 << 16: 1 << 14}
"""Operands of a table of so many entries: the least result size that reads it (its one
computation costs about a quarter of that many kernel calls on the result's size)."""


@lru_cache(maxsize=None)
def _table(fn: Callable, ins: tuple[np.dtype, ...], dt: np.dtype) -> np.ndarray | None:
    """``fn(dt, *xs)`` of every combination of operand bit patterns: the first operand's
    pattern in the high bits of the index; None where ``fn`` raises (the kernel then reports
    it)."""
    ut = np.uint8 if len(ins) == 2 else {1: np.uint8, 2: np.uint16}[ins[0].itemsize]
    codes = np.arange(1 << (8 * np.dtype(ut).itemsize * len(ins)), dtype=np.uint16 if len(ins) == 2 else ut)
    xs = [codes.astype(ut).view(ins[0])] if len(ins) == 1 else [
        (codes >> 8).astype(ut).view(ins[0]), (codes & 0xFF).astype(ut).view(ins[1])]
    try:
        return out(fn(dt, *xs), dt)
    except Exception:  # noqa: BLE001 - the kernel raises it again on the op's own operands
        return None


def _table_entries(ins: tuple[np.dtype, ...]) -> int | None:
    """The entries of :func:`_table` for operands of these types: a unary op on a float type of
    8 or 16 bits or a binary op on two 8-bit float types; None for others."""
    if not all(is_float(d) for d in ins) or not (len(ins) == 1 and ins[0].itemsize <= 2
                                                 or len(ins) == 2 and ins[0].itemsize == ins[1].itemsize == 1):
        return None
    return 1 << (8 * sum(d.itemsize for d in ins))


def _table_path(fn: Callable, ins: tuple[np.dtype, ...], dt: np.dtype, shape) -> FastPath | None:
    """``fn`` read from :func:`_table` for a unary op on a float type of 8 or 16 bits or a binary
    op on two 8-bit float types, with a result of at least :data:`TABLE_MIN` elements; the
    value ``fn`` computes for each operand (``fn`` is element-wise: the kernels of
    :func:`elementwise`), so the kernel's, bit for bit."""
    entries = _table_entries(ins)
    table = None if entries is None or int(np.prod(shape)) < TABLE_MIN[entries] else _table(fn, ins, dt)
    if table is None:
        return None
    return FastPath(lambda *xs: _read(table, xs), views=True, fresh=True)


def _read(table: np.ndarray, xs: tuple) -> np.ndarray:
    """The entries of :func:`_table` ``table`` at the operands' bit patterns (a binary op's first
    operand in the high bits of the index)."""
    if len(xs) == 1:
        return np.take(table, xs[0].view(np.uint8 if xs[0].dtype.itemsize == 1 else np.uint16))
    index = xs[0].view(np.uint8).astype(np.uint16)
    index <<= 8
    index |= xs[1].view(np.uint8)
    return np.take(table, index)


def elementwise(fn: Callable, native: dict[str, Callable] | None = None) -> Callable:
    """The fast-path factory of an element-wise kernel ``apply``-ing ``fn(dt, *xs)``
    (``kernels.elementwise.apply``): ``native[family]`` itself (a ufunc, see
    :func:`native_family`, or a :class:`FastPath`) where every operand has the result's type
    and the kernel computes exactly that there; a ``native["float"]`` ufunc of
    :data:`ROUNDED_IN_F32` on bf16 (:func:`in_f32`); a table of ``fn`` on 8-bit (and unary
    16-bit) float operands (:func:`_table_path`; on a smaller result, from the time the ops of
    its kind have computed as many elements: :func:`_table_in_time`); else ``fn`` called
    directly (the kernel without its dispatch)."""

    def fast(op) -> FastPath | None:
        types = plain_types(op)
        if types is None:
            return None
        ins, dt, shape = types
        if native and all(d == dt for d in ins):
            uf = native.get(native_family(dt))
            if isinstance(uf, FastPath):
                return uf
            if uf is not None:
                return ufunc_path(uf, shape)
            uf = native.get("float")
            if uf in ROUNDED_IN_F32 and rounds_in_f32(dt) and dt.itemsize == 2:
                return FastPath(lambda *xs: in_f32(uf, dt, *xs), views=True, fresh=True)
        if all(tuple(t.shape) == shape for t in op.operand_types):
            table = _table_path(fn, ins, dt, shape)
            if table is not None:
                return table
        name, loc = op.name, str(op.loc)

        def call(*xs):
            try:
                r = fn(dt, *xs)
            except NotImplementedError as e:  # as kernels.elementwise.apply reports it
                raise UnsupportedOp(name, str(e), loc) from None
            return out(r, dt)

        entries = _table_entries(ins) if all(tuple(t.shape) == shape for t in op.operand_types) else None
        if entries is None:
            return FastPath(call)
        return _table_in_time(call, fn, ins, dt, int(np.prod(shape)), TABLE_MIN[entries])

    return fast


_direct: dict[tuple, int] = {}  # (fn, operand types, result type) -> elements its ops computed directly


def _table_in_time(call: Callable, fn: Callable, ins: tuple[np.dtype, ...], dt: np.dtype, size: int,
                   least: int) -> FastPath:
    """``call`` (``fn`` computed directly) for an op whose result is too small to pay for a table
    (:func:`_table_path`) until the ops of this kernel function and types have computed
    ``least`` elements in all in the process (a layer norm's ``rsqrt`` of one value per row,
    once per layer and per run: about 20 microseconds a call, against one or two from the
    table), then :func:`_table`'s value of each operand: the same ``fn`` of the same bit
    patterns, so the same bits, from a table built once per kernel function and types for the
    process (every op of that kind reads it)."""
    key = (fn, ins, dt)
    table: list = []  # the table once read (None in it where fn raises on some bit pattern)

    def counted(*xs):
        if not table:
            done = _direct.get(key, 0)
            if done < least:
                _direct[key] = done + size
                return call(*xs)
            table.append(_table(fn, ins, dt))
        # where fn raises on some bit pattern, the op keeps calling it
        return call(*xs) if table[0] is None else _read(table[0], xs)

    return FastPath(counted)
