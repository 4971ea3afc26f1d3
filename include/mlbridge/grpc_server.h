// GrpcTrainingServer: the training direction. The compiler process serves
// mlbridge.v1.EnvironmentService (proto/mlbridge/v1/service.proto); a Python
// trainer (mlbridge.grpc_client.EnvironmentClient) drives it: it takes the
// next observation, sends an action, and may end an episode.
//
// A compiler pass uses it through a ModelRunner, exactly as in inference:
//
//   mlbridge::GrpcServerOptions so;             // 127.0.0.1, a free port
//   mlbridge::GrpcTrainingServer server(so);    // constructs only: never blocks
//   if (Status s = server.start(); !s.ok()) ... // binds; server.port() is known
//   auto runner = server.makeRunner(features, {advice});   // one per compiler thread
//   *(*runner)->getTensor<int64_t>(0) = 42;
//   StatusOr<int64_t> action = (*runner)->evaluate<int64_t>();  // posts, waits for the trainer
//   ...
//   server.stop();                              // or the trainer's Shutdown RPC + waitForShutdown()
//
// Each runner is one session (its own id); several compiler threads may each
// use their own runner at once. This header does not include gRPC headers and
// builds with -fno-exceptions -fno-rtti.
#ifndef MLBRIDGE_GRPC_SERVER_H
#define MLBRIDGE_GRPC_SERVER_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mlbridge/model_runner.h"

namespace mlbridge {

struct GrpcServerOptions {
  std::string address = "127.0.0.1:0";  // loopback by default; port 0 picks a free port
  // TLS: a server certificate and key (PEM files); with clientCaPath, clients
  // must present a certificate signed by that CA (mutual TLS).
  std::string tlsCertChainPath;
  std::string tlsPrivateKeyPath;
  std::string tlsClientCaPath;
  std::string token;                    // every call must carry "authorization: Bearer TOKEN"
  bool allowInsecureRemote = false;     // a non-loopback address needs TLS or a token unless set
  int maxWaitMs = 10000;                // longest a GetObservation call waits (and its deadline)
  size_t maxMessageBytes = size_t(256) << 20;
};

struct TrainingRunnerOptions {
  std::string name;       // shown to the trainer (e.g. "thread 3", a file name)
  int timeoutMs = 60000;  // bound on waiting for the trainer's action
};

class GrpcTrainingServer {
 public:
  explicit GrpcTrainingServer(GrpcServerOptions options = GrpcServerOptions());
  ~GrpcTrainingServer();  // stop()
  GrpcTrainingServer(const GrpcTrainingServer&) = delete;
  GrpcTrainingServer& operator=(const GrpcTrainingServer&) = delete;

  // Binds and starts serving (returns at once). A busy port is an error (no
  // port sharing); a non-loopback address without TLS or a token is refused.
  Status start();
  // Stops serving: waiting evaluate() calls fail with kUnavailable. Idempotent.
  void stop();
  bool running() const;
  int port() const;            // the bound port (0 before start())
  std::string target() const;  // "host:port" a trainer dials

  // Blocks until the trainer calls Shutdown or stop() is called (timeoutMs < 0:
  // no bound). Returns true if a shutdown was requested or the server stopped.
  bool waitForShutdown(int timeoutMs = -1);
  bool shutdownRequested() const;
  // Blocks until the trainer has taken every pending event (observations and
  // the ends of finished sessions), e.g. before the compiler exits, so the
  // trainer sees every episode end. False on timeout (timeoutMs < 0: no bound).
  bool waitUntilDelivered(int timeoutMs = -1);

  // A runner whose evaluate() publishes its observation to the trainer and
  // waits for the action. Usable before start() (it then waits for a trainer).
  StatusOr<std::unique_ptr<ModelRunner>> makeRunner(std::vector<TensorSpec> features,
                                                    std::vector<TensorSpec> advice,
                                                    TrainingRunnerOptions options = TrainingRunnerOptions());

  struct Hub;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mlbridge

#endif  // MLBRIDGE_GRPC_SERVER_H
