"""Program inputs: seeded random values per argument type, matching
user-supplied arrays to a function's parameters, and ``.npz`` files that
keep every element type losslessly.

``.npz`` cannot describe bf16, the f4/f6/f8 family or sub-byte integers, so
such arrays are stored as their bit patterns (unsigned integers of the same
item size) and an entry ``__conform_dtypes__`` (JSON: name -> element type)
says how to read them back. :func:`load_npz` understands both that form and
plain ``.npz`` files written by NumPy.
"""

from __future__ import annotations

import json
import re
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ... import types as T
from ...compare import _float_info
from ...errors import InputError
from ...numeric import make_complex
from ...program import Func, walk_ops
from ..records import guard, jsonout

DTYPES_KEY = "__conform_dtypes__"
DYNAMIC_DIM = 3

# operand positions that are indices: op name -> operand numbers
_INDEX_OPERANDS = {
    "stablehlo.gather": (1,),
    "stablehlo.dynamic_gather": (1,),
    "stablehlo.scatter": None,  # the scatter_indices operand: computed below
    "stablehlo.dynamic_slice": "rest1",
    "stablehlo.dynamic_update_slice": "rest2",
    "stablehlo.torch_index_select": (1,),
}


def _index_positions(op) -> tuple[int, ...]:
    spec = _INDEX_OPERANDS.get(op.name, ())
    n = len(op.operands)
    if op.name == "stablehlo.scatter":
        k = (n - 1) // 2  # inputs..., indices, updates...
        return (k,)
    if spec == "rest1":
        return tuple(range(1, n))
    if spec == "rest2":
        return tuple(range(2, n))
    return spec or ()


def index_params(func: Func) -> set[int]:
    """Parameter numbers whose values flow (through any ops) into index
    operands of gather, scatter, dynamic_slice and friends."""
    ops = list(walk_ops(func.body))
    index_values: set[int] = set()
    for op in ops:
        for i in _index_positions(op):
            if i < len(op.operands):
                index_values.add(op.operands[i])
    changed = True
    while changed:
        changed = False
        for op in reversed(ops):
            if any(r in index_values for r in op.results):
                for v in op.operands:
                    if v not in index_values:
                        index_values.add(v)
                        changed = True
    return {i for i, v in enumerate(func.params) if v in index_values}


def random_array(ttype, rng: np.random.Generator, *, index: bool = False, dynamic: int = DYNAMIC_DIM) -> np.ndarray:
    """A seeded random value of ``ttype`` in a range sensible for its element
    type: small integers (small and non-negative when ``index``: 0 to 3, in bounds
    as indices and sizes), normal floats within the type's finite range, booleans,
    complex numbers; each ``?`` dimension ``dynamic`` long. The one generator of
    random inputs (``eval``, ``diff``, ``fuzz``, shape-polymorphic programs)."""
    if not isinstance(ttype, T.TensorType):
        raise InputError(f"cannot generate a value of type {ttype}")
    shape = tuple(dynamic if d is None else d for d in ttype.shape)
    el = ttype.element
    dt = ttype.dtype
    kind = el.kind
    if getattr(el, "quantized", False):
        info = np.iinfo(dt) if dt.kind in "iu" else None
        lo, hi = (info.min, info.max) if info is not None else (-8, 8)
        return rng.integers(lo, hi, size=shape, endpoint=True).astype(dt)
    if kind == "bool":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if kind in ("int", "uint"):
        if index:
            lo, hi = 0, 3
        elif kind == "uint":
            lo, hi = 0, 15
        else:
            lo, hi = -10, 10
        import ml_dtypes

        info = ml_dtypes.iinfo(dt)
        lo, hi = max(lo, int(info.min)), min(hi, int(info.max))
        return rng.integers(lo, hi, size=shape, endpoint=True).astype(dt)
    if kind == "complex":
        part = np.float32 if dt == np.complex64 else np.float64
        re, im = rng.standard_normal(shape).astype(part), rng.standard_normal(shape).astype(part)
        return make_complex(re, im, dt)
    # floats
    info = _float_info(dt)
    x = rng.standard_normal(shape)
    big = float(info.max)
    if big < 1e4:
        x = np.clip(x * min(2.0, big / 4), -big, big)
    if str(el) == "f8E8M0FNU":
        x = np.exp2(rng.integers(-4, 5, size=shape).astype(np.float64))
    return np.asarray(x).astype(dt)


def random_inputs(func: Func, seed: int = 0) -> list[np.ndarray]:
    """One random array per parameter of ``func`` (see :func:`random_array`)."""
    rng = np.random.default_rng(seed)
    idx = index_params(func)
    return [random_array(t, rng, index=i in idx) for i, t in enumerate(func.param_types)]


# --------------------------------------------------------------------------- #
# .npz files
# --------------------------------------------------------------------------- #


def _exotic(dtype: np.dtype) -> bool:
    """ml_dtypes types (bf16, f4/f6/f8, sub-byte integers): NumPy sees void."""
    return dtype.kind == "V"


