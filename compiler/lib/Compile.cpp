//===- Compile.cpp - Bitcode in, validated PTX out ------------------------===//
//
// The middle of the device link: merge the codegen units into one module, run
// oxide's transformations (Passes.h) in order, link the libdevice functions
// the kernels call, optimise with LLVM's O3 pipeline for NVPTX (which also
// runs NVVMReflect for libdevice), and emit PTX for the chosen sm_XX. Every
// stage can be written to OXIDE_DUMP_DIR for `cargo oxide pipeline`.
//===----------------------------------------------------------------------===//
#include "oxide/DeviceLinker.h"
#include "oxide/PassContext.h"
#include "oxide/Passes.h"
#include "oxide/RustNames.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/DIBuilder.h"
#include "llvm/IR/DebugInfo.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/IRReader/IRReader.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/Transforms/IPO/GlobalDCE.h"
#include "llvm/Transforms/IPO/Internalize.h"
#include <map>

using namespace llvm;
using namespace oxide;

LinkerOptions LinkerOptions::fromEnvironment() {
  LinkerOptions O;
  if (const char *A = getenv("OXIDE_ARCH"); A && *A)
    O.Arch = A;
  if (const char *C = getenv("OXIDE_CUDA_PATH"); C && *C)
    O.CudaPath = C;
  if (const char *D = getenv("OXIDE_DUMP_DIR"); D && *D)
    O.DumpDir = D;
  if (const char *V = getenv("OXIDE_VERBOSE"); V && *V && StringRef(V) != "0")
    O.Verbose = true;
  if (const char *G = getenv("OXIDE_DEVICE_DEBUG"); G && *G)
    O.DeviceDebug = G;
  return O;
}

