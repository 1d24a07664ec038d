"""Comparison of decompositions that are not unique, by their defining identity.

Eigenvectors (signs, phases, the basis of a repeated eigenvalue), QR and SVD
factors (column signs) and Schur vectors differ between correct
implementations. Two results of such a decomposition agree when each satisfies
the defining identities of the decomposition of the same matrix, within a
tolerance that scales with the element type's epsilon, the matrix size and
its norm. Each check returns ``None`` when it holds, else a message naming the
identity that failed and by how much.

``reconstruct`` rebuilds the matrix a result decomposes (``Q R``, ``V Λ Vᴴ``,
...), so a result can also be checked against another result of the same
program when the input matrix itself is not at hand.
"""

from __future__ import annotations

import numpy as np

IDENTITIES = {
    "qr": "Q R = A, QᴴQ = I, R upper triangular",
    "eigh": "A V = V Λ, VᴴV = I, Λ real ascending",
    "eig": "A V = V Λ (right), Uᴴ A = Λ Uᴴ (left), eigenvalues as a multiset",
    "svd": "U Σ Vᴴ = A, UᴴU = I, VVᴴ = I, Σ descending",
    "schur": "Z T Zᴴ = A, ZᴴZ = I, T (quasi-)upper triangular",
}


def _eps(*arrays) -> float:
    dt = np.result_type(*[np.asarray(a).dtype for a in arrays])
    if dt.kind in "fc":
        return float(np.finfo(dt).eps)
    return float(np.finfo(np.float64).eps)


