//! The rebuild benchmark (no GPU needed): how long `cargo oxide build
//! --release` takes after a kernel's source was edited, against `nvcc`
//! building the equivalent CUDA C++ program.
//!
//! A scratch crate (`rebuild/vecadd.rs`, depending on this tree's oxide
//! crates) lives in `<target>/oxide/bench-rebuild/` and is built once
//! untimed, so its dependencies are built. Each timed round edits the kernel
//! (the operands of the addition marked `EDIT` change places, a real change of
//! the kernel) and rebuilds; likewise `rebuild/vecadd.cu` with nvcc. The
//! median of the rounds is reported.
//!
//! The `many-kernels` rows time the device link alone, of a generated crate
//! of 200 kernels (`rebuild/many_kernels.rs`) in `<scratch>/many-kernels/`:
//! clean (its per-kernel cache, `target/release/oxide-cache`, emptied),
//! after one kernel's edit, and after an edit of host code alone (which
//! gives O3 the module it was given before), each against `cargo build --release` of the same
//! crate after the same edit (rustc alone, with the system linker). The
//! device link is timed by this program standing in for oxide-link
//! (`OXIDE_LINK` points at it; [`timed_link`]).
//!
//! It needs cargo-oxide and the oxide source tree, which `cargo oxide bench`
//! passes in `OXIDE_BENCH_CARGO_OXIDE` and `OXIDE_BENCH_ROOT`; without them
//! (on a GPU machine with no Rust) it is skipped.

use crate::harness::{median, Row, Target};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

#[path = "../rebuild/many_kernels.rs"]
mod many_kernels;

const PROGRAM_RS: &str = include_str!("../rebuild/vecadd.rs");
/// Kernels of the many-kernel crate, and the one its edits change.
const MANY_KERNELS: usize = 200;
const EDITED_KERNEL: usize = 100;
/// Set (to the real device linker) when this program runs as the timing
/// wrapper of the device linker: `OXIDE_LINK` points at this program.
pub const LINK_WRAP_ENV: &str = "OXIDE_BENCH_WRAPPED_LINK";
/// The file the wrapper appends each link's seconds to.
const LINK_TIMES_ENV: &str = "OXIDE_BENCH_LINK_TIMES";
const PROGRAM_CU: &str = include_str!("../rebuild/vecadd.cu");
/// Timed rounds of each side.
const ROUNDS: usize = 3;

/// Why the benchmark could not run where it is not an error.
pub struct Skipped(pub String);

/// The source with the operands of the `EDIT` line swapped in odd rounds.
fn variant(source: &str, round: usize, from: &str, to: &str) -> String {
    assert!(source.contains(from), "the rebuild template lost its EDIT line");
    if round % 2 == 1 {
        source.replacen(from, to, 1)
    } else {
        source.to_string()
    }
}

fn write_if_changed(path: &Path, text: &str) -> Result<(), String> {
    if std::fs::read_to_string(path).ok().as_deref() == Some(text) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Runs `command`, returning its wall time in seconds; its output is shown
/// only when it fails.
fn timed(mut command: Command, what: &str) -> Result<f64, String> {
    let start = Instant::now();
    let out = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{what}: cannot run {:?}: {e}", command.get_program()))?;
    let seconds = start.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(format!(
            "{what} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(seconds)
}

/// This program as the device linker's stand-in (`LINK_WRAP_ENV` set):
/// runs the real oxide-link with rustc's arguments and appends its wall
/// time to the file `LINK_TIMES_ENV` names, so the many-kernel rows time the
/// device link alone inside a cargo build.
pub fn timed_link(real: OsString) -> ExitCode {
    let start = Instant::now();
    let status = Command::new(&real).args(std::env::args_os().skip(1)).status();
    let seconds = start.elapsed().as_secs_f64();
    let Ok(status) = status else {
        eprintln!("error: oxide-bench: cannot run the device linker {}", Path::new(&real).display());
        return ExitCode::FAILURE;
    };
    if let Some(file) = std::env::var_os(LINK_TIMES_ENV) {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(file) {
            let _ = writeln!(f, "{seconds}");
        }
    }
    match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(c) => ExitCode::from(c.clamp(1, 255) as u8),
        None => ExitCode::FAILURE,
    }
}

/// The last device-link time the wrapper wrote.
fn last_link_time(file: &Path) -> Result<f64, String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("the device link was not timed ({}): {e}", file.display()))?;
    text.lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .ok_or_else(|| format!("no device-link time in {}", file.display()))
}

