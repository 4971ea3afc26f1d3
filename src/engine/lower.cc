// Lowering of the graph IR into a Program (program.h): kernel selection,
// fusion, weight packing, buffer planning.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "checked_math.h"
#include "engine/program.h"

namespace mlbridge {
namespace engine {

namespace {

Shape stridesOf(const Shape& s) {
  Shape st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

int64_t prod(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t d = from; d < to && d < s.size(); ++d) p *= s[d];
  return p;
}

class Lowerer {
 public:
  Lowerer(const Graph& g, Program* prog, const CompileOptions& options)
      : g_(g), p_(prog), simd_(simdKernels(options.portableKernels)), valueSlot_(g.values.size(), -1) {
    p_->isa = simd_.isa;
  }

  const Graph& graph() const { return g_; }
  const SimdKernels& simd() const { return simd_; }
  Program& program() { return *p_; }
  void setNode(int node) { node_ = node; }

  int slotOf(int v) {
    if (v < 0) return -1;
    if (valueSlot_[static_cast<size_t>(v)] >= 0) return valueSlot_[static_cast<size_t>(v)];
    const Value& val = g_.value(v);
    Slot s;
    s.value = v;
    s.bytes = val.bytes();
    if (val.isConstant()) {
      s.kind = Slot::Kind::kConstant;
      s.constant = val.constant->data();
      p_->constants.push_back(val.constant);
    } else if (val.graphInput >= 0) {
      s.kind = Slot::Kind::kInput;
      s.input = val.graphInput;
    }
    int id = addSlot(s);
    valueSlot_[static_cast<size_t>(v)] = id;
    return id;
  }
  bool hasSlot(int v) const { return valueSlot_[static_cast<size_t>(v)] >= 0; }
  void alias(int outValue, int inValue) { valueSlot_[static_cast<size_t>(outValue)] = slotOf(inValue); }
  int constantSlot(BufferPtr b) {
    Slot s;
    s.kind = Slot::Kind::kConstant;
    s.constant = b->data();
    s.bytes = b->size();
    p_->constants.push_back(std::move(b));
    return addSlot(s);
  }
  int scratch(size_t bytes) {
    Slot s;
    s.bytes = bytes;
    return addSlot(s);
  }
  template <class T>
  T* params() {
    std::shared_ptr<T> sp = std::make_shared<T>();
    T* raw = sp.get();
    p_->paramStore.push_back(std::move(sp));
    return raw;
  }
  // Parameter blocks point at arrays (Concat inputs, Reduce offsets, MatMul
  // batches); the Program owns them with the blocks. Never empty: a valid pointer.
  template <class T>
  const T* array(std::vector<T> v) {
    if (v.empty()) v.push_back(T());
    std::shared_ptr<std::vector<T>> sp = std::make_shared<std::vector<T>>(std::move(v));
    const T* raw = sp->data();
    p_->paramStore.push_back(std::move(sp));
    return raw;
  }
  void emit(KernelFn fn, const void* params, const char* name, std::vector<int> reads, std::vector<int> writes) {
    Step s;
    s.fn = fn;
    s.params = params;
    s.kernel = name;
    s.node = node_;
    s.reads = std::move(reads);
    s.writes = std::move(writes);
    p_->steps.push_back(std::move(s));
    p_->stepWhat.push_back(node_ >= 0 ? g_.nodes[static_cast<size_t>(node_)].describe() : std::string("copy"));
  }

 private:
  int addSlot(const Slot& s) {
    p_->slots.push_back(s);
    return static_cast<int>(p_->slots.size() - 1);
  }

