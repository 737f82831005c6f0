//===- CubinFramesTest.cpp - Stack frames read from a cubin ---------------===//
//
// The per-part ptxas runs without -v and the stack bound takes each
// function's frame from the cubin (cubinFrames). The frames must be the ones
// ptxas -v reports for the same PTX, for a function with a frame and one
// without; what is not a cubin with those records is nullopt, so the link
// asks ptxas -v instead. Needs ptxas (OXIDE_CUDA_PATH, else the default
// toolkit path); skipped without it.
//===----------------------------------------------------------------------===//
#include "oxide/DeviceLinker.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

using namespace llvm;
using namespace oxide;

namespace {

// `deep` keeps a local array indexed by its argument: a frame of 128 bytes.
const char Ptx[] = R"(.version 8.1
.target sm_90
.address_size 64

.visible .func (.param .b32 r) deep(.param .b32 i)
{
  .local .align 4 .b8 buf[128];
  .reg .b32 %r<6>;
  .reg .b64 %rd<6>;
  ld.param.b32 %r1, [i];
  mov.u64 %rd1, buf;
  and.b32 %r2, %r1, 31;
  mul.wide.u32 %rd2, %r2, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.local.u32 [%rd3], %r1;
  shr.u32 %r4, %r1, 5;
  and.b32 %r5, %r4, 31;
  mul.wide.u32 %rd4, %r5, 4;
  add.s64 %rd5, %rd1, %rd4;
  ld.local.u32 %r3, [%rd5];
  st.param.b32 [r], %r3;
  ret;
}

.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<3>;
  .reg .b64 %rd<2>;
  mov.u32 %r1, %tid.x;
  { .param .b32 p; .param .b32 q; st.param.b32 [p], %r1;
    call.uni (q), deep, (p); ld.param.b32 %r2, [q]; }
  ld.param.u64 %rd1, [out];
  st.global.u32 [%rd1], %r2;
  ret;
}
)";

std::string ptxasPath() {
  const char *Cuda = getenv("OXIDE_CUDA_PATH");
  SmallString<256> P(Cuda && *Cuda ? Cuda : "/usr/local/cuda");
  sys::path::append(P, "bin", "ptxas");
  return sys::fs::can_execute(P) ? std::string(P) : std::string();
}

TEST(CubinFrames, SameAsPtxasVerbose) {
  std::string Ptxas = ptxasPath();
  if (Ptxas.empty())
    GTEST_SKIP() << "no ptxas";
  SmallString<128> In, Out, Log;
  int FD;
  ASSERT_FALSE(sys::fs::createTemporaryFile("cubin-frames", "ptx", FD, In));
  {
    raw_fd_ostream OS(FD, true);
    OS << Ptx;
  }
  ASSERT_FALSE(sys::fs::createTemporaryFile("cubin-frames", "cubin", Out));
  ASSERT_FALSE(sys::fs::createTemporaryFile("cubin-frames", "log", Log));
  StringRef Args[] = {Ptxas, "-arch=sm_90", "-c", "-v", "-o", Out, In};
  std::optional<StringRef> Redirects[] = {std::nullopt, StringRef(Log), StringRef(Log)};
  int RC = sys::ExecuteAndWait(Ptxas, Args, std::nullopt, Redirects);
  auto Cubin = MemoryBuffer::getFile(Out, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  auto Text = MemoryBuffer::getFile(Log);
  sys::fs::remove(In);
  sys::fs::remove(Out);
  sys::fs::remove(Log);
  ASSERT_EQ(RC, 0) << (Text ? (*Text)->getBuffer().str() : "");
  ASSERT_TRUE(Cubin && Text);
  std::map<std::string, uint64_t> Reported = parsePtxasFrames((*Text)->getBuffer());
  ASSERT_EQ(Reported.size(), 2u) << (*Text)->getBuffer().str();
  EXPECT_GT(Reported["deep"], 0u);
  std::optional<std::map<std::string, uint64_t>> Read = cubinFrames((*Cubin)->getBuffer());
  ASSERT_TRUE(Read);
  EXPECT_EQ(*Read, Reported);
}

TEST(CubinFrames, NotACubinIsNone) {
  EXPECT_FALSE(cubinFrames(""));
  EXPECT_FALSE(cubinFrames("not an ELF file at all"));
  // An ELF header cut short.
  EXPECT_FALSE(cubinFrames(StringRef("\x7f" "ELF\x02\x01\x01", 7)));
}

} // namespace
