// mlbridge-aot: ahead-of-time compilation of an .onnx model into plain C++
// (docs/aot.md).
//
//   mlbridge-aot model.onnx --name InlinerPolicy -o out/ [--dim batch=4]... [--default-dim N]
//
// Loads the model with the engine (src/engine: importer, shape inference,
// constant folding, fusion, weight packing, arena planning; the baseline
// kernel set so the plan does not depend on the build machine), then prints
// the Program as straight-line C++: every step becomes one call of a small
// inline kernel (the engine's own kernel sources, src/engine/kernel_params.inc,
// kernels_generic.inc and kernels_isa.inc, copied into the output after
// tools/aot/aot_prelude.inc) with a
// constant parameter block, every constant a 64-byte aligned static array.
// Writes out/<Name>.h and out/<Name>.cc. Output is a pure function of the
// model bytes, the options and this tool's version: byte-identical across runs.
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "engine/graph.h"
#include "engine/kernels.h"
#include "engine/program.h"
#include "mlbridge/onnx_runner.h"

#include "aot_text.h"  // generated: kAotPrelude, kAotModelHeader

using namespace mlbridge;
using namespace mlbridge::engine;

namespace {

const char* ctype(DType t) {
  switch (t) {
    case DType::kFloat32: return "float";
    case DType::kFloat64: return "double";
    case DType::kInt8: return "int8_t";
    case DType::kUInt8: return "uint8_t";
    case DType::kInt16: return "int16_t";
    case DType::kUInt16: return "uint16_t";
    case DType::kInt32: return "int32_t";
    case DType::kUInt32: return "uint32_t";
    case DType::kInt64: return "int64_t";
    case DType::kUInt64: return "uint64_t";
    case DType::kBool: return "uint8_t";
    default: return nullptr;
  }
}
// Template argument for casts (bool stays bool).
const char* castType(DType t) { return t == DType::kBool ? "bool" : ctype(t); }

std::string fmtFloat(double v, bool single) {
  if (std::isnan(v)) return single ? "std::numeric_limits<float>::quiet_NaN()" : "std::numeric_limits<double>::quiet_NaN()";
  if (std::isinf(v)) {
    std::string s = single ? "std::numeric_limits<float>::infinity()" : "std::numeric_limits<double>::infinity()";
    return v < 0 ? "-" + s : s;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  std::string s = buf;
  if (single) s += "f";
  return s;
}
std::string fmtInt(int64_t v) {
  if (v == INT64_MIN) return "(-9223372036854775807LL - 1)";
  return std::to_string(v) + "LL";
}
std::string fmtSize(size_t v) { return std::to_string(v) + "u"; }

struct Gen {
  const Graph& g;
  const Program& p;
  std::string name;     // C identifier
  std::string source;   // model file name
  std::ostringstream consts, params, run;
  std::vector<bool> used;
  std::vector<DType> slotType;
  std::map<const void*, int> constByPtr;
  std::string error;
  // Slots are renumbered in order of first use in the emitted code, so the
  // output does not depend on the order in which the planner created them.
  bool recording = true;
  std::vector<int> order;  // engine slot ids, by first use
  std::vector<int> remap;  // engine slot id -> emitted id

  Gen(const Graph& graph, const Program& prog) : g(graph), p(prog), used(prog.slots.size(), false),
      slotType(prog.slots.size(), DType::kInvalid) {
    for (size_t k = 0; k < p.slots.size(); ++k) {
      const Slot& s = p.slots[k];
      if (s.value >= 0) slotType[k] = g.value(s.value).dtype;
      if (s.kind == Slot::Kind::kConstant && s.constant && !constByPtr.count(s.constant))
        constByPtr[s.constant] = static_cast<int>(k);
    }
  }

  int idOf(int s) {
    if (s < 0) return -1;
    const size_t k = static_cast<size_t>(s);
    if (recording) {
      if (!used[k]) order.push_back(s);
      used[k] = true;
      return s;
    }
    return remap[k];
  }
  std::string slotRef(int s) { return std::to_string(idOf(s)); }
  // Name of the static array holding constant `ptr` (nullptr -> "nullptr").
  std::string constPtr(const void* ptr, DType t = DType::kFloat32) {
    if (!ptr) return "nullptr";
    auto it = constByPtr.find(ptr);
    if (it == constByPtr.end()) {
      error = "internal: constant pointer without a slot";
      return "nullptr";
    }
    if (slotType[static_cast<size_t>(it->second)] == DType::kInvalid) slotType[static_cast<size_t>(it->second)] = t;
    return "c" + std::to_string(idOf(it->second));
  }
  std::string stepWhere(size_t i) const { return p.stepWhat[i]; }
  DType nodeInType(const Step& st, size_t k = 0) const {
    if (st.node < 0) return DType::kInvalid;
    const Node& n = g.nodes[static_cast<size_t>(st.node)];
    return n.input(k) >= 0 ? g.value(n.inputs[k]).dtype : DType::kInvalid;
  }
  Op nodeOp(const Step& st) const { return st.node >= 0 ? g.nodes[static_cast<size_t>(st.node)].op : Op::kCount; }

  static std::string broadcast(const Broadcast& b, int operands) {
    std::ostringstream o;
    o << "{" << b.rank << ", {";
    for (int d = 0; d < kMaxRank; ++d) o << (d ? ", " : "") << fmtInt(b.dims[d]);
    o << "}, {";
    for (int k = 0; k < 3; ++k) {
      o << (k ? ", " : "") << "{";
      for (int d = 0; d < kMaxRank; ++d) o << (d ? ", " : "") << fmtInt(k < operands ? b.stride[k][d] : 0);
      o << "}";
    }
    o << "}, " << fmtSize(b.count) << "}";
    return o.str();
  }
  template <class T>
  std::string intArray(const std::string& nm, const char* type, const std::vector<T>& v) {
    consts << "alignas(64) const " << type << " " << nm << "[] = {";
    if (v.empty()) consts << "0";
    for (size_t i = 0; i < v.size(); ++i) {
      if (i % 12 == 0) consts << "\n    ";
      if constexpr (std::is_same<T, int64_t>::value) consts << fmtInt(v[i]) << ",";
      else if constexpr (std::is_same<T, size_t>::value) consts << fmtSize(v[i]) << ",";
      else consts << v[i] << ",";
    }
    consts << "};\n";
    return nm;
  }

  // One step -> one parameter block and one call. False (with `error`) if unsupported.
  bool emitStep(size_t i) {
    const Step& st = p.steps[i];
    const std::string k = st.kernel;
    const std::string P = "kP" + std::to_string(i);
    std::string fn;
    std::ostringstream pb;
    if (k == "copy") {
      auto& q = *static_cast<const CopyParams*>(st.params);
      pb << "const rt::CopyParams " << P << " = {" << slotRef(q.in) << ", " << slotRef(q.out) << ", " << fmtSize(q.bytes) << "};";
      fn = "rt::copyRun";
    } else if (k == "strided_copy" || k == "transpose") {
      auto& q = *static_cast<const StridedCopyParams*>(st.params);
      if (q.count == 0) return true;
      size_t es = p.slots[static_cast<size_t>(q.out)].bytes / q.count;
      const char* et = es == 1 ? "uint8_t" : es == 2 ? "uint16_t" : es == 4 ? "uint32_t" : es == 8 ? "uint64_t" : nullptr;
      if (!et) return fail(i, "element size " + std::to_string(es));
      pb << "const rt::StridedCopyParams " << P << " = {" << slotRef(q.in) << ", " << slotRef(q.out) << ", " << q.rank << ", {";
      for (int d = 0; d < kMaxRank; ++d) pb << (d ? ", " : "") << fmtInt(q.dims[d]);
      pb << "}, {";
      for (int d = 0; d < kMaxRank; ++d) pb << (d ? ", " : "") << fmtInt(q.stride[d]);
      pb << "}, " << fmtInt(q.offset) << ", " << fmtSize(q.count) << "};";
      fn = std::string("rt::stridedCopy<") + et + ">";
    } else if (k == "concat") {
      auto& q = *static_cast<const ConcatParams*>(st.params);
      std::vector<int> ins;
      for (size_t j = 0; j < q.nin; ++j) ins.push_back(idOf(q.in[j]));
      std::string a = intArray(P + "_in", "int", ins);
      std::string b = intArray(P + "_chunk", "size_t", std::vector<size_t>(q.chunk, q.chunk + q.nin));
      pb << "const rt::ConcatParams " << P << " = {" << slotRef(q.out) << ", " << fmtSize(q.outer) << ", "
         << fmtSize(q.nin) << ", " << a << ", " << b << "};";
      fn = "rt::concatRun";
    } else if (k == "gather") {
      auto& q = *static_cast<const GatherParams*>(st.params);
      pb << "const rt::GatherParams " << P << " = {" << slotRef(q.data) << ", " << slotRef(q.indices) << ", " << slotRef(q.out)
         << ", " << fmtSize(q.outer) << ", " << fmtSize(q.axisLen) << ", " << fmtSize(q.innerBytes) << ", "
         << fmtSize(q.nIdx) << ", " << (q.idx64 ? "true" : "false") << "};";
      fn = "rt::gatherRun";
    } else if (k == "binary") {
      auto& q = *static_cast<const BinaryParams*>(st.params);
      DType t = nodeInType(st);
      static const char* names[] = {"AddOp", "SubOp", "MulOp", "DivOp", "PowOp", "MaxOp", "MinOp", "PReluOp", "ModOp",
                                    "FModOp", "EqualOp", "LessOp", "GreaterOp", "LessEqOp", "GreaterEqOp", "AndOp",
                                    "OrOp", "XorOp"};
      int found = -1;
      for (int o = 0; o <= static_cast<int>(BinaryOp::kXor) && found < 0; ++o)
        if (binaryKernel(static_cast<BinaryOp>(o), t) == st.fn) found = o;
      if (found < 0 || !ctype(t)) return fail(i, "binary kernel not identified");
      const BinaryOp bop = static_cast<BinaryOp>(found);
      const std::string T = ctype(t);
      const std::string R = binaryIsComparison(bop) ? "uint8_t" : T;
      std::string op = std::string("rt::") + names[found];
      if (bop != BinaryOp::kAnd && bop != BinaryOp::kOr && bop != BinaryOp::kXor) op += "<" + T + ">";
      if (q.b >= 0 && slotType[static_cast<size_t>(q.b)] == DType::kInvalid) slotType[static_cast<size_t>(q.b)] = t;
      pb << "const rt::BinaryParams " << P << " = {" << slotRef(q.a) << ", " << slotRef(q.b) << ", " << slotRef(q.out)
         << ", " << broadcast(q.bc, 2) << "};";
      fn = "rt::binaryKernelFn<" + T + ", " + R + ", " + op + ">";
    } else if (k == "where") {
      auto& q = *static_cast<const WhereParams*>(st.params);
      size_t es = dtypeSize(slotType[static_cast<size_t>(q.out)]);
      const char* et = es == 1 ? "uint8_t" : es == 2 ? "uint16_t" : es == 4 ? "uint32_t" : es == 8 ? "uint64_t" : nullptr;
      if (!et) return fail(i, "element size");
      pb << "const rt::WhereParams " << P << " = {" << slotRef(q.cond) << ", " << slotRef(q.x) << ", " << slotRef(q.y)
         << ", " << slotRef(q.out) << ", " << broadcast(q.bc, 3) << "};";
      fn = std::string("rt::whereRun<") + et + ">";
    } else if (k == "unary") {
      auto& q = *static_cast<const UnaryParams*>(st.params);
      DType t = nodeInType(st);
      pb << "const rt::UnaryParams " << P << " = {" << slotRef(q.in) << ", " << slotRef(q.out) << ", " << fmtSize(q.count)
         << ", rt::UnaryOp(" << static_cast<int>(q.op) << "), " << fmtFloat(q.alpha, true) << ", " << fmtFloat(q.beta, true) << ", " << fmtFloat(q.dalpha, false) << ", "
         << fmtFloat(q.dbeta, false) << ", " << fmtInt(q.ilo) << ", " << fmtInt(q.ihi) << "};";
      // The engine's choice (lower.cc): vector kernels for float32 where they exist.
      if (q.op == UnaryOp::kNot) fn = "rt::notKernel";
      else if (t == DType::kFloat32 && unaryIsVectorized(q.op)) fn = "rt::simd::unaryKernel";
      else if (t == DType::kFloat32 || t == DType::kFloat64) fn = std::string("rt::unaryFloatKernel<") + ctype(t) + ">";
      else if (ctype(t)) fn = std::string("rt::unaryIntKernel<") + ctype(t) + ">";
      else return fail(i, "unary dtype");
    } else if (k == "cast") {
      auto& q = *static_cast<const CastParams*>(st.params);
      DType from = slotType[static_cast<size_t>(q.in)];
      DType to = slotType[static_cast<size_t>(q.out)];
      if (to == DType::kInvalid) to = nodeInType(st);
      if (castKernel(from, to) != st.fn || !ctype(from) || !ctype(to)) return fail(i, "cast not identified");
      slotType[static_cast<size_t>(q.out)] = to;
      pb << "const rt::CastParams " << P << " = {" << slotRef(q.in) << ", " << slotRef(q.out) << ", " << fmtSize(q.count) << "};";
      fn = std::string("rt::castRun<") + castType(from) + ", " + castType(to) + ">";
    } else if (k == "reduce") {
      auto& q = *static_cast<const ReduceParams*>(st.params);
      DType t = nodeInType(st);
      const char* op = nullptr;
      switch (nodeOp(st)) {
        case Op::kReduceSum: op = "kSum"; break;
        case Op::kReduceMean: op = "kMean"; break;
        case Op::kReduceMax: op = "kMax"; break;
        case Op::kReduceMin: op = "kMin"; break;
        case Op::kReduceProd: op = "kProd"; break;
        case Op::kReduceSumSquare: op = "kSumSquare"; break;
        default: break;
      }
      if (!op || !ctype(t)) return fail(i, "reduction not identified");
      std::string a = intArray(P + "_base", "int64_t", std::vector<int64_t>(q.base, q.base + q.nbase));
      std::string b = intArray(P + "_off", "int64_t", std::vector<int64_t>(q.offsets, q.offsets + q.noffsets));
      pb << "const rt::ReduceParams " << P << " = {" << slotRef(q.in) << ", " << slotRef(q.out) << ", "
         << fmtSize(q.nbase) << ", " << fmtSize(q.noffsets) << ", " << a << ", " << b << "};";
      fn = std::string("rt::reduceRun<") + ctype(t) + ", rt::ReduceOp::" + op + ">";
    } else if (k == "arg") {
      auto& q = *static_cast<const ArgParams*>(st.params);
      DType t = nodeInType(st);
      if (!ctype(t)) return fail(i, "dtype");
      pb << "const rt::ArgParams " << P << " = {" << slotRef(q.in) << ", " << slotRef(q.out) << ", " << fmtSize(q.outer)
         << ", " << fmtSize(q.len) << ", " << fmtSize(q.inner) << ", " << (q.selectLast ? "true" : "false") << "};";
      fn = std::string("rt::argRun<") + ctype(t) + ", " + (nodeOp(st) == Op::kArgMax ? "true" : "false") + ">";
    } else if (k == "softmax") {
      auto& q = *static_cast<const SoftmaxParams*>(st.params);
      pb << "const rt::SoftmaxParams " << P << " = {" << slotRef(q.in) << ", " << slotRef(q.out) << ", " << fmtSize(q.outer)
         << ", " << fmtSize(q.len) << ", " << fmtSize(q.inner) << ", " << (q.log ? "true" : "false") << "};";
      fn = nodeInType(st) == DType::kFloat64 ? "rt::softmaxF64" : "rt::simd::softmaxKernel";
    } else if (k == "layer_norm") {
      auto& q = *static_cast<const LayerNormParams*>(st.params);
      DType t = nodeInType(st);
      pb << "const rt::LayerNormParams " << P << " = {" << slotRef(q.x) << ", " << slotRef(q.scale) << ", " << slotRef(q.bias)
         << ", " << slotRef(q.out) << ", " << fmtSize(q.outer) << ", " << fmtSize(q.n) << ", " << fmtSize(q.scaleCount)
         << ", " << fmtSize(q.biasCount) << ", " << fmtFloat(q.epsilon, false) << "};";
      fn = std::string("rt::layerNormRun<") + (t == DType::kFloat64 ? "double" : "float") + ">";
    } else if (k == "channel_affine") {
      auto& q = *static_cast<const ChannelAffineParams*>(st.params);
      pb << "const rt::ChannelAffineParams " << P << " = {" << slotRef(q.in) << ", " << slotRef(q.out) << ", "
         << fmtSize(q.outer) << ", " << fmtSize(q.channels) << ", " << fmtSize(q.inner) << ", " << constPtr(q.scale) << ", "
         << constPtr(q.shift) << "};";
      fn = "rt::channelAffineRun";
    } else if (k == "matmul") {
      auto& q = *static_cast<const MatMulParams*>(st.params);
      DType t = nodeInType(st);
      if (!ctype(t)) return fail(i, "dtype");
      std::string a = intArray(P + "_aoff", "size_t", std::vector<size_t>(q.aOffset, q.aOffset + q.nbatch));
      std::string b = intArray(P + "_boff", "size_t", std::vector<size_t>(q.bOffset, q.bOffset + q.nbatch));
      pb << "const rt::MatMulParams " << P << " = {" << slotRef(q.a) << ", " << slotRef(q.b) << ", " << slotRef(q.out) << ", "
         << fmtSize(q.M) << ", " << fmtSize(q.K) << ", " << fmtSize(q.N) << ", " << fmtSize(q.nbatch) << ", " << a
         << ", " << b << ", " << fmtFloat(q.alpha, false) << "};";
      fn = std::string("rt::matMulRun<") + ctype(t) + ">";
    } else if (k == "dense") {
      auto& q = *static_cast<const DenseParams*>(st.params);
      pb << "const rt::DenseParams " << P << " = {" << slotRef(q.in) << ", " << slotRef(q.out) << ", " << fmtSize(q.M) << ", "
         << fmtSize(q.K) << ", " << fmtSize(q.N) << ", " << constPtr(q.panels) << ", " << constPtr(q.rows) << ", "
         << constPtr(q.bias) << ", rt::Act(" << static_cast<int>(q.act) << "), " << fmtFloat(q.alpha, true) << ", "
         << fmtFloat(q.beta, true) << ", rt::Post(" << static_cast<int>(q.post) << ")};";
      fn = "rt::simd::denseKernel";
    } else if (k == "lstm" || k == "gru") {
      auto& q = *static_cast<const RnnParams*>(st.params);
      pb << "const rt::RnnParams " << P << " = {" << (q.gru ? "true" : "false") << ", " << slotRef(q.x) << ", "
         << slotRef(q.initH) << ", " << slotRef(q.initC) << ", " << slotRef(q.y) << ", " << slotRef(q.yh) << ", "
         << slotRef(q.yc) << ", " << slotRef(q.scratch) << ", " << fmtSize(q.seq) << ", " << fmtSize(q.batch) << ", "
         << fmtSize(q.input) << ", " << fmtSize(q.hidden) << ", " << fmtSize(q.dirs) << ", " << q.layout << ", "
         << (q.linearBeforeReset ? "true" : "false") << ", rt::Act(" << static_cast<int>(q.f) << "), rt::Act("
         << static_cast<int>(q.g) << "), rt::Act(" << static_cast<int>(q.h) << "), " << fmtFloat(q.clip, true) << ", {";
      for (int d = 0; d < 2; ++d) {
        const RnnDirection& r = q.dir[d];
        pb << (d ? ", " : "") << "{" << (r.reverse ? "true" : "false") << ", " << constPtr(r.wx) << ", " << constPtr(r.bx)
           << ", " << constPtr(r.rh) << ", " << constPtr(r.rhh) << ", " << constPtr(r.rbh) << ", " << constPtr(r.peephole)
           << "}";
      }
      pb << "}};";
      fn = "rt::simd::rnnKernel";
    } else {
      return fail(i, "kernel '" + k + "' has no AOT emitter");
    }
    if (!error.empty()) return fail(i, error);
    params << "// step " << i << ": " << k << " (" << stepWhere(i) << ")\n" << pb.str() << "\n";
    run << "  if (const char* e = " << fn << "(&" << P << ", s)) return e;  // " << stepWhere(i) << "\n";
    return true;
  }
  bool fail(size_t i, const std::string& what) {
    error = stepWhere(i) + ": " + what + " (not supported by mlbridge-aot)";
    return false;
  }

  void emitConstant(size_t k) {
    const Slot& s = p.slots[k];
    DType t = slotType[k] == DType::kInvalid ? DType::kFloat32 : slotType[k];
    const size_t es = dtypeSize(t);
    const size_t n = es ? s.bytes / es : 0;
    consts << "alignas(64) const " << ctype(t) << " c" << remap[k] << "[" << (n ? n : 1) << "] = {";
    if (s.value >= 0) consts << "  // " << g.value(s.value).name;
    const unsigned char* b = static_cast<const unsigned char*>(s.constant);
    const size_t perLine = t == DType::kFloat32 || t == DType::kFloat64 ? 6 : 12;
    for (size_t i = 0; i < n; ++i) {
      if (i % perLine == 0) consts << "\n    ";
      switch (t) {
        case DType::kFloat32: { float v; std::memcpy(&v, b + i * 4, 4); consts << fmtFloat(v, true); break; }
        case DType::kFloat64: { double v; std::memcpy(&v, b + i * 8, 8); consts << fmtFloat(v, false); break; }
        case DType::kInt8: consts << static_cast<int>(static_cast<int8_t>(b[i])); break;
        case DType::kUInt8: case DType::kBool: consts << static_cast<unsigned>(b[i]) << "u"; break;
        case DType::kInt16: { int16_t v; std::memcpy(&v, b + i * 2, 2); consts << v; break; }
        case DType::kUInt16: { uint16_t v; std::memcpy(&v, b + i * 2, 2); consts << v << "u"; break; }
        case DType::kInt32: { int32_t v; std::memcpy(&v, b + i * 4, 4); consts << (v == INT32_MIN ? "(-2147483647 - 1)" : std::to_string(v)); break; }
        case DType::kUInt32: { uint32_t v; std::memcpy(&v, b + i * 4, 4); consts << v << "u"; break; }
        case DType::kInt64: { int64_t v; std::memcpy(&v, b + i * 8, 8); consts << fmtInt(v); break; }
        case DType::kUInt64: { uint64_t v; std::memcpy(&v, b + i * 8, 8); consts << v << "ULL"; break; }
        default: break;
      }
      consts << ",";
    }
    if (n == 0) consts << "0";
    consts << "};\n";
  }

  static std::string tensorList(const Graph& g, const std::vector<int>& ids, const std::string& prefix,
                                std::ostringstream& shapes) {
    std::ostringstream o;
    for (size_t i = 0; i < ids.size(); ++i) {
      const Value& v = g.value(ids[i]);
      std::string sh = prefix + "_shape" + std::to_string(i);
      shapes << "const int64_t " << sh << "[] = {";
      for (int64_t d : v.shape) shapes << fmtInt(d) << ", ";
      shapes << "0};\n";
      std::string quoted;
      for (char c : v.name) {
        if (c == '"' || c == '\\') quoted += '\\';
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\%03o", static_cast<unsigned char>(c));
          quoted += buf;
        } else {
          quoted += c;
        }
      }
      o << "    {\"" << quoted << "\", " << static_cast<int>(v.dtype) << ", \"" << dtypeName(v.dtype) << "\", "
        << v.shape.size() << ", " << sh << ", " << fmtSize(v.bytes()) << "},\n";
    }
    return o.str();
  }

  bool generate(std::string* header, std::string* impl) {
    for (size_t i = 0; i < p.steps.size(); ++i)
      if (!emitStep(i)) return false;
    for (int s : p.outputSlots) slotRef(s);
    remap.assign(p.slots.size(), -1);
    for (size_t i = 0; i < order.size(); ++i) remap[static_cast<size_t>(order[i])] = static_cast<int>(i);
    recording = false;
    consts.str("");
    params.str("");
    run.str("");
    for (size_t i = 0; i < p.steps.size(); ++i)
      if (!emitStep(i)) return false;
    for (int v : g.inputs)
      if (!ctype(g.value(v).dtype)) { error = "input '" + g.value(v).name + "' has an unsupported dtype"; return false; }
    for (int v : g.outputs)
      if (!ctype(g.value(v).dtype)) { error = "output '" + g.value(v).name + "' has an unsupported dtype"; return false; }
    std::ostringstream cst;
    for (int k : order)
      if (p.slots[static_cast<size_t>(k)].kind == Slot::Kind::kConstant) emitConstant(static_cast<size_t>(k));
    // The slot table.
    std::ostringstream bind;
    bool anyArena = false;
    for (size_t id = 0; id < order.size(); ++id) {
      const Slot& s = p.slots[static_cast<size_t>(order[id])];
      bind << "  s[" << id << "] = ";
      if (s.kind == Slot::Kind::kConstant) bind << "const_cast<void*>(static_cast<const void*>(c" << id << "));\n";
      else if (s.kind == Slot::Kind::kInput) bind << "const_cast<void*>(inputs[" << s.input << "]);\n";
      else {
        bind << "arena + " << s.offset << ";\n";
        anyArena = true;
      }
    }
    std::ostringstream shapes;
    std::string ins = tensorList(g, g.inputs, "kIn", shapes), outs = tensorList(g, g.outputs, "kOut", shapes);
    const std::string N = name;
    std::ostringstream h;
    h << "// Generated by mlbridge-aot from " << source << ". Do not edit.\n"
      << "// Plain C++17, no dependency; see docs/aot.md of mlbridge.\n"
      << "#ifndef MLBRIDGE_AOT_GENERATED_" << N << "_H\n#define MLBRIDGE_AOT_GENERATED_" << N << "_H\n\n"
      << kAotModelHeader << "\n"
      << "#define " << N << "_SCRATCH_BYTES " << p.arenaBytes << "u\n"
      << "#define " << N << "_NUM_INPUTS " << g.inputs.size() << "u\n"
      << "#define " << N << "_NUM_OUTPUTS " << g.outputs.size() << "u\n\n"
      << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
      << "// Inputs and outputs in graph order (see " << N << "_model() for names, dtypes, shapes);\n"
      << "// scratch: " << N << "_SCRATCH_BYTES bytes, 64-byte aligned, one per concurrent caller.\n"
      << "// Returns NULL, or a static message if the input is rejected.\n"
      << "const char* " << N << "_run(const void* const* inputs, void* const* outputs, void* scratch);\n"
      << "// The descriptor for mlbridge::AotModelRunner (mlbridge/aot_runner.h).\n"
      << "const mlbridge_aot_model* " << N << "_model(void);\n\n"
      << "#ifdef __cplusplus\n}  // extern \"C\"\n#endif\n\n#endif\n";
    std::ostringstream c;
    c << "// Generated by mlbridge-aot from " << source << ". Do not edit.\n"
      << "// " << p.steps.size() << " steps, " << p.arenaBytes << " bytes of scratch.\n"
      << "#include \"" << N << ".h\"\n\n#include <cmath>\n#include <cstddef>\n#include <cstdint>\n#include <cstring>\n"
      << "#include <limits>\n#include <type_traits>\n\n"
      << "namespace mlbridge_aot_" << N << " {\n" << kAotPrelude << "constexpr int kMaxRank = " << kMaxRank << ";\n\n"
      << kAotKernelParams << "\n" << kAotKernelsGeneric << "\n" << kAotKernelsIsa
      << "#undef ISA_NS\n#undef ISA_ATTR\n#undef ISA_W\n#undef ISA_G\n#undef ISA_FMA\n"
      << "}  // namespace mlbridge_aot_" << N << "\n\n"
      << "namespace {\n\nnamespace rt = mlbridge_aot_" << N << ";\nusing std::int8_t;\nusing std::int16_t;\n"
      << "using std::int32_t;\nusing std::int64_t;\nusing std::uint8_t;\nusing std::uint16_t;\nusing std::uint32_t;\n"
      << "using std::uint64_t;\nusing std::size_t;\n\n"
      << "// ---- constants ----\n" << cst.str() << consts.str() << "\n// ---- steps ----\n" << params.str() << "\n"
      << shapes.str() << "const mlbridge_aot_tensor kInputs[] = {\n" << ins << "    {nullptr, 0, nullptr, 0, nullptr, 0}};\n"
      << "const mlbridge_aot_tensor kOutputs[] = {\n" << outs << "    {nullptr, 0, nullptr, 0, nullptr, 0}};\n\n"
      << "}  // namespace\n\n"
      << "extern \"C\" const char* " << N << "_run(const void* const* inputs, void* const* outputs, void* scratch) {\n"
      << "  unsigned char* arena = static_cast<unsigned char*>(scratch);\n"
      << "  (void)arena;\n  (void)inputs;\n"
      << "  void* s[" << (order.empty() ? 1 : order.size()) << "];\n" << bind.str() << run.str();
    for (size_t o = 0; o < p.outputSlots.size(); ++o)
      if (p.outputBytes[o])
        c << "  std::memcpy(outputs[" << o << "], s[" << remap[static_cast<size_t>(p.outputSlots[o])] << "], "
          << p.outputBytes[o] << ");\n";
    c << "  (void)outputs;\n  return nullptr;\n}\n\n"
      << "extern \"C\" const mlbridge_aot_model* " << N << "_model(void) {\n"
      << "  static const mlbridge_aot_model kModel = {MLBRIDGE_AOT_ABI_VERSION, \"" << N << "\", \"" << source << "\", "
      << g.inputs.size() << ", kInputs, " << g.outputs.size() << ", kOutputs, " << p.arenaBytes << ", " << N << "_run};\n"
      << "  return &kModel;\n}\n";
    (void)anyArena;
    *header = h.str();
    *impl = c.str();
    return true;
  }
};

bool validIdentifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

bool writeFile(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  return static_cast<bool>(f);
}

int usage() {
  std::fprintf(stderr,
               "usage: mlbridge-aot model.onnx --name Name -o outdir [--dim name=value]... [--default-dim N]\n"
               "  writes outdir/Name.h and outdir/Name.cc (plain C++17, no dependency)\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model, name, outDir;
  OnnxLoadOptions opts;
  opts.portableKernels = true;  // the plan must not depend on the build machine
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--name" && i + 1 < argc) name = argv[++i];
    else if ((a == "-o" || a == "--output") && i + 1 < argc) outDir = argv[++i];
    else if (a == "--dim" && i + 1 < argc) {
      std::string d = argv[++i];
      size_t eq = d.find('=');
      if (eq == std::string::npos) return usage();
      opts.dimValues.emplace_back(d.substr(0, eq), std::atoll(d.c_str() + eq + 1));
    } else if (a == "--default-dim" && i + 1 < argc) opts.defaultDimValue = std::atoll(argv[++i]);
    else if (!a.empty() && a[0] != '-' && model.empty()) model = a;
    else return usage();
  }
  if (model.empty() || name.empty() || outDir.empty()) return usage();
  if (!validIdentifier(name)) {
    std::fprintf(stderr, "mlbridge-aot: --name '%s' is not a C identifier\n", name.c_str());
    return 2;
  }
  StatusOr<std::shared_ptr<const OnnxModel>> m = OnnxModel::load(model, opts);
  if (!m.ok()) {
    std::fprintf(stderr, "mlbridge-aot: %s: %s\n", model.c_str(), m.status().toString().c_str());
    return 1;
  }
  Gen gen((*m)->graph(), (*m)->program());
  gen.name = name;
  size_t slash = model.find_last_of("/\\");
  gen.source = slash == std::string::npos ? model : model.substr(slash + 1);
  for (char& ch : gen.source)
    if (ch == '"' || ch == '\\' || static_cast<unsigned char>(ch) < 0x20) ch = '_';
  std::string h, c;
  if (!gen.generate(&h, &c)) {
    std::fprintf(stderr, "mlbridge-aot: %s: %s\n", model.c_str(), gen.error.c_str());
    return 1;
  }
  if (!writeFile(outDir + "/" + name + ".h", h) || !writeFile(outDir + "/" + name + ".cc", c)) {
    std::fprintf(stderr, "mlbridge-aot: cannot write to %s: %s\n", outDir.c_str(), std::strerror(errno));
    return 1;
  }
  return 0;
}