  const Graph& g_;
  Program* p_;
  const SimdKernels& simd_;
  std::vector<int> valueSlot_;
  int node_ = -1;
};

Status nodeError(const Node& n, const std::string& what) {
  return unimplemented(n.describe() + ": " + what);
}
Status noMemory(const Node& n) { return resourceExhausted(n.describe() + ": out of memory while planning"); }

// ---- fusion description -------------------------------------------------------

struct DenseTail {
  std::vector<float> bias;  // N values, or empty
  Act act = Act::kNone;
  float alpha = 0, beta = 0;
  Post post = Post::kNone;
  int outValue = -1;        // value the fused chain writes
  std::vector<int> fused;   // node indices absorbed
};

bool actFor(const Node& n, Act* act, float* alpha, float* beta) {
  switch (n.op) {
    case Op::kRelu: *act = Act::kRelu; return true;
    case Op::kTanh: *act = Act::kTanh; return true;
    case Op::kSigmoid: *act = Act::kSigmoid; return true;
    case Op::kLeakyRelu:
      *act = Act::kLeakyRelu;
      *alpha = static_cast<float>(n.attrFloat("alpha", 0.01));
      return true;
    case Op::kHardSigmoid:
      *act = Act::kHardSigmoid;
      *alpha = static_cast<float>(n.attrFloat("alpha", 0.2));
      *beta = static_cast<float>(n.attrFloat("beta", 0.5));
      return true;
    case Op::kClip:
      *act = Act::kClip;
      *alpha = n.has("min") ? static_cast<float>(n.attrFloat("min")) : -std::numeric_limits<float>::infinity();
      *beta = n.has("max") ? static_cast<float>(n.attrFloat("max")) : std::numeric_limits<float>::infinity();
      return true;
    default: return false;
  }
}

// ---- per-op lowering ----------------------------------------------------------------

struct LowerCtx {
  Lowerer& L;
  const Graph& g;
  const Node& n;
  size_t maxBytes;
  const Value& in(size_t i) const { return g.value(n.inputs[i]); }
  const Value& out(size_t i) const { return g.value(n.outputs[i]); }
};

Status lowerStrided(LowerCtx& c, int inValue, int outValue, const Shape& dims, const Shape& stride, int64_t offset) {
  const Value& o = c.g.value(outValue);
  if (dims.size() > static_cast<size_t>(kMaxRank)) return nodeError(c.n, "rank above " + std::to_string(kMaxRank));
  StridedCopyParams* p = c.L.params<StridedCopyParams>();
  p->in = c.L.slotOf(inValue);
  p->out = c.L.slotOf(outValue);
  p->rank = static_cast<int>(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    p->dims[d] = dims[d];
    p->stride[d] = stride[d];
  }
  p->offset = offset;
  p->count = o.count();
  simplifyStrided(p);
  KernelFn fn = stridedCopyKernel(dtypeSize(o.dtype));
  if (!fn) return nodeError(c.n, "unsupported element size");
  c.L.emit(fn, p, "strided_copy", {p->in}, {p->out});
  return Status::OK();
}

// Computes a = a op b in place / out = a op b with numpy broadcasting to `outValue`'s shape.
Status emitBinary(LowerCtx& c, BinaryOp op, int aSlot, const Shape& aShape, int bSlot, const Shape& bShape,
                  DType dtype, int outSlot, const Shape& outShape) {
  KernelFn fn = binaryKernel(op, dtype);
  if (!fn) return nodeError(c.n, std::string("no kernel for ") + dtypeName(dtype));
  BinaryParams* p = c.L.params<BinaryParams>();
  if (!makeBroadcast(outShape, {aShape, bShape}, &p->bc))
    return nodeError(c.n, "shapes " + shapeString(aShape) + " and " + shapeString(bShape) + " do not broadcast");
  p->a = aSlot;
  p->b = bSlot;
  p->out = outSlot;
  c.L.emit(fn, p, "binary", {aSlot, bSlot}, {outSlot});
  return Status::OK();
}

bool binaryOpFor(Op op, BinaryOp* b) {
  switch (op) {
    case Op::kAdd: case Op::kSum: case Op::kMean: *b = BinaryOp::kAdd; return true;
    case Op::kSub: *b = BinaryOp::kSub; return true;
    case Op::kMul: *b = BinaryOp::kMul; return true;
    case Op::kDiv: *b = BinaryOp::kDiv; return true;
    case Op::kPow: *b = BinaryOp::kPow; return true;
    case Op::kMax: *b = BinaryOp::kMax; return true;
    case Op::kMin: *b = BinaryOp::kMin; return true;
    case Op::kPRelu: *b = BinaryOp::kPRelu; return true;
    case Op::kEqual: *b = BinaryOp::kEqual; return true;
    case Op::kLess: *b = BinaryOp::kLess; return true;
    case Op::kGreater: *b = BinaryOp::kGreater; return true;
    case Op::kLessOrEqual: *b = BinaryOp::kLessOrEqual; return true;
    case Op::kGreaterOrEqual: *b = BinaryOp::kGreaterOrEqual; return true;
    case Op::kAnd: *b = BinaryOp::kAnd; return true;
    case Op::kOr: *b = BinaryOp::kOr; return true;
    case Op::kXor: *b = BinaryOp::kXor; return true;
    default: return false;
  }
}

Status lowerBinary(LowerCtx& c, BinaryOp op) {
  const Value& o = c.out(0);
  const int outSlot = c.L.slotOf(c.n.outputs[0]);
  const DType dtype = c.in(0).dtype;
  const size_t nin = c.n.inputs.size();
  if (nin == 1) {
    CopyParams* p = c.L.params<CopyParams>();
    p->in = c.L.slotOf(c.n.inputs[0]);
    p->out = outSlot;
    p->bytes = o.bytes();
    if (c.in(0).shape != o.shape) return nodeError(c.n, "single input must have the output's shape");
    c.L.emit(copyKernel, p, "copy", {p->in}, {p->out});
    return Status::OK();
  }
  int bValue = c.n.inputs[1];
  int bSlot = c.L.slotOf(bValue);
  Shape bShape = c.in(1).shape;
  if (c.n.op == Op::kPow && c.in(1).dtype != dtype) {
    // Cast the exponent to the base's type.
    KernelFn cast = castKernel(c.in(1).dtype, dtype);
    if (!cast) return nodeError(c.n, "unsupported exponent type");
    CastParams* cp = c.L.params<CastParams>();
    cp->in = bSlot;
    cp->count = c.in(1).count();
    cp->out = bSlot = c.L.scratch(cp->count * dtypeSize(dtype));
    c.L.emit(cast, cp, "cast", {cp->in}, {cp->out});
  }
  if (c.n.op == Op::kMod) op = c.n.attrInt("fmod", 0) ? BinaryOp::kFMod : BinaryOp::kMod;
  MLBRIDGE_RETURN_IF_ERROR(
      emitBinary(c, op, c.L.slotOf(c.n.inputs[0]), c.in(0).shape, bSlot, bShape, dtype, outSlot, o.shape));
  for (size_t k = 2; k < nin; ++k)
    MLBRIDGE_RETURN_IF_ERROR(
        emitBinary(c, op, outSlot, o.shape, c.L.slotOf(c.n.inputs[k]), c.in(k).shape, dtype, outSlot, o.shape));
  if (c.n.op == Op::kMean) {
    std::shared_ptr<Buffer> d = Buffer::allocate(dtypeSize(dtype));
    if (!d) return noMemory(c.n);
    if (dtype == DType::kFloat32) *d->as<float>() = static_cast<float>(nin);
    else if (dtype == DType::kFloat64) *d->as<double>() = static_cast<double>(nin);
    else return nodeError(c.n, "Mean needs a float type");
    MLBRIDGE_RETURN_IF_ERROR(emitBinary(c, BinaryOp::kDiv, outSlot, o.shape, c.L.constantSlot(d), Shape{}, dtype,
                                        outSlot, o.shape));
  }
  return Status::OK();
}

UnaryOp unaryOpOf(Op op) {
  switch (op) {
    case Op::kRelu: return UnaryOp::kRelu;
    case Op::kLeakyRelu: return UnaryOp::kLeakyRelu;
    case Op::kTanh: return UnaryOp::kTanh;
    case Op::kSigmoid: return UnaryOp::kSigmoid;
    case Op::kExp: return UnaryOp::kExp;
    case Op::kClip: return UnaryOp::kClip;
    case Op::kHardSigmoid: return UnaryOp::kHardSigmoid;
    case Op::kNeg: return UnaryOp::kNeg;
    case Op::kAbs: return UnaryOp::kAbs;
    case Op::kElu: return UnaryOp::kElu;
    case Op::kSelu: return UnaryOp::kSelu;
    case Op::kHardSwish: return UnaryOp::kHardSwish;
    case Op::kSoftsign: return UnaryOp::kSoftsign;
    case Op::kReciprocal: return UnaryOp::kReciprocal;
    case Op::kLog: return UnaryOp::kLog;
    case Op::kSqrt: return UnaryOp::kSqrt;
    case Op::kErf: return UnaryOp::kErf;
    case Op::kFloor: return UnaryOp::kFloor;
    case Op::kCeil: return UnaryOp::kCeil;
    case Op::kRound: return UnaryOp::kRound;
    case Op::kSign: return UnaryOp::kSign;
    case Op::kSin: return UnaryOp::kSin;
    case Op::kCos: return UnaryOp::kCos;
    case Op::kSoftplus: return UnaryOp::kSoftplus;
    case Op::kGelu: return UnaryOp::kGelu;
    case Op::kMish: return UnaryOp::kMish;
    case Op::kNot: return UnaryOp::kNot;
    default: return UnaryOp::kIdentity;
  }
}

Status lowerUnary(LowerCtx& c) {
  const Value& x = c.in(0);
  UnaryParams* p = c.L.params<UnaryParams>();
  p->in = c.L.slotOf(c.n.inputs[0]);
  p->out = c.L.slotOf(c.n.outputs[0]);
  p->count = x.count();
  p->op = unaryOpOf(c.n.op);
  double a = 0, b = 0;
  switch (c.n.op) {
    case Op::kLeakyRelu: a = c.n.attrFloat("alpha", 0.01); break;
    case Op::kElu: a = c.n.attrFloat("alpha", 1.0); break;
    case Op::kSelu:
      a = c.n.attrFloat("alpha", 1.67326319217681884765625);
      b = c.n.attrFloat("gamma", 1.05070102214813232421875);
      break;
    case Op::kHardSigmoid:
      a = c.n.attrFloat("alpha", 0.2);
      b = c.n.attrFloat("beta", 0.5);
      break;
    case Op::kGelu:
      if (c.n.attrString("approximate", "none") == "tanh") p->op = UnaryOp::kGeluTanh;
      break;
    case Op::kClip:
      if (isFloating(x.dtype)) {
        a = c.n.has("min") ? c.n.attrFloat("min") : -std::numeric_limits<double>::infinity();
        b = c.n.has("max") ? c.n.attrFloat("max") : std::numeric_limits<double>::infinity();
      } else {
        p->ilo = c.n.has("min") ? c.n.attrInt("min") : std::numeric_limits<int64_t>::min();
        p->ihi = c.n.has("max") ? c.n.attrInt("max") : std::numeric_limits<int64_t>::max();
        // Clamp the bounds into the element type's range.
        int64_t lo, hi;
        switch (x.dtype) {
          case DType::kInt8: lo = INT8_MIN; hi = INT8_MAX; break;
          case DType::kInt16: lo = INT16_MIN; hi = INT16_MAX; break;
          case DType::kInt32: lo = INT32_MIN; hi = INT32_MAX; break;
          case DType::kUInt8: lo = 0; hi = UINT8_MAX; break;
          case DType::kUInt16: lo = 0; hi = UINT16_MAX; break;
          case DType::kUInt32: lo = 0; hi = UINT32_MAX; break;
          case DType::kUInt64: lo = 0; hi = std::numeric_limits<int64_t>::max(); break;
          default: lo = std::numeric_limits<int64_t>::min(); hi = std::numeric_limits<int64_t>::max();
        }
        p->ilo = std::min(std::max(p->ilo, lo), hi);
        p->ihi = std::min(std::max(p->ihi, lo), hi);
      }
      break;
    default: break;
  }
  p->alpha = static_cast<float>(a);
  p->beta = static_cast<float>(b);
  p->dalpha = a;
  p->dbeta = b;
  KernelFn fn = x.dtype == DType::kFloat32 && unaryIsVectorized(p->op) ? c.L.simd().unary : unaryKernel(p->op, x.dtype);
  if (!fn) return nodeError(c.n, std::string("no kernel for ") + dtypeName(x.dtype));
  c.L.emit(fn, p, "unary", {p->in}, {p->out});
  return Status::OK();
}

Status lowerSoftmax(LowerCtx& c) {
  const Value& x = c.in(0);
  size_t axis = static_cast<size_t>(c.n.attrInt("axis"));
  SoftmaxParams* p = c.L.params<SoftmaxParams>();
  p->in = c.L.slotOf(c.n.inputs[0]);
  p->out = c.L.slotOf(c.n.outputs[0]);
  p->outer = static_cast<size_t>(prod(x.shape, 0, axis));
  p->len = static_cast<size_t>(x.shape[axis]);
  p->inner = static_cast<size_t>(prod(x.shape, axis + 1, x.shape.size()));
  p->log = c.n.op == Op::kLogSoftmax;
  KernelFn fn = x.dtype == DType::kFloat32 ? c.L.simd().softmax : softmaxKernelF64();
  c.L.emit(fn, p, "softmax", {p->in}, {p->out});
  return Status::OK();
}

Status lowerConcat(LowerCtx& c) {
  const Value& o = c.out(0);
  size_t axis = static_cast<size_t>(c.n.attrInt("axis"));
  ConcatParams* p = c.L.params<ConcatParams>();
  p->out = c.L.slotOf(c.n.outputs[0]);
  p->outer = static_cast<size_t>(prod(o.shape, 0, axis));
  std::vector<int> reads;
  std::vector<size_t> chunks;
  const size_t es = dtypeSize(o.dtype);
  for (size_t k = 0; k < c.n.inputs.size(); ++k) {
    const Value& v = c.in(k);
    chunks.push_back(static_cast<size_t>(prod(v.shape, axis, v.shape.size())) * es);
    reads.push_back(c.L.slotOf(c.n.inputs[k]));
  }
  p->nin = reads.size();
  p->in = c.L.array(reads);
  p->chunk = c.L.array(std::move(chunks));
  c.L.emit(concatKernel, p, "concat", reads, {p->out});
  return Status::OK();
}

Status lowerTranspose(LowerCtx& c) {
  const Value& x = c.in(0);
  const std::vector<int64_t>& perm = c.n.attrInts("perm");
  Shape st = stridesOf(x.shape), dims, stride;
  for (int64_t pd : perm) {
    dims.push_back(x.shape[static_cast<size_t>(pd)]);
    stride.push_back(st[static_cast<size_t>(pd)]);
  }
  return lowerStrided(c, c.n.inputs[0], c.n.outputs[0], dims, stride, 0);
}

Status lowerSlice(LowerCtx& c) {
  const Value& x = c.in(0);
  const std::vector<int64_t>& starts = c.n.attrInts("starts");
  const std::vector<int64_t>& steps = c.n.attrInts("steps");
  Shape st = stridesOf(x.shape), stride(x.shape.size());
  int64_t offset = 0;
  if (c.out(0).count() == 0) return lowerStrided(c, c.n.inputs[0], c.n.outputs[0], c.out(0).shape, stride, 0);
  // The importer clamps starts into the tensor and sets a step of 1 where
  // only one element is taken, so these stay within the element count;
  // checked all the same, as the steps come from the model.
  for (size_t d = 0; d < x.shape.size(); ++d) {
    int64_t term;
    if (!checked::mul(st[d], steps[d], &stride[d]) || !checked::mul(starts[d], st[d], &term) ||
        !checked::add(offset, term, &offset))
      return nodeError(c.n, "slice strides overflow (steps " + std::to_string(steps[d]) + ")");
  }
  return lowerStrided(c, c.n.inputs[0], c.n.outputs[0], c.out(0).shape, stride, offset);
}

Status lowerExpand(LowerCtx& c) {
  const Value& x = c.in(0);
  const Shape& os = c.out(0).shape;
  Shape st = stridesOf(x.shape), stride(os.size(), 0);
  size_t off = os.size() - x.shape.size();
  for (size_t d = 0; d < x.shape.size(); ++d) stride[off + d] = x.shape[d] == 1 ? 0 : st[d];
  return lowerStrided(c, c.n.inputs[0], c.n.outputs[0], os, stride, 0);
}

Status lowerTile(LowerCtx& c) {
  const Value& x = c.in(0);
  const std::vector<int64_t>& reps = c.n.attrInts("repeats");
  Shape st = stridesOf(x.shape), dims, stride;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    dims.push_back(reps[d]);
    stride.push_back(0);
    dims.push_back(x.shape[d]);
    stride.push_back(st[d]);
  }
  if (dims.size() > static_cast<size_t>(kMaxRank)) return nodeError(c.n, "Tile supports rank up to 4");
  return lowerStrided(c, c.n.inputs[0], c.n.outputs[0], dims, stride, 0);
}

Status lowerSplit(LowerCtx& c) {
  const Value& x = c.in(0);
  size_t axis = static_cast<size_t>(c.n.attrInt("axis"));
  const std::vector<int64_t>& sizes = c.n.attrInts("split");
  Shape st = stridesOf(x.shape);
  int64_t start = 0;
  for (size_t k = 0; k < c.n.outputs.size(); ++k) {
    int64_t len = sizes[k];
    if (c.n.outputs[k] >= 0 && len > 0)
      MLBRIDGE_RETURN_IF_ERROR(lowerStrided(c, c.n.inputs[0], c.n.outputs[k], c.out(k).shape, st, start * st[axis]));
    else if (c.n.outputs[k] >= 0)
      c.L.slotOf(c.n.outputs[k]);
    start += len;
  }
  return Status::OK();
}

Status lowerGather(LowerCtx& c) {
  const Value& data = c.in(0);
  const Value& idx = c.in(1);
  size_t axis = static_cast<size_t>(c.n.attrInt("axis"));
  GatherParams* p = c.L.params<GatherParams>();
  p->data = c.L.slotOf(c.n.inputs[0]);
  p->indices = c.L.slotOf(c.n.inputs[1]);
  p->out = c.L.slotOf(c.n.outputs[0]);
  p->outer = static_cast<size_t>(prod(data.shape, 0, axis));
  p->axisLen = static_cast<size_t>(data.shape[axis]);
  p->innerBytes = static_cast<size_t>(prod(data.shape, axis + 1, data.shape.size())) * dtypeSize(data.dtype);
  p->nIdx = idx.count();
  p->idx64 = idx.dtype == DType::kInt64;
  c.L.emit(gatherKernel, p, "gather", {p->data, p->indices}, {p->out});
  return Status::OK();
}

Status lowerCast(LowerCtx& c) {
  const Value& x = c.in(0);
  const Value& o = c.out(0);
  if (x.dtype == o.dtype) {
    c.L.alias(c.n.outputs[0], c.n.inputs[0]);
    return Status::OK();
  }
  KernelFn fn = castKernel(x.dtype, o.dtype);
  if (!fn) return nodeError(c.n, "unsupported cast");
  CastParams* p = c.L.params<CastParams>();
  p->in = c.L.slotOf(c.n.inputs[0]);
  p->out = c.L.slotOf(c.n.outputs[0]);
  p->count = x.count();
  c.L.emit(fn, p, "cast", {p->in}, {p->out});
  return Status::OK();
}

Status lowerArg(LowerCtx& c) {
  const Value& x = c.in(0);
  size_t axis = static_cast<size_t>(c.n.attrInt("axis"));
  KernelFn fn = argKernel(c.n.op == Op::kArgMax, x.dtype);
  if (!fn) return nodeError(c.n, std::string("no kernel for ") + dtypeName(x.dtype));
  ArgParams* p = c.L.params<ArgParams>();
  p->in = c.L.slotOf(c.n.inputs[0]);
  p->out = c.L.slotOf(c.n.outputs[0]);
  p->outer = static_cast<size_t>(prod(x.shape, 0, axis));
  p->len = static_cast<size_t>(x.shape[axis]);
  p->inner = static_cast<size_t>(prod(x.shape, axis + 1, x.shape.size()));
  p->selectLast = c.n.attrInt("select_last_index", 0) != 0;
  c.L.emit(fn, p, "arg", {p->in}, {p->out});
  return Status::OK();
}

Status lowerReduce(LowerCtx& c) {
  const Value& x = c.in(0);
  const std::vector<int64_t>& axes = c.n.attrInts("axes");
  if (axes.empty()) {  // noop_with_empty_axes
    c.L.alias(c.n.outputs[0], c.n.inputs[0]);
    return Status::OK();
  }
  ReduceOp op = ReduceOp::kSum;
  switch (c.n.op) {
    case Op::kReduceSum: op = ReduceOp::kSum; break;
    case Op::kReduceMean: op = ReduceOp::kMean; break;
    case Op::kReduceMax: op = ReduceOp::kMax; break;
    case Op::kReduceMin: op = ReduceOp::kMin; break;
    case Op::kReduceProd: op = ReduceOp::kProd; break;
    case Op::kReduceSumSquare: op = ReduceOp::kSumSquare; break;
    default: break;
  }
  KernelFn fn = reduceKernel(op, x.dtype);
  if (!fn) return nodeError(c.n, std::string("no kernel for ") + dtypeName(x.dtype));
  std::vector<bool> reduced(x.shape.size(), false);
  for (int64_t a : axes) reduced[static_cast<size_t>(a)] = true;
  Shape st = stridesOf(x.shape);
  Shape keptDims, keptStride, redDims, redStride;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (reduced[d]) {
      redDims.push_back(x.shape[d]);
      redStride.push_back(st[d]);
    } else {
      keptDims.push_back(x.shape[d]);
      keptStride.push_back(st[d]);
    }
  }
  ReduceParams* p = c.L.params<ReduceParams>();
  p->in = c.L.slotOf(c.n.inputs[0]);
  p->out = c.L.slotOf(c.n.outputs[0]);
  auto enumerate = [](const Shape& dims, const Shape& stride, std::vector<int64_t>* offs) {
    size_t n = elementCount(dims);
    offs->resize(n);
    std::vector<int64_t> idx(dims.size(), 0);
    int64_t off = 0;
    for (size_t k = 0; k < n; ++k) {
      (*offs)[k] = off;
      for (size_t d = dims.size(); d-- > 0;) {
        off += stride[d];
        if (++idx[d] < dims[d]) break;
        off -= stride[d] * dims[d];
        idx[d] = 0;
      }
    }
  };
  std::vector<int64_t> base, offsets;
  if (x.count() != 0 || elementCount(keptDims) != 0) enumerate(keptDims, keptStride, &base);
  enumerate(redDims, redStride, &offsets);
  p->nbase = base.size();
  p->noffsets = offsets.size();
  p->base = c.L.array(std::move(base));
  p->offsets = c.L.array(std::move(offsets));
  c.L.emit(fn, p, "reduce", {p->in}, {p->out});
  return Status::OK();
}

Status lowerLayerNorm(LowerCtx& c) {
  const Value& x = c.in(0);
  size_t axis = static_cast<size_t>(c.n.attrInt("axis"));
  LayerNormParams* p = c.L.params<LayerNormParams>();
  p->x = c.L.slotOf(c.n.inputs[0]);
  p->scale = c.L.slotOf(c.n.inputs[1]);
  p->bias = c.n.input(2) >= 0 ? c.L.slotOf(c.n.inputs[2]) : -1;
  p->out = c.L.slotOf(c.n.outputs[0]);
  p->outer = static_cast<size_t>(prod(x.shape, 0, axis));
  p->n = static_cast<size_t>(prod(x.shape, axis, x.shape.size()));
  p->scaleCount = c.in(1).count();
  p->biasCount = p->bias >= 0 ? c.in(2).count() : 0;
  p->epsilon = c.n.attrFloat("epsilon", 1e-5);
  KernelFn fn = layerNormKernel(x.dtype);
  if (!fn) return nodeError(c.n, std::string("no kernel for ") + dtypeName(x.dtype));
  std::vector<int> reads = {p->x, p->scale};
  if (p->bias >= 0) reads.push_back(p->bias);
  c.L.emit(fn, p, "layer_norm", reads, {p->out});
  return Status::OK();
}

Status lowerBatchNorm(LowerCtx& c) {
  const Value& x = c.in(0);
  const size_t C = static_cast<size_t>(x.shape[1]);
  std::shared_ptr<Buffer> s = Buffer::allocate(C * sizeof(float)), t = Buffer::allocate(C * sizeof(float));
  if (!s || !t) return noMemory(c.n);
  const float* scale = c.in(1).constant->as<float>();
  const float* bias = c.in(2).constant->as<float>();
  const float* mean = c.in(3).constant->as<float>();
  const float* var = c.in(4).constant->as<float>();
  const double eps = c.n.attrFloat("epsilon", 1e-5);
  for (size_t k = 0; k < C; ++k) {
    double sk = scale[k] / std::sqrt(static_cast<double>(var[k]) + eps);
    s->as<float>()[k] = static_cast<float>(sk);
    t->as<float>()[k] = static_cast<float>(bias[k] - mean[k] * sk);
  }
  ChannelAffineParams* p = c.L.params<ChannelAffineParams>();
  p->in = c.L.slotOf(c.n.inputs[0]);
  p->out = c.L.slotOf(c.n.outputs[0]);
  p->outer = static_cast<size_t>(x.shape[0]);
  p->channels = C;
  p->inner = static_cast<size_t>(prod(x.shape, 2, x.shape.size()));
  p->scale = s->as<float>();
  p->shift = t->as<float>();
  c.L.constantSlot(s);
  c.L.constantSlot(t);
  c.L.emit(channelAffineKernel, p, "channel_affine", {p->in}, {p->out});
  return Status::OK();
}

Status lowerWhere(LowerCtx& c) {
  const Value& o = c.out(0);
  KernelFn fn = whereKernel(dtypeSize(o.dtype));
  if (!fn) return nodeError(c.n, "unsupported element size");
  WhereParams* p = c.L.params<WhereParams>();
  if (!makeBroadcast(o.shape, {c.in(0).shape, c.in(1).shape, c.in(2).shape}, &p->bc))
    return nodeError(c.n, "inputs do not broadcast");
  p->cond = c.L.slotOf(c.n.inputs[0]);
  p->x = c.L.slotOf(c.n.inputs[1]);
  p->y = c.L.slotOf(c.n.inputs[2]);
  p->out = c.L.slotOf(c.n.outputs[0]);
  c.L.emit(fn, p, "where", {p->cond, p->x, p->y}, {p->out});
  return Status::OK();
}

// ---- matrix products ---------------------------------------------------------

// Dense (float32, constant right-hand side) with an optional fused tail.
Status emitDense(LowerCtx& c, int aSlot, size_t M, size_t K, size_t N, const float* b, bool bTransposed, float scale,
                 const DenseTail& tail, int outSlot) {
  const bool narrow = N < kRowsBelow;
  BufferPtr packed = narrow ? packRows(b, bTransposed, K, N, scale) : packPanels(b, bTransposed, K, N, scale);
  if (!packed) return noMemory(c.n);
  DenseParams* p = c.L.params<DenseParams>();
  p->in = aSlot;
  p->out = outSlot;
  p->M = M;
  p->K = K;
  p->N = N;
  (narrow ? p->rows : p->panels) = packed->as<float>();
  c.L.constantSlot(packed);
  if (!tail.bias.empty()) {
    BufferPtr bias = padBias(tail.bias.data(), N);
    if (!bias) return noMemory(c.n);
    p->bias = bias->as<float>();
    c.L.constantSlot(bias);
  }
  p->act = tail.act;
  p->alpha = tail.alpha;
  p->beta = tail.beta;
  p->post = tail.post;
  c.L.emit(c.L.simd().dense, p, "dense", {aSlot}, {outSlot});
  return Status::OK();
}

// Generic batched matmul: out = alpha * a x b with numpy batch broadcasting.
// aShape/bShape are at least 2-D here.
Status emitMatMul(LowerCtx& c, DType dtype, int aSlot, const Shape& aShape, int bSlot, const Shape& bShape, int outSlot,
                  double alpha) {
  KernelFn fn = matMulKernel(dtype);
  if (!fn) return nodeError(c.n, std::string("no MatMul kernel for ") + dtypeName(dtype));
  MatMulParams* p = c.L.params<MatMulParams>();
  p->a = aSlot;
  p->b = bSlot;
  p->out = outSlot;
  const size_t ar = aShape.size(), br = bShape.size();
  p->M = static_cast<size_t>(aShape[ar - 2]);
  p->K = static_cast<size_t>(aShape[ar - 1]);
  p->N = static_cast<size_t>(bShape[br - 1]);
  p->alpha = alpha;
  Shape aBatch(aShape.begin(), aShape.end() - 2), bBatch(bShape.begin(), bShape.end() - 2);
  size_t r = std::max(aBatch.size(), bBatch.size());
  while (aBatch.size() < r) aBatch.insert(aBatch.begin(), 1);
  while (bBatch.size() < r) bBatch.insert(bBatch.begin(), 1);
  Shape oBatch(r);
  for (size_t d = 0; d < r; ++d) oBatch[d] = std::max(aBatch[d], bBatch[d]);
  Shape aSt = stridesOf(aBatch), bSt = stridesOf(bBatch);
  size_t nb = elementCount(oBatch);
  std::vector<size_t> aOffset, bOffset;
  std::vector<int64_t> idx(r, 0);
  for (size_t k = 0; k < nb; ++k) {
    size_t ao = 0, bo = 0;
    for (size_t d = 0; d < r; ++d) {
      if (aBatch[d] != 1) ao += static_cast<size_t>(idx[d] * aSt[d]);
      if (bBatch[d] != 1) bo += static_cast<size_t>(idx[d] * bSt[d]);
    }
    aOffset.push_back(ao * p->M * p->K);
    bOffset.push_back(bo * p->K * p->N);
    for (size_t d = r; d-- > 0;) {
      if (++idx[d] < oBatch[d]) break;
      idx[d] = 0;
    }
  }
  p->nbatch = aOffset.size();
  p->aOffset = c.L.array(std::move(aOffset));
  p->bOffset = c.L.array(std::move(bOffset));
  c.L.emit(fn, p, "matmul", {aSlot, bSlot}, {outSlot});
  return Status::OK();
}

// Transposed copy of a 2-D operand into a new scratch slot.
int emitTranspose2D(LowerCtx& c, int slot, int64_t rows, int64_t cols, DType dtype, Status* st) {
  StridedCopyParams* p = c.L.params<StridedCopyParams>();
  p->in = slot;
  p->out = c.L.scratch(static_cast<size_t>(rows * cols) * dtypeSize(dtype));
  p->rank = 2;
  p->dims[0] = cols;
  p->dims[1] = rows;
  p->stride[0] = 1;
  p->stride[1] = cols;
  p->count = static_cast<size_t>(rows * cols);
  simplifyStrided(p);
  KernelFn fn = stridedCopyKernel(dtypeSize(dtype));
  if (!fn) {
    *st = nodeError(c.n, "unsupported element size");
    return -1;
  }
  c.L.emit(fn, p, "transpose", {p->in}, {p->out});
  return p->out;
}

// Column bias of a Gemm's C (or a bias Add operand): N values, or false if the
// operand varies along rows.
bool columnBias(const Value& v, size_t N, double scale, std::vector<float>* bias) {
  if (!v.isConstant() || v.dtype != DType::kFloat32) return false;
  size_t cnt = v.count();
  for (size_t d = 0; d + 1 < v.shape.size(); ++d)
    if (v.shape[d] != 1) return false;
  if (cnt != N && cnt != 1) return false;
  bias->resize(N);
  const float* src = v.constant->as<float>();
  for (size_t k = 0; k < N; ++k) (*bias)[k] = static_cast<float>(src[cnt == 1 ? 0 : k] * scale);
  return true;
}

Status lowerGemm(LowerCtx& c, const DenseTail* tail) {
  const Value& A = c.in(0);
  const Value& B = c.in(1);
  const int cv = c.n.input(2);
  const bool transA = c.n.attrInt("transA", 0) != 0, transB = c.n.attrInt("transB", 0) != 0;
  const double alpha = c.n.attrFloat("alpha", 1.0), beta = c.n.attrFloat("beta", 1.0);
  const size_t M = static_cast<size_t>(transA ? A.shape[1] : A.shape[0]);
  const size_t K = static_cast<size_t>(transA ? A.shape[0] : A.shape[1]);
  const size_t N = static_cast<size_t>(transB ? B.shape[0] : B.shape[1]);
  Status st;
  int aSlot = c.L.slotOf(c.n.inputs[0]);
  if (transA) {
    aSlot = emitTranspose2D(c, aSlot, A.shape[0], A.shape[1], A.dtype, &st);
    MLBRIDGE_RETURN_IF_ERROR(st);
  }
  if (A.dtype == DType::kFloat32 && B.isConstant()) {
    // A tail is only fused when C is absent or a column bias (gemmIsDense).
    DenseTail t = tail ? *tail : DenseTail();
    const bool hasC = cv >= 0 && beta != 0;
    std::vector<float> cb;
    const bool columnC = hasC && columnBias(c.g.value(cv), N, beta, &cb);
    if (columnC) {
      if (t.bias.empty()) t.bias = cb;
      else for (size_t k = 0; k < N; ++k) t.bias[k] += cb[k];
    }
    int outSlot = c.L.slotOf(tail ? tail->outValue : c.n.outputs[0]);
    MLBRIDGE_RETURN_IF_ERROR(
        emitDense(c, aSlot, M, K, N, B.constant->as<float>(), transB, static_cast<float>(alpha), t, outSlot));
    if (hasC && !columnC) {
      const Value& C = c.g.value(cv);
      int cSlot = c.L.slotOf(cv);
      if (beta != 1) {
        if (!C.isConstant()) return nodeError(c.n, "a runtime C with beta != 1 is not supported");
        std::shared_ptr<Buffer> scaled = Buffer::allocate(C.bytes());
        if (!scaled) return noMemory(c.n);
        for (size_t k = 0; k < C.count(); ++k)
          scaled->as<float>()[k] = static_cast<float>(C.constant->as<float>()[k] * beta);
        cSlot = c.L.constantSlot(scaled);
      }
      MLBRIDGE_RETURN_IF_ERROR(
          emitBinary(c, BinaryOp::kAdd, outSlot, c.out(0).shape, cSlot, C.shape, A.dtype, outSlot, c.out(0).shape));
    }
    return Status::OK();
  }
  // Generic path: runtime B or float64.
  int bSlot = c.L.slotOf(c.n.inputs[1]);
  if (transB) {
    bSlot = emitTranspose2D(c, bSlot, B.shape[0], B.shape[1], B.dtype, &st);
    MLBRIDGE_RETURN_IF_ERROR(st);
  }
  int outSlot = c.L.slotOf(c.n.outputs[0]);
  MLBRIDGE_RETURN_IF_ERROR(emitMatMul(c, A.dtype, aSlot, Shape{int64_t(M), int64_t(K)}, bSlot,
                                      Shape{int64_t(K), int64_t(N)}, outSlot, alpha));
  if (cv >= 0 && beta != 0) {
    const Value& C = c.g.value(cv);
    int cSlot = c.L.slotOf(cv);
    if (beta != 1) {
      if (!C.isConstant()) return nodeError(c.n, "a runtime C with beta != 1 is not supported");
      std::shared_ptr<Buffer> scaled = Buffer::allocate(C.bytes());
      if (!scaled) return noMemory(c.n);
      for (size_t k = 0; k < C.count(); ++k) {
        if (C.dtype == DType::kFloat32) scaled->as<float>()[k] = static_cast<float>(C.constant->as<float>()[k] * beta);
        else scaled->as<double>()[k] = C.constant->as<double>()[k] * beta;
      }
      cSlot = c.L.constantSlot(scaled);
    }
    MLBRIDGE_RETURN_IF_ERROR(
        emitBinary(c, BinaryOp::kAdd, outSlot, c.out(0).shape, cSlot, C.shape, A.dtype, outSlot, c.out(0).shape));
  }
  return Status::OK();
}

// MatMul whose right-hand side is a constant matrix (or vector) and float32.
bool matMulIsDense(const Graph& g, const Node& n) {
  const Value& A = g.value(n.inputs[0]);
  const Value& B = g.value(n.inputs[1]);
  return A.dtype == DType::kFloat32 && B.isConstant() && B.shape.size() <= 2;
}

bool gemmIsDense(const Graph& g, const Node& n) {
  const Value& A = g.value(n.inputs[0]);
  const Value& B = g.value(n.inputs[1]);
  if (A.dtype != DType::kFloat32 || !B.isConstant()) return false;
  int cv = n.input(2);
  if (cv < 0 || n.attrFloat("beta", 1.0) == 0) return true;
  std::vector<float> bias;
  const size_t N = static_cast<size_t>(n.attrInt("transB", 0) ? B.shape[0] : B.shape[1]);
  return columnBias(g.value(cv), N, 1.0, &bias);  // a fusable (column) C
}

Status lowerMatMul(LowerCtx& c, const DenseTail* tail) {
  const Value& A = c.in(0);
  const Value& B = c.in(1);
  const Value& O = c.out(0);
  if (matMulIsDense(c.g, c.n)) {
    const size_t K = static_cast<size_t>(A.shape.back());
    const size_t N = B.shape.size() == 2 ? static_cast<size_t>(B.shape[1]) : 1;
    const size_t M = A.shape.size() == 1 ? 1 : static_cast<size_t>(prod(A.shape, 0, A.shape.size() - 1));
    DenseTail t;
    if (tail) t = *tail;
    int outSlot = c.L.slotOf(tail ? tail->outValue : c.n.outputs[0]);
    return emitDense(c, c.L.slotOf(c.n.inputs[0]), M, K, N, B.constant->as<float>(), false, 1.0f, t, outSlot);
  }
  Shape as = A.shape, bs = B.shape;
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  (void)O;
  return emitMatMul(c, A.dtype, c.L.slotOf(c.n.inputs[0]), as, c.L.slotOf(c.n.inputs[1]), bs,
                    c.L.slotOf(c.n.outputs[0]), 1.0);
}

// ---- LSTM / GRU ------------------------------------------------------------------

Act rnnAct(const std::string& name) {
  if (name == "Sigmoid") return Act::kSigmoid;
  if (name == "Tanh") return Act::kTanh;
  return Act::kRelu;  // import accepts Sigmoid, Tanh, Relu only
}

Status lowerRnn(LowerCtx& c) {
  const bool gru = c.n.op == Op::kGRU;
  const Value& X = c.in(0);
  const Value& Wv = c.in(1);
  const Value& Rv = c.in(2);
  RnnParams* p = c.L.params<RnnParams>();
  p->gru = gru;
  p->layout = static_cast<int>(c.n.attrInt("layout", 0));
  p->seq = static_cast<size_t>(p->layout == 0 ? X.shape[0] : X.shape[1]);
  p->batch = static_cast<size_t>(p->layout == 0 ? X.shape[1] : X.shape[0]);
  p->input = static_cast<size_t>(X.shape[2]);
  p->hidden = static_cast<size_t>(c.n.attrInt("hidden_size"));
  const std::string direction = c.n.attrString("direction", "forward");
  p->dirs = direction == "bidirectional" ? 2 : 1;
  p->linearBeforeReset = gru && c.n.attrInt("linear_before_reset", 0) != 0;
  p->clip = static_cast<float>(c.n.attrFloat("clip", 0));
  const std::vector<std::string>& acts = c.n.attrStrings("activations");
  p->f = rnnAct(acts.size() > 0 ? acts[0] : "Sigmoid");
  p->g = rnnAct(acts.size() > 1 ? acts[1] : "Tanh");
  p->h = gru ? Act::kTanh : rnnAct(acts.size() > 2 ? acts[2] : "Tanh");
  const size_t H = p->hidden, I = p->input, G = gru ? 3 : 4, GH = G * H;
  const float* W = Wv.constant->as<float>();
  const float* R = Rv.constant->as<float>();
  const int bIdx = c.n.input(3);
  const float* Bias = bIdx >= 0 ? c.g.value(bIdx).constant->as<float>() : nullptr;
  const int pIdx = gru ? -1 : c.n.input(7);
  const float* P = pIdx >= 0 ? c.g.value(pIdx).constant->as<float>() : nullptr;
  for (size_t d = 0; d < p->dirs; ++d) {
    RnnDirection& D = p->dir[d];
    D.reverse = direction == "reverse" || d == 1;
    BufferPtr wx = packPanels(W + d * GH * I, true, I, GH, 1.0f);
    if (!wx) return noMemory(c.n);
    D.wx = wx->as<float>();
    c.L.constantSlot(wx);
    std::vector<float> bx(GH, 0.0f);
    std::vector<float> rbh;
    if (Bias) {
      const float* wb = Bias + d * 2 * GH;
      const float* rb = wb + GH;
      for (size_t k = 0; k < GH; ++k) bx[k] = wb[k] + rb[k];
      if (gru && p->linearBeforeReset) {
        rbh.assign(rb + 2 * H, rb + 3 * H);
        for (size_t k = 2 * H; k < 3 * H; ++k) bx[k] = wb[k];
      }
    }
    BufferPtr bxb = padBias(bx.data(), GH);
    if (!bxb) return noMemory(c.n);
    D.bx = bxb->as<float>();
    c.L.constantSlot(bxb);
    if (!gru) {
      BufferPtr rh = packPanels(R + d * GH * H, true, H, GH, 1.0f);
      if (!rh) return noMemory(c.n);
      D.rh = rh->as<float>();
      c.L.constantSlot(rh);
      if (P) {
        std::shared_ptr<Buffer> pb = Buffer::allocate(3 * H * sizeof(float));
        if (!pb) return noMemory(c.n);
        std::memcpy(pb->data(), P + d * 3 * H, 3 * H * sizeof(float));
        D.peephole = pb->as<float>();
        c.L.constantSlot(pb);
      }
    } else {
      const float* Rd = R + d * GH * H;
      BufferPtr rzr = packPanels(Rd, true, H, 2 * H, 1.0f);
      BufferPtr rhh = packPanels(Rd + 2 * H * H, true, H, H, 1.0f);
      if (!rzr || !rhh) return noMemory(c.n);
      D.rh = rzr->as<float>();
      D.rhh = rhh->as<float>();
      c.L.constantSlot(rzr);
      c.L.constantSlot(rhh);
      if (p->linearBeforeReset) {
        if (rbh.empty()) rbh.assign(H, 0.0f);
        BufferPtr rb = padBias(rbh.data(), H);
        if (!rb) return noMemory(c.n);
        D.rbh = rb->as<float>();
        c.L.constantSlot(rb);
      }
    }
  }
  p->x = c.L.slotOf(c.n.inputs[0]);
  p->initH = c.n.input(5) >= 0 ? c.L.slotOf(c.n.inputs[5]) : -1;
  p->initC = !gru && c.n.input(6) >= 0 ? c.L.slotOf(c.n.inputs[6]) : -1;
  p->y = c.n.output(0) >= 0 ? c.L.slotOf(c.n.outputs[0]) : -1;
  p->yh = c.n.output(1) >= 0 ? c.L.slotOf(c.n.outputs[1]) : -1;
  p->yc = !gru && c.n.output(2) >= 0 ? c.L.slotOf(c.n.outputs[2]) : -1;
  p->scratch = c.L.scratch(rnnScratchBytes(*p));
  std::vector<int> reads = {p->x}, writes = {p->scratch};
  if (p->initH >= 0) reads.push_back(p->initH);
  if (p->initC >= 0) reads.push_back(p->initC);
  for (int s : {p->y, p->yh, p->yc})
    if (s >= 0) writes.push_back(s);
  c.L.emit(c.L.simd().rnn, p, gru ? "gru" : "lstm", reads, writes);
  return Status::OK();
}

Status lowerNode(Lowerer& L, const Graph& g, int index, const DenseTail* tail, size_t maxBytes) {
  const Node& n = g.nodes[static_cast<size_t>(index)];
  L.setNode(index);
  LowerCtx c{L, g, n, maxBytes};
  BinaryOp bop = BinaryOp::kAdd;
  if (binaryOpFor(n.op, &bop) || n.op == Op::kMod) return lowerBinary(c, bop);
  switch (n.op) {
    case Op::kIdentity:
    case Op::kDropout:
    case Op::kReshape:
    case Op::kFlatten:
    case Op::kSqueeze:
    case Op::kUnsqueeze:
      L.alias(n.outputs[0], n.inputs[0]);
      return Status::OK();
    case Op::kRelu: case Op::kLeakyRelu: case Op::kTanh: case Op::kSigmoid: case Op::kExp: case Op::kClip:
    case Op::kHardSigmoid: case Op::kNeg: case Op::kAbs: case Op::kElu: case Op::kSelu: case Op::kHardSwish:
    case Op::kSoftsign: case Op::kReciprocal: case Op::kLog: case Op::kSqrt: case Op::kErf: case Op::kFloor:
    case Op::kCeil: case Op::kRound: case Op::kSign: case Op::kSin: case Op::kCos: case Op::kSoftplus:
    case Op::kGelu: case Op::kMish: case Op::kNot:
      return lowerUnary(c);
    case Op::kSoftmax:
    case Op::kLogSoftmax: return lowerSoftmax(c);
    case Op::kConcat: return lowerConcat(c);
    case Op::kTranspose: return lowerTranspose(c);
    case Op::kSlice: return lowerSlice(c);
    case Op::kExpand: return lowerExpand(c);
    case Op::kTile: return lowerTile(c);
    case Op::kSplit: return lowerSplit(c);
    case Op::kGather: return lowerGather(c);
    case Op::kCast: return lowerCast(c);
    case Op::kArgMax:
    case Op::kArgMin: return lowerArg(c);
    case Op::kReduceSum: case Op::kReduceMean: case Op::kReduceMax: case Op::kReduceMin: case Op::kReduceProd:
    case Op::kReduceSumSquare:
      return lowerReduce(c);
    case Op::kLayerNormalization: return lowerLayerNorm(c);
    case Op::kBatchNormalization: return lowerBatchNorm(c);
    case Op::kWhere: return lowerWhere(c);
    case Op::kGemm: return lowerGemm(c, tail);
    case Op::kMatMul: return lowerMatMul(c, tail);
    case Op::kLSTM:
    case Op::kGRU: return lowerRnn(c);
    default: return nodeError(n, "no lowering (should have been folded at load)");
  }
}

// Finds the chain [bias Add] [activation] [Softmax over the last axis] that a
// dense node's output feeds into, each link the only use of the previous.
DenseTail findTail(const Graph& g, int index, const std::vector<int>& uses, const std::vector<int>& consumer) {
  const Node& n = g.nodes[static_cast<size_t>(index)];
  DenseTail t;
  int cur = n.outputs[0];
  t.outValue = cur;
  const Value& out = g.value(cur);
  const Value& B = g.value(n.inputs[1]);
  if (out.shape.empty() || B.shape.size() != 2) return t;
  const size_t N = static_cast<size_t>(n.op == Op::kGemm && n.attrInt("transB", 0) ? B.shape[0] : B.shape[1]);
  if (static_cast<size_t>(out.shape.back()) != N) return t;
  auto next = [&](int v) -> const Node* {
    if (uses[static_cast<size_t>(v)] != 1 || consumer[static_cast<size_t>(v)] < 0) return nullptr;
    return &g.nodes[static_cast<size_t>(consumer[static_cast<size_t>(v)])];
  };
  const Node* c = next(cur);
  if (c && c->op == Op::kAdd && c->inputs.size() == 2 && g.value(c->outputs[0]).shape == out.shape) {
    int other = c->inputs[0] == cur ? c->inputs[1] : c->inputs[0];
    std::vector<float> bias;
    if (other != cur && columnBias(g.value(other), N, 1.0, &bias)) {
      t.bias = bias;
      t.fused.push_back(consumer[static_cast<size_t>(cur)]);
      cur = c->outputs[0];
      c = next(cur);
    }
  }
  if (c && g.value(c->outputs[0]).dtype == DType::kFloat32 && actFor(*c, &t.act, &t.alpha, &t.beta)) {
    t.fused.push_back(consumer[static_cast<size_t>(cur)]);
    cur = c->outputs[0];
    c = next(cur);
  }
  if (c && (c->op == Op::kSoftmax || c->op == Op::kLogSoftmax) &&
      c->attrInt("axis") == static_cast<int64_t>(out.shape.size()) - 1) {
    t.post = c->op == Op::kSoftmax ? Post::kSoftmax : Post::kLogSoftmax;
    t.fused.push_back(consumer[static_cast<size_t>(cur)]);
    cur = c->outputs[0];
  }
  t.outValue = cur;
  return t;
}

// Assigns arena offsets to arena slots from their lifetimes.
Status planArena(Program* p, size_t maxBytes) {
  const size_t ns = p->slots.size();
  const int end = static_cast<int>(p->steps.size());
  std::vector<int> first(ns, -1), last(ns, -1);
  auto touch = [&](int s, int t) {
    if (s < 0) return;
    size_t k = static_cast<size_t>(s);
    if (first[k] < 0 || t < first[k]) first[k] = t;
    if (t > last[k]) last[k] = t;
  };
  for (int t = 0; t < end; ++t) {
    for (int s : p->steps[static_cast<size_t>(t)].reads) touch(s, t);
    for (int s : p->steps[static_cast<size_t>(t)].writes) touch(s, t);
  }
  for (int s : p->outputSlots) touch(s, end);
  std::vector<size_t> order;
  for (size_t k = 0; k < ns; ++k)
    if (p->slots[k].kind == Slot::Kind::kArena && first[k] >= 0) order.push_back(k);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return first[a] != first[b] ? first[a] < first[b] : a < b; });
  std::vector<size_t> placed;
  size_t total = 0;
  for (size_t k : order) {
    size_t size = alignUp(p->slots[k].bytes ? p->slots[k].bytes : 1);
    // Live slots overlapping k's lifetime, by offset.
    std::vector<std::pair<size_t, size_t>> busy;
    for (size_t q : placed)
      if (first[q] <= last[k] && first[k] <= last[q])
        busy.emplace_back(p->slots[q].offset, p->slots[q].offset + alignUp(p->slots[q].bytes ? p->slots[q].bytes : 1));
    std::sort(busy.begin(), busy.end());
    size_t off = 0;
    for (const auto& b : busy) {
      if (off + size <= b.first) break;
      off = std::max(off, b.second);
    }
    p->slots[k].offset = off;
    placed.push_back(k);
    total = std::max(total, off + size);
    if (total > maxBytes)
      return resourceExhausted("the model needs more than " + std::to_string(maxBytes) + " bytes of working memory");
  }
  p->arenaBytes = total;
  return Status::OK();
}

}  // namespace

