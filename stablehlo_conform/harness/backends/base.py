"""The Backend interface, and the machinery shared by native backends.

A native backend (the reference interpreter, XLA, IREE) runs MLIR text. To
run a function it gets the module text with the function renamed and a
wrapper ``@main`` added that converts arguments and results between the
program's element types and the types the backend can exchange with Python
("wire" types: e.g. bf16 travels as its i16 bit pattern, complex as real and
imaginary parts). Self-checking tests are run by removing the check ops,
returning the checked values instead, and evaluating the checks here with the
same check semantics as the NumPy engine.

Native code may abort the process, so native calls run in a child process
(:class:`Isolated`) that turns a dead child into a ``crash`` error carrying
the signal and the captured stderr.
"""

from __future__ import annotations

import os
import signal
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import types as T
from ...errors import ConformError, Timeout, UnsupportedOp
from ...program import Func, Module, walk_ops


class BackendUnavailable(ConformError):
    """The backend cannot run here (not installed, or cannot start)."""

    status = "error"


class BackendCrash(ConformError):
    """A native backend killed its process."""

    status = "crash"


class BackendError(ConformError):
    """A native backend rejected or failed to run a program."""

    status = "error"


class Backend:
    """Runs programs. Subclasses implement :meth:`run_function`.

    ``run_test`` runs a self-checking test function (no arguments) and
    returns a partial result record: ``status``, ``message``, ``checks``.
    ``test_values`` returns the values a test's checks look at (the first
    operand of each check op, in program order), for comparing backends.
    """

    name = "backend"

    def run_function(self, module, func_name: str, args: Sequence[np.ndarray], opts: Any = None) -> tuple:
        raise NotImplementedError

    def run_test(self, module, func, opts) -> dict[str, Any]:
        raise NotImplementedError

    def test_values(self, module, func, opts) -> list[np.ndarray]:
        raise NotImplementedError


# --------------------------------------------------------------------------- #
# Running native code in a child process
# --------------------------------------------------------------------------- #


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes | None:
    """``n`` bytes from ``fd``; None at end of file; TimeoutError past ``deadline``."""
    import select
    import time

    chunks: list[bytes] = []
    while n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
        b = os.read(fd, min(n, 1 << 20))
        if not b:
            return None
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


def _write_frame(fd: int, obj: Any) -> None:
    import pickle

    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(len(data).to_bytes(8, "little") + data)
    while view:
        view = view[os.write(fd, view):]


def _read_frame(fd: int, deadline: float | None = None) -> Any:
    import pickle

    head = _read_exact(fd, 8, deadline)
    if head is None:
        raise EOFError
    body = _read_exact(fd, int.from_bytes(head, "little"), deadline)
    if body is None:
        raise EOFError
    return pickle.loads(body)


def _serve() -> None:  # the child process's main loop
    """Read ``(spec, method, args)`` frames from stdin, answer on stdout.
    Stray output of native code goes to stderr (a file the parent reads
    when the child dies)."""
    import importlib

    try:  # die with the parent (Linux)
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)
    except Exception:
        pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    fin, fout = os.dup(0), os.dup(1)
    os.dup2(2, 1)
    cache: dict[str, Any] = {}
    while True:
        try:
            msg = _read_frame(fin)
        except EOFError:
            return
        if msg is None:
            return
        spec, method, args = msg
        try:
            obj = cache.get(spec)
            if obj is None:
                mod, _, attr = spec.partition(":")
                obj = cache[spec] = getattr(importlib.import_module(mod), attr)()
            reply: tuple = ("ok", getattr(obj, method)(*args))
        except ConformError as e:
            reply = ("err", (type(e).__name__, e.status, str(e)))
        except Exception as e:
            reply = ("err", (type(e).__name__, "error", f"{type(e).__name__}: {e}"))
        _write_frame(fout, reply)


_ERROR_CLASSES = {"unsupported": UnsupportedOp, "timeout": Timeout, "crash": BackendCrash}
_CHILD = "from stablehlo_conform.harness.backends.base import _serve; _serve()"


