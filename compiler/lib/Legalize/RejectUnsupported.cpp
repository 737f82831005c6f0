//===- RejectUnsupported.cpp - What the GPU cannot run is a compile error -===//
//
// After SelectReachable, the module holds exactly the code the kernels reach.
// Whatever in it has no device implementation must stop the build with an
// error that points at the user's code, never a crash in the NVPTX backend or
// ptxas, nor a kernel that fails at run time. Rejected:
//   * a call to a function that is only declared (its body is host code:
//     heap allocation, I/O, threads, the environment, clocks, …) other than
//     target-independent intrinsics, libdevice, the functions the driver
//     resolves at load (DriverFunctions.def: vprintf, cudaGraphSetConditional,
//     …) and the CUDA C++ functions of the build's device sources
//     (BindDeviceSources); a
//     user's own `extern "C"` declaration gets a note on device sources;
//   * an instruction of the host CPU: an `llvm.x86.*` intrinsic (or another
//     CPU's), and every function of `core::arch::x86_64` (or another CPU's)
//     that the user's code calls, even one written in portable IR: the user
//     asked for x86 instructions;
//   * inline assembly: Rust's `asm!` is written for, and checked against, the
//     host CPU;
//   * thread-local statics (`thread_local!`): they belong to host threads;
//   * a read of a mutable host static (`static mut`, an atomic or cell static):
//     the device has only the copy made at link time;
//   * a write to a mutable host static, by a store or an atomic
//     read-modify-write or compare-exchange, in the function that names the
//     static or in any function its address is passed to (`COUNTER += 1`,
//     `HITS.fetch_add(1, …)`): the device only has a copy of the static, so
//     the host would never see the write. The errors point at
//     `#[device_global]`, whose statics live in GPU memory (AssignAddressSpaces
//     moves them out of address space 0 before this pass).
// Functions exported to CUDA C++ (MarkDeviceExports) are checked as kernels
// are. Code is reached through calls and through function addresses (vtables,
// function pointers, thread_local!'s accessor), as SelectReachable keeps it.
//
// Each error is in rustc's shape and names what the user's code called, the
// kernel, the call chain from the kernel to the offending function, and the
// innermost Rust source location in the user's code (lines of the standard
// library are skipped). There is one error per line of user code (the most
// specific one), shared by every kernel that reaches it; a drop at the end of
// a scope is only reported when nothing else in the kernel is. What the
// errors say is in one place: the table `PathReasons` and `describe`.
//===----------------------------------------------------------------------===//
#include "oxide/Abi.h"
#include "oxide/Passes.h"
#include "oxide/RustNames.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <tuple>

using namespace llvm;
using namespace oxide;

