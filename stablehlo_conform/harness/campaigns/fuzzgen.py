"""Seeded random StableHLO programs for differential runs (``conform fuzz``).

:func:`generate` ``(seed, index)`` gives program ``index`` of campaign
``seed``: its text (one function ``@main``), its inputs and what it is made
of. The program depends only on ``(seed, index)`` (a NumPy generator seeded
with both), so a shard of a campaign generates exactly the programs the whole
campaign would.

Kinds of programs: element-wise chains (every element type: floats incl.
bf16, f16 and f8, signed and unsigned integers, bool, complex), broadcasts,
reductions, gathers, scatters, dot products, convolutions (padded, strided,
dilated, grouped), ``while`` / ``if`` / ``case``, conversions, and programs
aimed at known numerical traps: ``multiply`` + ``add`` chains whose addend
cancels the product (FMA contraction changes the result), subnormal inputs
(flushing to zero), padded convolutions with infinite weights (a padding zero
times infinity is NaN) and grouped convolutions with a NaN in one feature
group (it must stay in its group).

Inputs are drawn from each op's domain (divisors away from zero, logarithm and
square root of positive values, shift amounts below the bit width, indices in
range, conversions within the target's range); a program whose values still
leave the finite range on the NumPy engine is redrawn (the next attempt of
the same ``(seed, index)``), except the deliberate special-value kinds.
Every program is parsed and verified by the official bindings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ... import frontend
from ... import types as T
from ...compare import _float_info
from ...errors import ConformError
from ..backends import get_backend

FLOATS = ("f32", "f64", "f16", "bf16")
F8 = ("f8E4M3FN", "f8E5M2")
SIGNED = ("i8", "i16", "i32", "i64")
UNSIGNED = ("ui8", "ui16", "ui32", "ui64")
COMPLEX = ("complex<f32>", "complex<f64>")
ALL_TYPES = FLOATS + F8 + SIGNED + UNSIGNED + ("i1",) + COMPLEX

BINARY_ANY = ("add", "subtract", "multiply", "maximum", "minimum")
BINARY_INT = ("and", "or", "xor", "shift_left", "shift_right_logical", "shift_right_arithmetic")
UNARY_FLOAT = ("negate", "abs", "floor", "ceil", "round_nearest_even", "round_nearest_afz", "sign", "sqrt",
               "rsqrt", "log", "log_plus_one", "exponential", "exponential_minus_one", "tanh", "sine", "cosine",
               "logistic", "cbrt")
UNARY_INT = ("negate", "abs", "not", "popcnt", "count_leading_zeros", "sign")
COMPARISONS = ("EQ", "NE", "LT", "LE", "GT", "GE")
# the domain an op's operand is drawn from when it reads an argument
POSITIVE = {"sqrt", "rsqrt", "log"}
ABOVE_MINUS_ONE = {"log_plus_one"}
NONZERO_DIVISOR = {"divide", "remainder"}


@dataclass
class Program:
    """One generated program."""

    seed: int
    index: int
    kind: str
    text: str
    inputs: list[np.ndarray]
    element_types: list[str]
    special: bool = False  # inputs deliberately hold subnormals, infinities or NaN
    attempt: int = 0
    ops: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"fuzz/{self.seed}/{self.index}"


def tensor(shape, et: str) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + et + ">"


def dtype_of(et: str) -> np.dtype:
    return np.dtype(T.element_type(et).dtype)


def is_float(et: str) -> bool:
    return et in FLOATS or et in F8


# --------------------------------------------------------------------------- #
# Inputs drawn from a domain
# --------------------------------------------------------------------------- #


def draw(rng: np.random.Generator, shape, et: str, domain: str = "any") -> np.ndarray:
    """Random values of type ``et``: ``domain`` is ``any``, ``positive``,
    ``above-1`` (> -1), ``nonzero``, ``small`` (|x| < 2), ``shift`` (shift
    amounts of the type, a few beyond its width), ``bool``."""
    dt = dtype_of(et)
    shape = tuple(shape)
    if et == "i1":
        return rng.integers(0, 2, shape).astype(bool)
    if et in COMPLEX:
        part = np.float32 if et == "complex<f32>" else np.float64
        re_ = rng.uniform(-4, 4, shape).astype(part)
        im = rng.uniform(-4, 4, shape).astype(part)
        if domain == "nonzero":
            re_ = (np.abs(re_) + 0.5).astype(part)
        return (re_ + 1j * im).astype(dt)
    if dt.kind in "iu":
        bits = dt.itemsize * 8
        if domain == "shift":
            return rng.integers(0, bits + 3, shape).astype(dt)
        lo, hi = (0, 100) if dt.kind == "u" else (-100, 100)
        if domain == "wide":
            info = np.iinfo(dt)
            return rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)
        a = rng.integers(lo, hi + 1, shape).astype(dt)
        if domain in ("nonzero", "positive"):
            a = np.where(a == 0, dt.type(1), a).astype(dt)
            if domain == "positive" and dt.kind == "i":
                a = np.abs(a).astype(dt)
        return a
    if domain == "positive":
        a = rng.uniform(0.125, 8, shape)
    elif domain == "above-1":
        a = rng.uniform(-0.75, 8, shape)
    elif domain == "nonzero":
        a = rng.uniform(0.5, 4, shape) * rng.choice([-1.0, 1.0], shape)
    elif domain == "small":
        a = rng.uniform(-2, 2, shape)
    else:
        a = rng.uniform(-4, 4, shape)
    if et in F8:
        a = np.clip(a, -4, 4)
    return a.astype(dt)


def subnormals(rng: np.random.Generator, shape, et: str) -> np.ndarray:
    """Subnormal values of a float type (and a few zeros)."""
    dt = dtype_of(et)
    tiny = float(_float_info(dt).smallest_normal)
    a = rng.uniform(-tiny, tiny, tuple(shape))
    return a.astype(dt)


# --------------------------------------------------------------------------- #
# Building text
# --------------------------------------------------------------------------- #


class _Builder:
    """Lines of ``@main`` with fresh SSA names and its arguments."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.lines: list[str] = []
        self.params: list[tuple[str, str]] = []
        self.inputs: list[np.ndarray] = []
        self.n = 0
        self.ops: list[str] = []

    def arg(self, shape, et: str, value: np.ndarray) -> str:
        name = f"%arg{len(self.params)}"
        self.params.append((name, tensor(shape, et)))
        self.inputs.append(np.asarray(value).reshape(tuple(shape)))
        return name

    def fresh(self) -> str:
        self.n += 1
        return f"%{self.n}"

    def op(self, text: str, opname: str | None = None, indent: int = 1) -> str:
        name = self.fresh()
        self.lines.append("  " * indent + f"{name} = {text}")
        if opname:
            self.ops.append(opname)
        return name

    def const(self, value: str, ty: str, indent: int = 1) -> str:
        return self.op(f"stablehlo.constant dense<{value}> : {ty}", None, indent)

    def finish(self, results: list[tuple[str, str]]) -> str:
        params = ", ".join(f"{n}: {t}" for n, t in self.params)
        rtypes = ", ".join(t for _n, t in results)
        rtype = rtypes if len(results) == 1 else f"({rtypes})"
        ret = ", ".join(n for n, _t in results)
        body = "\n".join(self.lines)
        return f"func.func @main({params}) -> {rtype} {{\n{body}\n  func.return {ret} : {rtypes}\n}}\n"


