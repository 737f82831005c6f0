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
//   2. records the panic for the host: the first panicking thread of a launch
//      copies file, line, column, message, integer arguments and its thread
//      and block index into the host-mapped record whose device address the
//      host stored in `__oxide_panic_record` (docs/ABI.md §5), then fences at
//      system scope; the host reads it after the launch fails, although the
//      context is then lost;
//   3. prints, with `vprintf`,
//        GPU thread (tx, ty, tz) of block (bx, by, bz) panicked at FILE:LINE:COL:
//        MESSAGE
//   4. executes `trap`, which aborts the kernel so the launch reports an error
//      instead of returning a wrong answer.
//
// `panic!("literal")` and `panic!("value {} at {}", v, i)` reach `panic_fmt`
// with an `Arguments` whose text is a constant (a string, or a `format_args!`
// template); such calls are rewritten to pass that text itself, so the
// message reaches the user, with `{}` where a value was formatted (the GPU
// cannot run `Display`).
//
// `core::panic::Location` is `{ file: &str (ptr, len), line: u32, col: u32 }`;
// rustc stores the file name NUL-terminated, so `%s` can print it.
//===----------------------------------------------------------------------===//
#include "oxide/Abi.h"
#include "oxide/PanicFunctions.h"
#include "oxide/Passes.h"
#include "oxide/RustNames.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/IR/Module.h"

using namespace llvm;
using namespace oxide;

namespace {

/// `panic!("literal")` after the rewrite below: the message is the string.
const PanicFunction PanicWithString = {"", "", PanicLocationArg::LastArg, "", 0};

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

/// Copies N bytes from Src to Dst in a loop that is never unrolled (PTX
/// `.pragma "nounroll"`). Once the recorder is inlined the lengths are often
/// constants, and a memcpy would become one byte load per character, which
/// ptxas issues together, each holding a register: the panic path would set
/// the kernel's register count. The loop's loads stay cached (not volatile),
/// so the thread that fills the record is done quickly.
void copyBytes(IRBuilder<> &B, Value *Dst, Value *Src, Value *N) {
  LLVMContext &Ctx = B.getContext();
  Function *F = B.GetInsertBlock()->getParent();
  BasicBlock *From = B.GetInsertBlock();
  BasicBlock *Loop = BasicBlock::Create(Ctx, "copy.byte", F);
  BasicBlock *Done = BasicBlock::Create(Ctx, "copy.done", F);
  B.CreateCondBr(B.CreateIsNull(N), Done, Loop);
  B.SetInsertPoint(Loop);
  PHINode *I = B.CreatePHI(N->getType(), 2, "i");
  I->addIncoming(ConstantInt::get(N->getType(), 0), From);
  Value *Byte = B.CreateLoad(B.getInt8Ty(), B.CreateInBoundsGEP(B.getInt8Ty(), Src, I));
  B.CreateStore(Byte, B.CreateInBoundsGEP(B.getInt8Ty(), Dst, I));
  Value *Next = B.CreateNUWAdd(I, ConstantInt::get(N->getType(), 1));
  I->addIncoming(Next, Loop);
  BranchInst *Back = B.CreateCondBr(B.CreateICmpULT(Next, N), Loop, Done);
  MDNode *NoUnroll = MDNode::get(Ctx, MDString::get(Ctx, "llvm.loop.unroll.disable"));
  MDNode *LoopID = MDNode::getDistinct(Ctx, {nullptr, NoUnroll});
  LoopID->replaceOperandWith(0, LoopID);
  Back->setMetadata(LLVMContext::MD_loop, LoopID);
  B.SetInsertPoint(Done);
}

/// The panic record's layout (docs/ABI.md §5); cuda-core reads the same bytes.
namespace record {
constexpr uint64_t State = 0, Line = 4, Col = 8, NumInts = 12, Thread = 16, Block = 28,
                   Ints = 40, File = 56, Message = 312, TextCapacity = 256;
constexpr uint32_t Complete = 2;
} // namespace record

/// Builds the shared `oxide.record_panic` function and the globals it uses.
class PanicRecorder {
public:
  explicit PanicRecorder(Module &M) : M(M), Ctx(M.getContext()) {}