namespace {

//===-- Why: the table of reasons ------------------------------------------===//

constexpr StringLiteral HeapWhy =
    "heap allocation (Box, Vec, String, format!) is not available in kernels";
constexpr StringLiteral ThreadLocalWhy =
    "thread-local statics (thread_local!) belong to host threads and are not available in "
    "kernels";

/// Why a host function cannot run on the device, by the Rust path of a
/// function on the call chain to it. The chain is read from the function the
/// user called inwards, and the first row any function on it matches wins;
/// within one function, rows are tried in order, the most specific first.
struct PathReason {
  StringRef Pattern; // a substring of the Rust path
  StringRef Why;
};
const PathReason PathReasons[] = {
    {"std::thread::local::", ThreadLocalWhy},
    {"std::sys::thread_local::", ThreadLocalWhy},
    {"std::thread::", "host threads (std::thread) are not available in kernels; the kernel "
                      "itself runs on many GPU threads"},
    {"std::io::", "host I/O (println!, print!, eprintln!, stdin, files) is not available in "
                  "kernels"},
    {"std::fs::", "the host file system (std::fs) is not available in kernels"},
    {"std::net::", "the network (std::net) is not available in kernels"},
    {"std::process::", "host processes (std::process) are not available in kernels"},
    {"std::env::", "the host environment (std::env) is not available in kernels"},
    {"std::time::", "host clocks (std::time) are not available in kernels; use "
                    "cuda_device::thread::clock64"},
    {"std::sync::", "host synchronisation (Mutex, RwLock, Once, channels) is not available in "
                    "kernels; use atomics on device memory"},
    {"__rust_alloc", HeapWhy},
    {"__rust_dealloc", HeapWhy},
    {"__rust_realloc", HeapWhy},
    {"__rust_no_alloc_shim_is_unstable", HeapWhy},
    {"alloc::", HeapWhy},
    {"core::fmt::", "string formatting (format_args!, Debug, Display) is not available in "
                    "kernels"},
};
/// Tried only when no row above matches anything on the chain.
const PathReason FallbackReasons[] = {
    {"std::", "this part of std needs the host operating system"},
};

/// What an error is about.
enum class Kind { HostCpu, InlineAsm, ThreadLocal, StaticWrite, StaticRead, NoBody };

/// What the error says about a thing of kind `K` (`What` names the intrinsic's
/// CPU or the static): `Inside` when it is inside a function the user called,
/// after "`f` cannot be called on the GPU: ", else as the whole message.
std::string describe(Kind K, const std::string &What, bool Inside) {
  const std::string HostCpu = What + " intrinsics are instructions of the host CPU, which the GPU "
                                     "does not have; write portable Rust or use cuda_device's GPU "
                                     "intrinsics";
  const std::string StaticWrite =
      "host statics are not shared with the GPU (a kernel would only change a device copy); "
      "declare it `#[device_global]` to keep it in GPU memory, shared by the kernels and read "
      "by the host with KernelModule::read_global, or write results through a kernel "
      "parameter such as `mut out: DisjointSlice<T>`";
  const std::string StaticRead =
      "host statics are not shared with the GPU (a kernel would see only the value it had "
      "when the program was linked); pass the value as a kernel parameter, put it in "
      "constant memory with #[constant], or declare it `#[device_global]` to keep it in GPU "
      "memory";
  switch (K) {
  case Kind::NoBody:
    return "its body is not part of any crate the device linker was given";
  case Kind::HostCpu:
    return HostCpu;
  case Kind::InlineAsm:
    return Inside ? "it contains inline assembly (asm!) written for the host CPU"
                  : "inline assembly (asm!) is written for the host CPU and cannot be compiled "
                    "for the GPU";
  case Kind::ThreadLocal:
    return Inside ? ThreadLocalWhy.str()
                  : "thread-local static `" + What +
                        "` cannot be used on the GPU: " + ThreadLocalWhy.str();
  case Kind::StaticWrite:
    return Inside ? "it writes the host static `" + What + "`: " + StaticWrite
                  : "kernel writes the host static `" + What + "`: " + StaticWrite;
  case Kind::StaticRead:
    return Inside ? "it reads the host static `" + What + "`: " + StaticRead
                  : "kernel reads the mutable host static `" + What + "`: " + StaticRead;
  }
  return "";
}

//===-- Names and places --------------------------------------------------===//

std::string displayName(const GlobalValue *GV) {
  std::string Path = demangleRust(GV->getName());
  // Legacy mangling spells a leading `<` as `_<`, and `::{{closure}}` as `::_{{closure}}`.
  if (StringRef(Path).starts_with("_<"))
    Path.erase(0, 1);
  for (size_t At; (At = Path.find("::_{{")) != std::string::npos;)
    Path.erase(At + 2, 1);
  return Path;
}

/// Whether a function is the drop glue of a type: `core::ptr::drop_in_place<T>`
/// (legacy names) or `core::ptr::drop_glue::<T>` (v0 names since Rust 1.97).
bool isDropGlue(const Function &F) {
  std::string Path = demangleRust(F.getName());
  return StringRef(Path).starts_with("core::ptr::drop_in_place") ||
         StringRef(Path).starts_with("core::ptr::drop_glue");
}

/// A static's Rust path; thread_local!'s storage is named after its key
/// (`crate::COUNT::{{constant}}::{{closure}}::VAL` is `crate::COUNT`).
std::string staticName(const GlobalVariable &GV) {
  std::string Path = displayName(&GV);
  size_t Inner = Path.find("::{");
  return Inner == std::string::npos ? Path : Path.substr(0, Inner);
}

/// The CPU a function or intrinsic belongs to, when that is not the GPU:
/// `llvm.x86.rdtsc` and `core::core_arch::x86::sse::_mm_sqrt_ps` are "x86".
std::string hostCpuOf(const Function &F) {
  StringRef Name = F.getName();
  if (F.isIntrinsic()) {
    if (!F.isTargetIntrinsic() || Name.starts_with("llvm.nvvm.") || Name.starts_with("llvm.nvptx."))
      return "";
    return Name.drop_front(strlen("llvm.")).split('.').first.str();
  }
  static const StringRef HostArchModules[] = {
      "x86",       "x86_64",       "arm",    "aarch64",     "arm_shared",  "riscv32",
      "riscv64",   "riscv_shared", "wasm32", "wasm64",      "wasm",        "powerpc",
      "powerpc64", "mips",         "mips64", "loongarch32", "loongarch64", "loongarch_shared",
      "s390x",     "hexagon",      "amdgpu", "csky"};
  std::string Path = displayName(&F);
  size_t At = Path.find("core_arch::");
  if (At == std::string::npos)
    return "";
  StringRef Module = StringRef(Path).drop_front(At + strlen("core_arch::")).split("::").first;
  for (StringRef Arch : HostArchModules)
    if (Module == Arch)
      return Arch.starts_with("x86") ? "x86" : Arch.str();
  return "";
}

bool isDeviceProvided(const Function &F) {
  StringRef N = F.getName();
  return (F.isIntrinsic() && hostCpuOf(F).empty()) || N.starts_with("__nv_") ||
         isDriverFunction(N) || F.hasFnAttribute(MarkerAttr) ||
         F.hasFnAttribute(DeviceSourceAttr) || F.hasFnAttribute(UnavailableStubAttr);
}

/// A static that lives in host memory and that the program may change: not a
/// constant, not thread-local, not placed in a GPU address space.
bool isHostStatic(const GlobalVariable &GV) {
  StringRef N = GV.getName();
  return !GV.isConstant() && !GV.isThreadLocal() && GV.getAddressSpace() == 0 &&
         !N.starts_with("llvm.") && !N.starts_with("oxide.") && !N.starts_with("__oxide_");
}

//===-- The code each kernel reaches ---------------------------------------===//

/// Breadth-first search from a kernel over calls and function addresses,
/// remembering the instruction that first reached every function, so a chain
/// can be printed.
class CallGraphWalk {
public:
  struct Step {
    Function *Caller = nullptr;
    Instruction *Site = nullptr;
    bool ByAddress = false; // Site takes the address; it does not call
  };

