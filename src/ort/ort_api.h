// Library-internal access to the ONNX Runtime C API: the API table, the one
// OrtEnv of the process, and OrtStatus -> mlbridge::Status. Only src/ort/
// includes ONNX Runtime headers; the C API reports errors as values, so
// nothing here throws.
#ifndef MLBRIDGE_SRC_ORT_ORT_API_H
#define MLBRIDGE_SRC_ORT_ORT_API_H

#include <onnxruntime_c_api.h>

#include <string>

#include "mlbridge/status.h"

namespace mlbridge {
namespace ort {

// The API table for ORT_API_VERSION, or nullptr when the library is older
// than the headers (then apiStatus() says so).
const OrtApi* api();
Status apiStatus();

// The process-wide environment, created on first call (thread-safe; ONNX
// Runtime's log messages go to mlbridge's log hook). Kept until exit: models
// held in static storage may outlive any other owner.
StatusOr<OrtEnv*> env();

// Converts and releases `status`; OK for nullptr. `context` prefixes the
// message. Specific ONNX Runtime codes map to their mlbridge equivalents
// (ORT_NO_SUCHFILE -> kNotFound, ORT_INVALID_PROTOBUF -> kDataLoss, ...);
// generic failures (ORT_FAIL, ORT_RUNTIME_EXCEPTION, ...) get `generic`:
// kInvalidArgument while loading a model, kAborted while evaluating it.
Status toStatus(OrtStatus* status, const std::string& context, StatusCode generic = StatusCode::kInternal);

// Releases the status of a call whose failure changes nothing (freeing memory).
void ignore(OrtStatus* status);

}  // namespace ort
}  // namespace mlbridge

// Evaluates an OrtApi call and returns its error as a Status from the
// enclosing function.
#define MLBRIDGE_ORT_RETURN_IF_ERROR(call, context)                                  \
  do {                                                                               \
    OrtStatus* mlbridge_ort_status_ = (call);                                        \
    if (mlbridge_ort_status_) return ::mlbridge::ort::toStatus(mlbridge_ort_status_, (context)); \
  } while (0)

#endif  // MLBRIDGE_SRC_ORT_ORT_API_H
