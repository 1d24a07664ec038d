"""The page of ``conform plugin-report``: one PJRT plugin, for its vendor.

Read from the top, the page answers in order: which plugin this is (name,
version, platform, device kind, PJRT C API, StableHLO window; the library
path in a detail line), a one-line summary ("N wrong values in K ops, M
crashes, coverage P%"), the wrong values and crashes (grouped by signature,
each with op, element type, both values, the bound broken, the verdict and a
command that reproduces it), the errors, then coverage: the op family x
element type matrix coloured by outcome kind and the unsupported programs by
reason, and the version window.

Only programs of StableHLO and CHLO ops count: a test whose op family
belongs to a companion dialect (arith, math, scf, shape, cf, func, tensor,
...) is a program no framework sends to a plugin, so it is left out of the
matrix and the rates (the page says how many). The page is static HTML with
inline CSS; a few lines of inline script copy a repro command and filter the
matrix, nothing else needs a script.
"""

from __future__ import annotations

import datetime as _dt
import html
import re
import shlex
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from ...version import __version__ as tool_version
from ..records.gate import Baseline
from ..records.names import display_name, plugin_name, shorten_names
from ..records.result import Status
from ..records.triage import Group, kind, normalise, triage
from . import incomplete_note
from .html import dtype_sort_key

PLUGIN_DIALECTS = ("stablehlo.", "chlo.")
# outcome kinds, worst first; a matrix cell takes the colour of the worst it holds
KINDS = ("wrong", "crash", "error", "unsupported", "pass")


def _kind(status: str) -> str:
    """A status's kind as the page shows it (an unknown status is an error)."""
    known = Status.of(status)
    k = known.kind if known is not None else "error"
    return "wrong" if k == "wrong value" else k


def _bad(status: str) -> bool:
    """What fails the gate unless a baseline knows it: a failure of the backend (not unsupported)."""
    known = Status.of(status)
    return known is not None and known.failure


def is_plugin_program(rec: dict) -> bool:
    """Whether a test is a program a plugin is sent: its op family is a
    StableHLO or CHLO op (or it has none of its own: ``stablehlo``, ``other``),
    not an op of a companion dialect."""
    family = str(rec.get("family") or "")
    return "." not in family or family.startswith(PLUGIN_DIALECTS)


def _dtype(rec: dict) -> str:
    d = rec.get("dtypes") or []
    return str(d[0]) if d else "-"


# --------------------------------------------------------------------------- #
# Reading a result's message
# --------------------------------------------------------------------------- #

# one check's values: a message that names several checks ("...; <loc>: check...") ends the first at its ';'
_VALUES = re.compile(r"first at index (\[[^\]]*\]): actual ([^;]+?), expected ([^;]+?)(?: \(([\d.e+]+) ULP\))?"
                     r"(?:; max ([\d.e+]+) ULP)?(?:, max abs diff ([^\s;]+))?\s*(?:;|$)")
_DIFFER = re.compile(r"(\d+)/(\d+) elements differ")
_CHECK = re.compile(r"\b(check\.[a-z_]+)")
_VERDICT = re.compile(r"^verdict:\s*(.*)$", re.M)
_BOUND = re.compile(r"\(([^()]*?), reference [^()]*\)")


def wrong_value(message: str) -> dict[str, str]:
    """What a wrong-value message says: the check, the first differing
    element (index, actual, expected, its ULP distance), how many differ, the
    bound the backend broke and the verdict; fields it does not say are ''."""
    first = message.strip().splitlines()[0] if message.strip() else ""
    out = {"check": "", "index": "", "actual": "", "expected": "", "ulp": "", "max_ulp": "", "differ": "",
           "bound": "", "verdict": ""}
    m = _CHECK.search(first)
    if m:
        out["check"] = m.group(1)
    m = _VALUES.search(first)
    if m:
        out.update(index=m.group(1), actual=m.group(2), expected=m.group(3), ulp=m.group(4) or "",
                   max_ulp=m.group(5) or "")
    m = _DIFFER.search(first)
    if m:
        out["differ"] = f"{m.group(1)}/{m.group(2)}"
    m = _VERDICT.search(message)
    if m:
        out["verdict"] = re.sub(r" at \S+:\d+:\d+$", "", m.group(1).strip())  # the location is the test's
        b = _BOUND.search(out["verdict"])
        if b:
            out["bound"] = "exact" if b.group(1).strip() == "exact" else b.group(1).strip()
    if not out["bound"] and out["check"]:
        out["bound"] = "exact" if "_eq" in out["check"] and "almost" not in out["check"] else \
            f"{out['check']} tolerance"
    return out