namespace {

Error makeError(const Twine &Msg) { return createStringError(inconvertibleErrorCode(), Msg); }

/// The file for one pipeline stage in OXIDE_DUMP_DIR, or null when stages
/// are not being written.
std::unique_ptr<raw_fd_ostream> openDump(const LinkerOptions &Opts, StringRef Name) {
  if (Opts.DumpDir.empty())
    return nullptr;
  sys::fs::create_directories(Opts.DumpDir);
  SmallString<256> P(Opts.DumpDir);
  sys::path::append(P, Name);
  std::error_code EC;
  auto OS = std::make_unique<raw_fd_ostream>(P, EC);
  return EC ? nullptr : std::move(OS);
}

void dumpModule(const LinkerOptions &Opts, const Module &M, StringRef Name) {
  if (auto OS = openDump(Opts, Name))
    M.print(*OS, nullptr);
}

void dumpText(const LinkerOptions &Opts, StringRef Name, StringRef Text) {
  if (auto OS = openDump(Opts, Name))
    *OS << Text;
}

/// Loads and links every codegen unit, counting how many define each kernel
/// entry wrapper (each definition is one host copy whose address the kernel
/// table must be able to resolve).
Expected<std::unique_ptr<Module>> linkBitcode(LLVMContext &Ctx,
                                              const std::vector<std::string> &Files,
                                              std::map<std::string, unsigned> &EntryCopies) {
  auto Merged = std::make_unique<Module>("oxide-device", Ctx);
  Linker L(*Merged);
  for (const std::string &Path : Files) {
    auto Buf = MemoryBuffer::getFile(Path);
    if (!Buf)
      return makeError("cannot read " + Path + ": " + Buf.getError().message());
    // Bitcode from rustc, or textual IR from the lit tests.
    SMDiagnostic Diag;
    std::unique_ptr<Module> M = parseIR((*Buf)->getMemBufferRef(), Diag, Ctx);
    if (!M) {
      std::string Msg;
      raw_string_ostream OS(Msg);
      Diag.print("oxide-link", OS);
      return makeError("cannot read " + Path + ": " + Msg +
                       "(is rustc's LLVM newer than oxide's? run `cargo oxide doctor`)");
    }
    for (Function &F : *M)
      if (!F.isDeclaration() && F.getName().contains(KernelEntryMarker))
        ++EntryCopies[F.getName().str()];
    M->setTargetTriple(Merged->getTargetTriple());
    M->setDataLayout(Merged->getDataLayout());
    if (NamedMDNode *Flags = M->getModuleFlagsMetadata())
      M->eraseNamedMetadata(Flags);
    if (L.linkInModule(std::move(M)))
      return makeError("cannot link " + Path + " into the device module");
  }
  return std::move(Merged);
}

Error linkLibDevice(Module &M, const LinkerOptions &Opts) {
  bool NeedsLibDevice = false;
  for (Function &F : M)
    NeedsLibDevice |= F.isDeclaration() && F.getName().starts_with("__nv_");
  if (!NeedsLibDevice)
    return Error::success();
  SmallString<256> P(Opts.CudaPath);
  sys::path::append(P, "nvvm", "libdevice", "libdevice.10.bc");
  SMDiagnostic Diag;
  std::unique_ptr<Module> LD = parseIRFile(P, Diag, M.getContext());
  if (!LD)
    return makeError("the kernels use float math from libdevice, but " + P +
                     " could not be read; set OXIDE_CUDA_PATH to the CUDA toolkit");
  LD->setTargetTriple(M.getTargetTriple());
  LD->setDataLayout(M.getDataLayout());
  if (Linker::linkModules(M, std::move(LD), Linker::LinkOnlyNeeded))
    return makeError("linking libdevice failed");
  return Error::success();
}

/// Sets the LLVM backend options the device target depends on, once per
/// process: ExpandFp turns float conversions wider than 64 bits into integer
/// code (NVPTX would otherwise emit compiler-rt calls the GPU lacks;
/// LowerWideConversions.cpp), and loop strength reduction stays off.
void setBackendOptions() {
  static bool Done = false;
  if (Done)
    return;
  Done = true;
  auto &Options = cl::getRegisteredOptions();
  if (cl::Option *O = Options.lookup("expand-fp-convert-bits"))
    O->addOccurrence(0, "expand-fp-convert-bits", "64");
  // No loop strength reduction in the backend. On the tiled kernels it turns
  // the shared-memory walk of a `for k in 0..TILE` loop into 64-bit offset
  // and pointer variables, which costs registers and keeps ptxas from
  // unrolling the loop fully; without it ptxas strength-reduces the 32-bit
  // shared addresses itself (sgemm 0.964× → 0.986× of nvcc on the H200,
  // the grid-stride reduction unchanged within 1 %).
  if (cl::Option *O = Options.lookup("disable-lsr"))
    O->addOccurrence(0, "disable-lsr", "true");
}

Expected<std::unique_ptr<TargetMachine>> createDeviceTarget(const LinkerOptions &Opts) {
  setBackendOptions();
  Triple T(DeviceTriple);
  std::string Err;
  const Target *Tgt = TargetRegistry::lookupTarget(T, Err);
  if (!Tgt)
    return makeError("the NVPTX target is missing from this LLVM: " + Err);
  TargetOptions TO;
  // LLVM picks the oldest PTX ISA the architecture allows (7.8 for sm_90),
  // which lacks Hopper instructions such as elect.sync; PTX 8.0 (CUDA 12.0
  // drivers and newer) has them.
  std::string Features = smNumber(Opts.Arch) >= 90 ? "+ptx80" : "";
  std::unique_ptr<TargetMachine> TM(Tgt->createTargetMachine(
      T, Opts.Arch, Features, TO, Reloc::PIC_, std::nullopt, CodeGenOptLevel::Aggressive));
  if (!TM)
    return makeError("cannot create an NVPTX target for " + Opts.Arch);
  return std::move(TM);
}

void optimize(Module &M, TargetMachine &TM) {
  PassContext PC(&TM);
  ModulePassManager MPM = PC.PB.buildPerModuleDefaultPipeline(OptimizationLevel::O3);
  MPM.run(M, PC.MAM);
}

Expected<std::string> emitPtx(Module &M, TargetMachine &TM) {
  SmallString<0> Ptx;
  raw_svector_ostream OS(Ptx);
  legacy::PassManager PM;
  if (TM.addPassesToEmitFile(PM, OS, nullptr, CodeGenFileType::AssemblyFile))
    return makeError("the NVPTX backend cannot emit PTX");
  PM.run(M);
  return std::string(Ptx);
}

std::vector<KernelEntryInfo> kernelsOf(Module &M, const std::map<std::string, unsigned> &Copies) {
  std::vector<KernelEntryInfo> Out;
  NamedMDNode *MD = M.getNamedMetadata(KernelsMetadata);
  if (!MD)
    return Out;
  for (MDNode *N : MD->operands()) {
    auto *Entry = mdconst::dyn_extract_or_null<Function>(N->getOperand(0));
    if (!Entry)
      continue;
    KernelEntryInfo K;
    K.PtxName = Entry->getName().str();
    K.HostSymbol = cast<MDString>(N->getOperand(1))->getString().str();
    K.NumParams = mdconst::extract<ConstantInt>(N->getOperand(2))->getZExtValue();
    K.RustPath = kernelPathOf(K.HostSymbol);
    if (N->getNumOperands() > 3)
      K.Flags = mdconst::extract<ConstantInt>(N->getOperand(3))->getZExtValue();
    else
      K.Flags = KernelReadsX | KernelReadsYZ; // unknown: let the host allow any launch
    if (N->getNumOperands() > 5)
      if (auto *Unchecked = mdconst::dyn_extract_or_null<Function>(N->getOperand(4))) {
        K.UncheckedPtxName = Unchecked->getName().str();
        K.LaunchCondition = cast<MDString>(N->getOperand(5))->getString().str();
      }
    auto It = Copies.find(K.HostSymbol);
    K.HostCopies = It == Copies.end() ? 1 : It->second;
    Out.push_back(K);
  }
  return Out;
}

std::vector<ConstantInfo> constantsOf(Module &M) {
  std::vector<ConstantInfo> Out;
  NamedMDNode *MD = M.getNamedMetadata(ConstantsMetadata);
  if (!MD)
    return Out;
  for (MDNode *N : MD->operands()) {
    auto *GV = mdconst::dyn_extract_or_null<GlobalVariable>(N->getOperand(0));
    if (!GV)
      continue;
    Out.push_back({GV->getName().str(), cast<MDString>(N->getOperand(1))->getString().str(),
                   M.getDataLayout().getTypeAllocSize(GV->getValueType())});
  }
  return Out;
}

//===--- OXIDE_DEVICE_DEBUG (cargo oxide debug / sanitize) ----------------===//
/// Whether the device code keeps debug info (`lines` or `full`).
bool keepsDeviceDebugInfo(const LinkerOptions &Opts) {
  return Opts.DeviceDebug == "full" || Opts.DeviceDebug == "lines";
}

/// What debug info the device code keeps: none (the default), `lines` (line
/// tables: PTX .loc/.file, for cuda-gdb and compute-sanitizer's file:line) or
/// `full`. Anything else warns and strips.
void applyDeviceDebugInfo(Module &M, const LinkerOptions &Opts) {
  StringRef Mode = Opts.DeviceDebug;
  if (keepsDeviceDebugInfo(Opts)) {
    if (Mode == "lines")
      stripNonLineTableDebugInfo(M);
    // The host modules' flags were dropped on the way (linkBitcode, Retarget);
    // without these two the backend emits no .loc/.file. PTX wants DWARF 2.
    if (!M.getModuleFlag("Debug Info Version"))
      M.addModuleFlag(Module::Warning, "Debug Info Version", DEBUG_METADATA_VERSION);
    if (!M.getModuleFlag("Dwarf Version"))
      M.addModuleFlag(Module::Max, "Dwarf Version", uint32_t(2));
    // Functions the passes create (the kernel entry wrappers around
    // `<kernel>.oxide.body`) have no DISubprogram, and the backend emits .loc
    // only inside a function that has one: once O3 inlines the body into
    // the wrapper, its lines would be lost. Give each such function an
    // artificial subprogram next to the first one it calls or points to,
    // and its unlocated instructions that subprogram's line, so inlined
    // code gets proper inlinedAt chains.
    for (Function &F : M) {
      if (F.isDeclaration() || F.getSubprogram())
        continue;
      DISubprogram *Ref = nullptr;
      for (Instruction &I : instructions(F)) {
        if (const DILocation *DL = I.getDebugLoc().get())
          Ref = DL->getInlinedAtScope()->getSubprogram();
        else if (auto *CB = dyn_cast<CallBase>(&I))
          if (Function *Callee = CB->getCalledFunction())
            Ref = Callee->getSubprogram();
        if (Ref)
          break;
      }
      if (!Ref || !Ref->getUnit())
        continue;
      DIBuilder DIB(M, /*AllowUnresolved=*/false, Ref->getUnit());
      DISubprogram *SP = DIB.createFunction(
          Ref->getFile(), Ref->getName(), F.getName(), Ref->getFile(), Ref->getLine(),
          DIB.createSubroutineType(DIB.getOrCreateTypeArray({})), Ref->getLine(),
          DINode::FlagArtificial,
          DISubprogram::SPFlagDefinition | DISubprogram::SPFlagLocalToUnit);
      DIB.finalizeSubprogram(SP);
      F.setSubprogram(SP);
      for (Instruction &I : instructions(F)) {
        const DILocation *DL = I.getDebugLoc().get();
        if (!DL || DL->getInlinedAtScope()->getSubprogram() != SP)
          I.setDebugLoc(DILocation::get(M.getContext(), DL ? DL->getLine() : SP->getLine(),
                                        DL ? DL->getColumn() : 0, SP));
      }
    }
    bool BrokenDebugInfo = false;
    if (verifyModule(M, nullptr, &BrokenDebugInfo) || BrokenDebugInfo) {
      errs() << "oxide-link: warning: OXIDE_DEVICE_DEBUG=" << Mode
             << ": the device debug info is inconsistent; stripped\n";
      StripDebugInfo(M);
    }
    return;
  }
  if (!Mode.empty() && Mode != "0" && Mode != "none")
    errs() << "oxide-link: warning: OXIDE_DEVICE_DEBUG=" << Mode
           << " is not lines or full; device debug info stripped\n";
  StripDebugInfo(M);
}

} // namespace

