// TfAotModelRunner against a hand-written descriptor (no TensorFlow needed):
// binding, copies in and out, and every failure path of the descriptor.
// Real XLA-compiled models: tests/tfaot (ctest label tf).
#include <gtest/gtest.h>

#include <cstring>

#include "mlbridge/aot_model.h"
#include "mlbridge/mlbridge.h"
#include "mlbridge/tfaot_runner.h"

namespace mlbridge {
namespace {

// A fake XLA function: y = a + b[0] + b[1] (float [1]); decision = y > 0 (int64 [1]).
struct FakeInstance {
  int64_t a[1];
  float b[2];
  float y[1];
  int64_t decision[1];
};
const char* gCreateError = nullptr;  // fault injection
const char* gRunError = nullptr;
int gLive = 0;

const int64_t kOne[] = {1};
const int64_t kOneTwo[] = {1, 2};
const mlbridge_aot_tensor kFeeds[] = {{"a", 9, "int64_t", 1, kOne, 8}, {"b", 1, "float", 2, kOneTwo, 8}};
const mlbridge_aot_tensor kFetches[] = {{"decision", 9, "int64_t", 1, kOne, 8}, {"y", 1, "float", 1, kOne, 4}};

const char* fakeCreate(void** out) {
  *out = nullptr;
  if (gCreateError) return gCreateError;
  *out = new FakeInstance();
  ++gLive;
  return nullptr;
}
void fakeDestroy(void* p) {
  --gLive;
  delete static_cast<FakeInstance*>(p);
}
void* fakeFeed(void* p, size_t i) {
  FakeInstance* in = static_cast<FakeInstance*>(p);
  return i == 0 ? static_cast<void*>(in->a) : i == 1 ? static_cast<void*>(in->b) : nullptr;
}
const void* fakeFetch(void* p, size_t i) {
  FakeInstance* in = static_cast<FakeInstance*>(p);
  return i == 0 ? static_cast<const void*>(in->decision) : i == 1 ? static_cast<const void*>(in->y) : nullptr;
}
const char* fakeRun(void* p) {
  if (gRunError) return gRunError;
  FakeInstance* in = static_cast<FakeInstance*>(p);
  in->y[0] = static_cast<float>(in->a[0]) + in->b[0] + in->b[1];
  in->decision[0] = in->y[0] > 0 ? 1 : 0;
  return nullptr;
}

mlbridge_tfaot_model fakeModel() {
  return mlbridge_tfaot_model{MLBRIDGE_TFAOT_ABI_VERSION, "Fake", "fake_saved_model", "serving_default", 2, kFeeds,
                              2, kFetches, fakeCreate, fakeDestroy, fakeFeed, fakeFetch, fakeRun};
}

std::vector<TensorSpec> features() {
  return {TensorSpec::create<float>("b", {1, 2}), TensorSpec::create<int64_t>("unused", {1}),
          TensorSpec::create<int64_t>("a", {1})};
}

class TfAotRunner : public ::testing::Test {
 protected:
  void SetUp() override {
    gCreateError = gRunError = nullptr;
    gLive = 0;
  }
  void TearDown() override { EXPECT_EQ(gLive, 0) << "an instance leaked"; }
};

TEST_F(TfAotRunner, BindsByNameAndEvaluates) {
  mlbridge_tfaot_model m = fakeModel();
  auto r = TfAotModelRunner::create(&m, features(), {TensorSpec::create<float>("y", {1}),
                                                      TensorSpec::create<int64_t>("decision", {1})});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(gLive, 1);
  (*r)->input<float>(0)[0] = 0.5f;
  (*r)->input<float>(0)[1] = 0.25f;
  (*r)->input<int64_t>(2)[0] = -2;
  ASSERT_TRUE((*r)->evaluate().ok());
  EXPECT_EQ((*r)->output<float>(0)[0], -1.25f);
  EXPECT_EQ((*r)->output<int64_t>(1)[0], 0);
  (*r)->input<int64_t>(2)[0] = 7;
  auto y = (*r)->evaluate<float>();
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(*y, 7.75f);
  EXPECT_EQ((*r)->output<int64_t>(1)[0], 1);
  EXPECT_EQ(TfAotModelRunner::feedsOf(&m)[1], TensorSpec::create<float>("b", {1, 2}));
  EXPECT_EQ(TfAotModelRunner::fetchesOf(&m)[0].name(), "decision");
}

TEST_F(TfAotRunner, MissingFeatureIsNotFoundNamingIt) {
  mlbridge_tfaot_model m = fakeModel();
  auto r = TfAotModelRunner::create(&m, {TensorSpec::create<int64_t>("a", {1})}, {TensorSpec::create<float>("y", {1})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("'b'"), std::string::npos) << r.status().message();
  EXPECT_EQ(gLive, 0);
}

TEST_F(TfAotRunner, WrongDtypeOrShapeIsRefused) {
  mlbridge_tfaot_model m = fakeModel();
  auto r = TfAotModelRunner::create(&m, {TensorSpec::create<int32_t>("a", {1}), TensorSpec::create<float>("b", {1, 2})},
                                    {TensorSpec::create<float>("y", {1})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  r = TfAotModelRunner::create(&m, {TensorSpec::create<int64_t>("a", {1}), TensorSpec::create<float>("b", {2})},
                               {TensorSpec::create<float>("y", {1})});
  ASSERT_FALSE(r.ok());
  r = TfAotModelRunner::create(&m, features(), {TensorSpec::create<int64_t>("y", {1})});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("advice 'y'"), std::string::npos) << r.status().message();
  r = TfAotModelRunner::create(&m, features(), {TensorSpec::create<float>("nope", {1})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

TEST_F(TfAotRunner, RefusesOtherDescriptors) {
  mlbridge_tfaot_model m = fakeModel();
  m.abi_version = MLBRIDGE_AOT_ABI_VERSION;  // an mlbridge-aot descriptor's version
  auto r = TfAotModelRunner::create(&m, features(), {TensorSpec::create<float>("y", {1})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("aot runner"), std::string::npos) << r.status().message();
  m = fakeModel();
  m.run = nullptr;
  EXPECT_EQ(TfAotModelRunner::create(&m, features(), {TensorSpec::create<float>("y", {1})}).status().code(),
            StatusCode::kInvalidArgument);
  m = fakeModel();
  mlbridge_aot_tensor lying[] = {kFeeds[0], kFeeds[1]};
  lying[1].bytes = 4;  // shape [1,2] float is 8 bytes
  m.feeds = lying;
  EXPECT_EQ(TfAotModelRunner::create(&m, features(), {TensorSpec::create<float>("y", {1})}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_FALSE(TfAotModelRunner::create(nullptr, features(), {TensorSpec::create<float>("y", {1})}).ok());
}

TEST_F(TfAotRunner, CreateAndRunFailuresAreStatuses) {
  mlbridge_tfaot_model m = fakeModel();
  gCreateError = "cannot allocate the XLA function's buffers";
  auto r = TfAotModelRunner::create(&m, features(), {TensorSpec::create<float>("y", {1})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("buffers"), std::string::npos);
  gCreateError = nullptr;
  r = TfAotModelRunner::create(&m, features(), {TensorSpec::create<float>("y", {1})});
  ASSERT_TRUE(r.ok());
  gRunError = "the XLA function reported an error";
  Status s = (*r)->evaluate();
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_NE(s.message().find("'Fake'"), std::string::npos) << s.message();
  gRunError = nullptr;
  EXPECT_TRUE((*r)->evaluate().ok());
}

TEST_F(TfAotRunner, CApi) {
  mlbridge_tfaot_model m = fakeModel();
  int64_t one = 1, two[2] = {1, 2};
  mlb_spec* a = nullptr;
  mlb_spec* b = nullptr;
  mlb_spec* y = nullptr;
  mlb_error* err = nullptr;
  ASSERT_EQ(mlb_spec_create("a", MLB_DTYPE_INT64, &one, 1, &a, &err), MLB_OK);
  ASSERT_EQ(mlb_spec_create("b", MLB_DTYPE_FLOAT32, two, 2, &b, &err), MLB_OK);
  ASSERT_EQ(mlb_spec_create("y", MLB_DTYPE_FLOAT32, &one, 1, &y, &err), MLB_OK);
  const mlb_spec* f[] = {a, b};
  const mlb_spec* adv[] = {y};
  mlb_runner* r = nullptr;
  ASSERT_EQ(mlb_tfaot_runner_create(&m, f, 2, adv, 1, &r, &err), MLB_OK);
  const char* kind = nullptr;
  ASSERT_EQ(mlb_runner_kind(r, &kind), MLB_OK);
  EXPECT_STREQ(kind, "tfaot");
  mlb_runner_destroy(r);
  EXPECT_EQ(mlb_tfaot_runner_create(nullptr, f, 2, adv, 1, &r, &err), MLB_INVALID_ARGUMENT);
  mlb_error_free(err);
  mlb_spec_destroy(a);
  mlb_spec_destroy(b);
  mlb_spec_destroy(y);
}

}  // namespace
}  // namespace mlbridge
