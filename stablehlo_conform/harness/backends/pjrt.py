"""PJRT clients as backends: any vendor's PJRT plugin, and XLA CPU.

``pjrt:PATH`` loads a PJRT plugin library (a ``.so`` exporting
``GetPjrtApi``); ``pjrt:NAME`` finds an installed plugin the way JAX does
(a module of the ``jax_plugins`` namespace package, an entry point of the
``jax_plugins`` group, or a ``name:path`` pair of the environment variable
``PJRT_NAMES_AND_LIBRARY_PATHS``). Create options and the device index
follow a ``?``: ``pjrt:/opt/x.so?cpu_device_count=2&device=1`` (the CLI's
``--pjrt-option key=value`` and ``--pjrt-device N`` write them there), so
the backend's name alone rebuilds it in any process.

The client is jaxlib's own (``xla_client.load_pjrt_plugin_dynamically``,
``make_c_api_client``, ``compile_and_load``, ``execute_sharded``): it already
speaks every PJRT C API version jaxlib supports, re-serializes programs to
the plugin's StableHLO version, and is what JAX users run a plugin through.
The built-in ``xla`` backend is this class over jaxlib's built-in CPU client.

Each backend lives in its own child process (:mod:`.isolated`): a plugin
that aborts costs one test, and two plugins never share a process.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import UnsupportedOp
from .base import BackendError, BackendUnavailable
from .native import NativeBackend

PREFIX = "pjrt:"
# The StableHLO versions assumed for a plugin that states none: from VHLO's
# first version up to the bindings' own (jaxlib then sends its current form).
DEFAULT_MINIMUM = (0, 9, 0)

_TYPE_WORDS = re.compile(r"\b(f8E[0-9A-Za-z]+|f6E[0-9A-Za-z]+|f4E[0-9A-Za-z]+|bf16|[fF](?:16|32|64)|"
                         r"complex<f(?:32|64)>|[cC](?:64|128)|u?i(?:1|2|4|8|16|32|64)|[SU](?:2|4|8|16|32|64)|"
                         r"PRED|BF16|F8E[0-9A-Za-z]+|F4E[0-9A-Za-z]+|F6E[0-9A-Za-z]+)\b")


# --------------------------------------------------------------------------- #
# Names: pjrt:TARGET?key=value&device=N
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class PjrtSpec:
    """What ``pjrt:...`` names: a library path or plugin name, create
    options (text values, typed by :func:`typed_option`) and a device."""

    target: str
    options: tuple[tuple[str, str], ...] = ()
    device: int = 0
    stablehlo: str = ""  # send programs as portable artifacts of this version

    @property
    def is_path(self) -> bool:
        return "/" in self.target or self.target.endswith((".so", ".dylib", ".dll"))

    def name(self) -> str:
        extra = ([f"{k}={v}" for k, v in self.options] + ([f"device={self.device}"] if self.device else [])
                 + ([f"stablehlo={self.stablehlo}"] if self.stablehlo else []))
        return PREFIX + self.target + ("?" + "&".join(extra) if extra else "")


def parse_name(name: str) -> PjrtSpec:
    """``pjrt:TARGET[?key=value&...]`` -> :class:`PjrtSpec` (``device`` is
    the device index, ``stablehlo`` a StableHLO version to serialize programs
    to before compiling, every other key a plugin create option)."""
    if not name.startswith(PREFIX) or len(name) == len(PREFIX):
        raise BackendUnavailable(f"a PJRT backend is named pjrt:PATH or pjrt:NAME, not {name!r}")
    target, _, query = name[len(PREFIX):].partition("?")
    options: list[tuple[str, str]] = []
    device = 0
    version = ""
    for part in filter(None, query.split("&")):
        key, eq, value = part.partition("=")
        if not eq or not key:
            raise BackendUnavailable(f"PJRT option {part!r} is not key=value")
        if key == "device":
            if not value.isdigit():
                raise BackendUnavailable(f"PJRT device index {value!r} is not a number")
            device = int(value)
        elif key == "stablehlo":
            if not re.fullmatch(r"\d+\.\d+(\.\d+)?", value):
                raise BackendUnavailable(f"StableHLO version {value!r} is not MAJOR.MINOR[.PATCH]")
            version = value if value.count(".") == 2 else value + ".0"
        else:
            typed_option(value)
            options.append((key, value))
    return PjrtSpec(target, tuple(options), device, version)


def with_options(backend: str, options: tuple[str, ...] = (), device: int | None = None) -> str:
    """``backend`` with ``key=value`` create options and a device index added."""
    spec = parse_name(backend)
    opts = list(spec.options)
    for kv in options:
        key, eq, value = kv.partition("=")
        if not eq or not key:
            raise BackendUnavailable(f"--pjrt-option {kv!r} is not key=value")
        typed_option(value)
        opts = [(k, v) for k, v in opts if k != key] + [(key, value)]
    return PjrtSpec(spec.target, tuple(opts), spec.device if device is None else device, spec.stablehlo).name()


def typed_option(text: str) -> bool | int | float | str | list[int]:
    """A create option's value as the PJRT C API types it: ``true``/``false``
    (bool), an integer (int64), a float, ``[1,2,3]`` (int64 list), else a
    string (quotes force a string: ``"8"``)."""
    t = text.strip()
    if t.lower() in ("true", "false"):
        return t.lower() == "true"
    if re.fullmatch(r"[+-]?\d+", t):
        return int(t)
    if re.fullmatch(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?", t):
        return float(t)
    if t.startswith("[") and t.endswith("]"):
        items = [x.strip() for x in t[1:-1].split(",") if x.strip()]
        if not all(re.fullmatch(r"[+-]?\d+", x) for x in items):
            raise BackendUnavailable(f"PJRT option value {text!r}: a list holds integers only")
        return [int(x) for x in items]
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "\"'":
        return t[1:-1]
    return t


# --------------------------------------------------------------------------- #
# Finding installed plugins (without loading them)
# --------------------------------------------------------------------------- #


def discover() -> dict[str, tuple[str, str]]:
    """Installed plugins: name -> (how it was found, module or library path).

    Looks where JAX looks, without importing anything: the environment
    variable ``PJRT_NAMES_AND_LIBRARY_PATHS`` (``name:path,...``), modules of
    the ``jax_plugins`` namespace package and entry points of the
    ``jax_plugins`` group."""
    found: dict[str, tuple[str, str]] = {}
    for item in filter(None, os.environ.get("PJRT_NAMES_AND_LIBRARY_PATHS", "").split(",")):
        name, sep, path = item.partition(":")
        if sep and name and path:
            found[name.strip()] = ("PJRT_NAMES_AND_LIBRARY_PATHS", path.strip())
    try:
        import importlib.util
        import pkgutil

        spec = importlib.util.find_spec("jax_plugins")
        for mod in pkgutil.iter_modules(list(spec.submodule_search_locations or ()) if spec else []):
            found.setdefault(mod.name, ("jax_plugins namespace", f"jax_plugins.{mod.name}"))
    except (ImportError, ValueError):  # pragma: no cover - a broken namespace package
        pass
    try:
        from importlib.metadata import entry_points

        for ep in entry_points(group="jax_plugins"):
            found.setdefault(ep.name, ("jax_plugins entry point", ep.value))
    except Exception:  # pragma: no cover
        pass
    return found


def check_target(spec: PjrtSpec) -> None:
    """Raise :class:`BackendUnavailable` when ``spec`` names no plugin."""
    if spec.is_path:
        if not os.path.isfile(spec.target):
            raise BackendUnavailable(f"no PJRT plugin library at {spec.target}")
        return
    plugins = discover()
    if spec.target not in plugins:
        have = ", ".join(sorted(plugins)) or "none installed"
        raise BackendUnavailable(f"no PJRT plugin named {spec.target!r} (found: {have}); "
                                 "give the library path as pjrt:/path/to/plugin.so")


def library_of(target: str) -> tuple[str, dict[str, Any]]:
    """(library path, create options the plugin registers) of an installed
    plugin; imports and initialises a ``jax_plugins`` module (in the child)."""
    kind, where = discover()[target]
    if kind == "PJRT_NAMES_AND_LIBRARY_PATHS":
        if where.endswith(".json"):
            import json

            with open(where) as f:
                cfg = json.load(f)
            return cfg["library_path"], dict(cfg.get("create_option") or {})
        return where, {}
    import importlib

    from jax._src import xla_bridge

    seen: list[tuple[str, dict]] = []
    real = xla_bridge.register_plugin

    def capture(name, *, priority=400, library_path=None, options=None, **kw):
        seen.append((library_path, dict(options or {})))

    module = importlib.import_module(where.split(":")[0])
    xla_bridge.register_plugin = capture
    try:
        module.initialize()
    finally:
        xla_bridge.register_plugin = real
    paths = [(p, o) for p, o in seen if p]
    if not paths:
        raise BackendUnavailable(f"PJRT plugin {target!r} ({where}) registered no library path")
    return paths[0]


# --------------------------------------------------------------------------- #
# The backend
# --------------------------------------------------------------------------- #


def _version_text(v: tuple[int, ...] | None, parts: int = 2) -> str:
    return ".".join(str(x) for x in v[:parts]) if v else "?"


class PjrtBackend(NativeBackend):
    """A PJRT client running programs on one of its devices; ``target`` None
    is jaxlib's built-in CPU client (the ``xla`` backend)."""

    native = None  # PJRT clients exchange every element type NumPy/ml_dtypes know
    isolate = True
    spec = "stablehlo_conform.harness.backends.pjrt:PjrtBackend"

    def __init__(self, name: str | None = None) -> None:
        super().__init__()
        self.pjrt = parse_name(name) if name else None
        if name:
            self.name = self.pjrt.name()
            self.init = (self.name,)
        self._client: Any = None
        self._library = ""
        self._cache: dict[tuple[str, int], Any] = {}

    def check_available(self) -> None:
        try:
            import jax  # noqa: F401
        except ImportError as e:  # pragma: no cover
            raise BackendUnavailable(f"{self.name} backend needs jax/jaxlib: {e}") from None
        if self.pjrt is not None:
            check_target(self.pjrt)

    # the client ----------------------------------------------------------
    def make_client(self) -> Any:
        """Load the plugin (once per process) and create its client."""
        from jax._src.lib import xla_client as xc

        spec = self.pjrt
        if spec.is_path:
            library, defaults = os.path.abspath(spec.target), {}
        else:
            library, defaults = library_of(spec.target)
        self._library = library
        import hashlib

        # one registration per library file, even where two share a base name
        digest = hashlib.sha1(library.encode()).hexdigest()[:8]
        name = f"conform_{re.sub(r'[^0-9A-Za-z]', '_', os.path.basename(library).rsplit('.', 1)[0])}_{digest}"
        try:
            if not xc.pjrt_plugin_loaded(name):
                xc.load_pjrt_plugin_dynamically(name, library)
            if not xc.pjrt_plugin_initialized(name):
                xc.initialize_pjrt_plugin(name)
            options = {**defaults, **{k: typed_option(v) for k, v in spec.options}}
            return xc.make_c_api_client(name, options or None)
        except Exception as e:
            raise BackendUnavailable(f"{self.name}: the plugin does not load: {str(e).strip()[:500]}") from None

    def client(self) -> Any:
        if self._client is None:
            self._client = self.make_client()
        return self._client

    def devices(self) -> list:
        return list(self.client().devices())

    def window(self) -> tuple[tuple[int, ...], tuple[int, ...], bool]:
        """(minimum, current) StableHLO version the client accepts, and
        whether it stated them (else the documented default window)."""
        from ... import frontend

        c = self.client()
        cur = getattr(c, "stablehlo_current_version", None)
        low = getattr(c, "stablehlo_minimum_version", None)
        if cur:
            return tuple(low or DEFAULT_MINIMUM), tuple(cur), True
        return DEFAULT_MINIMUM, frontend.stablehlo_version(), False

    def describe(self) -> dict[str, Any]:
        """What ``conform backends`` prints about this client."""
        c = self.client()
        devs = list(c.devices())
        low, cur, stated = self.window()
        c_api = c.is_c_api() if callable(getattr(c, "is_c_api", None)) else bool(getattr(c, "is_c_api", False))
        major = getattr(c, "pjrt_c_api_major_version", None) if c_api else None
        minor = getattr(c, "pjrt_c_api_minor_version", None) if c_api else None
        return {
            "name": self.name, "library": self._library or "(built into jaxlib)",
            "platform": c.platform, "platform_version": c.platform_version,
            "pjrt_c_api": f"{major}.{minor}" if minor is not None else None,
            "devices": len(devs), "device_kinds": sorted({d.device_kind for d in devs}),
            "stablehlo_minimum": ".".join(map(str, low)), "stablehlo_current": ".".join(map(str, cur)),
            "window_stated": stated, "loads": True,
        }

    def info(self, timeout: float = 120) -> dict[str, Any]:
        """:meth:`describe` run in the child, or why the client does not load."""
        from ...errors import ConformError

        try:
            self.check_available()
            return self.child().call("describe", timeout=timeout)
        except ConformError as e:
            return {"name": self.name, "loads": False, "error": f"{e.status}: {e}"}

    # compiling and running -----------------------------------------------
    def compile(self, text: str | bytes, devices: list, replicas: int, partitions: int) -> Any:
        """Compile ``@main`` of ``text`` (or a portable artifact) for ``devices`` (one small step, so a
        client needing set-up before its first compile overrides only this)."""
        from jax._src import compiler
        from jax._src.lib import xla_client as xc

        # as JAX compiles: SPMD partitioning for several partitions, Shardy's for programs carrying sdy
        opts = compiler.get_compile_options(replicas, partitions,
                                            device_assignment=np.array([d.id for d in devices]).reshape(
                                                replicas, partitions))
        if partitions > 1:
            is_sdy = b"sdy." in text if isinstance(text, bytes) else "sdy." in text
            opts.executable_build_options.use_shardy_partitioner = is_sdy
        return self.client().compile_and_load(text, xc.DeviceList(tuple(devices)), opts)

    def execute(self, text: str, args: list[np.ndarray]) -> list[np.ndarray]:
        import jax

        replicas, partitions = grid_of_text(text)
        devs = self.devices()
        need = replicas * partitions
        first = self.pjrt.device if self.pjrt is not None else 0
        if first >= len(devs):
            raise BackendUnavailable(f"{self.name}: device {first} does not exist ({len(devs)} devices)")
        if need > 1 and need > len(devs):
            raise UnsupportedOp(self.name, f"needs {need} devices ({replicas} replicas x {partitions} partitions); "
                                f"the client has {len(devs)}")
        use = [devs[first]] if need == 1 else devs[:need]
        exe = self._cache.get((text, need))
        if exe is None:
            version = self.pjrt.stablehlo if self.pjrt is not None else ""
            program: str | bytes = text
            if version:
                from ... import frontend

                try:
                    program = frontend.serialize_portable_artifact(text, version)
                except Exception as e:
                    raise self._version_error(text, str(e).strip()) from None
            try:
                exe = self.compile(program, use, replicas, partitions)
            except Exception as e:
                raise self._compile_error(text, str(e).strip()) from None
            if len(self._cache) > 256:
                self._cache.clear()
            self._cache[text, need] = exe
        try:
            with jax.enable_x64(True):
                if need == 1:
                    bufs = [jax.device_put(np.asarray(a), use[0]) for a in args]
                else:  # every process of the grid gets the same arguments
                    sharding = jax.sharding.NamedSharding(jax.sharding.Mesh(np.array(use), ("p",)),
                                                          jax.sharding.PartitionSpec())
                    bufs = [jax.device_put(np.asarray(a), sharding) for a in args]
            out = exe.execute_sharded(bufs)
            return [np.asarray(x[0]) for x in out.disassemble_into_single_device_arrays()]
        except Exception as e:
            raise BackendError(f"{self.name}: execution failed: {str(e).strip()[:500]}") from None

    def _compile_error(self, text: str, msg: str) -> Exception:
        """A compile failure as the most precise status: a StableHLO version
        the client does not accept, an element type it cannot take, an
        unimplemented feature, else an error."""
        first = msg.splitlines()[0][:300] if msg else "compile failed"
        if "serialize" in msg.lower() and "version" in msg.lower():
            return self._version_error(text, msg)
        m = re.search(r"failed to legalize operation '([\w.]+)'|'([\w.]+)' op can't be translated", msg)
        if m:
            return UnsupportedOp(self.name, f"{m.group(1) or m.group(2)} is not lowered by the client: {first}")
        m = re.search(r"[Ee]xpected element type[^;]*; got (\w+)", msg)
        if m:  # an element type the client's compiler does not take for this op
            return UnsupportedOp(self.name, f"element type {m.group(1)}: {first}")
        if "UNIMPLEMENTED" in msg or "not supported" in msg.lower() or "unsupported" in msg.lower():
            m = _TYPE_WORDS.search(msg)
            what = f"element type {m.group(0)}: " if m and "type" in msg.lower() else ""
            return UnsupportedOp(self.name, what + first)
        return BackendError(f"{self.name}: compile failed: {msg[:500]}")

    def _version_error(self, text: str, msg: str) -> Exception:
        from ... import frontend

        low, cur, _ = self.window()
        sent = self.pjrt.stablehlo if self.pjrt is not None else ""
        if sent:
            cur = frontend.version_tuple(sent)
        try:
            need, diag = frontend.needed_stablehlo_version(text, cur)
        except Exception as e:  # the bindings could not even parse it again
            need, diag = None, str(e).strip()
        diag = (diag or msg.splitlines()[0]).split(" (see current operation")[0][:300]
        accepts = (f"sent as StableHLO {_version_text(cur, 3)}" if sent else
                   f"plugin accepts {_version_text(cur)} (from {_version_text(low)})")
        if need is None:
            foreign = sorted(set(re.findall(r"\b((?:arith|tensor|math|shape|scf|cf|complex|memref)\.[a-z_]+)\b",
                                            text)))
            if foreign:
                return UnsupportedOp(self.name, f"{', '.join(foreign[:4])} outside StableHLO cannot be sent to a "
                                     f"client of another StableHLO version as a portable artifact; {accepts}")
            return UnsupportedOp(self.name, f"does not serialize to any StableHLO version; {accepts}: {diag}")
        return UnsupportedOp(self.name, f"needs StableHLO {_version_text(need)}; {accepts}: {diag}")


def grid_of_text(text: str) -> tuple[int, int]:
    """(replicas, partitions) a module asks for (``mhlo.num_replicas`` /
    ``mhlo.num_partitions`` module attributes; 1 when absent)."""
    head = next((ln for ln in text.splitlines() if ln.lstrip().startswith("module")), "")
    r = re.search(r"mhlo\.num_replicas\s*=\s*(\d+)", head)
    p = re.search(r"mhlo\.num_partitions\s*=\s*(\d+)", head)
    return (int(r.group(1)) if r else 1), (int(p.group(1)) if p else 1)
