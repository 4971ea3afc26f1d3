// Fuzz target: the C API entry points that take bytes or files. The first
// byte picks the entry point; the rest is its input.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "mlbridge/mlbridge.h"
#include "onnx_mutator.h"

MLBRIDGE_ONNX_CUSTOM_MUTATOR

namespace {

void check(mlb_status s, mlb_error* e) {
  // The contract: an error is reported with a code and a non-empty message.
  if (s != MLB_OK && (!e || mlb_error_code(e) != s || !*mlb_error_message(e))) __builtin_trap();
  mlb_error_free(e);
}

void loadModel(mlb_status s, mlb_onnx_model* model, mlb_error* e) {
  if (s == MLB_OK) {
    size_t n = 0;
    if (mlb_onnx_model_input_count(model, &n, nullptr) != MLB_OK) __builtin_trap();
  }
  mlb_onnx_model_destroy(model);
  check(s, e);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t* p = data + 1;
  const size_t n = size - 1;
  mlb_onnx_options* options = nullptr;
  if (mlb_onnx_options_create(&options, nullptr) != MLB_OK) __builtin_trap();
  (void)mlb_onnx_options_set_max_tensor_bytes(options, uint64_t(16) << 20, nullptr);
  (void)mlb_onnx_options_set_max_folded_bytes(options, uint64_t(64) << 20, nullptr);
  switch (data[0] % 4) {
    case 0: {  // a spec from JSON
      mlb_spec* spec = nullptr;
      mlb_error* e = nullptr;
      mlb_status s = mlb_spec_from_json(reinterpret_cast<const char*>(p), n, &spec, &e);
      if (s == MLB_OK && (!spec || mlb_spec_byte_size(spec) > (uint64_t(1) << 44))) __builtin_trap();
      mlb_spec_destroy(spec);
      check(s, e);
      break;
    }
    case 1: {  // a model from memory
      mlb_onnx_model* model = nullptr;
      mlb_error* e = nullptr;
      mlb_status s = mlb_onnx_model_load_from_memory(p, n, options, &model, &e);
      loadModel(s, model, e);
      break;
    }
    case 2: {  // a model from a file (in memory: memfd)
      int fd = memfd_create("mlbridge-fuzz.onnx", 0);
      if (fd < 0) break;
      size_t off = 0;
      while (off < n) {
        ssize_t w = write(fd, p + off, n - off);
        if (w <= 0) break;
        off += static_cast<size_t>(w);
      }
      std::string path = "/proc/self/fd/" + std::to_string(fd);
      mlb_onnx_model* model = nullptr;
      mlb_error* e = nullptr;
      mlb_status s = mlb_onnx_model_load(path.c_str(), options, &model, &e);
      loadModel(s, model, e);
      close(fd);
      break;
    }
    default: {  // names: formats and dtypes
      std::string name(reinterpret_cast<const char*>(p), n);
      mlb_format f;
      mlb_error* e = nullptr;
      mlb_status s = mlb_format_parse(name.c_str(), &f, &e);
      check(s, e);
      (void)mlb_dtype_parse(name.c_str());
      break;
    }
  }
  mlb_onnx_options_destroy(options);
  return 0;
}
