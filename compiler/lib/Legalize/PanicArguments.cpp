//===- PanicArguments.cpp - What a panic's fmt::Arguments say ------------===//
//
// See PanicArguments.h. The argument array is read from the IR the way the
// stores left it: each 8-byte field of an element must have been written
// exactly once, by a store, by a memcpy from memory whose field was (the
// `rt::Argument` temporaries), or by a call whose body wrote it
// (`rt::Argument::new_display(sret %tmp, ptr %x)` in a debug build); a value
// such a body stored from one of its parameters is the caller's argument.
// Anything less plain (a variable index, an unknown call writing the array)
// gives up, and the value prints as `{..}`.
//===----------------------------------------------------------------------===//
#include "PanicArguments.h"
#include "oxide/RustNames.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include <climits>

using namespace llvm;
using namespace oxide;
using panic_record::ValueKind;

//===-- The template -------------------------------------------------------===//

std::optional<std::vector<TemplatePart>> oxide::decodeFormatTemplate(StringRef Bytes) {
  std::vector<TemplatePart> Parts;
  size_t At = 0;
  auto Take = [&](size_t N) -> std::optional<StringRef> {
    if (At + N > Bytes.size())
      return std::nullopt;
    StringRef Part = Bytes.substr(At, N);
    At += N;
    return Part;
  };
  auto U16 = [](StringRef S) { return uint16_t(uint8_t(S[0]) | uint16_t(uint8_t(S[1])) << 8); };
  unsigned NextArg = 0;
  while (std::optional<StringRef> Head = Take(1)) {
    uint8_t B = Head->front();
    if (B == 0)
      return Parts;
    if ((B & 0xC0) == 0xC0) {
      Placeholder P;
      if (B & 1) {
        std::optional<StringRef> W = Take(4);
        if (!W)
          return std::nullopt;
        P.Options = uint32_t(U16(*W)) | uint32_t(U16(W->drop_front(2))) << 16;
      }
      for (auto [Bit, Field] : {std::pair{2, &P.Width}, std::pair{4, &P.Precision}}) {
        if (!(B & Bit))
          continue;
        std::optional<StringRef> W = Take(2);
        if (!W)
          return std::nullopt;
        *Field = U16(*W);
      }
      P.Arg = NextArg;
      if (B & 8) {
        std::optional<StringRef> W = Take(2);
        if (!W)
          return std::nullopt;
        P.Arg = U16(*W);
      }
      P.WidthIsArg = B & 0x10;
      P.PrecisionIsArg = B & 0x20;
      NextArg = P.Arg + 1;
      Parts.push_back({"", P});
      continue;
    }
    size_t Len = B;
    if (B == 0x80) {
      std::optional<StringRef> L = Take(2);
      if (!L)
        return std::nullopt;
      Len = U16(*L);
    } else if (B > 0x80) {
      return std::nullopt;
    }
    std::optional<StringRef> Piece = Take(Len);
    if (!Piece)
      return std::nullopt;
    Parts.push_back({Piece->str(), std::nullopt});
  }
  return std::nullopt; // no end byte
}

//===-- The `fmt` methods --------------------------------------------------===//

namespace {

std::optional<ValueKind> primitiveKind(StringRef Type) {
  static const std::pair<StringRef, ValueKind> Kinds[] = {
      {"u8", ValueKind::U8},       {"u16", ValueKind::U16},     {"u32", ValueKind::U32},
      {"u64", ValueKind::U64},     {"u128", ValueKind::U128},   {"usize", ValueKind::U64},
      {"i8", ValueKind::I8},       {"i16", ValueKind::I16},     {"i32", ValueKind::I32},
      {"i64", ValueKind::I64},     {"i128", ValueKind::I128},   {"isize", ValueKind::I64},
      {"f32", ValueKind::F32},     {"f64", ValueKind::F64},     {"bool", ValueKind::Bool},
      {"char", ValueKind::Char}};
  for (auto [Name, Kind] : Kinds)
    if (Type == Name)
      return Kind;
  return std::nullopt;
}

/// Whether `Trait` prints values of `Kind` (integers take every trait,
/// floats the decimal and exponent ones, bool and char Display and Debug).
bool traitPrints(StringRef Trait, ValueKind Kind) {
  bool Int = Kind <= ValueKind::I128, Float = Kind == ValueKind::F32 || Kind == ValueKind::F64;
  if (Trait == "Display" || Trait == "Debug")
    return true;
  if (Trait == "LowerExp" || Trait == "UpperExp")
    return Int || Float;
  return Int && (Trait == "LowerHex" || Trait == "UpperHex" || Trait == "Octal" || Trait == "Binary");
}

std::optional<ValueFormat> valueFormat(const Function &Method, unsigned Depth) {
  std::optional<FormattingMethod> FM = formattingMethod(demangleRust(Method.getName()));
  if (!FM || Depth > 4)
    return std::nullopt;
  StringRef Type = FM->Type;
  unsigned Derefs = 0;
  while (Type.consume_front("&mut ") || Type.consume_front("&"))
    ++Derefs;
  if (std::optional<ValueKind> Kind = primitiveKind(Type)) {
    if (!traitPrints(FM->Trait, *Kind))
      return std::nullopt;
    return ValueFormat{FM->Trait, *Kind, Derefs};
  }
  // `<&T as Display>::fmt` (a legacy name keeps the parameter): the method
  // its body forwards to, once the reference is followed.
  if (Derefs == 0 || Method.isDeclaration() || Type.contains("::") || Type.contains('<'))
    return std::nullopt;
  const Function *Inner = nullptr;
  for (const BasicBlock &BB : Method)
    for (const Instruction &I : BB)
      if (const auto *Call = dyn_cast<CallBase>(&I))
        if (const Function *Callee = Call->getCalledFunction()) {
          std::optional<FormattingMethod> CM = formattingMethod(demangleRust(Callee->getName()));
          if (!CM || CM->Trait != FM->Trait)
            continue;
          if (Inner && Inner != Callee)
            return std::nullopt;
          Inner = Callee;
        }
  if (!Inner)
    return std::nullopt;
  std::optional<ValueFormat> F = valueFormat(*Inner, Depth + 1);
  if (F)
    F->Derefs += Derefs;
  return F;
}

} // namespace

