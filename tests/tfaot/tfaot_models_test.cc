// TensorFlow's own outputs (cases.json, written by make_models.py) against
// the TF AOT runner (XLA-compiled SavedModel) and the built-in engine on the
// same SavedModel converted by mlbridge.convert: decisions identical, float
// outputs within 1e-5 + 1e-4 * |expected| (XLA's and TF's float kernels
// differ in the last bits, e.g. XLA's rational tanh).
#include <gtest/gtest.h>

#include "TfAotInliner_tfaot.h"
#include "TfAotMlp_tfaot.h"
#include "mlbridge/onnx_runner.h"
#include "mlbridge/tfaot_runner.h"
#include "tf_cases.h"

namespace mlbridge {
namespace {

using namespace tf_cases;  // NOLINT

TEST(TfAotModels, InlinerHasLlvmSignatureWithoutTrainingInputs) {
  std::vector<TensorSpec> feeds = TfAotModelRunner::feedsOf(TfAotInliner_tfaot_model());
  EXPECT_EQ(feeds.size(), 38u);  // XLA pruned inlining_default, step_type, discount, reward: never read
  for (const TensorSpec& f : feeds) EXPECT_EQ(f, TensorSpec::create<int64_t>(f.name(), {1}));
  std::vector<TensorSpec> fetches = TfAotModelRunner::fetchesOf(TfAotInliner_tfaot_model());
  ASSERT_EQ(fetches.size(), 1u);
  EXPECT_EQ(fetches[0], TensorSpec::create<int64_t>("inlining_decision", {1}));
}

TEST(TfAotModels, InlinerDecisionsMatchTensorFlowAndEngine) {
  std::vector<TensorSpec> features = TfAotModelRunner::feedsOf(TfAotInliner_tfaot_model());
  features.push_back(TensorSpec::create<int64_t>(kIgnored, {1}));
  std::vector<TensorSpec> advice = {TensorSpec::create<int64_t>("inlining_decision", {1})};
  auto aot = TfAotModelRunner::create(TfAotInliner_tfaot_model(), features, advice);
  ASSERT_TRUE(aot.ok()) << aot.status().message();
  auto onnx = NativeModelRunner::create(std::string(kDir) + "/inliner.onnx", features, advice);
  ASSERT_TRUE(onnx.ok()) << onnx.status().message();
  checkCases("inliner", {{"tfaot", aot->get()}, {"engine(onnx)", onnx->get()}});
}

TEST(TfAotModels, MlpMatchesTensorFlowAndEngine) {
  std::vector<TensorSpec> features = {TensorSpec::create<float>("x", {1, 16})};
  std::vector<TensorSpec> advice = {TensorSpec::create<float>("probs", {1, 4}),
                                    TensorSpec::create<int64_t>("action", {1})};
  auto aot = TfAotModelRunner::create(TfAotMlp_tfaot_model(), features, advice);
  ASSERT_TRUE(aot.ok()) << aot.status().message();
  auto onnx = NativeModelRunner::create(std::string(kDir) + "/mlp.onnx", features, advice);
  ASSERT_TRUE(onnx.ok()) << onnx.status().message();
  checkCases("mlp", {{"tfaot", aot->get()}, {"engine(onnx)", onnx->get()}});
}

TEST(TfAotModels, MismatchedSpecsAreErrorsNamingThem) {
  auto r = TfAotModelRunner::create(TfAotMlp_tfaot_model(), {TensorSpec::create<float>("x", {1, 8})},
                                    {TensorSpec::create<float>("probs", {1, 4})});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'x'"), std::string::npos) << r.status().message();
  r = TfAotModelRunner::create(TfAotMlp_tfaot_model(), {TensorSpec::create<float>("y", {1, 16})},
                               {TensorSpec::create<float>("probs", {1, 4})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  r = TfAotModelRunner::create(TfAotMlp_tfaot_model(), {TensorSpec::create<float>("x", {1, 16})},
                               {TensorSpec::create<float>("action", {1})});
  ASSERT_FALSE(r.ok());  // action is int64
}

TEST(TfAotModels, RunnersAreIndependent) {
  // Two runners of one model: each owns its XLA instance (buffers).
  std::vector<TensorSpec> f = {TensorSpec::create<float>("x", {1, 16})};
  std::vector<TensorSpec> a = {TensorSpec::create<int64_t>("action", {1}), TensorSpec::create<float>("probs", {1, 4})};
  auto r1 = TfAotModelRunner::create(TfAotMlp_tfaot_model(), f, a);
  auto r2 = TfAotModelRunner::create(TfAotMlp_tfaot_model(), f, a);
  ASSERT_TRUE(r1.ok() && r2.ok());
  for (int k = 0; k < 16; ++k) {
    (*r1)->input<float>(0)[k] = 1.0f * k;
    (*r2)->input<float>(0)[k] = -1.0f * k;
  }
  ASSERT_TRUE((*r1)->evaluate().ok());
  std::vector<float> p1((*r1)->output<float>(1).begin(), (*r1)->output<float>(1).end());
  ASSERT_TRUE((*r2)->evaluate().ok());
  EXPECT_EQ(std::vector<float>((*r1)->output<float>(1).begin(), (*r1)->output<float>(1).end()), p1);
  EXPECT_NE(std::vector<float>((*r2)->output<float>(1).begin(), (*r2)->output<float>(1).end()), p1);
}

}  // namespace
}  // namespace mlbridge
