// PipeModelRunner: a model in another process (usually Python), reached over
// a pair of named pipes BASE.in (model -> compiler) and BASE.out
// (compiler -> model), in any of the three wire formats. With the bitstream
// format it speaks exactly what LLVM's MLGO interactive mode speaks.
//
//   mlbridge::PipeOptions opts;
//   opts.base = "/run/user/1000/mlb/chan";   // BASE.in / BASE.out
//   auto runner = mlbridge::PipeModelRunner::create(features, {advice}, opts);
//   if (!runner.ok()) { report(runner.status()); return; }
//   *(*runner)->getTensor<int64_t>(0) = 42;
//   mlbridge::StatusOr<int64_t> decision = (*runner)->evaluate<int64_t>();
#ifndef MLBRIDGE_PIPE_RUNNER_H
#define MLBRIDGE_PIPE_RUNNER_H

#include <memory>
#include <string>
#include <vector>

#include "mlbridge/channel_options.h"
#include "mlbridge/model_runner.h"
#include "mlbridge/wire_format.h"

namespace mlbridge {

// Common fields (base, format, timeoutMs, connectTimeoutMs, allowSharedFolder,
// maxMessageBytes) are in ChannelOptions (mlbridge/channel_options.h).
struct PipeOptions : ChannelOptions {
  bool createFifos = false;                 // create the FIFOs (and a 0700 folder) if missing
};

class PipeModelRunner final : public ModelRunner {
 public:
  // Opens the channel (bounded by connectTimeoutMs) and sends the session
  // header; framed formats also wait for the model to accept the specs.
  static StatusOr<std::unique_ptr<PipeModelRunner>> create(std::vector<TensorSpec> features,
                                                           std::vector<TensorSpec> advice, PipeOptions options);
  ~PipeModelRunner() override;

  const PipeOptions& options() const { return options_; }

 private:
  PipeModelRunner(std::vector<TensorSpec> features, std::vector<TensorSpec> advice, PipeOptions options);
  Status connect();

  Status evaluateImpl() override;
  Status setContextImpl(std::string_view name) override;
  Status finishImpl() override;

  struct Impl;  // the FIFOs and the session over them (src/wire/channel_session.h)
  std::unique_ptr<Impl> impl_;
  PipeOptions options_;
};

// Creates a private (0700) folder for channels: `parent`/mlbridge-XXXXXX, or
// under $XDG_RUNTIME_DIR / $TMPDIR / /tmp when `parent` is empty.
StatusOr<std::string> makePrivateChannelDir(const std::string& parent = "");

}  // namespace mlbridge

#endif  // MLBRIDGE_PIPE_RUNNER_H
