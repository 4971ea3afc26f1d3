// GrpcTrainingServer: the training direction. The compiler process serves
// mlbridge.v1.EnvironmentService (proto/mlbridge/v1/service.proto); a Python
// trainer (mlbridge.EnvironmentClient) drives it: it takes the
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
// The episode's outcome (reward numbers such as the object size) goes to the
// trainer's GetOutcome call:
//
//   uint64_t session = server.sessionId(**runner);   // e.g. before the runner is destroyed
//   ... compile, measure ...
//   TensorSpec sizeSpec = TensorSpec::create<double>("text_size", {1});
//   double size = 1234;
//   server.setOutcome(session, {TensorRef{&sizeSpec, &size}});
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
#include "mlbridge/tensor_ref.h"

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
  int maxWaitMs = 10000;                // longest a GetObservation or GetOutcome call waits
  size_t maxOutcomes = 1024;            // outcomes kept for GetOutcome (the oldest is dropped; at least 1)
  // Ended sessions remembered (for GetSession/GetOutcome/setOutcome) once the
  // trainer has taken their end; older ones are forgotten, so a long training
  // run holds bounded memory (at least 1).
  size_t maxEndedSessions = 4096;
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

  // The session id of a runner made by this server's makeRunner() (what the
  // trainer sees in its steps); 0 for any other runner.
  uint64_t sessionId(const ModelRunner& runner) const;

  // Reports the outcome of a session's episode: named tensors (e.g. "reward",
  // "text_size"), copied at once; served by the trainer's GetOutcome call.
  // Usually called after the episode's last decision, before or after the
  // runner's finish() (and after the runner is destroyed, by session id).
  // Each session reports once: a second report is kFailedPrecondition. An
  // unknown session (or another server's runner) is kNotFound; an invalid
  // spec, a duplicate name, missing data or an outcome over maxMessageBytes is
  // kInvalidArgument. Only the last maxOutcomes outcomes are kept: GetOutcome
  // on an older one is NOT_FOUND. Thread-safe.
  Status setOutcome(uint64_t session, const std::vector<TensorRef>& outcome);
  Status setOutcome(const ModelRunner& runner, const std::vector<TensorRef>& outcome);

  struct Hub;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mlbridge

#endif  // MLBRIDGE_GRPC_SERVER_H