def reason(message: str, backend: str) -> str:
    """An unsupported or error message without the backend's own prefix
    (``unsupported: <backend> (...)``), with the plugin's path shortened."""
    text = shorten_names(message.strip(), [backend])
    first = text.splitlines()[0] if text else ""
    short = display_name(backend)
    m = re.match(rf"unsupported: {re.escape(short)}(?:\?\S*)? \((.*)\)(?: at .*)?$", first)
    if m:
        return _plain(m.group(1))
    if first.startswith(short):
        first = first[len(short):].lstrip(": ")
    return _plain(first)


def _plain(text: str) -> str:
    """A compiler's diagnostic without its location in the text sent (``-:11:38: error:``)."""
    return re.sub(r"-:\d+:\d+:\s*(?:error:\s*)?", "", text)


def _without_location(message: str) -> str:
    first = message.strip().splitlines()[0] if message.strip() else ""
    return re.sub(r"^\S+:\d+:\d+:\s*", "", first)


def repro_command(rec: dict, backend: str) -> str:
    """A command that runs this one test on ``backend`` again, from the
    folder the report was made in: the test's file as the run named it, the
    backend by the name given (``plugin-report`` gives one ``--backend`` takes
    back here: :func:`~stablehlo_conform.harness.backends.pjrt.reusable_name`)."""
    tid = str(rec.get("id", ""))
    path, sep, name = tid.rpartition("::")
    path = str(rec.get("file") or path or tid)
    pattern = f"{path.rsplit('/', 1)[-1]}::{name}" if sep else tid
    return (f"conform run {shlex.quote(path)} -k {shlex.quote(pattern)} "
            f"--backend {shlex.quote(backend)}")


# --------------------------------------------------------------------------- #
# The numbers
# --------------------------------------------------------------------------- #


def page_summary(results: Sequence[dict], baseline: Baseline | None = None) -> dict[str, Any]:
    """The counts the page and ``plugin-report``'s exit code are made of.

    ``wrong``/``crashes``/``errors``: results that failed, crashed (or timed
    out) and errored; ``wrong_ops``: the op families of the wrong values;
    ``coverage``: the share of StableHLO/CHLO programs the plugin ran (did not
    call unsupported); ``new``: the failing, crashing and erroring results
    the baseline does not know (all of them without a baseline)."""
    plugin = [r for r in results if is_plugin_program(r)]
    st = Counter(r["status"] for r in results)
    ran = sum(r["status"] != "unsupported" for r in plugin)
    wrong = [r for r in results if r["status"] == "fail"]
    new = [r for r in results if _bad(r["status"]) and (baseline is None or baseline.match(r) is None)]
    return {"total": len(results), "plugin_programs": len(plugin), "companion": len(results) - len(plugin),
            "wrong": len(wrong), "wrong_ops": len({r.get("family") or "other" for r in wrong}),
            "crashes": st["crash"] + st["timeout"], "errors": st["error"], "unsupported": st["unsupported"],
            "pass": st["pass"], "ran": ran, "coverage": (100.0 * ran / len(plugin)) if plugin else 0.0,
            "new": new}


def summary_line(s: dict) -> str:
    """The five-second line: "N wrong values in K ops, M crashes, coverage P%"."""
    return (f"{s['wrong']} wrong value{'s' if s['wrong'] != 1 else ''} in {s['wrong_ops']} "
            f"op{'s' if s['wrong_ops'] != 1 else ''}, {s['crashes']} crash{'es' if s['crashes'] != 1 else ''}, "
            f"coverage {s['coverage']:.1f}%")


