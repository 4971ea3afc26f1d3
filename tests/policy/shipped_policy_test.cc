// The shipped inlining-for-size policy (policies/inline_size/policy.onnx)
// makes the same decision in every in-process runner. The observations are
// training logs the LLVM plugin wrote while this very model decided in
// clang-19 (scripts/ship-policy.sh): each record holds LLVM's features and the
// decision the built-in engine made there. Replayed here through the engine
// (dispatched and portable kernels), the AOT-compiled C++ model and ONNX
// Runtime, each decision must equal the recorded one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "ShippedInlinePolicy.h"
#include "mlbridge/aot_runner.h"
#include "mlbridge/onnx_runner.h"
#include "wire/codec.h"
#ifdef MLBRIDGE_TEST_HAVE_ONNXRUNTIME
#include "mlbridge/onnxruntime_runner.h"
#endif

namespace mlbridge {
namespace {

const std::string kDir = MLBRIDGE_SHIPPED_POLICY_DIR;
const std::string kDecision = "inlining_decision";

struct Observation {
  std::string where;               // log file and record, for failure messages
  std::vector<int64_t> features;   // in Recorded::features order
  int64_t decision = -1;
};

struct Recorded {
  std::vector<TensorSpec> features;  // the log header's features, without the decision
  std::vector<Observation> observations;
  std::vector<std::string> files;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> logFiles() {
  std::vector<std::string> out;
  const std::string dir = kDir + "/observations";
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 4 && n.compare(n.size() - 4, 4, ".log") == 0) out.push_back(dir + "/" + n);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Every record of every log; adds a test failure for anything unreadable.
const Recorded& recorded() {
  static const Recorded r = [] {
    Recorded rec;
    rec.files = logFiles();
    for (const std::string& file : rec.files) {
      std::string bytes = slurp(file);
      std::vector<wire::DecodedMessage> msgs;
      Status s = wire::makeBitstreamCodec()->decodeToModelStream(
          Span<const unsigned char>(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()), msgs);
      EXPECT_TRUE(s.ok()) << file << ": " << s.toString();
      if (!s.ok() || msgs.empty() || msgs[0].kind != wire::DecodedMessage::Kind::kHeader) continue;
      std::vector<TensorSpec> specs = msgs[0].specs.features;
      auto dec = std::find_if(specs.begin(), specs.end(), [](const TensorSpec& t) { return t.name() == kDecision; });
      EXPECT_NE(dec, specs.end()) << file << ": no " << kDecision << " in the header";
      if (dec == specs.end()) continue;
      const size_t decIndex = size_t(dec - specs.begin());
      specs.erase(dec);
      if (rec.features.empty()) rec.features = specs;
      EXPECT_EQ(specs, rec.features) << file << ": features differ from the first log's";
      for (const wire::DecodedMessage& m : msgs) {
        if (m.kind != wire::DecodedMessage::Kind::kObservation) continue;
        Observation o;
        o.where = file + " record " + std::to_string(m.id);
        for (size_t i = 0; i < m.tensors.size(); ++i) {
          int64_t v = 0;
          EXPECT_EQ(m.tensors[i].bytes.size(), sizeof v) << o.where;
          if (m.tensors[i].bytes.size() == sizeof v) std::memcpy(&v, m.tensors[i].bytes.data(), sizeof v);
          if (i == decIndex)
            o.decision = v;
          else
            o.features.push_back(v);
        }
        rec.observations.push_back(std::move(o));
      }
    }
    return rec;
  }();
  return r;
}

const std::vector<TensorSpec>& advice() {
  static const std::vector<TensorSpec> a = {TensorSpec::create<int64_t>(kDecision, {1})};
  return a;
}

// Replays every observation through `runner`; returns how many decisions differ
// from the recorded ones (the first few are reported).
size_t replay(ModelRunner& runner, const char* what) {
  size_t differ = 0;
  for (const Observation& o : recorded().observations) {
    for (size_t i = 0; i < o.features.size(); ++i) std::memcpy(runner.inputData(i), &o.features[i], sizeof(int64_t));
    StatusOr<int64_t> d = runner.evaluate<int64_t>();
    if (!d.ok()) {
      ADD_FAILURE() << what << ": " << o.where << ": " << d.status().toString();
      return recorded().observations.size();
    }
    if (*d != o.decision && ++differ <= 5)
      ADD_FAILURE() << what << " decides " << *d << ", clang recorded " << o.decision << " at " << o.where;
  }
  return differ;
}

TEST(ShippedPolicy, ObservationsAreRecorded) {
  const Recorded& r = recorded();
  ASSERT_GE(r.files.size(), 2u) << "expected logs in " << kDir << "/observations (scripts/ship-policy.sh)";
  EXPECT_GE(r.observations.size(), 500u);
  size_t inlined = 0;
  for (const Observation& o : r.observations) {
    EXPECT_TRUE(o.decision == 0 || o.decision == 1) << o.where;
    inlined += o.decision == 1;
  }
  // Both decisions occur: a constant policy would pass the replays trivially.
  EXPECT_GT(inlined, 0u);
  EXPECT_LT(inlined, r.observations.size());
}

TEST(ShippedPolicy, EngineMakesTheRecordedDecisions) {
  for (bool portable : {false, true}) {
    OnnxLoadOptions opts;
    opts.portableKernels = portable;
    auto runner = NativeModelRunner::create(kDir + "/policy.onnx", recorded().features, advice(), opts);
    ASSERT_TRUE(runner.ok()) << runner.status().toString();
    EXPECT_EQ(replay(**runner, portable ? "engine (portable kernels)" : "engine"), 0u);
  }
}

TEST(ShippedPolicy, AotModelMakesTheRecordedDecisions) {
  auto runner = AotModelRunner::create(ShippedInlinePolicy_model(), recorded().features, advice());
  ASSERT_TRUE(runner.ok()) << runner.status().toString();
  EXPECT_EQ(replay(**runner, "AOT"), 0u);
}

TEST(ShippedPolicy, OnnxRuntimeMakesTheRecordedDecisions) {
#ifdef MLBRIDGE_TEST_HAVE_ONNXRUNTIME
  auto runner = OnnxRuntimeRunner::create(kDir + "/policy.onnx", recorded().features, advice());
  ASSERT_TRUE(runner.ok()) << runner.status().toString();
  EXPECT_EQ(replay(**runner, "ONNX Runtime"), 0u);
#else
  GTEST_SKIP() << "built without ONNX Runtime";
#endif
}

}  // namespace
}  // namespace mlbridge
