// The ModelRunner base: buffers, both API styles, checked conversions.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "mlbridge/model_runner.h"

namespace mlbridge {
namespace {

// Output 0 = sum of input 0's elements as the output's type; counts calls.
class SumRunner : public ModelRunner {
 public:
  static std::unique_ptr<SumRunner> make(std::vector<TensorSpec> in, std::vector<TensorSpec> out) {
    std::unique_ptr<SumRunner> r(new SumRunner(std::move(in), std::move(out)));
    EXPECT_TRUE(r->initBuffers().ok());
    return r;
  }
  int calls = 0;
  std::string context;

 private:
  using ModelRunner::ModelRunner;
  Status evaluateImpl() override {
    ++calls;
    const TensorRef& in = inputRefs()[0];
    double sum = 0;
    for (size_t k = 0; k < in.spec->elementCount(); ++k) {
      if (in.spec->type() == DType::kInt64) sum += static_cast<const int64_t*>(in.data)[k];
      if (in.spec->type() == DType::kFloat32) sum += static_cast<const float*>(in.data)[k];
    }
    const MutableTensorRef& o = outputRefs()[0];
    for (size_t k = 0; k < o.spec->elementCount(); ++k) {
      if (o.spec->type() == DType::kInt64) static_cast<int64_t*>(o.data)[k] = static_cast<int64_t>(sum) + int64_t(k);
      if (o.spec->type() == DType::kFloat32) static_cast<float*>(o.data)[k] = static_cast<float>(sum);
    }
    return Status::OK();
  }
  Status setContextImpl(std::string_view name) override {
    context = std::string(name);
    return Status::OK();
  }
};

TEST(ModelRunner, LlvmStyleZeroCopyInputs) {
  auto r = SumRunner::make({TensorSpec::create<int64_t>("a", {3})}, {TensorSpec::create<int64_t>("d", {1})});
  Span<int64_t> a = r->input<int64_t>(0);
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % 64, 0u) << "inputs are cache-line aligned";
  a[0] = 1; a[1] = 2; a[2] = 3;
  EXPECT_EQ(r->getTensor<int64_t>(0), a.data());
  StatusOr<int64_t> v = r->evaluate<int64_t>();
  ASSERT_TRUE(v.ok()) << v.status().toString();
  EXPECT_EQ(*v, 6);
}

TEST(ModelRunner, WrongInputTypeIsReportedByEvaluate) {
  auto r = SumRunner::make({TensorSpec::create<int64_t>("a", {1})}, {TensorSpec::create<int64_t>("d", {1})});
  EXPECT_TRUE(r->input<float>(0).empty());
  Status s = r->evaluate();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'a' is int64_t but was accessed as float"), std::string::npos) << s.message();
  EXPECT_EQ(r->calls, 0) << "the model must not run on a misused buffer";
  EXPECT_TRUE(r->evaluate().ok()) << "the error is reported once";
  EXPECT_TRUE(r->input<int64_t>(7).empty());
  EXPECT_EQ(r->evaluate().code(), StatusCode::kInvalidArgument);
}

TEST(ModelRunner, EvaluateAsWrongTypeIsAnErrorNotAReinterpretation) {
  auto r = SumRunner::make({TensorSpec::create<int64_t>("a", {1})}, {TensorSpec::create<int64_t>("d", {1})});
  StatusOr<float> f = r->evaluate<float>();
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(f.status().message().find("requested as float"), std::string::npos);
}

TEST(ModelRunner, VectorOutputsCopiedOrViewed) {
  auto r = SumRunner::make({TensorSpec::create<int64_t>("a", {1})}, {TensorSpec::create<int64_t>("d", {4})});
  ASSERT_TRUE(r->setFeature("a", 10).ok());
  StatusOr<int64_t> scalar = r->evaluate<int64_t>();
  EXPECT_FALSE(scalar.ok()) << "a 4-element output is not a scalar";
  ASSERT_TRUE(r->evaluate().ok());
  StatusOr<std::vector<int64_t>> v = r->outputVector<int64_t>(0);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, (std::vector<int64_t>{10, 11, 12, 13}));
  std::vector<int64_t> buf(4);
  EXPECT_TRUE(r->outputInto<int64_t>(0, Span<int64_t>(buf)).ok());
  EXPECT_EQ(buf, *v);
  std::vector<int64_t> small(3);
  EXPECT_FALSE(r->outputInto<int64_t>(0, Span<int64_t>(small)).ok());
  EXPECT_EQ(r->output<int64_t>(0).size(), 4u);
  EXPECT_TRUE(r->output<int32_t>(0).empty());
}