  /// WithFormatters: also through the addresses of `fmt` methods (see
  /// isFormattingImpl).
  CallGraphWalk(Function &Entry, bool WithFormatters) : WithFormatters(WithFormatters) {
    std::deque<Function *> Work{&Entry};
    Reached[&Entry] = {};
    while (!Work.empty()) {
      Function *F = Work.front();
      Work.pop_front();
      FormatWrite |= isFormatWrite(displayName(F));
      if (F->isDeclaration())
        continue;
      for (Instruction &I : instructions(*F)) {
        auto *Call = dyn_cast<CallBase>(&I);
        for (const Use &Op : I.operands()) {
          if (Call && Call->isArgOperand(&Op) && ignoresArgument(*Call, Call->getArgOperandNo(&Op)))
            continue;
          bool IsCallee = Call && Call->isCallee(&Op);
          forEachFunction(Op.get(), [&](Function *G) {
            if (!IsCallee && !WithFormatters && !G->isIntrinsic() && isFormattingImpl(*G))
              return;
            if (Reached.try_emplace(G, Step{F, &I, !IsCallee}).second)
              Work.push_back(G);
          });
        }
      }
    }
  }

  const std::map<Function *, Step> &reached() const { return Reached; }
  /// Whether the kernel reaches `core::fmt::write`, which calls the `fmt`
  /// methods an `Arguments` holds.
  bool reachesFormatWrite() const { return FormatWrite; }
  const Step &step(Function *F) const { return Reached.at(F); }

  /// How many steps of the chain to F take an address instead of calling.
  size_t indirections(Function *F) const {
    size_t N = 0;
    for (Function *Cur = F; Cur; Cur = Reached.at(Cur).Caller)
      N += Reached.at(Cur).ByAddress;
    return N;
  }

  /// Entry → … → F.
  std::vector<Function *> chainTo(Function *F) const {
    std::vector<Function *> Chain;
    for (Function *Cur = F; Cur; Cur = Reached.at(Cur).Caller)
      Chain.insert(Chain.begin(), Cur);
    return Chain;
  }

private:
  std::map<Function *, Step> Reached;
  std::set<const GlobalVariable *> SeenGlobals;
  bool WithFormatters;
  bool FormatWrite = false;

