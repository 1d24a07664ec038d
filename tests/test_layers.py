"""Layers import one way: op facts and numeric helpers -> oracle maths -> kernels -> interpreter
(engine, process grid) -> harness -> cli, and no files import each other round a circle. Read from
the source (every import statement, at module top or inside a function)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path


PKG = Path(__file__).resolve().parents[1] / "stablehlo_conform"

# the package's units, lowest first: a module imports only modules of its own unit or a lower one
UNITS = (
    ("base", ("version", "errors", "types", "program", "compare", "deep", "opinfo", "numeric", "iree_format")),
    ("process grid", ("process_grid",)),  # the processes and channels collectives talk over
    ("frontend", ("frontend",)),
    ("oracle", ("oracle",)),
    ("kernels", ("kernels",)),
    ("interpreter", ("engine",)),
    ("harness", ("harness",)),
    ("cli", ("cli", "pytest_plugin")),
    ("api", ("",)),  # the package's own __init__: load() and evaluate()
)
MAX_LOCAL_SHARE = 0.15  # of the package's imports of its own modules, those inside a function body


def unit_of(module: str) -> tuple[int, str]:
    for rank, (unit, prefixes) in enumerate(UNITS):
        if any(module == p or (p and module.startswith(p + ".")) for p in prefixes):
            return rank, unit
    raise AssertionError(f"module {module!r} belongs to no unit: add it to UNITS")


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path):
    """(imported internal module, line, function-local, line text) of every import in ``path``."""
    mod = _module_name(path)
    is_pkg = path.name == "__init__.py"
    tree = ast.parse(path.read_text())
    lines = path.read_text().splitlines()
    local: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            local |= {id(n) for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = mod.split(".") if mod else []
            if not is_pkg:
                base = base[:-1]
            base = base[:len(base) - (node.level - 1)]
            target = ".".join(base + ([node.module] if node.module else []))
            names = [f"{target}.{a.name}".strip(".") for a in node.names] if node.module is None else [target]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("stablehlo_conform"):
            names = [node.module.removeprefix("stablehlo_conform").strip(".")]
        elif isinstance(node, ast.Import):
            names = [a.name.removeprefix("stablehlo_conform").strip(".") for a in node.names
                     if a.name.startswith("stablehlo_conform")]
        else:
            continue
        for n in names:
            yield n, node.lineno, id(node) in local, lines[node.lineno - 1]


def _covered(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _files():
    return sorted(PKG.rglob("*.py"))


def _all_imports():
    for path in _files():
        for name, line, local, text in _imports(path):
            yield path, _module_name(path), name, line, local, text


def test_every_import_follows_the_unit_order():
    """No module imports a higher unit: the units form no import cycle (every import
    counted, at module top or inside a function)."""
    bad = []
    for path, mod, name, line, _local, _text in _all_imports():
        (r1, u1), (r2, u2) = unit_of(mod), unit_of(name)
        if r2 > r1:
            bad.append(f"{path.relative_to(PKG)}:{line}: {u1} imports {name} ({u2})")
    assert not bad, "\n".join(bad)


def test_function_local_imports_are_few_and_say_why():
    """Imports of the package's own modules sit at module top; inside a function only to
    guard start-up time (mpmath, scipy, jaxlib behind them), each saying so in a comment."""
    found = list(_all_imports())
    local = [(path, line, text) for path, _m, _n, line, is_local, text in found if is_local]
    assert len(local) <= MAX_LOCAL_SHARE * len(found), f"{len(local)} of {len(found)} imports inside functions"
    def says_why(path: Path, line: int, text: str) -> bool:  # a comment on the line or on the one above
        above = path.read_text().splitlines()[line - 2].strip() if line > 1 else ""
        return "#" in text or above.startswith("#") or (above.endswith(":") and "#" in above)

    silent = [f"{path.relative_to(PKG)}:{line}: {text.strip()}" for path, line, text in local
              if not says_why(path, line, text)]
    assert not silent, "\n".join(silent)


def test_the_rules_see_imports():
    """The reader finds relative imports at top and inside functions (the rules are not vacuous)."""
    found = {(n, local) for n, _l, local, _t in _imports(PKG / "kernels" / "elementwise.py")}
    assert ("numeric", False) in found and ("oracle.exact", True) in found
    # a harness module runs engines: were it placed below the interpreter, the order test would see it
    assert ("engine", False) in {(n, local) for n, _l, local, _t in _imports(PKG / "harness" / "judge" / "verdict.py")}
    assert unit_of("harness.judge.verdict")[0] > unit_of("engine")[0] > unit_of("kernels.elementwise")[0]
    # the file graph: `from pkg import sub` reaches the submodule, a name that is none reaches pkg's __init__,
    # a function's import counts; the cycle finder sees a circle and nothing else
    modules = _module_files()
    backends = _file_edges(PKG / "harness" / "backends" / "__init__.py", modules)
    assert {"frontend", "program", "harness.backends.pjrt"} <= backends
    assert "harness.judge.diff" in _file_edges(PKG / "harness" / "campaigns" / "reduce.py", modules)
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}) == [["a", "b", "c"]]


def _module_files() -> dict[str, Path]:
    """Every module of the package by dotted name ('' the package itself), to its file."""
    return {_module_name(path): path for path in _files()}


def _file_edges(path: Path, modules: dict[str, Path]) -> set[str]:
    """The package modules (files) that ``path`` imports, anywhere in it: ``from pkg import name``
    where ``name`` is a submodule is an edge to that submodule, else to ``pkg``'s ``__init__``."""
    mod = _module_name(path)
    base = mod.split(".") if mod else []
    if path.name != "__init__.py":
        base = base[:-1]
    edges: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [(a.name.removeprefix("stablehlo_conform").strip("."), ()) for a in node.names
                       if a.name == "stablehlo_conform" or a.name.startswith("stablehlo_conform.")]
        elif isinstance(node, ast.ImportFrom) and node.level:
            parent = base[:len(base) - (node.level - 1)]
            targets = [(".".join(parent + ([node.module] if node.module else [])), node.names)]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "stablehlo_conform":
            targets = [(node.module.removeprefix("stablehlo_conform").strip("."), node.names)]
        else:
            continue
        for target, names in targets:
            subs = {f"{target}.{a.name}".strip(".") for a in names} & modules.keys()
            edges |= subs
            if len(subs) < len(names) or not names:  # a name that is no submodule comes from target itself
                assert target in modules, f"{path.relative_to(PKG)}:{node.lineno}: no module {target!r}"
                edges.add(target)
    edges.discard(mod)
    return edges


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph[node]):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_no_import_cycle_between_files():
    """No circle of imports between the package's files (every import statement, at module top
    or inside a function, relative ones resolved; ``from pkg import sub`` reaches ``pkg/sub.py``)."""
    modules = _module_files()
    graph = {mod: _file_edges(path, modules) for mod, path in modules.items()}
    cycles = _cycles(graph)
    shown = []
    for component in cycles:
        inner = [f"  {m} -> {', '.join(sorted(graph[m] & set(component)))}" for m in component]
        shown.append(f"cycle of {len(component)} files:\n" + "\n".join(inner))
    assert not cycles, "\n".join(shown)


