"""What every command promises about the files it reads, the files it
writes and the signals it gets.

- Inputs (results files, streams, baselines, accuracy profiles, ``.npz``
  inputs): only regular files are read; a FIFO, a device or a folder is
  refused from its ``stat``, without opening it, and a file over
  :func:`max_input_bytes` is refused before it is read (reading stops there
  too, should it grow meanwhile).
- Outputs: every path is checked before any work (its folder created, the
  file openable for writing, no two outputs naming one file), and written
  whole: a temporary file beside it renamed over it, so a killed command
  leaves the old file or the new one, never half of one.
- Signals: within :class:`interruptible`, SIGINT and SIGTERM raise
  :class:`Interrupted`; the command saves what it has, marks it incomplete
  and exits ``128 + signal`` (130, 143).

Every refusal is a :class:`GuardError`, which the command line turns into a
usage error (exit 2, one line).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

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

def prepare_outputs(outputs: Mapping[str, str | None], keep: str | None = None,
                    folders: Mapping[str, str | None] | None = None) -> None:
    """Make every output usable before any work: ``outputs`` (option ->
    file path) get their folder created and are opened for appending once
    (files this creates are removed again, ``keep`` aside); ``folders``
    (option -> folder path) can be created (its parents are). Two options naming one file, a
    folder given as a file or a file as a folder are :class:`GuardError`."""
    for opt, p in (folders or {}).items():
        if p:
            if Path(p).exists() and not Path(p).is_dir():
                raise GuardError(f"{opt} {p}: is a file, not a folder")
            existed = Path(p).exists()
            _make_folder(opt, p, Path(p))
            if not os.access(p, os.W_OK | os.X_OK):
                raise GuardError(f"{opt} {p}: cannot be written: permission denied")
            if not existed:  # made when there is something to put in it
                Path(p).rmdir()
    given = {opt: p for opt, p in outputs.items() if p}
    seen: dict[str, str] = {}
    for opt, p in given.items():
        key = os.path.realpath(p)
        if key in seen and not key.startswith("/dev/"):
            raise GuardError(f"{opt} and {seen[key]} name the same file {p}")
        seen[key] = opt
    for opt, p in given.items():
        path = Path(p)
        if path.is_dir():
            raise GuardError(f"{opt} {p}: is a folder")
        _make_folder(opt, p, path.parent)
        existed = path.exists()
        try:
            with open(path, "ab"):
                pass
        except OSError as e:
            raise GuardError(f"{opt} {p}: cannot be written: {e.strerror or e}") from None
        if not existed and p != keep:
            path.unlink()


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


def ignore_interrupts() -> None:
    """SIGINT and SIGTERM ignored from now on: the outputs of an ending
    command are written whatever arrives."""
    for s in INTERRUPTS:
        signal.signal(s, signal.SIG_IGN)