  /// record_panic(file, file_len, line, col, msg, msg_len, int0, int1, n_ints,
  ///              tx, ty, tz, bx, by, bz)
  Function *get() {
    if (Fn)
      return Fn;
    Type *Ptr = PointerType::getUnqual(Ctx), *I64 = Type::getInt64Ty(Ctx), *I32 = Type::getInt32Ty(Ctx);
    auto *FTy = FunctionType::get(Type::getVoidTy(Ctx),
                                  {Ptr, I64, I32, I32, Ptr, I64, I64, I64, I32, I32, I32, I32, I32, I32, I32},
                                  false);
    Fn = Function::Create(FTy, GlobalValue::InternalLinkage, "oxide.record_panic", M);
    // Inlined into each panic function (which stays a call): ptxas sizes a
    // kernel's register file for its whole call graph, and a separate
    // 15-argument recorder call raised small kernels from 12 to 36 registers
    // and tiled ones to 63 (occupancy lost on the hot path). Inlined, with
    // the printf arguments stored first and copies that are loops, they need
    // 30 (vecadd, transpose; nvcc: 12 and 30) and 44 (sgemm; nvcc: 42).
    // Their unchecked entries (VersionBoundsChecks) have no panic path: 12,
    // 30 and 40.
    Fn->addFnAttr(Attribute::AlwaysInline);
    Fn->addFnAttr(Attribute::Cold);
    build();
    return Fn;
  }

private:
  Module &M;
  LLVMContext &Ctx;
  Function *Fn = nullptr;

  GlobalVariable *global(StringRef Name, Type *Ty, GlobalValue::LinkageTypes Linkage) {
    if (GlobalVariable *GV = M.getGlobalVariable(Name))
      return GV;
    // addrspace(1): .global, so the host can write the record pointer with
    // cuModuleGetGlobal + a copy.
    auto *GV = new GlobalVariable(M, Ty, false, Linkage, Constant::getNullValue(Ty), Name,
                                  nullptr, GlobalValue::NotThreadLocal, 1);
    GV->setExternallyInitialized(Linkage == GlobalValue::ExternalLinkage);
    return GV;
  }

