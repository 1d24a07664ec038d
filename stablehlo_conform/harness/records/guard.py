"""What every command promises about the files it reads, the files it
writes and the signals it gets.

- Inputs (results files, streams, baselines, accuracy profiles, ``.npz``
  inputs): only regular files are read; a FIFO, a device or a folder is
  refused from its ``stat``, without opening it, and a file over
  :func:`max_input_bytes` is refused before it is read (reading stops there
  too, should it grow meanwhile).
- Outputs: every path is checked before any work (its folder created, the
  file openable for writing, no two outputs naming one file, no output
  naming an input of the command), and written whole: a temporary file
  beside it renamed over it, so a killed command leaves the old file or the
  new one, never half of one. A stream a run appends to is locked for the
  run (a second run on it is refused). Names derived from test ids and
  program names (:class:`FolderNames`) stay inside their folder and are
  never given twice in one command.
- Signals: within :class:`interruptible`, SIGINT and SIGTERM raise
  :class:`Interrupted`; the command saves what it has, marks it incomplete
  and exits ``128 + signal`` (130, 143).
- Child processes: a command run for the user (:func:`run_in_group`) has a
  process group of its own, killed whole when it ends, times out or is
  interrupted.

Every refusal is a :class:`GuardError`, which the command line turns into a
usage error (exit 2, one line).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

DEFAULT_MAX_INPUT_MIB = 256
MAX_INPUT_ENV = "CONFORM_MAX_INPUT_MIB"
INTERRUPTS = (signal.SIGINT, signal.SIGTERM)


class GuardError(ValueError):
    """An input or output path a command cannot use (a usage error)."""


# inputs ----------------------------------------------------------------------

def max_input_bytes() -> int:
    """The size bound of a file read whole: ``$CONFORM_MAX_INPUT_MIB`` MiB,
    else 256 MiB."""
    raw = os.environ.get(MAX_INPUT_ENV, "")
    try:
        mib = float(raw) if raw.strip() else DEFAULT_MAX_INPUT_MIB
    except ValueError:
        mib = DEFAULT_MAX_INPUT_MIB
    return int(mib * 2**20) if mib > 0 else DEFAULT_MAX_INPUT_MIB * 2**20


def file_kind(mode: int, other: str = "not a regular file") -> str:
    """What a ``stat`` mode names, in words (``other`` for a kind not listed)."""
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return other


def _size_text(n: int) -> str:
    return f"{n / 2**20:.0f} MiB" if n >= 2**20 else f"{n} bytes"


def check_input(path: str | Path, what: str = "", bounded: bool = True) -> os.stat_result:
    """The ``stat`` of an input, or a :class:`GuardError` saying why it
    cannot be read: missing, not a regular file (found without opening it),
    or (``bounded``) larger than :func:`max_input_bytes`."""
    label = f"{what} {path}" if what else str(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise GuardError(f"{label}: no such file") from None
    except OSError as e:
        raise GuardError(f"{label}: cannot read: {e.strerror or e}") from None
    if not stat.S_ISREG(st.st_mode):
        raise GuardError(f"{label}: not a regular file ({file_kind(st.st_mode)})")
    limit = max_input_bytes()
    if bounded and st.st_size > limit:
        raise GuardError(f"{label}: {_size_text(st.st_size)}, over the bound of {_size_text(limit)} on an input "
                         f"read whole (${MAX_INPUT_ENV} sets it)")
    return st


def read_input(path: str | Path, what: str = "") -> bytes:
    """The bytes of an input (see :func:`check_input`). The file is opened
    non-blocking (a FIFO put in its place after the check cannot hang the
    read) and read up to the bound only."""
    label = f"{what} {path}" if what else str(path)
    check_input(path, what)
    limit = max_input_bytes()
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise GuardError(f"{label}: cannot read: {e.strerror or e}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise GuardError(f"{label}: not a regular file ({file_kind(mode)})")
        chunks, total = [], 0
        while True:
            block = os.read(fd, min(1 << 24, limit + 1 - total))
            if not block:
                break
            chunks.append(block)
            total += len(block)
            if total > limit:
                raise GuardError(f"{label}: over the bound of {_size_text(limit)} on an input read whole "
                                 f"(${MAX_INPUT_ENV} sets it)")
    except OSError as e:
        raise GuardError(f"{label}: cannot read: {e.strerror or e}") from None
    finally:
        os.close(fd)
    return b"".join(chunks)


def read_input_text(path: str | Path, what: str = "", kind: str = "input") -> str:
    """:func:`read_input` decoded as UTF-8 (else a :class:`GuardError`
    naming the byte)."""
    raw = read_input(path, what)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        label = f"{what} {path}" if what else str(path)
        raise GuardError(f"{label}: not a {kind}: not UTF-8 text ({e.reason} at byte {e.start})") from None


# outputs ---------------------------------------------------------------------

class OutputPlan:
    """The outputs :func:`prepare_outputs` made ready: it holds the locks of
    the streams until :meth:`release` (a stream it created and nothing was
    written to is removed then)."""

    def __init__(self) -> None:
        self._locks: list[tuple[int, Path, bool]] = []  # fd, path, removed if still empty at the end

    def lock(self, opt: str, path: Path, remove_empty: bool) -> None:
        """Lock the stream ``path`` (option ``opt``) for this command, else
        a :class:`GuardError`: another command holds it. A path that is no
        regular file (``/dev/null``, a FIFO) is not opened: nothing to lock,
        and a stream read back refuses it as an input."""
        if _file_id(path) is None and os.path.lexists(path):
            return
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NONBLOCK, 0o666)
        except OSError as e:
            raise GuardError(f"{opt} {path}: cannot be written: {e.strerror or e}") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # put there since the check
            os.close(fd)
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise GuardError(f"{opt} {path}: another run is writing this stream (it holds its lock); "
                             "wait for it to end or give another file") from None
        self._locks.append((fd, path, remove_empty))

    def release(self) -> None:
        """Unlock the streams (the process ending does it too)."""
        locks, self._locks = self._locks, []
        for fd, path, remove_empty in locks:
            with contextlib.suppress(OSError):
                if remove_empty and os.fstat(fd).st_size == 0:
                    path.unlink()
            os.close(fd)


def prepare_outputs(outputs: Mapping[str, str | None], keep: str | None = None,
                    folders: Mapping[str, str | None] | None = None, *,
                    inputs: Iterable[str | Path | None] = (), streams: Collection[str] = (),
                    fills: Collection[str] = ()) -> OutputPlan:
    """Make every output usable before any work: ``outputs`` (option ->
    file path) get their folder created and are opened for appending once
    (files this creates are removed again, ``keep`` aside); ``folders``
    (option -> folder path) can be created (its parents are). Two options
    naming one file, a folder given as a file or a file as a folder, an
    output that is one of the command's ``inputs`` (the same file, however
    named) and a folder of ``fills`` (a folder the command writes its files
    straight into) holding an input are :class:`GuardError`. The files of
    the ``streams`` options (appended to while the command runs) are locked
    until the plan returned is released: a second command on one is refused."""
    given_inputs = _input_files(inputs)
    for opt, p in (folders or {}).items():
        if p:
            _check_folder(opt, p, given_inputs if opt in fills else {})
    given = {opt: p for opt, p in outputs.items() if p}
    seen: dict[str, str] = {}
    for opt, p in given.items():
        key = os.path.realpath(p)
        if key in seen and not key.startswith("/dev/"):
            raise GuardError(f"{opt} and {seen[key]} name the same file {p}")
        seen[key] = opt
        same = given_inputs.get(_file_id(p))
        if same is not None:
            raise GuardError(f"{opt} {p}: is the input {same}; an output never replaces an input of its command "
                             "(give another path)")
    plan = OutputPlan()
    try:
        for opt, p in given.items():
            _check_file(plan, opt, p, keep=p == keep, stream=opt in streams)
    except GuardError:
        plan.release()
        raise
    return plan


def _check_folder(opt: str, p: str, inputs: Mapping[tuple[int, int], str]) -> None:
    """A folder output: creatable and writable, holding none of ``inputs``."""
    if Path(p).exists() and not Path(p).is_dir():
        raise GuardError(f"{opt} {p}: is a file, not a folder")
    existed = Path(p).exists()
    _make_folder(opt, p, Path(p))
    if not os.access(p, os.W_OK | os.X_OK):
        raise GuardError(f"{opt} {p}: cannot be written: permission denied")
    if not existed:  # made when there is something to put in it
        Path(p).rmdir()
    root = os.path.realpath(p)
    for path in inputs.values():
        if os.path.commonpath([root, os.path.realpath(path)]) == root:
            raise GuardError(f"{opt} {p}: holds the input {path}, which the files written into the folder "
                             "could replace (give another folder)")


def _check_file(plan: OutputPlan, opt: str, p: str, keep: bool, stream: bool) -> None:
    """A file output: its folder created, openable for appending (a stream
    locked in ``plan``); a file this creates is removed unless ``keep``."""
    path = Path(p)
    if path.is_dir():
        raise GuardError(f"{opt} {p}: is a folder")
    _make_folder(opt, p, path.parent)
    existed = path.exists()
    if stream:
        plan.lock(opt, path, remove_empty=not existed and not keep)
        return
    try:
        with open(path, "ab"):
            pass
    except OSError as e:
        raise GuardError(f"{opt} {p}: cannot be written: {e.strerror or e}") from None
    if not existed and not keep:
        path.unlink()


def _file_id(path: str | Path) -> tuple[int, int] | None:
    """(device, inode) of a regular file (links followed), else None."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def _input_files(inputs: Iterable[str | Path | None]) -> dict[tuple[int, int], str]:
    """The regular files among ``inputs``, by (device, inode): one file
    however it is named (a link, a hard link, ``./x``)."""
    out: dict[tuple[int, int], str] = {}
    for p in inputs:
        key = _file_id(p) if p else None
        if key is not None:
            out.setdefault(key, str(p))
    return out


