//===- OptimizedModuleCacheTest.cpp - O3's result, by its input -----------===//
//
// The key of an optimised module changes with the module O3 is given and
// with each option its result depends on, and with OXIDE_LLVM_ARGS there is
// none; a stored module is read back as the same bitcode, its intrinsics'
// declarations with the attributes a reader gives them; an entry that is not
// bitcode is a miss.
//===----------------------------------------------------------------------===//
#include "oxide/DeviceLinker.h"
#include "llvm/AsmParser/Parser.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"
#include <cstdlib>

using namespace llvm;
using namespace oxide;

namespace {

const char Source[] = R"(
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x() #0

define ptx_kernel void @k(ptr %out) {
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %p = getelementptr i32, ptr %out, i32 %t
  store i32 %t, ptr %p
  ret void
}

attributes #0 = { mustprogress nounwind }
)";

std::unique_ptr<Module> parse(LLVMContext &Ctx, StringRef Text) {
  SMDiagnostic Err;
  std::unique_ptr<Module> M = parseAssemblyString(Text, Err, Ctx);
  if (!M)
    Err.print("OptimizedModuleCacheTest", errs());
  return M;
}

std::string bitcodeOf(const Module &M) {
  std::string Out;
  raw_string_ostream OS(Out);
  WriteBitcodeToFile(M, OS);
  return Out;
}

class OptimizedModuleCacheTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(sys::fs::createUniqueDirectory("oxide-optimized-module-test", Dir));
    unsetenv("OXIDE_LLVM_ARGS");
    Opts.Arch = "sm_90";
    M = parse(Ctx, Source);
    ASSERT_TRUE(M);
  }
  void TearDown() override { sys::fs::remove_directories(Dir); }

  SmallString<128> Dir;
  LinkerOptions Opts;
  LLVMContext Ctx;
  std::unique_ptr<Module> M; // Source, parsed
};

TEST_F(OptimizedModuleCacheTest, KeyFollowsTheModuleAndTheOptions) {
  std::string Key = optimizedModuleKey(*M, Opts, 2);
  ASSERT_FALSE(Key.empty());
  EXPECT_EQ(Key, optimizedModuleKey(*M, Opts, 2));

  // Another number of pieces, architecture or debug setting: another key.
  EXPECT_NE(Key, optimizedModuleKey(*M, Opts, 1));
  LinkerOptions Other = Opts;
  Other.Arch = "sm_80";
  EXPECT_NE(Key, optimizedModuleKey(*M, Other, 2));
  Other = Opts;
  Other.DeviceDebug = "lines";
  EXPECT_NE(Key, optimizedModuleKey(*M, Other, 2));

  // A kernel that stores one more than its index is another module.
  std::string Edited = Source;
  size_t At = Edited.find("store i32 %t");
  ASSERT_NE(At, std::string::npos);
  Edited.replace(At, 12, "%u = add i32 %t, 1\n  store i32 %u");
  LLVMContext Ctx2;
  auto E = parse(Ctx2, Edited);
  ASSERT_TRUE(E);
  EXPECT_NE(Key, optimizedModuleKey(*E, Opts, 2));

  // What OXIDE_LLVM_ARGS asks for is O3's own run: nothing is cached.
  setenv("OXIDE_LLVM_ARGS", "-print-after-all", 1);
  EXPECT_TRUE(optimizedModuleKey(*M, Opts, 2).empty());
  unsetenv("OXIDE_LLVM_ARGS");
}

