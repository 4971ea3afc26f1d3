// ShmModelRunner: a model in another process on the same machine, reached
// through a shared-memory region BASE.shm (two byte rings, one per
// direction) instead of named pipes. It carries the same three wire formats
// as PipeModelRunner; the Python side is mlbridge.ShmServer. A waiting side
// spins for at most `spinUs` before it sleeps on a futex, which removes the
// wake-up cost of a round trip between cores (docs/shm.md).
//
//   mlbridge::ShmOptions opts;
//   opts.base = "/run/user/1000/mlbridge-x/chan";   // BASE.shm, made by the model
//   auto runner = mlbridge::ShmModelRunner::create(features, {advice}, opts);
//   if (!runner.ok()) { report(runner.status()); return; }
//   *(*runner)->getTensor<int64_t>(0) = 42;
//   mlbridge::StatusOr<int64_t> decision = (*runner)->evaluate<int64_t>();
#ifndef MLBRIDGE_SHM_RUNNER_H
#define MLBRIDGE_SHM_RUNNER_H

#include <memory>
#include <string>
#include <vector>

#include "mlbridge/channel_options.h"
#include "mlbridge/model_runner.h"
#include "mlbridge/wire_format.h"

namespace mlbridge {

// Common fields (base: the model creates BASE.shm; format, timeoutMs,
// connectTimeoutMs, allowSharedFolder, maxMessageBytes) are in ChannelOptions
// (mlbridge/channel_options.h).
struct ShmOptions : ChannelOptions {
  // Busy-wait budget per wait before sleeping on the futex (0 = never spin).
  // Costs at most this much CPU per decision; see docs/shm.md.
  int spinUs = 50;
};

class ShmModelRunner final : public ModelRunner {
 public:
  // Maps BASE.shm (waiting up to connectTimeoutMs for the model to create
  // it), claims the channel for this session and sends the header; framed
  // formats also wait for the model to accept the specs.
  static StatusOr<std::unique_ptr<ShmModelRunner>> create(std::vector<TensorSpec> features,
                                                          std::vector<TensorSpec> advice, ShmOptions options);
  ~ShmModelRunner() override;

  const ShmOptions& options() const { return options_; }

 private:
  ShmModelRunner(std::vector<TensorSpec> features, std::vector<TensorSpec> advice, ShmOptions options);
  Status connect();

  Status evaluateImpl() override;
  Status setContextImpl(std::string_view name) override;
  Status finishImpl() override;

  struct Impl;  // the mapped channel and the session over it (src/wire/channel_session.h)
  std::unique_ptr<Impl> impl_;
  ShmOptions options_;
};

}  // namespace mlbridge

#endif  // MLBRIDGE_SHM_RUNNER_H
