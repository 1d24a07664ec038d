"""Keeping freed memory in the process for the next kernel's arrays.

A kernel's temporaries are NumPy arrays of a few hundred KiB to a few MiB,
allocated and freed by the thousand in one run. glibc's ``malloc`` serves
them from the heap once its dynamic mmap threshold has grown past their size,
but it gives the free top of the heap back to the kernel as soon as it grows
past twice that threshold; the next array of that size then takes one page
fault per 4 KiB it touches. On a virtual machine a fault costs one to two
microseconds: a run of a program on 256x512 f32 tensors spent more time
faulting (500 to 900 faults) than computing, and how much depended on the
heap's history (the same program 0.7 ms or 1.8 ms from one process to
the next).

:func:`keep_freed_memory` sets the mmap threshold to the value glibc's own
dynamic rule reaches in a process that has freed a 32 MiB array (arrays
below 32 MiB come from the heap), and the trim threshold to 256 MiB: up to
that much free heap stays in the process. glibc's own rule would keep 64 MiB;
with 64, a program's first run after other work in the process (XLA compiling
and running a program: the harness's comparisons, the benchmarks) found its
heap given back, and on a kernel that backs memory with transparent huge
pages each fault then zeroes a 2 MiB page: the first run of a 1.57M-element
layernorm and GELU spent 25-47 ms of system time and took 35-56 ms, against
12-15 ms (0-11 ms of system time) with 256 MiB kept; warm runs and the model
zoo's first runs did not change. It runs once per process, on the engine's
first call (see ``one_blas_thread``); with another C library it does nothing.
"""

from __future__ import annotations

import ctypes
import platform

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 256 << 20

_result: bool | None = None


def keep_freed_memory() -> bool:
    """Set glibc's mmap and trim thresholds (the first call does); False
    where they cannot be set."""
    global _result
    if _result is None:
        _result = _set_thresholds()
    return _result


def _set_thresholds() -> bool:
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    # the mmap threshold first: setting either turns glibc's dynamic rule off
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
