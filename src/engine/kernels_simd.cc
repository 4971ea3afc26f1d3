// Float32 kernels with explicit vectors (kernels_isa.inc), expanded once for
// the x86-64 baseline (SSE2) and, on x86-64 with GCC/Clang, once more for
// AVX2+FMA behind a CPU check. Other architectures get the baseline
// expansion compiled for their own vector unit (4 lanes).
#include <cmath>
#include <cstring>

#include "engine/kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MLBRIDGE_ENGINE_HAVE_AVX2 1
#include <immintrin.h>
#endif

namespace mlbridge {
namespace engine {

// ---- baseline: 4 lanes, 2 panels per block (8 accumulators) -------------------
#define ISA_NS sse2
#define ISA_ATTR
#define ISA_W 4
#define ISA_G 2
#define ISA_FMA(a, b, c) ((a) * (b) + (c))
#include "engine/kernels_isa.inc"
#undef ISA_NS
#undef ISA_ATTR
#undef ISA_W
#undef ISA_G
#undef ISA_FMA

#if MLBRIDGE_ENGINE_HAVE_AVX2
// ---- AVX2 + FMA: 8 lanes, 4 panels per block (8 accumulators) --------------
#define ISA_NS avx2
#define ISA_ATTR __attribute__((target("avx2,fma")))
#define ISA_W 8
#define ISA_G 4
#define ISA_FMA(a, b, c) ((V)_mm256_fmadd_ps((__m256)(a), (__m256)(b), (__m256)(c)))
#include "engine/kernels_isa.inc"
#undef ISA_NS
#undef ISA_ATTR
#undef ISA_W
#undef ISA_G
#undef ISA_FMA
#endif

namespace {

const SimdKernels kBaseline = {"sse2", sse2::denseKernel, sse2::unaryKernel, sse2::softmaxKernel, sse2::rnnKernel};
#if MLBRIDGE_ENGINE_HAVE_AVX2
const SimdKernels kAvx2 = {"avx2", avx2::denseKernel, avx2::unaryKernel, avx2::softmaxKernel, avx2::rnnKernel};

bool cpuHasAvx2Fma() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return has;
}
#endif

}  // namespace

const SimdKernels& simdKernels(bool portable) {
#if MLBRIDGE_ENGINE_HAVE_AVX2
  if (!portable && cpuHasAvx2Fma()) return kAvx2;
#else
  (void)portable;
#endif
  return kBaseline;
}

size_t rnnScratchBytes(const RnnParams& p) {
  const size_t G = p.gru ? 3 : 4;
  const size_t H = p.hidden, B = p.batch;
  size_t floats = p.seq * B * G * H + B * G * H + 4 * B * H;
  return floats * sizeof(float);
}

BufferPtr packPanels(const float* b, bool transposed, size_t K, size_t N, float scale) {
  const size_t P = panelCount(N);
  std::shared_ptr<Buffer> out = Buffer::allocate(P * K * kPanel * sizeof(float));
  if (!out) return nullptr;
  float* dst = out->as<float>();
  for (size_t p = 0; p < P; ++p)
    for (size_t k = 0; k < K; ++k)
      for (size_t j = 0; j < kPanel; ++j) {
        size_t n = p * kPanel + j;
        if (n >= N) continue;
        float w = transposed ? b[n * K + k] : b[k * N + n];
        dst[(p * K + k) * kPanel + j] = w * scale;
      }
  return out;
}

BufferPtr packRows(const float* b, bool transposed, size_t K, size_t N, float scale) {
  std::shared_ptr<Buffer> out = Buffer::allocate(N * K * sizeof(float));
  if (!out) return nullptr;
  float* dst = out->as<float>();
  for (size_t n = 0; n < N; ++n)
    for (size_t k = 0; k < K; ++k) dst[n * K + k] = (transposed ? b[n * K + k] : b[k * N + n]) * scale;
  return out;
}

BufferPtr padBias(const float* bias, size_t n) {
  std::shared_ptr<Buffer> out = Buffer::allocate(panelCount(n) * kPanel * sizeof(float));
  if (!out) return nullptr;
  if (n) std::memcpy(out->data(), bias, n * sizeof(float));
  return out;
}

}  // namespace engine
}  // namespace mlbridge
