#include "engine/import.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "checked_math.h"
#include "engine/program.h"

namespace mlbridge {
namespace engine {

namespace {

using onnx::AttrType;
using onnx::AttributeDesc;
using onnx::NodeDesc;

std::string lower(std::string s) {
  for (char& ch : s)
    if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
  return s;
}

bool broadcastShapes(const Shape& a, const Shape& b, Shape* out) {
  size_t r = std::max(a.size(), b.size());
  Shape o(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da == db || db == 1) o[i] = da;
    else if (da == 1) o[i] = db;
    else return false;
  }
  *out = o;
  return true;
}

// Charges `bytes` of constants computed at load (folding, ConstantOfShape,
// Range, ...) to the model's budget, before they are allocated.
Status chargeFolded(size_t* used, size_t bytes, const ImportOptions& opt, const std::string& who) {
  if (*used > opt.maxFoldedBytes || bytes > opt.maxFoldedBytes - *used)
    return resourceExhausted(who + ": computing constants at load would take " + std::to_string(bytes) +
                             " more bytes, " + std::to_string(*used) + " already used, over the limit of " +
                             std::to_string(opt.maxFoldedBytes) + " (OnnxLoadOptions::maxFoldedBytes)");
  *used += bytes;
  return Status::OK();
}

// One node being imported: inputs, attribute access with "was it read?"
// bookkeeping (anything not read is an unsupported attribute), outputs.
class NodeBuilder {
 public:
  struct Out {
    bool set = false;
    DType dtype = DType::kInvalid;
    Shape shape;
    BufferPtr constant;
  };

  NodeBuilder(Graph& g, const NodeDesc& nd, int index, const std::vector<int>& inputIds, const ImportOptions& opt,
              size_t* foldedBytes)
      : g_(g), nd_(nd), ids_(inputIds), opt_(opt), used_(nd.attributes.size(), false), folded_(foldedBytes) {
    node.name = nd.name;
    node.sourceIndex = index;
    outs.resize(nd.outputs.size());
  }

  Node node;
  std::vector<Out> outs;
  int64_t opset() const { return g_.opset; }

  std::string describe() const { return node.describe(); }
  Status error(const std::string& m) const { return invalidArgument(describe() + ": " + m); }
  Status unsupported(const std::string& m) const { return unimplemented(describe() + ": " + m); }

  // ---- inputs ----
  size_t inputCount() const { return ids_.size(); }
  bool has(size_t i) const { return i < ids_.size() && ids_[i] >= 0; }
  int id(size_t i) const { return has(i) ? ids_[i] : -1; }
  const Value& in(size_t i) const { return g_.value(ids_[i]); }
  Status require(size_t i, const char* what) const {
    if (!has(i)) return error(std::string("missing required input '") + what + "'");
    return Status::OK();
  }
  Status requireCount(size_t minimum, size_t maximum) const {
    if (ids_.size() > maximum)
      return error("has " + std::to_string(ids_.size()) + " inputs, at most " + std::to_string(maximum) + " allowed");
    for (size_t i = 0; i < minimum; ++i)
      if (!has(i)) return error("missing required input " + std::to_string(i));
    return Status::OK();
  }
  Status requireOutputs(size_t maximum) const {
    if (nd_.outputs.size() > maximum)
      return error("has " + std::to_string(nd_.outputs.size()) + " outputs, at most " + std::to_string(maximum) +
                   " allowed");
    bool any = false;
    for (const std::string& o : nd_.outputs) any = any || !o.empty();
    if (!any) return error("has no output");
    return Status::OK();
  }
  bool wantsOutput(size_t k) const { return k < nd_.outputs.size() && !nd_.outputs[k].empty(); }
  Status constInput(size_t i, const char* what, Tensor* t) const {
    if (!has(i)) return error(std::string("missing input '") + what + "'");
    const Value& v = in(i);
    if (!v.isConstant())
      return unsupported(std::string("input '") + what + "' ('" + v.name +
                         "') must be known at load time (an initializer or computable from initializers)");
    *t = v.tensor();
    return Status::OK();
  }
  Status constInts(size_t i, const char* what, std::vector<int64_t>* out) const {
    Tensor t;
    MLBRIDGE_RETURN_IF_ERROR(constInput(i, what, &t));
    if (!tensorToInts(t, out))
      return error(std::string("input '") + what + "' must be a 1-D int64 or int32 tensor, got " +
                   dtypeName(t.dtype) + shapeString(t.shape));
    return Status::OK();
  }
  static bool tensorToInts(const Tensor& t, std::vector<int64_t>* out) { return tensorToInt64s(t, out); }
  Status dtypeIn(size_t i, std::initializer_list<DType> allowed) const {
    DType t = in(i).dtype;
    for (DType a : allowed)
      if (a == t) return Status::OK();
    return unsupported(std::string("input ") + std::to_string(i) + " ('" + in(i).name + "') has unsupported type " +
                       dtypeName(t));
  }
  Status sameType(size_t i, size_t j) const {
    if (in(i).dtype != in(j).dtype)
      return error(std::string("inputs ") + std::to_string(i) + " and " + std::to_string(j) + " have different types (" +
                   dtypeName(in(i).dtype) + ", " + dtypeName(in(j).dtype) + ")");
    return Status::OK();
  }

  // ---- attributes ----
  const AttributeDesc* attr(const char* name) {
    for (size_t k = 0; k < nd_.attributes.size(); ++k)
      if (nd_.attributes[k].name == name) {
        used_[k] = true;
        return &nd_.attributes[k];
      }
    return nullptr;
  }
  Status typeError(const AttributeDesc& a, const char* expected) const {
    return error("attribute '" + a.name + "' must be " + expected + ", got " + onnx::attrTypeName(a.type));
  }
  Status attrInt(const char* name, int64_t fallback, int64_t* out) {
    const AttributeDesc* a = attr(name);
    *out = fallback;
    if (!a) return Status::OK();
    if (a->type != AttrType::kInt) return typeError(*a, "INT");
    *out = a->i;
    return Status::OK();
  }
  Status attrFloat(const char* name, double fallback, double* out) {
    const AttributeDesc* a = attr(name);
    *out = fallback;
    if (!a) return Status::OK();
    if (a->type != AttrType::kFloat) return typeError(*a, "FLOAT");
    *out = a->f;
    return Status::OK();
  }
  Status attrString(const char* name, const std::string& fallback, std::string* out) {
    const AttributeDesc* a = attr(name);
    *out = fallback;
    if (!a) return Status::OK();
    if (a->type != AttrType::kString) return typeError(*a, "STRING");
    *out = a->s;
    return Status::OK();
  }
  Status attrInts(const char* name, std::vector<int64_t>* out, bool* present) {
    const AttributeDesc* a = attr(name);
    *present = a != nullptr;
    out->clear();
    if (!a) return Status::OK();
    if (a->type != AttrType::kInts) return typeError(*a, "INTS");
    *out = a->ints;
    return Status::OK();
  }
  Status attrStrings(const char* name, std::vector<std::string>* out, bool* present) {
    const AttributeDesc* a = attr(name);
    *present = a != nullptr;
    out->clear();
    if (!a) return Status::OK();
    if (a->type != AttrType::kStrings) return typeError(*a, "STRINGS");
    *out = a->strings;
    return Status::OK();
  }
  Status attrFloats(const char* name, std::vector<float>* out, bool* present) {
    const AttributeDesc* a = attr(name);
    *present = a != nullptr;
    out->clear();
    if (!a) return Status::OK();
    if (a->type != AttrType::kFloats) return typeError(*a, "FLOATS");
    *out = a->floats;
    return Status::OK();
  }
  Status attrTensor(const char* name, Tensor* out, bool* present) {
    const AttributeDesc* a = attr(name);
    *present = a != nullptr;
    if (!a) return Status::OK();
    if (a->type != AttrType::kTensor || !a->hasTensor) return typeError(*a, "TENSOR");
    if (!a->tensorStatus.ok()) return unsupported("attribute '" + a->name + "': " + a->tensorStatus.message());
    *out = a->t;
    return Status::OK();
  }
  // Any attribute not read by the op's importer is refused.
  Status checkAllAttributesUsed() const {
    for (size_t k = 0; k < nd_.attributes.size(); ++k) {
      if (used_[k]) continue;
      return unsupported("attribute '" + nd_.attributes[k].name + "' is not supported by this engine");
    }
    return Status::OK();
  }
  Status checkNoDuplicateAttributes() const {
    std::set<std::string> seen;
    for (const AttributeDesc& a : nd_.attributes) {
      if (!a.refAttrName.empty()) return unsupported("attribute '" + a.name + "' refers to a function attribute");
      if (!seen.insert(a.name).second) return error("attribute '" + a.name + "' is given twice");
    }
    return Status::OK();
  }

