"""The HTML report: self-contained, and its matrix renders in a real browser
(headless Chromium; the screenshot is kept under artifacts/)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from stablehlo_conform.cli import main
from stablehlo_conform.harness.records.gate import Baseline, BaselineEntry
from stablehlo_conform.harness.reports.html import dtype_sort_key, render_html, report_data

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts"
INSTALL_HINT = "Chromium is not installed; install it with: apt-get update && apt-get install -y chromium"


def _rec(test, family, dtype, status, backend, message=""):
    return {"id": f"suite/{family.split('.')[-1]}.mlir::{test}", "status": status, "family": family,
            "dtypes": [dtype] if dtype else [], "backend": backend, "message": message, "duration": 0.01}


def two_backends():
    """numpy passes everything; the vendor fails one i16 add of two, one
    maximum on f32, and cannot run the bf16 maximum."""
    tests = [("add_i16_a", "stablehlo.add", "i16"), ("add_i16_b", "stablehlo.add", "i16"),
             ("add_f32", "stablehlo.add", "f32"), ("max_f32", "stablehlo.maximum", "f32"),
             ("max_bf16", "stablehlo.maximum", "bf16"), ("max_i1", "stablehlo.maximum", "i1")]
    numpy = {"backend": "numpy", "paths": ["suite"], "results": [_rec(t, f, d, "pass", "numpy") for t, f, d in tests]}
    vendor_status = {"add_i16_b": ("fail", "suite/add.mlir:9:3: check.expect_eq_const: 3/3 elements differ; "
                                           "first at index [0]: actual 4, expected 3"),
                     "max_f32": ("fail", "check.expect_close: 1/2 elements differ; first at index [1]: "
                                         "actual 1.0000001, expected 1.0 (1 ULP) </script><b>x</b>"),
                     "max_bf16": ("unsupported", "unsupported: stablehlo.maximum (bf16)")}
    vendor = {"backend": "vendor", "paths": ["suite"], "results": [
        _rec(t, f, d, vendor_status.get(t, ("pass", ""))[0], "vendor", vendor_status.get(t, ("pass", ""))[1])
        for t, f, d in tests]}
    return numpy, vendor


def test_report_data_and_dtype_order():
    numpy, vendor = two_backends()
    d = report_data([numpy, vendor])
    assert d["backends"] == ["numpy", "vendor"]
    assert d["families"] == ["stablehlo.add", "stablehlo.maximum"]
    assert d["dtypes"] == ["i1", "i16", "bf16", "f32"]
    assert len(d["tests"]) == 12
    assert sorted(["complex<f32>", "f64", "ui8", "i8", "f8E4M3FN", "i1", "-"], key=dtype_sort_key) == \
        ["i1", "i8", "ui8", "f8E4M3FN", "f64", "complex<f32>", "-"]


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_page_is_self_contained():
    numpy, vendor = two_backends()
    page = render_html([numpy, vendor], title="Vendor <conformance>")
    p = _Collect()
    p.feed(page)
    tags = [t for t, _ in p.tags]
    # no external resource of any kind: inline style and script only
    assert all("src" not in a and "href" not in a for _t, a in p.tags)
    assert "link" not in tags and tags.count("style") == 1
    assert not re.search(r"https?://", page)
    assert "<title>Vendor &lt;conformance&gt;</title>" in page
    # the message with markup cannot close the data script early
    data = page.split('<script type="application/json" id="conform-data">', 1)[1].split("</script>", 1)[0]
    assert "</script>" not in data
    assert any(t[5].endswith("</script><b>x</b>") for t in json.loads(data)["tests"])


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def _chromium_args(tmp: Path) -> list[str]:
    return ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-dev-shm-usage", f"--user-data-dir={tmp / 'profile'}", "--window-size=1280,900"]


def test_matrix_renders_in_headless_chromium(tmp_path):
    chromium = _chromium()
    if chromium is None:
        print(INSTALL_HINT)
        pytest.skip(INSTALL_HINT)
    numpy, vendor = two_backends()
    for doc in (numpy, vendor):
        (tmp_path / f"{doc['backend']}.json").write_text(json.dumps(doc))
    b = tmp_path / "known.json"
    bl = Baseline(backend="vendor")
    bl.add(BaselineEntry("suite/maximum.mlir::max_bf16", "bf16 maximum not implemented yet"))
    bl.save(b)
    page = tmp_path / "report.html"
    r = CliRunner().invoke(main, ["report", str(tmp_path / "numpy.json"), str(tmp_path / "vendor.json"),
                                  "--html", str(page), "--baseline", str(b), "--title", "Vendor conformance"])
    assert r.exit_code == 0, r.output
    url = page.resolve().as_uri()
    dom = subprocess.run([chromium, *_chromium_args(tmp_path), "--dump-dom", url],
                         capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    # the inline script ran and built the matrix
    assert 'data-rendered="12"' in html
    cells = re.findall(r'<td class="cell( total)?(?: unsupported)?" data-op="([^"]+)" data-dtype="([^"]+)" '
                       r'data-backend="([^"]+)" data-pass="(\d+)" data-total="(\d+)"', html)
    table = {(op, dt, be): (int(p), int(t)) for _tot, op, dt, be, p, t in cells}
    assert table[("stablehlo.add", "i16", "numpy")] == (2, 2)
    assert table[("stablehlo.add", "i16", "vendor")] == (1, 2)
    assert table[("stablehlo.maximum", "*", "vendor")] == (1, 3)
    assert table[("stablehlo.maximum", "bf16", "vendor")] == (0, 1)
    # (total + i16 + f32 for add, total + i1 + bf16 + f32 for maximum) x 2 backends
    assert len(cells) == (3 + 4) * 2
    assert html.count('class="cell none"') == (2 + 1) * 2  # add has no i1/bf16, maximum no i16
    # cells are coloured by pass rate: green at 100 %, red at 0 %; unsupported only: grey, not red
    green = re.search(r'data-backend="numpy" data-pass="2" data-total="2"[^>]*style="background: ([^"]+)"', html)
    red = re.search(r'data-dtype="i16" data-backend="vendor"[^>]*style="background: ([^"]+)"', html)
    assert green and red and green.group(1) != red.group(1)
    assert "rgb(" in red.group(1) or "hsl(" in red.group(1)
    assert re.search(r'<td class="cell unsupported" data-op="stablehlo.maximum" data-dtype="bf16" '
                     r'data-backend="vendor"[^>]*>', html)
    # every non-passing test is listed, expandable, with its message; baselined ones are marked
    fails = re.findall(r'<details class="failure" data-status="(\w+)"', html)
    assert sorted(fails) == ["fail", "fail", "unsupported"]
    assert "first at index [0]: actual 4, expected 3" in html
    assert ">KNOWN<" in html and "bf16 maximum not implemented yet" in html
    # a screenshot for people, kept as an artifact
    shot = tmp_path / "report.png"
    p = subprocess.run([chromium, *_chromium_args(tmp_path), f"--screenshot={shot}", url],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and shot.exists(), p.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copy(shot, ARTIFACTS / "html_report.png")
    shutil.copy(page, ARTIFACTS / "html_report.html")
