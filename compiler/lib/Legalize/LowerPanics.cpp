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
//      copies file, line, column, message, the values the message formats
//      and its thread and block index into the host-mapped record whose
//      device address the host stored in `__oxide_panic_record` (docs/ABI.md
//      §5, PanicRecord.def), then fences at system scope; the host reads it
//      after the launch fails, although the context is then lost;
//   3. prints, with `vprintf`,
//        GPU thread (tx, ty, tz) of block (bx, by, bz) panicked at FILE:LINE:COL:
//        MESSAGE
//   4. executes `trap`, which aborts the kernel so the launch reports an error
//      instead of returning a wrong answer.
//
// Formatted messages (`panic!("{} > {}", a, b)`, `assert!(c, "…{:#x}", v)`,
// core's own asserts such as `clamp`'s) reach `panic_fmt` with a
// `fmt::Arguments`: a constant template and an array of `rt::Argument`s
// (PanicArguments.h reads both). The GPU cannot run the `fmt` methods, so each
// such call becomes a call of a small function made for its message that
// takes the values themselves, loaded where the panic happens:
//   * a value of an integer type, bool, char, f32 or f64 (printed by Display,
//     Debug, the hex, octal, binary or exponent traits, directly or through
//     references) goes into the record with its kind, and the record's
//     message is the template in Rust's own syntax (`{0:#x} > {1}`), which
//     the host formats with the template's fill, alignment, sign, `#`, `0`,
//     width and precision (width and precision from arguments too); the
//     `vprintf` line prints it with the nearest printf conversion, where
//     there is one (not for binary, 128-bit integers and exponents of
//     integers: `{..}`);
//   * any other value (a struct, a string, …) prints as `{..}`, in the record
//     and in the line, so nothing is silently dropped; so do values past the
//     record's capacity.
// `assert_eq!`/`assert_ne!` (`assert_failed`) and `unwrap` on an `Err`
// (`result::unwrap_failed`) pass their operands as references whose Debug
// the types (a v0 name's type arguments) or the `&dyn Debug` vtables name:
// their calls become core's messages ("assertion `left == right` failed
// …  left: {0:?}") the same way.
// A message with no such value, or a `panic!("literal")`, is constant text.
// The per-message function only stores the values into buffers and calls
// one shared function that records, prints and traps, so a kernel's panic
// paths stay small (DESIGN.md §3: ptxas sizes registers for the whole call
// graph).
//
// `core::panic::Location` is `{ file: &str (ptr, len), line: u32, col: u32 }`;
// rustc stores the file name NUL-terminated, so `%s` can print it.
//===----------------------------------------------------------------------===//
#include "PanicArguments.h"
#include "oxide/Abi.h"
#include "oxide/PanicFunctions.h"
#include "oxide/PanicRecord.h"
#include "oxide/Passes.h"
#include "oxide/RustNames.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Analysis/ConstantFolding.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/IR/Module.h"
#include <map>

using namespace llvm;
using namespace oxide;
using panic_record::ValueKind;
namespace rec = panic_record;

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

/// Copies N elements of type Ty from Src to Dst in a loop that is never
/// unrolled (PTX `.pragma "nounroll"`). Once the recorder is inlined the
/// lengths are often constants, and a memcpy would become one load per
/// element, which ptxas issues together, each holding a register: the panic
/// path would set the kernel's register count. The loop's loads stay cached
/// (not volatile), so the thread that fills the record is done quickly.
void copyElements(IRBuilder<> &B, Type *Ty, Value *Dst, Value *Src, Value *N) {
  LLVMContext &Ctx = B.getContext();
  Function *F = B.GetInsertBlock()->getParent();
  BasicBlock *From = B.GetInsertBlock();
  BasicBlock *Loop = BasicBlock::Create(Ctx, "copy.element", F);
  BasicBlock *Done = BasicBlock::Create(Ctx, "copy.done", F);
  B.CreateCondBr(B.CreateIsNull(N), Done, Loop);
  B.SetInsertPoint(Loop);
  PHINode *I = B.CreatePHI(N->getType(), 2, "i");
  I->addIncoming(ConstantInt::get(N->getType(), 0), From);
  Value *Element = B.CreateLoad(Ty, B.CreateInBoundsGEP(Ty, Src, I));
  B.CreateStore(Element, B.CreateInBoundsGEP(Ty, Dst, I));
  Value *Next = B.CreateNUWAdd(I, ConstantInt::get(N->getType(), 1));
  I->addIncoming(Next, Loop);
  BranchInst *Back = B.CreateCondBr(B.CreateICmpULT(Next, N), Loop, Done);
  MDNode *NoUnroll = MDNode::get(Ctx, MDString::get(Ctx, "llvm.loop.unroll.disable"));
  MDNode *LoopID = MDNode::getDistinct(Ctx, {nullptr, NoUnroll});
  LoopID->replaceOperandWith(0, LoopID);
  Back->setMetadata(LLVMContext::MD_loop, LoopID);
  B.SetInsertPoint(Done);
}

/// The values a panic records: `[n x i128]`, each value's bits zero-extended.
Type *valueSlotType(LLVMContext &Ctx) { return Type::getInt128Ty(Ctx); }

/// The start of every panic line's printf arguments: the thread and block
/// index, then the file, line and column.
StructType *printfHeaderType(LLVMContext &Ctx) {
  Type *I32 = Type::getInt32Ty(Ctx);
  return StructType::get(Ctx, {I32, I32, I32, I32, I32, I32, PointerType::getUnqual(Ctx), I32, I32});
}
constexpr unsigned PrintfHeaderFields = 9;
constexpr StringLiteral PrintfPrefix = "GPU thread (%u, %u, %u) of block (%u, %u, %u) panicked";

/// The LLVM type a value of `Kind` has in memory.
Type *memoryType(LLVMContext &Ctx, ValueKind Kind) {
  switch (Kind) {
  case ValueKind::U8:
  case ValueKind::I8:
  case ValueKind::Bool:
    return Type::getInt8Ty(Ctx);
  case ValueKind::U16:
  case ValueKind::I16:
    return Type::getInt16Ty(Ctx);
  case ValueKind::U32:
  case ValueKind::I32:
  case ValueKind::Char:
    return Type::getInt32Ty(Ctx);
  case ValueKind::U128:
  case ValueKind::I128:
    return Type::getInt128Ty(Ctx);
  case ValueKind::F32:
    return Type::getFloatTy(Ctx);
  case ValueKind::F64:
    return Type::getDoubleTy(Ctx);
  default:
    return Type::getInt64Ty(Ctx);
  }
}

