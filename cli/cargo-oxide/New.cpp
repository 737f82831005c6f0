//===- New.cpp - cargo oxide new ------------------------------------------===//
//
// Part of oxide. Creates a project that builds and runs with `cargo oxide run`
// as it stands. The project depends on the oxide crates by version, from the
// registry `oxide` that scripts/install-crates.sh (run by scripts/setup.sh)
// installs in cargo's home, and names the device linker by its name, found on
// PATH: no file of the project holds an absolute path, so it can move and be
// shared.
//
//===----------------------------------------------------------------------===//

#include "New.h"

#include "oxide/Targets.h"

#include "Commands.h"
#include "Manifest.h"
#include "Process.h"
#include "Toolchain.h"

#include <fstream>

namespace oxide::cli {

namespace {

//===----------------------------------------------------------------------===//
// TEMPLATE: src/main.rs of `cargo oxide new`.
//
// `@CRATE@` is replaced by the crate name (the package name with '-' as '_'),
// which is also the name of the kernel module the device linker embeds.
// Keep it in step with the public API (DESIGN.md §1) and with
// examples/vecadd; it is what a new user sees first.
//===----------------------------------------------------------------------===//
constexpr std::string_view MainRsTemplate =
    R"rust(//! @CRATE@: vector addition on the GPU, written with oxide.
//!
//! The kernel and the host code live in this one file. `cargo oxide run`
//! compiles both: the kernel to PTX, embedded in the executable, and the host
//! code to a normal program that launches it.

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

/// c[i] = a[i] + b[i], one GPU thread per element.
#[kernel]
pub fn vecadd(a: &[f32], b: &[f32], mut c: DisjointSlice<f32>) {
    let idx = thread::index_1d();
    let i = idx.get();
    // `get_mut` is `None` for the threads past the end of `c`.
    if let Some(elem) = c.get_mut(idx) {
        *elem = a[i] + b[i];
    }
}

fn main() {
    const N: usize = 1024;
    let a: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..N).map(|i| (2 * i) as f32).collect();

    let ctx = match CudaContext::new(0) {
        Ok(ctx) => ctx,
        Err(err) => {
            eprintln!("error: {err}");
            eprintln!(
                "no GPU: the kernels were built and their PTX validated, but could not be launched"
            );
            std::process::exit(2);
        }
    };
    let stream = ctx.default_stream();

    let a_dev = DeviceBuffer::from_host(&stream, &a).unwrap();
    let b_dev = DeviceBuffer::from_host(&stream, &b).unwrap();
    let mut c_dev = DeviceBuffer::<f32>::zeroed(&stream, N).unwrap();

    let module = load_kernel_module(&ctx, "@CRATE@").unwrap();
    cuda_launch! {
        kernel: vecadd, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(N as u32),
        args: [slice(a_dev), slice(b_dev), slice_mut(c_dev)]
    }
    .unwrap();

    let c = c_dev.to_host_vec(&stream).unwrap();
    for i in 0..N {
        let expected = a[i] + b[i];
        if c[i] != expected {
            eprintln!("✗ FAILED: c[{i}] = {}, expected {expected}", c[i]);
            std::process::exit(1);
        }
    }
    println!("✓ SUCCESS: All {N} elements correct!");
}
)rust";
// END TEMPLATE

//===----------------------------------------------------------------------===//
// TEMPLATE: src/main.rs of `cargo oxide new --async`.
//
// The same vecadd as lazy cuda-async operations, awaited on cuda-async's own
// executor (no outside crates). Keep it in step with examples/async_vecadd.
//===----------------------------------------------------------------------===//
constexpr std::string_view AsyncMainRsTemplate =
    R"rust(//! @CRATE@: vector addition on the GPU with oxide and cuda-async.
//!
//! The GPU work is a `DeviceOperation`: a description of uploads, a kernel
//! launch and a copy back, composed with combinators. Nothing runs until it
//! is awaited; then every step is queued on a stream at once, and the task
//! sleeps until the GPU has finished (a host callback wakes it).
//! `cargo oxide run` compiles the kernel to PTX, embedded in the executable.

