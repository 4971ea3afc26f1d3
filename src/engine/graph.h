// The engine's graph IR: what an ONNX model becomes after loading, before
// lowering into an execution plan (program.h). AOT code generation can start
// from here. Invariants once importGraph() succeeds (docs/engine.md, "IR"):
//
//  * Every value has a supported dtype and a fully static shape (symbolic
//    input dimensions were bound at import). Ranks are at most kMaxRank.
//  * Values computable at load time are constants (`constant` set): all
//    initializers, Constant/Shape/Size/Range/ConstantOfShape outputs and
//    every node whose inputs were all constant (constant folding). No node
//    of the graph has only constant inputs.
//  * Nodes are in topological order; nodes that do not contribute to a
//    graph output were removed.
//  * Node inputs are data: shape-like operands that ONNX passes as inputs
//    (Reshape's shape, Unsqueeze/Squeeze/Reduce* axes, Slice's starts/ends,
//    Clip's min/max, Split's sizes, Expand/Tile's shapes, ...) were checked
//    to be constant and moved into attributes, normalized: axes non-negative
//    and sorted, defaults filled in, Slice bounds clamped. The per-op
//    attribute contract is the table in docs/engine.md.
//  * An omitted optional input or output is -1.
#ifndef MLBRIDGE_SRC_ENGINE_GRAPH_H
#define MLBRIDGE_SRC_ENGINE_GRAPH_H

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/common.h"

namespace mlbridge {
namespace engine {

// X(enum, "OnnxName")
#define MLBRIDGE_ENGINE_OPS(X)                                                                              \
  X(Abs, "Abs") X(Add, "Add") X(And, "And") X(ArgMax, "ArgMax") X(ArgMin, "ArgMin")                         \
  X(BatchNormalization, "BatchNormalization") X(Cast, "Cast") X(Ceil, "Ceil") X(Clip, "Clip")               \
  X(Concat, "Concat") X(Constant, "Constant") X(ConstantOfShape, "ConstantOfShape") X(Cos, "Cos")           \
  X(Div, "Div") X(Dropout, "Dropout") X(Elu, "Elu") X(Equal, "Equal") X(Erf, "Erf") X(Exp, "Exp")           \
  X(Expand, "Expand") X(Flatten, "Flatten") X(Floor, "Floor") X(GRU, "GRU") X(Gather, "Gather")             \
  X(Gelu, "Gelu") X(Gemm, "Gemm") X(Greater, "Greater") X(GreaterOrEqual, "GreaterOrEqual")                 \
  X(HardSigmoid, "HardSigmoid") X(HardSwish, "HardSwish") X(Identity, "Identity")                           \
  X(LSTM, "LSTM") X(LayerNormalization, "LayerNormalization") X(LeakyRelu, "LeakyRelu") X(Less, "Less")     \
  X(LessOrEqual, "LessOrEqual") X(Log, "Log") X(LogSoftmax, "LogSoftmax") X(MatMul, "MatMul")               \
  X(Max, "Max") X(Mean, "Mean") X(Min, "Min") X(Mish, "Mish") X(Mod, "Mod") X(Mul, "Mul") X(Neg, "Neg") X(Not, "Not")     \
  X(Or, "Or") X(PRelu, "PRelu") X(Pow, "Pow") X(Range, "Range") X(Reciprocal, "Reciprocal")                 \
  X(ReduceMax, "ReduceMax") X(ReduceMean, "ReduceMean") X(ReduceMin, "ReduceMin")                           \
  X(ReduceProd, "ReduceProd") X(ReduceSum, "ReduceSum") X(ReduceSumSquare, "ReduceSumSquare")               \
  X(Relu, "Relu") X(Reshape, "Reshape") X(Round, "Round") X(Selu, "Selu") X(Shape, "Shape")                 \
  X(Sigmoid, "Sigmoid") X(Sign, "Sign") X(Sin, "Sin") X(Size, "Size") X(Slice, "Slice")                     \
  X(Softmax, "Softmax") X(Softplus, "Softplus") X(Softsign, "Softsign") X(Split, "Split") X(Sqrt, "Sqrt")   \
  X(Squeeze, "Squeeze") X(Sub, "Sub") X(Sum, "Sum") X(Tanh, "Tanh") X(Tile, "Tile")                         \
  X(Transpose, "Transpose") X(Unsqueeze, "Unsqueeze") X(Where, "Where") X(Xor, "Xor")

enum class Op : uint8_t {
#define MLBRIDGE_ENGINE_OP_ENUM(e, s) k##e,
  MLBRIDGE_ENGINE_OPS(MLBRIDGE_ENGINE_OP_ENUM)
#undef MLBRIDGE_ENGINE_OP_ENUM
      kCount
};

const char* opName(Op op);
// False if the ONNX op type is not supported.
bool opFromName(std::string_view name, Op* op);

// A normalized attribute value (see the per-op table in docs/engine.md).
struct AttrValue {
  enum class Kind { kInt, kFloat, kString, kInts, kFloats, kStrings };
  Kind kind = Kind::kInt;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<std::string> strings;

