// C API: the runner handle shared by every runner kind.
#include <cstring>
#include <string>
#include <vector>

#include "c_api/c_api_internal.h"
#include "mlbridge/feature.h"
#include "mlbridge/span.h"

using mlbridge::DType;
using mlbridge::Feature;
using mlbridge::Span;
using mlbridge::Status;
using mlbridge::StatusCode;
using mlbridge::TensorSpec;
using mlbridge::invalidArgument;
using mlbridge::capi::guardRunner;
using mlbridge::capi::nullArgument;
using mlbridge::capi::outOfRange;
using mlbridge::capi::specAt;

namespace {

bool knownDType(mlb_dtype t) { return t >= MLB_DTYPE_FLOAT32 && t <= MLB_DTYPE_STRING; }
const char* dtypeText(mlb_dtype t) { return knownDType(t) ? mlbridge::dtypeName(static_cast<DType>(t)) : "invalid"; }

Status checkDType(mlb_dtype dtype) {
  if (!knownDType(dtype)) return invalidArgument("unknown dtype value " + std::to_string(dtype));
  return Status::OK();
}

// Output `index` of dtype `dtype`, readable now.
Status checkOutput(const mlb_runner& r, size_t index, mlb_dtype dtype, const TensorSpec** spec) {
  if (index >= r.outputs.size()) return outOfRange("output", index, r.outputs.size());
  MLBRIDGE_RETURN_IF_ERROR(checkDType(dtype));
  const TensorSpec& s = r.outputs[index].spec;
  if (static_cast<mlb_dtype>(s.type()) != dtype)
    return invalidArgument("output '" + s.name() + "' is " + mlbridge::dtypeName(s.type()) + ", requested as " +
                           dtypeText(dtype));
  if (!r.haveOutputs)
    return mlbridge::failedPrecondition("output '" + s.name() +
                                        "' is not available: no successful mlb_runner_evaluate since the runner "
                                        "was created or since the last failed one");
  *spec = &s;
  return Status::OK();
}

Status copyOutput(const mlb_runner& r, size_t index, mlb_dtype dtype, void* buffer, size_t count) {
  const TensorSpec* s = nullptr;
  MLBRIDGE_RETURN_IF_ERROR(checkOutput(r, index, dtype, &s));
  if (s->type() == DType::kString)
    return invalidArgument("output '" + s->name() + "' holds strings: read it with mlb_runner_get_output_string");
  if (count != s->elementCount())
    return invalidArgument("output '" + s->name() + "' has " + std::to_string(s->elementCount()) +
                           " elements (shape " + mlbridge::shapeToString(s->shape()) + "), the buffer has " +
                           std::to_string(count));
  if (count && !buffer) return nullArgument("mlb_runner_get_output", "buffer");
  if (s->byteSize()) std::memcpy(buffer, r.impl->outputRef(index).data, s->byteSize());
  return Status::OK();
}

template <class T>
Status setTyped(mlbridge::ModelRunner& m, const char* name, const void* data, size_t count) {
  return m.setFeature(Feature(name, Span<const T>(static_cast<const T*>(data), count)));
}

}  // namespace

// ---- errors and description ----------------------------------------------

extern "C" const char* mlb_runner_last_error(const mlb_runner* r) noexcept {
  return r ? r->last.message().c_str() : "";
}

extern "C" mlb_status mlb_runner_last_status(const mlb_runner* r) noexcept {
  return r ? mlbridge::capi::toC(r->last) : MLB_INVALID_ARGUMENT;
}

extern "C" mlb_status mlb_runner_kind(mlb_runner* r, const char** kind) noexcept {
  return guardRunner(r, [&](mlb_runner& self) -> Status {
    if (!kind) return nullArgument("mlb_runner_kind", "kind");
    *kind = self.kind;
    return Status::OK();
  });
}

// ---- specs -----------------------------------------------------------------

extern "C" mlb_status mlb_runner_input_count(mlb_runner* r, size_t* count) noexcept {
  return guardRunner(r, [&](mlb_runner& self) -> Status {
    if (!count) return nullArgument("mlb_runner_input_count", "count");
    *count = self.inputs.size();
    return Status::OK();
  });
}

extern "C" mlb_status mlb_runner_output_count(mlb_runner* r, size_t* count) noexcept {
  return guardRunner(r, [&](mlb_runner& self) -> Status {
    if (!count) return nullArgument("mlb_runner_output_count", "count");
    *count = self.outputs.size();
    return Status::OK();
  });
}

extern "C" mlb_status mlb_runner_input_spec(mlb_runner* r, size_t index, const mlb_spec** spec) noexcept {
  return guardRunner(r, [&](mlb_runner& self) -> Status {
    if (!spec) return nullArgument("mlb_runner_input_spec", "spec");
    return specAt(self.inputs, index, "input", spec);
  });
}

