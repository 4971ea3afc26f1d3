// Internals shared by the C API's source files (src/c_api/*.cc) and by the C
// entry points of runner kinds built outside the core library: the handle
// structs and the helpers every entry point uses to turn a Status into an
// mlb_status without letting an exception cross the C boundary.
//
// Adding a runner kind (docs/c-api.md has the whole recipe):
//   mlb_status mlb_foo_runner_create(..., const mlb_spec* const* features, size_t nf,
//                                    const mlb_spec* const* advice, size_t na,
//                                    mlb_runner** runner, mlb_error** error) noexcept {
//     return mlbridge::capi::guardError(error, [&]() -> mlbridge::Status {
//       if (!runner) return mlbridge::capi::nullArgument("mlb_foo_runner_create", "runner");
//       std::vector<mlbridge::TensorSpec> f, a;
//       MLBRIDGE_RETURN_IF_ERROR(mlbridge::capi::collectRunnerSpecs(features, nf, advice, na, &f, &a));
//       return mlbridge::capi::wrapRunner(FooModelRunner::create(std::move(f), std::move(a), ...), "foo", runner);
//     });
//   }
#ifndef MLBRIDGE_SRC_C_API_INTERNAL_H
#define MLBRIDGE_SRC_C_API_INTERNAL_H

#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "mlbridge/mlbridge.h"
#include "mlbridge/model_runner.h"
#include "mlbridge/status.h"
#include "mlbridge/tensor_spec.h"

struct mlb_error {
  mlb_status code = MLB_OK;
  std::string message;
};

struct mlb_spec {
  mlbridge::TensorSpec spec;
};

struct mlb_runner {
  std::unique_ptr<mlbridge::ModelRunner> impl;
  const char* kind = "";
  std::vector<mlb_spec> inputs;   // borrowed views handed out by mlb_runner_*_spec
  std::vector<mlb_spec> outputs;
  mlbridge::Status last;          // the most recent call's status
  bool haveOutputs = false;       // a successful evaluate() since the last failed one
};

namespace mlbridge {
namespace capi {

inline mlb_status toC(StatusCode code) { return static_cast<mlb_status>(code); }
inline mlb_status toC(const Status& s) { return toC(s.code()); }
// A C code as a StatusCode (codes this library does not know are kUnknown).
inline StatusCode fromC(mlb_status code) {
  return code >= MLB_OK && code <= MLB_DATA_LOSS ? static_cast<StatusCode>(code) : StatusCode::kUnknown;
}

// Fills *error (if error is not NULL) from a non-OK status; returns its code.
mlb_status report(mlb_error** error, const Status& s) noexcept;

// Runs f (returning Status); an exception becomes RESOURCE_EXHAUSTED
// (bad_alloc) or INTERNAL. The messages fit std::string's small buffer, so
// building them cannot throw again.
template <class F>
Status callNoThrow(F&& f) noexcept {
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kResourceExhausted, "out of memory");
  } catch (...) {
    return Status(StatusCode::kInternal, "C++ exception");
  }
#else
  return f();
#endif
}

template <class F>
mlb_status guardError(mlb_error** error, F&& f) noexcept {
  return report(error, callNoThrow(std::forward<F>(f)));
}

// Runs f(runner) and records its status in the runner.
mlb_status recordInRunner(mlb_runner* r, Status s) noexcept;
template <class F>
mlb_status guardRunner(mlb_runner* r, F&& f) noexcept {
  if (!r) return MLB_INVALID_ARGUMENT;
  return recordInRunner(r, callNoThrow([&]() -> Status { return f(*r); }));
}

// "FUNCTION: NAMES must not be NULL": an entry point was given NULL for a
// pointer it needs (`names`: "model and spec").
Status nullArgument(const char* function, const char* names);

// "WHAT index I is out of range (N WHATs)".
Status outOfRange(const char* what, size_t index, size_t count);

// *spec = &specs[index] (a borrowed view), or outOfRange naming `what`
// ("input", "output").
Status specAt(const std::vector<mlb_spec>& specs, size_t index, const char* what, const mlb_spec** spec);

// Copies `count` C specs into `out`; `what` ("feature", "advice") names the
// list in errors (a NULL array or element).
Status collectSpecs(const mlb_spec* const* specs, size_t count, const char* what, std::vector<TensorSpec>* out);

// The two spec lists every runner kind's create takes: features into *f,
// then advice into *a.
Status collectRunnerSpecs(const mlb_spec* const* features, size_t featureCount, const mlb_spec* const* advice,
                          size_t adviceCount, std::vector<TensorSpec>* f, std::vector<TensorSpec>* a);

// Wraps a created runner in a C handle (*out). `kind` must have static storage.
Status wrapRunner(std::unique_ptr<ModelRunner> runner, const char* kind, mlb_runner** out);

// The same for what a runner's create returned: its error, or the runner wrapped.
template <class R>
Status wrapRunner(StatusOr<std::unique_ptr<R>> created, const char* kind, mlb_runner** out) {
  if (!created.ok()) return created.status();
  return wrapRunner(std::unique_ptr<ModelRunner>(std::move(*created)), kind, out);
}

// Wraps a loaded model in its C handle (*out): a struct with `model` (the
// shared model) and the `inputs` and `outputs` views its spec getters hand
// out, as mlb_onnx_model and mlb_onnxruntime_model are.
template <class Handle, class Model>
Status wrapModel(StatusOr<std::shared_ptr<const Model>> loaded, Handle** out) {
  if (!loaded.ok()) return loaded.status();
  std::unique_ptr<Handle> m(new Handle);
  m->model = std::move(*loaded);
  for (const TensorSpec& s : m->model->inputs()) m->inputs.push_back(mlb_spec{s});
  for (const TensorSpec& s : m->model->outputs()) m->outputs.push_back(mlb_spec{s});
  *out = m.release();
  return Status::OK();
}

// A new C string copy of s (for char** results), or nullptr without memory.
char* dupString(const std::string& s) noexcept;

}  // namespace capi
}  // namespace mlbridge

#endif  // MLBRIDGE_SRC_C_API_INTERNAL_H