  // ---- axes ----
  Status axis(int64_t a, size_t rank, const char* what, int64_t* out) const {
    int64_t r = static_cast<int64_t>(rank);
    if (a < -r || a >= r)
      return error(std::string(what) + " " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
    *out = a < 0 ? a + r : a;
    return Status::OK();
  }
  Status axes(std::vector<int64_t>* list, size_t rank, const char* what) const {
    for (int64_t& a : *list) MLBRIDGE_RETURN_IF_ERROR(axis(a, rank, what, &a));
    std::sort(list->begin(), list->end());
    if (std::adjacent_find(list->begin(), list->end()) != list->end())
      return error(std::string(what) + " contains an axis twice");
    return Status::OK();
  }

  // ---- outputs ----
  Status setOutput(size_t k, DType dtype, Shape shape) {
    if (k >= outs.size()) return Status::OK();  // not requested
    if (shape.size() > static_cast<size_t>(kMaxRank))
      return unsupported("output rank " + std::to_string(shape.size()) + " is above the supported " +
                         std::to_string(kMaxRank));
    for (int64_t d : shape)
      if (d < 0) return error("output shape " + shapeString(shape) + " has a negative dimension");
    size_t count;
    if (!shapeElementCount(shape, dtypeSize(dtype), opt_.maxTensorBytes, &count))
      return resourceExhausted(describe() + ": output shape " + shapeString(shape) + " is larger than the " +
                               std::to_string(opt_.maxTensorBytes) + "-byte tensor limit (maxTensorBytes)");
    outs[k].set = true;
    outs[k].dtype = dtype;
    outs[k].shape = std::move(shape);
    return Status::OK();
  }
  Status setConstant(size_t k, Tensor t) {
    MLBRIDGE_RETURN_IF_ERROR(setOutput(k, t.dtype, t.shape));
    if (k < outs.size()) outs[k].constant = t.data;
    return Status::OK();
  }
  size_t maxBytes() const { return opt_.maxTensorBytes; }
  // A constant of this shape is about to be computed: charge the budget.
  Status chargeConstant(DType dtype, const Shape& shape) {
    return chargeFolded(folded_, elementCount(shape) * dtypeSize(dtype), opt_, describe());
  }

 private:
  Graph& g_;
  const NodeDesc& nd_;
  const std::vector<int>& ids_;
  const ImportOptions& opt_;
  std::vector<bool> used_;
  size_t* folded_;
};

const std::initializer_list<DType> kFloats = {DType::kFloat32, DType::kFloat64};
const std::initializer_list<DType> kNumeric = {DType::kFloat32, DType::kFloat64, DType::kInt8,   DType::kUInt8,
                                               DType::kInt16,   DType::kUInt16,  DType::kInt32,  DType::kUInt32,
                                               DType::kInt64,   DType::kUInt64};
const std::initializer_list<DType> kSignedNumeric = {DType::kFloat32, DType::kFloat64, DType::kInt8,
                                                     DType::kInt16,   DType::kInt32,   DType::kInt64};

void setF(Node& n, const char* k, double v) { n.attrs[k] = AttrValue::ofFloat(v); }
void setI(Node& n, const char* k, int64_t v) { n.attrs[k] = AttrValue::ofInt(v); }
void setIs(Node& n, const char* k, std::vector<int64_t> v) { n.attrs[k] = AttrValue::ofInts(std::move(v)); }
void setS(Node& n, const char* k, std::string v) { n.attrs[k] = AttrValue::ofString(std::move(v)); }

// Node inputs become the given ONNX input positions (data inputs only).
void keepInputs(NodeBuilder& b, std::initializer_list<size_t> positions) {
  b.node.inputs.clear();
  for (size_t p : positions) b.node.inputs.push_back(b.id(p));
}

Tensor makeTensor(DType dtype, Shape shape) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.data = Buffer::allocate(elementCount(t.shape) * dtypeSize(dtype));
  return t;
}

// ---- elementwise ----------------------------------------------------------------

Status importUnary(NodeBuilder& b) {
  MLBRIDGE_RETURN_IF_ERROR(b.requireCount(1, 1));
  MLBRIDGE_RETURN_IF_ERROR(b.requireOutputs(1));
  Node& n = b.node;
  double f;
  switch (n.op) {
    case Op::kRelu:
    case Op::kNeg:
    case Op::kSign:
      MLBRIDGE_RETURN_IF_ERROR(b.dtypeIn(0, kSignedNumeric));
      break;
    case Op::kAbs: MLBRIDGE_RETURN_IF_ERROR(b.dtypeIn(0, kNumeric)); break;
    case Op::kNot: MLBRIDGE_RETURN_IF_ERROR(b.dtypeIn(0, {DType::kBool})); break;
    default: MLBRIDGE_RETURN_IF_ERROR(b.dtypeIn(0, kFloats)); break;
  }
  switch (n.op) {
    case Op::kLeakyRelu:
      MLBRIDGE_RETURN_IF_ERROR(b.attrFloat("alpha", 0.01, &f));
      setF(n, "alpha", f);
      break;
    case Op::kElu:
      MLBRIDGE_RETURN_IF_ERROR(b.attrFloat("alpha", 1.0, &f));
      setF(n, "alpha", f);
      break;
    case Op::kSelu:
      MLBRIDGE_RETURN_IF_ERROR(b.attrFloat("alpha", 1.67326319217681884765625, &f));
      setF(n, "alpha", f);
      MLBRIDGE_RETURN_IF_ERROR(b.attrFloat("gamma", 1.05070102214813232421875, &f));
      setF(n, "gamma", f);
      break;
    case Op::kHardSigmoid:
      MLBRIDGE_RETURN_IF_ERROR(b.attrFloat("alpha", 0.2, &f));
      setF(n, "alpha", f);
      MLBRIDGE_RETURN_IF_ERROR(b.attrFloat("beta", 0.5, &f));
      setF(n, "beta", f);
      break;
    case Op::kGelu: {
      std::string approx;
      MLBRIDGE_RETURN_IF_ERROR(b.attrString("approximate", "none", &approx));
      if (approx != "none" && approx != "tanh") return b.error("attribute 'approximate' must be \"none\" or \"tanh\"");
      setS(n, "approximate", approx);
      break;
    }
    default: break;
  }
  keepInputs(b, {0});
  return b.setOutput(0, b.in(0).dtype, b.in(0).shape);
}

Status importClip(NodeBuilder& b) {
  MLBRIDGE_RETURN_IF_ERROR(b.requireCount(1, 3));
  MLBRIDGE_RETURN_IF_ERROR(b.requireOutputs(1));
  MLBRIDGE_RETURN_IF_ERROR(b.dtypeIn(0, kNumeric));
  const DType t = b.in(0).dtype;
  const char* names[] = {"", "min", "max"};
  for (size_t i = 1; i <= 2; ++i) {
    if (!b.has(i)) continue;
    Tensor v;
    MLBRIDGE_RETURN_IF_ERROR(b.constInput(i, names[i], &v));
    if (v.dtype != t) return b.error(std::string("'") + names[i] + "' must have the input's type");
    if (v.count() != 1) return b.error(std::string("'") + names[i] + "' must be a scalar");
    if (isFloating(t)) setF(b.node, names[i], tensorElementAsDouble(v, 0));
    else setI(b.node, names[i], tensorElementAsInt64(v, 0));
  }
  keepInputs(b, {0});
  return b.setOutput(0, t, b.in(0).shape);
}

Status importBinary(NodeBuilder& b) {
  const Op op = b.node.op;
  const bool variadic = op == Op::kMax || op == Op::kMin || op == Op::kSum || op == Op::kMean;
  if (variadic) {
    if (b.inputCount() < 1) return b.error("needs at least one input");
    for (size_t i = 0; i < b.inputCount(); ++i) MLBRIDGE_RETURN_IF_ERROR(b.require(i, "data"));
  } else {
    MLBRIDGE_RETURN_IF_ERROR(b.requireCount(2, 2));
  }
  MLBRIDGE_RETURN_IF_ERROR(b.requireOutputs(1));
  DType outType = b.in(0).dtype;
  switch (op) {
    case Op::kAnd: case Op::kOr: case Op::kXor:
      MLBRIDGE_RETURN_IF_ERROR(b.dtypeIn(0, {DType::kBool}));
      outType = DType::kBool;
      break;
    case Op::kEqual:
      MLBRIDGE_RETURN_IF_ERROR(b.dtypeIn(0, {DType::kFloat32, DType::kFloat64, DType::kInt8, DType::kUInt8,
                                             DType::kInt16, DType::kUInt16, DType::kInt32, DType::kUInt32,
                                             DType::kInt64, DType::kUInt64, DType::kBool}));
      outType = DType::kBool;
      break;
    case Op::kLess: case Op::kGreater: case Op::kLessOrEqual: case Op::kGreaterOrEqual:
      MLBRIDGE_RETURN_IF_ERROR(b.dtypeIn(0, kNumeric));
      outType = DType::kBool;
      break;
    case Op::kPow:
      MLBRIDGE_RETURN_IF_ERROR(b.dtypeIn(0, kFloats));
      MLBRIDGE_RETURN_IF_ERROR(b.dtypeIn(1, {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64}));
      break;
    case Op::kMean: MLBRIDGE_RETURN_IF_ERROR(b.dtypeIn(0, kFloats)); break;
    case Op::kPRelu: MLBRIDGE_RETURN_IF_ERROR(b.dtypeIn(0, kSignedNumeric)); break;
    default: MLBRIDGE_RETURN_IF_ERROR(b.dtypeIn(0, kNumeric)); break;
  }
  if (op == Op::kMod) {
    int64_t fmod;
    MLBRIDGE_RETURN_IF_ERROR(b.attrInt("fmod", 0, &fmod));
    if (fmod != 0 && fmod != 1) return b.error("attribute 'fmod' must be 0 or 1");
    if (isFloating(b.in(0).dtype) && fmod == 0) return b.error("floating-point Mod needs fmod=1");
    setI(b.node, "fmod", fmod);
  }
  Shape out = b.in(0).shape;
  b.node.inputs.clear();
  for (size_t i = 0; i < b.inputCount(); ++i) {
    if (op != Op::kPow) MLBRIDGE_RETURN_IF_ERROR(b.sameType(0, i));
    if (i > 0) {
      Shape s;
      if (op == Op::kPRelu) {
        // Unidirectional: the slope broadcasts to X.
        if (!broadcastShapes(out, b.in(i).shape, &s) || s != out)
          return b.error("slope shape " + shapeString(b.in(i).shape) + " does not broadcast to " + shapeString(out));
      } else if (!broadcastShapes(out, b.in(i).shape, &s)) {
        return b.error("input shapes " + shapeString(out) + " and " + shapeString(b.in(i).shape) +
                       " are not broadcast-compatible");
      }
      out = s;
    }
    b.node.inputs.push_back(b.id(i));
  }
  return b.setOutput(0, outType, out);
}

Status importWhere(NodeBuilder& b) {
  MLBRIDGE_RETURN_IF_ERROR(b.requireCount(3, 3));
  MLBRIDGE_RETURN_IF_ERROR(b.requireOutputs(1));
  MLBRIDGE_RETURN_IF_ERROR(b.dtypeIn(0, {DType::kBool}));
  MLBRIDGE_RETURN_IF_ERROR(b.sameType(1, 2));
  Shape s, out;
  if (!broadcastShapes(b.in(0).shape, b.in(1).shape, &s) || !broadcastShapes(s, b.in(2).shape, &out))
    return b.error("input shapes are not broadcast-compatible");
  keepInputs(b, {0, 1, 2});
  return b.setOutput(0, b.in(1).dtype, out);
}

Status importSoftmax(NodeBuilder& b) {
  MLBRIDGE_RETURN_IF_ERROR(b.requireCount(1, 1));
  MLBRIDGE_RETURN_IF_ERROR(b.requireOutputs(1));
  MLBRIDGE_RETURN_IF_ERROR(b.dtypeIn(0, kFloats));
  int64_t a;
  MLBRIDGE_RETURN_IF_ERROR(b.attrInt("axis", -1, &a));
  if (b.in(0).shape.empty()) return b.error("input must have rank >= 1");
  MLBRIDGE_RETURN_IF_ERROR(b.axis(a, b.in(0).shape.size(), "axis", &a));
  setI(b.node, "axis", a);
  keepInputs(b, {0});
  return b.setOutput(0, b.in(0).dtype, b.in(0).shape);
}

// ---- matrix products ------------------------------------------------------------

Status importGemm(NodeBuilder& b) {
  MLBRIDGE_RETURN_IF_ERROR(b.requireCount(2, 3));
  MLBRIDGE_RETURN_IF_ERROR(b.requireOutputs(1));
  MLBRIDGE_RETURN_IF_ERROR(b.dtypeIn(0, kFloats));
  MLBRIDGE_RETURN_IF_ERROR(b.sameType(0, 1));
  int64_t ta, tb;
  double alpha, beta;
  MLBRIDGE_RETURN_IF_ERROR(b.attrInt("transA", 0, &ta));
  MLBRIDGE_RETURN_IF_ERROR(b.attrInt("transB", 0, &tb));
  MLBRIDGE_RETURN_IF_ERROR(b.attrFloat("alpha", 1.0, &alpha));
  MLBRIDGE_RETURN_IF_ERROR(b.attrFloat("beta", 1.0, &beta));
  if ((ta != 0 && ta != 1) || (tb != 0 && tb != 1)) return b.error("transA and transB must be 0 or 1");
  const Shape& A = b.in(0).shape;
  const Shape& B = b.in(1).shape;
  if (A.size() != 2 || B.size() != 2)
    return b.error("A and B must be 2-D, got " + shapeString(A) + " and " + shapeString(B));
  int64_t M = ta ? A[1] : A[0], K = ta ? A[0] : A[1];
  int64_t K2 = tb ? B[1] : B[0], N = tb ? B[0] : B[1];
  if (K != K2)
    return b.error("inner dimensions differ: A " + shapeString(A) + (ta ? " (transposed)" : "") + ", B " +
                   shapeString(B) + (tb ? " (transposed)" : ""));
  if (b.has(2)) {
    MLBRIDGE_RETURN_IF_ERROR(b.sameType(0, 2));
    Shape s;
    const Shape& C = b.in(2).shape;
    if (C.size() > 2 || !broadcastShapes(Shape{M, N}, C, &s) || s != Shape{M, N})
      return b.error("C " + shapeString(C) + " does not broadcast to [" + std::to_string(M) + "," +
                     std::to_string(N) + "]");
  }
  setI(b.node, "transA", ta);
  setI(b.node, "transB", tb);
  setF(b.node, "alpha", alpha);
  setF(b.node, "beta", beta);
  b.node.inputs = {b.id(0), b.id(1)};
  if (b.has(2)) b.node.inputs.push_back(b.id(2));
  return b.setOutput(0, b.in(0).dtype, Shape{M, N});
}

Status importMatMul(NodeBuilder& b) {
  MLBRIDGE_RETURN_IF_ERROR(b.requireCount(2, 2));
  MLBRIDGE_RETURN_IF_ERROR(b.requireOutputs(1));
  MLBRIDGE_RETURN_IF_ERROR(b.dtypeIn(0, {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64,
                                         DType::kUInt32, DType::kUInt64}));
  MLBRIDGE_RETURN_IF_ERROR(b.sameType(0, 1));
  Shape a = b.in(0).shape, c = b.in(1).shape;
  if (a.empty() || c.empty()) return b.error("inputs must have rank >= 1");
  bool aVec = a.size() == 1, bVec = c.size() == 1;
  if (aVec) a.insert(a.begin(), 1);
  if (bVec) c.push_back(1);
  if (a.back() != c[c.size() - 2])
    return b.error("inner dimensions differ: " + shapeString(b.in(0).shape) + " x " + shapeString(b.in(1).shape));
  Shape batch;
  if (!broadcastShapes(Shape(a.begin(), a.end() - 2), Shape(c.begin(), c.end() - 2), &batch))
    return b.error("batch dimensions do not broadcast: " + shapeString(b.in(0).shape) + " x " +
                   shapeString(b.in(1).shape));
  Shape out = batch;
  if (!aVec) out.push_back(a[a.size() - 2]);
  if (!bVec) out.push_back(c.back());
  keepInputs(b, {0, 1});
  return b.setOutput(0, b.in(0).dtype, out);
}

// ---- shape manipulation ------------------------------------------------------------

Status importView(NodeBuilder& b) {  // Identity
  MLBRIDGE_RETURN_IF_ERROR(b.requireCount(1, 1));
  MLBRIDGE_RETURN_IF_ERROR(b.requireOutputs(1));
  keepInputs(b, {0});
  return b.setOutput(0, b.in(0).dtype, b.in(0).shape);
}

Status importDropout(NodeBuilder& b) {
  MLBRIDGE_RETURN_IF_ERROR(b.requireCount(1, 3));
  MLBRIDGE_RETURN_IF_ERROR(b.requireOutputs(2));
  int64_t seed;
  MLBRIDGE_RETURN_IF_ERROR(b.attrInt("seed", 0, &seed));
  if (b.has(2)) {
    Tensor t;
    MLBRIDGE_RETURN_IF_ERROR(b.constInput(2, "training_mode", &t));
    if (t.count() != 1 || t.dtype != DType::kBool || tensorElementAsInt64(t, 0) != 0)
      return b.unsupported("training_mode must be false (inference only)");
  }
  if (b.wantsOutput(1)) return b.unsupported("the mask output is not supported (inference only)");
  keepInputs(b, {0});  // inference Dropout is the identity (lowered to an alias)
  return b.setOutput(0, b.in(0).dtype, b.in(0).shape);
}

Status importReshape(NodeBuilder& b) {
  MLBRIDGE_RETURN_IF_ERROR(b.requireCount(2, 2));
  MLBRIDGE_RETURN_IF_ERROR(b.requireOutputs(1));
  std::vector<int64_t> shape;
  MLBRIDGE_RETURN_IF_ERROR(b.constInts(1, "shape", &shape));
  int64_t allowzero;
  MLBRIDGE_RETURN_IF_ERROR(b.attrInt("allowzero", 0, &allowzero));
  const Shape& in = b.in(0).shape;
  Shape out(shape.size());
  int inferred = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t s = shape[i];
    if (s == 0 && !allowzero) {
      if (i >= in.size()) return b.error("shape entry 0 at position " + std::to_string(i) + " has no input dimension to copy");
      s = in[i];
    }
    if (s == -1) {
      if (inferred >= 0) return b.error("shape has more than one -1");
      inferred = static_cast<int>(i);
      continue;
    }
    if (s < 0) return b.error("shape entry " + std::to_string(s) + " is invalid");
    out[i] = s;
    if (s != 0 && known > std::numeric_limits<int64_t>::max() / s) return b.error("shape is too large");
    known *= s;
  }
  const int64_t total = static_cast<int64_t>(b.in(0).count());
  if (inferred >= 0) {
    if (known == 0 || total % known != 0)
      return b.error("cannot infer the -1 entry: " + std::to_string(total) + " elements into " +
                     shapeString(Shape(shape.begin(), shape.end())));
    out[static_cast<size_t>(inferred)] = total / known;
  } else if (known != total) {
    return b.error("cannot reshape " + shapeString(in) + " (" + std::to_string(total) + " elements) to " +
                   shapeString(out));
  }
  setIs(b.node, "shape", out);
  keepInputs(b, {0});
  return b.setOutput(0, b.in(0).dtype, out);
}

Status importFlatten(NodeBuilder& b) {
  MLBRIDGE_RETURN_IF_ERROR(b.requireCount(1, 1));
  MLBRIDGE_RETURN_IF_ERROR(b.requireOutputs(1));
  int64_t a;
  MLBRIDGE_RETURN_IF_ERROR(b.attrInt("axis", 1, &a));
  const Shape& in = b.in(0).shape;
  int64_t r = static_cast<int64_t>(in.size());
  if (a < -r || a > r) return b.error("axis " + std::to_string(a) + " is out of range for rank " + std::to_string(r));
  if (a < 0) a += r;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < r; ++d) (d < a ? outer : inner) *= in[static_cast<size_t>(d)];
  setI(b.node, "axis", a);
  keepInputs(b, {0});
  return b.setOutput(0, b.in(0).dtype, Shape{outer, inner});
}

