//===- LowerWgmma.cpp - wgmma stubs → wgmma.mma_async with register operands ===//
//
// `cuda_device::wgmma` multiplies tiles in shared memory into an accumulator
// fragment that each thread of the warpgroup holds in registers: N/2 `f32`
// for `wgmma.mma_async.sync.aligned.m64nNkK.f32.<type>.<type>` (up to 128).
// Rust passes the fragment as `&mut [f32; N/2]`, so the stub
// `__oxide_stub_wgmma_m64n<N>k<K>_f32_<type>[_rs][_trans_b](acc, desc_a | a,
// desc_b, scale_d)` (a member of one of Stubs.def's wgmma family rows, which
// give N, K, the input type — bf16 and f16 with K = 16, FP8 e4m3 and e5m2
// with K = 32 —, where A comes from and whether B is MN-major) gets a
// pointer. This pass rewrites each call into
//   * N/2 loads of the fragment,
//   * one inline asm of the instruction whose N/2 outputs ("=f") are tied to
//     those loads ("0", "1", …: CUDA's "+f"), with the descriptors ("l") and
//     `scale_d` ("r", turned into the instruction's predicate); A and B are
//     not negated (imm-scale 1) and, for the 2-byte types, not transposed
//     (imm-trans 0: both K-major; the FP8 forms have no transpose operands,
//     FP8 operands being K-major only),
//   * N/2 stores of the outputs back.
// The `_trans_b` members set the instruction's imm-trans-b to 1 (B read
// MN-major); the others 0 (K-major). A from shared memory is K-major
// (imm-trans-a 0). The `_rs` members take A from registers: `a` points at
// the thread's four b32 words of the A fragment, which become four loads
// and "r" operands (the form without imm-trans-a); SROA keeps them in
// registers the same way.
// Nothing but these constant-offset loads and stores touches the pointer, so
// once O3 inlines the wrapper into the kernel, SROA turns the array into
// registers and the instruction reads and writes them in place: the PTX has
// no local memory for the accumulators (compiler/test/wgmma-lower.ll).
//
// The asm is convergent, has side effects and carries `oxide.stub.asm`
// (RejectUnsupported lets it through). wgmma exists only on the targets
// with the `wgmma` feature in Targets.def (sm_90a; not sm_90, not sm_100a):
// for any other --arch a call is an error naming the Rust code, rather than
// a ptxas failure, where the optimised kernel still makes it (behind a
// test of `arch::has(Feature::Wgmma)` it may sit: DeferUnavailable.h).
// Runs before LowerIntrinsicStubs,
// which deletes the leftover Special stubs.
//===----------------------------------------------------------------------===//
#include "DeferUnavailable.h"
#include "oxide/Abi.h"
#include "oxide/Passes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/ErrorHandling.h"

using namespace llvm;
using namespace oxide;

namespace {

/// The shape of one wgmma stub.
struct WgmmaShape {
  unsigned N = 0;      // the B tile's width: 8…256, a multiple of 8
  unsigned K = 0;      // the reduction per instruction: 16 or 32
  StringRef InputType; // "bf16", "f16", "e4m3" or "e5m2"
  bool TransposeB = false; // B is MN-major (imm-trans-b 1)
  bool RegisterA = false;  // A is four b32 registers, not a descriptor

