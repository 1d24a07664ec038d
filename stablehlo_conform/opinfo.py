"""What the project knows about each op, in one registry: op name -> :class:`OpInfo`.

An :class:`OpInfo` carries an op's kernel (``fn(op, *operands) -> tuple``, see
:mod:`stablehlo_conform.kernels`), the element-type families it takes, how it treats quantized
operands (spec.md "Quantization": ``dequantize`` runs the float op between dequantize and
quantize, ``storage`` moves storage values unchanged), whether its result on constants may be
computed once (``folds``), whether it ends a region (``terminator``), whether its result is a
constant loaded with the program (``constant``), the accuracy class of a float result (see
:mod:`stablehlo_conform.oracle.classes`) and its exact reference
(:mod:`stablehlo_conform.oracle.exact`: a name of a built-in definition, or an mpmath function of
real arguments).

This module sits below the oracle, the kernels and the interpreter: each of them reads the
registry (the sets they used to keep are live views, :meth:`Registry.where`). It names no op:
a built-in op's facts are declared with its kernel (``@kernel(name, **facts)`` in the kernel
modules; the ops the engine runs without a kernel in :mod:`stablehlo_conform.kernels.control_flow`),
its exact definition in :mod:`stablehlo_conform.oracle.exact`, so a reader of the facts loads the
kernels first (:func:`stablehlo_conform.kernels.load_all`). A new op is one :func:`register_op`
call.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping, Set
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple

Kernel = Callable[..., tuple]


class FastPath(NamedTuple):
    """A kernel's shortcut for one op of static, non-quantized types (declared as the op's
    ``fast`` fact: ``fast(op) -> FastPath | None``), called by the engine's generated blocks
    in place of the kernel.

    ``call(*operands)`` returns the op's one result, bit for bit what the kernel returns: an
    ndarray of the declared type, or for a rank-0 result possibly a NumPy scalar. ``scalars``:
    rank-0 operands may be NumPy scalars (else they are 0-d arrays; a ufunc, ``out``, takes
    either). ``views``: operands may be any strided arrays, read-only
    broadcast views included. ``out``: ``call`` is an element-wise ufunc that takes ``out=``
    (an array of the result's type and shape, which may be one of its operands) and returns a
    new array otherwise. ``view``: the result may be a read-only view of an operand (the
    engine copies it unless every reader takes ``views``). ``scalar``: a Python expression
    over ``{0}``, ``{1}``, ... computing the same on rank-0 operands (NumPy scalars or 0-d
    arrays), for a rank-0 result. ``fresh``: the result is a new array that no other value
    shares memory with (an element-wise ufunc may then write into it once it is dead).
    ``split_min``: for an element-wise op, the fewest result elements from which the engine
    computes it in blocks on several threads, where fewer than the engine's own bound (a fast
    path costing many passes over memory per element pays for threads on smaller results)."""

    call: Callable[..., Any]
    views: bool = False
    out: bool = False
    view: bool = False
    scalar: str | None = None
    scalars: bool = False
    fresh: bool = False
    split_min: int | None = None

# accuracy classes of a float result (spec.md leaves the accuracy of most float ops to the
# implementation; see oracle/classes.py)
EXACT = "exact"
ULP = "ulp"
ACCUMULATE = "accumulate"
DOT = "dot"  # accumulates, with products following precision_config / algorithm (spec.md "dot_general")
IMPLEMENTATION = "implementation-defined"
ACCURACIES = (EXACT, ULP, ACCUMULATE, DOT, IMPLEMENTATION)

# quantized treatment (spec.md "Quantization")
DEQUANTIZE = "dequantize"
STORAGE = "storage"

FAMILIES = frozenset({"float", "complex", "int", "uint", "bool", "quantized"})


@dataclass(frozen=True)
class OpInfo:
    """One op's facts; defaults mean "nothing declared"."""

    name: str
    kernel: Kernel | None = None
    families: frozenset[str] = frozenset()
    quantized: str | None = None
    folds: bool = False
    terminator: bool = False
    constant: bool = False  # the result is the op's value attribute, loaded with the program
    accuracy: str | None = None  # None: a float result is held to its ULP bound (ulp_defaults.json or ``ulps``)
    reduces: bool = False  # a reduction whose body decides between exact and accumulating
    selects: bool = False  # as a reduction body, selects one of its operands (exact)
    exact: Callable | str | None = None
    ulps: float | None = None  # default ULP bound where ulp_defaults.json has no row
    fast: Callable[[Any], FastPath | None] | None = None  # the kernel's fast path (see FastPath)


_DEFAULTS = {f.name: f.default for f in dataclasses.fields(OpInfo) if f.name != "name"}


def _check_facts(name: str, facts: Mapping) -> None:
    for k, v in facts.items():
        if k not in _DEFAULTS or k == "kernel":
            raise TypeError(f"{name}: unknown op fact {k!r}")
    if facts.get("accuracy") not in (None, *ACCURACIES):
        raise ValueError(f"{name}: accuracy must be one of {', '.join(ACCURACIES)}")
    if facts.get("quantized") not in (None, DEQUANTIZE, STORAGE):
        raise ValueError(f"{name}: quantized must be {DEQUANTIZE!r} or {STORAGE!r}")
    if not set(facts.get("families", ())) <= FAMILIES:
        raise ValueError(f"{name}: families must be among {', '.join(sorted(FAMILIES))}")


