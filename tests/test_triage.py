"""Failure triage: signatures, grouping, ``conform triage`` on a run with planted bugs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from stablehlo_conform.harness.records.triage import Signature, normalise, signature, triage

ROOT = Path(__file__).resolve().parents[1]
CONFORM = [sys.executable, "-m", "stablehlo_conform.cli"]


def rec(status, message, family="stablehlo.add", dtypes=("f32",), id="a.mlir::t", ops=("stablehlo.add",)):
    return {"id": id, "status": status, "message": message, "family": family, "dtypes": list(dtypes),
            "ops": list(ops), "backend": "numpy"}


def test_normalise_strips_what_varies_between_instances():
    a = normalise("/x/y/add_i16.mlir:12:7: error: 3/8 elements differ; first at index [2, 1]: actual 7, "
                  "expected 6 (1 ULP) in %res#0 of tensor<2x4xi16> @main 0xFFC0")
    b = normalise("suite/other.mlir:99:1: error: 1/6 elements differ; first at index [0]: actual -1, "
                  "expected 0.5 (12 ULP) in %3 of tensor<6xi16> @f 0x7E00")
    assert a == b
    # digits inside names are kept: bessel_i1e is not bessel_i0e
    assert normalise("chlo.bessel_i1e") != normalise("chlo.bessel_i0e")


@pytest.mark.parametrize("r, stage, op", [
    (rec("fail", "f.mlir:3:5: check.expect_eq: 1/4 elements differ"), "wrong value", "stablehlo.add"),
    (rec("unsupported", "unsupported: stablehlo.fft (no kernel)"), "unsupported", "stablehlo.fft"),
    (rec("crash", "killed by signal SIGABRT; stderr: LLVM ERROR: Unsupported op: %0 = chlo.lgamma %a"),
     "crash", "chlo.lgamma"),
    (rec("timeout", "timed out after 3 s"), "timeout", "stablehlo.add"),
    (rec("error", "f.mlir:2:3: error: expected ')'", id="f.mlir::<chunk@1>"), "parse", "stablehlo.add"),
    (rec("error", "f.mlir:2:3: error: 'stablehlo.add' op requires the same element type",
         id="f.mlir::<chunk@1>"), "verify", "stablehlo.add"),
    (rec("error", "xla: compile failed: INTERNAL: bad"), "compile", "stablehlo.add"),
    (rec("error", "stablehlo.sine at f.mlir:4:9: kernel raised ValueError: boom", family="stablehlo.cosine"),
     "run", "stablehlo.sine"),
    (rec("error", "internal error: KeyError: 'x' (engine.py:12)", family="stablehlo.cosine"),
     "run", "stablehlo.cosine"),
])
def test_stage_and_op(r, stage, op):
    sig = signature(r)
    assert (sig.stage, sig.op) == (stage, op)


def test_pass_has_no_signature():
    assert signature(rec("pass", "")) is None


def test_crash_signature_is_signal_and_first_native_line():
    sig = signature(rec("crash", "worker died: killed by signal SIGSEGV (11)\nstderr:\nfoo\n"
                                 "F1124 05:00:00.123 12345 pjrt.cc:77] Check failed: n > 0 (0 vs. 0)\nmore"))
    assert sig.message.startswith("SIGSEGV: F")
    assert "Check failed" in sig.message


def test_groups_merge_element_types_and_list_them():
    rs = [rec("unsupported", "unsupported: stablehlo.fft", dtypes=(t,), id=f"f{i}.mlir::t")
          for i, t in enumerate(["f32", "f64", "f32"])]
    rs.append(rec("unsupported", "unsupported: stablehlo.rng", dtypes=("ui32",), id="g.mlir::t"))
    groups = triage(rs)
    assert [g.count for g in groups] == [3, 1]
    assert groups[0].signature.dtype == "f32,f64"
    assert str(groups[0].signature) == "unsupported | stablehlo.fft | f32,f64 | unsupported: stablehlo.fft"


def test_signature_text_round_trip_and_matching():
    s = Signature("wrong value", "stablehlo.add", "i16,i8", "check: N/N elements differ")
    assert Signature.parse(str(s)) == s
    one = Signature("wrong value", "stablehlo.add", "i16", "check: N/N elements differ")
    assert s.matches(one)
    assert not s.matches(Signature("wrong value", "stablehlo.add", "i32", "check: N/N elements differ"))
    assert Signature.parse("wrong value | stablehlo.add | * | check: N/N elements differ").matches(one)
    with pytest.raises(ValueError):
        Signature.parse("nonsense")


# end to end: 3 planted bugs, 120 failures, 3 groups --------------------------------------

BACKEND = '''
"""A backend with three planted bugs: i16 add off by one, exponential raising, sine unsupported."""
import numpy as np
from stablehlo_conform.harness.backends.numpy_backend import NumpyBackend
from stablehlo_conform.kernels.registry import load_all

REF = load_all()


def add(op, lhs, rhs):
    (out,) = REF.lookup("stablehlo.add")(op, lhs, rhs)
    if str(op.result_element(0)) == "i16":
        with np.errstate(over="ignore"):
            out = (np.asarray(out) + np.int16(1)).astype(np.int16)
    return (out,)


def exponential(op, x):
    raise ValueError("exponential: lookup table index out of range")


def sine(op, x):
    raise op.unsupported("no sine on this device")


class Planted(NumpyBackend):
    name = "planted"

    def __init__(self):
        super().__init__(registry=REF.with_overrides(
            {"stablehlo.add": add, "stablehlo.exponential": exponential, "stablehlo.sine": sine}))
'''


def _programs(n: int, rng: np.random.Generator) -> str:
    chunks = []
    for i in range(n):
        a = rng.integers(-100, 100, size=4).astype(np.int16)
        b = rng.integers(-100, 100, size=4).astype(np.int16)
        x = rng.uniform(-2, 2, size=3)
        ints = lambda v: ", ".join(str(int(e)) for e in v)  # noqa: E731
        flts = lambda v: ", ".join(repr(float(e)) for e in v)  # noqa: E731
        chunks.append(textwrap.dedent(f"""
            func.func @add_i16_{i}() {{
              %a = stablehlo.constant dense<[{ints(a)}]> : tensor<4xi16>
              %b = stablehlo.constant dense<[{ints(b)}]> : tensor<4xi16>
              %r = stablehlo.add %a, %b : tensor<4xi16>
              check.expect_eq_const %r, dense<[{ints(a + b)}]> : tensor<4xi16>
              func.return
            }}
            func.func @exp_f64_{i}() {{
              %x = stablehlo.constant dense<[{flts(x)}]> : tensor<3xf64>
              %r = stablehlo.exponential %x : tensor<3xf64>
              check.expect_almost_eq_const %r, dense<[{flts(np.exp(x))}]> : tensor<3xf64>
              func.return
            }}
            func.func @sine_f32_{i}() {{
              %x = stablehlo.constant dense<[{flts(x.astype(np.float32))}]> : tensor<3xf32>
              %r = stablehlo.sine %x : tensor<3xf32>
              check.expect_almost_eq_const %r, dense<[{flts(np.sin(x.astype(np.float32)))}]> : tensor<3xf32>
              func.return
            }}
            func.func @add_i32_{i}() {{
              %a = stablehlo.constant dense<[{ints(a)}]> : tensor<4xi32>
              %r = stablehlo.add %a, %a : tensor<4xi32>
              check.expect_eq_const %r, dense<[{ints(a.astype(np.int32) * 2)}]> : tensor<4xi32>
              func.return
            }}
            """))
    return "\n// -----\n".join(chunks)


@pytest.fixture(scope="module")
def planted_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("planted")
    site = tmp / "site"
    (site / "planted_backend.py").parent.mkdir(parents=True)
    (site / "planted_backend.py").write_text(BACKEND)
    info = site / "planted_backend-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: planted-backend\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[stablehlo_conform.backends]\nplanted = planted_backend:Planted\n")
    suite = tmp / "suite"
    suite.mkdir()
    rng = np.random.default_rng(0)
    for k in range(2):
        (suite / f"progs{k}.mlir").write_text(_programs(20, rng))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    out = tmp / "run.json"
    p = subprocess.run(CONFORM + ["run", str(suite), "--backend", "planted", "--json", str(out),
                                  "--html", str(tmp / "report.html"), "--jsonl", str(tmp / "run.jsonl")],
                       cwd=tmp, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "120 non-passing results in 3 groups" in p.stdout  # the run's own text report
    return tmp, env, out


def test_three_planted_bugs_make_three_groups(planted_run):
    tmp, env, out = planted_run
    doc = json.loads(out.read_text())
    statuses = [r["status"] for r in doc["results"]]
    assert statuses.count("pass") == 40 and len(statuses) == 160  # the i32 adds pass
    p = subprocess.run(CONFORM + ["triage", str(out), "--json", str(tmp / "triage.json")],
                       cwd=tmp, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 1, p.stdout + p.stderr
    assert p.stdout.splitlines()[0] == "120 non-passing results in 3 groups"
    groups = json.loads((tmp / "triage.json").read_text())["groups"]
    assert sorted((g["stage"], g["op"], g["dtype"], g["count"]) for g in groups) == [
        ("run", "stablehlo.exponential", "f64", 40),
        ("unsupported", "stablehlo.sine", "f32", 40),
        ("wrong value", "stablehlo.add", "i16", 40),
    ]
    for g in groups:
        assert g["backends"] == ["planted"]
        assert g["example"] in g["ids"] and len(g["ids"]) == 40


def test_triage_of_a_clean_run_exits_0(tmp_path):
    doc = {"backend": "numpy", "results": [rec("pass", "")]}
    (tmp_path / "r.json").write_text(json.dumps(doc))
    p = subprocess.run(CONFORM + ["triage", str(tmp_path / "r.json")], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "0 non-passing results in 0 groups" in p.stdout


def test_run_reports_carry_the_groups(planted_run):
    tmp, _env, out = planted_run
    doc = json.loads(out.read_text())
    assert [g["count"] for g in doc["triage"]["groups"]] == [40, 40, 40]
    page = (tmp / "report.html").read_text()
    table = page[page.index('<table class="groups"'):]
    table = table[:table.index("</table>")]
    assert table.count("<tr><td>40</td>") == 3
    assert "stablehlo.exponential" in table and "wrong value" in table


def test_a_baseline_of_signatures_accepts_whole_groups(planted_run, tmp_path):
    tmp, env, out = planted_run
    groups = json.loads(out.read_text())["triage"]["groups"]
    lines = [f"signature: {g['signature']} | planted bug {i}" for i, g in enumerate(groups)]
    base = tmp_path / "known.txt"
    base.write_text("\n".join(lines[:2]) + "\n")
    p = subprocess.run(CONFORM + ["baseline", "check", str(out), "--baseline", str(base)],
                       cwd=tmp, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 1, p.stdout + p.stderr  # the third group is still a regression
    assert "40 regression" in p.stdout
    base.write_text("\n".join(lines) + "\n")
    p = subprocess.run(CONFORM + ["baseline", "check", str(out), "--baseline", str(base)],
                       cwd=tmp, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    # a JSON baseline written by 'baseline update' keeps the signatures and lists no covered id
    from stablehlo_conform.harness.records.gate import Baseline, update_baseline

    b = Baseline.load(base)
    assert len(b.signatures) == 3
    new, stats = update_baseline(json.loads(out.read_text())["results"], b)
    assert stats.added == [] and len(new.entries) == 0 and len(new.signatures) == 3
    again = Baseline.from_json(json.dumps(new.to_json()))
    assert again.signatures.keys() == b.signatures.keys()


def test_signature_types_restrict_what_a_baseline_accepts():
    from stablehlo_conform.harness.records.gate import Baseline, evaluate_gate

    b = Baseline.from_text("signature: wrong value | stablehlo.add | i16 | N/N elements differ | add bug\n")
    hit = rec("fail", "N/N elements differ", dtypes=("i16",), id="x.mlir::a")
    miss = rec("fail", "N/N elements differ", dtypes=("i32",), id="x.mlir::b")
    g = evaluate_gate([hit, miss], b, {})
    assert [r["id"] for r in g.regressions] == ["x.mlir::b"]
    assert [r["id"] for r, _e in g.expected] == ["x.mlir::a"]


def test_the_op_and_stage_an_error_carried_travel_as_fields_and_triage_reads_them(tmp_path):
    """An error that names its op (an op without a kernel, a kernel that raised) leaves
    ``failed_at`` on the record, through the worker pipe and the JSON file; triage takes stage
    and op from it, not from the message (here a message that names another op)."""
    from stablehlo_conform.errors import KernelError
    from stablehlo_conform.harness.records.result import FailedAt, Result, new_result
    from stablehlo_conform.harness.suite.cases import Options, run_file, stopped_by

    prog = tmp_path / "uns.mlir"
    prog.write_text(textwrap.dedent("""\
        func.func @t() {
          %x = stablehlo.constant dense<1.0> : tensor<2xf32>
          %y = stablehlo.custom_call @no_such_target(%x) : (tensor<2xf32>) -> tensor<2xf32>
          check.expect_eq_const %y, dense<1.0> : tensor<2xf32>
          func.return
        }
        """))
    (r,) = [ev[1] for ev in run_file(str(prog), Options()) if ev[0] == "result"]
    assert r.failed_at == FailedAt("unsupported", "stablehlo.custom_call", f"{prog}:3:8")
    assert Result.from_json(r.to_json()) == r  # read back from a file as it was
    out = tmp_path / "r.json"
    subprocess.run([*CONFORM, "run", str(prog), "--json", str(out), "-q"], check=False, capture_output=True)
    (written,) = json.loads(out.read_text())["results"]
    assert written["failed_at"] == {"stage": "unsupported", "op": "stablehlo.custom_call", "loc": f"{prog}:3:8"}

    # a kernel error whose text quotes another op: the field decides
    base = new_result("f.mlir", "f.mlir::t", "t", 1, family="stablehlo.cosine", dtypes=("f32",))
    err = KernelError("stablehlo.sine", "f.mlir:4:9", "'stablehlo.cosine' op input out of range")
    got = stopped_by(base, None, err).to_json()
    assert got["failed_at"] == {"stage": "run", "op": "stablehlo.sine", "loc": "f.mlir:4:9"}
    sig = signature(got)
    assert (sig.stage, sig.op) == ("run", "stablehlo.sine")
    without = {k: v for k, v in got.items() if k != "failed_at"}  # the same text, read from the message alone
    assert signature(without).op == "stablehlo.cosine"
    # a field another writer left partly empty reads empty there, and triage falls back for it
    part = Result.from_json({"id": "g.mlir::t", "status": "error", "message": "boom", "failed_at": {"op": "x.y"}})
    assert part.failed_at == FailedAt("", "x.y", "")
    assert (signature(part.to_json()).stage, signature(part.to_json()).op) == ("run", "x.y")
    # a record with no error fields (a pass judged wrong, a native backend's text) has none
    assert "failed_at" not in new_result("f.mlir", "f.mlir::u", "u", 1, status="fail").to_json()
