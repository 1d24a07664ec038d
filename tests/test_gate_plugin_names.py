"""Naming plugins (issue 39): ``conform backends`` describes only what it is
asked, a library path may hold ``?``, the plugin page's repro command runs,
libtpu is found by its names, a plugin module failing without a message
says what is missing, one line per plugin asked, and exit code 2 for a
plugin that does not load in every command.

Real plugins throughout: the lammps CPU plugin (``plugin`` fixture),
libtpu's wheel and the CUDA plugin's module from the package index
(installed once into the test cache; skipped when they cannot be had)."""

from __future__ import annotations

import fcntl
import html
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from stablehlo_conform.cli import main

LIBTPU = "libtpu==0.0.42.1"
CUDA_PJRT = "jax-cuda12-pjrt==0.12.0.1"


def conform(*args, cwd=None, env=None, timeout=300) -> subprocess.CompletedProcess:
    """The CLI in a fresh process (it inherits PYTHONPATH: the tree under test)."""
    return subprocess.run([sys.executable, "-m", "stablehlo_conform.cli", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def with_path(*folders: Path, **extra: str) -> dict:
    """The environment with ``folders`` put after the PYTHONPATH the tests run with."""
    old = os.environ.get("PYTHONPATH", "")
    return dict(os.environ, PYTHONPATH=os.pathsep.join([*filter(None, [old]), *map(str, folders)]), **extra)


def _cache(name: str) -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "stablehlo-conform" / name


def cached_wheel(requirement: str, keep, placeholders: tuple[str, ...] = ()) -> Path | None:
    """A folder holding the members of ``requirement``'s wheel that ``keep``
    accepts (and empty files at ``placeholders``), fetched once with ``pip
    download --no-deps`` into the test cache; None when it cannot be had."""
    target = _cache(requirement.replace("==", "-"))
    done = target / ".complete"
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".lock", "w") as lock:  # xdist workers fetch it once
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.is_file():
            return target
        tmp = target.with_name(target.name + f".tmp{os.getpid()}")
        try:
            p = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                                "--disable-pip-version-check", "-d", str(tmp / "wheel"), requirement],
                               capture_output=True, timeout=900)
            wheels = list((tmp / "wheel").glob("*.whl"))
            if p.returncode != 0 or len(wheels) != 1:
                return None
            with zipfile.ZipFile(wheels[0]) as z:
                z.extractall(tmp / "files", [n for n in z.namelist() if keep(n)])
            for name in placeholders:
                (tmp / "files" / name).touch()
            shutil.rmtree(target, ignore_errors=True)
            (tmp / "files").rename(target)
            done.touch()
        except (subprocess.SubprocessError, OSError, zipfile.BadZipFile):
            return None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def lines_with(text: str, word: str) -> list[str]:
    return [ln for ln in text.splitlines() if word in ln]


# --------------------------------------------------------------------------- #
# conform backends: only what is asked, within a deadline, one line, exit 2
# --------------------------------------------------------------------------- #

TOUCHED = """import os, time


def initialize():
    open(os.path.join(os.path.dirname(__file__), "touched"), "w").close()
    time.sleep({sleep})
"""


def _module_plugin(site: Path, name: str, sleep: float) -> Path:
    """An installed ``jax_plugins`` module whose ``initialize()`` leaves a
    mark beside it, then sleeps ``sleep`` seconds (registering nothing)."""
    folder = site / "jax_plugins" / name
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(TOUCHED.format(sleep=sleep))
    return folder / "touched"


