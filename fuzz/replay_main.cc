// main() for fuzz targets built without libFuzzer (g++, the sanitizer
// builds): runs the target once on each file given, or on each file of each
// folder given. Options starting with '-' (libFuzzer's) are ignored, so one
// ctest command line serves both builds.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

int runFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return 1;
  }
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // A copy of exactly `size` bytes, so that ASan sees reads past the end.
  std::vector<uint8_t> exact(bytes);
  LLVMFuzzerTestOneInput(exact.empty() ? nullptr : exact.data(), exact.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int failures = 0, runs = 0;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (!arg.empty() && arg[0] == '-') continue;
    struct stat st;
    if (stat(arg.c_str(), &st) != 0) {
      std::fprintf(stderr, "no such file or folder: %s\n", arg.c_str());
      ++failures;
      continue;
    }
    if (!S_ISDIR(st.st_mode)) {
      failures += runFile(arg);
      ++runs;
      continue;
    }
    std::vector<std::string> names;
    if (DIR* d = opendir(arg.c_str())) {
      while (dirent* e = readdir(d))
        if (e->d_name[0] != '.') names.push_back(e->d_name);
      closedir(d);
    }
    std::sort(names.begin(), names.end());
    for (const std::string& n : names) {
      failures += runFile(arg + "/" + n);
      ++runs;
    }
  }
  std::printf("replayed %d inputs, %d unreadable\n", runs, failures);
  return failures ? 1 : 0;
}
