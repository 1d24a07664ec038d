"""The README and the documentation site: a short README that starts a new
user (install, activate, first run, gate a plugin that exists, where to read
on) with links that resolve; a site that builds with ``mkdocs build --strict``
(broken links, missing anchors and pages left out of the nav fail it); a
command-line reference that is what the commands say; and the guarantee
tables of the gate page naming tests that exist."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import click
import yaml
from markdown.extensions.toc import slugify

from stablehlo_conform.cli import main as conform_main

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
CLI_PAGE = DOCS / "cli.md"
GATE_PAGE = DOCS / "gate.md"
BIN = Path(sys.executable).parent
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def _sh_lines(text: str) -> list[str]:
    """Every line of the ``sh`` code blocks of a Markdown text."""
    return [ln for block in re.findall(r"```sh\n(.*?)```", text, re.S) for ln in block.splitlines()]


def _anchors(page: Path) -> set[str]:
    """The heading anchors MkDocs gives a page (its toc extension's slugify)."""
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return {slugify(re.sub(r"[`*]", "", h).strip(), "-") for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}


def _nav_pages() -> set[str]:
    """The Markdown files named in mkdocs.yml's nav."""
    def walk(node):
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            for v in node.values():
                yield from walk(v)
        elif isinstance(node, list):
            for v in node:
                yield from walk(v)
    return set(walk(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]))


def _mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
                          capture_output=True, text=True, timeout=300, env=env, cwd=config.parent)


# --------------------------------------------------------------------------- #
# the README
# --------------------------------------------------------------------------- #

def test_readme_is_short_and_says_how_to_install_activate_and_test():
    """What it is, install (the two set-up commands .ci/run relies on), activating
    .venv, how long the tests take, first run, gate a plugin, where to read on."""
    text = README.read_text()
    assert len(text.splitlines()) <= 150
    headings = re.findall(r"^## (.+)$", text, re.M)
    assert headings[:5] == ["Install", "First run", "Gate a plugin", "Speed", "Where to read on"], headings
    assert "```sh\nscripts/dev.sh run\n```" in text and "```sh\nscripts/dev.sh test\n```" in text
    assert (ROOT / ".ci" / "run").read_text().rstrip().splitlines()[-1] == "scripts/dev.sh test"
    assert "source .venv/bin/activate" in _sh_lines(text)
    assert re.search(r"tests take about \d+ to \d+ minutes on a 2-core machine", text)
    assert "pjrt:gpu" not in text


def test_readme_shows_the_zoo_benchmark_for_every_model():
    """The Speed section: the benchmark's command and a row per zoo model, warm and cold."""
    text = README.read_text()
    speed = text[text.index("## Speed"):text.index("## Where to read on")]
    assert "scripts/bench_models.py --zoo" in speed
    models = sorted(p.name.split(".")[0] for p in (ROOT / "testsuite" / "models").glob("*.recipe.json"))
    rows = re.findall(r"^\| (\w+) \| [\d.]+ ms \| [\d.]+ ms \| [\d.]+x \| [\d.]+x \|$", speed, re.M)
    assert len(models) >= 20 and rows == models

def test_readme_links_resolve_and_reach_every_page_of_the_site():
    """Every relative link of the README names an existing file (and, for a
    docs page, an existing heading); together they reach every page of the nav."""
    targets = [t for t in LINK.findall(README.read_text()) if not re.match(r"[a-z]+:", t)]
    assert targets
    for target in targets:
        path, _, anchor = target.partition("#")
        file = (ROOT / path).resolve()
        assert file.exists(), f"README.md links to {target}, which does not exist"
        if anchor:
            assert anchor in _anchors(file), f"README.md links to {target}: no such heading"
    linked = {Path(t.partition("#")[0]).relative_to("docs").as_posix() for t in targets if t.startswith("docs/")}
    assert _nav_pages() - {"index.md"} <= linked, _nav_pages() - linked


def test_readme_plugin_commands_run_on_the_plugin_they_name(plugin, tmp_path):
    """The README's 'gate a plugin' lines find the CPU plugin's library as the
    README says and load it; every probe-precision example (README and docs)
    names a backend that exists and runs (on b6ed491 the README's
    `probe-precision pjrt:gpu` named none)."""
    lines = _sh_lines(README.read_text())
    find = next((ln for ln in lines if ln.startswith("PLUGIN=$(python")), None)
    every_page = lines + [ln for page in sorted(DOCS.glob("*.md")) for ln in _sh_lines(page.read_text())]
    checks = list(dict.fromkeys([ln for ln in every_page if ln.startswith("conform probe-precision ")]
                                + [ln for ln in lines if ln.startswith("conform backends pjrt:")]))
    assert any("backends" in c for c in checks) and any("probe-precision" in c for c in checks)
    # the package holding the library is importable as after `pip install --no-deps lammps-jax-pjrt-cpu`
    pythonpath = os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(plugin.parent.parent)]))
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", PYTHONPATH=pythonpath)
    for cmd in checks:
        script = f"set -e; {find}; test \"$PLUGIN\" -ef {plugin}; {cmd}" if find else cmd
        p = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, (cmd, p.stdout[-3000:], p.stderr[-3000:])
        assert "does not load" not in p.stdout + p.stderr, (cmd, p.stdout)
    assert find, "the README does not say how to find the plugin's library"