Expected<DeviceImage> oxide::compileDeviceImage(const std::vector<std::string> &Files,
                                                const std::string &ModuleName,
                                                const LinkerOptions &Opts,
                                                DiagnosticSink &Diags) {
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();

  LLVMContext Ctx;
  std::map<std::string, unsigned> EntryCopies;
  auto MOrErr = linkBitcode(Ctx, Files, EntryCopies);
  if (!MOrErr)
    return MOrErr.takeError();
  Module &M = **MOrErr;
  dumpModule(Opts, M, "device-input.ll");

  auto TM = createDeviceTarget(Opts);
  if (!TM)
    return TM.takeError();

  PassContext PC(TM->get());
  ModuleAnalysisManager &MAM = PC.MAM;
  BuildKernelEntriesPass(Diags).run(M, MAM);
  if (Diags.hasErrors())
    return makeError("invalid kernel entries");
  RecordReadOnlyParamsPass().run(M, MAM);
  LowerUnwindingPass().run(M, MAM);
  LowerPanicsPass().run(M, MAM);
  LowerAtomicStubsPass(Diags).run(M, MAM);
  LowerWgmmaPass(Diags, Opts.Arch).run(M, MAM);
  LowerSharedAddressPass().run(M, MAM);
  LowerIntrinsicStubsPass(Diags, smNumber(Opts.Arch), isArchSpecific(Opts.Arch)).run(M, MAM);
  AssignAddressSpacesPass().run(M, MAM);
  MapMathPass().run(M, MAM);
  LowerWideConversionsPass().run(M, MAM);
  RetargetPass().run(M, MAM);
  SelectReachablePass().run(M, MAM);
  RejectUnsupportedPass(Diags).run(M, MAM);
  if (Diags.hasErrors())
    return makeError("the kernels use what the GPU cannot run");

  if (Error E = linkLibDevice(M, Opts))
    return std::move(E);
  SelectReachablePass().run(M, MAM); // drop the libdevice functions nobody calls
  applyDeviceDebugInfo(M, Opts);
  dumpModule(Opts, M, "device-legal.ll");

  std::string VerifyMsg;
  raw_string_ostream VOS(VerifyMsg);
  if (verifyModule(M, &VOS))
    return makeError("internal error: the device module is invalid after legalisation:\n" +
                     VerifyMsg);

  optimize(M, **TM);
  LowerAtomicsPass(smNumber(Opts.Arch)).run(M, MAM); // needs O3's inlining and address spaces
  RecordKernelDimensionsPass().run(M, MAM); // after O3: dead coordinate reads are gone
  TagInvariantLoadsPass().run(M, MAM); // after O3: the kernel bodies are inlined
  VersionBoundsChecksPass().run(M, MAM); // before the passes below, which then see both bodies
  MergeBoundsChecksPass().run(M, MAM);
  DeferSharedStoresPass().run(M, MAM); // needs the !invariant.load tags
  HoistBoundsChecksPass().run(M, MAM);  // after the shared stores moved out of the way
  AlignBarriersPass().run(M, MAM);      // after O3: one function per kernel
  ShareAddressBasesPass().run(M, MAM);  // after the passes that move accesses
  KeepNaNPayloadsPass().run(M, MAM);    // last: O3 would fold it back into a select
  dumpModule(Opts, M, "device-opt.ll");
  // The passes after O3 rewrite control flow; a mistake there must be an
  // error naming them, not a crash in the NVPTX backend.
  VerifyMsg.clear();
  if (verifyModule(M, &VOS))
    return makeError("internal error: the device module is invalid after the post-O3 passes:\n" +
                     VerifyMsg);

  DeviceImage Image;
  Image.ModuleName = ModuleName;
  Image.Kernels = kernelsOf(M, EntryCopies);
  Image.Constants = constantsOf(M);
  auto Ptx = emitPtx(M, **TM);
  if (!Ptx)
    return Ptx.takeError();
  // ptxas miscompiles a few PTX instructions at their edge values, in
  // whatever way the backend came to write them (PtxasHazards.def).
  Image.Ptx = rewritePtxasHazards(*Ptx);
  // Line tables and full debug info both leave `.loc` and DWARF sections in
  // the PTX; this line tells the runtime (cuda-core) which one to ask the
  // driver's JIT to keep (docs/ABI.md §4).
  if (Opts.DeviceDebug == "full")
    Image.Ptx = "// oxide-device-debug: full\n" + Image.Ptx;
  dumpText(Opts, ModuleName + ".ptx", Image.Ptx);
  return Image;
}

