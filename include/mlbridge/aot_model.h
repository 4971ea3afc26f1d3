/* Descriptor of an ahead-of-time compiled model (mlbridge-aot, docs/aot.md).
 * Plain C, no dependency: every generated header carries a copy of this
 * block under the same include guard, so generated code builds with nothing
 * but a compiler; AotModelRunner (aot_runner.h) plugs it into ModelRunner. */
#ifndef MLBRIDGE_AOT_MODEL_H
#define MLBRIDGE_AOT_MODEL_H

#include <stddef.h>
#include <stdint.h>

#define MLBRIDGE_AOT_ABI_VERSION 1

#ifdef __cplusplus
extern "C" {
#endif

/* One graph input or output. dtype: mlbridge::DType's value (1 float32,
 * 2 float64, 3 int8, 4 uint8, 5 int16, 6 uint16, 7 int32, 8 uint32, 9 int64,
 * 10 uint64, 11 bool); dtype_name: mlbridge::dtypeName() of it. */
typedef struct mlbridge_aot_tensor {
  const char* name;
  int32_t dtype;
  const char* dtype_name;
  int32_t rank;
  const int64_t* shape;
  size_t bytes;
} mlbridge_aot_tensor;

/* Runs the model: inputs[i] / outputs[i] in graph order, each of
 * tensor.bytes; scratch is scratch_bytes, 64-byte aligned, owned by the
 * caller (one per concurrent caller). Returns NULL, or a static message when
 * the model rejects its input (e.g. a Gather index out of range). */
typedef const char* (*mlbridge_aot_run_fn)(const void* const* inputs, void* const* outputs, void* scratch);

typedef struct mlbridge_aot_model {
  uint32_t abi_version; /* MLBRIDGE_AOT_ABI_VERSION */
  const char* name;
  const char* source;   /* the .onnx file name it was generated from */
  size_t num_inputs;
  const mlbridge_aot_tensor* inputs;
  size_t num_outputs;
  const mlbridge_aot_tensor* outputs;
  size_t scratch_bytes;
  mlbridge_aot_run_fn run;
} mlbridge_aot_model;

#ifdef __cplusplus
}
#endif

#endif /* MLBRIDGE_AOT_MODEL_H */
