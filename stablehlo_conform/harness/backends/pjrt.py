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

import contextlib
import hashlib
import importlib
import json
import mmap
import os
import pkgutil
import re
import struct
import sys
import threading
import traceback
from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import frontend
from ...errors import CheckFailure, ConformError, Timeout, UnsupportedOp
from ...process_grid import MAX_PROCESSES
from ..records.guard import interruptible
from ..records.names import LIBRARY_SUFFIX, BackendName, display_name
from .base import BackendError, BackendUnavailable
from .native import LOAD_SECONDS, NativeBackend

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
    to before compiling, every other key a plugin create option; a library
    path holding ``?`` is taken whole, see :class:`~..records.names.BackendName`)."""
    if not name.startswith(PREFIX) or len(name) == len(PREFIX):
        raise BackendUnavailable(f"a PJRT backend is named pjrt:PATH or pjrt:NAME, not {name!r}")
    parsed = BackendName.parse(name)
    target, query = parsed.target, parsed.query
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

# JAX's own names of plugins it loads from a Python package of another name
# (its xla_bridge loads libtpu's library as the "tpu" plugin).
ALIASES = {"tpu": "libtpu"}
PACKAGE = "Python package"


def exports_pjrt_api(path: str) -> bool | None:
    """Whether the library at ``path`` defines ``GetPjrtApi`` (read from its
    ELF dynamic symbol table, without loading it); None when it is not a
    64-bit little-endian ELF file or cannot be read."""
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            if m[:4] != b"\x7fELF" or m[4] != 2 or m[5] != 1:
                return None
            shoff, = struct.unpack_from("<Q", m, 0x28)
            shentsize, shnum = struct.unpack_from("<HH", m, 0x3A)
            heads = [struct.unpack_from("<IIQQQQIIQQ", m, shoff + i * shentsize) for i in range(shnum)]
            for _, kind, _, _, off, size, link, _, _, entsize in heads:
                if kind != 11 or not entsize:  # SHT_DYNSYM, its names in section `link`
                    continue
                names_at, names_size = heads[link][4], heads[link][5]
                at = m.find(b"\0GetPjrtApi\0", names_at, names_at + names_size)
                return at >= 0 and _defines(m, off, size // entsize, entsize, at + 1 - names_at)
            return False
    except (OSError, ValueError, struct.error, IndexError):
        return None


def _defines(m: mmap.mmap, off: int, count: int, entsize: int, name: int) -> bool:
    """Whether one of the ``count`` ELF symbols at ``off`` is named by the
    string at ``name`` and defined in the library (a section index not 0)."""
    for i in range(count):
        st_name, _, _, section = struct.unpack_from("<IBBH", m, off + i * entsize)
        if st_name == name and section != 0:
            return True
    return False


def package_plugins() -> dict[str, str]:
    """Top-level Python packages holding one PJRT plugin library (a file
    defining ``GetPjrtApi``) in their folder, as ``libtpu`` holds
    ``libtpu.so``: package name -> library. Found without importing them."""
    found: dict[str, str] = {}
    seen: set[str] = set()
    for mod in pkgutil.iter_modules():
        folder = os.path.join(str(getattr(mod.module_finder, "path", "")), mod.name)
        if not mod.ispkg or mod.name in seen:
            continue
        seen.add(mod.name)  # the first on the path, as import finds it
        try:
            files = sorted(f for f in os.listdir(folder) if LIBRARY_SUFFIX.search(f))
        except OSError:
            continue
        libraries = [os.path.join(folder, f) for f in files if exports_pjrt_api(os.path.join(folder, f))]
        if len(libraries) == 1:
            found[mod.name] = libraries[0]
    return found


def discover() -> dict[str, tuple[str, str]]:
    """Installed plugins: name -> (how it was found, module or library path).

    Looks where JAX looks, without importing anything: the environment
    variable ``PJRT_NAMES_AND_LIBRARY_PATHS`` (``name:path,...``), modules of
    the ``jax_plugins`` namespace package and entry points of the
    ``jax_plugins`` group, and Python packages shipping a plugin library
    (:func:`package_plugins`)."""
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
    for name, library in package_plugins().items():
        found.setdefault(name, (PACKAGE, library))
    return found


_LOCATED: dict[tuple, tuple[str, str]] = {}


def locate(target: str) -> tuple[str, str] | None:
    """(how it was found, where) of the installed plugin named ``target``
    (or by JAX's name for it, :data:`ALIASES`); None when none is. A plugin
    found is remembered for the process's path and plugin list (a backend
    checks its target before every test; looking costs tens of ms)."""
    key = (target, os.environ.get("PJRT_NAMES_AND_LIBRARY_PATHS", ""), tuple(sys.path))
    if key not in _LOCATED:
        plugins = discover()
        found = plugins.get(target) or plugins.get(ALIASES.get(target, ""))
        if found is None:
            return None
        _LOCATED[key] = found
    return _LOCATED[key]


def reusable_name(name: str) -> str:
    """``name`` as commands show it for a user to give back: its display
    name where that names the same library here (the installed package
    holding it), else ``name`` itself (a library path, options kept)."""
    short = display_name(name)
    if short == name:
        return name
    try:
        found = locate(parse_name(short).target)
    except ConformError:
        return name
    library = BackendName.parse(name).target
    same = found is not None and found[0] == PACKAGE and os.path.realpath(found[1]) == os.path.realpath(library)
    return short if same else name


def check_target(spec: PjrtSpec) -> None:
    """Raise :class:`BackendUnavailable` when ``spec`` names no plugin."""
    if spec.is_path:
        if not os.path.isfile(spec.target):
            raise BackendUnavailable(f"no PJRT plugin library at {spec.target}")
        return
    if locate(spec.target) is None:
        plugins = discover()
        have = ", ".join(sorted(plugins)) or "none installed"
        raise BackendUnavailable(f"no PJRT plugin named {spec.target!r} (found: {have}); "
                                 "give the library path as pjrt:/path/to/plugin.so")



def check_stablehlo(spec: PjrtSpec) -> None:
    """Raise :class:`BackendUnavailable` when ``spec`` asks for a StableHLO
    version (``?stablehlo=``) the bindings cannot serialize to: every program
    would be unsupported, so it is refused before any test, with the versions
    they take."""
    if not spec.stablehlo:
        return
    low, cur = frontend.stablehlo_minimum_version(), frontend.stablehlo_version()
    if not low <= frontend.version_tuple(spec.stablehlo) <= cur:
        raise BackendUnavailable(f"stablehlo={spec.stablehlo}: not a StableHLO version the bindings know "
                                 f"(they take {_version_text(low, 3)} to {_version_text(cur, 3)})")


@dataclass
class Loaded:
    """A plugin loaded in this process: the name its PJRT C API is registered
    under (the one its client is created with), the library, the create
    options it registered (a mapping, or a callable giving one when the client
    is created) and the C API capsule (None for a library loaded by path)."""

    name: str
    library: str
    options: Any = None
    c_api: Any = None

    def create_options(self) -> dict[str, Any]:
        opts = self.options() if callable(self.options) else self.options
        return dict(opts or {})


def _registration_name(library: str) -> str:
    """The name a library given by path is registered under: one per file,
    even where two share a base name."""
    digest = hashlib.sha1(library.encode()).hexdigest()[:8]
    return f"conform_{re.sub(r'[^0-9A-Za-z]', '_', os.path.basename(library).rsplit('.', 1)[0])}_{digest}"


def load_library(library: str, name: str | None = None) -> Loaded:
    """Load a plugin library by path (once per process), as
    ``xla_client.load_pjrt_plugin_dynamically`` does for JAX."""
    from jax._src.lib import xla_client as xc

    name = name or _registration_name(library)
    api = None
    if not xc.pjrt_plugin_loaded(name):
        api = xc.load_pjrt_plugin_dynamically(name, library)
    return Loaded(name, library, None, api)


def load_module(target: str) -> Loaded:
    """Load an installed plugin as JAX loads it: a ``jax_plugins`` module's
    ``initialize()`` (or a ``PJRT_NAMES_AND_LIBRARY_PATHS`` entry) registers
    it. ``xla_bridge.register_plugin`` is answered here, in the backend's
    child process: the library is loaded under the plugin's own name and the
    PJRT C API capsule returned, so a plugin whose ``initialize()`` hands
    that capsule to its extension (the CUDA and ROCm plugins register their
    custom-call targets that way) registers them with the library conform's
    client is created from. JAX's own list of backends is left untouched."""
    found = locate(target)
    if found is None:
        raise BackendUnavailable(f"no PJRT plugin named {target!r}")
    kind, where = found
    if kind == PACKAGE:
        return load_library(where, target)
    if kind == "PJRT_NAMES_AND_LIBRARY_PATHS":
        if where.endswith(".json"):
            with open(where) as f:
                cfg = json.load(f)
            loaded = load_library(cfg["library_path"], target)
            loaded.options = dict(cfg.get("create_option") or {})
            return loaded
        return load_library(where, target)
    from jax._src import xla_bridge
    from jax._src.lib import xla_client as xc

    seen: list[Loaded] = []

    def register(plugin_name, *, priority=400, library_path=None, options=None, c_api=None, **_):
        if library_path:
            loaded = load_library(library_path, plugin_name)
        elif c_api is not None:
            if not xc.pjrt_plugin_loaded(plugin_name):
                xc.load_pjrt_plugin_with_c_api(plugin_name, c_api)
            loaded = Loaded(plugin_name, "(C API given by the plugin module)", None, c_api)
        else:
            return None
        loaded.options = options
        seen.append(loaded)
        return loaded.c_api

    module_name = where.split(":")[0]
    real = xla_bridge.register_plugin
    xla_bridge.register_plugin = register
    missing = _MissingModules()
    sys.meta_path.append(missing)
    try:
        module = importlib.import_module(module_name)
        init = getattr(module, "initialize", None)
        if init is None:
            raise BackendUnavailable(f"{module_name} has no initialize()")
        init()
    except BackendUnavailable:
        raise
    except Exception as e:
        raise BackendUnavailable(_init_failure(module_name, e, missing.names)) from None
    finally:
        xla_bridge.register_plugin = real
        sys.meta_path.remove(missing)
    if not seen:
        raise BackendUnavailable(f"{module_name}.initialize() registered no PJRT plugin "
                                 "(it found no device or library it needs)")
    return seen[0]