Status importSqueeze(NodeBuilder& b) {
  MLBRIDGE_RETURN_IF_ERROR(b.requireCount(1, 2));
  MLBRIDGE_RETURN_IF_ERROR(b.requireOutputs(1));
  const Shape& in = b.in(0).shape;
  std::vector<int64_t> axes;
  if (b.has(1)) {
    MLBRIDGE_RETURN_IF_ERROR(b.constInts(1, "axes", &axes));
    MLBRIDGE_RETURN_IF_ERROR(b.axes(&axes, in.size(), "axes"));
    for (int64_t a : axes)
      if (in[static_cast<size_t>(a)] != 1)
        return b.error("cannot squeeze axis " + std::to_string(a) + " of shape " + shapeString(in) + " (not 1)");
  } else {
    for (size_t d = 0; d < in.size(); ++d)
      if (in[d] == 1) axes.push_back(static_cast<int64_t>(d));
  }
  Shape out;
  for (size_t d = 0; d < in.size(); ++d)
    if (!std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(d))) out.push_back(in[d]);
  setIs(b.node, "axes", axes);
  keepInputs(b, {0});
  return b.setOutput(0, b.in(0).dtype, out);
}

Status importUnsqueeze(NodeBuilder& b) {
  MLBRIDGE_RETURN_IF_ERROR(b.requireCount(2, 2));
  MLBRIDGE_RETURN_IF_ERROR(b.requireOutputs(1));
  const Shape& in = b.in(0).shape;
  std::vector<int64_t> axes;
  MLBRIDGE_RETURN_IF_ERROR(b.constInts(1, "axes", &axes));
  const size_t r = in.size() + axes.size();
  MLBRIDGE_RETURN_IF_ERROR(b.axes(&axes, r, "axes"));
  Shape out;
  size_t k = 0;
  for (size_t d = 0; d < r; ++d) {
    if (std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(d))) out.push_back(1);
    else out.push_back(in[k++]);
  }
  setIs(b.node, "axes", axes);
  keepInputs(b, {0});
  return b.setOutput(0, b.in(0).dtype, out);
}

