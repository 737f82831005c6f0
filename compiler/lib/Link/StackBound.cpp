//===- StackBound.cpp - The per-thread stack each kernel entry needs ------===//
//
// The driver gives every thread a stack of CU_LIMIT_STACK_SIZE bytes (1 KiB
// unless someone raises it). ptxas reports each function's frame and, per
// entry, a "cumulative stack size" that follows direct calls only; the driver
// raises the limit to that figure by itself. A call through a pointer is
// invisible to both, and core::fmt makes them everywhere (`dyn Write`,
// `dyn Display`): a kernel that formats an f32 reaches float formatting
// frames of more than a KiB through a vtable, overflows the default stack and
// faults with an illegal address (docs/DESIGN.md, "The device stack").
//
// This file bounds the stack of every entry from the final module and
// ptxas's frames; it rewrites nothing. The call graph is taken after PTX
// emission, so its names are the PTX names ptxas reports. A direct call is an
// edge to its callee; a call through a pointer is an edge to every function
// whose address is taken and whose type is the call's function type (a call
// through a pointer of another type is undefined behaviour in LLVM IR, so no
// other function can be its target). The bound of an entry is the heaviest
// path, summing frames, from it. It is unknown when
//   * the entry reaches a cycle (recursion, direct or through pointers): no
//     path length bounds it, and the link warns, naming the cycle;
//   * it reaches an indirect call no address-taken function matches (the
//     target is not in the module, as far as the IR can tell);
//   * ptxas did not run and the entry reaches an indirect call.
// An unknown bound is recorded as KernelStackUnknown (Abi.def) and cuda-host
// raises the limit to a fallback before launching it (docs/ABI.md §3). An
// entry without ptxas whose calls are all direct needs nothing: the driver
// sees its whole call tree.
//===----------------------------------------------------------------------===//
#include "oxide/Abi.h"
#include "oxide/DeviceLinker.h"
#include "oxide/RustNames.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include "llvm/Object/ELF.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>

using namespace llvm;
using namespace oxide;

DeviceCallGraph oxide::buildDeviceCallGraph(const Module &M) {
  DeviceCallGraph G;
  std::map<FunctionType *, std::vector<std::string>> AddressTakenByType;
  for (const Function &F : M)
    if (!F.isDeclaration() && F.hasAddressTaken())
      AddressTakenByType[F.getFunctionType()].push_back(F.getName().str());
  for (const Function &F : M) {
    if (F.isDeclaration())
      continue;
    std::string Name = F.getName().str();
    if (F.getCallingConv() == CallingConv::PTX_Kernel)
      G.Entries.push_back(Name);
    std::vector<std::string> &Callees = G.Callees[Name];
    for (const Instruction &I : instructions(F)) {
      const auto *Call = dyn_cast<CallBase>(&I);
      if (!Call || Call->isInlineAsm())
        continue;
      if (const Function *Callee = Call->getCalledFunction()) {
        // Intrinsics and declarations (vprintf, the driver's own) have no
        // frame ptxas reports; a declared callee counts as an empty frame.
        if (!Callee->isIntrinsic())
          Callees.push_back(Callee->getName().str());
        continue;
      }
      G.CallsIndirectly.insert(Name);
      auto Targets = AddressTakenByType.find(Call->getFunctionType());
      if (Targets == AddressTakenByType.end())
        G.UnresolvedIndirect.insert(Name);
      else
        Callees.insert(Callees.end(), Targets->second.begin(), Targets->second.end());
    }
    llvm::sort(Callees);
    Callees.erase(std::unique(Callees.begin(), Callees.end()), Callees.end());
  }
  return G;
}

