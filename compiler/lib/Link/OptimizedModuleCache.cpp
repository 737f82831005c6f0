//===- OptimizedModuleCache.cpp - O3's result, by the module it was given -===//
//
// The part cache (PartCache.cpp) keys each kernel's PTX by its bitcode after
// the whole pipeline, so it can only answer once O3 and the post-O3 passes
// have run, and those are most of a relink. Yet most relinks give O3 the
// same module as the last one did: an edit of host code, or of a crate's
// host side that uses a library of kernels, changes nothing the device
// reaches. So the module that O3 and the post-O3 passes made is cached too,
// as bitcode, keyed by the legalised and linked module they were given
// (its bitcode), by what else their result depends on (the architecture,
// the number of pieces O3 ran in, device debug info), and by oxide-link's
// own executable and LLVM's version, so that a rebuilt linker never takes
// another build's result.
//
// Why a hit is the same program: O3 and the post-O3 passes are a function
// of the module and of those options, and a link that reported an error
// never reaches the store, so a module taken from the cache is one that
// passed every check the pipeline makes (whose findings are all errors:
// there are no warnings to replay).
// The module is written with its use-list order and read into a context of
// its own (whose type names nothing else has taken), and the link that
// stores it first gives its intrinsics' declarations the attributes a reader
// gives them, so a hit cuts parts of the same bitcode as the link that
// stored the entry, and they hit the part cache in turn.
//
// The split of that module is indexed under the same key: the number of
// parts and the part-cache keys of its buckets' PTX (the buckets are a
// function of the module, the architecture and the linker's own code, all
// in the key). A hit whose buckets are all still cached takes them without
// cutting the module again, which is most of what a relink after a host-only
// edit had left to do; where one has been pruned, the split runs as before.
//
// Not used where OXIDE_LLVM_ARGS is set: what it asks LLVM to print or time
// is the run of O3 itself.
//===----------------------------------------------------------------------===//
#include "oxide/DeviceLinker.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include <cstdlib>

using namespace llvm;
using namespace oxide;

namespace {

const char Kind[] = "opt.bc";
const char IndexKind[] = "parts";
/// The first line of an index: a later linker's format is a miss, not a misreading.
const char IndexHeader[] = "oxide part index 1";

/// A hash of this process's executable: oxide-link's passes and O3's
/// configuration are its code, so a rebuilt linker (another revision, or a
/// developer's edit of a pass) gets keys of its own. Empty where the file
/// cannot be read, which turns the cache off.
const std::string &linkerIdentity() {
  static const std::string Identity = [] {
    // Any symbol of this binary will do for the address.
    static int Anchor;
    std::string Exe = sys::fs::getMainExecutable(nullptr, &Anchor);
    auto Buf = MemoryBuffer::getFile(Exe, /*IsText=*/false, /*RequiresNullTerminator=*/false);
    if (Exe.empty() || !Buf)
      return std::string();
    return partCacheKey({(*Buf)->getBuffer()});
  }();
  return Identity;
}

} // namespace

std::string oxide::optimizedModuleKey(const Module &M, const LinkerOptions &Opts,
                                      unsigned Pieces) {
  if (const char *LLVMArgs = getenv("OXIDE_LLVM_ARGS"); LLVMArgs && *LLVMArgs)
    return "";
  if (linkerIdentity().empty())
    return "";
  SmallVector<char, 0> Bitcode;
  raw_svector_ostream OS(Bitcode);
  WriteBitcodeToFile(M, OS);
  return partCacheKey({StringRef(Bitcode.data(), Bitcode.size()), Opts.Arch, Opts.DeviceDebug,
                       std::to_string(Pieces), LLVM_VERSION_STRING, linkerIdentity(),
                       "optimized module"});
}

namespace {

/// Bitcode read into Ctx under the identifier the linked module had (bitcode
/// does not keep it; the dumps print it); null where it does not parse.
std::unique_ptr<Module> readModule(StringRef Bitcode, LLVMContext &Ctx, StringRef Identifier) {
  auto M = parseBitcodeFile(MemoryBufferRef(Bitcode, Identifier), Ctx);
  if (!M) {
    consumeError(M.takeError());
    return nullptr;
  }
  // Bitcode may go: parseBitcodeFile materialises the whole module and
  // drops its reader before it returns.
  (*M)->setModuleIdentifier(Identifier);
  return std::move(*M);
}

} // namespace

std::unique_ptr<Module> oxide::lookupOptimizedModule(const PartCache &Cache, StringRef Key,
                                                     LLVMContext &Ctx, StringRef Identifier) {
  if (Key.empty())
    return nullptr;
  std::optional<std::string> Bitcode = Cache.lookup(Key, Kind);
  // An entry that passed the cache's own check but is not bitcode this LLVM
  // reads is a miss like any other.
  return Bitcode ? readModule(*Bitcode, Ctx, Identifier) : nullptr;
}

bool oxide::storeOptimizedModule(const PartCache &Cache, StringRef Key, Module &M) {
  if (Key.empty() || !Cache.enabled())
    return false;
  // Reading bitcode gives each intrinsic's declaration the attributes of
  // the intrinsic itself (O3 adds some, such as mustprogress, that no code
  // generation reads): given them here too, this link cuts the same parts
  // as a link that reads this entry, and both find each other's PTX in the
  // part cache.
  for (Function &F : M)
    if (F.isIntrinsic())
      F.setAttributes(Intrinsic::getAttributes(M.getContext(), F.getIntrinsicID(),
                                               F.getFunctionType()));
  SmallVector<char, 0> Bitcode;
  raw_svector_ostream OS(Bitcode);
  WriteBitcodeToFile(M, OS, /*ShouldPreserveUseListOrder=*/true);
  Cache.store(Key, Kind, StringRef(Bitcode.data(), Bitcode.size()));
  return true;
}

std::optional<PartIndex> oxide::lookupPartIndex(const PartCache &Cache, StringRef Key) {
  if (Key.empty())
    return std::nullopt;
  std::optional<std::string> Text = Cache.lookup(Key, IndexKind);
  if (!Text)
    return std::nullopt;
  SmallVector<StringRef, 0> Lines;
  StringRef(*Text).split(Lines, '\n', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  PartIndex Index;
  if (Lines.size() < 3 || Lines[0] != IndexHeader || Lines[1].getAsInteger(10, Index.SplitParts))
    return std::nullopt;
  for (StringRef Line : ArrayRef(Lines).drop_front(2))
    Index.BucketKeys.push_back(Line.str());
  return Index;
}

void oxide::storePartIndex(const PartCache &Cache, StringRef Key, const PartIndex &Index) {
  if (Key.empty() || Index.BucketKeys.empty())
    return;
  std::string Text = std::string(IndexHeader) + "\n" + std::to_string(Index.SplitParts) + "\n";
  for (const std::string &K : Index.BucketKeys)
    Text += K + "\n";
  Cache.store(Key, IndexKind, Text);
}
