/* Descriptor of a TensorFlow SavedModel compiled ahead of time by XLA
 * (`saved_model_cli aot_compile_cpu`, LLVM's "release mode"; docs/tfaot.md).
 * Plain C. mlbridge_add_tf_aot_model (cmake/MLBridgeTfAot.cmake) generates,
 * next to XLA's class NAME, `const mlbridge_tfaot_model* NAME_tfaot_model(void)`;
 * TfAotModelRunner (tfaot_runner.h) plugs it into ModelRunner.
 *
 * Feeds and fetches carry the signature's keys (XLA's own names are
 * "feed_" / "fetch_" + key, '/' as '_', as LLVM's ReleaseModeModelRunner
 * looks them up). The instance owns XLA's buffers: one instance per thread. */
#ifndef MLBRIDGE_TFAOT_MODEL_H
#define MLBRIDGE_TFAOT_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "mlbridge/aot_model.h" /* mlbridge_aot_tensor */

/* 'TF' in the high half, so an mlbridge-aot descriptor (ABI 1) handed to the
 * tfaot runner, or this one handed to the aot runner, is refused by version. */
#define MLBRIDGE_TFAOT_ABI_VERSION 0x54460001u

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mlbridge_tfaot_model {
  uint32_t abi_version; /* MLBRIDGE_TFAOT_ABI_VERSION */
  const char* name;     /* the XLA class */
  const char* source;   /* the SavedModel folder's name */
  const char* signature;
  size_t num_feeds;
  const mlbridge_aot_tensor* feeds;
  size_t num_fetches;
  const mlbridge_aot_tensor* fetches;
  /* Makes an instance (XLA's buffers): NULL and *instance set, or a static message. */
  const char* (*create)(void** instance);
  void (*destroy)(void* instance);
  /* Buffers of feeds[i] / fetches[i] (.bytes each), owned by the instance;
     a fetch's buffer is known only after a successful run (XLA's result table). */
  void* (*feed_data)(void* instance, size_t i);
  const void* (*fetch_data)(void* instance, size_t i);
  /* Runs the function: NULL, or a static message. */
  const char* (*run)(void* instance);
} mlbridge_tfaot_model;

#ifdef __cplusplus
}
#endif

#endif /* MLBRIDGE_TFAOT_MODEL_H */
