// Dtype-generic kernels (see kernels.h). Integer arithmetic wraps (two's
// complement) instead of overflowing: a hostile model must not reach
// undefined behaviour. Float -> integer casts saturate, NaN -> 0.
#include "engine/kernels.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace mlbridge {
namespace engine {

namespace {

template <class T>
const T* in(void* const* slots, int s) {
  return static_cast<const T*>(slots[s]);
}
template <class T>
T* out(void* const* slots, int s) {
  return static_cast<T*>(slots[s]);
}

// Wrapping integer arithmetic; plain arithmetic for floats.
template <class T>
T wrapAdd(T a, T b) {
  if constexpr (std::is_integral<T>::value) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}
template <class T>
T wrapSub(T a, T b) {
  if constexpr (std::is_integral<T>::value) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
  } else {
    return a - b;
  }
}
template <class T>
T wrapMul(T a, T b) {
  if constexpr (std::is_integral<T>::value) {
    using U = std::make_unsigned_t<T>;
    using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;  // no promotion to signed int
    return static_cast<T>(static_cast<U>(static_cast<W>(static_cast<U>(a)) * static_cast<W>(static_cast<U>(b))));
  } else {
    return a * b;
  }
}
template <class T>
T wrapNeg(T a) {
  return wrapSub<T>(T(0), a);
}

}  // namespace

// ---- data movement ---------------------------------------------------------------

const char* copyKernel(const void* pv, void* const* slots) {
  const CopyParams& p = *static_cast<const CopyParams*>(pv);
  if (p.bytes && slots[p.out] != slots[p.in]) std::memcpy(slots[p.out], slots[p.in], p.bytes);
  return nullptr;
}

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

namespace {

template <class E>
const char* stridedCopy(const void* pv, void* const* slots) {
  const StridedCopyParams& p = *static_cast<const StridedCopyParams*>(pv);
  if (p.count == 0) return nullptr;
  const E* src = in<E>(slots, p.in) + p.offset;
  E* dst = out<E>(slots, p.out);
  const int r = p.rank;
  const int64_t n = p.dims[r - 1], s = p.stride[r - 1];
  const size_t outer = p.count / static_cast<size_t>(n);
  int64_t idx[kMaxRank] = {};
  int64_t off = 0;
  for (size_t o = 0; o < outer; ++o) {
    const E* q = src + off;
    if (s == 1) std::memcpy(dst, q, static_cast<size_t>(n) * sizeof(E));
    else if (s == 0) for (int64_t i = 0; i < n; ++i) dst[i] = q[0];
    else for (int64_t i = 0; i < n; ++i) dst[i] = q[i * s];
    dst += n;
    for (int d = r - 2; d >= 0; --d) {
      off += p.stride[d];
      if (++idx[d] < p.dims[d]) break;
      off -= p.stride[d] * p.dims[d];
      idx[d] = 0;
    }
  }
  return nullptr;
}

}  // namespace

KernelFn stridedCopyKernel(size_t elementSize) {
  switch (elementSize) {
    case 1: return stridedCopy<uint8_t>;
    case 2: return stridedCopy<uint16_t>;
    case 4: return stridedCopy<uint32_t>;
    case 8: return stridedCopy<uint64_t>;
    default: return nullptr;
  }
}

const char* concatKernel(const void* pv, void* const* slots) {
  const ConcatParams& p = *static_cast<const ConcatParams*>(pv);
  unsigned char* dst = out<unsigned char>(slots, p.out);
  for (size_t o = 0; o < p.outer; ++o) {
    for (size_t k = 0; k < p.in.size(); ++k) {
      size_t n = p.chunk[k];
      if (n) std::memcpy(dst, in<unsigned char>(slots, p.in[k]) + o * n, n);
      dst += n;
    }
  }
  return nullptr;
}

