//===- Embed.cpp - The device image and kernel table in the host binary ---===//
//
// The PTX must travel inside the executable (no files beside it), and the
// host must find, for the address of an entry wrapper it takes at the launch
// site, the PTX entry to launch. This file writes an x86-64 object holding the
// image and one ImageRecord in the section `oxide_kernels` (docs/ABI.md §3),
// which the system linker adds to the host link.
//
// The wrappers' host addresses cannot be relocations: rustc gives
// monomorphic instances internal linkage, so no other object can name them.
// The object therefore reserves one 8-byte slot per host copy in the section
// `.oxide_slots`, and after the system link patchHostAddresses reads the
// linked file's symbol table (local symbols included) and writes into each
// slot the distance from the slot to the function. A self-relative offset
// stays right wherever the executable or shared object is loaded.
//===----------------------------------------------------------------------===//
#include "oxide/Abi.h"
#include "oxide/DeviceLinker.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/Transforms/Utils/ModuleUtils.h"
#include <fstream>
#include <map>

using namespace llvm;
using namespace oxide;

namespace {

/// Slots start with this value so the section is PROGBITS (not .bss) and an
/// unpatched slot is recognisable; patching writes 0 into unused slots.
constexpr uint64_t UnpatchedSlot = 0x7FFFFFFFFFFFFFFFULL;

Error makeError(const Twine &Msg) { return createStringError(inconvertibleErrorCode(), Msg); }

class TableBuilder {
public:
  explicit TableBuilder(Module &M) : M(M), Ctx(M.getContext()) {}

