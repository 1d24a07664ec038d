"""CHLO ops with structure of their own: ``chlo.ragged_dot`` and ``chlo.scan``.

``chlo.ragged_dot(lhs, rhs, group_sizes)`` is a ``dot_general`` whose
``lhs_ragged_dimensions[0]`` is cut into consecutive groups of
``group_sizes`` elements:

- the ragged dimension is a non-contracting lhs dimension: group ``i`` of
  lhs rows is multiplied by ``rhs[i]`` along ``rhs_group_dimensions``; rows
  past the last group are zero;
- the ragged dimension is contracting: the result gets a leading group
  dimension, group ``i`` contracts only its own slice;
- the ragged dimension is a batch dimension: batches past the last group are
  zero, the others are a plain ``dot_general``.

``chlo.scan(inputs) inits(carries) dimension=d`` runs its body once per
index along ``d`` (from the end when ``is_reverse``) on the rank-reduced
slices of the inputs and the carries; the body returns the per-step outputs
followed by the new carries. Results are the outputs stacked along ``d`` and
the final carries.
"""

from __future__ import annotations

import re

import numpy as np

from .linalg import dot_general_arrays
from .reduction import contiguous
from ..opinfo import DOT
from .registry import kernel


def _dims_field(text: str, name: str) -> tuple[int, ...]:
    m = re.search(name + r"\s*=\s*\[([^\]]*)\]", text)
    if not m:
        return ()
    return tuple(int(v) for v in m.group(1).replace(" ", "").split(",") if v != "")


def _ragged_dims(op) -> dict[str, tuple[int, ...]]:
    dn = op.attr("ragged_dot_dimension_numbers")
    names = ("lhs_batching_dimensions", "rhs_batching_dimensions", "lhs_contracting_dimensions",
             "rhs_contracting_dimensions", "lhs_ragged_dimensions", "rhs_group_dimensions")
    if hasattr(dn, "get") and not isinstance(dn, str):
        return {n: tuple(int(v) for v in (dn.get(n, ()) or ())) for n in names}
    text = str(dn)
    return {n: _dims_field(text, n) for n in names}


@kernel("chlo.ragged_dot", accuracy=DOT)
def ragged_dot(op, lhs, rhs, group_sizes):
    """chlo.ragged_dot: a dot_general over groups of the lhs ragged dimension."""
    d = _ragged_dims(op)
    lb, rb = d["lhs_batching_dimensions"], d["rhs_batching_dimensions"]
    lc, rc = d["lhs_contracting_dimensions"], d["rhs_contracting_dimensions"]
    ragged = d["lhs_ragged_dimensions"]
    rg = d["rhs_group_dimensions"]
    out_dtype = op.result_dtype(0)
    gs = np.asarray(group_sizes).astype(np.int64)
    if len(ragged) != 1 or gs.ndim != 1:
        raise op.unsupported("only one ragged dimension and 1-D group_sizes are supported")
    r = ragged[0]
    bounds = np.concatenate([[0], np.cumsum(gs)])
    out_shape = tuple(op.result_shape(0))
    if r in lc:
        # ragged contracting dimension: one result per group
        j = lc.index(r)
        outs = []
        for i in range(gs.shape[0]):
            s, e = int(bounds[i]), int(min(bounds[i + 1], lhs.shape[r]))
            s = min(s, e)
            ls = np.take(lhs, np.arange(s, e), axis=r)
            rs = np.take(rhs, np.arange(s, e), axis=rc[j])
            outs.append(dot_general_arrays(ls, rs, lb, rb, lc, rc, out_dtype))
        return (contiguous(np.stack(outs, axis=0).astype(out_dtype)),)
    if r in lb:
        res = dot_general_arrays(lhs, rhs, lb, rb, lc, rc, out_dtype)
        total = int(bounds[-1])
        ax = lb.index(r)
        idx = np.arange(res.shape[ax])
        mask = (idx < total).reshape([-1 if a == ax else 1 for a in range(res.ndim)])
        return (contiguous(np.where(mask, res, np.zeros((), out_dtype))),)
    # ragged non-contracting dimension: rows of group i use rhs[i]
    if len(rg) != 1:
        raise op.unsupported("ragged non-contracting dimension needs one rhs group dimension")
    g = rg[0]
    shift = lambda dims: tuple(v - 1 if v > g else v for v in dims)  # noqa: E731
    lf = [a for a in range(lhs.ndim) if a not in lb and a not in lc]
    out_axis = len(lb) + lf.index(r)
    result = np.zeros(out_shape, dtype=out_dtype)
    for i in range(gs.shape[0]):
        s, e = int(bounds[i]), int(min(bounds[i + 1], lhs.shape[r]))
        if e <= s:
            continue
        ls = np.take(lhs, np.arange(s, e), axis=r)
        rs = np.take(rhs, i, axis=g)
        part = dot_general_arrays(ls, rs, lb, shift(rb), lc, shift(rc), out_dtype)
        sl = [slice(None)] * result.ndim
        sl[out_axis] = slice(s, e)
        result[tuple(sl)] = part
    return (result,)


@kernel("chlo.scan")
def scan(op, *operands):
    """chlo.scan: a sequential scan of the body along ``dimension``."""
    seg = op.attr("operandSegmentSizes") or op.attr("operand_segment_sizes")
    rseg = op.attr("resultSegmentSizes") or op.attr("result_segment_sizes")
    if seg is None or rseg is None:
        raise op.unsupported("missing segment sizes")
    n_in, n_carry = int(seg[0]), int(seg[1])
    n_out = int(rseg[0])
    inputs, carries = list(operands[:n_in]), list(operands[n_in:n_in + n_carry])
    dim = int(op.attr("dimension", 0))
    reverse = bool(op.attr("is_reverse", False))
    length = inputs[0].shape[dim] if inputs else int(op.result_shape(0)[dim])
    body = op.region(0)
    steps = range(length - 1, -1, -1) if reverse else range(length)
    outs: list[list[np.ndarray]] = [[None] * length for _ in range(n_out)]  # type: ignore[list-item]
    for t in steps:
        xs = [np.take(x, t, axis=dim) for x in inputs]
        res = body(*xs, *carries)
        for k in range(n_out):
            outs[k][t] = np.asarray(res[k])
        carries = list(res[n_out:])
    results = []
    for k in range(n_out):
        if length == 0:
            results.append(np.zeros(op.result_shape(k), dtype=op.result_dtype(k)))
        else:
            results.append(np.stack(outs[k], axis=dim).astype(op.result_dtype(k), copy=False))
    return tuple(results) + tuple(carries)
