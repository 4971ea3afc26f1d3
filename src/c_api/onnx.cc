// C API: runner kind "onnx" (the built-in engine, mlbridge::NativeModelRunner).
// The engine's sources are compiled only with MLBRIDGE_WITH_ENGINE; the build
// then defines MLBRIDGE_HAVE_ENGINE for the library, and without it the load
// functions report MLB_UNIMPLEMENTED (options still work, so callers need no
// #ifdefs).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "c_api/c_api_internal.h"
#include "mlbridge/onnx_runner.h"

using mlbridge::OnnxLoadOptions;
using mlbridge::OnnxModel;
using mlbridge::Status;
using mlbridge::TensorSpec;
using mlbridge::invalidArgument;
using mlbridge::capi::guardError;
using mlbridge::capi::nullArgument;
using mlbridge::capi::specAt;
using mlbridge::capi::wrapModel;

struct mlb_onnx_options {
  OnnxLoadOptions options;
};

struct mlb_onnx_model {
  std::shared_ptr<const OnnxModel> model;
  std::vector<mlb_spec> inputs;
  std::vector<mlb_spec> outputs;
};

namespace {

#if !defined(MLBRIDGE_HAVE_ENGINE)
Status noEngine() {
  return mlbridge::unimplemented(
      "this mlbridge library was built without the ONNX engine (configure with -DMLBRIDGE_WITH_ENGINE=ON)");
}
#endif

}  // namespace

// ---- options ---------------------------------------------------------------

extern "C" mlb_status mlb_onnx_options_create(mlb_onnx_options** options, mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullArgument("mlb_onnx_options_create", "options");
    *options = new mlb_onnx_options;
    return Status::OK();
  });
}

extern "C" void mlb_onnx_options_destroy(mlb_onnx_options* options) noexcept { delete options; }

extern "C" mlb_status mlb_onnx_options_set_dim_value(mlb_onnx_options* options, const char* dim_param, int64_t value,
                                                     mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options || !dim_param) return nullArgument("mlb_onnx_options_set_dim_value", "options and dim_param");
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

extern "C" mlb_status mlb_onnx_options_set_default_dim_value(mlb_onnx_options* options, int64_t value,
                                                             mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullArgument("mlb_onnx_options_set_default_dim_value", "options");
    if (value < 0) return invalidArgument("the default dimension must not be negative, got " + std::to_string(value));
    options->options.defaultDimValue = value;
    return Status::OK();
  });
}

extern "C" mlb_status mlb_onnx_options_set_allow_newer_opsets(mlb_onnx_options* options, int enable,
                                                              mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullArgument("mlb_onnx_options_set_allow_newer_opsets", "options");
    options->options.allowNewerOpsets = enable != 0;
    return Status::OK();
  });
}

extern "C" mlb_status mlb_onnx_options_set_portable_kernels(mlb_onnx_options* options, int enable,
                                                            mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullArgument("mlb_onnx_options_set_portable_kernels", "options");
    options->options.portableKernels = enable != 0;
    return Status::OK();
  });
}

// Limits on untrusted models (OnnxLoadOptions; docs/reliability.md, "Limits").
namespace {
Status setSizeLimit(const char* function, uint64_t value, size_t* field) {
  if (value == 0) return invalidArgument(std::string(function) + ": the limit must be positive");
  *field = value > SIZE_MAX ? SIZE_MAX : static_cast<size_t>(value);
  return Status::OK();
}
}  // namespace

extern "C" mlb_status mlb_onnx_options_set_max_model_bytes(mlb_onnx_options* options, uint64_t max_bytes,
                                                           mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullArgument("mlb_onnx_options_set_max_model_bytes", "options");
    return setSizeLimit("mlb_onnx_options_set_max_model_bytes", max_bytes, &options->options.maxFileBytes);
  });
}

extern "C" mlb_status mlb_onnx_options_set_max_tensor_bytes(mlb_onnx_options* options, uint64_t max_bytes,
                                                            mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullArgument("mlb_onnx_options_set_max_tensor_bytes", "options");
    return setSizeLimit("mlb_onnx_options_set_max_tensor_bytes", max_bytes, &options->options.maxTensorBytes);
  });
}