class Isolated:
    """A persistent child process that runs ``method`` of a backend class.

    The child is a plain subprocess (so daemonic worker processes can have
    one too) speaking pickled frames over its stdin/stdout. A dead child
    becomes :class:`BackendCrash` with the signal and what it wrote to
    stderr during the call; a call over ``timeout`` seconds kills the child
    and raises :class:`Timeout`. The next call starts a fresh child.
    """

    def __init__(self, spec: str, label: str, env: dict[str, str] | None = None):
        self.spec = spec
        self.label = label
        self.env = dict(env or {})  # set in the child's environment
        self.proc: Any = None
        # an anonymous file (no name on disk) collects the child's stderr
        self.stderr_file = tempfile.TemporaryFile()

    def _start(self) -> None:
        import subprocess
        import sys
        from pathlib import Path

        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[3])
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
        env.update(self.env)
        self.proc = subprocess.Popen([sys.executable, "-P", "-c", _CHILD], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr_file, env=env,
                                     close_fds=True)

    def call(self, method: str, *args: Any, timeout: float | None = None) -> Any:
        import time

        if self.proc is None or self.proc.poll() is not None:
            self._start()
        offset = os.fstat(self.stderr_file.fileno()).st_size
        deadline = time.monotonic() + timeout if timeout else None
        try:
            _write_frame(self.proc.stdin.fileno(), (self.spec, method, args))
            kind, payload = _read_frame(self.proc.stdout.fileno(), deadline)
        except TimeoutError:
            self.close(kill=True)
            raise Timeout(f"{self.label}: timed out after {timeout:g} s") from None
        except (EOFError, BrokenPipeError, OSError):
            try:
                code = self.proc.wait(10)
            except Exception:
                self.proc.kill()
                code = self.proc.wait()
            self.proc = None
            why = describe_exit(code) + self._stderr_tail(offset)
            raise BackendCrash(f"{self.label} crashed: {why}") from None
        if kind == "ok":
            return payload
        cls_name, status, message = payload
        if status == "unsupported":
            raise UnsupportedOp(self.label, message)
        raise _ERROR_CLASSES.get(status, BackendError)(message)

    def _stderr_tail(self, offset: int = 0) -> str:
        try:
            data = os.pread(self.stderr_file.fileno(), 1 << 20, offset)
            text = data.decode("utf-8", errors="replace")
        except (OSError, ValueError):
            return ""
        lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
        lines = [ln for ln in lines if "Stack dump" not in ln and not ln.lstrip().startswith("#")
                 and not ln.startswith(("I1", "W1", "PLEASE submit"))]
        return ("; stderr: " + " | ".join(lines[-4:])) if lines else ""

    def close(self, kill: bool = False) -> None:
        p = self.proc
        self.proc = None
        if p is None:
            return
        try:
            if not kill:
                p.stdin.close()
                p.wait(2)
        except Exception:
            pass
        if p.poll() is None:
            p.kill()
            p.wait(5)
        for f in (p.stdin, p.stdout):
            try:
                f.close()
            except Exception:
                pass

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            self.close(kill=True)
            self.stderr_file.close()
        except Exception:
            pass


def describe_exit(code: int | None) -> str:
    if code is None:
        return "process died"
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"


# --------------------------------------------------------------------------- #
# Wire types and the wrapper function
# --------------------------------------------------------------------------- #

BASIC = frozenset({"i1", "i8", "i16", "i32", "i64", "ui8", "ui16", "ui32", "ui64", "f16", "f32", "f64"})
_SMALL_INT = {"i2": "i8", "i4": "i8", "ui2": "ui8", "ui4": "ui8"}


@dataclass
class Wire:
    """How one tensor type crosses into a backend and back."""

    ttype: Any  # program TensorType
    pieces: tuple  # wire TensorTypes

    @property
    def name(self) -> str:
        return str(self.ttype.element)


def _tt(shape, name: str):
    return T.TensorType(shape, T.element_type(name))