# --------------------------------------------------------------------------- #
# the site
# --------------------------------------------------------------------------- #

def test_docs_site_builds_strict_with_every_page_in_the_nav(tmp_path):
    """``mkdocs build --strict`` passes; every Markdown page of docs/ is in the nav."""
    p = _mkdocs_build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert p.returncode == 0, p.stdout + p.stderr
    assert {f.name for f in DOCS.glob("*.md")} == _nav_pages()
    gate = (tmp_path / "site" / "gate" / "index.html").read_text()
    assert 'id="what-each-command-guarantees"' in gate
    assert (tmp_path / "site" / "cli" / "index.html").is_file()


def test_docs_build_fails_on_a_broken_link_a_missing_anchor_or_a_page_out_of_the_nav(tmp_path):
    """The site's configuration really checks links: a copy with a broken link,
    a link to a missing heading and an orphan page fails the strict build."""
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(DOCS, tmp_path / "docs")
    with open(tmp_path / "docs" / "index.md", "a") as f:
        f.write("\n[gone](no-such-page.md) [anchor](gate.md#no-such-heading)\n")
    (tmp_path / "docs" / "orphan.md").write_text("# Orphan\n")
    p = _mkdocs_build(tmp_path / "mkdocs.yml", tmp_path / "site")
    out = p.stdout + p.stderr
    assert p.returncode != 0, out
    assert "no-such-page.md" in out and "no-such-heading" in out and "orphan.md" in out, out


# --------------------------------------------------------------------------- #
# the command-line reference
# --------------------------------------------------------------------------- #

def _commands(cmd: click.Command, path: tuple[str, ...] = ("conform",), parent=None):
    ctx = click.Context(cmd, info_name=path[-1], parent=parent)
    yield path, cmd
    if isinstance(cmd, click.Group):
        for name in cmd.list_commands(ctx):
            yield from _commands(cmd.get_command(ctx, name), path + (name,), ctx)


def test_cli_reference_is_what_the_commands_say():
    """docs/cli.md is the generator's output for today's commands (so it cannot
    go stale), and each command's section names every one of its options."""
    p = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_cli_docs.py"), "--check"],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert p.returncode == 0, p.stdout + p.stderr
    sections = dict(re.findall(r"^## (conform[^\n]*)\n(.*?)(?=^## |\Z)", CLI_PAGE.read_text(), re.S | re.M))
    commands = list(_commands(conform_main))
    assert len(commands) > 10 and set(sections) == {" ".join(path) for path, _ in commands}
    for path, cmd in commands:
        body = sections[" ".join(path)]
        for param in cmd.params:
            if isinstance(param, click.Option) and not param.hidden:
                for opt in param.opts + param.secondary_opts:
                    assert re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", body), (path, opt)


# --------------------------------------------------------------------------- #
# the guarantee tables
# --------------------------------------------------------------------------- #

def _defined_tests(file: str | None = None) -> set[str]:
    """The test functions of tests/FILE, or of every test file."""
    files = [ROOT / "tests" / file] if file else (ROOT / "tests").glob("test_*.py")
    return {m for f in files if f.is_file() for m in re.findall(r"^\s*(?:async\s+)?def (test_\w+)", f.read_text(), re.M)}


TEST_NAME = re.compile(r"`(?:tests/)?(?:(test_\w+\.py)::)?(test_\w+?)(\.\.\.)?`")


def _named_tests_exist(cell: str) -> int:
    """Asserts each test a table cell or promise names exists (in the file it names, if any); returns how many."""
    names = TEST_NAME.findall(cell)
    for file, name, prefix in names:
        defined = _defined_tests(file or None)
        assert (any(t.startswith(name) for t in defined) if prefix else name in defined), (file, name, cell)
    return len(names)


def test_every_guarantee_names_tests_that_exist():
    """Each row of "What each command guarantees" (promise | commands | test) and
    each promise of "What the gate guarantees" names tests that exist (a name
    ending in ``...`` is a prefix), so the tables stay pinned to tests."""
    text = GATE_PAGE.read_text()
    gate, commands = text.split("## What the gate guarantees", 1)[1].split("### What each command guarantees", 1)
    rows = [r for r in commands.splitlines() if r.startswith("| ") and not r.startswith("| Promise")]
    assert "| Promise | Commands | Test |" in commands and len(rows) >= 8
    for row in rows:
        cells = [c.strip() for c in row.strip().strip("|").split(" | ")]
        assert len(cells) == 3 and all(cells), row
        assert _named_tests_exist(cells[2]), row
    promises = [p for p in re.split(r"\n- ", gate) if p.startswith("**")]
    assert len(promises) >= 8
    for promise in promises:
        assert _named_tests_exist(promise), promise
