#!/usr/bin/env python
"""Turns a measured accuracy table into an accuracy profile.

``conform accuracy --backend NAME --json table.json`` measures a backend's max
ULP error per op and element type; this writes the profile that holds the
backend to what it was measured to achieve, for ``--accuracy-profile``
(``conform run``, ``conform diff``, the pytest plugin):

    python scripts/accuracy_profile.py table.json [--backend NAME] -o profile.json

Cells that did not run or have a non-finite error get no entry (the default
bound applies) and are listed on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys

from stablehlo_conform.oracle.classes import Profile, ProfileError, profile_from_table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table", help="JSON written by conform accuracy --json")
    ap.add_argument("--backend", default=None, help="Backend of the table to take (default: its only one).")
    ap.add_argument("-o", "--output", required=True, help="Profile to write (JSON).")
    a = ap.parse_args(argv)
    try:
        with open(a.table) as f:
            profile, left_out = profile_from_table(json.load(f), a.backend)
        Profile.from_dict(profile, a.output)
    except (OSError, json.JSONDecodeError, ProfileError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    with open(a.output, "w") as f:
        json.dump(profile, f, indent=1)
    n = sum(len(v) for v in profile["ops"].values())
    print(f"{a.output}: {n} bounds for {len(profile['ops'])} ops")
    for line in left_out:
        print(f"  no bound: {line}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
