// mlbridge-engine-bench: the built-in ONNX engine against hand-written C++.
//
//   mlbridge-engine-bench [--iterations N] [--model file.onnx]
//
// Builds the models in memory (ONNX bytes written here, random weights), so
// the engine and the hand-written loops use exactly the same weights:
//  * mlp: 300 -> 64 tanh -> 64 relu -> 15 softmax (Gemm, transB=1, as
//    torch.nn.Linear exports), the figure of merit of baselines.md;
//  * fc50k: one fully-connected layer 50,000 -> 1.
// The floor is a plain C++ loop over transposed weights (std::tanh, std::exp),
// compiled with the same flags. Each figure is the median over samples of 64
// back-to-back calls (per-call time); p99 likewise. --model times any .onnx
// file through NativeModelRunner with zero inputs. Last line: JSON.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "mlbridge/onnx_runner.h"
#include "mlp_floor.h"  // the ONNX writer, the layers, the floors and timeIt, shared with the other benches

using namespace mlbridge;
using namespace mlbridge_bench;

namespace {

volatile float gSink;

int usage() {
  std::fprintf(stderr, "usage: mlbridge-engine-bench [--iterations N] [--model file.onnx] [--write-mlp out.onnx]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = 200000;
  std::string extraModel, writeMlp;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--iterations" && i + 1 < argc) iterations = std::atoi(argv[++i]);
    else if (a == "--model" && i + 1 < argc) extraModel = argv[++i];
    else if (a == "--write-mlp" && i + 1 < argc) writeMlp = argv[++i];
    else return usage();
  }
  std::mt19937 rng(42);
  std::normal_distribution<float> nd(0.f, 1.f);

  // ---- MLP ----
  Layer L[3] = {makeLayer(300, 64, rng), makeLayer(64, 64, rng), makeLayer(64, 15, rng)};
  std::string g;
  bytesField(g, 1, node("Gemm", {"x", "w1", "b1"}, "h1", true));
  bytesField(g, 1, node("Tanh", {"h1"}, "a1"));
  bytesField(g, 1, node("Gemm", {"a1", "w2", "b2"}, "h2", true));
  bytesField(g, 1, node("Relu", {"h2"}, "a2"));
  bytesField(g, 1, node("Gemm", {"a2", "w3", "b3"}, "h3", true));
  bytesField(g, 1, node("Softmax", {"h3"}, "probs", false, -1, true));
  bytesField(g, 2, "mlp");
  for (int k = 0; k < 3; ++k) {
    std::string n = std::to_string(k + 1);
    bytesField(g, 5, tensor("w" + n, {L[k].out, L[k].in}, L[k].w));
    bytesField(g, 5, tensor("b" + n, {L[k].out}, L[k].b));
  }
  bytesField(g, 11, valueInfo("x", {1, 300}));
  bytesField(g, 12, valueInfo("probs", {1, 15}));
  std::string mlpBytes = model(g);
  if (!writeMlp.empty()) {
    FILE* f = std::fopen(writeMlp.c_str(), "wb");
    if (!f || std::fwrite(mlpBytes.data(), 1, mlpBytes.size(), f) != mlpBytes.size()) return 1;
    std::fclose(f);
  }

  std::vector<float> x(300);
  for (float& v : x) v = nd(rng);
  float hand[15];
  handMlp(L, x.data(), hand);

  std::printf("%-44s %10s %10s\n", "mlp 300->64->64->15 (tanh/relu/softmax)", "p50 us", "p99 us");
  Stats floorStats = timeIt([&] { handMlp(L, x.data(), hand); gSink = hand[0]; }, iterations);
  std::printf("%-44s %10.3f %10.3f\n", "  hand-written C++ loop (transposed weights)", floorStats.p50, floorStats.p99);
  double engineP50[2] = {0, 0};
  std::string isa[2];
  for (int portable = 1; portable >= 0; --portable) {
    OnnxLoadOptions opts;
    opts.portableKernels = portable != 0;
    StatusOr<std::shared_ptr<const OnnxModel>> m = OnnxModel::loadFromMemory(mlpBytes.data(), mlpBytes.size(), opts);
    if (!m.ok()) {
      std::fprintf(stderr, "load: %s\n", m.status().toString().c_str());
      return 1;
    }
    StatusOr<std::unique_ptr<NativeModelRunner>> r = NativeModelRunner::create(
        *m, {TensorSpec::create<float>("x", {1, 300})}, {TensorSpec::create<float>("probs", {1, 15})});
    if (!r.ok()) {
      std::fprintf(stderr, "create: %s\n", r.status().toString().c_str());
      return 1;
    }
    NativeModelRunner& runner = **r;
    std::memcpy(runner.getTensor<float>(0), x.data(), sizeof(float) * 300);
    if (!runner.evaluate().ok()) return 1;
    double maxDiff = 0;
    for (int i = 0; i < 15; ++i) maxDiff = std::max(maxDiff, double(std::fabs(runner.output<float>(0)[i] - hand[i])));
    Stats s = timeIt([&] { (void)runner.evaluate(); gSink = runner.output<float>(0)[0]; }, iterations);
    engineP50[portable] = s.p50;
    isa[portable] = (*m)->kernelIsa();
    char label[96];
    std::snprintf(label, sizeof label, "  engine, %s kernels (max |diff| %.1e)", (*m)->kernelIsa(), maxDiff);
    std::printf("%-44s %10.3f %10.3f   %.2fx the floor\n", label, s.p50, s.p99, s.p50 / floorStats.p50);
  }

  // ---- FC 50,000 -> 1 ----
  const int64_t n = 50000;
  std::vector<float> w(n), xs(n), bias = {0.25f};
  for (float& v : w) v = nd(rng) * 0.01f;
  for (float& v : xs) v = nd(rng);
  std::string g2;
  bytesField(g2, 1, node("Gemm", {"x", "w", "b"}, "y", true));
  bytesField(g2, 2, "fc");
  bytesField(g2, 5, tensor("w", {1, n}, w));
  bytesField(g2, 5, tensor("b", {1}, bias));
  bytesField(g2, 11, valueInfo("x", {1, n}));
  bytesField(g2, 12, valueInfo("y", {1, 1}));
  std::string fcBytes = model(g2);
  std::printf("%-44s %10s %10s\n", "fc 50,000 -> 1", "p50 us", "p99 us");
  int fcIters = std::max(2000, iterations / 20);
  Stats fcFloor = timeIt([&] { gSink = handFc(xs.data(), w.data(), size_t(n), 0.25f); }, fcIters);
  std::printf("%-44s %10.3f %10.3f\n", "  hand-written C++ loop (8 accumulators)", fcFloor.p50, fcFloor.p99);
  double fcEngine = 0;
  {
    StatusOr<std::unique_ptr<NativeModelRunner>> r = NativeModelRunner::create(
        *OnnxModel::loadFromMemory(fcBytes.data(), fcBytes.size()), {TensorSpec::create<float>("x", {1, n})},
        {TensorSpec::create<float>("y", {1, 1})});
    if (!r.ok()) return 1;
    std::memcpy((*r)->getTensor<float>(0), xs.data(), sizeof(float) * size_t(n));
    Stats s = timeIt([&] { (void)(*r)->evaluate(); gSink = (*r)->output<float>(0)[0]; }, fcIters);
    fcEngine = s.p50;
    std::printf("%-44s %10.3f %10.3f   %.2fx the floor\n", "  engine", s.p50, s.p99, s.p50 / fcFloor.p50);
  }

  // ---- any model ----
  double extra = 0;
  if (!extraModel.empty()) {
    StatusOr<std::shared_ptr<const OnnxModel>> m = OnnxModel::load(extraModel);
    if (!m.ok()) {
      std::fprintf(stderr, "%s\n", m.status().toString().c_str());
      return 1;
    }
    StatusOr<std::unique_ptr<NativeModelRunner>> r = NativeModelRunner::create(*m, (*m)->inputs(), (*m)->outputs());
    if (!r.ok()) {
      std::fprintf(stderr, "%s\n", r.status().toString().c_str());
      return 1;
    }
    Stats s = timeIt([&] { (void)(*r)->evaluate(); }, iterations);
    extra = s.p50;
    std::printf("%-44s %10.3f %10.3f\n", extraModel.c_str(), s.p50, s.p99);
  }

  std::printf(
      "{\"mlp_floor_us\":%.3f,\"mlp_engine_us\":%.3f,\"mlp_engine_isa\":\"%s\",\"mlp_engine_baseline_us\":%.3f,"
      "\"mlp_ratio\":%.3f,\"fc50k_floor_us\":%.3f,\"fc50k_engine_us\":%.3f,\"model_us\":%.3f}\n",
      floorStats.p50, engineP50[0], isa[0].c_str(), engineP50[1], engineP50[0] / floorStats.p50, fcFloor.p50, fcEngine,
      extra);
  return 0;
}
