// What a module costs on disk, measured in-process: the module compiled to an
// object in memory with the compiler's own target machine, then its sections
// summed the way `mlbridge tune` and `corpus evaluate` count (stored bytes:
// every allocated section with contents, i.e. llvm-size's Berkeley text +
// data; `.text` beside it). Used to try candidate pass orders inside one
// compile and keep the smallest (docs/phase-ordering-policy.md).
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_OBJECT_SIZE_H
#define MLBRIDGE_INTEGRATIONS_LLVM_OBJECT_SIZE_H

#include <cstdint>
#include <string>

namespace llvm {
class Module;
class TargetMachine;
}  // namespace llvm

namespace mlbridge_llvm {

struct ObjectSize {
  uint64_t stored = 0;  // allocated sections with contents
  uint64_t text = 0;    // .text and .text.*
  // Position-independent code only: bytes of the dynamic relocations the
  // linker will add for this object's absolute addresses in allocated data
  // (a table of code pointers in .data.rel.ro: one Elf64_Rela each in the
  // shared library or PIE). The object does not store them; the program does.
  uint64_t dynamicRelocations = 0;

  // What the order policy compares: the bytes the program will hold for this object.
  uint64_t cost() const { return stored + dynamicRelocations; }
};

// Compiles `m` (consumed: code generation rewrites it) to an ELF object in
// memory and measures it. False, with the reason in *error, when the target
// cannot emit objects or the object is not ELF.
bool measureObject(llvm::Module& m, llvm::TargetMachine& tm, ObjectSize* out, std::string* error);

}  // namespace mlbridge_llvm

#endif  // MLBRIDGE_INTEGRATIONS_LLVM_OBJECT_SIZE_H
