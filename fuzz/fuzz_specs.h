// Spec sets shared by the compiler-side wire fuzz targets: the first input
// byte picks one, so the golden reply vectors (tests/vectors/) seed them.
#ifndef MLBRIDGE_FUZZ_FUZZ_SPECS_H
#define MLBRIDGE_FUZZ_FUZZ_SPECS_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "mlbridge/tensor_spec.h"

namespace mlbridge {
namespace fuzz {

constexpr size_t kSpecSets = 4;

// Set 0: decision int64[1]; 1: index int64[1] + scores float[3]; 2: every
// dtype with shape [2] (strings only when `strings`); 3: priority float[].
inline std::vector<TensorSpec> adviceSpecs(size_t set, bool strings) {
  std::vector<TensorSpec> s;
  switch (set % kSpecSets) {
    case 0: s.push_back(TensorSpec::create<int64_t>("decision", {1})); break;
    case 1:
      s.push_back(TensorSpec::create<int64_t>("index", {1}));
      s.push_back(TensorSpec::create<float>("scores", {3}));
      break;
    case 2: {
      const DType types[] = {DType::kFloat32, DType::kFloat64, DType::kInt8,   DType::kUInt8,
                             DType::kInt16,   DType::kUInt16,  DType::kInt32,  DType::kUInt32,
                             DType::kInt64,   DType::kUInt64,  DType::kBool};
      for (DType t : types) s.emplace_back(std::string("a_") + dtypeName(t), t, std::vector<int64_t>{2});
      if (strings) s.emplace_back("a_string", DType::kString, std::vector<int64_t>{2});
      break;
    }
    default: s.push_back(TensorSpec::create<float>("priority", {})); break;
  }
  return s;
}

}  // namespace fuzz
}  // namespace mlbridge

#endif  // MLBRIDGE_FUZZ_FUZZ_SPECS_H
