// Writes small ONNX models in memory (protobuf wire format by hand), for tests
// that need a graph the corpus does not have: pass-through and constant
// outputs, symbolic dimensions, every dtype. No dependency.
#ifndef MLBRIDGE_TESTS_ORT_ONNX_BUILDER_H
#define MLBRIDGE_TESTS_ORT_ONNX_BUILDER_H

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace mlbridge {
namespace onnxtest {

// ONNX TensorProto.DataType values.
enum Elem : int { kFloat = 1, kUInt8 = 2, kInt8 = 3, kInt32 = 6, kInt64 = 7, kBool = 9, kFloat16 = 10, kDouble = 11 };

inline void varint(std::string& o, uint64_t v) {
  while (v >= 0x80) {
    o += static_cast<char>(v | 0x80);
    v >>= 7;
  }
  o += static_cast<char>(v);
}
inline void tag(std::string& o, uint32_t field, uint32_t wire) { varint(o, uint64_t(field) << 3 | wire); }
inline void bytesField(std::string& o, uint32_t field, const std::string& b) {
  tag(o, field, 2);
  varint(o, b.size());
  o += b;
}
inline void intField(std::string& o, uint32_t field, int64_t v) {
  tag(o, field, 0);
  varint(o, static_cast<uint64_t>(v));
}

// A dimension: a value, or a dim_param name.
struct Dim {
  Dim(int64_t v) : value(v) {}  // NOLINT: implicit by design
  Dim(const char* p) : param(p) {}  // NOLINT
  int64_t value = -1;
  std::string param;
};

inline std::string valueInfo(const std::string& name, int elem, const std::vector<Dim>& dims, bool withShape = true) {
  std::string shape, tt, type, vi;
  for (const Dim& d : dims) {
    std::string dim;
    if (d.param.empty()) intField(dim, 1, d.value);
    else bytesField(dim, 2, d.param);
    bytesField(shape, 1, dim);
  }
  intField(tt, 1, elem);
  if (withShape) bytesField(tt, 2, shape);
  bytesField(type, 1, tt);
  bytesField(vi, 1, name);
  bytesField(vi, 2, type);
  return vi;
}

// An initializer with raw little-endian data.
inline std::string tensor(const std::string& name, int elem, const std::vector<int64_t>& dims, const void* data,
                          size_t bytes) {
  std::string t;
  for (int64_t d : dims) intField(t, 1, d);
  intField(t, 2, elem);
  bytesField(t, 8, name);
  bytesField(t, 9, std::string(static_cast<const char*>(data), bytes));
  return t;
}
inline std::string floatTensor(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
  return tensor(name, kFloat, dims, v.data(), v.size() * sizeof(float));
}

struct Attr {
  std::string name;
  int64_t i = 0;
  bool isInt = true;
  float f = 0;
  static Attr Int(const std::string& n, int64_t v) { return Attr{n, v, true, 0}; }
  static Attr Float(const std::string& n, float v) { return Attr{n, 0, false, v}; }
};

inline std::string node(const std::string& op, const std::vector<std::string>& in, const std::vector<std::string>& out,
                        const std::vector<Attr>& attrs = {}) {
  std::string n;
  for (const std::string& i : in) bytesField(n, 1, i);
  for (const std::string& o : out) bytesField(n, 2, o);
  bytesField(n, 4, op);
  for (const Attr& a : attrs) {
    std::string p;
    bytesField(p, 1, a.name);
    if (a.isInt) {
      intField(p, 3, a.i);
      intField(p, 20, 2);  // INT
    } else {
      tag(p, 2, 5);
      char b[4];
      std::memcpy(b, &a.f, 4);
      p.append(b, 4);
      intField(p, 20, 1);  // FLOAT
    }
    bytesField(n, 5, p);
  }
  return n;
}

struct Graph {
  std::vector<std::string> nodes, initializers, inputs, outputs;
};

inline std::string model(const Graph& g, int64_t opset = 17, const std::string& producer = "mlbridge ort tests") {
  std::string graph;
  for (const std::string& n : g.nodes) bytesField(graph, 1, n);
  bytesField(graph, 2, "g");
  for (const std::string& t : g.initializers) bytesField(graph, 5, t);
  for (const std::string& i : g.inputs) bytesField(graph, 11, i);
  for (const std::string& o : g.outputs) bytesField(graph, 12, o);
  std::string m, op;
  intField(m, 1, 8);  // ir_version
  bytesField(m, 2, producer);
  bytesField(m, 7, graph);
  bytesField(op, 1, "");
  intField(op, 2, opset);
  bytesField(m, 8, op);
  return m;
}

}  // namespace onnxtest
}  // namespace mlbridge

#endif  // MLBRIDGE_TESTS_ORT_ONNX_BUILDER_H