bool isSigned(ValueKind K) { return K >= ValueKind::I8 && K <= ValueKind::I128; }
bool isInteger(ValueKind K) { return K >= ValueKind::U8 && K <= ValueKind::I128; }
bool isFloat(ValueKind K) { return K == ValueKind::F32 || K == ValueKind::F64; }

/// A value's record slot: its bits, zero-extended to 128.
Value *recordBits(IRBuilder<> &B, Value *V) {
  if (V->getType()->isFloatingPointTy())
    V = B.CreateBitCast(V, B.getIntNTy(V->getType()->getPrimitiveSizeInBits()));
  return B.CreateZExt(V, valueSlotType(B.getContext()));
}

/// The record of a panic, by PanicRecord.def.
class PanicRecorder {
public:
  explicit PanicRecorder(Module &M) : M(M), Ctx(M.getContext()) {}

  /// record_panic(file, file_len, line, col, msg, msg_len, values, kinds,
  ///              n_values, tx, ty, tz, bx, by, bz): `values` points at
  ///              n_values 16-byte slots, `kinds` holds their kinds, a byte
  ///              each; with no values the message is plain text.
  Function *get() {
    if (Fn)
      return Fn;
    Type *Ptr = PointerType::getUnqual(Ctx), *I64 = Type::getInt64Ty(Ctx), *I32 = Type::getInt32Ty(Ctx);
    auto *FTy = FunctionType::get(Type::getVoidTy(Ctx),
                                  {Ptr, I64, I32, I32, Ptr, I64, Ptr, I64, I32, I32, I32, I32, I32, I32, I32},
                                  false);
    Fn = Function::Create(FTy, GlobalValue::InternalLinkage, "oxide.record_panic", M);
    // Inlined into each panic function (which stays a call): ptxas sizes a
    // kernel's register file for its whole call graph, and a separate
    // 15-argument recorder call nearly tripled the registers of small
    // kernels (occupancy lost on the hot path). Inlined, with the printf
    // arguments stored first and copies that are loops, they stay close to
    // nvcc's, and their unchecked entries (VersionBoundsChecks) have no
    // panic path at all (benches/README.md has the counts).
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
    B.CreateStore(Arg(2), At(rec::Line));
    B.CreateStore(Arg(3), At(rec::Column));
    B.CreateStore(Arg(8), At(rec::NumValues));
    for (unsigned I = 0; I < 3; ++I) {
      B.CreateStore(Arg(9 + I), At(rec::Thread + 4 * I));
      B.CreateStore(Arg(12 + I), At(rec::Block + 4 * I));
    }
    B.CreateStore(Arg(7), At(rec::Kinds));
    // Two 8-byte words per value.
    Value *Words = B.CreateShl(B.CreateZExt(Arg(8), B.getInt64Ty()), 1);
    copyElements(B, B.getInt64Ty(), At(rec::Values), Arg(6), Words);
    copyText(B, At(rec::File), Arg(0), Arg(1));
    copyText(B, At(rec::Message), Arg(4), Arg(5));
    // Everything above must reach host memory before the state says so, and
    // before the trap ends the kernel: a system-scope fence on both sides.
    B.CreateFence(AtomicOrdering::SequentiallyConsistent);
    B.CreateStore(B.getInt32(rec::StateComplete), At(rec::State))->setVolatile(true);
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
    Value *Stop = B.CreateOr(B.CreateICmpEQ(State, B.getInt32(rec::StateComplete)),
                             B.CreateICmpUGE(Next, B.getInt32(WaitPolls)));
    B.CreateCondBr(Stop, Done, Wait);
  }

  /// Copies at most TextCapacity-1 bytes of (Src, Len) to Dst and terminates it.
  void copyText(IRBuilder<> &B, Value *Dst, Value *Src, Value *Len) {
    Value *N = B.CreateBinaryIntrinsic(Intrinsic::umin, Len, B.getInt64(rec::TextCapacity - 1));
    Value *HasText = B.CreateIsNotNull(Src);
    N = B.CreateSelect(HasText, N, B.getInt64(0));
    BasicBlock *Copy = BasicBlock::Create(Ctx, "copy", Fn);
    BasicBlock *After = BasicBlock::Create(Ctx, "copied", Fn);
    B.CreateCondBr(HasText, Copy, After);
    B.SetInsertPoint(Copy);
    copyElements(B, B.getInt8Ty(), Dst, Src, N);
    B.CreateBr(After);
    B.SetInsertPoint(After);
    B.CreateStore(B.getInt8(0), B.CreateInBoundsGEP(B.getInt8Ty(), Dst, N));
  }
};

/// Marks F as one of LowerPanics' panic functions.
void makePanicFunction(Function &F) {
  F.setLinkage(GlobalValue::InternalLinkage);
  F.setPersonalityFn(nullptr);
  F.addFnAttr(Attribute::NoInline);
  F.addFnAttr(Attribute::Cold);
  F.addFnAttr(Attribute::NoReturn);
  // Its body reads only the panic record, the location, message and values
  // it is passed, and traps: DeferSharedStores relies on that.
  F.addFnAttr(PanicFunctionAttr);
}

class PanicBodyBuilder {
public:
  PanicBodyBuilder(Module &M, PanicRecorder &Recorder) : M(M), Ctx(M.getContext()), Recorder(Recorder) {}

