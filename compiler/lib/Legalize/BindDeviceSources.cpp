//===- BindDeviceSources.cpp - Rust declarations bound to CUDA C++ --------===//
//
// A kernel may call a function declared in a Rust `extern "C"` block whose
// body is CUDA C++ device code from the build's device sources
// (DeviceSources.cpp). After SelectReachable the module holds exactly the
// declarations the kernels reach; each one a device source defines gets
// DeviceSourceAttr (its value: the file), so RejectUnsupported accepts the
// call, and a row of DeviceSourcesMetadata, from which the device linker makes
// the function's host stub (HostStubs.cpp). The call itself is unchanged: it
// is a C call, which the PTX link (LinkPtx.cpp) binds to nvcc's definition
// after checking that both agree on the prototype.
//
// libdevice's functions may be declared by name too (`fn __nv_sinf(x: f32) ->
// f32;`): LinkLibDevice links their bodies, and they get a row here (file
// "libdevice") for the host stub their host references need. MapMath's own
// `__nv_*` calls get rows as well; the host never refers to those, and the
// linker drops their stubs (each is in a section of its own).
//
// A declaration that no device source defines is left alone; RejectUnsupported
// reports it, naming the kernel and the symbol.
//===----------------------------------------------------------------------===//
#include "oxide/Abi.h"
#include "oxide/Passes.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Metadata.h"
#include "llvm/IR/Module.h"

using namespace llvm;
using namespace oxide;

PreservedAnalyses BindDeviceSourcesPass::run(Module &M, ModuleAnalysisManager &) {
  LLVMContext &Ctx = M.getContext();
  bool Changed = false;
  for (Function &F : M) {
    if (!F.isDeclaration() || F.isIntrinsic() || F.use_empty())
      continue;
    auto It = Symbols.find(F.getName().str());
    std::string File = It != Symbols.end()              ? It->second
                       : F.getName().starts_with("__nv_") ? "libdevice"
                                                          : "";
    if (File.empty())
      continue;
    if (It != Symbols.end())
      F.addFnAttr(DeviceSourceAttr, File);
    M.getOrInsertNamedMetadata(DeviceSourcesMetadata)
        ->addOperand(MDNode::get(Ctx, {MDString::get(Ctx, F.getName()), MDString::get(Ctx, File)}));
    Changed = true;
  }
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}
