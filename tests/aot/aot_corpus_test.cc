// AOT-compiled models (mlbridge-aot, docs/aot.md) against the engine corpus'
// reference outputs (tests/engine/models/manifest.json), through
// AotModelRunner and through the bare generated function; determinism of the
// generator; refusals (unsupported operators, mismatched specs).
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "aot_registry.h"
#include "corpus.h"
#include "mlbridge/aot_runner.h"
#include "mlbridge/onnx_runner.h"

namespace mlbridge {
namespace {

using namespace corpus;
const std::string& kModels = modelsDir();

std::vector<const mlbridge_aot_model*> aotModels(const std::string& file) {
  std::string stem = file.substr(0, file.rfind('.'));
  std::vector<const mlbridge_aot_model*> out;
  for (const AotRegistryEntry* r = kAotRegistry; r->stem; ++r)
    if (stem == r->stem) out.push_back(r->model());
  return out;
}
const mlbridge_aot_model* aotModel(const std::string& file) {
  std::vector<const mlbridge_aot_model*> all = aotModels(file);
  return all.empty() ? nullptr : all[0];
}

bool shapesMatch(const mlbridge_aot_model* m, const Case& c) {
  for (const TensorSpec& in : AotModelRunner::inputsOf(m))
    for (const TensorCase& t : c.inputs)
      if (t.name == in.name() && t.shape != in.shape()) return false;
  return true;
}

TEST(AotCorpus, EveryCorpusModelIsCompiled) {
  ASSERT_GE(manifest().size(), 15u);
  for (const ModelEntry& e : manifest()) EXPECT_NE(aotModel(e.file), nullptr) << e.name;
}

TEST(AotCorpus, MatchesReferenceOutputs) {
  size_t checked = 0;
  for (const ModelEntry& e : manifest()) {
    for (const Case& c : e.cases) {
      const mlbridge_aot_model* m = nullptr;
      for (const mlbridge_aot_model* cand : aotModels(e.file))
        if (shapesMatch(cand, c)) m = cand;
      ASSERT_NE(m, nullptr) << e.name << ": no AOT specialization for this case's shapes";
      StatusOr<std::unique_ptr<AotModelRunner>> r = AotModelRunner::create(m, specsOf(c.inputs), specsOf(c.outputs));
      ASSERT_TRUE(r.ok()) << e.name << ": " << r.status().toString();
      for (size_t i = 0; i < c.inputs.size(); ++i)
        std::memcpy((*r)->inputData(i), c.inputs[i].bytes.data(), c.inputs[i].bytes.size());
      for (int round = 0; round < 2; ++round) {
        Status s = (*r)->evaluate();
        ASSERT_TRUE(s.ok()) << e.name << ": " << s.toString();
        for (size_t i = 0; i < c.outputs.size(); ++i)
          EXPECT_TRUE(closeEnough(c.outputs[i], (*r)->outputRef(i).data, e.rtol, e.atol)) << e.name;
      }
      ++checked;
    }
  }
  size_t total = 0;
  for (const ModelEntry& e : manifest()) total += e.cases.size();
  EXPECT_EQ(checked, total);
}

// The generated function alone: no runner, no mlbridge.
TEST(AotCorpus, BareFunctionMatches) {
  for (const ModelEntry& e : manifest()) {
    const mlbridge_aot_model* m = aotModel(e.file);
    if (!m || e.cases.empty() || !shapesMatch(m, e.cases[0])) continue;
    const Case& c = e.cases[0];
    std::vector<const void*> ins(m->num_inputs, nullptr);
    for (size_t i = 0; i < m->num_inputs; ++i)
      for (const TensorCase& t : c.inputs)
        if (t.name == m->inputs[i].name) ins[i] = t.bytes.data();
    std::vector<std::vector<unsigned char>> outStore(m->num_outputs);
    std::vector<void*> outs(m->num_outputs);
    for (size_t o = 0; o < m->num_outputs; ++o) {
      outStore[o].assign(m->outputs[o].bytes + 1, 0);
      outs[o] = outStore[o].data();
    }
    std::vector<unsigned char> scratch(m->scratch_bytes + 64);
    void* aligned = scratch.data() + (64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64) % 64;
    for (const void* p : ins) ASSERT_NE(p, nullptr) << e.name;
    ASSERT_EQ(m->run(ins.data(), outs.data(), aligned), nullptr) << e.name;
    for (size_t o = 0; o < m->num_outputs; ++o)
      for (const TensorCase& t : c.outputs)
        if (t.name == m->outputs[o].name) {
          EXPECT_TRUE(closeEnough(t, outs[o], e.rtol, e.atol)) << e.name;
        }
  }
}

// One source of kernels (src/engine/kernel_params.inc, kernels_generic.inc,
// kernels_isa.inc, pasted into the generated code): an AOT model compiled
// for the baseline ISA computes exactly what the engine computes with its
// baseline kernels, bit for bit, on every corpus case.
TEST(AotCorpus, IdenticalToTheEngineBaselineKernels) {
#if defined(__AVX__)
  GTEST_SKIP() << "AOT models built for AVX: the engine's portable kernels are SSE2 (4 lanes)";
#endif
  OnnxLoadOptions portable;
  portable.portableKernels = true;
  size_t compared = 0;
  for (const ModelEntry& e : manifest()) {
    StatusOr<std::shared_ptr<const OnnxModel>> model = OnnxModel::load(kModels + "/" + e.file, portable);
    ASSERT_TRUE(model.ok()) << e.name << ": " << model.status().toString();
    for (const Case& c : e.cases) {
      const mlbridge_aot_model* m = nullptr;
      for (const mlbridge_aot_model* cand : aotModels(e.file))
        if (shapesMatch(cand, c)) m = cand;
      ASSERT_NE(m, nullptr) << e.name;
      auto aot = AotModelRunner::create(m, specsOf(c.inputs), specsOf(c.outputs));
      auto engine = NativeModelRunner::create(*model, specsOf(c.inputs), specsOf(c.outputs));
      ASSERT_TRUE(aot.ok()) << e.name << ": " << aot.status().toString();
      ASSERT_TRUE(engine.ok()) << e.name << ": " << engine.status().toString();
      for (size_t i = 0; i < c.inputs.size(); ++i) {
        std::memcpy((*aot)->inputData(i), c.inputs[i].bytes.data(), c.inputs[i].bytes.size());
        std::memcpy((*engine)->inputData(i), c.inputs[i].bytes.data(), c.inputs[i].bytes.size());
      }
      ASSERT_TRUE((*aot)->evaluate().ok()) << e.name;
      ASSERT_TRUE((*engine)->evaluate().ok()) << e.name;
      for (size_t i = 0; i < c.outputs.size(); ++i) {
        const size_t n = c.outputs[i].bytes.size();
        EXPECT_EQ(std::memcmp((*aot)->outputRef(i).data, (*engine)->outputRef(i).data, n), 0)
            << e.name << " output '" << c.outputs[i].name << "' differs between the AOT model and the engine";
      }
      ++compared;
    }
  }
  EXPECT_GE(compared, 37u);
}

TEST(AotCorpus, OneModelManyThreads) {
  const mlbridge_aot_model* m = aotModel("lstm_policy.onnx");
  ASSERT_NE(m, nullptr);
  const ModelEntry* e = nullptr;
  for (const ModelEntry& me : manifest())
    if (me.name == "lstm_policy") e = &me;
  ASSERT_NE(e, nullptr);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      const Case& c = e->cases[static_cast<size_t>(t) % e->cases.size()];
      auto r = AotModelRunner::create(m, specsOf(c.inputs), specsOf(c.outputs));
      if (!r.ok()) {
        ++failures;
        return;
      }
      for (size_t i = 0; i < c.inputs.size(); ++i)
        std::memcpy((*r)->inputData(i), c.inputs[i].bytes.data(), c.inputs[i].bytes.size());
      for (int it = 0; it < 200; ++it) {
        if (!(*r)->evaluate().ok()) ++failures;
        for (size_t i = 0; i < c.outputs.size(); ++i)
          if (!closeEnough(c.outputs[i], (*r)->outputRef(i).data, e->rtol, e->atol)) ++failures;
      }
    });
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

// ---- the runner's matching rules (NativeModelRunner's) ------------------------

const mlbridge_aot_model* actorCritic() { return aotModel("actor_critic.onnx"); }

TEST(AotRunner, PaperStyleWithExtraFeature) {
  const ModelEntry* e = nullptr;
  for (const ModelEntry& m : manifest())
    if (m.name == "actor_critic") e = &m;
  ASSERT_NE(e, nullptr);
  const Case& c = e->cases[0];
  std::vector<float> x(40);
  std::memcpy(x.data(), c.inputs[0].bytes.data(), 160);
  auto r = AotModelRunner::create(actorCritic(),
                                  {TensorSpec::create<int64_t>("unused_feature", {1}), TensorSpec::create<float>("x", {1, 40})},
                                  {TensorSpec::create<int64_t>("action", {1, 1})});
  ASSERT_TRUE(r.ok()) << r.status().toString();
  ASSERT_TRUE((*r)->setFeature("x", x).ok());
  StatusOr<int64_t> action = (*r)->evaluate<int64_t>();
  ASSERT_TRUE(action.ok()) << action.status().toString();
  int64_t expected;
  std::memcpy(&expected, c.outputs[1].bytes.data(), 8);
  EXPECT_EQ(*action, expected);
}

TEST(AotRunner, MissingFeatureIsNamed) {
  auto r = AotModelRunner::create(actorCritic(), {TensorSpec::create<float>("y", {1, 40})},
                                  {TensorSpec::create<int64_t>("action", {1, 1})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("'x'"), std::string::npos) << r.status().toString();
}

TEST(AotRunner, WrongDtypeOrShapeIsRefused) {
  auto r = AotModelRunner::create(actorCritic(), {TensorSpec::create<double>("x", {1, 40})},
                                  {TensorSpec::create<int64_t>("action", {1, 1})});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("feature 'x'"), std::string::npos) << r.status().toString();
  r = AotModelRunner::create(actorCritic(), {TensorSpec::create<float>("x", {2, 40})},
                             {TensorSpec::create<int64_t>("action", {1, 1})});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("shape"), std::string::npos) << r.status().toString();
  r = AotModelRunner::create(actorCritic(), {TensorSpec::create<float>("x", {1, 40})},
                             {TensorSpec::create<float>("action", {1, 1})});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("advice 'action'"), std::string::npos) << r.status().toString();
}

