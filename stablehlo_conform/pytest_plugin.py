"""pytest plugin: StableHLO test programs as pytest tests.

Installed with the package (entry point ``pytest11``) but inert until asked:
it collects ``*.mlir`` (and bytecode: ``.mlirbc``, ``.bc``, ``.vhlo``) files

- under every path given, with ``--conform`` (or ``-p stablehlo_conform`` on
  the command line, or ``conform = true`` in the ini file), e.g.
  ``pytest --conform ../shared/stablehlo-suite/interpret``;
- always, for program files named explicitly on the command line
  (``pytest path/to/add.mlir``).

So the project's own ``pytest tests/`` collects no program.

Each test function of a file (a public function without arguments that
nobody calls) is one item, named and numbered exactly as ``conform run``
names it (``add.mlir::add_op_test_si32``); a file without such a function
contributes its programs with arguments (RUN-line ``--args`` checked against
its CHECK lines, or generated inputs) as ``conform run`` does; a chunk that
does not parse is an item that fails with the diagnostics.

Options: ``--conform-backend NAME`` (default ``numpy``; any installed
backend, see ``conform backends``, or ``pjrt:PATH.so`` / ``pjrt:NAME``), ``--conform-baseline FILE`` (a baseline
from ``conform baseline update``), ``--conform-timeout SECONDS``.

Outcomes: ``pass`` passes. Every other status (``fail``, ``error``,
``unsupported``, ``timeout``) fails the item with the tool's message
(first differing index, values, ULP distance), unless the baseline lists
the test: then it is reported as xfailed with the baseline's reason. An
unsupported op is a failure, not a skip: a backend that cannot run a test
does not conform; baseline it to accept it. A listed test that passes now
passes (it is named in the summary as newly passing).

Items are collected in the pytest process and run as ``conform run`` runs
a test: in a worker process kept from item to item (the runner's, see
:mod:`.harness.suite.runner`), so a kernel that runs past ``--conform-timeout`` is
stopped and fails as a timeout, a native crash fails its item, a test whose
allocations go over ``--conform-max-memory`` fails with the budget named,
and the session goes on with a fresh worker. Works with ``pytest -n N``:
every worker collects the same items in the same order (and has a worker
process of its own).
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Any

import pytest

from .frontend import memory_budget
from .harness.backends import BackendUnavailable, check_name
from .harness.records.gate import Baseline, GateError
from .harness.records.guard import GuardError, check_input
from .harness.records.result import Result, Status, describe_failure, replace

SUFFIXES = (".mlir", ".mlirbc", ".bc", ".vhlo")
PLUGIN_NAME = "stablehlo_conform"

_baseline_key = pytest.StashKey[Any]()
_options_key = pytest.StashKey[Any]()
_pool_key = pytest.StashKey[list]()  # the worker processes that run the items (see _run_in_worker)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("stablehlo-conform", "StableHLO conformance (stablehlo-conform)")
    group.addoption("--conform", action="store_true", default=False,
                    help="Collect StableHLO test programs (*.mlir, bytecode) under the given paths.")
    group.addoption("--conform-backend", default=None, metavar="NAME",
                    help="Backend that runs the programs (default: numpy; see 'conform backends'; pjrt:PATH.so).")
    group.addoption("--conform-baseline", default=None, metavar="FILE",
                    help="Expected failures: listed tests that do not pass are xfailed with the reason.")
    group.addoption("--conform-timeout", default=None, type=float, metavar="SECONDS",
                    help="Seconds per test program (default 60, 0: none); a kernel past it is stopped.")
    group.addoption("--conform-max-memory", default=None, type=float, metavar="MIB",
                    help="Memory budget per constant and op result, and of what a test allocates beyond "
                         "what its worker held (temporaries included; plus 64 MiB), in MiB "
                         "(default: a quarter of RAM; 0: none).")
    group.addoption("--conform-accuracy-profile", default=None, metavar="FILE",
                    help="ULP bounds per op and element type (TOML or JSON) for the accuracy classes.")
    parser.addini("conform", type="bool", default=False,
                  help="Collect StableHLO test programs under the given paths (like --conform).")
    parser.addini("conform_backend", default="numpy", help="Backend for StableHLO test programs.")
    parser.addini("conform_baseline", default="", help="Baseline of expected failures.")


def _asked_by_p(config: pytest.Config) -> bool:
    args = [str(a) for a in (config.invocation_params.args or ())]
    for i, a in enumerate(args):
        if a == "-p" and i + 1 < len(args) and args[i + 1] == PLUGIN_NAME:
            return True
        if a in (f"-p{PLUGIN_NAME}", f"--plugin={PLUGIN_NAME}"):
            return True
    return False


def _enabled(config: pytest.Config) -> bool:
    return bool(config.getoption("conform") or config.getini("conform") or _asked_by_p(config))


def _backend_name(config: pytest.Config) -> str:
    return config.getoption("conform_backend") or config.getini("conform_backend") or "numpy"


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_baseline_key] = None
    config.stash[_pool_key] = []
    path = config.getoption("conform_baseline") or config.getini("conform_baseline")
    if path:
        try:
            config.stash[_baseline_key] = Baseline.load(path)
        except GateError as e:
            raise pytest.UsageError(f"--conform-baseline: {e}") from None
    backend = _backend_name(config)
    if backend != "numpy" and (_enabled(config) or any(
            str(a).split("::")[0].endswith(SUFFIXES) for a in config.args)):
        try:
            check_name(backend)
        except BackendUnavailable as e:
            raise pytest.UsageError(f"--conform-backend: {e}") from None
    config.addinivalue_line("markers", "conform: a StableHLO test program run by stablehlo-conform")


def _explicit(file_path: Path, config: pytest.Config) -> bool:
    """``file_path`` was named on the command line."""
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        return False
    target = file_path.resolve()
    for a in config.args:
        p = Path(str(a).split("::")[0])
        if not p.is_absolute():
            p = config.invocation_params.dir / p
        try:
            if p.resolve() == target:
                return True
        except OSError:
            continue
    return False


def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    if file_path.suffix not in SUFFIXES:
        return None
    config = parent.config
    if not (_enabled(config) or _explicit(file_path, config)):
        return None
    return ProgramFile.from_parent(parent, path=file_path)


# loading ----------------------------------------------------------------------

class _Loaded:
    """The tests and load errors of one file (as ``conform run`` sees them:
    constants over the memory budget are refused while loading)."""

    def __init__(self, path: str, max_bytes: int | None):
        from .harness.suite.cases import enumerate_file  # loads mpmath: kept here for start-up time

        with memory_budget(max_bytes):
            cases = enumerate_file(path)
        self.errors: list[Result] = cases.errors
        self.tests: list[tuple[str, Any, Any]] = [  # (name, module, func)
            (tid.rsplit("::", 1)[1], mod, f) for tid, mod, f in cases.tests]
        self.programs: list[tuple[str, Any, Any]] = [  # (name, module, program case)
            (tid.rsplit("::", 1)[1], mod, c) for tid, mod, c in cases.programs]


_CACHE: OrderedDict[str, _Loaded] = OrderedDict()
_CACHE_SIZE = 2


def _budget(config: pytest.Config) -> int | None:
    from .harness.suite.cases import memory_budget_bytes  # loads mpmath: kept here for start-up time

    return memory_budget_bytes(config.getoption("conform_max_memory", None))


def _load(path: str, config: pytest.Config) -> _Loaded:
    hit = _CACHE.get(path)
    if hit is not None:
        _CACHE.move_to_end(path)
        return hit
    loaded = _Loaded(path, _budget(config))
    _CACHE[path] = loaded
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return loaded


class ProgramFile(pytest.File):
    """A StableHLO program file: one item per test function."""

    def collect(self):
        loaded = _load(str(self.path), self.config)
        for rec in loaded.errors:
            yield ProgramItem.from_parent(self, name=rec.id.rsplit("::", 1)[1], load_error=rec)
        for name, _mod, func in loaded.tests:
            yield ProgramItem.from_parent(self, name=name, line=func.loc.line)
        for name, _mod, case in loaded.programs:
            yield ProgramItem.from_parent(self, name=name, line=case.func.loc.line, program=True)


class ConformFailure(Exception):
    """A test program that did not pass."""

    def __init__(self, rec: Result):
        super().__init__(rec.message)
        self.rec = rec


def pytest_unconfigure(config: pytest.Config) -> None:
    pool = config.stash.get(_pool_key, None)
    if pool:
        from .harness.suite.runner import close_pool  # loads mpmath: kept here for start-up time

        close_pool(pool)


def _options(config: pytest.Config):
    """The session's options (one set: the workers of the pool were started with it)."""
    opts = config.stash.get(_options_key, None)
    if opts is None:
        opts = config.stash[_options_key] = _new_options(config)
    return opts


