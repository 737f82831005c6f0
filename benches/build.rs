//! Compiles the CUDA C++ kernel references (`cuda/kernels.cu`) with
//! `nvcc -O3 -arch=<arch> -cubin` into `OUT_DIR`, where `src/reference.rs`
//! embeds them with `include_bytes!`, and the host-side references
//! (`cuda/runtime.cu`, the CUDA runtime's own calls; `cuda/cub.cu` and
//! `cuda/cub_sort.cu`, CUB's device-wide primitives) into a static library linked with the static
//! CUDA runtime.
//!
//! nvcc is `$OXIDE_CUDA_PATH/bin/nvcc`, else `$CUDA_PATH/bin/nvcc`, else
//! `/usr/local/cuda/bin/nvcc`, else `nvcc` on PATH. The architecture is
//! `OXIDE_BENCH_NVCC_ARCH`, else `OXIDE_ARCH` (which `cargo oxide bench` sets
//! to the target it resolved for oxide's side: `--arch`, else the package's
//! own), else the one Cargo.toml names for the package
//! (`[package.metadata.oxide] arch`: sm_90a, the H200 the benchmarks run on,
//! with wgmma; read here for a plain `cargo build`), else sm_90.
//! The references are tuned for nothing but compiled like oxide's side.
//! Without nvcc the build fails and says so: the benchmarks are comparisons, and half a
//! comparison is no use.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The references, each compiled to `<name>.cubin`.
const SOURCES: &[&str] = &["kernels"];

/// The host-side references (`cuda/<name>.cu`), each compiled to an object
/// of oxide-bench's static library; `true`: its kernels are built for the
/// benchmarks' GPU (`-arch`).
const HOST_SOURCES: &[(&str, bool)] = &[
    ("runtime", false),
    // CUB's DeviceReduce, DeviceScan and DeviceSelect (prims_reduce, _scan, _select).
    ("cub", true),
    // CUB's DeviceRadixSort and DeviceHistogram (prims_sort, prims_histogram).
    ("cub_sort", true),
];

fn find_nvcc() -> Option<PathBuf> {
    for var in ["OXIDE_CUDA_PATH", "CUDA_PATH"] {
        if let Some(root) = env::var_os(var).filter(|v| !v.is_empty()) {
            let nvcc = Path::new(&root).join("bin/nvcc");
            if nvcc.is_file() {
                return Some(nvcc);
            }
        }
    }
    let default = Path::new("/usr/local/cuda/bin/nvcc");
    if default.is_file() {
        return Some(default.to_path_buf());
    }
    env::var_os("PATH").and_then(|path| {
        env::split_paths(&path).map(|dir| dir.join("nvcc")).find(|p| p.is_file())
    })
}

/// `[package.metadata.oxide] arch = "…"` of the package's Cargo.toml (a
/// line-based read: the table header, then `arch = "value"`).
fn manifest_arch(manifest: &Path) -> Option<String> {
    let text = std::fs::read_to_string(manifest).ok()?;
    let mut in_table = false;
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.starts_with('[') {
            in_table = line == "[package.metadata.oxide]";
        } else if let (true, Some(value)) = (in_table, line.strip_prefix("arch")) {
            let value = value.trim_start().strip_prefix('=')?.trim();
            return Some(value.trim_matches('"').to_string());
        }
    }
    None
}

