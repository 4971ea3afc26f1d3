// Failures are warnings; the IR comes out exactly as it went in, exit code 0.
// RUN: %mlir-opt %s -o %t/plain.mlir
//
// A model file that does not exist.
// RUN: %mlir-opt %s --mlbridge-unroll="model=%t/missing.onnx" -o %t/out.mlir 2> %t/err
// RUN: diff %t/plain.mlir %t/out.mlir
// RUN: %FileCheck %s --check-prefix=MISSING < %t/err
// MISSING: warning: mlbridge-unroll: no decisions, loops left unchanged: NOT_FOUND{{.*}}missing.onnx
//
// A file that is not an ONNX model.
// RUN: printf 'not a model' > %t/bad.onnx
// RUN: %mlir-opt %s --mlbridge-unroll="model=%t/bad.onnx" -o %t/out.mlir 2> %t/err
// RUN: diff %t/plain.mlir %t/out.mlir
// RUN: %FileCheck %s --check-prefix=BAD < %t/err
// BAD: warning: mlbridge-unroll: no decisions, loops left unchanged: DATA_LOSS
//
// No model at all, and an unknown runner.
// RUN: %mlir-opt %s --mlbridge-unroll -o %t/out.mlir 2> %t/err
// RUN: diff %t/plain.mlir %t/out.mlir
// RUN: %FileCheck %s --check-prefix=NONE < %t/err
// NONE: warning: mlbridge-unroll: no decisions, loops left unchanged: INVALID_ARGUMENT: no model: give model=FILE.onnx or pipe=BASE
// RUN: %mlir-opt %s --mlbridge-unroll="runner=tflite model=%policy" -o %t/out.mlir 2> %t/err
// RUN: diff %t/plain.mlir %t/out.mlir
// RUN: %FileCheck %s --check-prefix=RUNNER < %t/err
// RUNNER: warning: mlbridge-unroll: no decisions, loops left unchanged: INVALID_ARGUMENT: runner must be onnx or pipe, not 'tflite'
//
// Nobody serves the channel: bounded by timeout-ms.
// RUN: %mlir-opt %s --mlbridge-unroll="pipe=%t/nobody timeout-ms=300" -o %t/out.mlir 2> %t/err
// RUN: diff %t/plain.mlir %t/out.mlir
// RUN: %FileCheck %s --check-prefix=NOBODY < %t/err
// NOBODY: warning: mlbridge-unroll: no decisions, loops left unchanged:
//
// The model process dies after its first answer: that loop is unrolled, the
// next one gets a warning, the rest are left alone.
// RUN: %serve dies_second -- %mlir-opt %s --mlbridge-unroll="pipe={base}" -o %t/out.mlir 2> %t/err
// RUN: %FileCheck %s --check-prefix=DIES < %t/err
// RUN: %FileCheck %s --check-prefix=DIES-IR < %t/out.mlir
// DIES: warning: mlbridge-unroll: loop left unchanged: UNAVAILABLE
// DIES-NEXT: scf.for %second_i
// DIES: warning: mlbridge-unroll: the model session ended; later loops left unchanged
// DIES-IR-LABEL: func.func @first
// DIES-IR: step %c4
// DIES-IR-LABEL: func.func @second
// DIES-IR: step %c1
//
// The model answers a factor out of range: refused, not clamped.
// RUN: %serve out_of_range -- %mlir-opt %s --mlbridge-unroll="pipe={base}" -o %t/out.mlir 2> %t/err
// RUN: diff %t/plain.mlir %t/out.mlir
// RUN: %FileCheck %s --check-prefix=RANGE < %t/err
// RANGE-COUNT-2: warning: mlbridge-unroll: loop left unchanged: the model answered unroll factor -5, outside [0, 64]
//
// The model refuses one request (json reports it): that loop is left alone,
// the session goes on and the next loop is unrolled.
// RUN: %serve refuses_first --format json -- \
// RUN:   %mlir-opt %s --mlbridge-unroll="pipe={base} format=json" -o %t/out.mlir 2> %t/err
// RUN: %FileCheck %s --check-prefix=REFUSED < %t/err
// RUN: %FileCheck %s --check-prefix=REFUSED-IR < %t/out.mlir
// REFUSED: warning: mlbridge-unroll: loop left unchanged: ABORTED{{.*}}refuses the first loop
// REFUSED-NEXT: scf.for %first_i
// REFUSED-NOT: warning
// REFUSED-IR-LABEL: func.func @first
// REFUSED-IR: step %c1
// REFUSED-IR-LABEL: func.func @second
// REFUSED-IR: step %c4
func.func @first(%a: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  scf.for %first_i = %c0 to %c64 step %c1 {
    %x = memref.load %a[%first_i] : memref<64xf32>
    memref.store %x, %a[%first_i] : memref<64xf32>
  }
  return
}

func.func @second(%a: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  scf.for %second_i = %c0 to %c64 step %c1 {
    %x = memref.load %a[%second_i] : memref<64xf32>
    memref.store %x, %a[%second_i] : memref<64xf32>
  }
  return
}
