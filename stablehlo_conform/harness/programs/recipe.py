"""Model recipes: how to rebuild a model's arguments without shipping them.

A model of the zoo is a program (``NAME.mlirbc``, a portable artifact) and,
beside it, ``NAME.recipe.json``: where the model comes from and, for each
parameter of the entry function in order, its shape, element type and the
distribution its values are drawn from:

- ``normal`` (``mean``, ``std``): weights, activations;
- ``uniform`` (``low``, ``high``): images, positive variances;
- ``randint`` (``low`` inclusive, ``high`` exclusive): token ids, indices,
  quantized weights;
- ``const`` (``value``): attention masks, biases and scales initialised to a
  constant.

:func:`build_inputs` draws every argument with its own generator, seeded by
``(seed, position)``: the same recipe and seed give the same arrays on every
machine, and one argument does not depend on another. Floats are drawn in
float32 (float64 for ``f64``) and rounded once to their type. This module
needs only NumPy and ml_dtypes, so the exporter can check what it writes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ... import types as T
from ...errors import InputError

FORMAT = "stablehlo-conform model recipe 1"
SUFFIX = ".recipe.json"
DISTRIBUTIONS = {"normal": ("mean", "std"), "uniform": ("low", "high"), "randint": ("low", "high"),
                 "const": ("value",)}


class RecipeError(InputError):
    """A recipe that cannot be read or does not fit its program."""


@dataclass(frozen=True)
class ArgRecipe:
    """One argument: ``dist`` and its parameters (``params``, in the order
    :data:`DISTRIBUTIONS` names them)."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    dist: str
    params: tuple[float, ...]

    def describe(self) -> str:
        args = ", ".join(f"{k}={v:g}" for k, v in zip(DISTRIBUTIONS[self.dist], self.params))
        return f"{self.dist}({args})"


@dataclass(frozen=True)
class Recipe:
    path: str
    name: str
    program: str
    entry: str
    architecture: str
    framework: str
    source: str
    parameters: int
    ops: int
    dtypes: tuple[str, ...]
    seed: int
    args: tuple[ArgRecipe, ...]
    notes: str = ""

    @property
    def program_path(self) -> Path:
        return Path(self.path).parent / self.program


def recipe_path(program: str | Path) -> Path | None:
    """The recipe beside ``program`` (``NAME.mlirbc`` -> ``NAME.recipe.json``), or None."""
    p = Path(program)
    r = p.with_name(p.name.split(".", 1)[0] + SUFFIX)
    return r if r.is_file() else None


def read_recipe(path: str | Path) -> Recipe:
    """Read and check a recipe; a :class:`RecipeError` names the file and
    the field that is wrong."""
    path = str(path)
    try:
        obj = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise RecipeError(f"{path}: error: cannot read the recipe: {e}") from None
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise RecipeError(f"{path}: error: not a model recipe (expected \"format\": \"{FORMAT}\")")
    args = []
    for i, a in enumerate(obj.get("args") or ()):
        where = f"{path}: error: argument {i}"
        try:
            dist = a["dist"]
            if dist not in DISTRIBUTIONS:
                raise RecipeError(f"{where}: unknown distribution {dist!r} (known: {', '.join(DISTRIBUTIONS)})")
            params = tuple(float(a[k]) for k in DISTRIBUTIONS[dist])
            shape = tuple(int(d) for d in a["shape"])
            T.element_type(a["dtype"])
        except RecipeError:
            raise
        except (KeyError, TypeError, ValueError) as e:
            raise RecipeError(f"{where}: {type(e).__name__}: {e}") from None
        if any(d < 0 for d in shape):
            raise RecipeError(f"{where}: negative dimension in {list(shape)}")
        if dist == "randint" and params[1] <= params[0]:
            raise RecipeError(f"{where}: empty integer range [{params[0]:g}, {params[1]:g})")
        if dist in ("normal",) and not params[1] >= 0:
            raise RecipeError(f"{where}: negative standard deviation {params[1]:g}")
        args.append(ArgRecipe(str(a.get("name", f"arg{i}")), shape, a["dtype"], dist, params))
    try:
        return Recipe(
            path=path, name=str(obj["name"]), program=str(obj["program"]), entry=str(obj.get("entry", "main")),
            architecture=str(obj.get("architecture", "")), framework=str(obj.get("framework", "")),
            source=str(obj.get("source", "")), parameters=int(obj.get("parameters", 0)),
            ops=int(obj.get("ops", 0)), dtypes=tuple(obj.get("dtypes", ())), seed=int(obj.get("seed", 0)),
            args=tuple(args), notes=str(obj.get("notes", "")))
    except (KeyError, TypeError, ValueError) as e:
        raise RecipeError(f"{path}: error: {type(e).__name__}: {e}") from None


def build_array(a: ArgRecipe, rng: np.random.Generator) -> np.ndarray:
    """One argument drawn from its distribution (see the module's text)."""
    dtype = T.element_type(a.dtype).dtype
    if a.dist == "const":
        return np.full(a.shape, a.params[0]).astype(dtype)
    if a.dist == "randint":
        return rng.integers(int(a.params[0]), int(a.params[1]), a.shape, dtype=np.int64).astype(dtype)
    draw = np.float64 if dtype == np.float64 else np.float32
    if a.dist == "normal":
        x = rng.standard_normal(a.shape, dtype=draw)
        x *= draw(a.params[1])
        x += draw(a.params[0])
    else:
        x = rng.random(a.shape, dtype=draw)
        x *= draw(a.params[1] - a.params[0])
        x += draw(a.params[0])
    return x if x.dtype == dtype else x.astype(dtype)


def build_inputs(recipe: Recipe, seed: int | None = None) -> list[np.ndarray]:
    """Every argument of the recipe's entry, in order (see the module's text)."""
    s = recipe.seed if seed is None else seed
    return [build_array(a, np.random.default_rng([s, i])) for i, a in enumerate(recipe.args)]


def check_fits(recipe: Recipe, param_types: Any) -> None:
    """A :class:`RecipeError` unless the recipe's arguments are the entry's
    parameters (count, shapes, element types)."""
    if len(recipe.args) != len(param_types):
        raise RecipeError(f"{recipe.path}: error: the recipe has {len(recipe.args)} arguments, "
                          f"@{recipe.entry} of {recipe.program} takes {len(param_types)}")
    for i, (a, t) in enumerate(zip(recipe.args, param_types)):
        if tuple(a.shape) != tuple(t.shape) or a.dtype != str(t.element):
            raise RecipeError(f"{recipe.path}: error: argument {i} ({a.name}) is {a.dtype}{list(a.shape)}, "
                              f"the program's parameter is {t}")
