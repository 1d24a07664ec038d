"""Frontend: parsing, diagnostics, check sugar, bytecode and portable artifacts."""

from __future__ import annotations

import numpy as np
import pytest

from stablehlo_conform import frontend
from stablehlo_conform.errors import ParseError
from stablehlo_conform.program import AttrRecord

GOOD = """
func.func @t() {
  %0 = stablehlo.constant dense<[1, 2, 3]> : tensor<3xi32>
  check.expect_eq_const %0, dense<[1, 2, 3]> : tensor<3xi32>
  func.return
}
"""


def test_good_file_lowers_to_program():
    (mod,) = frontend.load_text(GOOD, "good.mlir")
    f = mod.funcs["t"]
    names = [op.name for op in f.body.blocks[0].ops]
    assert names == ["stablehlo.constant", "check.expect_eq_const", "func.return"]
    const = f.body.blocks[0].ops[0]
    np.testing.assert_array_equal(const.attrs["value"], np.array([1, 2, 3], np.int32))
    assert const.loc.file == "good.mlir" and const.loc.line == 3 and const.loc.col == 8
    assert [t.name for t in mod.tests()] == ["t"]


def test_syntax_error_has_file_line_col():
    text = "func.func @t() {\n  %0 = stablehlo.add %x : tensor<f32>\n}\n"
    with pytest.raises(ParseError) as e:
        frontend.load_text(text, "bad.mlir")
    assert e.value.diagnostics[0].startswith("bad.mlir:2:")
    assert "error:" in e.value.diagnostics[0]


def test_verifier_error_has_location():
    text = (
        "func.func @t() {\n"
        "  %0 = stablehlo.constant dense<1.0> : tensor<f32>\n"
        '  %1 = "stablehlo.add"(%0, %0) : (tensor<f32>, tensor<f32>) -> tensor<i32>\n'
        "  func.return\n}\n"
    )
    with pytest.raises(ParseError) as e:
        frontend.load_text(text, "v.mlir")
    assert e.value.diagnostics[0].startswith("v.mlir:3:")
    assert "element type" in e.value.diagnostics[0]


def test_split_keeps_file_line_numbers(tmp_path):
    p = tmp_path / "two.mlir"
    p.write_text(GOOD + "\n// -----\n\n" + "func.func @u() {\n  %0 = stablehlo.add %x : tensor<f32>\n}\n")
    chunks = frontend.read_chunks(p)
    assert len(chunks) == 2
    frontend.load_text(chunks[0].text)
    with pytest.raises(ParseError) as e:
        frontend.parse_chunk(chunks[1])
    line = GOOD.count("\n") + 1 + 4
    assert e.value.diagnostics[0].startswith(f"{p}:{line}:"), e.value.diagnostics[0]


def test_check_sugar_multiline_comment_and_trailing_attrs():
    text = """func.func @t() {
  %0 = stablehlo.constant dense<5.0> : tensor<f64>
  check.expect_almost_eq_const %0,
      dense<5.01> : tensor<f64> {tolerance = 0.1 : f64} // a comment
  check.expect_close %0, %0, max_ulp_difference = 3 : tensor<f64>, tensor<f64>
  func.return
}"""
    rewritten = frontend.rewrite_check_sugar(text)
    assert rewritten.count("\n") == text.count("\n")
    (mod,) = frontend.load_text(text)
    ops = mod.funcs["t"].body.blocks[0].ops
    assert ops[1].name == "check.expect_almost_eq_const"
    assert ops[1].attrs["tolerance"] == pytest.approx(0.1)
    assert ops[2].attrs["max_ulp_difference"] == 3


def test_bytecode_and_portable_artifact(tmp_path):
    text = """func.func @main() -> tensor<2xf32> {
  %0 = stablehlo.constant dense<[1.5, -2.0]> : tensor<2xf32>
  %1 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  func.return %0 : tensor<2xf32>
}"""
    bc = tmp_path / "m.mlirbc"
    bc.write_bytes(frontend.to_bytecode(text))
    (mod,) = frontend.load_file(bc)
    assert "main" in mod.funcs
    art = tmp_path / "m.vhlo"
    art.write_bytes(frontend.serialize_portable_artifact(text))
    (mod2,) = frontend.load_file(art)
    ops = mod2.funcs["main"].body.blocks[0].ops
    np.testing.assert_array_equal(ops[0].attrs["value"], np.array([1.5, -2.0], np.float32))


def test_structured_attributes_are_decoded():
    text = """func.func @g(%a: tensor<4x3xf32>, %i: tensor<2x1xi64>) -> tensor<2x3xf32> {
  %0 = "stablehlo.gather"(%a, %i) {dimension_numbers = #stablehlo.gather<offset_dims = [1],
       collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>,
       slice_sizes = array<i64: 1, 3>, indices_are_sorted = false}
       : (tensor<4x3xf32>, tensor<2x1xi64>) -> tensor<2x3xf32>
  %1 = stablehlo.compare GT, %0, %0, FLOAT : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  func.return %0 : tensor<2x3xf32>
}"""
    (mod,) = frontend.load_text(text)
    g, c = mod.funcs["g"].body.blocks[0].ops[:2]
    dn = g.attrs["dimension_numbers"]
    assert isinstance(dn, AttrRecord)
    assert tuple(dn.offset_dims) == (1,) and dn.index_vector_dim == 1
    assert g.attrs["slice_sizes"] == (1, 3)
    assert c.attrs["comparison_direction"] == "GT"
    assert c.attrs["compare_type"] == "FLOAT"
    assert mod.tests() == []  # takes arguments: not a test


def test_official_interpret_suite_parses(interpret):
    """Every interpret file parses; only quantized programs are rejected by
    the jaxlib verifier (its quant types are not StableHLO's)."""
    bad = []
    for p in sorted(interpret.rglob("*.mlir")):
        for c in frontend.read_chunks(p):
            try:
                frontend.lower_module(frontend.parse_chunk(c), c)
            except ParseError as e:
                bad.append((p.name, e.diagnostics[0]))
    assert all(name == "quantized_ops.mlir" for name, _ in bad), bad[:3]


def test_a_fresh_process_parses_every_dialect_it_evaluates():
    """The first program of a process may hold ops of any dialect the bindings provide
    (complex, math, tensor, scf, shape, ...): nothing parsed before has loaded them."""
    import subprocess
    import sys

    code = '''
from stablehlo_conform import load
(mod,) = load("""func.func @main(%a: f32, %t: tensor<2xf32>) -> tensor<f32> {
  %c = complex.create %a, %a : complex<f32>
  %r = complex.re %c : complex<f32>
  %s = math.sqrt %r : f32
  %i = arith.constant 0 : index
  %e = tensor.extract %t[%i] : tensor<2xf32>
  %f = arith.addf %s, %e : f32
  %o = tensor.from_elements %f : tensor<f32>
  func.return %o : tensor<f32>
}""")
print(sorted({op.name.split(".")[0] for f in mod.funcs.values() for op in f.body.blocks[0].ops}))
'''
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "['arith', 'complex', 'func', 'math', 'tensor']"