def _h(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _rel(err, scale, eps, n) -> float:
    """Residual in units of ``eps * n * scale``."""
    return float(np.max(err / (np.maximum(scale, np.finfo(np.float64).tiny) * eps * max(n, 1)), initial=0.0))


# budget of the residuals above, in units of eps * n * |A|
BUDGET = 200.0


def _norm(x):
    x = np.asarray(x, np.complex128 if np.iscomplexobj(x) else np.float64)
    return np.linalg.norm(x, ord="fro", axis=(-2, -1)) if x.ndim >= 2 else np.abs(x)


def _residual(name: str, lhs, rhs, scale, eps, n) -> str | None:
    err = _norm(np.asarray(lhs, np.complex128) - np.asarray(rhs, np.complex128))
    r = _rel(err, scale, eps, n)
    if not np.isfinite(r) or r > BUDGET:
        return f"{name}: residual {r:.3g} x eps*n*|A| (budget {BUDGET:g})"
    return None


def _unitary(name: str, q, eps, columns: bool = True) -> str | None:
    q = np.asarray(q, np.complex128)
    g = _h(q) @ q if columns else q @ _h(q)
    eye = np.eye(g.shape[-1])
    return _residual(f"{name} orthonormal", g, eye, np.ones(g.shape[:-2]), eps, g.shape[-1])


def _first(*msgs):
    for m in msgs:
        if m:
            return m
    return None


def check_qr(a, q, r) -> str | None:
    eps, n = _eps(q, r), max(np.shape(a)[-2:])
    below = np.tril(np.asarray(r), -1)
    return _first(
        _residual("Q R = A", np.asarray(q, np.complex128) @ r, a, _norm(a), eps, n),
        _unitary("Q", q, eps),
        _residual("R upper triangular", below, 0 * below, _norm(a), eps, n),
    )


def check_eigh(a, v, w) -> str | None:
    eps, n = _eps(v, w), np.shape(a)[-1]
    w = np.asarray(w)
    if np.iscomplexobj(w) or np.any(np.diff(w, axis=-1) < 0):
        return "eigenvalues not real ascending"
    av = np.asarray(a, np.complex128) @ v
    return _first(_residual("A V = V Λ", av, np.asarray(v) * w[..., None, :], _norm(a), eps, n),
                  _unitary("V", v, eps))


def check_eig(a, w, vl=None, vr=None) -> str | None:
    eps, n = _eps(w), np.shape(a)[-1]
    a = np.asarray(a, np.complex128)
    w = np.asarray(w, np.complex128)
    msgs = []
    if vr is not None:
        msgs.append(_residual("A V = V Λ", a @ vr, np.asarray(vr) * w[..., None, :], _norm(a), eps, n))
    if vl is not None:
        msgs.append(_residual("Uᴴ A = Λ Uᴴ", _h(vl) @ a, w[..., :, None] * _h(vl), _norm(a), eps, n))
    return _first(*msgs)


def check_svd(a, u, s, vh) -> str | None:
    eps, n = _eps(u, s, vh), max(np.shape(a)[-2:])
    s = np.asarray(s)
    if np.any(np.diff(s, axis=-1) > 0) or np.any(s < 0):
        return "singular values not non-negative descending"
    k = s.shape[-1]
    us = np.asarray(u, np.complex128)[..., :, :k] * s[..., None, :]
    return _first(
        _residual("U Σ Vᴴ = A", us @ np.asarray(vh)[..., :k, :], a, _norm(a), eps, n),
        _unitary("U", u, eps), _unitary("Vᴴ", vh, eps, columns=False),
    )


def check_schur(a, t, z) -> str | None:
    eps, n = _eps(t, z), np.shape(a)[-1]
    t = np.asarray(t)
    below = np.tril(t, -2) if not np.iscomplexobj(t) else np.tril(t, -1)
    return _first(
        _residual("Z T Zᴴ = A", np.asarray(z, np.complex128) @ t @ _h(z), a, _norm(a), eps, n),
        _unitary("Z", z, eps),
        _residual("T upper triangular", below, 0 * below, _norm(a), eps, n),
    )


def reconstruct(kind: str, outs) -> np.ndarray:
    """The matrix a result of decomposition ``kind`` decomposes."""
    if kind == "qr":
        q, r = outs[:2]
        return np.asarray(q, np.complex128) @ r
    if kind == "eigh":
        v, w = outs[:2]
        return (np.asarray(v, np.complex128) * w[..., None, :]) @ _h(v)
    if kind == "eig":
        w, vr = outs[0], outs[-1]
        vr = np.asarray(vr, np.complex128)
        return (vr * np.asarray(w)[..., None, :]) @ np.linalg.inv(vr)
    if kind == "svd":
        u, s, vh = outs[:3]
        k = np.shape(s)[-1]
        return (np.asarray(u, np.complex128)[..., :, :k] * s[..., None, :]) @ np.asarray(vh)[..., :k, :]
    if kind == "schur":
        t, z = outs[:2]
        return np.asarray(z, np.complex128) @ t @ _h(z)
    raise ValueError(kind)


CHECKS = {
    "qr": lambda a, o: check_qr(a, *o[:2]),
    "eigh": lambda a, o: check_eigh(a, *o[:2]),
    "eig": lambda a, o: check_eig(a, o[0], *(o[1:3] if len(o) >= 3 else (None, o[1]))),
    "svd": lambda a, o: check_svd(a, *o[:3]),
    "schur": lambda a, o: check_schur(a, *o[:2]),
}


def check(kind: str, a, outs) -> str | None:
    """``None`` when ``outs`` is a decomposition ``kind`` of ``a``."""
    return CHECKS[kind](np.asarray(a), outs)


def compare(kind: str, outs, expected) -> str | None:
    """Compare two results of the same decomposition by identity: ``outs``
    must decompose the matrix ``expected`` decomposes; eigenvalues and
    singular values (unique) must match too."""
    a = reconstruct(kind, expected)
    msg = check(kind, a, outs)
    if msg:
        return msg
    vals = {"eigh": 1, "svd": 1}.get(kind)
    if vals is not None:
        return _residual("values", np.asarray(outs[vals]), np.asarray(expected[vals]),
                         np.max(np.abs(expected[vals]), axis=-1), _eps(outs[vals]), np.shape(outs[vals])[-1])
    if kind == "eig":
        got, exp = _matched_eigs(outs[0], expected[0])
        return _residual("eigenvalues", got, exp, np.max(np.abs(exp), axis=-1), _eps(outs[0]), got.shape[-1])
    return None


def _matched_eigs(got, expected):
    """Both eigenvalue lists (per batch row), ``got`` reordered to pair each
    expected value with the closest one (an optimal assignment)."""
    from scipy.optimize import linear_sum_assignment

    g = np.asarray(got, np.complex128)
    e = np.asarray(expected, np.complex128)
    gf, ef = g.reshape(-1, g.shape[-1]), e.reshape(-1, e.shape[-1])
    out = np.empty_like(gf)
    for b in range(gf.shape[0]):  # one small assignment problem per matrix
        rows, cols = linear_sum_assignment(np.abs(ef[b][:, None] - gf[b][None, :]))
        out[b, rows] = gf[b, cols]
    return out.reshape(g.shape), e