  /// The body of a panic function of the table (or of `oxide.panic_str`).
  void define(Function &F, const PanicFunction &P, StringRef Path) {
    if (!F.isDeclaration())
      F.deleteBody();
    makePanicFunction(F);
    IRBuilder<> B(BasicBlock::Create(Ctx, "panic", &F));
    Type *Ptr = B.getPtrTy(), *I64 = B.getInt64Ty();

    SmallVector<Value *> Ids = threadAndBlock(B);
    Value *File = Constant::getNullValue(Ptr), *FileLen = B.getInt64(0);
    Value *Line = B.getInt32(0), *Col = B.getInt32(0);
    Argument *Loc = locationArgument(F, P);
    if (Loc)
      std::tie(File, FileLen, Line, Col) = readLocation(B, Loc);

    // The message: a string argument, or the table's constant text, whose
    // `%llu`s are the integer arguments (`{0}`, `{1}` in the record).
    Value *Msg, *MsgLen, *PrintedMsg = nullptr;
    std::string Template, RecordText;
    if (Argument *Str = stringArgument(F, P)) {
      Msg = Str;
      MsgLen = F.getArg(Str->getArgNo() + 1);
      PrintedMsg = terminatedCopy(B, Msg, MsgLen);
      Template = "%s";
    } else {
      Template = P.Message.empty() ? messageFromConstPanic(Path) : P.Message.str();
    }

    SmallVector<Value *> Ints;
    SmallVector<StringRef> Indices;
    P.IntegerArgs.split(Indices, ',', -1, false);
    for (StringRef Idx : Indices) {
      unsigned I = 0;
      if (!Idx.getAsInteger(10, I) && I < F.arg_size() && F.getArg(I)->getType()->isIntegerTy())
        Ints.push_back(B.CreateZExtOrTrunc(F.getArg(I), I64));
    }
    if (!PrintedMsg) {
      RecordText = Ints.empty() ? Template : withValueReferences(Template);
      Msg = B.CreateGlobalString(RecordText, "oxide.panic.msg", 0, &M);
      MsgLen = B.getInt64(RecordText.size());
    }
    Value *Values = Constant::getNullValue(Ptr);
    uint64_t Kinds = 0;
    if (!Ints.empty()) {
      Values = entryAlloca(F, ArrayType::get(valueSlotType(Ctx), Ints.size()), "values");
      for (unsigned I = 0; I < Ints.size(); ++I) {
        B.CreateStore(recordBits(B, Ints[I]), B.CreateConstInBoundsGEP1_64(valueSlotType(Ctx), Values, I));
        Kinds |= uint64_t(ValueKind::U64) << (8 * I);
      }
    }

    SmallVector<Value *> PrintArgs(Ids.begin(), Ids.end());
    std::string Format = PrintfPrefix.str();
    if (Loc) {
      Format += " at %s:%u:%u";
      PrintArgs.append({File, Line, Col});
    }
    Format += ":\n" + Template + "\n";
    if (PrintedMsg)
      PrintArgs.push_back(PrintedMsg);
    PrintArgs.append(Ints.begin(), Ints.end());
    // The printf arguments are stored before the (inlined) recorder runs, so
    // that only the buffer's address stays live across its copy loops.
    Value *Printf = packPrintf(B, PrintArgs);
    SmallVector<Value *> RecordArgs{File, FileLen, Line, Col, Msg, MsgLen, Values, B.getInt64(Kinds),
                                    B.getInt32(Ints.size())};
    RecordArgs.append(Ids.begin(), Ids.end());
    B.CreateCall(Recorder.get(), RecordArgs);
    finish(B, Format, Printf);
  }

  /// `oxide.panic_values(text, text_len, format, printf, values, kinds,
  /// n_values, location)`: the panic of every formatted message. `printf`
  /// is the line's argument buffer with room for the header (filled here),
  /// the message's arguments already stored behind it; `format` the whole
  /// printf format; `values`, `kinds`, `n_values` as the recorder takes them.
  Function *valuesPanic() {
    if (ValuesFn)
      return ValuesFn;
    Type *Ptr = PointerType::getUnqual(Ctx), *I64 = Type::getInt64Ty(Ctx), *I32 = Type::getInt32Ty(Ctx);
    auto *FTy = FunctionType::get(Type::getVoidTy(Ctx), {Ptr, I64, Ptr, Ptr, Ptr, I64, I32, Ptr}, false);
    ValuesFn = Function::Create(FTy, GlobalValue::InternalLinkage, "oxide.panic_values", M);
    makePanicFunction(*ValuesFn);
    IRBuilder<> B(BasicBlock::Create(Ctx, "panic", ValuesFn));
    auto Arg = [&](unsigned I) { return ValuesFn->getArg(I); };
    SmallVector<Value *> Ids = threadAndBlock(B);
    auto [File, FileLen, Line, Col] = readLocation(B, Arg(7));
    Value *Printf = Arg(3);
    SmallVector<Value *> Header(Ids.begin(), Ids.end());
    Header.append({File, Line, Col});
    StructType *HeaderTy = printfHeaderType(Ctx);
    for (unsigned I = 0; I < PrintfHeaderFields; ++I)
      B.CreateStore(Header[I], B.CreateStructGEP(HeaderTy, Printf, I));
    SmallVector<Value *> RecordArgs{File, FileLen, Line, Col, Arg(0), Arg(1), Arg(4), Arg(5), Arg(6)};
    RecordArgs.append(Ids.begin(), Ids.end());
    B.CreateCall(Recorder.get(), RecordArgs);
    declareVprintf();
    B.CreateCall(M.getFunction("vprintf"), {Arg(2), Printf});
    B.CreateIntrinsic(Intrinsic::trap, {});
    B.CreateUnreachable();
    return ValuesFn;
  }

private:
  Module &M;
  LLVMContext &Ctx;
  PanicRecorder &Recorder;
  Function *ValuesFn = nullptr;

  static SmallVector<Value *> threadAndBlock(IRBuilder<> &B) {
    SmallVector<Value *> Ids;
    for (Intrinsic::ID Id : {Intrinsic::nvvm_read_ptx_sreg_tid_x, Intrinsic::nvvm_read_ptx_sreg_tid_y,
                             Intrinsic::nvvm_read_ptx_sreg_tid_z, Intrinsic::nvvm_read_ptx_sreg_ctaid_x,
                             Intrinsic::nvvm_read_ptx_sreg_ctaid_y, Intrinsic::nvvm_read_ptx_sreg_ctaid_z})
      Ids.push_back(B.CreateIntrinsic(Id, {}));
    return Ids;
  }

  /// file, file_len, line, col of a `&core::panic::Location`.
  static std::tuple<Value *, Value *, Value *, Value *> readLocation(IRBuilder<> &B, Value *Loc) {
    Value *File = B.CreateLoad(B.getPtrTy(), Loc, "file");
    auto At = [&](uint64_t Offset) { return B.CreateConstInBoundsGEP1_64(B.getInt8Ty(), Loc, Offset); };
    Value *FileLen = B.CreateLoad(B.getInt64Ty(), At(8), "file_len");
    Value *Line = B.CreateLoad(B.getInt32Ty(), At(16), "line");
    Value *Col = B.CreateLoad(B.getInt32Ty(), At(20), "col");
    return {File, FileLen, Line, Col};
  }

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

  /// The table's message with its k-th `%llu` as `{k}`, Rust's syntax for
  /// the record (the table's texts have no braces of their own).
  static std::string withValueReferences(StringRef Text) {
    std::string Out;
    unsigned K = 0;
    for (size_t At; (At = Text.find("%llu")) != StringRef::npos;) {
      Out += Text.take_front(At).str() + "{" + std::to_string(K++) + "}";
      Text = Text.drop_front(At + 4);
    }
    return Out + Text.str();
  }

