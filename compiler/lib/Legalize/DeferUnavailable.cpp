//===- DeferUnavailable.cpp - A stub the target lacks, judged after O3 -----===//
//
// See DeferUnavailable.h.
//===----------------------------------------------------------------------===//
#include "DeferUnavailable.h"
#include "oxide/Abi.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Metadata.h"
#include "llvm/IR/Module.h"

using namespace llvm;

void oxide::deferUnavailable(Function &Stub, StringRef Name, StringRef Message, StringRef Fix,
                             StringRef Test, function_ref<std::string(const CallInst &)> Where) {
  Module &M = *Stub.getParent();
  LLVMContext &Ctx = M.getContext();
  FunctionCallee Placeholder =
      M.getOrInsertFunction(("__oxide_unavailable." + Name).str(), Stub.getFunctionType());
  auto *Declared = cast<Function>(Placeholder.getCallee());
  Declared->addFnAttr(UnavailableStubAttr, (Message + "\n" + Fix + "\n" + Test).str());
  Declared->setDoesNotThrow();
  SmallVector<CallInst *> Calls;
  for (User *U : Stub.users())
    if (auto *C = dyn_cast<CallInst>(U); C && C->getCalledFunction() == &Stub)
      Calls.push_back(C);
  for (CallInst *C : Calls) {
    std::string Line = Where(*C);
    C->setCalledFunction(Placeholder);
    C->setAttributes(AttributeList());
    C->setMetadata(UnavailableMetadata, MDNode::get(Ctx, MDString::get(Ctx, Line)));
  }
}
