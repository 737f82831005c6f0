//===- OptionsTest.cpp - command-line parsing -----------------------------===//
//
// Part of oxide. Tests parseArguments(): how cargo calls us, every option of
// every subcommand, and the error (with its hint) for each kind of mistake.
//
//===----------------------------------------------------------------------===//

#include "Options.h"
#include "oxide/Targets.h"

#include "TestSupport.h"

#include <gtest/gtest.h>

using namespace oxide::cli;
using oxide::cli::test::contains;

namespace {

Options parseOk(const std::vector<std::string> &Args) {
  Expected<Options> Opts = parseArguments(Args);
  EXPECT_TRUE(static_cast<bool>(Opts))
      << "unexpected error: " << Opts.error().Message;
  return Opts ? *Opts : Options{};
}

Error parseFail(const std::vector<std::string> &Args) {
  Expected<Options> Opts = parseArguments(Args);
  EXPECT_FALSE(static_cast<bool>(Opts)) << "expected an error";
  return Opts ? Error{} : Opts.error();
}

TEST(OptionsTest, CargoPassesTheSubcommandNameFirst) {
  Options Opts = parseOk({"oxide", "build"});
  EXPECT_EQ(Opts.Cmd, Command::Build);
  EXPECT_FALSE(Opts.Name);
}

TEST(OptionsTest, DirectInvocationWorksToo) {
  EXPECT_EQ(parseOk({"build"}).Cmd, Command::Build);
  EXPECT_EQ(parseOk({"doctor"}).Cmd, Command::Doctor);
}

TEST(OptionsTest, NothingMeansOverview) {
  EXPECT_EQ(parseOk({}).Cmd, Command::None);
  EXPECT_EQ(parseOk({"oxide"}).Cmd, Command::None);
}

TEST(OptionsTest, HelpForms) {
  EXPECT_EQ(parseOk({"oxide", "--help"}).Cmd, Command::Help);
  EXPECT_EQ(parseOk({"-h"}).Cmd, Command::Help);
  Options Plain = parseOk({"oxide", "help"});
  EXPECT_EQ(Plain.Cmd, Command::Help);
  EXPECT_FALSE(Plain.HelpTopic);

  Options Topic = parseOk({"oxide", "help", "run"});
  EXPECT_EQ(Topic.Cmd, Command::Help);
  ASSERT_TRUE(Topic.HelpTopic);
  EXPECT_EQ(*Topic.HelpTopic, Command::Run);

  Options After = parseOk({"oxide", "pipeline", "vecadd", "--help"});
  EXPECT_EQ(After.Cmd, Command::Help);
  EXPECT_EQ(After.HelpTopic, Command::Pipeline);

  Options Global = parseOk({"oxide", "--help", "doctor"});
  EXPECT_EQ(Global.HelpTopic, Command::Doctor);
}

TEST(OptionsTest, HelpAboutUnknownSubcommand) {
  Error E = parseFail({"oxide", "help", "biuld"});
  EXPECT_TRUE(contains(E.Message, "no such subcommand: `biuld`"));
  EXPECT_TRUE(contains(E.Hint, "build"));
}

TEST(OptionsTest, Version) {
  EXPECT_EQ(parseOk({"oxide", "--version"}).Cmd, Command::Version);
  EXPECT_EQ(parseOk({"-V"}).Cmd, Command::Version);
  EXPECT_TRUE(contains(versionString(), "cargo-oxide"));
}

TEST(OptionsTest, BuildWithEveryOption) {
  Options Opts = parseOk({"oxide", "build", "vecadd", "--release", "--arch",
                          "sm_90", "--verbose"});
  EXPECT_EQ(Opts.Cmd, Command::Build);
  EXPECT_EQ(Opts.Name, "vecadd");
  EXPECT_TRUE(Opts.Release);
  EXPECT_EQ(Opts.Arch, "sm_90");
  EXPECT_TRUE(Opts.Verbose);
  EXPECT_TRUE(Opts.ProgramArgs.empty());
}

TEST(OptionsTest, ShortFlagsAndOptionsBeforeTheName) {
  Options Opts =
      parseOk({"oxide", "build", "-r", "-v", "--arch=sm_90a", "gemm"});
  EXPECT_TRUE(Opts.Release);
  EXPECT_TRUE(Opts.Verbose);
  EXPECT_EQ(Opts.Arch, "sm_90a");
  EXPECT_EQ(Opts.Name, "gemm");
}

TEST(OptionsTest, ArchDefaultsToUnset) {
  EXPECT_FALSE(parseOk({"oxide", "build"}).Arch);
}

TEST(OptionsTest, UnknownArchIsRefusedWithTheKnownOnes) {
  // Well-formed names too: a target LLVM or ptxas does not know (sm_999,
  // sm_70 which ptxas 13 dropped, sm_90f which does not exist) would only
  // fail later, inside the device linker.
  for (const char *Bad : {"90", "sm90", "sm_8", "sm_080", "compute_80",
                          "sm_90ab", "sm_1000", "SM_90", "sm_9a", "sm_999",
                          "sm_70", "sm_90f", "sm_100x"}) {
    Error E = parseFail({"oxide", "build", "--arch", Bad});
    EXPECT_TRUE(contains(E.Message, "unknown GPU architecture `" +
                                        std::string(Bad) + "`"))
        << E.Message;
    EXPECT_TRUE(contains(E.Message, "(--arch)")) << E.Message;
    // The list is the table's: its first, last and an `a`/`f` target.
    for (const char *Known : {"sm_75", "sm_80", "sm_90a", "sm_100f", "sm_121f"})
      EXPECT_TRUE(contains(E.Message, Known)) << Known << " in " << E.Message;
  }
}

TEST(OptionsTest, ArchNeedsAValue) {
  Error E = parseFail({"oxide", "build", "--arch"});
  EXPECT_TRUE(contains(E.Message, "`--arch` needs a value"));
  EXPECT_TRUE(contains(E.Hint, "--arch sm_90"));
  EXPECT_FALSE(static_cast<bool>(parseArguments({"build", "--arch="})));
}

TEST(OptionsTest, ValidArchNames) {
  for (const char *Good : {"sm_75", "sm_80", "sm_86", "sm_89", "sm_90",
                           "sm_90a", "sm_100", "sm_100a", "sm_100f", "sm_120f"})
    EXPECT_TRUE(isValidArch(Good)) << Good;
  EXPECT_FALSE(isValidArch(""));
  EXPECT_FALSE(isValidArch("sm_"));
}

TEST(OptionsTest, FamilyTargetsAreParsedAsThemselves) {
  // sm_100f once parsed to compute capability 0, which switched the device
  // linker's architecture checks off; it is a target of its own now.
  Options Opts = parseOk({"oxide", "build", "--arch", "sm_100f"});
  EXPECT_EQ(Opts.Arch, "sm_100f");
  const oxide::GpuTarget *T = oxide::findGpuTarget("sm_100f");
  ASSERT_NE(T, nullptr);
  EXPECT_EQ(T->SM, 100u);
  EXPECT_EQ(T->Kind, oxide::TargetKind::Family);
  EXPECT_TRUE(T->has(oxide::feature::Setmaxnreg));
  EXPECT_FALSE(T->has(oxide::feature::Wgmma));
}

TEST(OptionsTest, TargetTableImpliesFeatures) {
  // What the device linker's checks read: wgmma on sm_90a alone, clusters
  // from sm_90 on, nothing of Hopper's before it.
  EXPECT_EQ(oxide::targetNamesWith(oxide::feature::Wgmma), "sm_90a");
  EXPECT_TRUE(oxide::findGpuTarget("sm_90")->has(oxide::feature::Clusters));
  EXPECT_FALSE(oxide::findGpuTarget("sm_89")->has(oxide::feature::Clusters));
  EXPECT_FALSE(oxide::findGpuTarget("sm_90")->has(oxide::feature::Setmaxnreg));
  EXPECT_TRUE(oxide::findGpuTarget("sm_120a")->has(oxide::feature::Setmaxnreg));
  EXPECT_FALSE(oxide::findGpuTarget("sm_120a")->has(oxide::feature::Tcgen05));
  // Every target names a PTX ISA LLVM can emit and is unique.
  for (const oxide::GpuTarget &T : oxide::gpuTargets()) {
    EXPECT_GE(T.PtxIsa, 63u) << T.Name;
    EXPECT_EQ(oxide::findGpuTarget(T.Name), &T) << T.Name;
  }
  // The default is a target, and a portable one.
  const oxide::GpuTarget *Default = oxide::findGpuTarget(oxide::DefaultTargetName);
  ASSERT_NE(Default, nullptr);
  EXPECT_EQ(Default->Kind, oxide::TargetKind::Portable);
  // A GPU maps to its portable target, an unknown one to none.
  EXPECT_EQ(oxide::targetForComputeCapability(9, 0)->Name, "sm_90");
  EXPECT_EQ(oxide::targetForComputeCapability(10, 0)->Name, "sm_100");
  EXPECT_EQ(oxide::targetForComputeCapability(7, 0), nullptr);
}

TEST(OptionsTest, RunTakesProgramArgumentsAfterDoubleDash) {
  Options Opts = parseOk(
      {"oxide", "run", "vecadd", "--release", "--", "--n", "5", "--release"});
  EXPECT_EQ(Opts.Cmd, Command::Run);
  EXPECT_EQ(Opts.Name, "vecadd");
  EXPECT_TRUE(Opts.Release);
  EXPECT_EQ(Opts.ProgramArgs,
            (std::vector<std::string>{"--n", "5", "--release"}));
}

TEST(OptionsTest, EmulateOnlyWhereKernelsRun) {
  Options Run = parseOk({"oxide", "run", "vecadd", "--emulate", "--", "--emulate"});
  EXPECT_EQ(Run.Emulate, EmulateMode::Default);
  EXPECT_EQ(Run.ProgramArgs, (std::vector<std::string>{"--emulate"}));
  EXPECT_EQ(parseOk({"oxide", "test", "--emulate"}).Emulate, EmulateMode::Default);
  EXPECT_EQ(parseOk({"oxide", "run", "vecadd"}).Emulate, EmulateMode::Off);
  parseFail({"oxide", "build", "vecadd", "--emulate"});
  parseFail({"oxide", "build", "vecadd", "--emulate=host"});
  EXPECT_NE(commandHelp(Command::Run).find("--emulate"), std::string::npos);
}

TEST(OptionsTest, GpusOnlyForRun) {
  Options Run = parseOk({"oxide", "run", "allreduce", "--gpus", "4", "--", "--gpus", "9"});
  EXPECT_EQ(Run.Gpus, 4u);
  EXPECT_EQ(Run.ProgramArgs, (std::vector<std::string>{"--gpus", "9"}));
  EXPECT_EQ(parseOk({"oxide", "run", "allreduce", "--gpus=2"}).Gpus, 2u);
  EXPECT_FALSE(parseOk({"oxide", "run", "allreduce"}).Gpus.has_value());
  for (const char *Bad : {"0", "two", "-1", "99999"}) {
    Error E = parseFail({"oxide", "run", "allreduce", "--gpus", Bad});
    EXPECT_NE(E.Message.find("--gpus takes a number of processes"), std::string::npos) << Bad;
  }
  Options Launch = parseOk({"oxide", "launch", "--gpus", "2", "target/release/prog", "--", "-x"});
  EXPECT_EQ(Launch.Cmd, Command::Launch);
  EXPECT_EQ(Launch.Gpus, 2u);
  EXPECT_EQ(Launch.Name, "target/release/prog");
  EXPECT_EQ(Launch.ProgramArgs, (std::vector<std::string>{"-x"}));
  parseFail({"oxide", "launch", "--gpus", "2"}); // no program
  parseFail({"oxide", "launch", "--release", "--gpus", "2", "prog"});
  parseFail({"oxide", "test", "--gpus", "2"});
  parseFail({"oxide", "build", "allreduce", "--gpus", "2"});
  EXPECT_NE(commandHelp(Command::Run).find("--gpus N"), std::string::npos);
}

TEST(OptionsTest, EmulateModes) {
  EXPECT_EQ(parseOk({"oxide", "run", "--emulate=host", "vecadd"}).Emulate,
            EmulateMode::HostCode);
  Options Test = parseOk({"oxide", "test", "vecadd", "--emulate=ptx"});
  EXPECT_EQ(Test.Emulate, EmulateMode::DeviceCode);
  EXPECT_EQ(Test.Name, "vecadd"); // a mode is never taken from the next word
  Options Next = parseOk({"oxide", "run", "--emulate", "host"});
  EXPECT_EQ(Next.Emulate, EmulateMode::Default);
  EXPECT_EQ(Next.Name, "host");
  for (const char *Bad : {"--emulate=gpu", "--emulate=", "--emulate=HOST"}) {
    Error E = parseFail({"oxide", "run", "vecadd", Bad});
    EXPECT_NE(E.Message.find("unknown emulation mode"), std::string::npos) << Bad;
    EXPECT_NE(E.Hint.find("--emulate=ptx"), std::string::npos) << E.Hint;
  }
  EXPECT_EQ(emulateValue(EmulateMode::Off), "");
  EXPECT_EQ(emulateValue(EmulateMode::Default), "1");
  EXPECT_EQ(emulateValue(EmulateMode::HostCode), "host");
  EXPECT_EQ(emulateValue(EmulateMode::DeviceCode), "ptx");
  std::string Help = commandHelp(Command::Test);
  EXPECT_NE(Help.find("--emulate[=MODE]"), std::string::npos) << Help;
  EXPECT_NE(Help.find("--test-threads=1"), std::string::npos) << Help;
}

TEST(OptionsTest, RunWithoutNameButWithArguments) {
  Options Opts = parseOk({"oxide", "run", "--", "x"});
  EXPECT_FALSE(Opts.Name);
  EXPECT_EQ(Opts.ProgramArgs, (std::vector<std::string>{"x"}));
}

TEST(OptionsTest, RunSecondPositionalPointsAtDoubleDash) {
  Error E = parseFail({"oxide", "run", "vecadd", "1024"});
  EXPECT_TRUE(contains(E.Message, "unexpected argument `1024`"));
  EXPECT_TRUE(contains(E.Hint, "cargo oxide run vecadd -- 1024"));
}

TEST(OptionsTest, BuildRejectsProgramArguments) {
  Error E = parseFail({"oxide", "build", "vecadd", "--", "x"});
  EXPECT_TRUE(contains(E.Hint, "cargo oxide run"));
}

TEST(OptionsTest, BuildRejectsTwoNames) {
  Error E = parseFail({"oxide", "build", "a", "b"});
  EXPECT_TRUE(contains(E.Message, "unexpected argument `b`"));
}

TEST(OptionsTest, UnknownOptionNamesTheSubcommandHelp) {
  Error E = parseFail({"oxide", "build", "--frobnicate"});
  EXPECT_TRUE(contains(E.Message, "unexpected argument `--frobnicate`"));
  EXPECT_TRUE(contains(E.Message, "cargo oxide build"));
  EXPECT_TRUE(contains(E.Hint, "cargo oxide help build"));
}

TEST(OptionsTest, UnknownSubcommandSuggestsTheClosest) {
  Error Typo = parseFail({"oxide", "biuld"});
  EXPECT_TRUE(contains(Typo.Message, "no such subcommand: `biuld`"));
  EXPECT_TRUE(contains(Typo.Hint, "did you mean `cargo oxide build`?"));

  Error Far = parseFail({"oxide", "xyzzyplugh"});
  EXPECT_TRUE(contains(Far.Hint, "cargo oxide --help"));

  EXPECT_EQ(suggestCommand("pipline"), "pipeline");
  EXPECT_EQ(suggestCommand("doctr"), "doctor");
  EXPECT_EQ(suggestCommand("zzzzzzzz"), "");
}

TEST(OptionsTest, OptionBeforeSubcommandIsExplained) {
  Error E = parseFail({"oxide", "--release", "build"});
  EXPECT_TRUE(contains(E.Message, "before the subcommand"));
  EXPECT_TRUE(contains(E.Hint, "after the subcommand"));
}

TEST(OptionsTest, NewNeedsAName) {
  Error E = parseFail({"oxide", "new"});
  EXPECT_TRUE(contains(E.Message, "needs NAME"));
  EXPECT_TRUE(contains(E.Hint, "cargo oxide new my_kernel"));
  EXPECT_EQ(parseOk({"oxide", "new", "k"}).Name, "k");
}

TEST(OptionsTest, NewAcceptsNoBuildOptions) {
  Error E = parseFail({"oxide", "new", "k", "--release"});
  EXPECT_TRUE(contains(E.Message, "`--release`"));
}

TEST(OptionsTest, DoctorTakesNoOptions) {
  EXPECT_EQ(parseOk({"oxide", "doctor"}).Cmd, Command::Doctor);
  EXPECT_TRUE(contains(
      parseFail({"oxide", "doctor", "--arch", "sm_90"}).Message, "`--arch`"));
  EXPECT_TRUE(contains(parseFail({"oxide", "doctor", "-v"}).Message, "`-v`"));
  Error E = parseFail({"oxide", "doctor", "vecadd"});
  EXPECT_TRUE(contains(E.Message, "takes no arguments"));
}

TEST(OptionsTest, CleanAcceptsNameAndRelease) {
  Options Opts = parseOk({"oxide", "clean", "vecadd", "--release"});
  EXPECT_EQ(Opts.Cmd, Command::Clean);
  EXPECT_EQ(Opts.Name, "vecadd");
  EXPECT_TRUE(Opts.Release);
  EXPECT_FALSE(static_cast<bool>(parseArguments({"clean", "--arch", "sm_90"})));
}

TEST(OptionsTest, FeaturesArePassedThrough) {
  Options Opts =
      parseOk({"oxide", "build", "-F", "a,b", "--features=c", "--all-features",
               "-Fd", "--no-default-features", "--features", "e"});
  EXPECT_EQ(Opts.CargoArgs, (std::vector<std::string>{
                                "--features", "a,b", "--features", "c",
                                "--all-features", "--features", "d",
                                "--no-default-features", "--features", "e"}));
  EXPECT_FALSE(static_cast<bool>(parseArguments({"build", "--features"})));
}

TEST(OptionsTest, CargoFlagsPassThroughEveryBuildingCommand) {
  using Args = std::vector<std::string>;
  for (const char *Cmd : {"build", "run", "test", "inspect", "pipeline",
                          "check", "debug", "sanitize"}) {
    Options Opts =
        parseOk({"oxide", Cmd, "-p", "vecadd", "-j", "3", "--locked",
                 "--offline", "--frozen", "--target-dir", "out",
                 "--manifest-path=ws/Cargo.toml", "--features", "f",
                 "--all-features", "--no-default-features", "-v"});
    EXPECT_EQ(Opts.Name, "vecadd") << Cmd;
    EXPECT_EQ(Opts.Package, "vecadd") << Cmd;
    EXPECT_EQ(Opts.TargetDir, "out") << Cmd;
    EXPECT_EQ(Opts.ManifestPath, "ws/Cargo.toml") << Cmd;
    EXPECT_TRUE(Opts.Verbose) << Cmd;
    EXPECT_EQ(Opts.CargoArgs,
              (Args{"--jobs", "3", "--locked", "--offline", "--frozen",
                    "--features", "f", "--all-features",
                    "--no-default-features"}))
        << Cmd;
  }
  // Attached values, as cargo spells them.
  Options Short = parseOk({"build", "-pvecadd", "-j4", "--jobs=2"});
  EXPECT_EQ(Short.Name, "vecadd");
  EXPECT_EQ(Short.CargoArgs, (Args{"--jobs", "4", "--jobs", "2"}));
  // bench builds one fixed package: cargo's build settings only.
  Options Bench = parseOk({"bench", "sgemm", "-j", "2", "--offline"});
  EXPECT_EQ(Bench.CargoArgs, (Args{"--jobs", "2", "--offline"}));
  Error BenchPackage = parseFail({"bench", "-p", "x"});
  EXPECT_TRUE(contains(BenchPackage.Message, "unexpected argument `-p`"));
  EXPECT_TRUE(contains(parseFail({"build", "-j"}).Message, "needs a value"));
  EXPECT_TRUE(contains(parseFail({"build", "-p", "a", "--package", "b"}).Message,
                       "given twice"));
  EXPECT_TRUE(contains(parseFail({"build", "a", "-p", "b"}).Message,
                       "both NAME `a` and `--package b`"));
}

TEST(OptionsTest, ProfileAndRelease) {
  Options Release = parseOk({"build", "--profile", "release"});
  EXPECT_TRUE(Release.Release);
  EXPECT_FALSE(Release.Profile);
  Options Dev = parseOk({"build", "--profile=dev"});
  EXPECT_FALSE(Dev.Release);
  EXPECT_FALSE(Dev.Profile);
  Options Custom = parseOk({"run", "--profile", "fast"});
  EXPECT_EQ(Custom.Profile, "fast");
}

TEST(OptionsTest, BinAndExampleChooseTheExecutable) {
  using Args = std::vector<std::string>;
  Options Bin = parseOk({"run", "pkg", "--bin", "tool", "--", "x"});
  EXPECT_EQ(Bin.Bin, "tool");
  EXPECT_EQ(Bin.CargoArgs, (Args{"--bin", "tool"}));
  EXPECT_EQ(Bin.ProgramArgs, (Args{"x"}));
  Options Example = parseOk({"debug", "--example=demo"});
  EXPECT_EQ(Example.Example, "demo");
  EXPECT_TRUE(contains(
      parseFail({"run", "--bin", "a", "--example", "b"}).Message,
      "both `--bin` and `--example`"));
  // inspect and pipeline act on a package's kernels, not one executable.
  EXPECT_TRUE(contains(parseFail({"inspect", "--bin", "a"}).Message,
                       "unexpected argument `--bin`"));
}

TEST(OptionsTest, UnknownFlagErrorListsWhatTheCommandAccepts) {
  Error E = parseFail({"oxide", "run", "--frobnicate"});
  EXPECT_TRUE(contains(E.Hint, "it accepts -r/--release, --arch TARGET"));
  EXPECT_TRUE(contains(E.Hint, "-p/--package NAME"));
  EXPECT_TRUE(contains(E.Hint, "--bin NAME"));
  EXPECT_TRUE(contains(E.Hint, "-j/--jobs N"));
  EXPECT_TRUE(contains(E.Hint, "--emulate[=MODE]"));
  EXPECT_TRUE(contains(E.Hint, "arguments after `--` go to the program"));
  // The list is the parser's own: every flag in it parses.
  EXPECT_EQ(acceptedFlags(Command::Run),
            E.Hint.substr(std::string("it accepts ").size(),
                          acceptedFlags(Command::Run).size()));
  Error Inspect = parseFail({"inspect", "--emulate"});
  EXPECT_TRUE(contains(Inspect.Hint, "--sass"));
  EXPECT_FALSE(contains(Inspect.Hint, "--emulate"));
}

TEST(OptionsTest, CheckAndMetadata) {
  Options Check = parseOk({"check", "vecadd", "--message-format=json"});
  EXPECT_EQ(Check.Cmd, Command::Check);
  EXPECT_TRUE(Check.JsonMessages);
  EXPECT_FALSE(parseOk({"check", "--message-format", "human"}).JsonMessages);
  EXPECT_TRUE(contains(parseFail({"check", "--message-format=xml"}).Message,
                       "unknown message format `xml`"));
  Options Meta = parseOk({"metadata", "gemm", "--print", "arch"});
  EXPECT_EQ(Meta.Cmd, Command::Metadata);
  EXPECT_EQ(Meta.Print, "arch");
  EXPECT_EQ(parseOk({"metadata", "--print=emulate"}).Print, "emulate");
  EXPECT_EQ(parseOk({"metadata", "--print", "package"}).Print, "package");
  EXPECT_TRUE(contains(parseFail({"metadata", "--print", "x"}).Hint,
                       "--print arch, --print emulate or --print package"));
}

TEST(OptionsTest, InspectAndPipelineTakeBuildOptions) {
  Options I = parseOk({"oxide", "inspect", "vecadd", "--arch", "sm_90"});
  EXPECT_EQ(I.Cmd, Command::Inspect);
  EXPECT_EQ(I.Arch, "sm_90");
  Options P = parseOk({"oxide", "pipeline", "--release"});
  EXPECT_EQ(P.Cmd, Command::Pipeline);
  EXPECT_TRUE(P.Release);
}

TEST(OptionsTest, HelpTextsCoverEveryCommand) {
  std::string Overview = overviewHelp();
  for (Command C :
       {Command::New, Command::Build, Command::Run, Command::Inspect,
        Command::Pipeline, Command::Doctor, Command::Clean}) {
    std::string Name(commandName(C));
    EXPECT_FALSE(Name.empty());
    EXPECT_EQ(commandFromName(Name), C);
    EXPECT_TRUE(contains(Overview, "\n  " + Name)) << Name;
    EXPECT_TRUE(contains(commandHelp(C), "Usage: cargo oxide " + Name)) << Name;
  }
  EXPECT_TRUE(contains(commandHelp(Command::Run), "[-- ARGS...]"));
  EXPECT_TRUE(contains(commandHelp(Command::Build), "--arch TARGET"));
  // The help names the order and the one default.
  EXPECT_TRUE(contains(commandHelp(Command::Build),
                       "else the GPU present, else " +
                           std::string(oxide::DefaultTargetName)));
  EXPECT_FALSE(contains(commandHelp(Command::Doctor), "--arch"));
  EXPECT_FALSE(commandFromName("help"));
}

} // namespace
