// C API: versions, status codes and errors, dtypes, formats, logging, specs.
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>

#include "c_api/c_api_internal.h"
#include "mlbridge/dtype.h"
#include "mlbridge/log.h"
#include "mlbridge/version.h"
#include "mlbridge/wire_format.h"

using mlbridge::DType;
using mlbridge::Status;
using mlbridge::StatusCode;
using mlbridge::TensorSpec;
using mlbridge::invalidArgument;

// The C numbering is the C++ numbering.
static_assert(MLB_VERSION_MAJOR == MLBRIDGE_VERSION_MAJOR && MLB_VERSION_MINOR == MLBRIDGE_VERSION_MINOR &&
                  MLB_VERSION_PATCH == MLBRIDGE_VERSION_PATCH,
              "mlbridge.h and version.h disagree on the version");
static_assert(MLB_OK == int(StatusCode::kOk) && MLB_CANCELLED == int(StatusCode::kCancelled) &&
                  MLB_UNKNOWN == int(StatusCode::kUnknown) &&
                  MLB_INVALID_ARGUMENT == int(StatusCode::kInvalidArgument) &&
                  MLB_DEADLINE_EXCEEDED == int(StatusCode::kDeadlineExceeded) &&
                  MLB_NOT_FOUND == int(StatusCode::kNotFound) &&
                  MLB_ALREADY_EXISTS == int(StatusCode::kAlreadyExists) &&
                  MLB_PERMISSION_DENIED == int(StatusCode::kPermissionDenied) &&
                  MLB_RESOURCE_EXHAUSTED == int(StatusCode::kResourceExhausted) &&
                  MLB_FAILED_PRECONDITION == int(StatusCode::kFailedPrecondition) &&
                  MLB_ABORTED == int(StatusCode::kAborted) && MLB_OUT_OF_RANGE == int(StatusCode::kOutOfRange) &&
                  MLB_UNIMPLEMENTED == int(StatusCode::kUnimplemented) &&
                  MLB_INTERNAL == int(StatusCode::kInternal) && MLB_UNAVAILABLE == int(StatusCode::kUnavailable) &&
                  MLB_DATA_LOSS == int(StatusCode::kDataLoss),
              "mlb_status must mirror mlbridge::StatusCode");
static_assert(MLB_DTYPE_INVALID == int(DType::kInvalid) && MLB_DTYPE_FLOAT32 == int(DType::kFloat32) &&
                  MLB_DTYPE_FLOAT64 == int(DType::kFloat64) && MLB_DTYPE_INT8 == int(DType::kInt8) &&
                  MLB_DTYPE_UINT8 == int(DType::kUInt8) && MLB_DTYPE_INT16 == int(DType::kInt16) &&
                  MLB_DTYPE_UINT16 == int(DType::kUInt16) && MLB_DTYPE_INT32 == int(DType::kInt32) &&
                  MLB_DTYPE_UINT32 == int(DType::kUInt32) && MLB_DTYPE_INT64 == int(DType::kInt64) &&
                  MLB_DTYPE_UINT64 == int(DType::kUInt64) && MLB_DTYPE_BOOL == int(DType::kBool) &&
                  MLB_DTYPE_STRING == int(DType::kString),
              "mlb_dtype must mirror mlbridge::DType");
static_assert(MLB_LOG_DEBUG == int(mlbridge::LogLevel::kDebug) && MLB_LOG_INFO == int(mlbridge::LogLevel::kInfo) &&
                  MLB_LOG_WARNING == int(mlbridge::LogLevel::kWarning) &&
                  MLB_LOG_ERROR == int(mlbridge::LogLevel::kError),
              "mlb_log_level must mirror mlbridge::LogLevel");

