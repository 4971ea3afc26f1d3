// The ONNX test corpus (tests/engine/models, made by make_models.py), read
// the same way by the engine, AOT and ONNX Runtime tests: models, cases with
// their input and reference output bytes, and the comparison rule.
#ifndef MLBRIDGE_TESTS_ENGINE_CORPUS_H
#define MLBRIDGE_TESTS_ENGINE_CORPUS_H

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "json/json.h"
#include "mlbridge/tensor_spec.h"

namespace mlbridge {
namespace corpus {

inline const std::string& modelsDir() {
  static const std::string dir = std::string(MLBRIDGE_SOURCE_DIR) + "/tests/engine/models";
  return dir;
}

inline std::string readAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct TensorCase {
  std::string name;
  DType dtype = DType::kInvalid;
  std::vector<int64_t> shape;
  std::string bytes;
};

struct Case {
  std::vector<TensorCase> inputs, outputs;
};

struct ModelEntry {
  std::string name, file, reference;
  int64_t opset = 0;
  double rtol = 1e-5, atol = 1e-6;
  std::vector<Case> cases;
};

inline bool parseTensors(const json::Value* list, const std::string& blob, std::vector<TensorCase>* out) {
  if (!list || !list->isArray()) return false;
  for (const json::Value& t : list->items()) {
    TensorCase tc;
    const json::Value* name = t.find("name");
    const json::Value* dtype = t.find("dtype");
    const json::Value* shape = t.find("shape");
    const json::Value* offset = t.find("offset");
    const json::Value* size = t.find("bytes");
    int64_t off = 0, bytes = 0;
    if (!name || !dtype || !shape || !offset || !size || !offset->toInt64(&off) || !size->toInt64(&bytes))
      return false;
    tc.name = name->text();
    tc.dtype = parseDType(dtype->text());
    for (const json::Value& d : shape->items()) {
      int64_t v;
      if (!d.toInt64(&v)) return false;
      tc.shape.push_back(v);
    }
    if (off < 0 || bytes < 0 || static_cast<size_t>(off + bytes) > blob.size()) return false;
    tc.bytes = blob.substr(static_cast<size_t>(off), static_cast<size_t>(bytes));
    out->push_back(std::move(tc));
  }
  return true;
}

inline std::vector<ModelEntry> loadManifest() {
  std::vector<ModelEntry> models;
  std::string text = readAll(modelsDir() + "/manifest.json");
  if (text.empty()) return models;  // no corpus: the ManifestIsPresent tests say so
  StatusOr<json::Value> doc = json::parse(text);
  if (!doc.ok() || !doc->find("models")) {
    ADD_FAILURE() << "manifest.json: " << (doc.ok() ? "no \"models\" list" : doc.status().toString());
    return models;
  }
  for (const json::Value& m : doc->find("models")->items()) {
    ModelEntry e;
    const json::Value* name = m.find("name");
    const json::Value* file = m.find("file");
    const json::Value* data = m.find("data");
    const json::Value* cases = m.find("cases");
    if (!name || !file || !data || !cases) {
      ADD_FAILURE() << "manifest.json: entry without name/file/data/cases";
      continue;
    }
    e.name = name->text();
    e.file = file->text();
    if (const json::Value* v = m.find("reference")) e.reference = v->text();
    if (const json::Value* v = m.find("opset")) v->toInt64(&e.opset);
    if (const json::Value* v = m.find("rtol")) v->toDouble(&e.rtol);
    if (const json::Value* v = m.find("atol")) v->toDouble(&e.atol);
    std::string blob = readAll(modelsDir() + "/" + data->text());
    for (const json::Value& c : cases->items()) {
      Case cs;
      if (!parseTensors(c.find("inputs"), blob, &cs.inputs) || !parseTensors(c.find("outputs"), blob, &cs.outputs)) {
        ADD_FAILURE() << e.name << ": bad manifest entry";
        continue;
      }
      e.cases.push_back(std::move(cs));
    }
    models.push_back(std::move(e));
  }
  return models;
}

inline const std::vector<ModelEntry>& manifest() {
  static const std::vector<ModelEntry> m = loadManifest();
  return m;
}

inline const ModelEntry* entry(const std::string& name) {
  for (const ModelEntry& m : manifest())
    if (m.name == name) return &m;
  return nullptr;
}

inline double elementAsDouble(DType t, const char* bytes, size_t k) {
  auto get = [&](auto zero) {
    decltype(zero) v;
    std::memcpy(&v, bytes + k * sizeof v, sizeof v);
    return static_cast<double>(v);
  };
  switch (t) {
    case DType::kFloat32: return get(float());
    case DType::kFloat64: return get(double());
    case DType::kInt64: return get(int64_t());
    case DType::kInt32: return get(int32_t());
    case DType::kInt16: return get(int16_t());
    case DType::kInt8: return get(int8_t());
    case DType::kUInt64: return get(uint64_t());
    case DType::kUInt32: return get(uint32_t());
    case DType::kUInt16: return get(uint16_t());
    case DType::kUInt8:
    case DType::kBool: return get(uint8_t());
    default: return NAN;
  }
}

// Within atol + rtol * |expected| for floats (NaN matches NaN), exact otherwise.
inline ::testing::AssertionResult closeEnough(const TensorCase& expected, const void* actual, double rtol,
                                              double atol) {
  const size_t es = dtypeSize(expected.dtype);
  const size_t n = es ? expected.bytes.size() / es : 0;
  const char* got = static_cast<const char*>(actual);
  size_t bad = 0;
  std::string first;
  double worst = 0;
  for (size_t k = 0; k < n; ++k) {
    double e = elementAsDouble(expected.dtype, expected.bytes.data(), k);
    double a = elementAsDouble(expected.dtype, got, k);
    bool ok;
    if (isFloating(expected.dtype)) {
      ok = (std::isnan(e) && std::isnan(a)) || e == a || std::fabs(a - e) <= atol + rtol * std::fabs(e);
      if (!std::isnan(e)) worst = std::max(worst, std::fabs(a - e) / (atol + rtol * std::fabs(e)));
    } else {
      ok = e == a;
    }
    if (!ok && bad++ == 0) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "element %zu: expected %.9g, got %.9g", k, e, a);
      first = buf;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "output '" << expected.name << "': " << bad << " of " << n
                                       << " elements differ; " << first << " (worst error " << worst
                                       << "x the tolerance)";
}

inline std::vector<TensorSpec> specsOf(const std::vector<TensorCase>& ts) {
  std::vector<TensorSpec> specs;
  for (const TensorCase& t : ts) specs.emplace_back(t.name, t.dtype, t.shape);
  return specs;
}

}  // namespace corpus
}  // namespace mlbridge

#endif  // MLBRIDGE_TESTS_ENGINE_CORPUS_H