StatusOr<std::shared_ptr<const Program>> compileProgram(const Graph& g, const CompileOptions& options) {
  std::shared_ptr<Program> prog = std::make_shared<Program>();
  Lowerer L(g, prog.get(), options);
  for (int v : g.inputs) prog->inputSlots.push_back(L.slotOf(v));
  std::vector<int> uses = g.useCounts();
  std::vector<int> consumer(g.values.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int v : g.nodes[i].inputs)
      if (v >= 0) consumer[static_cast<size_t>(v)] = static_cast<int>(i);
  std::vector<bool> fused(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (fused[i]) continue;
    const Node& n = g.nodes[i];
    DenseTail tail;
    const DenseTail* tp = nullptr;
    if ((n.op == Op::kGemm && gemmIsDense(g, n)) || (n.op == Op::kMatMul && matMulIsDense(g, n))) {
      tail = findTail(g, static_cast<int>(i), uses, consumer);
      for (int f : tail.fused) fused[static_cast<size_t>(f)] = true;
      tp = &tail;
    }
    MLBRIDGE_RETURN_IF_ERROR(lowerNode(L, g, static_cast<int>(i), tp, options.maxArenaBytes));
  }
  L.setNode(-1);
  for (int v : g.outputs) {
    prog->outputSlots.push_back(L.slotOf(v));
    prog->outputBytes.push_back(g.value(v).bytes());
  }
  MLBRIDGE_RETURN_IF_ERROR(planArena(prog.get(), options.maxArenaBytes));
  return std::shared_ptr<const Program>(std::move(prog));
}

