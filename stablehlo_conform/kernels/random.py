"""Random numbers: ``stablehlo.rng`` and ``stablehlo.rng_bit_generator``.

See spec.md#rng and spec.md#rng_bit_generator.

``rng_bit_generator`` produces the same bits as XLA on CPU:

- ``THREE_FRY``: state ``[key, counter]`` (u64 each). Threefry-2x32 (20
  rounds) with the key split into its low/high 32-bit halves, applied to
  counters ``counter + linear index``. 32-bit outputs take the ``ceil(n/2)``
  first words then the remaining second words; 64-bit outputs combine the two
  words of one block (first word in the high half); narrower outputs keep the
  low bits of 32-bit words. ``output_state = [key, counter + m]`` where ``m``
  is the number of blocks.
- ``PHILOX``: state ``[key, counter_lo]`` or ``[key, counter_lo,
  counter_hi]``. Philox-4x32 (10 rounds) over the 128-bit counters
  ``counter + i``; the four words of each block are interleaved in order.
  The counter advances by the number of blocks.
- ``DEFAULT`` is Philox, as on XLA CPU.

Floating-point outputs receive the raw bits of the same-width unsigned type.

``rng`` draws from a NumPy generator held in the run's engine state, seeded
deterministically (the spec leaves the numbers implementation-defined):
``UNIFORM`` over ``[a, b)``, ``NORMAL`` with mean ``a`` and deviation ``b``.
"""

from __future__ import annotations

import numpy as np

from .registry import kernel

_M32 = np.uint64(0xFFFFFFFF)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def threefry2x32(key0, key1, x0: np.ndarray, x1: np.ndarray):
    """Threefry-2x32 with 20 rounds (Salmon et al. 2011) on uint32 arrays."""
    k0 = np.uint32(key0)
    k1 = np.uint32(key1)
    k2 = np.uint32(k0 ^ k1 ^ np.uint32(0x1BD11BDA))
    ks = (k0, k1, k2)
    rot = ((13, 15, 26, 6), (17, 29, 16, 24))
    x0 = (x0 + ks[0]).astype(np.uint32)
    x1 = (x1 + ks[1]).astype(np.uint32)
    with np.errstate(over="ignore"):
        for i in range(5):
            for r in rot[i % 2]:
                x0 = x0 + x1
                x1 = _rotl(x1, r)
                x1 = x1 ^ x0
            x0 = x0 + ks[(i + 1) % 3]
            x1 = x1 + ks[(i + 2) % 3] + np.uint32(i + 1)
    return x0, x1


def philox4x32(key0, key1, c0, c1, c2, c3):
    """Philox-4x32 with 10 rounds on uint32 arrays."""
    k0 = np.uint64(key0)
    k1 = np.uint64(key1)
    ma = np.uint64(0xD2511F53)
    mb = np.uint64(0xCD9E8D57)
    c = [np.asarray(v, dtype=np.uint64) for v in (c0, c1, c2, c3)]
    for _ in range(10):
        p0 = c[0] * ma
        p1 = c[2] * mb
        hi0, lo0 = p0 >> np.uint64(32), p0 & _M32
        hi1, lo1 = p1 >> np.uint64(32), p1 & _M32
        c = [hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0]
        k0 = (k0 + np.uint64(0x9E3779B9)) & _M32
        k1 = (k1 + np.uint64(0xBB67AE85)) & _M32
    return [v.astype(np.uint32) for v in c]


def _split64(v: int) -> tuple[int, int]:
    v = int(v) & 0xFFFFFFFFFFFFFFFF
    return v & 0xFFFFFFFF, v >> 32


def _bit_width(dtype: np.dtype) -> int:
    name = np.dtype(dtype).name
    if name in ("int2", "uint2"):
        return 2
    if name in ("int4", "uint4") or name.startswith("float4_"):
        return 4
    if name.startswith("float6_"):
        return 6
    return np.dtype(dtype).itemsize * 8