/// The Cargo.toml of a scratch crate `name` depending on oxide's crates in
/// `crates`, in a workspace of its own.
fn scratch_manifest(name: &str, crates: &Path) -> String {
    format!(
        "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n\
         [dependencies]\n\
         cuda-device = {{ path = {:?} }}\ncuda-core = {{ path = {:?} }}\ncuda-host = {{ path = {:?} }}\n\n\
         # A workspace of its own, outside oxide's.\n[workspace]\n",
        crates.join("cuda-device"),
        crates.join("cuda-core"),
        crates.join("cuda-host"),
    )
}

/// The many-kernel rows: the device link of a crate of `MANY_KERNELS`
/// generated kernels (many_kernels.rs), clean (the per-kernel cache emptied)
/// and after one kernel's edit, each against rustc alone building the same
/// crate after the same edit (`cargo build --release`, the system linker).
fn many_kernel_rows(scratch: &Path, crates: &Path, cargo_oxide: &Path, arch: &str) -> Result<Vec<Row>, String> {
    let dir = scratch.join("many-kernels");
    let manifest = scratch_manifest("rebuild_many_kernels", crates);
    write_if_changed(&dir.join("Cargo.toml"), &manifest)?;
    let main_rs = dir.join("src/main.rs");
    let source = |round: usize| {
        many_kernels::many_kernels_source(MANY_KERNELS, (round % 2 == 1).then_some(EDITED_KERNEL))
    };
    let this = std::env::current_exe().map_err(|e| format!("cannot tell where oxide-bench is: {e}"))?;
    let real_link = cargo_oxide.with_file_name("oxide-link");
    let times = dir.join("link-times.txt");
    let oxide_target = dir.join("target");
    let build = || {
        let mut c = Command::new(cargo_oxide);
        c.args(["build", "--release", "--arch", arch])
            .current_dir(&dir)
            .env("CARGO_TARGET_DIR", &oxide_target)
            .env("OXIDE_LINK", &this)
            .env(LINK_WRAP_ENV, &real_link)
            .env(LINK_TIMES_ENV, &times);
        c
    };
    let plain = || {
        let mut c = Command::new("cargo");
        c.args(["build", "--release"])
            .current_dir(&dir)
            .env("CARGO_TARGET_DIR", dir.join("target-rustc"));
        c
    };
    eprintln!("rebuild: building the {MANY_KERNELS}-kernel crate once (untimed) in {}", dir.display());
    write_if_changed(&main_rs, &source(0))?;
    timed(build(), "the untimed many-kernel build")?;
    timed(plain(), "the untimed many-kernel build by cargo alone")?;

    let write_main = |text: &str| std::fs::write(&main_rs, text).map_err(|e| format!("cannot write {}: {e}", main_rs.display()));
    let cache = oxide_target.join("release/oxide-cache");
    let (mut clean, mut edit, mut host, mut rustc) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut round = 0;
    for _ in 0..ROUNDS {
        // Clean: nothing cached, so every kernel is compiled.
        round += 1;
        write_main(&source(round))?;
        let _ = std::fs::remove_dir_all(&cache);
        timed(build(), "cargo oxide build --release (many kernels, cache emptied)")?;
        clean.push(last_link_time(&times)?);
        // One kernel edited, the others cached.
        round += 1;
        write_main(&source(round))?;
        timed(build(), "cargo oxide build --release (many kernels, one edited)")?;
        edit.push(last_link_time(&times)?);
        // Host code alone edited: O3's result and every part cached.
        let edited_host = format!("{}\n#[allow(dead_code)]\nfn host_only_edit() -> usize {{\n    {round}\n}}\n", source(round));
        write_main(&edited_host)?;
        timed(build(), "cargo oxide build --release (many kernels, host code edited)")?;
        host.push(last_link_time(&times)?);
    }
    for _ in 0..ROUNDS {
        round += 1;
        write_main(&source(round))?;
        rustc.push(timed(plain(), "cargo build --release (many kernels)")?);
    }
    let (t_clean, t_edit, t_host, t_rustc) = (median(&mut clean), median(&mut edit), median(&mut host), median(&mut rustc));
    Ok(vec![
        Row {
            name: "many-kernels clean".into(),
            oxide: t_clean,
            unit: "s",
            reference: "rustc".into(),
            reference_time: t_rustc,
            target: Target::TimeAtMost(0.5),
            note: format!("device link of {MANY_KERNELS} kernels, per-kernel cache emptied, vs cargo build --release of the crate; median of {ROUNDS}"),
        },
        Row {
            name: "many-kernels edit".into(),
            oxide: t_edit,
            unit: "s",
            reference: "rustc".into(),
            reference_time: t_rustc,
            target: Target::TimeRatio,
            note: format!("device link of {MANY_KERNELS} kernels after editing one (target: at most 2 s) vs cargo build --release; median of {ROUNDS}"),
        },
        Row {
            name: "many-kernels host edit".into(),
            oxide: t_host,
            unit: "s",
            reference: "rustc".into(),
            reference_time: t_rustc,
            target: Target::TimeRatio,
            note: format!("device link of {MANY_KERNELS} kernels after editing host code alone (O3's result from the cache) vs cargo build --release; median of {ROUNDS}"),
        },
    ])
}

