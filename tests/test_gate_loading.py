"""Hostile inputs at load time and in evaluation: an unterminated check
statement, blocks nested too deep, deep but finite recursion, a runaway
recursion. Each ends as one clear record; nothing hangs or crashes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from stablehlo_conform import frontend
from stablehlo_conform.engine import MAX_DEPTH
from stablehlo_conform.harness.records.result import Result
from stablehlo_conform.harness.suite.cases import Options, run_file

ROOT = Path(__file__).resolve().parents[1]
CONFORM = [sys.executable, "-m", "stablehlo_conform.cli"]


def records(path) -> list[Result]:
    return [ev[1] for ev in run_file(str(path), Options()) if ev[0] == "result"]


def conform_run(*args: str, timeout: float = 120) -> tuple[subprocess.CompletedProcess, list[dict]]:
    """``conform run ... --json`` in a real subprocess; its records."""
    out = Path(args[0]).with_suffix(".json")
    proc = subprocess.run([*CONFORM, "run", *args, "--json", str(out), "-j", "1"],
                          capture_output=True, text=True, timeout=timeout)
    return proc, json.loads(out.read_text())["results"]


# check sugar -------------------------------------------------------------------


def test_rewrite_of_a_multiline_statement_by_hand():
    text = ("func.func @t() {\n"
            "  %0 = stablehlo.constant dense<[1, 2]> : tensor<2xi32>\n"
            "  check.expect_eq_const %0, dense<[\n"
            "      1, // one\n"
            "      2]> : tensor<2xi32>\n"
            "  func.return\n}\n")
    want = ("func.func @t() {\n"
            "  %0 = stablehlo.constant dense<[1, 2]> : tensor<2xi32>\n"
            '  "check.expect_eq_const"(%0) {value = dense<[ 1, 2]> : tensor<2xi32>} : (tensor<2xi32>) -> ()\n'
            "\n\n"
            "  func.return\n}\n")
    assert frontend.rewrite_check_sugar(text) == want


def test_rewrite_keeps_lines_and_leaves_no_sugar_in_the_official_suite(interpret):
    """Every check statement of every interpret file becomes generic form and
    every line keeps its number (the rewrite is line-preserving)."""
    files = sorted(interpret.glob("*.mlir"))
    assert len(files) > 90
    for f in files:
        text = f.read_text()
        out = frontend.rewrite_check_sugar(text)
        assert out.count("\n") == text.count("\n"), f
        sugar = len(frontend._CHECK_START.findall(text))
        assert not frontend._CHECK_START.findall(out), f
        assert out.count('"check.') == text.count('"check.') + sugar, f


def test_unterminated_check_statement_in_a_large_file_is_one_quick_error(tmp_path):
    """A 300 KB file whose check statement never closes its bracket: the
    statement runs to the end of the file once (the rewrite is linear), the
    parser reports it at its own line, and ``conform run`` ends well within
    the bound below (a quadratic rewrite takes minutes on this file)."""
    lines = ["func.func @main() {", "  %0 = stablehlo.constant dense<1> : tensor<i32>",
             "  check.expect_eq_const %0, dense<[1,"]
    lines += [f"  {i}," for i in range(40_000)]
    p = tmp_path / "unterminated.mlir"
    p.write_text("\n".join(lines) + "\n")
    assert p.stat().st_size > 300_000
    proc, recs = conform_run(str(p), timeout=60)
    assert proc.returncode == 1
    (rec,) = recs
    assert rec["status"] == "error"
    assert rec["message"] == f"{p}:3:3: error: check.expect_eq_const: a bracket of this statement is never closed"


def test_unterminated_check_statement_in_a_later_chunk_names_the_files_line(tmp_path):
    p = tmp_path / "two.mlir"
    p.write_text("func.func @ok() {\n  func.return\n}\n// -----\nfunc.func @t() {\n"
                 "  %0 = stablehlo.constant dense<1> : tensor<i32>\n    check.expect_eq_const %0, dense<[1, 2\n"
                 "  func.return\n}\n")
    recs = records(p)
    assert [(r.status, r.message) for r in recs] == [
        ("error", f"{p}:7:5: error: check.expect_eq_const: a bracket of this statement is never closed"),
        ("pass", ""),
    ]


def test_diagnostics_of_a_late_chunk_carry_the_files_line(tmp_path):
    chunks = [f"func.func @t{i}() {{\n  func.return\n}}\n" for i in range(300)]
    chunks.append("func.func @bad() {\n  %1 = stablehlo.add %zz, %zz : tensor<i32>\n  func.return\n}\n")
    p = tmp_path / "many.mlir"
    p.write_text("// -----\n".join(chunks))
    bad = [r for r in records(p) if r.status == "error"]
    assert [r.id for r in bad] == [f"{p}::<chunk@{300 * 4 + 1}>"]
    assert bad[0].message.startswith(f"{p}:{300 * 4 + 2}:22: error: use of undeclared SSA value"), bad[0]


# nesting and recursion -----------------------------------------------------------


def nested_ifs(depth: int) -> str:
    """``depth`` stablehlo.if ops nested in one another (generic form, two
    brackets per level); the innermost true branch returns 1."""
    lines = ["func.func @main() {", "  %p = stablehlo.constant dense<true> : tensor<i1>"]
    lines += [f'  %r{i} = "stablehlo.if"(%p) ({{' for i in range(depth)]
    lines += ["  %v = stablehlo.constant dense<1> : tensor<i32>", "  stablehlo.return %v : tensor<i32>"]
    for i in reversed(range(depth)):
        lines += ["  }, {", f"  %w{i} = stablehlo.constant dense<2> : tensor<i32>",
                  f"  stablehlo.return %w{i} : tensor<i32>", "  }) : (tensor<i1>) -> tensor<i32>"]
        if i > 0:
            lines.append(f"  stablehlo.return %r{i} : tensor<i32>")
    lines += ["  check.expect_eq_const %r0, dense<1> : tensor<i32>", "  func.return", "}"]
    return "\n".join(lines) + "\n"


def test_deep_but_allowed_nesting_runs(tmp_path):
    p = tmp_path / "nest.mlir"
    p.write_text(nested_ifs(frontend.MAX_NESTING // 2 - 5))
    (rec,) = records(p)
    assert rec.status == "pass", rec.message


@pytest.mark.parametrize("depth", [1000, 20_000])
def test_nesting_too_deep_is_an_error_record_not_a_crash(tmp_path, depth):
    """In a real ``conform run``: the parser would exhaust the stack (SIGSEGV)
    at a few thousand levels; the text is refused before parsing, at the
    first bracket past the limit."""
    p = tmp_path / "nest.mlir"
    p.write_text(nested_ifs(depth))
    proc, recs = conform_run(str(p))
    assert proc.returncode == 1, proc.stderr
    (rec,) = recs
    assert rec["status"] == "error"
    # depth 1 inside @main, +2 per if line: the 500th if's '{' (line 2 + 500, column 31) is level 1001
    assert rec["message"] == (f"{p}:502:31: error: blocks nested deeper than {frontend.MAX_NESTING} levels"), rec


def call_chain(n: int) -> str:
    """@f0 -> @f1 -> ... -> @f{n-1}, each adding one to its argument."""
    lines = ["func.func @main() {", "  %c = stablehlo.constant dense<0> : tensor<i32>",
             "  %r = func.call @f0(%c) : (tensor<i32>) -> tensor<i32>",
             f"  check.expect_eq_const %r, dense<{n}> : tensor<i32>", "  func.return", "}"]
    for i in range(n):
        lines += [f"func.func private @f{i}(%x: tensor<i32>) -> tensor<i32> {{",
                  "  %one = stablehlo.constant dense<1> : tensor<i32>",
                  "  %y = stablehlo.add %x, %one : tensor<i32>"]
        if i + 1 < n:
            lines += [f"  %z = func.call @f{i + 1}(%y) : (tensor<i32>) -> tensor<i32>", "  func.return %z : tensor<i32>"]
        else:
            lines.append("  func.return %y : tensor<i32>")
        lines.append("}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("n", [499, 2000])
def test_deep_call_chain_runs(tmp_path, n):
    p = tmp_path / "chain.mlir"
    p.write_text(call_chain(n))
    (rec,) = records(p)
    assert rec.status == "pass", rec.message


def recursive_sum(n: int) -> str:
    """sum(k) = k == 0 ? 0 : k + sum(k - 1), recursing through stablehlo.if."""
    return f"""func.func @main() {{
  %c = stablehlo.constant dense<{n}> : tensor<i64>
  %r = func.call @sum(%c) : (tensor<i64>) -> tensor<i64>
  check.expect_eq_const %r, dense<{n * (n + 1) // 2}> : tensor<i64>
  func.return
}}
func.func private @sum(%k: tensor<i64>) -> tensor<i64> {{
  %zero = stablehlo.constant dense<0> : tensor<i64>
  %one = stablehlo.constant dense<1> : tensor<i64>
  %p = stablehlo.compare EQ, %k, %zero : (tensor<i64>, tensor<i64>) -> tensor<i1>
  %r = "stablehlo.if"(%p) ({{
    stablehlo.return %zero : tensor<i64>
  }}, {{
    %km1 = stablehlo.subtract %k, %one : tensor<i64>
    %s = func.call @sum(%km1) : (tensor<i64>) -> tensor<i64>
    %t = stablehlo.add %k, %s : tensor<i64>
    stablehlo.return %t : tensor<i64>
  }}) : (tensor<i1>) -> tensor<i64>
  func.return %r : tensor<i64>
}}
"""


@pytest.mark.parametrize("n", [150, MAX_DEPTH // 2 - 10])
def test_deep_recursion_through_if_runs(tmp_path, n):
    """Two levels per step (the call and the if's region): n = MAX_DEPTH/2 - 10 still fits."""
    p = tmp_path / "sum.mlir"
    p.write_text(recursive_sum(n))
    (rec,) = records(p)
    assert rec.status == "pass", rec.message
    assert rec.checks == 1


def test_runaway_recursion_is_an_error_at_the_call(tmp_path):
    p = tmp_path / "runaway.mlir"
    p.write_text("""func.func @main() {
  %c = stablehlo.constant dense<0> : tensor<i32>
  %r = func.call @loop(%c) : (tensor<i32>) -> tensor<i32>
  check.expect_eq_const %r, dense<0> : tensor<i32>
  func.return
}
func.func private @loop(%x: tensor<i32>) -> tensor<i32> {
  %r = func.call @loop(%x) : (tensor<i32>) -> tensor<i32>
  func.return %r : tensor<i32>
}
""")
    (rec,) = records(p)
    assert rec.status == "error"
    assert rec.message == (f"{p}:8:8: error: func.call: more than {MAX_DEPTH} nested calls and regions "
                              "(a runaway recursion?)")


def test_runaway_recursion_through_if_names_the_if(tmp_path):
    """A recursion that never reaches its base case (k counts up from 1)."""
    p = tmp_path / "up.mlir"
    p.write_text(recursive_sum(1).replace("stablehlo.subtract %k, %one", "stablehlo.add %k, %one"))
    (rec,) = records(p)
    assert rec.status == "error"
    assert f"more than {MAX_DEPTH} nested calls and regions" in rec.message
    assert rec.message.startswith((f"{p}:11:8: error: stablehlo.if:", f"{p}:15:10: error: func.call:"))


def nested_whiles(depth: int) -> str:
    """``depth`` stablehlo.while ops nested in one another's bodies (pretty
    form: one brace per level); each runs its body once."""
    lines = ["func.func @main() {", "  %c0 = stablehlo.constant dense<0> : tensor<i32>",
             "  %one = stablehlo.constant dense<1> : tensor<i32>"]
    for i in range(depth):
        lines += [f"  %w{i} = stablehlo.while(%it{i} = %c0) : tensor<i32>", "  cond {",
                  f"  %p{i} = stablehlo.compare LT, %it{i}, %one : (tensor<i32>, tensor<i32>) -> tensor<i1>",
                  f"  stablehlo.return %p{i} : tensor<i1>", "  } do {"]
    for i in reversed(range(depth)):
        lines += [f"  %n{i} = stablehlo.add %it{i}, %one : tensor<i32>", f"  stablehlo.return %n{i} : tensor<i32>",
                  "  }"]
    lines += ["  check.expect_eq_const %w0, dense<1> : tensor<i32>", "  func.return", "}"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("kind", ["call chain", "nested regions"])
def test_deep_programs_run_in_a_fresh_process(tmp_path, kind):
    """In a fresh ``conform run`` (no earlier deep program has raised any
    limit): a 3000-long call chain, regions nested 990 deep."""
    p = tmp_path / "deep.mlir"
    p.write_text(call_chain(3000) if kind == "call chain" else nested_whiles(frontend.MAX_NESTING - 10))
    proc, recs = conform_run(str(p))
    assert proc.returncode == 0, proc.stderr
    assert [(r["status"], r["checks"]) for r in recs] == [("pass", 1)], recs
