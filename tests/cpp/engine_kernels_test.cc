// Engine kernels in isolation, for both kernel sets (baseline and the CPU's
// best): vectorized exp/tanh/sigmoid against <cmath> in double, the packed
// dense kernel against a naive product for awkward sizes, softmax on inner
// axes, broadcasting against a naive index computation.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "engine/kernels.h"

namespace mlbridge {
namespace engine {
namespace {

std::vector<const SimdKernels*> kernelSets() {
  std::vector<const SimdKernels*> sets = {&simdKernels(true)};
  if (&simdKernels(false) != &simdKernels(true)) sets.push_back(&simdKernels(false));
  return sets;
}

void runUnary(const SimdKernels& k, UnaryOp op, const std::vector<float>& x, std::vector<float>* y) {
  y->assign(x.size(), 0);
  UnaryParams p;
  p.in = 0;
  p.out = 1;
  p.count = x.size();
  p.op = op;
  void* slots[2] = {const_cast<float*>(x.data()), y->data()};
  ASSERT_EQ(k.unary(&p, slots), nullptr);
}

TEST(EngineKernels, VectorMathAccuracy) {
  std::vector<float> x;
  for (float v = -100.f; v < 100.f; v += 0.00731f) x.push_back(v);
  for (float v = 1e-8f; v < 1e-2f; v *= 1.01f) {
    x.push_back(v);
    x.push_back(-v);
  }
  x.push_back(0.f);
  for (const SimdKernels* k : kernelSets()) {
    std::vector<float> t, s, e;
    runUnary(*k, UnaryOp::kTanh, x, &t);
    runUnary(*k, UnaryOp::kSigmoid, x, &s);
    runUnary(*k, UnaryOp::kExp, x, &e);
    double wt = 0, ws = 0, we = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      double xd = x[i];
      double rt = std::tanh(xd), rs = 1 / (1 + std::exp(-xd)), re = std::exp(xd);
      wt = std::max(wt, std::fabs(t[i] - rt) / std::max(std::fabs(rt), 1e-30));
      if (rs > 1e-30) ws = std::max(ws, std::fabs(s[i] - rs) / rs);
      if (re > 1.2e-38 && re < 3.4e38) we = std::max(we, std::fabs(e[i] - re) / re);
    }
    EXPECT_LT(wt, 5e-7) << k->isa;
    EXPECT_LT(ws, 5e-7) << k->isa;
    EXPECT_LT(we, 2e-7) << k->isa;
    // Special values.
    std::vector<float> sp = {INFINITY, -INFINITY, NAN, 89.f, -89.f, 0.f}, o;
    runUnary(*k, UnaryOp::kExp, sp, &o);
    EXPECT_EQ(o[0], INFINITY);
    EXPECT_EQ(o[1], 0.f);
    EXPECT_TRUE(std::isnan(o[2]));
    EXPECT_EQ(o[3], INFINITY);
    EXPECT_NEAR(o[4], 2.2273e-39f, 1e-42f);  // e^-89: denormal, not flushed
    EXPECT_EQ(o[5], 1.f);
    runUnary(*k, UnaryOp::kTanh, sp, &o);
    EXPECT_EQ(o[0], 1.f);
    EXPECT_EQ(o[1], -1.f);
    EXPECT_TRUE(std::isnan(o[2]));
  }
}

TEST(EngineKernels, DenseMatchesNaiveProduct) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (const SimdKernels* k : kernelSets()) {
    for (size_t M : {1, 3}) {
      for (size_t K : {1, 5, 17, 33, 300}) {
        for (size_t N : {1, 2, 7, 8, 15, 16, 17, 32, 33, 48, 64, 65, 100, 129}) {
          for (int variant = 0; variant < 3; ++variant) {
            std::vector<float> a(M * K), b(K * N), bias(N), y(M * N);
            for (float& v : a) v = nd(rng);
            for (float& v : b) v = nd(rng);
            for (float& v : bias) v = nd(rng);
            const bool transposed = variant == 1;
            std::vector<float> bt(N * K);  // N x K copy for the transposed packing
            for (size_t kk = 0; kk < K; ++kk)
              for (size_t n = 0; n < N; ++n) bt[n * K + kk] = b[kk * N + n];
            const bool narrow = N < kRowsBelow;
            BufferPtr panels = (narrow ? packRows : packPanels)(transposed ? bt.data() : b.data(), transposed, K, N, 0.5f);
            BufferPtr pb = padBias(bias.data(), N);
            DenseParams p;
            p.in = 0;
            p.out = 1;
            p.M = M;
            p.K = K;
            p.N = N;
            (narrow ? p.rows : p.panels) = panels->as<float>();
            p.bias = variant == 2 ? nullptr : pb->as<float>();
            p.act = variant == 2 ? Act::kRelu : Act::kNone;
            void* slots[2] = {a.data(), y.data()};
            ASSERT_EQ(k->dense(&p, slots), nullptr);
            for (size_t m = 0; m < M; ++m)
              for (size_t n = 0; n < N; ++n) {
                double ref = p.bias ? bias[n] : 0;
                for (size_t kk = 0; kk < K; ++kk) ref += 0.5 * double(a[m * K + kk]) * b[kk * N + n];
                if (variant == 2) ref = std::max(ref, 0.0);
                ASSERT_NEAR(y[m * N + n], ref, 1e-4 * (1 + std::fabs(ref)))
                    << k->isa << " M=" << M << " K=" << K << " N=" << N << " variant " << variant;
              }
          }
        }
      }
    }
  }
}

TEST(EngineKernels, SoftmaxOnInnerAxis) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.f, 3.f);
  const size_t outer = 2, len = 5, inner = 11;
  std::vector<float> x(outer * len * inner), y(x.size());
  for (float& v : x) v = nd(rng);
  for (const SimdKernels* k : kernelSets()) {
    for (bool log : {false, true}) {
      SoftmaxParams p;
      p.in = 0;
      p.out = 1;
      p.outer = outer;
      p.len = len;
      p.inner = inner;
      p.log = log;
      void* slots[2] = {x.data(), y.data()};
      ASSERT_EQ(k->softmax(&p, slots), nullptr);
      for (size_t o = 0; o < outer; ++o)
        for (size_t i = 0; i < inner; ++i) {
          double mx = -1e30, sum = 0;
          for (size_t l = 0; l < len; ++l) mx = std::max(mx, double(x[(o * len + l) * inner + i]));
          for (size_t l = 0; l < len; ++l) sum += std::exp(x[(o * len + l) * inner + i] - mx);
          for (size_t l = 0; l < len; ++l) {
            double xv = x[(o * len + l) * inner + i];
            double ref = log ? xv - mx - std::log(sum) : std::exp(xv - mx) / sum;
            EXPECT_NEAR(y[(o * len + l) * inner + i], ref, 1e-6 * (1 + std::fabs(ref))) << k->isa;
          }
        }
    }
  }
}