namespace mlbridge {
namespace capi {

namespace {
// Handed out when even an error object cannot be allocated; never freed.
mlb_error gOutOfMemory{MLB_RESOURCE_EXHAUSTED, "out of memory"};
}  // namespace

mlb_status report(mlb_error** error, const Status& s) noexcept {
  if (s.ok()) return MLB_OK;
  if (error) {
    mlb_error_free(*error);
    *error = nullptr;
    Status filled = callNoThrow([&]() -> Status {
      std::unique_ptr<mlb_error> e(new mlb_error);
      e->code = toC(s);
      e->message = s.message();
      *error = e.release();
      return Status::OK();
    });
    if (!filled.ok()) *error = &gOutOfMemory;
  }
  return toC(s);
}

mlb_status recordInRunner(mlb_runner* r, Status s) noexcept {
  mlb_status code = toC(s);
  r->last = std::move(s);
  return code;
}

Status nullArgument(const char* function, const char* names) {
  return invalidArgument(std::string(function) + ": " + names + " must not be NULL");
}

Status outOfRange(const char* what, size_t index, size_t count) {
  return Status(StatusCode::kOutOfRange, std::string(what) + " index " + std::to_string(index) +
                                             " is out of range (" + std::to_string(count) + " " + what + "s)");
}

Status specAt(const std::vector<mlb_spec>& specs, size_t index, const char* what, const mlb_spec** spec) {
  if (index >= specs.size()) return outOfRange(what, index, specs.size());
  *spec = &specs[index];
  return Status::OK();
}

Status collectSpecs(const mlb_spec* const* specs, size_t count, const char* what, std::vector<TensorSpec>* out) {
  out->clear();
  if (count && !specs) return invalidArgument(std::string(what) + " spec array is NULL");
  out->reserve(count);
  for (size_t i = 0; i < count; ++i) {
    if (!specs[i]) return invalidArgument(std::string(what) + " spec " + std::to_string(i) + " is NULL");
    out->push_back(specs[i]->spec);
  }
  return Status::OK();
}

Status collectRunnerSpecs(const mlb_spec* const* features, size_t featureCount, const mlb_spec* const* advice,
                          size_t adviceCount, std::vector<TensorSpec>* f, std::vector<TensorSpec>* a) {
  MLBRIDGE_RETURN_IF_ERROR(collectSpecs(features, featureCount, "feature", f));
  return collectSpecs(advice, adviceCount, "advice", a);
}

Status wrapRunner(std::unique_ptr<ModelRunner> runner, const char* kind, mlb_runner** out) {
  std::unique_ptr<mlb_runner> r(new mlb_runner);
  for (const TensorSpec& s : runner->inputSpecs()) r->inputs.push_back(mlb_spec{s});
  for (const TensorSpec& s : runner->outputSpecs()) r->outputs.push_back(mlb_spec{s});
  r->impl = std::move(runner);
  r->kind = kind;
  *out = r.release();
  return Status::OK();
}

char* dupString(const std::string& s) noexcept {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (!p) return nullptr;
  std::memcpy(p, s.data(), s.size());
  p[s.size()] = '\0';
  return p;
}

}  // namespace capi
}  // namespace mlbridge

using mlbridge::capi::guardError;

// ---- versions --------------------------------------------------------------

extern "C" const char* mlb_version_string(void) noexcept { return mlbridge::versionString(); }

extern "C" uint32_t mlb_api_version(void) noexcept { return MLB_API_VERSION; }

// ---- status and errors -----------------------------------------------------

extern "C" const char* mlb_status_name(mlb_status code) noexcept {
  if (code < MLB_OK || code > MLB_DATA_LOSS) return "UNKNOWN";
  return mlbridge::statusCodeName(static_cast<StatusCode>(code));
}

extern "C" mlb_status mlb_error_code(const mlb_error* error) noexcept { return error ? error->code : MLB_OK; }

extern "C" const char* mlb_error_message(const mlb_error* error) noexcept {
  return error ? error->message.c_str() : "";
}

extern "C" void mlb_error_free(mlb_error* error) noexcept {
  if (error != &mlbridge::capi::gOutOfMemory) delete error;
}

extern "C" mlb_error* mlb_error_new(mlb_status code, const char* message) noexcept {
  mlb_error* e = nullptr;
  Status made = mlbridge::capi::callNoThrow([&]() -> Status {
    std::unique_ptr<mlb_error> p(new mlb_error);
    p->code = code;
    if (message) p->message = message;
    e = p.release();
    return Status::OK();
  });
  return made.ok() ? e : &mlbridge::capi::gOutOfMemory;
}

extern "C" void mlb_string_free(char* s) noexcept { std::free(s); }

// ---- dtypes and formats ----------------------------------------------------

namespace {
bool knownDType(mlb_dtype t) { return t >= MLB_DTYPE_FLOAT32 && t <= MLB_DTYPE_STRING; }
}  // namespace

extern "C" size_t mlb_dtype_size(mlb_dtype dtype) noexcept {
  return knownDType(dtype) ? mlbridge::dtypeSize(static_cast<DType>(dtype)) : 0;
}

extern "C" const char* mlb_dtype_name(mlb_dtype dtype) noexcept {
  return knownDType(dtype) ? mlbridge::dtypeName(static_cast<DType>(dtype)) : "invalid";
}

extern "C" mlb_dtype mlb_dtype_parse(const char* name) noexcept {
  if (!name) return MLB_DTYPE_INVALID;
  return static_cast<mlb_dtype>(mlbridge::parseDType(name));
}

extern "C" const char* mlb_format_name(mlb_format format) noexcept {
  switch (format) {
    case MLB_FORMAT_BITSTREAM: return "bitstream";
    case MLB_FORMAT_JSON: return "json";
    case MLB_FORMAT_PROTOBUF: return "protobuf";
    default: return "invalid";
  }
}

extern "C" mlb_status mlb_format_parse(const char* name, mlb_format* format, mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!name || !format) return invalidArgument("mlb_format_parse: name and format must not be NULL");
    mlbridge::WireFormat f;
    if (!mlbridge::parseWireFormat(name, &f))
      return invalidArgument(std::string("unknown format \"") + name + "\" (bitstream, json or protobuf)");
    switch (f) {
      case mlbridge::WireFormat::kBitstream: *format = MLB_FORMAT_BITSTREAM; break;
      case mlbridge::WireFormat::kJson: *format = MLB_FORMAT_JSON; break;
      case mlbridge::WireFormat::kProtobuf: *format = MLB_FORMAT_PROTOBUF; break;
    }
    return Status::OK();
  });
}