  void build() {
    IRBuilder<> B(BasicBlock::Create(Ctx, "entry", Fn));
    BasicBlock *Claim = BasicBlock::Create(Ctx, "claim", Fn);
    BasicBlock *Write = BasicBlock::Create(Ctx, "write", Fn);
    BasicBlock *Done = BasicBlock::Create(Ctx, "done", Fn);
    auto Arg = [&](unsigned I) { return Fn->getArg(I); };

    GlobalVariable *RecordPtr = global(PanicRecordGlobal, B.getPtrTy(), GlobalValue::ExternalLinkage);
    GlobalVariable *Claimed = global("oxide.panic_claimed", B.getInt32Ty(), GlobalValue::InternalLinkage);
    Value *Rec = B.CreateLoad(B.getPtrTy(), RecordPtr, "record");
    B.CreateCondBr(B.CreateIsNull(Rec), Done, Claim);

    // Only the first panicking thread writes; the others still print and trap,
    // but first wait (a bounded time) until the record is complete: their
    // trap ends the whole kernel, and the writer would lose the race.
    B.SetInsertPoint(Claim);
    Value *Old = B.CreateAtomicCmpXchg(Claimed, B.getInt32(0), B.getInt32(1), MaybeAlign(4),
                                       AtomicOrdering::Monotonic, AtomicOrdering::Monotonic);
    BasicBlock *Wait = BasicBlock::Create(Ctx, "wait", Fn);
    B.CreateCondBr(B.CreateIsNull(B.CreateExtractValue(Old, 0)), Write, Wait);
    waitForRecord(B, Wait, Rec, Done);

    B.SetInsertPoint(Write);
    auto At = [&](uint64_t Offset) { return B.CreateConstInBoundsGEP1_64(B.getInt8Ty(), Rec, Offset); };
    B.CreateStore(Arg(2), At(record::Line));
    B.CreateStore(Arg(3), At(record::Col));
    B.CreateStore(Arg(8), At(record::NumInts));
    for (unsigned I = 0; I < 3; ++I) {
      B.CreateStore(Arg(9 + I), At(record::Thread + 4 * I));
      B.CreateStore(Arg(12 + I), At(record::Block + 4 * I));
    }
    B.CreateStore(Arg(6), At(record::Ints));
    B.CreateStore(Arg(7), At(record::Ints + 8));
    copyText(B, At(record::File), Arg(0), Arg(1));
    copyText(B, At(record::Message), Arg(4), Arg(5));
    // Everything above must reach host memory before the state says so, and
    // before the trap ends the kernel: a system-scope fence on both sides.
    B.CreateFence(AtomicOrdering::SequentiallyConsistent);
    B.CreateStore(B.getInt32(record::Complete), At(record::State))->setVolatile(true);
    B.CreateFence(AtomicOrdering::SequentiallyConsistent);
    B.CreateBr(Done);

    B.SetInsertPoint(Done);
    B.CreateRetVoid();
  }

  /// In `Wait`: polls the record's state (host memory, about a microsecond a
  /// read) until the writer marked it complete, at most WaitPolls times, then
  /// goes to `Done`.
  void waitForRecord(IRBuilder<> &B, BasicBlock *Wait, Value *Rec, BasicBlock *Done) {
    constexpr uint64_t WaitPolls = 4096;
    BasicBlock *From = B.GetInsertBlock();
    B.SetInsertPoint(Wait);
    PHINode *N = B.CreatePHI(B.getInt32Ty(), 2, "polls");
    N->addIncoming(B.getInt32(0), From);
    LoadInst *State = B.CreateLoad(B.getInt32Ty(), Rec, "state");
    State->setVolatile(true);
    Value *Next = B.CreateAdd(N, B.getInt32(1));
    N->addIncoming(Next, Wait);
    Value *Stop = B.CreateOr(B.CreateICmpEQ(State, B.getInt32(record::Complete)),
                             B.CreateICmpUGE(Next, B.getInt32(WaitPolls)));
    B.CreateCondBr(Stop, Done, Wait);
  }

  /// Copies at most TextCapacity-1 bytes of (Src, Len) to Dst and terminates it.
  void copyText(IRBuilder<> &B, Value *Dst, Value *Src, Value *Len) {
    Value *N = B.CreateBinaryIntrinsic(Intrinsic::umin, Len, B.getInt64(record::TextCapacity - 1));
    Value *HasText = B.CreateIsNotNull(Src);
    N = B.CreateSelect(HasText, N, B.getInt64(0));
    BasicBlock *Copy = BasicBlock::Create(Ctx, "copy", Fn);
    BasicBlock *After = BasicBlock::Create(Ctx, "copied", Fn);
    B.CreateCondBr(HasText, Copy, After);
    B.SetInsertPoint(Copy);
    copyBytes(B, Dst, Src, N);
    B.CreateBr(After);
    B.SetInsertPoint(After);
    B.CreateStore(B.getInt8(0), B.CreateInBoundsGEP(B.getInt8Ty(), Dst, N));
  }
};

class PanicBodyBuilder {
public:
  PanicBodyBuilder(Module &M, PanicRecorder &Recorder) : M(M), Ctx(M.getContext()), Recorder(Recorder) {}