TEST_F(OptimizedModuleCacheTest, StoredModuleIsReadBackAsTheSameBitcode) {
  PartCache Cache{std::string(Dir)};
  std::string Key = optimizedModuleKey(*M, Opts, 1);
  LLVMContext ReadCtx;
  EXPECT_FALSE(lookupOptimizedModule(Cache, Key, ReadCtx, "oxide-device"));

  ASSERT_TRUE(storeOptimizedModule(Cache, Key, *M));
  // The intrinsic's declaration now has the intrinsic's own attributes,
  // not those the module gave it (mustprogress is not among them).
  Function *Tid = M->getFunction("llvm.nvvm.read.ptx.sreg.tid.x");
  ASSERT_TRUE(Tid);
  EXPECT_FALSE(Tid->hasFnAttribute(Attribute::MustProgress));

  auto Hit = lookupOptimizedModule(Cache, Key, ReadCtx, "oxide-device");
  ASSERT_TRUE(Hit);
  EXPECT_EQ(Hit->getModuleIdentifier(), "oxide-device");
  EXPECT_EQ(bitcodeOf(*Hit), bitcodeOf(*M));
  EXPECT_EQ(Hit->getFunction("llvm.nvvm.read.ptx.sreg.tid.x")->getAttributes(),
            Intrinsic::getAttributes(ReadCtx, Intrinsic::nvvm_read_ptx_sreg_tid_x,
                                     Hit->getFunction("llvm.nvvm.read.ptx.sreg.tid.x")
                                         ->getFunctionType()));
}

TEST_F(OptimizedModuleCacheTest, EntryThatIsNotBitcodeIsAMiss) {
  PartCache Cache{std::string(Dir)};
  std::string Key = optimizedModuleKey(*M, Opts, 1);
  // A whole entry (its hash checks) whose data is not bitcode.
  Cache.store(Key, "opt.bc", "not bitcode");
  LLVMContext ReadCtx;
  EXPECT_FALSE(lookupOptimizedModule(Cache, Key, ReadCtx, "oxide-device"));
}

TEST_F(OptimizedModuleCacheTest, NoCacheStoresNothing) {
  PartCache Off{std::string()};
  std::string Key = optimizedModuleKey(*M, Opts, 1);
  EXPECT_FALSE(storeOptimizedModule(Off, Key, *M));
  LLVMContext ReadCtx;
  EXPECT_FALSE(lookupOptimizedModule(Off, Key, ReadCtx, "oxide-device"));
}

TEST_F(OptimizedModuleCacheTest, PartIndexIsReadBackInOrder) {
  PartCache Cache{std::string(Dir)};
  std::string Key = optimizedModuleKey(*M, Opts, 1);
  EXPECT_FALSE(lookupPartIndex(Cache, Key));
  storePartIndex(Cache, Key, {887, {"c0ffee", "beef", "0a"}});
  std::optional<PartIndex> Index = lookupPartIndex(Cache, Key);
  ASSERT_TRUE(Index);
  EXPECT_EQ(Index->SplitParts, 887u);
  EXPECT_EQ(Index->BucketKeys, (std::vector<std::string>{"c0ffee", "beef", "0a"}));
  // Kept apart from the module stored under the same key.
  LLVMContext ReadCtx;
  EXPECT_FALSE(lookupOptimizedModule(Cache, Key, ReadCtx, "oxide-device"));
}

TEST_F(OptimizedModuleCacheTest, PartIndexOfAnotherFormatOrNoKeyIsAMiss) {
  PartCache Cache{std::string(Dir)};
  std::string Key = optimizedModuleKey(*M, Opts, 1);
  Cache.store(Key, "parts", "oxide part index 2\n3\nabc\n");
  EXPECT_FALSE(lookupPartIndex(Cache, Key));
  Cache.store(Key, "parts", "oxide part index 1\nmany\nabc\n");
  EXPECT_FALSE(lookupPartIndex(Cache, Key));
  Cache.store(Key, "parts", "oxide part index 1\n3\n");
  EXPECT_FALSE(lookupPartIndex(Cache, Key));
  // No key (OXIDE_LLVM_ARGS): nothing stored, nothing found.
  storePartIndex(Cache, "", {1, {"abc"}});
  EXPECT_FALSE(lookupPartIndex(Cache, ""));
}

} // namespace
