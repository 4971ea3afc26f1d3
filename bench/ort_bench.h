// Latency of ONNX Runtime through OnnxRuntimeRunner (bench/ort_bench.cc), on
// the two models of /work/shared/reference/baselines.md: the MLP
// 300->64->64->15 (tanh/relu/softmax) and one FC layer 50,000 -> 1. Built into
// mlbridge-bench (with MLBRIDGE_HAVE_ONNXRUNTIME defined) and into
// mlbridge-ort-bench when the onnxruntime component is on.
#ifndef MLBRIDGE_BENCH_ORT_BENCH_H
#define MLBRIDGE_BENCH_ORT_BENCH_H

#include <cstdio>
#include <string>

#include "mlbridge/status.h"

namespace mlbridge {
namespace bench {

struct OrtBenchOptions {
  int iterations = 200000;  // MLP evaluations; the FC layer gets iterations / 20 (at least 2,000)
  int intraOpThreads = 1;
  // Returns a running count of heap allocations (mlbridge-ort-bench counts
  // operator new); nullptr: not measured.
  long (*allocationCount)() = nullptr;
};

struct OrtBenchResult {
  std::string runtimeVersion;
  double mlpP50Us = 0, mlpP99Us = 0, mlpFloorP50Us = 0, mlpMaxAbsDiff = 0;
  double fcP50Us = 0, fcP99Us = 0, fcFloorP50Us = 0, fcAbsDiff = 0;
  double mlpAllocsPerCall = -1, fcAllocsPerCall = -1;  // -1: not measured
};

// Runs both benchmarks; prints a table and a last JSON line to `out` (nullptr:
// silent). Figures are medians (p50) and p99 over samples of 64 back-to-back
// calls, per call, after 1,000 warm-up calls.
Status runOrtBench(const OrtBenchOptions& options, OrtBenchResult* result, std::FILE* out);

}  // namespace bench
}  // namespace mlbridge

#endif  // MLBRIDGE_BENCH_ORT_BENCH_H
