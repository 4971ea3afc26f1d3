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

using namespace mlbridge;
using Clock = std::chrono::steady_clock;

namespace {

// ---- a minimal ONNX writer (protobuf wire format) ------------------------------
void varint(std::string& o, uint64_t v) {
  while (v >= 0x80) {
    o += static_cast<char>(v | 0x80);
    v >>= 7;
  }
  o += static_cast<char>(v);
}
void tag(std::string& o, uint32_t field, uint32_t wire) { varint(o, field << 3 | wire); }
void bytesField(std::string& o, uint32_t field, const std::string& b) {
  tag(o, field, 2);
  varint(o, b.size());
  o += b;
}
void intField(std::string& o, uint32_t field, int64_t v) {
  tag(o, field, 0);
  varint(o, static_cast<uint64_t>(v));
}

std::string tensor(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& data) {
  std::string t;
  for (int64_t d : dims) intField(t, 1, d);
  intField(t, 2, 1);  // FLOAT
  bytesField(t, 8, name);
  bytesField(t, 9, std::string(reinterpret_cast<const char*>(data.data()), data.size() * 4));
  return t;
}
std::string valueInfo(const std::string& name, const std::vector<int64_t>& dims) {
  std::string shape, tt, type, vi;
  for (int64_t d : dims) {
    std::string dim;
    intField(dim, 1, d);
    bytesField(shape, 1, dim);
  }
  intField(tt, 1, 1);
  bytesField(tt, 2, shape);
  bytesField(type, 1, tt);
  bytesField(vi, 1, name);
  bytesField(vi, 2, type);
  return vi;
}
std::string node(const std::string& op, const std::vector<std::string>& in, const std::string& out, bool transB = false,
                 int64_t axis = 0, bool hasAxis = false) {
  std::string n;
  for (const std::string& i : in) bytesField(n, 1, i);
  bytesField(n, 2, out);
  bytesField(n, 4, op);
  auto intAttr = [&](const char* name, int64_t v) {
    std::string a;
    bytesField(a, 1, name);
    intField(a, 3, v);
    intField(a, 20, 2);  // INT
    bytesField(n, 5, a);
  };
  if (transB) intAttr("transB", 1);
  if (hasAxis) intAttr("axis", axis);
  return n;
}
std::string model(const std::string& graph) {
  std::string m, opset;
  intField(m, 1, 8);  // ir_version
  bytesField(m, 2, "mlbridge-engine-bench");
  bytesField(m, 7, graph);
  bytesField(opset, 1, "");
  intField(opset, 2, 17);
  bytesField(m, 8, opset);
  return m;
}

struct Layer {
  int in, out;
  std::vector<float> w;   // [out][in], as torch stores it (Gemm transB=1)
  std::vector<float> wt;  // [in][out], for the hand-written loop
  std::vector<float> b;
};

Layer makeLayer(int in, int out, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.f, 1.f / std::sqrt(static_cast<float>(in)));
  Layer l{in, out, std::vector<float>(size_t(in) * out), std::vector<float>(size_t(in) * out), std::vector<float>(out)};
  for (float& v : l.w) v = nd(rng);
  for (float& v : l.b) v = nd(rng) * 0.1f;
  for (int o = 0; o < out; ++o)
    for (int i = 0; i < in; ++i) l.wt[size_t(i) * out + o] = l.w[size_t(o) * in + i];
  return l;
}

// ---- hand-written floors ---------------------------------------------------------
__attribute__((noinline)) void handDense(const Layer& l, const float* x, float* y) {
  for (int o = 0; o < l.out; ++o) y[o] = l.b[o];
  for (int i = 0; i < l.in; ++i) {
    const float xi = x[i];
    const float* w = &l.wt[size_t(i) * l.out];
    for (int o = 0; o < l.out; ++o) y[o] += xi * w[o];
  }
}

__attribute__((noinline)) void handMlp(const Layer* L, const float* x, float* out) {
  float h1[64], h2[64], h3[15];
  handDense(L[0], x, h1);
  for (float& v : h1) v = std::tanh(v);
  handDense(L[1], h1, h2);
  for (float& v : h2) v = v > 0 ? v : 0;
  handDense(L[2], h2, h3);
  float mx = h3[0], sum = 0;
  for (float v : h3) mx = std::max(mx, v);
  for (int i = 0; i < 15; ++i) sum += (out[i] = std::exp(h3[i] - mx));
  for (int i = 0; i < 15; ++i) out[i] /= sum;
}

// 50,000 -> 1 with 8 accumulators.
__attribute__((noinline)) float handFc(const float* x, const float* w, size_t n, float b) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  const size_t body = n / 8 * 8;
  for (size_t i = 0; i < body; i += 8)
    for (size_t k = 0; k < 8; ++k) acc[k] += x[i + k] * w[i + k];
  float s = b;
  for (size_t i = body; i < n; ++i) s += x[i] * w[i];
  for (float a : acc) s += a;
  return s;
}

struct Stats {
  double p50 = 0, p99 = 0;
};

template <class F>
Stats timeIt(F&& f, int iterations) {
  const int kBatch = 64;
  for (int i = 0; i < 1000; ++i) f();  // warm-up
  std::vector<double> samples;
  for (int s = 0; s < std::max(1, iterations / kBatch); ++s) {
    auto t0 = Clock::now();
    for (int i = 0; i < kBatch; ++i) f();
    samples.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / kBatch);
  }
  std::sort(samples.begin(), samples.end());
  Stats st;
  st.p50 = samples[samples.size() / 2];
  st.p99 = samples[std::min(samples.size() - 1, samples.size() * 99 / 100)];
  return st;
}

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
