"""Shrinking a program while a property holds (``conform reduce``).

The reducer edits the program at the StableHLO level through
:func:`stablehlo_conform.frontend.edit_module` (every candidate is parsed
and verified by the official bindings) and keeps an edit when the candidate
still shows the property. Strategies, in order, repeated while one of them
makes progress and the time budget lasts:

1. keep a subset of the results (delta debugging over the result list);
2. inline ``func.call``;
3. return the results of one op of the function's body instead (the earliest
   op that still shows the property wins, and everything after it is gone);
4. replace ops of the function's body by new arguments (their values, computed
   by the NumPy oracle on the current inputs, join the inputs), in delta
   debugging batches: half the ops, a quarter, ... one;
5. replace them by constants (the same values) instead;
6. unroll ``while`` ops to a fixed trip count (0, 1, 2 copies of the body),
   make a loop-carried value pass through the body unchanged, drop a
   loop-carried value nothing uses;
7. ops inside regions: replace an op's result by one of its operands of the
   same type, by an argument, or by a constant;
8. shrink tensor shapes: every value of a type (or of every type) gets
   another static shape (dimensions set to 1, or halved), the inputs sliced
   to fit; ops that do not allow it make the candidate invalid.

An edit is kept only when it makes the program strictly smaller (op count,
then input elements, then text length), so the reduction ends. Candidates
are tried in a fixed order, so for one program, inputs and seed the result
is the same (unless the time budget stops it earlier). Every candidate runs
on each backend in a child process (one per backend, restarted after a crash
or a timeout) with a timeout, like a test.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ... import frontend
from ...engine import Engine
from ...errors import ConformError, ParseError, Timeout
from ...kernels.registry import load_all
from ...program import walk_ops
from ..backends import get_backend
from ..backends.base import check_ops
from ..backends.isolated import Isolated
from ..programs.inputs import random_inputs, save_npz
from ..records.guard import run_in_group
from ..records.options import RunOptions

PROPERTIES = ("disagree", "crash", "compile-error", "script")
MIN_ORACLE_SECONDS = 0.05  # the least time a candidate may keep the NumPy oracle busy
ENTRY = "main"


# --------------------------------------------------------------------------- #
# Running a candidate on a backend, isolated
# --------------------------------------------------------------------------- #


class CandidateRunner:
    """What the child process runs: one program on one backend."""

    def run(self, backend: str, text: str, entry: str, args: list, timeout: float | None) -> tuple:

        module = frontend.load_text(text, "<candidate>")[0]
        opts = RunOptions(timeout=timeout, isolate=False)  # the child is the isolation
        return tuple(get_backend(backend).run_function(module, entry, list(args), opts))


_SPEC = "stablehlo_conform.harness.campaigns.reduce:CandidateRunner"


class IsolatedBackends:
    """One child process per backend running candidates (see :class:`~..backends.isolated.Isolated`)."""

    def __init__(self, backends: Sequence[str], timeout: float | None):

        self.backends = list(backends)
        self.timeout = timeout
        self.children = {b: Isolated(_SPEC, b) for b in self.backends}

    def outcome(self, backend: str, text: str, args: Sequence[np.ndarray], entry: str = ENTRY) -> dict[str, Any]:
        """``{"status": ok|error|unsupported|crash|timeout, "values": [...] | None, "message": str}``."""
        child = self.children[backend]
        limit = None if self.timeout is None else self.timeout + 5.0
        try:
            values = child.call("run", backend, text, entry, [np.asarray(a) for a in args], self.timeout,
                                timeout=limit)
            return {"status": "ok", "values": [np.asarray(v) for v in values], "message": ""}
        except ConformError as e:
            return {"status": e.status, "values": None, "message": str(e)}

    def outcomes(self, text: str, args: Sequence[np.ndarray], entry: str = ENTRY) -> dict[str, dict]:
        return {b: self.outcome(b, text, args, entry) for b in self.backends}

    def close(self) -> None:
        for c in self.children.values():
            c.close(kill=True)


def run_outcomes(text: str, args: Sequence[np.ndarray], backends: Sequence[str], timeout: float | None = 60.0,
                 entry: str = ENTRY) -> dict[str, dict]:
    """Each backend's outcome on one program (isolated, with a timeout)."""
    runners = IsolatedBackends(backends, timeout)
    try:
        return runners.outcomes(text, args, entry)
    finally:
        runners.close()


