// Per callee, one inlining answer for every call of it ("inline all calls of
// f, so f can go"; "keep f out of line"): the joint decisions of the room
// search and of `mlbridge tune` (docs/tuning.md). Two ways to apply them:
//  * through the plugin's inline advisor (-mlbridge-inline-callees, inliner.cc),
//    where an inliner asks LLVM's InlineAdvisorAnalysis;
//  * as function attributes while a pass order runs (ForcedInlining): every
//    inliner honours alwaysinline/noinline, including a bare cgscc(inline),
//    which never asks an advisor.
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_CALLEE_ANSWERS_H
#define MLBRIDGE_INTEGRATIONS_LLVM_CALLEE_ANSWERS_H

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

namespace llvm {
class Module;
}  // namespace llvm

namespace mlbridge_llvm {

// callee name -> inline every call of it (true) or none (false)
using CalleeAnswers = std::unordered_map<std::string, bool>;

// At most this many callees, each name at most kMaxCalleeName bytes: a file
// comes from a user.
constexpr size_t kMaxCallees = size_t(1) << 20;
constexpr size_t kMaxCalleeName = 4096;

// A file of NAME<TAB>0|1 lines (at most 64 MiB) into *OUT; "" on success,
// else why not, starting with OPTION (the option that named the file).
std::string readCalleeFile(const std::string& path, const std::string& option, CalleeAnswers* out);

// The answers as attributes on the module's functions while a pass order
// runs: alwaysinline for 1, noinline for 0. A function whose own attributes
// already decide (alwaysinline, noinline, optnone) keeps them. undo() takes
// back exactly what apply() added, so the attributes never reach code
// generation or a later link.
class ForcedInlining {
 public:
  ForcedInlining(llvm::Module& m, const CalleeAnswers& answers);
  void undo();
  // functions of the module the answers named and changed
  size_t applied() const { return added_.size(); }

 private:
  llvm::Module& m_;
  std::vector<std::pair<std::string, bool>> added_;  // function name, alwaysinline (else noinline)
};

}  // namespace mlbridge_llvm

#endif  // MLBRIDGE_INTEGRATIONS_LLVM_CALLEE_ANSWERS_H
