// ONNX Runtime runner against the engine's corpus: every model of
// tests/engine/models/manifest.json (tests/engine/make_models.py; reference
// outputs from ONNX Runtime's Python package or onnx.reference), and one
// shared model evaluated from several threads at once.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "json/json.h"
#include "mlbridge/onnxruntime_runner.h"

namespace mlbridge {
namespace {

const std::string kModels = std::string(MLBRIDGE_SOURCE_DIR) + "/tests/engine/models";

std::string readAll(const std::string& path) {
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

bool parseTensors(const json::Value* list, const std::string& blob, std::vector<TensorCase>* out) {
  if (!list || !list->isArray()) return false;
  for (const json::Value& t : list->items()) {
    TensorCase tc;
    const json::Value* name = t.find("name");
    const json::Value* dtype = t.find("dtype");
    const json::Value* shape = t.find("shape");
    const json::Value* offset = t.find("offset");
    const json::Value* size = t.find("bytes");
    int64_t off = 0, bytes = 0;
    if (!name || !dtype || !shape || !offset || !size || !offset->toInt64(&off) || !size->toInt64(&bytes)) return false;
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

std::vector<ModelEntry> loadManifest() {
  std::vector<ModelEntry> models;
  std::string text = readAll(kModels + "/manifest.json");
  if (text.empty()) return models;  // no corpus: the tests say so
  StatusOr<json::Value> doc = json::parse(text);
  if (!doc.ok() || !doc->find("models")) {
    ADD_FAILURE() << "manifest.json: " << doc.status().toString();
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
    std::string blob = readAll(kModels + "/" + data->text());
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

const std::vector<ModelEntry>& manifest() {
  static const std::vector<ModelEntry> m = loadManifest();
  return m;
}

const ModelEntry* entry(const std::string& name) {
  for (const ModelEntry& m : manifest())
    if (m.name == name) return &m;
  return nullptr;
}

double elementAsDouble(DType t, const char* bytes, size_t k) {
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
    case DType::kInt8: return get(int8_t());
    case DType::kUInt8:
    case DType::kBool: return get(uint8_t());
    default: return NAN;
  }
}

// Within atol + rtol * |expected| (floats; NaN matches NaN), exactly otherwise.
::testing::AssertionResult closeEnough(const TensorCase& expected, const void* actual, double rtol, double atol) {
  const size_t es = dtypeSize(expected.dtype);
  const size_t n = es ? expected.bytes.size() / es : 0;
  size_t bad = 0;
  std::string first;
  for (size_t k = 0; k < n; ++k) {
    double e = elementAsDouble(expected.dtype, expected.bytes.data(), k);
    double a = elementAsDouble(expected.dtype, static_cast<const char*>(actual), k);
    bool ok = isFloating(expected.dtype)
                  ? (std::isnan(e) && std::isnan(a)) || e == a || std::fabs(a - e) <= atol + rtol * std::fabs(e)
                  : e == a;
    if (!ok && bad++ == 0) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "element %zu: expected %.9g, got %.9g", k, e, a);
      first = buf;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "output '" << expected.name << "': " << bad << " of " << n
                                       << " elements differ; " << first;
}

std::vector<TensorSpec> specsOf(const std::vector<TensorCase>& ts) {
  std::vector<TensorSpec> specs;
  for (const TensorCase& t : ts) specs.emplace_back(t.name, t.dtype, t.shape);
  return specs;
}

void runCase(const std::shared_ptr<const OnnxRuntimeModel>& model, const ModelEntry& e, const Case& c,
             const char* what) {
  StatusOr<std::unique_ptr<OnnxRuntimeRunner>> r =
      OnnxRuntimeRunner::create(model, specsOf(c.inputs), specsOf(c.outputs));
  ASSERT_TRUE(r.ok()) << e.name << " (" << what << "): " << r.status().toString();
  OnnxRuntimeRunner& runner = **r;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    std::memcpy(runner.inputData(i), c.inputs[i].bytes.data(), c.inputs[i].bytes.size());
  for (int round = 0; round < 2; ++round) {  // the second run must give the same answer
    Status s = runner.evaluate();
    ASSERT_TRUE(s.ok()) << e.name << ": " << s.toString();
    for (size_t i = 0; i < c.outputs.size(); ++i)
      EXPECT_TRUE(closeEnough(c.outputs[i], runner.outputRef(i).data, e.rtol, e.atol))
          << e.name << " (" << what << ", opset " << e.opset << ", reference " << e.reference << ")";
  }
}

// References computed by ONNX Runtime on this very model (not on an
// equivalent one, nor by onnx.reference): ONNX Runtime must load it.
bool fromOnnxRuntime(const ModelEntry& e) { return e.reference == "onnxruntime"; }

TEST(OrtCorpus, ManifestIsPresent) {
  if (manifest().empty()) GTEST_SKIP() << "no tests/engine/models/manifest.json (tests/engine/make_models.py)";
  for (const ModelEntry& e : manifest()) EXPECT_FALSE(e.cases.empty()) << e.name;
}

TEST(OrtCorpus, MatchesReferenceOutputs) {
  if (manifest().empty()) GTEST_SKIP() << "no corpus";
  int ran = 0;
  for (const ModelEntry& e : manifest()) {
    StatusOr<std::shared_ptr<const OnnxRuntimeModel>> m = OnnxRuntimeModel::load(kModels + "/" + e.file);
    if (!m.ok() && !fromOnnxRuntime(e)) {
      // A model ONNX Runtime itself did not run when the corpus was made (an
      // opset newer than it supports, LSTM layout=1, ...).
      std::printf("[ note ] %s: not loadable by ONNX Runtime %s: %s\n", e.name.c_str(),
                  OnnxRuntimeModel::runtimeVersion().c_str(), m.status().toString().c_str());
      continue;
    }
    ASSERT_TRUE(m.ok()) << e.name << ": " << m.status().toString();
    for (const Case& c : e.cases) runCase(*m, e, c, "load");
    ++ran;
  }
  EXPECT_GE(ran, 15);
}

TEST(OrtCorpus, LoadFromMemoryMatchesLoad) {
  if (manifest().empty()) GTEST_SKIP() << "no corpus";
  for (const ModelEntry& e : manifest()) {
    if (!fromOnnxRuntime(e)) continue;
    std::string bytes = readAll(kModels + "/" + e.file);
    StatusOr<std::shared_ptr<const OnnxRuntimeModel>> m = OnnxRuntimeModel::loadFromMemory(bytes.data(), bytes.size());
    ASSERT_TRUE(m.ok()) << e.name << ": " << m.status().toString();
    runCase(*m, e, e.cases[0], "loadFromMemory");
  }
}

TEST(OrtCorpus, PaperStyleApiAndExtraFeature) {
  const ModelEntry* e = entry("actor_critic");
  if (!e) GTEST_SKIP() << "no actor_critic in the corpus";
  const Case& c = e->cases[0];
  std::vector<float> x(40);
  std::memcpy(x.data(), c.inputs[0].bytes.data(), 160);
  StatusOr<std::unique_ptr<OnnxRuntimeRunner>> r = OnnxRuntimeRunner::create(
      kModels + "/actor_critic.onnx",
      {TensorSpec::create<float>("x", {1, 40}), TensorSpec::create<int64_t>("unused_feature", {1})},
      {TensorSpec::create<int64_t>("action", {1, 1})});
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_EQ((*r)->boundOutputName(0), "action");
  ASSERT_TRUE((*r)->setFeature("x", x).ok());
  ASSERT_TRUE((*r)->setFeature("unused_feature", int64_t{7}).ok());
  StatusOr<int64_t> action = (*r)->evaluate<int64_t>();
  ASSERT_TRUE(action.ok()) << action.status().toString();
  int64_t expected;
  std::memcpy(&expected, c.outputs[1].bytes.data(), 8);
  EXPECT_EQ(*action, expected);
}

TEST(OrtCorpus, ExternalDataNextToTheModel) {
  const std::string dir = kModels + "/external";
  if (readAll(dir + "/x.bin").empty()) GTEST_SKIP() << "no external-data model in the corpus";
  StatusOr<std::unique_ptr<OnnxRuntimeRunner>> r = OnnxRuntimeRunner::create(
      dir + "/mlp_external.onnx", {TensorSpec::create<float>("x", {1, 64})}, {TensorSpec::create<float>("y", {1, 32})});
  ASSERT_TRUE(r.ok()) << r.status().toString();
  std::string x = readAll(dir + "/x.bin"), y = readAll(dir + "/y.bin");
  ASSERT_EQ(x.size(), 64 * 4u);
  std::memcpy((*r)->inputData(0), x.data(), x.size());
  ASSERT_TRUE((*r)->evaluate().ok());
  TensorCase expected{"y", DType::kFloat32, {1, 32}, y};
  EXPECT_TRUE(closeEnough(expected, (*r)->outputRef(0).data, 1e-5, 1e-6));
}

// One immutable model, several threads, each with its own runner, all
// evaluating at once; every answer must be the reference answer.
void manyThreads(const ModelEntry& e, const OnnxRuntimeOptions& options) {
  StatusOr<std::shared_ptr<const OnnxRuntimeModel>> model = OnnxRuntimeModel::load(kModels + "/" + e.file, options);
  ASSERT_TRUE(model.ok()) << model.status().toString();
  const int kThreads = 4, kIterations = 200;
  std::atomic<int> failures{0}, evaluations{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const Case& c = e.cases[static_cast<size_t>(t) % e.cases.size()];
      StatusOr<std::unique_ptr<OnnxRuntimeRunner>> r =
          OnnxRuntimeRunner::create(*model, specsOf(c.inputs), specsOf(c.outputs));
      if (!r.ok()) {
        ++failures;
        return;
      }
      for (size_t i = 0; i < c.inputs.size(); ++i)
        std::memcpy((*r)->inputData(i), c.inputs[i].bytes.data(), c.inputs[i].bytes.size());
      for (int it = 0; it < kIterations; ++it) {
        if (!(*r)->evaluate().ok()) ++failures;
        ++evaluations;
        for (size_t i = 0; i < c.outputs.size(); ++i)
          if (!closeEnough(c.outputs[i], (*r)->outputRef(i).data, e.rtol, e.atol)) ++failures;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0) << e.name;
  EXPECT_EQ(evaluations.load(), kThreads * kIterations);
}

TEST(OrtThreads, OneModelManyThreads) {
  if (manifest().empty()) GTEST_SKIP() << "no corpus";
  for (const char* name : {"mlp_300_64_64_15", "lstm_policy", "actor_critic"}) {
    const ModelEntry* e = entry(name);
    ASSERT_NE(e, nullptr) << name;
    manyThreads(*e, OnnxRuntimeOptions());
  }
}

TEST(OrtThreads, OneModelManyThreadsWithAnIntraOpPool) {
  const ModelEntry* e = entry("mlp_300_64_64_15");
  if (!e) GTEST_SKIP() << "no corpus";
  OnnxRuntimeOptions options;
  options.intraOpThreads = 2;
  manyThreads(*e, options);
}

}  // namespace
}  // namespace mlbridge
