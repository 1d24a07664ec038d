"""The zoo's real models run through generated blocks (fast paths, threads, in-place loop
buffers, chains of element-wise ops in blocks) give the step-by-step engine's results bit for
bit: every output of every model and every check the engine records."""

from __future__ import annotations

from pathlib import Path

import pytest

from stablehlo_conform import load
from stablehlo_conform.engine import Engine
from stablehlo_conform.harness.programs.recipe import build_inputs, read_recipe
from test_engine import _outputs

ZOO = Path(__file__).resolve().parents[1] / "testsuite" / "models"
MODELS = sorted(p.name.split(".")[0] for p in ZOO.glob("*.recipe.json"))


def test_the_zoo_is_here():
    assert len(MODELS) >= 20


def zoo_stepwise(name: str):
    """The zoo model ``name`` loaded, its recipe's inputs, and its outputs and checks run step by
    step (``_outputs``: bit patterns)."""
    recipe = read_recipe(ZOO / f"{name}.recipe.json")
    (mod,) = load(str(recipe.program_path))
    args = tuple(build_inputs(recipe))
    stepwise = Engine(mod)
    stepwise.generate_blocks = False
    return mod, args, _outputs(stepwise, "main", args)


@pytest.mark.parametrize("name", MODELS)
def test_generated_blocks_match_the_stepwise_path_on_a_zoo_model(name):
    mod, args, expect = zoo_stepwise(name)
    for _ in range(12):  # a block is generated once its step-by-step runs have paid for it
        eng = Engine(mod)
        assert _outputs(eng, "main", args) == expect
        if eng._runners:
            break
    assert eng._runners, "no block of the model was generated"
    for _ in range(3):  # every block generated; from the second engine on with chains, learned, then in blocks
        assert _outputs(Engine(mod), "main", args) == expect