extern "C" mlb_status mlb_runner_output_spec(mlb_runner* r, size_t index, const mlb_spec** spec) noexcept {
  return guardRunner(r, [&](mlb_runner& self) -> Status {
    if (!spec) return nullArgument("mlb_runner_output_spec", "spec");
    return specAt(self.outputs, index, "output", spec);
  });
}

extern "C" mlb_status mlb_runner_input_index(mlb_runner* r, const char* name, size_t* index) noexcept {
  return guardRunner(r, [&](mlb_runner& self) -> Status {
    if (!name || !index) return nullArgument("mlb_runner_input_index", "name and index");
    int i = self.impl->inputIndex(name);
    if (i < 0) return Status(StatusCode::kNotFound, std::string("no input named '") + name + "'");
    *index = static_cast<size_t>(i);
    return Status::OK();
  });
}

extern "C" mlb_status mlb_runner_output_index(mlb_runner* r, const char* name, size_t* index) noexcept {
  return guardRunner(r, [&](mlb_runner& self) -> Status {
    if (!name || !index) return nullArgument("mlb_runner_output_index", "name and index");
    int i = self.impl->outputIndex(name);
    if (i < 0) return Status(StatusCode::kNotFound, std::string("no output named '") + name + "'");
    *index = static_cast<size_t>(i);
    return Status::OK();
  });
}

// ---- inputs ----------------------------------------------------------------

extern "C" mlb_status mlb_runner_input_data(mlb_runner* r, size_t index, mlb_dtype dtype, void** data,
                                            size_t* byte_size) noexcept {
  return guardRunner(r, [&](mlb_runner& self) -> Status {
    if (!data) return nullArgument("mlb_runner_input_data", "data");
    if (index >= self.inputs.size()) return outOfRange("input", index, self.inputs.size());
    MLBRIDGE_RETURN_IF_ERROR(checkDType(dtype));
    const TensorSpec& s = self.inputs[index].spec;
    if (static_cast<mlb_dtype>(s.type()) != dtype)
      return invalidArgument("input '" + s.name() + "' is " + mlbridge::dtypeName(s.type()) + ", accessed as " +
                             dtypeText(dtype));
    if (s.type() == DType::kString)
      return invalidArgument("input '" + s.name() + "' holds strings and has no byte view: use mlb_runner_set_strings");
    *data = self.impl->inputData(index);
    if (byte_size) *byte_size = s.byteSize();
    return Status::OK();
  });
}

extern "C" mlb_status mlb_runner_set_feature(mlb_runner* r, const char* name, mlb_dtype dtype, const void* data,
                                             size_t count) noexcept {
  return guardRunner(r, [&](mlb_runner& self) -> Status {
    if (!name) return nullArgument("mlb_runner_set_feature", "name");
    if (count && !data) return invalidArgument(std::string("feature '") + name + "': data is NULL");
    MLBRIDGE_RETURN_IF_ERROR(checkDType(dtype));
    mlbridge::ModelRunner& m = *self.impl;
    switch (dtype) {
      case MLB_DTYPE_FLOAT32: return setTyped<float>(m, name, data, count);
      case MLB_DTYPE_FLOAT64: return setTyped<double>(m, name, data, count);
      case MLB_DTYPE_INT8: return setTyped<int8_t>(m, name, data, count);
      case MLB_DTYPE_UINT8: return setTyped<uint8_t>(m, name, data, count);
      case MLB_DTYPE_INT16: return setTyped<int16_t>(m, name, data, count);
      case MLB_DTYPE_UINT16: return setTyped<uint16_t>(m, name, data, count);
      case MLB_DTYPE_INT32: return setTyped<int32_t>(m, name, data, count);
      case MLB_DTYPE_UINT32: return setTyped<uint32_t>(m, name, data, count);
      case MLB_DTYPE_INT64: return setTyped<int64_t>(m, name, data, count);
      case MLB_DTYPE_UINT64: return setTyped<uint64_t>(m, name, data, count);
      case MLB_DTYPE_BOOL: {
        // One byte per element: anything but 0 or 1 is not a bool.
        const unsigned char* b = static_cast<const unsigned char*>(data);
        for (size_t k = 0; k < count; ++k)
          if (b[k] > 1)
            return invalidArgument(std::string("feature '") + name + "': bool element " + std::to_string(k) +
                                   " is " + std::to_string(b[k]) + ", not 0 or 1");
        return setTyped<bool>(m, name, data, count);
      }
      case MLB_DTYPE_STRING: {
        const char* const* v = static_cast<const char* const*>(data);
        std::vector<std::string> strings;
        strings.reserve(count);
        for (size_t k = 0; k < count; ++k) {
          if (!v[k]) return invalidArgument(std::string("feature '") + name + "': string " + std::to_string(k) + " is NULL");
          strings.emplace_back(v[k]);
        }
        return m.setFeature(Feature(name, strings));
      }
      default: return checkDType(MLB_DTYPE_INVALID);
    }
  });
}