Error oxide::assemblePtx(DeviceImage &Image, const LinkerOptions &Opts) {
  SmallString<256> Ptxas(Opts.CudaPath);
  sys::path::append(Ptxas, "bin", "ptxas");
  if (!sys::fs::can_execute(Ptxas)) {
    auto Found = sys::findProgramByName("ptxas");
    if (!Found)
      return Error::success(); // no toolkit: the driver will JIT and report
    Ptxas = *Found;
  }
  SmallString<128> In, Out, Log;
  int FD;
  if (sys::fs::createTemporaryFile("oxide", "ptx", FD, In))
    return makeError("cannot create a temporary file");
  {
    raw_fd_ostream OS(FD, true);
    OS << Image.Ptx;
  }
  sys::fs::createTemporaryFile("oxide", "cubin", Out);
  sys::fs::createTemporaryFile("oxide-ptxas", "log", Log);
  std::string Arch = "-arch=" + Opts.Arch;
  StringRef Args[] = {Ptxas, Arch, "-o", Out, In};
  std::optional<StringRef> Redirects[] = {std::nullopt, StringRef(Log), StringRef(Log)};
  int RC = sys::ExecuteAndWait(Ptxas, Args, std::nullopt, Redirects);
  auto LogText = MemoryBuffer::getFile(Log);
  std::string Output = LogText ? (*LogText)->getBuffer().str() : "";
  // With device debug info the driver's JIT must compile the PTX (it keeps
  // what cuda-gdb and compute-sanitizer read); a cubin from plain ptxas has
  // none of it.
  unsigned Sm = smNumber(Opts.Arch);
  if (RC == 0 && Sm > 0 && !keepsDeviceDebugInfo(Opts))
    if (auto Cubin = MemoryBuffer::getFile(Out, /*IsText=*/false, /*RequiresNullTerminator=*/false)) {
      Image.Cubin = (*Cubin)->getBuffer().str();
      Image.CubinSm = Sm;
    }
  sys::fs::remove(In);
  sys::fs::remove(Out);
  sys::fs::remove(Log);
  if (RC != 0)
    return makeError("ptxas rejected the generated PTX for " + Opts.Arch + ":\n" + Output);
  return Error::success();
}