  static Value *entryAlloca(Function &F, Type *Ty, const Twine &Name) {
    IRBuilder<> Entry(&F.getEntryBlock(), F.getEntryBlock().begin());
    return Entry.CreateAlloca(Ty, nullptr, Name);
  }

  /// A NUL-terminated copy of a `&str` on the thread's stack, for `%s`.
  Value *terminatedCopy(IRBuilder<> &B, Value *Str, Value *Len) {
    Function *F = B.GetInsertBlock()->getParent();
    Value *Buf = entryAlloca(*F, ArrayType::get(B.getInt8Ty(), rec::TextCapacity), "message");
    Value *N = B.CreateBinaryIntrinsic(Intrinsic::umin, Len, B.getInt64(rec::TextCapacity - 1));
    copyElements(B, B.getInt8Ty(), Buf, Str, N);
    B.CreateStore(B.getInt8(0), B.CreateInBoundsGEP(B.getInt8Ty(), Buf, N));
    return Buf;
  }

  void declareVprintf() {
    Type *Ptr = PointerType::getUnqual(Ctx);
    M.getOrInsertFunction("vprintf", FunctionType::get(Type::getInt32Ty(Ctx), {Ptr, Ptr}, false));
  }

  /// The argument buffer of `vprintf(format, args)` (CUDA's device printf
  /// takes the arguments packed in a buffer, each at its natural alignment).
  Value *packPrintf(IRBuilder<> &B, ArrayRef<Value *> Args) {
    SmallVector<Type *> Fields;
    for (Value *V : Args)
      Fields.push_back(V->getType());
    StructType *BufTy = StructType::get(Ctx, Fields);
    Value *Buf = entryAlloca(*B.GetInsertBlock()->getParent(), BufTy, "printf.args");
    for (unsigned I = 0; I < Args.size(); ++I)
      B.CreateStore(Args[I], B.CreateStructGEP(BufTy, Buf, I));
    return Buf;
  }

  void finish(IRBuilder<> &B, const std::string &Format, Value *Printf) {
    declareVprintf();
    B.CreateCall(M.getFunction("vprintf"), {B.CreateGlobalString(Format, "oxide.panic.fmt", 0, &M), Printf});
    B.CreateIntrinsic(Intrinsic::trap, {});
    B.CreateUnreachable();
  }
};

//===-- Formatted messages -------------------------------------------------===//

/// How the `vprintf` line prints a recorded value.
enum class PrintAs { Nothing, Signed, Unsigned, Double, BoolText, Char };

/// One value a formatted message records.
struct MessageValue {
  Value *Address; // in the panicking function
  unsigned Derefs;
  ValueKind Kind;
};

/// A formatted panic's message, as LowerPanics rewrites it.
struct FormattedMessage {
  std::string Record;  // the record's template (Rust's syntax, `{k:spec}`)
  std::string Plain;   // the text without values, each placeholder `{..}`
  std::string Printf;  // the message part of the printf format
  std::vector<MessageValue> Values;
  std::vector<std::pair<unsigned, PrintAs>> PrintArgs; // value, conversion
};

void appendEscaped(std::string &Out, StringRef Text, StringRef Special) {
  for (char C : Text) {
    Out += C;
    if (Special.contains(C))
      Out += C; // `{{`, `}}`, `%%`
  }
}

std::string utf8(uint32_t C) {
  std::string Out;
  if (C < 0x80) {
    Out += char(C);
  } else if (C < 0x800) {
    Out += char(0xC0 | C >> 6);
    Out += char(0x80 | (C & 0x3F));
  } else if (C < 0x10000) {
    Out += char(0xE0 | C >> 12);
    Out += char(0x80 | (C >> 6 & 0x3F));
    Out += char(0x80 | (C & 0x3F));
  } else {
    Out += char(0xF0 | C >> 18);
    Out += char(0x80 | (C >> 12 & 0x3F));
    Out += char(0x80 | (C >> 6 & 0x3F));
    Out += char(0x80 | (C & 0x3F));
  }
  return Out;
}

/// The `:spec` of a placeholder in Rust's syntax, for the host: the
/// template's options and the trait's type letter. Width and precision are
/// the given texts (a number, or `k$`), empty when absent.
std::string specText(const Placeholder &P, StringRef Trait, const std::string &Width,
                     const std::string &Precision) {
  namespace o = fmt_options;
  std::string S;
  uint32_t Align = P.Options >> o::AlignShift & 3, Fill = P.Options & o::FillMask;
  if (Align != o::AlignNone) {
    if (Fill != ' ' && Fill != '{' && Fill != '}')
      S += utf8(Fill);
    S += "<>^"[Align];
  }
  if (P.Options & o::SignPlus)
    S += '+';
  if (P.Options & o::SignMinus)
    S += '-';
  if (P.Options & o::Alternate)
    S += '#';
  if (P.Options & o::ZeroPad)
    S += '0';
  S += Width;
  if (!Precision.empty())
    S += "." + Precision;
  static const std::pair<StringRef, StringRef> Letters[] = {
      {"LowerHex", "x"}, {"UpperHex", "X"}, {"Octal", "o"},   {"Binary", "b"},
      {"LowerExp", "e"}, {"UpperExp", "E"}, {"Display", ""}};
  if (Trait == "Debug")
    S += P.Options & o::DebugLowerHex ? "x?" : P.Options & o::DebugUpperHex ? "X?" : "?";
  for (auto [Name, Letter] : Letters)
    if (Trait == Name)
      S += Letter.str();
  return S.empty() ? "" : ":" + S;
}