extern "C" mlb_status mlb_runner_set_strings(mlb_runner* r, const char* name, const char* const* values,
                                             const size_t* lengths, size_t count) noexcept {
  return guardRunner(r, [&](mlb_runner& self) -> Status {
    if (!name) return nullArgument("mlb_runner_set_strings", "name");
    if (count && !values) return invalidArgument(std::string("feature '") + name + "': values is NULL");
    std::vector<std::string> strings;
    strings.reserve(count);
    for (size_t k = 0; k < count; ++k) {
      size_t len = lengths ? lengths[k] : MLB_NUL_TERMINATED;
      if (!values[k] && len != 0)
        return invalidArgument(std::string("feature '") + name + "': string " + std::to_string(k) + " is NULL");
      if (!values[k]) strings.emplace_back();
      else if (len == MLB_NUL_TERMINATED) strings.emplace_back(values[k]);
      else strings.emplace_back(values[k], len);
    }
    return self.impl->setFeature(Feature(name, strings));
  });
}

extern "C" mlb_status mlb_runner_set_string(mlb_runner* r, const char* name, const char* value,
                                            size_t length) noexcept {
  return mlb_runner_set_strings(r, name, &value, &length, 1);
}

// ---- evaluation ------------------------------------------------------------

extern "C" mlb_status mlb_runner_set_context(mlb_runner* r, const char* name) noexcept {
  return guardRunner(r, [&](mlb_runner& self) -> Status {
    if (!name) return nullArgument("mlb_runner_set_context", "name");
    return self.impl->setContext(name);
  });
}

extern "C" mlb_status mlb_runner_evaluate(mlb_runner* r) noexcept {
  return guardRunner(r, [&](mlb_runner& self) -> Status {
    self.haveOutputs = false;
    Status s = self.impl->evaluate();
    self.haveOutputs = s.ok();
    return s;
  });
}

// ---- outputs ---------------------------------------------------------------

extern "C" mlb_status mlb_runner_get_output(mlb_runner* r, size_t index, mlb_dtype dtype, void* buffer,
                                            size_t count) noexcept {
  return guardRunner(r, [&](mlb_runner& self) -> Status { return copyOutput(self, index, dtype, buffer, count); });
}

extern "C" mlb_status mlb_runner_get_output_by_name(mlb_runner* r, const char* name, mlb_dtype dtype, void* buffer,
                                                    size_t count) noexcept {
  return guardRunner(r, [&](mlb_runner& self) -> Status {
    if (!name) return nullArgument("mlb_runner_get_output_by_name", "name");
    int i = self.impl->outputIndex(name);
    if (i < 0) return Status(StatusCode::kNotFound, std::string("no output named '") + name + "'");
    return copyOutput(self, static_cast<size_t>(i), dtype, buffer, count);
  });
}

extern "C" mlb_status mlb_runner_output_data(mlb_runner* r, size_t index, mlb_dtype dtype, const void** data,
                                             size_t* byte_size) noexcept {
  return guardRunner(r, [&](mlb_runner& self) -> Status {
    if (!data) return nullArgument("mlb_runner_output_data", "data");
    const TensorSpec* s = nullptr;
    MLBRIDGE_RETURN_IF_ERROR(checkOutput(self, index, dtype, &s));
    if (s->type() == DType::kString)
      return invalidArgument("output '" + s->name() + "' holds strings and has no byte view: use "
                             "mlb_runner_get_output_string");
    *data = self.impl->outputRef(index).data;
    if (byte_size) *byte_size = s->byteSize();
    return Status::OK();
  });
}

extern "C" mlb_status mlb_runner_get_output_string(mlb_runner* r, size_t index, size_t element, const char** data,
                                                   size_t* length) noexcept {
  return guardRunner(r, [&](mlb_runner& self) -> Status {
    if (!data) return nullArgument("mlb_runner_get_output_string", "data");
    const TensorSpec* s = nullptr;
    MLBRIDGE_RETURN_IF_ERROR(checkOutput(self, index, MLB_DTYPE_STRING, &s));
    if (element >= s->elementCount()) return outOfRange("element", element, s->elementCount());
    const std::string& v = static_cast<const std::string*>(self.impl->outputRef(index).data)[element];
    *data = v.c_str();
    if (length) *length = v.size();
    return Status::OK();
  });
}

// ---- end -------------------------------------------------------------------

extern "C" mlb_status mlb_runner_finish(mlb_runner* r) noexcept {
  return guardRunner(r, [&](mlb_runner& self) -> Status { return self.impl->finish(); });
}

extern "C" void mlb_runner_destroy(mlb_runner* r) noexcept { delete r; }
