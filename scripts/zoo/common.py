"""What every model builder of the zoo shares: a model as a JAX function of
flat arrays, its export to a portable artifact, and its recipe.

A builder returns a :class:`Model`: a function ``fn(*args)`` of the flattened
parameters then the inputs, example arrays for each argument (the framework's
own random initialisation) and, per argument, how ``conform`` rebuilds such an
array (:func:`dist_of` derives it from the initialised values unless the
builder states one). Only the program and the recipe are written; no weight.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable
import sys

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the package's recipe reader (NumPy only)
from stablehlo_conform.harness.programs.recipe import FORMAT, build_inputs, read_recipe  # noqa: E402

__all__ = ["FORMAT", "Arg", "Model", "dist_of", "export"]

# element type names of the program, by NumPy dtype name
_TYPE_NAMES = {
    "float64": "f64", "float32": "f32", "float16": "f16", "bfloat16": "bf16",
    "float8_e4m3fn": "f8E4M3FN", "float8_e5m2": "f8E5M2",
    "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8", "int4": "i4",
    "uint64": "ui64", "uint32": "ui32", "uint16": "ui16", "uint8": "ui8", "uint4": "ui4", "bool": "i1",
}


@dataclass
class Arg:
    """One argument: its name (the framework's path), an example array and,
    optionally, the distribution to rebuild it from (else derived)."""

    name: str
    value: Any
    dist: dict[str, Any] | None = None


@dataclass
class Model:
    name: str
    fn: Callable
    args: list[Arg]
    framework: str  # e.g. "keras 3.15.1 (JAX backend)"
    source: str  # what built it, e.g. "keras.applications.ResNet50(weights=None)"
    architecture: str  # e.g. "vision CNN"
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def dist_of(name: str, a: np.ndarray) -> dict[str, Any]:
    """How to rebuild an array like ``a``: integers by their range, floats by
    mean and standard deviation (a constant when they have no spread; a
    weight matrix initialised to zero, such as a classifier head, gets
    ``normal(0, 1/sqrt(fan_in))`` instead, so the output is not constant)."""
    a = np.asarray(a)
    if a.dtype == np.bool_:
        return {"dist": "const", "value": 1}
    if a.dtype.kind in "iu" or "int" in a.dtype.name:
        w = a.astype(np.int64)
        return {"dist": "randint", "low": int(w.min()), "high": int(w.max()) + 1}
    w = a.astype(np.float64)
    mean, std = float(w.mean()), float(w.std())
    if std == 0.0:
        if a.ndim >= 2 and mean == 0.0:
            fan_in = int(np.prod(a.shape[:-1]))
            return {"dist": "normal", "mean": 0.0, "std": float(1.0 / np.sqrt(max(fan_in, 1)))}
        return {"dist": "const", "value": mean}
    if w.min() >= 0 and ("var" in name.lower()):
        return {"dist": "uniform", "low": float(w.min()) if w.min() > 0 else 0.5, "high": float(w.max()) + 0.5}
    return {"dist": "normal", "mean": mean, "std": std}


def type_name(a: Any) -> str:
    return _TYPE_NAMES[np.asarray(a).dtype.name]


def export(model: Model, out_dir: Path) -> dict[str, Any]:
    """Export ``model`` with ``jax.export`` and write ``NAME.mlirbc`` (the
    portable artifact) and ``NAME.recipe.json`` beside it. Arguments that
    ``jax.jit`` dropped (unused) are left out of the recipe, which lists the
    program's parameters in order."""
    import jax

    specs = [jax.ShapeDtypeStruct(np.shape(a.value), np.asarray(a.value).dtype) for a in model.args]
    exp = jax.export.export(jax.jit(model.fn))(*specs)
    kept = sorted(exp.module_kept_var_idx)
    recipe_args = []
    params = 0
    for i in kept:
        a = model.args[i]
        arr = np.asarray(a.value)
        d = dict(a.dist) if a.dist is not None else dist_of(a.name, arr)
        recipe_args.append({"name": a.name, "shape": list(arr.shape), "dtype": type_name(arr), **d})
        params += int(arr.size)
    text = exp.mlir_module()
    ops = sum(1 for line in text.splitlines() if " = stablehlo." in line or " = chlo." in line
              or line.strip().startswith("stablehlo.") or " = \"stablehlo." in line)
    recipe = {
        "format": FORMAT, "name": model.name, "program": f"{model.name}.mlirbc", "entry": "main",
        "architecture": model.architecture, "framework": model.framework, "source": model.source,
        "exporter": f"jax {jax.__version__}", "parameters": params, "ops": ops,
        "dtypes": sorted({r["dtype"] for r in recipe_args}),
        "seed": 0, "args": recipe_args,
    }
    if model.notes:
        recipe["notes"] = model.notes
    recipe.update(model.extra)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{model.name}.mlirbc").write_bytes(exp.mlir_module_serialized)
    (out_dir / f"{model.name}.recipe.json").write_text(json.dumps(recipe, indent=1) + "\n")
    recipe["outputs"] = check(exp, model, kept, out_dir / f"{model.name}.recipe.json")
    return recipe


def check(exp: Any, model: Model, kept: list[int], recipe_file: Path) -> list[str]:
    """Run the exported program in JAX on the inputs ``conform`` builds from
    the recipe; a ``ValueError`` unless every output is finite and has spread
    (a model test needs a reference with meaning). Returns one line per output."""
    args = [np.asarray(a.value) for a in model.args]  # the ones the program dropped are not read
    for i, x in zip(kept, build_inputs(read_recipe(recipe_file))):
        args[i] = x
    outs = exp.call(*args)
    lines = []
    for i, o in enumerate(outs if isinstance(outs, (tuple, list)) else [outs]):
        o = np.asarray(o).astype(np.float64)
        if not np.isfinite(o).all():
            raise ValueError(f"{recipe_file}: output {i} has {int((~np.isfinite(o)).sum())} non-finite values")
        if o.size > 1 and o.std() == 0:
            raise ValueError(f"{recipe_file}: output {i} is constant ({o.flat[0]})")
        lines.append(f"output {i}: {list(o.shape)} mean {o.mean():.3g} std {o.std():.3g} max|x| {np.abs(o).max():.3g}")
    return lines
