// The same decisions from a Python model process over named pipes, in each
// wire format: the policy sees the features and the context (function name).
// RUN: %serve unroll --format bitstream --trace %t/trace -- \
// RUN:   %mlir-opt %s --mlbridge-unroll="runner=pipe pipe={base} format=bitstream" | %FileCheck %s
// RUN: %FileCheck %s --check-prefix=TRACE < %t/trace
// RUN: %serve unroll --format json -- \
// RUN:   %mlir-opt %s --mlbridge-unroll="pipe={base} format=json" | %FileCheck %s
// RUN: %serve unroll --format protobuf -- \
// RUN:   %mlir-opt %s --mlbridge-unroll="pipe={base} format=protobuf" | %FileCheck %s

// TRACE: {"context": "scale", "features": {"trip_count": [64], "loop_depth": [1], "innermost": [1], "body_ops": [3], "loads": [1], "stores": [1], "arith_ops": [1], "calls": [0], "iter_args": [0]}, "answer": 4}
// TRACE-NEXT: {"context": "outer", "features": {"trip_count": [6], {{.*}}"innermost": [0]{{.*}}, "answer": 1}
// TRACE-NEXT: {"context": "outer", "features": {"trip_count": [12], "loop_depth": [2], {{.*}}, "answer": 4}

// CHECK-LABEL: func.func @scale
// CHECK: scf.for {{.*}} step %c4
// CHECK-COUNT-4: arith.mulf
// CHECK-NOT: arith.mulf
func.func @scale(%a: memref<64xf32>, %k: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  scf.for %i = %c0 to %c64 step %c1 {
    %x = memref.load %a[%i] : memref<64xf32>
    %y = arith.mulf %x, %k : f32
    memref.store %y, %a[%i] : memref<64xf32>
  }
  return
}

// CHECK-LABEL: func.func @outer
// CHECK: scf.for {{.*}} step %c1
// CHECK: scf.for {{.*}} step %c4
// CHECK-COUNT-4: arith.addf
// CHECK-NOT: arith.addf
func.func @outer(%a: memref<6x12xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c12 = arith.constant 12 : index
  scf.for %i = %c0 to %c6 step %c1 {
    scf.for %j = %c0 to %c12 step %c1 {
      %x = memref.load %a[%i, %j] : memref<6x12xf32>
      %y = arith.addf %x, %x : f32
      memref.store %y, %a[%i, %j] : memref<6x12xf32>
    }
  }
  return
}
