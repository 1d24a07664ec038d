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
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import os
from collections.abc import Callable, Iterator

import numpy as np

_ENTRY_POINTS = (
    ("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
    ("scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads"),
    ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
    ("openblas_get_num_threads", "openblas_set_num_threads"),
)

_controls: tuple[Callable[[], int], Callable[[int], None]] | None | bool = False


def _find() -> tuple[Callable[[], int], Callable[[int], None]] | None:
    libs_dir = os.path.dirname(np.__file__) + ".libs"
    for path in sorted(glob.glob(os.path.join(libs_dir, "*openblas*.so*"))):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for get_name, set_name in _ENTRY_POINTS:
            get_fn = getattr(lib, get_name, None)
            set_fn = getattr(lib, set_name, None)
            if get_fn is not None and set_fn is not None:
                get_fn.restype = ctypes.c_int
                set_fn.argtypes = [ctypes.c_int]
                set_fn.restype = None
                return get_fn, set_fn
    return None


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """NumPy's BLAS runs on one thread inside the block."""
    global _controls
    if _controls is False:
        _controls = _find()
    if _controls is None:
        yield
        return
    get_fn, set_fn = _controls
    before = get_fn()
    if before == 1:
        yield
        return
    set_fn(1)
    try:
        yield
    finally:
        set_fn(before)
