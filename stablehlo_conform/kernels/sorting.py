"""Sorting: ``stablehlo.sort`` and ``chlo.top_k``.

See spec.md#sort. The comparator region is evaluated on lanes: a bottom-up
merge sort merges all runs of one width at once, placing every element by a
vectorised binary search into the neighbouring run (one comparator call per
search step over all elements), which yields a stable sort for any strict
weak order.

Key extraction: the comparator region is analysed once (which block
arguments each value depends on). When it returns one ``compare LT|GT`` whose
lhs depends only on argument ``2k`` and rhs only on ``2k+1`` (either way
round), both sides are run once on lanes over the whole operand ``k``; if the
two key arrays agree bitwise, a stable ``np.argsort`` of the keys (ordered
as the compare kernel orders them: TOTALORDER, FLOAT without NaN keys,
SIGNED, UNSIGNED) gives the permutation, else the merge sort runs. This
covers JAX's float comparators (``-0 -> +0``, canonical NaN, TOTALORDER).
Lexicographic comparators (JAX's multi-key sorts, ``or(lt0, and(eq0, ...))``
or ``select(eq0, ..., lt0)``) sort by each key in turn, least significant
first.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..numeric import bits_of, wide
from .comparison import enum_value
from .comparison import total_order_key as cmp_total_order_key
from ..opinfo import EXACT, STORAGE
from .registry import kernel
from .. import types as T
from ..program import Block, Op, Region

_FLOAT_KINDS = ("float",)


def total_order_key(x: np.ndarray) -> np.ndarray:
    """int64 keys ordering floats as spec.md#compare's TOTALORDER:
    -NaN < -Inf < ... < -0 < +0 < ... < +Inf < +NaN."""
    v = np.asarray(x).astype(np.float64)
    i = v.view(np.int64)
    return np.where(i < 0, i ^ np.int64(0x7FFFFFFFFFFFFFFF), i)


def stable_argsort(keys: np.ndarray, descending: bool) -> np.ndarray:
    """Stable argsort along the last axis (ties keep their order)."""
    if not descending:
        return np.argsort(keys, axis=-1, kind="stable")
    n = keys.shape[-1]
    rev = np.argsort(keys[..., ::-1], axis=-1, kind="stable")[..., ::-1]
    return (n - 1) - rev


_IMPURE = frozenset({
    "stablehlo.custom_call", "stablehlo.rng", "stablehlo.rng_bit_generator",
    "stablehlo.infeed", "stablehlo.outfeed", "stablehlo.send", "stablehlo.recv",
    "stablehlo.optimization_barrier", "func.call",
})


class KeyPlan:
    """One sort key of a comparator: ``compare(f(a_k), f(b_k))``, operand
    ``k`` ordered by the key ``f`` computed once per element.

    ``sides`` holds, for the compare's lhs and rhs, how to compute the key
    from one block argument (both must agree bitwise on the operand);
    ``descending`` the order, ``ctype`` and ``element`` the comparison's
    type."""

    __slots__ = ("cmp", "ctype", "descending", "element", "k", "sides")

    def __init__(self, k, descending, ctype, element, sides, cmp):
        self.k = k
        self.descending = descending
        self.ctype = ctype
        self.element = element
        self.sides = sides  # per side: (arg vid, arg type, ops, key vid)
        self.cmp = cmp


def _key_plan(op) -> tuple[KeyPlan, ...] | None:
    """Analyse the comparator region once (which block arguments each value
    depends on): the sort keys, most significant first, or None.

    Matched return values: a ``compare LT|GT`` whose two sides each depend
    on one argument of the same operand pair (``2k`` and ``2k+1``, either way
    round); and lexicographic combinations ``or(lt, and(eq, rest))`` or
    ``select(eq, rest, lt)`` where ``eq`` is ``compare EQ`` of the same two
    values (same type) as the key compare ``lt``."""
    cached = op.op.__dict__.get("_sort_key_plan", False)
    if cached is not False:
        return cached
    plan = _analyse(op.op)
    op.op._sort_key_plan = plan
    return plan


def _analyse(sort_op) -> tuple[KeyPlan, ...] | None:
    if len(sort_op.regions) != 1 or len(sort_op.regions[0].blocks) != 1:
        return None
    block = sort_op.regions[0].blocks[0]
    ops = block.ops
    if not ops or ops[-1].name != "stablehlo.return" or len(ops[-1].operands) != 1:
        return None
    body = ops[:-1]
    arg_index = {v: i for i, v in enumerate(block.args)}
    deps: dict[int, frozenset] = {v: frozenset((i,)) for v, i in arg_index.items()}
    producer: dict[int, object] = {}
    for o in body:
        if o.regions or o.successors or o.name in _IMPURE:
            return None
        d = frozenset()
        for v in o.operands:
            d |= deps.get(v, frozenset())  # values from above depend on no argument
        for v in o.results:
            deps[v] = d
            producer[v] = o

    def side(value, arg):
        need = {value}
        chosen = []
        for o in reversed(body):
            if any(r in need for r in o.results):
                chosen.append(o)
                need.update(o.operands)
        return block.args[arg], block.arg_types[arg], tuple(reversed(chosen)), value

    def compare_of(v, directions):
        cmp = producer.get(v)
        if cmp is None or cmp.name != "stablehlo.compare" or len(cmp.operands) != 2:
            return None
        direction = enum_value(cmp.attrs.get("comparison_direction"))
        if direction not in directions:
            return None
        ty = cmp.operand_types[0]
        el = getattr(ty, "element", ty)
        if not isinstance(el, T.ElementType) or getattr(ty, "shape", ()) != ():
            return None
        if cmp.operand_types[1] != ty:
            return None
        ctype = enum_value(cmp.attrs.get("compare_type"))
        ok = {"float": ("TOTALORDER", "FLOAT", None), "int": ("SIGNED", None),
              "uint": ("UNSIGNED", None), "bool": ("UNSIGNED", None)}.get(el.kind, ())
        if ctype not in ok:
            return None
        if ctype is None:
            ctype = "FLOAT" if el.kind == "float" else ("SIGNED" if el.kind == "int" else "UNSIGNED")
        return cmp, direction, el, ctype

    def key(v):
        m = compare_of(v, ("LT", "GT"))
        if m is None:
            return None
        cmp, direction, el, ctype = m
        lhs, rhs = cmp.operands
        dl, dr = deps.get(lhs, frozenset()), deps.get(rhs, frozenset())
        if len(dl) != 1 or len(dr) != 1:
            return None
        (il,), (ir,) = dl, dr
        if il // 2 != ir // 2 or il == ir:
            return None
        descending = (direction == "GT") != (il % 2 == 1)
        return KeyPlan(il // 2, descending, ctype, el, (side(lhs, il), side(rhs, ir)), cmp)

    def is_eq_of(v, plan):
        m = compare_of(v, ("EQ",))
        if m is None:
            return False
        cmp, _, _, ctype = m
        same = tuple(cmp.operands) in (tuple(plan.cmp.operands), tuple(plan.cmp.operands)[::-1])
        return same and ctype == plan.ctype and cmp.operand_types == plan.cmp.operand_types

    def match(v, depth=0):
        if depth > 16:
            return None
        k = key(v)
        if k is not None:
            return (k,)
        o = producer.get(v)
        if o is None or len(o.operands) not in (2, 3):
            return None
        if o.name == "stablehlo.or" and len(o.operands) == 2:
            for lt_v, and_v in (o.operands, o.operands[::-1]):
                first = key(lt_v)
                a = producer.get(and_v)
                if first is None or a is None or a.name != "stablehlo.and" or len(a.operands) != 2:
                    continue
                for eq_v, rest_v in (a.operands, a.operands[::-1]):
                    if is_eq_of(eq_v, first):
                        rest = match(rest_v, depth + 1)
                        if rest is not None:
                            return (first,) + rest
            return None
        if o.name == "stablehlo.select" and len(o.operands) == 3:
            eq_v, rest_v, lt_v = o.operands
            first = key(lt_v)
            if first is not None and is_eq_of(eq_v, first):
                rest = match(rest_v, depth + 1)
                if rest is not None:
                    return (first,) + rest
        return None

    (ret,) = ops[-1].operands
    return match(ret)


def _keys(op, plan: KeyPlan, x: np.ndarray) -> np.ndarray | None:
    """The comparison keys of every element of ``x`` (shape ``(batch, n)``),
    or None when the two sides of the comparator disagree."""
    eng = op.engine
    out = []
    for arg_vid, arg_type, ops, key_vid in plan.sides:
        ret = Op("stablehlo.return", (key_vid,), (), (plan.cmp.operand_types[0],), (), {}, (),
                 plan.cmp.loc)
        region = Region((Block((arg_vid,), (arg_type,), ops + (ret,)),))
        (key,) = eng.run_region(region, (x,), dict(eng.current_env), lanes=True)
        key = np.asarray(key)
        if key.dtype != plan.element.dtype:
            return None
        try:
            key = np.broadcast_to(key, x.shape)
        except ValueError:
            return None
        out.append(np.ascontiguousarray(key))
    a, b = out
    if a.tobytes() != b.tobytes():
        return None
    kind = plan.element.kind
    if kind == "float":
        if plan.ctype == "TOTALORDER":
            return cmp_total_order_key(a)
        w = wide(a)
        if np.isnan(w).any():
            return None
        return w
    if kind in ("int", "uint") and bits_of(a.dtype) < 8:
        return a.astype(np.int64)
    return a


def lexicographic_perm(keys: list[np.ndarray], descending: list[bool]) -> np.ndarray:
    """Stable sorting permutation by ``keys[0]``, ties by ``keys[1]``, ...:
    one stable argsort per key from the least significant one."""
    perm = stable_argsort(keys[-1], descending[-1])
    for key, desc in zip(keys[-2::-1], descending[-2::-1]):
        step = stable_argsort(np.take_along_axis(key, perm, axis=-1), desc)
        perm = np.take_along_axis(perm, step, axis=-1)
    return perm


def merge_sort_perm(less: Callable[[np.ndarray, np.ndarray], np.ndarray], batch: int, n: int) -> np.ndarray:
    """Stable sorting permutation ``perm`` of shape ``(batch, n)``.

    ``less(ia, ib)`` compares, lane by lane, the elements at positions ``ia``
    and ``ib`` (int arrays of shape ``(batch, n)``) of each row."""
    perm = np.broadcast_to(np.arange(n, dtype=np.int64), (batch, n)).copy()
    pos = np.arange(n, dtype=np.int64)
    rows = np.arange(batch, dtype=np.int64)[:, None]
    w = 1
    while w < n:
        block = (pos // (2 * w)) * (2 * w)
        in_left = (pos - block) < w
        mid_split = np.minimum(block + w, n)
        end = np.minimum(block + 2 * w, n)
        own_start = np.where(in_left, block, mid_split)
        other_start = np.where(in_left, mid_split, block)
        other_end = np.where(in_left, end, mid_split)
        lo = np.broadcast_to(other_start, (batch, n)).copy()
        hi = np.broadcast_to(other_end, (batch, n)).copy()
        left = np.broadcast_to(in_left, (batch, n))
        while True:
            active = lo < hi
            if not active.any():
                break
            mid = (lo + hi) // 2
            y = perm[rows, np.minimum(mid, n - 1)]
            # left element x: counts right elements r with r < x;
            # right element x: counts left elements l with not (x < l).
            c = less(np.where(left, y, perm), np.where(left, perm, y))
            pred = np.where(left, c, ~c)
            lo = np.where(active & pred, mid + 1, lo)
            hi = np.where(active & ~pred, mid, hi)
        new_pos = block + (pos - own_start) + (lo - other_start)
        out = np.empty_like(perm)
        out[rows, new_pos] = perm
        perm = out
        w *= 2
    return perm


def sort_arrays(op, inputs, dimension: int) -> tuple:
    arrs = [np.asarray(x) for x in inputs]
    if arrs[0].ndim == 0:
        return tuple(a.copy() for a in arrs)
    dim = dimension % arrs[0].ndim
    moved = [np.moveaxis(a, dim, -1) for a in arrs]
    shape = moved[0].shape
    n = shape[-1]
    batch = int(np.prod(shape[:-1], dtype=np.int64))
    flat = [m.reshape(batch, n) for m in moved]
    if n <= 1 or batch == 0:
        perm = np.broadcast_to(np.arange(n, dtype=np.int64), (batch, n))
    else:
        perm = None
        plan = _key_plan(op)
        if plan is not None:
            keys = []
            for spec in plan:
                key = _keys(op, spec, flat[spec.k])
                if key is None:
                    break
                keys.append(key)
            else:
                perm = lexicographic_perm(keys, [spec.descending for spec in plan])
        if perm is None:
            body = op.region(0, lanes=True)
            rows = np.arange(batch, dtype=np.int64)[:, None]

            def less(ia, ib):
                args = []
                for f in flat:
                    args.append(f[rows, ia])
                    args.append(f[rows, ib])
                r = body(*args)[0]
                return np.broadcast_to(np.asarray(r).astype(bool), ia.shape)

            perm = merge_sort_perm(less, batch, n)
    outs = []
    for f, m in zip(flat, moved):
        s = np.take_along_axis(f, perm, axis=1).reshape(shape)
        outs.append(np.array(np.moveaxis(s, -1, dim), order="C", copy=True))
    return tuple(outs)


@kernel("stablehlo.sort", quantized=STORAGE, accuracy=EXACT)
def sort(op, *inputs):
    """See spec.md#sort. The result is always stable, which also satisfies
    ``is_stable = false``."""
    dimension = int(op.attr("dimension", -1))
    return sort_arrays(op, inputs, dimension)


@kernel("chlo.top_k", accuracy=EXACT)
def top_k(op, operand):
    """The ``k`` largest entries along the last dimension, in descending
    order (TOTALORDER for floats), ties by lower index, with their indices."""
    k = int(op.attr("k"))
    x = np.asarray(operand)
    el = op.operand_type(0).element
    if getattr(el, "quantized", False):
        raise op.unsupported("top_k of a quantized tensor")
    if el.kind == "float":
        key = total_order_key(x)
    elif el.kind == "complex":
        raise op.unsupported("top_k of complex numbers")
    else:
        key = x
    perm = stable_argsort(key, descending=True)[..., :k]
    values = np.take_along_axis(x, perm, axis=-1)
    return (np.array(values, copy=True), perm.astype(op.result_dtype(1)))
