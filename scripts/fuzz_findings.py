"""Classify what a ``conform fuzz`` campaign found against the known XLA CPU
behaviours, from its results and bundles.

    conform fuzz --seed 0 --count 500 --backends numpy,xla -o /tmp/fz
    python scripts/fuzz_findings.py /tmp/fz

Prints, per class, how many programs showed it and how many programs of the
kind that can show it were run: subnormals flushed to zero, FMA contraction
(``a * b + c`` with ``c = -fl(a * b)``), padding zeros skipped by a convolution
(``0 * inf``), NaN leaking across feature groups of a grouped convolution.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

import numpy as np


def classify(rec: dict, folder: Path) -> str:
    m = re.search(r": (\S+) vs (\S+)", rec["message"])
    got, want = (m.group(1), m.group(2)) if m else ("", "")
    if rec["kind"] == "subnormal":
        return "subnormals flushed to zero" if float(got) == 0.0 else "other (subnormal inputs)"
    if rec["kind"] == "fma":
        return "FMA contraction (mul+add)" if float(want) == 0.0 else "other (mul+add)"
    if rec["kind"] == "conv-special":
        with np.load(folder / "original.npz") as z:
            lhs, rhs = z["arg0"], z["arg1"]
        if np.isinf(rhs).any() and want == "nan":
            return "convolution skips padding zeros (0 x inf)"
        if np.isnan(lhs).any() and got == "nan":
            return "NaN leaks across feature groups"
        return "other (convolution with special values)"
    return f"other ({rec['kind']})"


def main(out: str) -> None:
    doc = json.loads((Path(out) / "results.json").read_text())
    recs = doc["results"]
    runs = Counter(r["kind"] for r in recs)
    found = Counter()
    dtypes: dict[str, set] = {}
    for r in recs:
        if r["status"] == "fail":
            c = classify(r, Path(r["bundle"]) if r.get("bundle") else Path(out))
            found[c] += 1
            dtypes.setdefault(c, set()).update(r["dtypes"])
    s = doc["summary"]
    print(f"{s['total']} programs: {s['pass']} agree, {s['fail']} disagree, {s['crash'] + s['timeout']} crash, "
          f"{s['error'] + s['unsupported']} errors; wall {doc['wall_time']} s {doc['fuzz']['seconds']}")
    print(f"programs per kind: {dict(sorted(runs.items()))}")
    for c, n in found.most_common():
        print(f"{n:>4}  {c}  ({', '.join(sorted(dtypes[c]))})")
    bundles = [r for r in recs if r["status"] != "pass"]
    print(f"reduced and bundled: {sum(1 for r in bundles if r.get('reduced'))} of {len(bundles)}; "
          f"ops after reduction: {dict(Counter(r.get('ops_after') for r in bundles))}")


if __name__ == "__main__":
    main(sys.argv[1])