const char* gatherKernel(const void* pv, void* const* slots) {
  const GatherParams& p = *static_cast<const GatherParams*>(pv);
  const unsigned char* data = in<unsigned char>(slots, p.data);
  const void* idx = slots[p.indices];
  unsigned char* dst = out<unsigned char>(slots, p.out);
  const int64_t len = static_cast<int64_t>(p.axisLen);
  for (size_t k = 0; k < p.nIdx; ++k) {  // validate first: no partial output on error
    int64_t i = p.idx64 ? static_cast<const int64_t*>(idx)[k] : static_cast<const int32_t*>(idx)[k];
    if (i < -len || i >= len) return "Gather index out of range";
  }
  for (size_t o = 0; o < p.outer; ++o) {
    const unsigned char* base = data + o * p.axisLen * p.innerBytes;
    for (size_t k = 0; k < p.nIdx; ++k) {
      int64_t i = p.idx64 ? static_cast<const int64_t*>(idx)[k] : static_cast<const int32_t*>(idx)[k];
      if (i < 0) i += len;
      if (p.innerBytes) std::memcpy(dst, base + static_cast<size_t>(i) * p.innerBytes, p.innerBytes);
      dst += p.innerBytes;
    }
  }
  return nullptr;
}

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

// Op: struct with `R operator()(T, T)` and `const char* error() const`.
template <class T, class R, class Op>
const char* binaryRun(const BinaryParams& p, void* const* slots, Op op) {
  const Broadcast& bc = p.bc;
  if (bc.count == 0) return nullptr;
  const T* a = in<T>(slots, p.a);
  const T* b = in<T>(slots, p.b);
  R* dst = out<R>(slots, p.out);
  const int r = bc.rank;
  const int64_t n = bc.dims[r - 1];
  const int64_t sa = bc.stride[0][r - 1], sb = bc.stride[1][r - 1];
  const size_t outer = bc.count / static_cast<size_t>(n);
  int64_t idx[kMaxRank] = {};
  int64_t oa = 0, ob = 0;
  for (size_t o = 0; o < outer; ++o) {
    const T* pa = a + oa;
    const T* pb = b + ob;
    if (sa == 1 && sb == 1) {
      for (int64_t i = 0; i < n; ++i) dst[i] = op(pa[i], pb[i]);
    } else if (sa == 1) {
      const T vb = pb[0];
      for (int64_t i = 0; i < n; ++i) dst[i] = op(pa[i], vb);
    } else if (sb == 1) {
      const T va = pa[0];
      for (int64_t i = 0; i < n; ++i) dst[i] = op(va, pb[i]);
    } else {
      const R v = op(pa[0], pb[0]);
      for (int64_t i = 0; i < n; ++i) dst[i] = v;
    }
    dst += n;
    for (int d = r - 2; d >= 0; --d) {
      oa += bc.stride[0][d];
      ob += bc.stride[1][d];
      if (++idx[d] < bc.dims[d]) break;
      oa -= bc.stride[0][d] * bc.dims[d];
      ob -= bc.stride[1][d] * bc.dims[d];
      idx[d] = 0;
    }
  }
  return op.error();
}