std::optional<ValueFormat> oxide::valueFormatOf(const Function &Method) { return valueFormat(Method, 0); }

//===-- The argument array -------------------------------------------------===//

namespace {

/// Reads what was stored in memory: the single write of a field, through
/// memcpys and the bodies of the functions that wrote it.
class StoreTracer {
public:
  explicit StoreTracer(const DataLayout &DL) : DL(DL) {}

  /// What the writes to [Offset, Offset + Size) of the memory Root points to
  /// (an alloca, or an argument of the function being read) left there: the
  /// stored value, in Root's function. `Ignore`: a call that does not count
  /// (the panic itself). `Writer`: set to the call that wrote the whole
  /// range, when a call did.
  Value *storedAt(Value *Root, int64_t Offset, int64_t Size, const Instruction *Ignore,
                  unsigned Depth, const CallBase **Writer = nullptr) {
    if (Depth > MaxDepth)
      return nullptr;
    std::vector<Write> Writes;
    if (!collectWrites(Root, Ignore, Depth, Writes))
      return nullptr;
    const Write *Only = nullptr;
    for (const Write &W : Writes)
      if (W.Begin < Offset + Size && Offset < W.End) {
        if (Only)
          return nullptr; // written twice: not plain
        Only = &W;
      }
    if (!Only)
      return nullptr;
    if (auto *St = dyn_cast<StoreInst>(Only->I))
      return Only->Begin == Offset && Only->End == Offset + Size ? St->getValueOperand() : nullptr;
    if (Only->Begin > Offset || Offset + Size > Only->End)
      return nullptr;
    if (auto *Copy = dyn_cast<MemTransferInst>(Only->I)) {
      APInt SrcOffset(DL.getIndexTypeSizeInBits(Copy->getRawSource()->getType()), 0);
      Value *Src = Copy->getRawSource()->stripAndAccumulateConstantOffsets(DL, SrcOffset, true);
      return storedAt(Src, SrcOffset.getSExtValue() + Offset - Only->Begin, Size, nullptr, Depth + 1,
                      Writer);
    }
    auto *Call = cast<CallBase>(Only->I);
    if (Writer && Only->Begin == Offset)
      *Writer = Call;
    Function *Callee = Call->getCalledFunction();
    if (!Callee || Callee->isDeclaration())
      return nullptr;
    Value *Inner = storedAt(Callee->getArg(Only->ArgNo), Offset - Only->Begin, Size, nullptr,
                            Depth + 1);
    if (auto *A = dyn_cast_or_null<Argument>(Inner); A && A->getParent() == Callee)
      return Call->getArgOperand(A->getArgNo());
    return dyn_cast_or_null<Constant>(Inner);
  }

private:
  static constexpr unsigned MaxDepth = 8;
  const DataLayout &DL;

  struct Write {
    Instruction *I;
    int64_t Begin, End; // bytes of the region, relative to the root
    unsigned ArgNo;     // for a call: the argument that points into the region
  };

  /// Whether a call may write through its argument ArgNo: a declaration may
  /// (but `fmt::Arguments`' constructors, which a debug build may share from
  /// another crate, only keep the pointer); a body may if it writes through
  /// that parameter.
  bool callWrites(const CallBase &Call, unsigned ArgNo, unsigned Depth) {
    const Function *Callee = Call.getCalledFunction();
    if (Callee && Callee->isDeclaration()) {
      std::string Path = demangleRust(Callee->getName());
      // `core::fmt::Arguments::new` (legacy), `<core::fmt::Arguments>::new::<8, 1>` (v0).
      if (StringRef(Path).ltrim('<').starts_with("core::fmt::Arguments"))
        return false;
    }
    if (!Callee || Callee->isDeclaration() || ArgNo >= Callee->arg_size() || Depth > MaxDepth)
      return !Call.onlyReadsMemory(ArgNo);
    std::vector<Write> Inner;
    return !collectWrites(const_cast<Argument *>(Callee->getArg(ArgNo)), nullptr, Depth + 1, Inner) ||
           !Inner.empty();
  }