  static AttrValue ofInt(int64_t v);
  static AttrValue ofFloat(double v);
  static AttrValue ofString(std::string v);
  static AttrValue ofInts(std::vector<int64_t> v);
  static AttrValue ofFloats(std::vector<double> v);
  static AttrValue ofStrings(std::vector<std::string> v);
};

struct Value {
  std::string name;
  DType dtype = DType::kInvalid;
  Shape shape;
  BufferPtr constant;     // set: the value is known at load time
  int producer = -1;      // index into Graph::nodes; -1 for inputs and constants
  int graphInput = -1;    // index into Graph::inputs, or -1

  bool isConstant() const { return constant != nullptr; }
  size_t count() const { return elementCount(shape); }
  size_t bytes() const { return count() * dtypeSize(dtype); }
  Tensor tensor() const { return Tensor{dtype, shape, constant}; }
};

struct Node {
  Op op = Op::kCount;
  std::string name;          // the ONNX node's name (may be empty)
  int sourceIndex = -1;      // position of the node in the ONNX graph
  std::vector<int> inputs;   // value ids; -1 = omitted optional input
  std::vector<int> outputs;  // value ids; -1 = omitted optional output
  std::map<std::string, AttrValue> attrs;

  // `node #3 "fc1" (Gemm)`, for messages.
  std::string describe() const;
  bool has(const char* attr) const { return attrs.count(attr) != 0; }
  int64_t attrInt(const char* attr, int64_t fallback = 0) const;
  double attrFloat(const char* attr, double fallback = 0) const;
  std::string attrString(const char* attr, const std::string& fallback = "") const;
  const std::vector<int64_t>& attrInts(const char* attr) const;  // empty if absent
  const std::vector<double>& attrFloats(const char* attr) const;
  const std::vector<std::string>& attrStrings(const char* attr) const;
  int input(size_t i) const { return i < inputs.size() ? inputs[i] : -1; }
  int output(size_t i) const { return i < outputs.size() ? outputs[i] : -1; }
};

struct Graph {
  int64_t opset = 0;             // version of the default ("" / "ai.onnx") domain
  std::vector<Value> values;
  std::vector<Node> nodes;       // topological order
  std::vector<int> inputs;       // runtime graph inputs (value ids), in file order
  std::vector<int> outputs;      // graph outputs (value ids), in file order

  const Value& value(int id) const { return values[static_cast<size_t>(id)]; }
  // Number of node inputs reading value `id` (plus one per graph output use).
  std::vector<int> useCounts() const;
  // A readable listing: one line per input, node and output (debugging, docs).
  std::string dump() const;
};

}  // namespace engine
}  // namespace mlbridge

#endif  // MLBRIDGE_SRC_ENGINE_GRAPH_H