/// The printf conversion nearest to a placeholder, and how its argument is
/// passed; {"{..}", Nothing} where printf has none.
std::pair<std::string, PrintAs> printfConversion(const ValueFormat &F, const Placeholder &P,
                                                 bool StaticWidth, bool StaticPrecision) {
  namespace o = fmt_options;
  uint32_t Align = P.Options >> o::AlignShift & 3, Fill = P.Options & o::FillMask;
  bool ZeroPad = P.Options & o::ZeroPad;
  // printf pads with spaces (or zeros) on the left or right, never centred.
  bool Pad = StaticWidth && (P.Options & o::HasWidth) && (ZeroPad || (Align != 2 && Fill == ' '));
  std::string Width = Pad ? std::to_string(P.Width) : "";
  // Rust's `0` pads after the sign whatever the alignment says, as printf's.
  std::string Left = Pad && Align == 0 && !ZeroPad ? "-" : "";
  std::string Precision =
      StaticPrecision && (P.Options & o::HasPrecision) ? "." + std::to_string(P.Precision) : "";
  std::string Sign = P.Options & o::SignPlus ? "+" : "";
  std::string Zero = Pad && ZeroPad ? "0" : "";
  StringRef T = F.Trait;
  auto Conv = [&](StringRef Flags, StringRef Letters) {
    return "%" + Left + Flags.str() + Zero + Width + Letters.str();
  };
  const std::pair<std::string, PrintAs> None = {"{..}", PrintAs::Nothing};
  if (isInteger(F.Kind)) {
    if (F.Kind == ValueKind::U128 || F.Kind == ValueKind::I128)
      return None;
    bool DebugLower = T == "Debug" && (P.Options & o::DebugLowerHex);
    bool DebugUpper = T == "Debug" && (P.Options & o::DebugUpperHex);
    std::string Alt = P.Options & o::Alternate ? "#" : "";
    if (T == "LowerHex" || DebugLower)
      return {Conv(Alt, "llx"), PrintAs::Unsigned};
    if (T == "UpperHex" || DebugUpper)
      return {Conv(Alt, "llX"), PrintAs::Unsigned};
    if (T == "Octal")
      return {Conv(Alt, "llo"), PrintAs::Unsigned};
    if (T == "Display" || T == "Debug")
      return isSigned(F.Kind) ? std::pair{Conv(Sign, "lld"), PrintAs::Signed}
                              : std::pair{Conv(Sign, "llu"), PrintAs::Unsigned};
    return None; // binary, exponents
  }
  if (isFloat(F.Kind)) {
    if (T == "LowerExp" || T == "UpperExp")
      return {Conv(Sign, Precision + (T == "LowerExp" ? "e" : "E")), PrintAs::Double};
    // Without a precision Rust prints the shortest text that reads back;
    // %g with the type's round-trip digits reads back too.
    std::string Digits = Precision.empty() ? (F.Kind == ValueKind::F32 ? ".9g" : ".17g") : Precision + "f";
    return {Conv(Sign, Digits), PrintAs::Double};
  }
  Zero.clear();
  if (F.Kind == ValueKind::Bool)
    return {Conv("", "s"), PrintAs::BoolText};
  if (T == "Debug")
    return {"'" + Conv("", "c") + "'", PrintAs::Char};
  return {Conv("", "c"), PrintAs::Char};
}

/// Builds a formatted panic's message, part by part.
class MessageBuilder {
public:
  /// Literal text.
  void text(FormattedMessage &Msg, StringRef Text) {
    appendEscaped(Msg.Record, Text, "{}");
    appendEscaped(Msg.Printf, Text, "%");
    Msg.Plain += Text;
  }

  /// The placeholders and pieces of a `format_args!` template whose
  /// argument array is `Args`, at the panic call `Panic`.
  void formatTemplate(FormattedMessage &Msg, CallInst &Panic, ArrayRef<TemplatePart> Parts, Value *Args) {
    for (const TemplatePart &Part : Parts) {
      if (!Part.Value) {
        text(Msg, Part.Text);
        continue;
      }
      std::optional<ArgumentSlot> Slot =
          Args ? readArgumentSlot(Args, Part.Value->Arg, &Panic) : std::nullopt;
      std::optional<ValueFormat> Format;
      if (Slot && !Slot->IsCount)
        Format = valueFormatOf(*Slot->Method);
      value(Msg, Panic, Slot ? Slot->Address : nullptr, Format, *Part.Value, Args);
    }
  }

  /// The value at `Address`, as `Format` prints it with the options of `P`
  /// (whose width or precision may be an argument of `Args`); `{..}` when
  /// there is no format, the address cannot be read at the panic, or the
  /// record is full.
  void value(FormattedMessage &Msg, CallInst &Panic, Value *Address, std::optional<ValueFormat> Format,
             const Placeholder &P, Value *Args) {
    Msg.Plain += "{..}";
    if (!Format || !Address || !available(Address, Panic) || Msg.Values.size() >= rec::MaxValues) {
      Msg.Record += "{{..}}";
      Msg.Printf += "{..}";
      return;
    }
    // `{:w$}`, `{:.*}`: the count is a usize value of its own.
    auto Count = [&](bool Present, bool IsArg, uint16_t Field, bool &Static) -> std::string {
      Static = Present && !IsArg;
      if (!Present)
        return "";
      if (!IsArg)
        return std::to_string(Field);
      std::optional<ArgumentSlot> C = Args ? readArgumentSlot(Args, Field, &Panic) : std::nullopt;
      if (!C || !C->IsCount || !available(C->Address, Panic) || Msg.Values.size() + 1 >= rec::MaxValues)
        return ""; // dropped: printed without it
      Msg.Values.push_back({C->Address, 0, ValueKind::U64});
      return std::to_string(Msg.Values.size() - 1) + "$";
    };
    bool StaticWidth = false, StaticPrecision = false;
    std::string Width = Count(P.Options & fmt_options::HasWidth, P.WidthIsArg, P.Width, StaticWidth);
    std::string Precision =
        Count(P.Options & fmt_options::HasPrecision, P.PrecisionIsArg, P.Precision, StaticPrecision);
    unsigned K = Msg.Values.size();
    Msg.Values.push_back({Address, Format->Derefs, Format->Kind});
    Msg.Record += "{" + std::to_string(K) + specText(P, Format->Trait, Width, Precision) + "}";
    auto [Conversion, As] = printfConversion(*Format, P, StaticWidth, StaticPrecision);
    Msg.Printf += Conversion;
    if (As != PrintAs::Nothing)
      Msg.PrintArgs.push_back({K, As});
  }

private:
  std::map<Function *, std::unique_ptr<DominatorTree>> Trees;

  /// Whether the value's address can be read where the panic is.
  bool available(Value *Address, CallInst &Panic) {
    Function *F = Panic.getFunction();
    if (auto *A = dyn_cast<Argument>(Address))
      return A->getParent() == F;
    auto *I = dyn_cast<Instruction>(Address);
    if (!I)
      return isa<Constant>(Address);
    if (I->getFunction() != F)
      return false;
    std::unique_ptr<DominatorTree> &DT = Trees[F];
    if (!DT)
      DT = std::make_unique<DominatorTree>(*F);
    return DT->dominates(I, &Panic);
  }
};