def matrix(results: Sequence[dict]) -> tuple[list[str], list[str], dict[tuple[str, str], Counter]]:
    """Rows (op families of StableHLO/CHLO programs), columns (element types)
    and the outcome kinds of each cell. Families and types holding a wrong
    value, a crash or an error come first (worst first), the rest in order."""
    cells: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for r in results:
        if is_plugin_program(r):
            cells[(str(r["family"]), _dtype(r))][_kind(r["status"])] += 1

    def rank(keys: set, axis: int) -> dict[str, int]:
        worst: dict[str, int] = {}
        for key, c in cells.items():
            k = key[axis]
            w = min((KINDS.index(x) for x in c), default=len(KINDS))
            worst[k] = min(worst.get(k, len(KINDS)), w)
        return {k: min(worst.get(k, 9), 3) for k in keys}  # unsupported and pass keep their order

    fams = {k[0] for k in cells}
    types = {k[1] for k in cells}
    fr, tr = rank(fams, 0), rank(types, 1)
    rows = sorted(fams, key=lambda f: (fr[f], f))
    cols = sorted(types, key=lambda t: (tr[t], dtype_sort_key(t)))
    return rows, cols, cells


# --------------------------------------------------------------------------- #
# HTML
# --------------------------------------------------------------------------- #

CSS = """
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;padding:16px 22px;color:#1d2733;
background:#f7f8fa;max-width:100%}
h1{font-size:21px;margin:0 0 2px}
h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid #d8dde4;padding-bottom:3px}
h3{font-size:14px;margin:14px 0 4px}
.facts{margin:2px 0;color:#33404f}
.detail{margin:2px 0;color:#5b6776;font-size:12px;word-break:break-all}
.summary{font-size:22px;font-weight:700;margin:12px 0 4px;padding:8px 12px;border-radius:6px;background:#fff;
border:2px solid #2e7d32;color:#1b5e20}
.summary.bad{border-color:#c62828;color:#b71c1c}
.counts{color:#4a5563;font-size:13px;margin:2px 0 8px}
nav a{margin-right:14px;font-size:13px}
table{border-collapse:separate;border-spacing:0;background:#fff;font-size:12.5px}
table.list{width:100%;border:1px solid #d8dde4;table-layout:fixed}
table.list th,table.list td{border-bottom:1px solid #e6e9ee;padding:4px 7px;text-align:left;vertical-align:top}
table.list th{background:#eef1f5;position:sticky;top:0;z-index:1}
tr.group td{background:#f3f5f8;font-weight:600}
table.list td{overflow-wrap:anywhere}
td.v{font-family:ui-monospace,Menlo,Consolas,monospace}
code.cmd{font:11px ui-monospace,Menlo,Consolas,monospace;background:#f1f3f6;padding:2px 4px;display:block;
white-space:pre-wrap;overflow-wrap:anywhere;color:#33404f}
div.clip{max-height:7.5em;overflow:auto;overflow-wrap:anywhere}
button.copy{font-size:11px;margin-left:4px;cursor:pointer}
.known{display:inline-block;font-size:11px;background:#8d6e00;color:#fff;border-radius:3px;padding:0 5px;
margin-left:4px}
.none{color:#5b6776;font-style:italic}
.wrap{overflow:auto;max-height:78vh;max-width:100%;border:1px solid #d8dde4;background:#fff}
table.matrix th,table.matrix td{border-right:1px solid #e3e7ec;border-bottom:1px solid #e3e7ec;padding:3px 5px;
white-space:nowrap;text-align:center;font-variant-numeric:tabular-nums}
table.matrix thead th{position:sticky;top:0;background:#eef1f5;z-index:2}
table.matrix th.op{position:sticky;left:0;background:#fafbfc;text-align:left;z-index:1;font-weight:500}
table.matrix thead th.op{z-index:3;background:#eef1f5}
table.matrix thead th.failing{background:#f9d6d5;color:#8a1c13}
td.k-wrong{background:#e53935;color:#fff;font-weight:700}
td.k-crash{background:#212121;color:#fff;font-weight:700}
td.k-error{background:#8e24aa;color:#fff}
td.k-unsupported{background:#cfd8dc;color:#37474f}
td.k-pass{background:#a5d6a7;color:#1b5e20}
td.empty{background:#fafafa;color:#c0c4c9}
.legend span{display:inline-block;padding:1px 8px;margin-right:6px;border-radius:3px;font-size:12px}
.controls{margin:6px 0;font-size:13px}
ul.why{margin:0;padding-left:16px}
"""

