// Fuzz target: the JSON reader (src/json) and what reads specs with it
// (TensorSpec::fromJSON, used by headers, spec files and the C API).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "json/json.h"
#include "mlbridge/tensor_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mlbridge;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  StatusOr<json::Value> v = json::parse(text);
  if (v.ok()) {
    int64_t i;
    uint64_t u;
    double d;
    (void)v->toInt64(&i);
    (void)v->toUInt64(&u);
    (void)v->toDouble(&d);
    StatusOr<TensorSpec> spec = TensorSpec::fromJSONValue(*v);
    // A spec that parses validates, and writes JSON that parses back to itself.
    if (spec.ok()) {
      if (!spec->validate().ok()) __builtin_trap();
      StatusOr<TensorSpec> again = TensorSpec::fromJSON(spec->toJSON());
      if (!again.ok() || !(*again == *spec)) __builtin_trap();
    }
  }
  return 0;
}
