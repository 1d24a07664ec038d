// complex dialect on scalars and tensors.

func.func @complex_arithmetic_scalars() {
  %a = complex.constant [1.0 : f32, 2.0 : f32] : complex<f32>
  %re = arith.constant 3.0 : f32
  %im = arith.constant -1.0 : f32
  %b = complex.create %re, %im : complex<f32>
  %s = complex.add %a, %b : complex<f32>
  %p = complex.mul %a, %b : complex<f32>
  %q = complex.div %p, %b : complex<f32>
  %c = complex.conj %a : complex<f32>
  %t = tensor.from_elements %s, %p, %q, %c : tensor<4xcomplex<f32>>
  // (1+2i)+(3-i) = 4+i; (1+2i)(3-i) = 5+5i; (5+5i)/(3-i) = 1+2i
  check.expect_almost_eq_const %t, dense<[(4.0, 1.0), (5.0, 5.0), (1.0, 2.0), (1.0, -2.0)]> : tensor<4xcomplex<f32>>
  %ab = complex.abs %b : complex<f32>
  %r = complex.re %p : complex<f32>
  %i = complex.im %c : complex<f32>
  %parts = tensor.from_elements %ab, %r, %i : tensor<3xf32>
  check.expect_almost_eq_const %parts, dense<[3.1622777, 5.0, -2.0]> : tensor<3xf32>
  func.return
}

func.func @complex_functions() {
  %z = arith.constant dense<[(0.0, 3.14159265358979), (-4.0, 0.0)]> : tensor<2xcomplex<f64>>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z0 = tensor.extract %z[%c0] : tensor<2xcomplex<f64>>
  %z1 = tensor.extract %z[%c1] : tensor<2xcomplex<f64>>
  %e = complex.exp %z0 : complex<f64>
  %r = complex.sqrt %z1 : complex<f64>
  %l = complex.log %z1 : complex<f64>
  %t = tensor.from_elements %e, %r, %l : tensor<3xcomplex<f64>>
  // exp(i*pi) = -1; sqrt(-4) = 2i; log(-4) = ln 4 + i*pi
  check.expect_almost_eq_const %t, dense<[(-1.0, 0.0), (0.0, 2.0), (1.3862943611198906, 3.141592653589793)]> : tensor<3xcomplex<f64>>
  %eq = complex.eq %z0, %z0 : complex<f64>
  %ne = complex.neq %z0, %z1 : complex<f64>
  %b = tensor.from_elements %eq, %ne : tensor<2xi1>
  check.expect_eq_const %b, dense<[true, true]> : tensor<2xi1>
  func.return
}