use cuda_async::{block_on, memory, AsyncError, DeviceBox, DeviceOperation};
use cuda_core::LaunchConfig;
use cuda_host::{cuda_module, load_kernel_module};
use std::process::ExitCode;
use std::sync::Arc;

/// `#[cuda_module]` adds `kernels::launch::vecadd(..)`, a launcher whose
/// arguments are checked against the kernel's parameters at compile time.
#[cuda_module]
mod kernels {
    use cuda_device::{kernel, thread, DisjointSlice};

    /// c[i] = a[i] + b[i], one GPU thread per element.
    #[kernel]
    pub fn vecadd(a: &[f32], b: &[f32], mut c: DisjointSlice<f32>) {
        let idx = thread::index_1d();
        let i = idx.get();
        // `get_mut` is `None` for the threads past the end of `c`.
        if let Some(elem) = c.get_mut(idx) {
            *elem = a[i] + b[i];
        }
    }
}

const N: usize = 1024;

async fn run() -> Result<(), AsyncError> {
    let a: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..N).map(|i| (2 * i) as f32).collect();

    // Four streams on GPU 0, used round robin.
    let pool = cuda_async::default_pool()?;
    let module = Arc::new(load_kernel_module(pool.context(), "@CRATE@")?);

    // Read-only data shared by any number of operations: uploaded once.
    let a_dev = DeviceBox::upload(a.clone()).await?;

    let addition = memory::upload(b.clone())
        .zip(memory::zeroed::<f32>(N)) // b on the GPU, and room for c
        .then(move |stream, (b_dev, mut c_dev)| {
            let config = LaunchConfig::for_num_elems(N as u32);
            kernels::launch::vecadd(&module, stream, config, &a_dev, &b_dev, &mut c_dev)?;
            Ok(c_dev) // the buffer moves on to the next step, no copy
        })
        .and_then(memory::to_host); // → (device buffer, pinned host copy)
    // Nothing has run yet: awaiting schedules it.
    let (_c_dev, c) = addition.await?;

    for i in 0..N {
        let expected = a[i] + b[i];
        if c[i] != expected {
            return Err(AsyncError::host(format!("c[{i}] = {}, expected {expected}", c[i])));
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match block_on(run()) {
        Ok(()) => {
            println!("✓ SUCCESS: All {N} elements correct!");
            ExitCode::SUCCESS
        }
        // Without a GPU: says so and exits with code 2.
        Err(e) => e.report(),
    }
}
)rust";
// END TEMPLATE

constexpr std::string_view GitIgnore = "/target\n";

/// $CARGO_HOME, else ~/.cargo: where scripts/install-crates.sh puts the
/// registry `oxide` (in oxide-registry/).
fs::path cargoHome(const Environment &Env) {
  if (auto Home = Env.getNonEmpty("CARGO_HOME"))
    return fs::path(*Home);
  return fs::path(Env.getNonEmpty("HOME").value_or("~")) / ".cargo";
}

/// Names cargo refuses: Rust keywords, and crate names that would shadow the
/// standard crates or confuse the test harness.
constexpr std::string_view ReservedNames[] = {
    // Rust keywords, strict and reserved.
    "abstract", "as", "async", "await", "become", "box", "break", "const",
    "continue", "crate", "do", "dyn", "else", "enum", "extern", "false",
    "final", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "macro",
    "match", "mod", "move", "mut", "override", "priv", "pub", "ref", "return",
    "self", "Self", "static", "struct", "super", "trait", "true", "try", "type",
    "typeof", "unsafe", "unsized", "use", "virtual", "where", "while", "yield",
    // The standard crates and the test harness.
    "core", "std", "alloc", "proc_macro", "proc-macro", "test",
    // Folders of cargo's target directory.
    "build", "deps", "examples", "incremental"};

} // namespace

