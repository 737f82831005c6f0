//! The result layer: the driver table this process uses (whichever backend
//! `backend.rs` chose), `cuInit`-ed once, and [`cu!`], which calls an entry
//! point and turns its `CUresult` into a `Result` whose error names it.

use std::ffi::c_int;
use std::sync::OnceLock;

pub(crate) use cuda_driver_sys::*;

use crate::backend::{self, Backend, LoadFailure};
use crate::error::{DriverError, ErrorKind};

/// Calls a driver entry point and turns its `CUresult` into a `Result`
/// whose error names the symbol: `cu!(d, cuMemFree_v2(ptr))`. Must be used
/// inside an `unsafe` block (it calls a foreign function).
macro_rules! cu {
    ($d:expr, $f:ident($($a:expr),* $(,)?)) => {
        $crate::error::check(($d.$f)($($a),*), stringify!($f))
    };
}
pub(crate) use cu;

/// The driver's function table, loading it on first use.
pub(crate) fn driver() -> Result<&'static DriverApi, DriverError> {
    match backend::load() {
        Ok(loaded) => Ok(&loaded.api),
        Err(failure) => Err(load_error(failure)),
    }
}

/// The backend this process's kernels run on, loading the driver table on
/// first use.
pub(crate) fn backend() -> Result<Backend, DriverError> {
    driver()?;
    Ok(backend::loaded().expect("loaded above").backend)
}

/// The driver table once [`initialized`] has succeeded: every driver call
/// of the crate asks for it, and then finds it with one load.
static READY: OnceLock<&'static DriverApi> = OnceLock::new();

/// The driver, loaded and `cuInit`-ed (once per process).
#[inline]
pub(crate) fn initialized() -> Result<&'static DriverApi, DriverError> {
    match READY.get() {
        Some(d) => Ok(d),
        None => initialize(),
    }
}

/// [`initialized`] the first time (or after a failure, which is kept).
#[cold]
fn initialize() -> Result<&'static DriverApi, DriverError> {
    static INIT: OnceLock<Result<(), DriverError>> = OnceLock::new();
    let d = driver()?;
    INIT.get_or_init(|| {
        // SAFETY: cuInit takes a flags word that must be 0.
        unsafe { cu!(d, cuInit(0)) }.map_err(|e| match e.code() {
            CUDA_ERROR_NO_DEVICE => e.with_message(
                "no CUDA GPU found: the NVIDIA driver is loaded but reports no device. \
                 `cargo oxide doctor` checks the setup.",
            ),
            CUDA_ERROR_STUB_LIBRARY => e.with_detail(
                "the libcuda.so.1 found is the CUDA toolkit's stub library; install the NVIDIA \
                 driver or take the stubs directory out of LD_LIBRARY_PATH",
            ),
            _ => e,
        })
    })
    .clone()?;
    Ok(READY.get_or_init(|| d))
}

/// The driver table if it has already been loaded successfully (never loads it).
pub(crate) fn loaded() -> Option<&'static DriverApi> {
    backend::loaded().map(|l| &l.api)
}

/// The error a user sees when the table cannot be had.
fn load_error(failure: &LoadFailure) -> DriverError {
    match failure {
        LoadFailure::BadMode(e) => DriverError::new(ErrorKind::InvalidArgument, e.to_string(), ""),
        LoadFailure::Driver(LoadError::LibraryNotFound { reason }) => DriverError::new(
            ErrorKind::DriverNotFound,
            format!(
                "no CUDA driver found: libcuda.so.1 could not be loaded ({reason}). oxide programs need an \
                 NVIDIA driver to run kernels; `cargo oxide doctor` checks the setup."
            ),
            "",
        ),
        LoadFailure::Driver(LoadError::MissingSymbol(name)) => DriverError::new(
            ErrorKind::MissingSymbol,
            format!(
                "the CUDA driver (libcuda.so.1) has no function `{name}`: the installed NVIDIA driver \
                 is too old for oxide; update it (`cargo oxide doctor` checks the setup)."
            ),
            "dlsym",
        ),
    }
}

/// The version of the installed CUDA driver as `(major, minor)`, e.g. `(13, 0)`.
///
/// Needs no GPU, only the driver library. Fails with
/// [`ErrorKind::DriverNotFound`] where no driver is installed.
pub fn driver_version() -> Result<(u32, u32), DriverError> {
    let d = driver()?;
    let mut v: c_int = 0;
    // SAFETY: writes one int to `v`.
    unsafe { cu!(d, cuDriverGetVersion(&mut v))? };
    let v = v.max(0) as u32;
    Ok((v / 1000, (v % 1000) / 10))
}