/// The `fmt` method of a `&dyn Debug` vtable (after drop, size and align).
const Function *debugMethodOfVtable(const Value *Vtable, const DataLayout &DL) {
  const auto *GV = dyn_cast<GlobalVariable>(Vtable->stripPointerCasts());
  if (!GV || !GV->isConstant() || !GV->hasDefinitiveInitializer())
    return nullptr;
  Constant *Method = ConstantFoldLoadFromConst(const_cast<Constant *>(GV->getInitializer()),
                                               PointerType::getUnqual(GV->getContext()), APInt(64, 3 * 8), DL);
  return Method ? dyn_cast<Function>(Method->stripPointerCasts()) : nullptr;
}

/// How a value of a type named in a Rust path prints with Debug: `u32`,
/// `&i8` (one reference to follow).
std::optional<ValueFormat> debugFormatOfType(StringRef Type) {
  unsigned Derefs = 0;
  while (Type.consume_front("&mut ") || Type.consume_front("&"))
    ++Derefs;
  static const std::pair<StringRef, ValueKind> Kinds[] = {
      {"u8", ValueKind::U8},   {"u16", ValueKind::U16}, {"u32", ValueKind::U32}, {"u64", ValueKind::U64},
      {"u128", ValueKind::U128}, {"usize", ValueKind::U64}, {"i8", ValueKind::I8}, {"i16", ValueKind::I16},
      {"i32", ValueKind::I32}, {"i64", ValueKind::I64}, {"i128", ValueKind::I128}, {"isize", ValueKind::I64},
      {"f32", ValueKind::F32}, {"f64", ValueKind::F64}, {"bool", ValueKind::Bool}, {"char", ValueKind::Char}};
  for (auto [Name, Kind] : Kinds)
    if (Type == Name)
      return ValueFormat{"Debug", Kind, Derefs};
  return std::nullopt;
}

/// The Debug formats of the two operands of `core::panicking::assert_failed`
/// (`assert_eq!`, `assert_ne!`), as seen from its callers (`left: &T`):
/// from the type arguments a v0 name shows (`assert_failed::<u32, u32>`), or
/// from the vtables its body hands `assert_failed_inner` (`&&T as &dyn
/// Debug`).
std::pair<std::optional<ValueFormat>, std::optional<ValueFormat>> assertOperandFormats(const Function &F) {
  std::string Path = demangleRust(F.getName());
  StringRef P(Path);
  if (size_t Generic = P.find("::<"); Generic != StringRef::npos && P.ends_with(">")) {
    StringRef Args = P.drop_front(Generic + 3).drop_back();
    // Two primitive types (or references to them): no nested commas.
    auto [Left, Right] = Args.split(", ");
    if (!Right.contains(','))
      return {debugFormatOfType(Left), debugFormatOfType(Right)};
    return {};
  }
  if (F.isDeclaration())
    return {};
  const DataLayout &DL = F.getParent()->getDataLayout();
  for (const BasicBlock &BB : F)
    for (const Instruction &I : BB) {
      const auto *Call = dyn_cast<CallBase>(&I);
      const Function *Callee = Call ? Call->getCalledFunction() : nullptr;
      if (!Callee ||
          !StringRef(demangleRust(Callee->getName())).starts_with("core::panicking::assert_failed_inner"))
        continue;
      SmallVector<std::optional<ValueFormat>, 2> Formats;
      for (const Value *Arg : Call->args())
        if (const Function *Method = debugMethodOfVtable(Arg, DL)) {
          std::optional<ValueFormat> Format = valueFormatOf(*Method);
          // The vtable is `&T`'s (the body passes `&left`); callers pass `&T`.
          if (Format && Format->Derefs > 0)
            --Format->Derefs;
          else
            Format.reset();
          Formats.push_back(Format);
        }
      if (Formats.size() == 2)
        return {Formats[0], Formats[1]};
    }
  return {};
}

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

/// What a `panic_fmt(template, args, location)` call prints.
struct PanicFmtMessage {
  // A literal `panic!("…")` (`Arguments::from_str`, or its inlined form: the
  // string and `len << 1 | 1`): the string.
  Value *Literal = nullptr, *LiteralLen = nullptr;
  // A template with placeholders (`Arguments::new`, or inlined: the
  // template and the argument array).
  std::optional<std::vector<TemplatePart>> Parts;
  Value *Args = nullptr;
};

/// V, or the constant it loads from a constant global (an optimised build
/// reads `None::<fmt::Arguments>` from one).
Value *foldConstantLoad(Value *V) {
  auto *Load = dyn_cast<LoadInst>(V);
  if (!Load || !Load->isSimple())
    return V;
  Constant *Folded = ConstantFoldLoadFromConstPtr(dyn_cast<Constant>(Load->getPointerOperand()),
                                                  Load->getType(), Load->getDataLayout());
  return Folded ? Folded : V;
}

/// What an `fmt::Arguments` passed as its two words (the template and the
/// argument array, or their `Arguments::new`/`from_str` call) prints.
std::optional<PanicFmtMessage> argumentsMessage(Value *Template, Value *Args) {
  LLVMContext &Ctx = Template->getContext();
  Template = foldConstantLoad(Template);
  Args = foldConstantLoad(Args);
  Type *I64 = Type::getInt64Ty(Ctx);
  auto *Part = dyn_cast<ExtractValueInst>(Template);
  if (Part && Part->getIndices() == ArrayRef<unsigned>{0}) {
    auto *Ctor = dyn_cast<CallInst>(Part->getAggregateOperand());
    if (!Ctor || Ctor->arg_size() != 2)
      return std::nullopt;
    if (isArgumentsCtor(Ctor->getCalledFunction(), {"::from_str", "::from_str_nonconst"}))
      return PanicFmtMessage{Ctor->getArgOperand(0), Ctor->getArgOperand(1), std::nullopt, nullptr};
    if (!isArgumentsCtor(Ctor->getCalledFunction(), {"::new"}))
      return std::nullopt;
    Template = Ctor->getArgOperand(0);
    Args = Ctor->getArgOperand(1);
  }
  if (auto *CE = dyn_cast<ConstantExpr>(Args); CE && CE->getOpcode() == Instruction::IntToPtr)
    if (auto *Bits = dyn_cast<ConstantInt>(CE->getOperand(0)); Bits && (Bits->getZExtValue() & 1))
      return PanicFmtMessage{Template, ConstantInt::get(I64, Bits->getZExtValue() >> 1), std::nullopt,
                             nullptr};
  std::optional<StringRef> Bytes = constantBytes(Template);
  std::optional<std::vector<TemplatePart>> Parts = Bytes ? decodeFormatTemplate(*Bytes) : std::nullopt;
  if (!Parts)
    return std::nullopt;
  return PanicFmtMessage{nullptr, nullptr, std::move(Parts), isa<Constant>(Args) ? nullptr : Args};
}