Status importTranspose(NodeBuilder& b) {
  MLBRIDGE_RETURN_IF_ERROR(b.requireCount(1, 1));
  MLBRIDGE_RETURN_IF_ERROR(b.requireOutputs(1));
  const Shape& in = b.in(0).shape;
  std::vector<int64_t> perm;
  bool present;
  MLBRIDGE_RETURN_IF_ERROR(b.attrInts("perm", &perm, &present));
  if (!present)
    for (size_t d = in.size(); d-- > 0;) perm.push_back(static_cast<int64_t>(d));
  if (perm.size() != in.size()) return b.error("perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(in.size()));
  std::vector<bool> seen(in.size(), false);
  Shape out;
  for (int64_t& p : perm) {
    MLBRIDGE_RETURN_IF_ERROR(b.axis(p, in.size(), "perm entry", &p));
    if (seen[static_cast<size_t>(p)]) return b.error("perm is not a permutation");
    seen[static_cast<size_t>(p)] = true;
    out.push_back(in[static_cast<size_t>(p)]);
  }
  setIs(b.node, "perm", perm);
  keepInputs(b, {0});
  return b.setOutput(0, b.in(0).dtype, out);
}

Status importConcat(NodeBuilder& b) {
  MLBRIDGE_RETURN_IF_ERROR(b.requireOutputs(1));
  if (b.inputCount() == 0) return b.error("needs at least one input");
  for (size_t i = 0; i < b.inputCount(); ++i) MLBRIDGE_RETURN_IF_ERROR(b.require(i, "inputs"));
  const AttributeDesc* ad = b.attr("axis");
  if (!ad) return b.error("attribute 'axis' is required");
  if (ad->type != AttrType::kInt) return b.typeError(*ad, "INT");
  const Shape& first = b.in(0).shape;
  int64_t a;
  MLBRIDGE_RETURN_IF_ERROR(b.axis(ad->i, first.size(), "axis", &a));
  Shape out = first;
  out[static_cast<size_t>(a)] = 0;
  b.node.inputs.clear();
  for (size_t i = 0; i < b.inputCount(); ++i) {
    MLBRIDGE_RETURN_IF_ERROR(b.sameType(0, i));
    const Shape& s = b.in(i).shape;
    if (s.size() != first.size()) return b.error("inputs have different ranks");
    for (size_t d = 0; d < s.size(); ++d)
      if (static_cast<int64_t>(d) != a && s[d] != first[d])
        return b.error("input shapes " + shapeString(first) + " and " + shapeString(s) + " differ outside the axis");
    if (!checked::add(out[static_cast<size_t>(a)], s[static_cast<size_t>(a)], &out[static_cast<size_t>(a)]))
      return b.error("the concatenated dimension overflows");
    b.node.inputs.push_back(b.id(i));
  }
  setI(b.node, "axis", a);
  return b.setOutput(0, b.in(0).dtype, out);
}

Status importGather(NodeBuilder& b) {
  MLBRIDGE_RETURN_IF_ERROR(b.requireCount(2, 2));
  MLBRIDGE_RETURN_IF_ERROR(b.requireOutputs(1));
  MLBRIDGE_RETURN_IF_ERROR(b.dtypeIn(1, {DType::kInt32, DType::kInt64}));
  const Shape& data = b.in(0).shape;
  if (data.empty()) return b.error("data must have rank >= 1");
  int64_t a;
  MLBRIDGE_RETURN_IF_ERROR(b.attrInt("axis", 0, &a));
  MLBRIDGE_RETURN_IF_ERROR(b.axis(a, data.size(), "axis", &a));
  const int64_t len = data[static_cast<size_t>(a)];
  if (b.in(1).isConstant()) {
    Tensor t = b.in(1).tensor();
    for (size_t k = 0; k < t.count(); ++k) {
      int64_t i = tensorElementAsInt64(t, k);
      if (i < -len || i >= len)
        return b.error("index " + std::to_string(i) + " is out of range for axis " + std::to_string(a) +
                       " of size " + std::to_string(len));
    }
  }
  Shape out(data.begin(), data.begin() + a);
  for (int64_t d : b.in(1).shape) out.push_back(d);
  for (size_t d = static_cast<size_t>(a) + 1; d < data.size(); ++d) out.push_back(data[d]);
  setI(b.node, "axis", a);
  keepInputs(b, {0, 1});
  return b.setOutput(0, b.in(0).dtype, out);
}

Status importSlice(NodeBuilder& b) {
  MLBRIDGE_RETURN_IF_ERROR(b.requireCount(3, 5));
  MLBRIDGE_RETURN_IF_ERROR(b.requireOutputs(1));
  const Shape& in = b.in(0).shape;
  std::vector<int64_t> starts, ends, axes, steps;
  MLBRIDGE_RETURN_IF_ERROR(b.constInts(1, "starts", &starts));
  MLBRIDGE_RETURN_IF_ERROR(b.constInts(2, "ends", &ends));
  if (b.has(3)) MLBRIDGE_RETURN_IF_ERROR(b.constInts(3, "axes", &axes));
  else for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (b.has(4)) MLBRIDGE_RETURN_IF_ERROR(b.constInts(4, "steps", &steps));
  else steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return b.error("starts, ends, axes and steps must have the same length");
  std::vector<int64_t> fullStart(in.size(), 0), fullEnd(in.begin(), in.end()), fullStep(in.size(), 1);
  std::vector<bool> seen(in.size(), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t ax;
    MLBRIDGE_RETURN_IF_ERROR(b.axis(axes[i], in.size(), "axis", &ax));
    size_t d = static_cast<size_t>(ax);
    if (seen[d]) return b.error("axes contains an axis twice");
    seen[d] = true;
    int64_t dim = in[d], st = steps[i], s = starts[i], e = ends[i];
    if (st == 0) return b.error("steps must not be 0");
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (st > 0) {
      s = std::min(std::max<int64_t>(s, 0), dim);
      e = std::min(std::max<int64_t>(e, 0), dim);
    } else {
      s = std::min(std::max<int64_t>(s, 0), dim - 1);
      e = std::min(std::max<int64_t>(e, -1), dim - 1);
    }
    fullStart[d] = s;
    fullEnd[d] = e;
    fullStep[d] = st;
  }
  Shape out(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    // s and e are clamped to [-1, dim], so only the step can be extreme
    // (INT64_MIN included): count in unsigned arithmetic, ceil(span / |step|).
    const int64_t s = fullStart[d], e = fullEnd[d], st = fullStep[d];
    const int64_t span = st > 0 ? e - s : s - e;
    const uint64_t n = span <= 0 ? 0 : (static_cast<uint64_t>(span) - 1) / checked::magnitude(st) + 1;
    out[d] = static_cast<int64_t>(n);
    // With at most one element the step is never applied: make it 1 so that
    // strides computed from it (lowerSlice) stay within the tensor.
    if (n <= 1) fullStep[d] = 1;
    if (n == 0) fullStart[d] = 0;
  }
  setIs(b.node, "starts", fullStart);
  setIs(b.node, "ends", fullEnd);
  setIs(b.node, "steps", fullStep);
  keepInputs(b, {0});
  return b.setOutput(0, b.in(0).dtype, out);
}

Status importExpand(NodeBuilder& b) {
  MLBRIDGE_RETURN_IF_ERROR(b.requireCount(2, 2));
  MLBRIDGE_RETURN_IF_ERROR(b.requireOutputs(1));
  std::vector<int64_t> shape;
  MLBRIDGE_RETURN_IF_ERROR(b.constInts(1, "shape", &shape));
  for (int64_t d : shape)
    if (d < 0) return b.error("shape entries must be >= 0");
  Shape out;
  if (!broadcastShapes(b.in(0).shape, Shape(shape.begin(), shape.end()), &out))
    return b.error("cannot expand " + shapeString(b.in(0).shape) + " to " + shapeString(Shape(shape.begin(), shape.end())));
  setIs(b.node, "shape", out);
  keepInputs(b, {0});
  return b.setOutput(0, b.in(0).dtype, out);
}

Status importTile(NodeBuilder& b) {
  MLBRIDGE_RETURN_IF_ERROR(b.requireCount(2, 2));
  MLBRIDGE_RETURN_IF_ERROR(b.requireOutputs(1));
  std::vector<int64_t> reps;
  MLBRIDGE_RETURN_IF_ERROR(b.constInts(1, "repeats", &reps));
  const Shape& in = b.in(0).shape;
  if (reps.size() != in.size()) return b.error("repeats must have one entry per input dimension");
  if (2 * in.size() > static_cast<size_t>(kMaxRank)) return b.unsupported("Tile supports rank up to 4");
  Shape out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (reps[d] < 0) return b.error("repeats must be >= 0");
    if (in[d] != 0 && reps[d] > std::numeric_limits<int64_t>::max() / in[d]) return b.error("output too large");
    out.push_back(in[d] * reps[d]);
  }
  setIs(b.node, "repeats", reps);
  keepInputs(b, {0});
  return b.setOutput(0, b.in(0).dtype, out);
}

Status importSplit(NodeBuilder& b) {
  MLBRIDGE_RETURN_IF_ERROR(b.requireCount(1, 2));
  const Shape& in = b.in(0).shape;
  int64_t a, numOutputs;
  MLBRIDGE_RETURN_IF_ERROR(b.attrInt("axis", 0, &a));
  MLBRIDGE_RETURN_IF_ERROR(b.axis(a, in.size(), "axis", &a));
  const AttributeDesc* no = b.opset() >= 18 ? b.attr("num_outputs") : nullptr;
  if (no && no->type != AttrType::kInt) return b.typeError(*no, "INT");
  numOutputs = static_cast<int64_t>(b.outs.size());
  if (numOutputs == 0) return b.error("has no output");
  const int64_t dim = in[static_cast<size_t>(a)];
  std::vector<int64_t> sizes;
  if (b.has(1)) {
    MLBRIDGE_RETURN_IF_ERROR(b.constInts(1, "split", &sizes));
    if (static_cast<int64_t>(sizes.size()) != numOutputs) return b.error("'split' needs one entry per output");
  } else if (no) {
    if (no->i != numOutputs) return b.error("num_outputs does not match the number of outputs");
    int64_t chunk = (dim + numOutputs - 1) / numOutputs;
    for (int64_t k = 0; k < numOutputs; ++k) sizes.push_back(std::max<int64_t>(0, std::min(chunk, dim - k * chunk)));
  } else {
    if (dim % numOutputs != 0)
      return b.error("dimension " + std::to_string(dim) + " does not split evenly into " + std::to_string(numOutputs));
    sizes.assign(static_cast<size_t>(numOutputs), dim / numOutputs);
  }
  int64_t sum = 0;
  for (int64_t s : sizes) {
    if (s < 0) return b.error("split sizes must be >= 0");
    if (!checked::add(sum, s, &sum)) return b.error("split sizes overflow");
  }
  if (sum != dim) return b.error("split sizes sum to " + std::to_string(sum) + ", dimension is " + std::to_string(dim));
  setI(b.node, "axis", a);
  setIs(b.node, "split", sizes);
  keepInputs(b, {0});
  for (size_t k = 0; k < sizes.size(); ++k) {
    Shape s = in;
    s[static_cast<size_t>(a)] = sizes[k];
    MLBRIDGE_RETURN_IF_ERROR(b.setOutput(k, b.in(0).dtype, s));
  }
  return Status::OK();
}