  void define(Function &F, const PanicFunction &P, StringRef Path) {
    if (!F.isDeclaration())
      F.deleteBody();
    F.setLinkage(GlobalValue::InternalLinkage);
    F.setPersonalityFn(nullptr);
    F.addFnAttr(Attribute::NoInline);
    F.addFnAttr(Attribute::Cold);
    F.addFnAttr(Attribute::NoReturn);
    // Its body reads only the panic record, the location and message it is
    // passed, and traps: DeferSharedStores relies on that.
    F.addFnAttr(PanicFunctionAttr);

    IRBuilder<> B(BasicBlock::Create(Ctx, "panic", &F));
    Type *Ptr = B.getPtrTy(), *I64 = B.getInt64Ty();

    SmallVector<Value *> Ids;
    for (Intrinsic::ID Id : {Intrinsic::nvvm_read_ptx_sreg_tid_x, Intrinsic::nvvm_read_ptx_sreg_tid_y,
                             Intrinsic::nvvm_read_ptx_sreg_tid_z, Intrinsic::nvvm_read_ptx_sreg_ctaid_x,
                             Intrinsic::nvvm_read_ptx_sreg_ctaid_y, Intrinsic::nvvm_read_ptx_sreg_ctaid_z})
      Ids.push_back(B.CreateIntrinsic(Id, {}));

    Value *File = Constant::getNullValue(Ptr), *FileLen = B.getInt64(0);
    Value *Line = B.getInt32(0), *Col = B.getInt32(0);
    if (Argument *Loc = locationArgument(F, P)) {
      File = B.CreateLoad(Ptr, Loc, "file");
      FileLen = B.CreateLoad(I64, B.CreateConstInBoundsGEP1_64(B.getInt8Ty(), Loc, 8), "file_len");
      Line = B.CreateLoad(B.getInt32Ty(), B.CreateConstInBoundsGEP1_64(B.getInt8Ty(), Loc, 16), "line");
      Col = B.CreateLoad(B.getInt32Ty(), B.CreateConstInBoundsGEP1_64(B.getInt8Ty(), Loc, 20), "col");
    }

    // The message: a string argument, or the table's constant text.
    Value *Msg, *MsgLen, *PrintedMsg;
    std::string Template;
    if (Argument *Str = stringArgument(F, P)) {
      Msg = Str;
      MsgLen = F.getArg(Str->getArgNo() + 1);
      PrintedMsg = terminatedCopy(B, Msg, MsgLen);
      Template = "%s";
    } else {
      Template = P.Message.empty() ? messageFromConstPanic(Path) : P.Message.str();
      Msg = B.CreateGlobalString(Template, "oxide.panic.msg", 0, &M);
      MsgLen = B.getInt64(Template.size());
      PrintedMsg = nullptr;
    }

    SmallVector<Value *> Ints;
    SmallVector<StringRef> Indices;
    P.IntegerArgs.split(Indices, ',', -1, false);
    for (StringRef Idx : Indices) {
      unsigned I = 0;
      if (!Idx.getAsInteger(10, I) && I < F.arg_size() && F.getArg(I)->getType()->isIntegerTy())
        Ints.push_back(B.CreateZExtOrTrunc(F.getArg(I), I64));
    }

    SmallVector<Value *> RecordArgs{File, FileLen, Line, Col, Msg, MsgLen,
                                    Ints.size() > 0 ? Ints[0] : B.getInt64(0),
                                    Ints.size() > 1 ? Ints[1] : B.getInt64(0), B.getInt32(Ints.size())};
    RecordArgs.append(Ids.begin(), Ids.end());
    SmallVector<Value *> PrintArgs(Ids.begin(), Ids.end());
    std::string Format = "GPU thread (%u, %u, %u) of block (%u, %u, %u) panicked";
    if (locationArgument(F, P)) {
      Format += " at %s:%u:%u";
      PrintArgs.append({File, Line, Col});
    }
    Format += ":\n" + Template + "\n";
    if (PrintedMsg)
      PrintArgs.push_back(PrintedMsg);
    PrintArgs.append(Ints.begin(), Ints.end());
    // The printf arguments are stored before the (inlined) recorder runs, so
    // that only the buffer's address stays live across its copy loops.
    Value *Printf = packPrintf(B, Format, PrintArgs);
    B.CreateCall(Recorder.get(), RecordArgs);
    B.CreateCall(M.getFunction("vprintf"), {B.CreateGlobalString(Format, "oxide.panic.fmt", 0, &M), Printf});
    B.CreateIntrinsic(Intrinsic::trap, {});
    B.CreateUnreachable();
  }

private:
  Module &M;
  LLVMContext &Ctx;
  PanicRecorder &Recorder;

