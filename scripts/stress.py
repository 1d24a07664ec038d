#!/usr/bin/env python3
"""One ``conform run`` over a folder holding every class of hostile input at
once; prints the records per file, duplicate ids (must be 0), files without a
record (must be 0), the peak memory of the largest process and the wall time.

    python scripts/stress.py [--jobs 2] [--timeout 10] [--max-memory 100] [--hex-mib 64] [--keep DIR]

Exit code 0 when every file ended in at least one record and no id repeats.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

CHECK = "  check.expect_eq_const {v}, dense<[1, 2]> : tensor<2xi32>\n"
OK = "func.func @ok() {\n  %0 = stablehlo.constant dense<[1, 2]> : tensor<2xi32>\n" + CHECK.format(v="%0") + \
    "  func.return\n}\n"


def _recursion(depth: int) -> str:
    """A chain of ``depth`` functions calling the next one."""
    funcs = [OK.replace("@ok()", "@chain()").replace("%0 = stablehlo.constant dense<[1, 2]> : tensor<2xi32>",
                                                     "%0 = func.call @f0() : () -> tensor<2xi32>")]
    for i in range(depth):
        body = (f"  %0 = func.call @f{i + 1}() : () -> tensor<2xi32>" if i + 1 < depth
                else "  %0 = stablehlo.constant dense<[1, 2]> : tensor<2xi32>")
        funcs.append(f"func.func private @f{i}() -> tensor<2xi32> {{\n{body}\n  func.return %0 : tensor<2xi32>\n}}\n")
    return "".join(funcs)


def _nested(depth: int) -> str:
    """``depth`` nested ``stablehlo.if`` regions."""
    open_, close = [], []
    for i in range(depth):
        pad = "  " * (i + 1)
        open_.append(f"{pad}%r{i} = \"stablehlo.if\"(%p) ({{\n")
        close.append(f"{pad}  stablehlo.return %r{i + 1} : tensor<2xi32>\n{pad}}}, {{\n"
                     f"{pad}  stablehlo.return %c : tensor<2xi32>\n{pad}}}) : (tensor<i1>) -> tensor<2xi32>\n")
    inner = "  " * (depth + 1) + f"%r{depth} = stablehlo.constant dense<[1, 2]> : tensor<2xi32>\n"
    return ("func.func @nested() {\n  %p = stablehlo.constant dense<true> : tensor<i1>\n"
            "  %c = stablehlo.constant dense<[1, 2]> : tensor<2xi32>\n" + "".join(open_) + inner
            + "".join(reversed(close)) + CHECK.format(v="%r0") + "  func.return\n}\n")


def build(folder: Path, hex_mib: int) -> dict[str, str]:
    """Write the hostile inputs; returns file name -> what it is."""
    what: dict[str, str] = {}

    def put(name: str, data: str | bytes, desc: str) -> None:
        p = folder / name
        p.write_bytes(data if isinstance(data, bytes) else data.encode())
        what[name] = desc

    put("ok.mlir", OK, "a passing test")
    put("fail.mlir", OK.replace("dense<[1, 2]> : tensor<2xi32>\n  check", "dense<[1, 3]> : tensor<2xi32>\n  check"),
        "a failing test")
    put("syntax.mlir", "func.func @broken() {\n  %0 = stablehlo.constant dense<[1, 2> : tensor<2xi32>\n}\n",
        "a syntax error")
    put("empty.mlir", "", "an empty file")
    put("comments.mlir", "// RUN: nothing\n// only comments\n", "only comments")
    put("binary.mlirbc", os.urandom(4096), "random bytes with a bytecode suffix")
    put("latin1.mlir", "// caf\xe9\n".encode("latin-1") + OK.encode(), "bytes that are not UTF-8")
    put("spin.mlir", "func.func @spin() {\n  %z = stablehlo.constant dense<0> : tensor<i64>\n"
        "  %t = stablehlo.constant dense<true> : tensor<i1>\n"
        "  %r = stablehlo.while(%i = %z) : tensor<i64>\n    cond { stablehlo.return %t : tensor<i1> }\n"
        "    do { stablehlo.return %i : tensor<i64> }\n  func.return\n}\n", "an infinite loop")
    put("splat_1gib.mlir", "func.func @splat() {\n  %0 = stablehlo.constant dense<1.0> : tensor<16384x16384xf32>\n"
        "  %1 = stablehlo.slice %0 [0:1, 0:2] : (tensor<16384x16384xf32>) -> tensor<1x2xf32>\n"
        "  check.expect_eq_const %1, dense<1.0> : tensor<1x2xf32>\n  func.return\n}\n", "a 1 GiB splat constant")
    n = hex_mib * 2**20 // 4
    put("hex_constant.mlir", f'func.func @hex() {{\n  %0 = stablehlo.constant dense<"0x{"0000803F" * n}"> : '
        f"tensor<{n}xf32>\n  %1 = stablehlo.slice %0 [0:2] : (tensor<{n}xf32>) -> tensor<2xf32>\n"
        "  check.expect_eq_const %1, dense<1.0> : tensor<2xf32>\n  func.return\n}\n",
        f"a {hex_mib} MiB hex constant")
    put("infinite_recursion.mlir", "func.func private @loop() -> tensor<2xi32> {\n"
        "  %0 = func.call @loop() : () -> tensor<2xi32>\n  func.return %0 : tensor<2xi32>\n}\n"
        + OK.replace("%0 = stablehlo.constant dense<[1, 2]> : tensor<2xi32>",
                     "%0 = func.call @loop() : () -> tensor<2xi32>").replace("@ok()", "@runaway()"),
        "infinite recursion through func.call")
    put("call_chain_499.mlir", _recursion(499), "a call chain 499 deep")
    put("nested_1200.mlir", _nested(1200), "regions nested 1200 deep")
    put("scalar_fail.mlir", "func.func @scalar() {\n  %0 = stablehlo.constant dense<1.5> : tensor<f32>\n"
        "  check.expect_almost_eq_const %0, dense<2.5> : tensor<f32>\n  func.return\n}\n",
        "a failing check on a rank-0 float")
    put("unterminated_check.mlir", "func.func @open() {\n  %0 = stablehlo.constant dense<[1, 2]> : tensor<2xi32>\n"
        "  check.expect_eq_const %0, dense<[\n" + "1,\n" * 75_000, "an unterminated multi-line check op")
    put("ctrl_\x1b[2J_\nPASS forged.mlir", OK.replace("@ok", '@"evil\\1B[31m"').replace(
        "dense<[1, 2]> : tensor<2xi32>\n  check", "dense<[1, 3]> : tensor<2xi32>\n  check"),
        "control characters in file and function names")
    put("same_name_twice.mlir", OK + "// -----\n" + OK, "one function name in two split chunks")
    os.mkfifo(folder / "fifo.mlir")
    what["fifo.mlir"] = "a FIFO"
    (folder / "dangling.mlir").symlink_to(folder / "no-such-target.mlir")
    what["dangling.mlir"] = "a dangling symlink"
    return what


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=10.0, help="per test, and per file load")
    ap.add_argument("--max-memory", type=float, default=100.0, help="MiB per op result")
    ap.add_argument("--hex-mib", type=int, default=64, help="size of the hex constant's data")
    ap.add_argument("--keep", help="build the folder here and keep it")
    args = ap.parse_args()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="conform-stress-"))
    folder = root / "hostile"
    folder.mkdir(parents=True, exist_ok=True)
    what = build(folder, args.hex_mib)
    out = root / "out"
    exe = Path(sys.executable).parent / "conform"
    cmd = [str(exe) if exe.exists() else sys.executable, *([] if exe.exists() else ["-m", "stablehlo_conform.cli"]),
           "run", str(folder), "-q", "-j", str(args.jobs), "--timeout", str(args.timeout),
           "--max-memory", str(args.max_memory), "--json", str(out / "r.json"), "--jsonl", str(out / "r.jsonl")]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # largest process of the run
    doc = json.loads((out / "r.json").read_text())
    per_file: dict[str, list[str]] = defaultdict(list)
    for rec in doc["results"]:
        per_file[Path(rec["file"]).name].append(f"{rec['id'].rsplit('::', 1)[1]}={rec['status']}")
    ids = Counter(rec["id"] for rec in doc["results"])
    dups = sum(c - 1 for c in ids.values())
    missing = sorted(set(what) - set(per_file))
    print(f"{'file':<28} {'input':<48} records")
    for name in sorted(what):
        recs = per_file.get(name, [])
        print(f"{ascii(name)[1:-1][:28]:<28} {what[name]:<48} {len(recs)}: {ascii(', '.join(recs))[1:-1][:90]}")
    print(f"\nfiles {len(what)}, records {len(doc['results'])}, duplicates {dups}, files without a record "
          f"{len(missing)}{': ' + ', '.join(map(ascii, missing)) if missing else ''}")
    print(f"exit code {proc.returncode}, wall time {wall:.1f} s, peak memory (largest process) {peak_mib:.0f} MiB")
    if "Traceback" in proc.stderr:
        print("stderr has a traceback:\n" + proc.stderr[-2000:])
    return 0 if not dups and not missing and "Traceback" not in proc.stderr else 1


if __name__ == "__main__":
    sys.exit(main())
