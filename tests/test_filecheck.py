"""One FileCheck for every kind of program with CHECK lines: the official suite's RUN-line
programs (the interpreter's printed results) and IREE's programs (the tools' output)."""

from __future__ import annotations

from stablehlo_conform.harness.programs import filecheck as FC
from stablehlo_conform.harness.programs import arguments as programs, iree_run
from stablehlo_conform import frontend
from test_cli import RUN_ARGS  # a RUN-line program with CHECK and CHECK-NEXT lines

OUTPUT = "tensor<2xi32> {\n  [4, 5]\n}\n"


def _checks(source: str):
    (case,) = [c for _m, c in programs.find_program_cases(source, frontend.load_text(source))]
    return case.checks


def test_run_line_programs_and_iree_programs_share_one_filecheck():
    assert iree_run.filecheck is FC.filecheck and not hasattr(programs, "filecheck")
    assert _checks(RUN_ARGS) == (("", "tensor<2xi32> {"), ("NEXT", "[4, 5]"), ("NEXT", "}"))
    assert FC.filecheck(OUTPUT, _checks(RUN_ARGS)) is None


def test_every_directive_of_a_run_line_program_is_checked():
    """CHECK-SAME and CHECK-NOT lines of a RUN-line program count (they were skipped), runs of
    blanks match any blanks, and a failure shows the output where the check searched."""
    same = RUN_ARGS.replace("// CHECK-NEXT:   [4, 5]", "// CHECK-NEXT:   [4,\n// CHECK-SAME: 6]")
    why = FC.filecheck(OUTPUT, _checks(same))
    assert why.startswith("CHECK-SAME: '6]' not on the same line") and "output from line 2:\n  [4, 5]" in why
    banned = RUN_ARGS + "// CHECK-NOT: error\n"
    assert FC.filecheck(OUTPUT, _checks(banned)) is None
    assert "CHECK-NOT: '}' found" in FC.filecheck(OUTPUT + "}\n", _checks(RUN_ARGS + "// CHECK-NOT: }\n"))
    assert FC.filecheck(OUTPUT.replace("[4, 5]", "[4,   5]"), _checks(RUN_ARGS)) is None