/// Rewrites the calls of core's formatting panics whose message it can read
/// (`panic_fmt`, `assert_failed`, `result::unwrap_failed`): a constant text
/// → `oxide.panic_str(text, len, location)`; a message with values → a call
/// of the function made for that message, with the values.
class PanicCallRewriter {
public:
  PanicCallRewriter(Module &M, PanicBodyBuilder &Bodies) : M(M), Ctx(M.getContext()), Bodies(Bodies) {}

  /// `panic_fmt(template, args, location)`: `panic!`, `assert!`, core's own.
  bool rewritePanicFmt(Function &PanicFmt) {
    bool Changed = false;
    for (CallInst *C : callsOf(PanicFmt, 3)) {
      std::optional<PanicFmtMessage> Message = argumentsMessage(C->getArgOperand(0), C->getArgOperand(1));
      if (!Message)
        continue;
      if (Message->Literal) {
        replace(C, IRBuilder<>(C).CreateCall(
                       panicStr(), {Message->Literal, Message->LiteralLen, C->getArgOperand(2)}));
      } else {
        FormattedMessage Msg;
        Builder.formatTemplate(Msg, *C, *Message->Parts, Message->Args);
        emit(C, Msg, C->getArgOperand(2));
      }
      Changed = true;
    }
    return Changed;
  }

  /// `assert_failed::<T, U>(kind, &left, &right, Option<Arguments>, location)`
  /// (`assert_eq!`, `assert_ne!`): core's message, "assertion `left == right`
  /// failed[: message]\n  left: {:?}\n right: {:?}".
  bool rewriteAssertFailed(Function &AssertFailed) {
    bool Changed = false;
    auto [LeftFormat, RightFormat] = assertOperandFormats(AssertFailed);
    for (CallInst *C : callsOf(AssertFailed, 6)) {
      auto *Kind = dyn_cast<ConstantInt>(C->getArgOperand(0));
      if (!Kind || Kind->getZExtValue() > 2)
        continue;
      static const StringRef Ops[] = {"==", "!=", "matches"};
      FormattedMessage Msg;
      Builder.text(Msg, ("assertion `left " + Ops[Kind->getZExtValue()] + " right` failed").str());
      // `Some(format_args!(…))`: the template and the argument array.
      if (!isa<ConstantPointerNull>(foldConstantLoad(C->getArgOperand(3)))) {
        Builder.text(Msg, ": ");
        std::optional<PanicFmtMessage> Custom = argumentsMessage(C->getArgOperand(3), C->getArgOperand(4));
        if (Custom && Custom->Parts)
          Builder.formatTemplate(Msg, *C, *Custom->Parts, Custom->Args);
        else if (std::optional<StringRef> Literal = Custom && Custom->Literal
                                                        ? constantBytes(Custom->Literal)
                                                        : std::nullopt;
                 Literal && isa<ConstantInt>(Custom->LiteralLen))
          Builder.text(Msg, Literal->take_front(cast<ConstantInt>(Custom->LiteralLen)->getZExtValue()));
        else
          Builder.value(Msg, *C, nullptr, std::nullopt, Placeholder(), nullptr);
      }
      Builder.text(Msg, "\n  left: ");
      Builder.value(Msg, *C, C->getArgOperand(1), LeftFormat, Placeholder(), nullptr);
      Builder.text(Msg, "\n right: ");
      Builder.value(Msg, *C, C->getArgOperand(2), RightFormat, Placeholder(), nullptr);
      emit(C, Msg, C->getArgOperand(5));
      Changed = true;
    }
    return Changed;
  }

  /// `result::unwrap_failed(message, &error as &dyn Debug, location)`
  /// (`Result::unwrap`, `expect`): core's message, "{message}: {error:?}",
  /// where the message is a constant.
  bool rewriteUnwrapFailed(Function &UnwrapFailed) {
    bool Changed = false;
    const DataLayout &DL = M.getDataLayout();
    for (CallInst *C : callsOf(UnwrapFailed, 5)) {
      std::optional<StringRef> Bytes = constantBytes(C->getArgOperand(0));
      auto *Len = dyn_cast<ConstantInt>(C->getArgOperand(1));
      if (!Bytes || !Len || Len->getZExtValue() > Bytes->size())
        continue;
      const Function *Method = debugMethodOfVtable(C->getArgOperand(3), DL);
      std::optional<ValueFormat> Format = Method ? valueFormatOf(*Method) : std::nullopt;
      FormattedMessage Msg;
      Builder.text(Msg, Bytes->take_front(Len->getZExtValue()).str() + ": ");
      Builder.value(Msg, *C, C->getArgOperand(2), Format, Placeholder(), nullptr);
      emit(C, Msg, C->getArgOperand(4));
      Changed = true;
    }
    return Changed;
  }

  /// `oxide.panic_str(text, len, location)`, if a rewrite made it.
  Function *panicStrIfMade() const { return PanicStr; }

private:
  Module &M;
  LLVMContext &Ctx;
  PanicBodyBuilder &Bodies;
  MessageBuilder Builder;
  Function *PanicStr = nullptr;
  StringMap<GlobalVariable *> Texts;
  StringMap<Function *> MessageFunctions;

  static SmallVector<CallInst *> callsOf(Function &F, unsigned NumArgs) {
    SmallVector<CallInst *> Calls;
    for (User *U : F.users())
      if (auto *C = dyn_cast<CallInst>(U); C && C->getCalledFunction() == &F && C->arg_size() == NumArgs)
        Calls.push_back(C);
    return Calls;
  }

  void replace(CallInst *Old, CallInst *New) {
    New->setDebugLoc(Old->getDebugLoc());
    New->setDoesNotReturn();
    Old->eraseFromParent();
  }

  /// Replaces the panic call C by one that reports Msg: constant text, or
  /// the values loaded where C is and passed to the message's function.
  void emit(CallInst *C, const FormattedMessage &Msg, Value *Location) {
    IRBuilder<> B(C);
    if (Msg.Values.empty()) {
      replace(C, B.CreateCall(panicStr(), {text(Msg.Plain), B.getInt64(Msg.Plain.size()), Location}));
      return;
    }
    SmallVector<Value *> Args;
    for (const MessageValue &V : Msg.Values) {
      Value *P = V.Address;
      for (unsigned D = 0; D < V.Derefs; ++D)
        P = B.CreateLoad(B.getPtrTy(), P);
      Args.push_back(B.CreateLoad(memoryType(Ctx, V.Kind), P, "panic.value"));
    }
    Args.push_back(Location);
    replace(C, B.CreateCall(messageFunction(Msg), Args));
  }

