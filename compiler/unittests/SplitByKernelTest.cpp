//===- SplitByKernelTest.cpp - The parts of a split module ----------------===//
//
// Each part is cloned from what it defines and what those definitions name
// (clonePart in SplitByKernel.cpp), not from every global of the module. What
// a part holds must still be a module of its own: every global its code or
// its metadata names is declared in it (a reference into the whole module
// would be a dangling cross-module use), what another part alone reaches is
// not declared, and named metadata that names another part's symbols keeps
// null in their place, as erasing an unused declaration leaves it.
//===----------------------------------------------------------------------===//
#include "oxide/DeviceLinker.h"
#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Metadata.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

using namespace llvm;
using namespace oxide;

namespace {

const char Source[] = R"(
target triple = "nvptx64-nvidia-cuda"

@TABLE = internal constant [2 x i32] [i32 3, i32 5]
@ONLY_B = internal global i32 0

define internal i32 @shared(i32 %i) {
  %p = getelementptr [2 x i32], ptr @TABLE, i32 0, i32 %i
  %v = load i32, ptr %p
  ret i32 %v
}

define internal void @only_a() {
  ret void
}

define internal void @only_b() {
  ret void
}

define ptx_kernel void @a(ptr %out) {
  %v = call i32 @shared(i32 0)
  store i32 %v, ptr %out
  call void @only_a(), !callees !0
  ret void
}

define ptx_kernel void @b(ptr %out) {
  %v = call i32 @shared(i32 1)
  store i32 %v, ptr @ONLY_B
  store i32 %v, ptr %out
  call void @only_b()
  ret void
}

!named.refs = !{!1}
!0 = !{ptr @only_a, ptr @only_b}
!1 = !{ptr @only_a, ptr @ONLY_B, ptr @shared}
)";

/// Every global value metadata in M names, through named and instruction
/// metadata, belongs to M.
bool metadataStaysInModule(const Module &M) {
  SmallVector<const MDNode *> Work;
  for (const NamedMDNode &N : M.named_metadata())
    for (const MDNode *Op : N.operands())
      Work.push_back(Op);
  for (const Function &F : M)
    for (const BasicBlock &BB : F)
      for (const Instruction &I : BB) {
        SmallVector<std::pair<unsigned, MDNode *>> MDs;
        I.getAllMetadata(MDs);
        for (const auto &[Kind, N] : MDs)
          Work.push_back(N);
      }
  for (const MDNode *N : Work)
    for (const MDOperand &Op : N->operands())
      if (auto *V = dyn_cast_or_null<ValueAsMetadata>(Op.get()))
        if (auto *GV = dyn_cast<GlobalValue>(V->getValue()); GV && GV->getParent() != &M)
          return false;
  return true;
}

std::string print(const Module &M) {
  std::string Text;
  raw_string_ostream OS(Text);
  M.print(OS, nullptr);
  return Text;
}

TEST(SplitByKernel, PartsDeclareWhatTheyNameAndNothingElse) {
  LLVMContext Ctx;
  SMDiagnostic Err;
  std::unique_ptr<Module> M = parseAssemblyString(Source, Err, Ctx);
  ASSERT_TRUE(M) << Err.getMessage().str();
  nameForSplit(*M);
  auto Parts = splitByKernel(*M);
  // The common part (shared, TABLE), then a's, then b's.
  ASSERT_EQ(Parts.size(), 3u);
  for (const auto &P : Parts) {
    std::string Msg;
    raw_string_ostream OS(Msg);
    EXPECT_FALSE(verifyModule(*P, &OS)) << Msg;
    EXPECT_TRUE(metadataStaysInModule(*P)) << print(*P);
  }
  const Module &Common = *Parts[0], &A = *Parts[1], &B = *Parts[2];
  EXPECT_FALSE(Common.getFunction("shared")->isDeclaration());
  EXPECT_FALSE(Common.getNamedGlobal("TABLE")->isDeclaration());
  EXPECT_FALSE(Common.getFunction("a"));
  EXPECT_FALSE(Common.getNamedGlobal("ONLY_B"));

  EXPECT_FALSE(A.getFunction("a")->isDeclaration());
  EXPECT_FALSE(A.getFunction("only_a")->isDeclaration());
  EXPECT_TRUE(A.getFunction("shared")->isDeclaration());
  EXPECT_FALSE(A.getFunction("b"));
  EXPECT_FALSE(A.getNamedGlobal("ONLY_B"));
  EXPECT_FALSE(A.getNamedGlobal("TABLE")); // only shared reads it

  EXPECT_FALSE(B.getFunction("b")->isDeclaration());
  EXPECT_FALSE(B.getNamedGlobal("ONLY_B")->isDeclaration());
  EXPECT_TRUE(B.getFunction("shared")->isDeclaration());
  EXPECT_FALSE(B.getFunction("only_a"));

  // a's call names b's function in its metadata alone: not declared in a's
  // part, and the metadata keeps null in its place.
  EXPECT_FALSE(A.getFunction("only_b"));
  const Instruction *Call = nullptr;
  for (const Instruction &I : A.getFunction("a")->getEntryBlock())
    if (I.getMetadata(LLVMContext::MD_callees))
      Call = &I;
  ASSERT_TRUE(Call);
  const MDNode *Callees = Call->getMetadata(LLVMContext::MD_callees);
  ASSERT_EQ(Callees->getNumOperands(), 2u);
  EXPECT_TRUE(Callees->getOperand(0));
  EXPECT_FALSE(Callees->getOperand(1));

  // The named metadata: each part keeps what it has, null for the rest.
  auto Refs = [](const Module &P) {
    std::vector<std::string> Out;
    const MDNode *N = P.getNamedMetadata("named.refs")->getOperand(0);
    for (const MDOperand &Op : N->operands()) {
      auto *V = dyn_cast_or_null<ValueAsMetadata>(Op.get());
      Out.push_back(V ? V->getValue()->getName().str() : "null");
    }
    return Out;
  };
  EXPECT_EQ(Refs(A), (std::vector<std::string>{"only_a", "null", "shared"}));
  EXPECT_EQ(Refs(B), (std::vector<std::string>{"null", "ONLY_B", "shared"}));
  EXPECT_EQ(Refs(Common), (std::vector<std::string>{"null", "null", "shared"}));
}

} // namespace