Status evaluateConstantNode(const Graph& g, const Node& node, size_t maxBytes, std::vector<Tensor>* outs) {
  // Lower the node alone (its inputs are constant slots), run it in a
  // temporary arena, and copy the outputs into new buffers.
  Program prog;
  CompileOptions options;
  options.maxArenaBytes = maxBytes;
  Lowerer L(g, &prog, options);
  int index = -1;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (&g.nodes[i] == &node) index = static_cast<int>(i);
  if (index < 0) return internalError("constant folding: node not in graph");
  MLBRIDGE_RETURN_IF_ERROR(lowerNode(L, g, index, nullptr, maxBytes));
  for (int v : node.outputs) prog.outputSlots.push_back(v >= 0 ? L.slotOf(v) : -1);
  std::vector<int> realOutputs;
  for (int s : prog.outputSlots)
    if (s >= 0) realOutputs.push_back(s);
  std::vector<int> saved = prog.outputSlots;
  prog.outputSlots = realOutputs;
  MLBRIDGE_RETURN_IF_ERROR(planArena(&prog, maxBytes));
  prog.outputSlots = saved;
  std::shared_ptr<Buffer> arena = Buffer::allocate(prog.arenaBytes);
  if (!arena) return resourceExhausted(node.describe() + ": out of memory while folding constants");
  std::vector<void*> table(prog.slots.size());
  prog.bind(arena->as<unsigned char>(), nullptr, table.data());
  size_t failed = 0;
  if (const char* err = prog.run(table.data(), &failed))
    return invalidArgument(node.describe() + ": " + err + " (while folding constants)");
  outs->assign(node.outputs.size(), Tensor());
  for (size_t k = 0; k < node.outputs.size(); ++k) {
    int v = node.outputs[k];
    if (v < 0) continue;
    const Value& val = g.value(v);
    std::shared_ptr<Buffer> b = Buffer::allocate(val.bytes());
    if (!b) return resourceExhausted(node.describe() + ": out of memory while folding constants");
    if (val.bytes()) std::memcpy(b->data(), table[static_cast<size_t>(prog.outputSlots[k])], val.bytes());
    (*outs)[k] = Tensor{val.dtype, val.shape, b};
  }
  return Status::OK();
}

