// C API: runner kind "pipe" (mlbridge::PipeModelRunner).
#include <limits>
#include <string>
#include <vector>

#include "c_api/c_api_internal.h"
#include "mlbridge/pipe_runner.h"

using mlbridge::Status;
using mlbridge::TensorSpec;
using mlbridge::invalidArgument;
using mlbridge::capi::guardError;

struct mlb_pipe_options {
  mlbridge::PipeOptions options;
};

namespace {
Status nullOptions(const char* function) { return invalidArgument(std::string(function) + ": options is NULL"); }
}  // namespace

extern "C" mlb_status mlb_pipe_options_create(mlb_pipe_options** options, mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullOptions("mlb_pipe_options_create");
    *options = new mlb_pipe_options;
    return Status::OK();
  });
}

extern "C" void mlb_pipe_options_destroy(mlb_pipe_options* options) noexcept { delete options; }

extern "C" mlb_status mlb_pipe_options_set_base(mlb_pipe_options* options, const char* base,
                                                mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullOptions("mlb_pipe_options_set_base");
    if (!base || !*base) return invalidArgument("the channel base path must not be empty");
    options->options.base = base;
    return Status::OK();
  });
}

extern "C" mlb_status mlb_pipe_options_set_format(mlb_pipe_options* options, mlb_format format,
                                                  mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullOptions("mlb_pipe_options_set_format");
    switch (format) {
      case MLB_FORMAT_BITSTREAM: options->options.format = mlbridge::WireFormat::kBitstream; break;
      case MLB_FORMAT_JSON: options->options.format = mlbridge::WireFormat::kJson; break;
      case MLB_FORMAT_PROTOBUF: options->options.format = mlbridge::WireFormat::kProtobuf; break;
      default: return invalidArgument("unknown format value " + std::to_string(format));
    }
    return Status::OK();
  });
}

extern "C" mlb_status mlb_pipe_options_set_timeout_ms(mlb_pipe_options* options, int32_t timeout_ms,
                                                      mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullOptions("mlb_pipe_options_set_timeout_ms");
    if (timeout_ms <= 0) return invalidArgument("the timeout must be positive, got " + std::to_string(timeout_ms) + " ms");
    options->options.timeoutMs = timeout_ms;
    return Status::OK();
  });
}

extern "C" mlb_status mlb_pipe_options_set_connect_timeout_ms(mlb_pipe_options* options, int32_t timeout_ms,
                                                              mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullOptions("mlb_pipe_options_set_connect_timeout_ms");
    if (timeout_ms <= 0)
      return invalidArgument("the connect timeout must be positive, got " + std::to_string(timeout_ms) + " ms");
    options->options.connectTimeoutMs = timeout_ms;
    return Status::OK();
  });
}

extern "C" mlb_status mlb_pipe_options_set_create_fifos(mlb_pipe_options* options, int enable,
                                                        mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullOptions("mlb_pipe_options_set_create_fifos");
    options->options.createFifos = enable != 0;
    return Status::OK();
  });
}

extern "C" mlb_status mlb_pipe_options_set_allow_shared_folder(mlb_pipe_options* options, int enable,
                                                               mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullOptions("mlb_pipe_options_set_allow_shared_folder");
    options->options.allowSharedFolder = enable != 0;
    return Status::OK();
  });
}

extern "C" mlb_status mlb_pipe_options_set_max_message_bytes(mlb_pipe_options* options, uint64_t max_bytes,
                                                             mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullOptions("mlb_pipe_options_set_max_message_bytes");
    if (max_bytes == 0) return invalidArgument("the message size limit must be positive");
    size_t limit = static_cast<size_t>(max_bytes);
    if constexpr (sizeof(size_t) < sizeof(uint64_t)) {
      if (max_bytes > std::numeric_limits<size_t>::max()) limit = std::numeric_limits<size_t>::max();
    }
    options->options.maxMessageBytes = limit;
    return Status::OK();
  });
}

extern "C" mlb_status mlb_pipe_runner_create(const mlb_spec* const* features, size_t feature_count,
                                             const mlb_spec* const* advice, size_t advice_count,
                                             const mlb_pipe_options* options, mlb_runner** runner,
                                             mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!runner) return invalidArgument("mlb_pipe_runner_create: runner is NULL");
    if (!options) return nullOptions("mlb_pipe_runner_create");
    std::vector<TensorSpec> f, a;
    MLBRIDGE_RETURN_IF_ERROR(mlbridge::capi::collectRunnerSpecs(features, feature_count, advice, advice_count, &f, &a));
    return mlbridge::capi::wrapRunner(mlbridge::PipeModelRunner::create(std::move(f), std::move(a), options->options),
                                      "pipe", runner);
  });
}

extern "C" mlb_status mlb_make_private_channel_dir(const char* parent, char** path, mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!path) return invalidArgument("mlb_make_private_channel_dir: path is NULL");
    auto dir = mlbridge::makePrivateChannelDir(parent ? parent : "");
    if (!dir.ok()) return dir.status();
    char* s = mlbridge::capi::dupString(*dir);
    if (!s) return Status(mlbridge::StatusCode::kResourceExhausted, "out of memory");
    *path = s;
    return Status::OK();
  });
}
