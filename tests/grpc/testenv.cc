// mlbridge-grpc-testenv: a stand-in compiler in training mode, for the Python
// trainer tests. Serves GrpcTrainingServer on 127.0.0.1 (free port), prints
// {"port":N} on stdout, then runs --threads compiler threads, each one session
// of --steps decisions: feature x = thread*1000 + step, expected action -x
// (int64). Exit code 0 when every action was right, 1 otherwise, 2 on usage,
// 3 if a session was cancelled by EndEpisode (with --expect-cancel, 0).
// After each session's finish(), its thread reports the episode's outcome
// (GetOutcome): "reward" float64 [1] = the fraction of right actions,
// "action_sum" int64 [1] = the sum of the actions, "steps" int64 [1] = the
// decisions made (not with --no-outcome).
// Stops after the episodes, or on the trainer's Shutdown RPC. Never reads stdin.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "mlbridge/grpc_server.h"

using namespace mlbridge;

int main(int argc, char** argv) {
  int threads = 1, steps = 10, timeoutMs = 20000;
  bool expectCancel = false, waitShutdown = false, outcome = true;
  GrpcServerOptions so;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--expect-cancel") expectCancel = true;
    else if (a == "--wait-shutdown") waitShutdown = true;
    else if (a == "--no-outcome") outcome = false;
    else if (i + 1 < argc && a == "--threads") threads = std::atoi(argv[++i]);
    else if (i + 1 < argc && a == "--steps") steps = std::atoi(argv[++i]);
    else if (i + 1 < argc && a == "--timeout-ms") timeoutMs = std::atoi(argv[++i]);
    else if (i + 1 < argc && a == "--token") so.token = argv[++i];
    else if (i + 1 < argc && a == "--address") so.address = argv[++i];
    else return 2;
  }
  GrpcTrainingServer server(so);
  Status s = server.start();
  if (!s.ok()) {
    std::fprintf(stderr, "testenv: %s\n", s.toString().c_str());
    return 1;
  }
  std::printf("{\"port\": %d}\n", server.port());
  std::fflush(stdout);
  std::atomic<int> wrong{0}, cancelled{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      auto r = server.makeRunner({TensorSpec::create<int64_t>("x", {1}), TensorSpec::create<float>("v", {2})},
                                 {TensorSpec::create<int64_t>("action", {1})},
                                 TrainingRunnerOptions{"thread " + std::to_string(t), timeoutMs});
      if (!r.ok()) {
        ++wrong;
        return;
      }
      (void)(*r)->setContext("episode-" + std::to_string(t));
      int64_t actionSum = 0, made = 0, right = 0;
      for (int i = 0; i < steps; ++i) {
        int64_t x = t * 1000 + i;
        *(*r)->getTensor<int64_t>(0) = x;
        (*r)->getTensor<float>(1)[0] = 0.5f;
        (*r)->getTensor<float>(1)[1] = static_cast<float>(t);
        StatusOr<int64_t> a = (*r)->evaluate<int64_t>();
        if (!a.ok()) {
          if (a.status().code() == StatusCode::kCancelled) ++cancelled;
          else {
            std::fprintf(stderr, "testenv: thread %d: %s\n", t, a.status().toString().c_str());
            ++wrong;
          }
          break;
        }
        ++made;
        actionSum += *a;
        if (*a != -x) ++wrong;
        else ++right;
      }
      (void)(*r)->finish();
      if (!outcome) return;
      // Reported after finish(): the trainer may see the end first (GetOutcome waits).
      const TensorSpec rewardSpec = TensorSpec::create<double>("reward", {1});
      const TensorSpec sumSpec = TensorSpec::create<int64_t>("action_sum", {1});
      const TensorSpec stepsSpec = TensorSpec::create<int64_t>("steps", {1});
      double reward = made ? static_cast<double>(right) / static_cast<double>(made) : 0.0;
      Status o = server.setOutcome(**r, {TensorRef{&rewardSpec, &reward}, TensorRef{&sumSpec, &actionSum},
                                         TensorRef{&stepsSpec, &made}});
      if (!o.ok()) {
        std::fprintf(stderr, "testenv: thread %d: setOutcome: %s\n", t, o.toString().c_str());
        ++wrong;
      }
    });
  for (auto& th : pool) th.join();
  server.waitUntilDelivered(30000);  // the trainer sees every episode end
  if (waitShutdown) server.waitForShutdown(30000);
  server.stop();
  if (wrong) return 1;
  if (cancelled) return expectCancel ? 0 : 3;
  return expectCancel ? 1 : 0;
}
