#include "plugin_file.h"

#include <llvm/Config/llvm-config.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>

#include <optional>
#include <utility>

namespace mlbridge_llvm {

std::string readPluginFile(const std::string& path, const PluginFileKind& kind, llvm::json::Value* out) {
  uint64_t size = 0;
  if (std::error_code ec = llvm::sys::fs::file_size(path, size)) return "cannot read it: " + ec.message();
  if (size > kind.maxBytes)
    return "it has " + std::to_string(size) + " bytes (limit " + std::to_string(kind.maxBytes) + ")";
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buf) return "cannot read it: " + buf.getError().message();
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse((*buf)->getBuffer());
  if (!parsed) return "damaged (not JSON: " + llvm::toString(parsed.takeError()) + ")";
  const llvm::json::Object* root = parsed->getAsObject();
  if (!root) return "damaged (not a JSON object)";
  std::optional<llvm::StringRef> format = root->getString("format");
  if (!format || *format != kind.format)
    return std::string("not ") + kind.what + " (no \"format\": \"" + kind.format + "\")";
  std::optional<int64_t> version = root->getInteger("version");
  if (!version || *version != kind.version)
    return "version " + (version ? std::to_string(*version) : std::string("missing")) + ", this plugin reads " +
           std::to_string(kind.version);
  std::optional<int64_t> major = root->getInteger("llvm_major");
  if (!major || *major != LLVM_VERSION_MAJOR)
    return "written for LLVM " + (major ? std::to_string(*major) : std::string("(missing)")) + ", this is LLVM " +
           std::to_string(LLVM_VERSION_MAJOR) + ": " + kind.redo + " with this compiler";
  *out = std::move(*parsed);
  return "";
}

}  // namespace mlbridge_llvm
