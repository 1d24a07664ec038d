#!/usr/bin/env python3
"""Regenerate the model zoo: every program (``testsuite/models/NAME.mlirbc``,
a StableHLO portable artifact) and its recipe (``NAME.recipe.json``), from
real architectures built by their frameworks with random initialisation.

The frameworks are needed only here, never by ``conform``::

    python3.11 -m venv /tmp/zoo && /tmp/zoo/bin/pip install torch==2.13.0 \\
        jax flax dm-haiku keras transformers torchax ml_dtypes
    KERAS_BACKEND=jax /tmp/zoo/bin/python scripts/export_models.py [--only NAME ...]

Each builder module of ``scripts/zoo/`` has a ``MODELS`` table (name ->
function returning a :class:`zoo.common.Model`).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from zoo.common import export  # noqa: E402

BUILDERS = ("zoo.keras_zoo", "zoo.flax_zoo", "zoo.haiku_zoo", "zoo.torch_zoo")
OUT = Path(__file__).resolve().parent.parent / "testsuite" / "models"


def tables() -> dict:
    out = {}
    for mod in BUILDERS:
        try:
            m = importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name and e.name.startswith("zoo."):
                continue
            raise
        out.update(m.MODELS)
    return out


def table(folder: Path) -> str:
    """The table of the zoo (docs/zoo.md), read from the recipes (no framework needed)."""
    from stablehlo_conform.harness.programs.recipe import read_recipe

    rows = ["| model | architecture | framework | built from | parameters | ops | types | program |",
            "|---|---|---|---|---:|---:|---|---:|"]
    for path in sorted(folder.glob("*.recipe.json")):
        r = read_recipe(path)
        size = r.program_path.stat().st_size / 1024
        rows.append(f"| `{r.name}` | {r.architecture} | {r.framework} | {r.source.replace('|', '/')} | "
                    f"{r.parameters / 1e6:.1f} M | {r.ops} | {', '.join(r.dtypes)} | {size:.0f} KiB |")
    return "\n".join(rows)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", nargs="*", help="models to export (default: all)")
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--list", action="store_true")
    p.add_argument("--table", action="store_true", help="print the table of docs/zoo.md from the recipes and exit")
    a = p.parse_args()
    if a.table:
        print(table(a.out))
        return 0
    models = tables()
    if a.list:
        print("\n".join(sorted(models)))
        return 0
    names = a.only or sorted(models)
    for name in names:
        t0 = time.perf_counter()
        r = export(models[name](), a.out)
        size = (a.out / r["program"]).stat().st_size
        print(f"{name:<24} {r['parameters']:>11,} params {r['ops']:>5} ops {size / 1024:7.1f} KiB "
              f"{','.join(r['dtypes'])}  ({time.perf_counter() - t0:.1f} s)")
        for line in r["outputs"]:
            print(f"    {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