class _MissingModules:
    """A finder last on ``sys.meta_path`` while a plugin module loads: it
    notes the modules the plugin tried to import that no finder found (a
    plugin may swallow that ImportError and fail later without a word, as
    the CUDA plugin's ``assert cuda_versions is not None`` does without its
    companion package ``jax_cuda12_plugin``)."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name not in self.names:
            self.names.append(name)
        return None


def _init_failure(module_name: str, e: Exception, missing: list[str]) -> str:
    """Why a plugin module's ``initialize()`` failed: its exception's
    message, or for one without a message (a bare ``assert``) the line that
    raised it and the modules it tried to import that are not installed."""
    text = str(e).strip()
    if text:
        return f"{module_name}.initialize() failed: {type(e).__name__}: {text[:400]}"
    frames = traceback.extract_tb(e.__traceback__)
    at = f" at {frames[-1].filename}:{frames[-1].lineno} ({(frames[-1].line or '').strip()})" if frames else ""
    why = (f"; Python modules it tried to import are not installed: {', '.join(missing)}" if missing
           else "; it tried to import no module that is missing")
    return f"{module_name}.initialize() failed: {type(e).__name__} without a message{at}{why}"


def jax_create_options(name: str) -> dict[str, Any]:
    """Create options JAX adds from its own configuration for a plugin of
    this name (``jax_pjrt_client_create_options``, the visible devices of
    ``cuda``/``rocm``), as ``make_pjrt_c_api_client`` adds them."""
    try:
        from jax._src import xla_bridge

        return dict(xla_bridge._options_from_jax_configs(name))
    except Exception:  # pragma: no cover - a jax without it
        return {}


# --------------------------------------------------------------------------- #
# The backend
# --------------------------------------------------------------------------- #


def _first_lines(text: str, n: int = 3) -> str:
    """The first lines of a native error (its stack trace and blank lines dropped)."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip() and not ln.startswith("\t")]
    lines = [ln for ln in lines if "Stack trace" not in ln and not ln.startswith("***")]
    return " | ".join(lines[:n])[:500] or "no message"


