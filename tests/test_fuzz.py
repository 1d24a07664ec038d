"""Robustness: random and mutated inputs always end as a result with a message.

Pure-Python pieces are fuzzed in process with hypothesis. Inputs that reach
the native bindings are fuzzed through ``conform run`` (worker processes), so
even a native crash would show up as a ``crash`` result instead of killing the
test session; the test then asserts no such crash and no internal error.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stablehlo_conform import frontend
from stablehlo_conform import types as T

STATUSES = {"pass", "fail", "error", "unsupported", "crash", "timeout"}
SEED_PROGRAM = """func.func @t() {
  %0 = stablehlo.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %1 = stablehlo.constant dense<[(1.0, 2.0), (3.0, 4.0)]> : tensor<2xcomplex<f32>>
  %2 = stablehlo.constant dense<"0x803F0040"> : tensor<2xbf16>
  %3 = stablehlo.constant dense<[1, -2, 7]> : tensor<3xi4>
  check.expect_almost_eq_const %0, dense<[[1.0, 2.0],
                                          [3.0, 4.0]]> : tensor<2x2xf32>
  check.expect_eq_const %1, dense<[(1.0, 2.0), (3.0, 4.0)]> : tensor<2xcomplex<f32>>
  func.return
}
"""

fuzz = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@fuzz
@given(st.text(max_size=400))
def test_check_sugar_rewrite_never_raises(text):
    out = frontend.rewrite_check_sugar(text)
    assert out.count("\n") == text.count("\n")


@fuzz
@given(st.text(alphabet="[](),-+.0123456789eExabcdeftrunl\" ", max_size=80),
       st.sampled_from(["f32", "bf16", "i4", "ui8", "i1", "complex<f32>", "f8E4M3FN"]),
       st.integers(0, 4))
def test_dense_literal_decoder_raises_only_value_errors(body, elem, n):
    tt = T.TensorType((n,), T.element_type(elem))
    try:
        arr = T.decode_dense_literal(body, tt)
    except (ValueError, OverflowError):
        return
    assert arr.shape == (n,) and arr.dtype == tt.dtype


@fuzz
@given(st.text(max_size=300))
def test_split_never_loses_code(text):
    chunks = frontend.split_text(text, "x.mlir")
    for c in chunks:
        assert c.line >= 1 and c.text.strip()


def _mutants(seed: int, count: int) -> list[bytes]:
    rng = random.Random(seed)
    base = SEED_PROGRAM.encode()
    out = []
    for i in range(count):
        kind = i % 4
        if kind == 0:  # truncated
            out.append(base[: rng.randrange(len(base))])
        elif kind == 1:  # random bytes, sometimes with the bytecode magic
            blob = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))
            out.append((b"ML\xefR" + blob) if rng.random() < 0.5 else blob)
        elif kind == 2:  # byte flips
            b = bytearray(base)
            for _ in range(rng.randrange(1, 6)):
                b[rng.randrange(len(b))] = rng.choice(b"[](){}<>,:%=@0123456789xfi\"\n ")
            out.append(bytes(b))
        else:  # spliced lines
            lines = SEED_PROGRAM.splitlines()
            rng.shuffle(lines)
            out.append("\n".join(lines[: rng.randrange(1, len(lines) + 1)]).encode())
    return out


def test_mutated_and_random_programs_end_as_results(tmp_path):
    inputs = _mutants(1234, 160)
    for i, data in enumerate(inputs):
        (tmp_path / f"m{i:03d}.mlir").write_bytes(data)
    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "-m", "stablehlo_conform.cli", "run", str(tmp_path), "-q",
                        "--json", str(out), "--jobs", "2", "--timeout", "20"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode in (0, 1), r.stderr
    doc = json.loads(out.read_text())
    files_seen = {x["file"] for x in doc["results"]}
    statuses = [x["status"] for x in doc["results"]]
    assert set(statuses) <= STATUSES
    assert "crash" not in statuses, [x for x in doc["results"] if x["status"] == "crash"][:2]
    for x in doc["results"]:
        assert x["message"] or x["status"] == "pass", x
        assert "internal error" not in x["message"], x
    assert len(files_seen) >= len(inputs) // 2
    assert "Traceback" not in r.stderr