def compare_outcomes(outcomes: dict[str, dict], backends: Sequence[str]) -> list[dict[str, Any]]:
    """Every result of every backend that ran against the first backend's
    (:func:`~..judge.diff.against_first` over the outcomes' values)."""
    from ..judge.diff import against_first  # loads mpmath: kept here for start-up time

    return against_first({b: outcomes.get(b, {}).get("values") for b in backends})


# --------------------------------------------------------------------------- #
# Properties
# --------------------------------------------------------------------------- #


@dataclass
class Property:
    """What makes a candidate interesting.

    ``disagree``: every backend ran and some result of a backend differs from
    the first backend's (:func:`compare_outcomes`); ``crash``: the
    target backend crashed or timed out; ``compile-error``: the target
    backend failed (not a crash) with a message matching ``match``;
    ``script``: ``script`` exits 0 given the candidate's path (the inputs are
    next to it, as ``<name>.npz``)."""

    kind: str = "disagree"
    target: str | None = None
    match: str | None = None
    script: str | None = None

    def needs_backends(self) -> bool:
        return self.kind != "script"

    def holds(self, outcomes: dict[str, dict], backends: Sequence[str],
              judge: Callable[[], dict] | None = None) -> bool:
        """Whether the outcomes show the property. For ``disagree``, outputs
        beyond the ULP budget are judged as ``conform diff`` judges them
        (``judge``: :func:`.diff.judge_isolated` on the candidate): a
        difference every op's accuracy class allows (a dot at the precision
        its ``precision_config`` leaves to the backend, an error accumulated
        over ops each within its bound) is no disagreement."""
        from ..judge.diff import judged  # loads mpmath: kept here for start-up time

        target = self.target or backends[-1]
        if self.kind == "disagree":
            if any(o["status"] != "ok" for o in outcomes.values()):
                return False
            if not any(c["status"] != "ok" for c in compare_outcomes(outcomes, backends)):
                return False
            report = judged(judge)
            return report is None or report["status"] != "agree"
        out = outcomes[target]
        if self.kind == "crash":
            return out["status"] in ("crash", "timeout")
        if self.kind == "compile-error":
            return out["status"] in ("error", "unsupported") and bool(re.search(self.match or "", out["message"]))
        raise ValueError(f"property {self.kind!r} is decided by its script")

    def describe(self, backends: Sequence[str]) -> str:
        target = self.target or backends[-1]
        return {"disagree": f"{', '.join(backends[1:])} disagree with {backends[0]} beyond tolerance",
                "crash": f"{target} crashes or times out",
                "compile-error": f"{target} fails with a message matching {self.match!r}",
                "script": f"the script {self.script!r} exits 0"}[self.kind]


