"""Plain Python form of a parsed module.

The frontend lowers every MLIR module once into these immutable objects; the
engine runs them without touching the bindings again. Values are named by
integers unique within a module.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Loc:
    """Where an op is: ``file:line:col`` of the program's text; for a program
    whose locations name another source (bytecode exported from Python: the
    framework's op name and the Python line that built it), the program's file
    and ``name``, that source (``jit(fn)/Llama/layers_0/exp at flax_zoo.py:223``)."""

    file: str
    line: int = 0
    col: int = 0
    name: str = ""

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.col}" if self.line else self.file
        return f"{where} ({self.name})" if self.name else where


@dataclass(frozen=True)
class AttrRecord:
    """A structured dialect attribute (e.g. ``#stablehlo.gather<...>``),
    decoded into named fields; ``kind`` names the attribute class."""

    kind: str
    fields: tuple[tuple[str, Any], ...]

    def __getattr__(self, name: str) -> Any:
        for k, v in object.__getattribute__(self, "fields"):
            if k == name:
                return v
        raise AttributeError(f"{self.kind} has no field {name!r}")

    def get(self, name: str, default: Any = None) -> Any:
        for k, v in self.fields:
            if k == name:
                return v
        return default

    def as_dict(self) -> dict[str, Any]:
        return dict(self.fields)


@dataclass(frozen=True)
class OpaqueAttr:
    """An attribute kept by its printed text (no decoder for it)."""

    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class SymbolRef:
    name: str

    def __str__(self) -> str:
        return "@" + self.name


@dataclass(frozen=True)
class AxisRef:
    """A mesh axis, or the sub-axis of size ``size`` after sub-axes of
    product ``pre_size`` (Shardy's ``"x":(pre)size``); ``size`` None: the
    whole axis."""

    name: str
    pre_size: int = 1
    size: int | None = None


@dataclass(frozen=True)
class Mesh:
    """A named device grid (``sdy.mesh`` / ``#stablehlo.mesh``): axes
    ``(name, size)`` major to minor, and the device id at each position in
    row-major order (empty: ``0, 1, ...``)."""

    axes: tuple[tuple[str, int], ...]
    device_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class TensorSharding:
    """``#sdy.sharding``: the mesh (a symbol name or inline), the axes each
    dimension is split over (major first), and the explicitly replicated and
    unreduced axes."""

    mesh: str | Mesh
    dims: tuple[tuple[AxisRef, ...], ...]
    replicated: tuple[AxisRef, ...] = ()
    unreduced: tuple[AxisRef, ...] = ()


@dataclass(frozen=True)
class MeshAxesGroups:
    """Replica groups given as mesh axes (``#stablehlo.replica_group_mesh_axes``):
    one group per position on the other axes, ordered along ``axes``."""

    mesh: str | Mesh
    axes: tuple[AxisRef, ...]


@dataclass
class Block:
    args: tuple[int, ...]
    arg_types: tuple
    ops: tuple["Op", ...]


@dataclass
class Region:
    blocks: tuple[Block, ...]


@dataclass
class Op:
    name: str
    operands: tuple[int, ...]
    results: tuple[int, ...]
    operand_types: tuple
    result_types: tuple
    attrs: dict[str, Any]
    regions: tuple[Region, ...]
    loc: Loc
    successors: tuple[int, ...] = ()  # block indices in the parent region

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)


@dataclass
class Func:
    name: str
    param_types: tuple
    result_types: tuple
    body: Region
    visibility: str = "public"
    loc: Loc = field(default_factory=lambda: Loc("?"))
    attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def params(self) -> tuple[int, ...]:
        return self.body.blocks[0].args


@dataclass
class Module:
    funcs: dict[str, Func]
    attrs: dict[str, Any]
    name: str | None
    source: str
    line: int  # first line of the chunk in the source file
    text: str = ""  # the module's text as parsed (for other backends)
    nested: dict[str, "Module"] = field(default_factory=dict)
    meshes: dict[str, Mesh] = field(default_factory=dict)  # sdy.mesh symbols

    def callers(self) -> set[str]:
        """Names of functions referenced by func.call or by symbol attributes."""
        seen: set[str] = set()
        for f in self.funcs.values():
            for op in walk_ops(f.body):
                for v in op.attrs.values():
                    _collect_symbols(v, seen)
        return seen

    def tests(self) -> list[Func]:
        """Zero-argument public functions nobody calls: one test each."""
        called = self.callers()
        return [
            f
            for f in self.funcs.values()
            if not f.param_types and f.visibility != "private" and f.name not in called
        ]


def _collect_symbols(v: Any, out: set[str]) -> None:
    if isinstance(v, SymbolRef):
        out.add(v.name)
    elif isinstance(v, (tuple, list)):
        for x in v:
            _collect_symbols(x, out)
    elif isinstance(v, dict):
        for x in v.values():
            _collect_symbols(x, out)


def _ops_of(region: Region):
    return (op for b in region.blocks for op in b.ops)


def walk_ops(region: Region):
    """Every op of ``region`` and of the regions nested in it, in pre-order
    (an explicit stack, not recursion: any nesting depth)."""
    stack = [_ops_of(region)]
    while stack:
        op = next(stack[-1], None)
        if op is None:
            stack.pop()
            continue
        yield op
        if op.regions:
            stack.append(itertools.chain.from_iterable(map(_ops_of, op.regions)))
