// Bounded work on untrusted models (docs/reliability.md, "Limits"): the
// 1 GiB ConstantOfShape model fails at its first node, before allocating;
// Slice steps of INT64_MAX / INT64_MIN give the right answer (they once
// overflowed); each limit of OnnxLoadOptions is enforced with an error
// naming the node and the option. Range over extreme int64 values is exact.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <sstream>

#include "engine/import.h"
#include "engine/onnx_proto.h"
#include "mlbridge/onnx_runner.h"

namespace mlbridge {
namespace {

const std::string kModels = std::string(MLBRIDGE_SOURCE_DIR) + "/tests/engine/models";

void expectMentions(const Status& s, std::initializer_list<const char*> words) {
  EXPECT_FALSE(s.ok());
  for (const char* w : words) EXPECT_NE(s.message().find(w), std::string::npos) << "'" << w << "' not in: " << s.toString();
}

TEST(EngineLimits, ConstantOfShapeBombFailsAtItsFirstNode) {
  // The error names the ConstantOfShape node: the budget is charged before
  // its 1 GiB is allocated (the Add nodes after it are never reached).
  Status s = OnnxModel::load(kModels + "/limits/constant_of_shape_bomb.onnx").status();
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  expectMentions(s, {"\"big\" (ConstantOfShape)", "1073741824", "maxFoldedBytes"});
  // A larger folding budget: the per-tensor limit still refuses it, still at "big".
  OnnxLoadOptions o;
  o.maxFoldedBytes = size_t(8) << 30;
  o.maxTensorBytes = size_t(512) << 20;
  s = OnnxModel::load(kModels + "/limits/constant_of_shape_bomb.onnx", o).status();
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  expectMentions(s, {"\"big\" (ConstantOfShape)", "tensor limit", "maxTensorBytes"});
}

TEST(EngineLimits, FoldingBudgetCountsEveryFoldedNode) {
  // The bomb with 2^10 floats (4 KiB per constant): a budget one byte short
  // of the constant plus the first Add's output stops at that Add; a budget
  // for all five constants and the sum loads, and the model computes 2^10 * 16.
  const std::string path = kModels + "/limits/constant_of_shape_small.onnx";
  OnnxLoadOptions o;
  o.maxFoldedBytes = 2 * 4096 - 1;
  Status s = OnnxModel::load(path, o).status();
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  expectMentions(s, {"\"add0\" (Add)", "4096 already used", "maxFoldedBytes"});
  o.maxFoldedBytes = 5 * 4096 + 4;
  StatusOr<std::shared_ptr<const OnnxModel>> m = OnnxModel::load(path, o);
  ASSERT_TRUE(m.ok()) << m.status().toString();
  StatusOr<std::unique_ptr<NativeModelRunner>> r = NativeModelRunner::create(*m, {}, (*m)->outputs());
  ASSERT_TRUE(r.ok()) << r.status().toString();
  ASSERT_TRUE((*r)->evaluate().ok());
  EXPECT_EQ(*static_cast<const float*>((*r)->outputRef(0).data), 16384.0f);
}

TEST(EngineLimits, SliceWithExtremeStepsEvaluatesCorrectly) {
  StatusOr<std::shared_ptr<const OnnxModel>> m = OnnxModel::load(kModels + "/limits/slice_extreme_steps.onnx");
  ASSERT_TRUE(m.ok()) << m.status().toString();
  StatusOr<std::unique_ptr<NativeModelRunner>> r = NativeModelRunner::create(*m, (*m)->inputs(), (*m)->outputs());
  ASSERT_TRUE(r.ok()) << r.status().toString();
  float* x = (*r)->getTensor<float>(0);
  for (int i = 0; i < 4; ++i) x[i] = static_cast<float>(i + 1);
  ASSERT_TRUE((*r)->evaluate().ok());
  // onnx.reference: a = x[:, 0:1] + k[:, 0:1] = 11; b = x[:, 3:4] + k[:, 3:4] = 44.
  EXPECT_EQ(*static_cast<const float*>((*r)->outputRef(0).data), 11.0f);
  EXPECT_EQ(*static_cast<const float*>((*r)->outputRef(1).data), 44.0f);
}

TEST(EngineLimits, RangeOverTheWholeInt64Line) {
  // Found while fixing the Slice class of defect: k * delta overflowed
  // (UBSan), and next to INT64_MAX the count, computed in double, was 0.
  StatusOr<std::shared_ptr<const OnnxModel>> m = OnnxModel::load(kModels + "/limits/range_int64_extremes.onnx");
  ASSERT_TRUE(m.ok()) << m.status().toString();
  StatusOr<std::unique_ptr<NativeModelRunner>> r = NativeModelRunner::create(*m, {}, (*m)->outputs());
  ASSERT_TRUE(r.ok()) << r.status().toString();
  ASSERT_TRUE((*r)->evaluate().ok());
  const int64_t* wide = static_cast<const int64_t*>((*r)->outputRef(0).data);
  const int64_t* top = static_cast<const int64_t*>((*r)->outputRef(1).data);
  const int64_t q = int64_t(1) << 62, M = INT64_MAX;
  EXPECT_EQ(std::vector<int64_t>(wide, wide + 4), (std::vector<int64_t>{INT64_MIN, -q, 0, q}));
  EXPECT_EQ(std::vector<int64_t>(top, top + 4), (std::vector<int64_t>{M - 10, M - 7, M - 4, M - 1}));
}

TEST(EngineLimits, GraphDepth) {
  OnnxLoadOptions o;
  o.maxGraphDepth = 2;
  Status s = OnnxModel::load(kModels + "/mlp_deep_opset21.onnx", o).status();
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  expectMentions(s, {"node #", "deeper than 2", "maxGraphDepth"});
  EXPECT_TRUE(OnnxModel::load(kModels + "/mlp_deep_opset21.onnx").ok());
}

TEST(EngineLimits, ModelSize) {
  std::ifstream f(kModels + "/mlp_deep_opset21.onnx", std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string bytes = ss.str();
  OnnxLoadOptions o;
  o.maxFileBytes = bytes.size() - 1;
  Status s = OnnxModel::loadFromMemory(bytes.data(), bytes.size(), o).status();
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  expectMentions(s, {"maxFileBytes"});
  EXPECT_FALSE(OnnxModel::load(kModels + "/mlp_deep_opset21.onnx", o).ok());
  o.maxFileBytes = bytes.size();
  EXPECT_TRUE(OnnxModel::loadFromMemory(bytes.data(), bytes.size(), o).ok());
}

TEST(EngineLimits, InitializerClaimingMoreThanItHoldsIsRefusedBeforeAllocation) {
  // A TensorProto with dims [2^28] float and 4 bytes of raw_data: refused
  // for the mismatch (not after allocating 1 GiB; ASan would also see it).
  std::string t;
  t += '\x08';  // dims (varint) = 2^28
  t += std::string("\x80\x80\x80\x80\x01", 5);
  t += '\x10';  // data_type = FLOAT
  t += '\x01';
  t += '\x42';  // name "w"
  t += '\x01';
  t += 'w';
  t += '\x4a';  // raw_data, 4 bytes
  t += '\x04';
  t += std::string(4, '\0');
  std::string graph = std::string("\x2a") + static_cast<char>(t.size()) + t;  // GraphProto.initializer = 5
  std::string model = std::string("\x08\x08") + "\x3a" + static_cast<char>(graph.size()) + graph;  // ir 8, graph 7
  engine::onnx::ReadOptions ro;
  StatusOr<engine::onnx::ModelDesc> desc = engine::onnx::readModel(model.data(), model.size(), ro);
  ASSERT_TRUE(desc.ok()) << desc.status().toString();
  ASSERT_EQ(desc->graph.initializers.size(), 1u);
  expectMentions(desc->graph.initializers[0].status, {"4 bytes of raw_data", "1073741824"});
}

TEST(EngineLimits, LoadDeadline) {
  // The importer checks its deadline before every node; one already past
  // stops it at node #0 with kDeadlineExceeded (no timing in the test).
  std::ifstream f(kModels + "/mlp_deep_opset21.onnx", std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string bytes = ss.str();
  StatusOr<engine::onnx::ModelDesc> desc = engine::onnx::readModel(bytes.data(), bytes.size(), engine::onnx::ReadOptions());
  ASSERT_TRUE(desc.ok());
  StatusOr<std::vector<engine::InputDecl>> decls = engine::declaredInputs(*desc);
  ASSERT_TRUE(decls.ok());
  std::vector<engine::Shape> shapes;
  for (const engine::InputDecl& d : *decls) shapes.push_back(d.dims);
  engine::ImportOptions io;
  io.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  Status s = engine::importGraph(*desc, shapes, io).status();
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded);
  expectMentions(s, {"node #0", "loadTimeoutMs"});
  io.deadline = std::chrono::steady_clock::time_point::max();
  EXPECT_TRUE(engine::importGraph(*desc, shapes, io).ok());
}

}  // namespace
}  // namespace mlbridge
