"""The typed result: JSON round trip, the one failure text, immutability."""

from __future__ import annotations

import dataclasses
import json

import pytest

from stablehlo_conform import frontend
from stablehlo_conform.harness.suite import cases
from stablehlo_conform.harness.reports import junit
from stablehlo_conform.harness.records.result import Outcome, Result, Status, describe_failure

BASE = ["id", "file", "function", "line", "status", "message", "family", "ops", "dtypes", "duration", "checks"]

OPTIONAL = {
    "backend": "numpy",
    "kind": "args",
    "output": "printed\n",
    "accuracy": {"note": "passed within the ops' accuracy classes", "checks": []},
    "verdict": {"verdict": "no reference", "summary": "s", "checks": []},
    "compare": {"numpy": "ok", "xla": "ok"},
    "disagreements": ["xla vs numpy at check #0 (t.mlir:3): differs"],
    "compare_accuracy": "both within the class",
    "compare_verdict": {"verdict": "backend wrong", "summary": "x", "wrong": ["xla"]},
}


def _record(status: str, **extra) -> dict:
    rec = {"id": "t.mlir::f", "file": "t.mlir", "function": "f", "line": 3, "status": status,
           "message": "t.mlir:4: 1 != 2; t.mlir:5: 3 != 4", "family": "add", "ops": ["stablehlo.add"],
           "dtypes": ["f32"], "duration": 0.25, "checks": 2}
    rec.update(extra)
    return rec


@pytest.mark.parametrize("status", [s.value for s in Status])
def test_every_status_round_trips(status):
    rec = _record(status, backend="numpy")
    r = Result.from_json(rec)
    assert r.status is Status(status)
    assert json.dumps(r.to_json()) == json.dumps(rec)


def test_status_values_are_the_json_strings():
    assert [s.value for s in Status] == ["pass", "fail", "error", "unsupported", "crash", "timeout"]
    assert json.dumps({"s": Status.CRASH}) == '{"s": "crash"}'
    with pytest.raises(ValueError):
        Result(id="x", status="skipped")


@pytest.mark.parametrize("name", sorted(OPTIONAL))
def test_each_optional_field_round_trips_alone(name):
    rec = _record("fail", **{name: OPTIONAL[name]})
    r = Result.from_json(rec)
    assert getattr(r, name) is not None
    assert list(r.to_json()) == BASE + [name]
    assert r.to_json() == rec


def test_optional_fields_are_left_out_when_unset():
    r = Result(id="a.mlir::<file>", file="a.mlir")
    assert list(r.to_json()) == BASE
    assert r.to_json()["status"] == "error" and r.to_json()["ops"] == []


def test_all_optional_fields_keep_their_order_and_unknown_fields_come_last():
    rec = _record("fail", **OPTIONAL, name="from another tool")
    out = Result.from_json(rec).to_json()
    assert list(out) == BASE + list(OPTIONAL) + ["name"]
    assert out == rec


def test_a_verdict_set_after_the_comparison_stays_after_it():
    rec = _record("fail", backend="numpy", compare={"numpy": "ok"}, disagreements=["d"],
                  compare_verdict={"summary": "x"}, verdict={"summary": "x"})
    assert list(Result.from_json(rec).to_json()) == list(rec)


def test_a_result_cannot_be_changed():
    r = Result.from_json(_record("pass"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.status = Status.FAIL
    assert isinstance(r.ops, tuple)
    r2 = dataclasses.replace(r, status=Status.FAIL, message="m")
    assert r.status is Status.PASS and r2.status is Status.FAIL and r2.message == "m"


def test_outcome_from_a_plugins_partial_record():
    o = Outcome.of({"status": "fail", "message": "m", "checks": 3})
    assert o == Outcome(Status.FAIL, 3, "m")
    assert Outcome.of(o) is o
    r = o.apply(Result(id="x", backend="b"))
    assert (r.status, r.message, r.checks, r.output, r.backend) == (Status.FAIL, "m", 3, None, "b")
    with pytest.raises(ValueError):
        Outcome.of({"status": "maybe"})


def test_describe_failure_text():
    f = describe_failure(Result.from_json(_record("fail", backend="numpy")))
    assert (f.id, f.status, f.where, f.backend) == ("t.mlir::f", "fail", "t.mlir:3", "numpy")
    assert f.ops == ("stablehlo.add",) and f.dtypes == ("f32",)
    assert f.first == "t.mlir:4: 1 != 2; t.mlir:5: 3 != 4"
    assert f.body == "t.mlir:4: 1 != 2\nt.mlir:5: 3 != 4"
    assert f.headline(10) == "t.mlir:..."
    # a record of an older stream may lack fields
    g = describe_failure({"id": "x", "status": "crash", "message": None})
    assert (g.where, g.backend, g.ops, g.first, g.body) == ("", "", (), "", "")


def test_junit_renders_the_description():
    el = junit.testcase(_record("fail", backend="numpy"))
    failure = el.find("failure")
    assert failure.get("message") == "t.mlir:4: 1 != 2; t.mlir:5: 3 != 4"
    assert failure.text == ("test: t.mlir::f\nstatus: fail\nlocation: t.mlir:3\nbackend: numpy\n"
                            "ops: stablehlo.add\nelement types: f32\n\nt.mlir:4: 1 != 2\nt.mlir:5: 3 != 4")


TEST = """func.func @t() {
  %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %1 = stablehlo.add %0, %0 : tensor<2xf32>
  check.expect_almost_eq_const %1, dense<[2.0, 4.0]> : tensor<2xf32>
  func.return
}
"""


class _OldPlugin:
    """A backend written against the older interface: a partial record, with a printed output."""

    name = label = "old"

    def run_test(self, module, func, opts):
        return {"status": "fail", "message": "t.mlir:4: 2 != 3", "checks": 1, "output": "hi\n"}


def test_a_backend_returning_the_old_partial_record_still_runs(tmp_path, monkeypatch):
    (mod,) = frontend.load_text(TEST, str(tmp_path / "t.mlir"))
    (func,) = mod.tests()
    monkeypatch.setattr(cases, "get_backend", lambda name: _OldPlugin())
    monkeypatch.setattr(cases, "needs_oracle", lambda m: False)
    monkeypatch.setattr(cases, "judge_record", lambda *a: None)
    res = cases.run_test(mod, func, "t.mlir::t", cases.Options(backend="old"))
    assert isinstance(res, Result)
    assert (res.status, res.message, res.checks, res.output) == (Status.FAIL, "t.mlir:4: 2 != 3", 1, "hi\n")
    assert (res.family, res.ops, res.dtypes) == ("stablehlo.add", ("stablehlo.add",), ("f32",))
    rec = res.to_json()
    assert list(rec) == BASE + ["backend", "output"]
    assert (rec["family"], rec["ops"], rec["dtypes"]) == ("stablehlo.add", ["stablehlo.add"], ["f32"])


def test_the_numpy_backend_gives_an_outcome_the_run_turns_into_a_record(tmp_path):
    (mod,) = frontend.load_text(TEST, str(tmp_path / "t.mlir"))
    (func,) = mod.tests()
    outcome = cases.get_backend("numpy").run_test(mod, func, cases.Options())
    assert outcome == Outcome(Status.PASS, checks=1, message="")
    res = cases.run_test(mod, func, "t.mlir::t", cases.Options())
    assert isinstance(res, Result) and res.status is Status.PASS and res.checks == 1
    rec = res.to_json()
    assert list(rec) == BASE + ["backend"] and rec["status"] == "pass" and rec["checks"] == 1
    assert Result.from_json(rec) == res and Result.from_json(rec).to_json() == rec