std::map<std::string, uint64_t> oxide::parsePtxasFrames(StringRef Log) {
  // ptxas -v writes, per function,
  //   ptxas info    : Function properties for NAME
  //       N bytes stack frame, M bytes spill stores, K bytes spill loads
  std::map<std::string, uint64_t> Frames;
  std::string Current;
  SmallVector<StringRef> Lines;
  Log.split(Lines, '\n');
  for (StringRef Line : Lines) {
    Line = Line.trim();
    constexpr StringLiteral Properties = "Function properties for ";
    if (size_t At = Line.find(Properties); At != StringRef::npos) {
      Current = Line.substr(At + Properties.size()).trim().str();
      continue;
    }
    size_t At = Line.find(" bytes stack frame");
    if (Current.empty() || At == StringRef::npos)
      continue;
    StringRef Number = Line.substr(0, At);
    Number = Number.substr(Number.find_last_of(" \t") + 1);
    if (uint64_t Bytes; !Number.getAsInteger(10, Bytes)) {
      Frames[Current] = Bytes;
      Current.clear();
    }
  }
  return Frames;
}

std::optional<std::map<std::string, uint64_t>> oxide::cubinFrames(StringRef Cubin) {
  // The records of `.nv.info`: a format byte, an attribute byte, then the
  // value: none (1), one byte (2), two bytes (3), or a 16-bit size and that
  // many bytes (4). EIATTR_FRAME_SIZE (0x11) holds a symbol index and the
  // function's frame in bytes, the figure ptxas -v prints as "bytes stack
  // frame". Anything else than this layout, or a defined function without a
  // record, and the caller asks ptxas -v instead.
  constexpr uint8_t FrameSize = 0x11;
  auto File = object::ELF64LEFile::create(Cubin);
  if (!File) {
    consumeError(File.takeError());
    return std::nullopt;
  }
  auto Sections = File->sections();
  if (!Sections) {
    consumeError(Sections.takeError());
    return std::nullopt;
  }
  const object::ELF64LE::Shdr *Symtab = nullptr, *Info = nullptr;
  for (const auto &Sec : *Sections) {
    auto Name = File->getSectionName(Sec);
    if (!Name) {
      consumeError(Name.takeError());
      return std::nullopt;
    }
    if (Sec.sh_type == ELF::SHT_SYMTAB)
      Symtab = &Sec;
    else if (*Name == ".nv.info")
      Info = &Sec;
  }
  if (!Symtab || !Info)
    return std::nullopt;
  auto Symbols = File->symbols(Symtab);
  auto Names = File->getStringTableForSymtab(*Symtab);
  auto Data = File->getSectionContents(*Info);
  if (!Symbols || !Names || !Data) {
    if (!Symbols)
      consumeError(Symbols.takeError());
    if (!Names)
      consumeError(Names.takeError());
    if (!Data)
      consumeError(Data.takeError());
    return std::nullopt;
  }
  std::map<uint32_t, uint64_t> BySymbol;
  ArrayRef<uint8_t> D = *Data;
  for (size_t I = 0; I + 2 <= D.size();) {
    uint8_t Format = D[I], Attribute = D[I + 1];
    I += 2;
    size_t Size;
    if (Format == 1)
      Size = 0;
    else if (Format == 2)
      Size = 1;
    else if (Format == 3)
      Size = 2;
    else if (Format == 4) {
      if (I + 2 > D.size())
        return std::nullopt;
      Size = support::endian::read16le(&D[I]);
      I += 2;
    } else {
      return std::nullopt;
    }
    if (I + Size > D.size())
      return std::nullopt;
    if (Attribute == FrameSize) {
      if (Format != 4 || Size != 8)
        return std::nullopt;
      BySymbol[support::endian::read32le(&D[I])] = support::endian::read32le(&D[I + 4]);
    }
    I += Size;
  }
  std::map<std::string, uint64_t> Frames;
  for (size_t Index = 0; Index < Symbols->size(); ++Index) {
    const auto &Sym = (*Symbols)[Index];
    if (Sym.getType() != ELF::STT_FUNC || Sym.st_shndx == ELF::SHN_UNDEF)
      continue;
    auto Name = Sym.getName(*Names);
    auto It = BySymbol.find(Index);
    if (!Name || It == BySymbol.end()) {
      if (!Name)
        consumeError(Name.takeError());
      return std::nullopt;
    }
    Frames[Name->str()] = It->second;
  }
  return Frames;
}