def _new_options(config: pytest.Config):
    from .harness.suite.cases import Options  # loads mpmath: kept here for start-up time

    t = config.getoption("conform_timeout")
    timeout = 60.0 if t is None else (t or None)
    path = config.getoption("conform_accuracy_profile", None)
    profile = None
    if path:
        from .oracle.classes import accuracy_profile_option  # loads mpmath: kept here for start-up time

        try:  # a regular file within the bound of inputs, before it is read
            check_input(path, "--conform-accuracy-profile")
        except GuardError as e:
            raise pytest.UsageError(str(e)) from None
        profile = accuracy_profile_option(path, pytest.UsageError)
    return Options(backend=_backend_name(config), timeout=timeout, load_timeout=timeout, max_bytes=_budget(config),
                   accuracy_profile=profile)


def _run_in_worker(item: ProgramItem) -> Result:
    """The record of ``item``, run as ``conform run`` runs a test: in a worker
    process (kept from item to item), so a kernel past ``--conform-timeout``
    is stopped (the worker with it), a native crash or a test over
    ``--conform-max-memory`` ends in that item's record, and the session goes
    on with a fresh worker."""
    from .harness.suite.runner import Runner  # loads mpmath: kept here for start-up time

    path = str(item.path)
    loaded = _load(path, item.config)
    ids = [r.id for r in loaded.errors] + [f"{path}::{n}" for n, _m, _f in loaded.tests + loaded.programs]
    mine = f"{path}::{item.name}"
    gone = Result(id=item.test_id, status=Status.ERROR, message=f"test {item.name} no longer in {item.path}")
    if mine not in ids:
        raise ConformFailure(gone)
    runner = Runner(_options(item.config), jobs=1, pool=item.config.stash[_pool_key])
    recs = runner.run([path], skip={i for i in ids if i != mine})
    # its record, or the file's (it no longer loads); none: the file changed since it was collected
    return next((r for r in recs if r.id == mine), recs[0] if recs else gone)


