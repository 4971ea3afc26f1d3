// The part of LiteRT's C API that LiteRtModelRunner uses, declared here
// because no package registry ships LiteRT's headers (the ai-edge-litert
// wheel has only libLiteRt.so). Pinned to ai-edge-litert 2.3.0: the
// signatures and the LiteRtRankedTensorType layout below are that release's
// (checked against it by the `tf.cpp.LiteRt*` tests). Functions are looked up
// with dlsym, never linked.
#ifndef MLBRIDGE_SRC_LITERT_LITERT_API_H
#define MLBRIDGE_SRC_LITERT_LITERT_API_H

#include <cstddef>
#include <cstdint>

namespace mlbridge {
namespace litert_api {

constexpr const char* kPinnedVersion = "2.3.0";

using Status = int;  // LiteRtStatus: 0 is kLiteRtStatusOk
using Handle = void*;  // LiteRtEnvironment, LiteRtModel, LiteRtSignature, LiteRtTensor, ...
using ParamIndex = size_t;

constexpr int kMaxRank = 8;  // LITERT_TENSOR_MAX_RANK
struct Layout {              // LiteRtLayout
  unsigned int rank : 7;
  unsigned int hasStrides : 1;
  int32_t dimensions[kMaxRank];
  uint32_t strides[kMaxRank];
};
struct RankedTensorType {  // LiteRtRankedTensorType
  int32_t elementType;     // LiteRtElementType: TfLiteType's values
  Layout layout;
};
static_assert(sizeof(RankedTensorType) == 72, "LiteRtRankedTensorType of ai-edge-litert 2.3.0 is 72 bytes");

constexpr int kHwAcceleratorCpu = 1;  // kLiteRtHwAcceleratorCpu
constexpr int kTensorTypeRanked = 0;  // kLiteRtRankedTensorType (LiteRtGetTensorTypeId; unranked is 1)

struct Api {
  Status (*CreateEnvironment)(int numOptions, const void* options, Handle* env);
  void (*DestroyEnvironment)(Handle env);
  Status (*CreateModelFromFile)(Handle env, const char* path, Handle* model);
  void (*DestroyModel)(Handle model);
  Status (*GetNumModelSignatures)(Handle model, ParamIndex* n);
  Status (*GetModelSignature)(Handle model, ParamIndex i, Handle* signature);
  Status (*GetSignatureKey)(Handle signature, const char** key);
  Status (*GetNumSignatureInputs)(Handle signature, ParamIndex* n);
  Status (*GetNumSignatureOutputs)(Handle signature, ParamIndex* n);
  Status (*GetSignatureInputName)(Handle signature, ParamIndex i, const char** name);
  Status (*GetSignatureOutputName)(Handle signature, ParamIndex i, const char** name);
  Status (*GetSignatureInputTensorByIndex)(Handle signature, ParamIndex i, Handle* tensor);
  Status (*GetSignatureOutputTensorByIndex)(Handle signature, ParamIndex i, Handle* tensor);
  Status (*GetTensorName)(Handle tensor, const char** name);
  Status (*GetTensorTypeId)(Handle tensor, int* typeId);
  Status (*GetRankedTensorType)(Handle tensor, RankedTensorType* type);
  Status (*CreateOptions)(Handle* options);
  void (*DestroyOptions)(Handle options);
  Status (*SetOptionsHardwareAccelerators)(Handle options, int accelerators);
  Status (*CreateCompiledModel)(Handle env, Handle model, Handle options, Handle* compiled);
  void (*DestroyCompiledModel)(Handle compiled);
  Status (*CreateTensorBufferFromHostMemory)(const RankedTensorType* type, void* host, size_t bytes,
                                             void (*deallocator)(void*), Handle* buffer);
  void (*DestroyTensorBuffer)(Handle buffer);
  Status (*RunCompiledModel)(Handle compiled, ParamIndex signature, size_t numInputs, Handle* inputs,
                             size_t numOutputs, Handle* outputs);
};

}  // namespace litert_api
}  // namespace mlbridge

#endif  // MLBRIDGE_SRC_LITERT_LITERT_API_H