/// The benchmark; `Err(Ok(Skipped))` when it cannot run here.
pub fn rebuild() -> Result<Vec<Row>, Result<Skipped, String>> {
    let skip = |why: &str| Err(Ok(Skipped(why.to_string())));
    let Some(cargo_oxide) = std::env::var_os("OXIDE_BENCH_CARGO_OXIDE").map(PathBuf::from) else {
        return skip("needs cargo-oxide and the oxide sources: run `cargo oxide bench rebuild` on a machine with Rust");
    };
    let Some(root) = std::env::var_os("OXIDE_BENCH_ROOT").map(PathBuf::from) else {
        return skip("OXIDE_BENCH_ROOT (the oxide source tree) is not set");
    };
    let nvcc = PathBuf::from(env!("OXIDE_BENCH_NVCC"));
    if !nvcc.is_file() {
        return skip("nvcc is not here");
    }
    let arch = crate::reference::NVCC_ARCH;
    let scratch = std::env::var_os("OXIDE_BENCH_SCRATCH")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/oxide/bench-rebuild"));
    let crates = root.join("crates");
    let manifest = scratch_manifest("rebuild_vecadd", &crates);
    let err = |e: String| Err(Err(e));
    if let Err(e) = write_if_changed(&scratch.join("Cargo.toml"), &manifest) {
        return err(e);
    }
    let main_rs = scratch.join("src/main.rs");
    let build = || {
        let mut c = Command::new(&cargo_oxide);
        c.args(["build", "--release", "--arch", arch])
            .current_dir(&scratch)
            .env("CARGO_TARGET_DIR", scratch.join("target"));
        c
    };

    // Untimed: the dependencies, and a build of the first variant.
    eprintln!("rebuild: building the scratch crate once (untimed) in {}", scratch.display());
    let (rs_from, rs_to) = ("a[i] + b[i]; // EDIT", "b[i] + a[i]; // EDIT");
    let (cu_from, cu_to) = ("A[I] + B[I]; // EDIT", "B[I] + A[I]; // EDIT");
    if let Err(e) = write_if_changed(&main_rs, &variant(PROGRAM_RS, 0, rs_from, rs_to)) {
        return err(e);
    }
    if let Err(e) = timed(build(), "the untimed scratch build") {
        return err(e);
    }
    let mut oxide = Vec::new();
    for round in 1..=ROUNDS {
        if let Err(e) = std::fs::write(&main_rs, variant(PROGRAM_RS, round, rs_from, rs_to)) {
            return err(format!("cannot write {}: {e}", main_rs.display()));
        }
        match timed(build(), "cargo oxide build --release (after an edit)") {
            Ok(t) => oxide.push(t),
            Err(e) => return err(e),
        }
    }

    let cu = scratch.join("vecadd.cu");
    let nvcc_build = || {
        let mut c = Command::new(&nvcc);
        c.args(["-O3", &format!("-arch={arch}"), "-o"]).arg(scratch.join("vecadd_nvcc")).arg(&cu);
        c
    };
    let mut reference = Vec::new();
    // Round 0 is untimed: the first nvcc run pays for reading the toolkit
    // from disk, which cargo's untimed build also did for rustc.
    for round in 0..=ROUNDS {
        if let Err(e) = std::fs::write(&cu, variant(PROGRAM_CU, round, cu_from, cu_to)) {
            return err(format!("cannot write {}: {e}", cu.display()));
        }
        match timed(nvcc_build(), "nvcc") {
            Ok(t) if round > 0 => reference.push(t),
            Ok(_) => {}
            Err(e) => return err(e),
        }
    }
    let (t_ox, t_nv) = (median(&mut oxide), median(&mut reference));
    let mut rows = vec![Row {
        name: "rebuild".into(),
        oxide: t_ox,
        unit: "s",
        reference: "nvcc".into(),
        reference_time: t_nv,
        target: Target::TimeRatio,
        note: format!("after editing the kernel; median of {ROUNDS}; cargo oxide build --release vs nvcc -O3 -arch={arch}"),
    }];
    match many_kernel_rows(&scratch, &crates, &cargo_oxide, arch) {
        Ok(more) => rows.extend(more),
        Err(e) => return err(e),
    }
    Ok(rows)
}