Status importCast(NodeBuilder& b) {
  MLBRIDGE_RETURN_IF_ERROR(b.requireCount(1, 1));
  MLBRIDGE_RETURN_IF_ERROR(b.requireOutputs(1));
  const AttributeDesc* to = b.attr("to");
  if (!to) return b.error("attribute 'to' is required");
  if (to->type != AttrType::kInt) return b.typeError(*to, "INT");
  int64_t ignored;
  std::string ignoredMode;
  MLBRIDGE_RETURN_IF_ERROR(b.attrInt("saturate", 1, &ignored));  // float8 targets only
  MLBRIDGE_RETURN_IF_ERROR(b.attrString("round_mode", "up", &ignoredMode));  // float8e8m0 only
  DType t = onnx::dtypeFromOnnx(static_cast<int32_t>(to->i));
  if (t == DType::kInvalid) return b.unsupported("cast to " + onnx::onnxTypeName(static_cast<int32_t>(to->i)) + " is not supported");
  if (b.in(0).dtype == DType::kInvalid) return b.unsupported("unsupported input type");
  setI(b.node, "to", static_cast<int64_t>(t));
  keepInputs(b, {0});
  return b.setOutput(0, t, b.in(0).shape);
}

Status importArg(NodeBuilder& b) {
  MLBRIDGE_RETURN_IF_ERROR(b.requireCount(1, 1));
  MLBRIDGE_RETURN_IF_ERROR(b.requireOutputs(1));
  MLBRIDGE_RETURN_IF_ERROR(b.dtypeIn(0, {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64, DType::kInt8,
                                         DType::kUInt8}));
  const Shape& in = b.in(0).shape;
  if (in.empty()) return b.error("input must have rank >= 1");
  int64_t a, keep, last;
  MLBRIDGE_RETURN_IF_ERROR(b.attrInt("axis", 0, &a));
  MLBRIDGE_RETURN_IF_ERROR(b.attrInt("keepdims", 1, &keep));
  MLBRIDGE_RETURN_IF_ERROR(b.attrInt("select_last_index", 0, &last));
  MLBRIDGE_RETURN_IF_ERROR(b.axis(a, in.size(), "axis", &a));
  if (in[static_cast<size_t>(a)] == 0) return b.error("cannot take the arg max/min of an empty axis");
  Shape out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (static_cast<int64_t>(d) == a) {
      if (keep) out.push_back(1);
    } else {
      out.push_back(in[d]);
    }
  }
  setI(b.node, "axis", a);
  setI(b.node, "keepdims", keep ? 1 : 0);
  setI(b.node, "select_last_index", last ? 1 : 0);
  keepInputs(b, {0});
  return b.setOutput(0, DType::kInt64, out);
}

Status importReduce(NodeBuilder& b) {
  const Op op = b.node.op;
  const bool axesInput = op == Op::kReduceSum || b.opset() >= 18;
  MLBRIDGE_RETURN_IF_ERROR(b.requireCount(1, axesInput ? 2 : 1));
  MLBRIDGE_RETURN_IF_ERROR(b.requireOutputs(1));
  MLBRIDGE_RETURN_IF_ERROR(b.dtypeIn(0, {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64, DType::kUInt32,
                                         DType::kUInt64}));
  const Shape& in = b.in(0).shape;
  std::vector<int64_t> axes;
  int64_t keep, noop = 0;
  MLBRIDGE_RETURN_IF_ERROR(b.attrInt("keepdims", 1, &keep));
  if (axesInput) {
    MLBRIDGE_RETURN_IF_ERROR(b.attrInt("noop_with_empty_axes", 0, &noop));
    if (b.has(1)) MLBRIDGE_RETURN_IF_ERROR(b.constInts(1, "axes", &axes));
  } else {
    bool present;
    MLBRIDGE_RETURN_IF_ERROR(b.attrInts("axes", &axes, &present));
  }
  if (axes.empty() && !noop)
    for (size_t d = 0; d < in.size(); ++d) axes.push_back(static_cast<int64_t>(d));
  MLBRIDGE_RETURN_IF_ERROR(b.axes(&axes, in.size(), "axes"));
  Shape out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(d))) {
      if (keep) out.push_back(1);
    } else {
      out.push_back(in[d]);
    }
  }
  if (axes.empty()) out = in;
  setIs(b.node, "axes", axes);
  setI(b.node, "keepdims", keep ? 1 : 0);
  keepInputs(b, {0});
  return b.setOutput(0, b.in(0).dtype, out);
}

Status importLayerNorm(NodeBuilder& b) {
  MLBRIDGE_RETURN_IF_ERROR(b.requireCount(2, 3));
  MLBRIDGE_RETURN_IF_ERROR(b.requireOutputs(3));
  if (b.wantsOutput(1) || b.wantsOutput(2)) return b.unsupported("the Mean and InvStdDev outputs are not supported");
  MLBRIDGE_RETURN_IF_ERROR(b.dtypeIn(0, kFloats));
  MLBRIDGE_RETURN_IF_ERROR(b.sameType(0, 1));
  if (b.has(2)) MLBRIDGE_RETURN_IF_ERROR(b.sameType(0, 2));
  int64_t a, stash;
  double eps;
  MLBRIDGE_RETURN_IF_ERROR(b.attrInt("axis", -1, &a));
  MLBRIDGE_RETURN_IF_ERROR(b.attrFloat("epsilon", 1e-5, &eps));
  MLBRIDGE_RETURN_IF_ERROR(b.attrInt("stash_type", 1, &stash));  // we always accumulate in double
  const Shape& in = b.in(0).shape;
  if (in.empty()) return b.error("input must have rank >= 1");
  MLBRIDGE_RETURN_IF_ERROR(b.axis(a, in.size(), "axis", &a));
  size_t n = elementCount(Shape(in.begin() + a, in.end()));
  for (size_t i = 1; i <= 2; ++i) {
    if (!b.has(i)) continue;
    size_t c = b.in(i).count();
    if (c != n && c != 1) return b.unsupported("Scale and B must have the normalized shape (or be scalars)");
  }
  setI(b.node, "axis", a);
  setF(b.node, "epsilon", eps);
  b.node.inputs = {b.id(0), b.id(1)};
  if (b.has(2)) b.node.inputs.push_back(b.id(2));
  return b.setOutput(0, b.in(0).dtype, in);
}

Status importBatchNorm(NodeBuilder& b) {
  MLBRIDGE_RETURN_IF_ERROR(b.requireCount(5, 5));
  MLBRIDGE_RETURN_IF_ERROR(b.requireOutputs(3));
  if (b.wantsOutput(1) || b.wantsOutput(2)) return b.unsupported("training outputs are not supported");
  int64_t training;
  double eps, momentum;
  MLBRIDGE_RETURN_IF_ERROR(b.attrInt("training_mode", 0, &training));
  MLBRIDGE_RETURN_IF_ERROR(b.attrFloat("epsilon", 1e-5, &eps));
  MLBRIDGE_RETURN_IF_ERROR(b.attrFloat("momentum", 0.9, &momentum));
  if (training) return b.unsupported("training_mode=1 is not supported (inference only)");
  MLBRIDGE_RETURN_IF_ERROR(b.dtypeIn(0, {DType::kFloat32}));
  const Shape& in = b.in(0).shape;
  if (in.size() < 2) return b.error("input must have rank >= 2");
  const char* names[] = {"", "scale", "B", "input_mean", "input_var"};
  for (size_t i = 1; i <= 4; ++i) {
    Tensor t;
    MLBRIDGE_RETURN_IF_ERROR(b.constInput(i, names[i], &t));
    if (t.dtype != DType::kFloat32 || t.shape != Shape{in[1]})
      return b.error(std::string("'") + names[i] + "' must be float [" + std::to_string(in[1]) + "]");
  }
  setF(b.node, "epsilon", eps);
  keepInputs(b, {0, 1, 2, 3, 4});
  return b.setOutput(0, DType::kFloat32, in);
}

// ---- recurrent ------------------------------------------------------------------

