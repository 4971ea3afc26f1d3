#include "object_size.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/Analysis/TargetTransformInfo.h>
#include <llvm/BinaryFormat/ELF.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#if __has_include(<llvm/TargetParser/Triple.h>)
#include <llvm/TargetParser/Triple.h>
#endif

namespace mlbridge_llvm {

bool measureObject(llvm::Module& m, llvm::TargetMachine& tm, ObjectSize* out, std::string* error) {
  llvm::SmallVector<char, 0> bytes;
  {
    llvm::raw_svector_ostream os(bytes);
    llvm::legacy::PassManager pm;
    // what clang's backend adds before the target's passes
    pm.add(new llvm::TargetLibraryInfoWrapperPass(llvm::Triple(m.getTargetTriple())));
    pm.add(llvm::createTargetTransformInfoWrapperPass(tm.getTargetIRAnalysis()));
    if (tm.addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile, /*DisableVerify=*/true)) {
      *error = "this target cannot emit objects";
      return false;
    }
    pm.run(m);
  }
  llvm::Expected<std::unique_ptr<llvm::object::ObjectFile>> obj = llvm::object::ObjectFile::createObjectFile(
      llvm::MemoryBufferRef(llvm::StringRef(bytes.data(), bytes.size()), "candidate"));
  if (!obj) {
    *error = "the object does not parse: " + llvm::toString(obj.takeError());
    return false;
  }
  const auto* elf = llvm::dyn_cast<llvm::object::ELFObjectFileBase>(obj->get());
  if (!elf) {
    *error = "not an ELF object (sizes are measured on ELF only)";
    return false;
  }
  ObjectSize size;
  // absolute 64-bit address relocations: a RELATIVE dynamic relocation each under PIC
  uint64_t absolute = 0;
  switch (elf->getEMachine()) {
    case llvm::ELF::EM_X86_64: absolute = llvm::ELF::R_X86_64_64; break;
    case llvm::ELF::EM_AARCH64: absolute = llvm::ELF::R_AARCH64_ABS64; break;
    default: break;  // not counted on other targets
  }
  bool pic = tm.isPositionIndependent();
  for (const llvm::object::ELFSectionRef s : elf->sections()) {
    if (pic && absolute) {
      llvm::Expected<llvm::object::section_iterator> target = s.getRelocatedSection();
      if (!target) {
        llvm::consumeError(target.takeError());
      } else if (*target != elf->section_end() &&
                 (llvm::object::ELFSectionRef(**target).getFlags() & llvm::ELF::SHF_ALLOC)) {
        for (const llvm::object::RelocationRef& r : s.relocations())
          if (r.getType() == absolute) size.dynamicRelocations += sizeof(llvm::ELF::Elf64_Rela);
      }
    }
    uint64_t n = s.getSize();
    if ((s.getFlags() & llvm::ELF::SHF_ALLOC) && s.getType() != llvm::ELF::SHT_NOBITS) size.stored += n;
    llvm::Expected<llvm::StringRef> name = s.getName();
    if (!name) {
      llvm::consumeError(name.takeError());
      continue;
    }
    if (*name == ".text" || name->starts_with(".text.")) size.text += n;
  }
  *out = size;
  return true;
}

}  // namespace mlbridge_llvm
