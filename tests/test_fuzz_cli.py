"""``conform fuzz`` (seeded program generation, differential runs, reduction
and bundles) and sharding (``--shard K/N`` of ``conform run`` and ``conform
fuzz``, merged by ``conform report``). Through the real command line in
subprocesses, with XLA CPU as the second backend."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from stablehlo_conform import frontend
from stablehlo_conform.harness.campaigns import fuzzgen
from stablehlo_conform.harness.records.shard import ShardError, in_shard, indices, parse_shard

CONFORM = [sys.executable, "-m", "stablehlo_conform.cli"]
DATA = Path(__file__).parent / "data"


def conform(*args, timeout=600):
    return subprocess.run(CONFORM + [str(a) for a in args], capture_output=True, text=True, timeout=timeout)


def _xla():
    pytest.importorskip("jax")


# --------------------------------------------------------------------------- #
# The generator
# --------------------------------------------------------------------------- #


def test_program_i_of_a_seed_is_always_the_same():
    for i in (0, 7, 31):
        a, b = fuzzgen.generate(3, i), fuzzgen.generate(3, i)
        assert a.text == b.text and a.kind == b.kind
        assert all(np.array_equal(x, y, equal_nan=True) and x.dtype == y.dtype for x, y in zip(a.inputs, b.inputs))
    assert fuzzgen.generate(3, 0).text != fuzzgen.generate(4, 0).text or \
        not all(np.array_equal(x, y) for x, y in zip(fuzzgen.generate(3, 0).inputs, fuzzgen.generate(4, 0).inputs))


def test_programs_are_valid_cover_every_kind_and_element_type_and_stay_finite():
    from stablehlo_conform.harness.backends import get_backend

    progs = [fuzzgen.generate(1, i) for i in range(250)]
    assert {p.kind for p in progs} == set(fuzzgen.KINDS)
    seen_types = {t for p in progs for t in p.element_types}
    assert set(fuzzgen.ALL_TYPES) <= seen_types, set(fuzzgen.ALL_TYPES) - seen_types
    ops = {o for p in progs for o in p.ops}
    for op in ("stablehlo.broadcast_in_dim", "stablehlo.reduce", "stablehlo.gather", "stablehlo.scatter",
               "stablehlo.dot_general", "stablehlo.convolution", "stablehlo.while", "stablehlo.if", "stablehlo.case",
               "stablehlo.divide", "stablehlo.log", "stablehlo.sqrt", "stablehlo.shift_left", "stablehlo.remainder"):
        assert op in ops, op
    numpy = get_backend("numpy")
    for p in progs[:80]:
        module = frontend.load_text(p.text)[0]  # the bindings parse and verify it
        assert [str(t) for t in module.funcs["main"].param_types] and len(p.inputs) == len(
            module.funcs["main"].param_types)
        if not p.special:
            with np.errstate(all="ignore"):
                values = numpy.run_function(module, "main", list(p.inputs))
            assert fuzzgen._finite(values), p.text


def test_domain_aware_inputs():
    rng = np.random.default_rng(0)
    assert (fuzzgen.draw(rng, (1000,), "f32", "positive") > 0).all()
    assert (fuzzgen.draw(rng, (1000,), "f16", "above-1") > -1).all()
    assert (fuzzgen.draw(rng, (1000,), "i8", "nonzero") != 0).all()
    assert (fuzzgen.draw(rng, (1000,), "ui32", "nonzero") != 0).all()
    assert (fuzzgen.draw(rng, (1000,), "bf16", "nonzero").astype(np.float32) != 0).all()
    s = fuzzgen.subnormals(rng, (1000,), "f32")
    assert (np.abs(s) < np.finfo(np.float32).tiny).all() and np.count_nonzero(s) > 990


def test_generator_produces_the_known_trap_programs():
    """Subnormal inputs, multiply+add with a cancelling addend, padded
    convolutions with an infinite weight, grouped f64 convolutions with a NaN."""
    progs = [fuzzgen.generate(0, i) for i in range(200)]
    sub = [p for p in progs if p.kind == "subnormal"]
    assert sub and any(np.count_nonzero(p.inputs[0]) for p in sub)
    fma = [p for p in progs if p.kind == "fma" and p.special]
    assert fma
    for p in fma:
        a, b, c = (x.astype(np.float64) for x in p.inputs[:3])
        assert np.array_equal(c, -(a * b).astype(p.inputs[0].dtype).astype(np.float64))
    convs = [p for p in progs if p.kind == "conv-special"]
    padded_inf = [p for p in convs if np.isinf(p.inputs[1]).any() and "pad = [[0, 0]]" not in p.text]
    grouped_nan = [p for p in convs if np.isnan(p.inputs[0]).any() and "tensor<" in p.text
                   and "feature_group_count = 1 :" not in p.text and p.element_types == ["f64"]]
    assert padded_inf and grouped_nan


# --------------------------------------------------------------------------- #
# conform fuzz
# --------------------------------------------------------------------------- #


def test_fuzz_finds_reduces_and_bundles_xla_disagreements(tmp_path):
    """Programs 0..12 of seed 0 include a subnormal input XLA CPU flushes
    (program 12): every disagreement found becomes a reduced bundle whose
    README command reproduces it."""
    _xla()
    out = tmp_path / "out"
    p = conform("fuzz", "--seed", 0, "--count", 13, "--backends", "numpy,xla", "-o", out, "--budget", 20)
    assert p.returncode == 1, p.stdout + p.stderr
    doc = json.loads((out / "results.json").read_text())
    assert [r["id"] for r in doc["results"]] == [f"fuzz/0/{i}" for i in range(13)]
    fails = [r for r in doc["results"] if r["status"] == "fail"]
    assert "fuzz/0/12" in {r["id"] for r in fails}
    assert doc["summary"]["fail"] == len(fails) and f"{len(fails)} disagree" in p.stdout
    for r in fails:
        folder = Path(r["bundle"])
        assert r["reduced"] and r["ops_after"] <= r["ops_before"]
        assert {"program.mlir", "inputs.npz", "README.md", "bundle.json", "original.mlir"} <= {
            f.name for f in folder.iterdir()}
        bundle = json.loads((folder / "bundle.json").read_text())
        assert any(c["status"] != "ok" for c in bundle["comparisons"])
        # the bundle's own command shows the disagreement again
        cmd = bundle["commands"][0]
        assert cmd.startswith("conform diff")
        r2 = subprocess.run(CONFORM + cmd.split()[1:], cwd=folder, capture_output=True, text=True, timeout=300)
        assert r2.returncode == 1, r2.stdout + r2.stderr
    sub = next(r for r in fails if r["id"] == "fuzz/0/12")
    assert sub["kind"] == "subnormal"
    assert any("stablehlo.convert" in r["reduced_ops"] or "stablehlo." in r["reduced_ops"] for r in fails)


CRASHING_BACKEND = '''
import os

from stablehlo_conform.harness.backends.numpy_backend import NumpyBackend
from stablehlo_conform.kernels.registry import load_all


def cosine(op, x):
    os.abort()


class AbortCosine(NumpyBackend):
    name = "abortcosine"

    def __init__(self):
        super().__init__(registry=load_all().with_overrides({"stablehlo.cosine": cosine}))
'''


def test_a_crashing_backend_ends_its_programs_not_the_campaign(tmp_path):
    """A backend aborting the process on ``cosine`` (a plugin): programs 4
    (cosine inside a while body) and 7 of seed 0 crash, are reduced to the
    cosine alone and bundled; every other program still runs and agrees."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "abort_cosine.py").write_text(CRASHING_BACKEND)
    info = site / "abort_cosine-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: abort-cosine\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[stablehlo_conform.backends]\nabortcosine = abort_cosine:AbortCosine\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    out = tmp_path / "out"
    p = subprocess.run(CONFORM + ["fuzz", "--seed", "0", "--count", "8", "--backends", "numpy,abortcosine",
                                  "-o", str(out), "--budget", "30"], capture_output=True, text=True, env=env,
                       timeout=600)
    assert p.returncode == 1, p.stdout + p.stderr
    doc = json.loads((out / "results.json").read_text())
    status = {r["id"]: r["status"] for r in doc["results"]}
    assert len(status) == 8
    assert {i for i, s in status.items() if s != "pass"} == {"fuzz/0/4", "fuzz/0/7"}
    for r in doc["results"]:
        if r["status"] == "crash":
            assert "stablehlo.cosine" in fuzzgen.generate(0, int(r["id"].split("/")[-1])).text
            assert r["reduced"] and r["ops_after"] == 1 and r["reduced_ops"] == "stablehlo.cosine"
            bundle = json.loads((Path(r["bundle"]) / "bundle.json").read_text())
            assert bundle["outcomes"]["abortcosine"]["status"] == "crash"
    assert "2 crash or time out" in p.stdout


