//===- PartCache.cpp - What was compiled for each part, by its contents ---===//
//
// The device link of a crate whose one kernel changed must not compile the
// other kernels again. Each part of the split module (SplitByKernel.cpp) is
// keyed by a hash of everything its compilation depends on: its bitcode after
// the whole pipeline, the architecture and PTX ISA, and the versions of LLVM
// and of this cache's format; ptxas's work on a part's PTX is keyed by that
// PTX and ptxas's own identity. An entry is a file named by its key, written
// to a temporary name and renamed, so a reader sees a whole entry or none;
// each holds the hash of its contents, so a damaged entry (a full disk, a
// truncated copy) is not believed: a lookup that fails for any reason is a
// miss, and the link compiles the part as if there were no cache.
// The directory is bounded: after each link the least recently used entries
// go until it holds at most the limit (a hit touches its entry).
//===----------------------------------------------------------------------===//
#include "oxide/DeviceLinker.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/BLAKE3.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>

using namespace llvm;
using namespace oxide;

namespace {

const char Magic[] = "oxide-part-cache 1 ";

std::string contentHash(StringRef Data) {
  return toHex(BLAKE3::hash<16>(arrayRefFromStringRef(Data)), /*LowerCase=*/true);
}

} // namespace

std::string oxide::partCacheKey(ArrayRef<StringRef> Inputs) {
  BLAKE3 H;
  for (StringRef In : Inputs) {
    // Each input's length first, so no two lists hash alike by moving
    // bytes from one input to the next.
    std::string Len = std::to_string(In.size()) + ":";
    H.update(Len);
    H.update(In);
  }
  return toHex(H.final<20>(), /*LowerCase=*/true);
}

PartCache::PartCache(std::string Dir) : Dir(std::move(Dir)) {
  if (!this->Dir.empty() && sys::fs::create_directories(this->Dir))
    this->Dir.clear();
}

std::string PartCache::pathOf(StringRef Key, StringRef Kind) const {
  SmallString<256> P(Dir);
  sys::path::append(P, Key.take_front(2), (Key + "." + Kind).str());
  return std::string(P);
}

std::optional<std::string> PartCache::lookup(StringRef Key, StringRef Kind) const {
  if (Dir.empty())
    return std::nullopt;
  std::string Path = pathOf(Key, Kind);
  auto Buf = MemoryBuffer::getFile(Path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!Buf)
    return std::nullopt;
  StringRef Text = (*Buf)->getBuffer();
  // "<magic><hash of data>\n<data>"
  if (!Text.consume_front(Magic))
    return std::nullopt;
  auto [Hash, Data] = Text.split('\n');
  if (Hash != contentHash(Data))
    return std::nullopt;
  // Touched, so pruning takes the entries no recent link used.
  int FD;
  if (!sys::fs::openFileForReadWrite(Path, FD, sys::fs::CD_OpenExisting, sys::fs::OF_None)) {
    sys::fs::setLastAccessAndModificationTime(FD, std::chrono::system_clock::now());
    sys::Process::SafelyCloseFileDescriptor(FD);
  }
  return Data.str();
}

void PartCache::store(StringRef Key, StringRef Kind, StringRef Data) const {
  if (Dir.empty())
    return;
  std::string Path = pathOf(Key, Kind);
  if (sys::fs::create_directories(sys::path::parent_path(Path)))
    return;
  SmallString<256> Tmp;
  int FD;
  if (sys::fs::createUniqueFile(Path + ".tmp%%%%%%", FD, Tmp))
    return;
  {
    raw_fd_ostream OS(FD, /*shouldClose=*/true);
    OS << Magic << contentHash(Data) << '\n' << Data;
    if (OS.has_error()) {
      OS.clear_error();
      sys::fs::remove(Tmp);
      return;
    }
  }
  if (sys::fs::rename(Tmp, Path))
    sys::fs::remove(Tmp);
}

void PartCache::prune(uint64_t MaxBytes) const {
  if (Dir.empty())
    return;
  struct Entry {
    std::string Path;
    sys::TimePoint<> Used;
    uint64_t Size;
  };
  std::vector<Entry> Entries;
  uint64_t Total = 0;
  std::error_code EC;
  for (sys::fs::recursive_directory_iterator It(Dir, EC), End; It != End && !EC;
       It.increment(EC)) {
    sys::fs::file_status St;
    if (It->status().getError() || sys::fs::status(It->path(), St) ||
        St.type() != sys::fs::file_type::regular_file)
      continue;
    Entries.push_back({It->path(), St.getLastModificationTime(), St.getSize()});
    Total += St.getSize();
  }
  if (Total <= MaxBytes)
    return;
  llvm::sort(Entries, [](const Entry &A, const Entry &B) { return A.Used < B.Used; });
  for (const Entry &E : Entries) {
    if (Total <= MaxBytes)
      break;
    if (!sys::fs::remove(E.Path))
      Total -= E.Size;
  }
}
