"""NumPy kernels, one module per op family; see :mod:`.registry`."""

from .registry import KERNELS, Registry, kernel, load_all

__all__ = ["KERNELS", "Registry", "kernel", "load_all"]
