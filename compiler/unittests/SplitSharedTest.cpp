//===- SplitSharedTest.cpp - Shared memory in the parts of the device module ===//
//
// splitByKernel defines a shared-memory variable that several kernels reach
// through their own code in each of their parts, internal (one per block
// anyway, so no kernel can tell), and keeps one reached by common code in the
// common part, external; joinPtxParts keeps one of identical definitions and
// still refuses two different ones.
//===----------------------------------------------------------------------===//
#include "oxide/DeviceLinker.h"
#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/SourceMgr.h"
#include "gtest/gtest.h"

using namespace llvm;
using namespace oxide;

namespace {

// Kernels a and b each write TILE from their own body (a generic kernel's
// `static`, one item for all its instances); both call `helper`, which
// reads COMMON.
const char Ir[] = R"(
@TILE = internal addrspace(3) global [16 x i32] undef, align 4
@COMMON = internal addrspace(3) global [4 x i32] undef, align 4

define internal i32 @helper(i32 %i) noinline {
  %p = getelementptr [4 x i32], ptr addrspace(3) @COMMON, i32 0, i32 %i
  %v = load i32, ptr addrspace(3) %p
  ret i32 %v
}

define ptx_kernel void @a(i32 %i) {
  %p = getelementptr [16 x i32], ptr addrspace(3) @TILE, i32 0, i32 %i
  %v = call i32 @helper(i32 %i)
  store i32 %v, ptr addrspace(3) %p
  ret void
}

define ptx_kernel void @b(i32 %i) {
  %p = getelementptr [16 x i32], ptr addrspace(3) @TILE, i32 0, i32 %i
  %v = call i32 @helper(i32 %i)
  %w = add i32 %v, 1
  store i32 %w, ptr addrspace(3) %p
  ret void
}
)";

TEST(SplitByKernel, SharedVariableOfKernelsOwnCodeIsInEachPart) {
  LLVMContext Ctx;
  SMDiagnostic Err;
  std::unique_ptr<Module> M = parseAssemblyString(Ir, Err, Ctx);
  ASSERT_TRUE(M) << Err.getMessage().str();
  nameForSplit(*M);
  auto Parts = splitByKernel(*M);
  ASSERT_EQ(Parts.size(), 3u); // common, a, b
  const GlobalVariable *CommonTile = Parts[0]->getGlobalVariable("TILE", true);
  EXPECT_TRUE(!CommonTile || CommonTile->isDeclaration()) << "the common part should not define TILE";
  for (size_t P = 1; P < 3; ++P) {
    const GlobalVariable *Tile = Parts[P]->getGlobalVariable("TILE", true);
    ASSERT_TRUE(Tile) << "part " << P << " lacks TILE";
    EXPECT_FALSE(Tile->isDeclaration()) << "part " << P;
    EXPECT_TRUE(Tile->hasLocalLinkage()) << "part " << P;
  }
  // COMMON is reached through the helper, common code: one definition, in
  // the common part.
  const GlobalVariable *Common = Parts[0]->getGlobalVariable("COMMON", true);
  ASSERT_TRUE(Common);
  EXPECT_FALSE(Common->isDeclaration());
  for (size_t P = 1; P < 3; ++P)
    if (const GlobalVariable *G = Parts[P]->getGlobalVariable("COMMON", true))
      EXPECT_TRUE(G->isDeclaration()) << "part " << P;
}

const char Header[] = "//\n.version 8.1\n.target sm_90\n.address_size 64\n\n";

TEST(JoinPtxParts, IdenticalSharedDefinitionsAreKeptOnce) {
  std::string A = std::string(Header) + ".shared .align 4 .b8 TILE[64];\n.visible .entry a()\n{\n\tret;\n}\n";
  std::string B = std::string(Header) + "// the same variable\n.shared .align 4 .b8 TILE[64];\n"
                                        ".visible .entry b()\n{\n\tret;\n}\n";
  auto Joined = joinPtxParts({A, B});
  ASSERT_TRUE(bool(Joined)) << toString(Joined.takeError());
  EXPECT_EQ(StringRef(*Joined).count("TILE[64]"), 1u);
  EXPECT_LT(Joined->find("TILE[64]"), Joined->find(".entry a"));
  EXPECT_NE(Joined->find(".entry b"), std::string::npos);
}

TEST(JoinPtxParts, DifferentSharedDefinitionsAreRefused) {
  std::string A = std::string(Header) + ".shared .align 4 .b8 TILE[64];\n";
  std::string B = std::string(Header) + ".shared .align 4 .b8 TILE[128];\n";
  auto Joined = joinPtxParts({A, B});
  ASSERT_FALSE(bool(Joined));
  EXPECT_NE(toString(Joined.takeError()).find("`TILE`"), std::string::npos);
}

} // namespace
