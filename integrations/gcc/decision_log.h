// The plugin's decision log (-fplugin-arg-mlbridge-log=FILE): one JSON object
// per line and per loop, so tests and users can check what the model saw and
// what GCC applied. Appends: one file can collect a whole build.
#ifndef MLBRIDGE_INTEGRATIONS_GCC_DECISION_LOG_H
#define MLBRIDGE_INTEGRATIONS_GCC_DECISION_LOG_H

#include <stdint.h>
#include <stdio.h>

#include <string>

#include "advisor.h"

namespace mlbridge_gcc {

struct LoopRecord {
  const char* file = "";
  const char* function = "";
  int line = 0;
  int loop = 0;                          // GCC's loop number within the function
  int64_t features[kFeatureCount] = {};
  int64_t unroll = -1;                   // the model's answer; -1 when there is none
  bool applied = false;                  // the answer was written to the loop
  std::string error;                     // why there is no answer (empty when there is one)
};

class DecisionLog {
 public:
  DecisionLog() = default;
  DecisionLog(const DecisionLog&) = delete;
  DecisionLog& operator=(const DecisionLog&) = delete;
  ~DecisionLog();

  // False with a message when the file cannot be opened for appending.
  bool open(const std::string& path, std::string* error);
  bool isOpen() const { return file_ != nullptr; }
  void write(const LoopRecord& record);
  // False with a message if anything could not be written.
  bool close(std::string* error);

 private:
  FILE* file_ = nullptr;
  std::string path_;
};

}  // namespace mlbridge_gcc

#endif  // MLBRIDGE_INTEGRATIONS_GCC_DECISION_LOG_H
