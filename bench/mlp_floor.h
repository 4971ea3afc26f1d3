// Shared by the benchmarks: the AOT benchmark (bench/aot_bench.cc), its model writer
// (bench/aot_bench_models.cc): the benchmark models of engine_bench.cc (same
// ONNX writer, same seeded weights) and the same hand-written floors.
//  * mlp: 300 -> 64 tanh -> 64 relu -> 15 softmax (Gemm, transB=1);
//  * fc50k: one fully-connected layer 50,000 -> 1.
// The floor is a plain C++ loop over transposed weights (std::tanh,
// std::exp), compiled with the same flags as the code it is compared with.
// Also used by engine_bench.cc and by mlbridge-bench --runner
// native|aot|onnxruntime (bench/inproc_bench.cc).
#ifndef MLBRIDGE_BENCH_MLP_FLOOR_H
#define MLBRIDGE_BENCH_MLP_FLOOR_H

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace mlbridge_bench {

using Clock = std::chrono::steady_clock;


// ---- a minimal ONNX writer (protobuf wire format) ------------------------------
inline void varint(std::string& o, uint64_t v) {
  while (v >= 0x80) {
    o += static_cast<char>(v | 0x80);
    v >>= 7;
  }
  o += static_cast<char>(v);
}
inline void tag(std::string& o, uint32_t field, uint32_t wire) { varint(o, field << 3 | wire); }
inline void bytesField(std::string& o, uint32_t field, const std::string& b) {
  tag(o, field, 2);
  varint(o, b.size());
  o += b;
}
inline void intField(std::string& o, uint32_t field, int64_t v) {
  tag(o, field, 0);
  varint(o, static_cast<uint64_t>(v));
}

inline std::string tensor(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& data) {
  std::string t;
  for (int64_t d : dims) intField(t, 1, d);
  intField(t, 2, 1);  // FLOAT
  bytesField(t, 8, name);
  bytesField(t, 9, std::string(reinterpret_cast<const char*>(data.data()), data.size() * 4));
  return t;
}
inline std::string valueInfo(const std::string& name, const std::vector<int64_t>& dims) {
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
inline std::string node(const std::string& op, const std::vector<std::string>& in, const std::string& out, bool transB = false,
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
inline std::string model(const std::string& graph) {
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

inline Layer makeLayer(int in, int out, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.f, 1.f / std::sqrt(static_cast<float>(in)));
  Layer l{in, out, std::vector<float>(size_t(in) * out), std::vector<float>(size_t(in) * out), std::vector<float>(out)};
  for (float& v : l.w) v = nd(rng);
  for (float& v : l.b) v = nd(rng) * 0.1f;
  for (int o = 0; o < out; ++o)
    for (int i = 0; i < in; ++i) l.wt[size_t(i) * out + o] = l.w[size_t(o) * in + i];
  return l;
}

// ---- hand-written floors ---------------------------------------------------------
__attribute__((noinline)) inline void handDense(const Layer& l, const float* x, float* y) {
  for (int o = 0; o < l.out; ++o) y[o] = l.b[o];
  for (int i = 0; i < l.in; ++i) {
    const float xi = x[i];
    const float* w = &l.wt[size_t(i) * l.out];
    for (int o = 0; o < l.out; ++o) y[o] += xi * w[o];
  }
}

__attribute__((noinline)) inline void handMlp(const Layer* L, const float* x, float* out) {
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
__attribute__((noinline)) inline float handFc(const float* x, const float* w, size_t n, float b) {
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
inline Stats timeIt(F&& f, int iterations) {
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


// The benchmark models, drawn from mt19937(42) in engine_bench.cc's order.
struct BenchModels {
  Layer L[3];
  std::vector<float> x;        // 300 MLP inputs
  std::vector<float> fcW, fcX;  // 50,000 weights and inputs
  float fcBias = 0.25f;
  std::string mlpOnnx, fcOnnx;
};

inline BenchModels makeBenchModels() {
  BenchModels b;
  std::mt19937 rng(42);
  std::normal_distribution<float> nd(0.f, 1.f);
  b.L[0] = makeLayer(300, 64, rng);
  b.L[1] = makeLayer(64, 64, rng);
  b.L[2] = makeLayer(64, 15, rng);
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
    bytesField(g, 5, tensor("w" + n, {b.L[k].out, b.L[k].in}, b.L[k].w));
    bytesField(g, 5, tensor("b" + n, {b.L[k].out}, b.L[k].b));
  }
  bytesField(g, 11, valueInfo("x", {1, 300}));
  bytesField(g, 12, valueInfo("probs", {1, 15}));
  b.mlpOnnx = model(g);
  b.x.resize(300);
  for (float& v : b.x) v = nd(rng);
  const int64_t n = 50000;
  b.fcW.resize(n);
  b.fcX.resize(n);
  for (float& v : b.fcW) v = nd(rng) * 0.01f;
  for (float& v : b.fcX) v = nd(rng);
  std::string g2;
  bytesField(g2, 1, node("Gemm", {"x", "w", "b"}, "y", true));
  bytesField(g2, 2, "fc");
  bytesField(g2, 5, tensor("w", {1, n}, b.fcW));
  bytesField(g2, 5, tensor("b", {1}, std::vector<float>{b.fcBias}));
  bytesField(g2, 11, valueInfo("x", {1, n}));
  bytesField(g2, 12, valueInfo("y", {1, 1}));
  b.fcOnnx = model(g2);
  return b;
}

}  // namespace mlbridge_bench

#endif  // MLBRIDGE_BENCH_MLP_FLOOR_H
