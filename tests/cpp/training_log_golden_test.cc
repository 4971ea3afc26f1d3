// The LLVM plugin's training log, pinned by golden bytes (tests/vectors/
// llvm_inliner_training*.log, written by the plugin through LLVM's own
// TrainingLogger; llvm_inliner_training.json holds the expected values). The
// C++ bitstream decoder must read exactly what the Python tests read:
// the header's specs, one context, observation/outcome pairs, and the reward
// slot that set_log_reward rewrites in place.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "codec_testing.h"
#include "json/json.h"
#include "wire/codec.h"

#ifndef MLBRIDGE_VECTORS_DIR
#error "MLBRIDGE_VECTORS_DIR must name tests/vectors"
#endif

namespace mlbridge {
namespace testing {
namespace {

using wire::DecodedMessage;

std::string slurp(const std::string& name) {
  std::ifstream in(std::string(MLBRIDGE_VECTORS_DIR) + "/" + name, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int64_t scalar(const wire::DecodedTensor& t) {
  int64_t v = 0;
  EXPECT_EQ(t.bytes.size(), sizeof v) << t.spec.name();
  if (t.bytes.size() == sizeof v) std::memcpy(&v, t.bytes.data(), sizeof v);
  return v;
}

class TrainingLogGolden : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<json::Value> m = json::parse(slurp("llvm_inliner_training.json"));
    ASSERT_TRUE(m.ok()) << m.status().toString();
    manifest_ = std::move(*m);
    for (const char* key : {"log", "rewarded", "features", "observations", "context", "reward"})
      ASSERT_NE(manifest_.find(key), nullptr) << "llvm_inliner_training.json lacks " << key;
    ASSERT_NE(manifest_.find("reward")->find("delta_size"), nullptr);
  }

  // Decodes `file` and checks it against the manifest; returns the scores.
  std::vector<int64_t> check(const std::string& file) {
    std::vector<int64_t> scores;
    const std::string bytes = slurp(file);
    EXPECT_FALSE(bytes.empty()) << file;
    std::vector<DecodedMessage> msgs;
    Status s = wire::makeBitstreamCodec()->decodeToModelStream(bytesOf(bytes), msgs);
    EXPECT_TRUE(s.ok()) << s.toString();
    const json::Value& features = *manifest_.find("features");
    const json::Value& observations = *manifest_.find("observations");
    const size_t n = observations.items().size();
    EXPECT_EQ(msgs.size(), 2 + 2 * n);
    if (msgs.size() != 2 + 2 * n) return scores;

    const DecodedMessage& h = msgs[0];
    EXPECT_EQ(h.kind, DecodedMessage::Kind::kHeader);
    EXPECT_EQ(h.specs.features.size(), features.items().size());
    for (size_t i = 0; i < h.specs.features.size() && i < features.items().size(); ++i) {
      EXPECT_EQ(h.specs.features[i].name(), features.items()[i].text());
      EXPECT_EQ(h.specs.features[i].type(), DType::kInt64);
      EXPECT_EQ(h.specs.features[i].shape(), std::vector<int64_t>{1});
    }
    EXPECT_EQ(h.score, std::vector<TensorSpec>{TensorSpec("delta_size", DType::kInt64, {1})});
    EXPECT_EQ(h.specs.advice, std::vector<TensorSpec>{TensorSpec("inlining_decision", DType::kInt64, {1})});
    EXPECT_EQ(msgs[1].kind, DecodedMessage::Kind::kContext);
    EXPECT_EQ(msgs[1].name, manifest_.find("context")->text());

    for (size_t i = 0; i < n; ++i) {
      SCOPED_TRACE("observation " + std::to_string(i));
      const DecodedMessage& o = msgs[2 + 2 * i];
      const DecodedMessage& r = msgs[3 + 2 * i];
      EXPECT_EQ(o.kind, DecodedMessage::Kind::kObservation);
      EXPECT_EQ(o.id, int64_t(i));
      const json::Value& want = observations.items()[i];
      EXPECT_EQ(o.tensors.size(), want.items().size());
      for (size_t k = 0; k < o.tensors.size() && k < want.items().size(); ++k) {
        int64_t w = 0;
        EXPECT_TRUE(want.items()[k].toInt64(&w));
        EXPECT_EQ(scalar(o.tensors[k]), w) << o.tensors[k].spec.name();
      }
      EXPECT_EQ(r.kind, DecodedMessage::Kind::kOutcome);
      EXPECT_EQ(r.id, int64_t(i));
      EXPECT_EQ(r.tensors.size(), 1u);
      if (r.tensors.size() == 1) scores.push_back(scalar(r.tensors[0]));
    }
    return scores;
  }

  json::Value manifest_;
};

TEST_F(TrainingLogGolden, PluginLogDecodes) {
  std::vector<int64_t> scores = check(manifest_.find("log")->text());
  ASSERT_FALSE(scores.empty());
  for (int64_t s : scores) EXPECT_EQ(s, 0);  // the compiler writes 0 everywhere
}

TEST_F(TrainingLogGolden, RewardSlotIsTheLastOutcome) {
  std::vector<int64_t> scores = check(manifest_.find("rewarded")->text());
  ASSERT_FALSE(scores.empty());
  int64_t delta = 0;
  ASSERT_TRUE(manifest_.find("reward")->find("delta_size")->toInt64(&delta));
  ASSERT_NE(delta, 0);
  EXPECT_EQ(scores.back(), delta);
  for (size_t i = 0; i + 1 < scores.size(); ++i) EXPECT_EQ(scores[i], 0);
  // In place: same length, only the 8 bytes of the last score differ.
  const std::string a = slurp(manifest_.find("log")->text());
  const std::string b = slurp(manifest_.find("rewarded")->text());
  ASSERT_EQ(a.size(), b.size());
  size_t differ = 0;
  for (size_t i = 0; i < a.size(); ++i) differ += a[i] != b[i];
  EXPECT_GE(differ, 1u);
  EXPECT_LE(differ, 8u);
  EXPECT_EQ(a.compare(0, a.size() - 9, b, 0, a.size() - 9), 0);
}

TEST_F(TrainingLogGolden, TruncatedOutcomeIsAnError) {
  const std::string bytes = slurp(manifest_.find("log")->text());
  ASSERT_GT(bytes.size(), 5u);
  std::vector<DecodedMessage> msgs;
  Status s = wire::makeBitstreamCodec()->decodeToModelStream(bytesOf(bytes.substr(0, bytes.size() - 5)), msgs);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("outcome"), std::string::npos) << s.toString();
}

}  // namespace
}  // namespace testing
}  // namespace mlbridge