  Function *panicStr() {
    if (!PanicStr) {
      Type *Ptr = PointerType::getUnqual(Ctx);
      auto *FTy = FunctionType::get(Type::getVoidTy(Ctx), {Ptr, Type::getInt64Ty(Ctx), Ptr}, false);
      PanicStr = Function::Create(FTy, GlobalValue::InternalLinkage, "oxide.panic_str", M);
    }
    return PanicStr;
  }

  /// One constant string per distinct text.
  GlobalVariable *text(StringRef Text, StringRef Name = "oxide.panic.format", bool Terminated = false) {
    GlobalVariable *&GV = Texts[(Text + (Terminated ? "\1" : "")).str()];
    if (!GV) {
      Constant *Str = ConstantDataArray::getString(Ctx, Text, Terminated);
      GV = new GlobalVariable(M, Str->getType(), true, GlobalValue::PrivateLinkage, Str, Name);
      GV->setUnnamedAddr(GlobalValue::UnnamedAddr::Global);
    }
    return GV;
  }

  /// The function for one message: takes the values, then the location;
  /// stores them into the record's slots and the printf buffer and calls
  /// `oxide.panic_values`. One per distinct message and value types.
  Function *messageFunction(const FormattedMessage &Msg) {
    SmallVector<Type *> Params;
    std::string Key = Msg.Record + '\0' + Msg.Printf + '\0';
    for (const MessageValue &V : Msg.Values) {
      Params.push_back(memoryType(Ctx, V.Kind));
      Key += char('A' + unsigned(V.Kind));
    }
    for (auto [K, As] : Msg.PrintArgs)
      Key += std::to_string(K) + char('a' + unsigned(As));
    Function *&Fn = MessageFunctions[Key];
    if (Fn)
      return Fn;
    Type *Ptr = PointerType::getUnqual(Ctx);
    Params.push_back(Ptr);
    Fn = Function::Create(FunctionType::get(Type::getVoidTy(Ctx), Params, false),
                          GlobalValue::InternalLinkage, "oxide.panic_message", M);
    makePanicFunction(*Fn);
    IRBuilder<> B(BasicBlock::Create(Ctx, "panic", Fn));

    ArrayType *SlotsTy = ArrayType::get(valueSlotType(Ctx), Msg.Values.size());
    Value *Slots = B.CreateAlloca(SlotsTy, nullptr, "values");
    uint64_t Kinds = 0;
    for (unsigned K = 0; K < Msg.Values.size(); ++K) {
      B.CreateStore(recordBits(B, Fn->getArg(K)), B.CreateConstInBoundsGEP1_64(valueSlotType(Ctx), Slots, K));
      Kinds |= uint64_t(Msg.Values[K].Kind) << (8 * K);
    }

    SmallVector<Value *> PrintArgs;
    for (auto [K, As] : Msg.PrintArgs)
      PrintArgs.push_back(printfArgument(B, Fn->getArg(K), Msg.Values[K].Kind, As));
    SmallVector<Type *> Fields(printfHeaderType(Ctx)->elements());
    for (Value *V : PrintArgs)
      Fields.push_back(V->getType());
    StructType *PrintfTy = StructType::get(Ctx, Fields);
    Value *Printf = B.CreateAlloca(PrintfTy, nullptr, "printf.args");
    for (unsigned I = 0; I < PrintArgs.size(); ++I)
      B.CreateStore(PrintArgs[I], B.CreateStructGEP(PrintfTy, Printf, PrintfHeaderFields + I));

    std::string Format = (PrintfPrefix + " at %s:%u:%u:\n" + Msg.Printf + "\n").str();
    B.CreateCall(Bodies.valuesPanic(),
                 {text(Msg.Record), B.getInt64(Msg.Record.size()), text(Format, "oxide.panic.fmt", true),
                  Printf, Slots, B.getInt64(Kinds), B.getInt32(Msg.Values.size()),
                  Fn->getArg(Msg.Values.size())});
    B.CreateUnreachable();
    return Fn;
  }

  /// A value as printf's conversion takes it.
  Value *printfArgument(IRBuilder<> &B, Value *V, ValueKind Kind, PrintAs As) {
    switch (As) {
    case PrintAs::Signed:
      return B.CreateSExt(V, B.getInt64Ty());
    case PrintAs::Unsigned:
      return B.CreateZExt(V, B.getInt64Ty());
    case PrintAs::Double:
      return B.CreateFPExt(V, B.getDoubleTy());
    case PrintAs::BoolText:
      return B.CreateSelect(B.CreateIsNotNull(V), text("true", "oxide.panic.bool", true),
                            text("false", "oxide.panic.bool", true));
    case PrintAs::Char:
      // %c prints one byte: ASCII as it is, anything else as `?` (the
      // record has the character).
      return B.CreateSelect(B.CreateICmpULT(V, B.getInt32(0x80)), V, B.getInt32('?'));
    case PrintAs::Nothing:
      break;
    }
    (void)Kind;
    return V;
  }
};

} // namespace

PreservedAnalyses LowerPanicsPass::run(Module &M, ModuleAnalysisManager &) {
  PanicRecorder Recorder(M);
  PanicBodyBuilder Builder(M, Recorder);
  PanicCallRewriter Rewriter(M, Builder);
  bool Changed = false;

  SmallVector<std::pair<Function *, const PanicFunction *>> Panics;
  for (Function &F : M) {
    if (F.isIntrinsic())
      continue;
    std::string Path = demangleRust(F.getName());
    if (const PanicFunction *P = findPanicFunction(Path, F.isDeclaration())) {
      StringRef Name(Path);
      if (Name.starts_with("core::panicking::panic_fmt"))
        Changed |= Rewriter.rewritePanicFmt(F);
      else if (Name.starts_with("core::panicking::assert_failed") && !Name.contains("assert_failed_inner"))
        Changed |= Rewriter.rewriteAssertFailed(F);
      else if (Name.starts_with("core::result::unwrap_failed"))
        Changed |= Rewriter.rewriteUnwrapFailed(F);
      Panics.push_back({&F, P});
    }
  }
  for (auto [F, P] : Panics) {
    Builder.define(*F, *P, demangleRust(F->getName()));
    Changed = true;
  }
  if (Function *PanicStr = Rewriter.panicStrIfMade())
    Builder.define(*PanicStr, PanicWithString, "panic");
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}
