// C API: runner kind "onnxruntime" (mlbridge::OnnxRuntimeRunner). Compiled
// into the optional library mlbridge_onnxruntime by src/c_api/c_api.cmake.
#include <memory>
#include <string>
#include <vector>

#include "c_api/c_api_internal.h"
#include "mlbridge/onnxruntime_runner.h"

using mlbridge::OnnxRuntimeModel;
using mlbridge::OnnxRuntimeOptions;
using mlbridge::Status;
using mlbridge::StatusCode;
using mlbridge::TensorSpec;
using mlbridge::invalidArgument;
using mlbridge::capi::guardError;
using mlbridge::capi::nullArgument;
using mlbridge::capi::specAt;
using mlbridge::capi::wrapModel;

struct mlb_onnxruntime_options {
  OnnxRuntimeOptions options;
};

struct mlb_onnxruntime_model {
  std::shared_ptr<const OnnxRuntimeModel> model;
  std::vector<mlb_spec> inputs;
  std::vector<mlb_spec> outputs;
};

namespace {

const OnnxRuntimeOptions& optionsOf(const mlb_onnxruntime_options* o) {
  static const OnnxRuntimeOptions kDefaults;
  return o ? o->options : kDefaults;
}

}  // namespace

// ---- options ---------------------------------------------------------------

extern "C" mlb_status mlb_onnxruntime_options_create(mlb_onnxruntime_options** options, mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullArgument("mlb_onnxruntime_options_create", "options");
    *options = new mlb_onnxruntime_options;
    return Status::OK();
  });
}

extern "C" void mlb_onnxruntime_options_destroy(mlb_onnxruntime_options* options) noexcept { delete options; }

extern "C" mlb_status mlb_onnxruntime_options_set_intra_op_threads(mlb_onnxruntime_options* options, int32_t threads,
                                                                   mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullArgument("mlb_onnxruntime_options_set_intra_op_threads", "options");
    if (threads < 0) return invalidArgument("intra-op threads must not be negative, got " + std::to_string(threads));
    options->options.intraOpThreads = threads;
    return Status::OK();
  });
}

extern "C" mlb_status mlb_onnxruntime_options_set_inter_op_threads(mlb_onnxruntime_options* options, int32_t threads,
                                                                   mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullArgument("mlb_onnxruntime_options_set_inter_op_threads", "options");
    if (threads < 0) return invalidArgument("inter-op threads must not be negative, got " + std::to_string(threads));
    options->options.interOpThreads = threads;
    return Status::OK();
  });
}

extern "C" mlb_status mlb_onnxruntime_options_set_allow_spinning(mlb_onnxruntime_options* options, int enable,
                                                                 mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullArgument("mlb_onnxruntime_options_set_allow_spinning", "options");
    options->options.allowSpinning = enable != 0;
    return Status::OK();
  });
}

extern "C" mlb_status mlb_onnxruntime_options_set_optimization(mlb_onnxruntime_options* options,
                                                               mlb_onnxruntime_optimization level,
                                                               mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullArgument("mlb_onnxruntime_options_set_optimization", "options");
    using Opt = OnnxRuntimeOptions::Optimization;
    switch (level) {
      case MLB_ONNXRUNTIME_OPTIMIZE_NONE: options->options.optimization = Opt::kNone; break;
      case MLB_ONNXRUNTIME_OPTIMIZE_BASIC: options->options.optimization = Opt::kBasic; break;
      case MLB_ONNXRUNTIME_OPTIMIZE_EXTENDED: options->options.optimization = Opt::kExtended; break;
      case MLB_ONNXRUNTIME_OPTIMIZE_ALL: options->options.optimization = Opt::kAll; break;
      default: return invalidArgument("unknown ONNX Runtime optimization level " + std::to_string(level));
    }
    return Status::OK();
  });
}

extern "C" mlb_status mlb_onnxruntime_options_set_dim_value(mlb_onnxruntime_options* options, const char* dim_param,
                                                            int64_t value, mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options || !dim_param)
      return nullArgument("mlb_onnxruntime_options_set_dim_value", "options and dim_param");
    if (!*dim_param) return invalidArgument("the symbolic dimension name must not be empty");
    if (value < 0)
      return invalidArgument(std::string("dimension '") + dim_param + "' must not be negative, got " +
                             std::to_string(value));
    for (auto& dv : options->options.dimValues) {
      if (dv.first == dim_param) {
        dv.second = value;
        return Status::OK();
      }
    }
    options->options.dimValues.emplace_back(dim_param, value);
    return Status::OK();
  });
}