  /// Whether the instruction takes imm-trans-a/b (the 2-byte types only).
  bool hasTransposeOperands() const { return K == 16; }
};

/// Words of the A fragment per thread in the register form (64×16 of a
/// 16-bit type over 128 threads).
constexpr unsigned RegisterAWords = 4;

/// The shape named by a family row's suffix
/// `k<K>_f32_<type>[_rs][_trans_b]`, with width N.
WgmmaShape shapeOf(unsigned N, StringRef Suffix) {
  WgmmaShape S;
  S.N = N;
  S.TransposeB = Suffix.consume_back("_trans_b");
  S.RegisterA = Suffix.consume_back("_rs");
  auto [KPart, Rest] = Suffix.split('_');
  if (!KPart.consume_front("k") || KPart.getAsInteger(10, S.K))
    report_fatal_error("Stubs.def: wgmma family suffix without k<K>: " + Suffix);
  S.InputType = Rest.rsplit('_').second;
  return S;
}

/// The wgmma stubs by symbol: the members of Stubs.def's `wgmma_m64n`
/// families (`wgmma_m64n<N>k<K>_f32_<type>[_rs][_trans_b]`), their shape
/// read off the row.
const StringMap<WgmmaShape> &wgmmaStubs() {
  static const StringMap<WgmmaShape> Stubs = [] {
    StringMap<WgmmaShape> Out;
#define OXIDE_STUB(NAME, SIG, KIND, INTRINSIC, IMMEDIATES, MIN_SM)
#define OXIDE_STUB_FAMILY(PREFIX, FIRST, LAST, STEP, SUFFIX, SIG, KIND, INTRINSIC, IMMEDIATES,     \
                          MIN_SM)                                                                  \
  if (StringRef(#PREFIX) == "wgmma_m64n")                                                          \
    for (unsigned N = FIRST; N <= LAST; N += STEP)                                                 \
      Out[stubSymbol(#PREFIX + Twine(N) + #SUFFIX)] = shapeOf(N, #SUFFIX);
#include "oxide/Stubs.def"
#undef OXIDE_STUB
#undef OXIDE_STUB_FAMILY
    return Out;
  }();
  return Stubs;
}

/// The PTX: a predicate from `scale_d`, then the instruction with the N/2
/// accumulators $0…$(R-1); $R…$(2R-1) are the tied inputs (not named in the
/// text). Then A: the descriptor $2R, or the four words $2R…$2R+3; then B's
/// descriptor and `scale_d`.
std::string asmText(const WgmmaShape &S) {
  unsigned R = S.N / 2;
  unsigned A = 2 * R, B = S.RegisterA ? A + RegisterAWords : A + 1, Scale = B + 1;
  std::string Text;
  raw_string_ostream OS(Text);
  OS << "{\n.reg .pred p;\nsetp.ne.b32 p, $" << Scale << ", 0;\n"
     << "wgmma.mma_async.sync.aligned.m64n" << S.N << "k" << S.K << ".f32." << S.InputType
     << "." << S.InputType << " {";
  for (unsigned I = 0; I < R; ++I)
    OS << (I ? ", $" : "$") << I;
  OS << "}, ";
  if (S.RegisterA) {
    OS << "{";
    for (unsigned I = 0; I < RegisterAWords; ++I)
      OS << (I ? ", $" : "$") << A + I;
    OS << "}";
  } else {
    OS << "$" << A;
  }
  // imm-scale-a, imm-scale-b, then for the 2-byte types [imm-trans-a,]
  // imm-trans-b.
  OS << ", $" << B << ", p, 1, 1";
  if (S.hasTransposeOperands())
    OS << ", " << (S.RegisterA ? "" : "0, ") << (S.TransposeB ? 1 : 0);
  OS << ";\n}";
  return Text;
}

std::string constraints(const WgmmaShape &S) {
  unsigned R = S.N / 2;
  std::string C;
  for (unsigned I = 0; I < R; ++I)
    C += "=f,";
  for (unsigned I = 0; I < R; ++I)
    C += utostr(I) + ",";
  if (S.RegisterA)
    for (unsigned I = 0; I < RegisterAWords; ++I)
      C += "r,";
  else
    C += "l,";
  return C + "l,r";
}

void lowerCall(CallInst &C, const WgmmaShape &S) {
  LLVMContext &Ctx = C.getContext();
  unsigned R = S.N / 2;
  IRBuilder<> B(&C);
  Type *F32 = B.getFloatTy();
  Value *Acc = C.getArgOperand(0);
  SmallVector<Value *> Slots, Args;
  SmallVector<Type *> ArgTypes;
  for (unsigned I = 0; I < R; ++I) {
    Slots.push_back(B.CreateConstInBoundsGEP1_32(F32, Acc, I));
    Args.push_back(B.CreateAlignedLoad(F32, Slots.back(), Align(4)));
    ArgTypes.push_back(F32);
  }
  if (S.RegisterA) {
    Type *I32 = B.getInt32Ty();
    for (unsigned I = 0; I < RegisterAWords; ++I) {
      Value *Word = B.CreateConstInBoundsGEP1_32(I32, C.getArgOperand(1), I);
      Args.push_back(B.CreateAlignedLoad(I32, Word, Align(4)));
      ArgTypes.push_back(I32);
    }
  } else {
    Args.push_back(C.getArgOperand(1));
    ArgTypes.push_back(C.getArgOperand(1)->getType());
  }
  for (unsigned I = 2; I < 4; ++I) {
    Args.push_back(C.getArgOperand(I));
    ArgTypes.push_back(C.getArgOperand(I)->getType());
  }
  auto *Result = StructType::get(Ctx, SmallVector<Type *>(R, F32));
  auto *Ty = FunctionType::get(Result, ArgTypes, false);
  InlineAsm *Asm = InlineAsm::get(Ty, asmText(S), constraints(S), /*hasSideEffects=*/true);
  CallInst *Mma = B.CreateCall(Ty, Asm, Args);
  Mma->addFnAttr(Attribute::Convergent);
  Mma->setMetadata(StubAsmMetadata, MDNode::get(Ctx, {}));
  Mma->setDebugLoc(C.getDebugLoc());
  for (unsigned I = 0; I < R; ++I)
    B.CreateAlignedStore(B.CreateExtractValue(Mma, I), Slots[I], Align(4));
  C.eraseFromParent();
}

/// Where to point the user for a wgmma call: the call, or, inside
/// cuda-device's wrapper, the wrapper's caller.
std::string userLine(const CallInst &C) {
  SourceLoc Loc = sourceLocation(&C);
  if (Loc.File.find("cuda-device/src/") != std::string::npos)
    for (const User *U : C.getFunction()->users())
      if (const auto *Caller = dyn_cast<CallInst>(U))
        if (SourceLoc L = sourceLocation(Caller); !L.empty()) {
          Loc = L;
          break;
        }
  return Loc.empty() ? "" : Loc.str();
}

/// The calls of a wgmma stub on a target without wgmma: an error where
/// the optimised kernel still makes them (a test of `arch::has` that the
/// target fails rules them out; DeferUnavailable.h).
void deferWrongArchitecture(Function &Stub, const GpuTarget &Target) {
  const GpuTarget *Suggested = suggestTargetWith(feature::Wgmma, nullptr);
  std::string Message = "wgmma needs " + targetNamesWith(feature::Wgmma) +
                        ", but the kernels are being built for " + std::string(Target.Name);
  std::string Fix = "build with `--arch " + std::string(Suggested->Name) + "` or set `arch = \"" +
                    std::string(Suggested->Name) +
                    "\"` under [package.metadata.oxide] (no other target has wgmma: Targets.def)";
  StringRef Name = Stub.getName();
  Name.consume_front(StubPrefix);
  deferUnavailable(Stub, Name, Message, Fix, "arch::has(Feature::Wgmma)", userLine);
}

} // namespace

PreservedAnalyses LowerWgmmaPass::run(Module &M, ModuleAnalysisManager &) {
  bool Changed = false;
  for (Function &F : M) {
    auto It = wgmmaStubs().find(F.getName());
    if (It == wgmmaStubs().end())
      continue;
    const WgmmaShape *S = &It->second;
    SmallVector<CallInst *> Calls;
    for (User *U : F.users())
      if (auto *C = dyn_cast<CallInst>(U); C && C->getCalledFunction() == &F)
        Calls.push_back(C);
    if (!Calls.empty() && Target && !Target->has(feature::Wgmma)) {
      deferWrongArchitecture(F, *Target);
      Changed = true;
      continue;
    }
    for (CallInst *C : Calls)
      lowerCall(*C, *S);
    Changed |= !Calls.empty();
  }
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}