  Error build(const DeviceImage &Image) {
    Type *I64 = Type::getInt64Ty(Ctx), *I32 = Type::getInt32Ty(Ctx);
    Type *Ptr = PointerType::getUnqual(Ctx);

    size_t TotalSlots = Image.Constants.size();
    for (const KernelEntryInfo &K : Image.Kernels)
      TotalSlots += K.HostCopies;
    auto *SlotsTy = ArrayType::get(I64, std::max<size_t>(1, TotalSlots));
    auto *Slots = new GlobalVariable(
        M, SlotsTy, true, GlobalValue::InternalLinkage,
        ConstantArray::get(SlotsTy, SmallVector<Constant *>(SlotsTy->getNumElements(),
                                                            ConstantInt::get(I64, UnpatchedSlot))),
        "oxide.host_slots");
    Slots->setSection(HostSlotSection);
    Slots->setAlignment(Align(8));

    auto *KernelTy = StructType::get(Ctx, {Ptr, I64, Ptr, I64, I64, Ptr, I64, I64, Ptr, I64, Ptr, I64, I64});
    if (M.getDataLayout().getTypeAllocSize(KernelTy) != KernelRecordBytes)
      return makeError("internal error: the KernelRecord written here and Abi.def's KernelRecordBytes disagree");
    SmallVector<Constant *> Kernels;
    size_t Slot = 0;
    for (const KernelEntryInfo &K : Image.Kernels) {
      Constant *SlotPtr = ConstantExpr::getInBoundsGetElementPtr(
          SlotsTy, Slots, ArrayRef<Constant *>{ConstantInt::get(I64, 0), ConstantInt::get(I64, Slot)});
      Kernels.push_back(ConstantStruct::get(
          KernelTy, {string(K.PtxName), ConstantInt::get(I64, K.PtxName.size()), SlotPtr,
                     ConstantInt::get(I64, K.HostCopies), ConstantInt::get(I64, K.NumParams),
                     string(K.RustPath), ConstantInt::get(I64, K.RustPath.size()),
                     ConstantInt::get(I64, K.Flags), optionalString(K.UncheckedPtxName),
                     ConstantInt::get(I64, K.UncheckedPtxName.size()), optionalString(K.LaunchCondition),
                     ConstantInt::get(I64, K.LaunchCondition.size()), ConstantInt::get(I64, K.StackBytes)}));
      Slot += K.HostCopies;
    }
    auto *KernelsTy = ArrayType::get(KernelTy, Kernels.size());
    auto *KernelArray = new GlobalVariable(M, KernelsTy, true, GlobalValue::InternalLinkage,
                                           ConstantArray::get(KernelsTy, Kernels), "oxide.kernels");
    KernelArray->setAlignment(Align(8));

    // Constants take the slots after the kernels', one each.
    auto *ConstantTy = StructType::get(Ctx, {Ptr, I64, Ptr, I64});
    SmallVector<Constant *> Constants;
    for (const ConstantInfo &C : Image.Constants) {
      Constant *SlotPtr = ConstantExpr::getInBoundsGetElementPtr(
          SlotsTy, Slots, ArrayRef<Constant *>{ConstantInt::get(I64, 0), ConstantInt::get(I64, Slot)});
      Constants.push_back(ConstantStruct::get(
          ConstantTy, {string(C.PtxName), ConstantInt::get(I64, C.PtxName.size()), SlotPtr,
                       ConstantInt::get(I64, C.Size)}));
      ++Slot;
    }
    auto *ConstantsTy = ArrayType::get(ConstantTy, Constants.size());
    auto *ConstantTable = new GlobalVariable(M, ConstantsTy, true, GlobalValue::InternalLinkage,
                                              ConstantArray::get(ConstantsTy, Constants),
                                              "oxide.constants");
    ConstantTable->setAlignment(Align(8));

    auto *RecordTy = StructType::get(Ctx, {I64, Ptr, I64, Ptr, I64, Ptr, I64, Ptr, I64, I32, I32});
    Constant *Name = string(Image.ModuleName);
    Constant *Null = ConstantPointerNull::get(PointerType::getUnqual(Ctx));
    auto record = [&](const std::string &Data, Constant *KernelTable, size_t NumKernels, Constant *ConstTable,
                      size_t NumConstants, uint32_t Kind, uint32_t Reserved) {
      return ConstantStruct::get(
          RecordTy, {ConstantInt::get(I64, ImageMagic), Name, ConstantInt::get(I64, Image.ModuleName.size()),
                     string(Data), ConstantInt::get(I64, Data.size()), KernelTable,
                     ConstantInt::get(I64, NumKernels), ConstTable, ConstantInt::get(I64, NumConstants),
                     ConstantInt::get(I32, Kind), ConstantInt::get(I32, Reserved)});
    };
    SmallVector<Constant *, 2> Records;
    Records.push_back(record(Image.Ptx, KernelArray, Kernels.size(), ConstantTable, Constants.size(), ImageKindPtx, 0));
    // The same kernels assembled for one architecture: a second record of
    // the module's name, which the host loads instead of the PTX on a GPU of
    // that compute capability (no JIT at load). Its tables are the PTX's.
    if (!Image.Cubin.empty())
      Records.push_back(record(Image.Cubin, Null, 0, Null, 0, ImageKindCubin, Image.CubinSm));
    // One array, so that the records lie back to back in the section.
    auto *RecordsTy = ArrayType::get(RecordTy, Records.size());
    auto *Record = new GlobalVariable(M, RecordsTy, true, GlobalValue::InternalLinkage,
                                      ConstantArray::get(RecordsTy, Records), "oxide.image_record");
    Record->setSection(ImageSection);
    Record->setAlignment(Align(8));
    // llvm.used (not compiler.used) gives the section SHF_GNU_RETAIN, so
    // --gc-sections keeps it although only __start_oxide_kernels names it.
    appendToUsed(M, {Record});
    return Error::success();
  }

private:
  Module &M;
  LLVMContext &Ctx;

  /// string(S), or a null pointer for the empty string.
  Constant *optionalString(const std::string &S) {
    return S.empty() ? ConstantPointerNull::get(PointerType::getUnqual(Ctx)) : string(S);
  }

  /// A private NUL-terminated string constant.
  Constant *string(const std::string &S) {
    Constant *Data = ConstantDataArray::getString(Ctx, S, /*AddNull=*/true);
    auto *GV = new GlobalVariable(M, Data->getType(), true, GlobalValue::PrivateLinkage, Data,
                                  "oxide.str");
    GV->setAlignment(Align(1));
    return GV;
  }
};

} // namespace

