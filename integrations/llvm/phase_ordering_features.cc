#include "phase_ordering_features.h"

#include <llvm/IR/Function.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Module.h>

#include <algorithm>

namespace mlbridge_llvm {

namespace {

// Tensor order; the names are part of the model contract (docs/phase-ordering.md).
enum Feature : size_t {
  kFunctions,          // defined functions
  kDeclarations,       // declared-only functions
  kGlobalVariables,
  kBasicBlocks,
  kInstructions,
  kMaxFunctionInstructions,
  kMaxFunctionBlocks,
  kInternalFunctions,  // defined with local linkage (inlining / deletion candidates)
  kArguments,          // formal arguments of defined functions
  kPhis,
  kAllocas,
  kLoads,
  kStores,
  kCalls,              // call/invoke of a non-intrinsic
  kCallsToDefined,     // direct calls of a function defined in this module
  kIntrinsicCalls,
  kBranches,
  kConditionalBranches,
  kSwitches,
  kReturns,
  kUnreachables,
  kIntArith,           // add sub mul div rem
  kFloatArith,         // fadd fsub fmul fdiv frem fneg
  kBitwise,            // shifts and logic
  kCompares,
  kCasts,
  kGeps,
  kSelects,
  kAggregateVectorOps, // extract/insert value/element, shufflevector
  kOtherInstructions,
  kSinglePredBlocks,
  kTrivialBlocks,      // a block holding only its terminator
  kCount
};
static_assert(kCount == kNumPhaseOrderFeatures, "feature table and enum disagree");
static_assert(kInstructions == kPhaseOrderInstructionsFeature, "instruction feature moved");

const char* const kNames[kCount] = {
    "functions",       "declarations",      "global_variables",     "basic_blocks",
    "instructions",    "max_function_instructions", "max_function_blocks", "internal_functions",
    "arguments",       "phis",              "allocas",              "loads",
    "stores",          "calls",             "calls_to_defined",     "intrinsic_calls",
    "branches",        "conditional_branches", "switches",          "returns",
    "unreachables",    "int_arith",         "float_arith",          "bitwise",
    "compares",        "casts",             "geps",                 "selects",
    "aggregate_vector_ops", "other_instructions", "single_pred_blocks", "trivial_blocks",
};

size_t classify(const llvm::Instruction& inst) {
  if (inst.isCast()) return kCasts;
  switch (inst.getOpcode()) {
    case llvm::Instruction::PHI: return kPhis;
    case llvm::Instruction::Alloca: return kAllocas;
    case llvm::Instruction::Load: return kLoads;
    case llvm::Instruction::Store: return kStores;
    case llvm::Instruction::Br: return kBranches;
    case llvm::Instruction::Switch: return kSwitches;
    case llvm::Instruction::Ret: return kReturns;
    case llvm::Instruction::Unreachable: return kUnreachables;
    case llvm::Instruction::Add: case llvm::Instruction::Sub: case llvm::Instruction::Mul:
    case llvm::Instruction::UDiv: case llvm::Instruction::SDiv:
    case llvm::Instruction::URem: case llvm::Instruction::SRem: return kIntArith;
    case llvm::Instruction::FAdd: case llvm::Instruction::FSub: case llvm::Instruction::FMul:
    case llvm::Instruction::FDiv: case llvm::Instruction::FRem: case llvm::Instruction::FNeg: return kFloatArith;
    case llvm::Instruction::Shl: case llvm::Instruction::LShr: case llvm::Instruction::AShr:
    case llvm::Instruction::And: case llvm::Instruction::Or: case llvm::Instruction::Xor: return kBitwise;
    case llvm::Instruction::ICmp: case llvm::Instruction::FCmp: return kCompares;
    case llvm::Instruction::GetElementPtr: return kGeps;
    case llvm::Instruction::Select: return kSelects;
    case llvm::Instruction::ExtractValue: case llvm::Instruction::InsertValue:
    case llvm::Instruction::ExtractElement: case llvm::Instruction::InsertElement:
    case llvm::Instruction::ShuffleVector: return kAggregateVectorOps;
    default: return kOtherInstructions;
  }
}

}  // namespace

const char* phaseOrderFeatureName(size_t i) { return i < kCount ? kNames[i] : ""; }

void computePhaseOrderFeatures(const llvm::Module& m, int64_t* out) {
  std::fill(out, out + kCount, int64_t(0));
  out[kGlobalVariables] = static_cast<int64_t>(m.global_size());
  for (const llvm::Function& f : m) {
    if (f.isDeclaration()) {
      ++out[kDeclarations];
      continue;
    }
    ++out[kFunctions];
    if (f.hasLocalLinkage()) ++out[kInternalFunctions];
    out[kArguments] += static_cast<int64_t>(f.arg_size());
    int64_t blocks = 0, insts = 0;
    for (const llvm::BasicBlock& bb : f) {
      ++blocks;
      if (bb.getSinglePredecessor()) ++out[kSinglePredBlocks];
      if (!bb.empty() && &bb.front() == bb.getTerminator()) ++out[kTrivialBlocks];
      for (const llvm::Instruction& inst : bb) {
        ++insts;
        if (const auto* call = llvm::dyn_cast<llvm::CallBase>(&inst)) {
          const llvm::Function* callee = call->getCalledFunction();
          if (callee && callee->isIntrinsic()) {
            ++out[kIntrinsicCalls];
          } else {
            ++out[kCalls];
            if (callee && !callee->isDeclaration()) ++out[kCallsToDefined];
          }
          continue;
        }
        size_t cls = classify(inst);
        ++out[cls];
        if (cls == kBranches && llvm::cast<llvm::BranchInst>(inst).isConditional()) ++out[kConditionalBranches];
      }
    }
    out[kBasicBlocks] += blocks;
    out[kInstructions] += insts;
    out[kMaxFunctionInstructions] = std::max(out[kMaxFunctionInstructions], insts);
    out[kMaxFunctionBlocks] = std::max(out[kMaxFunctionBlocks], blocks);
  }
}

}  // namespace mlbridge_llvm