// ---- logging ---------------------------------------------------------------

namespace {
struct CHook {
  mlb_log_fn fn;
  void* user;
};

void logTrampoline(mlbridge::LogLevel level, const char* message, void* user) {
  const CHook* h = static_cast<const CHook*>(user);
  h->fn(static_cast<mlb_log_level>(level), message, h->user);
}

// Every hook ever installed stays allocated: a logger on another thread may
// still be calling the previous one. (Hooks are installed rarely.)
std::mutex gHookMutex;
std::vector<std::unique_ptr<CHook>>* gHooks = nullptr;
}  // namespace

extern "C" mlb_status mlb_set_log_hook(mlb_log_fn hook, void* user) noexcept {
  if (!hook) {
    mlbridge::setLogHook(nullptr, nullptr);
    return MLB_OK;
  }
  Status s = mlbridge::capi::callNoThrow([&]() -> Status {
    std::lock_guard<std::mutex> lock(gHookMutex);
    if (!gHooks) gHooks = new std::vector<std::unique_ptr<CHook>>;
    gHooks->emplace_back(new CHook{hook, user});
    mlbridge::setLogHook(&logTrampoline, gHooks->back().get());
    return Status::OK();
  });
  return mlbridge::capi::toC(s);
}

// ---- specs -----------------------------------------------------------------

namespace {
Status newSpec(TensorSpec spec, mlb_spec** out) {
  MLBRIDGE_RETURN_IF_ERROR(spec.validate());
  *out = new mlb_spec{std::move(spec)};
  return Status::OK();
}
}  // namespace

extern "C" mlb_status mlb_spec_create(const char* name, mlb_dtype dtype, const int64_t* dims, size_t rank,
                                      mlb_spec** spec, mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!spec) return invalidArgument("mlb_spec_create: spec must not be NULL");
    if (!name) return invalidArgument("mlb_spec_create: name must not be NULL");
    if (rank && !dims) return invalidArgument(std::string("tensor '") + name + "': dims is NULL with rank " +
                                              std::to_string(rank));
    if (!knownDType(dtype))
      return invalidArgument(std::string("tensor '") + name + "' has an invalid dtype (" + std::to_string(dtype) +
                             ")");
    std::vector<int64_t> shape(dims, dims + rank);
    return newSpec(TensorSpec(name, static_cast<DType>(dtype), std::move(shape)), spec);
  });
}

extern "C" mlb_status mlb_spec_from_json(const char* json, size_t length, mlb_spec** spec,
                                         mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!spec || !json) return invalidArgument("mlb_spec_from_json: json and spec must not be NULL");
    std::string_view text(json, length == MLB_NUL_TERMINATED ? std::strlen(json) : length);
    mlbridge::StatusOr<TensorSpec> parsed = TensorSpec::fromJSON(text);
    if (!parsed.ok()) return parsed.status();
    return newSpec(std::move(*parsed), spec);
  });
}

extern "C" mlb_status mlb_spec_to_json(const mlb_spec* spec, char** json, mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!spec || !json) return invalidArgument("mlb_spec_to_json: spec and json must not be NULL");
    char* s = mlbridge::capi::dupString(spec->spec.toJSON());
    if (!s) return Status(StatusCode::kResourceExhausted, "out of memory");
    *json = s;
    return Status::OK();
  });
}

extern "C" mlb_status mlb_spec_clone(const mlb_spec* spec, mlb_spec** copy, mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!spec || !copy) return invalidArgument("mlb_spec_clone: spec and copy must not be NULL");
    *copy = new mlb_spec{spec->spec};
    return Status::OK();
  });
}

extern "C" void mlb_spec_destroy(mlb_spec* spec) noexcept { delete spec; }

extern "C" const char* mlb_spec_name(const mlb_spec* spec) noexcept {
  return spec ? spec->spec.name().c_str() : nullptr;
}

extern "C" mlb_dtype mlb_spec_dtype(const mlb_spec* spec) noexcept {
  return spec ? static_cast<mlb_dtype>(spec->spec.type()) : MLB_DTYPE_INVALID;
}

extern "C" size_t mlb_spec_rank(const mlb_spec* spec) noexcept { return spec ? spec->spec.shape().size() : 0; }

extern "C" const int64_t* mlb_spec_dims(const mlb_spec* spec) noexcept {
  return spec && !spec->spec.shape().empty() ? spec->spec.shape().data() : nullptr;
}

extern "C" size_t mlb_spec_element_count(const mlb_spec* spec) noexcept {
  return spec ? spec->spec.elementCount() : 0;
}

extern "C" size_t mlb_spec_byte_size(const mlb_spec* spec) noexcept { return spec ? spec->spec.byteSize() : 0; }

extern "C" int mlb_spec_equal(const mlb_spec* a, const mlb_spec* b) noexcept {
  return a && b && a->spec == b->spec ? 1 : 0;
}
