"""Layers import one way: op facts and numeric helpers -> oracle maths -> kernels -> interpreter
(engine, process grid) -> harness -> cli. Read from the source (every import statement, at
module top or inside a function)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "stablehlo_conform"

ORACLE_MATHS = ("oracle.exact", "oracle.classes", "oracle.precision")
# module (prefix) -> internal modules (prefixes) it must never import
FORBIDDEN = {
    "opinfo": ("engine", "process_grid", "kernels", "oracle", "harness", "cli", "frontend", "pytest_plugin"),
    "numeric": ("engine", "process_grid", "kernels", "oracle", "harness", "cli", "frontend", "pytest_plugin"),
    "process_grid": ("engine", "kernels", "oracle", "harness", "cli", "frontend", "pytest_plugin"),
    **{m: ("engine", "process_grid", "kernels", "harness", "cli", "frontend", "pytest_plugin", "oracle.verdict",
           "oracle.accuracy") for m in ORACLE_MATHS},
    "kernels": ("engine", "harness", "cli", "frontend", "pytest_plugin", "oracle.verdict", "oracle.accuracy"),
    "engine": ("harness", "cli", "pytest_plugin", "oracle.verdict", "oracle.accuracy"),
}


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path):
    """(imported internal module, line, function-local, line text) of every import in ``path``."""
    mod = _module_name(path)
    is_pkg = path.name == "__init__.py"
    tree = ast.parse(path.read_text())
    lines = path.read_text().splitlines()
    local: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            local |= {id(n) for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = mod.split(".") if mod else []
            if not is_pkg:
                base = base[:-1]
            base = base[:len(base) - (node.level - 1)]
            target = ".".join(base + ([node.module] if node.module else []))
            names = [f"{target}.{a.name}".strip(".") for a in node.names] if node.module is None else [target]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("stablehlo_conform"):
            names = [node.module.removeprefix("stablehlo_conform").strip(".")]
        elif isinstance(node, ast.Import):
            names = [a.name.removeprefix("stablehlo_conform").strip(".") for a in node.names
                     if a.name.startswith("stablehlo_conform")]
        else:
            continue
        for n in names:
            yield n, node.lineno, id(node) in local, lines[node.lineno - 1]


def _covered(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _files():
    return sorted(PKG.rglob("*.py"))


@pytest.mark.parametrize("rule", sorted(FORBIDDEN))
def test_no_import_against_the_layer_order(rule):
    bad = []
    for path in _files():
        mod = _module_name(path)
        if not _covered(mod, rule):
            continue
        for name, line, _local, _text in _imports(path):
            if any(_covered(name, f) for f in FORBIDDEN[rule]):
                bad.append(f"{path.relative_to(PKG)}:{line}: imports {name}")
    assert not bad, "\n".join(bad)


def test_function_local_imports_in_the_lower_layers_say_why():
    """Below the harness an import inside a function only guards start-up time (mpmath,
    scipy, jaxlib), and says so in a comment on its line."""
    bad = []
    for path in _files():
        mod = _module_name(path)
        if not any(_covered(mod, r) for r in FORBIDDEN):
            continue
        for name, line, local, text in _imports(path):
            if local and "#" not in text:
                bad.append(f"{path.relative_to(PKG)}:{line}: {text.strip()}")
    assert not bad, "\n".join(bad)


def test_the_rules_see_imports():
    """The reader finds relative imports at top and inside functions (the rules are not vacuous)."""
    found = {(n, local) for n, _l, local, _t in _imports(PKG / "kernels" / "elementwise.py")}
    assert ("numeric", False) in found and ("oracle.exact", True) in found
    # an orchestrating oracle module runs engines: a rule for it would see that
    assert ("engine", False) in {(n, local) for n, _l, local, _t in _imports(PKG / "oracle" / "verdict.py")}
