#include "engine/graph.h"

#include <cstdio>

namespace mlbridge {
namespace engine {

namespace {
const char* const kOpNames[] = {
#define MLBRIDGE_ENGINE_OP_NAME(e, s) s,
    MLBRIDGE_ENGINE_OPS(MLBRIDGE_ENGINE_OP_NAME)
#undef MLBRIDGE_ENGINE_OP_NAME
};
static_assert(sizeof(kOpNames) / sizeof(kOpNames[0]) == static_cast<size_t>(Op::kCount), "op table");
}  // namespace

const char* opName(Op op) {
  size_t i = static_cast<size_t>(op);
  return i < static_cast<size_t>(Op::kCount) ? kOpNames[i] : "?";
}

bool opFromName(std::string_view name, Op* op) {
  for (size_t i = 0; i < static_cast<size_t>(Op::kCount); ++i) {
    if (name == kOpNames[i]) {
      *op = static_cast<Op>(i);
      return true;
    }
  }
  return false;
}

AttrValue AttrValue::ofInt(int64_t v) {
  AttrValue a;
  a.kind = Kind::kInt;
  a.i = v;
  return a;
}
AttrValue AttrValue::ofFloat(double v) {
  AttrValue a;
  a.kind = Kind::kFloat;
  a.f = v;
  return a;
}
AttrValue AttrValue::ofString(std::string v) {
  AttrValue a;
  a.kind = Kind::kString;
  a.s = std::move(v);
  return a;
}
AttrValue AttrValue::ofInts(std::vector<int64_t> v) {
  AttrValue a;
  a.kind = Kind::kInts;
  a.ints = std::move(v);
  return a;
}
AttrValue AttrValue::ofFloats(std::vector<double> v) {
  AttrValue a;
  a.kind = Kind::kFloats;
  a.floats = std::move(v);
  return a;
}
AttrValue AttrValue::ofStrings(std::vector<std::string> v) {
  AttrValue a;
  a.kind = Kind::kStrings;
  a.strings = std::move(v);
  return a;
}

std::string Node::describe() const {
  std::string s = "node #" + std::to_string(sourceIndex);
  if (!name.empty()) s += " \"" + name + "\"";
  return s + " (" + opName(op) + ")";
}

int64_t Node::attrInt(const char* attr, int64_t fallback) const {
  auto it = attrs.find(attr);
  return it == attrs.end() ? fallback : it->second.i;
}
double Node::attrFloat(const char* attr, double fallback) const {
  auto it = attrs.find(attr);
  return it == attrs.end() ? fallback : it->second.f;
}
std::string Node::attrString(const char* attr, const std::string& fallback) const {
  auto it = attrs.find(attr);
  return it == attrs.end() ? fallback : it->second.s;
}
const std::vector<int64_t>& Node::attrInts(const char* attr) const {
  static const std::vector<int64_t> empty;
  auto it = attrs.find(attr);
  return it == attrs.end() ? empty : it->second.ints;
}
const std::vector<double>& Node::attrFloats(const char* attr) const {
  static const std::vector<double> empty;
  auto it = attrs.find(attr);
  return it == attrs.end() ? empty : it->second.floats;
}
const std::vector<std::string>& Node::attrStrings(const char* attr) const {
  static const std::vector<std::string> empty;
  auto it = attrs.find(attr);
  return it == attrs.end() ? empty : it->second.strings;
}

std::vector<int> Graph::useCounts() const {
  std::vector<int> uses(values.size(), 0);
  for (const Node& n : nodes)
    for (int v : n.inputs)
      if (v >= 0) ++uses[static_cast<size_t>(v)];
  for (int v : outputs) ++uses[static_cast<size_t>(v)];
  return uses;
}

namespace {
std::string valueString(const Graph& g, int id) {
  if (id < 0) return "-";
  const Value& v = g.value(id);
  std::string s = "%" + v.name + ":" + dtypeName(v.dtype) + shapeString(v.shape);
  if (v.isConstant()) s += "(const)";
  return s;
}

std::string attrString(const AttrValue& a) {
  char buf[64];
  auto num = [&](double d) {
    std::snprintf(buf, sizeof buf, "%.9g", d);
    return std::string(buf);
  };
  std::string s;
  switch (a.kind) {
    case AttrValue::Kind::kInt: return std::to_string(a.i);
    case AttrValue::Kind::kFloat: return num(a.f);
    case AttrValue::Kind::kString: return "\"" + a.s + "\"";
    case AttrValue::Kind::kInts:
      for (size_t k = 0; k < a.ints.size(); ++k) s += (k ? "," : "") + std::to_string(a.ints[k]);
      return "[" + s + "]";
    case AttrValue::Kind::kFloats:
      for (size_t k = 0; k < a.floats.size(); ++k) s += (k ? "," : "") + num(a.floats[k]);
      return "[" + s + "]";
    case AttrValue::Kind::kStrings:
      for (size_t k = 0; k < a.strings.size(); ++k) s += (k ? ",\"" : "\"") + a.strings[k] + "\"";
      return "[" + s + "]";
  }
  return s;
}
}  // namespace

std::string Graph::dump() const {
  std::string out = "graph (opset " + std::to_string(opset) + ")\n";
  for (int id : inputs) out += "  input " + valueString(*this, id) + "\n";
  for (const Node& n : nodes) {
    out += "  ";
    for (size_t k = 0; k < n.outputs.size(); ++k) out += (k ? ", " : "") + valueString(*this, n.outputs[k]);
    out += " = " + std::string(opName(n.op)) + "(";
    for (size_t k = 0; k < n.inputs.size(); ++k) out += (k ? ", " : "") + valueString(*this, n.inputs[k]);
    out += ")";
    for (const auto& kv : n.attrs) out += " " + kv.first + "=" + attrString(kv.second);
    out += "    # " + n.describe() + "\n";
  }
  for (int id : outputs) out += "  output " + valueString(*this, id) + "\n";
  return out;
}

}  // namespace engine
}  // namespace mlbridge