  static Argument *locationArgument(Function &F, const PanicFunction &P) {
    if (P.Location != PanicLocationArg::LastArg || F.arg_empty())
      return nullptr;
    Argument *Last = F.getArg(F.arg_size() - 1);
    return Last->getType()->isPointerTy() ? Last : nullptr;
  }

  static Argument *stringArgument(Function &F, const PanicFunction &P) {
    if (P.StringArg < 0 || static_cast<unsigned>(P.StringArg) + 1 >= F.arg_size())
      return nullptr;
    Argument *Ptr = F.getArg(P.StringArg), *Len = F.getArg(P.StringArg + 1);
    return Ptr->getType()->isPointerTy() && Len->getType()->isIntegerTy(64) ? Ptr : nullptr;
  }

  /// A NUL-terminated copy of a `&str` on the thread's stack, for `%s`.
  Value *terminatedCopy(IRBuilder<> &B, Value *Str, Value *Len) {
    Function *F = B.GetInsertBlock()->getParent();
    IRBuilder<> Entry(&F->getEntryBlock(), F->getEntryBlock().begin());
    auto *BufTy = ArrayType::get(B.getInt8Ty(), record::TextCapacity);
    Value *Buf = Entry.CreateAlloca(BufTy, nullptr, "message");
    Value *N = B.CreateBinaryIntrinsic(Intrinsic::umin, Len, B.getInt64(record::TextCapacity - 1));
    copyBytes(B, Buf, Str, N);
    B.CreateStore(B.getInt8(0), B.CreateInBoundsGEP(B.getInt8Ty(), Buf, N));
    return Buf;
  }

