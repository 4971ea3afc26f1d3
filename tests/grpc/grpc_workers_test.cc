// 16 concurrent compiler processes against one Python model server: every
// answer must reach the process (and session) that asked.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "grpc_helpers.h"
#include "mlbridge/grpc_runner.h"

using namespace mlbridge;

namespace {

// Runs in a forked child that has not touched gRPC before (this test process
// only forks and execs until then). Exit 0 iff every echo came back right.
int compilerProcess(const std::string& address, int worker) {
  GrpcRunnerOptions o;
  o.address = address;
  o.deadlineMs = 20000;
  auto r = GrpcModelRunner::create({TensorSpec::create<int64_t>("tag", {2})}, {TensorSpec::create<int64_t>("y", {2})},
                                   o);
  if (!r.ok()) return 10;
  for (int i = 0; i < 100; ++i) {
    int64_t* tag = (*r)->getTensor<int64_t>(0);
    tag[0] = worker;
    tag[1] = i;
    if (!(*r)->evaluate().ok()) return 11;
    Span<const int64_t> y = (*r)->output<int64_t>(0);
    if (y.size() != 2 || y[0] != worker || y[1] != i) return 12;
  }
  return (*r)->finish().ok() ? 0 : 13;
}

}  // namespace

TEST(GrpcWorkers, SixteenCompilerProcessesOneModelServer) {
  mlbtest::PyServer py({"--model", "echo", "--max-workers", "16"});
  ASSERT_GT(py.port(), 0);
  constexpr int kWorkers = 16;
  std::vector<pid_t> kids;
  for (int w = 0; w < kWorkers; ++w) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) _exit(compilerProcess(py.address(), w));
    kids.push_back(pid);
  }
  for (int w = 0; w < kWorkers; ++w) {
    int status = 0;
    ASSERT_EQ(waitpid(kids[w], &status, 0), kids[w]);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "worker " << w << " status " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
}
