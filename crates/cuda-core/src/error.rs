//! [`DriverError`]: every failure of this crate, from a `CUresult` of the
//! driver or from a check made before the driver was called.

use std::borrow::Cow;
use std::ffi::{c_char, CStr};
use std::fmt;

use crate::panic::DevicePanic;
use cuda_driver_sys::{CUresult, STICKY_RESULTS};

pub use cuda_driver_sys::builtin_name;

use crate::backend;

/// What kind of failure a [`DriverError`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The driver returned a `CUresult` other than `CUDA_SUCCESS`.
    Driver,
    /// `libcuda.so.1` could not be loaded: no NVIDIA driver is installed.
    DriverNotFound,
    /// The driver library lacks a function oxide needs (driver too old).
    MissingSymbol,
    /// The driver is loaded but there is no GPU (or none with that ordinal).
    NoDevice,
    /// A [`LaunchConfig`](crate::LaunchConfig) the hardware cannot run.
    InvalidLaunchConfig,
    /// A host slice and a device buffer of different lengths.
    LengthMismatch,
    /// Any other argument rejected before the driver saw it (a name with a
    /// NUL byte, a size that overflows, objects of two different contexts).
    InvalidArgument,
}

impl ErrorKind {
    /// The code and name reported for an error detected by this crate.
    /// Codes are negative so that they never collide with a `CUresult`.
    fn own_code(self) -> (i32, &'static str) {
        match self {
            ErrorKind::Driver => (999, "CUDA_ERROR_UNKNOWN"),
            ErrorKind::DriverNotFound => (-1, "OXIDE_DRIVER_NOT_FOUND"),
            ErrorKind::MissingSymbol => (-2, "OXIDE_DRIVER_SYMBOL_MISSING"),
            ErrorKind::NoDevice => (100, "CUDA_ERROR_NO_DEVICE"),
            ErrorKind::InvalidLaunchConfig => (-3, "OXIDE_INVALID_LAUNCH_CONFIG"),
            ErrorKind::LengthMismatch => (-4, "OXIDE_LENGTH_MISMATCH"),
            ErrorKind::InvalidArgument => (-5, "OXIDE_INVALID_ARGUMENT"),
        }
    }
}

/// An error from the CUDA driver or from this crate's own checks.
///
/// `Display` gives `NAME (code): message [operation]` for driver results, e.g.
/// `CUDA_ERROR_OUT_OF_MEMORY (2): out of memory [cuMemAlloc_v2]`, and the
/// plain message for errors found before the driver was called. Extra detail
/// (a JIT log, the kernel that was launched) follows on the next lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverError {
    kind: ErrorKind,
    code: i32,
    name: Cow<'static, str>,
    message: String,
    op: Cow<'static, str>,
    detail: Option<String>,
    device_panic: Option<Box<DevicePanic>>,
}

impl DriverError {
    /// An error for the `CUresult` `code` returned by driver function `op`.
    pub fn from_code(code: i32, op: impl Into<Cow<'static, str>>) -> Self {
        let (name, message) = describe(code);
        let kind = if code == 100 {
            ErrorKind::NoDevice
        } else {
            ErrorKind::Driver
        };
        DriverError {
            kind,
            code,
            name,
            message,
            op: op.into(),
            detail: None,
            device_panic: None,
        }
    }

