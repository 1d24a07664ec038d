"""The GitHub Actions workflow vendors copy (``ci/github-actions.yml``) and
the workflow snippets of the README and the docs: valid YAML, and the workflow's own
shell steps, run here as the runner would run them (same working
directories, ``env``, ``$GITHUB_OUTPUT`` and ``steps.*.outputs``), gate a
real backend plugin: red on a regression, green when the baseline lists
every failure, red without a baseline while anything fails."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from test_pytest_plugin import example_env

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / "ci" / "github-actions.yml"
SUITE = ROOT / "tests" / "data" / "example_suite.mlir"


def _workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def _steps() -> dict[str, dict]:
    (job,) = _workflow()["jobs"].values()
    return {s["name"]: s for s in job["steps"]}


def test_workflow_and_readme_snippets_are_valid_yaml():
    wf = _workflow()
    assert set(wf["env"]) >= {"BACKEND", "BASELINE", "STABLEHLO_REF", "CONFORM_PACKAGE", "JOBS"}
    steps = _steps()
    assert {"Run the conformance suite", "HTML report", "Gate"} <= set(steps)
    assert steps["Gate"]["if"] == "always()" and steps["Upload the reports"]["if"] == "always()"
    # the workflow snippets of the README and of the documentation pages (docs/shards.md)
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    blocks = [b for page in pages for b in re.findall(r"```yaml\n(.*?)```", page.read_text(), re.S)]
    assert blocks
    for block in blocks:
        doc = yaml.safe_load(block)
        assert isinstance(doc, dict) and doc
    # the documented sharded matrix gates the merged run (a missing shard is red)
    merged = [b for b in blocks if "--shard" in b]
    assert merged and all("conform baseline check shard-*.jsonl" in b for b in merged)


def _expand(script: str, env: dict[str, str], outputs: dict[str, dict[str, str]]) -> str:
    """The runner's ``${{ ... }}`` substitution for the expressions the workflow uses."""
    def sub(m):
        expr = m.group(1).strip()
        if expr.startswith("env."):
            return env[expr[4:]]
        step = re.fullmatch(r"steps\.(\w+)\.outputs\.(\w+)", expr)
        if step:
            return outputs.get(step.group(1), {}).get(step.group(2), "")
        raise AssertionError(f"unexpected expression {expr}")
    return re.sub(r"\$\{\{(.*?)\}\}", sub, script)


def _run_workflow(tmp_path: Path, baseline: dict | None) -> dict[str, int]:
    """The workflow's steps from 'Run the conformance suite' on, on a
    checkout layout in tmp_path; the exit status of each step that ran."""
    work = tmp_path / "work"
    backend = work / "backend"
    backend.mkdir(parents=True)
    suite = work / "stablehlo" / "stablehlo" / "tests" / "interpret"
    suite.mkdir(parents=True)
    shutil.copy(SUITE, suite / "example_suite.mlir")
    wf = _workflow()
    env = {**example_env(tmp_path), **{k: str(v) for k, v in wf["env"].items()}}
    # the ``conform`` script installed beside this interpreter, as after the install step
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    if baseline is not None:
        path = backend / env["BASELINE"]
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(baseline))
    status: dict[str, int] = {}
    outputs: dict[str, dict[str, str]] = {}
    names = list(_steps())
    for name in names[names.index("Run the conformance suite"):]:
        step = _steps()[name]
        if "run" not in step:  # actions (upload-artifact) are not run here
            continue
        cond = step.get("if", "")
        if "hashFiles('reports/results.json')" in cond and not (work / "reports" / "results.json").exists():
            continue
        out_file = tmp_path / f"output-{len(status)}"
        out_file.write_text("")
        script = _expand(step["run"], env, outputs)
        p = subprocess.run(["bash", "-e", "-c", script], cwd=work / step.get("working-directory", "."),
                           env={**env, "GITHUB_OUTPUT": str(out_file)}, capture_output=True, text=True,
                           timeout=300)
        status[name] = p.returncode
        assert p.returncode in (0, 1), f"{name}: {p.stdout}{p.stderr}"
        if "id" in step:
            outputs[step["id"]] = dict(line.split("=", 1) for line in out_file.read_text().splitlines() if line)
        if p.returncode and not cond.startswith("always()"):
            break  # the runner skips the steps that follow unless they run always()
    assert (work / "reports" / "results.json").exists()
    assert (work / "reports" / "junit.xml").exists()
    return status


PLANTED = {"reason": "planted: the example backend adds 1 on i16", "status": "fail"}
BASELINE_ONE = {"format": "stablehlo-conform-baseline", "version": 1, "backend": "example",
                "expected_failures": {"interpret/example_suite.mlir::add_i16_wraps": PLANTED}}
BASELINE_ALL = {**BASELINE_ONE, "expected_failures": {
    **BASELINE_ONE["expected_failures"], "interpret/example_suite.mlir::add_i16_cancel": PLANTED}}


@pytest.mark.parametrize("baseline, run_rc, gate_rc", [(BASELINE_ONE, 1, 1), (BASELINE_ALL, 0, 0), (None, 1, 1)],
                         ids=["regression", "all-known", "no-baseline"])
def test_workflow_steps_gate_the_example_plugin(tmp_path, baseline, run_rc, gate_rc):
    if shutil.which("bash") is None:  # pragma: no cover
        pytest.skip("bash is not on PATH")
    status = _run_workflow(tmp_path, baseline)
    # the run step itself stays green on a regression (exit 1), so the reports are made and uploaded
    assert status["Run the conformance suite"] == 0
    assert status["HTML report"] == 0
    assert (tmp_path / "work" / "reports" / "conformance.html").exists()
    assert status["Gate"] == gate_rc
    rc_file = sorted(tmp_path.glob("output-*"))[0].read_text()
    assert rc_file.strip() == f"rc={run_rc}"


def test_gate_step_is_red_when_the_run_step_left_no_exit_code(tmp_path):
    """A run step that died before writing its output (killed runner,
    crashed interpreter) leaves ``steps.run.outputs.rc`` empty: red."""
    script = _expand(_steps()["Gate"]["run"], {}, {})
    p = subprocess.run(["bash", "-e", "-c", script], capture_output=True, text=True, cwd=tmp_path,
                       env={**os.environ})
    assert p.returncode == 1
    assert "conformance gate failed (exit missing)" in p.stdout
