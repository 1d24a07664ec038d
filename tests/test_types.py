"""Element types: every spec type to and from NumPy without loss."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from stablehlo_conform import frontend
from stablehlo_conform import types as T

FLOATS = ["bf16", "f16", "f32", "f64", "f8E4M3FN", "f8E5M2", "f8E4M3FNUZ", "f8E5M2FNUZ",
          "f8E4M3B11FNUZ", "f8E3M4", "f8E4M3", "f8E8M0FNU", "f4E2M1FN", "f6E2M3FN", "f6E3M2FN"]
INTS = ["i2", "i4", "i8", "i16", "i32", "i64", "ui2", "ui4", "ui8", "ui16", "ui32", "ui64"]


def _const(values: str, ty: str) -> np.ndarray:
    text = f"""func.func @t() -> tensor<{ty}> {{
  %0 = stablehlo.constant dense<{values}> : tensor<{ty}>
  func.return %0 : tensor<{ty}>
}}"""
    (mod,) = frontend.load_text(text)
    return mod.funcs["t"].body.blocks[0].ops[0].attrs["value"]


@pytest.mark.parametrize("name", INTS)
def test_integer_extremes_round_trip(name):
    et = T.element_type(name)
    info = ml_dtypes.iinfo(et.dtype) if et.bits < 8 else np.iinfo(et.dtype)
    arr = _const(f"[{int(info.min)}, {int(info.max)}, 1]", f"3x{name}")
    assert arr.dtype == et.dtype
    assert [int(x) for x in arr] == [int(info.min), int(info.max), 1]


@pytest.mark.parametrize("name", FLOATS)
def test_float_types_round_trip_exactly(name):
    et = T.element_type(name)
    arr = _const("[1.0, 0.5, 2.0]", f"3x{name}")
    assert arr.dtype == et.dtype
    assert arr.astype(np.float64).tolist() == [1.0, 0.5, 2.0]


@pytest.mark.parametrize("name", ["bf16", "f16", "f32", "f64"])
def test_hex_bit_patterns_are_exact(name):
    dt = T.element_type(name).dtype
    nan_bits = {"bf16": 0x7FC1, "f16": 0x7E01, "f32": 0x7FC00001, "f64": 0x7FF8000000000001}[name]
    width = dt.itemsize * 2
    arr = _const(f"[0x{nan_bits:0{width}X}, -0.0]", f"2x{name}")
    assert int(T.to_bits(arr)[0]) == nan_bits
    assert np.signbit(arr[1].astype(np.float64))


def test_hex_blob_form():
    arr = _const('"0x803F0040"', "2xbf16")
    assert arr.astype(np.float32).tolist() == [1.0, 2.0]
    arr = _const('"0x01020F"', "3xi4")
    assert arr.astype(np.int64).tolist() == [1, 2, -1]


def test_complex_and_bool_and_splat():
    c = _const("[(1.5, -2.0), (0.0, 3.0)]", "2xcomplex<f32>")
    assert c.dtype == np.complex64 and c.tolist() == [1.5 - 2j, 3j]
    c = _const("(1.0, 2.0)", "2x2xcomplex<f64>")
    assert c.shape == (2, 2) and c.dtype == np.complex128 and np.all(c == 1 + 2j)
    b = _const("[true, false]", "2xi1")
    assert b.dtype == np.bool_ and b.tolist() == [True, False]
    z = _const("", "2x0xf32")
    assert z.shape == (2, 0)


def test_dynamic_dims_and_types_from_text():
    tt = T.parse_type_text("tensor<?x3xbf16>")
    assert tt.shape == (None, 3) and tt.element.name == "bf16" and not tt.is_static
    q = T.parse_element_text("!quant.uniform<i8:f32:1, {0.1:-30,0.5:-20}>")
    assert q.axis == 1 and q.scales == (0.1, 0.5) and q.zero_points == (-30, -20)
    assert T.value_matches_type(np.zeros((5, 3), ml_dtypes.bfloat16), tt) is None
    assert T.value_matches_type(np.zeros((5, 4), ml_dtypes.bfloat16), tt) is not None