TEST(AotRunner, UnknownAdviceListsOutputs) {
  auto r = AotModelRunner::create(actorCritic(), {TensorSpec::create<float>("x", {1, 40})},
                                  {TensorSpec::create<int64_t>("action", {1, 1}), TensorSpec::create<float>("nope", {1})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("nope"), std::string::npos) << r.status().toString();
}

TEST(AotRunner, AbiVersionIsChecked) {
  mlbridge_aot_model copy = *actorCritic();
  copy.abi_version = MLBRIDGE_AOT_ABI_VERSION + 1;
  auto r = AotModelRunner::create(&copy, {TensorSpec::create<float>("x", {1, 40})},
                                  {TensorSpec::create<int64_t>("action", {1, 1})});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("ABI"), std::string::npos);
  EXPECT_FALSE(AotModelRunner::create(nullptr, {}, {TensorSpec::create<float>("y", {1})}).ok());
}

// ---- the generator ------------------------------------------------------------

int runTool(const std::string& args, std::string* err) {
  const std::string errFile = std::string(MLBRIDGE_AOT_SCRATCH_DIR) + "/stderr.txt";
  std::string cmd = "mkdir -p '" + std::string(MLBRIDGE_AOT_SCRATCH_DIR) + "' && '" + MLBRIDGE_AOT_TOOL + "' " + args +
                    " 2>'" + errFile + "'";
  int rc = std::system(cmd.c_str());
  if (err) *err = readAll(errFile);
  return rc;
}

