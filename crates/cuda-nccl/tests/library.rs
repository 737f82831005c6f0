//! Loading NCCL: a missing library is an error that says what to install
//! and which variable names the file; an old one says its version and the
//! one needed; where NCCL is installed (beside the CUDA toolkit here,
//! /usr/lib/x86_64-linux-gnu on the GPU machines), every entry point this
//! crate calls resolves and the version is read.
//!
//! One test per concern in one binary: `OXIDE_NCCL` is read when the
//! process's table is first loaded, so the override test sets it first.

use std::path::PathBuf;

use cuda_nccl::sys::{self, NcclApi};
use cuda_nccl::NcclError;

#[test]
fn a_missing_library_says_what_to_install() {
    // SAFETY: no file opens.
    let e: NcclError = unsafe { NcclApi::load_from(&[PathBuf::from("/nonexistent/libnccl.so.2")]) }.unwrap_err().into();
    let msg = e.to_string();
    assert!(matches!(e, NcclError::LibraryNotFound { .. }), "{e:?}");
    assert!(msg.contains("apt install libnccl2"), "{msg}");
    assert!(msg.contains("OXIDE_NCCL="), "{msg}");
    assert!(msg.contains("/nonexistent/libnccl.so.2"), "{msg}");
    assert!(msg.contains("OXIDE_EMULATE"), "{msg}");
}

#[test]
fn an_old_library_names_both_versions() {
    let e = NcclError::from(sys::LoadError::TooOld { path: "/x/libnccl.so.2".into(), version: 21805, missing: None });
    let msg = e.to_string();
    assert!(msg.contains("NCCL 2.18.5") && msg.contains("2.19.0 or newer"), "{msg}");
    let e = NcclError::Fp8Unsupported { version: 22005 };
    assert!(e.to_string().contains("2.24.0"), "{e}");
}

#[test]
fn the_env_override_is_the_only_candidate() {
    // SAFETY (edition 2021: safe): no other test of this binary reads it
    // through the process-wide table.
    std::env::set_var("OXIDE_NCCL", "/nonexistent/override/libnccl.so.2");
    assert_eq!(sys::candidates(), [PathBuf::from("/nonexistent/override/libnccl.so.2")]);
    let e = cuda_nccl::nccl_api().unwrap_err();
    let NcclError::LibraryNotFound { tried } = &e else { panic!("{e:?}") };
    assert_eq!(tried.len(), 1, "{tried:?}");
}

#[test]
fn an_installed_nccl_resolves_every_entry_point() {
    let found = ["/usr/lib/x86_64-linux-gnu/libnccl.so.2", "/usr/local/cuda/lib/libnccl.so.2", "/usr/local/cuda/lib64/libnccl.so.2"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file());
    let Some(lib) = found else {
        eprintln!("skipped: no libnccl.so.2 installed");
        return;
    };
    // SAFETY: NCCL's own library.
    let api = unsafe { NcclApi::load_from(std::slice::from_ref(&lib)) }.unwrap();
    assert_eq!(api.path, lib);
    assert!(api.version >= sys::MIN_VERSION, "{}", sys::version_string(api.version));
    // The error strings are NCCL's own.
    // SAFETY: a static string of NCCL's.
    let text = unsafe { std::ffi::CStr::from_ptr((api.ncclGetErrorString)(sys::ncclInvalidArgument)) };
    assert!(!text.to_bytes().is_empty());
    eprintln!("{} is NCCL {}", lib.display(), sys::version_string(api.version));
}

#[test]
fn results_have_names_and_advice() {
    use cuda_nccl::NcclResult;
    for raw in 1..=7 {
        let r = NcclResult::from_raw(raw).unwrap();
        assert_eq!(r.raw(), raw);
        assert!(r.name().starts_with("nccl"), "{r:?}");
        assert!(!r.advice().is_empty());
    }
    assert_eq!(NcclResult::from_raw(0), None);
    assert_eq!(NcclResult::from_raw(99), Some(NcclResult::Other(99)));
    let e = NcclError::Nccl { call: "ncclAllReduce", result: NcclResult::RemoteError, detail: String::new() };
    assert!(e.to_string().contains("peer rank failed"), "{e}");
}