  /// An address passed to a function that never reads that parameter is not
  /// reached: LowerPanics' bodies ignore the message's `fmt::Arguments` and
  /// `&dyn Debug` values.
  static bool ignoresArgument(const CallBase &Call, unsigned ArgNo) {
    const Function *Callee = Call.getCalledFunction();
    return Callee && !Callee->isDeclaration() && ArgNo < Callee->arg_size() &&
           Callee->getArg(ArgNo)->use_empty();
  }

  /// `<T as core::fmt::Display>::fmt` and the other formatting impls: their
  /// addresses are taken to build panic messages, whose values LowerPanics
  /// reads itself; only `core::fmt::write` calls them (format!, write!), so
  /// they count as reached only where the kernel reaches that.
  static bool isFormattingImpl(const Function &F) {
    return formattingMethod(displayName(&F)).has_value();
  }

  /// Every function a value names: itself, or inside a constant expression,
  /// an aggregate or the initializer of a global (a vtable, a fn pointer).
  template <typename Visit> void forEachFunction(Value *V, Visit &&Fn) {
    if (auto *F = dyn_cast<Function>(V))
      Fn(F);
    else if (auto *GV = dyn_cast<GlobalVariable>(V)) {
      if (GV->hasInitializer() && SeenGlobals.insert(GV).second)
        forEachFunction(GV->getInitializer(), Fn);
    } else if (auto *GA = dyn_cast<GlobalAlias>(V))
      forEachFunction(GA->getAliasee(), Fn);
    else if (isa<ConstantExpr>(V) || isa<ConstantAggregate>(V))
      for (Value *Op : cast<User>(V)->operands())
        forEachFunction(Op, Fn);
  }
};

/// Whether memory reached through a pointer is written: by a store, an atomic
/// read-modify-write or compare-exchange, or a memset/memcpy/memmove
/// destination; through casts, GEPs, phis, selects, local variables, the
/// functions the pointer is passed to and the values they return.
class WriteFinder {
public:
  /// The instruction that writes through the pointer this operand holds.
  Instruction *through(const Use &U) {
    std::set<const Value *> Seen;
    return use(U, Seen).Write;
  }

private:
  struct Result {
    Instruction *Write = nullptr;
    bool Returned = false; // the pointer is the function's return value
  };
  std::map<std::pair<const Function *, unsigned>, Result> Args;

  Result value(Value *V, std::set<const Value *> &Seen) {
    Result R;
    if (!Seen.insert(V).second)
      return R;
    for (const Use &U : V->uses()) {
      Result Got = use(U, Seen);
      if (Got.Write)
        return Got;
      R.Returned |= Got.Returned;
    }
    return R;
  }

  Result use(const Use &U, std::set<const Value *> &Seen) {
    auto *I = dyn_cast<Instruction>(U.getUser());
    if (!I)
      return {};
    if (auto *St = dyn_cast<StoreInst>(I)) {
      if (U.getOperandNo() == StoreInst::getPointerOperandIndex())
        return {St, false};
      // The pointer kept in a local variable: follow what is loaded back.
      Result R;
      if (auto *Slot = dyn_cast<AllocaInst>(St->getPointerOperand()->stripPointerCasts()))
        for (User *SlotUser : Slot->users())
          if (auto *Load = dyn_cast<LoadInst>(SlotUser))
            if (Result Got = value(Load, Seen); Got.Write)
              return Got;
      return R;
    }
    if (auto *RMW = dyn_cast<AtomicRMWInst>(I))
      return {U.getOperandNo() == AtomicRMWInst::getPointerOperandIndex() ? RMW : nullptr, false};
    if (auto *CAS = dyn_cast<AtomicCmpXchgInst>(I))
      return {U.getOperandNo() == AtomicCmpXchgInst::getPointerOperandIndex() ? CAS : nullptr,
              false};
    if (isa<GetElementPtrInst, CastInst, PHINode>(I))
      return value(I, Seen);
    if (auto *Sel = dyn_cast<SelectInst>(I))
      return U.getOperandNo() == 0 ? Result{} : value(Sel, Seen);
    if (isa<ReturnInst>(I))
      return {nullptr, true};
    if (auto *Call = dyn_cast<CallBase>(I)) {
      if (!Call->isArgOperand(&U))
        return {};
      unsigned ArgNo = Call->getArgOperandNo(&U);
      if (auto *Mem = dyn_cast<AnyMemIntrinsic>(Call))
        return {ArgNo == 0 ? Mem : nullptr, false};
      Function *Callee = Call->getCalledFunction();
      if (!Callee || Callee->isDeclaration() || ArgNo >= Callee->arg_size())
        return {};
      Result R = argument(*Callee, ArgNo);
      if (!R.Write && R.Returned)
        return value(Call, Seen);
      return {R.Write, false};
    }
    return {};
  }

