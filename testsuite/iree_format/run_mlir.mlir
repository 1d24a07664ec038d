// RUN: iree-run-mlir --Xcompiler,iree-input-type=stablehlo \
// RUN:   --Xcompiler,iree-hal-target-device=local --Xcompiler,iree-hal-local-target-device-backends=llvm-cpu \
// RUN:   --input="2x3xf32=[1 -2 3][4 -5.5 6]" --input=f32=0.5 %s | FileCheck %s

// CHECK-LABEL: EXEC @main
func.func @main(%a: tensor<2x3xf32>, %s: tensor<f32>) -> (tensor<2x3xf32>, tensor<f32>, tensor<3xi32>) {
  %abs = stablehlo.abs %a : tensor<2x3xf32>
  %half = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
  %0 = stablehlo.multiply %abs, %half : tensor<2x3xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %1 = stablehlo.reduce(%a init: %zero) applies stablehlo.add across dimensions = [0, 1]
       : (tensor<2x3xf32>, tensor<f32>) -> tensor<f32>
  %2 = stablehlo.iota dim = 0 : tensor<3xi32>
  return %0, %1, %2 : tensor<2x3xf32>, tensor<f32>, tensor<3xi32>
}
// CHECK-NEXT: result[0]: hal.buffer_view
// CHECK-NEXT: 2x3xf32=[0.5 1 1.5][2 2.75 3]
// CHECK: result[1]: hal.buffer_view
// CHECK-NEXT: f32=6.5
// CHECK: 3xi32=0 1 2
// CHECK-NOT: result[3]
