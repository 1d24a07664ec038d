"""``--max-memory`` covers loading: constants are checked against the budget
before they are materialised, splats stay broadcast views, large hex
literals are decoded straight into their element type. Peak memory is that
of real ``conform run`` processes (``getrusage`` of a wrapper's children)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pytest

from stablehlo_conform import frontend
from stablehlo_conform.errors import ParseError
from stablehlo_conform.harness.suite.cases import Options, run_file

MiB = 2**20
GiB = 2**30

# runs `conform run ARGS --json OUT` as a child and prints the peak RSS (bytes) of its process tree
_PEAK = textwrap.dedent("""
    import resource, subprocess, sys
    subprocess.run([sys.executable, "-m", "stablehlo_conform.cli", "run", *sys.argv[1:]],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
""")


def peak_run(tmp_path, path, *args: str) -> tuple[int, list[dict]]:
    """Peak RSS of ``conform run path args`` (the CLI and its worker) and its records."""
    out = tmp_path / (path.stem + ".json")
    proc = subprocess.run([sys.executable, "-c", _PEAK, str(path), "-j", "1", "--json", str(out), *args],
                          capture_output=True, text=True, timeout=300, check=True)
    return int(proc.stdout.strip()), json.loads(out.read_text())["results"]


SPLAT_ADD = """func.func @main() {
  %0 = stablehlo.constant dense<1.0> : tensor<268435456xf32>
  %1 = stablehlo.add %0, %0 : tensor<268435456xf32>
  check.expect_almost_eq_const %1, dense<2.0> : tensor<268435456xf32>
  func.return
}
"""


def test_gib_splat_under_a_small_budget_stays_small_and_is_one_clear_record(tmp_path):
    p = tmp_path / "splat.mlir"
    p.write_text(SPLAT_ADD)
    assert len(SPLAT_ADD) < 250  # a file of a few hundred bytes
    peak, recs = peak_run(tmp_path, p, "--max-memory", "100")
    (rec,) = recs
    assert rec["status"] == "error"
    assert rec["message"] == (f"stablehlo.add at {p}:3:8 would allocate 1024.0 MiB, "
                              "over the memory budget of 100.0 MiB")
    assert peak < 400 * MiB, peak / MiB  # a materialised splat alone is 1024 MiB


def test_gib_splat_used_lazily_runs_under_a_small_budget(tmp_path):
    """A splat checked against a splat: nothing of its size is ever allocated."""
    p = tmp_path / "lazy.mlir"
    p.write_text("""func.func @main() {
  %0 = stablehlo.constant dense<1.5> : tensor<16384x16384xf32>
  check.expect_almost_eq_const %0, dense<1.5> : tensor<16384x16384xf32>
  check.expect_eq_const %0, dense<2.5> : tensor<16384x16384xf32>
  func.return
}
""")
    peak, recs = peak_run(tmp_path, p, "--max-memory", "100")
    (rec,) = recs
    assert rec["status"] == "fail"
    assert rec["checks"] == 2
    assert ("check.expect_eq_const: 268435456/268435456 elements differ; first at index [0, 0]: "
            "actual 1.5, expected 2.5") in rec["message"]
    assert peak < 400 * MiB, peak / MiB


def test_large_hex_constant_peaks_near_the_file_size(tmp_path):
    """A 64 MiB file holding a 32 MiB f32 hex literal: the run's peak over
    that of a tiny file stays under 2.5x the file (the text read plus its
    bytes; the parser never holds the literal). Unbounded it was ~6x."""
    n = 8 * MiB
    values = np.arange(n, dtype=np.float32)
    p = tmp_path / "hex.mlir"
    p.write_text(f"""func.func @main() {{
  %0 = stablehlo.constant dense<"0x{values.tobytes().hex().upper()}"> : tensor<{n}xf32>
  %1 = stablehlo.slice %0 [8388600:8388608] : (tensor<{n}xf32>) -> tensor<8xf32>
  check.expect_eq_const %1, dense<[8388600.0, 8388601.0, 8388602.0, 8388603.0, 8388604.0, 8388605.0, 8388606.0,
      8388607.0]> : tensor<8xf32>
  func.return
}}
""")
    size = p.stat().st_size
    assert size > 64 * MiB
    small = tmp_path / "small.mlir"
    small.write_text("func.func @main() {\n  func.return\n}\n")
    base, _ = peak_run(tmp_path, small)
    peak, recs = peak_run(tmp_path, p)
    (rec,) = recs
    assert rec["status"] == "pass", rec["message"]
    assert peak - base < 2.5 * size, ((peak - base) / MiB, size / MiB)


def test_constant_over_the_budget_is_refused_while_loading_with_its_location(tmp_path):
    big = ", ".join(f"{i}.0" for i in range(300_000))  # parsed by the bindings (decimal, not hex)
    hexed = _hex(np.arange(300_000, dtype=np.float32))  # kept out of the parser
    p = tmp_path / "over.mlir"
    p.write_text(f"""func.func @main() {{
  %0 = stablehlo.constant dense<[{big}]> : tensor<300000xf32>
  func.return
}}
// -----
func.func @main() {{
  %c = stablehlo.iota dim = 0 : tensor<300000xf32>
  check.expect_eq_const %c, dense<"{hexed}"> : tensor<300000xf32>
  func.return
}}
""")
    recs = [ev[1] for ev in run_file(str(p), Options(max_bytes=MiB)) if ev[0] == "result"]
    assert [(r.status, r.message) for r in recs] == [
        ("error", f"{p}:2:8: error: stablehlo.constant: constant of type tensor<300000xf32> needs 1.1 MiB, "
                  "over the memory budget of 1.0 MiB"),
        ("error", f"{p}:8:3: error: check.expect_eq_const: constant of type tensor<300000xf32> needs 1.1 MiB, "
                  "over the memory budget of 1.0 MiB"),
    ]
    # without a budget, or under a larger one, the same file loads and runs
    recs = [ev[1] for ev in run_file(str(p), Options(max_bytes=2 * MiB)) if ev[0] == "result"]
    assert [r.status for r in recs] == ["pass", "pass"]


# decoding ------------------------------------------------------------------------

N = frontend.LARGE_LITERAL  # elements: every literal below has at least LARGE_LITERAL digits


def _hex(arr: np.ndarray) -> str:
    return "0x" + arr.tobytes().hex()


CASES = {
    "f32": np.arange(N, dtype=np.float32) / 3,
    "bf16": (np.arange(N) % 251 - 125).astype(ml_dtypes.bfloat16),
    "f8E4M3FN": (np.arange(N) % 17 - 8).astype(ml_dtypes.float8_e4m3fn),
    "complex<f64>": np.arange(N) * (1 - 2j),
    "i1": np.arange(N) % 3 == 0,
    "ui8": (np.arange(N) % 256).astype(np.uint8),
    "i64": np.arange(N, dtype=np.int64) * -(2**40),
}


@pytest.mark.parametrize("el", list(CASES))
def test_large_hex_literal_decodes_exactly(el):
    want = CASES[el]
    storage = want.view(np.uint8) if el == "i1" else want
    t = f"tensor<{N}x{el}>"
    text = f"""func.func @main() {{
  %0 = stablehlo.constant dense<"{_hex(storage)}"> : {t}
  check.expect_eq_const %0, dense<"{_hex(storage)}"> : {t}
  func.return
}}"""
    chunk = frontend.Chunk("<hex>", 1, text=text)
    assert len(frontend.chunk_source(chunk)) < 1000  # the literals never reach the parser
    mod = frontend.lower_module(frontend.parse_chunk(chunk), chunk)
    got = mod.funcs["main"].body.blocks[0].ops[0].attrs["value"]
    assert got.dtype == want.dtype and got.shape == (N,)
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    assert mod.text == text  # other backends get the program as written
    from stablehlo_conform.engine import Engine

    eng = Engine(mod)
    eng.call("main", ())
    assert [ok for ok, _msg, _loc in eng.checks] == [True]


def test_i4_hex_literal_one_element_per_byte():
    vals = np.arange(N) % 16 - 8  # -8..7
    text = f'func.func @main() {{\n  %0 = stablehlo.constant dense<"{_hex((vals & 0xF).astype(np.uint8))}"> : ' \
           f"tensor<{N}xi4>\n  func.return\n}}"
    (mod,) = frontend.load_text(text)
    got = mod.funcs["main"].body.blocks[0].ops[0].attrs["value"]
    assert got.dtype == ml_dtypes.int4
    np.testing.assert_array_equal(got.astype(np.int64), vals)


def test_splats_are_read_only_views():
    text = """func.func @main() -> (tensor<1000x1000xf32>, tensor<1000x1000xbf16>, tensor<1000xcomplex<f32>>) {
  %0 = stablehlo.constant dense<2.5> : tensor<1000x1000xf32>
  %1 = stablehlo.constant dense<-1.0> : tensor<1000x1000xbf16>
  %2 = stablehlo.constant dense<(1.0, -2.0)> : tensor<1000xcomplex<f32>>
  func.return %0, %1, %2 : tensor<1000x1000xf32>, tensor<1000x1000xbf16>, tensor<1000xcomplex<f32>>
}"""
    (mod,) = frontend.load_text(text)
    ops = mod.funcs["main"].body.blocks[0].ops
    for op, want in zip(ops, [np.float32(2.5), ml_dtypes.bfloat16(-1.0), np.complex64(1 - 2j)]):
        v = op.attrs["value"]
        assert v.dtype == np.asarray(want).dtype and v.shape == op.result_types[0].shape
        assert not any(v.strides) and not v.flags.writeable
        assert v[0, 0] == want if v.ndim == 2 else v[999] == want
    from stablehlo_conform.engine import Engine

    outs = Engine(mod, max_bytes=1000).call("main", ())  # constants are not allocations
    assert [o.shape for o in outs] == [(1000, 1000), (1000, 1000), (1000,)]


def test_bad_large_hex_literal_is_an_error_at_the_constant():
    text = f'func.func @main() {{\n  %0 = stablehlo.constant dense<"0x{"zz" * N}"> : tensor<{N}xi8>\n  func.return\n}}'
    with pytest.raises(ParseError) as e:
        frontend.load_text(text, "bad.mlir")
    assert str(e.value).startswith("bad.mlir:2:8: error: stablehlo.constant: bad hex literal")
