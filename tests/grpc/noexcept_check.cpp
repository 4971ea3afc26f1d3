// Built with -fno-exceptions -fno-rtti, as LLVM and GCC plugins are: the gRPC
// public headers must compile and work here (they include no gRPC headers).
#include "mlbridge/grpc_runner.h"
#include "mlbridge/grpc_server.h"

int main() {
  using namespace mlbridge;
  // A port nobody listens on (the training server below picks a free one and
  // is stopped before we dial it).
  GrpcServerOptions so;
  GrpcTrainingServer server(so);
  if (!server.start().ok()) return 1;
  std::string target = server.target();
  server.stop();
  GrpcRunnerOptions opts;
  opts.address = target;
  opts.deadlineMs = 500;
  opts.retry.maxAttempts = 2;
  opts.retry.totalBudgetMs = 300;
  auto r = GrpcModelRunner::create({TensorSpec::create<int64_t>("a", {1})},
                                   {TensorSpec::create<int64_t>("d", {1})}, opts);
  if (r.ok()) return 2;
  if (r.status().code() != StatusCode::kUnavailable) return 3;
  if (r.status().message().empty()) return 4;
  return 0;
}
