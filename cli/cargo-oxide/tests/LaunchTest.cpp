//===- LaunchTest.cpp - the ranks of a multi-process job ------------------===//
//
// Part of oxide. Tests launchRanks() with /bin/sh as the program: every rank
// gets its place in the job, output is prefixed by rank, a failing rank
// stops the others and its status is the job's.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "Launch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace oxide::cli;

namespace {

std::vector<std::string> sh(const std::string &Script) {
  return {"/bin/sh", "-c", Script};
}

TEST(LaunchTest, EveryRankKnowsItsPlace) {
  std::ostringstream Out, Err;
  int Status = launchRanks(
      sh("echo \"$OXIDE_RANK $OXIDE_LOCAL_RANK $OXIDE_WORLD_SIZE $OXIDE_NCCL_ADDR\"; "
         "echo warn >&2"),
      Environment::current(), 3, "127.0.0.1:4242", Out, Err);
  EXPECT_EQ(Status, 0);
  std::string Text = Out.str();
  for (int R = 0; R < 3; ++R) {
    std::string Line = "[rank " + std::to_string(R) + "] " + std::to_string(R) +
                       " " + std::to_string(R) + " 3 127.0.0.1:4242\n";
    EXPECT_NE(Text.find(Line), std::string::npos) << Text;
  }
  EXPECT_NE(Err.str().find("[rank 2] warn\n"), std::string::npos) << Err.str();
}

TEST(LaunchTest, AnUnfinishedLastLineIsStillPrinted) {
  std::ostringstream Out, Err;
  EXPECT_EQ(launchRanks(sh("printf 'no newline'"), Environment::current(), 1,
                        "127.0.0.1:1", Out, Err),
            0);
  EXPECT_EQ(Out.str(), "[rank 0] no newline\n");
}

TEST(LaunchTest, AFailingRankStopsTheOthersAndIsTheJobsStatus) {
  std::ostringstream Out, Err;
  auto Start = std::chrono::steady_clock::now();
  // Rank 1 fails at once; ranks 0 and 2 would wait a minute (a peer
  // waiting for a dead rank).
  int Status = launchRanks(
      sh("if [ \"$OXIDE_RANK\" = 1 ]; then echo dying >&2; exit 3; fi; sleep 60"),
      Environment::current(), 3, "127.0.0.1:1", Out, Err, /*GraceSeconds=*/1);
  auto Took = std::chrono::steady_clock::now() - Start;
  EXPECT_EQ(Status, 3);
  EXPECT_LT(Took, std::chrono::seconds(20));
  EXPECT_NE(Err.str().find("[rank 1] dying\n"), std::string::npos) << Err.str();
  EXPECT_NE(Err.str().find("rank 1 of 3 failed (status 3); 2 other rank(s) were stopped"),
            std::string::npos)
      << Err.str();
}

TEST(LaunchTest, AProgramThatCannotStartFailsTheJob) {
  std::ostringstream Out, Err;
  int Status = launchRanks({"/nonexistent/program"}, Environment::current(), 2,
                           "127.0.0.1:1", Out, Err, 1);
  EXPECT_EQ(Status, 127);
  EXPECT_NE(Err.str().find("cannot start /nonexistent/program"), std::string::npos)
      << Err.str();
}

TEST(LaunchTest, AFreeLocalAddressIsOnLoopback) {
  std::string Addr = freeLocalAddress();
  ASSERT_FALSE(Addr.empty());
  EXPECT_EQ(Addr.rfind("127.0.0.1:", 0), 0u) << Addr;
  EXPECT_NE(Addr, "127.0.0.1:0");
}

/// `cargo oxide launch` on a script of its own, under the emulator (so
/// that no GPU is probed): the program's status is the job's, and every
/// refusal comes before anything starts.
class LaunchCommandTest : public ::testing::Test {
protected:
  void SetUp() override {
    Dir = std::filesystem::temp_directory_path() /
          ("oxide-launch-" + std::to_string(::getpid()));
    std::filesystem::create_directories(Dir);
    Marker = Dir / "started";
    std::ofstream(Dir / "prog") << "#!/bin/sh\ntouch '" << Marker.string()
                                << "'\nexit \"$1\"\n";
    std::filesystem::permissions(Dir / "prog",
                                 std::filesystem::perms::owner_all);
    Ctx.Env = Environment::current();
    Ctx.Env.set("OXIDE_EMULATE", "1");
    Ctx.Cwd = Dir;
  }
  void TearDown() override { std::filesystem::remove_all(Dir); }
  int launch(std::vector<std::string> Args) {
    Args.insert(Args.begin(), {"oxide", "launch"});
    Expected<Options> Opts = parseArguments(Args);
    EXPECT_TRUE(static_cast<bool>(Opts));
    return runLaunchCommand(*Opts, Ctx);
  }
  std::filesystem::path Dir, Marker;
  Context Ctx;
};

TEST_F(LaunchCommandTest, TheProgramsStatusIsTheJobs) {
  EXPECT_EQ(launch({"--gpus", "1", "prog", "--", "0"}), 0);
  EXPECT_TRUE(std::filesystem::exists(Marker));
  EXPECT_EQ(launch({"--gpus", "1", "prog", "--", "5"}), 5);
}

TEST_F(LaunchCommandTest, RefusalsComeBeforeAnyRankStarts) {
  EXPECT_EQ(launch({"prog"}), 1);                     // no --gpus
  EXPECT_EQ(launch({"--gpus", "1", "missing"}), 1);   // no such program
  EXPECT_EQ(launch({"--gpus", "2", "prog"}), 1);      // 2 ranks, emulated
  EXPECT_FALSE(std::filesystem::exists(Marker));
}

} // namespace