void Program::bind(unsigned char* arena, const void* const* inputs, void** table) const {
  for (size_t k = 0; k < slots.size(); ++k) {
    const Slot& s = slots[k];
    switch (s.kind) {
      // Kernels only write the slots a step lists as writes, which are never
      // constants or inputs: the const_casts below are never written through.
      case Slot::Kind::kConstant: table[k] = const_cast<void*>(s.constant); break;
      case Slot::Kind::kInput: table[k] = inputs ? const_cast<void*>(inputs[s.input]) : nullptr; break;
      case Slot::Kind::kArena: table[k] = arena + s.offset; break;
    }
  }
}

const char* Program::run(void* const* table, size_t* failed) const {
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    if (const char* err = s.fn(s.params, table)) {
      *failed = i;
      return err;
    }
  }
  return nullptr;
}

void Program::copyOutputs(void* const* table, void* const* outputs) const {
  for (size_t i = 0; i < outputSlots.size(); ++i)
    if (outputBytes[i]) std::memcpy(outputs[i], table[static_cast<size_t>(outputSlots[i])], outputBytes[i]);
}

std::string Program::dump(const Graph& g) const {
  std::string out = "program: " + std::to_string(steps.size()) + " steps, " + std::to_string(slots.size()) +
                    " slots, arena " + std::to_string(arenaBytes) + " bytes, kernels " + isa + "\n";
  auto slotName = [&](int s) {
    const Slot& sl = slots[static_cast<size_t>(s)];
    std::string n = "$" + std::to_string(s);
    if (sl.value >= 0) n += "(" + g.value(sl.value).name + ")";
    return n;
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    out += "  " + std::to_string(i) + ": " + s.kernel + " ";
    for (size_t k = 0; k < s.writes.size(); ++k) out += (k ? "," : "") + slotName(s.writes[k]);
    out += " <- ";
    for (size_t k = 0; k < s.reads.size(); ++k) out += (k ? "," : "") + slotName(s.reads[k]);
    out += "    # " + stepWhat[i] + "\n";
  }
  return out;
}

}  // namespace engine
}  // namespace mlbridge