def test_backends_describes_only_the_plugin_asked(plugin, tmp_path):
    """Another installed plugin is not even initialised when one plugin is
    asked for (before: every installed one was described, 120 s each)."""
    mark = _module_plugin(tmp_path / "site", "other", 0)
    r = conform("backends", f"pjrt:{plugin}", env=with_path(tmp_path / "site"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert not mark.exists(), "the plugin not asked for was loaded"
    assert len(lines_with(r.stdout, " loads: ")) == 1, r.stdout
    assert "4 x cpu" in r.stdout and "pjrt:other" not in r.stdout and "\nxla " not in r.stdout


def test_backends_waits_for_a_hanging_plugin_its_load_deadline_only(tmp_path):
    """A plugin whose initialize() never returns costs --load-timeout, then exit 2 saying so."""
    mark = _module_plugin(tmp_path / "site", "hangs", 3600)
    start = time.monotonic()
    r = conform("backends", "pjrt:hangs", "--load-timeout", "3", env=with_path(tmp_path / "site"), timeout=120)
    took = time.monotonic() - start
    assert r.returncode == 2, r.stdout + r.stderr
    assert mark.exists() and took < 90, took
    assert "pjrt:hangs (jax_plugins.hangs) does not load: its client did not start within 3 s" in r.stdout, r.stdout


def test_backends_says_once_why_the_plugin_asked_does_not_load(tmp_path):
    """One line for the library asked, naming its path (in front, or in
    the reason where the loader's message names it), the reason once; an
    installed plugin that does not load either is not described beside it."""
    asked = tmp_path / "libvendor.so"
    asked.write_bytes(b"not a library\n")
    env = with_path(PJRT_NAMES_AND_LIBRARY_PATHS=f"broken:{tmp_path / 'libbroken.so'}")
    r = conform("backends", f"pjrt:{asked}", env=env)
    assert r.returncode == 2, r.stdout + r.stderr
    failing = lines_with(r.stdout, "does not load")
    assert len(failing) == 1, r.stdout
    assert failing[0].startswith("pjrt:vendor ") and str(asked) in failing[0], failing[0]
    assert failing[0].count("does not load") == 1 and "error:" not in failing[0] and "broken" not in r.stdout


def test_a_plugin_that_does_not_load_exits_2_in_every_command_and_the_help_says_so(tmp_path):
    """backends as eval (and every other command): 2, a usage error; the help of the CLI and
    of plugin-report says 2 for it, not 1."""
    bad = tmp_path / "libnothing.so"
    bad.write_bytes(b"")
    prog = tmp_path / "p.mlir"
    prog.write_text("func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n  return %x : tensor<2xf32>\n}\n")
    for args in (["backends", f"pjrt:{bad}"], ["eval", prog, "--backend", f"pjrt:{bad}"]):
        r = conform(*args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert "pjrt:nothing" in r.stdout + r.stderr and "does not load" in r.stdout + r.stderr
    top, page, listing = (" ".join(CliRunner().invoke(main, [*cmd, "--help"]).output.split())
                          for cmd in ([], ["plugin-report"], ["backends"]))
    assert "2 usage error (a backend that is not installed or does not load is one)" in top, top
    assert "2 when the client does not load" in page and "(or the client does not load)" not in page, page
    assert "Exit code 2 when a client named in NAMES does not load" in listing, listing


# --------------------------------------------------------------------------- #
# Names: a path holding '?', libtpu by its names, the CUDA plugin's reason
# --------------------------------------------------------------------------- #


def _linked(plugin: Path, to: Path) -> Path:
    """The real plugin under another name (a hard link, else a copy)."""
    to.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(plugin, to)
    except OSError:
        shutil.copyfile(plugin, to)
    return to


def test_a_library_path_holding_a_question_mark_is_taken_whole(plugin, tmp_path, interpret):
    """``pjrt:DIR/plug?in.so`` loads, with create options after its own
    ``?``; conform run uses it (before: "no PJRT plugin library at DIR/plug")."""
    lib = _linked(plugin, tmp_path / "odd?dir" / "plug?in.so")
    out = tmp_path / "d.json"
    r = conform("backends", f"pjrt:{lib}?cpu_device_count=2", "--json", out)
    assert r.returncode == 0, r.stdout + r.stderr
    (desc,) = json.loads(out.read_text())
    assert desc["loads"] and desc["devices"] == 2 and desc["library"] == str(lib), desc
    r = conform("run", interpret / "abs.mlir", "--backend", f"pjrt:{lib}", "-q", "-j", "1")
    assert r.returncode == 0 and "pass" in r.stdout, r.stdout + r.stderr


def test_libtpu_is_found_by_its_names(tmp_path):
    """With libtpu's wheel on the path, ``pjrt:libtpu`` and JAX's name
    ``pjrt:tpu`` are its library (without a TPU here: its own failure to
    make a client, not "none installed")."""
    site = cached_wheel(LIBTPU, lambda n: n in ("libtpu/__init__.py", "libtpu/libtpu.so"))
    if site is None:
        pytest.skip(f"{LIBTPU} cannot be fetched here")
    library = site / "libtpu" / "libtpu.so"
    r = conform("backends", "pjrt:libtpu", "pjrt:tpu", env=with_path(site), timeout=240)
    described = [ln for ln in r.stdout.splitlines() if ln.startswith(("pjrt:libtpu ", "pjrt:tpu "))]
    assert len(described) == 2, r.stdout + r.stderr
    for line in described:
        assert "no PJRT plugin named" not in line and "none installed" not in line, line
        assert f"({library}) does not load: " in line or (" loads: " in line and str(library) in r.stdout), line
    assert r.returncode in (0, 2)


def test_the_cuda_plugin_without_its_companion_package_says_what_is_missing(tmp_path):
    """The CUDA plugin's own module (from its wheel; its 480 MB library is
    an empty file here: the module fails before it loads it) without
    jax-cuda12-plugin: the assertion that fails and the module missing are
    said, not "AssertionError: " alone."""
    site = cached_wheel(CUDA_PJRT, lambda n: n.endswith(".py") or ".dist-info/" in n,
                        ("jax_plugins/xla_cuda12/xla_cuda_plugin.so",))
    if site is None:
        pytest.skip(f"{CUDA_PJRT} cannot be fetched here")
    r = conform("backends", "pjrt:xla_cuda12", env=with_path(site))
    assert r.returncode == 2, r.stdout + r.stderr
    (line,) = lines_with(r.stdout, "does not load")
    assert "AssertionError without a message at " in line and "(assert cuda_versions is not None)" in line, line
    assert re.search(r"not installed: .*\bjax_cuda12_plugin\b", line), line


# --------------------------------------------------------------------------- #
# The plugin page's repro command runs as shown
# --------------------------------------------------------------------------- #


def _page_commands(page: Path) -> list[tuple[str, str]]:
    """(shown, copied) of every repro command on the plugin page."""
    text = page.read_text()
    shown = [html.unescape(m) for m in re.findall(r'<code class="cmd"[^>]*>([^<]*)</code>', text)]
    copied = [html.unescape(m) for m in re.findall(r'class="copy" data-cmd="([^"]*)"', text)]
    return list(zip(shown, copied, strict=True))


@pytest.mark.parametrize("installed", [False, True], ids=["by-path", "package-on-path"])
def test_the_repro_command_the_plugin_page_shows_runs_from_the_suite_folder(plugin, tmp_path, interpret, installed):
    """plugin-report on a small suite folder with the real plugin; the
    command its page shows (the one the copy button copies), run from the
    folder the report was made in, runs that test with the same outcome. The
    plugin by its path, or by its package's name where the package is
    importable (then the page names it so)."""
    suite = tmp_path / "suite"
    (suite / "sub").mkdir(parents=True)
    shutil.copy(interpret / "add.mlir", suite / "sub" / "add.mlir")
    env = with_path(plugin.parent.parent) if installed else None
    r = conform("plugin-report", f"pjrt:{plugin}", "sub", "--versions", "0", "-j", "1", "-q", "-o", tmp_path / "out",
                cwd=suite, env=env)
    assert r.returncode in (0, 1), r.stdout + r.stderr
    commands = _page_commands(tmp_path / "out" / "report.html")
    assert commands, "the page shows no repro command"
    shown, copied = commands[0]
    argv = shlex.split(shown)
    assert argv[:2] == ["conform", "run"], shown
    results = {x["id"]: x for x in json.loads((tmp_path / "out" / "report.json").read_text())["results"]}
    test_id = next(i for i in results if i.endswith("::" + argv[argv.index("-k") + 1].split("::")[-1]))
    again = conform(*argv[1:], cwd=suite, env=env)
    assert again.returncode in (0, 1), again.stdout + again.stderr
    assert re.search(rf"^1 tests in 1 files \([^)]*\): 1 {results[test_id]['status']}$", again.stdout, re.M), \
        again.stdout
    assert shown == copied
    by_name = installed or importlib.util.find_spec(plugin.parent.name) is not None
    assert argv[argv.index("--backend") + 1] == ("pjrt:" + plugin.parent.name if by_name else f"pjrt:{plugin}")
