// The plugin's input files (tuning files, order policies) are JSON with a
// format name, a version and the LLVM major version they were made for. One
// reader checks all three and the size limit, so both files refuse the same
// things with the same words.
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_PLUGIN_FILE_H
#define MLBRIDGE_INTEGRATIONS_LLVM_PLUGIN_FILE_H

#include <llvm/Support/JSON.h>

#include <cstdint>
#include <string>

namespace mlbridge_llvm {

struct PluginFileKind {
  const char* format;  // the "format" value, e.g. "mlbridge-tuning"
  const char* what;    // for messages: "a tuning file"
  int64_t version;     // the one version this plugin reads
  const char* redo;    // what to do for another LLVM: "tune again"
  uint64_t maxBytes;   // a larger file is refused
};

// Reads PATH into *out and checks format, version and llvm_major. Returns ""
// or why the file is refused (one line, no path).
std::string readPluginFile(const std::string& path, const PluginFileKind& kind, llvm::json::Value* out);

}  // namespace mlbridge_llvm

#endif  // MLBRIDGE_INTEGRATIONS_LLVM_PLUGIN_FILE_H