# names -----------------------------------------------------------------------

NAME_LIMIT = 120


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:8]


def safe_name(text: str, limit: int = NAME_LIMIT) -> str:
    """A file or folder name made from ``text`` (a test id, a program's
    name): ASCII letters, digits, ``_``, ``.`` and ``-``, never starting
    with ``.`` (so never ``.``, ``..`` or hidden: it cannot leave its
    folder), at most ``limit`` characters. A name cut to fit ends in a
    short hash of the whole ``text``: texts that share their first
    ``limit`` characters keep distinct names."""
    clean = re.sub(r"[^\w.-]+", "_", text, flags=re.ASCII)
    clean = re.sub(r"^[._]+|_+$", "", clean) or "bundle"
    if len(clean) > limit:
        clean = f"{clean[:limit - 9]}-{_digest(text)}"
    return clean


class FolderNames:
    """The entries one command writes into an output ``folder``, named from
    texts (test ids, program names) by :func:`safe_name`: a name is never
    given twice (nor two names differing in case only), nor one whose entry
    holds one of ``inputs``; so no entry leaves the folder, overwrites
    another of the same command or replaces an input."""

    def __init__(self, folder: str | Path, inputs: Iterable[str | Path | None] = ()):
        self.folder = Path(folder)
        self.taken: set[str] = set()
        root = os.path.realpath(folder)
        for p in inputs:
            if p:
                rel = os.path.relpath(os.path.realpath(p), root)
                if rel != "." and not rel.startswith(".."):
                    self.taken.add(rel.split(os.sep)[0].casefold())

    def path(self, text: str) -> Path:
        """``folder / name`` for ``text`` (see the class)."""
        name = safe_name(text)
        if not self._free(name):
            name = f"{name[:NAME_LIMIT - 9]}-{_digest(text)}"
        base, n = name, 2
        while not self._free(name):
            name = f"{base[:NAME_LIMIT - 1 - len(str(n))]}-{n}"
            n += 1
        self.taken.add(name.casefold())
        return self.folder / name

    def _free(self, name: str) -> bool:
        return name.casefold() not in self.taken and not (self.folder / name).is_symlink()


