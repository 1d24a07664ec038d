"""conform accuracy --exhaustive: the space and its chunks, numbers checked against an independent
computation (f64 NumPy rounded once, mpmath near a midpoint), local workers that die, and a real
Dask cluster (scheduler and two workers on this machine) with one worker killed mid-run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import mpmath
import numpy as np
import pytest

from stablehlo_conform.harness.campaigns import cluster as CL
from stablehlo_conform.harness.campaigns import exhaustive as E

ROOT = Path(__file__).resolve().parents[1]
CONFORM = [sys.executable, "-m", "stablehlo_conform.cli"]
EXP = "stablehlo.exponential"


def test_space_range_and_chunks():
    assert E.space_size(EXP, "f32") == 2**32 and E.space_size(EXP, "bf16") == 2**16
    assert E.space_size("stablehlo.add", "bf16") == 2**32
    with pytest.raises(E.SpaceError, match="2\\^64"):
        E.space_size(EXP, "f64")
    with pytest.raises(E.SpaceError, match="2\\^64"):
        E.space_size("stablehlo.add", "f32")
    assert E.parse_range("0x10:0x20", 2**32) == (16, 32) and E.parse_range(":5", 8) == (0, 5)
    for bad in ("5", "9:3", "0:0x200000000", "a:b"):
        with pytest.raises(E.SpaceError):
            E.parse_range(bad, 2**32)
    # the chunks are cut at multiples of the chunk size, whatever the range
    assert E.chunks(5, 40, 4) == [(5, 16), (16, 32), (32, 40)]
    a, b = E.chunk_inputs("stablehlo.add", "bf16", 0x3F80_4000, 0x3F80_4002)  # pairs (1.0, 2.0), (1.0, 2.015625)
    assert a.astype(np.float32).tolist() == [1.0, 1.0] and b.astype(np.float32).tolist() == [2.0, 2.015625]


def _independent(lo: int, hi: int, actual: np.ndarray) -> dict:
    """exp on f32 inputs [lo, hi) measured without the package: f64 NumPy rounded once to f32,
    mpmath (50 digits) where the f64 value lies within 2^-40 (relative) of a rounding midpoint."""
    x = np.arange(lo, hi, dtype=np.uint64).astype(np.uint32).view(np.float32)
    r = np.exp(x.astype(np.float64))
    c = r.astype(np.float32)
    other = np.nextafter(c, np.where(r > c, np.float32(np.inf), np.float32(-np.inf)))
    mid = (c.astype(np.float64) + other.astype(np.float64)) / 2
    near = np.isfinite(mid) & (np.abs(r - mid) <= np.abs(r) * 2.0**-40)
    mpmath.mp.dps = 50
    for i in np.flatnonzero(near):
        c[i] = np.float32(float(mpmath.exp(mpmath.mpf(float(x[i])))))  # one rounding of a 50-digit value
    same = (actual.view(np.uint32) == c.view(np.uint32)) | (np.isnan(actual) & np.isnan(c))
    e = np.floor(np.log2(np.abs(r)))
    ulp = np.exp2(np.maximum(e, -126) - 23)
    err = np.abs(actual.astype(np.float64) - r) / ulp
    err = np.where(same, 0.0, np.where(np.isfinite(actual) & np.isfinite(r), err, np.inf))
    return {"n": x.size, "cr": int(same.sum()), "max": float(err.max()), "near": int(near.sum())}


@pytest.mark.parametrize("lo, hi", [(0x3F80_0000, 0x3F84_0000),  # [1, 1.03): results near e
                                    (0xC2AE_0000, 0xC2B0_0000)])  # [-87, -88): normal and subnormal results
def test_exhaustive_cell_agrees_with_an_independent_check(tmp_path, lo, hi):
    pytest.importorskip("jax")
    out = tmp_path / "e.json"
    p = subprocess.run(CONFORM + ["accuracy", "--exhaustive", "--op", "exponential", "--type", "f32", "--backend",
                                  "xla", "--range", f"{lo:#x}:{hi:#x}", "--chunk-bits", "16", "--json", str(out),
                                  "-q"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert p.returncode == 0, p.stdout + p.stderr
    (cell,) = json.loads(out.read_text())["cells"]
    assert cell["complete"] and cell["chunks"] == (hi - lo) >> 16 and cell["n"] == hi - lo
    from stablehlo_conform.harness.campaigns.accuracy import run_on_backend

    x = np.arange(lo, hi, dtype=np.uint64).astype(np.uint32).view(np.float32)
    actual = run_on_backend("xla", EXP, "f32", [x])
    ind = _independent(lo, hi, actual)
    assert cell["correctly_rounded"] == ind["cr"]
    assert cell["max_ulp"] == pytest.approx(ind["max"], rel=1e-6)
    assert sum(cell["hist"].values()) == cell["n"]
    assert cell["not_correctly_rounded"] == cell["n"] - ind["cr"] > 0  # XLA's exp is not correctly rounded here
    if lo == 0xC2AE_0000:  # XLA CPU flushes subnormal results to zero: millions of ULP
        assert cell["max_ulp"] > 1e6 and cell["worst"][0]["actual"] == "0.0"




def die_once(marker: str, i: int) -> int:
    """A task whose first run on item 3 kills its worker process."""
    if i == 3 and not os.path.exists(marker):
        Path(marker).write_text("died")
        os._exit(1)
    return i * i


def test_a_local_worker_that_dies_loses_no_task(tmp_path):
    marker = str(tmp_path / "died")
    got = dict(CL.LocalExecutor(2).run(die_once, [(marker, i) for i in range(8)]))
    assert got == {i: i * i for i in range(8)} and Path(marker).exists()


@pytest.fixture()
def dask_cluster(tmp_path):
    """A Dask scheduler and two single-threaded workers on this machine (loopback only)."""
    pytest.importorskip("distributed")
    sched_file = tmp_path / "scheduler.json"
    env = dict(os.environ, DASK_DISTRIBUTED__WORKER__DAEMON="False")
    procs = [subprocess.Popen([sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
                               "--no-dashboard", "--scheduler-file", str(sched_file)], cwd=tmp_path, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)]
    try:
        deadline = time.monotonic() + 60
        while not sched_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        address = json.loads(sched_file.read_text())["address"]
        for k in range(2):
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "dask", "worker", address, "--nworkers", "1", "--nthreads", "1", "--no-nanny",
                 "--no-dashboard", "--host", "127.0.0.1", "--name", f"w{k}"], cwd=tmp_path, env=env,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
        from distributed import Client

        with Client(address, timeout=30) as c:
            c.wait_for_workers(2, timeout=60)
        yield address, procs[1:]
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(timeout=30)


def test_a_cluster_with_a_worker_killed_mid_run_gives_the_local_numbers(tmp_path, dask_cluster):
    pytest.importorskip("jax")
    address, workers = dask_cluster
    rng = f"{0x3F00_0000:#x}:{0x3F00_0000 + 2**21:#x}"  # 32 chunks of 2^16
    common = ["accuracy", "--exhaustive", "--op", "exponential", "--type", "f32", "--backend", "xla", "--range", rng,
              "--chunk-bits", "16", "-q"]
    local = tmp_path / "local.json"
    p = subprocess.run(CONFORM + common + ["--json", str(local)], capture_output=True, text=True, timeout=300,
                       cwd=ROOT)
    assert p.returncode == 0, p.stderr
    stream, remote = tmp_path / "c.jsonl", tmp_path / "cluster.json"
    run = subprocess.Popen(CONFORM + common + ["--cluster", address, "--jsonl", str(stream), "--json", str(remote)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    deadline = time.monotonic() + 120
    while (not stream.exists() or not stream.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert stream.exists(), "no chunk finished"
    os.killpg(workers[0].pid, signal.SIGKILL)  # a worker dies with chunks assigned to it
    before = len(stream.read_text().splitlines())
    out, err = run.communicate(timeout=300)
    assert run.returncode == 0, out + err
    assert workers[0].wait(timeout=10) == -signal.SIGKILL
    chunks = [json.loads(line) for line in stream.read_text().splitlines()]
    assert before < 32  # killed mid-run
    assert len(chunks) == 32 and len({(c["lo"], c["hi"]) for c in chunks}) == 32  # each chunk once, none lost
    (a,), (b,) = json.loads(local.read_text())["cells"], json.loads(remote.read_text())["cells"]
    for key in ("n", "silent", "correctly_rounded", "nonfinite_errors", "max_ulp", "worst", "hist", "complete"):
        assert a[key] == b[key], key
    assert json.loads(remote.read_text())["cluster"] == address


def _finding(r: dict) -> dict:
    """What a fuzz record finds (not where or how long)."""
    drop = {"bundle", "reduce_seconds"}
    return {k: v for k, v in r.items() if k not in drop}


def test_fuzz_on_a_cluster_finds_what_a_local_run_finds(tmp_path, dask_cluster):
    pytest.importorskip("jax")
    address, _workers = dask_cluster
    args = ["fuzz", "--seed", "3", "--count", "12", "--backends", "numpy,xla", "-q"]
    local = subprocess.run(CONFORM + args + ["-o", str(tmp_path / "local")], capture_output=True, text=True,
                           timeout=600, cwd=ROOT)
    remote = subprocess.run(CONFORM + args + ["-o", str(tmp_path / "cluster"), "--cluster", address],
                            capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert local.returncode == remote.returncode, local.stdout + remote.stdout + remote.stderr
    a = json.loads((tmp_path / "local" / "results.json").read_text())
    b = json.loads((tmp_path / "cluster" / "results.json").read_text())
    assert [_finding(r) for r in a["results"]] == [_finding(r) for r in b["results"]]
    assert a["summary"] == b["summary"] and b["complete"]
    bundles = [Path(r["bundle"]) for r in b["results"] if r.get("bundle")]
    assert bundles  # seed 3 finds a disagreement in 12 programs: its bundle came back from the worker
    for r, folder in zip([r for r in a["results"] if r.get("bundle")], bundles):
        assert folder.parent == tmp_path / "cluster" and folder.name == Path(r["bundle"]).name
        assert (folder / "program.mlir").read_text() == (Path(r["bundle"]) / "program.mlir").read_text()
        assert (folder / "original.npz").read_bytes() == (Path(r["bundle"]) / "original.npz").read_bytes()


def test_an_interrupted_run_keeps_its_chunks_and_goes_on(tmp_path):
    """SIGINT mid-run: exit 130, INCOMPLETE, the chunks measured kept in --jsonl; the same command
    again measures only the rest and gives the numbers of a run that was never interrupted."""
    pytest.importorskip("jax")
    # 64 chunks of 2^18: long enough that the run cannot end between its second line and the signal
    rng = f"{0x3F00_0000:#x}:{0x3F00_0000 + 2**24:#x}"
    cmd = CONFORM + ["accuracy", "--exhaustive", "--op", "exponential", "--type", "f32", "--backend", "xla",
                     "--range", rng, "--chunk-bits", "18", "-q"]
    stream = tmp_path / "s.jsonl"
    run = subprocess.Popen(cmd + ["--jsonl", str(stream)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, cwd=ROOT)
    deadline = time.monotonic() + 120
    while (not stream.exists() or len(stream.read_text().splitlines()) < 2) and time.monotonic() < deadline:
        time.sleep(0.02)
    run.send_signal(signal.SIGINT)
    out, _err = run.communicate(timeout=120)
    assert run.returncode == 130 and "INCOMPLETE: interrupted by SIGINT" in out
    first = len(stream.read_text().splitlines())
    assert 2 <= first < 64
    again = subprocess.run(cmd + ["--jsonl", str(stream), "--json", str(tmp_path / "a.json")], capture_output=True,
                           text=True, timeout=300, cwd=ROOT)
    assert again.returncode == 0, again.stderr
    chunks = [json.loads(line) for line in stream.read_text().splitlines()]
    assert len(chunks) == 64 and len({c["lo"] for c in chunks}) == 64  # nothing measured twice
    whole = subprocess.run(cmd + ["--json", str(tmp_path / "b.json")], capture_output=True, text=True, timeout=300,
                           cwd=ROOT)
    assert whole.returncode == 0
    (a,), (b,) = (json.loads((tmp_path / f).read_text())["cells"] for f in ("a.json", "b.json"))
    assert {k: v for k, v in a.items() if k != "seconds"} == {k: v for k, v in b.items() if k != "seconds"}
