// mlbridge-bench --runner native|aot|onnxruntime|tfaot: in-process runners.
//
//   mlbridge-bench latency --runner native|aot|onnxruntime|tfaot [--model mlp] [--iterations N] [--threads 1,2]
//   mlbridge-bench rtt     --runner native|aot|onnxruntime|tfaot [--repeats R] [--threads 1,2]
//
// The models and the floor come from bench/mlp_floor.h (the same seeded
// weights as mlbridge-engine-bench, mlbridge-aot-bench and the build-time AOT
// models): latency: MLP 300 -> 64 tanh -> 64 relu -> 15 softmax, against the
// hand-written loop with transposed weights (same flags). rtt: the paper's
// experiment: float32 vectors n = 500..50,000 (step 500), one FC layer n -> 1,
// copy in + evaluate + read out; total_ms = sum over the 100 sizes of the
// median call; floor: the hand-written FC loop over the same n.
// p50/p99 of latency are per call over samples of 64 back-to-back calls.
// --threads: decisions/s with k threads, one runner per thread (latency: the
// MLP; rtt: the 50,000 FC). Last line: JSON.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "mlbridge/mlbridge.hpp"
#include "mlp_floor.h"

#ifdef MLBRIDGE_BENCH_WITH_ENGINE
#include "mlbridge/onnx_runner.h"
#endif
#ifdef MLBRIDGE_BENCH_WITH_AOT
#include "AotBenchFc50k.h"
#include "AotBenchMlp.h"
#include "mlbridge/aot_runner.h"
#endif
#ifdef MLBRIDGE_HAVE_ONNXRUNTIME
#include "mlbridge/onnxruntime_runner.h"
#endif
#ifdef MLBRIDGE_BENCH_WITH_TFAOT
#include "TfAotBenchFc50k_tfaot.h"
#include "TfAotBenchMlp_tfaot.h"
#include "mlbridge/tfaot_runner.h"
#endif

