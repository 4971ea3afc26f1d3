#include "decision_log.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

namespace mlbridge_gcc {
namespace {

void putJsonString(FILE* f, const char* s) {
  fputc('"', f);
  for (const unsigned char* p = reinterpret_cast<const unsigned char*>(s); *p != 0; ++p) {
    if (*p == '"' || *p == '\\')
      fprintf(f, "\\%c", *p);
    else if (*p < 0x20)
      fprintf(f, "\\u%04x", *p);
    else
      fputc(*p, f);
  }
  fputc('"', f);
}

}  // namespace

DecisionLog::~DecisionLog() {
  if (file_ != nullptr) fclose(file_);
}

bool DecisionLog::open(const std::string& path, std::string* error) {
  file_ = fopen(path.c_str(), "a");
  if (file_ == nullptr) {
    *error = "cannot open the decision log '" + path + "': " + strerror(errno);
    return false;
  }
  path_ = path;
  return true;
}

void DecisionLog::write(const LoopRecord& r) {
  if (file_ == nullptr) return;
  fputs("{\"file\":", file_);
  putJsonString(file_, r.file);
  fputs(",\"function\":", file_);
  putJsonString(file_, r.function);
  fprintf(file_, ",\"line\":%d,\"loop\":%d", r.line, r.loop);
  for (int i = 0; i < kFeatureCount; ++i) fprintf(file_, ",\"%s\":%" PRId64, featureName(i), r.features[i]);
  fprintf(file_, ",\"%s\":%" PRId64 ",\"applied\":%s", kAdviceName, r.unroll, r.applied ? "true" : "false");
  if (!r.error.empty()) {
    fputs(",\"error\":", file_);
    putJsonString(file_, r.error.c_str());
  }
  fputs("}\n", file_);
}

bool DecisionLog::close(std::string* error) {
  if (file_ == nullptr) return true;
  bool ok = !ferror(file_);
  ok = fclose(file_) == 0 && ok;
  file_ = nullptr;
  if (!ok) *error = "writing the decision log '" + path_ + "' failed";
  return ok;
}

}  // namespace mlbridge_gcc
