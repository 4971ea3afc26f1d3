// mlbridge: one include for the C++ API. (The C API is mlbridge/mlbridge.h.)
#ifndef MLBRIDGE_MLBRIDGE_HPP
#define MLBRIDGE_MLBRIDGE_HPP

#include "mlbridge/aot_runner.h"
#include "mlbridge/dtype.h"
#include "mlbridge/feature.h"
#include "mlbridge/litert_runner.h"
#include "mlbridge/log.h"
#include "mlbridge/model_runner.h"
#include "mlbridge/onnx_runner.h"
#include "mlbridge/pipe_runner.h"
#include "mlbridge/rl.h"
#include "mlbridge/shm_runner.h"
#include "mlbridge/span.h"
#include "mlbridge/status.h"
#include "mlbridge/tensor_ref.h"
#include "mlbridge/tensor_spec.h"
#include "mlbridge/tfaot_runner.h"
#include "mlbridge/version.h"
#include "mlbridge/wire_format.h"

#endif  // MLBRIDGE_MLBRIDGE_HPP