Status importRnn(NodeBuilder& b) {
  const bool gru = b.node.op == Op::kGRU;
  const int64_t G = gru ? 3 : 4;
  MLBRIDGE_RETURN_IF_ERROR(b.requireCount(3, gru ? 6 : 8));
  MLBRIDGE_RETURN_IF_ERROR(b.requireOutputs(gru ? 2 : 3));
  MLBRIDGE_RETURN_IF_ERROR(b.dtypeIn(0, {DType::kFloat32}));
  std::vector<float> actAlpha, actBeta;
  std::vector<std::string> acts;
  bool present;
  MLBRIDGE_RETURN_IF_ERROR(b.attrFloats("activation_alpha", &actAlpha, &present));
  if (!actAlpha.empty()) return b.unsupported("attribute 'activation_alpha' is not supported");
  MLBRIDGE_RETURN_IF_ERROR(b.attrFloats("activation_beta", &actBeta, &present));
  if (!actBeta.empty()) return b.unsupported("attribute 'activation_beta' is not supported");
  MLBRIDGE_RETURN_IF_ERROR(b.attrStrings("activations", &acts, &present));
  double clip;
  std::string direction;
  int64_t hidden, layout, inputForget = 0, lbr = 0;
  MLBRIDGE_RETURN_IF_ERROR(b.attrFloat("clip", 0, &clip));
  MLBRIDGE_RETURN_IF_ERROR(b.attrString("direction", "forward", &direction));
  MLBRIDGE_RETURN_IF_ERROR(b.attrInt("hidden_size", -1, &hidden));
  MLBRIDGE_RETURN_IF_ERROR(b.attrInt("layout", 0, &layout));
  if (gru) MLBRIDGE_RETURN_IF_ERROR(b.attrInt("linear_before_reset", 0, &lbr));
  else MLBRIDGE_RETURN_IF_ERROR(b.attrInt("input_forget", 0, &inputForget));
  if (inputForget) return b.unsupported("input_forget=1 is not supported");
  if (clip < 0) return b.error("clip must be positive");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    return b.error("direction must be forward, reverse or bidirectional, got '" + direction + "'");
  if (layout != 0 && layout != 1) return b.error("layout must be 0 or 1");
  const int64_t dirs = direction == "bidirectional" ? 2 : 1;
  const size_t perDir = gru ? 2 : 3;
  std::vector<std::string> normActs;
  if (present) {
    if (acts.size() != perDir * static_cast<size_t>(dirs))
      return b.error("activations needs " + std::to_string(perDir * static_cast<size_t>(dirs)) + " entries");
    for (size_t k = 0; k < acts.size(); ++k) {
      std::string a = lower(acts[k]);
      std::string norm = a == "sigmoid" ? "Sigmoid" : a == "tanh" ? "Tanh" : a == "relu" ? "Relu" : "";
      if (norm.empty()) return b.unsupported("activation '" + acts[k] + "' is not supported (Sigmoid, Tanh, Relu)");
      if (k < perDir) normActs.push_back(norm);
      else if (normActs[k - perDir] != norm) return b.unsupported("different activations per direction are not supported");
    }
  } else {
    normActs = gru ? std::vector<std::string>{"Sigmoid", "Tanh"} : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  }
  const Shape& X = b.in(0).shape;
  if (X.size() != 3) return b.error("X must be 3-D, got " + shapeString(X));
  const int64_t seq = layout == 0 ? X[0] : X[1], batch = layout == 0 ? X[1] : X[0], input = X[2];
  Tensor W, R;
  MLBRIDGE_RETURN_IF_ERROR(b.constInput(1, "W", &W));
  MLBRIDGE_RETURN_IF_ERROR(b.constInput(2, "R", &R));
  if (W.dtype != DType::kFloat32 || R.dtype != DType::kFloat32) return b.error("W and R must be float");
  if (W.shape.size() != 3 || W.shape[0] != dirs || W.shape[2] != input || W.shape[1] % G != 0)
    return b.error("W has shape " + shapeString(W.shape) + ", expected [" + std::to_string(dirs) + ", " +
                   std::to_string(G) + "*hidden_size, " + std::to_string(input) + "]");
  if (hidden < 0) hidden = W.shape[1] / G;
  if (hidden <= 0) return b.error("hidden_size must be positive");
  // W's rows (bounded by the tensor limit) bound hidden_size before any product.
  if (hidden > W.shape[1] / G)
    return b.error("hidden_size " + std::to_string(hidden) + " does not match W " + shapeString(W.shape));
  const Shape wShape{dirs, G * hidden, input}, rShape{dirs, G * hidden, hidden};
  if (W.shape != wShape) return b.error("W has shape " + shapeString(W.shape) + ", expected " + shapeString(wShape));
  if (R.shape != rShape) return b.error("R has shape " + shapeString(R.shape) + ", expected " + shapeString(rShape));
  if (b.has(3)) {
    Tensor B;
    MLBRIDGE_RETURN_IF_ERROR(b.constInput(3, "B", &B));
    Shape bShape{dirs, 2 * G * hidden};
    if (B.dtype != DType::kFloat32 || B.shape != bShape)
      return b.error("B has shape " + shapeString(B.shape) + ", expected " + shapeString(bShape));
  }
  if (b.has(4)) {
    Tensor lens;
    Status s = b.constInput(4, "sequence_lens", &lens);
    bool ok = s.ok() && (lens.dtype == DType::kInt32 || lens.dtype == DType::kInt64) && lens.shape == Shape{batch};
    for (size_t k = 0; ok && k < lens.count(); ++k) ok = tensorElementAsInt64(lens, k) == seq;
    if (!ok) return b.unsupported("sequence_lens must be a constant equal to the sequence length for every batch entry");
  }
  const Shape state = layout == 0 ? Shape{dirs, batch, hidden} : Shape{batch, dirs, hidden};
  for (size_t i : {size_t(5), size_t(6)}) {
    if (gru && i == 6) break;
    if (!b.has(i)) continue;
    if (b.in(i).dtype != DType::kFloat32 || b.in(i).shape != state)
      return b.error(std::string(i == 5 ? "initial_h" : "initial_c") + " has shape " + shapeString(b.in(i).shape) +
                     ", expected " + shapeString(state));
  }
  if (!gru && b.has(7)) {
    Tensor P;
    MLBRIDGE_RETURN_IF_ERROR(b.constInput(7, "P", &P));
    if (P.dtype != DType::kFloat32 || P.shape != Shape{dirs, 3 * hidden})
      return b.error("P has shape " + shapeString(P.shape) + ", expected " + shapeString(Shape{dirs, 3 * hidden}));
  }
  Node& n = b.node;
  setI(n, "hidden_size", hidden);
  setS(n, "direction", direction);
  setI(n, "layout", layout);
  setF(n, "clip", clip);
  n.attrs["activations"] = AttrValue::ofStrings(normActs);
  if (gru) setI(n, "linear_before_reset", lbr ? 1 : 0);
  // Inputs keep their ONNX positions; sequence_lens (validated) is dropped.
  n.inputs.clear();
  for (size_t i = 0; i < (gru ? 6u : 8u); ++i) n.inputs.push_back(i == 4 ? -1 : b.id(i));
  while (!n.inputs.empty() && n.inputs.back() < 0) n.inputs.pop_back();
  const Shape y = layout == 0 ? Shape{seq, dirs, batch, hidden} : Shape{batch, seq, dirs, hidden};
  MLBRIDGE_RETURN_IF_ERROR(b.setOutput(0, DType::kFloat32, y));
  MLBRIDGE_RETURN_IF_ERROR(b.setOutput(1, DType::kFloat32, state));
  if (!gru) MLBRIDGE_RETURN_IF_ERROR(b.setOutput(2, DType::kFloat32, state));
  return Status::OK();
}

// ---- load-time constants --------------------------------------------------------------

Status importConstant(NodeBuilder& b) {
  MLBRIDGE_RETURN_IF_ERROR(b.requireCount(0, 0));
  MLBRIDGE_RETURN_IF_ERROR(b.requireOutputs(1));
  Tensor t;
  bool present;
  int found = 0;
  MLBRIDGE_RETURN_IF_ERROR(b.attrTensor("value", &t, &present));
  found += present;
  if (const AttributeDesc* a = b.attr("value_float")) {
    if (a->type != AttrType::kFloat) return b.typeError(*a, "FLOAT");
    t = makeTensor(DType::kFloat32, {});
    if (t.data) *std::const_pointer_cast<Buffer>(t.data)->as<float>() = a->f;
    ++found;
  }
  if (const AttributeDesc* a = b.attr("value_floats")) {
    if (a->type != AttrType::kFloats) return b.typeError(*a, "FLOATS");
    t = makeTensor(DType::kFloat32, {static_cast<int64_t>(a->floats.size())});
    if (t.data && !a->floats.empty())
      std::memcpy(std::const_pointer_cast<Buffer>(t.data)->data(), a->floats.data(), a->floats.size() * 4);
    ++found;
  }
  if (const AttributeDesc* a = b.attr("value_int")) {
    if (a->type != AttrType::kInt) return b.typeError(*a, "INT");
    t = makeTensor(DType::kInt64, {});
    if (t.data) *std::const_pointer_cast<Buffer>(t.data)->as<int64_t>() = a->i;
    ++found;
  }
  if (const AttributeDesc* a = b.attr("value_ints")) {
    if (a->type != AttrType::kInts) return b.typeError(*a, "INTS");
    t = makeTensor(DType::kInt64, {static_cast<int64_t>(a->ints.size())});
    if (t.data && !a->ints.empty())
      std::memcpy(std::const_pointer_cast<Buffer>(t.data)->data(), a->ints.data(), a->ints.size() * 8);
    ++found;
  }
  if (b.attr("value_string") || b.attr("value_strings")) return b.unsupported("string constants are not supported");
  if (b.attr("sparse_value")) return b.unsupported("sparse constants are not supported");
  if (found != 1) return b.error("needs exactly one value attribute");
  if (!t.data) return resourceExhausted(b.describe() + ": out of memory");
  if (t.shape.size() > static_cast<size_t>(kMaxRank)) return b.unsupported("rank above " + std::to_string(kMaxRank));
  return b.setConstant(0, t);
}

Status importShape(NodeBuilder& b) {
  MLBRIDGE_RETURN_IF_ERROR(b.requireCount(1, 1));
  MLBRIDGE_RETURN_IF_ERROR(b.requireOutputs(1));
  const Shape& in = b.in(0).shape;
  const int64_t r = static_cast<int64_t>(in.size());
  int64_t start, end;
  MLBRIDGE_RETURN_IF_ERROR(b.attrInt("start", 0, &start));
  MLBRIDGE_RETURN_IF_ERROR(b.attrInt("end", r, &end));
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::min(std::max<int64_t>(start, 0), r);
  end = std::min(std::max<int64_t>(end, 0), r);
  const int64_t n = std::max<int64_t>(end - start, 0);
  Tensor t = makeTensor(DType::kInt64, {n});
  if (!t.data) return resourceExhausted(b.describe() + ": out of memory");
  for (int64_t k = 0; k < n; ++k)
    std::const_pointer_cast<Buffer>(t.data)->as<int64_t>()[k] = in[static_cast<size_t>(start + k)];
  return b.setConstant(0, t);
}

Status importSize(NodeBuilder& b) {
  MLBRIDGE_RETURN_IF_ERROR(b.requireCount(1, 1));
  MLBRIDGE_RETURN_IF_ERROR(b.requireOutputs(1));
  Tensor t = makeTensor(DType::kInt64, {});
  if (!t.data) return resourceExhausted(b.describe() + ": out of memory");
  *std::const_pointer_cast<Buffer>(t.data)->as<int64_t>() = static_cast<int64_t>(b.in(0).count());
  return b.setConstant(0, t);
}

