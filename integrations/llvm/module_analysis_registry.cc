#include "module_analysis_registry.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace mlbridge_llvm {

namespace {

struct Entry {
  llvm::ModuleAnalysisManager* mam;
  std::thread::id owner;  // only the registering thread may look inside
};

std::mutex registryMutex;
std::vector<Entry>& registry() {
  static std::vector<Entry>* entries = new std::vector<Entry>();  // never destroyed: no exit-order issues
  return *entries;
}

// Registered while it lives; copies share it, so the last copy (the one the
// manager owns) unregisters when the manager is destroyed, on any thread.
class Registration {
 public:
  explicit Registration(llvm::ModuleAnalysisManager* mam) : mam_(mam) {
    std::lock_guard<std::mutex> lock(registryMutex);
    registry().push_back({mam, std::this_thread::get_id()});
  }
  ~Registration() {
    std::lock_guard<std::mutex> lock(registryMutex);
    std::vector<Entry>& r = registry();
    r.erase(std::remove_if(r.begin(), r.end(), [&](const Entry& e) { return e.mam == mam_; }), r.end());
  }
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;

 private:
  llvm::ModuleAnalysisManager* mam_;
};

class ModuleAnalysisAnchor : public llvm::AnalysisInfoMixin<ModuleAnalysisAnchor> {
 public:
  struct Result {};
  explicit ModuleAnalysisAnchor(llvm::ModuleAnalysisManager* mam) : reg_(std::make_shared<Registration>(mam)) {}
  Result run(llvm::Module&, llvm::ModuleAnalysisManager&) { return {}; }

 private:
  friend llvm::AnalysisInfoMixin<ModuleAnalysisAnchor>;
  static llvm::AnalysisKey Key;
  std::shared_ptr<Registration> reg_;
};

llvm::AnalysisKey ModuleAnalysisAnchor::Key;

}  // namespace

void registerModuleAnalysisAnchor(llvm::ModuleAnalysisManager& mam) {
  mam.registerPass([&mam] { return ModuleAnalysisAnchor(&mam); });
}

llvm::ModuleAnalysisManager* findModuleAnalysisManager(llvm::Module& m, llvm::FunctionAnalysisManager& fam) {
  std::lock_guard<std::mutex> lock(registryMutex);
  for (const Entry& e : registry()) {
    if (e.owner != std::this_thread::get_id()) continue;
    auto* proxy = e.mam->getCachedResult<llvm::FunctionAnalysisManagerModuleProxy>(m);
    if (proxy && &proxy->getManager() == &fam) return e.mam;
  }
  return nullptr;
}

}  // namespace mlbridge_llvm
