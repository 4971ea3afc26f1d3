// The built-in ONNX engine's refusals and contracts: unsupported or broken
// models fail at load with a message naming the node; garbage, truncated and
// randomly mutated files give errors, never crashes (also run under ASan);
// spec matching (missing feature, wrong dtype/shape, advice by name or
// position, symbolic dimensions); runtime errors; no allocation in evaluate.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "engine/graph.h"
#include "engine/program.h"
#include "mlbridge/onnx_runner.h"

// Heap allocation counter of the test binary (framed_codec_test.cc replaces
// the global operator new); weak so that this test skips if it is absent.
namespace mlbridge {
namespace testing {
__attribute__((weak)) size_t heapAllocations();
}  // namespace testing
}  // namespace mlbridge

namespace mlbridge {
namespace {

const std::string kModels = std::string(MLBRIDGE_SOURCE_DIR) + "/tests/engine/models";

std::string readAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Status loadStatus(const std::string& file) { return OnnxModel::load(kModels + "/" + file).status(); }

void expectMentions(const Status& s, std::initializer_list<const char*> words) {
  EXPECT_FALSE(s.ok());
  for (const char* w : words) EXPECT_NE(s.message().find(w), std::string::npos) << "'" << w << "' not in: " << s.toString();
}

TEST(EngineFaults, UnsupportedModelsNameTheNode) {
  Status s = loadStatus("faults/unknown_op.onnx");
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  expectMentions(s, {"node #1", "mystery", "FancyOp"});
  expectMentions(loadStatus("faults/custom_domain.onnx"), {"node #0", "msrelu", "com.microsoft"});
  s = loadStatus("faults/bad_attribute_value.onnx");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  expectMentions(s, {"node #1", "\"fc\"", "Gemm", "transA"});
  s = loadStatus("faults/unsupported_attribute.onnx");
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  expectMentions(s, {"\"sm\"", "Softmax", "temperature"});
  expectMentions(loadStatus("faults/unsupported_activation.onnx"), {"\"rnn\"", "LSTM", "Softsign"});
  expectMentions(loadStatus("faults/old_opset.onnx"), {"opset 11", "13"});
  expectMentions(loadStatus("faults/float16_input.onnx"), {"'h'", "FLOAT16"});
  expectMentions(loadStatus("faults/undefined_input.onnx"), {"\"adder\"", "'nope'"});
  expectMentions(loadStatus("faults/shape_mismatch.onnx"), {"\"mm\"", "MatMul", "inner"});
  expectMentions(loadStatus("faults/runtime_reshape.onnx"), {"\"rs\"", "Reshape", "'shape'", "load time"});
  s = loadStatus("faults/does_not_exist.onnx");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
}

TEST(EngineFaults, GarbageIsRefused) {
  const char* texts[] = {"", "hello, world", "\x08\x07", "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
                         "\x3a\x80\x80\x80\x80\x10"};
  for (const char* t : texts) {
    StatusOr<std::shared_ptr<const OnnxModel>> m = OnnxModel::loadFromMemory(t, std::strlen(t));
    EXPECT_FALSE(m.ok()) << "accepted '" << t << "'";
  }
  std::mt19937 rng(1234);
  for (int i = 0; i < 200; ++i) {
    std::string junk(static_cast<size_t>(rng() % 4096), '\0');
    for (char& ch : junk) ch = static_cast<char>(rng());
    EXPECT_FALSE(OnnxModel::loadFromMemory(junk.data(), junk.size()).ok());
  }
}

TEST(EngineFaults, TruncatedFilesAreRefused) {
  for (const char* file : {"mlp_matmul_batch.onnx", "lstm_policy.onnx", "ops_shape.onnx"}) {
    std::string bytes = readAll(kModels + "/" + file);
    ASSERT_FALSE(bytes.empty());
    size_t step = bytes.size() > 4000 ? 7 : 1;
    for (size_t n = 0; n < bytes.size(); n += step) {
      StatusOr<std::shared_ptr<const OnnxModel>> m = OnnxModel::loadFromMemory(bytes.data(), n);
      EXPECT_FALSE(m.ok()) << file << " truncated to " << n << " bytes loaded";
    }
  }
}

// Random mutations (fixed seed): load must return, never crash; a model that
// still loads must evaluate (or refuse) without touching memory it does not
// own. Sizes are capped so a mutated dimension cannot ask for gigabytes.
TEST(EngineFaults, MutatedFilesNeverCrash) {
  OnnxLoadOptions opts;
  opts.maxTensorBytes = size_t(1) << 20;
  std::mt19937 rng(20240611);
  int loaded = 0, total = 0;
  for (const char* file : {"ops_shape.onnx", "ops_math.onnx", "gru_reverse_batch3.onnx", "lstm_bidi_peephole_clip.onnx",
                           "ops_int.onnx", "mlp_matmul_batch.onnx", "typed_initializers.onnx"}) {
    const std::string original = readAll(kModels + "/" + file);
    ASSERT_FALSE(original.empty()) << file;
    for (int i = 0; i < 1000; ++i) {
      std::string b = original;
      int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits; ++e) {
        size_t at = rng() % b.size();
        switch (rng() % 5) {
          case 0: b[at] = static_cast<char>(rng()); break;
          case 1: b[at] = static_cast<char>(b[at] ^ (1 << (rng() % 8))); break;
          case 2: b.erase(at, 1 + rng() % 8); break;
          case 3: b.insert(at, 1 + rng() % 4, static_cast<char>(rng())); break;
          case 4: b[at] = static_cast<char>(b[at] + 1); break;
        }
        if (b.empty()) b = "x";
      }
      ++total;
      StatusOr<std::shared_ptr<const OnnxModel>> m = OnnxModel::loadFromMemory(b.data(), b.size(), opts);
      if (!m.ok()) {
        EXPECT_FALSE(m.status().message().empty());
        continue;
      }
      ++loaded;
      StatusOr<std::unique_ptr<NativeModelRunner>> r =
          NativeModelRunner::create(*m, (*m)->inputs(), (*m)->outputs());
      if (!r.ok()) continue;  // e.g. duplicate output names after the mutation
      (void)(*r)->evaluate();
    }
  }
  EXPECT_GT(total - loaded, total / 3) << "most mutations should be refused";
}

// ---- spec matching ----------------------------------------------------------------------

std::shared_ptr<const OnnxModel> load(const std::string& file, const OnnxLoadOptions& o = OnnxLoadOptions()) {
  StatusOr<std::shared_ptr<const OnnxModel>> m = OnnxModel::load(kModels + "/" + file, o);
  EXPECT_TRUE(m.ok()) << m.status().toString();
  return m.ok() ? *m : nullptr;
}

TEST(EngineRunner, MissingFeatureIsNamed) {
  auto m = load("lstm_policy.onnx");
  ASSERT_TRUE(m);
  auto r = NativeModelRunner::create(m, {TensorSpec::create<float>("obs", {1, 8, 16}), TensorSpec::create<float>("h0", {1, 1, 32})},
                                     {TensorSpec::create<int64_t>("action", {1})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  expectMentions(r.status(), {"'c0'", "float", "[1,1,32]"});
}

TEST(EngineRunner, WrongDtypeOrShapeIsRefused) {
  auto m = load("mlp_300_64_64_15.onnx");
  ASSERT_TRUE(m);
  TensorSpec probs = TensorSpec::create<float>("probs", {1, 15});
  auto r = NativeModelRunner::create(m, {TensorSpec::create<double>("x", {1, 300})}, {probs});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  expectMentions(r.status(), {"'x'", "double", "float"});
  r = NativeModelRunner::create(m, {TensorSpec::create<float>("x", {300})}, {probs});
  ASSERT_FALSE(r.ok());
  expectMentions(r.status(), {"'x'", "[300]", "[1,300]"});
  r = NativeModelRunner::create(m, {TensorSpec::create<float>("x", {1, 300})}, {TensorSpec::create<int64_t>("probs", {1, 15})});
  ASSERT_FALSE(r.ok());
  expectMentions(r.status(), {"'probs'", "int64_t", "float"});
  r = NativeModelRunner::create(m, {TensorSpec::create<float>("x", {1, 300})}, {TensorSpec::create<float>("probs", {15})});
  ASSERT_FALSE(r.ok());
  expectMentions(r.status(), {"'probs'", "[15]", "[1,15]"});
}

TEST(EngineRunner, ExtraFeaturesAreIgnoredAndAdviceFallsBackToPosition) {
  auto m = load("mlp_300_64_64_15.onnx");
  ASSERT_TRUE(m);
  std::vector<TensorSpec> features = {TensorSpec::create<int64_t>("callee_users", {1}),
                                      TensorSpec::create<float>("x", {1, 300}),
                                      TensorSpec("a_string", DType::kString, {1})};
  auto r = NativeModelRunner::create(m, features, {TensorSpec::create<float>("decision_probs", {1, 15})});
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_EQ((*r)->boundOutputName(0), "probs");
  for (float& v : (*r)->input<float>(1)) v = 0.25f;
  ASSERT_TRUE((*r)->evaluate().ok());
  float sum = 0;
  for (float p : (*r)->output<float>(0)) sum += p;
  EXPECT_NEAR(sum, 1.0f, 1e-5);
}

TEST(EngineRunner, PartialAdviceNameMatchIsAnError) {
  auto m = load("actor_critic.onnx");
  ASSERT_TRUE(m);
  auto r = NativeModelRunner::create(m, {TensorSpec::create<float>("x", {1, 40})},
                                     {TensorSpec::create<float>("policy", {1, 6}), TensorSpec::create<float>("v", {1, 1}),
                                      TensorSpec::create<int64_t>("a", {1, 1})});
  ASSERT_FALSE(r.ok());
  expectMentions(r.status(), {"'v'", "'policy'", "'value'", "'action'"});
  // A subset of the outputs, by name, is fine.
  r = NativeModelRunner::create(m, {TensorSpec::create<float>("x", {1, 40})}, {TensorSpec::create<float>("value", {1, 1})});
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_EQ((*r)->boundOutputName(0), "value");
}

TEST(EngineRunner, SymbolicBatchDimension) {
  auto m = load("mlp_matmul_batch.onnx");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->inputs()[0].shape(), (std::vector<int64_t>{1, 20}));
  EXPECT_EQ(m->declaredInputDims(0), (std::vector<int64_t>{-1, 20}));
  EXPECT_EQ(m->declaredInputDimNames(0)[0], "batch");
  OnnxLoadOptions o;
  o.dimValues = {{"batch", 5}};
  auto m5 = load("mlp_matmul_batch.onnx", o);
  ASSERT_TRUE(m5);
  EXPECT_EQ(m5->inputs()[0].shape(), (std::vector<int64_t>{5, 20}));
  EXPECT_EQ(m5->outputs()[0].shape(), (std::vector<int64_t>{5, 8}));
  // A runner binding batch = 4 gets its own specialization; the shared model is unchanged.
  auto r = NativeModelRunner::create(m, {TensorSpec::create<float>("x", {4, 20})}, {TensorSpec::create<float>("logp", {4, 8})});
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_NE((*r)->model().get(), m.get());
  EXPECT_EQ((*r)->model()->inputs()[0].shape(), (std::vector<int64_t>{4, 20}));
  EXPECT_EQ(m->inputs()[0].shape(), (std::vector<int64_t>{1, 20}));
  // The default binding reuses the loaded model.
  auto r1 = NativeModelRunner::create(m, {TensorSpec::create<float>("x", {1, 20})}, {TensorSpec::create<float>("logp", {1, 8})});
  ASSERT_TRUE(r1.ok());
  EXPECT_EQ((*r1)->model().get(), m.get());
  // A fixed dimension cannot change.
  auto bad = NativeModelRunner::create(m, {TensorSpec::create<float>("x", {4, 21})}, {TensorSpec::create<float>("logp", {4, 8})});
  ASSERT_FALSE(bad.ok());
  expectMentions(bad.status(), {"[4,21]", "[-1,20]"});
}

TEST(EngineRunner, RuntimeErrorsNameTheNode) {
  auto m = load("ops_int.onnx");
  ASSERT_TRUE(m);
  auto r = NativeModelRunner::create(m, {TensorSpec::create<int64_t>("ids", {3})}, {TensorSpec::create<float>("emb", {3, 4})});
  ASSERT_TRUE(r.ok()) << r.status().toString();
  Span<int64_t> ids = (*r)->input<int64_t>(0);
  ids[0] = 1;
  ids[1] = 2;
  ids[2] = 3;
  EXPECT_TRUE((*r)->evaluate().ok());
  ids[1] = 10;  // the table has 10 rows
  Status s = (*r)->evaluate();
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  expectMentions(s, {"Gather", "out of range"});
  ids[1] = -10;  // negative indices count from the end
  EXPECT_TRUE((*r)->evaluate().ok());
}

TEST(EngineRunner, PlanFusesTheMlpIntoThreeDenseSteps) {
  auto m = load("mlp_300_64_64_15.onnx");
  ASSERT_TRUE(m);
  const engine::Program& p = m->program();
  ASSERT_EQ(p.steps.size(), 3u) << m->dumpProgram();
  for (const engine::Step& s : p.steps) EXPECT_STREQ(s.kernel, "dense");
  EXPECT_NE(m->dumpGraph().find("Gemm"), std::string::npos);
  EXPECT_LE(m->workingBytes(), 2u * 64 * 4 + 2 * 64) << "two 64-float buffers reused";
}

TEST(EngineRunner, ConstantSubgraphsAreFolded) {
  // IR invariant: no node left with only constant inputs; Shape, Range,
  // ConstantOfShape, Size never survive import.
  for (const char* file : {"ops_shape.onnx", "ops_int.onnx", "lstm_policy.onnx"}) {
    auto m = load(file);
    ASSERT_TRUE(m);
    const engine::Graph& g = m->graph();
    for (const engine::Node& n : g.nodes) {
      bool runtime = false;
      for (int v : n.inputs)
        if (v >= 0 && !g.value(v).isConstant()) runtime = true;
      EXPECT_TRUE(runtime) << n.describe() << " in " << file;
      EXPECT_NE(n.op, engine::Op::kShape);
      EXPECT_NE(n.op, engine::Op::kRange);
      EXPECT_NE(n.op, engine::Op::kConstantOfShape);
      EXPECT_NE(n.op, engine::Op::kSize);
    }
  }
}

TEST(EngineRunner, EvaluateDoesNotAllocate) {
  if (!&testing::heapAllocations) GTEST_SKIP() << "no allocation counter in this binary";
  for (const char* file : {"mlp_300_64_64_15.onnx", "lstm_policy.onnx", "ops_math.onnx", "gru_bidi_clip.onnx"}) {
    auto m = load(file);
    ASSERT_TRUE(m);
    auto r = NativeModelRunner::create(m, m->inputs(), m->outputs());
    ASSERT_TRUE(r.ok()) << r.status().toString();
    Status first = (*r)->evaluate();
    ASSERT_TRUE(first.ok()) << file << ": " << first.toString();
    size_t before = testing::heapAllocations();
    for (int i = 0; i < 10; ++i) ASSERT_TRUE((*r)->evaluate().ok());
    EXPECT_EQ(testing::heapAllocations() - before, 0u) << file;
  }
}

}  // namespace
}  // namespace mlbridge
