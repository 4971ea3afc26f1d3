// Kernels: plain functions over raw buffers, each taking its parameter block
// (built once at load by the planner, lower.cc) and the runner's slot table.
// A kernel never allocates, locks or throws; it returns nullptr or a static
// error string (e.g. an index out of range in runtime Gather indices).
//
// One source for the engine and for mlbridge-aot's generated code, which
// pastes the three dependency-free files below into its output
// (tools/aot/CMakeLists.txt), so a kernel fix is made once:
//  * kernel_params.inc: the parameter blocks and op enums.
//  * kernels_generic.inc: dtype-generic kernels (broadcast arithmetic, data
//    movement, reductions, casts, generic MatMul) written as plain loops the
//    compiler vectorizes; kernels.cc picks them per dtype.
//  * kernels_isa.inc: float32 kernels written with explicit vectors (dense
//    layers with pre-packed weights, activations, softmax, LSTM/GRU), built
//    by kernels_simd.cc twice: baseline x86-64 (SSE2, 4 lanes) and AVX2+FMA
//    (8 lanes), chosen once at load from the CPU (or forced to baseline).
#ifndef MLBRIDGE_SRC_ENGINE_KERNELS_H
#define MLBRIDGE_SRC_ENGINE_KERNELS_H

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/common.h"

namespace mlbridge {
namespace engine {

#include "engine/kernel_params.inc"

// ---- data movement -------------------------------------------------------

const char* copyKernel(const void* p, void* const* slots);
// By element size (1, 2, 4, 8); nullptr for other sizes.
KernelFn stridedCopyKernel(size_t elementSize);
// Collapses dimensions that are contiguous in the source (fewer, longer loops).
void simplifyStrided(StridedCopyParams* p);
const char* concatKernel(const void* p, void* const* slots);
const char* gatherKernel(const void* p, void* const* slots);

// ---- elementwise -----------------------------------------------------------

// numpy broadcast of `ins` to `out` (out must be the broadcast shape).
bool makeBroadcast(const Shape& out, const std::vector<Shape>& ins, Broadcast* b);
// nullptr if the op does not support `dtype` (the input dtype).
KernelFn binaryKernel(BinaryOp op, DType dtype);
bool binaryIsComparison(BinaryOp op);
KernelFn whereKernel(size_t elementSize);
bool unaryIsVectorized(UnaryOp op);
// Scalar kernels (any op, dtype float32/float64/ints as validated at import).
KernelFn unaryKernel(UnaryOp op, DType dtype);
KernelFn castKernel(DType from, DType to);

// ---- reductions ----------------------------------------------------------

KernelFn reduceKernel(ReduceOp op, DType dtype);
KernelFn argKernel(bool isMax, DType dtype);
KernelFn softmaxKernelF64();
KernelFn layerNormKernel(DType dtype);
const char* channelAffineKernel(const void* p, void* const* slots);

// ---- matrix products -------------------------------------------------------

KernelFn matMulKernel(DType dtype);
// b is K x N row-major (or N x K when transposed); every weight is multiplied
// by `scale`. nullptr if the allocation fails.
BufferPtr packPanels(const float* b, bool transposed, size_t K, size_t N, float scale);
// A bias vector padded to panelCount(n) * kPanel floats.
BufferPtr padBias(const float* bias, size_t n);
BufferPtr packRows(const float* b, bool transposed, size_t K, size_t N, float scale);
size_t rnnScratchBytes(const RnnParams& p);

// Float32 kernels with explicit vectors, one table per instruction set.
struct SimdKernels {
  const char* isa;                  // "avx2" or "sse2" (baseline)
  KernelFn dense;                   // DenseParams
  KernelFn unary;                   // UnaryParams, float32, unaryIsVectorized ops
  KernelFn softmax;                 // SoftmaxParams, float32
  KernelFn rnn;                     // RnnParams
};
// The best table for this CPU, or the baseline one when `portable`.
const SimdKernels& simdKernels(bool portable);

}  // namespace engine
}  // namespace mlbridge

#endif  // MLBRIDGE_SRC_ENGINE_KERNELS_H
