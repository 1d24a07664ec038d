"""The op registry: one declaration per op is what the engine, the quantization routing,
the oracle and the support listing read."""

from __future__ import annotations

import numpy as np
import pytest

from stablehlo_conform import frontend
from stablehlo_conform.engine import FOLDABLE, TERMINATORS, Engine, run_function
from stablehlo_conform.errors import UnsupportedOp
from stablehlo_conform.harness.programs import support
from stablehlo_conform.kernels import quantized as Q
from stablehlo_conform.kernels.registry import KERNELS, Registry, load_all, register_op
from stablehlo_conform.opinfo import DEQUANTIZE, EXACT, OpInfo
from stablehlo_conform.oracle import classes as C
from stablehlo_conform.oracle import exact as X
from stablehlo_conform.harness.judge import verdict as V

NAME = "test.cube_plus_one"

PROGRAM = f"""
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {{
  %y = "{NAME}"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}}"""


def _cube_plus_one(op, x):
    return (np.asarray(x * x * x + 1, dtype=op.result_dtype(0)),)


def _exact_cube_plus_one(x):
    return x ** 3 + 1


@pytest.fixture
def new_op():
    """``test.cube_plus_one`` declared for the test only."""
    load_all()
    with KERNELS.registering(NAME, _cube_plus_one, families={"float"}, exact=_exact_cube_plus_one, ulps=3,
                             quantized=DEQUANTIZE) as info:
        yield info
    X.clear_cache()


def _module():
    (mod,) = frontend.load_text(PROGRAM)
    return mod


def _op(mod):
    (op, _ret) = mod.funcs["main"].body.blocks[0].ops
    return op


X_IN = np.array([0.5, 1.25, -3.0, 1e-3], np.float32)


def test_a_float_op_is_one_declaration(new_op):
    assert isinstance(new_op, OpInfo) and new_op.kernel is _cube_plus_one and new_op.families == {"float"}
    mod = _module()
    # the engine runs it
    (y,) = run_function(mod, "main", [X_IN])
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, np.array([1.125, 2.953125, -26.0, 1.000000001], np.float32))
    # the oracle's exact reference and accuracy class know it
    assert NAME in X.DEFINED_OPS and NAME not in X.COMPLEX_OPS
    ref = X.correctly_rounded(NAME, [np.array([1e-3, 2.0], np.float32)], np.float32)
    np.testing.assert_array_equal(ref, np.array([1.000000001, 9.0], np.float32))
    cls = C.class_of(_op(mod))
    assert (cls.kind, cls.ulps, cls.source) == (C.ULP, 3, "default")
    # a backend 2 ULPs off is within the declared bound, one 64 ULPs off is not
    good = np.asarray(y)
    off = good.copy()
    off[0] = np.nextafter(np.nextafter(off[0], np.inf), np.inf)
    far = good.copy()
    far[1] = good[1] + 64 * np.spacing(good[1])
    v = V.judge_op(mod, _op(mod), [X_IN], {"a": (off,), "b": (far,)})
    assert v["reference"] == "mpmath" and v["wrong"] == ["b"], v
    assert v["backends"]["a"]["max_ulp_from_exact"] == 2 and v["backends"]["b"]["max_ulp_from_exact"] == 64, v
    # the support listing counts it as covered
    assert support.unsupported_ops([mod]) == []
    # quantized operands take the dequantize -> op -> quantize path
    assert NAME in Q.DEQUANTIZE_OPS and NAME not in FOLDABLE


def test_nothing_leaks_out_of_a_scope():
    load_all()
    before = (KERNELS.names(), sorted(X.DEFINED_OPS), sorted(Q.DEQUANTIZE_OPS))
    with KERNELS.registering(NAME, _cube_plus_one, exact=_exact_cube_plus_one, quantized=DEQUANTIZE):
        assert NAME in KERNELS and NAME in X.DEFINED_OPS and NAME in Q.DEQUANTIZE_OPS
        with pytest.raises(ValueError, match="registered twice"):
            register_op(NAME, _cube_plus_one)
        with pytest.raises(ValueError, match="declared twice"):
            register_op(NAME, quantized="storage")
    assert (KERNELS.names(), sorted(X.DEFINED_OPS), sorted(Q.DEQUANTIZE_OPS)) == before
    assert NAME not in KERNELS and KERNELS.info(NAME) is None
    mod = _module()
    assert support.unsupported_ops([mod]) == [NAME]
    with pytest.raises(UnsupportedOp):
        run_function(mod, "main", [X_IN])
    assert C.class_of(_op(mod)).ulps == C.ulp_bound("*", "f32")[0]


def test_duplicates_and_unknown_facts_are_refused():
    reg = Registry()

    reg.register("x.op", _cube_plus_one)
    with pytest.raises(ValueError, match="registered twice"):
        reg.register("x.op", _cube_plus_one)
    reg.declare("x.op", accuracy=EXACT)
    reg.declare("x.op", accuracy=EXACT)  # the same fact again is no conflict
    with pytest.raises(ValueError, match="declared twice"):
        reg.declare("x.op", accuracy="ulp")
    with pytest.raises(TypeError, match="unknown op fact"):
        reg.declare("x.op", colour="red")
    with pytest.raises(ValueError, match="accuracy must be"):
        reg.declare("y.op", accuracy="roughly")



def test_custom_call_targets_are_registered_once():
    """A custom_call target or prefix given a second function is refused, as a second kernel
    is (none of the names is then added), and the tables cannot be written to by hand."""
    from stablehlo_conform.kernels import custom_call as CC

    load_all()
    eq, mhlo = CC.TARGETS["check.eq"], CC.PREFIXES["mhlo."]

    def other(op, *xs):
        return ()

    with pytest.raises(ValueError, match="custom_call target 'check.eq' registered twice"):
        CC.custom_target("x.new_target", "check.eq")(other)
    with pytest.raises(ValueError, match="custom_call prefix 'mhlo.' registered twice"):
        CC.custom_prefix("mhlo.")(other)
    with pytest.raises(TypeError):
        CC.TARGETS["check.eq"] = other
    assert CC.TARGETS["check.eq"] is eq and CC.PREFIXES["mhlo."] is mhlo and "x.new_target" not in CC.TARGETS
    CC.custom_target("check.eq")(eq)  # the same function again is no conflict

def test_overrides_replace_the_kernel_and_keep_the_facts(new_op):
    def other(op, x):
        return (np.zeros_like(x),)

    reg = KERNELS.with_overrides({NAME: other})
    info = reg.info(NAME)
    assert info.kernel is other and info.exact is _exact_cube_plus_one and KERNELS.info(NAME).kernel is _cube_plus_one
    (y,) = Engine(_module(), registry=reg).call("main", [X_IN])
    np.testing.assert_array_equal(y, np.zeros(4, np.float32))


def test_the_old_tables_are_views_of_the_registry():
    load_all()
    assert "stablehlo.return" in TERMINATORS and KERNELS.info("stablehlo.return").terminator
    assert "stablehlo.add" in FOLDABLE and "stablehlo.while" not in FOLDABLE
    assert "stablehlo.exponential" in X.DEFINED_OPS and KERNELS.info("stablehlo.exponential").exact
    assert "stablehlo.reshape" in Q.STORAGE_OPS and "stablehlo.add" in Q.DEQUANTIZE_OPS
    assert C.ACCUMULATING_OPS == C.DOT_OPS | {"stablehlo.reduce", "stablehlo.reduce_window", "stablehlo.fft",
                                              "stablehlo.triangular_solve"}
