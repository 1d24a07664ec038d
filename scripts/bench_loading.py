#!/usr/bin/env python3
"""Loading cost of hostile and large files, for growing sizes: wall time of
reading, splitting, check-sugar rewriting, parsing and lowering (each file
ends as modules or as a parse error), and peak RSS of loading a large hex
constant in a fresh process. Every doubling of the input should roughly
double the time (linear); the peak should stay near twice the file size.

    python scripts/bench_loading.py [--sizes 10000,20000,40000] [--hex-mib 16,32,64]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from stablehlo_conform import frontend
from stablehlo_conform.errors import ParseError


def unterminated_check(lines: int) -> str:
    """A check statement whose bracket never closes, ``lines`` lines long."""
    head = ["func.func @main() {", "  %0 = stablehlo.constant dense<1> : tensor<i32>",
            "  check.expect_eq_const %0, dense<[1,"]
    return "\n".join(head + [f"  {i}," for i in range(lines)]) + "\n"


def many_chunks(lines: int) -> str:
    """``lines / 5`` small modules separated by ``// -----``."""
    one = ("func.func @t{i}() {{\n  %0 = stablehlo.constant dense<{i}> : tensor<i32>\n"
           "  check.expect_eq_const %0, dense<{i}> : tensor<i32>\n  func.return\n}}\n")
    return "// -----\n".join(one.format(i=i) for i in range(lines // 5))


def long_line(lines: int) -> str:
    """One line of ``40 * lines`` characters full of ``check.`` and blanks."""
    return "func.func @main() {\n  %0 = " + "check.   " * (4 * lines) + "\n  func.return\n}\n"


def deep_nesting(lines: int) -> str:
    """Brackets nested ``lines`` deep (refused before parsing)."""
    return "func.func @main() {\n" + "  %0 = \"x.y\"() ({\n" * lines + "  func.return\n}\n"


def load(text: str, path: str) -> str:
    p = Path(path)
    p.write_text(text)
    try:
        mods = [frontend.lower_module(frontend.parse_chunk(c), c) for c in frontend.read_chunks(p)]
        return f"{len(mods)} modules"
    except ParseError as e:
        return "error: " + str(e).split(": error: ", 1)[-1][:40]


# the peak of this process's own memory (VmHWM; getrusage would also count
# the parent's pages at the fork that started it)
_HEX_CHILD = textwrap.dedent("""
    import re, sys
    from stablehlo_conform import frontend
    def hwm():
        return int(re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read()).group(1)) * 1024
    frontend._bindings()
    base = hwm()
    (m,) = frontend.load_file(sys.argv[1])
    print(base, hwm())
""")


def hex_peak(mib: int, folder: Path) -> tuple[float, int, int, int]:
    import numpy as np

    n = mib * 2**20 // 4
    p = folder / f"hex{mib}.mlir"
    data = np.arange(n, dtype=np.float32).tobytes().hex().upper()
    p.write_text(f'func.func @main() {{\n  %0 = stablehlo.constant dense<"0x{data}"> : tensor<{n}xf32>\n'
                 "  func.return\n}\n")
    del data
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _HEX_CHILD, str(p)], capture_output=True, text=True, check=True)
    dt = time.perf_counter() - t0
    base, peak = (int(x) for x in out.stdout.split())
    size = p.stat().st_size
    p.unlink()
    return dt, size, base, peak


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,20000,40000,80000", help="input sizes in lines")
    ap.add_argument("--hex-mib", default="16,32,64", help="hex constant sizes in MiB of data")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    frontend._bindings()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        print(f"{'input':<22}{'lines':>8}{'KB':>9}{'seconds':>10}{'x prev':>8}  outcome")
        for name, make in [("unterminated check", unterminated_check), ("many chunks", many_chunks),
                           ("one long line", long_line), ("deep nesting", deep_nesting)]:
            prev = None
            for n in sizes:
                text = make(n)
                t0 = time.perf_counter()
                outcome = load(text, str(folder / "f.mlir"))
                dt = time.perf_counter() - t0
                ratio = f"{dt / prev:.1f}" if prev else ""
                print(f"{name:<22}{n:>8}{len(text) // 1024:>9}{dt:>10.3f}{ratio:>8}  {outcome}")
                prev = dt
        print()
        print(f"{'hex constant MiB':<18}{'file MiB':>9}{'seconds':>9}{'peak-base MiB':>15}{'/ file':>8}")
        for mib in (int(s) for s in args.hex_mib.split(",")):
            dt, size, base, peak = hex_peak(mib, folder)
            print(f"{mib:<18}{size / 2**20:>9.0f}{dt:>9.2f}{(peak - base) / 2**20:>15.0f}{(peak - base) / size:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