fn main() {
    println!("cargo:rerun-if-env-changed=OXIDE_CUDA_PATH");
    println!("cargo:rerun-if-env-changed=CUDA_PATH");
    println!("cargo:rerun-if-env-changed=OXIDE_BENCH_NVCC_ARCH");
    println!("cargo:rerun-if-env-changed=OXIDE_ARCH");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    println!("cargo:rerun-if-changed=Cargo.toml");
    let manifest = Path::new(&env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let arch = env::var("OXIDE_BENCH_NVCC_ARCH")
        .ok()
        .filter(|a| !a.is_empty())
        .or_else(|| env::var("OXIDE_ARCH").ok().filter(|a| !a.is_empty()))
        .or_else(|| manifest_arch(&manifest))
        .unwrap_or_else(|| "sm_90".to_string());
    let Some(nvcc) = find_nvcc() else {
        eprintln!(
            "error: oxide-bench needs nvcc to build its CUDA C++ references, and none was found \
             ($OXIDE_CUDA_PATH/bin, $CUDA_PATH/bin, /usr/local/cuda/bin, PATH).\n\
             hint: install the CUDA toolkit or set OXIDE_CUDA_PATH to its root"
        );
        std::process::exit(1);
    };
    for name in SOURCES {
        let source = Path::new("cuda").join(format!("{name}.cu"));
        println!("cargo:rerun-if-changed={}", source.display());
        let cubin = out.join(format!("{name}.cubin"));
        let status = Command::new(&nvcc)
            .args(["-O3", &format!("-arch={arch}"), "-cubin", "-o"])
            .arg(&cubin)
            .arg(&source)
            .status()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", nvcc.display()));
        if !status.success() {
            eprintln!("error: `{} -O3 -arch={arch} -cubin {}` failed ({status})", nvcc.display(), source.display());
            std::process::exit(1);
        }
    }
    // The host-side references: objects of host code, linked with the
    // static CUDA runtime so the GPU machine needs no libcudart. runtime.cu's
    // one kernel is a launch-overhead stand-in, built for nvcc's default
    // target; CUB's kernels (cub.cu, the cuda-prims rows) are built for the
    // benchmarks' GPU, as a CUDA C++ program using CUB would be.
    let mut objects = Vec::new();
    for &(name, for_arch) in HOST_SOURCES {
        let source = Path::new("cuda").join(format!("{name}.cu"));
        println!("cargo:rerun-if-changed={}", source.display());
        let object = out.join(format!("{name}.o"));
        let mut nvcc_cmd = Command::new(&nvcc);
        nvcc_cmd.arg("-O3");
        if for_arch {
            nvcc_cmd.arg(format!("-arch={arch}"));
        }
        let status = nvcc_cmd
            // Their launch stubs are C++: without exceptions and thread-safe
            // statics they need little of libstdc++ (linked below for CUB's
            // headers' static initialisers).
            .args(["-c", "-Xcompiler", "-fPIC,-fno-exceptions,-fno-threadsafe-statics", "-o"])
            .arg(&object)
            .arg(&source)
            .status()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", nvcc.display()));
        if !status.success() {
            eprintln!("error: `{} -O3 -c {}` failed ({status})", nvcc.display(), source.display());
            std::process::exit(1);
        }
        objects.push(object);
    }
    let archive = out.join("liboxide_bench_runtime.a");
    let _ = std::fs::remove_file(&archive);
    let status = Command::new("ar").arg("crs").arg(&archive).args(&objects).status();
    if !status.is_ok_and(|s| s.success()) {
        eprintln!("error: `ar crs {}` failed", archive.display());
        std::process::exit(1);
    }
    let toolkit_lib = nvcc.parent().and_then(Path::parent).map(|root| root.join("lib64")).expect("nvcc is in <toolkit>/bin");
    println!("cargo:rustc-link-search=native={}", out.display());
    println!("cargo:rustc-link-lib=static=oxide_bench_runtime");
    println!("cargo:rustc-link-search=native={}", toolkit_lib.display());
    println!("cargo:rustc-link-lib=static=cudart_static");
    // CUB's headers bring <iostream>'s static initialiser.
    println!("cargo:rustc-link-lib=dylib=stdc++");
    for system in ["dl", "rt", "pthread"] {
        println!("cargo:rustc-link-lib=dylib={system}");
    }
    // Where the rebuild benchmark finds nvcc and the toolkit.
    println!("cargo:rustc-env=OXIDE_BENCH_NVCC={}", nvcc.display());
    println!("cargo:rustc-env=OXIDE_BENCH_NVCC_ARCH={arch}");
}
