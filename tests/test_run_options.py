"""One run-options contract: ``conform run``/``diff`` build a frozen RunOptions, backends receive
one, and the accuracy profile reaches the oracle as a parsed value, never written back."""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest
from click.testing import CliRunner

from stablehlo_conform import frontend
from stablehlo_conform.cli.run import run as run_cmd
from stablehlo_conform.harness import backends as B
from stablehlo_conform.harness.backends.numpy_backend import NumpyBackend
from stablehlo_conform.harness.judge.diff import diff_options, diff_program
from stablehlo_conform.harness.records.options import RunOptions
from stablehlo_conform.harness.suite import runner as suite_runner
from stablehlo_conform.harness.suite.cases import Options, run_file
from stablehlo_conform.oracle import classes as C

X = np.array([1.0, 2.5, 10.0], np.float32)
EXP = np.exp(X.astype(np.float64)).astype(np.float32)  # correctly rounded for these inputs
PROFILE = '[ops."stablehlo.exponential"]\nf32 = 8\n'


def lit(a: np.ndarray) -> str:
    return "[" + ", ".join(repr(float(v)) for v in a) + "]"


def golden_off_by(n: int) -> str:
    """A test of exp whose golden value for exp(10) is ``n`` ULP above the correctly rounded one,
    checked with an absolute tolerance of 1e-4 (1 ULP of 22026 is 0.002: the check fails)."""
    golden = EXP.copy()
    for _ in range(n):
        golden[2] = np.nextafter(golden[2], np.float32(np.inf))
    return f"""func.func @exp_test() {{
  %x = stablehlo.constant dense<{lit(X)}> : tensor<3xf32>
  %r = stablehlo.exponential %x : tensor<3xf32>
  check.expect_almost_eq_const %r, dense<{lit(golden)}> : tensor<3xf32>
  func.return
}}
"""


class Recording(NumpyBackend):
    """The NumPy engine, noting the options each call receives."""

    name = "recording"

    def __init__(self):
        super().__init__()
        self.seen: list = []

    def run_function(self, module, func_name, args, opts=None):
        self.seen.append(opts)
        return super().run_function(module, func_name, args, opts)

    def run_test(self, module, func, opts):
        self.seen.append(opts)
        return super().run_test(module, func, opts)


def test_conform_run_hands_the_parsed_profile_to_its_runner(tmp_path, monkeypatch):
    """``conform run --accuracy-profile`` parses the file once: the options the run's workers get
    carry the profile (its bound for exp f32), not a path to load again."""
    prog = tmp_path / "p.mlir"
    prog.write_text(golden_off_by(7))
    prof = tmp_path / "loose.toml"
    prof.write_text(PROFILE)
    got = []

    class Stop(Exception):
        pass

    def capture(opts, *a, **kw):
        got.append(opts)
        raise Stop

    monkeypatch.setattr(suite_runner, "Runner", capture)
    result = CliRunner().invoke(run_cmd, [str(prog), "--accuracy-profile", str(prof)])
    assert isinstance(result.exception, Stop), result.output
    (opts,) = got
    assert isinstance(opts, RunOptions)
    assert opts.accuracy_profile.lookup("stablehlo.exponential", "f32") == 8
    assert opts.accuracy_profile.source == str(prof.resolve())
    (op,) = [o for o in frontend.load(str(prog))[0].funcs["exp_test"].body.blocks[0].ops
             if o.name == "stablehlo.exponential"]
    cls = C.class_of(op, opts.accuracy_profile)
    assert (cls.ulps, cls.source) == (8, "profile")
    assert C.class_of(op).source != "profile"


def test_the_profile_decides_the_verdict_and_the_options_stay_as_given(tmp_path, monkeypatch):
    """The same failing check: golden wrong by the default exp bound, a pass within the profile's
    8 ULP; the caller's options compare equal to a copy taken before, and the backend received a
    RunOptions (not the suite's Options) carrying the same profile."""
    prog = tmp_path / "p.mlir"
    prog.write_text(golden_off_by(7))
    prof = tmp_path / "loose.toml"
    prof.write_text(PROFILE)
    backend = Recording()
    monkeypatch.setitem(B._cache, "recording", backend)

    strict = Options(backend="recording")
    (rec,) = [ev[1] for ev in run_file(str(prog), strict) if ev[0] == "result"]
    assert rec.status == "fail" and rec.verdict["verdict"] == "golden wrong", rec

    loose = Options(backend="recording", timeout=30.0, accuracy_profile=C.Profile.load(prof))
    before = copy.deepcopy(loose)
    (rec,) = [ev[1] for ev in run_file(str(prog), loose) if ev[0] == "result"]
    assert rec.status == "pass", rec
    assert loose == before
    with pytest.raises(dataclasses.FrozenInstanceError):
        loose.timeout = 1.0  # type: ignore[misc]

    assert backend.seen and all(type(o) is RunOptions for o in backend.seen)
    last = backend.seen[-1]
    assert last.timeout == 30.0 and last.accuracy_profile is loose.accuracy_profile
    assert not hasattr(last, "compare")


def test_diff_hands_its_backends_run_options_and_writes_nothing_back():
    """``conform diff`` options (a RunOptions with the diff defaults) reach every backend as they
    are; a profile given to them is the one the per-op judgement reads."""
    (mod,) = frontend.load_text("""func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %r = stablehlo.exponential %x : tensor<3xf32>
  func.return %r : tensor<3xf32>
}
""", "<t>")
    a, b = Recording(), Recording()
    profile = C.Profile.from_dict({"ops": {"stablehlo.exponential": {"f32": 8}}})
    opts = diff_options(isolate=False, accuracy_profile=profile)
    before = copy.deepcopy(opts)
    report = diff_program(mod, "main", [a, b], [X], opts)
    assert report["status"] == "agree"
    assert opts == before and opts.timeout == 120.0
    assert a.seen == [opts] and b.seen == [opts]
    assert dataclasses.replace(opts, timeout=5.0).timeout == 5.0 and opts.timeout == 120.0
