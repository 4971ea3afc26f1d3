// Dtype-generic kernels (see kernels.h): the kernels themselves are in
// kernels_generic.inc (shared with mlbridge-aot's output); this file picks
// one per op and dtype, and lays out broadcasts and strided copies at load.
#include "engine/kernels.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace mlbridge {
namespace engine {

namespace {
#include "engine/kernels_generic.inc"
}  // namespace

// ---- data movement ---------------------------------------------------------------

const char* copyKernel(const void* p, void* const* slots) { return copyRun(p, slots); }

void simplifyStrided(StridedCopyParams* p) {
  int64_t dims[kMaxRank], stride[kMaxRank];
  int r = 0;
  for (int d = 0; d < p->rank; ++d) {
    if (p->dims[d] == 1) continue;
    if (r > 0 && stride[r - 1] == p->stride[d] * p->dims[d]) {
      dims[r - 1] *= p->dims[d];
      stride[r - 1] = p->stride[d];
      continue;
    }
    dims[r] = p->dims[d];
    stride[r] = p->stride[d];
    ++r;
  }
  if (r == 0) {
    dims[0] = 1;
    stride[0] = 1;
    r = 1;
  }
  p->rank = r;
  for (int d = 0; d < r; ++d) {
    p->dims[d] = dims[d];
    p->stride[d] = stride[d];
  }
}

KernelFn stridedCopyKernel(size_t elementSize) {
  switch (elementSize) {
    case 1: return stridedCopy<uint8_t>;
    case 2: return stridedCopy<uint16_t>;
    case 4: return stridedCopy<uint32_t>;
    case 8: return stridedCopy<uint64_t>;
    default: return nullptr;
  }
}

const char* concatKernel(const void* p, void* const* slots) { return concatRun(p, slots); }
const char* gatherKernel(const void* p, void* const* slots) { return gatherRun(p, slots); }

// ---- broadcasting ------------------------------------------------------------------

bool makeBroadcast(const Shape& outShape, const std::vector<Shape>& ins, Broadcast* b) {
  const int r = static_cast<int>(outShape.size());
  if (r > kMaxRank || ins.size() > 3) return false;
  int64_t dims[kMaxRank];
  int64_t stride[3][kMaxRank] = {};
  for (int d = 0; d < r; ++d) dims[d] = outShape[static_cast<size_t>(d)];
  for (size_t k = 0; k < ins.size(); ++k) {
    const Shape& s = ins[k];
    const int ir = static_cast<int>(s.size());
    if (ir > r) return false;
    int64_t st = 1;
    for (int d = r - 1; d >= 0; --d) {
      int id = d - (r - ir);
      if (id < 0) {
        stride[k][d] = 0;
        continue;
      }
      int64_t dim = s[static_cast<size_t>(id)];
      if (dim == dims[d]) stride[k][d] = dim == 1 ? 0 : st;
      else if (dim == 1) stride[k][d] = 0;
      else return false;
      st *= dim;
    }
  }
  // Drop size-1 dims, merge dims contiguous for every operand.
  Broadcast res;
  int n = 0;
  for (int d = 0; d < r; ++d) {
    if (dims[d] == 1) continue;
    bool merge = n > 0;
    for (size_t k = 0; merge && k < ins.size(); ++k)
      merge = res.stride[k][n - 1] == stride[k][d] * dims[d];
    if (merge) {
      res.dims[n - 1] *= dims[d];
      for (size_t k = 0; k < ins.size(); ++k) res.stride[k][n - 1] = stride[k][d];
      continue;
    }
    res.dims[n] = dims[d];
    for (size_t k = 0; k < ins.size(); ++k) res.stride[k][n] = stride[k][d];
    ++n;
  }
  if (n == 0) {
    res.dims[0] = 1;
    n = 1;
  }
  res.rank = n;
  res.count = 1;
  for (int d = 0; d < n; ++d) res.count *= static_cast<size_t>(res.dims[d]);
  for (int64_t d : outShape)
    if (d == 0) res.count = 0;
  *b = res;
  return true;
}

namespace {

template <class T>
KernelFn binaryForType(BinaryOp op) {
  constexpr bool isFloat = std::is_floating_point<T>::value;
  switch (op) {
    case BinaryOp::kAdd: return binaryKernelFn<T, T, AddOp<T>>;
    case BinaryOp::kSub: return binaryKernelFn<T, T, SubOp<T>>;
    case BinaryOp::kMul: return binaryKernelFn<T, T, MulOp<T>>;
    case BinaryOp::kDiv: return binaryKernelFn<T, T, DivOp<T>>;
    case BinaryOp::kMax: return binaryKernelFn<T, T, MaxOp<T>>;
    case BinaryOp::kMin: return binaryKernelFn<T, T, MinOp<T>>;
    case BinaryOp::kPRelu: return binaryKernelFn<T, T, PReluOp<T>>;
    case BinaryOp::kPow:
      if constexpr (isFloat) return binaryKernelFn<T, T, PowOp<T>>;
      return nullptr;
    case BinaryOp::kMod:
      if constexpr (!isFloat) return binaryKernelFn<T, T, ModOp<T>>;
      return nullptr;
    case BinaryOp::kFMod: return binaryKernelFn<T, T, FModOp<T>>;
    case BinaryOp::kEqual: return binaryKernelFn<T, uint8_t, EqualOp<T>>;
    case BinaryOp::kLess: return binaryKernelFn<T, uint8_t, LessOp<T>>;
    case BinaryOp::kGreater: return binaryKernelFn<T, uint8_t, GreaterOp<T>>;
    case BinaryOp::kLessOrEqual: return binaryKernelFn<T, uint8_t, LessEqOp<T>>;
    case BinaryOp::kGreaterOrEqual: return binaryKernelFn<T, uint8_t, GreaterEqOp<T>>;
    default: return nullptr;
  }
}

}  // namespace

bool binaryIsComparison(BinaryOp op) {
  return op == BinaryOp::kEqual || op == BinaryOp::kLess || op == BinaryOp::kGreater ||
         op == BinaryOp::kLessOrEqual || op == BinaryOp::kGreaterOrEqual || op == BinaryOp::kAnd ||
         op == BinaryOp::kOr || op == BinaryOp::kXor;
}

KernelFn binaryKernel(BinaryOp op, DType dtype) {
  if (dtype == DType::kBool) {
    switch (op) {
      case BinaryOp::kAnd: return binaryKernelFn<uint8_t, uint8_t, AndOp>;
      case BinaryOp::kOr: return binaryKernelFn<uint8_t, uint8_t, OrOp>;
      case BinaryOp::kXor: return binaryKernelFn<uint8_t, uint8_t, XorOp>;
      case BinaryOp::kEqual: return binaryKernelFn<uint8_t, uint8_t, EqualOp<uint8_t>>;
      default: return nullptr;
    }
  }
  switch (dtype) {
    case DType::kFloat32: return binaryForType<float>(op);
    case DType::kFloat64: return binaryForType<double>(op);
    case DType::kInt32: return binaryForType<int32_t>(op);
    case DType::kInt64: return binaryForType<int64_t>(op);
    case DType::kInt8: return binaryForType<int8_t>(op);
    case DType::kUInt8: return binaryForType<uint8_t>(op);
    case DType::kInt16: return binaryForType<int16_t>(op);
    case DType::kUInt16: return binaryForType<uint16_t>(op);
    case DType::kUInt32: return binaryForType<uint32_t>(op);
    case DType::kUInt64: return binaryForType<uint64_t>(op);
    default: return nullptr;
  }
}

KernelFn whereKernel(size_t elementSize) {
  switch (elementSize) {
    case 1: return whereRun<uint8_t>;
    case 2: return whereRun<uint16_t>;
    case 4: return whereRun<uint32_t>;
    case 8: return whereRun<uint64_t>;
    default: return nullptr;
  }
}

// ---- unary (scalar) ------------------------------------------------------------------

bool unaryIsVectorized(UnaryOp op) { return op <= UnaryOp::kReciprocal; }

KernelFn unaryKernel(UnaryOp op, DType dtype) {
  if (op == UnaryOp::kNot) return dtype == DType::kBool ? notKernel : nullptr;
  switch (dtype) {
    case DType::kFloat32: return unaryFloatKernel<float>;
    case DType::kFloat64: return unaryFloatKernel<double>;
    default: break;
  }
  bool intOp = op == UnaryOp::kIdentity || op == UnaryOp::kRelu || op == UnaryOp::kNeg || op == UnaryOp::kAbs ||
               op == UnaryOp::kSign || op == UnaryOp::kClip;
  if (!intOp) return nullptr;
  switch (dtype) {
    case DType::kInt8: return unaryIntKernel<int8_t>;
    case DType::kInt16: return unaryIntKernel<int16_t>;
    case DType::kInt32: return unaryIntKernel<int32_t>;
    case DType::kInt64: return unaryIntKernel<int64_t>;
    case DType::kUInt8:
    case DType::kUInt16:
    case DType::kUInt32:
    case DType::kUInt64:
      if (op == UnaryOp::kNeg || op == UnaryOp::kRelu) return nullptr;
      if (dtype == DType::kUInt8) return unaryIntKernel<uint8_t>;
      if (dtype == DType::kUInt16) return unaryIntKernel<uint16_t>;
      if (dtype == DType::kUInt32) return unaryIntKernel<uint32_t>;
      return unaryIntKernel<uint64_t>;
    default: return nullptr;
  }
}

// ---- cast -----------------------------------------------------------------------------------

namespace {

template <class From>
KernelFn castFrom(DType to) {
  switch (to) {
    case DType::kFloat32: return castRun<From, float>;
    case DType::kFloat64: return castRun<From, double>;
    case DType::kInt8: return castRun<From, int8_t>;
    case DType::kUInt8: return castRun<From, uint8_t>;
    case DType::kInt16: return castRun<From, int16_t>;
    case DType::kUInt16: return castRun<From, uint16_t>;
    case DType::kInt32: return castRun<From, int32_t>;
    case DType::kUInt32: return castRun<From, uint32_t>;
    case DType::kInt64: return castRun<From, int64_t>;
    case DType::kUInt64: return castRun<From, uint64_t>;
    case DType::kBool: return castRun<From, bool>;
    default: return nullptr;
  }
}

}  // namespace

KernelFn castKernel(DType from, DType to) {
  switch (from) {
    case DType::kFloat32: return castFrom<float>(to);
    case DType::kFloat64: return castFrom<double>(to);
    case DType::kInt8: return castFrom<int8_t>(to);
    case DType::kUInt8: return castFrom<uint8_t>(to);
    case DType::kInt16: return castFrom<int16_t>(to);
    case DType::kUInt16: return castFrom<uint16_t>(to);
    case DType::kInt32: return castFrom<int32_t>(to);
    case DType::kUInt32: return castFrom<uint32_t>(to);
    case DType::kInt64: return castFrom<int64_t>(to);
    case DType::kUInt64: return castFrom<uint64_t>(to);
    case DType::kBool: return castFrom<bool>(to);
    default: return nullptr;
  }
}

// ---- reductions -------------------------------------------------------------------------------

namespace {

template <class T>
KernelFn reduceFor(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return reduceRun<T, ReduceOp::kSum>;
    case ReduceOp::kMean: return reduceRun<T, ReduceOp::kMean>;
    case ReduceOp::kMax: return reduceRun<T, ReduceOp::kMax>;
    case ReduceOp::kMin: return reduceRun<T, ReduceOp::kMin>;
    case ReduceOp::kProd: return reduceRun<T, ReduceOp::kProd>;
    case ReduceOp::kSumSquare: return reduceRun<T, ReduceOp::kSumSquare>;
  }
  return nullptr;
}

template <bool IsMax>
KernelFn argFor(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return argRun<float, IsMax>;
    case DType::kFloat64: return argRun<double, IsMax>;
    case DType::kInt32: return argRun<int32_t, IsMax>;
    case DType::kInt64: return argRun<int64_t, IsMax>;
    case DType::kInt8: return argRun<int8_t, IsMax>;
    case DType::kUInt8: return argRun<uint8_t, IsMax>;
    default: return nullptr;
  }
}

}  // namespace

