// RUN: iree-run-mlir --input="3xi32=1 2 3" %s | FileCheck %s
// CHECK-LABEL: EXEC @main
func.func @main(%a: tensor<3xi32>) -> tensor<3xi32> {
  %0 = stablehlo.add %a, %a : tensor<3xi32>
  return %0 : tensor<3xi32>
}
// CHECK: 3xi32=2 4 7