std::optional<Error> checkPackageName(std::string_view Name) {
  const std::string Hint = "use letters, digits, '-' and '_', starting with a "
                           "letter, e.g. `cargo oxide new my_kernel`";
  if (Name.empty())
    return Error{"the project name is empty", Hint};
  if (Name[0] >= '0' && Name[0] <= '9')
    return Error{"the project name `" + std::string(Name) +
                     "` starts with a digit",
                 Hint};
  for (char C : Name) {
    bool Ok = (C >= 'a' && C <= 'z') || (C >= 'A' && C <= 'Z') ||
              (C >= '0' && C <= '9') || C == '-' || C == '_';
    if (!Ok)
      return Error{"the project name `" + std::string(Name) + "` contains `" +
                       std::string(1, C) + "`",
                   Hint};
  }
  for (std::string_view Reserved : ReservedNames)
    if (Name == Reserved)
      return Error{"`" + std::string(Name) +
                       "` cannot be a package name (it is reserved in Rust)",
                   "choose another name, e.g. `cargo oxide new my_" +
                       std::string(Name) + "`"};
  return std::nullopt;
}

std::string tomlString(std::string_view Text) {
  bool LiteralOk = Text.find('\'') == std::string_view::npos &&
                   Text.find('\n') == std::string_view::npos;
  if (LiteralOk)
    return "'" + std::string(Text) + "'";
  std::string Out = "\"";
  for (char C : Text) {
    switch (C) {
    case '"':
      Out += "\\\"";
      break;
    case '\\':
      Out += "\\\\";
      break;
    case '\n':
      Out += "\\n";
      break;
    case '\t':
      Out += "\\t";
      break;
    default:
      Out += C;
    }
  }
  return Out + "\"";
}

std::string renderCargoToml(std::string_view Name, bool Async) {
  auto Crate = [&](const char *Package) {
    return std::string(Package) + " = { version = \"" +
           std::string(OxideCratesVersion) + "\", registry = \"" +
           std::string(OxideRegistry) + "\" }\n";
  };
  std::string Text;
  Text += "[package]\n";
  Text += "name = " + tomlString(Name) + "\n";
  Text += "version = \"0.1.0\"\n"
          "edition = \"2021\"\n"
          "\n"
          "# oxide's crates, from the registry `oxide` that oxide's "
          "scripts/setup.sh\n"
          "# installs in cargo's home (see oxide's README, \"Your own "
          "project\").\n"
          "[dependencies]\n";
  Text += Crate("cuda-device");
  Text += Crate("cuda-host");
  Text += Crate("cuda-core");
  if (Async)
    Text += Crate("cuda-async");
  Text += "\n"
          "# A workspace of its own, so the project builds wherever it is "
          "created,\n"
          "# even inside another workspace's directory.\n"
          "[workspace]\n"
          "\n"
          "# Without a GPU the kernels run on the CPU emulator, whose PTX "
          "virtual\n"
          "# machine interprets every instruction: optimise it (and the "
          "emulator)\n"
          "# even in debug builds.\n"
          "[profile.dev.package.ptx-vm]\n"
          "opt-level = 3\n"
          "[profile.dev.package.cuda-emulator]\n"
          "opt-level = 2\n";
  return Text;
}

std::string renderCargoConfig() {
  std::string Text;
  Text += "# Written by `cargo oxide new`: plain cargo builds link through "
          "oxide's\n"
          "# device linker too, so `cargo build` and `cargo run` work like\n"
          "# `cargo oxide build` / `cargo oxide run` (which override these "
          "settings).\n"
          "# Plain cargo builds for OXIDE_ARCH, else " +
          std::string(oxide::DefaultTargetName) +
          "; `cargo oxide` also reads\n"
          "# [package.metadata.oxide] arch and the GPU present (--arch first).\n"
          "[target.x86_64-unknown-linux-gnu]\n"
          "# Found on PATH (scripts/setup.sh installs it next to cargo).\n"
          "linker = \"oxide-link\"\n"
          "\n"
          "[build]\n"
          "# The device linker reads the unoptimised bitcode rustc keeps with "
          "save-temps.\n"
          "rustflags = [\"-C\", \"save-temps\"]\n"
          "# Incremental builds can leave that bitcode stale or missing. "
          "(CARGO_INCREMENTAL\n"
          "# in [env] would not do: cargo reads it itself, [env] is for what "
          "it runs.)\n"
          "incremental = false\n";
  return Text;
}