TEST(EngineKernels, BroadcastMatchesNaiveIndexing) {
  struct CaseShapes {
    Shape a, b, out;
  };
  std::vector<CaseShapes> cases = {{{2, 3, 4}, {4}, {2, 3, 4}},        {{2, 1, 4}, {3, 1}, {2, 3, 4}},
                                   {{1}, {5, 2}, {5, 2}},              {{}, {3}, {3}},
                                   {{3, 1, 1, 2}, {1, 4, 5, 1}, {3, 4, 5, 2}}, {{2, 3}, {2, 3}, {2, 3}},
                                   {{0, 3}, {3}, {0, 3}}};
  for (const CaseShapes& c : cases) {
    std::vector<float> a(elementCount(c.a)), b(elementCount(c.b)), y(elementCount(c.out));
    for (size_t i = 0; i < a.size(); ++i) a[i] = float(i + 1);
    for (size_t i = 0; i < b.size(); ++i) b[i] = float(100 * (i + 1));
    BinaryParams p;
    ASSERT_TRUE(makeBroadcast(c.out, {c.a, c.b}, &p.bc)) << shapeString(c.out);
    p.a = 0;
    p.b = 1;
    p.out = 2;
    void* slots[3] = {a.data(), b.data(), y.data()};
    ASSERT_EQ(binaryKernel(BinaryOp::kAdd, DType::kFloat32)(&p, slots), nullptr);
    const size_t r = c.out.size();
    std::vector<int64_t> idx(r, 0);
    for (size_t k = 0; k < y.size(); ++k) {
      auto offset = [&](const Shape& s) {
        size_t off = 0;
        for (size_t d = 0; d < s.size(); ++d) {
          int64_t i = s[d] == 1 ? 0 : idx[r - s.size() + d];
          off = off * static_cast<size_t>(s[d]) + static_cast<size_t>(i);
        }
        return off;
      };
      EXPECT_EQ(y[k], a[offset(c.a)] + b[offset(c.b)]) << shapeString(c.a) << " + " << shapeString(c.b) << " at " << k;
      for (size_t d = r; d-- > 0;) {
        if (++idx[d] < c.out[d]) break;
        idx[d] = 0;
      }
    }
  }
  BinaryParams p;
  EXPECT_FALSE(makeBroadcast({2, 3}, {{2, 3}, {2}}, &p.bc));
}

TEST(EngineKernels, IntegerEdgeCases) {
  // Division by zero is an error, not a crash; INT64_MIN / -1 wraps.
  std::vector<int64_t> a = {7, INT64_MIN, -7}, b = {0, -1, 2}, y(3);
  BinaryParams p;
  ASSERT_TRUE(makeBroadcast({3}, {{3}, {3}}, &p.bc));
  p.a = 0;
  p.b = 1;
  p.out = 2;
  void* slots[3] = {a.data(), b.data(), y.data()};
  EXPECT_NE(binaryKernel(BinaryOp::kDiv, DType::kInt64)(&p, slots), nullptr);
  b[0] = 3;
  EXPECT_EQ(binaryKernel(BinaryOp::kDiv, DType::kInt64)(&p, slots), nullptr);
  EXPECT_EQ(y[0], 2);
  EXPECT_EQ(y[1], INT64_MIN);
  EXPECT_EQ(y[2], -3);
  // Saturating float -> int casts, NaN -> 0.
  std::vector<float> f = {1e30f, -1e30f, NAN, -2.7f};
  std::vector<int32_t> i(4);
  CastParams cp;
  cp.in = 0;
  cp.out = 1;
  cp.count = 4;
  void* cs[2] = {f.data(), i.data()};
  ASSERT_EQ(castKernel(DType::kFloat32, DType::kInt32)(&cp, cs), nullptr);
  EXPECT_EQ(i[0], INT32_MAX);
  EXPECT_EQ(i[1], INT32_MIN);
  EXPECT_EQ(i[2], 0);
  EXPECT_EQ(i[3], -2);
}

}  // namespace
}  // namespace engine
}  // namespace mlbridge