  Result argument(Function &F, unsigned ArgNo) {
    auto [It, New] = Args.try_emplace({&F, ArgNo});
    if (!New)
      return It->second; // known, or being computed (recursion): nothing yet
    std::set<const Value *> Seen;
    Result R = value(F.getArg(ArgNo), Seen);
    Args[{&F, ArgNo}] = R;
    return R;
  }
};

//===-- Errors -------------------------------------------------------------===//

/// One thing a kernel must not do, where the user's code does it.
struct Finding {
  int Rank; // 0: the thing itself is in the user's code; 1: inside what the user called
  std::string Message;
  SourceLoc Loc;
  std::vector<std::string> Notes; // after the kernel, before the chain
  std::string Chain;
  std::string Group;              // findings with the same group are one error
  size_t Indirect = 0, Depth = 0; // a direct, short chain says more
  bool DropGlue = false;          // the user's code only reaches it by dropping a value

  /// The order in which findings on one line win; total, so the result does
  /// not depend on the order they were found in.
  bool betterThan(const Finding &O) const {
    return std::tie(Rank, Loc.Col, Indirect, Depth, Message, Chain) <
           std::tie(O.Rank, O.Loc.Col, O.Indirect, O.Depth, O.Message, O.Chain);
  }
};

std::string kernelName(Function &Entry) {
  StringRef Name = Entry.getName();
  Name.consume_back(KernelBodySuffix);
  return kernelPathOf(Name);
}

/// Where the kernel itself is on a chain: after the generated entry and the
/// entry wrapper.
size_t kernelIndex(const std::vector<Function *> &Chain) {
  size_t I = 0;
  while (I + 1 < Chain.size() && Chain[I]->getName().contains(KernelEntryPrefix))
    ++I;
  return I;
}

/// `kernel` → `helper` → … → `offender`.
std::string formatChain(const std::vector<Function *> &Chain) {
  std::string Out;
  for (size_t I = kernelIndex(Chain); I < Chain.size(); ++I)
    Out += (Out.empty() ? "`" : " → `") + displayName(Chain[I]) + "`";
  return Out;
}

/// Why what the user called cannot run, from its call chain (`Chain[From]` is
/// the function the user called); empty when no row of the table matches.
StringRef reasonFor(const std::vector<Function *> &Chain, size_t From) {
  for (const auto &Table :
       {ArrayRef<PathReason>(PathReasons), ArrayRef<PathReason>(FallbackReasons)})
    for (size_t I = From; I < Chain.size(); ++I) {
      std::string Path = displayName(Chain[I]);
      for (const PathReason &R : Table)
        if (StringRef(Path).contains(R.Pattern))
          return R.Why;
    }
  return "";
}

/// Whether a static belongs to Rust's standard library (its own business,
/// reported as the library function the user called).
bool isLibraryStatic(StringRef Path) {
  return Path.starts_with("std::") || Path.starts_with("core::") || Path.starts_with("alloc::");
}

class Rejecter {
public:
  explicit Rejecter(DiagnosticSink &Diags) : Diags(Diags) {}

