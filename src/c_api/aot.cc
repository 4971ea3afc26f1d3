// C API: runner kind "aot" (mlbridge::AotModelRunner over a generated model).
// AotModelRunner is built with the engine (MLBRIDGE_HAVE_ENGINE); without it
// the constructor reports MLB_UNIMPLEMENTED.
#include <string>
#include <vector>

#include "c_api/c_api_internal.h"
#if defined(MLBRIDGE_HAVE_ENGINE)
#include "mlbridge/aot_runner.h"
#endif

using mlbridge::Status;
using mlbridge::TensorSpec;
using mlbridge::capi::guardError;

extern "C" mlb_status mlb_aot_runner_create(const struct mlbridge_aot_model* model, const mlb_spec* const* features,
                                            size_t feature_count, const mlb_spec* const* advice,
                                            size_t advice_count, mlb_runner** runner, mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!model || !runner) return mlbridge::invalidArgument("mlb_aot_runner_create: model and runner must not be NULL");
    std::vector<TensorSpec> f, a;
    MLBRIDGE_RETURN_IF_ERROR(mlbridge::capi::collectRunnerSpecs(features, feature_count, advice, advice_count, &f, &a));
#if defined(MLBRIDGE_HAVE_ENGINE)
    return mlbridge::capi::wrapRunner(mlbridge::AotModelRunner::create(model, std::move(f), std::move(a)),
                                      "aot", runner);
#else
    return mlbridge::unimplemented(
        "this mlbridge library was built without the engine, which AOT runners need (-DMLBRIDGE_WITH_ENGINE=ON)");
#endif
  });
}