def wire_for(ttype, native: frozenset[str] | None, label: str) -> Wire:
    """The wire form of ``ttype`` for a backend exchanging ``native`` element
    types (None: every type)."""
    if not isinstance(ttype, T.TensorType):
        raise UnsupportedOp(label, f"arguments or results of type {ttype}")
    el = ttype.element
    if getattr(el, "quantized", False):
        raise UnsupportedOp(label, f"quantized arguments or results ({ttype})")
    name = str(el)
    if name.startswith("f6E"):
        raise UnsupportedOp(label, f"{name} values cannot be passed to this backend")
    if native is None or name in native:
        return Wire(ttype, (ttype,))
    shape = ttype.shape
    if el.kind == "complex":
        part = "f32" if name == "complex<f32>" else "f64"
        return Wire(ttype, (_tt(shape, part), _tt(shape, part)))
    if name in _SMALL_INT:
        return Wire(ttype, (_tt(shape, _SMALL_INT[name]),))
    if el.kind == "float":
        if el.bits == 16:
            return Wire(ttype, (_tt(shape, "i16"),))
        if el.bits == 8:
            return Wire(ttype, (_tt(shape, "i8"),))
        if el.bits == 4:
            return Wire(ttype, (_tt(shape, "ui8"),))
    raise UnsupportedOp(label, f"{name} values cannot be passed to this backend")


def encode(w: Wire, a: np.ndarray) -> list[np.ndarray]:
    a = np.asarray(a)
    if len(w.pieces) == 1 and w.pieces[0] is w.ttype:
        return [a]
    el = w.ttype.element
    if el.kind == "complex":
        dt = w.pieces[0].dtype
        return [np.require(part.astype(dt), requirements="C") for part in (a.real, a.imag)]
    if w.name in _SMALL_INT:
        return [a.astype(w.pieces[0].dtype)]
    bits = T.to_bits(a).reshape(a.shape)
    if el.bits == 4:
        return [(bits & 0xF).astype(np.uint8)]
    return [bits.view(w.pieces[0].dtype)]


def decode(w: Wire, parts: Sequence[np.ndarray]) -> np.ndarray:
    if len(w.pieces) == 1 and w.pieces[0] is w.ttype:
        return np.asarray(parts[0]).astype(w.ttype.dtype, copy=False)
    el = w.ttype.element
    dt = w.ttype.dtype
    if el.kind == "complex":
        re, im = (np.asarray(p) for p in parts)
        out = np.empty(re.shape, dt)
        out.real = re
        out.imag = im
        return out
    p = np.asarray(parts[0])
    if w.name in _SMALL_INT:
        return p.astype(dt)
    if el.bits == 4:
        return (p.astype(np.uint8) & 0xF).view(dt)
    return np.require(p, requirements="C").view(T.bits_container(dt)).view(dt).reshape(p.shape)


def _in_ops(w: Wire, names: list[str], out: str) -> list[str]:
    """Ops turning wire values ``names`` into ``%out`` of the program type."""
    t = str(w.ttype)
    if len(w.pieces) == 1 and w.pieces[0] is w.ttype:
        return []
    p0 = str(w.pieces[0])
    el = w.ttype.element
    if el.kind == "complex":
        return [f'    {out} = "stablehlo.complex"({names[0]}, {names[1]}) : ({p0}, {p0}) -> {t}']
    if w.name in _SMALL_INT:
        return [f'    {out} = "stablehlo.convert"({names[0]}) : ({p0}) -> {t}']
    if el.bits == 4:
        mid = str(_tt(w.ttype.shape, "ui4"))
        return [f'    {out}_n = "stablehlo.convert"({names[0]}) : ({p0}) -> {mid}',
                f'    {out} = "stablehlo.bitcast_convert"({out}_n) : ({mid}) -> {t}']
    return [f'    {out} = "stablehlo.bitcast_convert"({names[0]}) : ({p0}) -> {t}']


def _out_ops(w: Wire, value: str, out: str) -> tuple[list[str], list[str]]:
    """Ops turning ``value`` of the program type into wire values."""
    t = str(w.ttype)
    if len(w.pieces) == 1 and w.pieces[0] is w.ttype:
        return [], [value]
    p0 = str(w.pieces[0])
    el = w.ttype.element
    if el.kind == "complex":
        return ([f'    {out}_re = "stablehlo.real"({value}) : ({t}) -> {p0}',
                 f'    {out}_im = "stablehlo.imag"({value}) : ({t}) -> {p0}'], [f"{out}_re", f"{out}_im"])
    if w.name in _SMALL_INT:
        return [f'    {out} = "stablehlo.convert"({value}) : ({t}) -> {p0}'], [out]
    if el.bits == 4:
        mid = str(_tt(w.ttype.shape, "ui4"))
        return ([f'    {out}_n = "stablehlo.bitcast_convert"({value}) : ({t}) -> {mid}',
                 f'    {out} = "stablehlo.convert"({out}_n) : ({mid}) -> {p0}'], [out])
    return [f'    {out} = "stablehlo.bitcast_convert"({value}) : ({t}) -> {p0}'], [out]


