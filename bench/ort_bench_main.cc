// mlbridge-ort-bench: ONNX Runtime through OnnxRuntimeRunner (bench/ort_bench.cc).
//
//   mlbridge-ort-bench [--iterations N] [--threads N]
//
// A separate file because it replaces the global operator new to count
// allocations.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>

#include "ort_bench.h"

// Counts operator new calls (ONNX Runtime allocates with it) to report
// allocations per evaluate().
namespace {
std::atomic<long> gNews{0};
long newCount() { return gNews.load(std::memory_order_relaxed); }
}  // namespace

void* operator new(std::size_t n) {
  gNews.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  gNews.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n ? n : 1);
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void* operator new(std::size_t n, std::align_val_t al) {
  gNews.fetch_add(1, std::memory_order_relaxed);
  const std::size_t a = static_cast<std::size_t>(al);
  if (void* p = std::aligned_alloc(a, (n + a - 1) / a * a)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t al) { return operator new(n, al); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

int main(int argc, char** argv) {
  mlbridge::bench::OrtBenchOptions o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--iterations" && i + 1 < argc) {
      o.iterations = std::atoi(argv[++i]);
    } else if (a == "--threads" && i + 1 < argc) {
      o.intraOpThreads = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: mlbridge-ort-bench [--iterations N] [--threads N]\n");
      return 2;
    }
  }
  o.allocationCount = newCount;
  mlbridge::Status s = mlbridge::bench::runOrtBench(o, nullptr, stdout);
  if (!s.ok()) {
    std::fprintf(stderr, "mlbridge-ort-bench: %s\n", s.toString().c_str());
    return 1;
  }
  return 0;
}