def test_fuzz_usage_errors():
    assert conform("fuzz", "--backends", "numpy").returncode == 2
    assert conform("fuzz", "--backends", "numpy,nosuch").returncode == 2
    p = conform("fuzz", "--shard", "4/3", "--count", 1)
    assert p.returncode == 2 and "between 1 and N" in p.stderr


# --------------------------------------------------------------------------- #
# Shards
# --------------------------------------------------------------------------- #


def test_parse_and_split():
    assert parse_shard("2/5") == (2, 5) and parse_shard(None) is None
    for bad in ("0/3", "3/2", "a/b", "1-2"):
        with pytest.raises(ShardError):
            parse_shard(bad)
    ids = [f"t{i}" for i in range(300)]
    parts = [[t for t in ids if in_shard(t, (k, 4))] for k in range(1, 5)]
    assert sorted(sum(parts, [])) == sorted(ids) and all(parts)
    assert sorted(i for k in (1, 2, 3) for i in indices(10, (k, 3))) == list(range(10))


def test_fuzz_shards_union_is_the_unsharded_campaign_and_report_merges_them(tmp_path):
    _xla()
    whole = tmp_path / "whole.json"
    p = conform("fuzz", "--seed", 5, "--count", 9, "--no-reduce", "--json", whole, "-q")
    assert p.returncode in (0, 1), p.stderr
    shards = []
    for k in (1, 2, 3):
        path = tmp_path / f"s{k}.json"
        p = conform("fuzz", "--seed", 5, "--count", 9, "--no-reduce", "--shard", f"{k}/3", "--json", path, "-q")
        assert p.returncode in (0, 1), p.stderr
        shards.append(path)
    one = {r["id"]: (r["status"], r["ops"]) for r in json.loads(whole.read_text())["results"]}
    per = [json.loads(s.read_text()) for s in shards]
    assert [d["shard"]["index"] for d in per] == [1, 2, 3]
    union = {r["id"]: (r["status"], r["ops"]) for d in per for r in d["results"]}
    assert sum(len(d["results"]) for d in per) == 9 and union == one

    merged = tmp_path / "merged.json"
    p = conform("report", *shards, "--json", merged, "-q")
    assert p.returncode == 0 and "missing" not in p.stdout
    m = json.loads(merged.read_text())
    assert m["complete"] and len(m["results"]) == 9 and m["shard"]["missing"] == []

    junit = tmp_path / "m.xml"
    p = conform("report", shards[0], shards[2], "--json", merged, "--junit-xml", junit, "-q")
    assert "shards missing: 2/3" in p.stdout
    m = json.loads(merged.read_text())
    assert not m["complete"] and m["missing_shards"] == ["2/3"] and len(m["results"]) == 6
    assert "shards missing: 2/3" in ET.parse(junit).getroot().find(".//testcase[@name='<run incomplete>']/error").text