TEST(ModelRunner, PaperStylePopulateFeatures) {
  auto r = SumRunner::make({TensorSpec::create<float>("v", {3}), TensorSpec::create<int64_t>("n", {1}),
                            TensorSpec::create<double>("x", {2, 2}), TensorSpec::create<bool>("flag", {1})},
                           {TensorSpec::create<float>("d", {1})});
  std::vector<float> v = {1.5f, 2.5f, 3.0f};
  std::vector<double> x = {1, 2, 3, 4};
  int64_t shape[] = {2, 2};
  Status s = r->populateFeatures({"v", v}, {"n", 7}, {"x", Span<const double>(x), Span<const int64_t>(shape)},
                                 {"flag", true});
  ASSERT_TRUE(s.ok()) << s.toString();
  EXPECT_EQ(r->input<int64_t>(1)[0], 7);
  EXPECT_EQ(r->input<double>(2)[3], 4.0);
  EXPECT_EQ(r->input<bool>(3)[0], true);
  StatusOr<float> out = r->evaluate<float>();
  ASSERT_TRUE(out.ok());
  EXPECT_FLOAT_EQ(*out, 7.0f);
}

TEST(ModelRunner, ConversionsPreserveValuesOrFail) {
  auto r = SumRunner::make({TensorSpec::create<int64_t>("i", {1}), TensorSpec::create<uint8_t>("u8", {1}),
                            TensorSpec::create<float>("f", {1}), TensorSpec::create<bool>("b", {1})},
                           {TensorSpec::create<float>("d", {1})});
  EXPECT_TRUE(r->setFeature("i", int32_t(-5)).ok());
  EXPECT_EQ(r->input<int64_t>(0)[0], -5);
  EXPECT_EQ(r->setFeature("i", 2.5).code(), StatusCode::kInvalidArgument) << "float -> int truncates";
  EXPECT_EQ(r->setFeature("i", std::numeric_limits<uint64_t>::max()).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(r->setFeature("u8", 255).ok());
  EXPECT_EQ(r->setFeature("u8", 256).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r->setFeature("u8", -1).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(r->setFeature("f", 0.1).ok()) << "double literal rounds to float";
  EXPECT_FLOAT_EQ(r->input<float>(2)[0], 0.1f);
  EXPECT_TRUE(r->setFeature("f", 16777216).ok());
  EXPECT_EQ(r->setFeature("f", 16777217).code(), StatusCode::kInvalidArgument) << "not exact in float";
  EXPECT_EQ(r->setFeature("f", 1e300).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(r->setFeature("f", std::nan("")).ok());
  EXPECT_TRUE(r->setFeature("b", 1).ok());
  EXPECT_EQ(r->setFeature("b", 2).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r->setFeature("missing", 1).code(), StatusCode::kNotFound);
  EXPECT_EQ(r->setFeature("i", std::vector<int64_t>{1, 2}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r->setFeature("i", "text").code(), StatusCode::kInvalidArgument);
}

TEST(ModelRunner, StringFeatures) {
  auto r = SumRunner::make({TensorSpec::create<int64_t>("a", {1}), TensorSpec("s", DType::kString, {2})},
                           {TensorSpec::create<int64_t>("d", {1})});
  std::vector<std::string> words = {"alpha", "beta"};
  ASSERT_TRUE(r->setFeature("s", words).ok());
  EXPECT_EQ(r->inputIndex("s"), 1);
  EXPECT_EQ(static_cast<std::string*>(r->inputData(1))[1], "beta");
}

TEST(ModelRunner, SpecsAreValidated) {
  class Bare : public ModelRunner {
   public:
    using ModelRunner::initBuffers;
    Bare(std::vector<TensorSpec> in, std::vector<TensorSpec> out) : ModelRunner(std::move(in), std::move(out)) {}
    Status evaluateImpl() override { return Status::OK(); }
  };
  Bare dup({TensorSpec::create<int64_t>("a", {1}), TensorSpec::create<int64_t>("a", {1})},
           {TensorSpec::create<int64_t>("d", {1})});
  EXPECT_EQ(dup.initBuffers().code(), StatusCode::kInvalidArgument);
  Bare neg({TensorSpec::create<int64_t>("a", {-1})}, {TensorSpec::create<int64_t>("d", {1})});
  EXPECT_EQ(neg.initBuffers().code(), StatusCode::kInvalidArgument);
  Bare noOut({TensorSpec::create<int64_t>("a", {1})}, {});
  EXPECT_EQ(noOut.initBuffers().code(), StatusCode::kInvalidArgument);
  Bare empty({TensorSpec::create<float>("e", {0}), TensorSpec::create<float>("s", {})},
             {TensorSpec::create<int64_t>("d", {})});
  EXPECT_TRUE(empty.initBuffers().ok());
  EXPECT_EQ(empty.inputSpecs()[1].elementCount(), 1u) << "shape [] is a scalar";
}

TEST(ModelRunner, FinishEndsTheSession) {
  auto r = SumRunner::make({TensorSpec::create<int64_t>("a", {1})}, {TensorSpec::create<int64_t>("d", {1})});
  EXPECT_TRUE(r->setContext("f1").ok());
  EXPECT_EQ(r->context, "f1");
  EXPECT_TRUE(r->finish().ok());
  EXPECT_TRUE(r->finish().ok()) << "idempotent";
  EXPECT_EQ(r->evaluate().code(), StatusCode::kFailedPrecondition);
}

TEST(TensorSpec, JsonIsLlvmsExactForm) {
  TensorSpec s = TensorSpec::create<int64_t>("sroa_savings", {1});
  EXPECT_EQ(s.toJSON(), "{\"name\":\"sroa_savings\",\"type\":\"int64_t\",\"port\":0,\"shape\":[1]}");
  StatusOr<TensorSpec> back = TensorSpec::fromJSON(" { \"shape\" : [2, 3], \"type\":\"float32\", \"name\":\"x\" } ");
  ASSERT_TRUE(back.ok()) << back.status().toString();
  EXPECT_EQ(*back, TensorSpec::create<float>("x", {2, 3}));
  EXPECT_FALSE(TensorSpec::fromJSON("{\"name\":\"x\",\"type\":\"complex\",\"shape\":[1]}").ok());
  EXPECT_FALSE(TensorSpec::fromJSON("{\"name\":\"x\",\"type\":\"float\",\"shape\":[-2]}").ok());
  EXPECT_FALSE(TensorSpec::fromJSON("{\"name\":\"x\",\"type\":\"float\",\"shape\":[1.5]}").ok());
  EXPECT_FALSE(TensorSpec::fromJSON("[1]").ok());
}

TEST(DType, NamesAndSizes) {
  EXPECT_EQ(dtypeOf<float>(), DType::kFloat32);
  EXPECT_EQ(dtypeOf<long long>(), DType::kInt64);
  EXPECT_EQ(dtypeOf<bool>(), DType::kBool);
  EXPECT_EQ(parseDType("int64_t"), DType::kInt64);
  EXPECT_EQ(parseDType("uint16"), DType::kUInt16);
  EXPECT_EQ(parseDType("nope"), DType::kInvalid);
  EXPECT_EQ(dtypeSize(DType::kFloat64), 8u);
  EXPECT_EQ(dtypeSize(DType::kString), 0u);
  EXPECT_STREQ(dtypeName(DType::kUInt8), "uint8_t");
}

}  // namespace
}  // namespace mlbridge

namespace mlbridge {
namespace {

TEST(StatusOr, ReadingAnErrorsValueNeverAborts) {
  StatusOr<int64_t> e = deadlineExceeded("no reply within 5 ms");
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.value(), 0);
  EXPECT_FALSE(e.ok()) << "still an error after the misuse";
  EXPECT_EQ(e.status().toString(), "DEADLINE_EXCEEDED: no reply within 5 ms");
  StatusOr<std::unique_ptr<int>> p = unavailable("gone");
  EXPECT_EQ(p.value(), nullptr);
  StatusOr<int> built = Status::OK();
  EXPECT_EQ(built.status().code(), StatusCode::kInternal) << "an OK status without a value is a bug, reported";
  StatusOr<std::string> v = std::string("x");
  EXPECT_TRUE(v.ok());
  EXPECT_EQ(*v, "x");
}

}  // namespace
}  // namespace mlbridge
