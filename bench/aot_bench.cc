// mlbridge-aot-bench: AOT-compiled models against the hand-written floor of
// mlbridge-engine-bench (bench/mlp_floor.h: same models, same weights, same
// loops), everything compiled with the same flags.
//
//   mlbridge-aot-bench [--iterations N]
//
// Rows: the floor; the generated <Name>_run() called directly; the same model
// through AotModelRunner (ModelRunner interface); the engine for reference.
// FC 50,000 -> 1 also reports the paper's round trip (setFeature of 50,000
// floats + evaluate + read the answer) summed over 100 calls. Last line: JSON.
#include <cstdlib>
#include <cstring>

#include "AotBenchFc50k.h"
#include "AotBenchMlp.h"
#include "mlbridge/aot_runner.h"
#include "mlbridge/onnx_runner.h"
#include "mlp_floor.h"

using namespace mlbridge;
using namespace mlbridge_bench;

namespace {
volatile float gSink;
}

int main(int argc, char** argv) {
  int iterations = 200000;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--iterations" && i + 1 < argc) iterations = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: mlbridge-aot-bench [--iterations N]\n");
      return 2;
    }
  }
  BenchModels b = makeBenchModels();

  // ---- MLP ----
  float hand[15];
  handMlp(b.L, b.x.data(), hand);
  std::printf("%-46s %10s %10s\n", "mlp 300->64->64->15 (tanh/relu/softmax)", "p50 us", "p99 us");
  Stats floorStats = timeIt([&] { handMlp(b.L, b.x.data(), hand); gSink = hand[0]; }, iterations);
  std::printf("%-46s %10.3f %10.3f\n", "  hand-written C++ loop (transposed weights)", floorStats.p50, floorStats.p99);

  alignas(64) static unsigned char scratch[AotBenchMlp_SCRATCH_BYTES + 64];
  float probs[15];
  const void* ins[1] = {b.x.data()};
  void* outs[1] = {probs};
  if (AotBenchMlp_run(ins, outs, scratch)) return 1;
  double maxDiff = 0;
  for (int i = 0; i < 15; ++i) maxDiff = std::max(maxDiff, double(std::fabs(probs[i] - hand[i])));
  Stats direct = timeIt([&] { (void)AotBenchMlp_run(ins, outs, scratch); gSink = probs[0]; }, iterations);
  char label[96];
  std::snprintf(label, sizeof label, "  aot, AotBenchMlp_run() (max |diff| %.1e)", maxDiff);
  std::printf("%-46s %10.3f %10.3f   %.2fx the floor\n", label, direct.p50, direct.p99, direct.p50 / floorStats.p50);

  auto r = AotModelRunner::create(AotBenchMlp_model(), {TensorSpec::create<float>("x", {1, 300})},
                                  {TensorSpec::create<float>("probs", {1, 15})});
  if (!r.ok()) {
    std::fprintf(stderr, "%s\n", r.status().toString().c_str());
    return 1;
  }
  std::memcpy((*r)->getTensor<float>(0), b.x.data(), sizeof(float) * 300);
  Stats viaRunner = timeIt([&] { (void)(*r)->evaluate(); gSink = (*r)->output<float>(0)[0]; }, iterations);
  std::printf("%-46s %10.3f %10.3f   %.2fx the floor\n", "  aot, AotModelRunner::evaluate()", viaRunner.p50,
              viaRunner.p99, viaRunner.p50 / floorStats.p50);

  double engineP50 = 0;
  {
    auto m = OnnxModel::loadFromMemory(b.mlpOnnx.data(), b.mlpOnnx.size());
    if (!m.ok()) return 1;
    auto er = NativeModelRunner::create(*m, {TensorSpec::create<float>("x", {1, 300})},
                                        {TensorSpec::create<float>("probs", {1, 15})});
    if (!er.ok()) return 1;
    std::memcpy((*er)->getTensor<float>(0), b.x.data(), sizeof(float) * 300);
    Stats s = timeIt([&] { (void)(*er)->evaluate(); gSink = (*er)->output<float>(0)[0]; }, iterations);
    engineP50 = s.p50;
    std::snprintf(label, sizeof label, "  engine (reference), %s kernels", (*m)->kernelIsa());
    std::printf("%-46s %10.3f %10.3f   %.2fx the floor\n", label, s.p50, s.p99, s.p50 / floorStats.p50);
  }

  // ---- FC 50,000 -> 1 ----
  const size_t n = b.fcX.size();
  std::printf("%-46s %10s %10s\n", "fc 50,000 -> 1", "p50 us", "p99 us");
  int fcIters = std::max(2000, iterations / 20);
  Stats fcFloor = timeIt([&] { gSink = handFc(b.fcX.data(), b.fcW.data(), n, b.fcBias); }, fcIters);
  std::printf("%-46s %10.3f %10.3f\n", "  hand-written C++ loop (8 accumulators)", fcFloor.p50, fcFloor.p99);
  float y = 0;
  const void* fins[1] = {b.fcX.data()};
  void* fouts[1] = {&y};
  alignas(64) static unsigned char fscratch[AotBenchFc50k_SCRATCH_BYTES + 64];
  if (AotBenchFc50k_run(fins, fouts, fscratch)) return 1;
  const float fcHand = handFc(b.fcX.data(), b.fcW.data(), n, b.fcBias);
  Stats fcDirect = timeIt([&] { (void)AotBenchFc50k_run(fins, fouts, fscratch); gSink = y; }, fcIters);
  std::snprintf(label, sizeof label, "  aot, AotBenchFc50k_run() (|diff| %.1e)", double(std::fabs(y - fcHand)));
  std::printf("%-46s %10.3f %10.3f   %.2fx the floor\n", label, fcDirect.p50, fcDirect.p99, fcDirect.p50 / fcFloor.p50);
  auto fr = AotModelRunner::create(AotBenchFc50k_model(), {TensorSpec::create<float>("x", {1, int64_t(n)})},
                                   {TensorSpec::create<float>("y", {1, 1})});
  if (!fr.ok()) return 1;
  // The paper's round trip: features in, evaluate, answer out; 100 calls, total.
  auto roundTrips = [&] {
    float sum = 0;
    for (int k = 0; k < 100; ++k) {
      std::memcpy((*fr)->getTensor<float>(0), b.fcX.data(), sizeof(float) * n);
      (void)(*fr)->evaluate();
      sum += (*fr)->output<float>(0)[0];
    }
    gSink = sum;
  };
  roundTrips();
  std::vector<double> totals;
  for (int rep = 0; rep < 21; ++rep) {
    auto t0 = Clock::now();
    roundTrips();
    totals.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  std::sort(totals.begin(), totals.end());
  const double total100 = totals[totals.size() / 2];
  std::printf("%-46s %10.1f us total (median of 21)\n", "  aot runner, 100 round trips (copy 50k in)", total100);
  // The same with the features written in place (getTensor), as a compiler does.
  std::vector<double> inPlace;
  for (int rep = 0; rep < 21; ++rep) {
    auto t0 = Clock::now();
    float sum = 0;
    for (int k = 0; k < 100; ++k) {
      (void)(*fr)->evaluate();
      sum += (*fr)->output<float>(0)[0];
    }
    gSink = sum;
    inPlace.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  std::sort(inPlace.begin(), inPlace.end());
  const double inPlace100 = inPlace[inPlace.size() / 2];
  std::printf("%-46s %10.1f us total (median of 21)\n", "  aot runner, 100 round trips (in place)", inPlace100);

  std::printf(
      "{\"mlp_floor_us\":%.3f,\"mlp_aot_us\":%.3f,\"mlp_aot_runner_us\":%.3f,\"mlp_engine_us\":%.3f,"
      "\"mlp_aot_ratio\":%.3f,\"fc50k_floor_us\":%.3f,\"fc50k_aot_us\":%.3f,\"fc50k_100_round_trips_us\":%.1f,"
      "\"fc50k_100_in_place_us\":%.1f}\n",
      floorStats.p50, direct.p50, viaRunner.p50, engineP50, direct.p50 / floorStats.p50, fcFloor.p50, fcDirect.p50,
      total100, inPlace100);
  return 0;
}
