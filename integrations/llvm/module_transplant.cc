#include "module_transplant.h"

#include <llvm/IR/Comdat.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/GlobalAlias.h>
#include <llvm/IR/GlobalIFunc.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/Module.h>

#include <vector>

namespace mlbridge_llvm {

void replaceModuleContents(llvm::Module& dst, std::unique_ptr<llvm::Module> src) {
  // 1. Empty DST: every global value unused (its uses, in code, initializers
  // and metadata, become poison), then without operands, then deleted.
  std::vector<llvm::GlobalValue*> values;
  for (llvm::GlobalValue& gv : dst.global_values()) values.push_back(&gv);
  for (llvm::GlobalValue* gv : values) gv->replaceAllUsesWith(llvm::PoisonValue::get(gv->getType()));
  for (llvm::GlobalValue* gv : values) gv->dropAllReferences();
  for (llvm::GlobalValue* gv : values) gv->eraseFromParent();
  while (!dst.named_metadata_empty()) dst.eraseNamedMetadata(&*dst.named_metadata_begin());
  dst.getComdatSymbolTable().clear();
  // 2. SRC's comdats recreated in DST (the moved objects must not point into SRC's table).
  for (llvm::GlobalObject& go : src->global_objects()) {
    if (llvm::Comdat* c = go.getComdat()) {
      llvm::Comdat* d = dst.getOrInsertComdat(c->getName());
      d->setSelectionKind(c->getSelectionKind());
      go.setComdat(d);
    }
  }
  // 3. Moved, in order: removing a value from SRC takes it out of SRC's symbol
  // table, inserting it into DST puts it in DST's (names are free: DST is empty).
  dst.getFunctionList().splice(dst.getFunctionList().end(), src->getFunctionList());
  std::vector<llvm::GlobalVariable*> vars;
  for (llvm::GlobalVariable& g : src->globals()) vars.push_back(&g);
  for (llvm::GlobalVariable* g : vars) {
    src->removeGlobalVariable(g);
    dst.insertGlobalVariable(g);
  }
  std::vector<llvm::GlobalAlias*> aliases;
  for (llvm::GlobalAlias& a : src->aliases()) aliases.push_back(&a);
  for (llvm::GlobalAlias* a : aliases) {
    src->removeAlias(a);
    dst.insertAlias(a);
  }
  std::vector<llvm::GlobalIFunc*> ifuncs;
  for (llvm::GlobalIFunc& f : src->ifuncs()) ifuncs.push_back(&f);
  for (llvm::GlobalIFunc* f : ifuncs) {
    src->removeIFunc(f);
    dst.insertIFunc(f);
  }
  for (llvm::NamedMDNode& n : src->named_metadata()) {
    llvm::NamedMDNode* d = dst.getOrInsertNamedMetadata(n.getName());
    for (llvm::MDNode* op : n.operands()) d->addOperand(op);
  }
  dst.setModuleInlineAsm(src->getModuleInlineAsm());
}

}  // namespace mlbridge_llvm
