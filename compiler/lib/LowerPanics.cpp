//===- LowerPanics.cpp - Panics become a located report and a trap --------===//
//
// Every Rust panic ends in one of core's panic functions (PanicFunctions.def):
// bounds checks, overflow checks, unwrap/expect, explicit `panic!`. Their real
// bodies format a message and unwind, neither of which a GPU thread can do.
//
// This pass gives each of them a device body that
//   1. reads the `&core::panic::Location` the caller passed (rustc passes it as
//      the last argument of #[track_caller] functions) at run time, so it is
//      right even when the location travels through `Option::unwrap` and other
//      #[track_caller] frames;
//   2. prints, with `vprintf`,
//        GPU thread (tx, ty, tz) of block (bx, by, bz) panicked at FILE:LINE:COL:
//        MESSAGE
//   3. executes `trap`, which aborts the kernel so the launch reports an error
//      instead of returning a wrong answer.
//
// `core::panic::Location` is `{ file: &str (ptr, len), line: u32, col: u32 }`;
// rustc stores the file name NUL-terminated, so `%s` can print it.
//===----------------------------------------------------------------------===//
#include "oxide/Passes.h"
#include "oxide/RustNames.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/IR/Module.h"

using namespace llvm;
using namespace oxide;

namespace {

enum class LocationArg { None, LastArg };

struct PanicFunction {
  StringRef Prefix;
  StringRef Message;
  LocationArg Location;
  StringRef IntegerArgs;
};

const PanicFunction PanicTable[] = {
#define OXIDE_PANIC(PREFIX, MESSAGE, LOCATION, ARGS)                           \
  {PREFIX, MESSAGE, LocationArg::LOCATION, ARGS},
#include "oxide/PanicFunctions.def"
#undef OXIDE_PANIC
};

const PanicFunction *findPanicFunction(StringRef Path) {
  for (const PanicFunction &P : PanicTable)
    if (Path.starts_with(P.Prefix))
      return &P;
  return nullptr;
}

/// "attempt to add with overflow" from `…::panic_const_add_overflow`, matching
/// the messages rustc's overflow checks print on the host.
std::string messageFromConstPanic(StringRef Path) {
  StringRef Name = Path.rsplit("::").second;
  Name.consume_front("panic_const_");
  static const std::pair<StringRef, StringRef> Verbs[] = {
      {"add", "add"},        {"sub", "subtract"},    {"mul", "multiply"},
      {"div", "divide"},     {"rem", "calculate the remainder"},
      {"neg", "negate"},     {"shr", "shift right"}, {"shl", "shift left"}};
  for (const auto &[Op, Verb] : Verbs) {
    if (Name == (Op + "_overflow").str())
      return ("attempt to " + Verb + " with overflow").str();
  }
  if (Name == "div_by_zero")
    return "attempt to divide by zero";
  if (Name == "rem_by_zero")
    return "attempt to calculate the remainder with a divisor of zero";
  std::string Words = Name.str();
  std::replace(Words.begin(), Words.end(), '_', ' ');
  return Words;
}

class PanicBodyBuilder {
public:
  explicit PanicBodyBuilder(Module &M) : M(M), Ctx(M.getContext()) {}

