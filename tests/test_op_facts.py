"""The facts of the built-in ops are declared with their kernels (``@kernel(name, **facts)``),
not in :mod:`stablehlo_conform.opinfo`, and every reader of the facts sees them all."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from stablehlo_conform import opinfo
from stablehlo_conform.engine.steps import FOLDABLE, LOADED_CONSTANTS, TERMINATORS
from stablehlo_conform.kernels import quantized as Q
from stablehlo_conform.kernels.registry import KERNELS, kernel_of, load_all
from stablehlo_conform.opinfo import ACCUMULATE, DEQUANTIZE, DOT, EXACT, IMPLEMENTATION, STORAGE
from stablehlo_conform.oracle import classes as C

ROOT = Path(__file__).resolve().parents[1]

# the dialects of the built-in ops
DIALECTS = ("stablehlo.", "chlo.", "mhlo.", "func.", "arith.", "math.", "complex.", "scf.", "tensor.",
            "shape.", "sdy.", "cf.", "interpreter.", "check.")


def test_opinfo_names_no_op():
    """opinfo.py holds the machinery only: no string in it names an op of a built-in dialect."""
    tree = ast.parse(Path(opinfo.__file__).read_text())
    named = [node.value for node in ast.walk(tree)
             if isinstance(node, ast.Constant) and isinstance(node.value, str)
             and any(d in node.value for d in DIALECTS)]
    assert named == []


@pytest.mark.parametrize("name, facts", [
    # spec.md "maximum": an operand's value (selects), exact; quantized through dequantize_op_quantize
    ("stablehlo.maximum", dict(folds=True, quantized=DEQUANTIZE, accuracy=EXACT, selects=True)),
    ("stablehlo.add", dict(folds=True, quantized=DEQUANTIZE, accuracy=None, selects=False)),
    # spec.md "dot_general": products follow precision_config / algorithm
    ("stablehlo.dot_general", dict(accuracy=DOT, quantized=DEQUANTIZE, folds=False)),
    # spec.md "return": ends a region, passes its operands (and their storage values) on
    ("stablehlo.return", dict(terminator=True, selects=True, quantized=STORAGE)),
    ("func.return", dict(terminator=True, quantized=STORAGE, selects=False)),
    ("func.call", dict(terminator=False, quantized=STORAGE)),
    # spec.md "rng": the generated values are implementation-defined
    ("stablehlo.rng", dict(accuracy=IMPLEMENTATION)),
    ("stablehlo.rng_bit_generator", dict(accuracy=IMPLEMENTATION)),
    # spec.md "reduce": the body decides; a sum accumulates
    ("stablehlo.reduce", dict(reduces=True, accuracy=ACCUMULATE, quantized=STORAGE)),
    ("stablehlo.scatter", dict(reduces=True, accuracy=None)),
    ("stablehlo.constant", dict(constant=True, folds=True, accuracy=EXACT)),
    ("arith.constant", dict(constant=True, folds=True, accuracy=None)),
    ("stablehlo.iota", dict(constant=False, folds=True, quantized=STORAGE)),
    ("stablehlo.convert", dict(folds=True, accuracy=EXACT)),
    ("mhlo.convert", dict(folds=False, accuracy=None)),
    ("chlo.broadcast_maximum", dict(accuracy=EXACT)),
    ("chlo.broadcast_add", dict(accuracy=None)),
    ("chlo.is_inf", dict(accuracy=EXACT)),
    ("stablehlo.shift_left", dict(folds=True, accuracy=EXACT)),
    ("stablehlo.cosine", dict(quantized=DEQUANTIZE, accuracy=None)),
])
def test_facts_of_built_in_ops(name, facts):
    info = load_all().info(name)
    assert {k: getattr(info, k) for k in facts} == facts


def test_the_views_read_the_declarations():
    load_all()
    assert "stablehlo.return" in TERMINATORS and "stablehlo.add" not in TERMINATORS
    assert set(LOADED_CONSTANTS) == {"stablehlo.constant", "arith.constant", "mhlo.constant", "chlo.constant"}
    assert {"stablehlo.select", "stablehlo.transpose"} <= FOLDABLE and "stablehlo.while" not in FOLDABLE
    assert "stablehlo.cosine" in Q.DEQUANTIZE_OPS and "stablehlo.while" in Q.STORAGE_OPS
    assert "stablehlo.reduce_window" in C.REDUCING_OPS and "stablehlo.minimum" in C.SELECTING_BODY_OPS


def test_a_helper_declares_facts_with_the_kernel():
    name = "test.twice"

    def k(op, x):
        return (x * 2,)

    with KERNELS.registering(name):  # the op's entry is gone again after the block
        assert kernel_of(k, name, doc="Twice.", folds=True, accuracy=EXACT) is k
        assert k.__name__ == "test_twice" and k.__doc__ == "Twice."
        info = KERNELS.info(name)
        assert info.kernel is k and info.folds and info.accuracy == EXACT and name in FOLDABLE
    assert name not in FOLDABLE and KERNELS.info(name) is None


_FACTS = """
import dataclasses, json, sys
from stablehlo_conform.opinfo import OPS
{setup}
print(json.dumps({{n: {{f.name: repr(getattr(OPS.info(n), f.name)) for f in dataclasses.fields(OPS.info(n))
                       if f.name not in ("kernel", "fast", "exact")}} for n in OPS.declared()}}))
"""


def _facts_in_a_fresh_process(setup: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _FACTS.format(setup=setup)], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def test_readers_of_the_oracle_classes_see_every_fact():
    """A process that judges results (the harness's judges, ``conform accuracy``) reads the
    oracle's views with every built-in op's facts, as after load_all()."""
    full = _facts_in_a_fresh_process("from stablehlo_conform.kernels import load_all; load_all()")
    assert full["stablehlo.maximum"]["selects"] == "True" and full["stablehlo.return"]["terminator"] == "True"
    for reader in ("stablehlo_conform.harness.judge.verdict", "stablehlo_conform.harness.campaigns.accuracy",
                   "stablehlo_conform.engine"):
        assert _facts_in_a_fresh_process(f"import {reader}; import stablehlo_conform.oracle.classes") == full, reader
