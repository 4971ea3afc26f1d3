// The RL driver with a real PipeModelRunner (bitstream, LLVM's protocol)
// against the scripted fake model, next to an in-process agent: any runner
// can be an agent.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "mlbridge/pipe_runner.h"
#include "mlbridge/rl.h"
#include "test_util.h"

namespace mlbridge {
namespace {

using testing::FakeModel;
using testing::TempChannel;
using testing::le64;

// In-process: action = state + 100.
class PlusHundred : public ModelRunner {
 public:
  static std::unique_ptr<ModelRunner> make() {
    std::unique_ptr<PlusHundred> r(
        new PlusHundred({TensorSpec::create<int64_t>("state", {1})}, {TensorSpec::create<int64_t>("action", {1})}));
    EXPECT_TRUE(r->initBuffers().ok());
    return r;
  }

 private:
  using ModelRunner::ModelRunner;
  Status evaluateImpl() override {
    *static_cast<int64_t*>(outputRefs()[0].data) = *static_cast<const int64_t*>(inputRefs()[0].data) + 100;
    return Status::OK();
  }
};

PipeOptions pipeOptions(const TempChannel& ch) {
  PipeOptions o;
  o.base = ch.base();
  o.format = WireFormat::kBitstream;
  o.timeoutMs = 3000;
  o.connectTimeoutMs = 3000;
  return o;
}

// Agents alternate, each seeing the last decision as its state.
rl::LambdaEnvironment relay(int64_t& value, int& steps, int length) {
  rl::LambdaEnvironment env;
  env.onReset = [&value, &steps] {
    value = 1;
    steps = 0;
    return Status::OK();
  };
  env.onDone = [&steps, length] { return steps == length; };
  env.onNextAgent = [&steps]() -> StatusOr<int> { return steps % 2; };
  env.onObserve = [&value](int, ModelRunner& r) {
    r.input<int64_t>(0)[0] = value;
    return Status::OK();
  };
  env.onStep = [&value, &steps](int, const ModelRunner& r) {
    StatusOr<int64_t> d = rl::scalarOutput<int64_t>(r);
    if (!d.ok()) return d.status();
    value = *d;
    ++steps;
    return Status::OK();
  };
  return env;
}

TEST(RlPipe, PipeRunnerAgentAlongsideAnInProcessAgent) {
  TempChannel ch;
  FakeModel model(ch.base());
  model.open();
  std::string header, context, observations;
  model.run([&](FakeModel& m) {
    header = m.readLine();
    context = m.readLine();
    for (int i = 0; i < 2; ++i) {
      observations += m.readLine();
      std::string bytes = m.read(8 + 1);  // the int64 state and LLVM's newline
      if (bytes.size() != 9) return;
      int64_t state;
      std::memcpy(&state, bytes.data(), 8);
      m.write(le64(state * 2));  // the remote policy doubles
    }
  });
  auto pipe = PipeModelRunner::create({TensorSpec::create<int64_t>("state", {1})},
                                      {TensorSpec::create<int64_t>("action", {1})}, pipeOptions(ch));
  ASSERT_TRUE(pipe.ok()) << pipe.status().toString();
  std::vector<rl::Agent> agents;
  agents.emplace_back("remote", std::move(*pipe));
  agents.emplace_back("local", PlusHundred::make());

  int64_t value = 0;
  int steps = 0;
  rl::LambdaEnvironment env = relay(value, steps, 4);
  rl::DriverOptions opts;
  opts.context = "main";
  StatusOr<rl::EpisodeStats> stats = rl::runEpisode(env, agents, opts);
  model.join();
  ASSERT_TRUE(stats.ok()) << stats.status().toString();
  // 1 *2 =2 +100 =102 *2 =204 +100 =304
  EXPECT_EQ(value, 304);
  EXPECT_EQ(stats->decisions, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(header,
            "{\"features\":[{\"name\":\"state\",\"type\":\"int64_t\",\"port\":0,\"shape\":[1]}],"
            "\"advice\":{\"name\":\"action\",\"type\":\"int64_t\",\"port\":0,\"shape\":[1]}}\n");
  EXPECT_EQ(context, "{\"context\":\"main\"}\n");
  EXPECT_EQ(observations, "{\"observation\":0}\n{\"observation\":1}\n");
}

TEST(RlPipe, ModelDyingMidEpisodeNamesTheAgentAndTheStep) {
  TempChannel ch;
  FakeModel model(ch.base());
  model.open();
  model.run([](FakeModel& m) {
    m.readLine();  // header
    m.readLine();  // observation 0
    m.read(9);
    m.write(le64(5));
    m.readLine();  // observation 1
    m.read(9);
    m.closeAll();  // dies before replying
  });
  auto pipe = PipeModelRunner::create({TensorSpec::create<int64_t>("state", {1})},
                                      {TensorSpec::create<int64_t>("action", {1})}, pipeOptions(ch));
  ASSERT_TRUE(pipe.ok()) << pipe.status().toString();
  std::vector<rl::Agent> agents;
  agents.emplace_back("local", PlusHundred::make());
  agents.emplace_back("remote", std::move(*pipe));

  int64_t value = 0;
  int steps = 0;
  rl::LambdaEnvironment env = relay(value, steps, 10);
  rl::Driver driver;
  StatusOr<rl::EpisodeStats> stats = driver.runEpisode(env, agents);
  model.join();
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), StatusCode::kUnavailable) << stats.status().toString();
  EXPECT_EQ(stats.status().message().rfind("agent 'remote' (#1) at step 3: evaluate: ", 0), 0u)
      << stats.status().message();
  EXPECT_EQ(driver.lastEpisode().steps, 3);
  EXPECT_EQ(driver.lastEpisode().failedAgent, 1);
  EXPECT_EQ(value, 105) << "1 +100 =101 ->5 +100 =105, then the model died";
}

}  // namespace
}  // namespace mlbridge
