"""The spec-example tests in testsuite/spec and their generator
scripts/extract_spec_examples.py."""

from __future__ import annotations

import importlib.util
import re
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SPEC_DIR = ROOT / "testsuite" / "spec"
SHARED = ROOT / ".." / "shared"
SPEC = SHARED / "stablehlo" / "docs" / "spec.md"

needs_spec = pytest.mark.skipif(not SPEC.is_file(), reason="../shared/stablehlo/docs/spec.md is absent")


def _load_generator():
    name = "extract_spec_examples"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


gen = _load_generator()
TEST_FUNC = re.compile(r"^func\.func @(\w+_example_\d+)\(\) \{", re.M)
INDEX_ROW = re.compile(r"^\| (\d+) \| (\w+) \| (\S+):(\d+) \| (.*?) \| (.*) \|$", re.M)


def committed_files() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(SPEC_DIR.iterdir())
            if p.suffix in (".mlir", ".md")}


def committed_tests() -> list[str]:
    return [m.group(1) for text in committed_files().values() for m in TEST_FUNC.finditer(text)]


# --------------------------------------------------------------------------- #
# The committed files
# --------------------------------------------------------------------------- #


@needs_spec
def test_regenerating_gives_the_committed_files(tmp_path):
    rfcs = gen.find_rfcs(SHARED / "seeds")
    assert [p.name for p in rfcs] == ["004_6ddba65058e4afdd.txt"]
    assert gen.main([str(SPEC), "--out", str(tmp_path), "--no-verify"]) == 0
    fresh = {p.name: p.read_text(encoding="utf-8") for p in sorted(tmp_path.iterdir())}
    assert fresh.keys() == committed_files().keys()
    for name, text in fresh.items():
        assert text == committed_files()[name], f"{name} is stale: rerun scripts/extract_spec_examples.py"


@needs_spec
def test_generation_is_deterministic():
    rfcs = gen.find_rfcs(SHARED / "seeds")
    a, _, _ = gen.generate(SPEC, rfcs)
    b, _, _ = gen.generate(SPEC, rfcs)
    assert a == b


def test_at_least_100_tests_with_unique_names():
    tests = committed_tests()
    assert len(tests) >= 100
    assert len(tests) == len(set(tests))
    for name in tests:
        op = name.rsplit("_example_", 1)[0]
        assert (SPEC_DIR / f"{op}.mlir").is_file()


def test_index_lists_every_example_and_every_test():
    index = (SPEC_DIR / "INDEX.md").read_text(encoding="utf-8")
    rows = INDEX_ROW.findall(index)
    found = int(re.search(r"examples found: (\d+)", index).group(1))
    generated = int(re.search(r"tests generated: (\d+)", index).group(1))
    skipped = int(re.search(r"not generated: (\d+)", index).group(1))
    assert len(rows) == found == generated + skipped
    assert [int(r[0]) for r in rows] == list(range(1, found + 1))
    listed = set()
    for _n, op, _src, _line, test, status in rows:
        if status.startswith("generated"):
            m = re.fullmatch(r"`(\w+)\.mlir::(\w+)`", test)
            assert m and m.group(1) == op, test
            listed.add(m.group(2))
        else:
            assert status.startswith("not generated: ") and len(status) > len("not generated: ") + 10
    assert listed == set(committed_tests())
    assert len(listed) == generated


@needs_spec
def test_every_mlir_block_of_the_ops_chapter_is_in_the_index():
    index = (SPEC_DIR / "INDEX.md").read_text(encoding="utf-8")
    rows = [(src, int(line)) for _n, _op, src, line, _t, _s in INDEX_ROW.findall(index)]
    lines = SPEC.read_text(encoding="utf-8").splitlines()
    starts = [i + 2 for i, ln in enumerate(lines) if ln.strip() == "```mlir"]
    ops_start = lines.index("## Ops") + 1
    ops_end = next(i for i, ln in enumerate(lines) if ln.startswith("## ") and i + 1 > ops_start)
    for start in starts:
        end = next(i + 1 for i in range(start - 1, len(lines)) if lines[i].strip() == "```")
        in_index = any(src == "spec.md" and start <= ln < end for src, ln in rows)
        other = f"- spec.md:{start} (" in index
        if ops_start < start < ops_end:
            assert in_index, f"example block at spec.md:{start} is not in INDEX.md"
        else:
            assert other, f"mlir block at spec.md:{start} is not in INDEX.md"


