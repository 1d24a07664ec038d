#!/usr/bin/env python3
"""The figures of the documentation's "Gate your PJRT plugin" page, from one run.

    python scripts/plugin_figures.py [PLUGIN.so] [--jobs 2] [--out DIR] [--write-docs]

Runs, one after the other on this machine: ``conform plugin-report`` on the
plugin (the project's testsuite, the official interpret and testdata suites,
the spec's examples at six StableHLO versions of its window), the same three
suites on the built-in ``xla`` backend, and the plugin page in headless
Chromium at a 1400 px window (screenshot ``DIR/plugin_page.png``; where the
wrong values and the failing matrix columns are). Prints a Markdown block with
the date and the machine; ``--write-docs`` puts it into docs/plugins.md between
the ``plugin-figures`` markers.

PLUGIN.so defaults to the ``lammps-jax-pjrt-cpu`` plugin (installed with
``pip install --no-deps lammps-jax-pjrt-cpu``, or where the tests cache it).
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "stablehlo-suite"
START, END = "<!-- plugin-figures:start -->", "<!-- plugin-figures:end -->"

MEASURE = """<script>
window.addEventListener('load', function(){
  var b = document.body, heads = document.querySelectorAll('#matrix thead th.failing'), right = 0;
  heads.forEach(function(h){ right = Math.max(right, h.getBoundingClientRect().right); });
  b.setAttribute('data-failing-right', String(Math.round(right)));
  b.setAttribute('data-failing-heads', String(heads.length));
  b.setAttribute('data-page-width', String(document.documentElement.scrollWidth));
  b.setAttribute('data-wrong-top', String(Math.round(document.getElementById('wrong').getBoundingClientRect().top)));
  b.setAttribute('data-first-row', document.querySelector('#matrix tbody tr').getAttribute('data-family'));
});
</script></body>"""


def default_plugin() -> str | None:
    spec = importlib.util.find_spec("lammps_jax_pjrt_cpu")
    candidates = [Path(spec.origin).parent] if spec and spec.origin else []
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "stablehlo-conform"
    candidates += sorted(cache.glob("lammps-jax-pjrt-cpu-*/lammps_jax_pjrt_cpu"))
    for c in candidates:
        if (c / "pjrt_c_api_cpu_plugin.so").is_file():
            return str(c / "pjrt_c_api_cpu_plugin.so")
    return None


def conform(*args: str) -> tuple[subprocess.CompletedProcess, float]:
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "stablehlo_conform.cli", *args], capture_output=True, text=True,
                       cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return p, time.monotonic() - t0


def machine() -> str:
    model = ""
    try:
        m = re.search(r"model name\s*:\s*(.+)", Path("/proc/cpuinfo").read_text())
        model = m.group(1).strip() if m else ""
    except OSError:
        pass
    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores{', ' + model if model else ''}"


def browse(page: Path, out: Path) -> dict[str, str]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if chromium is None:
        return {}
    args = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage",
            "--window-size=1400,1000"]
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe.html"
        probe.write_text(page.read_text().replace("</body>", MEASURE, 1))
        dom = subprocess.run([*args, f"--user-data-dir={tmp}/p", "--dump-dom", probe.as_uri()],
                             capture_output=True, text=True, timeout=120).stdout
        subprocess.run([*args, f"--user-data-dir={tmp}/p", f"--screenshot={out / 'plugin_page.png'}",
                        page.resolve().as_uri()], capture_output=True, timeout=120)
    return dict(re.findall(r'data-(failing-right|failing-heads|page-width|wrong-top|first-row)="([^"]*)"', dom))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("plugin", nargs="?", default=default_plugin())
    ap.add_argument("--jobs", default="2")
    ap.add_argument("--out", default=str(ROOT / "artifacts" / "plugin-figures"))
    ap.add_argument("--write-docs", action="store_true", help="put the block into docs/plugins.md")
    a = ap.parse_args()
    if not a.plugin:
        print("no plugin: give PLUGIN.so or pip install --no-deps lammps-jax-pjrt-cpu", file=sys.stderr)
        return 2
    sys.path.insert(0, str(ROOT))
    from stablehlo_conform.harness.backends import display_name
    from stablehlo_conform.harness.reports.plugin_html import page_summary, plugin_identity, summary_line

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    when = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    suites = [ROOT / "testsuite", SHARED / "interpret", SHARED / "testdata"]
    rep, rep_s = conform("plugin-report", f"pjrt:{a.plugin}", "-o", str(out / "report"), "-j", a.jobs, "-q")
    doc = json.loads((out / "report" / "report.json").read_text())
    runs = {Path(r["suite"]).name: r["summary"] for r in doc["suites"]}
    xla = {}
    xla_s = 0.0
    for s in suites:
        p, secs = conform("run", str(s), "--backend", "xla", "-j", a.jobs, "--json", str(out / f"xla-{s.name}.json"),
                          "-q")
        xla_s += secs
        xla[s.name] = json.loads((out / f"xla-{s.name}.json").read_text())["summary"]
    seen = browse(out / "report" / "report.html", out)
    ident = plugin_identity(doc)
    s = page_summary(doc["results"])
    base = out / "known.json"
    conform("baseline", "update", str(out / "report" / "report.json"), "-o", str(base))
    again, again_s = conform("plugin-report", f"pjrt:{a.plugin}", "--baseline", str(base), "-j", a.jobs, "-q",
                             "--versions", "0")
    lines = [f"Measured {when} on {machine()} (`python scripts/plugin_figures.py`, `-j {a.jobs}`), "
             f"plugin {display_name(doc['backend'])} {ident['version']} "
             f"(StableHLO {doc['client']['stablehlo_minimum']} to {doc['client']['stablehlo_current']}):", "",
             "| suite | tests | plugin pass | xla pass | plugin unsupported | xla unsupported |",
             "|---|---|---|---|---|---|"]
    for name in runs:
        p, x = runs[name], xla.get(name, {})
        lines.append(f"| {name} | {p['total']} | {p['pass']} | {x.get('pass', '-')} | {p['unsupported']} | "
                     f"{x.get('unsupported', '-')} |")
    lines += ["", f"- `conform plugin-report`: {rep_s:.0f} s for the three suites and the spec's examples at "
              f"{len(doc['window'])} StableHLO versions; exit code {rep.returncode}; its summary line: "
              f"**{summary_line(s)}** ({s['errors']} errors; {s['companion']} programs of companion dialects not "
              "counted); the same three suites on `xla`: "
              f"{xla_s:.0f} s.",
              f"- With a baseline of those results (`conform baseline update report.json -o known.json`, "
              f"`--baseline known.json`, no version window): exit code {again.returncode} in {again_s:.0f} s."]
    if seen:
        lines.append(f"- The page in headless Chromium at a 1400 px window: the wrong values start {seen['wrong-top']} "
                     f"px from the top (first screen), the matrix's first row is `{seen['first-row']}`, its "
                     f"{seen['failing-heads']} failing columns end at {seen['failing-right']} px, the page is "
                     f"{seen['page-width']} px wide (no sideways scrolling; the matrix scrolls in its frame).")
    block = "\n".join(lines)
    print(block)
    if a.write_docs:
        readme = ROOT / "docs" / "plugins.md"
        text = readme.read_text()
        if START not in text or END not in text:
            print(f"{readme} has no {START} ... {END} markers", file=sys.stderr)
            return 1
        head, rest = text.split(START, 1)
        readme.write_text(head + START + "\n" + block + "\n" + END + rest.split(END, 1)[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