namespace {

namespace mb = mlbridge_bench;
using mlbridge::ModelRunner;
using mlbridge::StatusOr;
using mlbridge::TensorSpec;
using BClock = std::chrono::steady_clock;

volatile float gInprocSink;

struct InprocOptions {
  std::string mode, runner, model = "mlp";
  int iterations = 200000, repeats = 5;
  std::vector<int> threads;
};

// The runner for an ONNX model (bytes) with one float input and one float output.
// `mlp`: the MLP (else the FC layer). Not built: an error, not a link failure.
StatusOr<std::unique_ptr<ModelRunner>> makeRunner(const InprocOptions& o, const std::string& onnx, TensorSpec in,
                                                  TensorSpec out, bool mlp) {
  (void)onnx;  // unused when no in-process runner is built
  (void)mlp;
  (void)in;
  (void)out;
  if (o.runner == "native") {
#ifdef MLBRIDGE_BENCH_WITH_ENGINE
    auto m = mlbridge::OnnxModel::loadFromMemory(onnx.data(), onnx.size());
    if (!m.ok()) return m.status();
    auto r = mlbridge::NativeModelRunner::create(*m, {std::move(in)}, {std::move(out)});
    if (!r.ok()) return r.status();
    return std::unique_ptr<ModelRunner>(std::move(*r));
#endif
  } else if (o.runner == "aot") {
#ifdef MLBRIDGE_BENCH_WITH_AOT
    // The build-time generated models (bench/aot.cmake) of the same weights:
    // the MLP, and the FC 50,000 -> 1 (rtt feeds n values, the rest zero).
    auto r = mlbridge::AotModelRunner::create(mlp ? AotBenchMlp_model() : AotBenchFc50k_model(), {std::move(in)},
                                              {std::move(out)});
    if (!r.ok()) return r.status();
    return std::unique_ptr<ModelRunner>(std::move(*r));
#endif
  } else if (o.runner == "tfaot") {
#ifdef MLBRIDGE_BENCH_WITH_TFAOT
    // The same weights as TensorFlow SavedModels compiled by XLA (bench/tfaot.cmake).
    auto r = mlbridge::TfAotModelRunner::create(mlp ? TfAotBenchMlp_tfaot_model() : TfAotBenchFc50k_tfaot_model(),
                                                {std::move(in)}, {std::move(out)});
    if (!r.ok()) return r.status();
    return std::unique_ptr<ModelRunner>(std::move(*r));
#endif
  } else if (o.runner == "onnxruntime") {
#ifdef MLBRIDGE_HAVE_ONNXRUNTIME
    mlbridge::OnnxRuntimeOptions ro;
    ro.intraOpThreads = 1;
    auto m = mlbridge::OnnxRuntimeModel::loadFromMemory(onnx.data(), onnx.size(), ro);
    if (!m.ok()) return m.status();
    auto r = mlbridge::OnnxRuntimeRunner::create(*m, {std::move(in)}, {std::move(out)});
    if (!r.ok()) return r.status();
    return std::unique_ptr<ModelRunner>(std::move(*r));
#endif
  }
  return mlbridge::invalidArgument("runner '" + o.runner + "' is not built into this mlbridge-bench");
}

std::string fcOnnx(const std::vector<float>& w, int64_t n, float bias) {
  std::string g;
  mb::bytesField(g, 1, mb::node("Gemm", {"x", "w", "b"}, "y", true));
  mb::bytesField(g, 2, "fc");
  mb::bytesField(g, 5, mb::tensor("w", {1, n}, std::vector<float>(w.begin(), w.begin() + n)));
  mb::bytesField(g, 5, mb::tensor("b", {1}, std::vector<float>{bias}));
  mb::bytesField(g, 11, mb::valueInfo("x", {1, n}));
  mb::bytesField(g, 12, mb::valueInfo("y", {1, 1}));
  return mb::model(g);
}

struct Timing {
  double p50 = 0, p99 = 0, totalMs = 0;
  size_t calls = 0;
};

// Per-call p50/p99 over samples of 64 back-to-back calls, after 1,000 warm-up calls.
Timing timeCalls(const std::function<void()>& f, int iterations) {
  const int kBatch = 64;
  for (int i = 0; i < 1000; ++i) f();
  std::vector<double> samples;
  double total = 0;
  for (int s = 0; s < std::max(1, iterations / kBatch); ++s) {
    auto t0 = BClock::now();
    for (int i = 0; i < kBatch; ++i) f();
    double us = std::chrono::duration<double, std::micro>(BClock::now() - t0).count();
    total += us;
    samples.push_back(us / kBatch);
  }
  std::sort(samples.begin(), samples.end());
  Timing t;
  t.p50 = samples[samples.size() / 2];
  t.p99 = samples[std::min(samples.size() - 1, samples.size() * 99 / 100)];
  t.totalMs = total / 1000.0;
  t.calls = samples.size() * kBatch;
  return t;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// decisions/s with k threads, each with its own runner, for ~0.5 s.
StatusOr<double> throughput(const InprocOptions& o, const mb::BenchModels& b, int k) {
  const bool mlp = o.mode == "latency";
  const int64_t n = int64_t(b.fcX.size());
  std::vector<std::unique_ptr<ModelRunner>> runners;
  for (int t = 0; t < k; ++t) {
    auto r = mlp ? makeRunner(o, b.mlpOnnx, TensorSpec::create<float>("x", {1, 300}),
                              TensorSpec::create<float>("probs", {1, 15}), true)
                 : makeRunner(o, b.fcOnnx, TensorSpec::create<float>("x", {1, n}), TensorSpec::create<float>("y", {1, 1}),
                              false);
    if (!r.ok()) return r.status();
    runners.push_back(std::move(*r));
  }
  std::atomic<bool> go{false}, done{false};
  std::vector<long> counts(size_t(k), 0);
  std::vector<std::thread> pool;
  for (int t = 0; t < k; ++t) {
    pool.emplace_back([&, t] {
      ModelRunner& r = *runners[size_t(t)];
      while (!go.load()) std::this_thread::yield();
      long c = 0;
      float sink = 0;
      while (!done.load(std::memory_order_relaxed)) {
        for (int i = 0; i < 16; ++i) {
          if (mlp) std::memcpy(r.getTensor<float>(0), b.x.data(), sizeof(float) * 300);
          else std::memcpy(r.getTensor<float>(0), b.fcX.data(), sizeof(float) * size_t(n));
          (void)r.evaluate();
          sink += r.output<float>(0)[0];
        }
        c += 16;
      }
      gInprocSink = sink;
      counts[size_t(t)] = c;
    });
  }
  auto t0 = BClock::now();
  go = true;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  done = true;
  for (auto& th : pool) th.join();
  double secs = std::chrono::duration<double>(BClock::now() - t0).count();
  long sum = 0;
  for (long c : counts) sum += c;
  return double(sum) / secs;
}

int usageInproc() {
  std::fprintf(stderr,
               "usage: mlbridge-bench latency|rtt --runner native|aot|onnxruntime|tfaot [--model mlp] [--iterations N]\n"
               "                      [--repeats R] [--threads 1,2]\n");
  return 2;
}

}  // namespace

int mlbridgeBenchInproc(int argc, char** argv) {
  InprocOptions o;
  o.mode = argv[1];
  if (o.mode != "rtt" && o.mode != "latency") return usageInproc();
  for (int i = 2; i < argc; i += 2) {
    if (i + 1 >= argc) return usageInproc();  // an option without its value
    std::string a = argv[i], v = argv[i + 1];
    if (a == "--runner") o.runner = v;
    else if (a == "--model") o.model = v;
    else if (a == "--iterations") o.iterations = std::max(64, std::atoi(v.c_str()));
    else if (a == "--repeats") o.repeats = std::max(1, std::atoi(v.c_str()));
    else if (a == "--threads") {
      for (size_t p = 0; p < v.size();) {
        size_t q = v.find(',', p);
        if (q == std::string::npos) q = v.size();
        int k = std::atoi(v.substr(p, q - p).c_str());
        if (k < 1) return usageInproc();
        o.threads.push_back(k);
        p = q + 1;
      }
    } else return usageInproc();
  }
  if (o.model != "mlp") {
    std::fprintf(stderr, "mlbridge-bench: --model %s: only mlp\n", o.model.c_str());
    return 2;
  }
  const mb::BenchModels b = mb::makeBenchModels();
  auto fail = [](const mlbridge::Status& s) {
    std::fprintf(stderr, "mlbridge-bench: %s\n", s.toString().c_str());
    return 1;
  };
  std::string note;
#ifdef MLBRIDGE_BENCH_WITH_AOT
  if (o.runner == "aot")
    note = o.mode == "latency" ? "build-time AotBenchMlp (same weights)"
                               : "build-time AotBenchFc50k (same weights; n values in, the rest zero: 50,000 MACs per call)";
#endif
#ifdef MLBRIDGE_BENCH_WITH_TFAOT
  if (o.runner == "tfaot")
    note = o.mode == "latency" ? "TF SavedModel compiled by XLA (same weights)"
                               : "TF SavedModel FC 50,000 compiled by XLA (same weights; n values in, the rest zero)";
#endif
  // Runners whose FC has a fixed 50,000 inputs (compiled ahead of time).
  const bool fixedFc = o.runner == "aot" || o.runner == "tfaot";
  char line[512];
  std::string json;
  if (o.mode == "latency") {
    auto r = makeRunner(o, b.mlpOnnx, TensorSpec::create<float>("x", {1, 300}), TensorSpec::create<float>("probs", {1, 15}),
                        true);
    if (!r.ok()) return fail(r.status());
    ModelRunner& runner = **r;
    float hand[15];
    mb::handMlp(b.L, b.x.data(), hand);
    std::memcpy(runner.getTensor<float>(0), b.x.data(), sizeof(float) * 300);
    if (auto s = runner.evaluate(); !s.ok()) return fail(s);
    double maxDiff = 0;
    for (int i = 0; i < 15; ++i) maxDiff = std::max(maxDiff, double(std::fabs(runner.output<float>(0)[i] - hand[i])));
    // Features in, evaluate, answer out: what a compiler pass does per decision.
    Timing floorT = timeCalls([&] { mb::handMlp(b.L, b.x.data(), hand); gInprocSink = hand[0]; }, o.iterations);
    Timing ours = timeCalls(
        [&] {
          std::memcpy(runner.getTensor<float>(0), b.x.data(), sizeof(float) * 300);
          (void)runner.evaluate();
          gInprocSink = runner.output<float>(0)[0];
        },
        o.iterations);
    const double ratio = ours.p50 / floorT.p50;
    std::printf("latency mlp    %-11s  total %9.3f ms  p50 %8.3f us  p99 %8.3f us   | floor (hand-written C++ loop): p50 %8.3f us  p99 %8.3f us   | ratio p50 %.2fx  (max |diff| %.1e%s%s)\n",
                o.runner.c_str(), ours.totalMs, ours.p50, ours.p99, floorT.p50, floorT.p99, ratio, maxDiff,
                note.empty() ? "" : "; ", note.c_str());
    std::snprintf(line, sizeof line,
                  "\"total_ms\":%.3f,\"p50_us\":%.3f,\"p99_us\":%.3f,\"calls\":%zu,\"floor_p50_us\":%.3f,"
                  "\"floor_p99_us\":%.3f,\"ratio_p50\":%.3f,\"max_abs_diff\":%.2e",
                  ours.totalMs, ours.p50, ours.p99, ours.calls, floorT.p50, floorT.p99, ratio, maxDiff);
    json = line;
  } else {
    std::vector<double> perSize, floorPerSize, all;
    double maxRelDiff = 0;
    std::unique_ptr<ModelRunner> aotFc;
    for (int64_t n = 500; n <= 50000; n += 500) {
      std::unique_ptr<ModelRunner> own;
      ModelRunner* rp = nullptr;
      const int64_t inN = fixedFc ? int64_t(b.fcX.size()) : n;
      if (fixedFc && aotFc) {
        rp = aotFc.get();
      } else {
        auto r = makeRunner(o, fixedFc ? b.fcOnnx : fcOnnx(b.fcW, n, b.fcBias),
                            TensorSpec::create<float>("x", {1, inN}), TensorSpec::create<float>("y", {1, 1}), false);
        if (!r.ok()) return fail(r.status());
        (fixedFc ? aotFc : own) = std::move(*r);
        rp = fixedFc ? aotFc.get() : own.get();
      }
      ModelRunner& runner = *rp;
      if (inN > n) std::memset(runner.getTensor<float>(0) + n, 0, sizeof(float) * size_t(inN - n));
      std::vector<double> calls, floorCalls;
      float y = 0;
      for (int rep = 0; rep < o.repeats + 1; ++rep) {
        auto t0 = BClock::now();
        std::memcpy(runner.getTensor<float>(0), b.fcX.data(), sizeof(float) * size_t(n));
        if (auto s = runner.evaluate(); !s.ok()) return fail(s);
        y = runner.output<float>(0)[0];
        double us = std::chrono::duration<double, std::micro>(BClock::now() - t0).count();
        t0 = BClock::now();
        float f = mb::handFc(b.fcX.data(), b.fcW.data(), size_t(n), b.fcBias);
        double fus = std::chrono::duration<double, std::micro>(BClock::now() - t0).count();
        gInprocSink = f + y;
        if (rep) {
          calls.push_back(us);
          floorCalls.push_back(fus);
        }
        if (rep == o.repeats)
          maxRelDiff = std::max(maxRelDiff, double(std::fabs(y - f)) / (1.0 + std::fabs(double(f))));
      }
      perSize.push_back(median(calls));
      floorPerSize.push_back(median(floorCalls));
      all.insert(all.end(), calls.begin(), calls.end());
    }
    double total = 0, floorTotal = 0;
    for (double us : perSize) total += us / 1000.0;
    for (double us : floorPerSize) floorTotal += us / 1000.0;
    std::sort(all.begin(), all.end());
    const double p50 = all[all.size() / 2], p99 = all[std::min(all.size() - 1, all.size() * 99 / 100)];
    std::printf("rtt 100 sizes  %-11s  total %9.3f ms  p50 %8.2f us  p99 %8.2f us   | floor (hand-written FC loop): total %9.3f ms   | ratio total %.2fx  target total <= 1 ms: %s  (max rel diff %.1e%s%s)\n",
                o.runner.c_str(), total, p50, p99, floorTotal, total / floorTotal, total <= 1.0 ? "met" : "NOT met",
                maxRelDiff, note.empty() ? "" : "; ", note.c_str());
    std::snprintf(line, sizeof line,
                  "\"total_ms\":%.3f,\"p50_us\":%.2f,\"p99_us\":%.2f,\"calls\":%zu,\"floor_total_ms\":%.3f,"
                  "\"ratio_total\":%.3f,\"max_rel_diff\":%.2e",
                  total, p50, p99, all.size(), floorTotal, total / floorTotal, maxRelDiff);
    json = line;
  }
  if (!o.threads.empty()) {
    std::string th;
    std::printf("throughput (%s, one runner per thread, %u hardware threads):", o.mode == "latency" ? "mlp" : "fc 50,000",
                std::thread::hardware_concurrency());
    for (int k : o.threads) {
      StatusOr<double> d = throughput(o, b, k);
      if (!d.ok()) return fail(d.status());
      std::printf("  %d thread(s) %.0f decisions/s", k, *d);
      std::snprintf(line, sizeof line, "{\"threads\":%d,\"decisions_per_s\":%.0f}", k, *d);
      th += (th.empty() ? "" : ",") + std::string(line);
    }
    std::printf("\n");
    json += ",\"threads\":[" + th + "]";
  }
  if (!note.empty()) json += ",\"note\":\"" + note + "\"";
  std::printf("{\"bench\":\"%s\",\"runner\":\"%s\",\"model\":\"%s\",%s}\n", o.mode.c_str(), o.runner.c_str(),
              o.mode == "latency" ? "mlp" : "fc", json.c_str());
  return 0;
}