struct NoError {
  const char* error() const { return nullptr; }
};
template <class T> struct AddOp : NoError { T operator()(T a, T b) const { return wrapAdd(a, b); } };
template <class T> struct SubOp : NoError { T operator()(T a, T b) const { return wrapSub(a, b); } };
template <class T> struct MulOp : NoError { T operator()(T a, T b) const { return wrapMul(a, b); } };
template <class T> struct MaxOp : NoError {
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point<T>::value)
      if (a != a || b != b) return std::numeric_limits<T>::quiet_NaN();
    return a < b ? b : a;
  }
};
template <class T> struct MinOp : NoError {
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point<T>::value)
      if (a != a || b != b) return std::numeric_limits<T>::quiet_NaN();
    return b < a ? b : a;
  }
};
template <class T> struct PReluOp : NoError { T operator()(T a, T b) const { return a < 0 ? wrapMul(a, b) : a; } };
template <class T> struct PowOp : NoError { T operator()(T a, T b) const { return std::pow(a, b); } };
template <class T> struct DivOp {
  mutable bool bad = false;
  T operator()(T a, T b) const {
    if constexpr (std::is_integral<T>::value) {
      if (b == 0) {
        bad = true;
        return 0;
      }
      if constexpr (std::is_signed<T>::value)
        if (b == -1) return wrapNeg(a);
      return static_cast<T>(a / b);
    } else {
      return a / b;
    }
  }
  const char* error() const { return bad ? "integer division by zero" : nullptr; }
};
// Python-style modulo (result has the divisor's sign): ONNX Mod with fmod=0.
template <class T> struct ModOp {
  mutable bool bad = false;
  T operator()(T a, T b) const {
    if (b == 0) {
      bad = true;
      return 0;
    }
    if constexpr (std::is_signed<T>::value) {
      if (b == -1) return 0;
      T m = static_cast<T>(a % b);
      if (m != 0 && ((m < 0) != (b < 0))) m = static_cast<T>(m + b);
      return m;
    } else {
      return static_cast<T>(a % b);
    }
  }
  const char* error() const { return bad ? "integer modulo by zero" : nullptr; }
};
// C-style remainder (sign of the dividend): ONNX Mod with fmod=1.
template <class T> struct FModOp {
  mutable bool bad = false;
  T operator()(T a, T b) const {
    if constexpr (std::is_integral<T>::value) {
      if (b == 0) {
        bad = true;
        return 0;
      }
      if constexpr (std::is_signed<T>::value)
        if (b == -1) return 0;
      return static_cast<T>(a % b);
    } else {
      return std::fmod(a, b);
    }
  }
  const char* error() const { return bad ? "integer modulo by zero" : nullptr; }
};
template <class T> struct EqualOp : NoError { uint8_t operator()(T a, T b) const { return a == b; } };
template <class T> struct LessOp : NoError { uint8_t operator()(T a, T b) const { return a < b; } };
template <class T> struct GreaterOp : NoError { uint8_t operator()(T a, T b) const { return a > b; } };
template <class T> struct LessEqOp : NoError { uint8_t operator()(T a, T b) const { return a <= b; } };
template <class T> struct GreaterEqOp : NoError { uint8_t operator()(T a, T b) const { return a >= b; } };
struct AndOp : NoError { uint8_t operator()(uint8_t a, uint8_t b) const { return (a && b) ? 1 : 0; } };
struct OrOp : NoError { uint8_t operator()(uint8_t a, uint8_t b) const { return (a || b) ? 1 : 0; } };
struct XorOp : NoError { uint8_t operator()(uint8_t a, uint8_t b) const { return ((a != 0) != (b != 0)) ? 1 : 0; } };

template <class T, class R, class Op>
const char* binaryKernelFn(const void* pv, void* const* slots) {
  return binaryRun<T, R>(*static_cast<const BinaryParams*>(pv), slots, Op());
}

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

namespace {

template <class E>
const char* whereRun(const void* pv, void* const* slots) {
  const WhereParams& p = *static_cast<const WhereParams*>(pv);
  const Broadcast& bc = p.bc;
  if (bc.count == 0) return nullptr;
  const uint8_t* c = in<uint8_t>(slots, p.cond);
  const E* x = in<E>(slots, p.x);
  const E* y = in<E>(slots, p.y);
  E* dst = out<E>(slots, p.out);
  const int r = bc.rank;
  const int64_t n = bc.dims[r - 1];
  const size_t outer = bc.count / static_cast<size_t>(n);
  int64_t idx[kMaxRank] = {};
  int64_t off[3] = {};
  for (size_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < n; ++i)
      dst[i] = c[off[0] + i * bc.stride[0][r - 1]] ? x[off[1] + i * bc.stride[1][r - 1]]
                                                   : y[off[2] + i * bc.stride[2][r - 1]];
    dst += n;
    for (int d = r - 2; d >= 0; --d) {
      for (int k = 0; k < 3; ++k) off[k] += bc.stride[k][d];
      if (++idx[d] < bc.dims[d]) break;
      for (int k = 0; k < 3; ++k) off[k] -= bc.stride[k][d] * bc.dims[d];
      idx[d] = 0;
    }
  }
  return nullptr;
}

}  // namespace

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

