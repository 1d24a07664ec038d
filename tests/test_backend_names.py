"""A backend name is parsed in one place (records/names.py: BackendName) and every reader
takes its parts from there."""

from __future__ import annotations

import re
from pathlib import Path

from stablehlo_conform.harness.backends.pjrt import parse_name, reusable_name
from stablehlo_conform.harness.records.names import BackendName, display_name, plugin_name, shorten_names

PKG = Path(__file__).resolve().parents[1] / "stablehlo_conform"


def test_builtin_and_plugin_names_are_their_own_target():
    for text in ("numpy", "xla", "my_vendor_backend"):
        n = BackendName.parse(text)
        assert (n.target, n.query, n.is_pjrt, n.display, n.plugin, str(n)) == (text, "", False, text, text, text)


def test_a_pjrt_name_splits_into_target_and_query():
    n = BackendName.parse("pjrt:cuda?device=1&stablehlo=1.8")
    assert (n.target, n.query, n.has_query, n.is_path) == ("cuda", "device=1&stablehlo=1.8", True, False)
    assert n.display == "pjrt:cuda?device=1&stablehlo=1.8" and n.plugin == "pjrt:cuda"
    spec = parse_name(n.text)
    assert (spec.target, spec.device, spec.stablehlo) == ("cuda", 1, "1.8.0")


def test_a_library_path_is_shown_by_its_package_or_file_name(tmp_path):
    pkg = tmp_path / "jax_plugins" / "acme_pjrt"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    lib = pkg / "libacme.so"
    lib.write_bytes(b"")
    loose = tmp_path / "libother.so.2.1"
    loose.write_bytes(b"")
    assert display_name(f"pjrt:{lib}?device=2") == "pjrt:acme_pjrt?device=2"
    assert plugin_name(f"pjrt:{lib}?device=2") == "pjrt:acme_pjrt"
    assert display_name(f"pjrt:{loose}") == "pjrt:other"
    assert display_name(f"pjrt:{loose}?") == "pjrt:other?"  # an empty query is kept as given
    # a message that names the library alone reads with the plugin's name
    text = f"{lib} failed to compile; pjrt:{lib}?device=2 crashed"
    assert shorten_names(text, [f"pjrt:{lib}?device=2"]) == "acme_pjrt failed to compile; pjrt:acme_pjrt?device=2 crashed"
    # a name that no installed package holds is given back as it is
    assert reusable_name(f"pjrt:{loose}") == f"pjrt:{loose}"


def test_a_question_mark_inside_an_existing_library_path_belongs_to_the_path(tmp_path):
    odd = tmp_path / "a?b"
    odd.mkdir()
    lib = odd / "libx.so"
    lib.write_bytes(b"")
    n = BackendName.parse(f"pjrt:{lib}?device=1")
    assert (n.target, n.query) == (str(lib), "device=1")
    assert BackendName.parse(f"pjrt:{lib}").target == str(lib)
    # the same text where the file does not exist: the first '?' starts the query
    gone = BackendName.parse(f"pjrt:{tmp_path}/c?d/liby.so")
    assert (gone.target, gone.query) == (f"{tmp_path}/c", "d/liby.so")


def test_no_other_module_cuts_a_backend_name_by_hand():
    cut = re.compile(r"""partition\(\s*["']\?["']\s*\)|split\(\s*["']\?["']""")
    found = [f"{p.relative_to(PKG)}" for p in PKG.rglob("*.py") if cut.search(p.read_text())
             and p != PKG / "harness" / "records" / "names.py"]
    assert not found, found
