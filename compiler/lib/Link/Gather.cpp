//===- Gather.cpp - Which bitcode belongs to this link --------------------===//
//
// rustc hands its linker object files (`<crate>-<hash>.<cgu>.rcgu.o`) for the
// crate being linked, and rlibs for its dependencies. With `-C save-temps`
// every codegen unit also leaves `<same stem>.rcgu.no-opt.bc` next to its
// object: the unoptimised bitcode the device linker compiles (docs/DESIGN.md
// §2 explains why unoptimised). For an rlib we list its members and take the
// bitcode of exactly those codegen units, so stale files from an earlier build
// with more codegen units are never picked up. The standard library's rlibs
// have no such files; what kernels use of core is mostly generic or #[inline]
// and so sits in the user's codegen units, and the rest (core's ordinary
// functions, generic instances shared in debug builds) comes from the
// bitcode those rlibs embed, linked on demand (libraryArchives below,
// LinkLibraryBitcode.cpp).
//===----------------------------------------------------------------------===//
#include "oxide/Abi.h"
#include "oxide/DeviceLinker.h"
#include "llvm/Object/Archive.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace oxide;

namespace {

std::string bitcodeBeside(StringRef Dir, StringRef ObjectName) {
  if (!ObjectName.consume_back(".rcgu.o"))
    return "";
  SmallString<256> P(Dir);
  sys::path::append(P, ObjectName + ".rcgu.no-opt.bc");
  return sys::fs::exists(P) ? std::string(P) : "";
}

/// Appends the unoptimised bitcode of an rlib's codegen units to Out;
/// returns how many it found.
size_t gatherFromRlib(StringRef RlibPath, std::vector<std::string> &Out, bool Verbose) {
  size_t Before = Out.size();
  auto Buf = MemoryBuffer::getFile(RlibPath);
  if (!Buf)
    return 0;
  auto ArchiveOrErr = object::Archive::create((*Buf)->getMemBufferRef());
  if (!ArchiveOrErr) {
    consumeError(ArchiveOrErr.takeError());
    return 0;
  }
  Error Err = Error::success();
  StringRef Dir = sys::path::parent_path(RlibPath);
  for (const object::Archive::Child &C : (*ArchiveOrErr)->children(Err)) {
    Expected<StringRef> Name = C.getName();
    if (!Name) {
      consumeError(Name.takeError());
      continue;
    }
    std::string BC = bitcodeBeside(Dir, *Name);
    if (!BC.empty()) {
      if (Verbose)
        errs() << "oxide-link: gather " << BC << "\n";
      Out.push_back(BC);
    }
  }
  consumeError(std::move(Err));
  return Out.size() - Before;
}

} // namespace

std::vector<std::string> oxide::gatherBitcode(const std::vector<std::string> &LinkArgs,
                                              bool Verbose) {
  std::vector<std::string> Out;
  for (const std::string &Arg : LinkArgs) {
    StringRef A(Arg);
    if (A.ends_with(".rcgu.o")) {
      std::string BC = bitcodeBeside(sys::path::parent_path(A), sys::path::filename(A));
      if (!BC.empty()) {
        if (Verbose)
          errs() << "oxide-link: gather " << BC << "\n";
        Out.push_back(BC);
      }
    } else if (A.ends_with(".rlib")) {
      gatherFromRlib(A, Out, Verbose);
    }
  }
  return Out;
}

std::vector<std::string> oxide::libraryArchives(const std::vector<std::string> &LinkArgs) {
  std::vector<std::string> Out;
  for (const std::string &Arg : LinkArgs) {
    std::vector<std::string> Ignored;
    if (StringRef(Arg).ends_with(".rlib") && gatherFromRlib(Arg, Ignored, false) == 0)
      Out.push_back(Arg);
  }
  return Out;
}

bool oxide::mentionsKernelEntries(const std::vector<std::string> &BitcodeFiles) {
  for (const std::string &Path : BitcodeFiles) {
    auto Buf = MemoryBuffer::getFile(Path);
    if (Buf && ((*Buf)->getBuffer().contains(KernelEntryPrefix) ||
                (*Buf)->getBuffer().contains(DeviceExportPrefix)))
      return true;
  }
  return false;
}

std::string oxide::linkOutput(const std::vector<std::string> &LinkArgs) {
  for (size_t I = 0; I + 1 < LinkArgs.size(); ++I)
    if (LinkArgs[I] == "-o")
      return LinkArgs[I + 1];
  return "a.out";
}

std::string oxide::crateNameOfOutput(const std::string &OutputPath) {
  StringRef Name = sys::path::filename(OutputPath);
  if (Name.consume_back(".so"))
    Name.consume_front("lib");
  // cargo's deps/ outputs are `<crate>-<16 hex>`.
  size_t Dash = Name.rfind('-');
  if (Dash != StringRef::npos && Name.size() - Dash == 17 &&
      Name.drop_front(Dash + 1).find_first_not_of("0123456789abcdef") == StringRef::npos)
    Name = Name.take_front(Dash);
  std::string Out = Name.str();
  std::replace(Out.begin(), Out.end(), '-', '_');
  return Out;
}
