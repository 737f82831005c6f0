//===- PartCacheTest.cpp - The per-part cache of the device link ----------===//
//
// A stored part is found again under its key; a changed input makes another
// key (a miss, so an edited kernel is compiled again); an entry that was
// damaged on disk (cut short, a byte changed, another format) is a miss, never
// wrong PTX; pruning keeps the most recently used entries.
//===----------------------------------------------------------------------===//
#include "oxide/DeviceLinker.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"
#include <thread>

using namespace llvm;
using namespace oxide;

namespace {

class PartCacheTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(sys::fs::createUniqueDirectory("oxide-part-cache-test", Dir));
  }
  void TearDown() override { sys::fs::remove_directories(Dir); }

  /// The one file the cache wrote for Key (it shards by the key's first two
  /// characters).
  std::string entryPath(StringRef Key, StringRef Kind) {
    SmallString<256> P(Dir);
    sys::path::append(P, Key.take_front(2), (Key + "." + Kind).str());
    return std::string(P);
  }

  void overwrite(const std::string &Path, StringRef Text) {
    std::error_code EC;
    raw_fd_ostream OS(Path, EC);
    ASSERT_FALSE(EC);
    OS << Text;
  }

  SmallString<128> Dir;
};

TEST_F(PartCacheTest, StoredPartIsFoundUnderItsKey) {
  PartCache Cache{std::string(Dir)};
  ASSERT_TRUE(Cache.enabled());
  std::string Key = partCacheKey({"bitcode of kernel 7", "sm_90", "22.1"});
  EXPECT_FALSE(Cache.lookup(Key, "ptx"));
  Cache.store(Key, "ptx", ".entry k7 {}\n");
  auto Hit = Cache.lookup(Key, "ptx");
  ASSERT_TRUE(Hit);
  EXPECT_EQ(*Hit, ".entry k7 {}\n");
  // Another kind under the same key is another entry.
  EXPECT_FALSE(Cache.lookup(Key, "cubin"));
}

TEST_F(PartCacheTest, EditedInputIsAMiss) {
  PartCache Cache{std::string(Dir)};
  std::string Before = partCacheKey({"acc = mix(acc, v)", "sm_90"});
  std::string After = partCacheKey({"acc = mix(v, acc)", "sm_90"});
  std::string OtherArch = partCacheKey({"acc = mix(acc, v)", "sm_80"});
  EXPECT_NE(Before, After);
  EXPECT_NE(Before, OtherArch);
  // Moving bytes from one input to the next is another key too.
  EXPECT_NE(partCacheKey({"ab", "c"}), partCacheKey({"a", "bc"}));
  Cache.store(Before, "ptx", "old");
  EXPECT_FALSE(Cache.lookup(After, "ptx"));
  EXPECT_EQ(*Cache.lookup(Before, "ptx"), "old");
}

TEST_F(PartCacheTest, DamagedEntryIsAMiss) {
  PartCache Cache{std::string(Dir)};
  std::string Key = partCacheKey({"part"});
  Cache.store(Key, "ptx", "the PTX of a part");
  std::string Path = entryPath(Key, "ptx");
  auto Buf = MemoryBuffer::getFile(Path);
  ASSERT_TRUE(Buf);
  std::string Whole = (*Buf)->getBuffer().str();

  overwrite(Path, StringRef(Whole).drop_back(3)); // cut short
  EXPECT_FALSE(Cache.lookup(Key, "ptx"));
  std::string Flipped = Whole;
  Flipped.back() ^= 1; // one byte changed
  overwrite(Path, Flipped);
  EXPECT_FALSE(Cache.lookup(Key, "ptx"));
  overwrite(Path, "the PTX of a part"); // no header at all
  EXPECT_FALSE(Cache.lookup(Key, "ptx"));
  overwrite(Path, "");
  EXPECT_FALSE(Cache.lookup(Key, "ptx"));
  // Stored again, it is believed again.
  Cache.store(Key, "ptx", "the PTX of a part");
  EXPECT_EQ(*Cache.lookup(Key, "ptx"), "the PTX of a part");
}

TEST_F(PartCacheTest, NoDirectoryHoldsNothing) {
  PartCache Cache("");
  EXPECT_FALSE(Cache.enabled());
  Cache.store("abcd", "ptx", "x");
  EXPECT_FALSE(Cache.lookup("abcd", "ptx"));
}

TEST_F(PartCacheTest, PruneKeepsTheRecentlyUsed) {
  PartCache Cache{std::string(Dir)};
  std::string Old = partCacheKey({"old"}), New = partCacheKey({"new"});
  std::string Data(4096, 'x');
  Cache.store(Old, "ptx", Data);
  Cache.store(New, "ptx", Data);
  // The old entry's time is set well before the new one's.
  int FD;
  ASSERT_FALSE(sys::fs::openFileForReadWrite(entryPath(Old, "ptx"), FD,
                                             sys::fs::CD_OpenExisting, sys::fs::OF_None));
  sys::fs::setLastAccessAndModificationTime(
      FD, std::chrono::system_clock::now() - std::chrono::hours(1));
  ::close(FD);
  Cache.prune(6000); // room for one entry
  EXPECT_FALSE(Cache.lookup(Old, "ptx"));
  EXPECT_TRUE(Cache.lookup(New, "ptx"));
}

} // namespace