def replicated_attr(module: Module) -> Any:
    """For a program run on several devices (``mhlo.num_partitions`` or
    ``mhlo.num_replicas`` above 1): a function giving the attribute that
    makes a wrapper argument or result of some type whole on every device
    (``sdy.sharding`` on the module's first mesh with axes, else
    ``mhlo.sharding``);
    None for single-device programs."""
    from ...process_grid import grid_size_of

    r, p = grid_size_of(module)
    if r * p == 1:
        return None
    meshes = getattr(module, "meshes", None) or {}
    # a mesh without axes puts a value on one device: only one with axes replicates
    mesh = next((name for name, m in meshes.items() if getattr(m, "axes", ())), None)
    if mesh is not None:

        def sdy(t) -> str:
            dims = ", ".join(["{}"] * len(getattr(t, "shape", ())))
            return f"{{sdy.sharding = #sdy.sharding<@{mesh}, [{dims}]>}}"

        return sdy
    return lambda t: '{mhlo.sharding = "{replicated}"}'


def wrapper_text(callee: str, params: list[Wire | None], results: list[Wire],
                 declared: dict[int, Any] | None = None, consts: dict[int, str] | None = None,
                 attr: Any = None) -> str:
    """A public ``@main`` calling ``callee`` through wire types.

    ``declared``: parameters whose declared (dynamic) type differs from the
    wire's static type get a cast; ``consts``: parameters passed as a
    constant (``dense<...> : type`` text) instead of an argument; ``attr``:
    a function giving each wire argument's and result's attribute text
    (:func:`replicated_attr`)."""
    declared = declared or {}
    consts = consts or {}
    attr = attr or (lambda t: "")
    args: list[str] = []
    body: list[str] = []
    call_args: list[str] = []
    ptypes: list[str] = []
    for i, w in enumerate(params):
        if i in consts:
            body.append(f"    %p{i} = stablehlo.constant {consts[i]}")
            call_args.append(f"%p{i}")
            ptypes.append(consts[i].rsplit(" : ", 1)[1])
            continue
        names = [f"%w{i}_{j}" for j in range(len(w.pieces))]
        args += [f"{n}: {p} {attr(p)}".rstrip() for n, p in zip(names, w.pieces)]
        ops = _in_ops(w, names, f"%p{i}")
        body += ops
        value = f"%p{i}" if ops else names[0]
        if i in declared:
            body.append(f'    %q{i} = "stablehlo.convert"({value}) : ({w.ttype}) -> {declared[i]}')
            value = f"%q{i}"
        call_args.append(value)
        ptypes.append(str(declared.get(i, w.ttype)))
    rtypes = ", ".join(str(w.ttype) for w in results)
    n = len(results)
    lhs = "" if n == 0 else ("%r = " if n == 1 else f"%r:{n} = ")
    body.append(f"    {lhs}func.call @{callee}({', '.join(call_args)}) : ({', '.join(ptypes)}) -> ({rtypes})")
    outs: list[str] = []
    out_types: list[str] = []
    out_decls: list[str] = []
    for i, w in enumerate(results):
        v = "%r" if n == 1 else f"%r#{i}"
        ops, names = _out_ops(w, v, f"%o{i}")
        body += ops
        outs += names
        out_types += [str(p) for p in w.pieces]
        out_decls += [f"{p} {attr(p)}".rstrip() for p in w.pieces]
    ret = f"    func.return {', '.join(outs)} : {', '.join(out_types)}" if outs else "    func.return"
    head = f"  func.func public @main({', '.join(args)}) -> ({', '.join(out_decls)}) {{"
    return "\n".join([head, *body, ret, "  }"])


def splice(module_text: str, func_text: str) -> str:
    """Insert a function before the closing brace of a printed module."""
    lines = module_text.rstrip("\n").split("\n")
    for i in range(len(lines) - 1, -1, -1):
        if lines[i] == "}":
            return "\n".join(lines[:i] + [func_text] + lines[i:]) + "\n"
    raise BackendError("cannot find the end of the module in its printed form")


# --------------------------------------------------------------------------- #
# Native backends
# --------------------------------------------------------------------------- #


