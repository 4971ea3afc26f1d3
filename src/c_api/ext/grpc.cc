// C API: runner kind "grpc" (mlbridge::GrpcModelRunner). Compiled into the
// optional library mlbridge_grpc by src/c_api/c_api.cmake.
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "c_api/c_api_internal.h"
#include "mlbridge/grpc_runner.h"

using mlbridge::GrpcChannel;
using mlbridge::GrpcRunnerOptions;
using mlbridge::Status;
using mlbridge::TensorSpec;
using mlbridge::invalidArgument;
using mlbridge::capi::guardError;
using mlbridge::capi::nullArgument;

struct mlb_grpc_options {
  GrpcRunnerOptions options;
};

struct mlb_grpc_channel {
  std::shared_ptr<GrpcChannel> channel;
};

namespace {

Status positive(const char* what, int64_t value) {
  if (value > 0) return Status::OK();
  return invalidArgument(std::string(what) + " must be positive, got " + std::to_string(value));
}

}  // namespace

// ---- options ---------------------------------------------------------------

extern "C" mlb_status mlb_grpc_options_create(mlb_grpc_options** options, mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullArgument("mlb_grpc_options_create", "options");
    *options = new mlb_grpc_options;
    return Status::OK();
  });
}

extern "C" void mlb_grpc_options_destroy(mlb_grpc_options* options) noexcept { delete options; }

extern "C" mlb_status mlb_grpc_options_set_address(mlb_grpc_options* options, const char* address,
                                                   mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullArgument("mlb_grpc_options_set_address", "options");
    if (!address || !*address) return invalidArgument("the server address must not be empty (\"host:port\")");
    options->options.address = address;
    return Status::OK();
  });
}

extern "C" mlb_status mlb_grpc_options_set_deadline_ms(mlb_grpc_options* options, int32_t deadline_ms,
                                                       mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullArgument("mlb_grpc_options_set_deadline_ms", "options");
    MLBRIDGE_RETURN_IF_ERROR(positive("the deadline (ms)", deadline_ms));
    options->options.deadlineMs = deadline_ms;
    return Status::OK();
  });
}

extern "C" mlb_status mlb_grpc_options_set_retry(mlb_grpc_options* options, int32_t max_attempts,
                                                 int32_t initial_backoff_ms, int32_t max_backoff_ms,
                                                 int32_t total_budget_ms, mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullArgument("mlb_grpc_options_set_retry", "options");
    MLBRIDGE_RETURN_IF_ERROR(positive("max_attempts", max_attempts));
    MLBRIDGE_RETURN_IF_ERROR(positive("initial_backoff_ms", initial_backoff_ms));
    MLBRIDGE_RETURN_IF_ERROR(positive("max_backoff_ms", max_backoff_ms));
    MLBRIDGE_RETURN_IF_ERROR(positive("total_budget_ms", total_budget_ms));
    if (max_backoff_ms < initial_backoff_ms)
      return invalidArgument("max_backoff_ms (" + std::to_string(max_backoff_ms) + ") is below initial_backoff_ms (" +
                             std::to_string(initial_backoff_ms) + ")");
    options->options.retry.maxAttempts = max_attempts;
    options->options.retry.initialBackoffMs = initial_backoff_ms;
    options->options.retry.maxBackoffMs = max_backoff_ms;
    options->options.retry.totalBudgetMs = total_budget_ms;
    return Status::OK();
  });
}

extern "C" mlb_status mlb_grpc_options_set_tls(mlb_grpc_options* options, int enabled, const char* root_ca_path,
                                               const char* cert_chain_path, const char* private_key_path,
                                               const char* server_name_override, mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullArgument("mlb_grpc_options_set_tls", "options");
    bool cert = cert_chain_path && *cert_chain_path, key = private_key_path && *private_key_path;
    if (cert != key) return invalidArgument("mutual TLS needs both a certificate chain and its private key");
    mlbridge::GrpcClientTls& tls = options->options.tls;
    tls.enabled = enabled != 0;
    tls.rootCaPath = root_ca_path ? root_ca_path : "";
    tls.certChainPath = cert_chain_path ? cert_chain_path : "";
    tls.privateKeyPath = private_key_path ? private_key_path : "";
    tls.serverNameOverride = server_name_override ? server_name_override : "";
    return Status::OK();
  });
}