KernelFn reduceKernel(ReduceOp op, DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return reduceFor<float>(op);
    case DType::kFloat64: return reduceFor<double>(op);
    case DType::kInt32: return reduceFor<int32_t>(op);
    case DType::kInt64: return reduceFor<int64_t>(op);
    case DType::kUInt32: return reduceFor<uint32_t>(op);
    case DType::kUInt64: return reduceFor<uint64_t>(op);
    default: return nullptr;
  }
}

KernelFn argKernel(bool isMax, DType dtype) { return isMax ? argFor<true>(dtype) : argFor<false>(dtype); }

KernelFn softmaxKernelF64() { return softmaxF64; }

KernelFn layerNormKernel(DType dtype) {
  if (dtype == DType::kFloat32) return layerNormRun<float>;
  if (dtype == DType::kFloat64) return layerNormRun<double>;
  return nullptr;
}

const char* channelAffineKernel(const void* p, void* const* slots) { return channelAffineRun(p, slots); }

KernelFn matMulKernel(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return matMulRun<float>;
    case DType::kFloat64: return matMulRun<double>;
    case DType::kInt32: return matMulRun<int32_t>;
    case DType::kInt64: return matMulRun<int64_t>;
    case DType::kUInt32: return matMulRun<uint32_t>;
    case DType::kUInt64: return matMulRun<uint64_t>;
    default: return nullptr;
  }
}

}  // namespace engine
}  // namespace mlbridge