Error oxide::writeKernelTableObject(const DeviceImage &Image, const std::string &Path) {
  LLVMInitializeX86TargetInfo();
  LLVMInitializeX86Target();
  LLVMInitializeX86TargetMC();
  LLVMInitializeX86AsmPrinter();

  LLVMContext Ctx;
  Module M("oxide-kernel-table", Ctx);
  Triple T("x86_64-unknown-linux-gnu");
  std::string Err;
  const Target *Tgt = TargetRegistry::lookupTarget(T, Err);
  if (!Tgt)
    return makeError("the x86-64 target is missing from this LLVM: " + Err);
  std::unique_ptr<TargetMachine> TM(
      Tgt->createTargetMachine(T, "x86-64", "", TargetOptions(), Reloc::PIC_));
  M.setTargetTriple(T);
  M.setDataLayout(TM->createDataLayout());
  if (Error E = TableBuilder(M).build(Image))
    return E;

  std::error_code EC;
  raw_fd_ostream OS(Path, EC);
  if (EC)
    return makeError("cannot write " + Path + ": " + EC.message());
  legacy::PassManager PM;
  if (TM->addPassesToEmitFile(PM, OS, nullptr, CodeGenFileType::ObjectFile))
    return makeError("cannot emit the kernel table object");
  PM.run(M);
  return Error::success();
}

Error oxide::patchHostAddresses(const DeviceImage &Image, const std::string &LinkedFile,
                                bool Verbose) {
  auto BinOrErr = object::ObjectFile::createObjectFile(LinkedFile);
  if (!BinOrErr)
    return makeError("cannot read the linked file " + LinkedFile + ": " +
                     toString(BinOrErr.takeError()));
  auto *Elf = dyn_cast<object::ELF64LEObjectFile>(BinOrErr->getBinary());
  if (!Elf)
    return makeError(LinkedFile + " is not a 64-bit little-endian ELF file");

  uint64_t SlotAddr = 0, SlotOffset = 0;
  bool Found = false;
  for (const object::ELFSectionRef &S : Elf->sections()) {
    Expected<StringRef> Name = S.getName();
    if (Name && *Name == HostSlotSection) {
      SlotAddr = S.getAddress();
      SlotOffset = S.getOffset();
      Found = true;
    } else if (!Name) {
      consumeError(Name.takeError());
    }
  }
  if (!Found) {
    // The linker garbage-collected the table: nothing in the program looks
    // kernels up (cuda-host is not linked), so there is nothing to patch.
    if (Verbose)
      errs() << "oxide-link: no kernel table in the output (unused), nothing to patch\n";
    return Error::success();
  }

  std::map<std::string, std::vector<uint64_t>> Addresses;
  for (const KernelEntryInfo &K : Image.Kernels)
    Addresses[K.HostSymbol];
  for (const ConstantInfo &C : Image.Constants)
    Addresses[C.HostSymbol];
  for (const object::ELFSymbolRef &Sym : Elf->symbols()) {
    Expected<StringRef> Name = Sym.getName();
    if (!Name) {
      consumeError(Name.takeError());
      continue;
    }
    auto Wanted = Addresses.find(Name->str());
    if (Wanted == Addresses.end())
      continue;
    Expected<uint64_t> Addr = Sym.getAddress();
    if (Addr && *Addr)
      Wanted->second.push_back(*Addr);
    else if (!Addr)
      consumeError(Addr.takeError());
  }

  std::fstream File(LinkedFile, std::ios::in | std::ios::out | std::ios::binary);
  if (!File)
    return makeError("cannot open " + LinkedFile + " to patch the kernel table");
  size_t Slot = 0;
  // Fills `Count` slots from the addresses of `Symbol`; unused slots get 0.
  auto Fill = [&](const std::string &Symbol, unsigned Count) {
    const std::vector<uint64_t> &Found = Addresses[Symbol];
    for (unsigned I = 0; I < Count; ++I, ++Slot) {
      uint64_t SlotVA = SlotAddr + 8 * Slot;
      int64_t Delta = I < Found.size() ? static_cast<int64_t>(Found[I] - SlotVA) : 0;
      File.seekp(static_cast<std::streamoff>(SlotOffset + 8 * Slot));
      char Bytes[8];
      for (int B = 0; B < 8; ++B)
        Bytes[B] = static_cast<char>((static_cast<uint64_t>(Delta) >> (8 * B)) & 0xFF);
      File.write(Bytes, 8);
    }
    return Found.size();
  };
  for (const KernelEntryInfo &K : Image.Kernels) {
    size_t Found = Fill(K.HostSymbol, K.HostCopies);
    if (Verbose)
      errs() << "oxide-link: kernel " << K.PtxName << ": " << Found << " host copies\n";
  }
  for (const ConstantInfo &C : Image.Constants)
    Fill(C.HostSymbol, 1);
  if (!File)
    return makeError("writing the kernel table into " + LinkedFile + " failed");
  return Error::success();
}
