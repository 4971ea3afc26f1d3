// The ONNX policy (unroll 4 when 4 divides a constant trip count, else 1) on
// scf.for and affine.for loops: the decisions are applied by MLIR's unrollers.
// RUN: %mlir-opt %s --mlbridge-unroll="model=%policy" | %FileCheck %s
// RUN: %mlir-opt %s --mlbridge-unroll="runner=onnx model=%policy remarks=true" -o /dev/null 2>&1 \
// RUN:   | %FileCheck %s --check-prefix=REMARK

// CHECK-LABEL: func.func @scale
// CHECK: %[[C4:.*]] = arith.constant 4 : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[C4]]
// CHECK-COUNT-4: arith.mulf
// CHECK-NOT: arith.mulf
// CHECK: return
// REMARK: remark: mlbridge-unroll: trip_count=100 loop_depth=1 innermost=1 body_ops=3 loads=1 stores=1 arith_ops=1 calls=0 iter_args=0 -> unroll 4
func.func @scale(%a: memref<100xf32>, %k: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c100 = arith.constant 100 : index
  scf.for %i = %c0 to %c100 step %c1 {
    %x = memref.load %a[%i] : memref<100xf32>
    %y = arith.mulf %x, %k : f32
    memref.store %y, %a[%i] : memref<100xf32>
  }
  return
}

// 99 iterations: the policy answers 1, the loop stays as written.
// CHECK-LABEL: func.func @odd
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c1
// CHECK-COUNT-1: arith.mulf
// CHECK-NOT: arith.mulf
// CHECK: return
// REMARK: remark: mlbridge-unroll: trip_count=99 {{.*}} -> unroll 1
func.func @odd(%a: memref<99xf32>, %k: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c99 = arith.constant 99 : index
  scf.for %i = %c0 to %c99 step %c1 {
    %x = memref.load %a[%i] : memref<99xf32>
    %y = arith.mulf %x, %k : f32
    memref.store %y, %a[%i] : memref<99xf32>
  }
  return
}

// An unknown trip count and a loop-carried value.
// CHECK-LABEL: func.func @sum
// CHECK: scf.for {{.*}} step %c1 iter_args
// CHECK-COUNT-1: arith.addf
// CHECK-NOT: arith.addf
// CHECK: return
// REMARK: remark: mlbridge-unroll: trip_count=-1 loop_depth=1 innermost=1 body_ops=2 loads=1 stores=0 arith_ops=1 calls=0 iter_args=1 -> unroll 1
func.func @sum(%a: memref<?xf32>, %n: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (f32) {
    %x = memref.load %a[%i] : memref<?xf32>
    %s = arith.addf %acc, %x : f32
    scf.yield %s : f32
  }
  return %r : f32
}

// An affine nest: the inner loop (8) is unrolled, the outer (30) is not.
// CHECK-LABEL: func.func @nest
// CHECK: affine.for %{{.*}} = 0 to 30 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 8 step 4 {
// CHECK-COUNT-4: arith.addf
// CHECK-NOT: arith.addf
// CHECK: return
// REMARK: remark: mlbridge-unroll: trip_count=30 loop_depth=1 innermost=0 body_ops=4 {{.*}} -> unroll 1
// REMARK: remark: mlbridge-unroll: trip_count=8 loop_depth=2 innermost=1 body_ops=3 {{.*}} -> unroll 4
func.func @nest(%a: memref<30x8xf32>) {
  affine.for %i = 0 to 30 {
    affine.for %j = 0 to 8 {
      %x = affine.load %a[%i, %j] : memref<30x8xf32>
      %y = arith.addf %x, %x : f32
      affine.store %y, %a[%i, %j] : memref<30x8xf32>
    }
  }
  return
}