def _shape(rng: np.random.Generator, max_rank: int = 3, max_dim: int = 5) -> tuple[int, ...]:
    rank = int(rng.integers(0, max_rank + 1))
    return tuple(int(d) for d in rng.integers(1, max_dim + 1, rank))


def _pick(rng: np.random.Generator, seq):
    return seq[int(rng.integers(0, len(seq)))]


def _ops_for(et: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(binary, unary) element-wise ops of an element type."""
    if et == "i1":
        return ("and", "or", "xor"), ("not",)
    if et in COMPLEX:
        return ("add", "subtract", "multiply"), ("negate", "exponential", "tanh", "sine", "cosine", "sqrt")
    if et in F8:
        return ("add", "subtract", "multiply", "maximum", "minimum"), ("negate", "abs", "floor", "ceil", "sign")
    if is_float(et):
        return BINARY_ANY + ("divide", "atan2", "power"), UNARY_FLOAT
    unary = UNARY_INT if et in SIGNED else tuple(u for u in UNARY_INT if u not in ("negate", "abs", "sign"))
    return BINARY_ANY + BINARY_INT + ("divide", "remainder"), unary


def _domain(op: str, et: str, operand: int) -> str:
    if op in POSITIVE or (op == "power" and operand == 0):
        return "positive"
    if op in ABOVE_MINUS_ONE:
        return "above-1"
    if op in NONZERO_DIVISOR and operand == 1:
        return "nonzero"
    if op.startswith("shift") and operand == 1:
        return "shift"
    if op in ("exponential", "exponential_minus_one", "power"):
        return "small"
    if et in SIGNED + UNSIGNED and op in BINARY_INT + ("popcnt", "count_leading_zeros", "not", "xor"):
        return "wide"
    return "any"


def _elementwise(b: _Builder, shape, et: str, length: int, pool: list[str] | None = None, indent: int = 1,
                 first_args: bool = True) -> list[str]:
    """A chain of ``length`` element-wise ops over a pool of values of
    ``tensor(shape, et)``; an op that reads a new argument draws it from the
    op's domain. Returns the pool (arguments and results, last is the
    chain's end)."""
    rng = b.rng
    ty = tensor(shape, et)
    pool = list(pool or [])
    binary, unary = _ops_for(et)
    for _ in range(length):
        if rng.random() < 0.6:
            op = _pick(rng, binary)
            operands = []
            for k in range(2):
                # domain-restricted operands come from fresh arguments
                need = _domain(op, et, k)
                if need != "any" and need != "wide" or not pool or (first_args and rng.random() < 0.35):
                    operands.append(b.arg(shape, et, draw(rng, shape, et, need)))
                else:
                    operands.append(_pick(rng, pool))
            name = b.op(f"stablehlo.{op} {operands[0]}, {operands[1]} : {ty}", f"stablehlo.{op}", indent)
        else:
            op = _pick(rng, unary)
            need = _domain(op, et, 0)
            if need not in ("any", "wide") or not pool or rng.random() < 0.25:
                x = b.arg(shape, et, draw(rng, shape, et, need))
            else:
                x = _pick(rng, pool)
            name = b.op(f"stablehlo.{op} {x} : {ty}", f"stablehlo.{op}", indent)
        pool.append(name)
    return pool


# --------------------------------------------------------------------------- #
# Kinds of programs
# --------------------------------------------------------------------------- #


def _k_elementwise(b: _Builder) -> tuple[list[tuple[str, str]], list[str], bool]:
    rng = b.rng
    et = _pick(rng, ALL_TYPES)
    shape = _shape(rng)
    pool = _elementwise(b, shape, et, int(rng.integers(1, 7)))
    out = [(pool[-1], tensor(shape, et))]
    r = rng.random()
    if r < 0.2 and et != "i1" and et not in COMPLEX:
        d = _pick(rng, COMPARISONS)
        y = b.arg(shape, et, draw(rng, shape, et))
        c = b.op(f"stablehlo.compare {d}, {pool[-1]}, {y} : ({tensor(shape, et)}, {tensor(shape, et)}) -> "
                 f"{tensor(shape, 'i1')}", "stablehlo.compare")
        s = b.op(f"stablehlo.select {c}, {pool[-1]}, {y} : {tensor(shape, 'i1')}, {tensor(shape, et)}",
                 "stablehlo.select")
        out = [(s, tensor(shape, et))]
    return out, [et], False


def _k_convert(b: _Builder):
    rng = b.rng
    src = _pick(rng, FLOATS + F8 + SIGNED + UNSIGNED + ("i1",))
    dst = _pick(rng, FLOATS + F8 + SIGNED + UNSIGNED + ("i1",) + COMPLEX)
    shape = _shape(rng)
    a = draw(rng, shape, src)
    if dst in UNSIGNED and src not in ("i1",):
        a = np.abs(a.astype(np.float64)).astype(a.dtype)
    if dst in SIGNED + UNSIGNED and is_float(src):
        a = (a.astype(np.float64) * 10).astype(a.dtype)  # still within every integer type's range
    x = b.arg(shape, src, a)
    r = b.op(f"stablehlo.convert {x} : ({tensor(shape, src)}) -> {tensor(shape, dst)}", "stablehlo.convert")
    return [(r, tensor(shape, dst))], [src, dst], False


def _k_fma(b: _Builder):
    """``a * b + c`` chains; mostly with ``c`` the negated rounded product
    (the exact result is 0, a fused multiply-add gives the rounding error)."""
    rng = b.rng
    et = _pick(rng, ("f32", "f64", "f32", "f16", "bf16"))
    shape = (int(rng.integers(1, 9)),)
    dt = dtype_of(et)
    x = draw(rng, shape, et)
    y = draw(rng, shape, et)
    cancel = rng.random() < 0.75
    z = (-(x.astype(np.float64) * y.astype(np.float64)).astype(dt)) if cancel else draw(rng, shape, et)
    ty = tensor(shape, et)
    a, bb, c = b.arg(shape, et, x), b.arg(shape, et, y), b.arg(shape, et, z.astype(dt))
    m = b.op(f"stablehlo.multiply {a}, {bb} : {ty}", "stablehlo.multiply")
    s = b.op(f"stablehlo.add {m}, {c} : {ty}", "stablehlo.add")
    if rng.random() < 0.4:
        s = _elementwise(b, shape, et, 1, [s], first_args=False)[-1]
    return [(s, ty)], [et], cancel


def _k_subnormal(b: _Builder):
    """Element-wise ops on subnormal inputs."""
    rng = b.rng
    et = _pick(rng, ("f32", "f64", "f16", "bf16"))
    shape = (int(rng.integers(1, 9)),)
    ty = tensor(shape, et)
    op = _pick(rng, ("add", "subtract", "multiply", "maximum", "minimum", "negate", "abs", "convert"))
    x = b.arg(shape, et, subnormals(rng, shape, et))
    if op == "convert":
        wide = "f64" if et != "f64" else "f32"
        r = b.op(f"stablehlo.convert {x} : ({ty}) -> {tensor(shape, wide)}", "stablehlo.convert")
        return [(r, tensor(shape, wide))], [et], True
    if op in ("negate", "abs"):
        r = b.op(f"stablehlo.{op} {x} : {ty}", f"stablehlo.{op}")
    else:
        other = subnormals(rng, shape, et) if op != "multiply" else draw(rng, shape, et, "small")
        y = b.arg(shape, et, other)
        r = b.op(f"stablehlo.{op} {x}, {y} : {ty}", f"stablehlo.{op}")
    return [(r, ty)], [et], True


def _k_broadcast(b: _Builder):
    rng = b.rng
    et = _pick(rng, FLOATS + SIGNED + UNSIGNED + COMPLEX)
    shape = tuple(int(d) for d in rng.integers(1, 5, int(rng.integers(1, 4))))
    keep = sorted(int(i) for i in rng.choice(len(shape), int(rng.integers(0, len(shape) + 1)), replace=False))
    small = tuple(shape[i] if rng.random() < 0.7 else 1 for i in keep)
    x = b.arg(small, et, draw(rng, small, et))
    bc = b.op(f"stablehlo.broadcast_in_dim {x}, dims = [{', '.join(map(str, keep))}] : "
              f"({tensor(small, et)}) -> {tensor(shape, et)}", "stablehlo.broadcast_in_dim")
    pool = _elementwise(b, shape, et, int(rng.integers(1, 3)), [bc])
    return [(pool[-1], tensor(shape, et))], [et], False


def _reducer_body(b: _Builder, op: str, et: str, indent: int) -> None:
    s = tensor((), et)
    b.lines.append("  " * indent + f"^bb0(%lhs: {s}, %rhs: {s}):")
    r = b.op(f"stablehlo.{op} %lhs, %rhs : {s}", None, indent + 1)
    b.lines.append("  " * (indent + 1) + f"stablehlo.return {r} : {s}")


def _k_reduce(b: _Builder):
    rng = b.rng
    et = _pick(rng, FLOATS + SIGNED + UNSIGNED + ("i1",) + COMPLEX)
    shape = tuple(int(d) for d in rng.integers(1, 7, int(rng.integers(1, 4))))
    if et == "i1":
        op, init = _pick(rng, (("and", "true"), ("or", "false")))
    elif et in COMPLEX:
        op, init = "add", "(0.0, 0.0)"
    else:
        op = _pick(rng, ("add", "maximum", "minimum", "multiply") if is_float(et) else ("add", "maximum", "minimum",
                                                                                          "and", "or", "xor"))
        if op in ("maximum", "minimum"):
            if is_float(et):
                init = "-1.0e+03" if op == "maximum" else "1.0e+03"  # beyond every input
            else:
                info = np.iinfo(dtype_of(et))
                init = str(int(info.min if op == "maximum" else info.max))
        elif op == "multiply":
            init = "1.0"
        elif op == "and":
            init = "-1" if et in SIGNED else str(int(np.iinfo(dtype_of(et)).max))
        else:
            init = "0.0" if is_float(et) else "0"
    x = b.arg(shape, et, draw(rng, shape, et, "positive" if op == "multiply" else "any"))
    if op == "multiply":  # values near 1 keep the product finite
        b.inputs[-1] = (0.75 + b.inputs[-1].astype(np.float64) / 16).astype(b.inputs[-1].dtype)
    dims = sorted(int(i) for i in rng.choice(len(shape), int(rng.integers(1, len(shape) + 1)), replace=False))
    out_shape = tuple(d for i, d in enumerate(shape) if i not in dims)
    s = tensor((), et)
    c = b.const(init, s)
    name = b.fresh()
    b.lines.append(f"  {name} = stablehlo.reduce({x} init: {c}) across dimensions = [{', '.join(map(str, dims))}] "
                   f": ({tensor(shape, et)}, {s}) -> {tensor(out_shape, et)}")
    b.lines.append("   reducer(%lhs: " + s + ", %rhs: " + s + ") {")
    r = b.op(f"stablehlo.{op} %lhs, %rhs : {s}", None, 2)
    b.lines.append(f"    stablehlo.return {r} : {s}")
    b.lines.append("  }")
    b.ops.append("stablehlo.reduce")
    return [(name, tensor(out_shape, et))], [et], False


def _k_dot(b: _Builder):
    rng = b.rng
    et = _pick(rng, FLOATS + SIGNED + COMPLEX + ("ui8", "ui32"))
    m, k, n = (int(d) for d in rng.integers(1, 9, 3))
    batch = rng.random() < 0.4
    bs = (int(rng.integers(1, 4)),) if batch else ()
    ls, rs, os_ = bs + (m, k), bs + (k, n), bs + (m, n)
    x = b.arg(ls, et, draw(rng, ls, et))
    y = b.arg(rs, et, draw(rng, rs, et))
    nb = len(bs)
    dims = ("batching_dims = [0] x [0], " if batch else "") + f"contracting_dims = [{nb + 1}] x [{nb}]"
    r = b.op(f"stablehlo.dot_general {x}, {y}, {dims} : ({tensor(ls, et)}, {tensor(rs, et)}) -> {tensor(os_, et)}",
             "stablehlo.dot_general")
    return [(r, tensor(os_, et))], [et], False


def _conv(b: _Builder, et: str, groups: int, spatial: int, pad_hi: int, special: str | None):
    rng = b.rng
    cin_g = int(rng.integers(1, 3))
    cin, cout = cin_g * groups, groups * int(rng.integers(1, 3))
    size = tuple(int(d) for d in rng.integers(2, 6, spatial))
    ksize = tuple(int(rng.integers(1, min(3, s) + 1)) for s in size)
    stride = tuple(int(rng.integers(1, 3)) for _ in range(spatial))
    pad = [(int(rng.integers(0, pad_hi + 1)), int(rng.integers(0, pad_hi + 1))) for _ in range(spatial)]
    if special == "inf-weight" and all(p == (0, 0) for p in pad):
        pad[0] = (1, 1)
    rdil = tuple(int(rng.integers(1, 3)) if ksize[i] > 1 and rng.random() < 0.3 else 1 for i in range(spatial))
    out = tuple((size[i] + sum(pad[i]) - (ksize[i] - 1) * rdil[i] - 1) // stride[i] + 1 for i in range(spatial))
    if min(out) < 1:
        pad = [(p[0], p[1] + 4) for p in pad]
        out = tuple((size[i] + sum(pad[i]) - (ksize[i] - 1) * rdil[i] - 1) // stride[i] + 1 for i in range(spatial))
    lshape, rshape, oshape = (1,) + size + (cin,), ksize + (cin_g, cout), (1,) + out + (cout,)
    lhs = draw(rng, lshape, et, "small")
    rhs = draw(rng, rshape, et, "small")
    if special == "inf-weight":
        rhs.reshape(-1)[int(rng.integers(0, rhs.size))] = np.inf
    if special == "nan-group":
        lhs[..., int(rng.integers(0, cin))] = np.nan
    x, w = b.arg(lshape, et, lhs), b.arg(rshape, et, rhs)
    sp = ", ".join(str(i) for i in range(spatial))
    window = (f"stride = [{', '.join(map(str, stride))}], "
              f"pad = [{', '.join(f'[{lo}, {hi}]' for lo, hi in pad)}], "
              f"rhs_dilate = [{', '.join(map(str, rdil))}]")
    r = b.op(f"stablehlo.convolution({x}, {w}) dim_numbers = [b, {sp}, f]x[{sp}, i, o]->[b, {sp}, f], "
             f"window = {{{window}}} {{batch_group_count = 1 : i64, feature_group_count = {groups} : i64}} : "
             f"({tensor(lshape, et)}, {tensor(rshape, et)}) -> {tensor(oshape, et)}", "stablehlo.convolution")
    return [(r, tensor(oshape, et))]


def _k_conv(b: _Builder):
    rng = b.rng
    et = _pick(rng, ("f32", "f64", "f16", "bf16", "i32", "f32"))
    groups = int(rng.integers(1, 4)) if rng.random() < 0.4 else 1
    return _conv(b, et, groups, int(rng.integers(1, 3)), 2, None), [et], False


def _k_conv_special(b: _Builder):
    """Padded convolutions with an infinite weight; grouped f64 (or f32)
    convolutions with a NaN feature."""
    rng = b.rng
    if rng.random() < 0.5:
        et = _pick(rng, ("f32", "f64"))
        return _conv(b, et, int(rng.integers(1, 3)), int(rng.integers(1, 3)), 2, "inf-weight"), [et], True
    et = _pick(rng, ("f64", "f64", "f32"))
    return _conv(b, et, int(rng.integers(2, 4)), int(rng.integers(1, 3)), 1, "nan-group"), [et], True


def _k_gather(b: _Builder):
    rng = b.rng
    et = _pick(rng, FLOATS + SIGNED + UNSIGNED + COMPLEX + ("i1",))
    n, m, k = (int(d) for d in rng.integers(1, 6, 3))
    x = b.arg((n, m), et, draw(rng, (n, m), et))
    idx = b.arg((k, 1), "i32", rng.integers(0, n, (k, 1)).astype(np.int32))
    r = b.op(f'"stablehlo.gather"({x}, {idx}) {{dimension_numbers = #stablehlo.gather<offset_dims = [1], '
             f'collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, '
             f'slice_sizes = array<i64: 1, {m}>, indices_are_sorted = false}} : '
             f'({tensor((n, m), et)}, {tensor((k, 1), "i32")}) -> {tensor((k, m), et)}', "stablehlo.gather")
    return [(r, tensor((k, m), et))], [et], False


def _k_scatter(b: _Builder):
    rng = b.rng
    et = _pick(rng, FLOATS + SIGNED + UNSIGNED)
    n, m, k = (int(d) for d in rng.integers(1, 6, 3))
    op = _pick(rng, ("add", "maximum", "minimum"))
    unique = rng.random() < 0.5 and k <= n
    rows = rng.permutation(n)[:k] if unique else rng.integers(0, n, k)
    x = b.arg((n, m), et, draw(rng, (n, m), et))
    idx = b.arg((k, 1), "i32", rows.reshape(k, 1).astype(np.int32))
    u = b.arg((k, m), et, draw(rng, (k, m), et))
    name = b.fresh()
    b.lines.append(f'  {name} = "stablehlo.scatter"({x}, {idx}, {u}) ({{')
    _reducer_body(b, op, et, 2)
    b.lines.append(f'  }}) {{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], '
                   f'inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, '
                   f'indices_are_sorted = false, unique_indices = {"true" if unique else "false"}}} : '
                   f'({tensor((n, m), et)}, {tensor((k, 1), "i32")}, {tensor((k, m), et)}) -> {tensor((n, m), et)}')
    b.ops.append("stablehlo.scatter")
    return [(name, tensor((n, m), et))], [et], False


def _loop_type(rng):
    return _pick(rng, ("f32", "f64", "f16", "bf16", "i32", "i64", "ui32", "i8"))


def _k_while(b: _Builder):
    """A counted loop whose body is an element-wise chain over the carried
    value and an argument carried unchanged."""
    rng = b.rng
    et = _loop_type(rng)
    shape = _shape(rng, 2, 4)
    ty = tensor(shape, et)
    trips = int(rng.integers(0, 5))
    x = b.arg(shape, et, draw(rng, shape, et, "small"))
    y = b.arg(shape, et, draw(rng, shape, et, "small"))
    c0 = b.const("0", "tensor<i64>")
    res = b.fresh()
    b.lines.append(f"  {res}:3 = stablehlo.while(%i = {c0}, %x = {x}, %y = {y}) : tensor<i64>, {ty}, {ty}")
    b.lines.append("    cond {")
    n = b.const(str(trips), "tensor<i64>", 3)
    p = b.op(f"stablehlo.compare LT, %i, {n} : (tensor<i64>, tensor<i64>) -> tensor<i1>", None, 3)
    b.lines.append(f"      stablehlo.return {p} : tensor<i1>")
    b.lines.append("    } do {")
    one = b.const("1", "tensor<i64>", 3)
    i2 = b.op(f"stablehlo.add %i, {one} : tensor<i64>", None, 3)
    # the body's ops read only the carried values
    binary, unary = _ops_for(et)
    safe_b = [o for o in binary if o in ("add", "subtract", "maximum", "minimum", "multiply", "xor", "and", "or")]
    safe_u = [o for o in unary if o in ("negate", "tanh", "sine", "cosine", "abs", "not", "floor", "logistic")]
    pool = ["%x", "%y"]
    for _ in range(int(rng.integers(1, 4))):
        if rng.random() < 0.6 or not safe_u:
            op = _pick(rng, safe_b)
            v = b.op(f"stablehlo.{op} {_pick(rng, pool)}, {_pick(rng, pool)} : {ty}", f"stablehlo.{op}", 3)
        else:
            op = _pick(rng, safe_u)
            v = b.op(f"stablehlo.{op} {_pick(rng, pool)} : {ty}", f"stablehlo.{op}", 3)
        pool.append(v)
    b.lines.append(f"      stablehlo.return {i2}, {pool[-1]}, %y : tensor<i64>, {ty}, {ty}")
    b.lines.append("    }")
    b.ops.append("stablehlo.while")
    return [(f"{res}#1", ty)], [et], False


def _branches(b: _Builder, count: int, shape, et: str, head: str, pred_ty: str):
    rng = b.rng
    ty = tensor(shape, et)
    xs = [b.arg(shape, et, draw(rng, shape, et, "small")) for _ in range(2)]
    name = b.fresh()
    b.lines.append(f'  {name} = "stablehlo.{head}"({{pred}}) ({{')
    head_line = len(b.lines) - 1
    binary, unary = _ops_for(et)
    safe_b = [o for o in binary if o in ("add", "subtract", "maximum", "minimum", "multiply", "xor", "and", "or")]
    for i in range(count):
        if i:
            b.lines.append("  }, {")
        op = _pick(rng, safe_b)
        v = b.op(f"stablehlo.{op} {xs[0]}, {xs[i % 2]} : {ty}", f"stablehlo.{op}", 2)
        b.lines.append(f"    stablehlo.return {v} : {ty}")
    b.lines.append(f"  }}) : ({pred_ty}) -> {ty}")
    b.ops.append(f"stablehlo.{head}")
    return name, head_line


def _k_if(b: _Builder):
    rng = b.rng
    et, shape = _loop_type(rng), _shape(rng, 2, 4)
    p = b.arg((), "i1", np.array(rng.random() < 0.5))
    name, line = _branches(b, 2, shape, et, "if", "tensor<i1>")
    b.lines[line] = b.lines[line].replace("{pred}", p)
    return [(name, tensor(shape, et))], [et], False


def _k_case(b: _Builder):
    rng = b.rng
    et, shape = _loop_type(rng), _shape(rng, 2, 4)
    count = int(rng.integers(2, 5))
    # out-of-range indices select the last branch (spec.md#case)
    p = b.arg((), "i32", np.array(rng.integers(-1, count + 1), np.int32))
    name, line = _branches(b, count, shape, et, "case", "tensor<i32>")
    b.lines[line] = b.lines[line].replace("{pred}", p)
    return [(name, tensor(shape, et))], [et], False


KINDS: dict[str, tuple[float, Callable]] = {
    "elementwise": (6, _k_elementwise),
    "convert": (2, _k_convert),
    "fma": (2, _k_fma),
    "subnormal": (1.5, _k_subnormal),
    "broadcast": (1.5, _k_broadcast),
    "reduce": (2, _k_reduce),
    "dot": (2, _k_dot),
    "conv": (2, _k_conv),
    "conv-special": (1, _k_conv_special),
    "gather": (1, _k_gather),
    "scatter": (1, _k_scatter),
    "while": (1.5, _k_while),
    "if": (1, _k_if),
    "case": (1, _k_case),
}
MAX_ATTEMPTS = 8


def _finite(values) -> bool:
    for v in values:
        v = np.asarray(v)
        if v.dtype.kind in "fc" or v.dtype.name in ("bfloat16",) or "float8" in v.dtype.name:
            with np.errstate(invalid="ignore"):
                if not np.isfinite(v.astype(np.complex128 if v.dtype.kind == "c" else np.float64)).all():
                    return False
    return True


def generate(seed: int, index: int) -> Program:
    """Program ``index`` of campaign ``seed`` (parsed and verified; values
    finite on the NumPy engine unless the kind's inputs are special on
    purpose)."""
    names = list(KINDS)
    weights = np.array([KINDS[k][0] for k in names], float)
    last_error = ""
    for attempt in range(MAX_ATTEMPTS):
        rng = np.random.default_rng([seed, index, attempt])
        kind = names[int(rng.choice(len(names), p=weights / weights.sum()))]
        b = _Builder(rng)
        results, types, special = KINDS[kind][1](b)
        text = b.finish(results)
        try:
            module = frontend.load_text(text, f"<fuzz {seed}/{index}>")[0]
        except ConformError as e:  # a generator bug: the next attempt
            last_error = str(e)
            continue
        if not special:
            try:
                with np.errstate(all="ignore"):
                    values = get_backend("numpy").run_function(module, "main", list(b.inputs))
            except ConformError as e:
                last_error = str(e)
                continue
            if not _finite(values):
                last_error = "values not finite"
                continue
        return Program(seed, index, kind, text, b.inputs, types, special, attempt, b.ops)
    raise RuntimeError(f"program {index} of seed {seed}: no valid program in {MAX_ATTEMPTS} attempts: {last_error}")