JS = r"""
(function(){
  document.querySelectorAll('button.copy').forEach(function(b){
    b.addEventListener('click', function(){
      var t = b.getAttribute('data-cmd');
      if (navigator.clipboard) navigator.clipboard.writeText(t);
      b.textContent = 'copied';
    });
  });
  var box = document.getElementById('only-failing');
  if (box) box.addEventListener('change', function(){
    document.querySelectorAll('#matrix tbody tr').forEach(function(tr){
      tr.style.display = (!box.checked || tr.getAttribute('data-failing') === '1') ? '' : 'none';
    });
  });
})();
"""

_e = html.escape


def _copy(cmd: str, backend: str) -> str:
    """The command as it runs (what is shown is what the copy button copies)."""
    return (f'<code class="cmd" title="{_e(cmd)}">{_e(cmd)}</code>'
            f'<button type="button" class="copy" data-cmd="{_e(cmd)}">copy</button>')


def _clip(text: str) -> str:
    """Cell text in a box of bounded height that scrolls: a long message
    (several checks, a whole diagnostic) does not make its row a page tall."""
    return f'<div class="clip">{_e(text)}</div>'


def _known(rec: dict, baseline: Baseline | None) -> str:
    entry = baseline.match(rec) if baseline is not None else None
    if entry is None:
        return ""
    return f'<span class="known" title="{_e(entry.reason or "listed in the baseline")}">known</span>'


def _wrong_section(groups: list[Group], backend: str, rerun: str, baseline: Baseline | None) -> str:
    rows = []
    n = 0
    for g in groups:
        sig = g.signature
        rows.append(f'<tr class="group"><td colspan="8">{_e(sig.stage)} · {_e(sig.op)} · '
                    f'{_e(sig.dtype or "-")} · {g.count} test{"s" if g.count != 1 else ""}</td></tr>')
        for r in sorted(g.results, key=lambda r: str(r["id"])):
            n += 1
            msg = shorten_names(str(r.get("message") or ""), [backend])
            if r["status"] == "fail":
                w = wrong_value(msg)
                err = "; ".join(x for x in (
                    f"{w['ulp']} ULP" + (f" (max {w['max_ulp']})" if w["max_ulp"] and w["max_ulp"] != w["ulp"]
                                         else "") if w["ulp"] else "",
                    f"{w['differ']} elements differ" if w["differ"] else "") if x)
                values = (f'<td class="v">{_clip(w["actual"] or "-")}</td><td class="v">{_clip(w["expected"] or "-")}'
                          f"</td><td>{_clip(err or '-')}</td><td>{_clip(w['bound'] or '-')}</td>"
                          f'<td class="msg">{_clip(w["verdict"] or _without_location(msg))}</td>')
            else:
                first = reason(msg, backend)
                values = f'<td class="msg" colspan="5">{_clip(r["status"] + ": " + first)}</td>'
            rows.append(f'<tr class="wrong-row" data-status="{_e(r["status"])}"><td>{_e(str(r.get("family")))}<br>'
                        f'<small>{_e(_dtype(r))}</small></td><td>{_e(str(r["id"]).rsplit("/", 1)[-1])}'
                        f"{_known(r, baseline)}</td>{values}"
                        f"<td>{_copy(repro_command(r, rerun), backend)}</td></tr>")
    if not rows:
        return '<section id="wrong"><h2>Wrong values and crashes</h2><p class="none">none</p></section>'
    head = "".join(f"<th>{h}</th>" for h in ("op<br>element type", "test", "actual", "expected", "error",
                                             "bound broken", "verdict", "repro"))
    widths = "".join(f'<col style="width:{w}%">' for w in (11, 15, 9, 9, 10, 9, 22, 15))
    return (f'<section id="wrong"><h2>Wrong values and crashes ({n})</h2>'
            f'<table class="list" id="wrong-table"><colgroup>{widths}</colgroup><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody>'
            "</table></section>")