Status importConstantOfShape(NodeBuilder& b) {
  MLBRIDGE_RETURN_IF_ERROR(b.requireCount(1, 1));
  MLBRIDGE_RETURN_IF_ERROR(b.requireOutputs(1));
  std::vector<int64_t> shape;
  MLBRIDGE_RETURN_IF_ERROR(b.constInts(0, "input", &shape));
  Tensor v;
  bool present;
  MLBRIDGE_RETURN_IF_ERROR(b.attrTensor("value", &v, &present));
  if (!present) {
    v = makeTensor(DType::kFloat32, {1});
    if (!v.data) return resourceExhausted(b.describe() + ": out of memory");
  }
  if (v.count() != 1) return b.error("'value' must hold exactly one element");
  Shape s(shape.begin(), shape.end());
  MLBRIDGE_RETURN_IF_ERROR(b.setOutput(0, v.dtype, s));
  MLBRIDGE_RETURN_IF_ERROR(b.chargeConstant(v.dtype, s));
  Tensor t = makeTensor(v.dtype, s);
  if (!t.data) return resourceExhausted(b.describe() + ": out of memory");
  const size_t es = dtypeSize(v.dtype);
  unsigned char* dst = std::const_pointer_cast<Buffer>(t.data)->as<unsigned char>();
  for (size_t k = 0; k < t.count(); ++k) std::memcpy(dst + k * es, v.data->data(), es);
  return b.setConstant(0, t);
}

Status importRange(NodeBuilder& b) {
  MLBRIDGE_RETURN_IF_ERROR(b.requireCount(3, 3));
  MLBRIDGE_RETURN_IF_ERROR(b.requireOutputs(1));
  int64_t stash;
  MLBRIDGE_RETURN_IF_ERROR(b.attrInt("stash_type", 1, &stash));
  Tensor s, l, d;
  MLBRIDGE_RETURN_IF_ERROR(b.constInput(0, "start", &s));
  MLBRIDGE_RETURN_IF_ERROR(b.constInput(1, "limit", &l));
  MLBRIDGE_RETURN_IF_ERROR(b.constInput(2, "delta", &d));
  const DType t = s.dtype;
  if (l.dtype != t || d.dtype != t) return b.error("start, limit and delta must have one type");
  if (t != DType::kFloat32 && t != DType::kFloat64 && t != DType::kInt16 && t != DType::kInt32 && t != DType::kInt64)
    return b.unsupported(std::string("type ") + dtypeName(t));
  if (s.count() != 1 || l.count() != 1 || d.count() != 1) return b.error("start, limit and delta must be scalars");
  double ds = tensorElementAsDouble(s, 0), dl = tensorElementAsDouble(l, 0), dd = tensorElementAsDouble(d, 0);
  if (dd == 0) return b.error("delta must not be 0");
  const bool isFloat = t == DType::kFloat32 || t == DType::kFloat64;
  const int64_t is = tensorElementAsInt64(s, 0), il = tensorElementAsInt64(l, 0), id = tensorElementAsInt64(d, 0);
  double count;
  if (isFloat) {
    count = std::ceil((dl - ds) / dd);
    if (!(count >= 0)) count = 0;
  } else {
    // Exact for the whole int64 line (double loses the low bits near
    // INT64_MAX): ceil(span / |delta|) in unsigned arithmetic.
    uint64_t c = 0;
    if (id > 0 && il > is) c = (static_cast<uint64_t>(il) - static_cast<uint64_t>(is) - 1) / checked::magnitude(id) + 1;
    if (id < 0 && is > il) c = (static_cast<uint64_t>(is) - static_cast<uint64_t>(il) - 1) / checked::magnitude(id) + 1;
    count = static_cast<double>(c);
  }
  if (count > static_cast<double>(b.maxBytes())) return b.error("output is too large");
  const int64_t n = static_cast<int64_t>(count);
  MLBRIDGE_RETURN_IF_ERROR(b.setOutput(0, t, {n}));
  MLBRIDGE_RETURN_IF_ERROR(b.chargeConstant(t, {n}));
  Tensor out = makeTensor(t, {n});
  if (!out.data) return resourceExhausted(b.describe() + ": out of memory");
  Buffer* buf = std::const_pointer_cast<Buffer>(out.data).get();
  for (int64_t k = 0; k < n; ++k) {
    // Integers: start + k * delta lies in [start, limit), so it fits; the
    // unsigned (wrapping) arithmetic only avoids an intermediate overflow.
    const int64_t iv = static_cast<int64_t>(static_cast<uint64_t>(is) +
                                            static_cast<uint64_t>(k) * static_cast<uint64_t>(id));
    switch (t) {
      case DType::kFloat32: buf->as<float>()[k] = static_cast<float>(ds + static_cast<double>(k) * dd); break;
      case DType::kFloat64: buf->as<double>()[k] = ds + static_cast<double>(k) * dd; break;
      case DType::kInt16: buf->as<int16_t>()[k] = static_cast<int16_t>(iv); break;
      case DType::kInt32: buf->as<int32_t>()[k] = static_cast<int32_t>(iv); break;
      default: buf->as<int64_t>()[k] = iv; break;
    }
  }
  return b.setConstant(0, out);
}

Status importNode(NodeBuilder& b) {
  switch (b.node.op) {
    case Op::kAbs: case Op::kCeil: case Op::kCos: case Op::kElu: case Op::kErf: case Op::kExp: case Op::kFloor:
    case Op::kGelu: case Op::kHardSigmoid: case Op::kHardSwish: case Op::kLeakyRelu: case Op::kLog: case Op::kMish:
    case Op::kNeg: case Op::kNot: case Op::kReciprocal: case Op::kRelu: case Op::kRound: case Op::kSelu:
    case Op::kSigmoid: case Op::kSign: case Op::kSin: case Op::kSoftplus: case Op::kSoftsign: case Op::kSqrt:
    case Op::kTanh:
      return importUnary(b);
    case Op::kClip: return importClip(b);
    case Op::kAdd: case Op::kSub: case Op::kMul: case Op::kDiv: case Op::kPow: case Op::kMax: case Op::kMin:
    case Op::kSum: case Op::kMean: case Op::kPRelu: case Op::kEqual: case Op::kLess: case Op::kGreater:
    case Op::kLessOrEqual: case Op::kGreaterOrEqual: case Op::kAnd: case Op::kOr: case Op::kXor: case Op::kMod:
      return importBinary(b);
    case Op::kWhere: return importWhere(b);
    case Op::kSoftmax: case Op::kLogSoftmax: return importSoftmax(b);
    case Op::kGemm: return importGemm(b);
    case Op::kMatMul: return importMatMul(b);
    case Op::kIdentity: return importView(b);
    case Op::kDropout: return importDropout(b);
    case Op::kReshape: return importReshape(b);
    case Op::kFlatten: return importFlatten(b);
    case Op::kSqueeze: return importSqueeze(b);
    case Op::kUnsqueeze: return importUnsqueeze(b);
    case Op::kTranspose: return importTranspose(b);
    case Op::kConcat: return importConcat(b);
    case Op::kGather: return importGather(b);
    case Op::kSlice: return importSlice(b);
    case Op::kExpand: return importExpand(b);
    case Op::kTile: return importTile(b);
    case Op::kSplit: return importSplit(b);
    case Op::kCast: return importCast(b);
    case Op::kArgMax: case Op::kArgMin: return importArg(b);
    case Op::kReduceSum: case Op::kReduceMean: case Op::kReduceMax: case Op::kReduceMin: case Op::kReduceProd:
    case Op::kReduceSumSquare:
      return importReduce(b);
    case Op::kLayerNormalization: return importLayerNorm(b);
    case Op::kBatchNormalization: return importBatchNorm(b);
    case Op::kLSTM: case Op::kGRU: return importRnn(b);
    case Op::kConstant: return importConstant(b);
    case Op::kShape: return importShape(b);
    case Op::kSize: return importSize(b);
    case Op::kConstantOfShape: return importConstantOfShape(b);
    case Op::kRange: return importRange(b);
    default: return b.unsupported("operator not implemented");
  }
}

bool isViewOp(Op op) {
  return op == Op::kIdentity || op == Op::kDropout || op == Op::kReshape || op == Op::kFlatten || op == Op::kSqueeze ||
         op == Op::kUnsqueeze;
}

Status checkOpset(const onnx::ModelDesc& m, const ImportOptions& opt, int64_t* opset) {
  *opset = -1;
  for (const auto& o : m.opsetImports)
    if (o.first.empty() || o.first == "ai.onnx") *opset = std::max(*opset, o.second);
  if (*opset < 0) return invalidArgument("the model imports no version of the default ONNX operator set (ai.onnx)");
  if (*opset < kMinOpset)
    return unimplemented("the model uses ONNX opset " + std::to_string(*opset) + "; this engine supports opsets " +
                         std::to_string(kMinOpset) + " to " + std::to_string(kNewestOpset) +
                         " (re-export with opset_version >= 13, or convert with onnx.version_converter)");
  if (*opset > kNewestOpset && !opt.allowNewerOpsets)
    return unimplemented("the model uses ONNX opset " + std::to_string(*opset) + ", newer than the newest this engine knows (" +
                         std::to_string(kNewestOpset) + "); set OnnxLoadOptions::allowNewerOpsets to try anyway");
  return Status::OK();
}

Status checkValueInfo(const onnx::ValueInfoDesc& vi, const char* what) {
  if (!vi.isTensor) return unimplemented(std::string(what) + " '" + vi.name + "' is not a tensor (sequences, maps and optionals are not supported)");
  if (onnx::dtypeFromOnnx(vi.elemType) == DType::kInvalid)
    return unimplemented(std::string(what) + " '" + vi.name + "' has unsupported element type " + onnx::onnxTypeName(vi.elemType));
  return Status::OK();
}

}  // namespace

StatusOr<std::vector<InputDecl>> declaredInputs(const onnx::ModelDesc& m) {
  std::set<std::string> inits;
  for (const auto& i : m.graph.initializers) inits.insert(i.name);
  std::vector<InputDecl> out;
  std::set<std::string> seen;
  for (const onnx::ValueInfoDesc& vi : m.graph.inputs) {
    if (inits.count(vi.name)) continue;
    if (vi.name.empty()) return invalidArgument("a graph input has no name");
    if (!seen.insert(vi.name).second) return invalidArgument("graph input '" + vi.name + "' is declared twice");
    MLBRIDGE_RETURN_IF_ERROR(checkValueInfo(vi, "graph input"));
    if (!vi.hasShape) return unimplemented("graph input '" + vi.name + "' has no shape (unknown rank is not supported)");
    if (vi.dims.size() > static_cast<size_t>(kMaxRank))
      return unimplemented("graph input '" + vi.name + "' has rank " + std::to_string(vi.dims.size()) +
                           ", above the supported " + std::to_string(kMaxRank));
    InputDecl d;
    d.name = vi.name;
    d.dtype = onnx::dtypeFromOnnx(vi.elemType);
    for (const onnx::DimDesc& dim : vi.dims) {
      if (dim.hasValue && dim.value < 0)
        return invalidArgument("graph input '" + vi.name + "' has a negative dimension");
      d.dims.push_back(dim.hasValue ? dim.value : -1);
      d.params.push_back(dim.hasValue ? std::string() : dim.param);
    }
    out.push_back(std::move(d));
  }
  return out;
}