namespace {

template <class T>
T sigmoidScalar(T x) {
  return x >= 0 ? T(1) / (T(1) + std::exp(-x)) : std::exp(x) / (T(1) + std::exp(x));
}
template <class T>
T softplusScalar(T x) {
  return x > T(20) ? x : std::log1p(std::exp(x));
}

template <class T>
T unaryFloat(UnaryOp op, T x, T a, T b) {
  switch (op) {
    case UnaryOp::kIdentity: return x;
    case UnaryOp::kRelu: return x < 0 ? T(0) : x;
    case UnaryOp::kLeakyRelu: return x < 0 ? x * a : x;
    case UnaryOp::kTanh: return std::tanh(x);
    case UnaryOp::kSigmoid: return sigmoidScalar(x);
    case UnaryOp::kExp: return std::exp(x);
    case UnaryOp::kClip: {  // min(max(x, lo), hi), as numpy and ONNX Runtime (also when lo > hi)
      T v = x < a ? a : x;
      return b < v ? b : v;
    }
    case UnaryOp::kHardSigmoid: {
      T v = x * a + b;
      return v < 0 ? T(0) : (v > 1 ? T(1) : v);
    }
    case UnaryOp::kNeg: return -x;
    case UnaryOp::kAbs: return std::fabs(x);
    case UnaryOp::kElu: return x < 0 ? a * std::expm1(x) : x;
    case UnaryOp::kSelu: return x <= 0 ? b * (a * std::expm1(x)) : b * x;
    case UnaryOp::kHardSwish: {
      T v = x / T(6) + T(0.5);
      return x * (v < 0 ? T(0) : (v > 1 ? T(1) : v));
    }
    case UnaryOp::kSoftsign: return x / (T(1) + std::fabs(x));
    case UnaryOp::kReciprocal: return T(1) / x;
    case UnaryOp::kLog: return std::log(x);
    case UnaryOp::kSqrt: return std::sqrt(x);
    case UnaryOp::kErf: return std::erf(x);
    case UnaryOp::kFloor: return std::floor(x);
    case UnaryOp::kCeil: return std::ceil(x);
    case UnaryOp::kRound: return std::nearbyint(x);  // half to even in the default rounding mode
    case UnaryOp::kSign: return x > 0 ? T(1) : (x < 0 ? T(-1) : (x == 0 ? T(0) : x));
    case UnaryOp::kSin: return std::sin(x);
    case UnaryOp::kCos: return std::cos(x);
    case UnaryOp::kSoftplus: return softplusScalar(x);
    case UnaryOp::kGelu: return T(0.5) * x * (T(1) + std::erf(x * T(0.70710678118654752440)));
    case UnaryOp::kGeluTanh:
      return T(0.5) * x * (T(1) + std::tanh(T(0.79788456080286535588) * (x + T(0.044715) * x * x * x)));
    case UnaryOp::kMish: return x * std::tanh(softplusScalar(x));
    case UnaryOp::kNot: return x;
  }
  return x;
}

template <class T>
const char* unaryFloatKernel(const void* pv, void* const* slots) {
  const UnaryParams& p = *static_cast<const UnaryParams*>(pv);
  const T* x = in<T>(slots, p.in);
  T* y = out<T>(slots, p.out);
  const T a = std::is_same<T, float>::value ? static_cast<T>(p.alpha) : static_cast<T>(p.dalpha);
  const T b = std::is_same<T, float>::value ? static_cast<T>(p.beta) : static_cast<T>(p.dbeta);
  const UnaryOp op = p.op;
  for (size_t i = 0; i < p.count; ++i) y[i] = unaryFloat<T>(op, x[i], a, b);
  return nullptr;
}

template <class T>
const char* unaryIntKernel(const void* pv, void* const* slots) {
  const UnaryParams& p = *static_cast<const UnaryParams*>(pv);
  const T* x = in<T>(slots, p.in);
  T* y = out<T>(slots, p.out);
  const size_t n = p.count;
  switch (p.op) {
    case UnaryOp::kIdentity: std::memcpy(y, x, n * sizeof(T)); break;
    case UnaryOp::kRelu: for (size_t i = 0; i < n; ++i) y[i] = x[i] < 0 ? T(0) : x[i]; break;
    case UnaryOp::kNeg: for (size_t i = 0; i < n; ++i) y[i] = wrapNeg(x[i]); break;
    case UnaryOp::kAbs: for (size_t i = 0; i < n; ++i) y[i] = x[i] < 0 ? wrapNeg(x[i]) : x[i]; break;
    case UnaryOp::kSign: for (size_t i = 0; i < n; ++i) y[i] = x[i] > 0 ? T(1) : (x[i] < 0 ? T(-1) : T(0)); break;
    case UnaryOp::kClip: {
      // Bounds were range-checked for T at load.
      const T lo = static_cast<T>(p.ilo), hi = static_cast<T>(p.ihi);
      for (size_t i = 0; i < n; ++i) {
        T v = x[i] < lo ? lo : x[i];
        y[i] = hi < v ? hi : v;
      }
      break;
    }
    default: return "unsupported integer unary op";
  }
  return nullptr;
}

const char* notKernel(const void* pv, void* const* slots) {
  const UnaryParams& p = *static_cast<const UnaryParams*>(pv);
  const uint8_t* x = in<uint8_t>(slots, p.in);
  uint8_t* y = out<uint8_t>(slots, p.out);
  for (size_t i = 0; i < p.count; ++i) y[i] = x[i] ? 0 : 1;
  return nullptr;
}

}  // namespace

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

