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

#include "corpus.h"
#include "mlbridge/onnxruntime_runner.h"

namespace mlbridge {
namespace {

using namespace corpus;
const std::string& kModels = modelsDir();

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
