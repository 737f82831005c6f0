//===- DeviceLinker.h - The device link, step by step -----------*- C++ -*-===//
//
// `oxide-link` runs as rustc's linker (docs/DESIGN.md §2). Its steps, each in
// its own file under compiler/lib/Link/:
//   Gather.cpp      which unoptimised bitcode belongs to this link
//   LinkReachable.cpp  the codegen units, read lazily, linked into one
//                   module of what the device roots reach
//   Compile.cpp     run the device pipeline (Passes.def,
//                   Pipeline.h: legalise, link libdevice, optimise for
//                   NVPTX), emit and validate PTX
//   StackBound.cpp  the per-thread stack each entry needs, from the call
//                   graph and ptxas's frames
//   DeviceSources.cpp  the CUDA C++ files the build names, compiled by nvcc
//                   to PTX, and what each defines
//   LinkPtx.cpp     oxide's PTX and nvcc's PTX made one module; the PTX of
//                   the parts of a split module joined again
//   SplitByKernel.cpp  the optimised module cut into one part per kernel,
//                   compiled in parallel (Compile.cpp)
//   PartCache.cpp   each part's PTX and ptxas output, kept by content
//   Embed.cpp       the host object holding the image and the kernel table,
//                   and the patch of host addresses after the system link
//   HostStubs.cpp   host definitions of the CUDA C++ functions kernels call
//===----------------------------------------------------------------------===//
#ifndef OXIDE_DEVICELINKER_H
#define OXIDE_DEVICELINKER_H

#include "oxide/Diagnostics.h"
#include "oxide/Targets.h"
#include "llvm/Support/Error.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/IR/GlobalValue.h"
#include <memory>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
}