def test_run_shards_split_by_test_id_and_merge(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    for f in ("example_suite.mlir", "report_cases.mlir"):
        shutil.copy(DATA / f, suite / f)
    whole = tmp_path / "whole.json"
    conform("run", suite, "--json", whole, "-q")
    ids = sorted(r["id"] for r in json.loads(whole.read_text())["results"])
    parts = []
    for k in (1, 2, 3):
        path = tmp_path / f"r{k}.jsonl"
        conform("run", suite, "--shard", f"{k}/3", "--jsonl", path, "-q")
        parts.append(path)
    got = [json.loads(line) for p in parts for line in p.read_text().splitlines()]
    recs = [r for r in got if "id" in r]
    assert sorted(r["id"] for r in recs) == ids  # every test in exactly one shard
    headers = [r for r in got if r.get("kind") == "header"]
    assert [h["settings"]["shard"]["index"] for h in headers] == [1, 2, 3]
    assert len({h["settings"]["shard"]["universe"] for h in headers}) == 1
    html = tmp_path / "m.html"
    p = conform("report", parts[0], parts[1], "--html", html, "-q")
    assert "shards missing: 3/3" in p.stdout and "shards missing: 3/3" in html.read_text()
    p = conform("report", *parts, "--json", tmp_path / "all.json", "-q")
    doc = json.loads((tmp_path / "all.json").read_text())
    assert sorted(r["id"] for r in doc["results"]) == ids and doc["complete"]
    # pruning a baseline from shards with one missing would drop that shard's entries
    p = conform("baseline", "update", parts[0], parts[1], "-o", tmp_path / "bl.json", "--prune")
    assert p.returncode == 2 and "shards missing: 3/3" in p.stdout + p.stderr
    p = conform("baseline", "update", *parts, "-o", tmp_path / "bl.json", "--prune")
    assert p.returncode == 0, p.stdout + p.stderr
    # a shard of another run (other files) is not merged into this one
    other = tmp_path / "other.json"
    conform("run", suite / "example_suite.mlir", "--shard", "1/3", "--json", other, "-q")
    p = conform("report", parts[1], parts[2], other, "-q")
    assert "shards of different runs" in p.stdout
