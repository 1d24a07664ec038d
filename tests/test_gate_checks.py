"""A wrong value is a ``fail`` showing both values, never an ``error``: every
check op of the check dialect (and its custom_call spellings), on rank 0 and
higher ranks, for every family of element types."""

from __future__ import annotations

import pytest

from stablehlo_conform.harness.records.result import Result
from stablehlo_conform.harness.suite.cases import Options, run_file

from kernel_util import ty

# element type -> (actual literal, expected literal, actual shown, expected shown)
VALUES = {
    "f32": ("1.0", "2.0", "1.0", "2.0"),
    "f64": ("1.0", "2.5", "1.0", "2.5"),
    "f16": ("1.0", "2.0", "1.0", "2.0"),
    "bf16": ("1.0", "2.0", "1.0", "2.0"),
    "f8E4M3FN": ("1.0", "2.0", "1.0", "2.0"),
    "f8E5M2": ("1.0", "-2.0", "1.0", "-2.0"),
    "complex<f32>": ("(1.0, 0.0)", "(1.0, 2.0)", "(1+0j)", "(1+2j)"),
    "complex<f64>": ("(1.0, 0.0)", "(3.0, 0.0)", "(1+0j)", "(3+0j)"),
    "i1": ("true", "false", "True", "False"),
    "i2": ("1", "-1", "1", "-1"),
    "i4": ("3", "-5", "3", "-5"),
    "ui4": ("3", "12", "3", "12"),
    "i8": ("7", "-8", "7", "-8"),
    "i32": ("7", "9", "7", "9"),
    "ui64": ("7", "9", "7", "9"),
}
SHAPES = [(), (3,), (2, 2)]


def _program(op: str, t: str, a: str, b: str) -> str:
    """A test whose check op compares constant ``a`` with ``b`` (both of type ``t``)."""
    head = f"func.func @main() {{\n  %a = stablehlo.constant dense<{a}> : {t}\n" \
           f"  %b = stablehlo.constant dense<{b}> : {t}\n"
    body = {
        "expect_eq_const": f"  check.expect_eq_const %a, dense<{b}> : {t}\n",
        "expect_almost_eq_const": f"  check.expect_almost_eq_const %a, dense<{b}> : {t}\n",
        "expect_eq": f"  check.expect_eq %a, %b : {t}\n",
        "expect_almost_eq": f"  check.expect_almost_eq %a, %b, tolerance = 0.1 : {t}\n",
        "expect_close": f"  check.expect_close %a, %b, max_ulp_difference = 3 : {t}, {t}\n",
        "expect_serialized_eq": f'  %p = interpreter.probe %b, probe_id = "p" : {t}\n'
                                f'  check.expect_serialized_eq %a, probe_id = "p" : {t}\n',
        "custom_call expect_eq": f"  stablehlo.custom_call @check.expect_eq(%a, %b) : ({t}, {t}) -> ()\n",
        "custom_call expect_close": f"  stablehlo.custom_call @check.expect_close(%a, %b) : ({t}, {t}) -> ()\n",
        "custom_call expect_almost_eq":
            f"  stablehlo.custom_call @check.expect_almost_eq(%a, %b) : ({t}, {t}) -> ()\n",
        "custom_call eq": f"  %r = stablehlo.custom_call @check.eq(%a, %b) : ({t}, {t}) -> tensor<i1>\n",
    }[op]
    return head + body + "  func.return\n}\n"


OPS = ["expect_eq_const", "expect_almost_eq_const", "expect_eq", "expect_almost_eq", "expect_close",
       "expect_serialized_eq", "custom_call expect_eq", "custom_call expect_close",
       "custom_call expect_almost_eq"]


def _record(tmp_path, text: str) -> Result:
    p = tmp_path / "check.mlir"
    p.write_text(text)
    (rec,) = [ev[1] for ev in run_file(str(p), Options()) if ev[0] == "result"]
    return rec


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"rank{len(s)}")
@pytest.mark.parametrize("el", list(VALUES))
@pytest.mark.parametrize("op", OPS)
def test_wrong_value_fails_with_both_values(tmp_path, op, el, shape):
    a, b, shown_a, shown_b = VALUES[el]
    rec = _record(tmp_path, _program(op, ty(shape, el), a, b))
    assert rec.status == "fail", rec.message
    first = "[" + ", ".join("0" for _ in shape) + "]"
    n = 1
    for d in shape:
        n *= d
    assert f"{n}/{n} elements differ; first at index {first}: actual {shown_a}, expected {shown_b}" \
        in rec.message, rec.message
    assert f"{op.split()[-1]}" in rec.message


@pytest.mark.parametrize("el", ["f32", "bf16", "complex<f64>", "i1", "i4"])
def test_equal_values_pass(tmp_path, el):
    a = VALUES[el][0]
    for op in OPS:
        rec = _record(tmp_path, _program(op, ty((), el), a, a))
        assert rec.status == "pass", (op, rec.message)


def test_check_eq_returns_false_on_rank0(tmp_path):
    """``check.eq`` hands back its verdict as a tensor<i1> and records the failure."""
    rec = _record(tmp_path, _program("custom_call eq", "tensor<f32>", "1.0", "2.0"))
    assert rec.status == "fail"
    assert "actual 1.0, expected 2.0" in rec.message