namespace oxide {

struct LinkerOptions {
  std::string Arch = std::string(DefaultTargetName); // OXIDE_ARCH (Targets.def)
  std::string CudaPath = "/usr/local/cuda"; // OXIDE_CUDA_PATH
  std::string DumpDir;                  // OXIDE_DUMP_DIR: write every stage here
  bool Verbose = false;                 // OXIDE_VERBOSE
  std::string DeviceDebug;              // OXIDE_DEVICE_DEBUG: "" (strip), lines, full
  // OXIDE_CHECK=1 (`cargo oxide check`): run the legality checks and report
  // their diagnostics, then stop: O3 runs (the checks after it, such as
  // lower-disjoint-indices and reject-unavailable-stubs, need the optimised
  // kernels), but no PTX, ptxas or embedding.
  bool CheckOnly = false;
  // OXIDE_DIAGNOSTICS_JSON: a file the errors are appended to as rustc JSON
  // diagnostics (one a line), besides being printed.
  std::string DiagnosticsJson;
  // The rlibs on the link line that bring no unoptimised bitcode (the
  // standard library's): their embedded bitcode may supply what the kernels
  // call (libraryArchives, LinkLibraryBitcode.cpp).
  std::vector<std::string> Libraries;
  // The CUDA C++ files named with --oxide-device-source= on the link line
  // (takeDeviceSourceArgs), absolute.
  std::vector<std::string> DeviceSources;
  // Extra nvcc options for them (--oxide-nvcc-flag=), in order.
  std::vector<std::string> NvccFlags;
  // Where each kernel's compiled PTX and ptxas output are kept between
  // links (PartCache.cpp): OXIDE_CACHE_DIR, else oxide-link derives it from
  // the output path (`<target>/<profile>/oxide-cache`); empty = no cache.
  std::string CacheDir;
  // OXIDE_JOBS: how many parts are compiled at once; 0 = one per core.
  unsigned Jobs = 0;
  // OXIDE_SPLIT=0: compile the module whole, as one part.
  bool Split = true;
  // OXIDE_FRAMES=ptxas-log: a split module's stack frames come from ptxas
  // -v's report, as where a cubin lacks its `.nv.info` frame records,
  // instead of from the cubin (to compare the two; ptxas runs twice).
  bool FramesFromPtxasLog = false;
  /// Reads the OXIDE_* environment variables.
  static LinkerOptions fromEnvironment();
};

/// One kernel entry of a device image.
struct KernelEntryInfo {
  std::string PtxName;    // the `.entry` name in the PTX
  std::string HostSymbol; // the wrapper's symbol in the host objects
  std::string RustPath;   // the kernel's Rust path, for messages (`my_crate::scale::<f32>`)
  uint64_t NumParams = 0;
  unsigned HostCopies = 1; // definitions in the bitcode = host address slots
  uint64_t Flags = 0;      // KernelIndexes1d/2d/3d (Abi.def): the ThreadIndex kinds it writes through
  // The entry without the bounds checks its launch condition implies, and
  // that condition as the host's postfix program (VersionBoundsChecks.cpp,
  // docs/ABI.md §3); both empty when the kernel has none.
  std::string UncheckedPtxName;
  std::string LaunchCondition;
  // The per-thread stack bytes the entry (and its unchecked twin) may need,
  // through indirect calls too; 0 when the driver's own sizing suffices,
  // KernelStackUnknown (Abi.def) when it has no bound (StackBound.cpp).
  uint64_t StackBytes = 0;
};

/// Who may call whom in the final device module, by PTX name (StackBound.cpp).
struct DeviceCallGraph {
  std::vector<std::string> Entries; // the `ptx_kernel` functions
  // Each defined function's possible callees: its direct callees, and for a
  // call through a pointer every address-taken function of the call's type.
  std::map<std::string, std::vector<std::string>> Callees;
  std::set<std::string> CallsIndirectly;    // functions with a call through a pointer
  std::set<std::string> UnresolvedIndirect; // ... that no defined function's type matches
};

/// An entry's worst-case stack.
struct StackBound {
  std::optional<uint64_t> Bytes;  // empty when unknown
  std::vector<std::string> Cycle; // the functions of a cycle it reaches, if any
  bool Indirect = false;          // it reaches a call through a pointer
  bool Unresolved = false;        // ... one without a target in the module
};

/// A `#[constant]` static in constant memory, which the host may overwrite.
struct ConstantInfo {
  std::string PtxName;    // the `.const` variable's name in the PTX
  std::string HostSymbol; // the static's symbol in the host objects
  uint64_t Size = 0;
};

/// A PTX function prototype without parameter names: what a caller and the
/// definition must agree on (`(.b32) (.b32,.b64)`).
struct PtxPrototype {
  std::vector<std::string> Returns;
  std::vector<std::string> Params;
  std::string str() const;
  bool operator==(const PtxPrototype &O) const {
    return Returns == O.Returns && Params == O.Params;
  }
};

/// One CUDA C++ file of the build, compiled by nvcc (DeviceSources.cpp).
struct DeviceSourceUnit {
  std::string Source; // the .cu file, as the build script named it
  std::string Ptx;    // `nvcc -ptx -rdc=true` of it for the link's target
  // The `.visible` functions (and kernels) it defines, with their prototypes.
  std::map<std::string, PtxPrototype> Functions;
};

/// Where a device source's PTX lies in the linked PTX, to point ptxas's
/// messages at the user's file (LinkPtx.cpp).
struct PtxUnitLines {
  std::string Source;
  unsigned FirstLine = 0; // 1-based, in the linked PTX
  unsigned LastLine = 0;
  int Shift = 0;          // linked line - Shift = line of nvcc's PTX
};

struct DeviceImage {
  std::string ModuleName; // the crate name of the link output
  std::string Ptx;
  // What ptxas made of Ptx for the link's architecture (assemblePtx), which
  // the host loads instead of JIT-compiling the PTX on a GPU of exactly
  // that compute capability; empty without a toolkit or with device debug
  // info (the JIT keeps the debug info the PTX asks for).
  std::string Cubin;
  unsigned CubinSm = 0; // 90 for sm_90 and sm_90a
  std::vector<KernelEntryInfo> Kernels;
  std::vector<ConstantInfo> Constants;
  DeviceCallGraph CallGraph; // of the module the PTX came from
  // The CUDA C++ functions the kernels call, by name, with their file
  // (BindDeviceSources): each gets a host stub (HostStubs.cpp).
  std::map<std::string, std::string> DeviceSourceCalls;
  std::vector<PtxUnitLines> Units; // empty without device sources
  // The PTX of each ptxas bucket (planPtxasBuckets) when the module was
  // compiled in parts (SplitByKernel.cpp), the common part's first; Ptx is
  // their join. ptxas assembles them one by one (assemblePtx). Empty for a
  // module compiled whole.
  std::vector<std::string> PartPtx;
  // How many parts the split made (0 when compiled whole).
  size_t SplitParts = 0;
};

// Gather.cpp ---------------------------------------------------------------

/// The `.no-opt.bc` files for the objects and rlibs on a link line, in order.
std::vector<std::string> gatherBitcode(const std::vector<std::string> &LinkArgs, bool Verbose);

/// The rlibs on a link line none of whose objects has unoptimised bitcode
/// beside it (the standard library's, in link order): what they define may
/// still be linked from the bitcode they embed (LinkLibraryBitcode.cpp).
std::vector<std::string> libraryArchives(const std::vector<std::string> &LinkArgs);

/// Whether any of the files mentions a kernel entry (a fast byte search, so
/// links without kernels pass straight through).
bool mentionsKernelEntries(const std::vector<std::string> &BitcodeFiles);

/// The output path of a link line (`-o PATH`).
std::string linkOutput(const std::vector<std::string> &LinkArgs);

/// `scale_example` from `…/deps/scale_example-0123abcd` or `libfoo.so`.
std::string crateNameOfOutput(const std::string &OutputPath);

// LinkReachable.cpp --------------------------------------------------------

/// Reads the codegen units (lazily where they are bitcode) and links into one
/// module only what the kernel entries and the other device roots reach,
/// counting in EntryCopies how many units define each kernel entry wrapper
/// (its host copies).
llvm::Expected<std::unique_ptr<llvm::Module>>
linkReachableBitcode(llvm::LLVMContext &Ctx, const std::vector<std::string> &Files,
                     std::map<std::string, unsigned> &EntryCopies);

// DeviceSources.cpp --------------------------------------------------------

/// Removes every `--oxide-device-source=FILE` and `--oxide-nvcc-flag=FLAG`
/// from a link line into Opts.DeviceSources (absolute: a relative one is
/// taken from $CARGO_MANIFEST_DIR, the package whose build script printed
/// it; each once) and Opts.NvccFlags (`-IDIR` made absolute the same way).
void takeDeviceSourceArgs(std::vector<std::string> &LinkArgs, LinkerOptions &Opts);

/// Compiles each device source with nvcc to relocatable PTX for Opts.Arch. An
/// error carries nvcc's messages, which point at the user's file.
llvm::Expected<std::vector<DeviceSourceUnit>>
compileDeviceSources(const std::vector<std::string> &Sources, const LinkerOptions &Opts);

/// The module-level functions a PTX text defines (`.visible`/`.weak`, with a
/// body) or declares `.extern`, by name.
std::map<std::string, PtxPrototype> ptxFunctions(llvm::StringRef Ptx, bool Definitions);

/// PTX text with its comments blanked out (same length, newlines kept), so
/// offsets and line numbers stay those of the original.
std::string ptxWithoutComments(llvm::StringRef Ptx);

// LinkPtx.cpp --------------------------------------------------------------

/// Makes one PTX module of oxide's PTX and the device sources' (the higher
/// `.version`, oxide's `.target`), resolving each `.extern .func` that
/// another part defines and renaming a device source's internal symbols
/// where they clash. Fails on a name defined twice and on a call whose
/// prototype differs from the definition's. Records the units' lines.
llvm::Expected<std::string> linkPtxUnits(llvm::StringRef OxidePtx,
                                         const std::vector<DeviceSourceUnit> &Units,
                                         std::vector<PtxUnitLines> &Lines);

/// ptxas's output with each `line N` inside a device source's PTX followed
/// by the file it came from and the line of nvcc's PTX.
std::string annotatePtxasLines(llvm::StringRef PtxasOutput,
                               const std::vector<PtxUnitLines> &Lines);

/// Joins the PTX of the parts of a split module (SplitByKernel.cpp), the
/// common part first, into one module: one header, each part's body, and
/// each `.extern` declaration of a symbol an earlier part defined (or
/// declared) dropped, as ptxas refuses a declaration after a definition.
/// Fails on a symbol two parts define, which the split never makes.
llvm::Expected<std::string> joinPtxParts(const std::vector<std::string> &Parts);

/// The kernels a ptxas bucket holds at least (ptxasBucketCount).
constexpr size_t KernelsPerPtxasBucket = 24;

/// How many buckets the kernels of a split module go to ptxas in: the
/// largest power of two that leaves each at least KernelsPerPtxasBucket
/// kernels, and at least two.
unsigned ptxasBucketCount(size_t Kernels);

/// The buckets in which ptxas assembles the parts of a split module, given
/// each part's kernel entry name (empty for the common part): the parts
/// without an entry together, first, then the kernels by a hash of the
/// entry's name, which an edit of the kernel does not change, into
/// ptxasBucketCount buckets. Each bucket is one NVPTX module, one ptxas
/// process and one cache entry of each: a clean link compiles every bucket,
/// an edit one. Empty buckets are left out; the others come in the order of
/// their first part, each with its parts in order; the indices are into
/// Entries.
std::vector<std::vector<size_t>> planPtxasBuckets(const std::vector<std::string> &Entries);

// SplitByKernel.cpp --------------------------------------------------------

/// Gives the module's symbols the names NVPTX would print (private ones made
/// internal, unnamed ones named after their contents, invalid characters
/// replaced), so that every part of a split prints the same name for them.
void nameForSplit(llvm::Module &M);

/// Cuts M (named by nameForSplit) into the common part, first, then one part
/// per kernel entry (with its unchecked twin) holding what only it reaches.
/// What one part defines and another uses becomes external in M.
std::vector<std::unique_ptr<llvm::Module>> splitByKernel(llvm::Module &M);

/// The front of a device link cut in pieces for O3 (cutFront): the pieces
/// other than M itself, and what M lent them under an external name.
struct FrontCut {
  /// Pieces 1, 2, …, in M's context: each kernel of the piece with what
  /// only that piece reaches; what M keeps and the piece reaches is there a
  /// copy under M's linkage (functions, constants: dropBorrowed after O3)
  /// or declared (variables).
  std::vector<std::unique_ptr<llvm::Module>> Pieces;
  /// A local symbol of M that several pieces reach, made external while O3
  /// runs so that each piece can name M's one definition; restoreFront
  /// gives it back its linkage (and its lack of a name).
  struct LentSymbol {
    std::string Name;
    llvm::GlobalValue::LinkageTypes Linkage;
    bool Unnamed;
  };
  std::vector<LentSymbol> Lent;
  /// The `oxide.kernels` rows (by index) whose entry is another piece's
  /// kernel, with its name: O3 in M drops the declaration left there, and
  /// restoreFront points the row at the definition linked in its place.
  std::vector<std::pair<unsigned, std::string>> Rows;
};

/// Cuts the legalised module M into Count pieces for LLVM's O3 on several
/// threads (Compile.cpp), kernels by a hash of their entry's name; M stays
/// piece 0 and loses the kernels and the code of the others (each kernel of
/// another piece stays declared, so the module's records still name it).
/// Nothing is cut where the module has aliases or ifuncs, or fewer pieces
/// than two would have kernels: Pieces is then empty.
FrontCut cutFront(llvm::Module &M, unsigned Count);

/// Makes a piece's copies of M's definitions (FrontCut::Pieces)
/// declarations again, once O3 is done with them: M's own are the ones kept.
void dropBorrowed(llvm::Module &Piece);

/// After the optimised pieces were linked into M: the symbols M lent get
/// their own linkage back.
void restoreFront(llvm::Module &M, const FrontCut &Cut);

// PartCache.cpp ------------------------------------------------------------

/// The hash naming a cache entry of everything it was computed from.
std::string partCacheKey(llvm::ArrayRef<llvm::StringRef> Inputs);

/// A directory of compiled parts, by key; every failure is a miss.
class PartCache {
public:
  /// Dir empty (or not creatable): a cache that holds nothing.
  explicit PartCache(std::string Dir);
  bool enabled() const { return !Dir.empty(); }
  std::optional<std::string> lookup(llvm::StringRef Key, llvm::StringRef Kind) const;
  void store(llvm::StringRef Key, llvm::StringRef Kind, llvm::StringRef Data) const;
  /// Removes the least recently used entries until at most MaxBytes remain.
  void prune(uint64_t MaxBytes) const;

private:
  std::string pathOf(llvm::StringRef Key, llvm::StringRef Kind) const;
  std::string Dir;
};

// OptimizedModuleCache.cpp -------------------------------------------------

/// The cache key of what O3 and the post-O3 passes, in Pieces pieces, make
/// of M, the legalised and linked device module: its bitcode, the options
/// their result depends on, LLVM's version and oxide-link's own executable.
/// Empty (no caching) where OXIDE_LLVM_ARGS is set or the executable cannot
/// be read.
std::string optimizedModuleKey(const llvm::Module &M, const LinkerOptions &Opts, unsigned Pieces);

/// The optimised module stored under Key, read into Ctx (a context no other
/// module uses, so its type names come back unchanged) and named Identifier;
/// null on a miss.
std::unique_ptr<llvm::Module> lookupOptimizedModule(const PartCache &Cache, llvm::StringRef Key,
                                                    llvm::LLVMContext &Ctx,
                                                    llvm::StringRef Identifier);

/// Stores M, the optimised module, under Key, with its use-list order; its
/// intrinsics' declarations first get the attributes a reader of the entry
/// will give them, so this link and one that hits cut the same parts. False
/// where there is nothing to store under (no key, no cache).
bool storeOptimizedModule(const PartCache &Cache, llvm::StringRef Key, llvm::Module &M);

/// What the split (compileParts) made of an optimised module: how many parts
/// it cut, and the part-cache keys of its buckets' PTX, in the joined PTX's
/// order. Stored under the optimised module's key, it lets a relink that
/// took the module from the cache take its PTX too without cutting it again.
struct PartIndex {
  size_t SplitParts = 0;
  std::vector<std::string> BucketKeys;
};

/// The index stored under Key (an optimizedModuleKey); none on a miss or
/// an entry this linker did not write.
std::optional<PartIndex> lookupPartIndex(const PartCache &Cache, llvm::StringRef Key);

/// Stores Index under Key (an optimizedModuleKey); nothing where Key is empty.
void storePartIndex(const PartCache &Cache, llvm::StringRef Key, const PartIndex &Index);

// HostStubs.cpp ------------------------------------------------------------

/// Writes an x86-64 object defining each CUDA C++ function the kernels call
/// as a call of cuda-device's DeviceSourceOnHost with its name: the host
/// link needs the symbol (kernel bodies are host code too), and host-code
/// emulation must fail with a message, not run nothing.
llvm::Error writeHostStubObject(const std::map<std::string, std::string> &Calls,
                                const std::string &Path);

// Compile.cpp --------------------------------------------------------------

/// Compiles the kernels found in the bitcode into one PTX image. Errors in the
/// user's code are reported through Diags (and the result is an error).
llvm::Expected<DeviceImage> compileDeviceImage(const std::vector<std::string> &BitcodeFiles,
                                               const std::string &ModuleName,
                                               const LinkerOptions &Opts, DiagnosticSink &Diags);

/// The NVPTX target machine the device link compiles for Opts.Arch (its
/// PTX ISA from Targets.def, the link's backend options), the NVPTX target
/// initialised first. Also what the passes' analyses ask about the target
/// (branch divergence), so oxide-opt's `-passes` runs with it too.
llvm::Expected<std::unique_ptr<llvm::TargetMachine>> createDeviceTarget(const LinkerOptions &Opts);

/// Runs ptxas on the PTX when the toolkit has it, and keeps the cubin in
/// Image.Cubin (unless the PTX carries device debug info). An error carries
/// ptxas's output; errors in a `ptx_asm!` template are also reported to
/// Diags at the user's Rust line (they are the user's, not oxide's).
llvm::Error assemblePtx(DeviceImage &Image, const LinkerOptions &Opts, DiagnosticSink &Diags);

// PtxasHazards.cpp ---------------------------------------------------------

/// The PTX with every instruction of PtxasHazards.def replaced by the
/// exact equivalent the table gives, which ptxas compiles correctly.
std::string rewritePtxasHazards(llvm::StringRef Ptx);

// StackBound.cpp -----------------------------------------------------------

/// The call graph of a module whose names are final (after PTX emission).
DeviceCallGraph buildDeviceCallGraph(const llvm::Module &M);

/// The "N bytes stack frame" of each function in ptxas -v's output.
std::map<std::string, uint64_t> parsePtxasFrames(llvm::StringRef PtxasLog);

/// The same frames read from a cubin ptxas wrote (its `.nv.info` records),
/// so that ptxas need not run with -v, whose report costs it a tenth of its
/// time; nullopt where the cubin does not hold one for every function it
/// defines.
std::optional<std::map<std::string, uint64_t>> cubinFrames(llvm::StringRef Cubin);

/// The heaviest path by frame bytes from Entry; without Frames (no ptxas) a
/// bound of 0 when every reachable call is direct, else unknown.
StackBound boundStack(const DeviceCallGraph &G, const std::string &Entry,
                      const std::map<std::string, uint64_t> *Frames);

/// `entry: 1312 bytes`, or `entry: unknown (why)`, for -v output and tests.
std::string describeStackBound(const std::string &Entry, const StackBound &B);

/// Sets every kernel's StackBytes from Image.CallGraph and the frames (null
/// without ptxas), warning about kernels that may recurse.
void recordStackBounds(DeviceImage &Image, const std::map<std::string, uint64_t> *Frames,
                       bool Verbose);

// Embed.cpp ----------------------------------------------------------------

/// Writes an x86-64 ELF object with the image and its kernel table
/// (docs/ABI.md §3).
llvm::Error writeKernelTableObject(const DeviceImage &Image, const std::string &Path);

/// After the system link: fills the host address slots of the kernel table in
/// the linked file from its symbol table.
llvm::Error patchHostAddresses(const DeviceImage &Image, const std::string &LinkedFile,
                               bool Verbose);

} // namespace oxide

#endif