def _group_section(sid: str, title: str, groups: list[Group], backend: str, rerun: str,
                   baseline: Baseline | None, intro: str = "") -> str:
    total = sum(g.count for g in groups)
    if not groups:
        return f'<section id="{sid}"><h2>{_e(title)}</h2>{intro}<p class="none">none</p></section>'
    rows = []
    for g in groups:
        ex = g.example
        why = reason(str(ex.get("message") or ""), backend)
        ops = sorted({str(r.get("family") or "other") for r in g.results})
        ids = "".join(f"<li>{_e(str(r['id']))}{_known(r, baseline)}</li>"
                      for r in sorted(g.results, key=lambda r: r["id"]))
        rows.append(f'<tr><td>{g.count}</td><td>{_e(", ".join(ops[:4]) + (" ..." if len(ops) > 4 else ""))}</td>'
                    f'<td>{_e(g.signature.dtype or "-")}</td><td class="msg">{_clip(why)}</td>'
                    f"<td><details><summary>{_e(str(ex['id']).rsplit('/', 1)[-1])}</summary><ul>{ids}</ul>"
                    f"</details>{_copy(repro_command(ex, rerun), backend)}</td></tr>")
    head = "".join(f"<th>{h}</th>" for h in ("tests", "op", "element types", "why", "tests and repro"))
    widths = "".join(f'<col style="width:{w}%">' for w in (6, 16, 10, 46, 22))
    return (f'<section id="{sid}"><h2>{_e(title)} ({total})</h2>{intro}<table class="list" id="{sid}-table">'
            f'<colgroup>{widths}</colgroup><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></section>')


def _matrix_section(results: Sequence[dict], s: dict) -> str:
    rows, cols, cells = matrix(results)
    failing_cols = {c for c in cols if any(cells.get((f, c), {}).get(k) for f in rows for k in KINDS[:3])}
    head = '<th class="op">op family</th>' + "".join(
        f'<th class="{"failing" if c in failing_cols else ""}" data-dtype="{_e(c)}">{_e(c)}</th>' for c in cols)
    body = []
    for f in rows:
        tds = []
        failing = False
        for c in cols:
            cnt = cells.get((f, c))
            if not cnt:
                tds.append('<td class="empty">·</td>')
                continue
            worst = next(k for k in KINDS if cnt.get(k))
            failing |= worst != "pass"
            tot = sum(cnt.values())
            tip = ", ".join(f"{cnt[k]} {k}" for k in KINDS if cnt.get(k))
            tds.append(f'<td class="k-{worst}" data-op="{_e(f)}" data-dtype="{_e(c)}" data-kind="{worst}" '
                       f'data-pass="{cnt.get("pass", 0)}" data-total="{tot}" title="{_e(f)} · {_e(c)}: {_e(tip)}">'
                       f'{cnt.get("pass", 0)}/{tot}</td>')
        body.append(f'<tr data-family="{_e(f)}" data-failing="{int(failing)}"><th class="op">{_e(f)}</th>'
                    f'{"".join(tds)}</tr>')
    legend = "".join(f'<span class="k-{k}" style="background:{c[0]};color:{c[1]}">{k}</span>' for k, c in (
        ("wrong", ("#e53935", "#fff")), ("crash", ("#212121", "#fff")), ("error", ("#8e24aa", "#fff")),
        ("unsupported", ("#cfd8dc", "#37474f")), ("pass", ("#a5d6a7", "#1b5e20"))))
    note = (f"{s['companion']} programs of companion dialects (arith, math, scf, shape, cf, func, tensor, ...) "
            "are not sent to plugins and are not counted here." if s["companion"] else "")
    return ('<section id="matrix-section"><h2>Op family x element type</h2>'
            f'<p class="counts">StableHLO and CHLO programs only: {s["plugin_programs"]} tests. Each cell: tests '
            "passed / tests, coloured by the worst outcome in it; families and element types with a wrong "
            f"value, crash or error come first. {_e(note)}</p>"
            f'<div class="controls legend">{legend}<label><input type="checkbox" id="only-failing"> only '
            "families that do not pass everything</label></div>"
            f'<div class="wrap"><table class="matrix" id="matrix"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div></section>')


