// TensorFlow's own outputs on random inputs (cases.json, written by
// tests/tfaot/make_models.py) checked against any ModelRunner: integer
// outputs equal, float outputs within 1e-5 + 1e-4 * |expected|.
#ifndef MLBRIDGE_TESTS_TFAOT_TF_CASES_H
#define MLBRIDGE_TESTS_TFAOT_TF_CASES_H

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "json/json.h"
#include "mlbridge/model_runner.h"

namespace mlbridge {
namespace tf_cases {

inline const char* const kDir = MLBRIDGE_TF_MODELS_DIR;
inline const char* const kIgnored = "a_feature_the_model_ignores";

inline json::Value loadCases(const std::string& model) {
  std::ifstream f(std::string(kDir) + "/" + model + "/cases.json");
  std::stringstream ss;
  ss << f.rdbuf();
  auto v = json::parse(ss.str());
  EXPECT_TRUE(v.ok()) << v.status().message();
  return v.ok() ? *v : json::Value();
}

// Flattens a nested JSON list of numbers.
inline void flatten(const json::Value& v, std::vector<double>* out) {
  if (v.isArray()) {
    for (const json::Value& x : v.items()) flatten(x, out);
    return;
  }
  double d = 0;
  ASSERT_TRUE(v.toDouble(&d));
  out->push_back(d);
}

inline void setInput(ModelRunner& r, size_t i, const json::Value& v) {
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

inline void expectOutput(const ModelRunner& r, size_t i, const json::Value& want, const char* who, int caseNo) {
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
inline void checkCases(const std::string& model, std::vector<std::pair<const char*, ModelRunner*>> runners) {
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

}  // namespace tf_cases
}  // namespace mlbridge

#endif  // MLBRIDGE_TESTS_TFAOT_TF_CASES_H
