// A plugin option's value: the command line's if given, else the environment
// variable's (drivers such as `clang -fpass-plugin=` and lld do not pass plugin
// options through), else a default. Shared by every pass of the plugin that
// reads its options when it runs.
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_OPTION_OR_ENV_H
#define MLBRIDGE_INTEGRATIONS_LLVM_OPTION_OR_ENV_H

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/CommandLine.h>

#include <cstdlib>
#include <string>

namespace mlbridge_llvm {

inline std::string pick(const llvm::cl::opt<std::string>& opt, const char* env, const char* fallback) {
  if (opt.getNumOccurrences()) return opt;
  const char* v = std::getenv(env);
  return v && *v ? v : fallback;
}

// A number above 1,000,000 or not a number in the environment: the fallback.
inline unsigned pickUnsigned(const llvm::cl::opt<unsigned>& opt, const char* env, unsigned fallback) {
  if (opt.getNumOccurrences()) return opt;
  const char* v = std::getenv(env);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  unsigned long n = std::strtoul(v, &end, 10);
  return (*end == '\0' && n <= 1000000) ? static_cast<unsigned>(n) : fallback;
}

// Set and not "0" in the environment: true.
inline bool pickBool(const llvm::cl::opt<bool>& opt, const char* env, bool fallback) {
  if (opt.getNumOccurrences()) return opt;
  const char* v = std::getenv(env);
  return v && *v ? llvm::StringRef(v) != "0" : fallback;
}

}  // namespace mlbridge_llvm

#endif  // MLBRIDGE_INTEGRATIONS_LLVM_OPTION_OR_ENV_H
