"""Export sharded JAX programs (and their unsharded twins) into a folder.

Run as ``python tests/sharded_exports.py OUTDIR``: it forces 8 CPU devices
before jax starts, exports every case below with ``jax.export`` on a 4x2 mesh
(``shard_map`` with collectives, nested, sharding constraints, sharded arguments) and
writes per case ``NAME.mlir`` (text), ``NAME.bin`` (the portable artifact),
``NAME.twin.mlir`` (the same computation written without a mesh, exported on
one device) and ``NAME.npz`` (inputs ``arg0...`` and the outputs ``out0...``
of ``jax.jit`` of the sharded function on the 8 devices), plus
``cases.json`` listing the cases.
"""

from __future__ import annotations

import json
import os
import sys

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import export, lax  # noqa: E402
from jax.sharding import Mesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

shard_map = getattr(jax, "shard_map", None)
if shard_map is None:  # older jax
    from jax.experimental.shard_map import shard_map

DEVICES = np.array(jax.devices()[:8])
MESH = Mesh(DEVICES.reshape(4, 2), ("x", "y"))
REVERSED = Mesh(DEVICES[::-1].reshape(4, 2), ("x", "y"))  # explicit device ids
LINE = Mesh(DEVICES, ("i",))
A = jnp.arange(32, dtype=jnp.float32).reshape(8, 4) / 4 - 3
B = (jnp.arange(64, dtype=jnp.int32).reshape(8, 8) * 7) % 19
SQUARE = jnp.sin(jnp.arange(64, dtype=jnp.float32)).reshape(8, 8)


def smap(body, mesh, in_specs, out_specs, **kw):
    if mesh is not None:  # None: the mesh of the enclosing shard_map
        kw["mesh"] = mesh
    return shard_map(body, in_specs=in_specs, out_specs=out_specs, check_vma=False, **kw)


def cyclic(n, k=1):
    return [(i, (i + k) % n) for i in range(n)]


def psum_x(a):
    return smap(lambda b: lax.psum(b, "x") * 2, MESH, P("x", "y"), P(None, "y"))(a)


def psum_x_twin(a):
    return a.reshape(4, 2, 4).sum(0) * 2


def psum_xy(a):
    return smap(lambda b: lax.psum(b, ("x", "y")), MESH, P("x", "y"), P())(a)


def psum_xy_twin(a):
    return a.reshape(4, 2, 2, 2).sum((0, 2))


def pmax_int(b):
    return smap(lambda v: lax.pmax(v, "y") - lax.pmin(v, "x"), MESH, P("x", "y"), P("x", "y"))(b)


def all_gather_tiled(a):
    return smap(lambda b: lax.all_gather(b, "y", axis=1, tiled=True), MESH, P("x", "y"), P("x"))(a)


def all_gather_tiled_twin(a):
    return a


def all_gather_stacked(a):
    return smap(lambda b: lax.all_gather(b, "x")[None], MESH, P("x", "y"), P("y", None, None, None))(a)


def ppermute_x(a):
    return smap(lambda b: lax.ppermute(b, "x", cyclic(4)), MESH, P("x", "y"), P("x", "y"))(a)


def ppermute_x_twin(a):
    return jnp.roll(a, 2, axis=0)


def ppermute_y(b):
    return smap(lambda v: lax.ppermute(v, "y", [(0, 1)]), MESH, P("x", "y"), P("x", "y"))(b)


def all_to_all_x(a):
    return smap(lambda b: lax.all_to_all(b, "x", 1, 0, tiled=True), MESH, P("x", None), P(None, "x"))(a)


def all_to_all_x_twin(a):
    return a


def psum_scatter_line(a):
    return smap(lambda b: lax.psum_scatter(b, "i", scatter_dimension=0, tiled=True), LINE, P(None), P("i"))(a)


def psum_scatter_line_twin(a):
    return a * 8


def axis_index(a):
    return smap(lambda b: b * lax.axis_index("x") + lax.axis_index("y"), MESH, P("x", "y"), P("x", "y"))(a)


def axis_index_twin(a):
    x = jnp.repeat(jnp.arange(4, dtype=a.dtype), 2)[:, None]
    y = jnp.repeat(jnp.arange(2, dtype=a.dtype), 2)[None, :]
    return a * x + y


def reversed_mesh(a):
    return smap(lambda b: lax.ppermute(b, "x", cyclic(4)) + lax.axis_index("y"), REVERSED, P("x", "y"),
                P("x", "y"))(a)


