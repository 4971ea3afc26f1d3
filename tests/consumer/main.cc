// Built against an installed mlbridge, the way an LLVM plugin is built.
#include <mlbridge/mlbridge.hpp>

#include <cstdio>

int main() {
  mlbridge::TensorSpec spec = mlbridge::TensorSpec::create<int64_t>("x", {1});
  std::printf("mlbridge %s: %s\n", mlbridge::versionString(), spec.toJSON().c_str());
  return spec.toJSON() == "{\"name\":\"x\",\"type\":\"int64_t\",\"port\":0,\"shape\":[1]}" ? 0 : 1;
}