# the wings of the harness, lowest first: a harness module imports the harness only from its own
# wing or a lower rank (wings of one rank do not import each other)
WINGS = (
    ("records", 0),  # results and the files that hold them
    ("reports", 1), ("backends", 1), ("programs", 1),  # rendering, running, what programs bring
    ("judge", 2),  # who is right
    ("suite", 3),  # the tests of a file, worker processes
    ("campaigns", 4),  # fuzz, reduce, accuracy, plugin reports
)
# what reading and rendering results may not load: MLIR (the frontend), the interpreter, backends
READERS = ("records", "reports")
HEAVY = ("frontend", "oracle", "kernels", "engine", "process_grid", "harness.backends", "harness.programs",
         "harness.judge", "harness.suite", "harness.campaigns")


def wing_of(module: str) -> tuple[int, str] | None:
    """(rank, wing) of a harness module; None for a module outside the harness."""
    parts = module.split(".")
    if parts[0] != "harness":
        return None
    if len(parts) < 3 and not (len(parts) == 2 and parts[1] in dict(WINGS)):
        raise AssertionError(f"harness module {module!r} belongs to no wing: place it in one of {dict(WINGS)}")
    return dict(WINGS)[parts[1]], parts[1]


def test_every_harness_module_sits_in_a_wing_and_imports_down():
    bad = []
    for path, mod, name, line, _local, _text in _all_imports():
        here, there = wing_of(mod) if mod != "harness" else None, wing_of(name) if name != "harness" else None
        if here is None or there is None or here[1] == there[1]:
            continue
        if there[0] >= here[0]:
            bad.append(f"{path.relative_to(PKG)}:{line}: wing {here[1]} imports {name} (wing {there[1]})")
    assert not bad, "\n".join(bad)