class ProgramItem(pytest.Item):
    def __init__(self, *, load_error: Result | None = None, line: int = 0, program: bool = False, **kw):
        super().__init__(**kw)
        self.load_error = load_error
        self.program = program
        self.line = line
        self.record: Result | None = None
        self.add_marker("conform")

    @property
    def test_id(self) -> str:
        return self.nodeid

    def runtest(self) -> None:
        if self.load_error is not None:
            rec = replace(self.load_error, id=self.test_id)
        else:
            rec = _run_in_worker(self)
            # a record of the runner's own (timeout, crash) has no line
            rec = replace(rec, id=self.test_id, line=rec.line or self.line)
        self.record = rec
        self.user_properties.append(("conform_status", rec.status.value))
        if rec.family:
            self.user_properties.append(("op_family", rec.family))
        baseline = self.config.stash.get(_baseline_key, None)
        entry = baseline.match(rec.to_json()) if baseline is not None else None
        if rec.passed:
            if entry is not None:
                self.user_properties.append(("conform_newly_passing", entry.reason))
            return
        if entry is not None:
            pytest.xfail(f"known failure ({rec.status}): {entry.reason or 'listed in the baseline'}")
        raise ConformFailure(rec)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, ConformFailure):
            f = describe_failure(excinfo.value.rec)
            lines = [f"{f.status.upper()}: {f.id}"]
            if f.where:
                lines.append(f"  at {f.where}")
            if f.backend:
                lines.append(f"  backend {f.backend}")
            if f.ops:
                lines.append(f"  ops {', '.join(f.ops)}; element types {', '.join(f.dtypes)}")
            lines += [""] + [f"  {ln}" for ln in f.body.splitlines()]
            return "\n".join(lines)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.path, max(0, self.line - 1), f"conform: {self.name}"


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when != "call":
        return
    for k, v in getattr(report, "user_properties", ()):
        if k == "conform_newly_passing":
            _NEWLY_PASSING.append((report.nodeid, v))


_NEWLY_PASSING: list[tuple[str, str]] = []


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    if not _NEWLY_PASSING:
        return
    tr = terminalreporter
    tr.section("stablehlo-conform: newly passing (listed in the baseline)")
    for nodeid, reason in _NEWLY_PASSING:
        tr.line(f"{nodeid}  (baseline reason: {reason})")
    tr.line("update the baseline: conform baseline update RESULTS.json -o BASELINE")