def run_script(cmd: str, text: str, args: Sequence[np.ndarray], timeout: float | None) -> bool:
    """Run a user script on a candidate written to a temporary folder: True
    when it exits 0 within ``timeout``. The script runs in a process group of
    its own, killed whole when it ends, times out or is interrupted (see
    :func:`.guard.run_in_group`): nothing it started outlives its check."""
    with tempfile.TemporaryDirectory(prefix="conform-reduce-") as d:
        path = Path(d) / "candidate.mlir"
        path.write_text(text)
        save_npz(Path(d) / "candidate.npz", {f"arg{i}": a for i, a in enumerate(args)})
        code = run_in_group(f"{cmd} {shlex.quote(str(path))}", timeout, shell=True, cwd=d,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return code == 0


# --------------------------------------------------------------------------- #
# The reducer
# --------------------------------------------------------------------------- #


@dataclass
class Reduction:
    """The result of :func:`reduce_program`."""

    text: str
    inputs: list[np.ndarray]
    ops_before: int
    ops_after: int
    holds: bool  # the property held on the original program
    outcomes: dict[str, dict] = field(default_factory=dict)  # each backend on the reduced program
    steps: int = 0  # edits kept
    candidates: int = 0  # candidates run
    seconds: float = 0.0
    stopped_by_budget: bool = False
    property: str = ""
    log: list[str] = field(default_factory=list)
    entry: str = ENTRY
    interrupted: BaseException | None = None  # what stopped the search early (one of ``stop``)


def entry_program(text: str, entry: str | None = None) -> tuple[str, bool]:
    """The program the reducer works on: ``entry`` (default: ``main`` or the
    only public function) renamed ``main``; a self-checking test (no
    arguments, check ops) has its checks stripped and returns the values they
    checked; the functions the entry does not reach are dropped. Returns
    ``(text, was_a_test)``."""
    from ..judge.diff import entry_of  # loads mpmath: kept here for start-up time

    module = frontend.load_text(text, "<program>")[0]
    func = entry_of(module, entry)
    test = not func.param_types and bool(check_ops(func))
    try:
        out, _ = frontend.prepare_entry(module.text, func.name, strip_checks=test)
    except ConformError:
        raise
    except Exception as e:  # the bindings reject what this package's parser took
        errors = [ln.strip() for ln in str(e).splitlines() if "error:" in ln] or str(e).strip().splitlines()[-1:]
        raise ConformError(f"@{func.name} cannot be reduced: the program does not parse with jaxlib's bindings: "
                           + re.sub(r'^.*?\berror:\s*(?:"[^"]*":\d+:\d+:\s*)?', "", errors[0] if errors else ""))
    out, _ = frontend.edit_module(out, [("rename", frontend.ENTRY_ALIAS, ENTRY)], frontend.ENTRY_ALIAS)
    out, _ = frontend.edit_module(out, [("prune",)], ENTRY)  # only the entry and what it calls
    return out, test


def _size(text: str, inputs: Sequence[np.ndarray]) -> tuple[int, int, int]:
    return frontend.count_ops(text), sum(int(np.size(a)) for a in inputs), len(text)


class _Reducer:
    def __init__(self, text: str, inputs: list[np.ndarray], backends: Sequence[str], prop: Property,
                 budget_s: float, timeout: float | None, log: Callable[[str], None] | None):
        self.text = text
        self.inputs = [np.asarray(a) for a in inputs]
        self.backends = list(backends)
        self.prop = prop
        self.deadline = time.monotonic() + budget_s
        self.timeout = timeout
        self.runners = IsolatedBackends(self.backends, timeout) if prop.needs_backends() else None
        self.size = _size(text, self.inputs)
        self.recorded: dict[int, tuple] | None = None
        self.outcomes: dict[str, dict] = {}
        self.steps = 0
        self.candidates = 0
        self.tried: set = set()
        self.notes: list[str] = []
        self.say = log or (lambda s: None)
        self.out_of_time = False
        self.oracle_budget = 60.0

    # running -----------------------------------------------------------
    def check(self, text: str, inputs: Sequence[np.ndarray]) -> tuple[bool, dict]:
        self.candidates += 1
        if self.prop.kind == "script":
            return run_script(self.prop.script or "false", text, inputs, self.timeout), {}
        outcomes: dict[str, dict] = {}
        for b in self._order():
            outcomes[b] = self.runners.outcome(b, text, inputs)
            if not self._may_hold(outcomes):
                return False, outcomes
        return self.prop.holds(outcomes, self.backends, self._judge(text, inputs)), outcomes

    def _judge(self, text: str, inputs: Sequence[np.ndarray]) -> Callable[[], dict] | None:
        """The per-op judgement of a candidate (``disagree`` only)."""
        if self.prop.kind != "disagree":
            return None
        from ..judge.diff import judge_isolated  # loads mpmath: kept here for start-up time

        return lambda: judge_isolated(text, list(inputs), self.runners, ENTRY, self.timeout)

    def oracle_finishes(self, text: str, inputs: Sequence[np.ndarray]) -> bool:
        """Run a candidate on the NumPy oracle in this process with a short
        deadline (twenty times the last kept program's run): a candidate that keeps
        the oracle busy longer (an edit made a loop endless) is rejected
        before any backend spends its timeout on it."""

        t0 = time.monotonic()
        try:
            module = frontend.load_text(text, "<candidate>")[0]
            Engine(module, load_all(), deadline=t0 + self.oracle_budget).call(ENTRY, tuple(inputs))
        except Timeout:
            return False
        except ConformError:
            pass  # the backends decide
        finally:
            self.oracle_seconds = time.monotonic() - t0
        return True

    def _order(self) -> list[str]:
        """The target backend first for crash and compile properties (a
        candidate where it runs fine is rejected without running the rest)."""
        if self.prop.kind in ("crash", "compile-error"):
            t = self.prop.target or self.backends[-1]
            return [t] + [b for b in self.backends if b != t]
        return self.backends

    def _may_hold(self, outcomes: dict[str, dict]) -> bool:
        if self.prop.kind == "disagree":
            return all(o["status"] == "ok" for o in outcomes.values())
        t = self.prop.target or self.backends[-1]
        if t in outcomes:
            o = outcomes[t]
            if self.prop.kind == "crash":
                return o["status"] in ("crash", "timeout")
            return o["status"] in ("error", "unsupported")
        return True

    def record(self) -> dict[int, tuple]:
        """Values of every op of ``main`` (first execution) on the NumPy oracle."""
        if self.recorded is None:

            module = frontend.load_text(self.text, "<reduce>")[0]
            order = {id(op): i for i, op in enumerate(walk_ops(module.funcs[ENTRY].body))}
            deadline = time.monotonic() + (self.timeout or 60.0)
            eng = Engine(module, load_all(), deadline=deadline)
            got: dict[int, tuple] = {}

            def trace(op, _args, results):
                i = order.get(id(op))
                if i is not None and i not in got:
                    got[i] = tuple(np.asarray(r) for r in results)

            eng.trace = trace
            try:
                eng.call(ENTRY, tuple(self.inputs))
            except ConformError:
                pass  # the values recorded so far are still usable
            self.recorded = got
        return self.recorded

    # editing -----------------------------------------------------------
    def attempt(self, edits: list[tuple], label: str) -> bool:
        """Apply ``edits`` to the current program; keep the candidate when it
        is smaller and the property holds."""

        if time.monotonic() > self.deadline:
            self.out_of_time = True
            return False
        key = (hash(self.text), repr(edits))
        if key in self.tried:
            return False
        self.tried.add(key)
        try:
            text, provenance = frontend.edit_module(self.text, edits, ENTRY)
        except ParseError:
            return False
        inputs = self._inputs_for(text, provenance, edits)
        if inputs is None:
            return False
        size = _size(text, inputs)
        if size >= self.size:
            return False
        if not self.oracle_finishes(text, inputs):
            return False
        oracle_seconds = self.oracle_seconds
        ok, outcomes = self.check(text, inputs)
        if not ok:
            return False
        self.oracle_budget = max(MIN_ORACLE_SECONDS, 20 * oracle_seconds)
        self.text, self.inputs, self.size, self.outcomes = text, inputs, size, outcomes
        self.recorded = None
        self.steps += 1
        self.say(f"{label}: {size[0]} ops")
        return True

    def _inputs_for(self, text: str, provenance: list[tuple], edits: list[tuple]) -> list[np.ndarray] | None:
        out: list[np.ndarray] = []
        for p in provenance:
            if p[0] == "arg":
                out.append(self.inputs[p[1]])
            elif p[0] == "op":
                got = self.record().get(p[1])
                if got is None:
                    return None  # the op never ran on these inputs
                out.append(got[p[2]])
            else:
                return None
        if any(e[0] == "reshape" for e in edits):

            func = frontend.load_text(text, "<reduce>")[0].funcs[ENTRY]
            fitted = []
            for a, t in zip(out, func.param_types):
                shape = tuple(getattr(t, "shape", ()))
                if len(shape) != a.ndim or any(d is None or d > s for d, s in zip(shape, a.shape)):
                    return None
                fitted.append(np.ascontiguousarray(a[tuple(slice(0, d) for d in shape)]))
            out = fitted
        return out

    def inventory(self) -> list[dict]:

        return frontend.op_inventory(self.text, ENTRY)

    # strategies --------------------------------------------------------
    def run(self) -> None:
        strategies = [self.keep_results, self.inline, self.results_of, self.cut_to_args, self.cut_to_consts,
                      self.loops, self.nested, self.shrink]
        progress = True
        while progress and not self.out_of_time:
            progress = False
            for s in strategies:
                before = self.steps
                s()
                progress |= self.steps > before
                if self.out_of_time:
                    break

    def _ddmin(self, items_of: Callable[[], list[int]], edit: Callable[[int], tuple], label: str) -> None:
        """Delta debugging: try the edits of chunks of the items, halving the
        chunks when none of them can go; after a kept chunk the items are
        recomputed (indices move) at the same granularity."""
        n = 2
        while not self.out_of_time:
            items = items_of()
            if not items:
                return
            n = min(n, len(items))
            size = -(-len(items) // n)
            chunks = [items[i:i + size] for i in range(0, len(items), size)]
            if any(self.attempt([edit(k) for k in chunk], f"{label} ({len(chunk)} ops)") for chunk in chunks):
                continue
            if size == 1:
                return
            n *= 2

    def keep_results(self) -> None:
        def results() -> list[int]:
            inv = self.inventory()
            return list(range(len(inv[-1]["operands"])))

        n = 2
        while not self.out_of_time:
            items = results()
            if len(items) <= 1:
                return
            n = min(n, len(items))
            size = -(-len(items) // n)
            chunks = [items[i:i + size] for i in range(0, len(items), size)]
            # keep one chunk, then drop one chunk
            cands = [[("keep_results", c)] for c in chunks]
            cands += [[("keep_results", [i for i in items if i not in c])] for c in chunks]
            if any(self.attempt(e, "results dropped") for e in cands):
                n = 2
                continue
            if size == 1:
                return
            n *= 2

    def inline(self) -> None:
        if any(r["name"] == "func.call" for r in self.inventory()):
            self.attempt([("inline",)], "calls inlined")

    def results_of(self) -> None:
        """Binary search for the earliest op of the body whose results still
        show the property (assuming that once some op shows it, the ops
        after it on its path do too)."""
        lo, hi = 0, len(self._top_ops()) - 1
        while lo < hi and not self.out_of_time:
            tops = self._top_ops()
            mid = (lo + hi) // 2
            op = self.inventory()[tops[mid]]
            if self.attempt([("results_of", tops[mid])], f"results of {op['name']} returned"):
                # the ops left are the ancestors of that op, which comes last
                hi = len(self._top_ops()) - 1
                lo = min(lo, hi)
            else:
                lo = mid + 1

    def _top_ops(self) -> list[int]:
        return [r["index"] for r in self.inventory()
                if r["parent"] is None and r["results"] and not r["terminator"]]

    def cut_to_args(self) -> None:
        self._ddmin(self._top_ops, lambda k: ("to_arg", k), "ops made arguments")

    def cut_to_consts(self) -> None:
        def edit(k: int) -> tuple:
            return ("to_const", k, list(self.record().get(k, ())))

        def items() -> list[int]:
            rec = self.record()
            return [k for k in self._top_ops() if k in rec and not self._is_const(k)]

        self._ddmin(items, edit, "ops made constants")

    def _is_const(self, k: int) -> bool:
        return self.inventory()[k]["name"] in ("stablehlo.constant", "arith.constant")

    def loops(self) -> None:
        i = 0
        while not self.out_of_time:
            loops = [r for r in self.inventory() if r["name"] == "stablehlo.while"]
            if i >= len(loops):
                return
            k = loops[i]["index"]
            if any(self.attempt([("unroll", k, n)], f"while unrolled {n}x") for n in (0, 1, 2)):
                continue
            carried = len(loops[i]["results"])
            if any(self.attempt([("passthrough", k, j)], f"while value {j} passes through")
                   for j in range(carried)):
                continue
            if any(self.attempt([("drop_carried", k, j)], f"while value {j} dropped") for j in range(carried)):
                continue
            i += 1

    def nested(self) -> None:
        """Ops inside regions, one at a time, last first."""
        i = 0
        while not self.out_of_time:
            inner = [r for r in self.inventory() if r["parent"] is not None and r["results"]
                     and not r["terminator"]][::-1]
            if i >= len(inner):
                return
            r = inner[i]
            k = r["index"]
            cands = [[("to_operand", k, j)] for j, t in enumerate(r["operands"])
                     if len(r["results"]) == 1 and t == r["results"][0]]
            cands.append([("to_arg", k)])
            if not r["regions"] and r["name"] not in ("stablehlo.constant", "arith.constant"):
                vals = self.record().get(k)
                if vals is not None:
                    cands.append([("to_const", k, list(vals))])
            if not any(self.attempt(e, f"{r['name']} inside a region replaced") for e in cands):
                i += 1

    def shrink(self) -> None:
        shape = re.compile(r"tensor<((?:\d+x)+)([a-z][\w<>]*)>")

        def types() -> list[str]:
            seen: list[str] = []
            for r in self.inventory():
                for t in r["results"] + r["operands"]:
                    if t not in seen and shape.fullmatch(t):
                        seen.append(t)
            return seen

        def shrunk(t: str, how: str) -> str:
            m = shape.fullmatch(t)  # the element type may hold an x (complex<f32>)
            dims = m.group(1)[:-1].split("x")
            new = [1 if how == "ones" else max(1, int(d) // 2) for d in dims]
            return "tensor<" + "".join(f"{d}x" for d in new) + m.group(2) + ">"

        for how in ("ones", "half"):
            ts = [t for t in types() if shrunk(t, how) != t]
            if ts and self.attempt([("reshape", {t: shrunk(t, how) for t in ts})], f"shapes shrunk ({how})"):
                continue
            for t in ts:
                if self.out_of_time:
                    return
                self.attempt([("reshape", {t: shrunk(t, how)})], f"{t} shrunk")

    def close(self) -> None:
        if self.runners is not None:
            self.runners.close()


def reduce_program(text: str, inputs: Sequence[np.ndarray] | None, backends: Sequence[str],
                   prop: Property | None = None, budget_s: float = 120.0, seed: int = 0,
                   timeout: float | None = None, log: Callable[[str], None] | None = None,
                   stop: tuple[type[BaseException], ...] = ()) -> Reduction:
    """Shrink ``text`` (its ``main`` on ``inputs``; see :func:`entry_program`
    to get there from a test or another entry) while ``prop`` holds on
    ``backends`` (the first is the baseline; the property's target defaults
    to the last). ``inputs`` None: seeded random inputs (``seed``); the
    search order is fixed, so the result depends only on the program, the
    inputs and the budget. ``timeout``: seconds per candidate and backend
    (default: twenty times the original program's run on warm backends, at
    least three times its first run and 2 s). An exception of a type in
    ``stop`` (an interrupt) during the search ends it like the budget does,
    with the smallest program found so far (``interrupted``)."""
    prop = prop or Property()
    t0 = time.monotonic()
    backends = list(backends)
    if prop.kind == "disagree" and len(backends) < 2:
        raise ConformError("the disagree property needs at least two backends")
    if inputs is None:
        inputs = random_inputs(frontend.load_text(text, "<program>")[0].funcs[ENTRY], seed)
    ops_before = frontend.count_ops(text)
    probe_timeout = timeout if timeout is not None else 300.0
    r = _Reducer(text, list(inputs), backends, prop, budget_s, probe_timeout, log)
    try:
        r.oracle_budget = 600.0
        r.oracle_finishes(text, r.inputs)  # loads the kernels
        r.oracle_finishes(text, r.inputs)
        r.oracle_budget = max(MIN_ORACLE_SECONDS, 20 * r.oracle_seconds)
        start = time.monotonic()
        holds, outcomes = r.check(text, r.inputs)
        first = time.monotonic() - start
        if timeout is None and holds:
            # a candidate may take 20 times the second run (warm children, compiled
            # programs cached) and 3 times the first (children starting, compiling)
            start = time.monotonic()
            r.check(text, r.inputs)
            r.timeout = max(2.0, 20 * (time.monotonic() - start), 3 * first)
            if r.runners is not None:
                r.runners.timeout = r.timeout
        r.outcomes = outcomes
        stopped = None
        if holds:
            try:
                r.run()
            except stop as e:
                stopped = e
                r.out_of_time = True
        if holds and stopped is None and set(r.outcomes) != set(backends):
            # what every backend gives on the result (a script decided alone; a check may stop early)
            r.outcomes = run_outcomes(r.text, r.inputs, backends, r.timeout)
    finally:
        r.close()
    return Reduction(text=r.text, inputs=r.inputs, ops_before=ops_before, ops_after=frontend.count_ops(r.text),
                     holds=holds, outcomes=r.outcomes, steps=r.steps, candidates=r.candidates,
                     seconds=time.monotonic() - t0, stopped_by_budget=r.out_of_time and stopped is None,
                     property=prop.describe(backends), interrupted=stopped)

