// Two RUN lines, each running one function of the module through
// iree-compile | iree-run-module, with their own check prefixes.
// RUN: iree-compile --iree-hal-target-device=local %s | \
// RUN:   iree-run-module --device=local-task --module=- --function=dynamic_abs \
// RUN:   --input="2x2xf32=[[1.0, -2.0], [-3.0, 4.0]]" | FileCheck %s --check-prefix=ABS
// RUN: iree-compile --iree-hal-target-device=local %s | \
// RUN:   iree-run-module --module=- --function=@select_scalar --input=1 --input=4xi8=7 --input=4xi8 \
// RUN:   | FileCheck %s --check-prefix=SEL

// ABS-LABEL: EXEC @dynamic_abs
func.func @dynamic_abs(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %0 = stablehlo.abs %x : tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
// ABS: 2x2xf32={{\[}}1 2][3 4]

// SEL-LABEL: EXEC @select_scalar
func.func @select_scalar(%flag: i32, %a: tensor<4xi8>, %b: tensor<4xi8>) -> (tensor<4xi8>, i32) {
  %zero = arith.constant 0 : i32
  %p = arith.cmpi ne, %flag, %zero : i32
  %r = arith.select %p, %a, %b : tensor<4xi8>
  %f = arith.addi %flag, %flag : i32
  return %r, %f : tensor<4xi8>, i32
}
// SEL: result[0]: hal.buffer_view
// SEL-NEXT: 4xi8=7 7 7 7
// SEL-NEXT: result[1]: i32=2
