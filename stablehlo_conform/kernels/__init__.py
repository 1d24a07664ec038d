"""NumPy kernels, one module per op family; see :mod:`.registry`."""

from .registry import KERNELS, OpInfo, Registry, kernel, load_all, register_op

__all__ = ["KERNELS", "OpInfo", "Registry", "kernel", "load_all", "register_op"]