  /// The argument buffer of `vprintf(format, args)` (CUDA's device printf
  /// takes the arguments packed in a buffer, each at its natural alignment);
  /// also declares `vprintf`.
  Value *packPrintf(IRBuilder<> &B, const std::string &Format, ArrayRef<Value *> Args) {
    M.getOrInsertFunction("vprintf",
                          FunctionType::get(B.getInt32Ty(), {B.getPtrTy(), B.getPtrTy()}, false));
    SmallVector<Type *> Fields;
    for (Value *V : Args)
      Fields.push_back(V->getType());
    StructType *BufTy = StructType::get(Ctx, Fields);
    Function *F = B.GetInsertBlock()->getParent();
    IRBuilder<> Entry(&F->getEntryBlock(), F->getEntryBlock().begin());
    Value *Buf = Entry.CreateAlloca(BufTy, nullptr, "printf.args");
    for (unsigned I = 0; I < Args.size(); ++I)
      B.CreateStore(Args[I], B.CreateStructGEP(BufTy, Buf, I));
    return Buf;
  }
};

/// Whether F is `core::fmt::Arguments::<Name>` (any instance).
bool isArgumentsCtor(const Function *F, ArrayRef<StringRef> Names) {
  if (!F)
    return false;
  std::string Path = demangleRust(F->getName());
  StringRef P(Path);
  if (!P.contains("core::fmt::Arguments"))
    return false;
  // v0 mangling (nightly) keeps the const generics: `…::new::<25, 2>`.
  if (P.ends_with(">"))
    if (size_t Generic = P.rfind("::<"); Generic != StringRef::npos)
      P = P.take_front(Generic);
  return any_of(Names, [&](StringRef N) { return P.ends_with(N); });
}

/// The text of a `format_args!` template: Rust (1.9x) encodes
/// `fmt::Arguments` as a byte string of length-prefixed literal pieces (a
/// byte < 0x80, or 0x80 and a 16-bit length) and placeholders (a byte
/// 0b11xxxxxx whose low four bits say which of the fields flags (32 bits),
/// width, precision and argument index (16 bits each) follow), ended by a
/// zero byte; core/src/fmt/mod.rs documents it. The GPU cannot run the
/// arguments' `Display`, so each placeholder reads `{}`. None if the bytes
/// are not such a template.
std::optional<std::string> templateText(StringRef Bytes) {
  std::string Text;
  size_t At = 0;
  auto Take = [&](size_t N) -> std::optional<StringRef> {
    if (At + N > Bytes.size())
      return std::nullopt;
    StringRef Part = Bytes.substr(At, N);
    At += N;
    return Part;
  };
  while (std::optional<StringRef> Head = Take(1)) {
    uint8_t B = Head->front();
    if (B == 0)
      return Text;
    if ((B & 0xC0) == 0xC0) {
      size_t Fields = (B & 1 ? 4 : 0) + (B & 2 ? 2 : 0) + (B & 4 ? 2 : 0) + (B & 8 ? 2 : 0);
      if (!Take(Fields))
        return std::nullopt;
      Text += "{}";
      continue;
    }
    size_t Len = B;
    if (B == 0x80) {
      std::optional<StringRef> L = Take(2);
      if (!L)
        return std::nullopt;
      Len = uint8_t((*L)[0]) | size_t(uint8_t((*L)[1])) << 8;
    } else if (B > 0x80) {
      return std::nullopt;
    }
    std::optional<StringRef> Piece = Take(Len);
    if (!Piece)
      return std::nullopt;
    Text += *Piece;
  }
  return std::nullopt; // no end byte
}

/// The bytes of a constant global `V` points to (its whole initializer).
std::optional<StringRef> constantBytes(const Value *V) {
  const auto *GV = dyn_cast<GlobalVariable>(V->stripPointerCasts());
  if (!GV || !GV->isConstant() || !GV->hasDefinitiveInitializer())
    return std::nullopt;
  const auto *Data = dyn_cast<ConstantDataSequential>(GV->getInitializer());
  if (!Data || !Data->getElementType()->isIntegerTy(8))
    return std::nullopt;
  return Data->getRawDataValues();
}

/// What `panic_fmt(template, args, location)` would print, as a
/// (pointer, length) pair of a constant string: a literal `panic!("…")`
/// (`Arguments::from_str`, or its inlined form: `args` is `len << 1 | 1`),
/// or a template with placeholders (`Arguments::new`, or its inlined form:
/// the template itself), as text with `{}` for each value.
/// (`Texts` holds the string globals made so far, one per distinct text.)
std::optional<std::pair<Value *, Value *>> panicFmtMessage(CallInst &C, Module &M,
                                                           StringMap<GlobalVariable *> &Texts) {
  Value *Template = C.getArgOperand(0), *Args = C.getArgOperand(1);
  Type *I64 = Type::getInt64Ty(M.getContext());
  if (auto *Part = dyn_cast<ExtractValueInst>(Template); Part && Part->getIndices() == ArrayRef<unsigned>{0}) {
    auto *Ctor = dyn_cast<CallInst>(Part->getAggregateOperand());
    if (!Ctor || Ctor->arg_size() != 2)
      return std::nullopt;
    if (isArgumentsCtor(Ctor->getCalledFunction(), {"::from_str", "::from_str_nonconst"}))
      return std::pair{Ctor->getArgOperand(0), Ctor->getArgOperand(1)};
    if (!isArgumentsCtor(Ctor->getCalledFunction(), {"::new"}))
      return std::nullopt;
    Template = Ctor->getArgOperand(0);
    Args = nullptr;
  }
  if (auto *CE = dyn_cast_or_null<ConstantExpr>(Args); CE && CE->getOpcode() == Instruction::IntToPtr)
    if (auto *Bits = dyn_cast<ConstantInt>(CE->getOperand(0)); Bits && (Bits->getZExtValue() & 1))
      return std::pair{Template, ConstantInt::get(I64, Bits->getZExtValue() >> 1)};
  std::optional<StringRef> Bytes = constantBytes(Template);
  std::optional<std::string> Text = Bytes ? templateText(*Bytes) : std::nullopt;
  if (!Text)
    return std::nullopt;
  GlobalVariable *&GV = Texts[*Text];
  if (!GV) {
    Constant *Str = ConstantDataArray::getString(M.getContext(), *Text, /*AddNull=*/false);
    GV = new GlobalVariable(M, Str->getType(), true, GlobalValue::PrivateLinkage, Str, "oxide.panic.format");
    GV->setUnnamedAddr(GlobalValue::UnnamedAddr::Global);
  }
  return std::pair{GV, ConstantInt::get(I64, Text->size())};
}

/// Rewrites `panic_fmt(arguments, location)` whose message is known at
/// compile time (panicFmtMessage) into `PanicStr(text, len, location)`, so
/// the message reaches the user instead of "explicit panic".
bool rewriteConstantPanicFmt(Function &PanicFmt, Function *&PanicStr, Module &M) {
  bool Changed = false;
  SmallVector<CallInst *> Calls;
  for (User *U : PanicFmt.users())
    if (auto *C = dyn_cast<CallInst>(U); C && C->getCalledFunction() == &PanicFmt && C->arg_size() == 3)
      Calls.push_back(C);
  StringMap<GlobalVariable *> Texts;
  for (CallInst *C : Calls) {
    std::optional<std::pair<Value *, Value *>> Message = panicFmtMessage(*C, M, Texts);
    if (!Message)
      continue;
    if (!PanicStr) {
      LLVMContext &Ctx = M.getContext();
      Type *Ptr = PointerType::getUnqual(Ctx);
      auto *FTy = FunctionType::get(Type::getVoidTy(Ctx), {Ptr, Type::getInt64Ty(Ctx), Ptr}, false);
      PanicStr = Function::Create(FTy, GlobalValue::InternalLinkage, "oxide.panic_str", M);
    }
    IRBuilder<> B(C);
    CallInst *New = B.CreateCall(PanicStr, {Message->first, Message->second, C->getArgOperand(2)});
    New->setDebugLoc(C->getDebugLoc());
    New->setDoesNotReturn();
    C->eraseFromParent();
    Changed = true;
  }
  return Changed;
}

} // namespace

PreservedAnalyses LowerPanicsPass::run(Module &M, ModuleAnalysisManager &) {
  PanicRecorder Recorder(M);
  PanicBodyBuilder Builder(M, Recorder);
  Function *PanicStr = nullptr;
  bool Changed = false;

  SmallVector<std::pair<Function *, const PanicFunction *>> Panics;
  for (Function &F : M) {
    if (F.isIntrinsic())
      continue;
    std::string Path = demangleRust(F.getName());
    if (const PanicFunction *P = findPanicFunction(Path, F.isDeclaration())) {
      if (StringRef(Path).starts_with("core::panicking::panic_fmt"))
        Changed |= rewriteConstantPanicFmt(F, PanicStr, M);
      Panics.push_back({&F, P});
    }
  }
  for (auto [F, P] : Panics) {
    Builder.define(*F, *P, demangleRust(F->getName()));
    Changed = true;
  }
  if (PanicStr)
    Builder.define(*PanicStr, PanicWithString, "panic");
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}
