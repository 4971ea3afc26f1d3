// GrpcModelRunner: a model served over gRPC (inference direction). The model
// (usually Python: mlbridge.GrpcServer) serves mlbridge.v1.ModelService from
// proto/mlbridge/v1/service.proto; the compiler is the client.
//
//   mlbridge::GrpcRunnerOptions opts;
//   opts.address = "127.0.0.1:50051";
//   auto runner = mlbridge::GrpcModelRunner::create(features, {advice}, opts);
//   if (!runner.ok()) { report(runner.status()); return; }
//   *(*runner)->getTensor<int64_t>(0) = 42;
//   mlbridge::StatusOr<int64_t> decision = (*runner)->evaluate<int64_t>();
//
// Every call has a deadline (deadlineMs). UNAVAILABLE (no server, server
// restarting) is retried with bounded exponential backoff and jitter, then
// returned as an error; a model-side exception is kAborted with the model's
// message; a reply of the wrong dtype or shape is an error, never a value.
// Part of the separate library mlbridge_grpc (CMake target mlbridge::grpc).
// This header does not include gRPC headers and builds with -fno-exceptions
// -fno-rtti.
#ifndef MLBRIDGE_GRPC_RUNNER_H
#define MLBRIDGE_GRPC_RUNNER_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mlbridge/model_runner.h"

namespace mlbridge {

// Retries of UNAVAILABLE. A call gives up after maxAttempts attempts or once
// totalBudgetMs has passed, whichever comes first (the defaults: within ~30 s).
// An evaluate that reopens a session the server lost is still one call; no
// attempt starts after the budget, so it ends within totalBudgetMs + deadlineMs.
struct GrpcRetryPolicy {
  int maxAttempts = 8;
  int initialBackoffMs = 50;   // first pause; doubles each retry ...
  int maxBackoffMs = 5000;     // ... up to this; each pause is jittered to [50%, 100%]
  int totalBudgetMs = 30000;   // bound on all attempts of one call, pauses included
};

// TLS on the client side. Empty rootCaPath: the system roots.
struct GrpcClientTls {
  bool enabled = false;
  std::string rootCaPath;       // PEM file of the CA that signed the server certificate
  std::string certChainPath;    // mutual TLS: our certificate (PEM) ...
  std::string privateKeyPath;   // ... and its key
  std::string serverNameOverride;  // name checked against the certificate (tests: "localhost")
};

struct GrpcRunnerOptions {
  std::string address;          // "host:port" of the model server (required)
  int deadlineMs = 10000;       // per call (each attempt)
  GrpcRetryPolicy retry;
  GrpcClientTls tls;
  std::string token;            // sent as "authorization: Bearer TOKEN" on every call
  std::string clientName;       // free text the server may log
  // Decisions travel on one EvaluateStream per session (no call set-up per
  // decision: about 2x faster); false: one unary Evaluate call each.
  bool streaming = true;
  size_t maxMessageBytes = size_t(256) << 20;
};

// One connection to a model server, shareable by many runners (and threads):
// each runner is its own session on it, tagged by a session id.
class GrpcChannel {
 public:
  static StatusOr<std::shared_ptr<GrpcChannel>> create(const GrpcRunnerOptions& options);
  ~GrpcChannel();
  GrpcChannel(const GrpcChannel&) = delete;
  GrpcChannel& operator=(const GrpcChannel&) = delete;
  const GrpcRunnerOptions& options() const;
  // Asks the model server process to stop (ModelService.Shutdown).
  Status shutdownServer(const std::string& reason = "");

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  GrpcChannel();
  std::unique_ptr<Impl> impl_;
};

class GrpcModelRunner final : public ModelRunner {
 public:
  // Connects (with the retry policy) and opens a session: the handshake sends
  // the specs and the schema version; a refusal or mismatch is
  // kFailedPrecondition with the server's reason.
  static StatusOr<std::unique_ptr<GrpcModelRunner>> create(std::vector<TensorSpec> features,
                                                           std::vector<TensorSpec> advice,
                                                           const GrpcRunnerOptions& options);
  // The same on a shared channel (several compiler threads, one connection).
  static StatusOr<std::unique_ptr<GrpcModelRunner>> create(std::vector<TensorSpec> features,
                                                           std::vector<TensorSpec> advice,
                                                           std::shared_ptr<GrpcChannel> channel);
  ~GrpcModelRunner() override;

  uint64_t sessionId() const { return session_; }
  const std::shared_ptr<GrpcChannel>& channel() const { return channel_; }

 private:
  GrpcModelRunner(std::vector<TensorSpec> features, std::vector<TensorSpec> advice,
                  std::shared_ptr<GrpcChannel> channel);
  Status open();
  Status evaluateImpl() override;
  Status setContextImpl(std::string_view name) override;
  Status finishImpl() override;

  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::shared_ptr<GrpcChannel> channel_;
  uint64_t session_ = 0;
};

}  // namespace mlbridge

#endif  // MLBRIDGE_GRPC_RUNNER_H
