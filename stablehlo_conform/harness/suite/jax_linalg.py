"""Programs from ``jnp.linalg`` / ``jax.scipy.linalg`` functions, exported
with ``jax.jit(f).lower(...).as_text()`` on CPU (so they carry JAX's LAPACK
custom calls) for every element type LAPACK has, and checked against
``jax.jit`` on the same inputs: element-wise where the result is unique, by
the defining identity of the decomposition where it is not (see
:mod:`..judge.linalg_identity`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..judge import linalg_identity as LI
from .back_compat import compare_values

DTYPES = ("float32", "float64", "complex64", "complex128")


@dataclass(frozen=True)
class Spec:
    name: str
    make: Callable  # (jax modules) -> function of the inputs
    inputs: Callable[[np.random.Generator, np.dtype], tuple]
    kind: str | None = None  # identity check, None: values
    order: tuple[int, ...] | None = None  # outputs reordered for the identity check


def _general(rng, dt, shape=(2, 4, 4)):
    x = rng.standard_normal(shape)
    if np.dtype(dt).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dt)


def _hermitian(rng, dt):
    x = _general(rng, dt)
    return ((x + np.conj(np.swapaxes(x, -1, -2))) / 2).astype(dt)


def _spd(rng, dt):
    x = _general(rng, dt)
    return (x @ np.conj(np.swapaxes(x, -1, -2)) + 4 * np.eye(4)).astype(dt)


def _tall(rng, dt):
    return _general(rng, dt, (2, 5, 3))


def _tridiagonal(rng, dt):
    dl, d, du = (_general(rng, dt, (2, 4)) for _ in range(3))
    d = d + 4
    dl[:, 0] = 0
    du[:, -1] = 0
    return dl.astype(dt), d.astype(dt), du.astype(dt), _general(rng, dt, (2, 4, 3))


def _specs() -> list[Spec]:
    one = lambda f: (lambda rng, dt: (f(rng, dt),))  # noqa: E731
    two = lambda f: (lambda rng, dt: (f(rng, dt), _general(rng, dt, (2, 4, 3))))  # noqa: E731
    return [
        Spec("qr", lambda jnp, jsl, lax: jnp.linalg.qr, one(_general), "qr"),
        Spec("qr_tall", lambda jnp, jsl, lax: jnp.linalg.qr, one(_tall), "qr"),
        Spec("qr_complete", lambda jnp, jsl, lax: lambda a: jnp.linalg.qr(a, mode="complete"), one(_tall), "qr"),
        Spec("eigh", lambda jnp, jsl, lax: jnp.linalg.eigh, one(_hermitian), "eigh", (1, 0)),
        Spec("eigh_upper", lambda jnp, jsl, lax: lambda a: jnp.linalg.eigh(a, UPLO="U"), one(_hermitian),
             "eigh", (1, 0)),
        Spec("eigvalsh", lambda jnp, jsl, lax: jnp.linalg.eigvalsh, one(_hermitian)),
        Spec("eig", lambda jnp, jsl, lax: jnp.linalg.eig, one(_general), "eig"),
        Spec("eig_right", lambda jnp, jsl, lax: lambda a: lax.linalg.eig(a, compute_left_eigenvectors=False),
             one(_general), "eig"),
        Spec("eigvals", lambda jnp, jsl, lax: lambda a: jnp.sort_complex(jnp.linalg.eigvals(a)), one(_general)),
        Spec("svd", lambda jnp, jsl, lax: jnp.linalg.svd, one(_general), "svd"),
        Spec("svd_thin", lambda jnp, jsl, lax: lambda a: jnp.linalg.svd(a, full_matrices=False), one(_tall), "svd"),
        Spec("svd_gesvd", lambda jnp, jsl, lax: lambda a: lax.linalg.svd(a, algorithm=lax.linalg.SvdAlgorithm.QR),
             one(_tall), "svd"),
        Spec("svd_gesvd_wide",
             lambda jnp, jsl, lax: lambda a: lax.linalg.svd(a, algorithm=lax.linalg.SvdAlgorithm.QR),
             lambda rng, dt: (_general(rng, dt, (2, 3, 5)),), "svd"),
        Spec("svdvals", lambda jnp, jsl, lax: lambda a: jnp.linalg.svd(a, compute_uv=False), one(_tall)),
        Spec("cholesky", lambda jnp, jsl, lax: jnp.linalg.cholesky, one(_spd)),
        Spec("cho_solve", lambda jnp, jsl, lax: lambda a, b: jsl.cho_solve(jsl.cho_factor(a), b), two(_spd)),
        Spec("lu", lambda jnp, jsl, lax: jsl.lu, one(_general)),
        Spec("solve", lambda jnp, jsl, lax: jnp.linalg.solve, two(_general)),
        Spec("inv", lambda jnp, jsl, lax: jnp.linalg.inv, one(_general)),
        Spec("det", lambda jnp, jsl, lax: jnp.linalg.det, one(_general)),
        Spec("slogdet", lambda jnp, jsl, lax: jnp.linalg.slogdet, one(_general)),
        Spec("pinv", lambda jnp, jsl, lax: jnp.linalg.pinv, one(_tall)),
        Spec("lstsq", lambda jnp, jsl, lax: lambda a, b: jnp.linalg.lstsq(a[0], b[0])[0],
             lambda rng, dt: (_tall(rng, dt), _general(rng, dt, (2, 5, 2)))),
        Spec("solve_triangular", lambda jnp, jsl, lax: lambda a, b: jsl.solve_triangular(a, b, lower=True),
             two(_spd)),
        Spec("schur", lambda jnp, jsl, lax: lambda a: jsl.schur(a[0]), one(_general), "schur"),
        Spec("schur_t", lambda jnp, jsl, lax: lambda a: lax.linalg.schur(a, compute_schur_vectors=False)[0],
             one(_general)),
        Spec("hessenberg", lambda jnp, jsl, lax: lambda a: lax.linalg.hessenberg(a), one(_general)),
        Spec("tridiagonal", lambda jnp, jsl, lax: lambda a: lax.linalg.tridiagonal(a), one(_hermitian)),
        Spec("tridiagonal_solve", lambda jnp, jsl, lax: lax.linalg.tridiagonal_solve, _tridiagonal),
    ]


SPECS = {s.name: s for s in _specs()}


@dataclass
class Program:
    name: str
    dtype: str
    platform: str
    text: str
    inputs: tuple
    expected: tuple  # jax.jit's outputs
    kind: str | None
    order: tuple[int, ...] | None


def export(name: str, dtype: str, seed: int = 0, platform: str = "cpu") -> Program:
    """The StableHLO text of ``name`` on ``dtype`` inputs lowered for
    ``platform`` (``cpu``: ``jax.jit(f).lower(...)``; ``cuda``/``rocm``:
    ``jax.export`` for that platform, which needs no GPU), with the inputs and
    ``jax.jit``'s outputs on this machine."""
    import jax
    import jax.numpy as jnp
    import jax.scipy.linalg as jsl
    from jax import lax

    spec = SPECS[name]
    rng = np.random.default_rng(seed)
    inputs = spec.inputs(rng, np.dtype(dtype))
    with jax.enable_x64(True):
        fn = jax.jit(spec.make(jnp, jsl, lax))
        if platform == "cpu":
            text = fn.lower(*inputs).as_text()
        else:
            text = jax.export.export(fn, platforms=[platform])(*inputs).mlir_module()
        out = fn(*inputs)
        leaves = jax.tree_util.tree_leaves(out)
        expected = tuple(np.asarray(x) for x in leaves)
    return Program(name, dtype, platform, text, inputs, expected, spec.kind, spec.order)


def targets(text: str) -> list[str]:
    import re

    return sorted(set(re.findall(r"custom_call @([\w.$]+)", text)))


def check(prog: Program, got) -> tuple[str, str | None]:
    """(how compared, failure message or None)."""
    got = [np.asarray(x) for x in got]
    if prog.kind is None:
        return "values", compare_values(got, prog.expected)
    outs = [got[i] for i in prog.order] if prog.order else got
    a = prog.inputs[0]
    if prog.name == "schur":
        a = a[0]
    if prog.kind == "eig":
        msg = LI.check_eig(a, outs[0], None, outs[1])
    else:
        msg = LI.check(prog.kind, a, outs)
    if msg is None and prog.kind in ("eigh", "svd"):  # the values are unique
        k = 1
        exp = [prog.expected[i] for i in prog.order] if prog.order else list(prog.expected)
        msg = compare_values([outs[k]], [exp[k]])
    return "identity: " + LI.IDENTITIES[prog.kind], msg