  void checkKernel(Function &Entry) {
    CallGraphWalk Walk(Entry, /*WithFormatters=*/false);
    if (Walk.reachesFormatWrite())
      Walk = CallGraphWalk(Entry, /*WithFormatters=*/true);
    std::vector<Finding> Found;
    // Reads of mutable statics, reported only for statics the kernel does not
    // also write (`COUNTER += 1` is one error, the write).
    std::set<const GlobalVariable *> Written;
    std::vector<std::tuple<Function *, Instruction *, const GlobalVariable *>> Reads;
    for (const auto &[F, Step] : Walk.reached()) {
      if (F->isDeclaration()) {
        if (std::string Cpu = hostCpuOf(*F); !Cpu.empty())
          record(Found, Walk, Kind::HostCpu, *F, nullptr, Cpu);
        else if (!isDeviceProvided(*F))
          record(Found, Walk, Kind::NoBody, *F, nullptr, "");
        continue;
      }
      if (std::string Cpu = hostCpuOf(*F); !Cpu.empty())
        record(Found, Walk, Kind::HostCpu, *F, nullptr, Cpu);
      for (Instruction &I : instructions(*F)) {
        if (auto *Call = dyn_cast<CallBase>(&I);
            Call && Call->isInlineAsm() && !Call->hasMetadata(StubAsmMetadata))
          record(Found, Walk, Kind::InlineAsm, *F, &I, "");
        for (const Use &U : I.operands()) {
          if (!isa<Constant>(U.get()))
            continue;
          auto *GV = dyn_cast<GlobalVariable>(U.get()->stripInBoundsConstantOffsets());
          if (!GV)
            continue;
          if (GV->isThreadLocal())
            record(Found, Walk, Kind::ThreadLocal, *F, &I, staticName(*GV));
          else if (isHostStatic(*GV)) {
            if (Instruction *Write = Writes.through(U)) {
              std::string Note;
              if (Write->getFunction() != F)
                Note = "written by `" + displayName(Write->getFunction()) + "`" +
                       (isa<AtomicRMWInst, AtomicCmpXchgInst>(Write)
                            ? " (an atomic read-modify-write is a write too)"
                            : "");
              record(Found, Walk, Kind::StaticWrite, *F, &I, staticName(*GV), Note);
              Written.insert(GV);
            } else {
              Reads.emplace_back(F, &I, GV);
            }
          }
        }
      }
    }
    // Mutable (static mut, atomics, cells) but only read here: the device
    // copy never sees the host's changes.
    for (auto &[F, I, GV] : Reads)
      if (!Written.count(GV))
        record(Found, Walk, Kind::StaticRead, *F, I, staticName(*GV));
    keep(Found, kernelName(Entry));
  }

  /// Prints nothing itself: hands every error to the sink, in order.
  void finish() {
    for (Pending &P : Errors) {
      std::string In = P.Kernels.size() == 1 ? "in kernel " : "in kernels ";
      for (size_t I = 0; I < P.Kernels.size(); ++I)
        In += (I ? ", `" : "`") + P.Kernels[I] + "`";
      std::vector<std::string> Notes = {In};
      Notes.insert(Notes.end(), P.F.Notes.begin(), P.F.Notes.end());
      Notes.push_back("call chain: " + P.F.Chain);
      Diags.error({P.F.Message, P.F.Loc.empty() ? "" : P.F.Loc.str(), Notes});
    }
  }

private:
  struct Pending {
    Finding F;
    std::vector<std::string> Kernels;
  };
  DiagnosticSink &Diags;
  WriteFinder Writes;
  std::vector<Pending> Errors;
  std::map<std::string, size_t> ErrorAt; // key + message → index in Errors

