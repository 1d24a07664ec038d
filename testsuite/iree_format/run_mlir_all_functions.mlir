// Without --function, the functions the CHECK lines name (EXEC @name) run in
// order, each in its own `// -----` chunk; the second RUN line (another
// device, older flag spellings) is the same run and is run once.
// RUN: iree-run-mlir --Xcompiler,iree-hal-target-device=local %s --function_input="4xf32=[1 4 9 16]" | FileCheck %s
// RUN: [[ $IREE_VULKAN_DISABLE == 1 ]] || (iree-run-mlir --target_backends=vulkan-spirv %s --input_values="4xf32=[1 4 9 16]" | FileCheck %s)

// CHECK-LABEL: EXEC @roots
func.func @roots(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = stablehlo.sqrt %x : tensor<4xf32>
  return %r : tensor<4xf32>
}
// CHECK: 4xf32=1 2 3 4

// -----

// CHECK: EXEC @reshaped
func.func @reshaped(%x: tensor<4xf32>) -> tensor<2x2xf32> {
  %r = stablehlo.reshape %x : (tensor<4xf32>) -> tensor<2x2xf32>
  return %r : tensor<2x2xf32>
}
// CHECK: 2x2xf32={{\[}}1 4][9 16]