std::string renderMainRs(std::string_view Name, bool Async) {
  std::string Text(Async ? AsyncMainRsTemplate : MainRsTemplate);
  std::string Crate = crateNameOf(Name);
  const std::string Placeholder = "@CRATE@";
  for (size_t Pos = Text.find(Placeholder); Pos != std::string::npos;
       Pos = Text.find(Placeholder, Pos + Crate.size()))
    Text.replace(Pos, Placeholder.size(), Crate);
  return Text;
}

int runNewCommand(const Options &Opts, const Context &Ctx) {
  fs::path Dest = fs::path(*Opts.Name);
  if (Dest.is_relative())
    Dest = Ctx.Cwd / Dest;
  Dest = Dest.lexically_normal();
  if (!Dest.has_filename()) // "name/" normalises to a trailing separator
    Dest = Dest.parent_path();
  std::string Name = Dest.filename().string();

  if (auto E = checkPackageName(Name)) {
    printError(*E);
    return 1;
  }
  std::error_code EC;
  if (fs::exists(Dest, EC)) {
    printError({"destination " + Dest.string() + " already exists",
                "choose another name, or remove it first"});
    return 1;
  }

  struct FileToWrite {
    fs::path Path;
    std::string Content;
  };
  std::vector<FileToWrite> Files = {
      {Dest / "Cargo.toml", renderCargoToml(Name, Opts.Async)},
      {Dest / "src" / "main.rs", renderMainRs(Name, Opts.Async)},
      {Dest / ".gitignore", std::string(GitIgnore)},
      {Dest / ".cargo" / "config.toml", renderCargoConfig()},
  };
  fs::create_directories(Dest / "src", EC);
  if (!EC)
    fs::create_directories(Dest / ".cargo", EC);
  if (EC) {
    printError({"cannot create " + Dest.string() + ": " + EC.message(),
                "check that the parent directory exists and is writable"});
    return 1;
  }
  for (const FileToWrite &F : Files) {
    std::ofstream Out(F.Path, std::ios::binary | std::ios::trunc);
    Out << F.Content;
    if (!Out) {
      printError({"cannot write " + F.Path.string(),
                  "check the free space and permissions of " + Dest.string()});
      return 1;
    }
  }

  printStatus("Created", std::string(Opts.Async ? "oxide cuda-async" : "oxide") +
                             " project `" + Name + "` in " + Dest.string());
  // What the project needs from this machine, said now rather than as a
  // resolution error at the first build.
  if (!findProgram("oxide-link", Ctx.Env))
    printWarning("oxide-link is not on PATH, so plain `cargo build` cannot "
                 "link the kernels (`cargo oxide build` finds it anyway); "
                 "run oxide's scripts/setup.sh, or add the directory holding "
                 "oxide-link to PATH");
  if (!fs::is_directory(cargoHome(Ctx.Env) / "oxide-registry", EC))
    printWarning("the registry `oxide` is not installed in " +
                 cargoHome(Ctx.Env).string() +
                 ", so cargo will not find the oxide crates; run oxide's "
                 "scripts/install-crates.sh (scripts/setup.sh runs it)");
  fs::path Shown = Dest.lexically_relative(Ctx.Cwd);
  if (Shown.empty() || Shown.string().rfind("..", 0) == 0)
    Shown = Dest;
  printStatus("Next",
              "cd " + shellQuote(Shown.string()) + " && cargo oxide run");
  return 0;
}

} // namespace oxide::cli