StatusOr<Graph> importGraph(const onnx::ModelDesc& m, const std::vector<Shape>& inputShapes, const ImportOptions& opt) {
  Graph g;
  MLBRIDGE_RETURN_IF_ERROR(checkOpset(m, opt, &g.opset));
  if (m.graph.hasSparseInitializers) return unimplemented("sparse initializers are not supported");
  StatusOr<std::vector<InputDecl>> decls = declaredInputs(m);
  if (!decls.ok()) return decls.status();
  if (decls->size() != inputShapes.size()) return internalError("input shapes do not match the graph inputs");

  std::unordered_map<std::string, int> byName;
  std::unordered_map<std::string, Status> badInitializers;
  std::vector<size_t> depth;  // per value: longest chain of nodes producing it
  size_t folded = 0;          // bytes of constants computed so far (ImportOptions::maxFoldedBytes)
  auto addValue = [&](Value v) {
    g.values.push_back(std::move(v));
    depth.push_back(0);
    return static_cast<int>(g.values.size() - 1);
  };
  for (const onnx::InitializerDesc& init : m.graph.initializers) {
    if (init.name.empty()) return invalidArgument("an initializer has no name");
    if (byName.count(init.name) || badInitializers.count(init.name))
      return invalidArgument("initializer '" + init.name + "' is defined twice");
    if (!init.status.ok()) {
      badInitializers.emplace(init.name, init.status);
      continue;
    }
    if (init.tensor.shape.size() > static_cast<size_t>(kMaxRank))
      return unimplemented("initializer '" + init.name + "' has rank above " + std::to_string(kMaxRank));
    Value v;
    v.name = init.name;
    v.dtype = init.tensor.dtype;
    v.shape = init.tensor.shape;
    v.constant = init.tensor.data;
    byName[init.name] = addValue(std::move(v));
  }
  for (size_t i = 0; i < decls->size(); ++i) {
    const InputDecl& d = (*decls)[i];
    const Shape& s = inputShapes[i];
    size_t count;
    if (s.size() != d.dims.size() || !shapeElementCount(s, dtypeSize(d.dtype), opt.maxTensorBytes, &count))
      return invalidArgument("graph input '" + d.name + "': invalid shape " + shapeString(s));
    for (size_t k = 0; k < s.size(); ++k)
      if (d.dims[k] >= 0 && d.dims[k] != s[k])
        return invalidArgument("graph input '" + d.name + "' has shape " + shapeString(d.dims) + ", cannot bind " +
                               shapeString(s));
    Value v;
    v.name = d.name;
    v.dtype = d.dtype;
    v.shape = s;
    v.graphInput = static_cast<int>(g.inputs.size());
    int id = addValue(std::move(v));
    byName[d.name] = id;
    g.inputs.push_back(id);
  }

  for (size_t ni = 0; ni < m.graph.nodes.size(); ++ni) {
    const NodeDesc& nd = m.graph.nodes[ni];
    auto where = [&]() {
      std::string s = "node #" + std::to_string(ni);
      if (!nd.name.empty()) s += " \"" + nd.name + "\"";
      std::string op = nd.domain.empty() || nd.domain == "ai.onnx" ? nd.opType : nd.domain + "." + nd.opType;
      return s + " (" + op + ")";
    };
    if (!nd.domain.empty() && nd.domain != "ai.onnx")
      return unimplemented(where() + ": operator domain '" + nd.domain + "' is not supported (only the default ONNX domain)");
    Op op;
    if (!opFromName(nd.opType, &op))
      return unimplemented(where() + ": unknown or unsupported operator '" + nd.opType + "'");
    if (std::chrono::steady_clock::now() > opt.deadline)
      return deadlineExceeded(where() + ": loading the model took longer than OnnxLoadOptions::loadTimeoutMs");
    std::vector<int> ids;
    for (const std::string& name : nd.inputs) {
      if (name.empty()) {
        ids.push_back(-1);
        continue;
      }
      auto it = byName.find(name);
      if (it == byName.end()) {
        auto bad = badInitializers.find(name);
        if (bad != badInitializers.end())
          return Status(bad->second.code(), where() + ": initializer '" + name + "': " + bad->second.message());
        return invalidArgument(where() + ": input '" + name +
                               "' is not produced by any earlier node, initializer or graph input");
      }
      ids.push_back(it->second);
    }
    size_t nodeDepth = 1;
    for (int id : ids)
      if (id >= 0) nodeDepth = std::max(nodeDepth, depth[static_cast<size_t>(id)] + 1);
    if (nodeDepth > opt.maxGraphDepth)
      return resourceExhausted(where() + ": the graph is deeper than " + std::to_string(opt.maxGraphDepth) +
                               " nodes (OnnxLoadOptions::maxGraphDepth)");
    NodeBuilder b(g, nd, static_cast<int>(ni), ids, opt, &folded);
    b.node.op = op;
    MLBRIDGE_RETURN_IF_ERROR(b.checkNoDuplicateAttributes());
    for (int id : ids)
      if (id >= 0 && g.value(id).dtype == DType::kInvalid) return b.unsupported("input of unsupported type");
    MLBRIDGE_RETURN_IF_ERROR(importNode(b));
    MLBRIDGE_RETURN_IF_ERROR(b.checkAllAttributesUsed());

    // Register outputs.
    Node node = std::move(b.node);
    node.outputs.clear();
    bool allConstant = true, anyOutput = false;
    for (size_t k = 0; k < nd.outputs.size(); ++k) {
      const std::string& name = nd.outputs[k];
      if (name.empty() || !b.outs[k].set) {
        if (!name.empty()) return internalError(node.describe() + ": output " + std::to_string(k) + " has no type");
        node.outputs.push_back(-1);
        continue;
      }
      if (byName.count(name) || badInitializers.count(name))
        return invalidArgument(node.describe() + ": output '" + name + "' is already defined");
      Value v;
      v.name = name;
      v.dtype = b.outs[k].dtype;
      v.shape = b.outs[k].shape;
      v.constant = b.outs[k].constant;
      if (!v.constant) allConstant = false;
      anyOutput = true;
      int id = addValue(std::move(v));
      depth[static_cast<size_t>(id)] = nodeDepth;
      byName[name] = id;
      node.outputs.push_back(id);
    }
    if (!anyOutput) continue;
    if (allConstant) continue;  // computed by the importer (Constant, Shape, ...)
    bool inputsConstant = true;
    for (int id : node.inputs)
      if (id >= 0 && !g.value(id).isConstant()) inputsConstant = false;
    if (inputsConstant) {
      // Constant folding: view ops share the input's bytes; others run once.
      if (isViewOp(node.op) || (node.op == Op::kCast && g.value(node.inputs[0]).dtype == g.value(node.outputs[0]).dtype)) {
        g.values[static_cast<size_t>(node.outputs[0])].constant = g.value(node.inputs[0]).constant;
        continue;
      }
      size_t outBytes = 0;
      for (int id : node.outputs)
        if (id >= 0) outBytes += g.value(id).bytes();
      MLBRIDGE_RETURN_IF_ERROR(chargeFolded(&folded, outBytes, opt, node.describe()));
      g.nodes.push_back(node);
      std::vector<Tensor> outs;
      Status s = evaluateConstantNode(g, g.nodes.back(), opt.maxTensorBytes, &outs);
      g.nodes.pop_back();
      MLBRIDGE_RETURN_IF_ERROR(s);
      for (size_t k = 0; k < node.outputs.size(); ++k)
        if (node.outputs[k] >= 0) g.values[static_cast<size_t>(node.outputs[k])].constant = outs[k].data;
      continue;
    }
    for (int id : node.outputs)
      if (id >= 0) g.values[static_cast<size_t>(id)].producer = static_cast<int>(g.nodes.size());
    g.nodes.push_back(std::move(node));
  }

  // Graph outputs.
  if (m.graph.outputs.empty()) return invalidArgument("the graph has no outputs");
  std::set<std::string> outNames;
  for (const onnx::ValueInfoDesc& vi : m.graph.outputs) {
    auto it = byName.find(vi.name);
    if (it == byName.end()) {
      auto bad = badInitializers.find(vi.name);
      if (bad != badInitializers.end())
        return Status(bad->second.code(), "graph output '" + vi.name + "': " + bad->second.message());
      return invalidArgument("graph output '" + vi.name + "' is not produced by any node");
    }
    if (!outNames.insert(vi.name).second) return invalidArgument("graph output '" + vi.name + "' is listed twice");
    const Value& v = g.value(it->second);
    if (vi.isTensor && vi.elemType != 0) {
      DType declared = onnx::dtypeFromOnnx(vi.elemType);
      if (declared != v.dtype)
        return invalidArgument("graph output '" + vi.name + "' is declared " + onnx::onnxTypeName(vi.elemType) +
                               " but computes " + dtypeName(v.dtype));
    }
    if (vi.isTensor && vi.hasShape) {
      bool match = vi.dims.size() == v.shape.size();
      for (size_t k = 0; match && k < vi.dims.size(); ++k)
        if (vi.dims[k].hasValue && vi.dims[k].value != v.shape[k]) match = false;
      if (!match) {
        Shape declared;
        for (const onnx::DimDesc& d : vi.dims) declared.push_back(d.hasValue ? d.value : -1);
        return invalidArgument("graph output '" + vi.name + "' is declared with shape " + shapeString(declared) +
                               " (-1: symbolic) but computes " + shapeString(v.shape));
      }
    }
    g.outputs.push_back(it->second);
  }

  // Dead-node removal: keep the nodes the outputs depend on.
  std::vector<bool> liveValue(g.values.size(), false), liveNode(g.nodes.size(), false);
  for (int v : g.outputs) liveValue[static_cast<size_t>(v)] = true;
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    bool live = false;
    for (int v : n.outputs)
      if (v >= 0 && liveValue[static_cast<size_t>(v)]) live = true;
    if (!live) continue;
    liveNode[i] = true;
    for (int v : n.inputs)
      if (v >= 0) liveValue[static_cast<size_t>(v)] = true;
  }
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (liveNode[i]) kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
  for (Value& v : g.values) v.producer = -1;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int v : g.nodes[i].outputs)
      if (v >= 0) g.values[static_cast<size_t>(v)].producer = static_cast<int>(i);
  return g;
}

}  // namespace engine
}  // namespace mlbridge