def test_committed_files_parse_and_verify_with_the_bindings():
    from stablehlo_conform import frontend

    count = 0
    for path in sorted(SPEC_DIR.glob("*.mlir")):
        for module in frontend.load_file(path):
            count += len(module.tests())
    assert count == len(committed_tests())


def test_abs_and_collective_tests_read_as_the_spec_examples():
    abs_text = (SPEC_DIR / "abs.mlir").read_text(encoding="utf-8")
    assert textwrap.dedent("""\
        func.func @abs_example_1() {
          %operand = stablehlo.constant dense<[-2, 0, 2]> : tensor<3xi32>
          %result = "stablehlo.abs"(%operand) : (tensor<3xi32>) -> tensor<3xi32>
          check.expect_eq_const %result, dense<[2, 0, 2]> : tensor<3xi32>
          func.return
        }""") in abs_text
    a2a = (SPEC_DIR / "all_to_all.mlir").read_text(encoding="utf-8")
    assert "programs = [[@all_to_all_example_1_process], [@all_to_all_example_1_process]]" in a2a
    # %result#1@(1, 0) is the 2nd result of the 2nd process: results#3
    assert ("check.expect_eq_const %results#3, dense<[[19, 20], [23, 24], [27, 28], [31, 32]]> : "
            "tensor<4x2xi64>") in a2a


# --------------------------------------------------------------------------- #
# Translation of the spec's notation
# --------------------------------------------------------------------------- #


def _elem(t: str):
    return gen.parse_elem(t)


@pytest.mark.parametrize(
    "tok,elem,want",
    [
        ("-inf", "f32", "0xFF800000"),
        ("inf", "f64", "0x7FF0000000000000"),
        ("nan", "f32", "0x7FC00000"),
        ("-nan", "f32", "0xFFC00000"),
        ("nan", "bf16", "0x7FC0"),
        ("-inf", "f16", "0xFC00"),
        ("0x7fffffffffffffff", "f64", "0x7FFFFFFFFFFFFFFF"),
        ("1", "f32", "1.0"),
        ("-0.0", "f32", "-0.0"),
        ("1.63312e+16", "f64", "1.63312e+16"),
        ("2e3", "f64", "2.0e3"),
        ("+.5", "f32", "0.5"),
    ],
)
def test_float_literals(tok, elem, want):
    assert gen.float_literal(tok, _elem(elem)) == want


def test_scalars_of_every_kind():
    assert gen.scalar_literal("true", _elem("i1")) == "true"
    assert gen.scalar_literal("-128", _elem("i8")) == "-128"
    assert gen.scalar_literal("255", _elem("ui8")) == "255"
    assert gen.scalar_literal(("1.0", "-2"), _elem("complex<f64>")) == "(1.0, -2.0)"
    for tok, e in (("128", "i8"), ("-1", "ui32"), ("1", "i1"), ("1.5", "i32"), ("0x123456789", "f32")):
        with pytest.raises(gen.Skip):
            gen.scalar_literal(tok, _elem(e))
    with pytest.raises(gen.Skip):
        gen.scalar_literal("2.5", _elem("complex<f32>"))


def test_dense_bodies_follow_the_type_shape():
    t = gen.parse_type("tensor<2x2xf32>")
    assert t.shape == (2, 2) and t.elem.kind == "float"
    assert gen.dense_body(gen.read_value("[[1, 2], [3, 4]]"), t) == "[[1.0, 2.0], [3.0, 4.0]]"
    assert gen.dense_body(gen.read_value("5"), gen.parse_type("tensor<i64>")) == "5"
    c = gen.parse_type("tensor<2xcomplex<f32>>")
    assert gen.dense_body(gen.read_value("[(1.0, 2.0), (3.0, -inf)]"), c) == \
        "[(1.0, 2.0), (3.0, 0xFF800000)]"
    with pytest.raises(gen.Skip):
        gen.dense_body(gen.read_value("[1, 2, 3]"), t)
    with pytest.raises(gen.Skip):
        gen.dense_body(gen.read_value("(2.5, 0.0)"), gen.parse_type("tensor<1xcomplex<f32>>"))
    q = gen.parse_type("tensor<2x!quant.uniform<i8:f32:0, {0.1:-30,0.5:-20}>>")
    assert q.elem.kind == "quant" and gen.storage_type(q) == "tensor<2xi8>"
    tup = gen.parse_type("tuple<tensor<2xf64>, tuple<tensor<i64>>>")
    assert [x.text for x in tup.items] == ["tensor<2xf64>", "tuple<tensor<i64>>"]