def _version_text(v: tuple[int, ...] | None, parts: int = 2) -> str:
    return ".".join(str(x) for x in v[:parts]) if v else "?"


class PjrtBackend(NativeBackend):
    """A PJRT client running programs on one of its devices; ``target`` None
    is jaxlib's built-in CPU client (the ``xla`` backend)."""

    native = None  # PJRT clients exchange every element type NumPy/ml_dtypes know
    isolate = True
    spec = "stablehlo_conform.harness.backends.pjrt:PjrtBackend"
    start_method = "start_client"

    def __init__(self, name: str | None = None) -> None:
        super().__init__()
        self.pjrt = parse_name(name) if name else None
        if name:
            self.name = self.pjrt.name()
            self.init = (self.name,)
        self._client: Any = None
        self._library = ""
        self._cache: dict[tuple[str, int], Any] = {}
        self._info: dict[str, Any] | None = None  # what the load check's child described

    @property
    def label(self) -> str:
        return display_name(self.name)

    def check_available(self) -> None:
        try:
            import jax  # noqa: F401
        except ImportError as e:  # pragma: no cover
            raise BackendUnavailable(f"{self.label} backend needs jax/jaxlib: {e}") from None
        if self.pjrt is not None:
            check_target(self.pjrt)

    # the client ----------------------------------------------------------
    def make_client(self) -> Any:
        """Load the plugin (once per process) and create its client with
        the create options the plugin registered, JAX's own (its
        configuration) and the backend name's on top."""
        from jax._src.lib import xla_client as xc

        spec = self.pjrt
        try:
            loaded = (load_library(os.path.abspath(spec.target)) if spec.is_path else load_module(spec.target))
            self._library = loaded.library
            if not xc.pjrt_plugin_initialized(loaded.name):
                xc.initialize_pjrt_plugin(loaded.name)
            options = {**loaded.create_options(), **jax_create_options(loaded.name),
                       **{k: typed_option(v) for k, v in spec.options}}
            return xc.make_c_api_client(loaded.name, options or None)
        except BackendUnavailable as e:
            raise BackendUnavailable(f"{self.label} does not load: {e}") from None
        except Exception as e:
            raise BackendUnavailable(f"{self.label} does not load: {_first_lines(str(e))}") from None

    def client(self) -> Any:
        if self._client is None:
            self._client = self.make_client()
        return self._client

    def start_client(self) -> int:
        """Create the client (in the child, before its first program); its device count."""
        return len(self.devices())

    def devices(self) -> list:
        return list(self.client().devices())

    def window(self) -> tuple[tuple[int, ...], tuple[int, ...], bool]:
        """(minimum, current) StableHLO version the client accepts, and
        whether it stated them (else the documented default window)."""
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

    def child_env(self) -> dict[str, str]:
        """GPU plugins preallocate most of the device's memory by default; the
        backend's child does not (several workers may share one device)
        unless ``XLA_PYTHON_CLIENT_PREALLOCATE`` says otherwise."""
        return {"XLA_PYTHON_CLIENT_PREALLOCATE": os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", "false")}

    def check_loads(self, timeout: float | None = LOAD_SECONDS) -> None:
        """Raise :class:`BackendUnavailable` with the plugin's own message
        unless it loads, initialises and creates its client within
        ``timeout`` seconds (the load deadline; None: none) and has the
        device its name asks for. The check's child is gone when it returns
        (a device may allow one client at a time: the workers start theirs
        after it); SIGINT / SIGTERM during the check raise
        :class:`~..guard.Interrupted`."""
        self.check_available()
        self._check_device_count()
        main = threading.current_thread() is threading.main_thread()  # only there are signals handled
        try:
            with interruptible() if main else contextlib.nullcontext():
                info = self._describe_once(timeout)
        except Timeout:
            raise BackendUnavailable(f"{self.label} does not load: its client did not start within {timeout:g} s "
                                     "(the load deadline)") from None
        except ConformError as e:
            text = str(e)
            raise BackendUnavailable(text if "does not load" in text else f"{self.label} does not load: {text}") \
                from None
        device, devices = (self.pjrt.device if self.pjrt is not None else 0), info.get("devices", 0)
        if device >= devices:
            raise BackendUnavailable(f"{self.label}: device {device} does not exist (the client has {devices} "
                                     f"devices: 0 to {devices - 1})")

    def _describe_once(self, timeout: float | None) -> dict[str, Any]:
        """:meth:`describe` in a child that is gone when this returns (kept
        for :meth:`info`): the client it made holds no device afterwards."""
        child = self.child()
        try:
            info = child.call("describe", timeout=timeout)
        except BaseException:
            child.close(kill=True)
            raise
        child.close()
        self._info = info
        return info

    def _check_device_count(self) -> None:
        """A ``cpu_device_count`` create option within the grid limit (each
        CPU device costs the child memory and start-up time: 100000 take
        minutes and 10 GB)."""
        for key, value in self.pjrt.options if self.pjrt is not None else ():
            n = typed_option(value) if key == "cpu_device_count" else None
            if isinstance(n, int) and n > MAX_PROCESSES:
                raise BackendUnavailable(f"{self.label}: cpu_device_count={n}: more CPU devices than the limit of "
                                         f"{MAX_PROCESSES} processes a program's grid may have")

    def info(self, timeout: float | None = 120) -> dict[str, Any]:
        """:meth:`describe` run in a child (that of the load check when it
        ran), or why the client does not load; no child is kept."""
        if self._info is not None:
            return dict(self._info)
        try:
            self.check_available()
            return dict(self._describe_once(timeout))
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
        opts.executable_build_options.use_spmd_partitioning = partitions > 1
        if partitions > 1:
            is_sdy = b"sdy." in text if isinstance(text, bytes) else "sdy." in text
            opts.executable_build_options.use_shardy_partitioner = is_sdy
        return self.client().compile_and_load(text, xc.DeviceList(tuple(devices)), opts)

    def _executable(self, text: str, use: list, replicas: int, partitions: int) -> Any:
        """``text`` compiled for the devices ``use`` (cached per text and device count)."""
        exe = self._cache.get((text, len(use)))
        if exe is None:
            version = self.pjrt.stablehlo if self.pjrt is not None else ""
            program: str | bytes = text
            if version:
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
            self._cache[text, len(use)] = exe
        return exe

    def _devices_for(self, text: str) -> tuple[list, int, int]:
        """(the devices a program runs on, replicas, partitions): the
        backend's device for a one-device program, else the first
        replicas x partitions devices."""
        replicas, partitions = grid_of_text(text)
        devs = self.devices()
        need = replicas * partitions
        first = self.pjrt.device if self.pjrt is not None else 0
        if need == 1:
            if first >= len(devs):
                raise BackendUnavailable(f"{self.label}: device {first} does not exist ({len(devs)} devices)")
            return [devs[first]], 1, 1
        if need > len(devs):
            raise UnsupportedOp(self.label, f"needs {need} devices ({replicas} replicas x {partitions} partitions);"
                                f" the client has {len(devs)}")
        return devs[:need], replicas, partitions

    def _launch(self, exe: Any, use: list, per_device: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
        """Run ``exe`` with ``per_device[d]`` on device ``use[d]``; every
        device's results."""
        import jax

        try:
            with jax.enable_x64(True):
                if len(use) == 1:
                    bufs = [jax.device_put(np.asarray(a), use[0]) for a in per_device[0]]
                else:  # one array per argument, holding each device's own value
                    sharding = jax.sharding.NamedSharding(jax.sharding.Mesh(np.array(use), ("p",)),
                                                          jax.sharding.PartitionSpec())
                    bufs = [jax.make_array_from_single_device_arrays(
                        np.shape(per_device[0][i]), sharding,
                        [jax.device_put(np.asarray(vals[i]), d) for vals, d in zip(per_device, use)])
                        for i in range(len(per_device[0]))]
            out = exe.execute_sharded(bufs)
            results = [[np.asarray(x) for x in shards] for shards in out.disassemble_into_single_device_arrays()]
        except Exception as e:
            raise BackendError(f"{self.label}: execution failed: {_first_lines(str(e))}") from None
        return [[r[d] for r in results] for d in range(len(use))]

    def execute(self, text: str, args: list[np.ndarray]) -> list[np.ndarray]:
        """``@main`` of ``text`` on the backend's device, or on a grid of
        devices (the program's ``mhlo.num_replicas`` x ``mhlo.num_partitions``)
        with every argument on every device; there every result is whole on
        every device, and each device's copy is checked against device 0's."""
        use, replicas, partitions = self._devices_for(text)
        exe = self._executable(text, use, replicas, partitions)
        per_device = self._launch(exe, use, [list(args)] * len(use))
        first = per_device[0]
        for d, values in enumerate(per_device[1:], start=1):
            for i, (a, b) in enumerate(zip(first, values)):
                if not _same_bits(a, b):
                    raise CheckFailure(f"{self.label}: device {d} returned another result #{i} than device 0 "
                                       f"({_first_difference(a, b)}); a result whole on every device must be equal")
        return first

    def execute_grid(self, text: str, per_process: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
        """``@main`` of ``text`` once per process of its grid, one device
        each (replica-major, as the device assignment lists them), process
        ``i`` on ``per_process[i]``; each process's results."""
        use, replicas, partitions = self._devices_for(text)
        if len(per_process) != len(use):
            raise BackendError(f"{self.label}: {len(per_process)} argument lists for {len(use)} processes")
        exe = self._executable(text, use, replicas, partitions)
        return self._launch(exe, use, per_process)

    def _compile_error(self, text: str, msg: str) -> Exception:
        """A compile failure as the most precise status: a StableHLO version
        the client does not accept, an element type it cannot take, an
        unimplemented feature, else an error."""
        first = msg.splitlines()[0][:300] if msg else "compile failed"
        if "serialize" in msg.lower() and "version" in msg.lower():
            return self._version_error(text, msg)
        m = re.search(r"Dialect .(\w+)' not found for custom op '([\w.]+)'", msg)
        if m:  # an op of a dialect outside StableHLO that the client's compiler does not register
            return UnsupportedOp(self.label, f"the {m.group(1)} dialect (not StableHLO) is not registered in the "
                                 f"client's compiler; the program's first op of it: {m.group(2)}")
        m = re.search(r"failed to legalize operation '([\w.]+)'|'([\w.]+)' op can't be translated", msg)
        if m:
            return UnsupportedOp(self.label, f"{m.group(1) or m.group(2)} is not lowered by the client: {first}")
        m = re.search(r"[Ee]xpected element type[^;]*; got (\w+)", msg)
        if m:  # an element type the client's compiler does not take for this op
            return UnsupportedOp(self.label, f"element type {m.group(1)}: {first}")
        if "UNIMPLEMENTED" in msg or "not supported" in msg.lower() or "unsupported" in msg.lower():
            m = _TYPE_WORDS.search(msg)
            what = f"element type {m.group(0)}: " if m and "type" in msg.lower() else ""
            return UnsupportedOp(self.label, what + first)
        return BackendError(f"{self.label}: compile failed: {msg[:500]}")

    def _version_error(self, text: str, msg: str) -> Exception:
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
                return UnsupportedOp(self.label, f"{', '.join(foreign[:4])} outside StableHLO cannot be sent to a "
                                     f"client of another StableHLO version as a portable artifact; {accepts}")
            return UnsupportedOp(self.label, f"does not serialize to any StableHLO version; {accepts}: {diag}")
        return UnsupportedOp(self.label, f"needs StableHLO {_version_text(need)}; {accepts}: {diag}")


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal shape, element type and bits (NaNs of equal payload equal)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _first_difference(a: np.ndarray, b: np.ndarray) -> str:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return f"shape {list(b.shape)} against {list(a.shape)}"
    flat_a, flat_b = np.ascontiguousarray(a).reshape(-1), np.ascontiguousarray(b).reshape(-1)
    rows_a = flat_a.view(np.uint8).reshape(flat_a.size, -1)
    rows_b = flat_b.view(np.uint8).reshape(flat_b.size, -1)
    differ = np.flatnonzero((rows_a != rows_b).any(axis=1))
    i = int(differ[0]) if differ.size else 0
    idx = [int(x) for x in np.unravel_index(i, a.shape)] if a.shape else []
    return f"at {idx}: {flat_b[i].item()!r} against {flat_a[i].item()!r}"


def grid_of_text(text: str) -> tuple[int, int]:
    """(replicas, partitions) a module asks for (``mhlo.num_replicas`` /
    ``mhlo.num_partitions`` module attributes; 1 when absent)."""
    head = next((ln for ln in text.splitlines() if ln.lstrip().startswith("module")), "")
    r = re.search(r"mhlo\.num_replicas\s*=\s*(\d+)", head)
    p = re.search(r"mhlo\.num_partitions\s*=\s*(\d+)", head)
    return (int(r.group(1)) if r else 1), (int(p.group(1)) if p else 1)
