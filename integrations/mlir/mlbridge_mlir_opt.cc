// mlbridge-mlir-opt: mlir-opt with the dialects loop code uses and the
// mlbridge-unroll pass (plus MLIR's generic passes: canonicalize, cse, ...).
#include <mlir/Dialect/Affine/IR/AffineOps.h>
#include <mlir/Dialect/Arith/IR/Arith.h>
#include <mlir/Dialect/Func/IR/FuncOps.h>
#include <mlir/Dialect/Math/IR/Math.h>
#include <mlir/Dialect/MemRef/IR/MemRef.h>
#include <mlir/Dialect/SCF/IR/SCF.h>
#include <mlir/IR/DialectRegistry.h>
#include <mlir/Tools/mlir-opt/MlirOptMain.h>
#include <mlir/Transforms/Passes.h>

#include "unroll_pass.h"

int main(int argc, char** argv) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::affine::AffineDialect, mlir::arith::ArithDialect, mlir::func::FuncDialect,
                  mlir::math::MathDialect, mlir::memref::MemRefDialect, mlir::scf::SCFDialect>();
  mlir::registerTransformsPasses();
  mlbridge_mlir::registerUnrollPass();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "mlbridge MLIR optimizer: ML-guided loop unrolling\n", registry));
}
