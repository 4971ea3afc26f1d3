// ONNX Runtime through OnnxRuntimeRunner, against a plain C++ loop with the
// same weights (bench/ort_bench.h). The models are written in memory
// (tests/ort/onnx_builder.h): Gemm with transB=1 as torch.nn.Linear exports.
//
// mlbridge-ort-bench's main is bench/ort_bench_main.cc.
#include "ort_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "mlbridge/onnxruntime_runner.h"
#include "mlp_floor.h"
#include "onnx_builder.h"

namespace mlbridge {
namespace bench {

namespace {

namespace ox = onnxtest;

// The layers, the plain loops and the timing: bench/mlp_floor.h, shared with
// mlbridge-engine-bench, mlbridge-aot-bench and mlbridge-bench.
using mlbridge_bench::Layer;
using mlbridge_bench::makeLayer;
using mlbridge_bench::Stats;
using mlbridge_bench::timeIt;
inline void mlpLoop(const Layer* L, const float* x, float* out) { mlbridge_bench::handMlp(L, x, out); }
inline float fcLoop(const float* x, const float* w, size_t n, float b) { return mlbridge_bench::handFc(x, w, n, b); }

// Allocations per call over `calls` calls (after warm-up), or -1.
template <class F>
double allocationsPerCall(const OrtBenchOptions& o, F&& f, int calls) {
  if (!o.allocationCount) return -1;
  for (int i = 0; i < 100; ++i) f();
  long before = o.allocationCount();
  for (int i = 0; i < calls; ++i) f();
  return static_cast<double>(o.allocationCount() - before) / calls;
}

volatile float gSink;

StatusOr<std::unique_ptr<OnnxRuntimeRunner>> makeRunner(const std::string& bytes, const OrtBenchOptions& o,
                                                         TensorSpec in, TensorSpec out) {
  OnnxRuntimeOptions ro;
  ro.intraOpThreads = o.intraOpThreads;
  StatusOr<std::shared_ptr<const OnnxRuntimeModel>> m = OnnxRuntimeModel::loadFromMemory(bytes.data(), bytes.size(), ro);
  if (!m.ok()) return m.status();
  return OnnxRuntimeRunner::create(*m, {std::move(in)}, {std::move(out)});
}

}  // namespace

Status runOrtBench(const OrtBenchOptions& o, OrtBenchResult* result, std::FILE* out) {
  OrtBenchResult res;
  res.runtimeVersion = OnnxRuntimeModel::runtimeVersion();
  std::mt19937 rng(42);
  std::normal_distribution<float> nd(0.f, 1.f);

  // ---- MLP 300 -> 64 tanh -> 64 relu -> 15 softmax ----
  Layer L[3] = {makeLayer(300, 64, rng), makeLayer(64, 64, rng), makeLayer(64, 15, rng)};
  ox::Graph g;
  g.nodes = {ox::node("Gemm", {"x", "w1", "b1"}, {"h1"}, {ox::Attr::Int("transB", 1)}), ox::node("Tanh", {"h1"}, {"a1"}),
             ox::node("Gemm", {"a1", "w2", "b2"}, {"h2"}, {ox::Attr::Int("transB", 1)}), ox::node("Relu", {"h2"}, {"a2"}),
             ox::node("Gemm", {"a2", "w3", "b3"}, {"h3"}, {ox::Attr::Int("transB", 1)}),
             ox::node("Softmax", {"h3"}, {"probs"}, {ox::Attr::Int("axis", -1)})};
  for (int k = 0; k < 3; ++k) {
    std::string n = std::to_string(k + 1);
    g.initializers.push_back(ox::floatTensor("w" + n, {L[k].out, L[k].in}, L[k].w));
    g.initializers.push_back(ox::floatTensor("b" + n, {L[k].out}, L[k].b));
  }
  g.inputs = {ox::valueInfo("x", ox::kFloat, {1, 300})};
  g.outputs = {ox::valueInfo("probs", ox::kFloat, {1, 15})};
  std::vector<float> x(300);
  for (float& v : x) v = nd(rng);
  float expected[15];
  mlpLoop(L, x.data(), expected);

  StatusOr<std::unique_ptr<OnnxRuntimeRunner>> mlp =
      makeRunner(ox::model(g), o, TensorSpec::create<float>("x", {1, 300}), TensorSpec::create<float>("probs", {1, 15}));
  if (!mlp.ok()) return mlp.status();
  OnnxRuntimeRunner& r1 = **mlp;
  std::memcpy(r1.getTensor<float>(0), x.data(), sizeof(float) * 300);
  MLBRIDGE_RETURN_IF_ERROR(r1.evaluate());
  for (int i = 0; i < 15; ++i)
    res.mlpMaxAbsDiff = std::max(res.mlpMaxAbsDiff, double(std::fabs(r1.output<float>(0)[size_t(i)] - expected[i])));
  Stats floorStats = timeIt([&] { mlpLoop(L, x.data(), expected); gSink = expected[0]; }, o.iterations);
  Stats s = timeIt([&] { (void)r1.evaluate(); gSink = r1.output<float>(0)[0]; }, o.iterations);
  res.mlpFloorP50Us = floorStats.p50;
  res.mlpP50Us = s.p50;
  res.mlpP99Us = s.p99;
  res.mlpAllocsPerCall = allocationsPerCall(o, [&] { (void)r1.evaluate(); }, 10000);

  // ---- FC 50,000 -> 1 ----
  const int64_t n = 50000;
  std::vector<float> w(static_cast<size_t>(n)), xs(static_cast<size_t>(n));
  for (float& v : w) v = nd(rng) * 0.01f;
  for (float& v : xs) v = nd(rng);
  ox::Graph g2;
  g2.nodes = {ox::node("Gemm", {"x", "w", "b"}, {"y"}, {ox::Attr::Int("transB", 1)})};
  g2.initializers = {ox::floatTensor("w", {1, n}, w), ox::floatTensor("b", {1}, {0.25f})};
  g2.inputs = {ox::valueInfo("x", ox::kFloat, {1, n})};
  g2.outputs = {ox::valueInfo("y", ox::kFloat, {1, 1})};
  StatusOr<std::unique_ptr<OnnxRuntimeRunner>> fc =
      makeRunner(ox::model(g2), o, TensorSpec::create<float>("x", {1, n}), TensorSpec::create<float>("y", {1, 1}));
  if (!fc.ok()) return fc.status();
  OnnxRuntimeRunner& r2 = **fc;
  std::memcpy(r2.getTensor<float>(0), xs.data(), sizeof(float) * size_t(n));
  MLBRIDGE_RETURN_IF_ERROR(r2.evaluate());
  const float fcExpected = fcLoop(xs.data(), w.data(), size_t(n), 0.25f);
  res.fcAbsDiff = std::fabs(double(r2.output<float>(0)[0]) - fcExpected);
  const int fcIters = std::max(2000, o.iterations / 20);
  Stats fcFloor = timeIt([&] { gSink = fcLoop(xs.data(), w.data(), size_t(n), 0.25f); }, fcIters);
  Stats fs = timeIt([&] { (void)r2.evaluate(); gSink = r2.output<float>(0)[0]; }, fcIters);
  res.fcFloorP50Us = fcFloor.p50;
  res.fcP50Us = fs.p50;
  res.fcP99Us = fs.p99;
  res.fcAllocsPerCall = allocationsPerCall(o, [&] { (void)r2.evaluate(); }, 1000);

  if (out) {
    std::fprintf(out, "ONNX Runtime %s (C API %d), %d intra-op thread(s)\n", res.runtimeVersion.c_str(),
                 OnnxRuntimeModel::apiVersion(), o.intraOpThreads);
    std::fprintf(out, "%-46s %10s %10s\n", "mlp 300->64->64->15 (tanh/relu/softmax)", "p50 us", "p99 us");
    std::fprintf(out, "%-46s %10.3f %10.3f\n", "  plain C++ loop (transposed weights)", floorStats.p50, floorStats.p99);
    std::fprintf(out, "%-46s %10.3f %10.3f   %.2fx the loop, max |diff| %.1e\n", "  ONNX Runtime (OnnxRuntimeRunner)",
                 s.p50, s.p99, s.p50 / floorStats.p50, res.mlpMaxAbsDiff);
    std::fprintf(out, "%-46s %10s %10s\n", "fc 50,000 -> 1", "p50 us", "p99 us");
    std::fprintf(out, "%-46s %10.3f %10.3f\n", "  plain C++ loop (8 accumulators)", fcFloor.p50, fcFloor.p99);
    std::fprintf(out, "%-46s %10.3f %10.3f   %.2fx the loop, |diff| %.1e\n", "  ONNX Runtime (OnnxRuntimeRunner)",
                 fs.p50, fs.p99, fs.p50 / fcFloor.p50, res.fcAbsDiff);
    if (res.mlpAllocsPerCall >= 0)
      std::fprintf(out, "heap allocations (operator new) per evaluate(), all inside ONNX Runtime: mlp %.1f, fc %.1f\n",
                   res.mlpAllocsPerCall, res.fcAllocsPerCall);
    std::fprintf(out,
                 "{\"ort_version\":\"%s\",\"mlp_ort_p50_us\":%.3f,\"mlp_ort_p99_us\":%.3f,\"mlp_floor_us\":%.3f,"
                 "\"fc50k_ort_p50_us\":%.3f,\"fc50k_ort_p99_us\":%.3f,\"fc50k_floor_us\":%.3f,"
                 "\"mlp_allocs_per_call\":%.1f,\"fc50k_allocs_per_call\":%.1f}\n",
                 res.runtimeVersion.c_str(), res.mlpP50Us, res.mlpP99Us, res.mlpFloorP50Us, res.fcP50Us, res.fcP99Us,
                 res.fcFloorP50Us, res.mlpAllocsPerCall, res.fcAllocsPerCall);
  }
  if (res.mlpMaxAbsDiff > 1e-4 || res.fcAbsDiff > 1e-2 * (1 + std::fabs(double(fcExpected))))
    return internalError("ONNX Runtime's answers differ from the plain loop's");
  if (result) *result = res;
  return Status::OK();
}

}  // namespace bench
}  // namespace mlbridge
