// ONNX Runtime runner: spec matching and its errors, error paths of loading,
// dtypes, symbolic dimensions, outputs ONNX Runtime does not write in place,
// zero-copy buffers, options, the shared environment and the log hook.
#include <gtest/gtest.h>

#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "mlbridge/log.h"
#include "mlbridge/onnxruntime_runner.h"
#include "onnx_builder.h"

namespace mlbridge {
namespace {

namespace ox = onnxtest;
using ModelPtr = std::shared_ptr<const OnnxRuntimeModel>;
using RunnerPtr = std::unique_ptr<OnnxRuntimeRunner>;

const std::string kFaults = std::string(MLBRIDGE_SOURCE_DIR) + "/tests/engine/models/faults";

ModelPtr loadBytes(const std::string& bytes, const OnnxRuntimeOptions& options = OnnxRuntimeOptions()) {
  StatusOr<ModelPtr> m = OnnxRuntimeModel::loadFromMemory(bytes.data(), bytes.size(), options);
  EXPECT_TRUE(m.ok()) << m.status().toString();
  return m.ok() ? *m : nullptr;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A temporary file removed at the end of the test.
struct TempFile {
  explicit TempFile(const std::string& bytes) {
    char tmpl[] = "/tmp/mlbridge-ort-test-XXXXXX";
    int fd = mkstemp(tmpl);
    EXPECT_GE(fd, 0);
    path = tmpl;
    EXPECT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    close(fd);
  }
  ~TempFile() { unlink(path.c_str()); }
  std::string path;
};

// y = relu(x) * 2 + b, x float [1,4].
std::string smallModel() {
  ox::Graph g;
  g.nodes = {ox::node("Relu", {"x"}, {"r"}), ox::node("Mul", {"r", "two"}, {"m"}), ox::node("Add", {"m", "b"}, {"y"})};
  g.initializers = {ox::floatTensor("two", {}, {2.f}), ox::floatTensor("b", {1, 4}, {0.5f, 1.5f, -1.f, 0.f})};
  g.inputs = {ox::valueInfo("x", ox::kFloat, {1, 4})};
  g.outputs = {ox::valueInfo("y", ox::kFloat, {1, 4})};
  return ox::model(g);
}

TEST(OrtModel, VersionsAndDescription) {
  EXPECT_FALSE(OnnxRuntimeModel::runtimeVersion().empty());
  EXPECT_GE(OnnxRuntimeModel::apiVersion(), 17);
  ModelPtr m = loadBytes(smallModel());
  ASSERT_TRUE(m);
  ASSERT_EQ(m->inputs().size(), 1u);
  EXPECT_EQ(m->inputs()[0], TensorSpec::create<float>("x", {1, 4}));
  ASSERT_EQ(m->outputs().size(), 1u);
  EXPECT_EQ(m->outputs()[0], TensorSpec::create<float>("y", {1, 4}));
  EXPECT_EQ(m->inputTypeName(0), "float");
  EXPECT_EQ(m->producer(), "mlbridge ort tests");
  EXPECT_EQ(m->options().intraOpThreads, 1);
}

TEST(OrtRunner, EvaluatesAndReusesItsBuffers) {
  ModelPtr m = loadBytes(smallModel());
  ASSERT_TRUE(m);
  StatusOr<RunnerPtr> r = OnnxRuntimeRunner::create(m, {TensorSpec::create<float>("x", {1, 4})},
                                                    {TensorSpec::create<float>("y", {1, 4})});
  ASSERT_TRUE(r.ok()) << r.status().toString();
  OnnxRuntimeRunner& runner = **r;
  EXPECT_EQ(runner.model(), m);
  float* in = runner.getTensor<float>(0);
  const void* out = runner.outputRef(0).data;
  const float xs[2][4] = {{1, -2, 3, 0.25f}, {-1, 4, 0, 10}};
  for (const auto& x : xs) {
    std::memcpy(in, x, sizeof x);
    ASSERT_TRUE(runner.evaluate().ok());
    Span<const float> y = runner.output<float>(0);
    ASSERT_EQ(y.size(), 4u);
    EXPECT_EQ(static_cast<const void*>(y.data()), out);  // written in place
    const float b[4] = {0.5f, 1.5f, -1.f, 0.f};
    for (int k = 0; k < 4; ++k) EXPECT_FLOAT_EQ(y[k], (x[k] > 0 ? x[k] : 0) * 2 + b[k]) << k;
  }
  EXPECT_EQ(runner.getTensor<float>(0), in);  // same storage across calls
  ASSERT_TRUE(runner.finish().ok());
  EXPECT_FALSE(runner.evaluate().ok());
}

TEST(OrtRunner, HeapDoesNotGrowAcrossCalls) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
  ModelPtr m = loadBytes(smallModel());
  ASSERT_TRUE(m);
  StatusOr<RunnerPtr> r = OnnxRuntimeRunner::create(m, {TensorSpec::create<float>("x", {1, 4})},
                                                    {TensorSpec::create<float>("y", {1, 4})});
  ASSERT_TRUE(r.ok());
  for (int i = 0; i < 200; ++i) ASSERT_TRUE((*r)->evaluate().ok());
  const size_t before = mallinfo2().uordblks;
  for (int i = 0; i < 5000; ++i) ASSERT_TRUE((*r)->evaluate().ok());
  const size_t after = mallinfo2().uordblks;
  EXPECT_LT(after > before ? after - before : 0, size_t(64) << 10) << "bytes in use grew over 5,000 calls";
#else
  GTEST_SKIP() << "needs glibc's mallinfo2";
#endif
}

// ---- loading errors ------------------------------------------------------------------

TEST(OrtErrors, MissingFile) {
  StatusOr<ModelPtr> m = OnnxRuntimeModel::load("/nonexistent-mlbridge-dir/model.onnx");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(contains(m.status().message(), "/nonexistent-mlbridge-dir/model.onnx")) << m.status().toString();
  StatusOr<RunnerPtr> r = OnnxRuntimeRunner::create("/nonexistent-mlbridge-dir/model.onnx",
                                                    {TensorSpec::create<float>("x", {1})},
                                                    {TensorSpec::create<float>("y", {1})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

TEST(OrtErrors, DirectoryInsteadOfAFile) {
  StatusOr<ModelPtr> m = OnnxRuntimeModel::load("/tmp");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument) << m.status().toString();
}

TEST(OrtErrors, GarbageFileKeepsOnnxRuntimesMessage) {
  TempFile f("\x08\x07garbage, not a protobuf \xff\xff\xff\xff");
  StatusOr<ModelPtr> m = OnnxRuntimeModel::load(f.path);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kDataLoss) << m.status().toString();
  EXPECT_TRUE(contains(m.status().message(), f.path)) << m.status().toString();
  EXPECT_GT(m.status().message().size(), f.path.size() + 10) << "ONNX Runtime's own words are kept";
  // The same from memory, and an empty buffer.
  const std::string garbage = "not a model at all";
  StatusOr<ModelPtr> m2 = OnnxRuntimeModel::loadFromMemory(garbage.data(), garbage.size());
  ASSERT_FALSE(m2.ok());
  EXPECT_EQ(m2.status().code(), StatusCode::kDataLoss) << m2.status().toString();
  StatusOr<ModelPtr> m3 = OnnxRuntimeModel::loadFromMemory(nullptr, 0);
  ASSERT_FALSE(m3.ok());
  EXPECT_EQ(m3.status().code(), StatusCode::kDataLoss);
}

TEST(OrtErrors, TruncatedModel) {
  std::string bytes = smallModel();
  bytes.resize(bytes.size() / 2);
  StatusOr<ModelPtr> m = OnnxRuntimeModel::loadFromMemory(bytes.data(), bytes.size());
  ASSERT_FALSE(m.ok());
  EXPECT_FALSE(m.status().message().empty());
}

TEST(OrtErrors, UnknownOperator) {
  ox::Graph g;
  g.nodes = {ox::node("NoSuchOperatorAnywhere", {"x"}, {"y"})};
  g.inputs = {ox::valueInfo("x", ox::kFloat, {1})};
  g.outputs = {ox::valueInfo("y", ox::kFloat, {1})};
  std::string bytes = ox::model(g);
  StatusOr<ModelPtr> m = OnnxRuntimeModel::loadFromMemory(bytes.data(), bytes.size());
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(contains(m.status().message(), "NoSuchOperatorAnywhere")) << m.status().toString();
}

TEST(OrtErrors, BadOptions) {
  const std::string bytes = smallModel();
  OnnxRuntimeOptions o;
  o.intraOpThreads = -1;
  EXPECT_EQ(OnnxRuntimeModel::loadFromMemory(bytes.data(), bytes.size(), o).status().code(),
            StatusCode::kInvalidArgument);
  o = OnnxRuntimeOptions();
  o.logSeverity = 7;
  EXPECT_EQ(OnnxRuntimeModel::loadFromMemory(bytes.data(), bytes.size(), o).status().code(),
            StatusCode::kInvalidArgument);
  o = OnnxRuntimeOptions();
  o.dimValues = {{"batch", -3}};
  EXPECT_EQ(OnnxRuntimeModel::loadFromMemory(bytes.data(), bytes.size(), o).status().code(),
            StatusCode::kInvalidArgument);
}

// ---- matching the compiler's specs --------------------------------------------------

TEST(OrtSpecs, MissingInputIsNamed) {
  ModelPtr m = loadBytes(smallModel());
  ASSERT_TRUE(m);
  StatusOr<RunnerPtr> r = OnnxRuntimeRunner::create(m, {TensorSpec::create<float>("not_x", {1, 4})},
                                                    {TensorSpec::create<float>("y", {1, 4})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(contains(r.status().message(), "'x'")) << r.status().toString();
  EXPECT_TRUE(contains(r.status().message(), "not_x")) << r.status().toString();
}

TEST(OrtSpecs, WrongDtype) {
  ModelPtr m = loadBytes(smallModel());
  ASSERT_TRUE(m);
  StatusOr<RunnerPtr> r = OnnxRuntimeRunner::create(m, {TensorSpec::create<double>("x", {1, 4})},
                                                    {TensorSpec::create<float>("y", {1, 4})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(r.status().message(), "double")) << r.status().toString();
  r = OnnxRuntimeRunner::create(m, {TensorSpec::create<float>("x", {1, 4})}, {TensorSpec::create<int64_t>("y", {1, 4})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(r.status().message(), "advice 'y'")) << r.status().toString();
}

TEST(OrtSpecs, WrongShape) {
  ModelPtr m = loadBytes(smallModel());
  ASSERT_TRUE(m);
  StatusOr<RunnerPtr> r = OnnxRuntimeRunner::create(m, {TensorSpec::create<float>("x", {4})},
                                                    {TensorSpec::create<float>("y", {1, 4})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(r.status().message(), "[4]")) << r.status().toString();
  r = OnnxRuntimeRunner::create(m, {TensorSpec::create<float>("x", {1, 4})}, {TensorSpec::create<float>("y", {4})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(OrtSpecs, AdviceMatchingNoOutputListsTheOutputs) {
  ModelPtr m = loadBytes(smallModel());
  ASSERT_TRUE(m);
  StatusOr<RunnerPtr> r = OnnxRuntimeRunner::create(
      m, {TensorSpec::create<float>("x", {1, 4})},
      {TensorSpec::create<float>("y", {1, 4}), TensorSpec::create<float>("nope", {1})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(contains(r.status().message(), "'nope'")) << r.status().toString();
  EXPECT_TRUE(contains(r.status().message(), "'y' (float [1,4])")) << r.status().toString();
  EXPECT_FALSE(OnnxRuntimeRunner::create(m, {TensorSpec::create<float>("x", {1, 4})}, {}).ok());
  EXPECT_FALSE(OnnxRuntimeRunner::create(ModelPtr(), {}, {TensorSpec::create<float>("y", {1, 4})}).ok());
}

TEST(OrtSpecs, AdviceByPositionWhenNoNameMatches) {
  ModelPtr m = loadBytes(smallModel());
  ASSERT_TRUE(m);
  StatusOr<RunnerPtr> r = OnnxRuntimeRunner::create(m, {TensorSpec::create<float>("x", {1, 4})},
                                                    {TensorSpec::create<float>("decision", {1, 4})});
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_EQ((*r)->boundOutputName(0), "y");
  std::fill_n((*r)->getTensor<float>(0), 4, 1.f);
  ASSERT_TRUE((*r)->evaluate().ok());
  EXPECT_FLOAT_EQ((*r)->output<float>(0)[0], 2.5f);
}

TEST(OrtSpecs, UnsupportedInputTypeIsUnimplemented) {
  ox::Graph g;
  g.nodes = {ox::node("Cast", {"h"}, {"y"}, {ox::Attr::Int("to", ox::kFloat)})};
  g.inputs = {ox::valueInfo("h", ox::kFloat16, {2})};
  g.outputs = {ox::valueInfo("y", ox::kFloat, {2})};
  ModelPtr m = loadBytes(ox::model(g));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->inputs()[0].type(), DType::kInvalid);
  EXPECT_EQ(m->inputTypeName(0), "float16");
  StatusOr<RunnerPtr> r = OnnxRuntimeRunner::create(m, {TensorSpec::create<float>("h", {2})},
                                                    {TensorSpec::create<float>("y", {2})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_TRUE(contains(r.status().message(), "float16")) << r.status().toString();
}

TEST(OrtSpecs, EngineFaultModelWithFloat16Input) {
  StatusOr<ModelPtr> m = OnnxRuntimeModel::load(kFaults + "/float16_input.onnx");
  if (!m.ok() && m.status().code() == StatusCode::kNotFound) GTEST_SKIP() << "no engine fault models";
  ASSERT_TRUE(m.ok()) << m.status().toString();
  std::vector<TensorSpec> features;
  for (const TensorSpec& s : (*m)->inputs()) features.emplace_back(s.name(), DType::kFloat32, std::vector<int64_t>{1});
  StatusOr<RunnerPtr> r = OnnxRuntimeRunner::create(*m, features, {TensorSpec::create<float>("y", {1})});
  EXPECT_FALSE(r.ok());
}

// ---- dtypes ---------------------------------------------------------------------------

TEST(OrtDtypes, IntegersBoolsAndDoubles) {
  ox::Graph g;
  g.nodes = {ox::node("Add", {"a", "b"}, {"sum"}), ox::node("Not", {"flag"}, {"nflag"}),
             ox::node("Mul", {"d", "d"}, {"dd"}), ox::node("Cast", {"a"}, {"a32"}, {ox::Attr::Int("to", ox::kInt32)}),
             ox::node("Neg", {"i8"}, {"ni8"})};
  g.inputs = {ox::valueInfo("a", ox::kInt64, {3}), ox::valueInfo("b", ox::kInt64, {3}),
              ox::valueInfo("flag", ox::kBool, {2}), ox::valueInfo("d", ox::kDouble, {2}),
              ox::valueInfo("i8", ox::kInt8, {2})};
  g.outputs = {ox::valueInfo("sum", ox::kInt64, {3}), ox::valueInfo("nflag", ox::kBool, {2}),
               ox::valueInfo("dd", ox::kDouble, {2}), ox::valueInfo("a32", ox::kInt32, {3}),
               ox::valueInfo("ni8", ox::kInt8, {2})};
  ModelPtr m = loadBytes(ox::model(g));
  ASSERT_TRUE(m);
  StatusOr<RunnerPtr> r = OnnxRuntimeRunner::create(
      m,
      {TensorSpec::create<int64_t>("a", {3}), TensorSpec::create<int64_t>("b", {3}),
       TensorSpec::create<bool>("flag", {2}), TensorSpec::create<double>("d", {2}),
       TensorSpec::create<int8_t>("i8", {2})},
      {TensorSpec::create<int64_t>("sum", {3}), TensorSpec::create<bool>("nflag", {2}),
       TensorSpec::create<double>("dd", {2}), TensorSpec::create<int32_t>("a32", {3}),
       TensorSpec::create<int8_t>("ni8", {2})});
  ASSERT_TRUE(r.ok()) << r.status().toString();
  ASSERT_TRUE((*r)->populateFeatures({"a", std::vector<int64_t>{1, -2, int64_t(1) << 40}},
                                     {"b", std::vector<int64_t>{10, 20, 1}}, {"d", std::vector<double>{1.5, -3.0}},
                                     {"i8", std::vector<int8_t>{-128 + 1, 5}})
                  .ok());
  bool* flag = (*r)->getTensor<bool>(2);
  flag[0] = true;
  flag[1] = false;
  ASSERT_TRUE((*r)->evaluate().ok());
  EXPECT_EQ((*r)->outputVector<int64_t>(0).value(), (std::vector<int64_t>{11, 18, (int64_t(1) << 40) + 1}));
  Span<const bool> nflag = (*r)->output<bool>(1);
  ASSERT_EQ(nflag.size(), 2u);
  EXPECT_FALSE(nflag[0]);
  EXPECT_TRUE(nflag[1]);
  EXPECT_EQ((*r)->outputVector<double>(2).value(), (std::vector<double>{2.25, 9.0}));
  EXPECT_EQ((*r)->outputVector<int32_t>(3).value()[1], -2);
  EXPECT_EQ((*r)->outputVector<int8_t>(4).value(), (std::vector<int8_t>{127, -5}));
}

// ---- symbolic dimensions --------------------------------------------------------------

std::string batchModel() {  // y[N,4] = relu(x[N,4]) + z[N,4]
  ox::Graph g;
  g.nodes = {ox::node("Relu", {"x"}, {"r"}), ox::node("Add", {"r", "z"}, {"y"})};
  g.inputs = {ox::valueInfo("x", ox::kFloat, {"N", 4}), ox::valueInfo("z", ox::kFloat, {"N", 4})};
  g.outputs = {ox::valueInfo("y", ox::kFloat, {"N", 4})};
  return ox::model(g);
}

TEST(OrtSymbolic, FeaturesBindSymbolicDimensions) {
  ModelPtr m = loadBytes(batchModel());
  ASSERT_TRUE(m);
  EXPECT_EQ(m->inputs()[0].shape(), (std::vector<int64_t>{-1, 4}));
  EXPECT_EQ(m->declaredInputDimNames(0), (std::vector<std::string>{"N", ""}));
  EXPECT_EQ(m->declaredOutputDimNames(0), (std::vector<std::string>{"N", ""}));
  for (int64_t n : {1, 3}) {
    StatusOr<RunnerPtr> r = OnnxRuntimeRunner::create(
        m, {TensorSpec::create<float>("x", {n, 4}), TensorSpec::create<float>("z", {n, 4})},
        {TensorSpec::create<float>("y", {n, 4})});
    ASSERT_TRUE(r.ok()) << r.status().toString();
    for (int64_t k = 0; k < n * 4; ++k) {
      (*r)->getTensor<float>(0)[k] = static_cast<float>(k % 3) - 1.f;
      (*r)->getTensor<float>(1)[k] = 10.f;
    }
    ASSERT_TRUE((*r)->evaluate().ok());
    for (int64_t k = 0; k < n * 4; ++k)
      EXPECT_FLOAT_EQ((*r)->output<float>(0)[static_cast<size_t>(k)], (k % 3 == 2 ? 1.f : 0.f) + 10.f);
  }
}

TEST(OrtSymbolic, OneDimParamOneValue) {
  ModelPtr m = loadBytes(batchModel());
  ASSERT_TRUE(m);
  StatusOr<RunnerPtr> r = OnnxRuntimeRunner::create(
      m, {TensorSpec::create<float>("x", {2, 4}), TensorSpec::create<float>("z", {3, 4})},
      {TensorSpec::create<float>("y", {2, 4})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(r.status().message(), "dimension 'N'")) << r.status().toString();
}

TEST(OrtSymbolic, AdviceOfAnotherShapeFailsAtEvaluate) {
  ModelPtr m = loadBytes(batchModel());
  ASSERT_TRUE(m);
  StatusOr<RunnerPtr> r = OnnxRuntimeRunner::create(
      m, {TensorSpec::create<float>("x", {3, 4}), TensorSpec::create<float>("z", {3, 4})},
      {TensorSpec::create<float>("y", {2, 4})});
  ASSERT_TRUE(r.ok()) << r.status().toString();  // y's batch is only known when it runs
  Status s = (*r)->evaluate();
  ASSERT_FALSE(s.ok());
  EXPECT_FALSE(s.message().empty());
}

TEST(OrtSymbolic, DimValuesFixDimensionsAtLoad) {
  OnnxRuntimeOptions o;
  o.dimValues = {{"N", 2}};
  ModelPtr m = loadBytes(batchModel(), o);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->inputs()[0].shape(), (std::vector<int64_t>{2, 4}));
  StatusOr<RunnerPtr> bad = OnnxRuntimeRunner::create(
      m, {TensorSpec::create<float>("x", {3, 4}), TensorSpec::create<float>("z", {3, 4})},
      {TensorSpec::create<float>("y", {3, 4})});
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  StatusOr<RunnerPtr> good = OnnxRuntimeRunner::create(
      m, {TensorSpec::create<float>("x", {2, 4}), TensorSpec::create<float>("z", {2, 4})},
      {TensorSpec::create<float>("y", {2, 4})});
  ASSERT_TRUE(good.ok()) << good.status().toString();
  EXPECT_TRUE((*good)->evaluate().ok());
}

// ---- outputs ONNX Runtime does not compute into the bound buffer --------------------

TEST(OrtOutputs, PassThroughAndConstantOutputsAreCopied) {
  // out_x is the input itself, c is an initializer, k a folded constant, y computed.
  ox::Graph g;
  g.nodes = {ox::node("Identity", {"x"}, {"out_x"}), ox::node("Add", {"c", "c"}, {"k"}),
             ox::node("Add", {"x", "c"}, {"y"})};
  g.initializers = {ox::floatTensor("c", {3}, {1.f, 2.f, 3.f})};
  g.inputs = {ox::valueInfo("x", ox::kFloat, {3})};
  g.outputs = {ox::valueInfo("out_x", ox::kFloat, {3}), ox::valueInfo("c", ox::kFloat, {3}),
               ox::valueInfo("k", ox::kFloat, {3}), ox::valueInfo("y", ox::kFloat, {3})};
  for (auto level : {OnnxRuntimeOptions::Optimization::kNone, OnnxRuntimeOptions::Optimization::kAll}) {
    OnnxRuntimeOptions o;
    o.optimization = level;
    ModelPtr m = loadBytes(ox::model(g), o);
    ASSERT_TRUE(m);
    StatusOr<RunnerPtr> r = OnnxRuntimeRunner::create(
        m, {TensorSpec::create<float>("x", {3})},
        {TensorSpec::create<float>("y", {3}), TensorSpec::create<float>("out_x", {3}),
         TensorSpec::create<float>("c", {3}), TensorSpec::create<float>("k", {3})});
    ASSERT_TRUE(r.ok()) << r.status().toString();
    for (float base : {10.f, 20.f, -5.f}) {
      for (int k = 0; k < 3; ++k) (*r)->getTensor<float>(0)[k] = base + static_cast<float>(k);
      Status s = (*r)->evaluate();
      ASSERT_TRUE(s.ok()) << s.toString();
      for (int k = 0; k < 3; ++k) {
        const float x = base + static_cast<float>(k), c = static_cast<float>(k + 1);
        EXPECT_FLOAT_EQ((*r)->output<float>(0)[k], x + c);
        EXPECT_FLOAT_EQ((*r)->output<float>(1)[k], x) << "pass-through output, base " << base;
        EXPECT_FLOAT_EQ((*r)->output<float>(2)[k], c) << "initializer output";
        EXPECT_FLOAT_EQ((*r)->output<float>(3)[k], 2 * c) << "constant output";
      }
    }
  }
}

TEST(OrtOutputs, GraphInputListedAsOutputIsCopied) {
  // ONNX Runtime hands back the input itself for "x": the runner notices on
  // the first call and copies it into the advice buffer on every call.
  ox::Graph g;
  g.nodes = {ox::node("Add", {"x", "c"}, {"y"})};
  g.initializers = {ox::floatTensor("c", {3}, {1.f, 2.f, 3.f})};
  g.inputs = {ox::valueInfo("x", ox::kFloat, {3})};
  g.outputs = {ox::valueInfo("x", ox::kFloat, {3}), ox::valueInfo("c", ox::kFloat, {3}),
               ox::valueInfo("y", ox::kFloat, {3})};
  ModelPtr m = loadBytes(ox::model(g));
  ASSERT_TRUE(m);
  StatusOr<RunnerPtr> r = OnnxRuntimeRunner::create(
      m, {TensorSpec::create<float>("x", {3})},
      {TensorSpec::create<float>("x", {3}), TensorSpec::create<float>("c", {3}), TensorSpec::create<float>("y", {3})});
  ASSERT_TRUE(r.ok()) << r.status().toString();
  for (float base : {10.f, 20.f, 30.f}) {
    for (int k = 0; k < 3; ++k) (*r)->getTensor<float>(0)[k] = base + static_cast<float>(k);
    Status s = (*r)->evaluate();
    ASSERT_TRUE(s.ok()) << s.toString();
    for (int k = 0; k < 3; ++k) {
      EXPECT_FLOAT_EQ((*r)->output<float>(0)[k], base + static_cast<float>(k)) << "base " << base;
      EXPECT_FLOAT_EQ((*r)->output<float>(1)[k], static_cast<float>(k + 1));
      EXPECT_FLOAT_EQ((*r)->output<float>(2)[k], base + static_cast<float>(2 * k + 1));
    }
  }
}

// ---- threads, the environment and the log ---------------------------------------------

TEST(OrtThreads, ModelsLoadedConcurrentlyShareOneEnvironment) {
  const std::string bytes = smallModel();
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) {
        StatusOr<ModelPtr> m = OnnxRuntimeModel::loadFromMemory(bytes.data(), bytes.size());
        if (!m.ok()) {
          ++failures;
          continue;
        }
        StatusOr<RunnerPtr> r = OnnxRuntimeRunner::create(*m, {TensorSpec::create<float>("x", {1, 4})},
                                                          {TensorSpec::create<float>("y", {1, 4})});
        if (!r.ok()) {
          ++failures;
          continue;
        }
        std::fill_n((*r)->getTensor<float>(0), 4, static_cast<float>(t));
        if (!(*r)->evaluate().ok() || (*r)->output<float>(0)[3] != 2.f * static_cast<float>(t)) ++failures;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(OrtThreads, RunnerOutlivesEveryOtherHandleOnTheModel) {
  StatusOr<RunnerPtr> r = OnnxRuntimeRunner::create(
      loadBytes(smallModel()), {TensorSpec::create<float>("x", {1, 4})}, {TensorSpec::create<float>("y", {1, 4})});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE((*r)->evaluate().ok());
}

struct Captured {
  std::mutex mu;
  std::vector<std::string> lines;
};

void capture(LogLevel, const char* message, void* user) {
  Captured* c = static_cast<Captured*>(user);
  std::lock_guard<std::mutex> lock(c->mu);
  c->lines.push_back(message);
}

TEST(OrtLog, MessagesGoToTheHookNotToStderr) {
  Captured c;
  setLogHook(capture, &c);
  OnnxRuntimeOptions o;
  o.logSeverity = 0;  // verbose: ONNX Runtime says a lot while it builds a session
  ModelPtr m = loadBytes(smallModel(), o);
  setLogHook(nullptr, nullptr);
  ASSERT_TRUE(m);
  std::lock_guard<std::mutex> lock(c.mu);
  EXPECT_FALSE(c.lines.empty());
  if (!c.lines.empty()) {
    EXPECT_TRUE(contains(c.lines[0], "onnxruntime")) << c.lines[0];
  }
}

}  // namespace
}  // namespace mlbridge
