// TensorFlow's own outputs (cases.json, written by make_models.py) against
// the TF AOT runner (XLA-compiled SavedModel) and the built-in engine on the
// same SavedModel converted by mlbridge.convert: decisions identical, float
// outputs within 1e-5 + 1e-4 * |expected| (XLA's and TF's float kernels
// differ in the last bits, e.g. XLA's rational tanh).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "TfAotInliner_tfaot.h"
#include "TfAotMlp_tfaot.h"
#include "json/json.h"
#include "mlbridge/onnx_runner.h"
#include "mlbridge/tfaot_runner.h"

namespace mlbridge {
namespace {

const char* kDir = MLBRIDGE_TF_MODELS_DIR;
const char* kIgnored = "a_feature_the_model_ignores";

json::Value loadCases(const std::string& model) {
  std::ifstream f(std::string(kDir) + "/" + model + "/cases.json");
  std::stringstream ss;
  ss << f.rdbuf();
  auto v = json::parse(ss.str());
  EXPECT_TRUE(v.ok()) << v.status().message();
  return v.ok() ? *v : json::Value();
}

// Flattens a nested JSON list of numbers.
void flatten(const json::Value& v, std::vector<double>* out) {
  if (v.isArray()) {
    for (const json::Value& x : v.items()) flatten(x, out);
    return;
  }
  double d = 0;
  ASSERT_TRUE(v.toDouble(&d));
  out->push_back(d);
}

void setInput(ModelRunner& r, size_t i, const json::Value& v) {
  std::vector<double> vals;
  flatten(v, &vals);
  const TensorSpec& s = r.inputSpecs()[i];
  ASSERT_EQ(vals.size(), s.elementCount()) << s.name();
  for (size_t k = 0; k < vals.size(); ++k) {
    if (s.type() == DType::kInt64) r.input<int64_t>(i)[k] = static_cast<int64_t>(vals[k]);
    else if (s.type() == DType::kFloat32) r.input<float>(i)[k] = static_cast<float>(vals[k]);
    else FAIL() << "unexpected dtype of " << s.name();
  }
}

void expectOutput(const ModelRunner& r, size_t i, const json::Value& want, const char* who, int caseNo) {
  std::vector<double> vals;
  flatten(want, &vals);
  const TensorSpec& s = r.outputSpecs()[i];
  ASSERT_EQ(vals.size(), s.elementCount());
  for (size_t k = 0; k < vals.size(); ++k) {
    if (s.type() == DType::kInt64) {
      EXPECT_EQ(r.output<int64_t>(i)[k], static_cast<int64_t>(vals[k])) << who << " case " << caseNo << " " << s.name();
    } else {
      double got = r.output<float>(i)[k];
      EXPECT_LE(std::fabs(got - vals[k]), 1e-5 + 1e-4 * std::fabs(vals[k]))
          << who << " case " << caseNo << " " << s.name() << "[" << k << "]: " << got << " vs TF " << vals[k];
    }
  }
}

// Runs every case through `runners`, comparing each with TF's outputs.
void checkCases(const std::string& model, std::vector<std::pair<const char*, ModelRunner*>> runners) {
  json::Value cases = loadCases(model);
  ASSERT_TRUE(cases.isArray());
  ASSERT_GE(cases.items().size(), 32u);
  int n = 0;
  for (const json::Value& c : cases.items()) {
    const json::Value* ins = c.find("inputs");
    const json::Value* outs = c.find("outputs");
    ASSERT_TRUE(ins && outs);
    for (auto [who, r] : runners) {
      for (size_t i = 0; i < r->inputSpecs().size(); ++i) {
        const json::Value* v = ins->find(r->inputSpecs()[i].name());
        if (!v && r->inputSpecs()[i].name() == kIgnored) {
          r->input<int64_t>(i)[0] = 123456;  // a feature the model does not have
          continue;
        }
        ASSERT_NE(v, nullptr) << r->inputSpecs()[i].name();
        setInput(*r, i, *v);
      }
      Status s = r->evaluate();
      ASSERT_TRUE(s.ok()) << who << ": " << s.message();
      for (size_t i = 0; i < r->outputSpecs().size(); ++i) {
        const json::Value* v = outs->find(r->outputSpecs()[i].name());
        ASSERT_NE(v, nullptr);
        expectOutput(*r, i, *v, who, n);
      }
    }
    ++n;
  }
}

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
