"""A self-contained HTML report: one page, inline CSS and JS, no network.

The page embeds the results as JSON and builds, with inline JavaScript, the
op family x element type x backend matrix of pass rates (cells coloured from
red at 0 % to green at 100 % of the tests that ran; a cell of unsupported
tests only is grey, class ``unsupported``: coverage, not a wrong value; click
a cell to list its tests) and the list
of non-passing tests, each expandable to its full message (first differing
index, values, ULP distance). Several result files (e.g. one per backend)
make several backend columns under each element type.
"""

from __future__ import annotations

import datetime as _dt
import html
import re
from collections.abc import Sequence
from pathlib import Path

from ..records import jsonout
from ..records.gate import Baseline
from ..records.triage import triage_runs
from . import incomplete_note


def dtype_sort_key(name: str) -> tuple:
    """i1, signed ints, unsigned ints, floats (by width), complex, others."""
    if name == "i1":
        return (0, 0, name)
    m = re.fullmatch(r"(si|ui|i)(\d+)", name)
    if m:
        return (1 if m.group(1) != "ui" else 2, int(m.group(2)), name)
    m = re.fullmatch(r"(bf|f|tf)(\d+)(.*)", name)
    if m:
        return (3, int(m.group(2)), name)
    if name.startswith("complex"):
        return (4, len(name), name)
    if name == "-":
        return (9, 0, name)
    return (5, 0, name)


def _dtype_of(rec: dict) -> str:
    d = rec.get("dtypes") or []
    return str(d[0]) if d else "-"


def report_data(runs: Sequence[dict], baseline: Baseline | None = None, title: str = "") -> dict:
    """The JSON document the page's script renders."""
    backends: list[str] = []
    run_info = []
    tests = []
    for run in runs:
        b = str(run.get("backend") or "numpy")
        if b not in backends:
            backends.append(b)
        bi = backends.index(b)
        counts: dict[str, int] = {}
        for rec in run["results"]:
            counts[rec["status"]] = counts.get(rec["status"], 0) + 1
            entry = baseline.match(rec) if baseline is not None and rec["status"] != "pass" else None
            tests.append([
                rec["id"], rec.get("family") or "other", _dtype_of(rec), bi, rec["status"],
                (rec.get("message") or "").strip() if rec["status"] != "pass" else "",
                (entry.reason or "listed in the baseline") if entry is not None else None,
                round(float(rec.get("duration") or 0.0), 4),
            ])
        run_info.append({"backend": b, "source": str(run.get("source", "")),
                         "paths": [str(p) for p in run.get("paths", [])], "counts": counts,
                         "total": len(run["results"])})
    dtypes = sorted({t[2] for t in tests}, key=dtype_sort_key)
    families = sorted({t[1] for t in tests})
    return {
        "title": title or "stablehlo-conform report",
        "generated": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "backends": backends,
        "dtypes": dtypes,
        "families": families,
        "runs": run_info,
        "baseline": baseline.source if baseline is not None else None,
        "fields": ["id", "family", "dtype", "backend", "status", "message", "known", "duration"],
        "tests": tests,
    }