extern "C" mlb_status mlb_onnx_options_set_max_folded_bytes(mlb_onnx_options* options, uint64_t max_bytes,
                                                            mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullArgument("mlb_onnx_options_set_max_folded_bytes", "options");
    return setSizeLimit("mlb_onnx_options_set_max_folded_bytes", max_bytes, &options->options.maxFoldedBytes);
  });
}

extern "C" mlb_status mlb_onnx_options_set_load_timeout_ms(mlb_onnx_options* options, int64_t timeout_ms,
                                                           mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullArgument("mlb_onnx_options_set_load_timeout_ms", "options");
    if (timeout_ms < 0) return invalidArgument("the load timeout must not be negative, got " + std::to_string(timeout_ms));
    options->options.loadTimeoutMs = timeout_ms;
    return Status::OK();
  });
}

extern "C" mlb_status mlb_onnx_options_set_max_graph_depth(mlb_onnx_options* options, uint64_t max_depth,
                                                           mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullArgument("mlb_onnx_options_set_max_graph_depth", "options");
    return setSizeLimit("mlb_onnx_options_set_max_graph_depth", max_depth, &options->options.maxGraphDepth);
  });
}

// ---- models ----------------------------------------------------------------

extern "C" mlb_status mlb_onnx_model_load(const char* path, const mlb_onnx_options* options, mlb_onnx_model** model,
                                          mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!path || !model) return nullArgument("mlb_onnx_model_load", "path and model");
#if defined(MLBRIDGE_HAVE_ENGINE)
    return wrapModel(OnnxModel::load(path, options ? options->options : OnnxLoadOptions()), model);
#else
    (void)options;
    return noEngine();
#endif
  });
}

extern "C" mlb_status mlb_onnx_model_load_from_memory(const void* data, size_t size, const mlb_onnx_options* options,
                                                      mlb_onnx_model** model, mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if ((!data && size) || !model) return nullArgument("mlb_onnx_model_load_from_memory", "data and model");
#if defined(MLBRIDGE_HAVE_ENGINE)
    return wrapModel(OnnxModel::loadFromMemory(data, size, options ? options->options : OnnxLoadOptions()), model);
#else
    (void)options;
    return noEngine();
#endif
  });
}

extern "C" void mlb_onnx_model_destroy(mlb_onnx_model* model) noexcept { delete model; }

extern "C" mlb_status mlb_onnx_model_input_count(const mlb_onnx_model* model, size_t* count,
                                                 mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!model || !count) return nullArgument("mlb_onnx_model_input_count", "model and count");
    *count = model->inputs.size();
    return Status::OK();
  });
}

extern "C" mlb_status mlb_onnx_model_output_count(const mlb_onnx_model* model, size_t* count,
                                                  mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!model || !count) return nullArgument("mlb_onnx_model_output_count", "model and count");
    *count = model->outputs.size();
    return Status::OK();
  });
}

extern "C" mlb_status mlb_onnx_model_input_spec(const mlb_onnx_model* model, size_t index, const mlb_spec** spec,
                                                mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!model || !spec) return nullArgument("mlb_onnx_model_input_spec", "model and spec");
    return specAt(model->inputs, index, "input", spec);
  });
}

extern "C" mlb_status mlb_onnx_model_output_spec(const mlb_onnx_model* model, size_t index, const mlb_spec** spec,
                                                 mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!model || !spec) return nullArgument("mlb_onnx_model_output_spec", "model and spec");
    return specAt(model->outputs, index, "output", spec);
  });
}

// ---- runners ---------------------------------------------------------------

extern "C" mlb_status mlb_onnx_runner_create(const mlb_onnx_model* model, const mlb_spec* const* features,
                                             size_t feature_count, const mlb_spec* const* advice,
                                             size_t advice_count, mlb_runner** runner, mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!model || !runner) return nullArgument("mlb_onnx_runner_create", "model and runner");
    std::vector<TensorSpec> f, a;
    MLBRIDGE_RETURN_IF_ERROR(mlbridge::capi::collectRunnerSpecs(features, feature_count, advice, advice_count, &f, &a));
#if defined(MLBRIDGE_HAVE_ENGINE)
    return mlbridge::capi::wrapRunner(mlbridge::NativeModelRunner::create(model->model, std::move(f), std::move(a)),
                                      "onnx", runner);
#else
    return noEngine();
#endif
  });
}
