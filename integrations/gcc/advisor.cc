#include "advisor.h"

#include "runner_kind.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

namespace mlbridge_gcc {
namespace {

using mlbridge_integrations::parseRunnerKind;
using mlbridge_integrations::RunnerKind;

const char* const kFeatureNames[kFeatureCount] = {
    "trip_count", "loop_depth", "innermost", "loop_blocks", "loop_stmts", "loop_loads",
    "loop_stores", "loop_calls", "fn_blocks", "fn_stmts", "fn_loops"};

bool parseInt(const char* text, int64_t lo, int64_t hi, int64_t* out) {
  if (text == nullptr || *text == '\0') return false;
  errno = 0;
  char* end = nullptr;
  long long v = strtoll(text, &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

// The runners this plugin offers: onnx (model=) and pipe (pipe=).
bool parseOnnxOrPipe(const std::string& text, RunnerKind* kind, std::string* error) {
  if (parseRunnerKind(text, kind) && (*kind == RunnerKind::kOnnx || *kind == RunnerKind::kPipe)) return true;
  *error = "runner must be onnx or pipe, not '" + text + "'";
  return false;
}

// Takes over an mlb_error: its message, prefixed, into *error.
bool takeError(mlb_error* err, const char* what, std::string* error) {
  if (error != nullptr) {
    *error = what;
    *error += ": ";
    *error += mlb_status_name(mlb_error_code(err));
    *error += ": ";
    *error += mlb_error_message(err);
  }
  mlb_error_free(err);
  return false;
}

// The specs of the runner: every feature and the advice are int64 [1].
struct Specs {
  mlb_spec* features[kFeatureCount] = {};
  mlb_spec* advice = nullptr;
  ~Specs() {
    for (mlb_spec* s : features) mlb_spec_destroy(s);
    mlb_spec_destroy(advice);
  }
  bool create(mlb_error** err) {
    const int64_t dims[1] = {1};
    for (int i = 0; i < kFeatureCount; ++i)
      if (mlb_spec_create(kFeatureNames[i], MLB_DTYPE_INT64, dims, 1, &features[i], err) != MLB_OK) return false;
    return mlb_spec_create(kAdviceName, MLB_DTYPE_INT64, dims, 1, &advice, err) == MLB_OK;
  }
};

}  // namespace

const char* featureName(int feature) {
  return feature >= 0 && feature < kFeatureCount ? kFeatureNames[feature] : "";
}

bool setOption(Options& options, const char* key, const char* value, std::string* error) {
  std::string k = key != nullptr ? key : "";
  const char* v = value != nullptr ? value : "";
  int64_t n = 0;
  if (k == "runner") {
    RunnerKind kind = RunnerKind::kOnnx;
    if (!parseOnnxOrPipe(v, &kind, error)) return false;
    options.runner = v;
  } else if (k == "model") {
    options.model = v;
  } else if (k == "pipe") {
    options.pipe = v;
  } else if (k == "format") {
    mlb_format f;
    if (mlb_format_parse(v, &f, nullptr) != MLB_OK) {
      *error = "format must be bitstream, json or protobuf, not '" + std::string(v) + "'";
      return false;
    }
    options.format = v;
  } else if (k == "log") {
    options.log = v;
  } else if (k == "timeout") {
    if (!parseInt(v, 1, INT32_MAX, &n)) {
      *error = "timeout must be a positive number of milliseconds, not '" + std::string(v) + "'";
      return false;
    }
    options.timeoutMs = static_cast<int32_t>(n);
  } else if (k == "max-unroll") {
    if (!parseInt(v, 1, 65534, &n)) {
      *error = "max-unroll must be in [1, 65534], not '" + std::string(v) + "'";
      return false;
    }
    options.maxUnroll = n;
  } else {
    *error = "unknown argument '" + k + "' (known: runner, model, pipe, format, log, timeout, max-unroll)";
    return false;
  }
  return true;
}

Advisor::~Advisor() {
  mlb_runner_destroy(runner_);
  mlb_onnx_model_destroy(model_);
}

bool Advisor::open(const Options& options, std::string* error) {
  // Unset: what the options point at, the model file first.
  RunnerKind kind = RunnerKind::kOnnx;
  if (!options.runner.empty()) {
    if (!parseOnnxOrPipe(options.runner, &kind, error)) return false;
  } else if (options.model.empty() && !options.pipe.empty()) {
    kind = RunnerKind::kPipe;
  } else if (options.model.empty()) {
    *error = "no model: give -fplugin-arg-mlbridge-model=FILE.onnx or -fplugin-arg-mlbridge-pipe=BASE";
    return false;
  }
  maxUnroll_ = options.maxUnroll;
  mlb_error* err = nullptr;
  Specs specs;
  if (!specs.create(&err)) return takeError(err, "specs", error);
  const mlb_spec* const* features = specs.features;
  const mlb_spec* advice[1] = {specs.advice};
  if (kind == RunnerKind::kOnnx) {
    if (options.model.empty()) {
      *error = "runner onnx needs -fplugin-arg-mlbridge-model=FILE.onnx";
      return false;
    }
    if (mlb_onnx_model_load(options.model.c_str(), nullptr, &model_, &err) != MLB_OK)
      return takeError(err, "loading the ONNX model", error);
    if (mlb_onnx_runner_create(model_, features, kFeatureCount, advice, 1, &runner_, &err) != MLB_OK)
      return takeError(err, "ONNX runner", error);
  } else {
    if (options.pipe.empty()) {
      *error = "runner pipe needs -fplugin-arg-mlbridge-pipe=BASE";
      return false;
    }
    mlb_pipe_options* po = nullptr;
    mlb_format format = MLB_FORMAT_BITSTREAM;
    bool ok = mlb_pipe_options_create(&po, &err) == MLB_OK &&
              mlb_format_parse(options.format.c_str(), &format, &err) == MLB_OK &&
              mlb_pipe_options_set_base(po, options.pipe.c_str(), &err) == MLB_OK &&
              mlb_pipe_options_set_format(po, format, &err) == MLB_OK &&
              mlb_pipe_options_set_timeout_ms(po, options.timeoutMs, &err) == MLB_OK &&
              mlb_pipe_options_set_connect_timeout_ms(po, options.timeoutMs, &err) == MLB_OK &&
              mlb_pipe_runner_create(features, kFeatureCount, advice, 1, po, &runner_, &err) == MLB_OK;
    mlb_pipe_options_destroy(po);
    if (!ok) return takeError(err, "pipe runner", error);
  }
  for (int i = 0; i < kFeatureCount; ++i) {
    void* data = nullptr;
    if (mlb_runner_input_data(runner_, static_cast<size_t>(i), MLB_DTYPE_INT64, &data, nullptr) != MLB_OK)
      return fail("input buffer", error);
    inputs_[i] = static_cast<int64_t*>(data);
  }
  return true;
}

bool Advisor::fail(const char* what, std::string* error) {
  mlb_status code = mlb_runner_last_status(runner_);
  if (error != nullptr)
    *error = std::string(what) + ": " + mlb_status_name(code) + ": " + mlb_runner_last_error(runner_);
  // Only a refusal of this one request leaves the session usable.
  if (code != MLB_ABORTED) broken_ = true;
  return false;
}

bool Advisor::decide(const char* context, const int64_t (&features)[kFeatureCount], int64_t* factor,
                     std::string* error) {
  if (!usable()) {
    *error = "the model session is closed";
    return false;
  }
  if (context_ != context) {
    context_ = context;
    if (mlb_runner_set_context(runner_, context) != MLB_OK) return fail("context", error);
  }
  for (int i = 0; i < kFeatureCount; ++i) *inputs_[i] = features[i];
  if (mlb_runner_evaluate(runner_) != MLB_OK) return fail("evaluate", error);
  int64_t out = 0;
  if (mlb_runner_get_output(runner_, 0, MLB_DTYPE_INT64, &out, 1) != MLB_OK) return fail("advice", error);
  if (out < 0 || out > maxUnroll_) {
    *error = "the model answered unroll factor " + std::to_string(out) + ", outside [0, " +
             std::to_string(maxUnroll_) + "]";
    return false;
  }
  *factor = out;
  return true;
}

bool Advisor::close(std::string* error) {
  if (runner_ == nullptr) return true;
  bool ok = broken_ || mlb_runner_finish(runner_) == MLB_OK;
  if (!ok) fail("finish", error);
  mlb_runner_destroy(runner_);
  runner_ = nullptr;
  return ok;
}

}  // namespace mlbridge_gcc