def _script_json(obj: object) -> str:
    text = jsonout.dumps(obj, separators=(",", ":"), ensure_ascii=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


CSS = """
*{box-sizing:border-box}
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;padding:16px 20px;color:#1d2733;background:#f7f8fa}
h1{font-size:20px;margin:0 0 4px}
h2{font-size:16px;margin:22px 0 8px}
.sub{color:#5b6776;font-size:12px;margin-bottom:12px}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:10px 0}
.card{background:#fff;border:1px solid #d8dde4;border-radius:6px;padding:8px 12px;min-width:200px}
.card .b{font-weight:600;font-size:15px}
.card .rate{font-size:22px;font-weight:700}
.card .counts{font-size:12px;color:#4a5563}
.controls{display:flex;gap:14px;align-items:center;margin:8px 0;flex-wrap:wrap}
.controls input[type=search]{padding:4px 8px;width:260px;border:1px solid #c3cad3;border-radius:4px}
.wrap{overflow:auto;max-height:70vh;border:1px solid #d8dde4;background:#fff}
table.matrix{border-collapse:separate;border-spacing:0;font-size:12px}
table.matrix th,table.matrix td{border-right:1px solid #e3e7ec;border-bottom:1px solid #e3e7ec;padding:3px 6px;white-space:nowrap;text-align:center}
table.matrix thead th{position:sticky;background:#eef1f5;z-index:2}
table.matrix thead tr:first-child th{top:0}
table.matrix thead tr:nth-child(2) th{top:23px}
table.matrix th.op{position:sticky;left:0;background:#fafbfc;text-align:left;z-index:1;font-weight:500}
table.matrix thead th.op{z-index:3;background:#eef1f5}
td.cell{cursor:pointer;min-width:46px;font-variant-numeric:tabular-nums}
td.cell.none{background:#fafafa;color:#bbb;cursor:default}
td.cell.unsupported{background:#cfd8dc;color:#37474f}
td.cell.sel{outline:2px solid #1d4ed8;outline-offset:-2px}
td.total{font-weight:600}
.legend{display:inline-flex;align-items:center;gap:6px;font-size:12px}
.legend span{display:inline-block;width:36px;height:12px;border:1px solid #ccc}
.fail-list details{background:#fff;border:1px solid #dde2e8;border-radius:4px;margin:4px 0;padding:4px 8px}
.fail-list summary{cursor:pointer;font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
.fail-list pre{white-space:pre-wrap;word-break:break-word;font-size:12px;background:#f5f6f8;padding:6px;margin:6px 0 2px}
.badge{display:inline-block;font:600 11px system-ui,sans-serif;padding:1px 6px;border-radius:3px;margin-right:6px;color:#fff}
.s-fail{background:#c62828}.s-error{background:#6a1b9a}.s-crash{background:#000}.s-timeout{background:#e65100}
.s-unsupported{background:#546e7a}.s-pass{background:#2e7d32}.known{background:#8d6e00}
.meta{color:#5b6776;font-size:12px}
.empty{color:#5b6776;font-style:italic}
"""

JS = r"""
(function(){
  var D = JSON.parse(document.getElementById('conform-data').textContent);
  var F = {}; D.fields.forEach(function(f, i){ F[f] = i; });
  var multi = D.backends.length > 1;
  var sel = null;
  function el(tag, attrs, text){
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) { if (k === 'class') e.className = attrs[k]; else e.setAttribute(k, attrs[k]); }
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function colour(rate){ return rate >= 1 ? 'hsl(120,55%,78%)' : 'hsl(' + Math.round(95 * rate * rate) + ',75%,70%)'; }
  function pct(x){ return (100 * x).toFixed(x === 1 || x === 0 ? 0 : 1) + '%'; }
  // aggregate: family -> dtype -> backend -> [pass, total, unsupported]
  var agg = {}, famTot = {};
  D.tests.forEach(function(t){
    var f = t[F.family], d = t[F.dtype], b = t[F.backend], ok = t[F.status] === 'pass' ? 1 : 0;
    var un = t[F.status] === 'unsupported' ? 1 : 0;
    var a = ((agg[f] = agg[f] || {})[d] = agg[f][d] || {});
    var c = (a[b] = a[b] || [0, 0, 0]); c[0] += ok; c[1] += 1; c[2] += un;
    var ft = ((famTot[f] = famTot[f] || {})[b] = famTot[f][b] || [0, 0, 0]); ft[0] += ok; ft[1] += 1; ft[2] += un;
  });
  // header and cards
  document.getElementById('title').textContent = D.title;
  var sub = 'generated ' + D.generated + ' \u00b7 ' + D.tests.length + ' results \u00b7 ' +
            D.families.length + ' op families \u00b7 ' + D.dtypes.length + ' element types';
  if (D.baseline) sub += ' \u00b7 baseline ' + D.baseline;
  document.getElementById('sub').textContent = sub;
  var cards = document.getElementById('cards');
  D.backends.forEach(function(b, bi){
    var ok = 0, tot = 0, counts = {};
    D.tests.forEach(function(t){ if (t[F.backend] === bi) { tot++; if (t[F.status] === 'pass') ok++; counts[t[F.status]] = (counts[t[F.status]] || 0) + 1; } });
    var card = el('div', {'class': 'card', 'data-backend': b});
    card.appendChild(el('div', {'class': 'b'}, b));
    var r = el('div', {'class': 'rate'}, tot ? pct(ok / tot) : '-'); r.style.color = tot ? 'hsl(' + Math.round(ok / tot * 120) + ',60%,35%)' : '#555';
    card.appendChild(r);
    card.appendChild(el('div', {'class': 'counts'}, Object.keys(counts).sort().map(function(k){ return counts[k] + ' ' + k; }).join(' \u00b7 ')));
    cards.appendChild(card);
  });
  // the matrix
  var table = document.getElementById('matrix');
  var thead = el('thead'), h1 = el('tr'), h2 = el('tr');
  h1.appendChild(el('th', {'class': 'op', rowspan: multi ? 2 : 1}, 'op family'));
  var cols = [['(all)', 'total']].concat(D.dtypes.map(function(d){ return [d, 'dtype']; }));
  cols.forEach(function(c){
    var th = el('th', {colspan: multi ? D.backends.length : 1, 'class': c[1] === 'total' ? 'total' : ''}, c[0]);
    h1.appendChild(th);
    if (multi) D.backends.forEach(function(b){ h2.appendChild(el('th', {'class': 'bk'}, b)); });
  });
  thead.appendChild(h1); if (multi) thead.appendChild(h2);
  table.appendChild(thead);
  var tbody = el('tbody');
  D.families.forEach(function(f){
    var tr = el('tr', {'data-family': f});
    tr.appendChild(el('th', {'class': 'op'}, f));
    var failing = false;
    cols.forEach(function(c){
      D.backends.forEach(function(b, bi){
        var v = c[1] === 'total' ? (famTot[f] || {})[bi] : ((agg[f] || {})[c[0]] || {})[bi];
        var td;
        if (!v) { td = el('td', {'class': 'cell none'}, '\u00b7'); }
        else {
          // the pass rate of the tests that ran: unsupported is coverage, not a wrong value
          var ran = v[1] - v[2], rate = ran ? v[0] / ran : 0;
          if (ran && rate < 1) failing = true;
          td = el('td', {'class': 'cell' + (c[1] === 'total' ? ' total' : '') + (ran ? '' : ' unsupported'), 'data-op': f,
                         'data-dtype': c[1] === 'total' ? '*' : c[0], 'data-backend': b,
                         'data-pass': v[0], 'data-total': v[1], 'data-unsupported': v[2],
                         'data-rate': ran ? rate.toFixed(4) : '',
                         title: f + ' \u00b7 ' + c[0] + ' \u00b7 ' + b + ': ' + v[0] + '/' + v[1] + ' pass' +
                                (ran ? ' (' + pct(rate) + ' of those that ran)' : '') +
                                (v[2] ? ', ' + v[2] + ' unsupported' : '')},
                  v[0] + '/' + v[1]);
          if (ran) td.style.background = colour(rate);
          td.addEventListener('click', onCell);
        }
        tr.appendChild(td);
      });
    });
    tr.setAttribute('data-failing', failing ? '1' : '0');
    tbody.appendChild(tr);
  });
  table.appendChild(tbody);
  // the failures
  var list = document.getElementById('failures');
  var shown = document.getElementById('shown');
  function renderFailures(){
    list.textContent = '';
    var q = document.getElementById('q').value.toLowerCase();
    var n = 0, LIMIT = 2000;
    D.tests.forEach(function(t){
      if (t[F.status] === 'pass' && !(sel && sel.all)) return;
      var b = D.backends[t[F.backend]];
      if (sel && (t[F.family] !== sel.op || (sel.dtype !== '*' && t[F.dtype] !== sel.dtype) || b !== sel.backend)) return;
      if (q && t[F.id].toLowerCase().indexOf(q) < 0 && t[F.family].toLowerCase().indexOf(q) < 0) return;
      n++;
      if (n > LIMIT) return;
      var det = el('details', {'class': 'failure', 'data-status': t[F.status], 'data-op': t[F.family], 'data-dtype': t[F.dtype], 'data-backend': b});
      var s = el('summary');
      s.appendChild(el('span', {'class': 'badge s-' + t[F.status]}, t[F.status].toUpperCase()));
      if (t[F.known] !== null) s.appendChild(el('span', {'class': 'badge known', title: t[F.known]}, 'KNOWN'));
      s.appendChild(document.createTextNode(t[F.id] + (multi ? '  [' + b + ']' : '')));
      det.appendChild(s);
      det.appendChild(el('div', {'class': 'meta'}, 'op family ' + t[F.family] + ' \u00b7 element type ' + t[F.dtype] + ' \u00b7 backend ' + b + ' \u00b7 ' + t[F.duration] + ' s'));
      if (t[F.known] !== null) det.appendChild(el('div', {'class': 'meta'}, 'baseline: ' + t[F.known]));
      det.appendChild(el('pre', null, t[F.message] ? t[F.message].split('; ').join('\n') : '(no message)'));
      list.appendChild(det);
    });
    var what = sel ? (sel.op + ' \u00b7 ' + (sel.dtype === '*' ? 'all types' : sel.dtype) + ' \u00b7 ' + sel.backend) : 'all';
    shown.textContent = n + ' ' + (sel && sel.all ? 'tests' : 'non-passing tests') + ' (' + what + ')' + (n > LIMIT ? ', first ' + LIMIT + ' shown' : '');
    if (!n) list.appendChild(el('div', {'class': 'empty'}, 'nothing to show'));
  }
  function onCell(ev){
    var td = ev.currentTarget;
    var prev = table.querySelector('td.sel'); if (prev) prev.classList.remove('sel');
    td.classList.add('sel');
    sel = {op: td.getAttribute('data-op'), dtype: td.getAttribute('data-dtype'), backend: td.getAttribute('data-backend'),
           all: td.getAttribute('data-pass') === td.getAttribute('data-total')};
    renderFailures();
    document.getElementById('failures-h').scrollIntoView({behavior: 'smooth'});
  }
  function applyRowFilter(){
    var q = document.getElementById('q').value.toLowerCase();
    var only = document.getElementById('only-failing').checked;
    Array.prototype.forEach.call(tbody.rows, function(tr){
      var f = tr.getAttribute('data-family').toLowerCase();
      var show = (!q || f.indexOf(q) >= 0) && (!only || tr.getAttribute('data-failing') === '1');
      tr.style.display = show ? '' : 'none';
    });
  }
  document.getElementById('q').addEventListener('input', function(){ applyRowFilter(); renderFailures(); });
  document.getElementById('only-failing').addEventListener('change', applyRowFilter);
  document.getElementById('clear').addEventListener('click', function(){
    sel = null; var p = table.querySelector('td.sel'); if (p) p.classList.remove('sel'); renderFailures();
  });
  renderFailures();
  document.body.setAttribute('data-rendered', String(D.tests.length));
})();
"""

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>{title}</title>
<style>{css}</style>
</head>
<body>
<h1 id="title">{title}</h1>
<div class="sub" id="sub"></div>
<noscript><p>This report builds its tables with JavaScript; enable it to see the matrix.</p></noscript>
<div class="cards" id="cards"></div>
<h2>Pass rate by op family and element type</h2>
<div class="controls">
<input type="search" id="q" placeholder="filter op family or test id">
<label><input type="checkbox" id="only-failing"> only families with failures</label>
<span class="legend">0% <span style="background:linear-gradient(90deg,hsl(0,75%,70%),hsl(50,75%,70%),hsl(95,75%,70%),hsl(120,55%,78%))"></span> 100% of the tests that ran <span style="background:#cfd8dc"></span> only unsupported</span>
</div>
<div class="wrap"><table class="matrix" id="matrix"></table></div>
{groups}
<h2 id="failures-h">Tests <button type="button" id="clear">show all non-passing</button></h2>
<div class="meta" id="shown"></div>
<div class="fail-list" id="failures"></div>
<script type="application/json" id="conform-data">{data}</script>
<script>{js}</script>
</body>
</html>
"""


def render_html(runs: Sequence[dict], baseline: Baseline | None = None, title: str = "") -> str:
    data = report_data(runs, baseline, title)
    page = PAGE.format(title=html.escape(data["title"]), css=CSS, js=JS, data=_script_json(data),
                       groups=_groups_section(runs))
    notes = [n for n in map(incomplete_note, runs) if n]
    if notes:  # a run that did not finish says so above everything else
        banner = "".join(f'<p class="incomplete" style="background:#fde2e1;color:#8a1c13;padding:8px;'
                         f'font-weight:bold">{html.escape(n)}</p>' for n in notes)
        page = page.replace("<body>\n", "<body>\n" + banner + "\n", 1)
    return page


def _groups_section(runs: Sequence[dict]) -> str:
    """The failure groups of ``conform triage`` as a plain table (no script needed)."""
    groups = triage_runs(runs)
    if not groups:
        return ""
    e = html.escape
    rows = "".join(
        f"<tr><td>{g.count}</td><td>{e(g.signature.stage)}</td><td>{e(g.signature.op)}</td>"
        f"<td>{e(g.signature.dtype)}</td><td>{e(g.signature.message)}</td><td>{e(', '.join(g.backends))}</td>"
        f"<td>{e(str(g.example.get('id')))}</td></tr>" for g in groups)
    return ('<h2 id="groups-h">Failure groups</h2>\n<div class="wrap"><table class="groups" id="groups">'
            "<thead><tr><th>count</th><th>stage</th><th>op</th><th>element types</th><th>message</th>"
            f"<th>backends</th><th>smallest example</th></tr></thead><tbody>{rows}</tbody></table></div>")


def write_html(path: str | Path, runs: Sequence[dict], baseline: Baseline | None = None, title: str = "") -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(render_html(runs, baseline, title), encoding="utf-8")