  /// Records that `In` (or instruction `At` in it) is something of kind `K`,
  /// seen from the user's code.
  void record(std::vector<Finding> &Found, const CallGraphWalk &Walk, Kind K, Function &In,
              Instruction *At, const std::string &What, const std::string &Note = "") {
    std::vector<Function *> Chain = Walk.chainTo(&In);
    // Where: the instruction itself when it is the user's code, else the
    // innermost call on the chain that is. A thread-local's storage is
    // touched inside thread_local!'s expansion: its use is the caller's line.
    SourceLoc Loc, Fallback;
    Function *Called = nullptr; // what the user's code called at Loc
    if (At && K != Kind::ThreadLocal) {
      SourceLoc Own = sourceLocation(At);
      if (Own.isLibrary())
        Fallback = Own;
      else
        Loc = Own;
    }
    for (Function *Cur = &In; Loc.empty() && Walk.step(Cur).Caller; Cur = Walk.step(Cur).Caller) {
      SourceLoc Site = sourceLocation(Walk.step(Cur).Site);
      if (Site.empty())
        continue;
      if (!Site.isLibrary()) {
        Loc = Site;
        Called = Cur;
      } else if (Fallback.empty()) {
        Fallback = Site;
      }
    }
    if (Loc.empty())
      Loc = Fallback;
    // The call the user's code made: the one at Loc, or without debug info
    // the kernel's own call on the chain. The reason is read from it inwards,
    // and findings on one line (under one call, without debug info) are one
    // error.
    size_t KernelAt = kernelIndex(Chain);
    Function *UserCall = Called                        ? Called
                         : KernelAt + 1 < Chain.size() ? Chain[KernelAt + 1]
                                                       : nullptr;
    Function *Shown = Called ? Called : &In;
    size_t From = std::find(Chain.begin(), Chain.end(), UserCall ? UserCall : &In) - Chain.begin();
    std::string Group = !Loc.empty() ? Loc.File + ":" + std::to_string(Loc.Line)
                        : UserCall   ? "call " + displayName(UserCall)
                                     : "";
    Finding F{0,    "", Loc, {}, formatChain(Chain), Group, Walk.indirections(&In), Chain.size(),
              false};
    F.DropGlue = UserCall && isDropGlue(*UserCall);
    // A portable function of core::arch is only the user's x86 code when the
    // user calls it; the library may use it internally.
    if (K == Kind::HostCpu && !In.isDeclaration() && Shown != &In)
      return;
    // What happens inside a library function the user called (its own
    // statics, asm, CPU intrinsics, a missing body) is reported as that call,
    // for the reason its call chain gives when the table has one.
    bool Inside = false;
    switch (K) {
    case Kind::NoBody:
      Inside = true;
      break;
    case Kind::HostCpu: // `In` is the CPU's function or intrinsic
      Inside = Called && Called != &In;
      break;
    case Kind::InlineAsm: // `At` is in `In`, and Loc is a call site
      Inside = Called != nullptr;
      break;
    case Kind::ThreadLocal:
    case Kind::StaticWrite:
    case Kind::StaticRead:
      Inside = Called && isLibraryStatic(What);
      break;
    }
    if (Inside) {
      StringRef Why = reasonFor(Chain, From);
      // The user's own `extern "C"` declaration: most likely CUDA C++ that no
      // device source of the build defines (BindDeviceSources binds the rest).
      if (K == Kind::NoBody && Shown == &In && Why.empty() && !In.getName().starts_with("_ZN") &&
          !In.getName().starts_with("_R") && !In.getName().starts_with("__rust_"))
        F.Notes.push_back(
            "`" + In.getName().str() +
            "` is declared in an `extern` block, and no device source of this build defines it: "
            "if it is CUDA C++, name its .cu file in the package's build script "
            "(`println!(\"cargo::rustc-link-arg=" + DeviceSourceArg.str() +
            "src/FILE.cu\")`; README, \"CUDA C++ device code\"), and check that the C++ "
            "function is `extern \"C\" __device__` and not `static`");
      F.Message = "`" + displayName(Shown) + "` cannot be called on the GPU: " +
                  (Why.empty() ? describe(K, What, true) : Why.str());
      F.Rank = 1;
    } else {
      F.Message = K == Kind::HostCpu
                      ? "`" + displayName(Shown) +
                            "` cannot be called on the GPU: " + describe(K, What, false)
                      : describe(K, What, false);
      if (!Note.empty())
        F.Notes.push_back(Note);
    }
    Found.push_back(std::move(F));
  }

  /// Keeps the best finding per line of user code, drops the drops when
  /// there is anything else, and merges with what other kernels found.
  void keep(std::vector<Finding> &Found, const std::string &Kernel) {
    std::map<std::string, Finding> Best;
    for (Finding &F : Found) {
      auto [It, New] = Best.try_emplace(F.Group, F);
      if (!New && F.betterThan(It->second))
        It->second = F;
    }
    std::vector<Finding> Kept;
    bool OnlyDrops =
        std::all_of(Best.begin(), Best.end(), [](const auto &KV) { return KV.second.DropGlue; });
    for (auto &[Key, F] : Best)
      if (OnlyDrops || !F.DropGlue)
        Kept.push_back(std::move(F));
    std::sort(Kept.begin(), Kept.end(), [](const Finding &A, const Finding &B) {
      return std::tie(A.Loc, A.Message) < std::tie(B.Loc, B.Message);
    });
    for (Finding &F : Kept) {
      auto [It, New] = ErrorAt.try_emplace(F.Group + "|" + F.Message, Errors.size());
      if (New)
        Errors.push_back({std::move(F), {Kernel}});
      else if (Errors[It->second].Kernels.back() != Kernel)
        Errors[It->second].Kernels.push_back(Kernel);
    }
  }
};

} // namespace

PreservedAnalyses RejectUnsupportedPass::run(Module &M, ModuleAnalysisManager &) {
  Rejecter R(Diags);
  for (Function &F : M)
    if (F.getCallingConv() == CallingConv::PTX_Kernel || F.hasFnAttribute(DeviceExportAttr))
      R.checkKernel(F);
  R.finish();
  return PreservedAnalyses::all();
}
