// The execution plan: the graph IR lowered to a flat list of kernel calls
// over numbered buffer slots, with every intermediate buffer placed in one
// arena at load (liveness-based reuse). A Program is immutable and shared by
// every runner; each runner owns an arena of arenaBytes and a slot table.
//
// Lowering (lower.cc) fuses Gemm/MatMul with a following bias Add,
// activation (Relu, LeakyRelu, Tanh, Sigmoid, Clip, HardSigmoid) and
// Softmax/LogSoftmax over the row, pre-packs constant weights into the
// layout the dense kernel streams (kernels.h, packPanels), and turns view ops
// (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout) into slot aliases.
#ifndef MLBRIDGE_SRC_ENGINE_PROGRAM_H
#define MLBRIDGE_SRC_ENGINE_PROGRAM_H

#include <memory>
#include <string>
#include <vector>

#include "engine/common.h"
#include "engine/graph.h"
#include "engine/kernels.h"

namespace mlbridge {
namespace engine {

struct Slot {
  enum class Kind { kConstant, kInput, kArena };
  Kind kind = Kind::kArena;
  const void* constant = nullptr;  // kConstant: model-owned, read-only
  int input = -1;                  // kInput: index into Graph::inputs
  size_t offset = 0;               // kArena: byte offset in the runner's arena
  size_t bytes = 0;
  int value = -1;                  // IR value id, or -1 (scratch, packed weights)
};

struct Step {
  KernelFn fn = nullptr;
  const void* params = nullptr;  // owned by Program::paramStore
  const char* kernel = "";       // name, for dumps ("dense", "binary", ...)
  int node = -1;                 // index into Graph::nodes
  std::vector<int> reads, writes;  // slots (planning, dumps)
};

struct CompileOptions {
  bool portableKernels = false;  // baseline-ISA kernels only (no AVX2)
  size_t maxArenaBytes = size_t(1) << 30;
};

class Program {
 public:
  std::vector<Slot> slots;
  std::vector<Step> steps;
  size_t arenaBytes = 0;
  std::vector<int> inputSlots;    // per graph input
  std::vector<int> outputSlots;   // per graph output
  std::vector<size_t> outputBytes;
  std::vector<std::string> stepWhat;  // per step: the node description, for errors
  const char* isa = "";
  // Ownership of everything the slots and params point to.
  std::vector<std::shared_ptr<const void>> paramStore;
  std::vector<BufferPtr> constants;

  // Fills `table` (slots.size() entries) for one runner. `arena` holds
  // arenaBytes (64-byte aligned); inputs[i] is graph input i's buffer.
  void bind(unsigned char* arena, const void* const* inputs, void** table) const;
  // Runs every step. On a kernel error returns its message and sets *failed.
  const char* run(void* const* table, size_t* failed) const;
  // Copies the outputs from bound slots into outputs[i] (outputBytes[i] each).
  void copyOutputs(void* const* table, void* const* outputs) const;
  std::string dump(const Graph& g) const;
};

// Lowers a whole graph (after import).
StatusOr<std::shared_ptr<const Program>> compileProgram(const Graph& g, const CompileOptions& options);

// Runs one node whose inputs are all constant (constant folding at import):
// fills outs[i] for each of the node's outputs (empty Tensor for omitted ones).
Status evaluateConstantNode(const Graph& g, const Node& node, size_t maxBytes, std::vector<Tensor>* outs);

}  // namespace engine
}  // namespace mlbridge

#endif  // MLBRIDGE_SRC_ENGINE_PROGRAM_H
