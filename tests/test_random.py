"""rng_bit_generator and rng.

The spec's THREE_FRY example (spec.md#rng_bit_generator), bit-exact
agreement with XLA on CPU through jax for THREE_FRY, PHILOX and DEFAULT
(skipped when jax is not installed), and the bounds and determinism of
``rng`` (spec.md#rng).
"""

from __future__ import annotations

import numpy as np
import pytest

from stablehlo_conform.kernels.random import philox4x32, threefry2x32

from kernel_util import SUITE, assert_suite_file_passes, one, run, ty


def rbg(alg: str, state, shape, el):
    n = len(state)
    st = ty((n,), "ui64")
    text = f"""
func.func @main(%s: {st}) -> ({st}, {ty(shape, el)}) {{
  %0, %1 = stablehlo.rng_bit_generator %s, algorithm = {alg} : ({st}) -> ({st}, {ty(shape, el)})
  func.return %0, %1 : {st}, {ty(shape, el)}
}}"""
    return run(text, np.array(state, np.uint64))


def test_threefry_spec_example():
    state, out = rbg("THREE_FRY", [1, 2], (2, 2), "ui64")
    assert state.tolist() == [1, 6]
    assert out.tolist() == [[9236835810183407956, 16087790271692313299],
                            [18212823393184779219, 2658481902456610144]]


def test_threefry_known_answer():
    # Random123 known-answer vector: threefry2x32_20, key 0, counter 0
    x0, x1 = threefry2x32(0, 0, np.zeros(1, np.uint32), np.zeros(1, np.uint32))
    assert (int(x0[0]), int(x1[0])) == (0x6B200159, 0x99BA4EFE)


def test_philox_known_answer():
    # Random123 known-answer vector: philox4x32_10, key 0, counter 0
    z = np.zeros(1, np.uint32)
    r = philox4x32(0, 0, z, z, z, z)
    assert [int(v[0]) for v in r] == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]


def test_output_state_advances_by_blocks():
    # 32-bit THREE_FRY: two words per counter; PHILOX: four words per counter
    assert rbg("THREE_FRY", [7, 10], (5,), "ui32")[0].tolist() == [7, 13]
    assert rbg("PHILOX", [7, 10], (5,), "ui32")[0].tolist() == [7, 12]
    assert rbg("PHILOX", [7, 2**64 - 1, 4], (4,), "ui64")[0].tolist() == [7, 1, 5]


def test_float_output_is_raw_bits():
    _, bits = rbg("PHILOX", [3, 4], (6,), "ui32")
    _, f = rbg("PHILOX", [3, 4], (6,), "f32")
    assert f.dtype == np.float32
    np.testing.assert_array_equal(f.view(np.uint32), bits)



@pytest.fixture(scope="module")
def lax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    from jax import lax as _lax

    return _lax


# split-dimension cases: first even dim, no even dim (largest padded), rank 0
CASES = [((), "ui32"), ((3,), "ui32"), ((2, 3), "ui64"), ((3, 3), "ui32"), ((1, 3), "ui8"),
         ((5, 1, 3), "ui16")]


@pytest.mark.parametrize("alg", ["THREE_FRY", "PHILOX", "DEFAULT"])
def test_bits_match_xla_cpu(alg, lax):
    import jax.numpy as jnp

    jalg = {"THREE_FRY": lax.RandomAlgorithm.RNG_THREE_FRY, "PHILOX": lax.RandomAlgorithm.RNG_PHILOX,
            "DEFAULT": lax.RandomAlgorithm.RNG_DEFAULT}[alg]
    dts = {"ui8": jnp.uint8, "ui16": jnp.uint16, "ui32": jnp.uint32, "ui64": jnp.uint64}
    for state in ([1, 2], [0x0123456789ABCDEF, 0xFFFFFFFFFFFFFFFE]):
        for shape, el in CASES:
            s, o = rbg(alg, state, shape, el)
            js, jo = lax.rng_bit_generator(jnp.array(state, jnp.uint64), shape, dtype=dts[el], algorithm=jalg)
            assert s.tolist() == np.asarray(js).tolist(), (state, shape, el)
            np.testing.assert_array_equal(o, np.asarray(jo), err_msg=str((state, shape, el)))


def test_testdata_rng_bit_generator():
    assert_suite_file_passes(SUITE / "testdata" / "rng_bit_generator_uint32_4.mlir")


# ----------------------------------------------------------------------------- rng


def rng_text(el, dist, shape):
    return f"""
func.func @main(%a: tensor<{el}>, %b: tensor<{el}>) -> {ty(shape, el)} {{
  %shape = stablehlo.constant dense<[{", ".join(map(str, shape))}]> : tensor<{len(shape)}xi64>
  %r = stablehlo.rng %a, %b, %shape, distribution = {dist}
       : (tensor<{el}>, tensor<{el}>, tensor<{len(shape)}xi64>) -> {ty(shape, el)}
  func.return %r : {ty(shape, el)}
}}"""


def rng_run(el, dist, shape, a, b):
    return one(rng_text(el, dist, shape), a, b)


def test_rng_uniform_int_bounds_and_determinism():
    a, b = np.array(-3, np.int32), np.array(4, np.int32)
    out = rng_run("i32", "UNIFORM", (50, 40), a, b)
    assert out.dtype == np.int32 and out.min() >= -3 and out.max() <= 3
    assert set(np.unique(out).tolist()) == set(range(-3, 4))
    np.testing.assert_array_equal(out, rng_run("i32", "UNIFORM", (50, 40), a, b))


def test_rng_uniform_float_half_open():
    out = rng_run("f16", "UNIFORM", (1000,), np.array(1, np.float16), np.array(1.25, np.float16))
    assert out.dtype == np.float16 and (out >= 1).all() and (out < 1.25).all()


def test_rng_normal_moments():
    out = rng_run("f32", "NORMAL", (20000,), np.array(5, np.float32), np.array(2, np.float32))
    assert out.dtype == np.float32
    assert abs(out.mean() - 5) < 0.1 and abs(out.std() - 2) < 0.1