extern "C" mlb_status mlb_grpc_options_set_token(mlb_grpc_options* options, const char* token,
                                                 mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullArgument("mlb_grpc_options_set_token", "options");
    options->options.token = token ? token : "";
    return Status::OK();
  });
}

extern "C" mlb_status mlb_grpc_options_set_client_name(mlb_grpc_options* options, const char* name,
                                                       mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullArgument("mlb_grpc_options_set_client_name", "options");
    options->options.clientName = name ? name : "";
    return Status::OK();
  });
}

extern "C" mlb_status mlb_grpc_options_set_streaming(mlb_grpc_options* options, int enable,
                                                     mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullArgument("mlb_grpc_options_set_streaming", "options");
    options->options.streaming = enable != 0;
    return Status::OK();
  });
}

extern "C" mlb_status mlb_grpc_options_set_max_message_bytes(mlb_grpc_options* options, uint64_t max_bytes,
                                                             mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullArgument("mlb_grpc_options_set_max_message_bytes", "options");
    if (max_bytes == 0) return invalidArgument("the message size limit must be positive");
    // gRPC takes an int limit.
    if (max_bytes > static_cast<uint64_t>(std::numeric_limits<int>::max()))
      return invalidArgument("the message size limit must be below 2 GiB, got " + std::to_string(max_bytes));
    options->options.maxMessageBytes = static_cast<size_t>(max_bytes);
    return Status::OK();
  });
}

// ---- channels --------------------------------------------------------------

extern "C" mlb_status mlb_grpc_channel_create(const mlb_grpc_options* options, mlb_grpc_channel** channel,
                                              mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options || !channel) return nullArgument("mlb_grpc_channel_create", "options and channel");
    auto created = GrpcChannel::create(options->options);
    if (!created.ok()) return created.status();
    *channel = new mlb_grpc_channel{std::move(*created)};
    return Status::OK();
  });
}

extern "C" void mlb_grpc_channel_destroy(mlb_grpc_channel* channel) noexcept { delete channel; }

extern "C" mlb_status mlb_grpc_channel_shutdown_server(mlb_grpc_channel* channel, const char* reason,
                                                      mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!channel) return nullArgument("mlb_grpc_channel_shutdown_server", "channel");
    return channel->channel->shutdownServer(reason ? reason : "");
  });
}

// ---- runners ---------------------------------------------------------------

extern "C" mlb_status mlb_grpc_runner_create(const mlb_spec* const* features, size_t feature_count,
                                             const mlb_spec* const* advice, size_t advice_count,
                                             const mlb_grpc_options* options, mlb_runner** runner,
                                             mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options || !runner) return nullArgument("mlb_grpc_runner_create", "options and runner");
    std::vector<TensorSpec> f, a;
    MLBRIDGE_RETURN_IF_ERROR(mlbridge::capi::collectRunnerSpecs(features, feature_count, advice, advice_count, &f, &a));
    return mlbridge::capi::wrapRunner(mlbridge::GrpcModelRunner::create(std::move(f), std::move(a), options->options),
                                      "grpc", runner);
  });
}

extern "C" mlb_status mlb_grpc_runner_create_on_channel(mlb_grpc_channel* channel, const mlb_spec* const* features,
                                                        size_t feature_count, const mlb_spec* const* advice,
                                                        size_t advice_count, mlb_runner** runner,
                                                        mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!channel || !runner) return nullArgument("mlb_grpc_runner_create_on_channel", "channel and runner");
    std::vector<TensorSpec> f, a;
    MLBRIDGE_RETURN_IF_ERROR(mlbridge::capi::collectRunnerSpecs(features, feature_count, advice, advice_count, &f, &a));
    return mlbridge::capi::wrapRunner(mlbridge::GrpcModelRunner::create(std::move(f), std::move(a), channel->channel),
                                      "grpc", runner);
  });
}