def _split_dim(shape: tuple) -> int:
    """The dimension 32-bit Threefry output is split along: the first of even
    size, else the first of maximal size."""
    for i, d in enumerate(shape):
        if d % 2 == 0:
            return i
    best = 0
    for i, d in enumerate(shape):
        if d > shape[best]:
            best = i
    return best


def _threefry_words(k0: int, k1: int, counter: int, shape: tuple):
    """Threefry blocks for counters ``counter + row-major index`` of ``shape``."""
    m = int(np.prod(shape, dtype=np.int64))
    idx = np.arange(m, dtype=np.uint64) + np.uint64(counter)
    lo = (idx & _M32).astype(np.uint32)
    hi = (idx >> np.uint64(32)).astype(np.uint32)
    o0, o1 = threefry2x32(k0, k1, lo, hi)
    return o0.reshape(shape), o1.reshape(shape), m


def _threefry_bits(state: np.ndarray, shape: tuple, width: int):
    key, counter = int(state[0]), int(state[1])
    k0, k1 = _split64(key)
    shape = tuple(int(d) for d in shape)
    if width <= 32:
        # two words per block, the halves interleaved along one dimension
        full = shape if shape else (1,)
        d = _split_dim(full)
        half = full[:d] + ((full[d] + 1) // 2,) + full[d + 1:]
        o0, o1, m = _threefry_words(k0, k1, counter, half)
        both = np.stack([o0, o1], axis=d + 1)
        both = both.reshape(full[:d] + (2 * half[d],) + full[d + 1:])
        both = both[(slice(None),) * d + (slice(0, full[d]),)]
        bits = both.reshape(-1).astype(np.uint64)
    else:
        o0, o1, m = _threefry_words(k0, k1, counter, shape)
        bits = ((o1.astype(np.uint64) << np.uint64(32)) | o0.astype(np.uint64)).reshape(-1)
    new_counter = (counter + m) & 0xFFFFFFFFFFFFFFFF
    return bits, [key, new_counter]


def _philox_bits(state: np.ndarray, shape: tuple, width: int):
    key = int(state[0])
    k0, k1 = _split64(key)
    lo = int(state[1])
    # with a 2-element state the key doubles as the counter's high word
    hi = int(state[2]) if state.shape[0] > 2 else key
    n = int(np.prod(shape, dtype=np.int64))
    words_needed = n * 2 if width > 32 else n
    m = (words_needed + 3) // 4
    ar = np.arange(m, dtype=np.uint64)
    # 128-bit counters (lo + i, hi + carry), four 32-bit words each
    with np.errstate(over="ignore"):
        c_lo = np.uint64(lo) + ar
        carry = (c_lo < np.uint64(lo)).astype(np.uint64)
        c_hi = np.uint64(hi) + carry
    w0 = (c_lo & _M32).astype(np.uint32)
    w1 = (c_lo >> np.uint64(32)).astype(np.uint32)
    w2 = (c_hi & _M32).astype(np.uint32)
    w3 = (c_hi >> np.uint64(32)).astype(np.uint32)
    r = philox4x32(k0, k1, w0, w1, w2, w3)
    if width > 32:
        a = (r[1].astype(np.uint64) << np.uint64(32)) | r[0].astype(np.uint64)
        b = (r[3].astype(np.uint64) << np.uint64(32)) | r[2].astype(np.uint64)
        bits = np.stack([a, b], axis=1).reshape(-1)[:n]
    else:
        bits = np.stack(r, axis=1).reshape(-1)[:n].astype(np.uint64)
    new_lo = (lo + m) & 0xFFFFFFFFFFFFFFFF
    new_state = [key, new_lo]
    if state.shape[0] > 2:
        new_state.append((hi + ((lo + m) >> 64)) & 0xFFFFFFFFFFFFFFFF)
    return bits, new_state


def _to_output(bits: np.ndarray, shape: tuple, dtype: np.dtype, width: int) -> np.ndarray:
    dtype = np.dtype(dtype)
    if width >= 8:
        udt = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[width]
        return bits.astype(udt).view(dtype).reshape(shape)
    # sub-byte types: keep the low bits
    mask = np.uint64((1 << width) - 1)
    low = (bits & mask).astype(np.uint8)
    if dtype.name.startswith("int"):
        v = low.astype(np.int16)
        v = np.where(v >= (1 << (width - 1)), v - (1 << width), v)
        return v.astype(dtype).reshape(shape)
    if dtype.kind == "u" or dtype.name.startswith("uint"):
        return low.astype(dtype).reshape(shape)
    from ..types import from_bits  # float4/float6

    return from_bits(low.reshape(shape), dtype)


@kernel("stablehlo.rng_bit_generator")
def rng_bit_generator(op, initial_state):
    """See spec.md#rng_bit_generator (THREE_FRY, PHILOX; DEFAULT = PHILOX)."""
    alg = str(op.attr("rng_algorithm", "DEFAULT"))
    state = np.asarray(initial_state, dtype=np.uint64).reshape(-1)
    shape = tuple(op.result_shape(1))
    if any(d is None for d in shape):
        raise op.unsupported("dynamic output shape")
    dtype = op.result_dtype(1)
    if dtype == np.bool_:
        raise op.unsupported("boolean output")
    width = _bit_width(dtype)
    if alg == "THREE_FRY":
        if state.shape[0] != 2:
            raise op.unsupported("THREE_FRY needs a state of 2 elements")
        bits, new_state = _threefry_bits(state, shape, width)
    elif alg in ("PHILOX", "DEFAULT"):
        if state.shape[0] not in (2, 3):
            raise op.unsupported("PHILOX needs a state of 2 or 3 elements")
        bits, new_state = _philox_bits(state, shape, width)
    else:
        raise op.unsupported(f"rng_algorithm {alg}")
    out = _to_output(bits, shape, dtype, width)
    return (np.array(new_state, dtype=np.uint64).astype(op.result_dtype(0)), out)


@kernel("stablehlo.rng")
def rng(op, a, b, shape):
    """See spec.md#rng: a deterministic NumPy generator per run."""
    gen = op.engine.state.get("rng_generator")
    if gen is None:
        gen = np.random.default_rng(0)
        op.engine.state["rng_generator"] = gen
    out_shape = tuple(int(v) for v in np.asarray(shape).reshape(-1))
    dt = op.result_dtype(0)
    dist = str(op.attr("rng_distribution", "UNIFORM"))
    a = np.asarray(a)
    b = np.asarray(b)
    if dist == "NORMAL":
        if dt.kind not in "f" and "float" not in dt.name:
            raise op.unsupported("NORMAL needs a floating-point type")
        v = gen.normal(float(a), float(b), size=out_shape)
        return (np.asarray(v).astype(dt),)
    if dist != "UNIFORM":
        raise op.unsupported(f"rng_distribution {dist}")
    if dt == np.bool_:
        lo, hi = int(bool(a)), int(bool(b))
        v = gen.integers(lo, max(hi, lo + 1), size=out_shape) if hi > lo else np.full(out_shape, lo)
        return (np.asarray(v).astype(np.bool_),)
    if dt.kind in "iu" or "int" in dt.name:
        lo, hi = int(a), int(b)
        if hi <= lo:
            return (np.full(out_shape, lo).astype(dt),)
        v = gen.integers(lo, hi, size=out_shape)
        return (np.asarray(v).astype(dt),)
    lo, hi = float(a), float(b)
    v = lo + (hi - lo) * gen.random(size=out_shape)
    v = np.asarray(v).astype(dt)
    # keep the half-open interval after rounding
    if hi > lo:
        v = np.where(v.astype(np.float64) >= hi, np.asarray(lo).astype(dt), v)
    return (np.asarray(v, dtype=dt),)