# --------------------------------------------------------------------------- #
# From a document to tests
# --------------------------------------------------------------------------- #

DOC = """\
# Doc

## Ops

### abs

#### Examples

```mlir
// Integer example
// %operand: [-2, 0, 2]
%result = "stablehlo.abs"(%operand) : (tensor<3xi32>) -> tensor<3xi32>
// %result: [2, 0, 2]
// Float example
// %operand = [-inf, -0.0]
%result = "stablehlo.abs"(%operand) : (tensor<2xf32>) -> tensor<2xf32>
// %result = [inf, 0.0]
```

### split

#### Examples

```mlir
// %x: [[1, 2],
//      [3, 4]] // a remark
%r:2 = "stablehlo.split"(%x) {
  dim = 0 : i64
} : (tensor<2x2xi8>) -> (tensor<1x2xi8>, tensor<1x2xi8>)
// %r0: [[1, 2]]
// %r#1: [[3, 4]]
```

### all_gather

```mlir
// num_replicas: 2
// num_partitions: 1
// %operand@(0, 0): [1]
// %operand@(1, 0): [2]
%result = "stablehlo.all_gather"(%operand) {
  all_gather_dim = 0 : i64,
  replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>
} : (tensor<1xi64>) -> tensor<2xi64>
// %result@(0, 0): [1, 2]
// %result@(1, 0): [1, 2]
```

### nothing

```mlir
%result = "stablehlo.nothing"(%operand) : (tensor<f32>) -> tensor<f32>
```

## Execution

```mlir
%0 = "stablehlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
```
"""


def test_a_small_document_becomes_tests(tmp_path):
    doc = tmp_path / "spec.md"
    doc.write_text(DOC, encoding="utf-8")
    files, results, others = gen.generate(doc, [])
    assert [r.test for r in results] == [
        "abs_example_1", "abs_example_2", "split_example_1", "all_gather_example_1", "nothing_example_1"]
    assert [b.line for b in others] == [58]
    assert results[-1].text is None and results[-1].reason == "no value given for input %operand"
    assert files["abs.mlir"].split("\n// -----\n")[1].strip().splitlines()[1:] == [
        "func.func @abs_example_2() {",
        "  %operand = stablehlo.constant dense<[0xFF800000, -0.0]> : tensor<2xf32>",
        '  %result = "stablehlo.abs"(%operand) : (tensor<2xf32>) -> tensor<2xf32>',
        "  check.expect_almost_eq_const %result, dense<[0x7F800000, 0.0]> : tensor<2xf32>",
        "  func.return",
        "}",
    ]
    split = files["split.mlir"]
    assert "%x = stablehlo.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi8>" in split
    assert "check.expect_eq_const %r#0, dense<[[1, 2]]> : tensor<1x2xi8>" in split
    assert "check.expect_eq_const %r#1, dense<[[3, 4]]> : tensor<1x2xi8>" in split
    ag = files["all_gather.mlir"]
    assert ("func.func private @all_gather_example_1_process(%operand: tensor<1xi64>) -> "
            "(tensor<2xi64>) {") in ag
    assert "%operand.p0_0 = stablehlo.constant dense<[1]> : tensor<1xi64>" in ag
    assert "%operand.p1_0 = stablehlo.constant dense<[2]> : tensor<1xi64>" in ag
    assert ('%results:2 = "interpreter.run_parallel"(%operand.p0_0, %operand.p1_0) {programs = '
            "[[@all_gather_example_1_process], [@all_gather_example_1_process]]}") in ag
    index = files["INDEX.md"]
    assert "- examples found: 5" in index and "- tests generated: 4" in index
    assert "| 5 | nothing | spec.md:52 | (nothing_example_1) | not generated: no value given" in index


def test_errata_are_applied_and_reported(tmp_path):
    doc = tmp_path / "spec.md"
    doc.write_text(textwrap.dedent("""\
        ## Ops

        ### while

        ```mlir
        // %init_i: 1
        %r = "stablehlo.negate"(%init_i) : (tensor<i64>) -> tensor<i64>
        // %r: 0
        ```
        """), encoding="utf-8")
    files, results, _ = gen.generate(doc, [])
    assert "%init_i = stablehlo.constant dense<0> : tensor<i64>" in files["while.mlir"]
    assert results[0].example.errata and "corrected `// %init_i: 1` to `// %init_i: 0`" in \
        results[0].example.errata[0]
    assert "## Generated from corrected example text" in files["INDEX.md"]
