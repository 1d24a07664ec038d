"""Loading programs (text, bytecode, portable artifacts) into :mod:`stablehlo_conform.program`
modules; StableHLO versions, portable artifacts and the ops each dialect registers.

Part of :mod:`stablehlo_conform.frontend`, the one package that imports the bindings.
"""

from __future__ import annotations

import importlib
from pathlib import Path


from ..program import (Module)
from .chunks import Chunk, read_chunks, split_text
from .sugar import _sugar_free
from .bindings import _bindings
from .parse import parse_chunk
from .lower import lower_module


def load_text(text: str, path: str = "<string>", split: bool = False) -> list[Module]:
    return [lower_module(parse_chunk(c), c) for c in split_text(text, path, split)]


def load_file(path: str | Path, split: bool = True) -> list[Module]:
    return [lower_module(parse_chunk(c), c) for c in read_chunks(path, split)]


def load_bytes(data: bytes, path: str = "<bytes>") -> Module:
    c = Chunk(path, 1, data=data)
    return lower_module(parse_chunk(c), c)


def serialize_portable_artifact(text: str, target: str | None = None) -> bytes:
    st = _bindings()
    version = target or st["sh"].get_current_version()
    return st["sh"].serialize_portable_artifact_str(text, version)


def stablehlo_version() -> tuple[int, int, int]:
    """The StableHLO version of the bindings (what they serialize by default)."""
    return version_tuple(_bindings()["sh"].get_current_version())


def stablehlo_minimum_version() -> tuple[int, int, int]:
    """The oldest StableHLO version the bindings serialize to (VHLO's first)."""
    return version_tuple(_bindings()["sh"].get_minimum_version())


def version_tuple(text: str) -> tuple[int, int, int]:
    return tuple(int(x) for x in str(text).split(".")[:3])  # type: ignore[return-value]


def needed_stablehlo_version(text: str, above: tuple[int, ...]) -> tuple[tuple[int, int, int] | None, str]:
    """The oldest StableHLO version (``above`` or newer, up to the bindings'
    own) that module ``text`` serializes to as a portable artifact, and the
    MLIR diagnostic of serializing it at ``above`` (empty when that works).

    Each minor version is tried in turn; None when none works (the program
    does not serialize at all)."""
    st = _bindings()
    ir = st["ir"]
    current = version_tuple(st["sh"].get_current_version())
    diags: list[str] = []

    def handler(d) -> bool:
        diags.append(str(d.message) + "".join(f" ({n.message})" for n in getattr(d, "notes", []) or []))
        return True

    def serializes(v: tuple[int, ...]) -> bool:
        try:
            st["sh"].serialize_portable_artifact(mod, ".".join(map(str, v)))
            return True
        except Exception as e:  # the bindings raise with "failed to serialize" only
            if not diags:
                diags.append(str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__)
            return False

    with st["ctx"]:
        mod = ir.Module.parse(text)
        handle = st["ctx"].attach_diagnostic_handler(handler)
        try:
            if serializes(tuple(above)):
                return tuple(above)[:3], ""  # type: ignore[return-value]
            first = diags[0] if diags else ""
            for minor in range(above[1] + 1 if above[0] == current[0] else 0, current[1] + 1):
                if serializes((current[0], minor, 0)):
                    return (current[0], minor, 0), first
            return None, first
        finally:
            handle.detach()


def to_bytecode(text: str) -> bytes:
    import io

    st = _bindings()
    with st["ctx"]:
        mod = st["ir"].Module.parse(_sugar_free(text))
        buf = io.BytesIO()
        mod.operation.write_bytecode(buf)
        return buf.getvalue()


def registered_ops(dialect: str) -> list[str]:
    """Op names the bindings' Python module declares for a dialect."""
    _bindings()
    try:
        mod = importlib.import_module(f"jaxlib.mlir.dialects.{dialect}")
    except ImportError:
        return []  # the bindings ship no Python module listing this dialect's ops
    names = set()
    for v in vars(mod).values():
        n = getattr(v, "OPERATION_NAME", None)
        if isinstance(n, str) and n.startswith(dialect + "."):
            names.add(n)
    return sorted(names)


def known_dialect(name: str) -> bool:
    """Whether the bindings' context knows dialect ``name``."""
    st = _bindings()
    try:
        st["ctx"].dialects[name]
        return True
    except Exception:
        return False


def op_names(chunk: Chunk) -> list[tuple[str, str | None]]:
    """``(op name, custom-call target or None)`` of every op of a chunk,
    parsed and verified but not lowered (a quick look at what it needs)."""
    mod = parse_chunk(chunk)
    out: list[tuple[str, str | None]] = []

    def walk(op) -> None:
        for r in op.regions:
            for b in r.blocks:
                for o in b.operations:
                    o = o.operation
                    target = None
                    if o.name == "stablehlo.custom_call" and "call_target_name" in o.attributes:
                        target = str(o.attributes["call_target_name"]).strip('"')
                    out.append((o.name, target))
                    walk(o)

    walk(mod.operation)
    return out


def load(path_or_text, split: bool = False) -> list:
    """Parse a file path (text, bytecode or portable artifact), MLIR text or
    bytes into program modules."""
    if isinstance(path_or_text, bytes):
        return [load_bytes(path_or_text)]
    p = Path(str(path_or_text))
    if "\n" not in str(path_or_text) and p.exists():
        return load_file(p, split=split)
    return load_text(str(path_or_text), split=split)