  /// Every instruction that writes the memory Root points to, with the bytes
  /// it covers; false where that cannot be told.
  bool collectWrites(Value *Root, const Instruction *Ignore, unsigned Depth, std::vector<Write> &Out) {
    SmallVector<std::pair<Value *, int64_t>> Work{{Root, 0}};
    SmallPtrSet<Value *, 16> Seen;
    while (!Work.empty()) {
      auto [P, Off] = Work.pop_back_val();
      if (!Seen.insert(P).second)
        continue;
      for (User *U : P->users()) {
        auto *I = dyn_cast<Instruction>(U);
        if (!I || I == Ignore)
          continue;
        if (auto *GEP = dyn_cast<GetElementPtrInst>(I)) {
          APInt C(DL.getIndexTypeSizeInBits(GEP->getType()), 0);
          if (GEP->getPointerOperand() != P || !GEP->accumulateConstantOffset(DL, C))
            return false;
          Work.push_back({GEP, Off + C.getSExtValue()});
        } else if (isa<BitCastInst, AddrSpaceCastInst>(I)) {
          Work.push_back({I, Off});
        } else if (auto *St = dyn_cast<StoreInst>(I)) {
          if (St->getPointerOperand() == P)
            Out.push_back({St, Off,
                           Off + int64_t(DL.getTypeStoreSize(St->getValueOperand()->getType())), 0});
          // Storing the address itself (into `fmt::Arguments`) writes nothing here.
        } else if (isa<LoadInst>(I)) {
        } else if (auto *Copy = dyn_cast<MemTransferInst>(I)) {
          if (Copy->getRawDest() != P)
            continue;
          auto *Len = dyn_cast<ConstantInt>(Copy->getLength());
          if (!Len)
            return false;
          Out.push_back({Copy, Off, Off + int64_t(Len->getZExtValue()), 0});
        } else if (auto *II = dyn_cast<IntrinsicInst>(I)) {
          if (isa<MemSetInst>(II) || !II->onlyReadsMemory())
            if (!II->isLifetimeStartOrEnd() && !II->isAssumeLikeIntrinsic())
              return false;
        } else if (auto *Call = dyn_cast<CallBase>(I)) {
          for (unsigned A = 0; A < Call->arg_size(); ++A)
            if (Call->getArgOperand(A) == P && callWrites(*Call, A, Depth))
              Out.push_back({Call, Off, INT64_MAX, A});
        } else if (!isa<ReturnInst, ICmpInst, InsertValueInst>(I)) {
          // Phis, selects, ptrtoint: the address goes where it cannot be
          // followed. (Returned or put in an aggregate, it is `Arguments`
          // being built around the array, which only reads it.)
          return false;
        }
      }
    }
    return true;
  }
};

} // namespace

std::optional<ArgumentSlot> oxide::readArgumentSlot(Value *Args, unsigned I, const Instruction *Panic) {
  const DataLayout &DL = Panic->getModule()->getDataLayout();
  APInt Base(DL.getIndexTypeSizeInBits(Args->getType()), 0);
  Value *Root = Args->stripAndAccumulateConstantOffsets(DL, Base, true);
  if (!isa<AllocaInst>(Root))
    return std::nullopt;
  constexpr int64_t ArgumentBytes = 16, PointerBytes = 8;
  int64_t At = Base.getSExtValue() + int64_t(I) * ArgumentBytes;
  StoreTracer Tracer(DL);
  // A width or precision: `rt::Argument::from_usize(sret, &usize, …)`.
  const CallBase *Writer = nullptr;
  Value *Address = Tracer.storedAt(Root, At, PointerBytes, Panic, 0, &Writer);
  if (Writer && Writer->getCalledFunction() && Writer->arg_size() >= 2 &&
      StringRef(demangleRust(Writer->getCalledFunction()->getName()))
          .starts_with("core::fmt::rt::Argument::from_usize")) {
    Value *Count = Writer->getArgOperand(1);
    if (!Count->getType()->isPointerTy())
      return std::nullopt;
    return ArgumentSlot{Count, nullptr, true};
  }
  auto *Method = dyn_cast_or_null<Function>(Tracer.storedAt(Root, At + PointerBytes, PointerBytes, Panic, 0));
  if (!Address || !Address->getType()->isPointerTy() || !Method)
    return std::nullopt;
  return ArgumentSlot{Address, Method, false};
}
