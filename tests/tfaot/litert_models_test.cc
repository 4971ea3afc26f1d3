// LiteRtModelRunner on the TFLite versions of the TF test models
// (make_models.py): TF's own outputs on every case, LLVM's model folder
// (model.tflite + output_spec.json), dtype / shape / name checks.
#include <gtest/gtest.h>

#include <fstream>

#include "mlbridge/litert_runner.h"
#include "tf_cases.h"

namespace mlbridge {
namespace {

using namespace tf_cases;  // NOLINT

LiteRtRunnerOptions options() {
  LiteRtRunnerOptions o;
  o.library = MLBRIDGE_LITERT_LIBRARY;
  return o;
}

TEST(LiteRtModels, MlpMatchesTensorFlow) {
  auto r = LiteRtModelRunner::create(std::string(kDir) + "/mlp.tflite", {TensorSpec::create<float>("x", {1, 16})},
                                     {TensorSpec::create<float>("probs", {1, 4}), TensorSpec::create<int64_t>("action", {1})},
                                     options());
  ASSERT_TRUE(r.ok()) << r.status().message();
  checkCases("mlp", {{"litert", r->get()}});
}

TEST(LiteRtModels, LlvmModelFolderMatchesTensorFlow) {
  // LLVM's development-mode folder: the decision is named by output_spec.json.
  const std::string dir = std::string(kDir) + "/inliner_llvm";
  {
    auto probe = LiteRtModelRunner::create(dir, {}, {TensorSpec::create<int64_t>("inlining_decision", {1})}, options());
    ASSERT_FALSE(probe.ok());  // no features: the model's inputs are named in the error
    EXPECT_EQ(probe.status().code(), StatusCode::kNotFound);
  }
  // All signature inputs (LLVM's development mode sends the training ones too).
  std::vector<TensorSpec> features;
  json::Value cases = loadCases("inliner");
  for (const auto& [name, v] : cases.items()[0].find("inputs")->members()) {
    std::vector<double> vals;
    flatten(v, &vals);
    DType t = name == "step_type" ? DType::kInt32 : name == "discount" || name == "reward" ? DType::kFloat32 : DType::kInt64;
    features.emplace_back(name, t, std::vector<int64_t>{1});
  }
  auto r = LiteRtModelRunner::create(dir, features, {TensorSpec::create<int64_t>("inlining_decision", {1})}, options());
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ((*r)->modelOutputs().size(), 1u);
  EXPECT_EQ((*r)->modelOutputs()[0], TensorSpec::create<int64_t>("inlining_decision", {1}));
  // The int32 / float inputs are not in the int64 helper's reach: set them to 0 per case.
  json::Value all = loadCases("inliner");
  int n = 0;
  for (const json::Value& c : all.items()) {
    for (size_t i = 0; i < (*r)->inputSpecs().size(); ++i) {
      const TensorSpec& s = (*r)->inputSpecs()[i];
      if (s.type() == DType::kInt64) setInput(**r, i, *c.find("inputs")->find(s.name()));
      else if (s.type() == DType::kInt32) (*r)->input<int32_t>(i)[0] = 0;
      else (*r)->input<float>(i)[0] = 0.f;
    }
    ASSERT_TRUE((*r)->evaluate().ok());
    expectOutput(**r, 0, *c.find("outputs")->find("inlining_decision"), "litert", n++);
  }
}

TEST(LiteRtModels, WrongSpecsAndFilesAreErrors) {
  const std::string mlp = std::string(kDir) + "/mlp.tflite";
  auto r = LiteRtModelRunner::create(mlp, {TensorSpec::create<int64_t>("x", {1, 16})},
                                     {TensorSpec::create<float>("probs", {1, 4})}, options());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'x'"), std::string::npos) << r.status().message();
  r = LiteRtModelRunner::create(mlp, {TensorSpec::create<float>("x", {1, 16})},
                                {TensorSpec::create<float>("probs", {4})}, options());
  ASSERT_FALSE(r.ok());
  r = LiteRtModelRunner::create(std::string(kDir) + "/nope.tflite", {TensorSpec::create<float>("x", {1, 16})},
                                {TensorSpec::create<float>("probs", {1, 4})}, options());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  // A file that is not a flatbuffer.
  const std::string junk = ::testing::TempDir() + "/junk.tflite";
  std::ofstream(junk) << "not a model";
  r = LiteRtModelRunner::create(junk, {TensorSpec::create<float>("x", {1, 16})},
                                {TensorSpec::create<float>("probs", {1, 4})}, options());
  ASSERT_FALSE(r.ok());
  LiteRtRunnerOptions o = options();
  o.signature = "nope";
  r = LiteRtModelRunner::create(mlp, {TensorSpec::create<float>("x", {1, 16})},
                                {TensorSpec::create<float>("probs", {1, 4})}, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("serving_default"), std::string::npos) << r.status().message();
}

TEST(LiteRtModels, OutputSpecNamingAMissingTensorIsAnError) {
  const std::string dir = ::testing::TempDir() + "/llvm_bad";
  ASSERT_EQ(system(("mkdir -p " + dir + " && cp " + std::string(kDir) + "/inliner_llvm/model.tflite " + dir).c_str()), 0);
  std::ofstream(dir + "/output_spec.json")
      << R"([{"logging_name":"inlining_decision","tensor_spec":{"name":"NoSuchTensor","port":0,"type":"int64_t","shape":[1]}}])";
  auto r = LiteRtModelRunner::create(dir, {}, {TensorSpec::create<int64_t>("inlining_decision", {1})}, options());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("NoSuchTensor"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace mlbridge
