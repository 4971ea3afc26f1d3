// The model behind the GCC plugin, reached through the C API only
// (mlbridge/mlbridge.h): a C compiler needs nothing else from mlbridge.
// No GCC header here, so this part builds and reads like any C API client.
#ifndef MLBRIDGE_INTEGRATIONS_GCC_ADVISOR_H
#define MLBRIDGE_INTEGRATIONS_GCC_ADVISOR_H

#include <stdint.h>

#include <string>

#include "mlbridge/mlbridge.h"

namespace mlbridge_gcc {

// The features of one loop, in the order of the runner's inputs. Each is an
// int64 tensor of shape [1] named by featureName().
enum Feature {
  kTripCount,      // iterations when GCC knows them as a constant, else -1
  kLoopDepth,      // 1 for an outermost loop
  kInnermost,      // 1 when the loop contains no other loop
  kLoopBlocks,     // basic blocks in the loop body
  kLoopStmts,      // GIMPLE statements in the body (debug statements excluded)
  kLoopLoads,      // statements that read memory (calls excluded)
  kLoopStores,     // statements that write memory (calls excluded)
  kLoopCalls,      // call statements
  kFnBlocks,       // basic blocks of the function
  kFnStmts,        // GIMPLE statements of the function
  kFnLoops,        // loops of the function
  kFeatureCount
};
const char* featureName(int feature);

// The one advice: the unroll factor for the loop (0: no hint, 1: do not
// unroll, N > 1: unroll N times).
constexpr const char* kAdviceName = "unroll";

// -fplugin-arg-mlbridge-KEY=VALUE, see docs/gcc-plugin.md.
struct Options {
  std::string runner;  // "onnx" or "pipe"; empty: from whichever of model/pipe is given
  std::string model;   // .onnx file (runner onnx)
  std::string pipe;    // channel base: BASE.in / BASE.out (runner pipe)
  std::string format = "bitstream";
  std::string log;     // JSON-lines decision log, appended to
  int32_t timeoutMs = 5000;
  int64_t maxUnroll = 64;
};
// Stores one plugin argument; false with a message for an unknown key or a bad value.
bool setOption(Options& options, const char* key, const char* value, std::string* error);

class Advisor {
 public:
  Advisor() = default;
  Advisor(const Advisor&) = delete;
  Advisor& operator=(const Advisor&) = delete;
  ~Advisor();

  // Creates the runner the options name; false with a message on failure.
  bool open(const Options& options, std::string* error);
  bool isOpen() const { return runner_ != nullptr; }
  // Asks for the unroll factor of one loop, in function `context`. Writes
  // straight into the runner's input buffers: nothing is allocated. A factor
  // outside [0, maxUnroll] is an error, never clamped silently.
  bool decide(const char* context, const int64_t (&features)[kFeatureCount], int64_t* factor,
              std::string* error);
  // Whether the session survived the last error (a model that refused one
  // request can still answer the next; a broken pipe cannot).
  bool usable() const { return runner_ != nullptr && !broken_; }
  // Ends the session cleanly; false with a message if the model did not see a clean end.
  bool close(std::string* error);

 private:
  bool fail(const char* what, std::string* error);

  mlb_runner* runner_ = nullptr;
  mlb_onnx_model* model_ = nullptr;
  int64_t* inputs_[kFeatureCount] = {};
  std::string context_;
  int64_t maxUnroll_ = 0;
  bool broken_ = false;
};

}  // namespace mlbridge_gcc

#endif  // MLBRIDGE_INTEGRATIONS_GCC_ADVISOR_H