    /// An error detected by this crate (not a driver result).
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>, op: &'static str) -> Self {
        let (code, name) = kind.own_code();
        DriverError {
            kind,
            code,
            name: Cow::Borrowed(name),
            message: message.into(),
            op: Cow::Borrowed(op),
            detail: None,
            device_panic: None,
        }
    }

    /// Replaces the one-line message (keeps kind, code, name and operation).
    pub(crate) fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = message.into();
        self
    }

    /// Reclassifies the error (keeps code, name, message and operation).
    pub(crate) fn with_kind(mut self, kind: ErrorKind) -> Self {
        self.kind = kind;
        self
    }

    /// Appends a line of context (shown after the main line by `Display`).
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        let detail = detail.into();
        self.detail = Some(match self.detail.take() {
            Some(old) => format!("{old}\n{detail}"),
            None => detail,
        });
        self
    }

    /// The panic a kernel reported before it failed, when the failure was a
    /// device panic (bounds check, overflow, unwrap, `panic!`, …).
    pub fn device_panic(&self) -> Option<&DevicePanic> {
        self.device_panic.as_deref()
    }

    pub(crate) fn with_device_panic(mut self, panic: DevicePanic) -> Self {
        self.device_panic = Some(Box::new(panic));
        self
    }

    /// What kind of error this is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The `CUresult` (`>= 0`), or a negative code for errors detected by
    /// this crate (`-1` driver not found, `-2` missing symbol, `-3` invalid
    /// launch config, `-4` length mismatch, `-5` invalid argument).
    pub fn code(&self) -> i32 {
        self.code
    }

    /// The symbolic name, e.g. `CUDA_ERROR_LAUNCH_FAILED` or `OXIDE_LENGTH_MISMATCH`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The one-line human-readable description.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The operation that failed: a driver symbol such as `cuMemAlloc_v2`,
    /// or the method of this crate that rejected its arguments.
    pub fn operation(&self) -> &str {
        &self.op
    }

    /// Whether this is a *sticky* error: a kernel faulted (illegal address,
    /// trap, device assert, timeout, …), the context is unusable from now on,
    /// and every later call on it fails with the same error. On a GPU only a
    /// new process can use the GPU again; on the CPU emulator, a new
    /// [`CudaContext`](crate::CudaContext) once every handle of the faulted
    /// one is dropped.
    pub fn is_sticky(&self) -> bool {
        self.kind == ErrorKind::Driver && STICKY_RESULTS.contains(&self.code)
    }

    /// Additional context (JIT log, kernel name), if any.
    pub fn detail(&self) -> Option<&str> {
        self.detail.as_deref()
    }
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.code >= 0 {
            write!(f, "{} ({}): {}", self.name, self.code, self.message)?;
        } else {
            f.write_str(&self.message)?;
        }
        if !self.op.is_empty() {
            write!(f, " [{}]", self.op)?;
        }
        if let Some(panic) = &self.device_panic {
            write!(f, "\n{panic}")?;
        }
        if let Some(detail) = &self.detail {
            write!(f, "\n{detail}")?;
        }
        Ok(())
    }
}

impl std::error::Error for DriverError {}

/// `Ok(())` for `CUDA_SUCCESS`, otherwise the error for `code` from `op`.
/// Every driver call goes through it, so success is the inlined test
/// alone and the error is built out of line.
#[inline]
pub(crate) fn check(code: CUresult, op: &'static str) -> Result<(), DriverError> {
    if code == 0 {
        Ok(())
    } else {
        Err(failure(code, op))
    }
}

/// The error of a failed call (see [`check`]).
#[cold]
#[inline(never)]
fn failure(code: CUresult, op: &'static str) -> DriverError {
    let error = DriverError::from_code(code, op);
    let emulated = backend::loaded().is_some_and(|l| l.backend.is_emulated());
    if code == cuda_driver_sys::CUDA_ERROR_NOT_SUPPORTED && emulated && !cuda_emulator::implements(op) {
        return error.with_detail(format!(
            "the CPU emulator does not implement `{op}` (in either mode): run this program on a GPU"
        ));
    }
    error
}

/// Name and message of a `CUresult`: asked of the driver when it is loaded,
/// otherwise taken from [`builtin_name`].
fn describe(code: i32) -> (Cow<'static, str>, String) {
    if let Some(d) = backend::loaded().map(|l| &l.api) {
        let mut name: *const c_char = std::ptr::null();
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: both functions only write a pointer to a static,
        // NUL-terminated string into the out-parameter (or fail and leave it).
        let (rn, rt) = unsafe {
            (
                (d.cuGetErrorName)(code, &mut name),
                (d.cuGetErrorString)(code, &mut text),
            )
        };
        if rn == 0 && rt == 0 && !name.is_null() && !text.is_null() {
            // SAFETY: checked non-null above; the driver's strings are static.
            let (name, text) = unsafe { (CStr::from_ptr(name), CStr::from_ptr(text)) };
            return (
                Cow::Owned(name.to_string_lossy().into_owned()),
                text.to_string_lossy().into_owned(),
            );
        }
    }
    match builtin_name(code) {
        Some((name, text)) => (Cow::Borrowed(name), text.to_string()),
        None => (
            Cow::Borrowed("CUDA_ERROR_UNRECOGNIZED"),
            format!("unrecognised CUresult {code}"),
        ),
    }
}