def check_ops(func: Func) -> list:
    """Check ops (check dialect or ``custom_call @check.*``) of ``func``'s body."""
    return [op for op in func.body.blocks[0].ops if is_check(op)] if func.body.blocks else []


def is_check(op) -> bool:
    if op.name.startswith("check."):
        return True
    target = str(op.attrs.get("call_target_name", ""))
    return op.name == "stablehlo.custom_call" and target.startswith("check.")


def _dynamic_inside(func: Func) -> bool:
    """Whether an op of ``func``'s body has a dynamically shaped result (a
    static program seen through dynamic types, which needs refining)."""
    return any(isinstance(t, T.TensorType) and not t.is_static
               for op in walk_ops(func.body) for t in op.result_types)


class NativeBackend(Backend):
    """A backend that runs MLIR text; subclasses implement :meth:`execute`.

    ``native``: element type names the backend exchanges directly (None: all).
    ``isolate``: run native calls in a child process by default.
    """

    name = "native"
    native: frozenset[str] | None = BASIC
    isolate = True
    spec = ""  # "module:Class" of the subclass, for the child process

    def __init__(self) -> None:
        self._child: Isolated | None = None

    # to implement -------------------------------------------------------
    def execute(self, text: str, args: list[np.ndarray]) -> list[np.ndarray]:
        """Run ``@main`` of ``text`` on wire-typed arrays."""
        raise NotImplementedError

    def check_available(self) -> None:
        """Raise :class:`BackendUnavailable` when the backend cannot run."""

    # plumbing -----------------------------------------------------------
    def _call(self, text: str, args: list[np.ndarray], opts: Any,
              default_isolate: bool | None = None) -> list[np.ndarray]:
        """Isolation: ``opts.isolate`` or ``opts.extra["isolate"]`` when set,
        else ``default_isolate``, else the backend's default."""
        isolate = getattr(opts, "isolate", None)
        if isolate is None:
            extra = getattr(opts, "extra", None) or {}
            isolate = extra.get("isolate", self.isolate if default_isolate is None else default_isolate)
        self.check_available()
        if not isolate:
            return self.execute(text, args)
        if self._child is None:
            self._child = Isolated(self.spec, self.name)
        return self._child.call("execute", text, args, timeout=getattr(opts, "timeout", None))

    def _run(self, module: Module, func: Func, args: Sequence[np.ndarray], result_types,
             strip_checks: bool, opts: Any, default_isolate: bool | None = None) -> list[np.ndarray]:
        from ... import frontend

        label = self.name
        if len(args) != len(func.param_types):
            raise ConformError(f"@{func.name} takes {len(func.param_types)} arguments, got {len(args)}")
        dynamic = any(isinstance(t, T.TensorType) and not t.is_static
                      for t in (*func.param_types, *result_types)) or _dynamic_inside(func)
        declared: dict[int, Any] = {}
        consts: dict[int, str] = {}
        params: list[Wire | None] = []
        for i, t in enumerate(func.param_types):
            if dynamic and isinstance(t, T.TensorType) and t.rank == 0 and t.element.kind in ("int", "uint"):
                consts[i] = f"dense<{int(np.asarray(args[i]))}> : {t}"
                params.append(None)
                continue
            if isinstance(t, T.TensorType) and not t.is_static:
                declared[i] = t
                t = T.TensorType(tuple(np.shape(args[i])), t.element)
            params.append(wire_for(t, self.native, label))
        results = [wire_for(t, self.native, label) for t in result_types]
        try:
            text, _ = frontend.prepare_entry(module.text, func.name, strip_checks=strip_checks)
        except ConformError:
            raise
        except Exception as e:
            first = str(e).strip().splitlines()
            raise UnsupportedOp(label, "the program does not parse with jaxlib's bindings"
                                + (f": {first[-1].strip()[:200]}" if first else "")) from None
        text = splice(text, wrapper_text(frontend.ENTRY_ALIAS, params, results, declared, consts,
                                         replicated_attr(module)))
        if dynamic:
            try:
                text = frontend.refine_shapes(text)
            except Exception as e:
                why = str(e).strip()[:200]
                raise UnsupportedOp(label, f"dynamic shapes could not be refined: {why}") from None
            head = next((ln for ln in text.splitlines() if "func.func public @main(" in ln), "")
            if "?" in head:
                raise UnsupportedOp(label, "dynamic shapes remain after refinement")
        wire_args: list[np.ndarray] = []
        for w, a in zip(params, args):
            if w is not None:
                wire_args += encode(w, a)
        outs = self._call(text, wire_args, opts, default_isolate)
        values: list[np.ndarray] = []
        k = 0
        if len(outs) != sum(len(w.pieces) for w in results):
            raise BackendError(f"{label} returned {len(outs)} values, expected "
                               f"{sum(len(w.pieces) for w in results)}")
        for i, w in enumerate(results):
            n = len(w.pieces)
            v = decode(w, outs[k:k + n])
            want = w.ttype.shape
            if len(v.shape) != len(want) or any(d not in (None, s) for d, s in zip(want, v.shape)):
                raise BackendError(f"{label} returned shape {list(v.shape)} for result #{i} "
                                   f"of type {w.ttype}")
            values.append(v)
            k += n
        return values

    def run_function(self, module, func_name: str, args: Sequence[np.ndarray], opts: Any = None) -> tuple:
        func = module.funcs.get(func_name)
        if func is None:
            raise ConformError(f"no function @{func_name} in module")
        return tuple(self._run(module, func, args, func.result_types, False, opts))

    def _test_run(self, module: Module, func: Func, opts: Any) -> tuple[list, list[list[np.ndarray]]]:
        checks = check_ops(func)
        top = set(map(id, checks))
        for f in _reachable(module, func):
            for op in walk_ops(f.body):
                if is_check(op) and id(op) not in top:
                    raise UnsupportedOp(self.name, f"check op outside the test function's body at {op.loc}")
        for op in checks:
            if op.name == "check.expect_serialized_eq":
                raise UnsupportedOp(self.name, "check.expect_serialized_eq needs interpreter probes")
        types = [t for op in checks for t in op.operand_types]
        flat = self._run(module, func, (), types, True, opts)
        grouped: list[list[np.ndarray]] = []
        k = 0
        for op in checks:
            grouped.append(flat[k:k + len(op.operands)])
            k += len(op.operands)
        return checks, grouped

    def test_values(self, module, func, opts) -> list[np.ndarray]:
        _, grouped = self._test_run(module, func, opts)
        return [g[0] for g in grouped if g]

    def run_test(self, module, func, opts) -> dict[str, Any]:
        checks, grouped = self._test_run(module, func, opts)
        return check_outcome(evaluate_checks(module, checks, grouped))


