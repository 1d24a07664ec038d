"""Running NumPy's BLAS on one thread for the duration of a product.

The engine runs every product on a single OpenBLAS thread:

- the values are then the same on every machine: OpenBLAS picks its kernels
  and its split of the work by the number of threads, and a threaded call
  can round differently from a single-threaded one (seen with f32 GEMMs of
  a few million multiply-adds);
- the harness already runs one engine per core (``-j``); threaded BLAS calls
  on top of that oversubscribe the cores, and OpenBLAS's waiting threads
  then cost tens of milliseconds on products that take a tenth of one.

The thread count is set through OpenBLAS's own ``set_num_threads`` entry
point in the library NumPy loaded and restored afterwards, so code sharing
the process keeps its setting. Where the library or the entry point cannot
be found (another BLAS), products run as NumPy runs them.

The first block of the process, where the library is looked up, also keeps
freed memory in the process for the kernels' next arrays
(:func:`._heap.keep_freed_memory`).
"""

from __future__ import annotations

import ctypes
import glob
import os
import threading
from collections.abc import Callable

import numpy as np

from ._heap import keep_freed_memory

_ENTRY_POINTS = (
    ("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
    ("scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads"),
    ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
    ("openblas_get_num_threads", "openblas_set_num_threads"),
)

_controls: tuple[Callable[[], int], Callable[[int], None]] | None | bool = False


def _libraries():
    libs_dir = os.path.dirname(np.__file__) + ".libs"
    for path in sorted(glob.glob(os.path.join(libs_dir, "*openblas*.so*"))):
        try:
            yield ctypes.CDLL(path)
        except OSError:
            continue


def kernels() -> str | None:
    """The name of the kernels NumPy's OpenBLAS runs on this CPU (``"SkylakeX"``,
    ``"Haswell"``: its own choice, or ``OPENBLAS_CORETYPE``'s where that is set), which fix the
    last bits and the speed of every float product; None for another BLAS."""
    for lib in _libraries():
        for name in ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename", "openblas_get_corename64_",
                     "openblas_get_corename"):
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.restype = ctypes.c_char_p
                return fn().decode()
    return None


def _find() -> tuple[Callable[[], int], Callable[[int], None]] | None:
    for lib in _libraries():
        for get_name, set_name in _ENTRY_POINTS:
            get_fn = getattr(lib, get_name, None)
            set_fn = getattr(lib, set_name, None)
            if get_fn is not None and set_fn is not None:
                get_fn.restype = ctypes.c_int
                set_fn.argtypes = [ctypes.c_int]
                set_fn.restype = None
                return get_fn, set_fn
    return None


_held = 0  # how many blocks are inside one_blas_thread (a product inside the
# engine's call is then entered without a call into the library)
_before = 1  # the library's setting when the first of the blocks held now was entered
_lock = threading.Lock()


class one_blas_thread:
    """NumPy's BLAS runs on one thread inside the ``with`` block. Nested
    blocks (a product inside the engine's call) cost a counter. Blocks of
    several threads overlapping in time (products run at once) share the
    setting: the first entered sets one thread, the last left restores the
    setting found by the first, whichever thread leaves last."""

    __slots__ = ()

    def __enter__(self) -> None:
        global _controls, _held, _before
        with _lock:
            _held += 1
            if _held > 1:
                return
            if _controls is False:
                _controls = _find()
                keep_freed_memory()
            _before = 1
            if _controls is not None:
                _before = _controls[0]()
                if _before != 1:
                    _controls[1](1)

    def __exit__(self, *exc) -> None:
        global _held
        with _lock:
            _held -= 1
            if _held == 0 and _before != 1:
                _controls[1](_before)