def constraint(a):
    c = lax.with_sharding_constraint(a * 2, NamedSharding(MESH, P("x", None)))
    d = lax.with_sharding_constraint(jnp.sin(c), NamedSharding(MESH, P(None, "y")))
    return d @ c.T


def constraint_twin(a):
    c = a * 2
    return jnp.sin(c) @ c.T


def sharded_args(a, s):
    return jnp.tanh(a) @ s[:4] + s[4:].sum(0)


def sharded_args_twin(a, s):
    return jnp.tanh(a) @ s[:4] + s[4:].sum(0)


def mixed(a):
    """A sharding constraint around a shard_map whose body reduces over both
    mesh axes and exchanges along one."""
    a = lax.with_sharding_constraint(a + 1, NamedSharding(MESH, P("x", "y")))
    out = smap(lambda b: lax.ppermute(lax.psum(b, "y"), "x", cyclic(4, 3)), MESH, P("x", "y"), P("x"))(a)
    return jnp.exp(out / 16)


def mixed_twin(a):
    s = (a + 1).reshape(8, 2, 2).sum(1)
    return jnp.exp(jnp.roll(s, -2, axis=0) / 16)


def partial_manual(a):
    """Manual over ``x`` only; ``y`` stays automatic inside the body."""
    return shard_map(lambda b: lax.psum(jnp.cos(b), "x"), mesh=MESH, in_specs=P("x"), out_specs=P(),
                     axis_names=frozenset({"x"}), check_vma=False)(a)


def partial_manual_twin(a):
    return jnp.cos(a).reshape(4, 2, 4).sum(0)


def nested(a):
    """A shard_map over ``y`` inside one over ``x``."""
    def outer(b):
        inner = smap(lambda c: lax.psum(c, "y") * (1 + lax.axis_index("x")), None, P(None, "y"), P(),
                     axis_names=frozenset({"y"}))
        return lax.ppermute(inner(b), "x", cyclic(4))
    return smap(outer, MESH, P("x"), P("x"), axis_names=frozenset({"x"}))(a)


def nested_twin(a):
    s = a.reshape(8, 2, 2).sum(1) * jnp.repeat(jnp.arange(1, 5, dtype=a.dtype), 2)[:, None]
    return jnp.roll(s, 2, axis=0)


CASES = {
    "psum_x": (psum_x, (A,), {}),
    "psum_xy": (psum_xy, (A,), {}),
    "pmax_int": (pmax_int, (B,), {}),
    "all_gather_tiled": (all_gather_tiled, (A,), {}),
    "all_gather_stacked": (all_gather_stacked, (A,), {}),
    "ppermute_x": (ppermute_x, (A,), {}),
    "ppermute_y": (ppermute_y, (B,), {}),
    "all_to_all_x": (all_to_all_x, (SQUARE,), {}),
    "psum_scatter_line": (psum_scatter_line, (SQUARE,), {}),
    "axis_index": (axis_index, (A,), {}),
    "reversed_mesh": (reversed_mesh, (A,), {}),
    "constraint": (constraint, (A,), {}),
    "sharded_args": (sharded_args, (A, SQUARE * 0.5), {
        "in_shardings": (NamedSharding(MESH, P("x", "y")), NamedSharding(MESH, P("y", None))),
        "out_shardings": NamedSharding(MESH, P(None, "x"))}),
    "mixed": (mixed, (A,), {}),
    "partial_manual": (partial_manual, (A,), {}),
    "nested": (nested, (A,), {}),
}
TWINS = {name: globals().get(name + "_twin") for name in CASES}


def main(out: str) -> None:
    os.makedirs(out, exist_ok=True)
    listing = []
    for name, (fn, args, jit_kw) in CASES.items():
        jitted = jax.jit(fn, **jit_kw)
        exp = export.export(jitted)(*args)
        results = jitted(*args)
        results = results if isinstance(results, (tuple, list)) else (results,)
        with open(os.path.join(out, name + ".mlir"), "w") as f:
            f.write(exp.mlir_module())
        with open(os.path.join(out, name + ".bin"), "wb") as f:
            f.write(exp.mlir_module_serialized)
        twin = TWINS[name]
        if twin is not None:
            with open(os.path.join(out, name + ".twin.mlir"), "w") as f:
                f.write(export.export(jax.jit(twin))(*args).mlir_module())
        arrays = {f"arg{i}": np.asarray(a) for i, a in enumerate(args)}
        arrays.update({f"out{i}": np.asarray(r) for i, r in enumerate(results)})
        np.savez(os.path.join(out, name + ".npz"), **arrays)
        listing.append({"name": name, "twin": twin is not None, "args": len(args), "results": len(results)})
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump(listing, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
