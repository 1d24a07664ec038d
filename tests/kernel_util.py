"""Shared helpers for kernel tests: run MLIR text, run official suite files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from stablehlo_conform import frontend
from stablehlo_conform.engine import Engine
from stablehlo_conform.kernels.registry import load_all

SUITE = Path(__file__).resolve().parents[1] / ".." / "shared" / "stablehlo-suite"


def ty(shape, el: str) -> str:
    """The tensor type text of ``shape`` and element ``el``: ``tensor<2x3xf32>``."""
    return "tensor<" + "".join(f"{d}x" for d in shape) + el + ">"


def run(text: str, *args, entry: str = "main", registry=None) -> tuple:
    """Run ``entry`` of the module in ``text`` on the numpy engine."""
    (mod,) = frontend.load_text(text)
    return Engine(mod, registry).call(entry, args)


def one(text: str, *args, **kw):
    (out,) = run(text, *args, **kw)
    return out


def assert_interpret_file_passes(name: str) -> None:
    """Every test of ``interpret/<name>.mlir`` runs and all its checks pass."""
    assert_suite_file_passes(SUITE / "interpret" / f"{name}.mlir")


def assert_suite_file_passes(path: Path, engine: Callable[..., Engine] = Engine,
                             every_test_checks: bool = True) -> None:
    """Every test of a suite file runs and all its checks pass; ``engine(module)``
    makes the engine each test runs on (a fresh one per test). With
    ``every_test_checks`` a test that makes no check at all fails too (off for
    files whose tests only print or pass tokens around)."""
    if not path.exists():
        pytest.skip("../shared/stablehlo-suite is absent")
    load_all()
    ran = 0
    for mod in frontend.load_file(path, split=True):
        for f in mod.tests():
            eng = engine(mod)
            eng.call(f.name, ())
            bad = [c for c in eng.checks if not c[0]]
            assert (eng.checks or not every_test_checks) and not bad, (f"{path.name}::{f.name}", bad)
            ran += 1
    assert ran, f"no test found in {path}"
