//===- HostStubs.cpp - Host definitions of CUDA C++ device functions ------===//
//
// A kernel's body is also host code (rustc compiles every function for the
// host, and host-code emulation runs it there), so the host objects refer to
// each CUDA C++ function a kernel calls, and the system link needs a
// definition. Host code cannot run CUDA C++ device code, so the definition
// in the object written here calls cuda-device's DeviceSourceOnHost
// with the function's name, which panics with a message saying so: a
// host-emulated launch fails with it, instead of the link failing or the
// call doing nothing. The stub is unwind-table-carrying, so that panic
// unwinds through it like any Rust frame.
//===----------------------------------------------------------------------===//
#include "oxide/Abi.h"
#include "oxide/DeviceLinker.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Triple.h"

using namespace llvm;
using namespace oxide;

Error oxide::writeHostStubObject(const std::map<std::string, std::string> &Calls,
                                const std::string &Path) {
  LLVMInitializeX86TargetInfo();
  LLVMInitializeX86Target();
  LLVMInitializeX86TargetMC();
  LLVMInitializeX86AsmPrinter();
  LLVMContext Ctx;
  Module M("oxide-host-stubs", Ctx);
  Triple T("x86_64-unknown-linux-gnu");
  std::string Err;
  const Target *Tgt = TargetRegistry::lookupTarget(T, Err);
  if (!Tgt)
    return createStringError(inconvertibleErrorCode(),
                             "the x86-64 target is missing from this LLVM: " + Err);
  // A section per stub: the system link drops those nothing refers to
  // (libdevice functions MapMath called, which host code never names).
  TargetOptions TO;
  TO.FunctionSections = true;
  TO.DataSections = true;
  std::unique_ptr<TargetMachine> TM(Tgt->createTargetMachine(T, "x86-64", "", TO, Reloc::PIC_));
  M.setTargetTriple(T);
  M.setDataLayout(TM->createDataLayout());
  Type *Ptr = PointerType::getUnqual(Ctx);
  Type *Len = Type::getInt64Ty(Ctx);
  FunctionCallee OnHost =
      M.getOrInsertFunction(DeviceSourceOnHost, Type::getVoidTy(Ctx), Ptr, Len);
  cast<Function>(OnHost.getCallee())->setDoesNotReturn();
  for (const auto &[Name, File] : Calls) {
    std::string Text = Name + " (" + File + ")";
    Constant *Str = ConstantDataArray::getString(Ctx, Text, /*AddNull=*/false);
    auto *GV = new GlobalVariable(M, Str->getType(), true, GlobalValue::PrivateLinkage, Str,
                                  "oxide.device_source_name");
    // The arguments are never read: the stub only reports.
    Function *Stub = Function::Create(FunctionType::get(Type::getVoidTy(Ctx), false),
                                      GlobalValue::ExternalLinkage, Name, M);
    Stub->setUWTableKind(UWTableKind::Default);
    IRBuilder<> B(BasicBlock::Create(Ctx, "", Stub));
    B.CreateCall(OnHost, {GV, ConstantInt::get(Len, Text.size())});
    B.CreateUnreachable();
  }
  std::error_code EC;
  raw_fd_ostream OS(Path, EC);
  if (EC)
    return createStringError(inconvertibleErrorCode(), "cannot write " + Path + ": " + EC.message());
  legacy::PassManager PM;
  if (TM->addPassesToEmitFile(PM, OS, nullptr, CodeGenFileType::ObjectFile))
    return createStringError(inconvertibleErrorCode(), "cannot emit the host stubs");
  PM.run(M);
  return Error::success();
}