extern "C" mlb_status mlb_onnxruntime_options_set_log_severity(mlb_onnxruntime_options* options, int32_t severity,
                                                               mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullArgument("mlb_onnxruntime_options_set_log_severity", "options");
    if (severity < 0 || severity > 4)
      return invalidArgument("log severity must be 0 (verbose) to 4 (fatal), got " + std::to_string(severity));
    options->options.logSeverity = severity;
    return Status::OK();
  });
}

// ---- models ----------------------------------------------------------------

extern "C" mlb_status mlb_onnxruntime_model_load(const char* path, const mlb_onnxruntime_options* options,
                                                 mlb_onnxruntime_model** model, mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!path || !model) return nullArgument("mlb_onnxruntime_model_load", "path and model");
    return wrapModel(OnnxRuntimeModel::load(path, optionsOf(options)), model);
  });
}

extern "C" mlb_status mlb_onnxruntime_model_load_from_memory(const void* data, size_t size,
                                                             const mlb_onnxruntime_options* options,
                                                             mlb_onnxruntime_model** model,
                                                             mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if ((!data && size) || !model) return nullArgument("mlb_onnxruntime_model_load_from_memory", "data and model");
    return wrapModel(OnnxRuntimeModel::loadFromMemory(data, size, optionsOf(options)), model);
  });
}

extern "C" void mlb_onnxruntime_model_destroy(mlb_onnxruntime_model* model) noexcept { delete model; }

extern "C" mlb_status mlb_onnxruntime_model_input_count(const mlb_onnxruntime_model* model, size_t* count,
                                                        mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!model || !count) return nullArgument("mlb_onnxruntime_model_input_count", "model and count");
    *count = model->inputs.size();
    return Status::OK();
  });
}

extern "C" mlb_status mlb_onnxruntime_model_output_count(const mlb_onnxruntime_model* model, size_t* count,
                                                         mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!model || !count) return nullArgument("mlb_onnxruntime_model_output_count", "model and count");
    *count = model->outputs.size();
    return Status::OK();
  });
}

extern "C" mlb_status mlb_onnxruntime_model_input_spec(const mlb_onnxruntime_model* model, size_t index,
                                                       const mlb_spec** spec, mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!model || !spec) return nullArgument("mlb_onnxruntime_model_input_spec", "model and spec");
    return specAt(model->inputs, index, "input", spec);
  });
}

extern "C" mlb_status mlb_onnxruntime_model_output_spec(const mlb_onnxruntime_model* model, size_t index,
                                                        const mlb_spec** spec, mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!model || !spec) return nullArgument("mlb_onnxruntime_model_output_spec", "model and spec");
    return specAt(model->outputs, index, "output", spec);
  });
}

extern "C" mlb_status mlb_onnxruntime_version(char** version, mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!version) return nullArgument("mlb_onnxruntime_version", "version");
    char* s = mlbridge::capi::dupString(OnnxRuntimeModel::runtimeVersion());
    if (!s) return Status(StatusCode::kResourceExhausted, "out of memory");
    *version = s;
    return Status::OK();
  });
}

// ---- runners ---------------------------------------------------------------

extern "C" mlb_status mlb_onnxruntime_runner_create(const mlb_onnxruntime_model* model,
                                                    const mlb_spec* const* features, size_t feature_count,
                                                    const mlb_spec* const* advice, size_t advice_count,
                                                    mlb_runner** runner, mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!model || !runner) return nullArgument("mlb_onnxruntime_runner_create", "model and runner");
    std::vector<TensorSpec> f, a;
    MLBRIDGE_RETURN_IF_ERROR(mlbridge::capi::collectRunnerSpecs(features, feature_count, advice, advice_count, &f, &a));
    return mlbridge::capi::wrapRunner(mlbridge::OnnxRuntimeRunner::create(model->model, std::move(f), std::move(a)),
                                      "onnxruntime", runner);
  });
}