def test_records_and_reports_import_nothing_that_runs_programs():
    """Reading a results file, gating, triaging and rendering pages imports no frontend,
    oracle, kernels, engine or backend, nor a higher wing (read from the source)."""
    bad = [f"{path.relative_to(PKG)}:{line}: {name}" for path, mod, name, line, _l, _t in _all_imports()
           if wing_of(mod) and wing_of(mod)[1] in READERS and any(_covered(name, h) for h in HEAVY)]
    assert not bad, "\n".join(bad)


def test_reading_and_rendering_results_loads_no_mlir_in_a_fresh_interpreter():
    """Importing the results reader, the gate, triage and the HTML, JUnit, text and plugin-page
    writers in a new process loads none of the frontend, engine, kernels or backends (nor jaxlib)."""
    code = (
        "import sys\n"
        "import stablehlo_conform.harness.reports as r, stablehlo_conform.harness.reports.html\n"
        "import stablehlo_conform.harness.reports.junit, stablehlo_conform.harness.reports.text\n"
        "import stablehlo_conform.harness.reports.plugin_html, stablehlo_conform.harness.records.gate\n"
        "import stablehlo_conform.harness.records.triage, stablehlo_conform.harness.records.result\n"
        "assert callable(r.load_results)\n"
        "print('\\n'.join(sorted(m for m in sys.modules if m.startswith(('stablehlo_conform', 'jaxlib', 'mlir')))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert "stablehlo_conform.harness.reports.plugin_html" in out  # the probe saw the imports
    loaded = [m for m in out if m.startswith(("jaxlib", "mlir"))
              or any(_covered(m.removeprefix("stablehlo_conform."), h) for h in HEAVY)]
    assert not loaded, loaded


def test_every_command_is_found_in_the_module_the_table_names():
    """The command line loads a command's module when the command is asked for
    (cli.COMMAND_MODULES): the table names every command of every command module, no more."""
    import importlib

    from stablehlo_conform import cli

    found = {}
    for path in sorted(p for p in (PKG / "cli").glob("*.py") if p.stem != "__main__"):
        mod = importlib.import_module(f"stablehlo_conform.cli.{path.stem}")
        for cmd in getattr(mod, "COMMANDS", ()):
            found[cmd.name] = path.stem
    assert found == cli.COMMAND_MODULES


def test_commands_that_read_results_load_no_mlir(tmp_path):
    """`conform report` (HTML, JUnit, JSON), `conform triage` and `conform baseline` in a new
    process read and write results without loading the frontend, the engine, the kernels or a
    backend (nor jaxlib): the commands load their own module only."""
    record = {"id": "a.mlir::t", "file": "a.mlir", "function": "t", "line": 1, "status": "fail",
              "message": "a.mlir:3:5: check failed: got 1, expected 2", "family": "stablehlo.add",
              "ops": ["stablehlo.add"], "dtypes": ["f32"], "duration": 0.1, "checks": 1, "backend": "numpy"}
    results = tmp_path / "r.json"
    results.write_text(json.dumps({"backend": "numpy", "results": [record]}))
    runs = {
        "report": ["report", str(results), "--html", str(tmp_path / "p.html"), "--junit-xml", str(tmp_path / "j.xml"),
                   "--json", str(tmp_path / "m.json")],
        "triage": ["triage", str(results)],
        "baseline": ["baseline", "update", str(results), "-o", str(tmp_path / "b.json")],
    }
    for name, args in runs.items():
        code = ("import sys\nfrom stablehlo_conform.cli import main\n"
                f"try:\n    main({args!r})\nexcept SystemExit as e:\n    print('exit', e.code, file=sys.stderr)\n"
                "print('\\n'.join(sorted(m for m in sys.modules if m.startswith(('stablehlo_conform', 'jaxlib')))))\n")
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        out = proc.stdout.split()
        assert f"stablehlo_conform.cli.{'report' if name == 'baseline' else name}" in out, proc.stderr
        loaded = [m for m in out if m.startswith("jaxlib") or m.startswith("stablehlo_conform.cli.backend_option")
                  or any(_covered(m.removeprefix("stablehlo_conform."), h) for h in HEAVY)]
        assert not loaded, (name, loaded)
    assert (tmp_path / "p.html").is_file() and (tmp_path / "j.xml").is_file() and (tmp_path / "b.json").is_file()
