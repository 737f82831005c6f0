//===- MetadataTest.cpp - cargo's JSON ------------------------------------===//
//
// Part of oxide. Tests the JSON reader on what `cargo metadata` prints, and
// the rewriting of cargo's `--message-format=json` stream by `cargo oxide
// check` (oxide's device diagnostics in place of rustc's "linking with …
// failed").
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "Metadata.h"

#include "TestSupport.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace oxide::cli;
using oxide::cli::test::contains;

namespace {

/// Trimmed from a real `cargo metadata --format-version 1 --no-deps`.
const char *Metadata = R"json({"packages":[{"name":"gemm_bf16","version":"0.1.0",
"id":"path+file:///w/examples/gemm_bf16#0.1.0","source":null,"dependencies":[],
"targets":[{"kind":["bin"],"crate_types":["bin"],"name":"gemm_bf16",
"src_path":"/w/examples/gemm_bf16/src/main.rs","edition":"2021","doctest":false,
"test":true},{"kind":["lib"],"crate_types":["lib"],"name":"helpers",
"src_path":"/w/examples/gemm_bf16/src/lib.rs"}],"features":{},
"manifest_path":"/w/examples/gemm_bf16/Cargo.toml","metadata":{"oxide":
{"arch":"sm_90a","emulate":"no: TMA and wgmma \u2014 \"quoted\""}},
"default_run":null,"rust_version":null}],"workspace_members":[],
"resolve":null,"target_directory":"/w/out","version":1,
"workspace_root":"/w/examples/gemm_bf16","metadata":null})json";

TEST(MetadataTest, ReadsWhatCargoOxideNeeds) {
  Expected<ProjectMetadata> P = parseCargoMetadata(Metadata);
  ASSERT_TRUE(static_cast<bool>(P)) << P.error().Message;
  EXPECT_EQ(P->TargetDirectory, "/w/out");
  EXPECT_EQ(P->WorkspaceRoot, "/w/examples/gemm_bf16");
  ASSERT_EQ(P->Packages.size(), 1u);
  const PackageMetadata &G = P->Packages[0];
  EXPECT_EQ(G.Name, "gemm_bf16");
  EXPECT_EQ(G.OxideArch, "sm_90a");
  EXPECT_EQ(G.OxideEmulate, "no: TMA and wgmma \xE2\x80\x94 \"quoted\"");
  EXPECT_FALSE(G.DefaultRun);
  EXPECT_EQ(G.Binaries, (std::vector<std::string>{"gemm_bf16"}));
  EXPECT_EQ(P->package("/w/examples/gemm_bf16/Cargo.toml"), &G);
  EXPECT_EQ(P->package("/w/elsewhere/Cargo.toml"), nullptr);
}

TEST(MetadataTest, BrokenJsonIsAnErrorNotACrash) {
  for (const char *Bad : {"", "{", "{\"a\":}", "[1,2", "{\"a\":\"\\u12\"}",
                          "{} trailing", "nul"})
    EXPECT_FALSE(static_cast<bool>(parseJson(Bad))) << Bad;
  Expected<ProjectMetadata> NoTarget = parseCargoMetadata("{\"packages\":[]}");
  ASSERT_FALSE(static_cast<bool>(NoTarget));
  EXPECT_TRUE(contains(NoTarget.error().Message, "target_directory"));
}

TEST(MetadataTest, JsonRoundTrips) {
  const char *Text = R"({"a":[1,2.5,true,false,null],"b":"x\"y\\z\n","c":{}})";
  Expected<JsonValue> V = parseJson(Text);
  ASSERT_TRUE(static_cast<bool>(V));
  EXPECT_EQ(toJson(*V), Text);
  EXPECT_EQ(jsonQuote("tab\there\x01"), "\"tab\\there\\u0001\"");
}

TEST(MetadataTest, CheckPutsDeviceDiagnosticsInPlaceOfTheLinkFailure) {
  std::string Link =
      R"({"reason":"compiler-message","package_id":"p 0.1.0","manifest_path":"/p/Cargo.toml",)"
      R"("target":{"kind":["bin"],"name":"p"},"message":{"$message_type":"diagnostic",)"
      R"("message":"linking with `/o/oxide-link` failed: exit status: 1","code":null,)"
      R"("level":"error","spans":[],"children":[],"rendered":"error: linking"}})";
  std::string Device =
      R"({"$message_type":"diagnostic","message":"`Box::new` cannot be called on the GPU","level":"error",)"
      R"("spans":[{"file_name":"src/main.rs","line_start":9}],"children":[],"rendered":"error: x\n"})"
      "\n"
      R"({"$message_type":"diagnostic","message":"second","level":"error","spans":[],"children":[],"rendered":"e"})"
      "\n";
  std::string Out = replaceDeviceLinkMessage(Link, Device);
  // One compiler-message per diagnostic, each with the package and target
  // of the message it replaces.
  ASSERT_EQ(std::count(Out.begin(), Out.end(), '\n'), 2) << Out;
  EXPECT_FALSE(contains(Out, "linking with")) << Out;
  EXPECT_TRUE(contains(Out, R"({"reason":"compiler-message","package_id":"p 0.1.0",)")) << Out;
  EXPECT_TRUE(contains(Out, R"("target":{"kind":["bin"],"name":"p"},"message":{"$message_type":"diagnostic","message":"`Box::new` cannot be called on the GPU")")) << Out;
  EXPECT_TRUE(contains(Out, R"("file_name":"src/main.rs")")) << Out;
  EXPECT_TRUE(contains(Out, R"("message":"second")")) << Out;
  // Other lines, and a link failure without device diagnostics, stay.
  std::string Artifact = R"({"reason":"compiler-artifact","package_id":"p"})";
  EXPECT_EQ(replaceDeviceLinkMessage(Artifact, Device), Artifact);
  EXPECT_EQ(replaceDeviceLinkMessage(Link, ""), Link);
  EXPECT_EQ(replaceDeviceLinkMessage("not json", Device), "not json");
}

} // namespace
