//! Loading cuBLAS: a missing library is an error that names it and says what
//! to install and which variable names the file; where cuBLAS is installed
//! (the CUDA toolkit here), every entry point this crate calls resolves.
//!
//! One test per concern in one binary: `OXIDE_CUBLAS` is read when the
//! process's table is first loaded, so the override test sets it first.

use std::path::PathBuf;

use cuda_blas::sys::{CublasApi, CublasLtApi};
use cuda_blas::BlasError;

#[test]
fn a_missing_library_says_what_to_install() {
    // SAFETY: no file opens.
    let e: BlasError = unsafe { CublasApi::load_from(&[PathBuf::from("/nonexistent/libcublas.so.13")]) }.unwrap_err().into();
    let msg = e.to_string();
    assert!(matches!(e, BlasError::LibraryNotFound { library: "libcublas", .. }), "{e:?}");
    assert!(msg.contains("install cuBLAS"), "{msg}");
    assert!(msg.contains("OXIDE_CUBLAS"), "{msg}");
    assert!(msg.contains("/nonexistent/libcublas.so.13"), "{msg}");
    // SAFETY: no file opens.
    let e: BlasError = unsafe { CublasLtApi::load_from(&[PathBuf::from("/nonexistent/libcublasLt.so.13")]) }.unwrap_err().into();
    assert!(e.to_string().contains("OXIDE_CUBLASLT"), "{e}");
}

#[test]
fn the_env_override_is_the_only_candidate() {
    // SAFETY (edition 2021: safe): no other test of this binary reads it
    // through the process-wide table.
    std::env::set_var("OXIDE_CUBLAS", "/nonexistent/override/libcublas.so");
    let e = cuda_blas::cublas_api().unwrap_err();
    let BlasError::LibraryNotFound { tried, .. } = &e else { panic!("{e:?}") };
    assert_eq!(tried.len(), 1, "{tried:?}");
    assert!(tried[0].starts_with("/nonexistent/override/libcublas.so"), "{tried:?}");
}

#[test]
fn an_installed_cublas_resolves_every_entry_point() {
    let lib = PathBuf::from("/usr/local/cuda/lib64/libcublas.so.13");
    if !lib.is_file() {
        eprintln!("skipped: no {}", lib.display());
        return;
    }
    // SAFETY: the CUDA toolkit's cuBLAS and cuBLASLt.
    let api = unsafe { CublasApi::load_from(std::slice::from_ref(&lib)) }.unwrap();
    assert_eq!(api.path, lib);
    // SAFETY: as above.
    let lt = unsafe { CublasLtApi::load_from(&[lib.with_file_name("libcublasLt.so.13")]) }.unwrap();
    assert!(lt.path.ends_with("libcublasLt.so.13"));
}
