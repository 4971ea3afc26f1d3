// C API: runner kind "shm" (mlbridge::ShmModelRunner).
#include <limits>
#include <string>
#include <vector>

#include "c_api/c_api_internal.h"
#include "mlbridge/shm_runner.h"

using mlbridge::Status;
using mlbridge::invalidArgument;
using mlbridge::capi::guardError;

struct mlb_shm_options {
  mlbridge::ShmOptions options;
};

namespace {
// Runs `set` on the options after the NULL check every setter needs.
template <class F>
mlb_status setOption(mlb_shm_options* o, const char* function, mlb_error** error, F set) {
  return guardError(error, [&]() -> Status {
    if (!o) return invalidArgument(std::string(function) + ": options is NULL");
    return set(o->options);
  });
}
}  // namespace

extern "C" mlb_status mlb_shm_options_create(mlb_shm_options** options, mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return invalidArgument("mlb_shm_options_create: options is NULL");
    *options = new mlb_shm_options;
    return Status::OK();
  });
}

extern "C" void mlb_shm_options_destroy(mlb_shm_options* options) noexcept { delete options; }

extern "C" mlb_status mlb_shm_options_set_base(mlb_shm_options* options, const char* base,
                                               mlb_error** error) noexcept {
  return setOption(options, "mlb_shm_options_set_base", error, [&](mlbridge::ShmOptions& o) -> Status {
    if (!base || !*base) return invalidArgument("the channel base path must not be empty");
    o.base = base;
    return Status::OK();
  });
}

extern "C" mlb_status mlb_shm_options_set_format(mlb_shm_options* options, mlb_format format,
                                                 mlb_error** error) noexcept {
  return setOption(options, "mlb_shm_options_set_format", error, [&](mlbridge::ShmOptions& o) -> Status {
    switch (format) {
      case MLB_FORMAT_BITSTREAM: o.format = mlbridge::WireFormat::kBitstream; break;
      case MLB_FORMAT_JSON: o.format = mlbridge::WireFormat::kJson; break;
      case MLB_FORMAT_PROTOBUF: o.format = mlbridge::WireFormat::kProtobuf; break;
      default: return invalidArgument("unknown format value " + std::to_string(format));
    }
    return Status::OK();
  });
}

extern "C" mlb_status mlb_shm_options_set_timeout_ms(mlb_shm_options* options, int32_t timeout_ms,
                                                     mlb_error** error) noexcept {
  return setOption(options, "mlb_shm_options_set_timeout_ms", error, [&](mlbridge::ShmOptions& o) -> Status {
    if (timeout_ms <= 0) return invalidArgument("the timeout must be positive, got " + std::to_string(timeout_ms) + " ms");
    o.timeoutMs = timeout_ms;
    return Status::OK();
  });
}

extern "C" mlb_status mlb_shm_options_set_connect_timeout_ms(mlb_shm_options* options, int32_t timeout_ms,
                                                             mlb_error** error) noexcept {
  return setOption(options, "mlb_shm_options_set_connect_timeout_ms", error, [&](mlbridge::ShmOptions& o) -> Status {
    if (timeout_ms <= 0)
      return invalidArgument("the connect timeout must be positive, got " + std::to_string(timeout_ms) + " ms");
    o.connectTimeoutMs = timeout_ms;
    return Status::OK();
  });
}

extern "C" mlb_status mlb_shm_options_set_spin_us(mlb_shm_options* options, int32_t spin_us,
                                                  mlb_error** error) noexcept {
  return setOption(options, "mlb_shm_options_set_spin_us", error, [&](mlbridge::ShmOptions& o) -> Status {
    if (spin_us < 0 || spin_us > 1000000)
      return invalidArgument("the spin budget must be in 0..1000000 us, got " + std::to_string(spin_us));
    o.spinUs = spin_us;
    return Status::OK();
  });
}

extern "C" mlb_status mlb_shm_options_set_allow_shared_folder(mlb_shm_options* options, int enable,
                                                              mlb_error** error) noexcept {
  return setOption(options, "mlb_shm_options_set_allow_shared_folder", error, [&](mlbridge::ShmOptions& o) -> Status {
    o.allowSharedFolder = enable != 0;
    return Status::OK();
  });
}

extern "C" mlb_status mlb_shm_options_set_max_message_bytes(mlb_shm_options* options, uint64_t max_bytes,
                                                            mlb_error** error) noexcept {
  return setOption(options, "mlb_shm_options_set_max_message_bytes", error, [&](mlbridge::ShmOptions& o) -> Status {
    if (max_bytes == 0) return invalidArgument("the message size limit must be positive");
    size_t limit = static_cast<size_t>(max_bytes);
    if constexpr (sizeof(size_t) < sizeof(uint64_t)) {
      if (max_bytes > std::numeric_limits<size_t>::max()) limit = std::numeric_limits<size_t>::max();
    }
    o.maxMessageBytes = limit;
    return Status::OK();
  });
}

extern "C" mlb_status mlb_shm_runner_create(const mlb_spec* const* features, size_t feature_count,
                                            const mlb_spec* const* advice, size_t advice_count,
                                            const mlb_shm_options* options, mlb_runner** runner,
                                            mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!runner) return invalidArgument("mlb_shm_runner_create: runner is NULL");
    if (!options) return invalidArgument("mlb_shm_runner_create: options is NULL");
    std::vector<mlbridge::TensorSpec> f, a;
    MLBRIDGE_RETURN_IF_ERROR(mlbridge::capi::collectRunnerSpecs(features, feature_count, advice, advice_count, &f, &a));
    return mlbridge::capi::wrapRunner(mlbridge::ShmModelRunner::create(std::move(f), std::move(a), options->options),
                                      "shm", runner);
  });
}