def _make_folder(opt: str, given: str, folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        what = "its folder " if Path(given) != folder else ""
        raise GuardError(f"{opt} {given}: cannot create {what}{folder}: {e.strerror or e}") from None


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[str]:
    """A temporary path beside ``path`` to write; renamed over ``path`` when
    the block ends without an exception, removed otherwise. A ``path``
    that exists and is not a regular file (``/dev/null``, ``/dev/stdout``)
    is written in place."""
    p = Path(path)
    if p.exists() and not p.is_file():
        yield str(p)
        return
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".part", dir=p.parent)
    os.close(fd)
    try:
        yield tmp
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, p)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


@contextlib.contextmanager
def atomic_folder(path: str | Path) -> Iterator[Path]:
    """A temporary folder beside ``path`` to fill; when the block ends
    without an exception it becomes ``path`` (renamed, when ``path`` is
    missing or empty) or its files replace those of the same name in
    ``path`` one by one; removed otherwise."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent))
    try:
        yield tmp
        if target.is_dir() and not any(target.iterdir()):
            target.rmdir()
        if not target.exists():
            os.replace(tmp, target)
            return
        for src in sorted(tmp.rglob("*")):
            dst = target / src.relative_to(tmp)
            if src.is_dir():
                dst.mkdir(exist_ok=True)
            else:
                os.replace(src, dst)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def write_atomic(path: str | Path, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) whole: see :func:`atomic_path`."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        f.write(raw)


# signals ---------------------------------------------------------------------

class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived inside :class:`interruptible`."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class interruptible:
    """Within the block SIGINT and SIGTERM raise :class:`Interrupted` (they
    end the work, not the process: what was done is saved, marked
    incomplete). The handlers before the block come back after it."""

    def __enter__(self):
        def handler(signum, _frame):
            raise Interrupted(signum)

        self.old = {s: signal.signal(s, handler) for s in INTERRUPTS}
        return self

    def __exit__(self, *exc):
        for s, h in self.old.items():
            signal.signal(s, h)
        return False


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """Within the block SIGINT and SIGTERM are held (for a step that must
    not be cut in half, such as starting a process); one that arrived is
    handled as it would have been, once the block ends. Only the main
    thread handles signals: elsewhere the block changes nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []
    old = {s: signal.signal(s, lambda signum, _frame: got.append(signum)) for s in INTERRUPTS}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        if got:
            handler = old[got[0]]
            if callable(handler):
                handler(got[0], None)
            elif handler == signal.SIG_DFL:
                os.kill(os.getpid(), got[0])


def ignore_interrupts() -> None:
    """SIGINT and SIGTERM ignored from now on: the outputs of an ending
    command are written whatever arrives."""
    for s in INTERRUPTS:
        signal.signal(s, signal.SIG_IGN)


# child processes -------------------------------------------------------------

def kill_group(pgid: int) -> None:
    """SIGKILL every process of the process group ``pgid`` (none left: nothing)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def run_in_group(args: str | Sequence[str], timeout: float | None, **popen: Any) -> int | None:
    """Run ``args`` (with ``popen``: :class:`subprocess.Popen` arguments) in a
    session and process group of its own; its exit status, or None when it
    outlived ``timeout`` seconds. When it ends, times out or an exception
    (an :class:`Interrupted`) ends the wait, its whole group is killed: no
    process it started (a shell's ``cmd &``) outlives it."""
    p = subprocess.Popen(args, start_new_session=True, **popen)
    try:
        return p.wait(timeout)
    except subprocess.TimeoutExpired:
        return None
    finally:
        kill_group(p.pid)
        p.wait()