class Registry:
    """Op name -> :class:`OpInfo`, with layered kernel overrides.

    A kernel or a fact is declared once: a second, different declaration is refused."""

    def __init__(self, table: Mapping[str, Kernel] | None = None, parent: "Registry | None" = None):
        self._table: dict[str, OpInfo] = {n: OpInfo(n, kernel=fn) for n, fn in (table or {}).items()}
        self._parent = parent

    # declaring -----------------------------------------------------------
    def register(self, name: str, fn: Kernel, replace: bool = False) -> None:
        """Make ``fn`` the kernel of ``name`` (a replaced kernel's fast path goes with it)."""
        cur = self._table.get(name)
        if cur is not None and cur.kernel is not None and not replace:
            raise ValueError(f"kernel for {name} registered twice")
        self._table[name] = (dataclasses.replace(cur, kernel=fn, fast=None if cur.kernel is not None else cur.fast)
                             if cur is not None else OpInfo(name, kernel=fn))

    def declare(self, name: str, **facts) -> None:
        """Add facts (fields of :class:`OpInfo` but the kernel) to ``name``."""
        _check_facts(name, facts)
        if "families" in facts:
            facts["families"] = frozenset(facts["families"])
        cur = self._table.get(name) or OpInfo(name)
        for k, v in facts.items():
            old = getattr(cur, k)
            if old != _DEFAULTS[k] and old != v:
                raise ValueError(f"{name}: {k} declared twice ({old!r}, {v!r})")
        self._table[name] = dataclasses.replace(cur, **facts)

    def declare_all(self, names: Iterable[str], **facts) -> None:
        for n in names:
            self.declare(n, **facts)

    @contextmanager
    def registering(self, name: str, kernel: Kernel | None = None, **facts) -> Iterator[OpInfo]:
        """Declare ``name`` (as :func:`register_op` does) for the ``with`` block only: on leaving
        it the op's entry is what it was before (other declarations made meanwhile stay)."""
        before = self._table.get(name)
        try:
            if kernel is not None:
                self.register(name, kernel)
            if facts or kernel is None:
                self.declare(name, **facts)
            yield self.info(name)
        finally:
            if before is None:
                self._table.pop(name, None)
            else:
                self._table[name] = before

    # reading -------------------------------------------------------------
    def info(self, name: str) -> OpInfo | None:
        """The op's facts with the kernel this registry answers (an override first)."""
        here = self._table.get(name)
        if self._parent is None:
            return here
        base = self._parent.info(name)
        if here is None or base is None:
            return here or base
        # an overriding kernel comes without the fast path of the one it replaces
        return dataclasses.replace(base, kernel=here.kernel, fast=here.fast)

    def lookup(self, name: str) -> Kernel | None:
        here = self._table.get(name)
        if here is not None and here.kernel is not None:
            return here.kernel
        return self._parent.lookup(name) if self._parent is not None else None

    def __contains__(self, name: str) -> bool:
        return self.lookup(name) is not None

    def names(self) -> list[str]:
        """The ops with a kernel, sorted."""
        names = {n for n, i in self._table.items() if i.kernel is not None}
        if self._parent is not None:
            names |= set(self._parent.names())
        return sorted(names)

    def declared(self) -> list[str]:
        """Every op with a kernel or a fact, sorted."""
        names = set(self._table)
        if self._parent is not None:
            names |= set(self._parent.declared())
        return sorted(names)

    def where(self, predicate: Callable[[OpInfo], bool] | None = None, **facts) -> "OpSet":
        """A live set of the op names whose facts match (``where(folds=True)``)."""
        _check_facts("where", {k: v for k, v in facts.items() if k not in ("families",)})

        def test(info: OpInfo) -> bool:
            return all(getattr(info, k) == v for k, v in facts.items()) and (predicate is None or predicate(info))

        return OpSet(self, test)

    def with_overrides(self, overrides: Mapping[str, Kernel]) -> "Registry":
        """A new registry that answers ``overrides`` first, then this one."""
        return Registry(overrides, parent=self)


class OpSet(Set):
    """The names of a registry's ops whose facts pass a test, read at each use."""

    def __init__(self, registry: Registry, test: Callable[[OpInfo], bool]):
        self._registry = registry
        self._test = test

    def __contains__(self, name: object) -> bool:
        info = self._registry.info(name) if isinstance(name, str) else None
        return info is not None and self._test(info)

    def __iter__(self) -> Iterator[str]:
        reg = self._registry
        return iter([n for n in reg.declared() if self._test(reg.info(n))])

    def __len__(self) -> int:
        return sum(1 for _ in self)

    @classmethod
    def _from_iterable(cls, it):
        return frozenset(it)

    def __repr__(self) -> str:
        return f"OpSet({sorted(self)!r})"


OPS = Registry()
"""The registry every engine, oracle and listing reads (kernels load into it)."""


def register_op(name: str, kernel: Kernel | None = None, **facts) -> OpInfo:
    """Declare an op in :data:`OPS`: its kernel and facts (see :class:`OpInfo`), e.g. a float
    element-wise op ``register_op("x.cube", fn, families={"float"}, exact=lambda x: x ** 3,
    folds=True, quantized=DEQUANTIZE)``. Returns the op's facts."""
    if kernel is not None:
        OPS.register(name, kernel)
    if facts or kernel is None:
        OPS.declare(name, **facts)
    return OPS.info(name)