namespace {

/// A depth-first walk from one entry that finds the heaviest path, or the
/// first cycle on the way.
class BoundWalk {
public:
  BoundWalk(const DeviceCallGraph &G, const std::map<std::string, uint64_t> *Frames)
      : G(G), Frames(Frames) {}

  StackBound run(const std::string &Entry) {
    uint64_t Bytes = visit(Entry);
    if (!Result.Cycle.empty() || Result.Unresolved || (!Frames && Result.Indirect))
      Result.Bytes.reset();
    else if (!Frames)
      Result.Bytes = 0; // only direct calls: the driver sizes the stack itself
    else
      Result.Bytes = Bytes;
    return std::move(Result);
  }

private:
  const DeviceCallGraph &G;
  const std::map<std::string, uint64_t> *Frames;
  StackBound Result;
  std::map<std::string, uint64_t> Done; // the heaviest path from each finished function
  std::vector<std::string> Path;        // the functions being visited, outermost first

  uint64_t frameOf(const std::string &F) const {
    if (!Frames)
      return 0;
    auto It = Frames->find(F);
    return It == Frames->end() ? 0 : It->second;
  }

  uint64_t visit(const std::string &F) {
    if (auto It = Done.find(F); It != Done.end())
      return It->second;
    if (auto On = llvm::find(Path, F); On != Path.end()) {
      if (Result.Cycle.empty())
        Result.Cycle.assign(On, Path.end());
      return 0;
    }
    Result.Indirect |= G.CallsIndirectly.count(F) != 0;
    Result.Unresolved |= G.UnresolvedIndirect.count(F) != 0;
    Path.push_back(F);
    uint64_t Deepest = 0;
    if (auto Callees = G.Callees.find(F); Callees != G.Callees.end())
      for (const std::string &Callee : Callees->second)
        Deepest = std::max(Deepest, visit(Callee));
    Path.pop_back();
    return Done[F] = frameOf(F) + Deepest;
  }
};

} // namespace

StackBound oxide::boundStack(const DeviceCallGraph &G, const std::string &Entry,
                             const std::map<std::string, uint64_t> *Frames) {
  return BoundWalk(G, Frames).run(Entry);
}

std::string oxide::describeStackBound(const std::string &Entry, const StackBound &B) {
  std::string S;
  raw_string_ostream OS(S);
  OS << Entry << ": ";
  if (B.Bytes)
    OS << *B.Bytes << " bytes";
  else if (!B.Cycle.empty())
    OS << "unknown (recursion)";
  else if (B.Unresolved)
    OS << "unknown (an indirect call with no target in the module)";
  else
    OS << "unknown (indirect calls, no ptxas frames)";
  return S;
}

void oxide::recordStackBounds(DeviceImage &Image, const std::map<std::string, uint64_t> *Frames,
                              bool Verbose) {
  for (KernelEntryInfo &K : Image.Kernels) {
    uint64_t Need = 0;
    for (const std::string *Entry : {&K.PtxName, &K.UncheckedPtxName}) {
      if (Entry->empty())
        continue;
      StackBound B = boundStack(Image.CallGraph, *Entry, Frames);
      if (Verbose)
        errs() << "oxide-link: stack bound of " << describeStackBound(*Entry, B) << "\n";
      if (!B.Cycle.empty() && Entry == &K.PtxName) {
        errs() << "oxide-link: warning: kernel `" << K.RustPath
               << "` may recurse, so its stack has no bound: ";
        for (const std::string &F : B.Cycle)
          errs() << demangleRust(F) << " -> ";
        errs() << demangleRust(B.Cycle.front()) << "\n  = note: its launches raise the device stack to "
               << DeviceStackFallback << " bytes per thread; set " << DeviceStackVariable
               << "=BYTES at run time for another size\n";
      }
      Need = B.Bytes ? std::max(Need, *B.Bytes) : KernelStackUnknown;
      if (!B.Bytes)
        break;
    }
    K.StackBytes = Need;
  }
}