TEST(AotGenerator, DeterministicBytes) {
  const std::string dir = MLBRIDGE_AOT_SCRATCH_DIR;
  for (const char* stem : {"mlp_300_64_64_15", "lstm_bidi_peephole_clip", "gru_torch", "ops_shape", "ops_int", "ops_norm"}) {
    const std::string model = kModels + "/" + stem + ".onnx";
    ASSERT_EQ(runTool("'" + model + "' --name Det -o '" + dir + "'", nullptr), 0) << stem;
    std::string h1 = readAll(dir + "/Det.h"), c1 = readAll(dir + "/Det.cc");
    ASSERT_EQ(std::system(("mkdir -p '" + dir + "/again'").c_str()), 0);
    ASSERT_EQ(runTool("'" + model + "' --name Det -o '" + dir + "/again'", nullptr), 0) << stem;
    EXPECT_FALSE(c1.empty());
    EXPECT_EQ(h1, readAll(dir + "/again/Det.h")) << stem;
    EXPECT_EQ(c1, readAll(dir + "/again/Det.cc")) << stem;
  }
}

TEST(AotGenerator, UnsupportedOperatorNamesNodeAndOp) {
  std::string err;
  const std::string dir = MLBRIDGE_AOT_SCRATCH_DIR;
  std::remove((dir + "/Bad.cc").c_str());
  int rc = runTool("'" + kModels + "/faults/unknown_op.onnx' --name Bad -o '" + dir + "'", &err);
  EXPECT_NE(rc, 0);
  EXPECT_NE(err.find("\"mystery\""), std::string::npos) << err;
  EXPECT_NE(err.find("FancyOp"), std::string::npos) << err;
  EXPECT_TRUE(readAll(dir + "/Bad.cc").empty()) << "no output on failure";
  rc = runTool("'" + kModels + "/faults/custom_domain.onnx' --name Bad -o '" + dir + "'", &err);
  EXPECT_NE(rc, 0);
  EXPECT_NE(err.find("com.microsoft"), std::string::npos) << err;
}

TEST(AotGenerator, BadArguments) {
  std::string err;
  EXPECT_NE(runTool("'" + kModels + "/mlp_300_64_64_15.onnx' --name 9bad -o /tmp", &err), 0);
  EXPECT_NE(err.find("C identifier"), std::string::npos) << err;
  EXPECT_NE(runTool("'" + kModels + "/does_not_exist.onnx' --name X -o /tmp", &err), 0);
  EXPECT_NE(runTool("--name X", &err), 0);
}

}  // namespace
}  // namespace mlbridge
