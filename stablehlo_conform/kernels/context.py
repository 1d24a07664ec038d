"""What a kernel sees of its op: :class:`OpContext` (decoded attributes, types, regions
as callables, the engine running it). The engine builds one per op it runs; kernels
use it without importing the engine."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import UnsupportedOp
from ..program import Op

class OpContext:
    """What a kernel sees of its op: attributes, types, regions, engine."""

    __slots__ = ("op", "engine")

    def __init__(self, op: Op, engine: Any):  # the engine.Engine running the op
        self.op = op
        self.engine = engine

    # attributes and types --------------------------------------------
    @property
    def name(self) -> str:
        return self.op.name

    @property
    def attrs(self) -> dict[str, Any]:
        return self.op.attrs

    def attr(self, name: str, default: Any = None) -> Any:
        return self.op.attrs.get(name, default)

    @property
    def loc(self):
        return self.op.loc

    @property
    def result_types(self) -> tuple:
        return self.op.result_types

    @property
    def operand_types(self) -> tuple:
        return self.op.operand_types

    def result_type(self, i: int = 0):
        return self.op.result_types[i]

    def operand_type(self, i: int = 0):
        return self.op.operand_types[i]

    def result_dtype(self, i: int = 0) -> np.dtype:
        return self.op.result_types[i].dtype

    def result_element(self, i: int = 0):
        return self.op.result_types[i].element

    def result_shape(self, i: int = 0) -> tuple:
        return self.op.result_types[i].shape

    @property
    def num_results(self) -> int:
        return len(self.op.results)

    # regions ---------------------------------------------------------
    def region(self, i: int = 0, lanes: bool = False) -> Callable[..., tuple]:
        """Region ``i`` as a callable ``f(*block_args) -> tuple``.

        With ``lanes=True`` the body may be fed arrays of any shape in place of
        its rank-0 arguments (element-wise evaluation of many bodies at once);
        result shapes are then not checked against the declared types.
        """
        reg = self.op.regions[i]
        eng = self.engine
        env = eng.current_env

        def run(*args: Any) -> tuple:
            return eng.run_region(reg, args, env, lanes=lanes)

        return run

    @property
    def num_regions(self) -> int:
        return len(self.op.regions)

    def region_ops(self, i: int = 0) -> list[str]:
        """Op names of region ``i``'s first block (for fast-path detection)."""
        return [o.name for o in self.op.regions[i].blocks[0].ops]

    def call(self, fname: str, *args: Any) -> tuple:
        return self.engine.call(fname, args)

    def unsupported(self, detail: str) -> UnsupportedOp:
        return UnsupportedOp(self.op.name, detail, str(self.op.loc))