def evaluate_checks(module: Module, checks: list, values: list[list[np.ndarray]]) -> list:
    """Evaluate check ops on given operand values with the check kernels of
    :mod:`stablehlo_conform.kernels.check`; returns ``(ok, message, loc)``s."""
    from ...engine import Engine, OpContext
    from ...kernels import check as check_kernels
    from ...kernels.custom_call import custom_call
    from ...kernels.registry import Registry, load_all

    eng = Engine(module, Registry())
    for op, vals in zip(checks, values):
        if op.name == "stablehlo.custom_call":
            fn = custom_call
        else:
            fn = getattr(check_kernels, op.name.split(".", 1)[1], None) or load_all().lookup(op.name)
        if fn is None:
            raise UnsupportedOp(op.name, loc=str(op.loc))
        fn(OpContext(op, eng), *vals)
    return eng.checks


def _reachable(module: Module, func: Func) -> list[Func]:
    """``func`` and every function it references (calls, symbol attributes)."""
    from ...program import SymbolRef

    seen: dict[str, Func] = {}
    todo = [func]
    while todo:
        f = todo.pop()
        if f.name in seen:
            continue
        seen[f.name] = f
        for op in walk_ops(f.body):
            for v in op.attrs.values():
                for x in (v if isinstance(v, tuple) else (v,)):
                    if isinstance(x, SymbolRef) and x.name in module.funcs:
                        todo.append(module.funcs[x.name])
    return list(seen.values())


def check_outcome(checks: list) -> dict[str, Any]:
    failed = [(msg, loc) for ok, msg, loc in checks if not ok]
    out: dict[str, Any] = {"checks": len(checks)}
    if failed:
        shown = [f"{loc}: {msg}" for msg, loc in failed[:3]]
        more = f" (+{len(failed) - 3} more)" if len(failed) > 3 else ""
        out.update(status="fail", message="; ".join(shown) + more)
    else:
        out.update(status="pass", message="")
    return out
