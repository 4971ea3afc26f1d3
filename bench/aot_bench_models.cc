// Writes the AOT benchmark's models (bench/mlp_floor.h) for mlbridge-aot:
//   mlbridge-aot-bench-models outdir   -> outdir/aot_bench_mlp.onnx, outdir/aot_bench_fc50k.onnx
#include <cstdio>
#include <string>

#include "mlp_floor.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: mlbridge-aot-bench-models outdir\n");
    return 2;
  }
  mlbridge_bench::BenchModels b = mlbridge_bench::makeBenchModels();
  for (auto [name, bytes] : {std::make_pair("aot_bench_mlp.onnx", &b.mlpOnnx), std::make_pair("aot_bench_fc50k.onnx", &b.fcOnnx)}) {
    std::string path = std::string(argv[1]) + "/" + name;
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f || std::fwrite(bytes->data(), 1, bytes->size(), f) != bytes->size()) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      return 1;
    }
    std::fclose(f);
  }
  return 0;
}
