"""Shared fixtures: paths to the official suites (skipped when absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SUITE = (ROOT / ".." / "shared" / "stablehlo-suite").resolve()


@pytest.fixture
def suite() -> Path:
    if not SUITE.is_dir():
        pytest.skip("../shared/stablehlo-suite is absent")
    return SUITE


@pytest.fixture
def interpret(suite: Path) -> Path:
    return suite / "interpret"


@pytest.fixture
def testdata(suite: Path) -> Path:
    return suite / "testdata"