template <class To, class From>
To castValue(From v) {
  if constexpr (std::is_same<To, bool>::value) {
    return v != From(0);
  } else if constexpr (std::is_floating_point<From>::value && std::is_integral<To>::value) {
    double d = static_cast<double>(v);
    if (d != d) return To(0);
    if (d <= static_cast<double>(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
    if (d >= static_cast<double>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(d);
  } else {
    return static_cast<To>(v);
  }
}

template <class From, class To>
const char* castRun(const void* pv, void* const* slots) {
  const CastParams& p = *static_cast<const CastParams*>(pv);
  using F = std::conditional_t<std::is_same<From, bool>::value, uint8_t, From>;
  using S = std::conditional_t<std::is_same<To, bool>::value, uint8_t, To>;
  const F* x = in<F>(slots, p.in);
  S* y = out<S>(slots, p.out);
  for (size_t i = 0; i < p.count; ++i) {
    if constexpr (std::is_same<From, bool>::value) y[i] = static_cast<S>(x[i] ? 1 : 0);
    else y[i] = static_cast<S>(castValue<To>(x[i]));
  }
  return nullptr;
}

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

template <class T, ReduceOp R>
const char* reduceRun(const void* pv, void* const* slots) {
  const ReduceParams& p = *static_cast<const ReduceParams*>(pv);
  const T* x = in<T>(slots, p.in);
  T* y = out<T>(slots, p.out);
  constexpr bool isFloat = std::is_floating_point<T>::value;
  using Acc = std::conditional_t<isFloat, double, T>;
  const size_t n = p.offsets.size();
  for (size_t o = 0; o < p.base.size(); ++o) {
    const T* b = x + p.base[o];
    if (R == ReduceOp::kMax || R == ReduceOp::kMin) {
      T v = n ? b[p.offsets[0]] : (R == ReduceOp::kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max());
      if (isFloat && n == 0) v = R == ReduceOp::kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
      for (size_t k = 1; k < n; ++k) {
        T e = b[p.offsets[k]];
        if (isFloat && e != e) {
          v = e;
          break;
        }
        if (R == ReduceOp::kMax ? v < e : e < v) v = e;
      }
      y[o] = v;
      continue;
    }
    Acc acc = R == ReduceOp::kProd ? Acc(1) : Acc(0);
    for (size_t k = 0; k < n; ++k) {
      Acc e = static_cast<Acc>(b[p.offsets[k]]);
      if (R == ReduceOp::kProd) acc = wrapMul(acc, e);
      else if (R == ReduceOp::kSumSquare) acc = wrapAdd(acc, wrapMul(e, e));
      else acc = wrapAdd(acc, e);
    }
    if (R == ReduceOp::kMean) {
      if constexpr (isFloat) acc = acc / static_cast<Acc>(n);
      else acc = n ? static_cast<Acc>(acc / static_cast<Acc>(n)) : Acc(0);
    }
    y[o] = static_cast<T>(acc);
  }
  return nullptr;
}

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

template <class T, bool IsMax>
const char* argRun(const void* pv, void* const* slots) {
  const ArgParams& p = *static_cast<const ArgParams*>(pv);
  const T* x = in<T>(slots, p.in);
  int64_t* y = out<int64_t>(slots, p.out);
  for (size_t o = 0; o < p.outer; ++o) {
    for (size_t i = 0; i < p.inner; ++i) {
      const T* b = x + o * p.len * p.inner + i;
      size_t best = 0;
      T bv = b[0];
      for (size_t l = 1; l < p.len; ++l) {
        T v = b[l * p.inner];
        bool better = IsMax ? (p.selectLast ? v >= bv : v > bv) : (p.selectLast ? v <= bv : v < bv);
        if (better) {
          best = l;
          bv = v;
        }
      }
      y[o * p.inner + i] = static_cast<int64_t>(best);
    }
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

namespace {

const char* softmaxF64(const void* pv, void* const* slots) {
  const SoftmaxParams& p = *static_cast<const SoftmaxParams*>(pv);
  const double* x = in<double>(slots, p.in);
  double* y = out<double>(slots, p.out);
  for (size_t o = 0; o < p.outer; ++o) {
    for (size_t i = 0; i < p.inner; ++i) {
      const double* b = x + o * p.len * p.inner + i;
      double* c = y + o * p.len * p.inner + i;
      if (p.len == 0) continue;
      double mx = b[0];
      for (size_t l = 1; l < p.len; ++l) mx = b[l * p.inner] > mx ? b[l * p.inner] : mx;
      double sum = 0;
      for (size_t l = 0; l < p.len; ++l) sum += std::exp(b[l * p.inner] - mx);
      if (p.log) {
        double shift = mx + std::log(sum);
        for (size_t l = 0; l < p.len; ++l) c[l * p.inner] = b[l * p.inner] - shift;
      } else {
        for (size_t l = 0; l < p.len; ++l) c[l * p.inner] = std::exp(b[l * p.inner] - mx) / sum;
      }
    }
  }
  return nullptr;
}

template <class T>
const char* layerNormRun(const void* pv, void* const* slots) {
  const LayerNormParams& p = *static_cast<const LayerNormParams*>(pv);
  const T* x = in<T>(slots, p.x);
  const T* scale = in<T>(slots, p.scale);
  const T* bias = p.bias >= 0 ? in<T>(slots, p.bias) : nullptr;
  T* y = out<T>(slots, p.out);
  for (size_t o = 0; o < p.outer; ++o) {
    const T* r = x + o * p.n;
    T* w = y + o * p.n;
    double mean = 0;
    for (size_t k = 0; k < p.n; ++k) mean += r[k];
    mean /= static_cast<double>(p.n ? p.n : 1);
    double var = 0;
    for (size_t k = 0; k < p.n; ++k) var += (r[k] - mean) * (r[k] - mean);
    var /= static_cast<double>(p.n ? p.n : 1);
    double inv = 1.0 / std::sqrt(var + p.epsilon);
    for (size_t k = 0; k < p.n; ++k) {
      double v = (r[k] - mean) * inv * static_cast<double>(scale[p.scaleCount == 1 ? 0 : k]);
      if (bias) v += static_cast<double>(bias[p.biasCount == 1 ? 0 : k]);
      w[k] = static_cast<T>(v);
    }
  }
  return nullptr;
}

template <class T>
const char* matMulRun(const void* pv, void* const* slots) {
  const MatMulParams& p = *static_cast<const MatMulParams*>(pv);
  const T* a0 = in<T>(slots, p.a);
  const T* b0 = in<T>(slots, p.b);
  T* c0 = out<T>(slots, p.out);
  for (size_t bi = 0; bi < p.aOffset.size(); ++bi) {
    const T* a = a0 + p.aOffset[bi];
    const T* b = b0 + p.bOffset[bi];
    T* c = c0 + bi * p.M * p.N;
    for (size_t i = 0; i < p.M; ++i) {
      T* ci = c + i * p.N;
      for (size_t j = 0; j < p.N; ++j) ci[j] = T(0);
      for (size_t k = 0; k < p.K; ++k) {
        const T aik = a[i * p.K + k];
        const T* bk = b + k * p.N;
        for (size_t j = 0; j < p.N; ++j) ci[j] = wrapAdd(ci[j], wrapMul(aik, bk[j]));
      }
      if (p.alpha != 1)
        for (size_t j = 0; j < p.N; ++j) ci[j] = static_cast<T>(ci[j] * p.alpha);
    }
  }
  return nullptr;
}

}  // namespace

KernelFn softmaxKernelF64() { return softmaxF64; }

KernelFn layerNormKernel(DType dtype) {
  if (dtype == DType::kFloat32) return layerNormRun<float>;
  if (dtype == DType::kFloat64) return layerNormRun<double>;
  return nullptr;
}

const char* channelAffineKernel(const void* pv, void* const* slots) {
  const ChannelAffineParams& p = *static_cast<const ChannelAffineParams*>(pv);
  const float* x = in<float>(slots, p.in);
  float* y = out<float>(slots, p.out);
  for (size_t o = 0; o < p.outer; ++o)
    for (size_t c = 0; c < p.channels; ++c) {
      const float s = p.scale[c], t = p.shift[c];
      const size_t base = (o * p.channels + c) * p.inner;
      for (size_t i = 0; i < p.inner; ++i) y[base + i] = x[base + i] * s + t;
    }
  return nullptr;
}

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