def save_npz(path: str | Path, arrays: Mapping[str, np.ndarray]) -> None:
    """Write ``arrays``; bf16, f4/f6/f8 and sub-byte integers as bit
    patterns with a dtype note (read back by :func:`load_npz`)."""
    out: dict[str, np.ndarray] = {}
    notes: dict[str, str] = {}
    for name, a in arrays.items():
        a = np.asarray(a)
        if _exotic(a.dtype):
            notes[name] = T.name_of_dtype(a.dtype)
            out[name] = T.to_bits(a).reshape(a.shape)
        else:
            out[name] = a
    if notes:
        out[DTYPES_KEY] = np.array(jsonout.dumps(notes))
    with open(path, "wb") as f:
        np.savez(f, **out)


def load_npz(path: str | Path) -> dict[str, np.ndarray]:
    """Read a ``.npz`` (ours or NumPy's); keeps the file's order of names.
    Only a regular file is opened (see :mod:`..records.guard`); a file that is not a
    readable ``.npz`` (empty, cut, corrupt, not a zip) is an
    :class:`InputError` naming it."""
    try:
        guard.check_input(path, bounded=False)
    except guard.GuardError as e:
        raise InputError(str(e)) from None
    try:
        with np.load(path, allow_pickle=False) as z:
            if not isinstance(z, np.lib.npyio.NpzFile):
                raise ValueError("a single .npy array, not an .npz archive of named arrays")
            data = {k: z[k] for k in z.files}
    except EOFError:
        raise InputError(f"cannot read {path}: the file is empty") from None
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, zlib.error) as e:
        raise InputError(f"cannot read {path}: not a readable .npz ({type(e).__name__}: {e})") from None
    try:
        notes = json.loads(str(data.pop(DTYPES_KEY))) if DTYPES_KEY in data else {}
        for name, el in dict(notes).items():
            if name in data:
                data[name] = T.from_bits(data[name], T.element_type(el).dtype).reshape(data[name].shape)
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise InputError(f"cannot read {path}: bad element type notes ({type(e).__name__}: {e})") from None
    return data


# --------------------------------------------------------------------------- #
# Matching inputs to parameters
# --------------------------------------------------------------------------- #

_POS_RE = re.compile(r"^(?:arg|arr_|input|in)?(\d+)$")


def param_names(func: Func) -> list[str | None]:
    """Names of parameters when the program gives them (e.g. JAX's
    ``jax.arg_info`` or ``mhlo.name`` argument attributes)."""
    names: list[str | None] = []
    arg_attrs = func.attrs.get("arg_attrs") or ()
    for i in range(len(func.param_types)):
        d = arg_attrs[i] if i < len(arg_attrs) and isinstance(arg_attrs[i], dict) else {}
        n = d.get("jax.arg_info") or d.get("mhlo.name") or d.get("tf.name")
        names.append(str(n) if n is not None else None)
    return names


def match_inputs(func: Func, given: Mapping[str, np.ndarray] | Sequence[np.ndarray]) -> list[np.ndarray]:
    """Order ``given`` by parameter: keys ``arg0``/``arr_0``/``0`` or the
    parameter's name; a sequence is taken positionally. Checks count, shape
    and element type, naming the argument in the error."""
    n = len(func.param_types)
    if isinstance(given, Mapping):
        names = param_names(func)
        out: list[Any] = [None] * n
        unknown = []
        for key, value in given.items():
            m = _POS_RE.match(key)
            if m and int(m.group(1)) < n:
                out[int(m.group(1))] = value
            elif key in names:
                out[names.index(key)] = value
            else:
                unknown.append(key)
        if unknown and all(v is None for v in out) and len(given) == n:
            out = list(given.values())  # any naming: take the file's order
            unknown = []
        if unknown:
            raise InputError(f"inputs {', '.join(map(repr, unknown))} match no argument of @{func.name} "
                             f"(use arg0..arg{n - 1})")
        missing = [f"arg{i}" for i, v in enumerate(out) if v is None]
        if missing:
            raise InputError(f"missing input for {', '.join(missing)} of @{func.name} "
                             f"({n} arguments: {', '.join(str(t) for t in func.param_types)})")
        arrays = out
    else:
        arrays = list(given)
        if len(arrays) != n:
            raise InputError(f"@{func.name} takes {n} arguments, got {len(arrays)}")
    return [check_argument(i, a, t, func.name) for i, (a, t) in enumerate(zip(arrays, func.param_types))]


def check_argument(i: int, a: Any, ttype, fname: str = "main") -> np.ndarray:
    """``a`` as an array of ``ttype`` or an :class:`InputError` naming arg ``i``."""
    if not isinstance(ttype, T.TensorType):
        raise InputError(f"arg{i} of @{fname} has type {ttype}, which cannot be given as an array")
    a = np.asarray(a)
    want = ttype.dtype
    if a.dtype != want:
        got = T.name_of_dtype(a.dtype) if _known(a.dtype) else str(a.dtype)
        raise InputError(f"arg{i} of @{fname}: element type {got} does not match {ttype} (dtype {want})")
    if len(a.shape) != len(ttype.shape) or any(d not in (None, s) for d, s in zip(ttype.shape, a.shape)):
        raise InputError(f"arg{i} of @{fname}: shape {list(a.shape)} does not match {ttype}")
    return a


def _known(dt: np.dtype) -> bool:
    try:
        T.name_of_dtype(dt)
        return True
    except KeyError:
        return False
