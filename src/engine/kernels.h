// Kernels: plain functions over raw buffers, each taking its parameter block
// (built once at load by the planner, lower.cc) and the runner's slot table.
// A kernel never allocates, locks or throws; it returns nullptr or a static
// error string (e.g. an index out of range in runtime Gather indices).
//
// Two families:
//  * kernels.cc: dtype-generic kernels (broadcast arithmetic, data movement,
//    reductions, casts, generic MatMul) written as plain loops the compiler
//    vectorizes.
//  * kernels_simd.cc: float32 kernels written with explicit vectors (dense
//    layers with pre-packed weights, activations, softmax, LSTM/GRU), built
//    twice: baseline x86-64 (SSE2, 4 lanes) and AVX2+FMA (8 lanes), chosen
//    once at load from the CPU (or forced to baseline).
#ifndef MLBRIDGE_SRC_ENGINE_KERNELS_H
#define MLBRIDGE_SRC_ENGINE_KERNELS_H

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/common.h"

namespace mlbridge {
namespace engine {

// Returns nullptr on success, else a static message.
using KernelFn = const char* (*)(const void* params, void* const* slots);

template <class T>
inline T* slotPtr(void* const* slots, int slot) {
  return static_cast<T*>(slots[slot]);
}

// ---- data movement -------------------------------------------------------

struct CopyParams {
  int in = -1, out = -1;
  size_t bytes = 0;
};
const char* copyKernel(const void* p, void* const* slots);

// out (contiguous) [i0..i(r-1)] = in[offset + sum(i_d * stride[d])], strides
// in elements, possibly 0 (broadcast) or negative (reversed slices).
// Transpose, Slice, Expand, Tile and Split lower to this.
struct StridedCopyParams {
  int in = -1, out = -1;
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t stride[kMaxRank] = {};
  int64_t offset = 0;
  size_t count = 0;
};
// By element size (1, 2, 4, 8); nullptr for other sizes.
KernelFn stridedCopyKernel(size_t elementSize);
// Collapses dimensions that are contiguous in the source (fewer, longer loops).
void simplifyStrided(StridedCopyParams* p);

struct ConcatParams {
  int out = -1;
  size_t outer = 0;              // product of the dims before the axis
  std::vector<int> in;           // slots
  std::vector<size_t> chunk;     // bytes copied from each input per outer step
  size_t outChunk = 0;           // sum of chunk
};
const char* concatKernel(const void* p, void* const* slots);

struct GatherParams {
  int data = -1, indices = -1, out = -1;
  size_t outer = 0, axisLen = 0, innerBytes = 0, nIdx = 0;
  bool idx64 = true;
};
const char* gatherKernel(const void* p, void* const* slots);

// ---- elementwise -----------------------------------------------------------

// Broadcast layout for up to three operands (after collapsing dims).
struct Broadcast {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t stride[3][kMaxRank] = {};  // element strides per operand (0 = broadcast)
  size_t count = 0;
};
// numpy broadcast of `ins` to `out` (out must be the broadcast shape).
bool makeBroadcast(const Shape& out, const std::vector<Shape>& ins, Broadcast* b);

enum class BinaryOp : uint8_t {
  kAdd, kSub, kMul, kDiv, kPow, kMax, kMin, kPRelu, kMod, kFMod,
  kEqual, kLess, kGreater, kLessOrEqual, kGreaterOrEqual, kAnd, kOr, kXor,
};
struct BinaryParams {
  int a = -1, b = -1, out = -1;
  Broadcast bc;
};
// nullptr if the op does not support `dtype` (the input dtype).
KernelFn binaryKernel(BinaryOp op, DType dtype);
bool binaryIsComparison(BinaryOp op);

struct WhereParams {
  int cond = -1, x = -1, y = -1, out = -1;
  Broadcast bc;  // operand order: cond, x, y
};
KernelFn whereKernel(size_t elementSize);

enum class UnaryOp : uint8_t {
  // vectorized for float32 (kernels_simd.cc):
  kIdentity, kRelu, kLeakyRelu, kTanh, kSigmoid, kExp, kClip, kHardSigmoid, kNeg, kAbs, kHardSwish, kSoftsign,
  kReciprocal,
  // scalar <cmath>:
  kElu, kSelu, kLog, kSqrt, kErf, kFloor, kCeil, kRound, kSign, kSin, kCos, kSoftplus, kGelu, kGeluTanh, kMish, kNot,
};
bool unaryIsVectorized(UnaryOp op);
struct UnaryParams {
  int in = -1, out = -1;
  size_t count = 0;
  UnaryOp op = UnaryOp::kIdentity;
  float alpha = 0, beta = 0;      // LeakyRelu/Elu alpha, Selu alpha/gamma, HardSigmoid alpha/beta, Clip min/max
  double dalpha = 0, dbeta = 0;   // the same for float64
  int64_t ilo = 0, ihi = 0;       // Clip bounds for integer types
};
// Scalar kernels (any op, dtype float32/float64/ints as validated at import).
KernelFn unaryKernel(UnaryOp op, DType dtype);

struct CastParams {
  int in = -1, out = -1;
  size_t count = 0;
};
KernelFn castKernel(DType from, DType to);

// ---- reductions ----------------------------------------------------------

enum class ReduceOp : uint8_t { kSum, kMean, kMax, kMin, kProd, kSumSquare };
// out[o] = reduce over r of in[base[o] + offsets[r]].
struct ReduceParams {
  int in = -1, out = -1;
  std::vector<int64_t> base, offsets;
};
KernelFn reduceKernel(ReduceOp op, DType dtype);

// out[o, i] = argmax/argmin over the axis of in[o, :, i] (int64 output).
struct ArgParams {
  int in = -1, out = -1;
  size_t outer = 0, len = 0, inner = 0;
  bool selectLast = false;
};
KernelFn argKernel(bool isMax, DType dtype);

// Softmax / LogSoftmax along one axis: [outer, len, inner].
struct SoftmaxParams {
  int in = -1, out = -1;
  size_t outer = 0, len = 0, inner = 0;
  bool log = false;
};
KernelFn softmaxKernelF64();

struct LayerNormParams {
  int x = -1, scale = -1, bias = -1, out = -1;  // bias may be -1
  size_t outer = 0, n = 0;
  size_t scaleCount = 0, biasCount = 0;          // n, or 1 (broadcast)
  double epsilon = 1e-5;
};
KernelFn layerNormKernel(DType dtype);

// y[n, c, i] = x[n, c, i] * scale[c] + shift[c] (inference BatchNormalization).
struct ChannelAffineParams {
  int in = -1, out = -1;
  size_t outer = 0, channels = 0, inner = 0;
  const float* scale = nullptr;
  const float* shift = nullptr;
};
const char* channelAffineKernel(const void* p, void* const* slots);

// ---- matrix products -------------------------------------------------------

// out[b] = alpha * a[b] (MxK) x b[b] (KxN) for each batch b, with per-batch
// element offsets (numpy-broadcast batches). Runtime right-hand sides and
// non-float32 types; float32 with a constant right-hand side uses DenseParams.
struct MatMulParams {
  int a = -1, b = -1, out = -1;
  size_t M = 0, K = 0, N = 0;
  std::vector<size_t> aOffset, bOffset;
  double alpha = 1;
};
KernelFn matMulKernel(DType dtype);

// Packed weights for dense kernels: ceil(N / kPanel) panels, each K x kPanel
// floats (row k of a panel = columns [p*kPanel, p*kPanel + kPanel) of row k
// of the K x N weight matrix), zero-padded. One contiguous stream per panel.
constexpr size_t kPanel = 16;
inline size_t panelCount(size_t n) { return (n + kPanel - 1) / kPanel; }
// b is K x N row-major (or N x K when transposed); every weight is multiplied
// by `scale`. nullptr if the allocation fails.
BufferPtr packPanels(const float* b, bool transposed, size_t K, size_t N, float scale);
// A bias vector padded to panelCount(n) * kPanel floats.
BufferPtr padBias(const float* bias, size_t n);
// Narrow outputs (N < kRowsBelow) use dot products over rows instead: the
// weights as N rows of K floats (the transpose of K x N), each one stream.
constexpr size_t kRowsBelow = 8;
BufferPtr packRows(const float* b, bool transposed, size_t K, size_t N, float scale);

// Activation fused into dense layers and used by LSTM/GRU gates.
enum class Act : uint8_t { kNone, kRelu, kLeakyRelu, kTanh, kSigmoid, kClip, kHardSigmoid };
// Row-wise post-op after the activation.
enum class Post : uint8_t { kNone, kSoftmax, kLogSoftmax };

// out[m, :] = post(act(in[m, :] x W + bias)) for m < M.
struct DenseParams {
  int in = -1, out = -1;
  size_t M = 0, K = 0, N = 0;
  const float* panels = nullptr;  // packPanels, or nullptr when `rows` is used
  const float* rows = nullptr;    // packRows (N < kRowsBelow)
  const float* bias = nullptr;    // padBias, or nullptr
  Act act = Act::kNone;
  float alpha = 0, beta = 0;      // LeakyRelu alpha; Clip min/max; HardSigmoid alpha/beta
  Post post = Post::kNone;
};

// One direction of an LSTM or GRU layer (weights packed at load).
struct RnnDirection {
  bool reverse = false;
  const float* wx = nullptr;   // packed: K = input, N = gates * hidden
  const float* bx = nullptr;   // padded bias added to x*W (folded Wb + Rb where possible)
  const float* rh = nullptr;   // LSTM: packed K = hidden, N = 4*hidden. GRU: z and r gates (N = 2*hidden)
  const float* rhh = nullptr;  // GRU: the h gate (N = hidden)
  const float* rbh = nullptr;  // GRU with linear_before_reset: Rbh (padded)
  const float* peephole = nullptr;  // LSTM P: [i, o, f] * hidden, or nullptr
};
struct RnnParams {
  bool gru = false;
  int x = -1, initH = -1, initC = -1;  // input slots (-1 = absent: zeros)
  int y = -1, yh = -1, yc = -1;        // output slots (-1 = not requested)
  int scratch = -1;                    // rnnScratchBytes()
  size_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1;
  int layout = 0;
  bool linearBeforeReset = false;
  Act f = Act::kSigmoid, g = Act::kTanh, h = Act::kTanh;
  float clip = 0;  // 0: none
  RnnDirection dir[2];
};
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
