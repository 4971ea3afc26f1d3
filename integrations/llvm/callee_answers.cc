#include "callee_answers.h"

#include <llvm/IR/Attributes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/Module.h>

#include <cstdint>
#include <cstdio>
#include <utility>

namespace mlbridge_llvm {

std::string readCalleeFile(const std::string& path, const std::string& option, CalleeAnswers* out) {
  constexpr uint64_t kMaxBytes = 64u << 20;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return option + ": cannot open " + path;
  std::string data;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
    if (data.size() + n > kMaxBytes) {
      std::fclose(f);
      return option + ": " + path + " is larger than 64 MiB";
    }
    data.append(buf, n);
  }
  const bool readError = std::ferror(f) != 0;
  std::fclose(f);
  if (readError) return option + ": cannot read " + path;
  size_t line = 0, i = 0;
  while (i < data.size()) {
    size_t end = data.find('\n', i);
    if (end == std::string::npos) end = data.size();
    ++line;
    if (out->size() >= kMaxCallees) return option + ": more than 1048576 callees";
    const size_t tab = data.rfind('\t', end);
    if (tab == std::string::npos || tab < i || tab == i || tab + 2 != end || tab - i > kMaxCalleeName ||
        (data[tab + 1] != '0' && data[tab + 1] != '1'))
      return option + ": " + path + " line " + std::to_string(line) + ": expected NAME<TAB>0|1";
    (*out)[data.substr(i, tab - i)] = data[tab + 1] == '1';
    i = end + 1;
  }
  return "";
}

ForcedInlining::ForcedInlining(llvm::Module& m, const CalleeAnswers& answers) : m_(m) {
  if (answers.empty()) return;
  for (llvm::Function& f : m) {
    if (f.isDeclaration()) continue;
    auto it = answers.find(f.getName().str());
    if (it == answers.end()) continue;
    // the source's own attributes decide (and alwaysinline with noinline does not verify)
    if (f.hasFnAttribute(llvm::Attribute::AlwaysInline) || f.hasFnAttribute(llvm::Attribute::NoInline) ||
        f.hasFnAttribute(llvm::Attribute::OptimizeNone))
      continue;
    f.addFnAttr(it->second ? llvm::Attribute::AlwaysInline : llvm::Attribute::NoInline);
    added_.emplace_back(f.getName().str(), it->second);
  }
}

void ForcedInlining::undo() {
  // by name: the pass order may have deleted or replaced the function
  for (const auto& [name, always] : added_)
    if (llvm::Function* f = m_.getFunction(name))
      f->removeFnAttr(always ? llvm::Attribute::AlwaysInline : llvm::Attribute::NoInline);
  added_.clear();
}

}  // namespace mlbridge_llvm
