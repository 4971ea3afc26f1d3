#include "ort/ort_api.h"

#include "log_internal.h"

namespace mlbridge {
namespace ort {

namespace {

const OrtApi* resolveApi() {
  const OrtApiBase* base = OrtGetApiBase();
  return base ? base->GetApi(ORT_API_VERSION) : nullptr;
}


void logToHook(void* /*param*/, OrtLoggingLevel severity, const char* category, const char* /*logid*/,
               const char* codeLocation, const char* message) {
  LogLevel level = LogLevel::kError;
  switch (severity) {
    case ORT_LOGGING_LEVEL_VERBOSE: level = LogLevel::kDebug; break;
    case ORT_LOGGING_LEVEL_INFO: level = LogLevel::kInfo; break;
    case ORT_LOGGING_LEVEL_WARNING: level = LogLevel::kWarning; break;
    default: level = LogLevel::kError; break;
  }
  std::string m = "onnxruntime";
  if (category && *category) m += std::string(" [") + category + "]";
  m += ": ";
  m += message ? message : "";
  if (codeLocation && *codeLocation && severity >= ORT_LOGGING_LEVEL_ERROR) m += std::string(" (") + codeLocation + ")";
  logMessage(level, m);
}

struct EnvHolder {
  OrtEnv* env = nullptr;
  Status status;
};

EnvHolder makeEnv() {
  EnvHolder h;
  const OrtApi* a = api();
  if (!a) {
    h.status = apiStatus();
    return h;
  }
  // Each session logs at its own severity (OnnxRuntimeOptions::logSeverity);
  // messages outside a session: warnings and up.
  OrtStatus* s = a->CreateEnvWithCustomLogger(logToHook, nullptr, ORT_LOGGING_LEVEL_WARNING, "mlbridge", &h.env);
  if (s) {
    h.status = toStatus(s, "creating the ONNX Runtime environment");
    h.env = nullptr;
  }
  return h;
}

}  // namespace

const OrtApi* api() {
  static const OrtApi* const table = resolveApi();
  return table;
}

Status apiStatus() {
  if (api()) return Status::OK();
  const OrtApiBase* base = OrtGetApiBase();
  std::string have = base && base->GetVersionString ? base->GetVersionString() : "unknown";
  return failedPrecondition("the ONNX Runtime library (version " + have + ") does not provide C API version " +
                            std::to_string(ORT_API_VERSION) + ", which mlbridge was built against (needs 1." +
                            std::to_string(ORT_API_VERSION) + " or newer)");
}

StatusOr<OrtEnv*> env() {
  static const EnvHolder holder = makeEnv();  // magic static: created once, thread-safe
  if (!holder.env) return holder.status;
  return holder.env;
}

Status toStatus(OrtStatus* status, const std::string& context, StatusCode generic) {
  if (!status) return Status::OK();
  const OrtApi* a = api();
  OrtErrorCode code = a->GetErrorCode(status);
  const char* msg = a->GetErrorMessage(status);
  std::string message = context.empty() ? std::string() : context + ": ";
  message += msg ? msg : "(no message)";
  a->ReleaseStatus(status);
  StatusCode c = generic;
  switch (code) {
    case ORT_OK: c = StatusCode::kUnknown; break;  // an error object with code OK: should not happen
    case ORT_INVALID_ARGUMENT: c = StatusCode::kInvalidArgument; break;
    case ORT_NO_SUCHFILE:
    case ORT_NOT_FOUND: c = StatusCode::kNotFound; break;
    case ORT_INVALID_PROTOBUF: c = StatusCode::kDataLoss; break;
    case ORT_NOT_IMPLEMENTED: c = StatusCode::kUnimplemented; break;
    case ORT_INVALID_GRAPH: c = StatusCode::kInvalidArgument; break;
    case ORT_MODEL_LOAD_CANCELED: c = StatusCode::kCancelled; break;
    case ORT_MODEL_REQUIRES_COMPILATION: c = StatusCode::kFailedPrecondition; break;
    default: break;  // ORT_FAIL, ORT_RUNTIME_EXCEPTION, ORT_ENGINE_ERROR, ORT_EP_FAIL, ...
  }
  return Status(c, message);
}

void ignore(OrtStatus* status) {
  if (status) api()->ReleaseStatus(status);
}

}  // namespace ort
}  // namespace mlbridge
