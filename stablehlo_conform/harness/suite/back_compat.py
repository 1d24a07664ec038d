"""JAX's backward-compatibility test data as conformance cases.

The installed ``jax`` package ships, under
``jax/_src/internal_test_util/export_back_compat_test_data/``, real exported
programs (``mlir_module_text``) with their inputs and the outputs JAX computed
when they were exported, for CPU, CUDA, ROCm and TPU. :func:`cases` lists them;
:func:`run_case` runs one through :func:`stablehlo_conform.evaluate` (the path
of ``conform eval``) and compares with the expected outputs: element-wise
within a tolerance, or — for decompositions that are not unique (QR, eigen,
SVD, Schur) — by their defining identity (see :mod:`..judge.linalg_identity`), and the
result says which.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ... import frontend
from ...errors import ConformError, UnsupportedOp
from ..backends import evaluate
from ..judge import linalg_identity as LI

PACKAGE = "jax._src.internal_test_util.export_back_compat_test_data"

# programs whose outputs are a decomposition that is not unique
_KINDS = (("_qr_", "qr"), ("tpu_qr", "qr"), ("eigh", "eigh"), ("_eig_", "eig"), ("_svd_", "svd"),
          ("schur", "schur"))


@dataclass
class Case:
    name: str  # module/data_key/variant
    platform: str
    targets: tuple[str, ...]
    data: dict = field(repr=False)

    @property
    def kind(self) -> str | None:
        module = self.name.split("/")[0].lower()
        for key, kind in _KINDS:
            if key in module:
                return kind
        return None


def cases() -> list[Case]:
    """Every stored program (an empty list when JAX's data is not installed)."""
    try:
        pkg = importlib.import_module(PACKAGE)
    except ImportError:
        return []
    out: list[Case] = []

    def walk(path: list[str], d: Any) -> None:
        if isinstance(d, dict) and "mlir_module_text" in d:
            out.append(Case("/".join(path), d.get("platform", "?"), tuple(d.get("custom_call_targets", ())), d))
        elif isinstance(d, dict):
            for k, v in d.items():
                walk(path + [str(k)], v)

    def scan(package) -> None:
        for info in pkgutil.iter_modules(package.__path__):
            mod = importlib.import_module(f"{package.__name__}.{info.name}")
            if info.ispkg:
                scan(mod)
                continue
            for k, v in sorted(vars(mod).items()):
                if k.startswith("data_"):
                    walk([info.name, k], v)

    scan(pkg)
    return out


@dataclass
class CaseOutcome:
    case: Case
    status: str  # pass | fail | error | unsupported
    compared: str  # "values" or "identity: ..."
    detail: str = ""


def compare_values(got, expected) -> str | None:
    """Element-wise: integers exact; floats within ``BUDGET * eps * n`` of
    the largest expected magnitude of the array."""
    if len(got) != len(expected):
        return f"{len(got)} results, expected {len(expected)}"
    for i, (g, e) in enumerate(zip(got, expected)):
        g, e = np.asarray(g), np.asarray(e)
        if g.shape != e.shape:
            return f"result {i}: shape {g.shape}, expected {e.shape}"
        if e.dtype.kind not in "fc":
            if not np.array_equal(g, e):
                k = np.argwhere(g != e)[0]
                return f"result {i} at {tuple(k)}: {g[tuple(k)]} != {e[tuple(k)]}"
            continue
        eps = float(np.finfo(e.dtype).eps)
        scale = max(float(np.max(np.abs(e[np.isfinite(e)]), initial=0.0)), 1.0)
        n = max(e.shape[-2:], default=1)
        err = np.abs(g.astype(np.complex128) - e.astype(np.complex128))
        bad = ~((err <= LI.BUDGET * eps * n * scale) | (np.isnan(g) & np.isnan(e)) | (g == e))
        if bad.any():
            k = tuple(np.argwhere(bad)[0])
            return f"result {i} at {k}: {g[k]} vs expected {e[k]}"
    return None


def run_case(case: Case, backend: str = "numpy") -> CaseOutcome:
    d = case.data
    inputs = [np.asarray(x) for x in d.get("inputs", ())]
    expected = [np.asarray(x) for x in d.get("expected_outputs", ())]
    kind = case.kind
    compared = "values" if kind is None else "identity: " + LI.IDENTITIES[kind]
    try:
        module = frontend.load(d["mlir_module_text"])[0]
        got = [np.asarray(x) for x in evaluate(module, *inputs, backend=backend)]
    except UnsupportedOp as e:
        return CaseOutcome(case, "unsupported", compared, str(e))
    except ConformError as e:
        return CaseOutcome(case, "error", compared, str(e).splitlines()[0][:300])
    except Exception as e:  # a kernel bug is reported, never raised
        return CaseOutcome(case, "error", compared, f"{type(e).__name__}: {e}"[:300])
    try:
        if kind is None:
            msg = compare_values(got, expected)
        else:
            msg = LI.compare(kind, got, expected) if len(got) == len(expected) else "result count differs"
    except Exception as e:  # e.g. a singular eigenvector matrix
        return CaseOutcome(case, "error", compared, f"comparison: {type(e).__name__}: {e}"[:300])
    return CaseOutcome(case, "fail" if msg else "pass", compared, msg or "")