def _window_section(doc: dict) -> str:
    if not doc.get("window"):
        return ""
    backend = doc["backend"]
    rows = []
    for w in doc["window"]:
        why: dict[str, list] = {}
        for x in w["not_pass"]:  # one line per reason, the varying shapes and locations aside
            text = reason(str(x.get("message") or ""), backend)
            why.setdefault(normalise(text), []).append((text, str(x["id"]).rsplit("/", 1)[-1]))
        items = "".join(
            f'<li><b>{len(v)} x</b> {_e(v[0][0][:400])} <small title="{_e(", ".join(t for _m, t in v))}">'
            f"({_e(v[0][1])}{' ...' if len(v) > 1 else ''})</small></li>"
            for v in sorted(why.values(), key=lambda v: -len(v)))
        s = w["summary"]
        cut = " (interrupted)" if w.get("complete") is False else ""  # the run of this version did not finish
        rows.append(f"<tr><td>{_e(w['version'])}{cut}</td><td>{s.get('total', 0)}</td><td>{s.get('pass', 0)}</td>"
                    f"<td>{s.get('fail', 0)}</td><td>{s.get('crash', 0) + s.get('timeout', 0)}</td>"
                    f"<td>{s.get('error', 0)}</td><td>{s.get('unsupported', 0)}</td>"
                    f'<td class="msg"><ul class="why">{items}</ul></td></tr>')
    head = "".join(f"<th>{h}</th>" for h in ("StableHLO", "tests", "pass", "wrong", "crash", "error", "unsupported",
                                             "why not passing"))
    widths = "".join(f'<col style="width:{w}%">' for w in (8, 5, 5, 5, 5, 5, 8, 59))
    return ('<section id="window"><h2>Version window</h2><p class="counts">The sample serialized as a portable '
            "artifact of each StableHLO version of the plugin's window.</p>"
            f'<table class="list" id="window-table"><colgroup>{widths}</colgroup><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody>'
            "</table></section>")


def plugin_identity(doc: dict) -> dict[str, str]:
    """Name and version of the plugin (from the package that holds the
    library, when it is one), and the facts of the client."""
    from importlib import metadata
    from pathlib import Path

    info = doc.get("client") or {}
    name = plugin_name(doc["backend"])
    version = ""
    lib = str(info.get("library") or "")
    if lib.startswith("/"):
        pkg = Path(lib).parent
        wanted = pkg.name.replace("-", "_").lower()
        for d in sorted(pkg.parent.glob("*.dist-info")):  # the package's metadata beside it
            dist, _, ver = d.name[:-len(".dist-info")].partition("-")
            if dist.replace("-", "_").lower() == wanted and ver:
                version = ver
                break
        if not version and (pkg / "__init__.py").is_file():
            try:
                version = metadata.version(pkg.name)
            except metadata.PackageNotFoundError:
                pass
    return {"name": name, "version": version, "library": lib}


