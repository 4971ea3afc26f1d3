// Without loops no model is needed: a missing one is not even looked for.
// RUN: %mlir-opt %s --mlbridge-unroll="model=%t/missing.onnx" 2>&1 | %FileCheck %s
// CHECK-NOT: warning
// CHECK: func.func @straight
// CHECK-NOT: warning
func.func @straight(%x: f32) -> f32 {
  %y = arith.mulf %x, %x : f32
  return %y : f32
}