  void define(Function &F, const PanicFunction &P, StringRef Path) {
    if (!F.isDeclaration())
      F.deleteBody();
    F.setLinkage(GlobalValue::InternalLinkage);
    F.setPersonalityFn(nullptr);
    F.addFnAttr(Attribute::NoInline);
    F.addFnAttr(Attribute::Cold);
    F.addFnAttr(Attribute::NoReturn);

    IRBuilder<> B(BasicBlock::Create(Ctx, "panic", &F));
    std::string Message = P.Message.empty() ? messageFromConstPanic(Path) : P.Message.str();

    SmallVector<Value *> PrintArgs;
    std::string Format = "GPU thread (%u, %u, %u) of block (%u, %u, %u) panicked";
    for (Intrinsic::ID Id : {Intrinsic::nvvm_read_ptx_sreg_tid_x, Intrinsic::nvvm_read_ptx_sreg_tid_y,
                             Intrinsic::nvvm_read_ptx_sreg_tid_z, Intrinsic::nvvm_read_ptx_sreg_ctaid_x,
                             Intrinsic::nvvm_read_ptx_sreg_ctaid_y, Intrinsic::nvvm_read_ptx_sreg_ctaid_z})
      PrintArgs.push_back(B.CreateIntrinsic(Id, {}));

    Argument *Loc = locationArgument(F, P);
    if (Loc) {
      Format += " at %s:%u:%u";
      Value *File = B.CreateLoad(B.getPtrTy(), Loc, "file");
      Value *Line = B.CreateLoad(B.getInt32Ty(), B.CreateConstInBoundsGEP1_64(B.getInt8Ty(), Loc, 16), "line");
      Value *Col = B.CreateLoad(B.getInt32Ty(), B.CreateConstInBoundsGEP1_64(B.getInt8Ty(), Loc, 20), "col");
      PrintArgs.append({File, Line, Col});
    }
    Format += ":\n" + Message + "\n";
    SmallVector<StringRef> Indices;
    P.IntegerArgs.split(Indices, ',', -1, false);
    for (StringRef Idx : Indices) {
      unsigned I = 0;
      if (Idx.getAsInteger(10, I) || I >= F.arg_size() || !F.getArg(I)->getType()->isIntegerTy())
        continue;
      PrintArgs.push_back(B.CreateZExtOrTrunc(F.getArg(I), B.getInt64Ty()));
    }
    emitPrintf(B, Format, PrintArgs);
    B.CreateIntrinsic(Intrinsic::trap, {});
    B.CreateUnreachable();
  }

private:
  Module &M;
  LLVMContext &Ctx;

  static Argument *locationArgument(Function &F, const PanicFunction &P) {
    if (P.Location != LocationArg::LastArg || F.arg_empty())
      return nullptr;
    Argument *Last = F.getArg(F.arg_size() - 1);
    return Last->getType()->isPointerTy() ? Last : nullptr;
  }

  /// `vprintf(format, args)`: CUDA's device printf takes the arguments packed
  /// in a buffer, each at its natural alignment.
  void emitPrintf(IRBuilder<> &B, const std::string &Format, ArrayRef<Value *> Args) {
    FunctionCallee VPrintf = M.getOrInsertFunction(
        "vprintf", FunctionType::get(B.getInt32Ty(), {B.getPtrTy(), B.getPtrTy()}, false));
    Value *Fmt = B.CreateGlobalString(Format, "oxide.panic.fmt", 0, &M);
    SmallVector<Type *> Fields;
    for (Value *V : Args)
      Fields.push_back(V->getType());
    StructType *BufTy = StructType::get(Ctx, Fields);
    IRBuilder<> Entry(&B.GetInsertBlock()->getParent()->getEntryBlock(),
                      B.GetInsertBlock()->getParent()->getEntryBlock().begin());
    Value *Buf = Entry.CreateAlloca(BufTy, nullptr, "printf.args");
    for (unsigned I = 0; I < Args.size(); ++I)
      B.CreateStore(Args[I], B.CreateStructGEP(BufTy, Buf, I));
    B.CreateCall(VPrintf, {Fmt, Buf});
  }
};

} // namespace

PreservedAnalyses LowerPanicsPass::run(Module &M, ModuleAnalysisManager &) {
  PanicBodyBuilder Builder(M);
  bool Changed = false;
  for (Function &F : M) {
    if (F.isIntrinsic())
      continue;
    std::string Path = demangleRust(F.getName());
    if (const PanicFunction *P = findPanicFunction(Path)) {
      Builder.define(F, *P, Path);
      Changed = true;
    }
  }
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}