def render_plugin_page(doc: dict, baseline: Baseline | None = None, *, parser: str = "-",
                       rerun_backend: str | None = None) -> str:
    """The whole page of one ``plugin-report`` document: ``parser`` names what parsed the
    programs, ``rerun_backend`` the backend name its repro commands give (default: the
    document's). Rendering reads the document only: it loads no MLIR and no backend."""
    results = doc.get("results") or [r for run in doc.get("suites", []) for r in run["results"]]
    backend = doc["backend"]
    rerun = rerun_backend or backend
    info = doc.get("client") or {}
    ident = plugin_identity(doc)
    s = page_summary(results, baseline)
    groups = triage(results)
    wrong = [g for g in groups if kind(g.key[0]) in ("wrong value", "crash")]
    # errors and coverage: of the programs a plugin is sent (companion dialects apart)
    groups = triage([r for r in results if is_plugin_program(r)])
    errors = [g for g in groups if kind(g.key[0]) == "error"]
    unsupported = [g for g in groups if kind(g.key[0]) == "unsupported"]
    title = f"{ident['name']} {ident['version']}".strip()
    kinds = "/".join(info.get("device_kinds") or []) or "-"
    platform = str(info.get("platform") or "-")
    if info.get("platform_version") and info.get("platform_version") != platform:
        platform += f" {info['platform_version']}"
    window = (f"StableHLO {info.get('stablehlo_minimum', '-')} to {info.get('stablehlo_current', '-')}"
              + ("" if info.get("window_stated", True) else " (not stated by the plugin; default window)"))
    suites = ", ".join(str(run.get("suite", "")) for run in doc.get("suites", []))
    generated = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    bad = s["wrong"] or s["crashes"]
    known = sum(1 for r in results if _bad(r["status"])) - len(s["new"])
    header = (
        f'<h1 id="title">{_e(title)} <small style="font-weight:400;color:#5b6776">StableHLO conformance</small></h1>'
        f'<p class="facts" id="facts">platform <b>{_e(platform)}</b> · device kind <b>{_e(kinds)}</b> '
        f'({_e(str(info.get("devices", "-")))} devices) · PJRT C API <b>{_e(str(info.get("pjrt_c_api") or "-"))}</b>'
        f" · <b>{_e(window)}</b></p>"
        f'<p class="detail">library {_e(ident["library"])} · name {_e(backend)}</p>'
        f'<p class="detail">checked by stablehlo-conform {_e(tool_version)} (programs parsed with '
        f"{_e(parser)}) on {_e(suites)} · {generated}"
        + (f" · baseline {_e(str(baseline.source))}" if baseline is not None else "") + "</p>"
        f'<p class="summary{" bad" if bad else ""}" id="summary" data-wrong="{s["wrong"]}" '
        f'data-wrong-ops="{s["wrong_ops"]}" data-crashes="{s["crashes"]}" data-coverage="{s["coverage"]:.1f}">'
        f"{_e(summary_line(s))}</p>"
        + (f'<p class="summary bad" id="incomplete">{_e(incomplete_note(doc) or "")}</p>'
           if incomplete_note(doc) else "")
        + f'<p class="counts">{s["errors"]} errors · {s["pass"]} pass · {s["unsupported"]} unsupported · '
        f"{s['total']} tests ({s['plugin_programs']} StableHLO/CHLO programs; coverage: the share of them the "
        "plugin ran rather than called unsupported)"
        + (f" · {known} failing results known from the baseline, {len(s['new'])} new" if baseline is not None
           else "") + "</p>"
        '<nav><a href="#wrong">wrong values and crashes</a><a href="#errors">errors</a>'
        '<a href="#matrix-section">op x element type</a><a href="#coverage">unsupported by reason</a>'
        + ('<a href="#window">version window</a>' if doc.get("window") else "") + "</nav>")
    if not info.get("loads", True):
        header = (f'<h1 id="title">{_e(title)}</h1><p class="detail">name {_e(backend)}</p>'
                  f'<p class="summary bad" id="summary">does not load: {_e(str(info.get("error", "")))}</p>')
        doc = {**doc, "window": []}
    body = "\n".join((
        header,
        _wrong_section(wrong, backend, rerun, baseline),
        _group_section("errors", "Errors", errors, backend, rerun, baseline,
                       '<p class="counts">Programs the plugin took but failed to compile or run, or ran to results '
                       "of another shape.</p>"),
        _matrix_section(results, s),
        _group_section("coverage", f"Coverage {s['coverage']:.1f}%: unsupported by reason", unsupported, backend,
                       rerun, baseline,
                       f'<p class="counts">{s["ran"]} of {s["plugin_programs"]} StableHLO/CHLO programs '
                       "ran; the plugin called the rest unsupported"
                       + (f" ({s['companion']} programs of companion dialects are not counted)" if s["companion"]
                          else "") + ".</p>"),
        _window_section(doc)))
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
            "script-src 'unsafe-inline'; img-src data:\">\n"
            f"<title>{_e(title)}: StableHLO conformance</title>\n<style>{CSS}</style>\n</head>\n<body>\n{body}\n"
            f"<script>{JS}</script>\n</body>\n</html>\n")
