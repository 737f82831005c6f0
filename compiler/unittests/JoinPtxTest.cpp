//===- JoinPtxTest.cpp - The parts' PTX made one module -------------------===//
//
// joinPtxParts keeps one header, drops each `.extern` declaration of what an
// earlier part defined or declared (ptxas refuses a declaration after the
// definition), keeps declarations of what no part defines (vprintf), and
// refuses a symbol two parts define.
//===----------------------------------------------------------------------===//
#include "oxide/DeviceLinker.h"
#include "llvm/ADT/StringRef.h"
#include "gtest/gtest.h"

using namespace llvm;
using namespace oxide;

namespace {

const char Header[] = "//\n.version 8.1\n.target sm_90\n.address_size 64\n\n";

size_t count(StringRef Text, StringRef What) {
  size_t N = 0;
  for (size_t At = Text.find(What); At != StringRef::npos; At = Text.find(What, At + 1))
    ++N;
  return N;
}

TEST(JoinPtxParts, OneHeaderAndEachSymbolDefinedOnce) {
  std::string Common = std::string(Header) +
                       ".visible .global .align 4 .b8 TABLE[8] = {1, 2};\n"
                       ".visible .func (.param .b32 r) mix(.param .b32 a)\n{\n\tret;\n}\n";
  std::string A = std::string(Header) +
                  ".extern .global .align 4 .b8 TABLE[8];\n"
                  ".extern .func (.param .b32 r) mix(.param .b32 a);\n"
                  ".extern .func (.param .b32 r) vprintf(.param .b64 f, .param .b64 a);\n"
                  ".visible .entry a()\n{\n\tret;\n}\n";
  std::string B = std::string(Header) +
                  ".extern .func (.param .b32 r) mix\n(\n.param .b32 a\n)\n;\n"
                  ".extern .func (.param .b32 r) vprintf(.param .b64 f, .param .b64 a);\n"
                  ".visible .entry b()\n{\n\tret;\n}\n";
  auto Joined = joinPtxParts({Common, A, B});
  ASSERT_TRUE(bool(Joined)) << toString(Joined.takeError());
  EXPECT_EQ(count(*Joined, ".version"), 1u);
  EXPECT_EQ(count(*Joined, ".address_size"), 1u);
  EXPECT_EQ(count(*Joined, "TABLE[8]"), 1u);
  EXPECT_EQ(count(*Joined, ") mix"), 1u);
  // Nobody defines vprintf (the driver does): declared once.
  EXPECT_EQ(count(*Joined, "vprintf"), 1u);
  EXPECT_LT(Joined->find(".visible .func"), Joined->find(".entry a"));
  EXPECT_LT(Joined->find(".entry a"), Joined->find(".entry b"));
}

TEST(JoinPtxParts, TwoDefinitionsAreRefused) {
  std::string A = std::string(Header) + ".func f()\n{\n\tret;\n}\n";
  std::string B = std::string(Header) + ".func f()\n{\n\tret;\n}\n";
  auto Joined = joinPtxParts({A, B});
  ASSERT_FALSE(bool(Joined));
  EXPECT_NE(toString(Joined.takeError()).find("`f`"), std::string::npos);
}

TEST(JoinPtxParts, ForwardDeclarationInItsOwnPartStays) {
  std::string A = std::string(Header) + ".func g();\n.visible .entry a()\n{\n\tcall g;\n}\n"
                                        ".func g()\n{\n\tret;\n}\n";
  auto Joined = joinPtxParts({A});
  ASSERT_TRUE(bool(Joined));
  EXPECT_EQ(count(*Joined, ".func g()"), 2u);
}

} // namespace
