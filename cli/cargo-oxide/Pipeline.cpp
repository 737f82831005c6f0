//===- Pipeline.cpp - inspect and pipeline --------------------------------===//
//
// Part of oxide. Both commands rebuild one package with OXIDE_DUMP_DIR set, so
// that oxide-link writes what it did (device-input.ll, device-legal.ll,
// device-opt.ll, <module>.ptx) into a folder we then read:
//
//  * inspect prints the PTX;
//  * pipeline also asks rustc for its MIR and LLVM IR of the final crate and
//    runs the CUDA toolkit on the PTX, numbering every stage in order.
//
// The package is cleaned first (ensureRelink with Force) because a build that
// cargo considers fresh would not run the linker and so would dump nothing.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "Diagnostic.h"
#include "Toolchain.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <fstream>
#include <iostream>

namespace oxide::cli {

namespace {

/// Removes the files directly in \p Dir (not its subfolders): the output of
/// the previous run, which must not be mistaken for this one's.
void clearFiles(const fs::path &Dir) {
  std::error_code EC;
  for (fs::directory_iterator It(Dir, EC), End; !EC && It != End;
       It.increment(EC))
    if (It->is_regular_file(EC))
      fs::remove(It->path(), EC);
}

/// The files in \p Dir with extension \p Ext, sorted by name.
std::vector<fs::path> filesWithExtension(const fs::path &Dir,
                                         std::string_view Ext) {
  std::vector<fs::path> Found;
  std::error_code EC;
  for (fs::directory_iterator It(Dir, EC), End; !EC && It != End;
       It.increment(EC))
    if (It->is_regular_file(EC) && It->path().extension() == Ext)
      Found.push_back(It->path());
  std::sort(Found.begin(), Found.end());
  return Found;
}

bool prepareDir(const fs::path &Dir, bool RemoveEverything) {
  std::error_code EC;
  if (RemoveEverything)
    fs::remove_all(Dir, EC);
  fs::create_directories(Dir, EC);
  if (EC) {
    printError({"cannot create " + Dir.string() + ": " + EC.message(),
                "check that the target directory is writable"});
    return false;
  }
  if (!RemoveEverything)
    clearFiles(Dir);
  return true;
}

Error noPtxError(const fs::path &Dir) {
  return {"the device linker wrote no PTX to " + Dir.string(),
          "check that the package has a `#[kernel]` function and that "
          "oxide-link is oxide's; `--verbose` shows what the device linker "
          "gathered and selected"};
}

/// inspect --sass: assembles each PTX file with ptxas to <module>.cubin next
/// to it and prints its SASS. Returns the exit status.
int printSass(const std::vector<fs::path> &PtxFiles, const std::string &Arch,
              const Environment &Env) {
  std::optional<fs::path> Ptxas = findCudaTool("ptxas", Env);
  std::optional<fs::path> Nvdisasm = findCudaTool("nvdisasm", Env);
  std::optional<fs::path> Cuobjdump = findCudaTool("cuobjdump", Env);
  std::string Where = (cudaToolkitRoot(Env) / "bin").string() + " or PATH";
  if (!Ptxas || (!Nvdisasm && !Cuobjdump)) {
    std::string Missing = !Ptxas ? "ptxas" : "";
    if (!Nvdisasm && !Cuobjdump)
      Missing += std::string(Missing.empty() ? "" : ", ") +
                 "nvdisasm or cuobjdump";
    printError({"SASS needs ptxas and nvdisasm or cuobjdump from the CUDA "
                    "toolkit; not found in " +
                    Where + ": " + Missing,
                "install the CUDA toolkit's cuda-nvdisasm / cuda-cuobjdump "
                "packages, or set OXIDE_CUDA_PATH to a toolkit that has them; "
                "the PTX above is complete without them"});
    return 1;
  }
  for (const fs::path &Ptx : PtxFiles) {
    fs::path Cubin = Ptx;
    Cubin.replace_extension(".cubin");
    RunOptions RO;
    RO.CaptureStdout = true;
    RO.CaptureStderr = true;
    ProcessResult R = runProcess(
        {Ptxas->string(), "-arch=" + Arch, "-o", Cubin.string(), Ptx.string()},
        RO);
    if (!R.succeeded()) {
      std::cerr << R.Output;
      printError({"ptxas rejected " + Ptx.string() + " (" + R.describe() + ")",
                  "this is a bug in oxide's device linker; please report it "
                  "with that PTX file"});
      return 1;
    }
    std::vector<std::string> Cmd = sassCommand(Nvdisasm, Cuobjdump, Cubin);
    printStatus("SASS", Cubin.string() + " (" +
                            fs::path(Cmd[0]).filename().string() + ")");
    std::cout << "// SASS of " << Ptx.filename().string() << " (" << Arch
              << ")\n";
    std::cout.flush();
    ProcessResult S = runProcess(Cmd);
    if (!S.succeeded()) {
      printError({fs::path(Cmd[0]).filename().string() + " failed on " +
                      Cubin.string() + " (" + S.describe() + ")",
                  "run it by hand to see why: " + formatCommandLine(Cmd)});
      return 1;
    }
  }
  return 0;
}

} // namespace

std::vector<std::string> sassCommand(const std::optional<fs::path> &Nvdisasm,
                                     const std::optional<fs::path> &Cuobjdump,
                                     const fs::path &Cubin) {
  if (Nvdisasm)
    return {Nvdisasm->string(), Cubin.string()};
  if (Cuobjdump)
    return {Cuobjdump->string(), "-sass", Cubin.string()};
  return {};
}

//===----------------------------------------------------------------------===//
// inspect
//===----------------------------------------------------------------------===//

int runInspectCommand(const Options &Opts, const Context &Ctx) {
  Expected<BuildPlan> Plan = planBuild(Opts, Ctx, /*AllowWorkspace=*/false);
  if (!Plan) {
    printError(Plan.error());
    return 1;
  }
  fs::path DumpDir = oxideOutputDir(Plan->TargetDir, Plan->Pkg->name());
  if (!prepareDir(DumpDir, /*RemoveEverything=*/false))
    return 1;
  Plan->Config.DumpDir = DumpDir;

  CargoRunner Cargo(Plan->environment(Ctx.Env), Opts.Verbose);
  if (int Status = buildWithOxide(*Plan, Cargo, /*ForceRelink=*/true))
    return Status;

  std::vector<fs::path> Ptx = filesWithExtension(DumpDir, ".ptx");
  if (Ptx.empty()) {
    printError(noPtxError(DumpDir));
    return 1;
  }
  for (const fs::path &File : Ptx) {
    std::ifstream In(File, std::ios::binary);
    if (!In) {
      printError({"cannot read " + File.string(),
                  "check the permissions of " + DumpDir.string()});
      return 1;
    }
    printStatus("PTX", File.string());
    // A PTX comment, so that several modules on stdout still say which is
    // which and the text stays valid PTX when there is only one.
    std::cout << "// " << File.filename().string() << " (" << Plan->Config.Arch
              << ")\n"
              << In.rdbuf();
    std::cout.flush();
  }
  if (Opts.Sass)
    return printSass(Ptx, Plan->Config.Arch, Ctx.Env);
  return 0;
}

//===----------------------------------------------------------------------===//
// pipeline
//===----------------------------------------------------------------------===//

namespace {

/// One numbered line of the pipeline listing.
struct Stage {
  std::string Title;
  fs::path File;    ///< empty when the stage produced nothing
  std::string Note; ///< why it is missing or skipped, or extra detail
  bool Required = true;
};

/// The rustc output of the crate \p CrateName written after \p Since, with
/// extension \p Ext (".mir", ".ll"). rustc names it <crate>-<hash><ext> in
/// deps/; the newest wins, since old builds leave their files behind.
std::optional<fs::path> newestRustcOutput(const fs::path &DepsDir,
                                          const std::string &CrateName,
                                          std::string_view Ext,
                                          fs::file_time_type Since) {
  std::optional<fs::path> Best;
  fs::file_time_type BestTime;
  std::error_code EC;
  std::string Prefix = CrateName + "-";
  for (fs::directory_iterator It(DepsDir, EC), End; !EC && It != End;
       It.increment(EC)) {
    const fs::path &P = It->path();
    std::string Name = P.filename().string();
    if (P.extension() != Ext || Name.rfind(Prefix, 0) != 0)
      continue;
    // <crate>-<hash>.mir: the hash has no dots (a per-CGU file would).
    std::string Hash = P.stem().string().substr(Prefix.size());
    if (Hash.empty() || Hash.find('.') != std::string::npos)
      continue;
    auto Time = It->last_write_time(EC);
    if (EC || Time < Since)
      continue;
    if (!Best || Time > BestTime) {
      Best = P;
      BestTime = Time;
    }
  }
  return Best;
}

/// rustc's LLVM IR of the crate whose MIR is \p Mir: <stem>.ll, or when rustc
/// kept one file per codegen unit (<stem>.<cgu>.rcgu.ll), those files joined
/// into \p Out with a comment line before each.
bool collectRustcIr(const fs::path &Mir, const fs::path &Out,
                    std::string &Note) {
  fs::path Whole = Mir;
  Whole.replace_extension(".ll");
  std::error_code EC;
  if (fs::is_regular_file(Whole, EC))
    return fs::copy_file(Whole, Out, fs::copy_options::overwrite_existing, EC);

  std::string Prefix = Mir.stem().string() + ".";
  std::vector<fs::path> Units;
  for (fs::directory_iterator It(Mir.parent_path(), EC), End; !EC && It != End;
       It.increment(EC)) {
    std::string Name = It->path().filename().string();
    if (Name.rfind(Prefix, 0) == 0 && Name.ends_with(".rcgu.ll"))
      Units.push_back(It->path());
  }
  if (Units.empty())
    return false;
  std::sort(Units.begin(), Units.end());
  std::ofstream Joined(Out, std::ios::binary | std::ios::trunc);
  for (const fs::path &Unit : Units) {
    std::ifstream In(Unit, std::ios::binary);
    Joined << "; ==== codegen unit " << Unit.filename().string() << "\n"
           << In.rdbuf() << "\n";
  }
  Note = std::to_string(Units.size()) + " codegen units, concatenated";
  return static_cast<bool>(Joined);
}

bool moveTo(const fs::path &From, const fs::path &To) {
  std::error_code EC;
  if (!fs::is_regular_file(From, EC))
    return false;
  fs::rename(From, To, EC);
  return !EC;
}

} // namespace

int runPipelineCommand(const Options &Opts, const Context &Ctx) {
  Expected<BuildPlan> Plan = planBuild(Opts, Ctx, /*AllowWorkspace=*/false);
  if (!Plan) {
    printError(Plan.error());
    return 1;
  }
  const Package &Pkg = *Plan->Pkg;
  Expected<std::string> Bin = Pkg.defaultBinary();
  if (!Bin) {
    printError(Bin.error());
    return 1;
  }

  fs::path Dir = oxideOutputDir(Plan->TargetDir, Pkg.name()) / "pipeline";
  if (!prepareDir(Dir, /*RemoveEverything=*/true))
    return 1;
  Plan->Config.DumpDir = Dir;
  CargoRunner Cargo(Plan->environment(Ctx.Env), Opts.Verbose);

  if (auto E = ensureRelink(*Plan, Cargo, /*Force=*/true)) {
    printError(*E);
    return 1;
  }

  // Seconds of slack: file systems with coarse timestamps must not make us
  // reject the files this very build wrote.
  auto Since = fs::file_time_type::clock::now() - std::chrono::seconds(2);

  // `cargo rustc` passes the extra flags to the final crate only, which is
  // the one whose MIR and IR we want; --emit=link keeps the link, and with it
  // the device linker.
  std::vector<std::string> Args = {"rustc"};
  std::vector<std::string> Selection = Plan->cargoSelection();
  Args.insert(Args.end(), Selection.begin(), Selection.end());
  Args.insert(Args.end(), {"--bin", *Bin, "--", "--emit=mir,llvm-ir,link"});
  ProcessResult Result = Cargo.run(Args);
  // The binary now carries the extra --emit; let the next build relink it.
  dropLinkStamps(*Plan);
  if (!Result.succeeded()) {
    printError(cargoFailure("cargo rustc", Result));
    return Result.Started ? 1 : 127;
  }

  std::vector<Stage> Stages;
  fs::path DepsDir = Plan->TargetDir / Plan->profileDir() / "deps";
  std::string Crate = crateNameOf(*Bin);

  // 1-2: rustc.
  Stage MirStage{"Rust MIR (rustc)", {}, {}};
  Stage IrStage{"LLVM IR (rustc, host target)", {}, {}};
  if (auto Mir = newestRustcOutput(DepsDir, Crate, ".mir", Since)) {
    std::error_code EC;
    fs::path Out = Dir / "1-rustc.mir";
    if (fs::copy_file(*Mir, Out, fs::copy_options::overwrite_existing, EC))
      MirStage.File = Out;
    fs::path IrOut = Dir / "2-rustc.ll";
    if (collectRustcIr(*Mir, IrOut, IrStage.Note))
      IrStage.File = IrOut;
    else
      IrStage.Note = "rustc wrote no .ll next to " + Mir->string();
  } else {
    MirStage.Note =
        "no " + Crate + "-*.mir from this build in " + DepsDir.string();
    IrStage.Note = "not found either";
  }
  Stages.push_back(MirStage);
  Stages.push_back(IrStage);

  // 3-6: what oxide-link dumped.
  struct DeviceStage {
    const char *Title;
    const char *From;
    const char *To;
  };
  for (const DeviceStage &D :
       {DeviceStage{"device input (gathered bitcode)", "device-input.ll",
                    "3-device-input.ll"},
        DeviceStage{"device IR, legalised for NVPTX", "device-legal.ll",
                    "4-device-legal.ll"},
        DeviceStage{"device IR, optimised (O3)", "device-opt.ll",
                    "5-device-opt.ll"}}) {
    Stage S{D.Title, {}, {}};
    if (moveTo(Dir / D.From, Dir / D.To))
      S.File = Dir / D.To;
    else
      S.Note = std::string("the device linker wrote no ") + D.From;
    Stages.push_back(S);
  }

  std::vector<std::pair<std::string, fs::path>> PtxFiles; // (module, file)
  for (const fs::path &P : filesWithExtension(Dir, ".ptx")) {
    std::string Name = P.filename().string();
    if (Name.size() > 2 && Name[1] == '-' && std::isdigit(Name[0]))
      continue; // already numbered (cannot happen after prepareDir, but cheap)
    std::string Module = P.stem().string();
    fs::path To = Dir / ("6-" + Module + ".ptx");
    if (moveTo(P, To))
      PtxFiles.emplace_back(Module, To);
  }
  if (PtxFiles.empty())
    Stages.push_back(
        {"PTX (" + Plan->Config.Arch + ")", {}, noPtxError(Dir).Message});
  for (const auto &[Module, File] : PtxFiles)
    Stages.push_back({"PTX (" + Plan->Config.Arch + ")", File, {}});

  // 7-8: the CUDA toolkit, where present.
  bool ToolFailed = false;
  std::optional<fs::path> Ptxas = findCudaTool("ptxas", Ctx.Env);
  std::optional<fs::path> Nvdisasm = findCudaTool("nvdisasm", Ctx.Env);
  std::optional<fs::path> Cuobjdump = findCudaTool("cuobjdump", Ctx.Env);
  for (const auto &[Module, Ptx] : PtxFiles) {
    Stage Cubin{"cubin (ptxas -arch=" + Plan->Config.Arch + ")", {}, {}, false};
    Stage Sass{"SASS", {}, {}, false};
    if (!Ptxas) {
      Cubin.Note = "skipped: ptxas not found in " +
                   (cudaToolkitRoot(Ctx.Env) / "bin").string() +
                   " or PATH (set OXIDE_CUDA_PATH)";
      Sass.Note = "skipped: needs the cubin";
    } else {
      fs::path Out = Dir / ("7-" + Module + ".cubin");
      RunOptions RO;
      RO.CaptureStdout = true;
      RO.CaptureStderr = true;
      ProcessResult R =
          runProcess({Ptxas->string(), "-arch=" + Plan->Config.Arch, "-o",
                      Out.string(), Ptx.string()},
                     RO);
      if (R.succeeded()) {
        Cubin.File = Out;
      } else {
        ToolFailed = true;
        Cubin.Required = true;
        Cubin.Note = "ptxas failed (" + R.describe() + ")";
        std::cerr << R.Output;
      }
      if (!Cubin.File.empty()) {
        fs::path SassOut = Dir / ("8-" + Module + ".sass");
        std::vector<std::string> Cmd = sassCommand(Nvdisasm, Cuobjdump, Out);
        if (Nvdisasm)
          Sass.Title = "SASS (nvdisasm)";
        else if (Cuobjdump)
          Sass.Title = "SASS (cuobjdump -sass)";
        if (Cmd.empty()) {
          Sass.Note = "skipped: neither nvdisasm nor cuobjdump found";
        } else {
          RunOptions SassOptions;
          SassOptions.StdoutFile = SassOut;
          ProcessResult S = runProcess(Cmd, SassOptions);
          if (S.succeeded())
            Sass.File = SassOut;
          else
            Sass.Note = fs::path(Cmd[0]).filename().string() + " failed (" +
                        S.describe() + ")";
        }
      } else if (Sass.Note.empty()) {
        Sass.Note = "skipped: no cubin";
      }
    }
    Stages.push_back(Cubin);
    Stages.push_back(Sass);
  }

  // The listing.
  bool Color = useColorOnStdout();
  std::cout << bold("pipeline of `" + Pkg.name() + "` (" + Plan->Config.Arch +
                        ", " + Plan->profileDir() + ") in " +
                        Dir.string(),
                    Color)
            << "\n";
  bool MissingRequired = false;
  unsigned Number = 0;
  for (const Stage &S : Stages) {
    ++Number;
    std::string Title = S.Title;
    Title.resize(std::max<size_t>(Title.size() + 1, 34), ' ');
    std::cout << (Number < 10 ? "   " : "  ") << Number << "  " << Title;
    if (!S.File.empty()) {
      std::error_code EC;
      uintmax_t Size = fs::file_size(S.File, EC);
      std::string SizeText = EC ? "?" : formatSize(Size);
      SizeText.insert(0, SizeText.size() < 10 ? 10 - SizeText.size() : 0, ' ');
      std::cout << SizeText << "  " << S.File.string();
      if (!S.Note.empty())
        std::cout << "  (" << S.Note << ")";
    } else {
      // The size column stays empty; the note says why there is no file.
      MissingRequired |= S.Required;
      std::cout << std::string(12, ' ')
                << (S.Required ? red("missing", Color) + ": " : std::string())
                << S.Note;
    }
    std::cout << "\n";
  }
  // What OXIDE_LLVM_ARGS asked the device pipeline to print (-print-after=,
  // -time-passes): the device linker writes it next to the stages.
  std::error_code EC;
  if (fs::is_directory(Dir / "passes", EC)) {
    size_t Files = std::distance(fs::directory_iterator(Dir / "passes", EC),
                                 fs::directory_iterator());
    std::cout << "      IR after passes (OXIDE_LLVM_ARGS): " << Files
              << (Files == 1 ? " file in " : " files in ")
              << (Dir / "passes").string() << "\n";
  }
  if (fs::is_regular_file(Dir / "time-passes.txt", EC))
    std::cout << "      pass timings (OXIDE_LLVM_ARGS): "
              << (Dir / "time-passes.txt").string() << "\n";
  std::cout.flush();

  if (ToolFailed) {
    printError({"ptxas rejected the PTX oxide generated",
                "this is a bug in oxide's device linker; please report it "
                "with the PTX file listed above"});
    return 1;
  }
  if (PtxFiles.empty()) {
    printError(noPtxError(Dir));
    return 1;
  }
  if (MissingRequired) {
    printError({"some stages are missing (see above)",
                "re-run with --verbose to see the commands and the device "
                "linker's log"});
    return 1;
  }
  return 0;
}

} // namespace oxide::cli
